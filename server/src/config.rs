//! The command line: every flag can also be set through a `GPUSHARE_*` environment variable.

mod bench;

use std::{net::SocketAddr, path::PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use self::bench::{
    BenchApprovalsArgs, BenchAuditArgs, BenchAuthArgs, BenchCommand, BenchCostArgs,
    BenchEmulatorArgs, BenchFleetArgs, BenchFuzzArgs, BenchMemoryArgs, BenchReadinessArgs,
    BenchSoakArgs, BenchValidateArgs,
};

/// gpushare: a web console for Amazon ECS GPU sharing with NVIDIA MPS.
///
/// With no command, `gpushare` runs `serve`.
#[derive(Debug, Parser)]
#[command(name = "gpushare", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Server options when no command is given (the same as `gpushare serve`).
    #[command(flatten)]
    pub serve: ServeArgs,

    /// Log line format.
    #[arg(long, env = "GPUSHARE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,

    /// Which log lines to keep, as a tracing filter (e.g. `info`, `gpushare=debug,info`).
    #[arg(long, env = "GPUSHARE_LOG", default_value = "info", global = true)]
    pub log_filter: String,
}

/// What `gpushare` does.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the console over HTTP (the default). With no AWS options it starts the embedded
    /// emulator and shows its simulated fleet.
    Serve(Box<ServeArgs>),
    /// Run the ECS and CloudWatch emulator alone, for scripts and the AWS CLI
    /// (`aws --endpoint-url http://127.0.0.1:4566 ecs list-clusters`).
    Emulate(EmulateArgs),
    /// Measure, and print the figures as a table.
    #[command(subcommand)]
    Bench(BenchCommand),
}

/// Which fleet the console shows: the embedded emulator (default) or AWS.
#[derive(Debug, Clone, Args)]
pub struct FleetArgs {
    /// Use AWS through the default credential chain instead of the embedded emulator.
    #[arg(long, env = "GPUSHARE_AWS")]
    pub aws: bool,

    /// Send ECS and CloudWatch requests to this endpoint (e.g. a standalone `gpushare emulate`);
    /// implies --aws.
    #[arg(long, env = "GPUSHARE_ENDPOINT_URL", value_name = "URL", value_parser = parse_url)]
    pub endpoint_url: Option<String>,

    /// AWS region (default: from the AWS configuration); implies --aws.
    #[arg(long, env = "GPUSHARE_REGION")]
    pub region: Option<String>,

    /// AWS profile of the shared configuration files; implies --aws.
    #[arg(long, env = "GPUSHARE_PROFILE")]
    pub profile: Option<String>,

    /// Seconds between fleet snapshots; pages read the latest and never wait on AWS.
    #[arg(long, env = "GPUSHARE_REFRESH_INTERVAL", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub refresh_interval: u64,

    /// The tag key that names a service's or task definition's team.
    #[arg(long, env = "GPUSHARE_TEAM_TAG", default_value = "team")]
    pub team_tag: String,

    /// The CloudWatch agent dimension that names a GPU's instance. With the default `host`, an
    /// `InstanceId` dimension (the agent's `append_dimensions`) wins when present; otherwise
    /// `host` is the hostname, joined through EC2's private DNS names (ec2:DescribeInstances),
    /// or the instance ID. GPUs join by this and `index`.
    #[arg(long, env = "GPUSHARE_USAGE_HOST_DIMENSION", default_value = "host")]
    pub usage_host_dimension: String,

    /// The share of each ECS request-throttling bucket (its burst and its sustained rate, as
    /// ECS documents them per group of actions) that the fleet refresher may use, in percent.
    /// Every caller in the account and region draws from the same buckets; the rest is left to
    /// deploys, autoscaling and people. Per console process.
    #[arg(long, env = "GPUSHARE_ECS_API_SHARE", default_value_t = 25, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub ecs_api_share: u32,

    /// Seconds between the background full reads that check the incremental refresh (each
    /// refresh reads only what can have changed).
    #[arg(long, env = "GPUSHARE_FULL_READ_INTERVAL", default_value_t = 600, value_parser = clap::value_parser!(u64).range(30..=86_400))]
    pub full_read_interval: u64,

    /// An SQS queue that an EventBridge rule fills with ECS's events (a rule on `source:
    /// aws.ecs`, `detail-type: ECS Task State Change`, with the queue as its target). The
    /// refresh then describes the tasks the events name instead of listing the tasks of every
    /// instance that changed; events are hints, checked through ECS, and the refresh polls as
    /// before while the queue cannot be read. The console deletes what it reads: give it a
    /// queue of its own. Needs sqs:ReceiveMessage and sqs:DeleteMessage. With the embedded
    /// emulator, its own queue is used unless `--emulator-events off`.
    #[arg(long, env = "GPUSHARE_EVENTS_QUEUE_URL", value_name = "URL", value_parser = parse_url)]
    pub events_queue_url: Option<String>,

    /// The GPU utilisation over the window, in percent, at or above which a GPU whose compute
    /// limits (Σ maxComputePercent, unset counting 100) pass 100 % is flagged as contended.
    /// Limits over 100 % alone are shown as information: a limit is a cap, not a reservation.
    #[arg(long, env = "GPUSHARE_CONTENTION_THRESHOLD", default_value_t = app::model::fleet_view::DEFAULT_CONTENTION_THRESHOLD, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub contention_threshold: u32,

    #[command(flatten)]
    pub emulator: EmulatorArgs,
}

impl Default for FleetArgs {
    fn default() -> Self {
        FleetArgs {
            aws: false,
            endpoint_url: None,
            region: None,
            profile: None,
            refresh_interval: 15,
            team_tag: "team".into(),
            usage_host_dimension: "host".into(),
            ecs_api_share: crate::aws::DEFAULT_ECS_API_SHARE,
            full_read_interval: 600,
            events_queue_url: None,
            contention_threshold: app::model::fleet_view::DEFAULT_CONTENTION_THRESHOLD,
            emulator: EmulatorArgs::default(),
        }
    }
}

impl FleetArgs {
    /// Whether the console talks to AWS (or a given endpoint) rather than its own emulator.
    pub fn uses_aws(&self) -> bool {
        self.aws || self.endpoint_url.is_some() || self.region.is_some() || self.profile.is_some()
    }
}

/// The emulated fleet: which scenario, how fast its clock runs, which faults it injects.
#[derive(Debug, Clone, Args)]
pub struct EmulatorArgs {
    /// The emulated fleet: `demo` (3 clusters, 24 instances), `large` (1,000 instances,
    /// 8,000 GPUs) or `empty`.
    #[arg(long, env = "GPUSHARE_SCENARIO", default_value = "demo", value_parser = ["demo", "large", "empty"])]
    pub scenario: String,

    /// Seed of the scenario: the same seed builds the same fleet.
    #[arg(long, env = "GPUSHARE_SEED", default_value_t = 1)]
    pub seed: u64,

    /// Simulated seconds per real second, so that rollouts take seconds to watch.
    #[arg(long, env = "GPUSHARE_CLOCK_SPEED", default_value_t = 10.0, value_parser = parse_clock_speed)]
    pub clock_speed: f64,

    /// Inject faults: `OPERATION:latency=40,jitter=10,throttle=0.1,error=0.05,drop=0.01,lost=0.01`,
    /// with `*` for every operation; repeat for several. `drop` drops the connection before the
    /// operation, `lost` carries it out and then drops the answer. `rate-limits=on` (or `off`)
    /// enforces ECS's request throttling, its token buckets per group of actions (on by default
    /// in `large`). Also settable at runtime with `PUT /_emulator/faults` on the emulator.
    #[arg(
        long = "fault",
        env = "GPUSHARE_FAULT",
        value_name = "SPEC",
        value_delimiter = ';'
    )]
    pub faults: Vec<String>,

    /// Route ECS's task state change events to an SQS queue on the emulator's endpoint
    /// (`/123456789012/ecs-events`), as an EventBridge rule would (`on`), or not (`off`: the
    /// console then follows the fleet by polling alone).
    #[arg(long, env = "GPUSHARE_EMULATOR_EVENTS", default_value = "on", value_parser = ["on", "off"])]
    pub emulator_events: String,

    /// Days of the scenario's past the console replays into its cost history at start (0:
    /// none): the emulator starts that far back and its clock is run forward, the console
    /// recording as it goes; `/readyz` says so until done. Only `demo` has a past, and
    /// `gpushare emulate` always starts at now.
    #[arg(long, env = "GPUSHARE_HISTORY_DAYS", default_value_t = 14, value_parser = clap::value_parser!(u32).range(0..=60))]
    pub history_days: u32,
}

impl Default for EmulatorArgs {
    /// As the flags' defaults, without a past to replay (tests ask for one when they want it).
    fn default() -> Self {
        EmulatorArgs {
            scenario: "demo".into(),
            seed: 1,
            clock_speed: 10.0,
            faults: Vec::new(),
            emulator_events: "on".into(),
            history_days: 0,
        }
    }
}

impl EmulatorArgs {
    /// The days of past to replay: only the demo has one.
    pub fn past_days(&self) -> u32 {
        if self.scenario == "demo" {
            self.history_days
        } else {
            0
        }
    }

    /// The fault settings the flags describe, or what is wrong with them.
    pub fn faults(&self) -> Result<emulator::Faults, String> {
        let mut faults = emulator::Faults::default();
        for spec in &self.faults {
            faults
                .add_spec(spec)
                .map_err(|error| format!("--fault {spec:?}: {error}"))?;
        }
        Ok(faults)
    }
}

/// Options of `gpushare emulate`.
#[derive(Debug, Clone, Args)]
pub struct EmulateArgs {
    /// Address and port the emulator listens on.
    #[arg(
        long,
        env = "GPUSHARE_EMULATOR_LISTEN",
        default_value = "127.0.0.1:4566"
    )]
    pub listen: SocketAddr,

    #[command(flatten)]
    pub emulator: EmulatorArgs,
}

fn parse_clock_speed(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(speed) if speed > 0.0 && speed <= 10_000.0 => Ok(speed),
        _ => Err(format!(
            "{value:?} is not a clock speed; give a number above 0 and at most 10000"
        )),
    }
}

fn host_share(value: &str) -> Result<f64, String> {
    let max = app::model::cost::prices::HOST_SHARE_MAX_PERCENT;
    match value.trim().trim_end_matches('%').parse::<f64>() {
        Ok(percent) if percent.is_finite() && (0.0..=max).contains(&percent) => Ok(percent),
        _ => Err(format!(
            "{value:?} is not a share of the price; give a percent from 0 to {max}, e.g. 15"
        )),
    }
}

fn parse_url(value: &str) -> Result<String, String> {
    if value.starts_with("http://") || value.starts_with("https://") {
        Ok(value.trim_end_matches('/').to_string())
    } else {
        Err(format!("{value:?} is not an http:// or https:// URL"))
    }
}

/// Options of the console's HTTP server.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address and port to listen on.
    #[arg(long, env = "GPUSHARE_LISTEN", default_value = "127.0.0.1:3000")]
    pub listen: SocketAddr,

    /// A price file (TOML, `[[price]]` entries with instance_type, usd_per_hour and optionally
    /// region, lifecycle = "on-demand" | "spot" | "capacity-block", commitment = "savings-plan" |
    /// "reserved-instance" and source) whose rates win over the Price List's and the built-in
    /// table's for the cost review; see prices.example.toml.
    #[arg(long, env = "GPUSHARE_PRICES", value_name = "FILE")]
    pub prices: Option<PathBuf>,

    /// Days of allocation history kept for the cost review (older hours are pruned daily); a
    /// report may not reach further back.
    #[arg(long, env = "GPUSHARE_COST_RETENTION_DAYS", default_value_t = crate::cost_history::RETENTION_DAYS, value_parser = clap::value_parser!(u32).range(1..=3650))]
    pub cost_retention_days: u32,

    /// Percent of each instance's price that the cost review puts on its CPU and memory (split
    /// half by the CPU units the tasks reserve, half by the memory they reserve; the part no task
    /// reserves is idle); the rest is split across its GPUs. 0 (the default) puts the whole
    /// price on the GPUs. At most 90.
    #[arg(long, env = "GPUSHARE_COST_HOST_SHARE", value_name = "PERCENT", default_value_t = 0.0, value_parser = host_share)]
    pub cost_host_share: f64,

    /// Do not read Cost Explorer. By default the console reads each closed day's amortized cost
    /// per EC2 instance once (`ce:GetCostAndUsageWithResources`, $0.01 a request; one or a few
    /// requests a day), where the account has resource-level data on, and prices those days at
    /// the bill; with this flag every figure is at list and price-file prices.
    #[arg(long, env = "GPUSHARE_NO_COST_EXPLORER")]
    pub no_cost_explorer: bool,

    /// Folder with the built site: `pkg/` (script, WebAssembly, stylesheet) and the public assets.
    #[arg(long, env = "GPUSHARE_SITE_ROOT", default_value = "target/site")]
    pub site_root: PathBuf,

    /// Seconds a request may take before the server answers 408.
    #[arg(long, env = "GPUSHARE_REQUEST_TIMEOUT", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub request_timeout: u64,

    /// Seconds a client may take to send a request's headers; a slower connection is closed.
    #[arg(long, env = "GPUSHARE_HEADER_READ_TIMEOUT", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=300), value_name = "SECS")]
    pub header_read_timeout: u64,

    /// Largest request body accepted, in bytes; larger bodies get 413.
    #[arg(long, env = "GPUSHARE_BODY_LIMIT", default_value_t = 1024 * 1024, value_parser = clap::value_parser!(u64).range(1024..=1024 * 1024 * 1024))]
    pub body_limit: u64,

    /// Live-update streams (the fleet's and a rollout's) one person, or one address without
    /// sign-in, may hold open; more get 429.
    #[arg(long, env = "GPUSHARE_MAX_STREAMS_PER_CLIENT", default_value_t = crate::limits::STREAMS_PER_CLIENT, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000))]
    pub max_streams_per_client: usize,

    /// Live-update streams the server holds open in all; more get 429.
    #[arg(long, env = "GPUSHARE_MAX_STREAMS", default_value_t = crate::limits::STREAMS_TOTAL, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub max_streams: usize,

    /// Pages and JSON API reads answered from the console's own state (the fleet, cost, audit,
    /// approvals) at once; more wait their turn (see --max-reads-waiting). Each read in flight
    /// holds its memory until it is sent. Default: 4 a core.
    #[arg(long, env = "GPUSHARE_MAX_READS_IN_FLIGHT", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000), value_name = "N")]
    pub max_reads_in_flight: Option<usize>,

    /// Pages and JSON API reads that may ask ECS first (task definitions, services, deployments,
    /// a cluster's events) answered at once; they mostly wait for ECS and hold little meanwhile.
    /// Default: 64 a core.
    #[arg(long, env = "GPUSHARE_MAX_AWS_READS_IN_FLIGHT", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000), value_name = "N")]
    pub max_aws_reads_in_flight: Option<usize>,

    /// Reads of each kind that may wait for their turn (at most 5 s each); more are answered 503
    /// with Retry-After at once, before any work is done. Writes are never refused for load.
    #[arg(long, env = "GPUSHARE_MAX_READS_WAITING", default_value_t = crate::limits::READS_WAITING, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=1_000_000), value_name = "N")]
    pub max_reads_waiting: usize,

    /// Seconds between reconciles of the audit log with ECS: records left `pending` or
    /// `unknown` (a crash, a lost answer, a stopped replica) are settled by asking ECS.
    #[arg(long, env = "GPUSHARE_RECONCILE_INTERVAL", default_value_t = 60, value_parser = clap::value_parser!(u64).range(5..=86_400))]
    pub reconcile_interval: u64,

    /// Folder for the audit log's SQLite database (`gpushare.db`), made if missing.
    #[arg(long, env = "GPUSHARE_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,

    /// The audit log's database instead of SQLite under --data-dir: `postgres://user@host/db`
    /// for several replicas sharing one log (or `sqlite://path`).
    #[arg(long, env = "DATABASE_URL", value_name = "URL")]
    pub database_url: Option<String>,

    #[command(flatten)]
    pub access: AccessArgs,

    #[command(flatten)]
    pub fleet: FleetArgs,
}

/// Who may use the console, and from where.
#[derive(Debug, Clone, Args)]
pub struct AccessArgs {
    /// How people sign in: `none` (everyone is the local admin; loopback only unless
    /// --insecure-no-auth), `proxy` (a sign-in proxy such as oauth2-proxy in front, at
    /// --trusted-proxy), `alb` (an Application Load Balancer with OIDC in front, --alb-arn) or
    /// `oidc` (sign-in with an OpenID Connect provider, --oidc-issuer, --public-url).
    #[arg(long = "auth", env = "GPUSHARE_AUTH", value_enum, default_value_t = AuthFlag::None)]
    pub auth: AuthFlag,

    /// Serve a network address without sign-in anyway: everyone who reaches it is an admin.
    #[arg(long, env = "GPUSHARE_INSECURE_NO_AUTH")]
    pub insecure_no_auth: bool,

    /// Address or CIDR range of the sign-in proxy whose X-Forwarded-User, -Email and -Groups are
    /// believed (--auth proxy); repeat or comma-separate for several.
    #[arg(
        long = "trusted-proxy",
        env = "GPUSHARE_TRUSTED_PROXY",
        value_name = "ADDRESS",
        value_delimiter = ','
    )]
    pub trusted_proxies: Vec<String>,

    /// Believe identity headers from any address (a --trusted-proxy of 0.0.0.0/0 or ::/0): only
    /// where nothing but the proxy can reach the console. Without it such a range is refused.
    #[arg(long, env = "GPUSHARE_TRUST_ANY_PROXY")]
    pub trust_any_proxy: bool,

    /// The policy file: groups → roles and teams, and the fields only admins may change (see
    /// policy.example.toml). A sign-in (--auth proxy, alb or oidc) needs one: without it nobody
    /// would be let in.
    #[arg(long, env = "GPUSHARE_POLICY", value_name = "FILE")]
    pub policy: Option<PathBuf>,

    /// On the embedded emulator's `demo` scenario with no --policy and no sign-in: run with the
    /// demo's policy (teams, budgets and approvers; the local user an admin) and start with a few
    /// requests for approval from its teams (`on`), or with no policy at all (`off`).
    #[arg(long, env = "GPUSHARE_DEMO_POLICY", default_value = "on", value_parser = ["on", "off"])]
    pub demo_policy: String,

    /// The URL people open the console at (`https://gpushare.example.com`): changes must come
    /// from this origin, and only its host is answered.
    #[arg(long, env = "GPUSHARE_PUBLIC_URL", value_name = "URL", value_parser = parse_url)]
    pub public_url: Option<String>,

    /// Another `host` or `host:port` the console answers for; repeat for several.
    #[arg(
        long = "allowed-host",
        env = "GPUSHARE_ALLOWED_HOST",
        value_name = "HOST",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,

    /// The Application Load Balancer whose signed sign-in tokens are believed (--auth alb):
    /// `arn:aws:elasticloadbalancing:REGION:ACCOUNT:loadbalancer/app/NAME/ID`. Its region picks
    /// the key endpoint.
    #[arg(long, env = "GPUSHARE_ALB_ARN", value_name = "ARN")]
    pub alb_arn: Option<String>,

    /// Where the load balancer's public keys are fetched, `<URL>/<kid>`; by default
    /// `https://public-keys.auth.elb.<region of --alb-arn>.amazonaws.com`.
    #[arg(long, env = "GPUSHARE_ALB_KEY_URL", value_name = "URL")]
    pub alb_key_url: Option<String>,

    /// The identity provider's issuer that tokens must name (--auth alb), when set.
    #[arg(long, env = "GPUSHARE_ALB_ISSUER", value_name = "URL")]
    pub alb_issuer: Option<String>,

    /// The OIDC client id that tokens must name (--auth alb), when set.
    #[arg(long, env = "GPUSHARE_ALB_CLIENT_ID", value_name = "ID")]
    pub alb_client_id: Option<String>,

    /// The claim of the sign-in that lists the person's groups (`cognito:groups` for Cognito).
    #[arg(
        long,
        env = "GPUSHARE_GROUPS_CLAIM",
        default_value = "groups",
        value_name = "CLAIM"
    )]
    pub groups_claim: String,

    /// The OpenID Connect provider's issuer URL (--auth oidc), exactly as its discovery
    /// document names it.
    #[arg(long, env = "GPUSHARE_OIDC_ISSUER", value_name = "URL")]
    pub oidc_issuer: Option<String>,

    /// The console's client id at the provider (--auth oidc). Register
    /// `<--public-url>/auth/callback` as its redirect URI.
    #[arg(long, env = "GPUSHARE_OIDC_CLIENT_ID", value_name = "ID")]
    pub oidc_client_id: Option<String>,

    /// The client's secret (sent with client_secret_basic); leave it out for a public client,
    /// which PKCE protects. Prefer the environment variable to the flag.
    #[arg(
        long,
        env = "GPUSHARE_OIDC_CLIENT_SECRET",
        value_name = "SECRET",
        hide_env_values = true
    )]
    pub oidc_client_secret: Option<String>,

    /// The scopes asked for at sign-in.
    #[arg(
        long,
        env = "GPUSHARE_OIDC_SCOPES",
        default_value = "openid email profile",
        value_name = "SCOPES"
    )]
    pub oidc_scopes: String,

    /// Seconds a sign-in lasts before the person signs in again (--auth oidc).
    #[arg(long, env = "GPUSHARE_SESSION_TTL", default_value_t = 8 * 3600, value_parser = clap::value_parser!(u64).range(1..=30 * 24 * 3600), value_name = "SECS")]
    pub session_ttl: u64,
}

impl Default for AccessArgs {
    fn default() -> Self {
        AccessArgs {
            auth: AuthFlag::None,
            insecure_no_auth: false,
            trusted_proxies: Vec::new(),
            trust_any_proxy: false,
            policy: None,
            // A console built in a test has no policy unless it asks for one.
            demo_policy: "off".into(),
            public_url: None,
            allowed_hosts: Vec::new(),
            alb_arn: None,
            alb_key_url: None,
            alb_issuer: None,
            alb_client_id: None,
            groups_claim: "groups".into(),
            oidc_issuer: None,
            oidc_client_id: None,
            oidc_client_secret: None,
            oidc_scopes: "openid email profile".into(),
            session_ttl: 8 * 3600,
        }
    }
}

/// `--auth`: how people sign in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AuthFlag {
    /// No sign-in.
    None,
    /// A sign-in proxy in front.
    Proxy,
    /// An AWS Application Load Balancer with OIDC in front.
    Alb,
    /// Direct sign-in with an OpenID Connect provider.
    Oidc,
}

impl AuthFlag {
    pub fn mode(self) -> app::model::identity::AuthMode {
        use app::model::identity::AuthMode;
        match self {
            AuthFlag::None => AuthMode::None,
            AuthFlag::Proxy => AuthMode::Proxy,
            AuthFlag::Alb => AuthMode::Alb,
            AuthFlag::Oidc => AuthMode::Oidc,
        }
    }
}

impl Default for ServeArgs {
    fn default() -> Self {
        ServeArgs {
            listen: SocketAddr::from(([127, 0, 0, 1], 3000)),
            prices: None,
            cost_retention_days: crate::cost_history::RETENTION_DAYS,
            cost_host_share: 0.0,
            no_cost_explorer: false,
            site_root: PathBuf::from("target/site"),
            request_timeout: 30,
            header_read_timeout: 10,
            body_limit: 1024 * 1024,
            max_streams_per_client: crate::limits::STREAMS_PER_CLIENT,
            max_streams: crate::limits::STREAMS_TOTAL,
            max_reads_in_flight: None,
            max_aws_reads_in_flight: None,
            max_reads_waiting: crate::limits::READS_WAITING,
            reconcile_interval: 60,
            data_dir: PathBuf::from("data"),
            database_url: None,
            access: AccessArgs::default(),
            fleet: FleetArgs::default(),
        }
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per event, for log collectors.
    Json,
}

#[cfg(test)]
mod tests;
