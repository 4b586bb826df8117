//! The MPS placement rules: which GPU of which instance can take a task's GPU containers.
//!
//! One implementation, used by the emulator to place tasks and by the console for its fit
//! checks and rollout pre-checks, so that both always agree. The rules (ECS API reference:
//! ResourceRequirement, NvidiaMpsAllocation; ECS agent GpuDevice):
//!
//! - MPS containers are placed by GPU memory only: a GPU takes them when its *unallocated*
//!   memory covers the request. `maxComputePercent` is a limit, not a reservation.
//! - All MPS containers of one task go to the same GPU, which must have room for all of them.
//! - A GPU in `NVIDIA_MPS` mode takes only MPS containers; a `DEDICATED` GPU takes no one
//!   else; an `IDLE` GPU can go either way.
//! - A container asking for `value` N whole GPUs gets N `IDLE` GPUs to itself.
//!
//! Where ECS leaves the choice open, this picks the GPU whose free memory is the smallest that
//! still fits (best fit, then the lowest index), which keeps large GPUs free for large requests.

use serde::{Deserialize, Serialize};

pub mod growth;
pub mod resources;
pub mod rules;
pub mod strategy;

/// How a GPU is being shared right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SharingMode {
    /// Nothing runs on it.
    Idle,
    /// MPS containers share it.
    NvidiaMps,
    /// One container has it to itself.
    Dedicated,
}

impl SharingMode {
    pub const ALL: [SharingMode; 3] = [
        SharingMode::Idle,
        SharingMode::NvidiaMps,
        SharingMode::Dedicated,
    ];

    /// The mode the ECS API spells `text`.
    pub fn parse(text: &str) -> Option<SharingMode> {
        SharingMode::ALL.into_iter().find(|m| m.as_str() == text)
    }

    /// The ECS API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SharingMode::Idle => "IDLE",
            SharingMode::NvidiaMps => "NVIDIA_MPS",
            SharingMode::Dedicated => "DEDICATED",
        }
    }
}

/// One GPU's allocation state, as `DescribeContainerInstances` reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuSlot {
    pub mode: SharingMode,
    pub total_memory_mib: u32,
    pub remaining_memory_mib: u32,
    pub container_count: u32,
}

impl GpuSlot {
    /// An idle GPU with `total_memory_mib` usable memory.
    pub fn idle(total_memory_mib: u32) -> GpuSlot {
        GpuSlot {
            mode: SharingMode::Idle,
            total_memory_mib,
            remaining_memory_mib: total_memory_mib,
            container_count: 0,
        }
    }

    /// Can this GPU take MPS containers needing `memory_mib` together?
    pub fn fits_mps(&self, memory_mib: u32) -> bool {
        self.mode != SharingMode::Dedicated && self.remaining_memory_mib >= memory_mib
    }

    /// The largest MPS request (MiB, all containers of a task together) this GPU can take now;
    /// 0 when it takes none.
    pub fn largest_mps_request(&self) -> u32 {
        if self.mode == SharingMode::Dedicated {
            0
        } else {
            self.remaining_memory_mib
        }
    }
}

/// What one task asks of the GPUs of the instance it runs on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum GpuRequest {
    /// No container asks for a GPU.
    None,
    /// Whole GPUs: one entry per GPU container, the number of GPUs it gets to itself.
    Whole(Vec<u32>),
    /// MPS: one entry per GPU container, the memory it asks for, all on one GPU.
    Mps(Vec<u32>),
}

impl GpuRequest {
    /// The memory all MPS containers of the task need together on one GPU.
    pub fn mps_memory_mib(&self) -> u32 {
        match self {
            GpuRequest::Mps(memories) => {
                memories.iter().fold(0_u32, |sum, m| sum.saturating_add(*m))
            }
            _ => 0,
        }
    }

    /// The number of whole GPUs the task needs on one instance.
    pub fn whole_gpus(&self) -> u32 {
        match self {
            GpuRequest::Whole(counts) => counts.iter().fold(0_u32, |sum, c| sum.saturating_add(*c)),
            _ => 0,
        }
    }
}

/// Where a task's GPU containers go on one instance: per GPU container, the indexes of its
/// GPUs (one for an MPS container, N for a container with N whole GPUs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuAssignment {
    pub per_container: Vec<Vec<usize>>,
}

/// Why a task cannot go on an instance, best first, for messages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NoFit {
    /// The instance has no GPU at all.
    NoGpus,
    /// The instance cannot share GPUs with MPS (no `ecs.capability.gpu-sharing-mps`).
    NoMpsCapability,
    /// No single GPU has the memory the task's MPS containers need together.
    NotEnoughGpuMemory {
        needed_mib: u32,
        largest_free_mib: u32,
    },
    /// Fewer idle GPUs than the task's whole-GPU containers need.
    NotEnoughIdleGpus { needed: u32, idle: u32 },
    /// The request is larger than any GPU of the instance, however empty.
    LargerThanAnyGpu {
        needed_mib: u32,
        largest_total_mib: u32,
    },
}

/// Finds GPUs on one instance for a task, without changing anything.
pub fn find_gpus(
    gpus: &[GpuSlot],
    mps_capable: bool,
    request: &GpuRequest,
) -> Result<GpuAssignment, NoFit> {
    match request {
        GpuRequest::None => Ok(GpuAssignment {
            per_container: Vec::new(),
        }),
        GpuRequest::Mps(memories) => {
            if gpus.is_empty() {
                return Err(NoFit::NoGpus);
            }
            if !mps_capable {
                return Err(NoFit::NoMpsCapability);
            }
            let needed = request.mps_memory_mib();
            let best = gpus
                .iter()
                .enumerate()
                .filter(|(_, gpu)| gpu.fits_mps(needed))
                .min_by_key(|(index, gpu)| (gpu.remaining_memory_mib, *index));
            match best {
                Some((index, _)) => Ok(GpuAssignment {
                    per_container: vec![vec![index]; memories.len()],
                }),
                None => {
                    let largest_total = gpus.iter().map(|g| g.total_memory_mib).max().unwrap_or(0);
                    if largest_total < needed {
                        Err(NoFit::LargerThanAnyGpu {
                            needed_mib: needed,
                            largest_total_mib: largest_total,
                        })
                    } else {
                        let largest_free = gpus
                            .iter()
                            .filter(|gpu| gpu.mode != SharingMode::Dedicated)
                            .map(|gpu| gpu.remaining_memory_mib)
                            .max()
                            .unwrap_or(0);
                        Err(NoFit::NotEnoughGpuMemory {
                            needed_mib: needed,
                            largest_free_mib: largest_free,
                        })
                    }
                }
            }
        }
        GpuRequest::Whole(counts) => {
            if gpus.is_empty() {
                return Err(NoFit::NoGpus);
            }
            let counts = resolve_all(counts, gpus.len());
            let request = &GpuRequest::Whole(counts.clone());
            let mut idle = gpus
                .iter()
                .enumerate()
                .filter(|(_, gpu)| gpu.mode == SharingMode::Idle)
                .map(|(index, _)| index);
            let needed = request.whole_gpus();
            let idle_count = gpus
                .iter()
                .filter(|gpu| gpu.mode == SharingMode::Idle)
                .count() as u32;
            if idle_count < needed {
                return Err(NoFit::NotEnoughIdleGpus {
                    needed,
                    idle: idle_count,
                });
            }
            let per_container = counts
                .iter()
                .map(|count| idle.by_ref().take(*count as usize).collect())
                .collect();
            Ok(GpuAssignment { per_container })
        }
    }
}

/// How well a task fits an instance where [`find_gpus`] found it room, lower is better: for
/// MPS the free memory of the GPU it goes to (best fit), for whole GPUs the instance's idle
/// GPUs (fewest that suffice), 0 without GPUs. The emulator places on the instance with the
/// lowest score (the first of equals), and so does the pre-check, so that both make the same
/// choices.
pub fn fit_score(gpus: &[GpuSlot], request: &GpuRequest, assignment: &GpuAssignment) -> u64 {
    match request {
        GpuRequest::Mps(_) => assignment
            .per_container
            .first()
            .and_then(|g| g.first())
            .and_then(|g| gpus.get(*g))
            .map_or(0, |gpu| u64::from(gpu.remaining_memory_mib)),
        GpuRequest::Whole(_) => gpus.iter().filter(|g| g.mode == SharingMode::Idle).count() as u64,
        GpuRequest::None => 0,
    }
}

/// The count that stands for `"value": "ALL"`: every GPU of the instance.
pub const ALL_GPUS: u32 = u32::MAX;

/// Replaces [`ALL_GPUS`] by the instance's GPU count.
fn resolve_all(counts: &[u32], gpus: usize) -> Vec<u32> {
    counts
        .iter()
        .map(|c| if *c == ALL_GPUS { gpus as u32 } else { *c })
        .collect()
}

/// Marks the GPUs of `assignment` as taken by the task.
pub fn allocate(gpus: &mut [GpuSlot], request: &GpuRequest, assignment: &GpuAssignment) {
    match request {
        GpuRequest::None => {}
        GpuRequest::Mps(memories) => {
            for (memory, indexes) in memories.iter().zip(&assignment.per_container) {
                if let Some(gpu) = indexes.first().and_then(|index| gpus.get_mut(*index)) {
                    gpu.mode = SharingMode::NvidiaMps;
                    gpu.remaining_memory_mib = gpu.remaining_memory_mib.saturating_sub(*memory);
                    gpu.container_count += 1;
                }
            }
        }
        GpuRequest::Whole(_) => {
            for index in assignment.per_container.iter().flatten() {
                if let Some(gpu) = gpus.get_mut(*index) {
                    gpu.mode = SharingMode::Dedicated;
                    gpu.remaining_memory_mib = 0;
                    gpu.container_count = 1;
                }
            }
        }
    }
}

/// Gives the GPUs of a stopped task back.
pub fn release(gpus: &mut [GpuSlot], request: &GpuRequest, assignment: &GpuAssignment) {
    match request {
        GpuRequest::None => {}
        GpuRequest::Mps(memories) => {
            for (memory, indexes) in memories.iter().zip(&assignment.per_container) {
                if let Some(gpu) = indexes.first().and_then(|index| gpus.get_mut(*index)) {
                    gpu.remaining_memory_mib =
                        (gpu.remaining_memory_mib + memory).min(gpu.total_memory_mib);
                    gpu.container_count = gpu.container_count.saturating_sub(1);
                    if gpu.container_count == 0 {
                        gpu.mode = SharingMode::Idle;
                        gpu.remaining_memory_mib = gpu.total_memory_mib;
                    }
                }
            }
        }
        GpuRequest::Whole(_) => {
            for index in assignment.per_container.iter().flatten() {
                if let Some(gpu) = gpus.get_mut(*index) {
                    *gpu = GpuSlot::idle(gpu.total_memory_mib);
                }
            }
        }
    }
}

/// How many more tasks with `request` one instance could take now, placing them one by one.
pub fn capacity(gpus: &[GpuSlot], mps_capable: bool, request: &GpuRequest) -> u32 {
    match request {
        GpuRequest::None => u32::MAX,
        GpuRequest::Mps(_) => {
            let needed = request.mps_memory_mib();
            if !mps_capable || needed == 0 {
                return if needed == 0 && mps_capable {
                    u32::MAX
                } else {
                    0
                };
            }
            gpus.iter()
                .filter(|gpu| gpu.mode != SharingMode::Dedicated)
                .map(|gpu| gpu.remaining_memory_mib / needed)
                .sum()
        }
        GpuRequest::Whole(counts) => {
            let needed = GpuRequest::Whole(resolve_all(counts, gpus.len())).whole_gpus();
            if needed == 0 {
                return u32::MAX;
            }
            gpus.iter()
                .filter(|gpu| gpu.mode == SharingMode::Idle)
                .count() as u32
                / needed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a10g() -> GpuSlot {
        GpuSlot::idle(22_563)
    }

    fn mps(memories: &[u32]) -> GpuRequest {
        GpuRequest::Mps(memories.to_vec())
    }

    /// The table of cases: GPUs before, request, and where it goes (or why not).
    #[test]
    fn placement_cases() {
        struct Case {
            name: &'static str,
            gpus: Vec<GpuSlot>,
            mps_capable: bool,
            request: GpuRequest,
            expect: Result<Vec<Vec<usize>>, NoFit>,
        }
        let shared = |remaining: u32, count: u32| GpuSlot {
            mode: SharingMode::NvidiaMps,
            total_memory_mib: 22_563,
            remaining_memory_mib: remaining,
            container_count: count,
        };
        let dedicated = GpuSlot {
            mode: SharingMode::Dedicated,
            total_memory_mib: 22_563,
            remaining_memory_mib: 0,
            container_count: 1,
        };
        let cases = vec![
            Case {
                name: "fits on an idle GPU",
                gpus: vec![a10g()],
                mps_capable: true,
                request: mps(&[8_192]),
                expect: Ok(vec![vec![0]]),
            },
            Case {
                name: "best fit: the shared GPU with the least room that still fits",
                gpus: vec![a10g(), shared(10_000, 1), shared(9_000, 2)],
                mps_capable: true,
                request: mps(&[8_192]),
                expect: Ok(vec![vec![2]]),
            },
            Case {
                name: "does not fit on any single GPU although the sum would",
                gpus: vec![shared(6_000, 1), shared(6_000, 1)],
                mps_capable: true,
                request: mps(&[8_192]),
                expect: Err(NoFit::NotEnoughGpuMemory {
                    needed_mib: 8_192,
                    largest_free_mib: 6_000,
                }),
            },
            Case {
                name: "larger than any GPU of the instance",
                gpus: vec![a10g()],
                mps_capable: true,
                request: mps(&[30_000]),
                expect: Err(NoFit::LargerThanAnyGpu {
                    needed_mib: 30_000,
                    largest_total_mib: 22_563,
                }),
            },
            Case {
                name: "a dedicated GPU blocks sharing",
                gpus: vec![dedicated.clone()],
                mps_capable: true,
                request: mps(&[1]),
                expect: Err(NoFit::NotEnoughGpuMemory {
                    needed_mib: 1,
                    largest_free_mib: 0,
                }),
            },
            Case {
                name: "an MPS-mode GPU blocks a whole-GPU request",
                gpus: vec![shared(20_000, 1)],
                mps_capable: true,
                request: GpuRequest::Whole(vec![1]),
                expect: Err(NoFit::NotEnoughIdleGpus { needed: 1, idle: 0 }),
            },
            Case {
                name: "whole GPUs take idle GPUs only",
                gpus: vec![shared(20_000, 1), a10g(), dedicated.clone(), a10g(), a10g()],
                mps_capable: true,
                request: GpuRequest::Whole(vec![2, 1]),
                expect: Ok(vec![vec![1, 3], vec![4]]),
            },
            Case {
                name: "a multi-container MPS task goes on one GPU with room for all",
                gpus: vec![shared(10_000, 1), a10g()],
                mps_capable: true,
                request: mps(&[6_000, 6_000]),
                expect: Ok(vec![vec![1], vec![1]]),
            },
            Case {
                name: "no MPS capability, no sharing",
                gpus: vec![a10g()],
                mps_capable: false,
                request: mps(&[1_024]),
                expect: Err(NoFit::NoMpsCapability),
            },
            Case {
                name: "no GPUs at all",
                gpus: vec![],
                mps_capable: true,
                request: mps(&[1_024]),
                expect: Err(NoFit::NoGpus),
            },
            Case {
                name: "no GPU request fits anywhere",
                gpus: vec![],
                mps_capable: false,
                request: GpuRequest::None,
                expect: Ok(vec![]),
            },
        ];
        for case in cases {
            let got = find_gpus(&case.gpus, case.mps_capable, &case.request)
                .map(|assignment| assignment.per_container);
            assert_eq!(got, case.expect, "{}", case.name);
        }
    }

    #[test]
    fn allocation_and_release_keep_memory_and_counts_exact() {
        let mut gpus = vec![a10g(), a10g()];
        let first = mps(&[8_000, 4_000]);
        let at = find_gpus(&gpus, true, &first).expect("fits");
        allocate(&mut gpus, &first, &at);
        assert_eq!(gpus[0].mode, SharingMode::NvidiaMps);
        assert_eq!(gpus[0].remaining_memory_mib, 22_563 - 12_000);
        assert_eq!(gpus[0].container_count, 2);

        let second = mps(&[10_000]);
        let at2 = find_gpus(&gpus, true, &second).expect("fits");
        assert_eq!(
            at2.per_container,
            vec![vec![0]],
            "best fit packs the shared GPU"
        );
        allocate(&mut gpus, &second, &at2);
        assert_eq!(gpus[0].remaining_memory_mib, 563);
        assert_eq!(gpus[0].container_count, 3);

        release(&mut gpus, &first, &at);
        assert_eq!(gpus[0].remaining_memory_mib, 12_563);
        assert_eq!(gpus[0].container_count, 1);
        assert_eq!(gpus[0].mode, SharingMode::NvidiaMps);

        release(&mut gpus, &second, &at2);
        assert_eq!(
            gpus[0],
            a10g(),
            "the last container out leaves the GPU idle"
        );

        let whole = GpuRequest::Whole(vec![2]);
        let at3 = find_gpus(&gpus, true, &whole).expect("fits");
        allocate(&mut gpus, &whole, &at3);
        assert!(gpus.iter().all(|gpu| gpu.mode == SharingMode::Dedicated));
        assert_eq!(
            find_gpus(&gpus, true, &mps(&[1])).map(|_| ()),
            Err(NoFit::NotEnoughGpuMemory {
                needed_mib: 1,
                largest_free_mib: 0
            })
        );
        release(&mut gpus, &whole, &at3);
        assert_eq!(gpus, vec![a10g(), a10g()]);
    }

    #[test]
    fn capacity_matches_placing_one_by_one() {
        let requests = [
            mps(&[5_000]),
            mps(&[3_000, 3_000]),
            GpuRequest::Whole(vec![1]),
            GpuRequest::Whole(vec![2]),
        ];
        for request in requests {
            let mut gpus = vec![a10g(), GpuSlot::idle(45_000), a10g(), GpuSlot::idle(15_000)];
            let predicted = capacity(&gpus, true, &request);
            let mut placed = 0;
            while let Ok(at) = find_gpus(&gpus, true, &request) {
                allocate(&mut gpus, &request, &at);
                placed += 1;
                assert!(placed <= 1_000, "runaway placement");
            }
            assert_eq!(predicted, placed, "{request:?}");
        }
    }
}

#[cfg(test)]
mod largest_request_tests {
    use super::*;

    #[test]
    fn the_largest_request_is_the_free_memory_of_a_gpu_that_takes_mps() {
        let mut gpu = GpuSlot::idle(22_563);
        assert_eq!(gpu.largest_mps_request(), 22_563);
        assert!(gpu.fits_mps(gpu.largest_mps_request()));
        gpu.mode = SharingMode::NvidiaMps;
        gpu.remaining_memory_mib = 4_000;
        assert_eq!(gpu.largest_mps_request(), 4_000);
        assert!(!gpu.fits_mps(gpu.largest_mps_request() + 1));
        gpu.mode = SharingMode::Dedicated;
        assert_eq!(gpu.largest_mps_request(), 0);
    }
}
