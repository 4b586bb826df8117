//! Unit tests of the `budget` module.

use super::*;

#[test]
fn memory_reads_binary_units_and_refuses_the_ambiguous() {
    assert_eq!(parse_memory("128 GiB"), Ok(128 * 1024));
    assert_eq!(parse_memory("4096MiB"), Ok(4096));
    assert_eq!(parse_memory("1.5 GiB"), Ok(1536));
    assert_eq!(parse_memory("131,072"), Ok(131_072));
    assert_eq!(parse_memory("1 TiB"), Ok(1024 * 1024));
    let gb = parse_memory("128 GB").unwrap_err();
    assert!(gb.contains("ambiguous") && gb.contains("128 GiB"), "{gb}");
    assert!(parse_memory("lots").unwrap_err().contains("not an amount"));
    assert!(parse_memory("0.3 MiB")
        .unwrap_err()
        .contains("whole number"));
    assert!(parse_memory("12 parsecs")
        .unwrap_err()
        .contains("unknown unit"));
}

#[test]
fn costs_are_dollars_to_the_cent() {
    assert_eq!(parse_cost("$20,000"), Ok(2_000_000));
    assert_eq!(parse_cost("20000.5 USD"), Ok(2_000_050));
    assert!(parse_cost("twenty").unwrap_err().contains("$20,000"));
    assert!(parse_cost("-5").is_err());
}

fn usage(held: u64, pending: u64, budget: u64) -> BudgetUse {
    BudgetUse {
        team: "search".into(),
        cluster: "inference-prod".into(),
        budget_mib: budget * 1024,
        held_mib: held * 1024,
        pending_mib: pending * 1024,
        pending_requests: u32::from(pending > 0),
        ..BudgetUse::default()
    }
}

#[test]
fn a_change_past_the_budget_says_by_how_much() {
    let verdict = judge(
        &usage(96, 0, 128),
        Delta {
            memory_mib: 48 * 1024,
            whole_gpus: 0,
        },
        "this deploy",
    );
    assert!(verdict.over);
    assert_eq!(
        verdict.arithmetic,
        "search holds 96 GiB of 128 GiB on inference-prod; this deploy adds 48 GiB, to 144 GiB: 16 GiB past the budget."
    );
    let within = judge(
        &usage(64, 16, 128),
        Delta {
            memory_mib: 48 * 1024,
            whole_gpus: 0,
        },
        "this deploy",
    );
    assert!(!within.over, "{}", within.arithmetic);
    assert!(within.arithmetic.contains("16 GiB more in 1 request"));
    // Past the budget already, a change that frees memory does not wait.
    let frees = judge(
        &usage(200, 0, 128),
        Delta {
            memory_mib: -8 * 1024,
            whole_gpus: 0,
        },
        "this deploy",
    );
    assert!(!frees.over);
    assert!(frees.arithmetic.contains("frees 8 GiB"));
}

#[test]
fn whole_gpus_have_their_own_limit_and_count_as_the_largest_gpu() {
    let before = TaskGpu {
        memory_mib: 8192,
        whole_gpus: 0,
    };
    let after = TaskGpu {
        memory_mib: 0,
        whole_gpus: 1,
    };
    let delta = Delta::of(2, before, 2, after, 24 * 1024);
    assert_eq!(delta.memory_mib, 2 * (24 - 8) * 1024);
    assert_eq!(delta.whole_gpus, 2);
    let mut limited = usage(0, 0, 1024);
    limited.whole_gpus_budget = Some(1);
    let verdict = judge(&limited, delta, "this deploy");
    assert!(verdict.over);
    assert!(verdict
        .arithmetic
        .contains("2 whole GPUs, past the budget of 1"));
}

#[test]
fn the_bar_fits_held_and_pending_in_the_budget() {
    assert_eq!(usage(64, 32, 128).bar(), (500, 250));
    assert_eq!(usage(200, 32, 128).bar(), (1000, 0));
    assert_eq!(usage(96, 64, 128).bar(), (750, 250));
    assert_eq!(usage(96, 64, 128).free_mib(), 0);
    assert!(usage(96, 64, 128).over());
}

#[test]
fn the_burn_runs_the_recorded_rate_to_the_months_end() {
    // $300 spent in the 10 days of November so far, all recorded: $900 by the 30th.
    let burn = BudgetBurn::of("search", "prod", 100_000, 30_000, 240.0, 240.0, 720.0);
    assert_eq!(burn.forecast_cents, 90_000);
    assert!(!burn.over());
    assert_eq!(burn.bar(), (300, 600));
    assert!(burn.note().is_none());
    // Only 5 of the 10 days recorded: the rate is what was recorded, and it says so.
    let half = BudgetBurn::of("search", "prod", 100_000, 30_000, 120.0, 240.0, 720.0);
    assert_eq!(half.forecast_cents, 30_000 + 30_000 * 4);
    assert!(half.over());
    assert!(half
        .note()
        .unwrap()
        .contains("120 of the month's 240 hours"));
    assert_eq!(half.bar(), (300, 700));
}

#[test]
fn a_task_sums_its_containers() {
    let settings = vec![
        (
            "a".to_string(),
            GpuSetting::Mps {
                memory_mib: 4096,
                max_compute_percent: Some(50),
            },
        ),
        ("b".to_string(), GpuSetting::Whole { count: 2 }),
        ("c".to_string(), GpuSetting::None),
    ];
    assert_eq!(
        TaskGpu::of(&settings),
        TaskGpu {
            memory_mib: 4096,
            whole_gpus: 2
        }
    );
    assert_eq!(TaskGpu::of(&settings).budget_mib(1000), 6096);
}
