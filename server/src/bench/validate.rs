//! `gpushare bench validate`: the task definition checks on the worst bodies the body limit lets
//! through — time and memory of `POST /api/v1/task-definitions/validate` through the router.

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use axum::body::Body;
use http::Request;
use tower::ServiceExt;

use super::{mib, print_table, resident_bytes, Row};
use crate::config::BenchValidateArgs;

/// `{"family": "x", "containerDefinitions": [{}, {}, …]}` of about `bytes`.
fn empty_containers(bytes: usize) -> String {
    let head = r#"{"family":"x","containerDefinitions":["#;
    let count = (bytes - head.len() - 2) / 3;
    let mut body = String::with_capacity(bytes);
    body.push_str(head);
    for n in 0..count {
        body.push_str(if n == 0 { "{}" } else { ",{}" });
    }
    body.push_str("]}");
    body
}

/// One container with as many environment variables as fit in about `bytes`.
fn many_variables(bytes: usize) -> String {
    let mut body = String::from(
        r#"{"family":"x","containerDefinitions":[{"name":"a","image":"a","environment":["#,
    );
    let mut n = 0;
    while body.len() + 40 < bytes {
        if n > 0 {
            body.push(',');
        }
        body.push_str(&format!(r#"{{"name":"V{n}","value":"x"}}"#));
        n += 1;
    }
    body.push_str("]}]}");
    body
}

/// Arrays nested as deep as `bytes` allows.
fn nested(bytes: usize) -> String {
    let depth = (bytes - 60) / 2;
    format!(
        r#"{{"family":"x","containerDefinitions":{}{}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    )
}

/// The time and the peak growth of resident memory of one request.
async fn measure(app: &axum::Router, body: String) -> anyhow::Result<(Duration, u64, u16)> {
    let base = resident_bytes().unwrap_or(0);
    let peak = Arc::new(AtomicU64::new(base));
    let running = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, running) = (peak.clone(), running.clone());
        std::thread::spawn(move || {
            while running.load(Ordering::Relaxed) {
                peak.fetch_max(resident_bytes().unwrap_or(0), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let request = Request::post("/api/v1/task-definitions/validate")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))?;
    let started = Instant::now();
    let response = app.clone().oneshot(request).await?;
    let status = response.status().as_u16();
    let _ = axum::body::to_bytes(response.into_body(), usize::MAX).await?;
    let took = started.elapsed();
    running.store(false, Ordering::Relaxed);
    sampler
        .join()
        .map_err(|_| anyhow::anyhow!("the memory sampler stopped"))?;
    Ok((
        took,
        peak.load(Ordering::Relaxed).saturating_sub(base),
        status,
    ))
}

/// `gpushare bench validate`.
pub async fn validate(args: BenchValidateArgs) -> anyhow::Result<()> {
    let mut serve = crate::config::ServeArgs::default();
    serve.fleet.emulator.scenario = "empty".into();
    serve.body_limit = args.bytes;
    serve.request_timeout = 3600;
    let (source, clients) = crate::connect_fleet(&serve.fleet).await?;
    let dir = std::env::temp_dir().join(format!("gpushare-bench-validate-{}", std::process::id()));
    let audit = crate::audit::SqlAuditLog::open(None, &dir).await?;
    let app = crate::router(crate::startup::start(
        &serve,
        source,
        clients,
        Arc::new(audit),
    )?);
    let bytes = usize::try_from(args.bytes)?;
    let realistic = include_str!("../../tests/corpus/embed-api-mps.json").to_string();
    let cases = [
        ("a realistic MPS task definition (4 KB)", realistic),
        ("nested arrays", nested(bytes)),
        (
            "one container, many environment variables",
            many_variables(bytes),
        ),
        ("empty containers", empty_containers(bytes)),
    ];
    let mut rows = Vec::new();
    for (what, body) in cases {
        let size = body.len();
        let (took, memory, status) = measure(&app, body).await?;
        rows.push(Row {
            what: format!("{what}, {} KiB", size / 1024),
            value: format!(
                "{:.1} ms, +{} resident, answered {status}",
                took.as_secs_f64() * 1000.0,
                mib(memory)
            ),
        });
    }
    print_table(
        &format!("gpushare bench validate — POST /api/v1/task-definitions/validate, body limit {bytes} bytes"),
        &rows,
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
