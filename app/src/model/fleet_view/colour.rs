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

/// The utilisation over the window at or above which a GPU whose compute limits pass 100 % is
/// contended, by default, in percent.
pub const DEFAULT_CONTENTION_THRESHOLD: u32 = 90;

/// A GPU's compute limits against its use. Σ `maxComputePercent` over 100 % is how MPS is
/// meant to be used (a limit is a cap, not a reservation); it is a problem only when the GPU
/// is also busy, so its containers wait for each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compute {
    /// Σ limits at most 100 % (a dedicated GPU is 100 %).
    WithinLimits,
    /// Σ limits over 100 %, utilisation over the window below the threshold.
    OverLimits,
    /// Σ limits over 100 % and utilisation over the window at or above the threshold.
    Contended,
    /// Σ limits over 100 %, and CloudWatch has no utilisation to tell.
    OverLimitsUnknownUse,
}

impl Compute {
    pub fn of(gpu: &GpuView, threshold: u32) -> Compute {
        if gpu.mode == SharingMode::Dedicated || gpu.compute_allocated_percent <= 100 {
            return Compute::WithinLimits;
        }
        match gpu.usage.and_then(|u| u.utilization_percent) {
            None => Compute::OverLimitsUnknownUse,
            Some(reading) if reading.average >= f64::from(threshold) => Compute::Contended,
            Some(_) => Compute::OverLimits,
        }
    }
}

/// How a heatmap cell is coloured: one of ten steps, contended, or no data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shade {
    Step(u8),
    /// Compute limits over 100 % and the GPU busy: the one problem colour.
    Contended,
    NoData,
}

/// A GPU's shade in `mode`, contention judged at `threshold` % utilisation.
pub fn shade(gpu: &GpuView, mode: ColourMode, threshold: u32) -> Shade {
    if mode == ColourMode::Compute && Compute::of(gpu, threshold) == Compute::Contended {
        return Shade::Contended;
    }
    Shade::of(colour_value(gpu, mode))
}

impl Shade {
    /// The step of a percentage; past 100 % is the top step (compute limits over 100 % are
    /// information, not a problem, until the GPU is busy: see [`shade`]).
    pub fn of(value: Option<f64>) -> Shade {
        match value {
            None => Shade::NoData,
            Some(v) => Shade::Step(((v / 10.0).floor().max(0.0) as u8).min(9)),
        }
    }

    /// Its CSS class.
    pub fn class(self) -> &'static str {
        match self {
            Shade::Step(n) => {
                ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"][usize::from(n.min(9))]
            }
            Shade::Contended => "ov",
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
            shade(shared, ColourMode::Compute, 90),
            Shade::Step(9),
            "over 100 % with no utilisation known is information, not the problem colour"
        );
        assert_eq!(Compute::of(shared, 90), Compute::OverLimitsUnknownUse);
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
        // 110 % of limits at 40 % average: not contended; at 95 %: contended.
        assert_eq!(Compute::of(&used, 90), Compute::OverLimits);
        assert_eq!(shade(&used, ColourMode::Compute, 90), Shade::Step(9));
        assert_eq!(
            Compute::of(&used, 40),
            Compute::Contended,
            "at the threshold"
        );
        let mut busy = used.clone();
        busy.usage = Some(GpuUsage {
            utilization_percent: Some(Reading {
                latest: 50.0,
                average: 95.0,
            }),
            memory_used_mib: None,
        });
        assert_eq!(
            Compute::of(&busy, 90),
            Compute::Contended,
            "the window, not the minute"
        );
        assert_eq!(shade(&busy, ColourMode::Compute, 90), Shade::Contended);
        assert_eq!(shade(&busy, ColourMode::Memory, 90), Shade::Step(6));
        assert_eq!(
            Compute::of(dedicated, 90),
            Compute::WithinLimits,
            "a dedicated GPU is 100 %"
        );
    }
}
