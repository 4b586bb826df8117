//! Unit tests of the `ec2` module.

use super::*;

#[test]
fn form_bodies_decode() {
    let form = parse_form(
        b"Action=DescribeInstances&Filter.1.Name=instance-id&Filter.1.Value.1=i-0a%2Bb&X=a+b",
    );
    assert_eq!(form[0], ("Action".into(), "DescribeInstances".into()));
    assert_eq!(form[2].1, "i-0a+b");
    assert_eq!(form[3].1, "a b");
}

fn spot(fleet: &Fleet, pairs: &[(&str, &str)]) -> Result<String, Ec2Error> {
    let mut params = vec![("Action".to_string(), "DescribeSpotPriceHistory".to_string())];
    params.extend(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    handle(fleet, &params, "r-1")
}

/// Now: one price per zone for the type asked, within the market's swing; over a day: the
/// price at the start and each six-hourly change after it, newest first.
#[test]
fn spot_price_history_answers_the_price_then_and_its_changes_newest_first() {
    let now = chrono::DateTime::parse_from_rfc3339("2026-12-02T09:30:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let fleet = Fleet::new(1, now);
    let xml = spot(&fleet, &[("InstanceType.1", "g5.xlarge")]).unwrap();
    assert_eq!(xml.matches("<item>").count(), 3, "{xml}");
    for zone in ZONES {
        assert!(xml.contains(&format!("<availabilityZone>{zone}</availabilityZone>")));
    }
    let prices: Vec<f64> = xml
        .split("<spotPrice>")
        .skip(1)
        .map(|s| s.split('<').next().unwrap().parse().unwrap())
        .collect();
    assert!(
        prices
            .iter()
            .all(|p| (0.36 * 0.88..=0.36 * 1.12).contains(p)),
        "{prices:?}"
    );
    assert!(
        xml.contains("<timestamp>2026-12-02T06:00:00.000Z</timestamp>"),
        "the price in effect at 09:30 was set at 06:00"
    );

    let day = spot(
        &fleet,
        &[
            ("InstanceType.1", "p5.48xlarge"),
            ("AvailabilityZone", "us-east-1b"),
            ("StartTime", "2026-12-01T09:30:00Z"),
            ("EndTime", "2026-12-02T09:30:00Z"),
        ],
    )
    .unwrap();
    let stamps: Vec<&str> = day
        .split("<timestamp>")
        .skip(1)
        .map(|s| s.split('<').next().unwrap())
        .collect();
    assert_eq!(
        stamps,
        [
            "2026-12-02T06:00:00.000Z",
            "2026-12-02T00:00:00.000Z",
            "2026-12-01T18:00:00.000Z",
            "2026-12-01T12:00:00.000Z",
            "2026-12-01T06:00:00.000Z",
        ]
    );
    // Paged: two at a time, the token carries on.
    let first = spot(
        &fleet,
        &[("InstanceType.1", "g5.xlarge"), ("MaxResults", "2")],
    )
    .unwrap();
    assert!(
        first.contains("<nextToken>emulator-ec2-spot:2</nextToken>"),
        "{first}"
    );
    let rest = spot(
        &fleet,
        &[
            ("InstanceType.1", "g5.xlarge"),
            ("MaxResults", "2"),
            ("NextToken", "emulator-ec2-spot:2"),
        ],
    )
    .unwrap();
    assert_eq!(rest.matches("<item>").count(), 1);
    // Windows sold: only Linux/UNIX here.
    let windows = spot(&fleet, &[("ProductDescription.1", "Windows")]).unwrap();
    assert_eq!(windows.matches("<item>").count(), 0);
    for (pairs, says) in [
        (
            vec![("AvailabilityZone", "us-east-1z")],
            "Invalid availability zone",
        ),
        (vec![("StartTime", "yesterday")], "StartTime"),
        (
            vec![
                ("StartTime", "2026-12-02T09:00:00Z"),
                ("EndTime", "2026-12-01T09:00:00Z"),
            ],
            "end time",
        ),
        (vec![("MaxResults", "0")], "between 1 and 1000"),
    ] {
        let error = spot(&fleet, &pairs).unwrap_err();
        assert!(error.message.contains(says), "{pairs:?}: {error:?}");
    }
}

#[test]
fn instance_types_are_filtered_by_type_patterns_and_other_filters_are_refused() {
    let fleet = Fleet::new(1, chrono::Utc::now());
    let ask = |pairs: &[(&str, &str)]| {
        let mut params = vec![("Action".to_string(), "DescribeInstanceTypes".to_string())];
        params.extend(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        handle(&fleet, &params, "r-1")
    };
    let g6 = ask(&[
        ("Filter.1.Name", "instance-type"),
        ("Filter.1.Value.1", "g6*"),
        ("MaxResults", "100"),
    ])
    .unwrap();
    assert!(
        g6.contains("g6.12xlarge") && g6.contains("g6e.48xlarge"),
        "{g6}"
    );
    assert!(
        !g6.contains("g5.xlarge") && !g6.contains("p5.48xlarge"),
        "{g6}"
    );
    let refused = ask(&[
        ("Filter.1.Name", "vcpu-info.default-vcpus"),
        ("Filter.1.Value.1", "48"),
    ]);
    assert!(refused.is_err());
}

/// An instance in a Capacity Block is answered with EC2's `capacity-block` lifecycle, and the
/// `instance-lifecycle` filter finds it.
#[test]
fn a_capacity_block_instance_says_so() {
    let now = chrono::DateTime::parse_from_rfc3339("2026-12-02T09:30:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    // The demo's p5 runs in a Capacity Block.
    let fleet = crate::scenario::Scenario::Demo.build(7, now);
    let block = fleet
        .clusters
        .values()
        .flat_map(|c| c.instances.iter())
        .find(|i| i.capacity_block)
        .unwrap();
    assert_eq!(block.instance_type, "p5.48xlarge");
    let id = block.ec2_instance_id.clone();
    let ask = |pairs: &[(&str, &str)]| {
        let mut params = vec![("Action".to_string(), "DescribeInstances".to_string())];
        params.extend(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        handle(&fleet, &params, "r-1").unwrap()
    };
    let all = ask(&[]);
    assert_eq!(
        all.matches("<instanceLifecycle>capacity-block</instanceLifecycle>")
            .count(),
        1
    );
    let found = ask(&[
        ("Filter.1.Name", "instance-lifecycle"),
        ("Filter.1.Value.1", "capacity-block"),
    ]);
    assert!(found.contains(&id), "{found}");
    assert_eq!(found.matches("<instanceId>").count(), 1, "{found}");
}
