//! The GPU instance types the emulator runs, as EC2's `DescribeInstanceTypes` describes them:
//! vCPUs, memory, GPUs and their memory, and the most network interfaces an instance can have.
//!
//! The network interface counts bound `awsvpc` tasks: each takes an interface of its own, and
//! the instance's primary interface counts against the limit (ECS developer guide, "Increasing
//! Amazon ECS Linux container instance network interfaces"). The figures are the emulator's
//! table; the console reads the real ones from EC2.

/// One instance type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstanceType {
    pub name: &'static str,
    /// The GPU model as `nvidia-smi` names it (the CloudWatch agent's `name` dimension).
    pub gpu_model: &'static str,
    /// The GPU's name and maker as EC2 gives them (`A10G`, `NVIDIA`).
    pub ec2_gpu_name: &'static str,
    pub gpus: usize,
    /// GPU memory ECS reports as usable (`totalMemoryInMiB`), a little under EC2's figure.
    pub gpu_memory_mib: u32,
    /// GPU memory per GPU as EC2 reports it.
    pub ec2_gpu_memory_mib: u32,
    pub vcpus: u32,
    pub memory_gib: u32,
    pub max_network_interfaces: u32,
}

impl InstanceType {
    /// Memory the ECS agent registers: the instance's less what it keeps for the system.
    pub const fn registered_memory_mib(&self) -> u32 {
        self.memory_gib * 1024 - 1024
    }

    /// CPU units the agent registers: 1,024 per vCPU.
    pub const fn registered_cpu(&self) -> u32 {
        self.vcpus * 1024
    }

    /// ENI attachment points for `awsvpc` tasks: every interface but the primary one.
    pub const fn task_enis(&self) -> u32 {
        self.max_network_interfaces.saturating_sub(1)
    }
}

#[allow(clippy::too_many_arguments)]
const fn it(
    name: &'static str,
    gpu_model: &'static str,
    ec2_gpu_name: &'static str,
    gpus: usize,
    gpu_memory_mib: u32,
    ec2_gpu_memory_mib: u32,
    vcpus: u32,
    memory_gib: u32,
    max_network_interfaces: u32,
) -> InstanceType {
    InstanceType {
        name,
        gpu_model,
        ec2_gpu_name,
        gpus,
        gpu_memory_mib,
        ec2_gpu_memory_mib,
        vcpus,
        memory_gib,
        max_network_interfaces,
    }
}

pub const G5_XLARGE: InstanceType = it(
    "g5.xlarge",
    "NVIDIA A10G",
    "A10G",
    1,
    22_563,
    24_576,
    4,
    16,
    4,
);
pub const G5_12XLARGE: InstanceType = it(
    "g5.12xlarge",
    "NVIDIA A10G",
    "A10G",
    4,
    22_563,
    24_576,
    48,
    192,
    15,
);
pub const G5_48XLARGE: InstanceType = it(
    "g5.48xlarge",
    "NVIDIA A10G",
    "A10G",
    8,
    22_563,
    24_576,
    192,
    768,
    7,
);
pub const G6_12XLARGE: InstanceType = it(
    "g6.12xlarge",
    "NVIDIA L4",
    "L4",
    4,
    22_491,
    22_888,
    48,
    192,
    8,
);
pub const G6_48XLARGE: InstanceType = it(
    "g6.48xlarge",
    "NVIDIA L4",
    "L4",
    8,
    22_491,
    22_888,
    192,
    768,
    15,
);
pub const G6E_12XLARGE: InstanceType = it(
    "g6e.12xlarge",
    "NVIDIA L40S",
    "L40S",
    4,
    45_582,
    46_068,
    48,
    384,
    10,
);
pub const G6E_48XLARGE: InstanceType = it(
    "g6e.48xlarge",
    "NVIDIA L40S",
    "L40S",
    8,
    45_582,
    46_068,
    192,
    1536,
    15,
);
pub const P4D_24XLARGE: InstanceType = it(
    "p4d.24xlarge",
    "NVIDIA A100-SXM4-40GB",
    "A100",
    8,
    40_536,
    40_960,
    96,
    1152,
    60,
);
pub const P5_48XLARGE: InstanceType = it(
    "p5.48xlarge",
    "NVIDIA H100 80GB HBM3",
    "H100",
    8,
    81_079,
    81_920,
    192,
    2048,
    64,
);

/// Every type the emulator knows.
pub const ALL: [InstanceType; 9] = [
    G5_XLARGE,
    G5_12XLARGE,
    G5_48XLARGE,
    G6_12XLARGE,
    G6_48XLARGE,
    G6E_12XLARGE,
    G6E_48XLARGE,
    P4D_24XLARGE,
    P5_48XLARGE,
];

/// A fractional-GPU type (an eighth of an L4): EC2 describes it, and nothing in the emulator
/// launches it, as ECS does not share such GPUs with MPS. Its figures are the emulator's.
pub const G6F_XLARGE: InstanceType = it(
    "g6f.xlarge",
    "NVIDIA L4-3Q",
    "L4",
    1,
    2_861,
    3_072,
    4,
    16,
    4,
);

/// Types EC2 describes that no scenario runs and no provider launches.
pub const DESCRIBED_ONLY: [InstanceType; 1] = [G6F_XLARGE];

/// The emulator's on-demand Linux prices (USD an hour, us-east-1 list prices of 2026-11), by
/// which Managed Instances choose the most cost-effective type.
const ON_DEMAND: [(&str, f64); 9] = [
    ("g5.xlarge", 1.006),
    ("g5.12xlarge", 5.672),
    ("g5.48xlarge", 16.288),
    ("g6.12xlarge", 4.602),
    ("g6.48xlarge", 13.35),
    ("g6e.12xlarge", 10.493),
    ("g6e.48xlarge", 30.131),
    ("p4d.24xlarge", 21.958),
    ("p5.48xlarge", 55.04),
];

/// The on-demand price of a type the emulator knows.
pub fn on_demand_price(name: &str) -> Option<f64> {
    ON_DEMAND.iter().find(|(n, _)| *n == name).map(|(_, p)| *p)
}

/// The type named `name`, if the emulator knows it.
pub fn find(name: &str) -> Option<&'static InstanceType> {
    ALL.iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_is_found_by_name_and_leaves_enis_for_tasks() {
        for kind in ALL {
            assert_eq!(find(kind.name), Some(&kind));
            assert!(kind.task_enis() >= 3, "{}", kind.name);
            assert!(
                kind.gpu_memory_mib < kind.ec2_gpu_memory_mib,
                "{}",
                kind.name
            );
        }
        assert_eq!(
            G5_XLARGE.task_enis(),
            3,
            "4 interfaces less the primary one"
        );
        assert_eq!(find("m5.large"), None);
    }
}
