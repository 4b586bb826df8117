//! AWS access: the ECS and CloudWatch SDK clients, pointed at the embedded emulator, an
//! endpoint given on the command line, or AWS itself through the default credential chain.

use aws_sdk_ecs::config::{BehaviorVersion, Credentials, Region};

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

/// The SDK clients the console uses.
#[derive(Clone, Debug)]
pub struct Clients {
    pub ecs: aws_sdk_ecs::Client,
    pub cloudwatch: aws_sdk_cloudwatch::Client,
    /// The region the clients use, for display.
    pub region: String,
}

impl Clients {
    /// Builds both clients for `target`.
    pub async fn new(target: &Target) -> Clients {
        let loader = aws_config::defaults(BehaviorVersion::latest());
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
        Clients {
            region: config
                .region()
                .map_or_else(|| "no region".to_string(), ToString::to_string),
            ecs: aws_sdk_ecs::Client::new(&config),
            cloudwatch: aws_sdk_cloudwatch::Client::new(&config),
        }
    }
}
