//! AWS access: the ECS, CloudWatch and EC2 SDK clients, pointed at the embedded emulator, an
//! endpoint given on the command line, or AWS itself through the default credential chain.

pub mod again;
pub mod budget;
pub mod calls;
pub mod errors;
pub mod once;

use std::sync::Arc;

use aws_sdk_ecs::config::{BehaviorVersion, Credentials, Region};
use aws_smithy_async::future::pagination_stream::PaginationStream;
use futures::Stream;

/// An SDK time as the console writes times: RFC 3339 in UTC with milliseconds, so that times
/// sort as text.
pub fn rfc3339(at: &aws_sdk_ecs::primitives::DateTime) -> String {
    app::service::clock::rfc3339_of_epoch(at.secs(), at.subsec_nanos())
}

/// The pages of an SDK paginator as a `futures` stream, to combine with the stream adapters.
pub fn pages<T: Send + 'static>(pages: PaginationStream<T>) -> impl Stream<Item = T> + Send {
    futures::stream::unfold(pages, |mut pages| async move {
        let page = pages.next().await?;
        Some((page, pages))
    })
}

/// Where the SDK clients send their requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The embedded emulator on a loopback address; any credentials do.
    Emulator { endpoint: String },
    /// AWS (or an endpoint that speaks its protocols), with the default credential chain.
    Aws {
        region: Option<String>,
        profile: Option<String>,
        endpoint_url: Option<String>,
    },
}

/// How long the SDK waits to connect to AWS.
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);
/// How long one attempt of a call may take before the SDK gives up on it (and may retry).
pub const ATTEMPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a call may take with its retries: less than the request timeout, so that a slow AWS
/// is reported as such rather than as a slow console.
pub const OPERATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(25);

/// The SDK's timeouts: every call ends, answered or not, and a write that got no answer is
/// recorded as such.
fn timeouts() -> aws_config::timeout::TimeoutConfig {
    aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .operation_attempt_timeout(ATTEMPT_TIMEOUT)
        .operation_timeout(OPERATION_TIMEOUT)
        .build()
}

/// The share of ECS's request rates the fleet refresher uses by default, in percent.
pub const DEFAULT_ECS_API_SHARE: u32 = 25;

/// The SDK clients the console uses.
#[derive(Clone, Debug)]
pub struct Clients {
    pub ecs: aws_sdk_ecs::Client,
    pub cloudwatch: aws_sdk_cloudwatch::Client,
    /// EC2, for the instances' hostnames, zones and lifecycles.
    pub ec2: aws_sdk_ec2::Client,
    /// SQS, for ECS's events when a queue brings them.
    pub sqs: aws_sdk_sqs::Client,
    /// EC2 Auto Scaling, for the groups behind Auto Scaling group capacity providers.
    pub autoscaling: aws_sdk_autoscaling::Client,
    /// The Price List Query API, for on-demand prices. Its endpoints are in us-east-1,
    /// eu-central-1 and ap-south-1 only; it answers for every region.
    pub pricing: aws_sdk_pricing::Client,
    /// Cost Explorer, for each instance's amortized daily cost. Its endpoint is us-east-1's
    /// (cn-northwest-1's in China); it answers for the whole account.
    pub cost_explorer: aws_sdk_costexplorer::Client,
    /// The SQS queue an EventBridge rule fills with ECS's events, when there is one.
    pub events_queue_url: Option<String>,
    /// The region the clients use, for display.
    pub region: String,
    /// Every attempt of every call the clients made, for `/metrics`.
    pub calls: Arc<calls::CallCounts>,
    /// The fleet refresher's share of ECS's request rates.
    pub budget: Arc<budget::Budget>,
}

impl Clients {
    /// Builds the clients for `target`, the refresher paced to the default share of ECS's rates.
    pub async fn new(target: &Target) -> Clients {
        Clients::with_share(target, DEFAULT_ECS_API_SHARE).await
    }

    /// Builds the clients for `target`, the refresher paced to `share_percent` of ECS's rates.
    pub async fn with_share(target: &Target, share_percent: u32) -> Clients {
        let loader = aws_config::defaults(BehaviorVersion::latest()).timeout_config(timeouts());
        let loader = match target {
            Target::Emulator { endpoint } => loader
                .region(Region::new("us-east-1"))
                .credentials_provider(Credentials::new(
                    "EMULATOR",
                    "emulator",
                    None,
                    None,
                    "gpushare-emulator",
                ))
                .endpoint_url(endpoint),
            Target::Aws {
                region,
                profile,
                endpoint_url,
            } => {
                let mut loader = loader;
                if let Some(region) = region {
                    loader = loader.region(Region::new(region.clone()));
                }
                if let Some(profile) = profile {
                    loader = loader.profile_name(profile);
                }
                if let Some(url) = endpoint_url {
                    loader = loader.endpoint_url(url);
                }
                loader
            }
        };
        let config = loader.load().await;
        let counts = Arc::new(calls::CallCounts::default());
        let budget = Arc::new(budget::Budget::new(share_percent));
        let count = |service| calls::CountCalls::new(service, counts.clone(), Some(budget.clone()));
        Clients {
            region: config
                .region()
                .map_or_else(|| "no region".to_string(), ToString::to_string),
            ecs: aws_sdk_ecs::Client::from_conf(
                aws_sdk_ecs::config::Builder::from(&config)
                    .interceptor(count("ecs"))
                    .build(),
            ),
            cloudwatch: aws_sdk_cloudwatch::Client::from_conf(
                aws_sdk_cloudwatch::config::Builder::from(&config)
                    .interceptor(count("cloudwatch"))
                    .build(),
            ),
            ec2: aws_sdk_ec2::Client::from_conf(
                aws_sdk_ec2::config::Builder::from(&config)
                    .interceptor(count("ec2"))
                    .build(),
            ),
            autoscaling: aws_sdk_autoscaling::Client::from_conf(
                aws_sdk_autoscaling::config::Builder::from(&config)
                    .interceptor(count("autoscaling"))
                    .build(),
            ),
            pricing: pricing(&config, &counts),
            cost_explorer: cost_explorer(&config, &counts),
            sqs: aws_sdk_sqs::Client::from_conf(
                aws_sdk_sqs::config::Builder::from(&config)
                    .interceptor(calls::CountCalls::new("sqs", counts.clone(), None))
                    .build(),
            ),
            events_queue_url: None,
            calls: counts,
            budget,
        }
    }
}

/// The Price List's client, at its endpoint nearest the console's region, its calls counted
/// apart from the refresher's budget.
fn pricing(
    config: &aws_config::SdkConfig,
    counts: &Arc<calls::CallCounts>,
) -> aws_sdk_pricing::Client {
    aws_sdk_pricing::Client::from_conf(
        aws_sdk_pricing::config::Builder::from(config)
            .region(pricing_region(config.region()))
            .interceptor(calls::CountCalls::new("pricing", counts.clone(), None))
            .build(),
    )
}

/// Cost Explorer's client, at its one endpoint, its calls counted (each costs $0.01).
fn cost_explorer(
    config: &aws_config::SdkConfig,
    counts: &Arc<calls::CallCounts>,
) -> aws_sdk_costexplorer::Client {
    aws_sdk_costexplorer::Client::from_conf(
        aws_sdk_costexplorer::config::Builder::from(config)
            .region(cost_explorer_region(config.region()))
            .interceptor(calls::CountCalls::new("ce", counts.clone(), None))
            .build(),
    )
}

/// The Price List endpoint nearest the console's region: eu-central-1 for Europe, the Middle
/// East and Africa, ap-south-1 for Asia Pacific, us-east-1 otherwise.
fn pricing_region(console: Option<&Region>) -> Region {
    let region = console.map(Region::as_ref).unwrap_or_default();
    Region::from_static(
        if ["eu-", "me-", "af-", "il-"]
            .iter()
            .any(|p| region.starts_with(p))
        {
            "eu-central-1"
        } else if region.starts_with("ap-") {
            "ap-south-1"
        } else {
            "us-east-1"
        },
    )
}

/// Cost Explorer's endpoint: us-east-1's, or cn-northwest-1's for the China regions.
fn cost_explorer_region(console: Option<&Region>) -> Region {
    let china = console.is_some_and(|r| r.as_ref().starts_with("cn-"));
    Region::from_static(if china { "cn-northwest-1" } else { "us-east-1" })
}

#[cfg(test)]
mod tests {
    use super::rfc3339;

    #[test]
    fn the_price_list_is_asked_at_its_nearest_endpoint() {
        use super::Region;
        let at = |r: &'static str| super::pricing_region(Some(&Region::from_static(r)));
        assert_eq!(at("eu-west-1").as_ref(), "eu-central-1");
        assert_eq!(at("ap-northeast-1").as_ref(), "ap-south-1");
        assert_eq!(at("us-west-2").as_ref(), "us-east-1");
        assert_eq!(super::pricing_region(None).as_ref(), "us-east-1");
    }

    #[test]
    fn sdk_times_sort_as_text_whatever_their_precision() {
        let whole = aws_sdk_ecs::primitives::DateTime::from_secs(1_796_040_000);
        let half =
            aws_sdk_ecs::primitives::DateTime::from_secs_and_nanos(1_796_040_000, 500_000_000);
        assert!(rfc3339(&whole) < rfc3339(&half));
        assert!(rfc3339(&whole).ends_with(".000Z"));
    }
}
