//! The soak's two processes: `gpushare emulate` (which outlives the console) and `gpushare
//! serve` against it, killed and started again on the same data directory.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::Context as _;

use super::http::{Http, Person};

/// A free loopback port.
pub(crate) fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// A log file for a child's output (its standard output and error both).
fn log_file(path: &Path) -> anyhow::Result<(std::process::Stdio, std::process::Stdio)> {
    let file = std::fs::File::options()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok((file.try_clone()?.into(), file.into()))
}

/// Waits until `ready` says so, or fails after `limit` saying what it waited for.
pub(crate) async fn wait_for<F, Fut>(
    what: &str,
    limit: Duration,
    mut ready: F,
) -> anyhow::Result<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !ready().await {
        anyhow::ensure!(
            started.elapsed() < limit,
            "{what} was not ready after {} s",
            limit.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(started.elapsed())
}

/// `gpushare emulate` on a free port.
pub struct Emulator {
    _child: Option<tokio::process::Child>,
    pub base: String,
}

impl Emulator {
    pub async fn start(http: &Http, scenario: &str, seed: u64, dir: &Path) -> anyhow::Result<Self> {
        let address = format!("127.0.0.1:{}", free_port()?);
        let log = log_file(&dir.join("emulator.log"))?;
        let child = tokio::process::Command::new(std::env::current_exe()?)
            .args(["emulate", "--listen", &address, "--scenario", scenario])
            // ECS's clock and the console's agree, as on AWS: a reconcile tells a restart's
            // deployment from an earlier one by the time ECS made it.
            .args(["--seed", &seed.to_string(), "--clock-speed", "1"])
            .env("GPUSHARE_LOG", "warn")
            .stdout(log.0)
            .stderr(log.1)
            .kill_on_drop(true)
            .spawn()
            .context("cannot start gpushare emulate")?;
        let base = format!("http://{address}");
        let status = format!("{base}/_emulator/status");
        wait_for("the emulator", Duration::from_secs(300), || async {
            http.get(&status, None).await.is_ok_and(|a| a.status == 200)
        })
        .await?;
        Ok(Emulator {
            _child: Some(child),
            base,
        })
    }

    /// The emulator at `base`, to read from (another owns its process).
    pub fn reading(base: String) -> Emulator {
        Emulator { _child: None, base }
    }

    /// Sets the faults every AWS call meets.
    pub async fn set_faults(&self, http: &Http, faults: &emulator::Faults) -> anyhow::Result<()> {
        let answer = http
            .send(
                http::Method::PUT,
                &format!("{}/_emulator/faults", self.base),
                None,
                Some(&serde_json::to_value(faults)?),
            )
            .await?;
        anyhow::ensure!(
            answer.status == 200,
            "the emulator refused the faults: {}",
            String::from_utf8_lossy(&answer.body)
        );
        Ok(())
    }

    /// The emulator's own status: what it received and what faults it injected.
    pub async fn status(&self, http: &Http) -> anyhow::Result<emulator::Status> {
        let answer = http
            .get(&format!("{}/_emulator/status", self.base), None)
            .await?;
        anyhow::ensure!(
            answer.status == 200,
            "/_emulator/status answered {}",
            answer.status
        );
        Ok(serde_json::from_slice(&answer.body)?)
    }

    /// The writes received after the one numbered `since`.
    pub async fn writes_since(
        &self,
        http: &Http,
        since: u64,
    ) -> anyhow::Result<Vec<emulator::WriteRecord>> {
        let answer = http
            .get(
                &format!("{}/_emulator/writes?since={since}", self.base),
                None,
            )
            .await?;
        anyhow::ensure!(
            answer.status == 200,
            "/_emulator/writes answered {}",
            answer.status
        );
        Ok(serde_json::from_slice(&answer.body)?)
    }
}

/// `gpushare serve` against the emulator, behind a (pretended) sign-in proxy.
pub struct Console {
    /// The console, or heaptrack's script running it.
    child: tokio::process::Child,
    /// The console's own process.
    pub pid: u32,
    /// Whether it runs under heaptrack.
    heap_profile: bool,
    pub base: String,
    args: Vec<String>,
    dir: PathBuf,
    /// How many times it was started.
    pub lives: u32,
}

impl Console {
    pub async fn start(
        http: &Http,
        endpoint: &str,
        dir: &Path,
        heap_profile: bool,
    ) -> anyhow::Result<(Self, Duration)> {
        let address = format!("127.0.0.1:{}", free_port()?);
        let path = |p: &str| dir.join(p).display().to_string();
        let args: Vec<String> = [
            "serve",
            "--endpoint-url",
            endpoint,
            "--listen",
            &address,
            "--data-dir",
            &path("data"),
            "--auth",
            "proxy",
            "--trusted-proxy",
            "127.0.0.1",
            "--policy",
            &path("policy.toml"),
            "--reconcile-interval",
            "5",
            "--max-streams",
            "1000",
        ]
        .map(str::to_string)
        .to_vec();
        let mut console = Console {
            child: Self::spawn(&args, dir, 1, heap_profile)?,
            pid: 0,
            heap_profile,
            base: format!("http://{address}"),
            args,
            dir: dir.to_path_buf(),
            lives: 1,
        };
        console.pid = console.own_pid().await?;
        let took = console.ready(http).await?;
        Ok((console, took))
    }

    fn spawn(
        args: &[String],
        dir: &Path,
        life: u32,
        heap_profile: bool,
    ) -> anyhow::Result<tokio::process::Child> {
        let log = log_file(&dir.join(format!("console-{life}.log")))?;
        let exe = std::env::current_exe()?;
        let mut command = match heap_profile {
            true => {
                let mut command = tokio::process::Command::new("heaptrack");
                command
                    .arg("-o")
                    .arg(dir.join(format!("console-{life}")))
                    .arg(exe);
                command
            }
            false => tokio::process::Command::new(exe),
        };
        command
            .args(args)
            .env("AWS_ACCESS_KEY_ID", "emulator")
            .env("AWS_SECRET_ACCESS_KEY", "emulator")
            .env("AWS_REGION", "us-east-1")
            .env("GPUSHARE_LOG", "warn")
            .env(PURGE_DELAY, purge_delay())
            .stdout(log.0)
            .stderr(log.1)
            .kill_on_drop(true)
            .spawn()
            .context("cannot start gpushare serve")
    }

    /// Waits for the first fleet snapshot (a cluster that does not exist is then a 404).
    async fn ready(&self, http: &Http) -> anyhow::Result<Duration> {
        let url = format!("{}/api/v1/fleet?cluster=nothing-here", self.base);
        let viewer = Person::new("soak-probe", "soak-viewers");
        wait_for(
            "the console's first fleet snapshot",
            Duration::from_secs(300),
            || async {
                http.get(&url, Some(&viewer))
                    .await
                    .is_ok_and(|a| a.status == 404)
            },
        )
        .await
    }

    /// The console's own process: the child, or under heaptrack the child's child that runs
    /// this binary.
    async fn own_pid(&self) -> anyhow::Result<u32> {
        let child = self.child.id().context("the console exited at once")?;
        if !self.heap_profile {
            return Ok(child);
        }
        let exe = std::env::current_exe()?;
        let mut found = None;
        wait_for(
            "the console under heaptrack",
            Duration::from_secs(30),
            || {
                found = children(child).into_iter().find(|pid| {
                    std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|e| e == exe)
                });
                std::future::ready(found.is_some())
            },
        )
        .await?;
        found.context("the console under heaptrack did not start")
    }

    /// SIGKILL, as the kernel's OOM killer or a lost host would.
    pub async fn kill(&mut self) -> anyhow::Result<()> {
        if self.heap_profile {
            // The console itself; heaptrack's script then writes the profile out and ends.
            signal(self.pid, "KILL")?;
        } else {
            self.child.start_kill()?;
        }
        self.child.wait().await?;
        Ok(())
    }

    /// Starts it again on the same data directory: the time until its first snapshot.
    pub async fn restart(&mut self, http: &Http) -> anyhow::Result<Duration> {
        self.lives += 1;
        self.child = Self::spawn(&self.args, &self.dir, self.lives, self.heap_profile)?;
        self.pid = self.own_pid().await?;
        self.ready(http).await
    }

    /// Ends a console run under heaptrack (SIGTERM, so that it stops as it would in service)
    /// and waits for its profile to be written; the paths of the profiles.
    pub async fn stop_profiled(&mut self) -> anyhow::Result<Vec<PathBuf>> {
        if !self.heap_profile {
            return Ok(Vec::new());
        }
        signal(self.pid, "TERM")?;
        tokio::time::timeout(Duration::from_secs(300), self.child.wait())
            .await
            .context("heaptrack did not finish writing the profile within 5 minutes")??;
        Ok((1..=self.lives)
            .map(|life| self.dir.join(format!("console-{life}.zst")))
            .filter(|path| path.exists())
            .collect())
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The lines of its logs that tell of a panic.
    pub fn panics(&self) -> Vec<String> {
        (1..=self.lives)
            .filter_map(|life| {
                std::fs::read_to_string(self.dir.join(format!("console-{life}.log"))).ok()
            })
            .flat_map(|log| {
                log.lines()
                    .filter(|l| l.contains("panicked"))
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

/// The processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|c| c.parse().ok())
        .collect()
}

/// Sends a signal (`KILL`, `TERM`) to a process.
fn signal(pid: u32, name: &str) -> anyhow::Result<()> {
    let status = std::process::Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status()
        .context("cannot run kill")?;
    anyhow::ensure!(status.success(), "kill -{name} {pid} failed");
    Ok(())
}

/// Resident memory of process `pid`, in bytes.
pub fn resident(pid: u32) -> Option<u64> {
    status_bytes(pid, "VmRSS")
}

/// A size from `/proc/PID/status` (`VmRSS`, `RssAnon`, `RssFile`, `VmHWM`), in bytes.
pub fn status_bytes(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// The allocator's setting that `scripts/run.sh` makes: freed memory goes back to the system at
/// once rather than after 10 ms of the freeing thread's next allocations (see the README).
pub(crate) const PURGE_DELAY: &str = "MIMALLOC_PURGE_DELAY";

/// The console's purge delay: the soak's own environment's, else as `scripts/run.sh` sets it.
pub(crate) fn purge_delay() -> String {
    std::env::var(PURGE_DELAY).unwrap_or_else(|_| "0".to_string())
}
