//! `/deployments/new`: a new GPU service for the requester's team — from the MPS inference
//! template or an existing family, on a capacity provider that can share GPUs — checked (the
//! pre-check of its desired count with what the provider would launch, the team's budget, the
//! requests as AWS CLI input and CloudFormation) before it is created and its first deployment
//! followed live.

use super::*;
use crate::components::text_field::{number, text, TextField};
use crate::model::{
    capacity::{ClusterCapacity, ProviderType, ProviderView},
    new_service::{NewServiceCheck, NewServiceForm, ServiceChoices, Template},
};
use crate::resource::fetched;

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

/// The new-service page.
#[component]
pub fn NewServicePage() -> impl IntoView {
    let query = use_query_map();
    let clusters = fetched(|| (), |_| crate::server_fns::clusters::list_clusters());
    // Every cluster's providers, read once beside the clusters: a resource created in the form
    // (inside the `Suspense`) would be numbered apart on the server (see `crate::resource`).
    let capacity = fetched(|| (), |_| crate::server_fns::capacity::list_capacity(None));
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
                            {move || view! { <NewServiceForm cluster=cluster.get() capacity /> }}
                        }.into_any()
                    }
                    Err(error) => view! { <ErrorBanner error lead="The clusters could not be read: " testid="new-service-error" /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// The form for one cluster, once the providers are read.
#[component]
fn NewServiceForm(
    cluster: String,
    capacity: Resource<Result<Vec<ClusterCapacity>, ServiceError>, crate::resource::JsonCodec>,
) -> impl IntoView {
    view! {
        <Suspense fallback=|| view! { <p class="muted">"Reading the capacity providers…"</p> }>
            {move || {
                let cluster = cluster.clone();
                Suspend::new(async move {
                    match capacity.await {
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

/// The form's fields, each a signal (so the struct is `Copy`).
#[derive(Clone, Copy)]
struct Inputs {
    provider: RwSignal<String>,
    from_template: RwSignal<bool>,
    image: RwSignal<String>,
    port: RwSignal<String>,
    cpu: RwSignal<String>,
    memory: RwSignal<String>,
    gpu_memory: RwSignal<String>,
    compute: RwSignal<String>,
    health: RwSignal<String>,
    log_group: RwSignal<String>,
    role: RwSignal<String>,
    existing: RwSignal<String>,
    name: RwSignal<String>,
    desired: RwSignal<String>,
    subnets: RwSignal<String>,
    groups: RwSignal<String>,
    target_group: RwSignal<String>,
    team: RwSignal<String>,
    description: RwSignal<String>,
    breaker: RwSignal<bool>,
    force: RwSignal<bool>,
}

impl Inputs {
    /// The fields with the template's defaults, on `provider`.
    fn new(provider: String) -> Inputs {
        let template = Template::default();
        Inputs {
            provider: RwSignal::new(provider),
            from_template: RwSignal::new(true),
            image: text(""),
            port: text(template.port),
            cpu: text(template.cpu),
            memory: text(template.memory_mib),
            gpu_memory: text(template.gpu_memory_mib),
            compute: text(
                template
                    .compute_percent
                    .map(|p| p.to_string())
                    .unwrap_or_default(),
            ),
            health: text(&template.health_path),
            log_group: text(""),
            role: text(""),
            existing: text(""),
            name: text(""),
            desired: text(1),
            subnets: text(""),
            groups: text(""),
            target_group: text(""),
            team: text(""),
            description: text(""),
            breaker: RwSignal::new(true),
            force: RwSignal::new(false),
        }
    }

    /// The template's RegisterTaskDefinition request, for a Managed Instances provider or not.
    fn register(&self, managed: bool) -> Result<String, String> {
        let compute = if self.compute.with(|c| c.trim().is_empty()) {
            None
        } else {
            Some(number(self.compute, "Compute limit")?)
        };
        let template = Template {
            family: self.name.get().trim().to_string(),
            image: self.image.get(),
            port: u16::try_from(number(self.port, "Port")?)
                .map_err(|_| "Port: at most 65535".to_string())?,
            cpu: number(self.cpu, "CPU units")?,
            memory_mib: number(self.memory, "Memory")?,
            gpu_memory_mib: number(self.gpu_memory, "GPU memory")?,
            compute_percent: compute,
            health_path: self.health.get(),
            log_group: self.log_group.get(),
            managed_instances: managed,
            execution_role_arn: self.role.get(),
            ..Template::default()
        };
        let team = self.team.get();
        let mut task = template.register_json("team", team.trim());
        if team.trim().is_empty() {
            task.remove("tags");
        }
        Ok(serde_json::Value::Object(task).to_string())
    }

    /// The request the fields make for `cluster`; `managed`: whether the provider chosen is a
    /// Managed Instances provider.
    fn form(&self, cluster: &str, managed: bool) -> Result<NewServiceForm, String> {
        let from_template = self.from_template.get();
        let service = self.name.get().trim().to_string();
        let register = if from_template {
            Some(self.register(managed)?)
        } else {
            None
        };
        let choices = ServiceChoices {
            cluster: cluster.to_string(),
            name: service.clone(),
            task_definition: if from_template {
                service
            } else {
                self.existing.get()
            },
            provider: self.provider.get(),
            desired: number(self.desired, "Desired tasks")?,
            subnets: self.subnets.get(),
            security_groups: self.groups.get(),
            target_group_arn: self.target_group.get(),
            container: "model".into(),
            port: self.port.with(|p| p.trim().parse().unwrap_or(8080)),
            circuit_breaker: self.breaker.get(),
        };
        let awsvpc = from_template || !self.subnets.with(|s| s.trim().is_empty());
        let mut create = choices.create_json(awsvpc);
        let team = self.team.get();
        if !team.trim().is_empty() {
            crate::model::new_service::set_tag(&mut create, "team", team.trim());
        }
        Ok(NewServiceForm {
            create: serde_json::Value::Object(create).to_string(),
            register,
            description: self.description.get(),
            force: self.force.get(),
        })
    }
}

/// Step 1: the providers offered (those that can share GPUs, a Managed Instances one first) and
/// those left out with why.
#[component]
fn ProviderPicker(capacity: ClusterCapacity, provider: RwSignal<String>) -> impl IntoView {
    let offered: Vec<&ProviderView> = capacity
        .providers
        .iter()
        .filter(|p| not_offered(p).is_none())
        .collect();
    let options = offered
        .iter()
        .map(|p| {
            let name = p.name.clone();
            let kind = if p.kind == ProviderType::ManagedInstances { "Managed Instances" } else { "Auto Scaling group" };
            let label = format!("{} ({kind}, {} instances)", p.name, p.instances);
            view! { <option value=name.clone() selected=move || provider.get() == name>{label}</option> }
        })
        .collect_view();
    let left_out = capacity
        .providers
        .iter()
        .filter_map(|p| not_offered(p).map(|why| view! { <li><span class="mono">{p.name.clone()}</span>{format!(": {why}")}</li> }))
        .collect_view();
    view! {
        <section class="card" data-testid="new-provider">
            <h2>"1. Capacity provider"</h2>
            {if offered.is_empty() {
                view! { <p class="banner warn" role="note" data-testid="no-provider">"This cluster has no capacity provider that can share GPUs; an admin adds one on the Capacity page. The service can still run on the cluster's registered instances (EC2 launch type) through the API."</p> }.into_any()
            } else {
                view! {
                    <label class="field">
                        <span>"Provider"</span>
                        <select data-testid="new-provider-select" on:change=move |ev| provider.set(event_target_value(&ev))>{options}</select>
                    </label>
                }.into_any()
            }}
            <ul class="muted" data-testid="providers-left-out">{left_out}</ul>
        </section>
    }
}

/// Step 2: the template's fields, or an existing family.
#[component]
fn TaskFields(inputs: Inputs) -> impl IntoView {
    let i = inputs;
    view! {
        <section class="card" data-testid="new-task-definition">
            <h2>"2. Task definition"</h2>
            <div class="edit-actions">
                <label class="inline"><input type="radio" name="start" value="template" data-testid="start-template" checked=true on:change=move |_| i.from_template.set(true) />" The MPS inference template"</label>
                <label class="inline"><input type="radio" name="start" value="family" data-testid="start-family" on:change=move |_| i.from_template.set(false) />" An existing family"</label>
            </div>
            {move || if i.from_template.get() {
                view! {
                    <div class="field-grid">
                        <TextField label="Image" signal=i.image testid="new-image" hint="e.g. 123456789012.dkr.ecr.us-east-1.amazonaws.com/embed:1.4" />
                        <TextField label="Container port" signal=i.port testid="new-port" />
                        <TextField label="CPU units (task)" signal=i.cpu testid="new-cpu" />
                        <TextField label="Memory, MiB (task)" signal=i.memory testid="new-memory" />
                        <TextField label="GPU memory, MiB (MPS)" signal=i.gpu_memory testid="new-gpu-memory" />
                        <TextField label="Compute limit, % (empty: none)" signal=i.compute testid="new-compute" />
                        <TextField label="Health check path" signal=i.health testid="new-health" />
                        <TextField label="Log group (empty: none)" signal=i.log_group testid="new-log-group" />
                        <TextField label="Execution role ARN (for ECR and logs)" signal=i.role testid="new-role" />
                    </div>
                }.into_any()
            } else {
                view! { <TextField label="Family or family:revision" signal=i.existing testid="new-existing" /> }.into_any()
            }}
        </section>
    }
}

/// Step 3: the service's own fields.
#[component]
fn ServiceFields(inputs: Inputs) -> impl IntoView {
    let i = inputs;
    view! {
        <div class="field-grid">
            <TextField label="Name" signal=i.name testid="new-name" />
            <TextField label="Desired tasks" signal=i.desired testid="new-desired" />
            <TextField label="Team" signal=i.team testid="new-team" hint="empty: your team, when you are on one" />
            <TextField label="Subnets (awsvpc), comma-separated" signal=i.subnets testid="new-subnets" />
            <TextField label="Security groups, comma-separated" signal=i.groups testid="new-groups" />
            <TextField label="Target group ARN (optional)" signal=i.target_group testid="new-target-group" />
            <TextField label="Why" signal=i.description testid="new-description" />
        </div>
        <label class="inline"><input type="checkbox" data-testid="new-breaker" prop:checked=move || i.breaker.get() on:change=move |ev| i.breaker.set(event_target_checked(&ev)) />" Deployment circuit breaker with rollback"</label>
    }
}

/// The choices, the check and the creation.
#[component]
fn Choices(capacity: ClusterCapacity) -> impl IntoView {
    let cluster = capacity.cluster.clone();
    let first = capacity
        .providers
        .iter()
        .filter(|p| not_offered(p).is_none())
        .min_by_key(|p| p.kind != ProviderType::ManagedInstances)
        .map(|p| p.name.clone())
        .unwrap_or_default();
    let i = Inputs::new(first);
    let managed: Vec<String> = capacity
        .providers
        .iter()
        .filter(|p| p.kind == ProviderType::ManagedInstances)
        .map(|p| p.name.clone())
        .collect();
    let form_now = {
        let cluster = cluster.clone();
        Memo::new(move |_| i.form(&cluster, managed.contains(&i.provider.get())))
    };
    let check = ServerAction::<CheckNewService>::new();
    let checked_form = RwSignal::new(None::<NewServiceForm>);
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
    // Create is offered for the inputs that were checked, and only when the check passed.
    let current = move || {
        let unforced = |f: NewServiceForm| NewServiceForm { force: false, ..f };
        let checked = checked_form.get().map(unforced);
        checked.is_some() && checked == form_now.get().ok().map(unforced)
    };
    let passed = move || matches!(check.value().get(), Some(Ok(_)));
    view! {
        <ProviderPicker capacity=capacity.clone() provider=i.provider />
        <TaskFields inputs=i />
        <section class="card" data-testid="new-service">
            <h2>"3. Service"</h2>
            <ServiceFields inputs=i />
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
        {move || (passed() && current()).then(|| view! { <CreateCard cluster=cluster.clone() check form_now force=i.force /> })}
    }
}

/// Creating what was checked: forced past a pre-check that does not complete; past the team's
/// budget, a request for approval (the page opens it); on success the page follows the first
/// deployment.
#[component]
fn CreateCard(
    cluster: String,
    check: ServerAction<CheckNewService>,
    form_now: Memo<Result<NewServiceForm, String>>,
    force: RwSignal<bool>,
) -> impl IntoView {
    let create = ServerAction::<CreateNewService>::new();
    Effect::new(move |_| {
        if let Some(Ok(answer)) = create.value().get() {
            let navigate = leptos_router::hooks::use_navigate();
            let to = match &answer.approval {
                Some(request) => format!("/approvals/{request}"),
                None => format!("/rollouts/{}", answer.audit_id),
            };
            navigate(&to, Default::default());
        }
    });
    let completes = move || matches!(check.value().get(), Some(Ok(ref c)) if c.rollout.verdict == Verdict::Completes);
    let over_budget = move || matches!(check.value().get(), Some(Ok(ref c)) if c.budget.as_ref().is_some_and(|b| b.over));
    let run_create = move |_| {
        if let Ok(form) = form_now.get_untracked() {
            create.dispatch(CreateNewService {
                cluster: cluster.clone(),
                form,
            });
        }
    };
    view! {
        <section class="card" data-testid="new-create">
            {move || (!completes()).then(|| view! {
                <label class="inline"><input type="checkbox" data-testid="new-force" prop:checked=move || force.get() on:change=move |ev| force.set(event_target_checked(&ev)) />" Create it anyway: not every task would be placed"</label>
            })}
            {move || over_budget().then(|| view! { <p class="banner warn" role="note">"This would take the team past its budget: the team's approvers are asked, and the service is created once one of them approves (the checks run again then)."</p> })}
            <button type="button" data-testid="new-send" on:click=run_create
                disabled=move || create.pending().get() || (!completes() && !force.get())>
                {move || if over_budget() { "Ask for approval to create the service" } else { "Create the service" }}
            </button>
            {move || create.value().get().and_then(Result::err).map(|error| view! {
                <p class="banner error" role="alert" data-testid="new-create-refused">{format!("Not created: {error}")}</p>
            })}
        </section>
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
