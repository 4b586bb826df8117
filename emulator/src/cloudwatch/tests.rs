//! Unit tests of the `cloudwatch` module.

use super::*;
use crate::scenario::Scenario;

fn query(fleet: &Fleet, period: i64, stat: &str) -> MetricQuery {
    let instance = fleet
        .clusters
        .values()
        .flat_map(|c| c.instances.iter())
        .find(|i| i.gpus.iter().any(|g| g.mode == SharingMode::NvidiaMps))
        .expect("a shared GPU");
    let index = instance
        .gpus
        .iter()
        .position(|g| g.mode == SharingMode::NvidiaMps)
        .unwrap_or(0);
    MetricQuery {
        id: "q".into(),
        label: None,
        metric: MetricId::new(
            NAMESPACE,
            "nvidia_smi_utilization_gpu",
            gpu_dimensions(instance, &fleet.region, index),
        ),
        period_seconds: period,
        stat: stat.into(),
        return_data: true,
    }
}

#[test]
fn longer_periods_aggregate_the_minutes() {
    let fleet = Scenario::Demo.build(3, Utc::now());
    let now = fleet
        .now
        .duration_trunc(Duration::hours(1))
        .expect("whole hour");
    let start = now - Duration::hours(1);
    let minutes = fleet
        .get_metric_data(&[query(&fleet, 60, "Average")], start, now, now)
        .expect("minutes");
    let values = &minutes[0].values;
    assert_eq!(values.len(), 60);
    for (stat, expected) in [
        ("Average", values.iter().sum::<f64>() / 60.0),
        ("Sum", values.iter().sum::<f64>()),
        ("Maximum", values.iter().copied().fold(f64::MIN, f64::max)),
        ("Minimum", values.iter().copied().fold(f64::MAX, f64::min)),
        ("SampleCount", 60.0),
    ] {
        let hour = fleet
            .get_metric_data(&[query(&fleet, 3600, stat)], start, now, now)
            .expect("hour");
        assert_eq!(hour[0].values.len(), 1, "{stat}");
        assert!(
            (hour[0].values[0] - expected).abs() < 1e-9,
            "{stat}: {} vs {expected}",
            hour[0].values[0]
        );
    }
    // Newest first, one point per minute, within the range.
    assert!(minutes[0].timestamps.windows(2).all(|w| w[0] > w[1]));
}

#[test]
fn a_service_left_idle_uses_its_gpus_no_more_from_then_on() {
    let mut fleet = Scenario::Demo.build(3, Utc::now());
    let now = fleet.now;
    let since = now - Duration::minutes(30);
    fleet
        .idle_services
        .insert("inference-prod/tts".to_string(), since);
    // A GPU whose only live tasks are tts's.
    let cluster = &fleet.clusters["inference-prod"];
    let (instance, index) = cluster
        .instances
        .iter()
        .find_map(|i| {
            (0..i.gpus.len()).find_map(|g| {
                let groups: Vec<&str> = cluster
                    .tasks
                    .values()
                    .filter(|t| t.is_live() && t.instance_arn == i.arn)
                    .filter(|t| t.assignment.per_container.iter().any(|c| c.contains(&g)))
                    .map(|t| t.group.as_str())
                    .collect();
                (!groups.is_empty() && groups.iter().all(|g| *g == "service:tts")).then_some((i, g))
            })
        })
        .expect("a GPU of tts alone");
    let q = MetricQuery {
        metric: MetricId::new(
            NAMESPACE,
            "nvidia_smi_utilization_gpu",
            gpu_dimensions(instance, &fleet.region, index),
        ),
        ..query(&fleet, 60, "Average")
    };
    let data = fleet
        .get_metric_data(&[q], now - Duration::minutes(60), now, now)
        .expect("data");
    let result = &data[0];
    let (after, before): (Vec<_>, Vec<_>) = result
        .timestamps
        .iter()
        .zip(&result.values)
        .partition(|(t, _)| **t >= since);
    assert!(after.len() >= 25 && before.len() >= 25, "{result:?}");
    assert!(after.iter().all(|(_, v)| **v <= 2.0), "{after:?}");
    assert!(before.iter().any(|(_, v)| **v > 5.0), "{before:?}");
}

#[test]
fn nothing_older_than_fourteen_days_and_idle_gpus_use_nothing() {
    let fleet = Scenario::Demo.build(3, Utc::now());
    let now = fleet.now;
    let old = fleet
        .get_metric_data(
            &[query(&fleet, 3600, "Average")],
            now - Duration::days(20),
            now - Duration::days(15),
            now,
        )
        .expect("old");
    assert!(old[0].values.is_empty());
    let idle = fleet
        .clusters
        .values()
        .flat_map(|c| c.instances.iter())
        .find_map(|i| {
            i.gpus
                .iter()
                .position(|g| g.mode == SharingMode::Idle)
                .map(|index| (i, index))
        })
        .expect("an idle GPU");
    let q = MetricQuery {
        metric: MetricId::new(
            NAMESPACE,
            "nvidia_smi_utilization_gpu",
            gpu_dimensions(idle.0, &fleet.region, idle.1),
        ),
        ..query(&fleet, 300, "Maximum")
    };
    let data = fleet
        .get_metric_data(&[q], now - Duration::hours(1), now, now)
        .expect("data");
    assert!(!data[0].values.is_empty());
    assert!(
        data[0].values.iter().all(|v| *v == 0.0),
        "{:?}",
        data[0].values
    );
}

#[test]
fn bad_queries_say_what_is_wrong() {
    let fleet = Scenario::Demo.build(3, Utc::now());
    let now = fleet.now;
    let mut q = query(&fleet, 90, "Average");
    let error = fleet
        .get_metric_data(&[q.clone()], now - Duration::hours(1), now, now)
        .expect_err("period");
    assert!(error.to_string().contains("multiple of 60"), "{error}");
    q.period_seconds = 60;
    q.stat = "p99".into();
    let error = fleet
        .get_metric_data(&[q], now - Duration::hours(1), now, now)
        .expect_err("stat");
    assert!(error.to_string().contains("not supported"), "{error}");
    let many: Vec<MetricQuery> = (0..501)
        .map(|i| MetricQuery {
            id: format!("q{i}"),
            ..query(&fleet, 60, "Average")
        })
        .collect();
    assert!(fleet
        .get_metric_data(&many, now - Duration::hours(1), now, now)
        .is_err());
}
