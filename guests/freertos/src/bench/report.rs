//! The machine-readable result lines (format in the guest's BENCHMARKS.md): every line
//! starts with `bench: ` followed by `key=value` words without spaces. This module only
//! formats lines; it never measures.

use crate::console;
use core::fmt::Display;

/// `bench: experiment=<e> [test=<t>] metric=<m> value=<v> unit=<u>`.
pub fn result(experiment: &str, test: Option<&str>, metric: &str, value: impl Display, unit: &str) {
    match test {
        Some(test) => console::line(format_args!(
            "bench: experiment={experiment} test={test} metric={metric} value={value} unit={unit}"
        )),
        None => console::line(format_args!(
            "bench: experiment={experiment} metric={metric} value={value} unit={unit}"
        )),
    }
}

/// A pass/fail check: `metric=check value=<pass|fail> unit=bool`.
pub fn check(experiment: &str, test: &str, passed: bool) {
    let value = if passed { "pass" } else { "fail" };
    result(experiment, Some(test), "check", value, "bool");
}

/// One histogram bucket: `bench: experiment=<e> metric=hist bucket_lo_ns=<a>
/// bucket_hi_ns=<b> count=<n>` (the bucket holds values v with a <= v < b).
pub fn bucket(experiment: &str, lo_ns: u64, hi_ns: u64, count: u64) {
    console::line(format_args!(
        "bench: experiment={experiment} metric=hist bucket_lo_ns={lo_ns} bucket_hi_ns={hi_ns} count={count}"
    ));
}
