//! The fleet heatmap as one SVG, in two forms: the overview, where each instance is a small
//! block of its GPUs and the blocks flow across the width in groups, so the whole fleet fits
//! on a screen; and the detail of a part (a zoom), a row per container instance. Compact on
//! purpose — at 8,000 GPUs each cell is one short `<rect>` whose size, shape and colour come
//! from CSS classes — so the server renders it as a string.

use std::fmt::Write;

use crate::model::{
    fleet_view::{
        packing::{pack, Block, Group},
        shade, ColourMode, FleetQuery, Zoom,
    },
    FleetSnapshot, InstanceView, SharingMode,
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

/// Whether `key` (`<EC2 instance ID>:<index>` or a UUID) names GPU `index` of `instance`.
fn names(key: Option<&str>, instance: &InstanceView, index: u32, uuid: &str) -> bool {
    key.is_some_and(|key| {
        key.strip_prefix(instance.ec2_instance_id.as_str())
            .and_then(|rest| rest.strip_prefix(':'))
            .and_then(|index| index.parse::<u32>().ok())
            == Some(index)
            || key == uuid
    })
}

/// The overview's width in SVG units; the SVG scales to its container.
pub const OVERVIEW_WIDTH: u32 = 1200;
/// The tallest overview, in SVG units, before cells get smaller: what fits below the summary
/// on a 1,440 × 900 screen.
pub const OVERVIEW_MAX_HEIGHT: u32 = 500;
/// Height of a group's header, in SVG units.
const GROUP_HEAD: u32 = 18;

/// A cell size of the overview: distance between cells, the cell, the gap between blocks, and
/// the SVG's class (CSS draws strokes and glyphs only on the larger ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scale {
    pub pitch: u32,
    pub cell: u32,
    pub gap: u32,
    pub class: &'static str,
}

/// From the largest cells to the smallest; the overview takes the first that fits.
pub const SCALES: [Scale; 7] = [
    Scale {
        pitch: 16,
        cell: 14,
        gap: 8,
        class: "z16",
    },
    Scale {
        pitch: 12,
        cell: 10,
        gap: 6,
        class: "z12",
    },
    Scale {
        pitch: 10,
        cell: 8,
        gap: 5,
        class: "z10",
    },
    Scale {
        pitch: 8,
        cell: 7,
        gap: 4,
        class: "z8",
    },
    Scale {
        pitch: 7,
        cell: 6,
        gap: 3,
        class: "z7",
    },
    Scale {
        pitch: 6,
        cell: 5,
        gap: 3,
        class: "z6",
    },
    Scale {
        pitch: 5,
        cell: 4,
        gap: 2,
        class: "z5",
    },
];

/// Columns and rows of a block of `gpus` GPUs: 8 as 4 × 2, 4 as 2 × 2.
pub fn block_shape(gpus: usize) -> (u32, u32) {
    let gpus = gpus.max(1) as u32;
    let columns = match gpus {
        1 | 2 => gpus,
        3 | 4 => 2,
        5..=8 => 4,
        n => (f64::from(2 * n).sqrt().ceil() as u32).max(1),
    };
    (columns, gpus.div_ceil(columns))
}

/// Where the groups and blocks of the overview go at `scale`.
struct Placed {
    /// Per group: its header's y, and each block's (x, y).
    groups: Vec<(u32, Vec<(u32, u32)>)>,
    height: u32,
}

fn place(groups: &[Group<'_>], scale: Scale) -> Placed {
    let mut y = 0;
    let mut placed = Vec::with_capacity(groups.len());
    for group in groups {
        let (columns, rows) = group
            .blocks
            .iter()
            .map(|b| block_shape(b.gpus.len()))
            .fold((1, 1), |(c, r), (bc, br)| (c.max(bc), r.max(br)));
        let slot_width = columns * scale.pitch + scale.gap;
        let slot_height = rows * scale.pitch + scale.gap;
        let per_row = ((OVERVIEW_WIDTH + scale.gap) / slot_width).max(1);
        let head = y;
        y += GROUP_HEAD;
        let blocks = (0..group.blocks.len() as u32)
            .map(|n| ((n % per_row) * slot_width, y + (n / per_row) * slot_height))
            .collect();
        y += (group.blocks.len() as u32).div_ceil(per_row) * slot_height + 4;
        placed.push((head, blocks));
    }
    Placed {
        groups: placed,
        height: y.max(1),
    }
}

/// The overview of `snapshot` for the view `query`: blocks of GPUs grouped by `query.group`,
/// ordered by `query.sort`, coloured by `query.colour` (contention judged at `threshold` %),
/// with links that zoom into a group or an instance, and the GPU `query.gpu` marked.
pub fn render_overview(snapshot: &FleetSnapshot, query: &FleetQuery, threshold: u32) -> String {
    let groups = pack(snapshot, query.group, query.sort, threshold);
    let (scale, placed) = SCALES
        .iter()
        .map(|scale| (*scale, place(&groups, *scale)))
        .find(|(_, placed)| placed.height <= OVERVIEW_MAX_HEIGHT)
        .unwrap_or_else(|| {
            (
                SCALES[SCALES.len() - 1],
                place(&groups, SCALES[SCALES.len() - 1]),
            )
        });
    let gpus = snapshot.gpu_count();
    let height = placed.height;
    let colour = query.colour;
    let link = |zoom: Zoom| {
        escape(&format!(
            "/{}",
            FleetQuery {
                zoom: Some(zoom),
                gpu: None,
                ..query.clone()
            }
            .to_query_string()
        ))
    };
    let mut svg = String::with_capacity(
        400 + groups.len() * 300
            + snapshot.clusters.len() * 100
            + gpus * 44
            + snapshot.instances().count() * 160,
    );
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="hm packed {}" width="{OVERVIEW_WIDTH}" height="{height}" viewBox="0 0 {OVERVIEW_WIDTH} {height}" role="group" aria-label="{gpus} GPUs coloured by {}, grouped by {}" data-gpus="{gpus}" data-colour="{}" data-cell="{}" data-taken-at="{}">"#,
        scale.class,
        escape(colour.label()),
        query.group.label().to_lowercase(),
        colour.as_str(),
        scale.cell,
        escape(&snapshot.taken_at),
    );
    for (group, (head, blocks)) in groups.iter().zip(&placed.groups) {
        let zoom = Zoom::Group(query.group, group.key.clone());
        let _ = write!(
            svg,
            r#"<a class="gh" href="{}" data-z="{}"><text x="0" y="{}">{}</text></a>"#,
            link(zoom.clone()),
            escape(&zoom.spelled()),
            head + 13,
            escape(&group_title(query, group)),
        );
        for (block, (x, y)) in group.blocks.iter().zip(blocks) {
            let href = link(Zoom::Instance(block.instance.ec2_instance_id.clone()));
            write_block(
                &mut svg,
                block,
                (*x, *y),
                &href,
                scale,
                (query, threshold),
                &snapshot.taken_at,
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

/// A group's header: its name, instances, GPUs, memory allocated, utilisation and contention.
fn group_title(query: &FleetQuery, group: &Group<'_>) -> String {
    let totals = &group.totals;
    let mut title = format!(
        "{} · {} instances · {} GPUs · memory {} % allocated",
        group_name(query.group, &group.key),
        totals.instances,
        totals.gpus,
        totals.allocated_percent(),
    );
    if let Some(utilization) = totals.utilization_percent() {
        let _ = write!(title, " · utilisation {utilization:.0} %");
    }
    if totals.contended > 0 {
        let _ = write!(title, " · {} contended", totals.contended);
    }
    title
}

/// One instance's block of GPUs at `(x, y)`, linking to the instance's zoom (`href`, escaped).
#[cfg_attr(not(feature = "ssr"), allow(unused_variables))]
fn write_block(
    svg: &mut String,
    block: &Block<'_>,
    (x, y): (u32, u32),
    href: &str,
    scale: Scale,
    (query, threshold): (&FleetQuery, u32),
    now: &str,
) {
    let instance = block.instance;
    let (columns, _) = block_shape(block.gpus.len());
    let mut label = format!(
        "{}, {}, {} GPUs",
        instance.ec2_instance_id,
        instance.instance_type,
        block.gpus.len()
    );
    let mut class = "";
    if let Some(why) = &instance.impaired {
        let _ = write!(label, ", impaired: {why}");
        class = r#" class="imp""#;
    } else if let Some(why) = &instance.not_placing {
        let _ = write!(label, ", {why}: takes no tasks");
        class = r#" class="np""#;
    }
    if let Some(provider) = &instance.capacity_provider {
        let _ = write!(label, ", from {provider}");
        // Just launched by its provider: for tasks that waited, or as a replacement. The
        // overview is drawn on the server, where times are read.
        #[cfg(feature = "ssr")]
        if let Some(change) = crate::model::capacity::instance_change(instance, now, false)
            .filter(|c| c.change == crate::model::capacity::ChangeKind::Launched)
        {
            let _ = write!(label, ", new: {}", change.text);
        }
    }
    let _ = write!(
        svg,
        r#"<a href="{href}" data-i="{}"{class} transform="translate({x},{y})" tabindex="-1" aria-label="{}">"#,
        escape(&instance.ec2_instance_id),
        escape(&label),
    );
    for (n, gpu) in block.gpus.iter().enumerate() {
        let n = n as u32;
        let _ = write!(
            svg,
            r#"<rect x="{}" y="{}" data-x="{}" class="{} {}{}"/>"#,
            (n % columns) * scale.pitch,
            (n / columns) * scale.pitch,
            gpu.index,
            shade(gpu, query.colour, threshold).class(),
            mode_class(gpu.mode),
            if names(query.gpu.as_deref(), instance, gpu.index, &gpu.uuid) {
                " sel"
            } else {
                ""
            },
        );
    }
    svg.push_str("</a>");
}

/// A group's name in its header: "no team" for the team of none.
fn group_name(grouping: crate::model::fleet_view::Grouping, key: &str) -> String {
    use crate::model::fleet_view::Grouping;
    match (grouping, key.is_empty()) {
        (Grouping::Team, true) => "No team (idle, or containers without a team tag)".into(),
        (Grouping::Zone, true) => "Zone unknown".into(),
        (Grouping::CapacityProvider, true) => "Registered by hand (no capacity provider)".into(),
        (Grouping::CapacityProvider, false) => format!("Capacity provider {key}"),
        (Grouping::Team, false) => format!("Team {key}"),
        _ => key.to_string(),
    }
}

/// Renders the detail of `snapshot`, a row per instance, in `colour` mode (contention judged
/// at `threshold` %), marking the GPU `selected` (`<EC2 instance ID>:<index>`) if any.
pub fn render(
    snapshot: &FleetSnapshot,
    colour: ColourMode,
    selected: Option<&str>,
    threshold: u32,
) -> String {
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
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="hm" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{gpus} GPUs coloured by {}" data-gpus="{gpus}" data-colour="{}" data-taken-at="{}">"#,
        escape(colour.label()),
        colour.as_str(),
        escape(&snapshot.taken_at),
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
            write_row(&mut svg, instance, y, colour, selected, threshold);
            y += PITCH;
        }
    }
    svg.push_str("</svg>");
    svg
}

/// One instance's row of the detail at `y`: its label (impaired, no sharing, takes no tasks)
/// and a cell per GPU.
fn write_row(
    svg: &mut String,
    instance: &InstanceView,
    y: u32,
    colour: ColourMode,
    selected: Option<&str>,
    threshold: u32,
) {
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
        let is_selected = names(selected, instance, gpu.index, &gpu.uuid);
        let _ = write!(
            svg,
            r#"<rect x="{}" data-x="{}" class="{} {}{}"/>"#,
            LABEL_WIDTH + gpu.index * PITCH,
            gpu.index,
            shade(gpu, colour, threshold).class(),
            mode_class(gpu.mode),
            if is_selected { " sel" } else { "" },
        );
    }
    svg.push_str("</g>");
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
