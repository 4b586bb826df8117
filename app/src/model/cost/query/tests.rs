//! Tests of `query`: the cost view's query parameters, read and written back.

#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn the_query_round_trips_through_the_url_and_refuses_unknown_values() {
    let now = CostQuery {
        period: Period::Now,
        from: None,
        to: None,
        group: Grouping::InstanceType,
        span: Span::Day,
        sort: SortKey::Unused,
        share_idle: true,
        cluster: Some("gpu prod".into()),
        split: SplitRule::Max,
    };
    let custom = CostQuery {
        period: Period::Custom,
        from: Some("2026-11-01".into()),
        to: Some("2026-11-30".into()),
        ..CostQuery::default()
    };
    for query in [now, custom] {
        let params = query.to_params();
        let pairs: Vec<(String, String)> = params
            .split('&')
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap();
                (k.to_string(), v.replace("%20", " "))
            })
            .collect();
        let back =
            CostQuery::from_params(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))).unwrap();
        assert_eq!(back, query, "{params}");
    }
    assert_eq!(CostQuery::default().to_params(), "");
    // A span alone asks for today's allocations; days alone for a custom period.
    assert_eq!(
        CostQuery::from_params([("span", "day")]).unwrap().period,
        Period::Now
    );
    assert_eq!(
        CostQuery::from_params([("from", "2026-11-01"), ("to", "2026-11-02")])
            .unwrap()
            .period,
        Period::Custom
    );
    assert!(CostQuery::from_params([("split", "compute")])
        .unwrap_err()
        .contains("is not memory (memory share) or max"));
    assert!(CostQuery::from_params([("period", "week")])
        .unwrap_err()
        .contains("7d, 30d, this_month"));
    assert!(CostQuery::from_params([("from", "1 Nov")])
        .unwrap_err()
        .contains("YYYY-MM-DD"));
    assert!(CostQuery::from_params([("to", "2026-13-01")])
        .unwrap_err()
        .contains("YYYY-MM-DD"));
    let error = CostQuery::from_params([("group", "owner")]).unwrap_err();
    assert!(
        error.contains("team, service, cluster, instance_type"),
        "{error}"
    );
    assert!(CostQuery::from_params([("span", "week")])
        .unwrap_err()
        .contains("hour, day, month"));
    assert!(CostQuery::from_params([("idle", "hide")])
        .unwrap_err()
        .contains("row or share"));
    assert!(CostQuery::from_params([("sort", "size")])
        .unwrap_err()
        .contains("gpu_hours"));
}
