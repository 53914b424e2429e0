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

/// Runs xtask with `args`, which must fail with exit status `code` and a message that
/// starts with `start`; returns the whole message.
fn refused(args: &[&str], code: i32, start: &str) -> String {
    let out = xtask(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(err.starts_with(start), "{err}");
    err
}

#[test]
fn test_only_with_an_unknown_scenario_names_the_known_ones() {
    refused(
        &["test", "--only", "nope"],
        1,
        "xtask: error: --only: no scenario named \"nope\"; known: probe-cortex-a72, ",
    );
}

#[test]
fn fuzz_with_an_unknown_target_names_the_known_ones() {
    assert_eq!(
        refused(&["fuzz", "--target", "nope"], 1, ""),
        "xtask: error: --target: no fuzz target named \"nope\"; known: trap, hypercall, vgic, \
         vgic_v2, pl011, console, testdev, config, ivc, bundle, accel\n"
    );
}

#[test]
fn scenario_with_an_unknown_name_names_the_known_ones() {
    let err = refused(
        &["scenario", "nope"],
        1,
        "xtask: error: scenario: no scenario named \"nope\"; known: probe-cortex-a72, ",
    );
    assert!(err.contains(", hostile"), "{err}");
}

#[test]
fn linux_cmd_with_native_freertos_is_refused() {
    assert_eq!(
        refused(&["run", "--native", "freertos", "--linux-cmd", "ls"], 1, ""),
        "xtask: error: --linux-cmd: the FreeRTOS guest has no shell; use it with --native linux, \
         --xen or a configuration with a Linux VM\n"
    );
}

#[test]
fn append_with_native_linux_is_refused() {
    assert_eq!(
        refused(&["run", "--native", "linux", "--append", "mode=x"], 1, ""),
        "xtask: error: --append: only for --native freertos; the Linux guest's command line comes \
         from --linux-cmd and the initramfs\n"
    );
}

#[test]
fn append_without_native_is_refused() {
    refused(
        &["run", "--append", "mode=x"],
        2,
        "error: the following required arguments were not provided:\n  --native <GUEST>\n",
    );
}

#[test]
fn xen_and_native_together_are_refused() {
    refused(
        &["run", "--xen", "--native", "linux"],
        2,
        "error: the argument '--xen' cannot be used with '--native <GUEST>'\n",
    );
}

#[test]
fn xen_with_a_configuration_is_refused() {
    refused(
        &["run", "--xen", "--config", "configs/default.toml"],
        2,
        "error: the argument '--xen' cannot be used with '--config <FILE>'\n",
    );
}

#[test]
fn an_unknown_cpu_model_names_the_known_ones() {
    refused(
        &["run", "--cpu", "pentium"],
        2,
        "error: invalid value 'pentium' for '--cpu <CPU>'\n  \
         [possible values: cortex-a72, cortex-a53, max]\n",
    );
}

#[test]
fn a_timeout_that_is_not_a_number_is_refused() {
    refused(
        &["run", "--timeout", "soon"],
        2,
        "error: invalid value 'soon' for '--timeout <SECS>': invalid digit found in string\n",
    );
}

#[test]
fn check_config_of_a_missing_file_says_so() {
    assert_eq!(
        refused(&["check-config", "/nonexistent/partita.toml"], 1, ""),
        "/nonexistent/partita.toml: cannot read: No such file or directory (os error 2)\n"
    );
}

#[test]
fn an_unknown_task_is_refused() {
    refused(
        &["frobnicate"],
        2,
        "error: unrecognized subcommand 'frobnicate'\n",
    );
}

#[test]
fn freertos_domu_without_xen_is_refused() {
    refused(
        &["run", "--freertos-domu", "rt.samples=10"],
        2,
        "error: the following required arguments were not provided:\n  --xen\n",
    );
}

#[test]
fn no_dom0_without_a_domu_is_refused() {
    refused(
        &["run", "--xen", "--no-dom0"],
        2,
        "error: the following required arguments were not provided:\n  --freertos-domu <ARGS>\n",
    );
}

#[test]
fn no_dom0_with_a_linux_job_is_refused() {
    refused(
        &[
            "run",
            "--xen",
            "--freertos-domu",
            "x",
            "--no-dom0",
            "--linux-cmd",
            "ls",
        ],
        2,
        "error: the argument '--no-dom0' cannot be used with '--linux-cmd <CMD>'\n",
    );
}

#[test]
fn bench_only_with_an_unknown_configuration_names_the_known_ones() {
    let err = refused(
        &["bench", "--quick", "--only", "nope"],
        1,
        "xtask: error: --only: no configuration named \"nope\"; known: native, solo, ",
    );
    assert!(err.contains(", xen-shared-irqstorm"), "{err}");
}

#[test]
fn bench_with_no_jobs_is_refused() {
    refused(
        &["bench", "--quick", "--jobs", "0"],
        2,
        "error: invalid value '0' for '--jobs <N>': 0 is not in 1..=256\n",
    );
}

#[test]
fn bench_resume_needs_an_output_folder_with_finished_rows() {
    refused(
        &["bench", "--quick", "--resume"],
        2,
        "error: the following required arguments were not provided:\n  --out <DIR>\n",
    );
    refused(
        &[
            "bench",
            "--quick",
            "--resume",
            "--out",
            "/nonexistent/partita-run",
        ],
        1,
        "xtask: error: --resume: /nonexistent/partita-run holds no finished rows \
         (/nonexistent/partita-run/rows/ is missing)\n",
    );
}
