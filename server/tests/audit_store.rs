//! The audit log's store on both of its backends: SQLite in a temporary data directory, and a
//! real PostgreSQL server started from Debian's binaries for the test.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use app::model::audit::{AuditAction, AuditFilter, AuditIntent, AuditOutcome};
use gpushare::audit::SqlAuditLog;

fn temp_dir(what: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "gpushare-{what}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn intent(resource: &str) -> AuditIntent {
    AuditIntent {
        actor: "local".into(),
        action: AuditAction::Deploy,
        resource: resource.into(),
        from_revision: Some("embed:1".into()),
        to_revision: Some("embed:2".into()),
        diff: "[]".into(),
        pre_check: Some("completes".into()),
        description: Some("it's \"quoted\"; DROP TABLE audit_log; --".into()),
    }
}

/// What every backend must do.
async fn check_store(log: &SqlAuditLog) {
    let first = log.insert(&intent("prod/embed")).await.expect("insert");
    let second = log.insert(&intent("prod/rerank")).await.expect("insert");
    let pending = log.one(&first).await.expect("get").expect("found");
    assert_eq!(pending.outcome, "pending");
    assert_eq!(pending.action, AuditAction::Deploy);
    assert_eq!(pending.description, intent("x").description, "text is data");
    log.update(
        &first,
        &AuditOutcome {
            outcome: "in_progress".into(),
            request_id: Some("req-1".into()),
            deployment_id: Some("ecs-svc/1".into()),
            ..AuditOutcome::default()
        },
    )
    .await
    .expect("update");
    log.update(
        &first,
        &AuditOutcome {
            outcome: "rolled_back".into(),
            detail: Some("circuit breaker".into()),
            ..AuditOutcome::default()
        },
    )
    .await
    .expect("update");
    let done = log.one(&first).await.expect("get").expect("found");
    assert_eq!(done.outcome, "rolled_back");
    assert_eq!(done.request_id.as_deref(), Some("req-1"), "kept");
    assert_eq!(done.deployment_id.as_deref(), Some("ecs-svc/1"), "kept");
    assert_eq!(done.detail.as_deref(), Some("circuit breaker"));
    let all = log.select(&AuditFilter::default()).await.expect("list");
    assert_eq!(
        all.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        [second.as_str(), first.as_str()],
        "newest first"
    );
    let filtered = log
        .select(&AuditFilter {
            resource: Some("rerank".into()),
            outcome: Some("pending".into()),
            action: Some("deploy".into()),
            limit: Some(5),
        })
        .await
        .expect("filter");
    assert_eq!(filtered.len(), 1);
    assert_eq!(filtered[0].id, second);
    let none = log
        .select(&AuditFilter {
            action: Some("register".into()),
            ..AuditFilter::default()
        })
        .await
        .expect("filter");
    assert!(none.is_empty());
    assert!(log.one("nope").await.expect("get").is_none());

    assert!(log.take_lock("prod/embed", &first).await.expect("lock"));
    assert!(
        !log.take_lock("prod/embed", &second).await.expect("lock"),
        "held"
    );
    assert!(
        log.take_lock("prod/other", &second).await.expect("lock"),
        "per service"
    );
    log.release_lock("prod/embed").await.expect("unlock");
    assert!(
        log.take_lock("prod/embed", &second).await.expect("lock"),
        "free again"
    );

    // Many takers at once: exactly one wins.
    let takers: Vec<_> = (0..8)
        .map(|n| {
            let log = log.clone();
            tokio::spawn(async move { log.take_lock("prod/race", &format!("t{n}")).await })
        })
        .collect();
    let mut won = 0;
    for taker in takers {
        if taker.await.expect("joined").expect("lock") {
            won += 1;
        }
    }
    assert_eq!(won, 1);
}

#[tokio::test]
async fn the_store_works_on_sqlite() {
    let dir = temp_dir("audit-sqlite");
    let log = SqlAuditLog::open(None, &dir).await.expect("opens");
    assert_eq!(log.backend, "sqlite");
    check_store(&log).await;
    // Opening again applies no migration twice and keeps the records.
    let again = SqlAuditLog::open(None, &dir).await.expect("opens again");
    assert_eq!(
        again
            .select(&AuditFilter::default())
            .await
            .expect("list")
            .len(),
        2
    );
}

/// A PostgreSQL server in a temporary directory, stopped when dropped.
struct Postgres {
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

    fn start() -> Postgres {
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

    fn url(&self) -> String {
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

#[tokio::test]
async fn the_store_works_on_postgresql() {
    let server = Postgres::start();
    let log = SqlAuditLog::open(Some(&server.url()), Path::new("/nonexistent"))
        .await
        .expect("opens");
    assert_eq!(log.backend, "postgres");
    check_store(&log).await;
    let again = SqlAuditLog::open(Some(&server.url()), Path::new("/nonexistent"))
        .await
        .expect("opens again");
    assert_eq!(
        again
            .select(&AuditFilter::default())
            .await
            .expect("list")
            .len(),
        2
    );
}

#[tokio::test]
async fn a_database_url_of_another_kind_is_refused() {
    let error = SqlAuditLog::open(Some("mysql://x"), Path::new("/tmp"))
        .await
        .err()
        .expect("refused");
    assert!(error.to_string().contains("postgres:// or sqlite://"));
}
