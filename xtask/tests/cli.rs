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
fn fuzz_with_an_unknown_target_names_the_known_ones() {
    let out = xtask(&["fuzz", "--target", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(
        err,
        "xtask: error: --target: no fuzz target named \"nope\"; known: trap, hypercall, vgic, \
         vgic_v2, pl011, console, testdev, config, ivc, bundle, accel\n"
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

#[test]
fn linux_cmd_with_native_freertos_is_refused() {
    let out = xtask(&["run", "--native", "freertos", "--linux-cmd", "ls"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "xtask: error: --linux-cmd: the FreeRTOS guest has no shell; use it with --native linux, --xen or a configuration with a Linux VM\n"
    );
}

#[test]
fn append_with_native_linux_is_refused() {
    let out = xtask(&["run", "--native", "linux", "--append", "mode=x"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "xtask: error: --append: only for --native freertos; the Linux guest's command line comes from --linux-cmd and the initramfs\n"
    );
}

#[test]
fn append_without_native_is_refused() {
    let out = xtask(&["run", "--append", "mode=x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with(
            "error: the following required arguments were not provided:\n  --native <GUEST>\n"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn xen_and_native_together_are_refused() {
    let out = xtask(&["run", "--xen", "--native", "linux"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out)
            .starts_with("error: the argument '--xen' cannot be used with '--native <GUEST>'\n"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn xen_with_a_configuration_is_refused() {
    let out = xtask(&["run", "--xen", "--config", "configs/default.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out)
            .starts_with("error: the argument '--xen' cannot be used with '--config <FILE>'\n"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_unknown_cpu_model_names_the_known_ones() {
    let out = xtask(&["run", "--cpu", "pentium"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with(
            "error: invalid value 'pentium' for '--cpu <CPU>'\n  [possible values: cortex-a72, cortex-a53, max]\n"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_timeout_that_is_not_a_number_is_refused() {
    let out = xtask(&["run", "--timeout", "soon"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with(
            "error: invalid value 'soon' for '--timeout <SECS>': invalid digit found in string\n"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn check_config_of_a_missing_file_says_so() {
    let out = xtask(&["check-config", "/nonexistent/partita.toml"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "/nonexistent/partita.toml: cannot read: No such file or directory (os error 2)\n"
    );
}

#[test]
fn an_unknown_task_is_refused() {
    let out = xtask(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error: unrecognized subcommand 'frobnicate'\n"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn freertos_domu_without_xen_is_refused() {
    let out = xtask(&["run", "--freertos-domu", "rt.samples=10"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out)
            .starts_with("error: the following required arguments were not provided:\n  --xen\n"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn no_dom0_without_a_domu_is_refused() {
    let out = xtask(&["run", "--xen", "--no-dom0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with(
            "error: the following required arguments were not provided:\n  --freertos-domu <ARGS>\n"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn no_dom0_with_a_linux_job_is_refused() {
    let out = xtask(&[
        "run",
        "--xen",
        "--freertos-domu",
        "x",
        "--no-dom0",
        "--linux-cmd",
        "ls",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with(
            "error: the argument '--no-dom0' cannot be used with '--linux-cmd <CMD>'\n"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bench_only_with_an_unknown_configuration_names_the_known_ones() {
    let out = xtask(&["bench", "--quick", "--only", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with(
            "xtask: error: --only: no configuration named \"nope\"; known: native, solo, "
        ),
        "{err}"
    );
    assert!(err.contains(", xen-shared-irqstorm"), "{err}");
}

#[test]
fn bench_with_no_jobs_is_refused() {
    let out = xtask(&["bench", "--quick", "--jobs", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out)
            .starts_with("error: invalid value '0' for '--jobs <N>': 0 is not in 1..=256\n"),
        "{}",
        stderr(&out)
    );
}
