//! Generated input for every parser of outside input, a bounded number of cases each (the
//! longer run is `gpushare bench fuzz`): no panic, no 500, every refusal a 4xx with a message,
//! none slower than 100 ms.

use gpushare::fuzz::{Fuzzer, Target};

/// Cases of each target in the test command.
const CASES: u64 = 150;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_input_gets_an_answer_or_a_clear_refusal_never_a_panic() {
    let site = std::env::temp_dir().join(format!("gpushare-generated-{}", std::process::id()));
    std::fs::create_dir_all(site.join("pkg")).expect("a site root");
    let args = gpushare::config::ServeArgs {
        site_root: site.clone(),
        ..gpushare::config::ServeArgs::default()
    };
    let (source, clients, emulator) = gpushare::connect_fleet_with_emulator(&args.fleet)
        .await
        .expect("the embedded emulator starts");
    let emulator = emulator.expect("the embedded emulator");
    let audit = gpushare::audit::SqlAuditLog::open(None, &site.join("data"))
        .await
        .expect("the audit log opens");
    let state = gpushare::startup::start(&args, source, clients, std::sync::Arc::new(audit))
        .expect("a console starts");
    let mut fuzzer = Fuzzer::new(gpushare::router(state), emulator.router(), 7).await;
    let mut wrong = Vec::new();
    for target in Target::ALL {
        let tally = fuzzer.run(target, CASES).await;
        assert_eq!(tally.cases, CASES);
        if tally.failed > 0 {
            wrong.push(format!(
                "{}: {} of {} went wrong:\n  {}",
                target.name(),
                tally.failed,
                tally.cases,
                tally.failures.join("\n  ")
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&site);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
