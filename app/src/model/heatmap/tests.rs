//! Unit tests of the `heatmap` module.

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
                instances: vec![InstanceView::of(format!("i-{name}"), "g5.12xlarge")
                    .with_arn("arn")
                    .with_gpus(
                        (0..gpus_per_instance)
                            .map(|index| GpuView {
                                uuid: format!("GPU-{name}-{index}"),
                                index,
                                mode: if index == 0 {
                                    SharingMode::Idle
                                } else {
                                    SharingMode::NvidiaMps
                                },
                                total_memory_mib: 10_000,
                                remaining_memory_mib: 10_000_u32.saturating_sub(index * 2_500),
                                compute_allocated_percent: index * 40,
                                containers: Vec::new(),
                                usage: None,
                            })
                            .collect(),
                    )],
                ..ClusterView::default()
            })
            .collect(),
        unknown_gpu_ids: 0,
    }
}

#[test]
fn one_cell_per_gpu_coloured_by_the_mode() {
    let svg = render(&fleet(&["a", "b"], 4), ColourMode::Memory, None, 90);
    assert_eq!(svg.matches("<rect").count(), 8);
    assert!(svg.contains(r#"data-gpus="8""#));
    // The snapshot it was drawn from, so that a reader can match it with another answer.
    assert!(svg.contains(r#"data-taken-at="t""#), "{svg}");
    // Index 2: 5,000 of 10,000 allocated.
    assert!(svg.contains(r#"data-x="2" class="c5 s""#), "{svg}");
    assert!(svg.contains(r#"data-x="0" class="c0 i""#));
    let compute = render(&fleet(&["a"], 4), ColourMode::Compute, None, 90);
    assert!(
        compute.contains(r#"data-x="3" class="c9 s""#),
        "120 % of limits with no utilisation known is information: {compute}"
    );
    let mut busy = fleet(&["a"], 4);
    busy.clusters[0].instances[0].gpus[3].usage = Some(crate::model::GpuUsage {
        utilization_percent: Some(crate::model::Reading {
            latest: 97.0,
            average: 96.0,
        }),
        memory_used_mib: None,
    });
    let compute = render(&busy, ColourMode::Compute, None, 90);
    assert!(
        compute.contains(r#"data-x="3" class="ov s""#),
        "120 % of limits and busy is contended: {compute}"
    );
    assert!(render(&busy, ColourMode::Compute, None, 97).contains(r#"data-x="3" class="c9 s""#));
    let usage = render(&fleet(&["a"], 4), ColourMode::Utilization, None, 90);
    assert_eq!(
        usage.matches(r#"class="nd"#).count(),
        4,
        "no data, never zero"
    );
}

#[test]
fn an_instance_without_gpu_sharing_says_so() {
    let mut snapshot = fleet(&["a", "b"], 2);
    assert!(!render(&snapshot, ColourMode::Memory, None, 90).contains("no sharing"));
    snapshot.clusters[1].instances[0].mps_capable = false;
    let svg = render(&snapshot, ColourMode::Memory, None, 90);
    assert_eq!(svg.matches("· no sharing").count(), 1, "{svg}");
    assert_eq!(svg.matches("<rect").count(), 4, "its GPUs are still cells");
}

#[test]
fn an_instance_that_takes_no_tasks_says_why() {
    let mut snapshot = fleet(&["a", "b"], 2);
    assert!(!render(&snapshot, ColourMode::Memory, None, 90).contains("takes no tasks"));
    snapshot.clusters[0].instances[0].not_placing = Some("DRAINING".into());
    snapshot.clusters[1].instances[0].not_placing = Some("agent disconnected".into());
    let svg = render(&snapshot, ColourMode::Memory, None, 90);
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
        90,
    );
    assert!(!svg.contains("<script>"));
    assert!(svg.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_eq!(svg.matches(" sel\"").count(), 1);
    let overview = render_overview(
        &fleet(&["<script>alert(1)</script>"], 2),
        &FleetQuery {
            gpu: Some("i-<script>alert(1)</script>:1".into()),
            ..FleetQuery::default()
        },
        90,
    );
    assert!(!overview.contains("<script>"), "{overview}");
    assert_eq!(overview.matches(" sel\"").count(), 1);
}

/// `instances` instances of `gpus` GPUs each, in `clusters` clusters.
fn big(clusters: usize, instances: usize, gpus: u32) -> FleetSnapshot {
    let names: Vec<String> = (0..clusters).map(|n| format!("c{n}")).collect();
    let mut snapshot = fleet(&names.iter().map(String::as_str).collect::<Vec<_>>(), gpus);
    for (n, cluster) in snapshot.clusters.iter_mut().enumerate() {
        let template = cluster.instances[0].clone();
        cluster.instances = (0..instances / clusters)
            .map(|i| InstanceView {
                ec2_instance_id: format!("i-{n}-{i:04}"),
                ..template.clone()
            })
            .collect();
    }
    snapshot
}

#[test]
fn the_overview_has_one_cell_per_gpu_and_fits_8000_gpus_in_its_height() {
    let fleet = big(4, 1_000, 8);
    assert_eq!(fleet.gpu_count(), 8_000);
    let svg = render_overview(&fleet, &FleetQuery::default(), 90);
    assert_eq!(svg.matches("<rect").count(), 8_000);
    assert!(svg.contains(&format!(r#"data-taken-at="{}""#, fleet.taken_at)));
    let height: u32 = svg
        .split(r#"height=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|h| h.parse().ok())
        .unwrap();
    assert!(height <= OVERVIEW_MAX_HEIGHT, "{height}");
    let cell: u32 = svg
        .split(r#"data-cell=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|h| h.parse().ok())
        .unwrap();
    assert!(cell >= 4, "cells no smaller than 4 units: {cell}");
    // Four groups, each a link that zooms into it, and a block per instance.
    assert_eq!(svg.matches(r#"<a class="gh""#).count(), 4);
    assert!(
        svg.contains(r#"href="/?zoom=cluster%3Ac2" data-z="cluster:c2""#),
        "{}",
        &svg[..2_000]
    );
    assert_eq!(svg.matches("data-i=").count(), 1_000);
    assert!(svg.contains(r#"href="/?zoom=instance%3Ai-3-0249""#));
}

#[test]
fn a_small_fleet_gets_large_cells_with_their_glyphs() {
    let svg = render_overview(&big(2, 24, 4), &FleetQuery::default(), 90);
    assert!(svg.contains(r#"class="hm packed z16""#), "{}", &svg[..300]);
    assert_eq!(svg.matches("<rect").count(), 96);
}

#[test]
fn links_keep_the_view_and_blocks_say_what_is_wrong() {
    let mut fleet = big(1, 3, 2);
    fleet.clusters[0].instances[1].impaired = Some("MPS daemon down".into());
    fleet.clusters[0].instances[2].not_placing = Some("DRAINING".into());
    let query = FleetQuery {
        colour: ColourMode::Compute,
        sort: crate::model::fleet_view::SortKey::Free,
        gpu: Some("i-0-0000:1".into()),
        ..FleetQuery::default()
    };
    let svg = render_overview(&fleet, &query, 90);
    assert!(
        svg.contains(r#"href="/?colour=compute&amp;sort=free&amp;zoom=instance%3Ai-0-0001""#),
        "{svg}"
    );
    assert!(svg.contains(r#"class="imp""#) && svg.contains("impaired: MPS daemon down"));
    assert!(svg.contains(r#"class="np""#) && svg.contains("DRAINING: takes no tasks"));
    assert_eq!(svg.matches(" sel\"").count(), 1);
}

#[test]
fn block_shapes() {
    assert_eq!(block_shape(1), (1, 1));
    assert_eq!(block_shape(4), (2, 2));
    assert_eq!(block_shape(8), (4, 2));
    assert_eq!(block_shape(6), (4, 2));
    assert_eq!(block_shape(16), (6, 3));
}
