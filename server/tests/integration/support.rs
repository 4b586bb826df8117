//! What several test files need: temporary directories and a real PostgreSQL server.

#![allow(dead_code)]

use std::{path::PathBuf, process::Command};

/// Serves `emulator` on a loopback port; the console's SDK clients for it.
pub async fn serve(emulator: &emulator::Emulator) -> gpushare::aws::Clients {
    let addr = emulator
        .clone()
        .spawn("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let mut clients = gpushare::aws::Clients::new(&gpushare::aws::Target::Emulator {
        endpoint: format!("http://{addr}"),
    })
    .await;
    // The emulator's events queue, when it routes events to one.
    clients.events_queue_url = emulator
        .events_queue()
        .map(|queue| format!("http://{addr}{}", queue.path()));
    clients
}

/// A console on its embedded demo emulator, as `gpushare serve` starts it with no flags, its site
/// root and audit log in a fresh temporary directory: its state, the emulator, the directory.
pub async fn console_with_emulator(
    what: &str,
) -> (gpushare::AppState, emulator::Emulator, PathBuf) {
    let site = temp_dir(what);
    std::fs::create_dir_all(site.join("pkg")).expect("a site root");
    let args = gpushare::config::ServeArgs {
        site_root: site.clone(),
        ..gpushare::config::ServeArgs::default()
    };
    let (source, clients, emulator) = gpushare::connect_fleet_with_emulator(&args.fleet)
        .await
        .expect("the embedded emulator starts");
    let audit = gpushare::audit::SqlAuditLog::open(None, &site.join("data"))
        .await
        .expect("the audit log opens");
    let state = gpushare::startup::start(&args, source, clients, std::sync::Arc::new(audit))
        .expect("a console starts");
    (state, emulator.expect("the embedded emulator"), site)
}

/// Attempts of one ECS operation the clients made so far.
pub fn ecs_calls(clients: &gpushare::aws::Clients, operation: &str) -> u64 {
    clients
        .calls
        .attempts()
        .iter()
        .filter(|(service, op, ..)| service == "ecs" && op == operation)
        .map(|(.., n)| *n)
        .sum()
}

/// A fresh directory under the system's temporary directory.
pub fn temp_dir(what: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "gpushare-{what}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    // An earlier run whose process had the same id may have left this very directory behind.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A PostgreSQL server in a temporary directory, started from Debian's binaries and stopped
/// when dropped.
pub struct Postgres {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    as_root: bool,
}

impl Postgres {
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if self.as_root {
            // PostgreSQL refuses to run as root: run it as the postgres user.
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(path);
            command
        } else {
            Command::new(path)
        }
    }

    pub fn start() -> Postgres {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL is installed (scripts/setup.sh installs Debian's postgresql)")
            .filter_map(Result::ok)
            .map(|entry| entry.path().join("bin"))
            .find(|bin| bin.join("initdb").exists())
            .expect("an initdb under /usr/lib/postgresql/*/bin");
        let root = temp_dir("postgres");
        let data = root.join("data");
        let as_root = Command::new("id")
            .arg("-u")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
            .unwrap_or(false);
        if as_root {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&root)
                .status()
                .expect("chown");
            assert!(status.success());
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let server = Postgres {
            bin,
            data,
            port,
            as_root,
        };
        let output = server
            .command("initdb")
            .args(["-A", "trust", "-U", "gpushare", "--no-sync", "-D"])
            .arg(&server.data)
            .output()
            .expect("initdb runs");
        assert!(output.status.success(), "initdb: {output:?}");
        let output = server
            .command("pg_ctl")
            .arg("-D")
            .arg(&server.data)
            .arg("-o")
            .arg(format!(
                "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
                root.display()
            ))
            .arg("-l")
            .arg(root.join("log"))
            .args(["-w", "start"])
            .output()
            .expect("pg_ctl runs");
        assert!(output.status.success(), "pg_ctl start: {output:?}");
        server
    }

    pub fn url(&self) -> String {
        format!("postgres://gpushare@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "stop"])
            .output();
    }
}
