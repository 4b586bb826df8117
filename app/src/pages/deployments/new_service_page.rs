//! `/deployments/new`: a new GPU service for the requester's team — from the MPS inference
//! template or an existing family, on a capacity provider that can share GPUs — checked (the
//! pre-check of its desired count with what the provider would launch, the team's budget, the
//! requests as AWS CLI input and CloudFormation) before it is created and its first deployment
//! followed live.

use super::*;
use crate::model::{
    capacity::{ClusterCapacity, ProviderType, ProviderView},
    new_service::{NewServiceCheck, NewServiceForm, ServiceChoices, Template},
};

/// Why a provider is not offered for a GPU-sharing service; `None` when it is.
fn not_offered(provider: &ProviderView) -> Option<String> {
    if !provider.can_share_gpus {
        return Some("Fargate runs no GPU tasks".into());
    }
    let matched: Vec<_> = provider
        .may_launch
        .iter()
        .filter(|o| o.not_matched.is_none())
        .collect();
    if provider.instances == 0 && !matched.is_empty() && !matched.iter().any(|o| o.shares_gpus) {
        return Some("it launches no instance type that can share GPUs with MPS".into());
    }
    if provider.status != "ACTIVE" && !provider.status.is_empty() {
        return Some(format!("it is {}", provider.status));
    }
    None
}

/// A text input bound to `signal`, with its label and test id.
#[component]
fn Field(
    label: &'static str,
    signal: RwSignal<String>,
    testid: &'static str,
    #[prop(optional)] hint: &'static str,
) -> impl IntoView {
    view! {
        <label class="field">
            <span>{label}</span>
            <input type="text" data-testid=testid value=signal.get_untracked()
                prop:value=move || signal.get()
                on:input=move |ev| signal.set(event_target_value(&ev)) />
            {(!hint.is_empty()).then(|| view! { <small class="muted">{hint}</small> })}
        </label>
    }
}

/// The new-service page.
#[component]
pub fn NewServicePage() -> impl IntoView {
    let query = use_query_map();
    let clusters = Resource::new(|| (), |_| crate::server_fns::clusters::list_clusters());
    let cluster = RwSignal::new(query.with_untracked(|q| q.get("cluster").unwrap_or_default()));
    view! {
        <Title text="New service · Deployments" />
        <p><a href="/deployments">"← Deployments"</a></p>
        <h1>"New GPU service"</h1>
        <p class="muted">"ECS's three steps in one place: a capacity provider of NVIDIA instances, a task definition whose container shares a GPU with MPS, and a service on that provider. Nothing is created until you check it and press Create."</p>
        <noscript><p class="banner info">"This form needs JavaScript; POST /api/v1/clusters/{cluster}/services takes ECS's CreateService request without it."</p></noscript>
        <Suspense fallback=|| view! { <p class="muted">"Reading the clusters…"</p> }>
            {move || Suspend::new(async move {
                match clusters.await {
                    Ok(list) if list.is_empty() => view! { <p>"There are no clusters in this fleet."</p> }.into_any(),
                    Ok(list) => {
                        if cluster.get_untracked().is_empty() {
                            cluster.set(list[0].name.clone());
                        }
                        let options = list.iter().map(|c| {
                            let name = c.name.clone();
                            view! { <option value=name.clone() selected=move || cluster.get() == name>{c.name.clone()}</option> }
                        }).collect_view();
                        view! {
                            <section class="card">
                                <label class="field">
                                    <span>"Cluster"</span>
                                    <select data-testid="new-cluster" on:change=move |ev| cluster.set(event_target_value(&ev))>{options}</select>
                                </label>
                            </section>
                            {move || view! { <NewServiceForm cluster=cluster.get() /> }}
                        }.into_any()
                    }
                    Err(error) => view! { <ErrorBanner error lead="The clusters could not be read: " testid="new-service-error" /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// The form for one cluster: its providers read first.
#[component]
fn NewServiceForm(cluster: String) -> impl IntoView {
    let read = {
        let cluster = cluster.clone();
        Resource::new(
            move || cluster.clone(),
            |c| crate::server_fns::capacity::list_capacity(Some(c)),
        )
    };
    view! {
        <Suspense fallback=|| view! { <p class="muted">"Reading the capacity providers…"</p> }>
            {move || {
                let cluster = cluster.clone();
                Suspend::new(async move {
                    match read.await {
                        Ok(list) => {
                            let capacity = list.into_iter().find(|c| c.cluster == cluster).unwrap_or(ClusterCapacity { cluster: cluster.clone(), ..ClusterCapacity::default() });
                            view! { <Choices capacity /> }.into_any()
                        }
                        Err(error) => view! { <ErrorBanner error lead="The capacity providers could not be read: " testid="new-service-error" /> }.into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

/// The choices, the check and the creation.
#[component]
fn Choices(capacity: ClusterCapacity) -> impl IntoView {
    let cluster = capacity.cluster.clone();
    let offered: Vec<&ProviderView> = capacity
        .providers
        .iter()
        .filter(|p| not_offered(p).is_none())
        .collect();
    let first = offered
        .iter()
        .find(|p| p.kind == ProviderType::ManagedInstances)
        .or(offered.first())
        .map(|p| p.name.clone())
        .unwrap_or_default();
    let provider = RwSignal::new(first);
    let kinds: Vec<(String, ProviderType)> = capacity
        .providers
        .iter()
        .map(|p| (p.name.clone(), p.kind.clone()))
        .collect();
    let provider_options = offered
        .iter()
        .map(|p| {
            let name = p.name.clone();
            let label = format!(
                "{} ({}, {} instances)",
                p.name,
                if p.kind == ProviderType::ManagedInstances { "Managed Instances" } else { "Auto Scaling group" },
                p.instances
            );
            view! { <option value=name.clone() selected=move || provider.get() == name>{label}</option> }
        })
        .collect_view();
    let left_out = capacity
        .providers
        .iter()
        .filter_map(|p| not_offered(p).map(|why| view! { <li><span class="mono">{p.name.clone()}</span>{format!(": {why}")}</li> }))
        .collect_view();
    let start = RwSignal::new("template".to_string());
    let template = Template::default();
    let (name, image, port, cpu, memory, gpu_memory, compute, health, log_group, role) = (
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(template.port.to_string()),
        RwSignal::new(template.cpu.to_string()),
        RwSignal::new(template.memory_mib.to_string()),
        RwSignal::new(template.gpu_memory_mib.to_string()),
        RwSignal::new(
            template
                .compute_percent
                .map(|p| p.to_string())
                .unwrap_or_default(),
        ),
        RwSignal::new(template.health_path.clone()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    let (existing, desired, subnets, groups, target_group, team, description) = (
        RwSignal::new(String::new()),
        RwSignal::new("1".to_string()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    let breaker = RwSignal::new(true);
    let force = RwSignal::new(false);
    // The form as sent: built from the fields, so the preview is exactly what is created.
    let form = {
        let cluster = cluster.clone();
        move || -> Result<NewServiceForm, String> {
            let number = |signal: RwSignal<String>, what: &str| -> Result<u32, String> {
                signal.with(|t| {
                    t.trim()
                        .parse::<u32>()
                        .map_err(|_| format!("{what}: give a whole number"))
                })
            };
            let managed = kinds
                .iter()
                .any(|(n, k)| *n == provider.get() && *k == ProviderType::ManagedInstances);
            let from_template = start.get() == "template";
            let service = name.get().trim().to_string();
            let register = if from_template {
                let template = Template {
                    family: service.clone(),
                    image: image.get(),
                    port: u16::try_from(number(port, "Port")?)
                        .map_err(|_| "Port: at most 65535".to_string())?,
                    cpu: number(cpu, "CPU units")?,
                    memory_mib: number(memory, "Memory")?,
                    gpu_memory_mib: number(gpu_memory, "GPU memory")?,
                    compute_percent: if compute.with(|c| c.trim().is_empty()) {
                        None
                    } else {
                        Some(number(compute, "Compute limit")?)
                    },
                    health_path: health.get(),
                    log_group: log_group.get(),
                    managed_instances: managed,
                    execution_role_arn: role.get(),
                    ..Template::default()
                };
                let team = team.get();
                let task = template.register_json("team", team.trim());
                let mut task = serde_json::Value::Object(task);
                if team.trim().is_empty() {
                    if let Some(map) = task.as_object_mut() {
                        map.remove("tags");
                    }
                }
                Some(task.to_string())
            } else {
                None
            };
            let choices = ServiceChoices {
                cluster: cluster.clone(),
                name: service.clone(),
                task_definition: if from_template {
                    service.clone()
                } else {
                    existing.get()
                },
                provider: provider.get(),
                desired: number(desired, "Desired tasks")?,
                subnets: subnets.get(),
                security_groups: groups.get(),
                target_group_arn: target_group.get(),
                container: "model".into(),
                port: port.with(|p| p.trim().parse().unwrap_or(8080)),
                circuit_breaker: breaker.get(),
            };
            let awsvpc = from_template || !subnets.with(|s| s.trim().is_empty());
            let mut create = choices.create_json(awsvpc);
            if !team.with(|t| t.trim().is_empty()) {
                crate::model::new_service::set_tag(&mut create, "team", team.get().trim());
            }
            Ok(NewServiceForm {
                create: serde_json::Value::Object(create).to_string(),
                register,
                description: description.get(),
                force: force.get(),
            })
        }
    };
    let check = ServerAction::<CheckNewService>::new();
    let create = ServerAction::<CreateNewService>::new();
    let checked_form = RwSignal::new(None::<NewServiceForm>);
    let form_now = Memo::new({
        let form = form.clone();
        move |_| form()
    });
    let run_check = {
        let cluster = cluster.clone();
        move |_| {
            if let Ok(form) = form_now.get_untracked() {
                checked_form.set(Some(form.clone()));
                check.dispatch(CheckNewService {
                    cluster: cluster.clone(),
                    form,
                });
            }
        }
    };
    let run_create = {
        let cluster = cluster.clone();
        move |_| {
            if let Ok(form) = form_now.get_untracked() {
                create.dispatch(CreateNewService {
                    cluster: cluster.clone(),
                    form,
                });
            }
        }
    };
    Effect::new(move |_| {
        if let Some(Ok(answer)) = create.value().get() {
            let navigate = leptos_router::hooks::use_navigate();
            navigate(
                &format!("/rollouts/{}", answer.audit_id),
                Default::default(),
            );
        }
    });
    // Create is offered for the inputs that were checked, and only when the check passed.
    let current = move || {
        let checked = checked_form.get();
        let now = form_now.get().ok();
        checked.is_some()
            && checked.map(|f| NewServiceForm { force: false, ..f })
                == now.map(|f| NewServiceForm { force: false, ..f })
    };
    let passed = move || matches!(check.value().get(), Some(Ok(_)));
    let completes = move || matches!(check.value().get(), Some(Ok(ref c)) if c.rollout.verdict == Verdict::Completes);
    let over_budget = move || matches!(check.value().get(), Some(Ok(ref c)) if c.budget.as_ref().is_some_and(|b| b.over));
    view! {
        <section class="card" data-testid="new-provider">
            <h2>"1. Capacity provider"</h2>
            {if offered.is_empty() {
                view! { <p class="banner warn" role="note" data-testid="no-provider">"This cluster has no capacity provider that can share GPUs; an admin adds one on the Capacity page. The service can still run on the cluster's registered instances (EC2 launch type) through the API."</p> }.into_any()
            } else {
                view! {
                    <label class="field">
                        <span>"Provider"</span>
                        <select data-testid="new-provider-select" on:change=move |ev| provider.set(event_target_value(&ev))>{provider_options}</select>
                    </label>
                }.into_any()
            }}
            <ul class="muted" data-testid="providers-left-out">{left_out}</ul>
        </section>
        <section class="card" data-testid="new-task-definition">
            <h2>"2. Task definition"</h2>
            <div class="edit-actions">
                <label class="inline"><input type="radio" name="start" value="template" data-testid="start-template" checked=true on:change=move |_| start.set("template".into()) />" The MPS inference template"</label>
                <label class="inline"><input type="radio" name="start" value="family" data-testid="start-family" on:change=move |_| start.set("family".into()) />" An existing family"</label>
            </div>
            {move || if start.get() == "template" {
                view! {
                    <div class="field-grid">
                        <Field label="Image" signal=image testid="new-image" hint="e.g. 123456789012.dkr.ecr.us-east-1.amazonaws.com/embed:1.4" />
                        <Field label="Container port" signal=port testid="new-port" />
                        <Field label="CPU units (task)" signal=cpu testid="new-cpu" />
                        <Field label="Memory, MiB (task)" signal=memory testid="new-memory" />
                        <Field label="GPU memory, MiB (MPS)" signal=gpu_memory testid="new-gpu-memory" />
                        <Field label="Compute limit, % (empty: none)" signal=compute testid="new-compute" />
                        <Field label="Health check path" signal=health testid="new-health" />
                        <Field label="Log group (empty: none)" signal=log_group testid="new-log-group" />
                        <Field label="Execution role ARN (for ECR and logs)" signal=role testid="new-role" />
                    </div>
                }.into_any()
            } else {
                view! { <Field label="Family or family:revision" signal=existing testid="new-existing" /> }.into_any()
            }}
        </section>
        <section class="card" data-testid="new-service">
            <h2>"3. Service"</h2>
            <div class="field-grid">
                <Field label="Name" signal=name testid="new-name" />
                <Field label="Desired tasks" signal=desired testid="new-desired" />
                <Field label="Team" signal=team testid="new-team" hint="empty: your team, when you are on one" />
                <Field label="Subnets (awsvpc), comma-separated" signal=subnets testid="new-subnets" />
                <Field label="Security groups, comma-separated" signal=groups testid="new-groups" />
                <Field label="Target group ARN (optional)" signal=target_group testid="new-target-group" />
                <Field label="Why" signal=description testid="new-description" />
            </div>
            <label class="inline"><input type="checkbox" data-testid="new-breaker" prop:checked=move || breaker.get() on:change=move |ev| breaker.set(event_target_checked(&ev)) />" Deployment circuit breaker with rollback"</label>
            <div class="edit-actions">
                <button type="button" data-testid="new-check" on:click=run_check disabled=move || check.pending().get() || form_now.with(Result::is_err)>"Check"</button>
            </div>
            {move || form_now.get().err().map(|why| view! { <p class="field-error" role="alert">{why}</p> })}
        </section>
        {move || check.value().get().map(|answer| match answer {
            Ok(found) => view! { <CheckedService found /> }.into_any(),
            Err(error) => view! {
                <p class="banner error" role="alert" data-testid="new-refused">{format!("Not possible as it stands: {error}")}</p>
            }.into_any(),
        })}
        {move || (passed() && current()).then(|| view! {
            <section class="card" data-testid="new-create">
                {(!completes()).then(|| view! {
                    <label class="inline"><input type="checkbox" data-testid="new-force" prop:checked=move || force.get() on:change=move |ev| force.set(event_target_checked(&ev)) />" Create it anyway: not every task would be placed"</label>
                })}
                {over_budget().then(|| view! { <p class="banner warn" role="note">"This would take the team past its budget: ask the team's approvers to raise it, or ask for fewer tasks."</p> })}
                <button type="button" data-testid="new-send" on:click=run_create.clone()
                    disabled=move || create.pending().get() || over_budget() || (!completes() && !force.get())>"Create the service"</button>
                {move || create.value().get().and_then(Result::err).map(|error| view! {
                    <p class="banner error" role="alert" data-testid="new-create-refused">{format!("Not created: {error}")}</p>
                })}
            </section>
        })}
    }
}

/// What the check found: the pre-check with the provider's launches, the budget, and the
/// requests as they will be sent.
#[component]
fn CheckedService(found: NewServiceCheck) -> impl IntoView {
    let json = |value: &serde_json::Value| serde_json::to_string_pretty(value).unwrap_or_default();
    view! {
        <section class="card" data-testid="new-checked">
            <h2>{format!("{} on {}, for team {}", found.service, found.cluster, found.team)}</h2>
            <dl class="facts">
                <dt>"Task definition"</dt><dd class="mono">{found.task_definition.clone()}</dd>
                <dt>"GPU"</dt><dd>{found.gpu.join("; ")}</dd>
                <dt>"Capacity provider"</dt><dd data-testid="new-checked-provider">{found.provider.clone().unwrap_or_else(|| "none: the EC2 launch type".into())}</dd>
                {(!found.added.is_empty()).then(|| view! { <dt>"Added"</dt><dd data-testid="new-added">{found.added.join("; ")}</dd> })}
            </dl>
        </section>
        <PreCheckView rollout=found.rollout.clone() />
        {found.budget.clone().map(|verdict| view! {
            <section class="card" data-testid="new-budget">
                <h2>"Team budget"</h2>
                <p class=if verdict.over { "banner warn" } else { "banner info" } role="status" data-over=verdict.over.to_string()>{verdict.arithmetic.clone()}</p>
            </section>
        })}
        <section class="card" data-testid="new-requests">
            <h2>"The requests"</h2>
            <p class="muted">"Exactly what Create sends, to copy into infrastructure code."</p>
            <h3>"AWS CLI"</h3>
            <pre class="mono" data-testid="new-cli">{found.cli.clone()}</pre>
            <h3>"CloudFormation"</h3>
            <pre class="mono" data-testid="new-cloudformation">{found.cloudformation.clone()}</pre>
            <details>
                <summary>"CreateService as JSON"</summary>
                <pre class="mono" data-testid="new-create-json">{json(&found.create)}</pre>
            </details>
        </section>
    }
}
