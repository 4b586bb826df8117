//! The checks behind `/readyz`: can this server do its work right now?

use std::{
    future::Future,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicU8, Ordering},
        Arc,
    },
};

use app::service::ports::BoxFuture;
use serde::Serialize;

use crate::aws::errors;

/// One dependency the server needs to serve its pages.
pub trait ReadinessCheck: Send + Sync {
    /// A short name for the report, e.g. `site_assets`.
    fn name(&self) -> &'static str;
    /// `Ok` when the dependency is usable, or what is wrong and how to fix it.
    fn check(&self) -> BoxFuture<'_, Result<(), String>>;
}

/// The result of one check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    pub name: &'static str,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// All the checks of a server.
#[derive(Clone, Default)]
pub struct Readiness {
    checks: Vec<Arc<dyn ReadinessCheck>>,
    /// What the last run found, to log each change once rather than every probe's answer:
    /// [`NEVER_RUN`], [`READY`] or [`NOT_READY`].
    last: Arc<AtomicU8>,
}

const NEVER_RUN: u8 = 0;
const READY: u8 = 1;
const NOT_READY: u8 = 2;

impl Readiness {
    /// The checks of a console whose built site is in `site_root`.
    pub fn for_site(site_root: &Path) -> Readiness {
        Readiness::default().with(SiteAssets::new(site_root))
    }

    /// Adds a check.
    pub fn with(mut self, check: impl ReadinessCheck + 'static) -> Readiness {
        self.checks.push(Arc::new(check));
        self
    }

    /// Runs every check concurrently.
    pub async fn run(&self) -> Vec<CheckResult> {
        let runs = self.checks.iter().map(|check| async move {
            let result = check.check().await;
            CheckResult {
                name: check.name(),
                ok: result.is_ok(),
                error: result.err(),
            }
        });
        let results = futures::future::join_all(runs).await;
        if let Some(change) = self.change(&results) {
            change.log();
        }
        results
    }

    /// What changed since the last run, if anything: so that each change is logged once, not
    /// every probe's answer.
    fn change<'a>(&self, results: &'a [CheckResult]) -> Option<Change<'a>> {
        let failing = results.iter().find(|check| !check.ok);
        let now = if failing.is_some() { NOT_READY } else { READY };
        let before = self.last.swap(now, Ordering::Relaxed);
        if before == now {
            return None;
        }
        let failing = failing.map(|check| Failing {
            check: check.name,
            error: check.error.as_deref().unwrap_or("no reason given"),
        });
        Some(match (before, failing) {
            (_, None) => Change::Ready,
            (NEVER_RUN, Some(failing)) => Change::NotReadyYet(failing),
            (_, Some(failing)) => Change::NoLongerReady(failing),
        })
    }
}

/// A change of readiness, as the log says it.
#[derive(Debug, PartialEq, Eq)]
enum Change<'a> {
    Ready,
    /// The first run failed: the server is starting, or started without a dependency.
    NotReadyYet(Failing<'a>),
    /// It was ready and no longer is.
    NoLongerReady(Failing<'a>),
}

/// The first failing check and what it said.
#[derive(Debug, PartialEq, Eq)]
struct Failing<'a> {
    check: &'static str,
    error: &'a str,
}

impl Change<'_> {
    fn log(&self) {
        match self {
            Change::Ready => tracing::info!("ready: every readiness check passes"),
            Change::NotReadyYet(Failing { check, error }) => {
                tracing::info!(check, "not ready yet: {error}")
            }
            Change::NoLongerReady(Failing { check, error }) => {
                tracing::warn!(check, "no longer ready: {error}")
            }
        }
    }
}

/// The built site's script, WebAssembly and stylesheet: without them pages render but never
/// become interactive.
pub struct SiteAssets {
    files: Vec<PathBuf>,
}

impl SiteAssets {
    /// Expects `pkg/gpushare.{js,wasm,css}` under `site_root`.
    pub fn new(site_root: &Path) -> SiteAssets {
        let pkg = site_root.join("pkg");
        SiteAssets {
            files: ["gpushare.js", "gpushare.wasm", "gpushare.css"]
                .into_iter()
                .map(|name| pkg.join(name))
                .collect(),
        }
    }
}

impl ReadinessCheck for SiteAssets {
    fn name(&self) -> &'static str {
        "site_assets"
    }

    fn check(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let mut missing = Vec::new();
            for file in &self.files {
                if tokio::fs::metadata(file).await.is_err() {
                    missing.push(file.display().to_string());
                }
            }
            if missing.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "missing {}; build the site with `./scripts/build.sh --release` or point \
                     --site-root at a built site",
                    missing.join(", ")
                ))
            }
        })
    }
}

/// How long a dependency's answer to a readiness probe is kept: `/readyz` needs no sign-in, so
/// a loop of requests must not become a loop of AWS calls (ECS's and CloudWatch's request
/// budgets are shared by every caller in the account).
pub const PROBE_CACHE: std::time::Duration = std::time::Duration::from_secs(5);

/// A check whose answer is kept for a while: one probe at a time, and at most one per period
/// however many requests ask; the others wait for it or take the kept answer.
pub struct Cached {
    inner: Box<dyn ReadinessCheck>,
    period: std::time::Duration,
    last: tokio::sync::Mutex<Option<(std::time::Instant, Result<(), String>)>>,
}

impl Cached {
    /// `check`, probed at most once every `period`.
    pub fn new(check: impl ReadinessCheck + 'static, period: std::time::Duration) -> Cached {
        Cached {
            inner: Box::new(check),
            period,
            last: tokio::sync::Mutex::new(None),
        }
    }
}

impl ReadinessCheck for Cached {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn check(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            // Held across the probe: a burst waits for the one probe rather than starting its own.
            let mut last = self.last.lock().await;
            if let Some((at, answer)) = last.as_ref() {
                if at.elapsed() < self.period {
                    return answer.clone();
                }
            }
            let answer = self.inner.check().await;
            *last = Some((std::time::Instant::now(), answer.clone()));
            answer
        })
    }
}

/// How long a dependency may take to answer a readiness probe.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

async fn probe<T>(
    service: &str,
    call: impl Future<Output = Result<T, String>>,
) -> Result<(), String> {
    match tokio::time::timeout(PROBE_TIMEOUT, call).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(error),
        Err(_) => Err(format!(
            "{service} did not answer within {} s",
            PROBE_TIMEOUT.as_secs()
        )),
    }
}

/// ECS answers ListClusters.
pub struct EcsReachable {
    ecs: aws_sdk_ecs::Client,
}

impl EcsReachable {
    pub fn new(ecs: aws_sdk_ecs::Client) -> EcsReachable {
        EcsReachable { ecs }
    }
}

impl ReadinessCheck for EcsReachable {
    fn name(&self) -> &'static str {
        "ecs"
    }

    fn check(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(probe("ECS", async {
            self.ecs
                .list_clusters()
                .max_results(1)
                .send()
                .await
                .map_err(|e| errors::ecs("ListClusters", &e))
        }))
    }
}

/// CloudWatch answers ListMetrics.
pub struct CloudWatchReachable {
    cloudwatch: aws_sdk_cloudwatch::Client,
}

impl CloudWatchReachable {
    pub fn new(cloudwatch: aws_sdk_cloudwatch::Client) -> CloudWatchReachable {
        CloudWatchReachable { cloudwatch }
    }
}

impl ReadinessCheck for CloudWatchReachable {
    fn name(&self) -> &'static str {
        "cloudwatch"
    }

    fn check(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(probe("CloudWatch", async {
            self.cloudwatch
                .list_metrics()
                .namespace("CWAgent")
                .metric_name("nvidia_smi_utilization_gpu")
                .send()
                .await
                .map_err(|e| errors::cloudwatch("ListMetrics", &e))
        }))
    }
}

/// The replay of the emulator's past into the cost history: the console is not ready until
/// it is done, since the fleet it shows walks through those days meanwhile.
pub struct HistoryReplay(pub Arc<crate::cost_history::SqlCostHistory>);

impl ReadinessCheck for HistoryReplay {
    fn name(&self) -> &'static str {
        "cost_history"
    }

    fn check(&self) -> BoxFuture<'_, Result<(), String>> {
        use app::service::ports::CostHistory as _;
        let replaying = self.0.replaying();
        Box::pin(async move { replaying.map_or(Ok(()), Err) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A check that counts its probes.
    struct Counting(std::sync::Arc<std::sync::atomic::AtomicU32>);

    impl ReadinessCheck for Counting {
        fn name(&self) -> &'static str {
            "counting"
        }

        fn check(&self) -> BoxFuture<'_, Result<(), String>> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                Err("down".to_string())
            })
        }
    }

    /// A check that passes when its switch is on.
    struct Switch(std::sync::Arc<std::sync::atomic::AtomicBool>);

    impl ReadinessCheck for Switch {
        fn name(&self) -> &'static str {
            "switch"
        }

        fn check(&self) -> BoxFuture<'_, Result<(), String>> {
            let on = self.0.load(std::sync::atomic::Ordering::SeqCst);
            Box::pin(async move {
                if on {
                    Ok(())
                } else {
                    Err("off".to_string())
                }
            })
        }
    }

    #[tokio::test]
    async fn each_change_of_readiness_is_told_once_and_probes_in_between_are_not() {
        let on = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readiness = Readiness::default().with(Switch(on.clone()));
        let mut told = Vec::new();
        for switch in [false, false, true, true, false, false, true] {
            on.store(switch, std::sync::atomic::Ordering::SeqCst);
            let checks = futures::future::join_all(readiness.checks.iter().map(|c| async move {
                let result = c.check().await;
                CheckResult {
                    name: c.name(),
                    ok: result.is_ok(),
                    error: result.err(),
                }
            }))
            .await;
            told.push(readiness.change(&checks).map(|c| format!("{c:?}")));
        }
        let failing = "Failing { check: \"switch\", error: \"off\" }";
        assert_eq!(
            told,
            [
                Some(format!("NotReadyYet({failing})")),
                None,
                Some("Ready".to_string()),
                None,
                Some(format!("NoLongerReady({failing})")),
                None,
                Some("Ready".to_string()),
            ]
        );
        // A run says the same through `run`: the state is shared with it.
        on.store(false, std::sync::atomic::Ordering::SeqCst);
        assert!(!readiness.run().await[0].ok);
        assert_eq!(readiness.last.load(Ordering::Relaxed), NOT_READY);
    }

    #[tokio::test]
    async fn a_burst_of_probes_makes_one_call_a_period() {
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let readiness = Readiness::default().with(Cached::new(
            Counting(calls.clone()),
            std::time::Duration::from_millis(300),
        ));
        let burst = (0..200).map(|_| readiness.run());
        let answers = futures::future::join_all(burst).await;
        assert!(answers
            .iter()
            .all(|a| !a[0].ok && a[0].error.as_deref() == Some("down")));
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
        tokio::time::sleep(std::time::Duration::from_millis(350)).await;
        readiness.run().await;
        assert_eq!(
            calls.load(std::sync::atomic::Ordering::SeqCst),
            2,
            "asked again after the period"
        );
    }

    #[tokio::test]
    async fn site_assets_names_the_missing_files() {
        let dir = std::env::temp_dir().join(format!("gpushare-ready-{}", std::process::id()));
        let pkg = dir.join("pkg");
        std::fs::create_dir_all(&pkg).expect("temp dir");
        std::fs::write(pkg.join("gpushare.js"), "").expect("write");
        std::fs::write(pkg.join("gpushare.css"), "").expect("write");

        let results = Readiness::for_site(&dir).run().await;
        assert_eq!(results.len(), 1);
        assert!(!results[0].ok);
        let error = results[0].error.as_deref().unwrap_or_default();
        assert!(error.contains("gpushare.wasm"), "{error}");
        assert!(!error.contains("gpushare.js"), "{error}");

        std::fs::write(pkg.join("gpushare.wasm"), "").expect("write");
        let results = Readiness::for_site(&dir).run().await;
        assert!(results[0].ok, "{results:?}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
