//! Adding a capacity provider for GPU sharing to a cluster (admins): a Managed Instances provider
//! of NVIDIA instances or an Auto Scaling group with managed scaling, checked first — which
//! instance types its requirements take, which of them can share GPUs, their GPUs, memory and
//! price — then created and added to the cluster's providers.

use super::*;
use crate::components::text_field::{number, text, TextField};
use crate::{
    model::new_provider::{GroupTemplate, ManagedTemplate, ProviderCheck, ProviderForm},
    server_fns::capacity::{CheckProvider, CreateProvider},
};

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

/// The form's fields, each a signal (so the struct is `Copy`).
#[derive(Clone, Copy)]
struct Inputs {
    managed_kind: RwSignal<bool>,
    name: RwSignal<String>,
    names: RwSignal<String>,
    gpus_min: RwSignal<String>,
    gpus_max: RwSignal<String>,
    gpu_memory: RwSignal<String>,
    vcpu_min: RwSignal<String>,
    vcpu_max: RwSignal<String>,
    memory_min: RwSignal<String>,
    allowed: RwSignal<String>,
    excluded: RwSignal<String>,
    option: RwSignal<String>,
    scale_in: RwSignal<String>,
    subnets: RwSignal<String>,
    groups: RwSignal<String>,
    role: RwSignal<String>,
    profile: RwSignal<String>,
    repair: RwSignal<bool>,
    group_arn: RwSignal<String>,
    target: RwSignal<String>,
    step_min: RwSignal<String>,
    step_max: RwSignal<String>,
    warmup: RwSignal<String>,
    make_default: RwSignal<bool>,
    description: RwSignal<String>,
}

/// A signal holding an optional number, empty when `None`.
fn optional_text(value: Option<u32>) -> RwSignal<String> {
    RwSignal::new(value.map(|n| n.to_string()).unwrap_or_default())
}

/// An optional whole number from a field: empty is `None`.
fn optional(signal: RwSignal<String>, what: &str) -> Result<Option<u32>, String> {
    if signal.with(|t| t.trim().is_empty()) {
        Ok(None)
    } else {
        number(signal, what).map(Some)
    }
}

impl Inputs {
    /// The fields filled in with the templates' defaults.
    fn new() -> Inputs {
        let managed = ManagedTemplate::default();
        let group = GroupTemplate::default();
        Inputs {
            managed_kind: RwSignal::new(true),
            name: text(""),
            names: text(&managed.accelerator_names),
            gpus_min: optional_text(managed.gpus_min),
            gpus_max: optional_text(managed.gpus_max),
            gpu_memory: optional_text(managed.gpu_memory_min_mib),
            vcpu_min: text(managed.vcpu_min),
            vcpu_max: optional_text(managed.vcpu_max),
            memory_min: text(managed.memory_min_mib),
            allowed: text(&managed.allowed),
            excluded: text(""),
            option: text(&managed.capacity_option),
            scale_in: text(
                managed
                    .scale_in_after
                    .map(|s| s.to_string())
                    .unwrap_or_default(),
            ),
            subnets: text(""),
            groups: text(""),
            role: text(""),
            profile: text(""),
            repair: RwSignal::new(true),
            group_arn: text(""),
            target: text(group.target_capacity),
            step_min: text(group.step_min),
            step_max: text(group.step_max),
            warmup: text(group.warmup_seconds),
            make_default: RwSignal::new(false),
            description: text(""),
        }
    }

    /// The Managed Instances provider the fields describe.
    fn managed(&self) -> Result<ManagedTemplate, String> {
        let scale_in = if self.scale_in.with(|s| s.trim().is_empty()) {
            None
        } else {
            Some(
                self.scale_in
                    .with(|s| s.trim().parse::<i64>())
                    .map_err(|_| "Scale-in delay: seconds, or -1 for never".to_string())?,
            )
        };
        Ok(ManagedTemplate {
            name: self.name.get(),
            accelerator_names: self.names.get(),
            gpus_min: optional(self.gpus_min, "GPUs at least")?,
            gpus_max: optional(self.gpus_max, "GPUs at most")?,
            gpu_memory_min_mib: optional(self.gpu_memory, "GPU memory")?,
            vcpu_min: number(self.vcpu_min, "vCPUs at least")?,
            vcpu_max: optional(self.vcpu_max, "vCPUs at most")?,
            memory_min_mib: number(self.memory_min, "Memory")?,
            allowed: self.allowed.get(),
            excluded: self.excluded.get(),
            capacity_option: self.option.get(),
            auto_repair: self.repair.get(),
            scale_in_after: scale_in,
            subnets: self.subnets.get(),
            security_groups: self.groups.get(),
            infrastructure_role_arn: self.role.get(),
            instance_profile_arn: self.profile.get(),
        })
    }

    /// The Auto Scaling group provider the fields describe.
    fn group(&self) -> Result<GroupTemplate, String> {
        Ok(GroupTemplate {
            name: self.name.get(),
            group_arn: self.group_arn.get(),
            target_capacity: number(self.target, "Target capacity")?,
            step_min: number(self.step_min, "Smallest step")?,
            step_max: number(self.step_max, "Largest step")?,
            warmup_seconds: number(self.warmup, "Warm-up")?,
        })
    }

    /// The request the fields make for `cluster`.
    fn form(&self, cluster: &str) -> Result<ProviderForm, String> {
        let body = if self.managed_kind.get() {
            self.managed()?.create_json(cluster)
        } else {
            self.group()?.create_json()
        };
        Ok(ProviderForm {
            create: serde_json::Value::Object(body).to_string(),
            make_default: self.make_default.get(),
            description: self.description.get(),
        })
    }
}

/// A Managed Instances provider's fields.
#[component]
fn ManagedFields(inputs: Inputs) -> impl IntoView {
    let i = inputs;
    view! {
        <TextField label="Accelerator names (NVIDIA), comma-separated" signal=i.names testid="provider-accelerators" />
        <TextField label="GPUs per instance, at least" signal=i.gpus_min testid="provider-gpus-min" />
        <TextField label="GPUs per instance, at most" signal=i.gpus_max testid="provider-gpus-max" />
        <TextField label="GPU memory per instance, MiB, at least" signal=i.gpu_memory testid="provider-gpu-memory" />
        <TextField label="vCPUs, at least" signal=i.vcpu_min testid="provider-vcpu-min" />
        <TextField label="vCPUs, at most" signal=i.vcpu_max testid="provider-vcpu-max" />
        <TextField label="Memory, MiB, at least" signal=i.memory_min testid="provider-memory-min" />
        <TextField label="Allowed types (wildcards), comma-separated" signal=i.allowed testid="provider-allowed" />
        <TextField label="Excluded types, comma-separated" signal=i.excluded testid="provider-excluded" />
        <label class="field"><span>"Capacity"</span>
            <select data-testid="provider-option" on:change=move |ev| i.option.set(event_target_value(&ev))>
                <option value="ON_DEMAND" selected=true>"On demand"</option>
                <option value="SPOT">"Spot"</option>
            </select>
        </label>
        <TextField label="Scale-in delay, s (-1: never; empty: ECS's default)" signal=i.scale_in testid="provider-scale-in" />
        <TextField label="Subnets, comma-separated" signal=i.subnets testid="provider-subnets" />
        <TextField label="Security groups, comma-separated" signal=i.groups testid="provider-groups" />
        <TextField label="Infrastructure role ARN" signal=i.role testid="provider-role" />
        <TextField label="Instance profile ARN" signal=i.profile testid="provider-profile" />
        <label class="inline"><input type="checkbox" data-testid="provider-repair" prop:checked=move || i.repair.get() on:change=move |ev| i.repair.set(event_target_checked(&ev)) />" Auto repair (replace instances whose MPS daemon is impaired)"</label>
    }
}

/// An Auto Scaling group provider's fields.
#[component]
fn GroupFields(inputs: Inputs) -> impl IntoView {
    let i = inputs;
    view! {
        <TextField label="Auto Scaling group ARN" signal=i.group_arn testid="provider-group-arn" />
        <TextField label="Target capacity, %" signal=i.target testid="provider-target" />
        <TextField label="Smallest step" signal=i.step_min testid="provider-step-min" />
        <TextField label="Largest step" signal=i.step_max testid="provider-step-max" />
        <TextField label="Warm-up, s" signal=i.warmup testid="provider-warmup" />
    }
}

/// The form of one cluster.
#[component]
pub(super) fn NewProviderForm(cluster: String) -> impl IntoView {
    let i = Inputs::new();
    let form_now = {
        let cluster = cluster.clone();
        Memo::new(move |_| i.form(&cluster))
    };
    let check = ServerAction::<CheckProvider>::new();
    let create = ServerAction::<CreateProvider>::new();
    let checked = RwSignal::new(None::<ProviderForm>);
    let run = {
        let cluster = cluster.clone();
        move |creating: bool| {
            if let Ok(form) = form_now.get_untracked() {
                if creating {
                    create.dispatch(CreateProvider {
                        cluster: cluster.clone(),
                        form,
                    });
                } else {
                    checked.set(Some(form.clone()));
                    check.dispatch(CheckProvider {
                        cluster: cluster.clone(),
                        form,
                    });
                }
            }
        }
    };
    let run_create = run.clone();
    let same = move || checked.get().is_some() && checked.get() == form_now.get().ok();
    let passed = move || matches!(check.value().get(), Some(Ok(_)));
    view! {
        <details class="card" data-testid="new-provider-form">
            <summary>{format!("Add a capacity provider to {cluster} (admins)")}</summary>
            <div class="edit-actions">
                <label class="inline"><input type="radio" name=format!("kind-{cluster}") data-testid="provider-kind-managed" checked=true on:change=move |_| i.managed_kind.set(true) />" Managed Instances"</label>
                <label class="inline"><input type="radio" name=format!("kind-{cluster}") data-testid="provider-kind-group" on:change=move |_| i.managed_kind.set(false) />" Auto Scaling group"</label>
            </div>
            <div class="field-grid">
                <TextField label="Name" signal=i.name testid="provider-name" />
                {move || if i.managed_kind.get() { view! { <ManagedFields inputs=i /> }.into_any() } else { view! { <GroupFields inputs=i /> }.into_any() }}
                <TextField label="Why" signal=i.description testid="provider-description" />
            </div>
            <label class="inline"><input type="checkbox" data-testid="provider-default" prop:checked=move || i.make_default.get() on:change=move |ev| i.make_default.set(event_target_checked(&ev)) />" Make it the cluster's default strategy (otherwise the default stays as it is)"</label>
            <div class="edit-actions">
                <button type="button" data-testid="provider-check" on:click=move |_| run(false) disabled=move || check.pending().get() || form_now.with(Result::is_err)>"Check"</button>
            </div>
            {move || form_now.get().err().map(|why| view! { <p class="field-error" role="alert">{why}</p> })}
            {move || check.value().get().map(|answer| match answer {
                Ok(found) => view! { <ProviderChecked found /> }.into_any(),
                Err(error) => view! { <p class="banner error" role="alert" data-testid="provider-refused">{format!("Not possible as it stands: {error}")}</p> }.into_any(),
            })}
            {move || (passed() && same()).then(|| {
                let run_create = run_create.clone();
                view! {
                    <button type="button" data-testid="provider-create" on:click=move |_| run_create(true) disabled=move || create.pending().get() || matches!(create.value().get(), Some(Ok(_)))>"Create the provider"</button>
                }
            })}
            <ProviderCreated create />
        </details>
    }
}

/// What the creation answered.
#[component]
fn ProviderCreated(create: ServerAction<CreateProvider>) -> impl IntoView {
    move || {
        create.value().get().map(|answer| match answer {
            Ok(done) => view! {
                <p class="banner info" role="status" data-testid="provider-created">
                    {format!("Created {}; {}'s providers are now {}. ", done.name, done.cluster, done.providers_after.join(", "))}
                    <a href=format!("/capacity?cluster={}", done.cluster)>"Look again"</a>
                </p>
            }
            .into_any(),
            Err(error) => view! { <p class="banner error" role="alert" data-testid="provider-create-refused">{format!("{error}")}</p> }.into_any(),
        })
    }
}

/// What a check found.
#[component]
fn ProviderChecked(found: ProviderCheck) -> impl IntoView {
    let strategy = strategy_text(&found.default_after, "none (unchanged)");
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
