//! The editor's GPU form: a row per container — no GPU, whole GPUs (a count), or shared with
//! MPS (memory in MiB, shown in GiB too, and an optional compute limit) — with each field's
//! error beside it.

use leptos::prelude::*;

use crate::model::task_definition::{EditInput, FieldError, GpuKind, GpuSetting};

/// The form's own fields; an error about any other field is listed above the answer.
pub const FORM_FIELDS: [&str; 4] = ["kind", "count", "memory_mib", "compute_percent"];

/// One container's form fields, as typed.
#[derive(Clone, Copy)]
pub struct Row {
    kind: RwSignal<GpuKind>,
    count: RwSignal<String>,
    memory: RwSignal<String>,
    compute: RwSignal<String>,
}

impl Row {
    /// The fields showing `setting`.
    pub fn of(setting: &GpuSetting) -> Row {
        let (kind, count, memory, compute) = match setting {
            GpuSetting::None => (GpuKind::None, "1".to_string(), String::new(), String::new()),
            GpuSetting::Whole { count } => (
                GpuKind::Whole,
                count.to_string(),
                String::new(),
                String::new(),
            ),
            GpuSetting::Mps {
                memory_mib,
                max_compute_percent,
            } => (
                GpuKind::Mps,
                "1".to_string(),
                memory_mib.to_string(),
                max_compute_percent
                    .map(|p| p.to_string())
                    .unwrap_or_default(),
            ),
        };
        Row {
            kind: RwSignal::new(kind),
            count: RwSignal::new(count),
            memory: RwSignal::new(memory),
            compute: RwSignal::new(compute),
        }
    }

    /// What the row holds now, for the server to check.
    pub fn input(&self, container: &str) -> EditInput {
        EditInput {
            container: container.to_string(),
            kind: self.kind.get_untracked().as_str().to_string(),
            count: self.count.get_untracked(),
            memory_mib: self.memory.get_untracked(),
            compute_percent: self.compute.get_untracked(),
        }
    }
}

/// `8192` as `= 8.0 GiB`.
fn gib_hint(memory: &str) -> String {
    memory
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|m| *m > 0.0)
        .map(|m| format!("= {:.1} GiB", m / 1024.0))
        .unwrap_or_default()
}

/// The rows of the form, each field's error beside it.
#[component]
pub fn SettingsForm(rows: Vec<(String, Row)>, errors: Memo<Vec<FieldError>>) -> impl IntoView {
    let field_error = move |container: String, field: &'static str| {
        move || {
            errors.with(|list| {
                list.iter()
                    .find(|e| e.container.as_deref() == Some(container.as_str()) && e.field == field)
                    .map(|e| view! { <span class="field-error" role="alert">{e.message.clone()}</span> })
            })
        }
    };
    rows.into_iter()
        .map(|(name, row)| {
            let [kind_id, count_id, memory_id, compute_id] =
                ["kind", "count", "memory", "compute"].map(|field| format!("edit-{field}-{name}"));
            view! {
                <fieldset class="edit-row" data-testid=format!("edit-row-{name}")>
                    <legend>{name.clone()}</legend>
                    <label>
                        <span>"GPU"</span>
                        <select
                            data-testid=kind_id
                            prop:value=move || row.kind.get().as_str()
                            on:change=move |ev| {
                                if let Some(kind) = GpuKind::parse(&event_target_value(&ev)) {
                                    row.kind.set(kind);
                                }
                            }
                        >
                            <option value="none" selected=move || row.kind.get() == GpuKind::None>"No GPU"</option>
                            <option value="whole" selected=move || row.kind.get() == GpuKind::Whole>"Whole GPUs"</option>
                            <option value="mps" selected=move || row.kind.get() == GpuKind::Mps>"Shared with MPS"</option>
                        </select>
                        {field_error(name.clone(), "kind")}
                    </label>
                    <Show when=move || row.kind.get() == GpuKind::Whole>
                        <label>
                            <span>"GPUs"</span>
                            <input type="text" inputmode="numeric" size="4" data-testid=count_id.clone()
                                prop:value=move || row.count.get()
                                value=row.count.get_untracked()
                                on:input=move |ev| row.count.set(event_target_value(&ev)) />
                        </label>
                    </Show>
                    {field_error(name.clone(), "count")}
                    <Show when=move || row.kind.get() == GpuKind::Mps>
                        <label>
                            <span>"GPU memory, MiB"</span>
                            <input type="text" inputmode="numeric" size="8" data-testid=memory_id.clone()
                                prop:value=move || row.memory.get()
                                value=row.memory.get_untracked()
                                on:input=move |ev| row.memory.set(event_target_value(&ev)) />
                            <span class="muted">{move || gib_hint(&row.memory.get())}</span>
                        </label>
                        <label>
                            <span>"Max compute %"</span>
                            <input type="text" inputmode="numeric" size="4" data-testid=compute_id.clone()
                                placeholder="none"
                                prop:value=move || row.compute.get()
                                value=row.compute.get_untracked()
                                on:input=move |ev| row.compute.set(event_target_value(&ev)) />
                            <span class="muted">"a limit, not a reservation"</span>
                        </label>
                    </Show>
                    {field_error(name.clone(), "memory_mib")}
                    {field_error(name.clone(), "compute_percent")}
                </fieldset>
            }
        })
        .collect_view()
}

#[cfg(test)]
mod tests {
    use super::gib_hint;

    #[test]
    fn memory_reads_in_gib_too() {
        assert_eq!(gib_hint("8192"), "= 8.0 GiB");
        assert_eq!(gib_hint(" 1536 "), "= 1.5 GiB");
        assert_eq!(gib_hint("8 GiB"), "");
        assert_eq!(gib_hint("0"), "");
    }
}
