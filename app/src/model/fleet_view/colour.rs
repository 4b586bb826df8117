//! A GPU's colour in the heatmap: its value in the chosen colour mode, and the step of the scale.

use super::ColourMode;
use crate::model::{GpuView, SharingMode};

/// A GPU's value in a colour mode, in percent; `None` when CloudWatch has no data for it.
pub fn colour_value(gpu: &GpuView, mode: ColourMode) -> Option<f64> {
    let total = f64::from(gpu.total_memory_mib.max(1));
    let allocated = match gpu.mode {
        SharingMode::Dedicated => f64::from(gpu.total_memory_mib),
        _ => f64::from(gpu.allocated_memory_mib()),
    };
    let used = || gpu.usage?.memory_used_mib.map(|r| r.latest);
    match mode {
        ColourMode::Memory => Some(allocated / total * 100.0),
        ColourMode::Compute => Some(f64::from(match gpu.mode {
            SharingMode::Dedicated => 100,
            _ => gpu.compute_allocated_percent,
        })),
        ColourMode::Utilization => gpu.usage?.utilization_percent.map(|r| r.latest),
        ColourMode::MemoryUsed => used().map(|u| (u / total * 100.0).min(100.0)),
        ColourMode::Unused => used().map(|u| ((allocated - u) / total * 100.0).clamp(0.0, 100.0)),
    }
}

/// How a heatmap cell is coloured: one of ten steps, oversubscribed, or no data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shade {
    Step(u8),
    Oversubscribed,
    NoData,
}

impl Shade {
    pub fn of(value: Option<f64>) -> Shade {
        match value {
            None => Shade::NoData,
            Some(v) if v > 100.0 => Shade::Oversubscribed,
            Some(v) => Shade::Step(((v / 10.0).floor().max(0.0) as u8).min(9)),
        }
    }

    /// Its CSS class.
    pub fn class(self) -> &'static str {
        match self {
            Shade::Step(n) => {
                ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"][usize::from(n.min(9))]
            }
            Shade::Oversubscribed => "ov",
            Shade::NoData => "nd",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{fleet_view::fixture::snapshot, GpuUsage, Reading};

    #[test]
    fn colour_values_per_mode() {
        let all = snapshot();
        let shared = &all.clusters[0].instances[0].gpus[0];
        assert_eq!(colour_value(shared, ColourMode::Memory), Some(60.0));
        assert_eq!(colour_value(shared, ColourMode::Compute), Some(110.0));
        assert_eq!(
            Shade::of(colour_value(shared, ColourMode::Compute)),
            Shade::Oversubscribed
        );
        assert_eq!(
            colour_value(shared, ColourMode::Utilization),
            None,
            "no data, not zero"
        );
        assert_eq!(Shade::of(None).class(), "nd");
        let dedicated = &all.clusters[0].instances[0].gpus[2];
        assert_eq!(colour_value(dedicated, ColourMode::Memory), Some(100.0));
        assert_eq!(Shade::of(Some(100.0)), Shade::Step(9));
        assert_eq!(Shade::of(Some(0.0)), Shade::Step(0));
        let mut used = shared.clone();
        used.usage = Some(GpuUsage {
            utilization_percent: Some(Reading {
                latest: 42.0,
                average: 40.0,
            }),
            memory_used_mib: Some(Reading {
                latest: 2_000.0,
                average: 1_000.0,
            }),
        });
        assert_eq!(colour_value(&used, ColourMode::Utilization), Some(42.0));
        assert_eq!(colour_value(&used, ColourMode::MemoryUsed), Some(10.0));
        // 12,000 allocated, 2,000 used, of 20,000.
        assert_eq!(colour_value(&used, ColourMode::Unused), Some(50.0));
    }
}
