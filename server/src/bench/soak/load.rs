//! The soak's readers: live-update streams held open, pages and JSON API reads at a steady
//! rate (a busy morning's mix), and the console's resident memory sampled.

use std::{
    collections::BTreeMap,
    sync::{
        atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use http_body_util::BodyExt as _;
use rand::{Rng as _, SeedableRng as _};

use super::http::{Http, Person};

/// What every part of the soak shares.
pub struct Shared {
    pub http: Http,
    /// The console's base URL (the same across its restart).
    pub base: String,
    /// Set when the run is over.
    pub stop: tokio::sync::watch::Receiver<bool>,
    /// Set from the kill until the restarted console has its first snapshot.
    pub down: AtomicBool,
    /// The console's process id.
    pub pid: AtomicU32,
    /// The services of the fleet: (cluster, service, family, team).
    pub services: Vec<(String, String, String, String)>,
    pub started: Instant,
}

impl Shared {
    pub fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    pub fn down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }
}

/// What one kind of read is and how often it comes in a hundred.
struct Kind {
    name: &'static str,
    page: bool,
    weight: u32,
}

const KINDS: [Kind; 16] = [
    Kind {
        name: "fleet page",
        page: true,
        weight: 6,
    },
    Kind {
        name: "fleet page zoomed to a cluster and team",
        page: true,
        weight: 6,
    },
    Kind {
        name: "service page",
        page: true,
        weight: 8,
    },
    Kind {
        name: "deployments page",
        page: true,
        weight: 4,
    },
    Kind {
        name: "task definitions page",
        page: true,
        weight: 4,
    },
    Kind {
        name: "audit page",
        page: true,
        weight: 4,
    },
    Kind {
        name: "cost page",
        page: true,
        weight: 3,
    },
    Kind {
        name: "GET /api/v1/services",
        page: false,
        weight: 12,
    },
    Kind {
        name: "GET /api/v1/task-definitions",
        page: false,
        weight: 8,
    },
    Kind {
        name: "GET /api/v1/task-definitions/{family}",
        page: false,
        weight: 10,
    },
    Kind {
        name: "GET /api/v1/audit",
        page: false,
        weight: 8,
    },
    Kind {
        name: "GET /api/v1/cost",
        page: false,
        weight: 6,
    },
    Kind {
        name: "GET /api/v1/budgets",
        page: false,
        weight: 6,
    },
    Kind {
        name: "GET /api/v1/approvals",
        page: false,
        weight: 5,
    },
    Kind {
        name: "GET /api/v1/fleet?cluster=",
        page: false,
        weight: 2,
    },
    Kind {
        name: "GET /api/v1/clusters/{c}/events",
        page: false,
        weight: 4,
    },
];

/// The path of one read of kind `k`.
fn path(k: usize, shared: &Shared, rng: &mut rand::rngs::StdRng) -> String {
    let (cluster, service, family, team) =
        &shared.services[rng.random_range(0..shared.services.len())];
    match k {
        0 => "/".into(),
        1 => format!("/?cluster={cluster}&team={team}"),
        2 => format!("/deployments/{cluster}/{service}"),
        3 => format!("/deployments?cluster={cluster}"),
        4 => "/task-definitions".into(),
        5 => "/audit".into(),
        6 => "/cost".into(),
        7 => format!("/api/v1/services?cluster={cluster}"),
        8 => "/api/v1/task-definitions".into(),
        9 => format!("/api/v1/task-definitions/{family}"),
        10 => "/api/v1/audit?limit=50".into(),
        11 => "/api/v1/cost?period=now".into(),
        12 => "/api/v1/budgets".into(),
        13 => "/api/v1/approvals".into(),
        14 => format!("/api/v1/fleet?cluster={cluster}"),
        _ => format!("/api/v1/clusters/{cluster}/events?limit=20"),
    }
}

/// The reads' tally.
#[derive(Default)]
pub struct Reads {
    /// Milliseconds of answered reads, by kind.
    pub times: BTreeMap<&'static str, Vec<f64>>,
    /// Pages' and the API's milliseconds apart.
    pub pages: Vec<f64>,
    pub api: Vec<f64>,
    pub statuses: BTreeMap<u16, u64>,
    /// Reads that got no answer while the console was up.
    pub failed: u64,
    /// Reads begun or ended while the console was down for its restart.
    pub during_restart: u64,
    /// Reads not sent because too many were in flight (the console could not keep up).
    pub shed: u64,
    /// Reads the console refused at once as busy (`503` with `Retry-After`): more were asked
    /// than it answers at a time and lets wait. Their times are not in the percentiles.
    pub busy: u64,
    pub sent: u64,
    /// 500s (a fault of the console's own), and 5xx answers that do not say why, while the
    /// console was up. A 502, 503 or 504 that says what AWS did is the console's answer to a
    /// fault it could not hide: a read with no earlier answer to show instead.
    pub internal: u64,
    /// Examples of 5xx answers while the console was up.
    pub errors: Vec<String>,
    /// 5xx answers while the console was up, by the reason they give.
    pub reasons: BTreeMap<String, u64>,
}

impl Reads {
    /// Counts one answered read of kind `k`: its status, whether it says why, its reason, and
    /// its time (a refusal as busy is counted apart, without its time).
    fn tally(&mut self, url: &str, k: usize, answer: &super::http::Answer) {
        *self.statuses.entry(answer.status).or_default() += 1;
        let says_why = answer.json().is_some_and(|j| {
            j["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        }) || String::from_utf8_lossy(&answer.body).contains("<main");
        let internal = answer.status == 500 || (answer.status > 500 && !says_why);
        self.internal += u64::from(internal);
        if answer.status > 500 {
            let why = reason(&String::from_utf8_lossy(&answer.body));
            *self.reasons.entry(why).or_default() += 1;
        }
        // Every kind of 5xx is worth an example; the console's own faults first.
        if (internal && self.errors.len() < 20) || (answer.status > 500 && self.errors.len() < 5) {
            let text = String::from_utf8_lossy(&answer.body);
            let text: String = text.chars().take(200).collect();
            self.errors.push(format!("{url}: {} {text}", answer.status));
        }
        if is_busy(answer) {
            self.busy += 1;
            return;
        }
        let ms = answer.took.as_secs_f64() * 1000.0;
        self.times.entry(KINDS[k].name).or_default().push(ms);
        if KINDS[k].page {
            self.pages.push(ms);
        } else {
            self.api.push(ms);
        }
    }
}

/// The reason a 5xx answer gives, short enough to count like answers together: a JSON error's
/// message, or the first of the console's refusals a page shows, up to its first `;`.
pub fn reason(body: &str) -> String {
    let message = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|j| j["error"]["message"].as_str().map(str::to_string));
    let text = match message {
        Some(message) => message,
        None => {
            const REFUSALS: [&str; 5] = [
                "The console is busy",
                "ECS is throttling",
                "the console's share",
                "the console is still reading",
                "ECS answered",
            ];
            let at = REFUSALS.iter().filter_map(|r| body.find(r)).min();
            match at {
                Some(at) => body[at..].to_string(),
                None => return "a page without a known reason".into(),
            }
        }
    };
    let end = text.find([';', '<']).unwrap_or(text.len());
    text[..end].chars().take(120).collect()
}

/// Whether an answer is the console's refusal of a read as busy.
fn is_busy(answer: &super::http::Answer) -> bool {
    answer.status == 503
        && (answer.json().is_some_and(|j| j["error"]["code"] == "busy")
            || String::from_utf8_lossy(&answer.body).contains("The console is busy"))
}

/// Reads in flight at most; more are counted as shed.
const IN_FLIGHT: usize = 2_000;

/// Reads at `rate` a second until the run stops.
pub async fn readers(shared: Arc<Shared>, rate: u32, seed: u64, reads: Arc<Mutex<Reads>>) {
    let total: u32 = KINDS.iter().map(|k| k.weight).sum();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate.max(1))));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let in_flight = Arc::new(AtomicUsize::new(0));
    let mut n: u64 = 0;
    while !shared.stopped() {
        tick.tick().await;
        n += 1;
        let mut roll = rng.random_range(0..total);
        let k = KINDS
            .iter()
            .position(|kind| {
                if roll < kind.weight {
                    true
                } else {
                    roll -= kind.weight;
                    false
                }
            })
            .unwrap_or(0);
        if in_flight.load(Ordering::Relaxed) >= IN_FLIGHT {
            reads.lock().unwrap_or_else(|p| p.into_inner()).shed += 1;
            continue;
        }
        let url = format!("{}{}", shared.base, path(k, &shared, &mut rng));
        let person = Person::new(format!("viewer-{:02}", n % 50), "soak-viewers");
        let (shared, reads, in_flight) = (shared.clone(), reads.clone(), in_flight.clone());
        in_flight.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            let down_before = shared.down();
            let answer = shared.http.get(&url, Some(&person)).await;
            let down = down_before || shared.down();
            in_flight.fetch_sub(1, Ordering::Relaxed);
            let mut reads = reads.lock().unwrap_or_else(|p| p.into_inner());
            reads.sent += 1;
            if down {
                reads.during_restart += 1;
                return;
            }
            match answer {
                Ok(answer) => reads.tally(&url, k, &answer),
                Err(_) => reads.failed += 1,
            }
        });
    }
}

/// The streams' tally.
#[derive(Default)]
pub struct Streams {
    pub opened: AtomicU64,
    /// Opening answered with something else than 200 (by status).
    pub refused: Mutex<BTreeMap<u16, u64>>,
    /// Ended or broken while the console was up.
    pub dropped: AtomicU64,
    /// Ended by the console's kill.
    pub dropped_by_restart: AtomicU64,
    /// Live updates received.
    pub events: AtomicU64,
    /// Open at the run's end.
    pub open_at_end: AtomicU64,
}

/// One person's live-update stream, held open and opened again when it ends.
pub async fn stream(shared: Arc<Shared>, n: u32, streams: Arc<Streams>) {
    let person = Person::new(format!("watcher-{n:03}"), "soak-viewers");
    let url = format!("{}/api/v1/fleet/events", shared.base);
    let mut stop = shared.stop.clone();
    while !shared.stopped() {
        let opened = shared.http.open(&url, &person).await;
        match opened {
            Ok(answer) if answer.status() == 200 => {
                streams.opened.fetch_add(1, Ordering::Relaxed);
                let mut body = answer.into_body();
                loop {
                    tokio::select! {
                        frame = body.frame() => match frame {
                            Some(Ok(_)) => {
                                streams.events.fetch_add(1, Ordering::Relaxed);
                            }
                            _ => {
                                if shared.down() {
                                    streams.dropped_by_restart.fetch_add(1, Ordering::Relaxed);
                                } else if !shared.stopped() {
                                    streams.dropped.fetch_add(1, Ordering::Relaxed);
                                }
                                break;
                            }
                        },
                        _ = stop.changed() => {
                            streams.open_at_end.fetch_add(1, Ordering::Relaxed);
                            return;
                        }
                    }
                }
            }
            Ok(answer) => {
                *streams
                    .refused
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .entry(answer.status().as_u16())
                    .or_default() += 1;
            }
            Err(_) => {}
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// One sample of the console's memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Seconds into the run.
    pub at: f64,
    /// The console's life (1, then 2 after the restart).
    pub life: u32,
    /// Its resident set, from `/proc`.
    pub resident: u64,
    /// The heap it holds, from its `/metrics` (`None` when it did not answer in time, or does not
    /// count it).
    pub heap: Option<u64>,
}

/// The console's memory every second: its resident set, and the heap it says it holds.
pub async fn memory(shared: Arc<Shared>, lives: Arc<AtomicU32>, samples: Arc<Mutex<Vec<Sample>>>) {
    let metrics = format!("{}/metrics", shared.base);
    while !shared.stopped() {
        if !shared.down() {
            let heap =
                tokio::time::timeout(Duration::from_millis(500), shared.http.get(&metrics, None))
                    .await
                    .ok()
                    .and_then(|answer| answer.ok())
                    .and_then(|answer| live_heap(&answer.body));
            if let Some(resident) = super::procs::resident(shared.pid.load(Ordering::SeqCst)) {
                samples
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(Sample {
                        at: shared.started.elapsed().as_secs_f64(),
                        life: lives.load(Ordering::SeqCst),
                        resident,
                        heap,
                    });
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// `gpushare_heap_live_bytes` in a `/metrics` page.
pub(crate) fn live_heap(metrics: &[u8]) -> Option<u64> {
    std::str::from_utf8(metrics)
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("gpushare_heap_live_bytes "))?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::{live_heap, reason};

    #[test]
    fn the_live_heap_is_read_from_the_metrics_page() {
        let page =
            "# HELP gpushare_heap_live_bytes Bytes …\n# TYPE gpushare_heap_live_bytes gauge\n\
                    gpushare_heap_live_bytes 104857600\nprocess_resident_memory_bytes 2\n";
        assert_eq!(live_heap(page.as_bytes()), Some(104_857_600));
        assert_eq!(live_heap(b"process_resident_memory_bytes 2\n"), None);
        assert_eq!(live_heap(b"gpushare_heap_live_bytes lots\n"), None);
    }

    #[test]
    fn a_refusal_is_counted_by_its_reason_up_to_the_first_semicolon() {
        let json = r#"{"error":{"code":"unavailable","message":"ECS is throttling requests (ListTasks: Rate exceeded); try again"}}"#;
        assert_eq!(
            reason(json),
            "ECS is throttling requests (ListTasks: Rate exceeded)"
        );
        let page =
            "<html><main><p class=\"banner error\">the console's share of ECS's request rate for \
                    DescribeServices is in use; try again</p></main></html>";
        assert_eq!(
            reason(page),
            "the console's share of ECS's request rate for DescribeServices is in use"
        );
        assert_eq!(reason("<html>oops</html>"), "a page without a known reason");
    }
}
