//! The fleet heatmap as one SVG: a group per cluster, a row per container instance, a cell per
//! GPU. Compact on purpose — at 8,000 GPUs each cell is one short `<rect>` whose size, shape and
//! colour come from CSS classes — so the server renders it as a string.

use std::fmt::Write;

use crate::model::{
    fleet_view::{colour_value, ColourMode, Shade},
    FleetSnapshot, SharingMode,
};

/// Width of the row labels, px.
pub const LABEL_WIDTH: u32 = 330;
/// Distance between cells, px (cells are 14 px, set in CSS).
pub const PITCH: u32 = 16;
/// Height of a cluster's heading, px.
const HEADING: u32 = 26;

/// The sharing mode's class: its glyph (shape and outline) in CSS.
fn mode_class(mode: SharingMode) -> &'static str {
    match mode {
        SharingMode::Idle => "i",
        SharingMode::NvidiaMps => "s",
        SharingMode::Dedicated => "d",
    }
}

/// Escapes text for HTML and SVG: names and tags from AWS are untrusted.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Renders the heatmap of `snapshot` in `colour` mode, marking the GPU `selected`
/// (`<EC2 instance ID>:<index>`) if any.
pub fn render(snapshot: &FleetSnapshot, colour: ColourMode, selected: Option<&str>) -> String {
    let gpus = snapshot.gpu_count();
    let columns = snapshot
        .instances()
        .flat_map(|i| i.gpus.iter().map(|g| g.index + 1))
        .max()
        .unwrap_or(1);
    let rows: usize = snapshot.clusters.iter().map(|c| c.instances.len()).sum();
    let width = LABEL_WIDTH + columns * PITCH;
    let height = snapshot.clusters.len() as u32 * HEADING + rows as u32 * PITCH + 4;
    let mut svg = String::with_capacity(120 + rows * 110 + gpus * 28);
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="hm" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{gpus} GPUs coloured by {}" data-gpus="{gpus}" data-colour="{}">"#,
        escape(colour.label()),
        colour.as_str(),
    );
    let mut y = 0;
    for cluster in &snapshot.clusters {
        let cluster_gpus: usize = cluster.instances.iter().map(|i| i.gpus.len()).sum();
        let _ = write!(
            svg,
            r#"<text class="ch" x="0" y="{}">{} · {} instances · {} GPUs</text>"#,
            y + 18,
            escape(&cluster.name),
            cluster.instances.len(),
            cluster_gpus,
        );
        y += HEADING;
        for instance in &cluster.instances {
            let impaired = instance.impaired.is_some();
            let _ = write!(
                svg,
                r#"<g data-i="{}" transform="translate(0,{y})"{}><text x="0" y="11">{} <tspan class="t">{}</tspan>{}{}{}</text>"#,
                escape(&instance.ec2_instance_id),
                if impaired { r#" class="imp""# } else { "" },
                escape(&instance.ec2_instance_id),
                escape(&instance.instance_type),
                if impaired {
                    r#" <tspan class="w">⚠ impaired</tspan>"#
                } else {
                    ""
                },
                // Its agent reports no gpuDevices: whole GPUs only.
                if instance.mps_capable || instance.gpus.is_empty() {
                    ""
                } else {
                    r#" <tspan class="t" data-no-sharing="">· no sharing</tspan>"#
                },
                // DRAINING, or its agent disconnected: ECS places nothing here.
                instance
                    .not_placing
                    .as_deref()
                    .map(|why| format!(
                        r#" <tspan class="t" data-not-placing="">· {} (takes no tasks)</tspan>"#,
                        escape(why)
                    ))
                    .unwrap_or_default(),
            );
            for gpu in &instance.gpus {
                let shade = Shade::of(colour_value(gpu, colour));
                let is_selected = selected.is_some_and(|key| {
                    key.strip_prefix(instance.ec2_instance_id.as_str())
                        .and_then(|rest| rest.strip_prefix(':'))
                        .and_then(|index| index.parse::<u32>().ok())
                        == Some(gpu.index)
                        || key == gpu.uuid
                });
                let _ = write!(
                    svg,
                    r#"<rect x="{}" data-x="{}" class="{} {}{}"/>"#,
                    LABEL_WIDTH + gpu.index * PITCH,
                    gpu.index,
                    shade.class(),
                    mode_class(gpu.mode),
                    if is_selected { " sel" } else { "" },
                );
            }
            svg.push_str("</g>");
            y += PITCH;
        }
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ClusterView, GpuView, InstanceView};

    fn fleet(names: &[&str], gpus_per_instance: u32) -> FleetSnapshot {
        FleetSnapshot {
            taken_at: "t".into(),
            api_calls: 0,
            cloudwatch_calls: 0,
            usage_error: None,
            clusters: names
                .iter()
                .map(|name| ClusterView {
                    name: name.to_string(),
                    instances: vec![InstanceView {
                        host: None,
                        arn: "arn".into(),
                        ec2_instance_id: format!("i-{name}"),
                        instance_type: "g5.12xlarge".into(),
                        impaired: None,
                        mps_capable: true,
                        gpu_model: None,
                        not_placing: None,
                        availability_zone: None,
                        lifecycle: None,
                        room: None,
                        gpus: (0..gpus_per_instance)
                            .map(|index| GpuView {
                                uuid: format!("GPU-{name}-{index}"),
                                index,
                                mode: if index == 0 {
                                    SharingMode::Idle
                                } else {
                                    SharingMode::NvidiaMps
                                },
                                total_memory_mib: 10_000,
                                remaining_memory_mib: 10_000 - index * 2_500,
                                compute_allocated_percent: index * 40,
                                containers: Vec::new(),
                                usage: None,
                            })
                            .collect(),
                    }],
                    ..ClusterView::default()
                })
                .collect(),
            unknown_gpu_ids: 0,
        }
    }

    #[test]
    fn one_cell_per_gpu_coloured_by_the_mode() {
        let svg = render(&fleet(&["a", "b"], 4), ColourMode::Memory, None);
        assert_eq!(svg.matches("<rect").count(), 8);
        assert!(svg.contains(r#"data-gpus="8""#));
        // Index 2: 5,000 of 10,000 allocated.
        assert!(svg.contains(r#"data-x="2" class="c5 s""#), "{svg}");
        assert!(svg.contains(r#"data-x="0" class="c0 i""#));
        let compute = render(&fleet(&["a"], 4), ColourMode::Compute, None);
        assert!(
            compute.contains(r#"data-x="3" class="ov s""#),
            "120 % is oversubscribed"
        );
        let usage = render(&fleet(&["a"], 4), ColourMode::Utilization, None);
        assert_eq!(
            usage.matches(r#"class="nd"#).count(),
            4,
            "no data, never zero"
        );
    }

    #[test]
    fn an_instance_without_gpu_sharing_says_so() {
        let mut snapshot = fleet(&["a", "b"], 2);
        assert!(!render(&snapshot, ColourMode::Memory, None).contains("no sharing"));
        snapshot.clusters[1].instances[0].mps_capable = false;
        let svg = render(&snapshot, ColourMode::Memory, None);
        assert_eq!(svg.matches("· no sharing").count(), 1, "{svg}");
        assert_eq!(svg.matches("<rect").count(), 4, "its GPUs are still cells");
    }

    #[test]
    fn an_instance_that_takes_no_tasks_says_why() {
        let mut snapshot = fleet(&["a", "b"], 2);
        assert!(!render(&snapshot, ColourMode::Memory, None).contains("takes no tasks"));
        snapshot.clusters[0].instances[0].not_placing = Some("DRAINING".into());
        snapshot.clusters[1].instances[0].not_placing = Some("agent disconnected".into());
        let svg = render(&snapshot, ColourMode::Memory, None);
        assert_eq!(svg.matches("(takes no tasks)").count(), 2, "{svg}");
        assert!(svg.contains("· DRAINING (takes no tasks)"), "{svg}");
        assert!(
            svg.contains("· agent disconnected (takes no tasks)"),
            "{svg}"
        );
        assert_eq!(svg.matches("<rect").count(), 4, "its GPUs are still cells");
    }

    #[test]
    fn names_from_aws_are_escaped_and_the_selection_is_marked() {
        let svg = render(
            &fleet(&["<script>alert(1)</script>"], 2),
            ColourMode::Memory,
            Some("i-<script>alert(1)</script>:1"),
        );
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert_eq!(svg.matches(" sel\"").count(), 1);
    }
}
