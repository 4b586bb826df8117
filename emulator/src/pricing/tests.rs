//! Unit tests of the `pricing` module.

use super::*;

/// The filters a careful client sends for the on-demand Linux price of `instance_type`.
fn careful(instance_type: &str, region: &str) -> Value {
    json!({
        "ServiceCode": "AmazonEC2",
        "FormatVersion": "aws_v1",
        "Filters": [
            {"Type": "TERM_MATCH", "Field": "instanceType", "Value": instance_type},
            {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
            {"Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux"},
            {"Type": "TERM_MATCH", "Field": "tenancy", "Value": "Shared"},
            {"Type": "TERM_MATCH", "Field": "capacitystatus", "Value": "Used"},
            {"Type": "TERM_MATCH", "Field": "preInstalledSw", "Value": "NA"},
        ],
    })
}

fn usd(document: &str) -> f64 {
    let product: Value = serde_json::from_str(document).unwrap();
    let term = product["terms"]["OnDemand"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    assert_eq!(term["effectiveDate"], EFFECTIVE_DATE);
    let dimension = term["priceDimensions"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    dimension["pricePerUnit"]["USD"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_careful_filter_finds_the_one_on_demand_linux_price() {
    let answer = handle("GetProducts", &careful("g5.xlarge", "us-east-1")).unwrap();
    let list = answer["PriceList"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{answer}");
    assert_eq!(usd(list[0].as_str().unwrap()), 1.006);
    let ireland = handle("GetProducts", &careful("g5.xlarge", "eu-west-1")).unwrap();
    assert_eq!(usd(ireland["PriceList"][0].as_str().unwrap()), 1.1267);
    // Every type the emulator knows is priced, the described-only one too.
    for kind in ALL.iter().chain(DESCRIBED_ONLY.iter()) {
        let answer = handle("GetProducts", &careful(kind.name, "us-east-1")).unwrap();
        assert_eq!(
            answer["PriceList"].as_array().unwrap().len(),
            1,
            "{}",
            kind.name
        );
    }
    // A region the emulator does not price has no products.
    let none = handle("GetProducts", &careful("g5.xlarge", "sa-east-1")).unwrap();
    assert_eq!(none["PriceList"], json!([]));
}

#[test]
fn a_loose_filter_gets_the_variants_a_real_answer_mixes_in() {
    let loose = json!({
        "ServiceCode": "AmazonEC2",
        "Filters": [
            {"Type": "TERM_MATCH", "Field": "instanceType", "Value": "g5.xlarge"},
            {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-1"},
        ],
    });
    let answer = handle("GetProducts", &loose).unwrap();
    let prices: Vec<f64> = answer["PriceList"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| usd(d.as_str().unwrap()))
        .collect();
    assert_eq!(prices.len(), 4);
    assert!(prices.iter().any(|p| *p > 1.006), "{prices:?}");
    let any_of = json!({
        "ServiceCode": "AmazonEC2",
        "Filters": [
            {"Type": "ANY_OF", "Field": "instanceType", "Value": "g5.xlarge, p5.48xlarge"},
            {"Type": "EQUALS", "Field": "regionCode", "Value": "us-east-1"},
            {"Type": "NONE_OF", "Field": "operatingSystem", "Value": "Windows"},
            {"Type": "CONTAINS", "Field": "capacitystatus", "Value": "Used"},
        ],
    });
    let answer = handle("GetProducts", &any_of).unwrap();
    // Per type: Linux on shared and on dedicated tenancy ("Used" is case-sensitive, so the unused
    // reservation's product does not contain it).
    assert_eq!(answer["PriceList"].as_array().unwrap().len(), 2 * 2);
}

#[test]
fn pages_follow_their_token_and_bad_requests_are_refused() {
    let all = json!({"ServiceCode": "AmazonEC2", "MaxResults": 100});
    let mut seen = 0;
    let mut request = all.clone();
    loop {
        let answer = handle("GetProducts", &request).unwrap();
        seen += answer["PriceList"].as_array().unwrap().len();
        match answer.get("NextToken") {
            Some(token) => request["NextToken"] = token.clone(),
            None => break,
        }
    }
    assert_eq!(seen, (ALL.len() + DESCRIBED_ONLY.len()) * REGIONS.len() * 4);
    let other = handle("GetProducts", &json!({"ServiceCode": "AmazonS3"})).unwrap();
    assert_eq!(other["PriceList"], json!([]));
    for (input, code) in [
        (json!({}), "InvalidParameterException"),
        (
            json!({"ServiceCode": "AmazonEC2", "MaxResults": 0}),
            "InvalidParameterException",
        ),
        (
            json!({"ServiceCode": "AmazonEC2", "FormatVersion": "aws_v2"}),
            "InvalidParameterException",
        ),
        (
            json!({"ServiceCode": "AmazonEC2", "Filters": [{"Type": "LIKE", "Field": "a", "Value": "b"}]}),
            "InvalidParameterException",
        ),
        (
            json!({"ServiceCode": "AmazonEC2", "NextToken": "x"}),
            "InvalidNextTokenException",
        ),
    ] {
        assert_eq!(
            handle("GetProducts", &input).unwrap_err().code,
            code,
            "{input}"
        );
    }
    assert_eq!(
        handle("DescribeServices", &json!({})).unwrap_err().code,
        "UnknownOperationException"
    );
}
