//! The GPU panel's memory bar: one segment per container, in SVG (no inline styles under the
//! content security policy).

use leptos::prelude::*;

use crate::model::GpuView;

/// The memory bar of `gpu`, of which `allocated` MiB are allocated.
#[component]
pub fn MemoryBar(gpu: GpuView, allocated: u32) -> impl IntoView {
    let total = gpu.total_memory_mib.max(1);
    let mut offset = 0.0_f64;
    let segments: Vec<_> = gpu
        .containers
        .iter()
        .enumerate()
        .filter_map(|(n, c)| {
            let memory = match (c.memory_mib, c.whole_gpu) {
                (Some(m), _) => m,
                (None, true) => gpu.total_memory_mib,
                (None, false) => return None,
            };
            let width = f64::from(memory) / f64::from(total) * 100.0;
            let x = offset;
            offset += width;
            let title = format!(
                "{} ({}): {memory} MiB",
                c.container,
                c.service.as_deref().unwrap_or("no service")
            );
            Some(view! {
                <rect x=format!("{x:.2}") width=format!("{width:.2}") height="10" class=format!("seg k{}", n % 6)>
                    <title>{title}</title>
                </rect>
            })
        })
        .collect();
    view! {
        <svg class="membar" viewBox="0 0 100 10" preserveAspectRatio="none" role="img" aria-label=format!("{allocated} of {} MiB allocated", gpu.total_memory_mib)>
            <rect x="0" width="100" height="10" class="free" />
            {segments}
        </svg>
    }
}
