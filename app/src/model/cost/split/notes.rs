//! What a report's figures could not know, as notes: lifecycles, hosts, prices.

use super::*;

/// The price books' notes, and what the figures could not know: lifecycles, hosts, prices.
pub(super) fn notes(book_notes: &[String], capacity: &Capacity, hours: f64) -> Vec<String> {
    let mut notes = book_notes.to_vec();
    if capacity.max_rule_unknown > 0.0 {
        notes.push(format!(
            "{:.0} GPU-hours were recorded before the console recorded compute limits: under the larger-share rule they count by memory share.",
            capacity.max_rule_unknown
        ));
    }
    let unknown = average_count(capacity.lifecycle_unknown, hours);
    if unknown > 0 {
        notes.push(format!(
            "EC2 could not be read for {unknown} {}, so whether {} spot is not known: priced at the on-demand rate.",
            if unknown == 1 { "instance" } else { "instances" },
            if unknown == 1 { "it is" } else { "they are" }
        ));
    }
    let host_unknown = average_count(capacity.host_unknown, hours);
    if host_unknown > 0 {
        notes.push(format!(
            "The CPU and memory of {host_unknown} {} are not known (not recorded then, or not reported): {} whole price went to {} GPUs.",
            if host_unknown == 1 { "instance" } else { "instances" },
            if host_unknown == 1 { "its" } else { "their" },
            if host_unknown == 1 { "its" } else { "their" },
        ));
    }
    let unknown_types: BTreeSet<String> = capacity
        .unpriced
        .keys()
        .map(|(instance_type, lifecycle)| format!("{instance_type} ({})", lifecycle.as_str()))
        .collect();
    let managed = average_count(capacity.managed_hours, hours);
    if capacity.managed_dollars > 0.0 {
        notes.push(format!(
            "The totals include {} of ECS Managed Instances charge for {managed} {}, on top of EC2's price (managed_instances_usd_per_hour in the price file).",
            super::money(cents(capacity.managed_dollars)),
            if managed == 1 { "instance" } else { "instances" },
        ));
    }
    if !capacity.managed_unpriced.is_empty() {
        let count = average_count(capacity.managed_unpriced.values().sum(), hours);
        notes.push(format!(
            "The ECS Managed Instances charge of {count} {} ({}) is not in the totals: give managed_instances_usd_per_hour for {} in the price file (--prices).",
            if count == 1 { "instance" } else { "instances" },
            capacity.managed_unpriced.keys().cloned().collect::<Vec<_>>().join(", "),
            if capacity.managed_unpriced.len() == 1 { "that type" } else { "those types" },
        ));
    }
    if !unknown_types.is_empty() {
        notes.push(format!(
            "No price for {}: those instances are not in the totals. Give their prices in the price file (--prices).",
            unknown_types.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    if capacity
        .unpriced
        .keys()
        .any(|(_, lifecycle)| *lifecycle == Lifecycle::CapacityBlock)
    {
        notes.push("A Capacity Block is paid for its reserved hours at a rate of its own, so its instances are never priced at the on-demand rate: give the block's rate (its upfront fee over its hours) with lifecycle = \"capacity-block\" in the price file.".to_string());
    }
    notes
}
