//! Adding a capacity provider for GPU sharing to a cluster (admins): a Managed Instances provider
//! of NVIDIA instances or an Auto Scaling group with managed scaling, checked first — which
//! instance types its requirements take, which of them can share GPUs, their GPUs, memory and
//! price — then created and added to the cluster's providers.

use super::*;
use crate::{
    model::new_provider::{GroupTemplate, ManagedTemplate, ProviderCheck, ProviderForm},
    server_fns::capacity::{CheckProvider, CreateProvider},
};

/// A text input bound to `signal`.
#[component]
fn Input(label: &'static str, signal: RwSignal<String>, testid: &'static str) -> impl IntoView {
    view! {
        <label class="field">
            <span>{label}</span>
            <input type="text" data-testid=testid value=signal.get_untracked()
                prop:value=move || signal.get()
                on:input=move |ev| signal.set(event_target_value(&ev)) />
        </label>
    }
}

/// The types a check found, with their GPUs, memory and price.
#[component]
fn TypeTable(options: Vec<LaunchOption>, testid: &'static str) -> impl IntoView {
    let rows = options
        .into_iter()
        .map(|o| {
            let f = o.facts;
            view! {
                <tr>
                    <td class="mono">{f.name.clone()}</td>
                    <td>{format!("{} × {}", f.gpus, f.accelerator_name.to_uppercase())}</td>
                    <td>{format!("{} MiB each", f.gpu_memory_mib)}</td>
                    <td>{f.usd_per_hour.map_or_else(|| "—".to_string(), |p| format!("${p:.2}/h"))}</td>
                    <td>{if o.shares_gpus { "yes".to_string() } else { o.not_matched.unwrap_or_else(|| "no: not NVIDIA with whole GPUs".into()) }}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="data" data-testid=testid>
            <thead><tr><th>"Type"</th><th>"GPUs"</th><th>"GPU memory"</th><th>"On demand"</th><th>"Shares GPUs (MPS)"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// The form of one cluster.
#[component]
pub(super) fn NewProviderForm(cluster: String) -> impl IntoView {
    let kind = RwSignal::new("managed".to_string());
    let managed = ManagedTemplate::default();
    let group = GroupTemplate::default();
    let opt = |v: Option<u32>| v.map(|n| n.to_string()).unwrap_or_default();
    let (name, names, gpus_min, gpus_max, gpu_memory, vcpu_min, vcpu_max, memory_min) = (
        RwSignal::new(String::new()),
        RwSignal::new(managed.accelerator_names.clone()),
        RwSignal::new(opt(managed.gpus_min)),
        RwSignal::new(opt(managed.gpus_max)),
        RwSignal::new(opt(managed.gpu_memory_min_mib)),
        RwSignal::new(managed.vcpu_min.to_string()),
        RwSignal::new(opt(managed.vcpu_max)),
        RwSignal::new(managed.memory_min_mib.to_string()),
    );
    let (allowed, excluded, option, scale_in, subnets, groups, role, profile) = (
        RwSignal::new(managed.allowed.clone()),
        RwSignal::new(String::new()),
        RwSignal::new(managed.capacity_option.clone()),
        RwSignal::new(
            managed
                .scale_in_after
                .map(|s| s.to_string())
                .unwrap_or_default(),
        ),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    let (group_arn, target, step_min, step_max, warmup) = (
        RwSignal::new(String::new()),
        RwSignal::new(group.target_capacity.to_string()),
        RwSignal::new(group.step_min.to_string()),
        RwSignal::new(group.step_max.to_string()),
        RwSignal::new(group.warmup_seconds.to_string()),
    );
    let repair = RwSignal::new(true);
    let make_default = RwSignal::new(false);
    let description = RwSignal::new(String::new());
    let form = {
        let cluster = cluster.clone();
        move || -> Result<ProviderForm, String> {
            let number = |s: RwSignal<String>, what: &str| -> Result<u32, String> {
                s.with(|t| {
                    t.trim()
                        .parse::<u32>()
                        .map_err(|_| format!("{what}: give a whole number"))
                })
            };
            let optional = |s: RwSignal<String>, what: &str| -> Result<Option<u32>, String> {
                if s.with(|t| t.trim().is_empty()) {
                    Ok(None)
                } else {
                    number(s, what).map(Some)
                }
            };
            let body =
                if kind.get() == "managed" {
                    ManagedTemplate {
                        name: name.get(),
                        accelerator_names: names.get(),
                        gpus_min: optional(gpus_min, "GPUs at least")?,
                        gpus_max: optional(gpus_max, "GPUs at most")?,
                        gpu_memory_min_mib: optional(gpu_memory, "GPU memory")?,
                        vcpu_min: number(vcpu_min, "vCPUs at least")?,
                        vcpu_max: optional(vcpu_max, "vCPUs at most")?,
                        memory_min_mib: number(memory_min, "Memory")?,
                        allowed: allowed.get(),
                        excluded: excluded.get(),
                        capacity_option: option.get(),
                        auto_repair: repair.get(),
                        scale_in_after: if scale_in.with(|s| s.trim().is_empty()) {
                            None
                        } else {
                            Some(scale_in.with(|s| s.trim().parse::<i64>()).map_err(|_| {
                                "Scale-in delay: seconds, or -1 for never".to_string()
                            })?)
                        },
                        subnets: subnets.get(),
                        security_groups: groups.get(),
                        infrastructure_role_arn: role.get(),
                        instance_profile_arn: profile.get(),
                    }
                    .create_json(&cluster)
                } else {
                    GroupTemplate {
                        name: name.get(),
                        group_arn: group_arn.get(),
                        target_capacity: number(target, "Target capacity")?,
                        step_min: number(step_min, "Smallest step")?,
                        step_max: number(step_max, "Largest step")?,
                        warmup_seconds: number(warmup, "Warm-up")?,
                    }
                    .create_json()
                };
            Ok(ProviderForm {
                create: serde_json::Value::Object(body).to_string(),
                make_default: make_default.get(),
                description: description.get(),
            })
        }
    };
    let form_now = Memo::new(move |_| form());
    let check = ServerAction::<CheckProvider>::new();
    let create = ServerAction::<CreateProvider>::new();
    let checked = RwSignal::new(None::<ProviderForm>);
    let run_check = {
        let cluster = cluster.clone();
        move |_| {
            if let Ok(form) = form_now.get_untracked() {
                checked.set(Some(form.clone()));
                check.dispatch(CheckProvider {
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
                create.dispatch(CreateProvider {
                    cluster: cluster.clone(),
                    form,
                });
            }
        }
    };
    let same = move || checked.get().is_some() && checked.get() == form_now.get().ok();
    let passed = move || matches!(check.value().get(), Some(Ok(_)));
    view! {
        <details class="card" data-testid="new-provider-form">
            <summary>{format!("Add a capacity provider to {cluster} (admins)")}</summary>
            <div class="edit-actions">
                <label class="inline"><input type="radio" name=format!("kind-{cluster}") data-testid="provider-kind-managed" checked=true on:change=move |_| kind.set("managed".into()) />" Managed Instances"</label>
                <label class="inline"><input type="radio" name=format!("kind-{cluster}") data-testid="provider-kind-group" on:change=move |_| kind.set("group".into()) />" Auto Scaling group"</label>
            </div>
            <div class="field-grid">
                <Input label="Name" signal=name testid="provider-name" />
                {move || if kind.get() == "managed" {
                    view! {
                        <Input label="Accelerator names (NVIDIA), comma-separated" signal=names testid="provider-accelerators" />
                        <Input label="GPUs per instance, at least" signal=gpus_min testid="provider-gpus-min" />
                        <Input label="GPUs per instance, at most" signal=gpus_max testid="provider-gpus-max" />
                        <Input label="GPU memory per instance, MiB, at least" signal=gpu_memory testid="provider-gpu-memory" />
                        <Input label="vCPUs, at least" signal=vcpu_min testid="provider-vcpu-min" />
                        <Input label="vCPUs, at most" signal=vcpu_max testid="provider-vcpu-max" />
                        <Input label="Memory, MiB, at least" signal=memory_min testid="provider-memory-min" />
                        <Input label="Allowed types (wildcards), comma-separated" signal=allowed testid="provider-allowed" />
                        <Input label="Excluded types, comma-separated" signal=excluded testid="provider-excluded" />
                        <label class="field"><span>"Capacity"</span>
                            <select data-testid="provider-option" on:change=move |ev| option.set(event_target_value(&ev))>
                                <option value="ON_DEMAND" selected=true>"On demand"</option>
                                <option value="SPOT">"Spot"</option>
                            </select>
                        </label>
                        <Input label="Scale-in delay, s (-1: never; empty: ECS's default)" signal=scale_in testid="provider-scale-in" />
                        <Input label="Subnets, comma-separated" signal=subnets testid="provider-subnets" />
                        <Input label="Security groups, comma-separated" signal=groups testid="provider-groups" />
                        <Input label="Infrastructure role ARN" signal=role testid="provider-role" />
                        <Input label="Instance profile ARN" signal=profile testid="provider-profile" />
                        <label class="inline"><input type="checkbox" data-testid="provider-repair" prop:checked=move || repair.get() on:change=move |ev| repair.set(event_target_checked(&ev)) />" Auto repair (replace instances whose MPS daemon is impaired)"</label>
                    }.into_any()
                } else {
                    view! {
                        <Input label="Auto Scaling group ARN" signal=group_arn testid="provider-group-arn" />
                        <Input label="Target capacity, %" signal=target testid="provider-target" />
                        <Input label="Smallest step" signal=step_min testid="provider-step-min" />
                        <Input label="Largest step" signal=step_max testid="provider-step-max" />
                        <Input label="Warm-up, s" signal=warmup testid="provider-warmup" />
                    }.into_any()
                }}
                <Input label="Why" signal=description testid="provider-description" />
            </div>
            <label class="inline"><input type="checkbox" data-testid="provider-default" prop:checked=move || make_default.get() on:change=move |ev| make_default.set(event_target_checked(&ev)) />" Make it the cluster's default strategy (otherwise the default stays as it is)"</label>
            <div class="edit-actions">
                <button type="button" data-testid="provider-check" on:click=run_check disabled=move || check.pending().get() || form_now.with(Result::is_err)>"Check"</button>
            </div>
            {move || form_now.get().err().map(|why| view! { <p class="field-error" role="alert">{why}</p> })}
            {move || check.value().get().map(|answer| match answer {
                Ok(found) => view! { <ProviderChecked found /> }.into_any(),
                Err(error) => view! { <p class="banner error" role="alert" data-testid="provider-refused">{format!("Not possible as it stands: {error}")}</p> }.into_any(),
            })}
            {move || (passed() && same()).then(|| view! {
                <button type="button" data-testid="provider-create" on:click=run_create.clone() disabled=move || create.pending().get() || matches!(create.value().get(), Some(Ok(_)))>"Create the provider"</button>
            })}
            {move || create.value().get().map(|answer| match answer {
                Ok(done) => view! {
                    <p class="banner info" role="status" data-testid="provider-created">
                        {format!("Created {}; {}'s providers are now {}. ", done.name, done.cluster, done.providers_after.join(", "))}
                        <a href=format!("/capacity?cluster={}", done.cluster)>"Look again"</a>
                    </p>
                }.into_any(),
                Err(error) => view! { <p class="banner error" role="alert" data-testid="provider-create-refused">{format!("{error}")}</p> }.into_any(),
            })}
        </details>
    }
}

/// What a check found.
#[component]
fn ProviderChecked(found: ProviderCheck) -> impl IntoView {
    let strategy = if found.default_after.is_empty() {
        "none (unchanged)".to_string()
    } else {
        found
            .default_after
            .iter()
            .map(|s| {
                format!(
                    "{} (weight {}, base {})",
                    s.capacity_provider, s.weight, s.base
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    view! {
        <div data-testid="provider-checked">
            <p class="banner info" role="status">{format!("{} takes {} instance type(s) that can share GPUs.", found.name, found.sharing.len())}</p>
            <TypeTable options=found.sharing.clone() testid="provider-sharing" />
            {(!found.not_sharing.is_empty()).then(|| view! {
                <p>"Matched, but cannot share GPUs:"</p>
                <TypeTable options=found.not_sharing.clone() testid="provider-not-sharing" />
            })}
            <dl class="facts">
                <dt>"Cluster's providers after"</dt><dd data-testid="provider-after">{found.providers_after.join(", ")}</dd>
                <dt>"Default strategy after"</dt><dd>{strategy}</dd>
            </dl>
            <h3>"AWS CLI"</h3>
            <pre class="mono" data-testid="provider-cli">{found.cli.clone()}</pre>
        </div>
    }
}
