//! Request counts and latencies by matched route, served at `/metrics` in Prometheus text format.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    sync::{Arc, Mutex},
    time::Instant,
};

use axum::{
    extract::{MatchedPath, Request, State},
    http::header,
    middleware::Next,
    response::{IntoResponse, Response},
};

use crate::{
    aws::{budget::Budget, calls::CallCounts},
    ecs::{CacheSize, ReadCache},
    fleet::{reader::FleetReader, store::SnapshotStore},
};

/// Upper bounds of the latency histogram's buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// The route label of requests that matched no route, so that random paths cannot blow up the
/// number of series.
const UNMATCHED: &str = "unmatched";

#[derive(Debug, Default, Clone)]
struct Latency {
    /// Observations at or below each bound of [`BUCKETS`] (not cumulative; summed on render).
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum_seconds: f64,
}

#[derive(Debug, Default)]
struct Series {
    /// `(method, route, status)` → requests.
    requests: BTreeMap<(String, String, u16), u64>,
    /// `(method, route)` → latency histogram.
    latency: BTreeMap<(String, String), Latency>,
}

/// The server's request metrics.
#[derive(Debug, Default)]
pub struct HttpMetrics {
    series: Mutex<Series>,
}

impl HttpMetrics {
    /// Records one answered request.
    pub fn observe(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let mut series = self
            .series
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *series
            .requests
            .entry((method.to_string(), route.to_string(), status))
            .or_default() += 1;
        let latency = series
            .latency
            .entry((method.to_string(), route.to_string()))
            .or_default();
        if let Some(bucket) = BUCKETS.iter().position(|bound| seconds <= *bound) {
            latency.buckets[bucket] += 1;
        }
        latency.count += 1;
        latency.sum_seconds += seconds;
    }

    /// The metrics in Prometheus text exposition format 0.0.4.
    pub fn render(&self, version: &str, uptime_seconds: u64) -> String {
        let series = self
            .series
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = write_metrics(&mut out, &series, version, uptime_seconds);
        out
    }
}

fn write_metrics(
    out: &mut String,
    series: &Series,
    version: &str,
    uptime_seconds: u64,
) -> std::fmt::Result {
    writeln!(
        out,
        "# HELP gpushare_build_info The running gpushare version."
    )?;
    writeln!(out, "# TYPE gpushare_build_info gauge")?;
    writeln!(
        out,
        "gpushare_build_info{{version=\"{}\"}} 1",
        escape(version)
    )?;
    writeln!(
        out,
        "# HELP gpushare_uptime_seconds Seconds since the server started."
    )?;
    writeln!(out, "# TYPE gpushare_uptime_seconds gauge")?;
    writeln!(out, "gpushare_uptime_seconds {uptime_seconds}")?;

    writeln!(
        out,
        "# HELP gpushare_http_requests_total HTTP requests answered, by method, matched route and status."
    )?;
    writeln!(out, "# TYPE gpushare_http_requests_total counter")?;
    for ((method, route, status), count) in &series.requests {
        writeln!(
            out,
            "gpushare_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{status}\"}} {count}",
            escape(method),
            escape(route)
        )?;
    }

    writeln!(
        out,
        "# HELP gpushare_http_request_duration_seconds Time to answer HTTP requests, by method and matched route."
    )?;
    writeln!(
        out,
        "# TYPE gpushare_http_request_duration_seconds histogram"
    )?;
    for ((method, route), latency) in &series.latency {
        let labels = format!("method=\"{}\",route=\"{}\"", escape(method), escape(route));
        let mut cumulative = 0;
        for (bound, in_bucket) in BUCKETS.iter().zip(latency.buckets) {
            cumulative += in_bucket;
            writeln!(
                out,
                "gpushare_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {cumulative}"
            )?;
        }
        writeln!(
            out,
            "gpushare_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
            latency.count
        )?;
        writeln!(
            out,
            "gpushare_http_request_duration_seconds_sum{{{labels}}} {}",
            latency.sum_seconds
        )?;
        writeln!(
            out,
            "gpushare_http_request_duration_seconds_count{{{labels}}} {}",
            latency.count
        )?;
    }
    Ok(())
}

/// What reading AWS costs, for `/metrics`.
pub struct Costs {
    pub calls: Arc<CallCounts>,
    pub budget: Arc<Budget>,
    pub store: Arc<SnapshotStore>,
    pub reader: Arc<FleetReader>,
    /// What pages read from ECS on demand, kept for a while.
    pub reads: Arc<ReadCache>,
}

/// What `/metrics` shows: the requests, what reading AWS costs, and the server's version and
/// start.
#[derive(Clone)]
pub struct MetricsPage {
    pub metrics: Arc<HttpMetrics>,
    pub costs: Arc<Costs>,
    pub admission: Arc<super::admission::Admission>,
    pub version: &'static str,
    pub started: Instant,
}

/// What reading AWS costs: calls by service, operation and outcome, retries, the budget, the
/// snapshot's age, the last refresh, and the full reads' checks of the incremental state.
fn write_costs(out: &mut String, costs: &Costs) -> std::fmt::Result {
    write_aws_calls(out, costs)?;
    write_refresher(out, costs)?;
    if let Some(feed) = costs.reader.events() {
        write_events(out, feed)?;
    }
    write_read_cache(out, costs.reads.size())
}

/// What the cache of pages' ECS reads holds, and how many answers it let go to stay in bounds.
fn write_read_cache(out: &mut String, size: CacheSize) -> std::fmt::Result {
    for (name, kind, help, value) in [
        (
            "gpushare_read_cache_entries",
            "gauge",
            "Answers of ECS reads kept for pages.",
            size.entries as u64,
        ),
        (
            "gpushare_read_cache_bytes",
            "gauge",
            "What the kept answers weigh, as JSON.",
            size.bytes as u64,
        ),
        (
            "gpushare_read_cache_evictions_total",
            "counter",
            "Answers let go, those read least lately first, to stay within the cache's bounds.",
            size.evicted,
        ),
    ] {
        writeln!(out, "# HELP {name} {help}")?;
        writeln!(out, "# TYPE {name} {kind}")?;
        writeln!(out, "{name} {value}")?;
    }
    Ok(())
}

/// AWS call attempts and retries, by service and operation.
fn write_aws_calls(out: &mut String, costs: &Costs) -> std::fmt::Result {
    family(
        out,
        "gpushare_aws_calls_total",
        "counter",
        "AWS call attempts, by service, operation and outcome (ok, throttled, error).",
    )?;
    for (service, operation, outcome, n) in costs.calls.attempts() {
        writeln!(
            out,
            "gpushare_aws_calls_total{{service=\"{}\",operation=\"{}\",outcome=\"{outcome}\"}} {n}",
            escape(&service),
            escape(&operation)
        )?;
    }
    family(
        out,
        "gpushare_aws_retries_total",
        "counter",
        "AWS call attempts after the first of a call (the SDK's retries), by service and operation.",
    )?;
    for (service, operation, n) in costs.calls.retries() {
        writeln!(
            out,
            "gpushare_aws_retries_total{{service=\"{}\",operation=\"{}\"}} {n}",
            escape(&service),
            escape(&operation)
        )?;
    }
    Ok(())
}

/// The fleet refresher: the snapshot's age, the last refresh, the ECS API budget, refreshes and
/// the full reads that check the incremental state.
fn write_refresher(out: &mut String, costs: &Costs) -> std::fmt::Result {
    write_refresher_gauges(out, costs)?;
    write_refresher_counters(out, costs)
}

/// The refresher's gauges, and the time spent waiting for the ECS API budget.
fn write_refresher_gauges(out: &mut String, costs: &Costs) -> std::fmt::Result {
    let state = costs.store.state();
    let stats = costs.store.stats();
    let age = state
        .taken_at
        .map(|at| (chrono::Utc::now() - at).num_milliseconds().max(0) as f64 / 1000.0);
    let gauges: [(&str, &str, &str, Option<f64>); 8] = [
        (
            "gpushare_fleet_snapshot_age_seconds",
            "gauge",
            "Age of the fleet snapshot the pages show (absent before the first).",
            age,
        ),
        (
            "gpushare_fleet_refresh_duration_seconds",
            "gauge",
            "How long the last fleet refresh took.",
            Some(stats.last_seconds),
        ),
        (
            "gpushare_fleet_refresh_budget_wait_seconds",
            "gauge",
            "Of the last refresh, the time spent waiting for the ECS API budget.",
            Some(stats.last_waited_seconds),
        ),
        (
            "gpushare_fleet_refresh_ecs_calls",
            "gauge",
            "ECS calls of the last fleet refresh.",
            Some(f64::from(stats.last_ecs_calls)),
        ),
        (
            "gpushare_fleet_behind",
            "gauge",
            "1 while the refresher holds back for the ECS API budget or backs off after throttling.",
            Some(if state.behind.is_some() { 1.0 } else { 0.0 }),
        ),
        (
            "gpushare_ecs_api_share_ratio",
            "gauge",
            "The share of each ECS throttling bucket the refresher paces itself to.",
            Some(f64::from(costs.budget.share_percent()) / 100.0),
        ),
        (
            "gpushare_ecs_budget_wait_seconds_total",
            "counter",
            "Time the fleet refresher's ECS calls have waited for the budget, in all.",
            Some(costs.budget.waited_ms() as f64 / 1000.0),
        ),
        (
            "gpushare_ecs_page_reads_turned_away_total",
            "counter",
            "Pages' ECS reads that found the console's share of the rate in use and said so.",
            Some(costs.budget.turned_away() as f64),
        ),
    ];
    for (name, kind, help, value) in gauges {
        if let Some(value) = value {
            family(out, name, kind, help)?;
            writeln!(out, "{name} {value}")?;
        }
    }
    Ok(())
}

/// Refreshes by outcome, and the full reads that check the incremental state.
fn write_refresher_counters(out: &mut String, costs: &Costs) -> std::fmt::Result {
    let stats = costs.store.stats();
    let checks = costs.reader.checks();
    let counters: [(&str, &str, u64); 5] = [
        (
            "gpushare_fleet_refreshes_total{outcome=\"ok\"}",
            "Fleet refreshes, by outcome.",
            stats.succeeded,
        ),
        (
            "gpushare_fleet_refreshes_total{outcome=\"failed\"}",
            "",
            stats.failed,
        ),
        (
            "gpushare_fleet_full_reads_total",
            "Background full reads compared with the incremental state.",
            checks.full_reads,
        ),
        (
            "gpushare_fleet_full_read_gpus_compared_total",
            "GPUs those full reads compared (on instances unchanged between the two reads).",
            checks.gpus_compared,
        ),
        (
            "gpushare_fleet_full_read_gpus_differing_total",
            "GPUs whose incremental view differed from the full read's (should stay 0).",
            checks.gpus_differing,
        ),
    ];
    for (series, help, value) in counters {
        let name = series.split('{').next().unwrap_or(series);
        if !help.is_empty() {
            family(out, name, "counter", help)?;
        }
        writeln!(out, "{series} {value}")?;
    }
    Ok(())
}

/// ECS's events read from the SQS queue.
fn write_events(out: &mut String, feed: &crate::fleet::events::EventFeed) -> std::fmt::Result {
    let counts = feed.counts();
    family(
        out,
        "gpushare_fleet_events_following",
        "gauge",
        "1 while the console reads ECS's events from the SQS queue; 0 while it cannot (the refresh then lists tasks).",
    )?;
    writeln!(
        out,
        "gpushare_fleet_events_following {}",
        u8::from(feed.following())
    )?;
    family(
        out,
        "gpushare_fleet_events_total",
        "counter",
        "Messages read from the events queue, by kind: task state changes, other ECS events, unreadable messages.",
    )?;
    for (kind, value) in [
        ("task_state_change", counts.task_events),
        ("other", counts.other_events),
        ("unreadable", counts.unreadable),
    ] {
        writeln!(
            out,
            "gpushare_fleet_events_total{{kind=\"{kind}\"}} {value}"
        )?;
    }
    family(
        out,
        "gpushare_fleet_events_receive_errors_total",
        "counter",
        "Receives from the events queue that failed.",
    )?;
    writeln!(
        out,
        "gpushare_fleet_events_receive_errors_total {}",
        counts.errors
    )?;
    Ok(())
}

/// The reads in flight, waiting and refused for load, by lane: `own` (answered from the
/// console's state) and `aws` (may ask ECS first).
fn write_admission(out: &mut String, admission: &super::admission::Admission) -> std::fmt::Result {
    let lanes = [("own", admission.own.load()), ("aws", admission.aws.load())];
    type Figure = fn(&super::admission::Load) -> u64;
    let families: [(&str, &str, &str, Figure); 5] = [
        ("gpushare_reads_in_flight", "gauge", "Pages and API reads being answered, by lane.", |l| l.in_flight as u64),
        ("gpushare_reads_in_flight_limit", "gauge", "Reads answered at once at most, by lane (--max-reads-in-flight, --max-aws-reads-in-flight).", |l| l.in_flight_limit as u64),
        ("gpushare_reads_waiting", "gauge", "Reads waiting for their turn, by lane.", |l| l.waiting as u64),
        ("gpushare_reads_waiting_limit", "gauge", "Reads that may wait at most, by lane (--max-reads-waiting).", |l| l.waiting_limit as u64),
        ("gpushare_reads_refused_total", "counter", "Reads answered 503 because the console was busy, by lane.", |l| l.refused),
    ];
    for (name, kind, help, figure) in families {
        family(out, name, kind, help)?;
        for (lane, load) in &lanes {
            writeln!(out, "{name}{{lane=\"{lane}\"}} {}", figure(load))?;
        }
    }
    Ok(())
}

/// The `# HELP` and `# TYPE` lines of a metric family.
fn family(out: &mut String, name: &str, kind: &str, help: &str) -> std::fmt::Result {
    writeln!(out, "# HELP {name} {help}")?;
    writeln!(out, "# TYPE {name} {kind}")
}

/// Escapes a label value as the exposition format requires.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The method label of requests whose method HTTP does not define, so that made-up methods
/// cannot blow up the number of series either.
const OTHER_METHOD: &str = "other";

/// The method as a label: one of HTTP's own, or [`OTHER_METHOD`].
fn method_label(method: &axum::http::Method) -> &str {
    use axum::http::Method;
    const KNOWN: [Method; 9] = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
        Method::OPTIONS,
        Method::CONNECT,
        Method::TRACE,
    ];
    if KNOWN.contains(method) {
        method.as_str()
    } else {
        OTHER_METHOD
    }
}

/// Middleware: times every request and records it under its matched route.
pub async fn record(
    State(metrics): State<Arc<HttpMetrics>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = method_label(request.method()).to_owned();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| UNMATCHED.to_owned(), |path| path.as_str().to_owned());
    let response = next.run(request).await;
    metrics.observe(
        &method,
        &route,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

/// `GET /metrics`.
pub async fn render(State(page): State<MetricsPage>) -> impl IntoResponse {
    let mut body = page
        .metrics
        .render(page.version, page.started.elapsed().as_secs());
    let _ = write_costs(&mut body, &page.costs);
    let _ = write_admission(&mut body, &page.admission);
    let _ = crate::heap::write_metrics(&mut body);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_histogram_are_rendered_by_route() {
        let metrics = HttpMetrics::default();
        metrics.observe("GET", "/healthz", 200, 0.0004);
        metrics.observe("GET", "/healthz", 200, 0.2);
        metrics.observe("GET", "/healthz", 503, 0.02);
        let text = metrics.render("1.2.3", 5);

        assert!(text.contains(
            "gpushare_http_requests_total{method=\"GET\",route=\"/healthz\",status=\"200\"} 2"
        ));
        assert!(text.contains(
            "gpushare_http_requests_total{method=\"GET\",route=\"/healthz\",status=\"503\"} 1"
        ));
        assert!(text.contains(
            "gpushare_http_request_duration_seconds_bucket{method=\"GET\",route=\"/healthz\",le=\"0.001\"} 1"
        ));
        assert!(text.contains(
            "gpushare_http_request_duration_seconds_bucket{method=\"GET\",route=\"/healthz\",le=\"0.025\"} 2"
        ));
        assert!(text.contains(
            "gpushare_http_request_duration_seconds_bucket{method=\"GET\",route=\"/healthz\",le=\"+Inf\"} 3"
        ));
        assert!(text.contains(
            "gpushare_http_request_duration_seconds_count{method=\"GET\",route=\"/healthz\"} 3"
        ));
        assert!(text.contains("gpushare_build_info{version=\"1.2.3\"} 1"));
    }

    #[test]
    fn made_up_methods_share_one_label() {
        use axum::http::Method;
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::TRACE), "TRACE");
        for made_up in ["BREW", "PROPFIND", "X-12345"] {
            let method = Method::from_bytes(made_up.as_bytes()).expect("a token");
            assert_eq!(method_label(&method), OTHER_METHOD, "{made_up}");
        }
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
