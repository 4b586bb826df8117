//! Unit tests of the `config` module.

use super::*;
use clap::CommandFactory;

#[test]
fn cli_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn no_command_means_serve_with_its_flags() {
    let cli = Cli::try_parse_from(["gpushare", "--listen", "127.0.0.1:9999"]).expect("parses");
    assert!(cli.command.is_none());
    assert_eq!(cli.serve.listen, SocketAddr::from(([127, 0, 0, 1], 9999)));
}

#[test]
fn serve_subcommand_takes_the_same_flags() {
    let cli = Cli::try_parse_from([
        "gpushare",
        "serve",
        "--listen",
        "0.0.0.0:8080",
        "--log-format",
        "json",
    ])
    .expect("parses");
    let Some(Command::Serve(args)) = cli.command else {
        panic!("expected serve")
    };
    assert_eq!(args.listen.port(), 8080);
    assert_eq!(cli.log_format, LogFormat::Json);
}

#[test]
fn the_emulator_is_the_default_and_aws_flags_switch_it_off() {
    let cli = Cli::try_parse_from(["gpushare"]).expect("parses");
    assert!(!cli.serve.fleet.uses_aws());
    assert_eq!(cli.serve.fleet.emulator.scenario, "demo");
    assert_eq!(
        cli.serve.access.demo_policy, "on",
        "the demo runs with its policy unless told"
    );
    let error = Cli::try_parse_from(["gpushare", "--demo-policy", "no"]).expect_err("on or off");
    assert!(error.to_string().contains("off"), "{error}");
    let cli = Cli::try_parse_from(["gpushare", "serve", "--region", "eu-west-1"]).expect("parses");
    let Some(Command::Serve(args)) = cli.command else {
        panic!("expected serve")
    };
    assert!(args.fleet.uses_aws());
    let error = Cli::try_parse_from(["gpushare", "--scenario", "huge"]).expect_err("must fail");
    assert!(error.to_string().contains("demo"), "{error}");
}

#[test]
fn the_cpu_and_memory_share_is_a_percent_up_to_90() {
    let cli = Cli::try_parse_from(["gpushare", "--cost-host-share", "15%"]).expect("parses");
    assert_eq!(cli.serve.cost_host_share, 15.0);
    assert_eq!(
        Cli::try_parse_from(["gpushare"])
            .expect("parses")
            .serve
            .cost_host_share,
        0.0
    );
    for bad in ["95", "-1", "a lot", "NaN"] {
        let flag = format!("--cost-host-share={bad}");
        let error = Cli::try_parse_from(["gpushare", flag.as_str()]).expect_err("must fail");
        assert!(
            error.to_string().contains("give a percent from 0 to 90"),
            "{bad}: {error}"
        );
    }
}

#[test]
fn emulate_takes_scenario_seed_speed_and_faults() {
    let cli = Cli::try_parse_from([
        "gpushare",
        "emulate",
        "--scenario",
        "large",
        "--seed",
        "9",
        "--clock-speed",
        "60",
        "--fault",
        "*:latency=40",
        "--fault",
        "DescribeTasks:throttle=0.5",
    ])
    .expect("parses");
    let Some(Command::Emulate(args)) = cli.command else {
        panic!("expected emulate")
    };
    assert_eq!(args.listen.port(), 4566);
    let faults = args.emulator.faults().expect("valid faults");
    assert_eq!(faults.for_operation("ListTasks").latency_ms, 40);
    assert_eq!(faults.for_operation("DescribeTasks").throttle_rate, 0.5);
    let bad =
        Cli::try_parse_from(["gpushare", "emulate", "--fault", "X:throttle=5"]).expect("parses");
    let Some(Command::Emulate(args)) = bad.command else {
        panic!("expected emulate")
    };
    assert!(args
        .emulator
        .faults()
        .expect_err("invalid")
        .contains("between 0 and 1"));
    let error =
        Cli::try_parse_from(["gpushare", "emulate", "--clock-speed", "0"]).expect_err("must fail");
    assert!(error.to_string().contains("clock speed"), "{error}");
}

#[test]
fn bad_values_are_rejected_with_the_flag_named() {
    let error =
        Cli::try_parse_from(["gpushare", "--listen", "not-an-address"]).expect_err("must fail");
    assert!(error.to_string().contains("--listen"), "{error}");
    let error = Cli::try_parse_from(["gpushare", "--request-timeout", "0"]).expect_err("must fail");
    assert!(error.to_string().contains("--request-timeout"), "{error}");
}
