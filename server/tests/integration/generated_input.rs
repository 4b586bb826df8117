//! Generated input for every parser of outside input, a bounded number of cases each (the
//! longer run is `gpushare bench fuzz`): no panic, no 500, every refusal a 4xx with a message,
//! none slower than 100 ms.

use gpushare::fuzz::{Fuzzer, Target};

/// Cases of each target in the test command.
const CASES: u64 = 150;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_input_gets_an_answer_or_a_clear_refusal_never_a_panic() {
    let (state, emulator, site) = crate::support::console_with_emulator("generated").await;
    let mut fuzzer = Fuzzer::new(gpushare::router(state), emulator.router(), 7).await;
    let mut wrong = Vec::new();
    for target in Target::ALL {
        let tally = fuzzer.run(target, CASES).await;
        assert_eq!(tally.cases, CASES);
        // Valid input mutated: some of it is still good and gets past every check.
        if [Target::PriceFiles, Target::AlbTokens, Target::OidcCallbacks].contains(&target) {
            let accepted = tally.cases - tally.refused - tally.failed;
            assert!(accepted > 0, "{}: none accepted", target.name());
            assert!(tally.refused > 0, "{}: none refused", target.name());
        }
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
