//! Command-line mistakes through the real `xtask` binary: each must fail before doing any
//! work, with exit status 1 or clap's 2, and say exactly what is wrong.

use std::process::{Command, Output};

const XTASK: &str = env!("CARGO_BIN_EXE_xtask");

fn xtask(args: &[&str]) -> Output {
    Command::new(XTASK).args(args).output().expect("xtask runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn test_only_with_an_unknown_scenario_names_the_known_ones() {
    let out = xtask(&["test", "--only", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with(
            "xtask: error: --only: no scenario named \"nope\"; known: probe-cortex-a72, "
        ),
        "{err}"
    );
}

#[test]
fn scenario_with_an_unknown_name_names_the_known_ones() {
    let out = xtask(&["scenario", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with(
            "xtask: error: scenario: no scenario named \"nope\"; known: probe-cortex-a72, "
        ),
        "{err}"
    );
    assert!(err.contains(", hostile"), "{err}");
}
