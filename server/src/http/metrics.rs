//! Request counts and latencies by matched route, served at `/metrics` in Prometheus text format.

use std::{collections::BTreeMap, fmt::Write as _, sync::Mutex, time::Instant};

use axum::{
    extract::{MatchedPath, Request, State},
    http::header,
    middleware::Next,
    response::{IntoResponse, Response},
};

use crate::http::state::AppState;

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
pub async fn record(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(request.method()).to_owned();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| UNMATCHED.to_owned(), |path| path.as_str().to_owned());
    let response = next.run(request).await;
    state.metrics.observe(
        &method,
        &route,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

/// `GET /metrics`.
pub async fn render(State(state): State<AppState>) -> impl IntoResponse {
    let body = state.metrics.render(
        state.services.version,
        state.services.started.elapsed().as_secs(),
    );
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
