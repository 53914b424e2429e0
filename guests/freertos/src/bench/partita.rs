//! Partita's own figures, read at the end of a benchmark run with the PARTITA_COUNTER
//! hypercall (0xC600_0001: x1 = VM index, x2 = counter id -> x0 = 0 and x1 = value, or
//! x0 = INVALID_PARAMETERS past the last VM or counter) for every VM of the system, and
//! printed as `bench: partita vm=<index> counter=<id> value=<v>` lines; the counters' names
//! are Partita's (docs/benchmarks.md). Only under Partita: PARTITA_VERSION must answer 0.
//! This module reads and prints; it never interprets the values.

use crate::partita::{self, PARTITA_COUNTER};
use crate::{console, psci};

/// Counter ids 0..=37 exist today; reading stops at the first refused id.
const MAX_COUNTERS: usize = 64;
/// VMs read at most.
const MAX_VMS: u64 = 16;

/// Reads each VM's counters, then prints them (its lines are not in what was read).
pub fn report_counters() {
    if !partita::present() {
        return;
    }
    for vm in 0..MAX_VMS {
        let mut values = [0u64; MAX_COUNTERS];
        let mut count = 0;
        while count < MAX_COUNTERS {
            match psci::hypervisor_call(PARTITA_COUNTER, &[vm, count as u64]) {
                Some([0, value]) => values[count] = value,
                _ => break,
            }
            count += 1;
        }
        if count == 0 {
            return;
        }
        for (id, value) in values[..count].iter().enumerate() {
            console::line(format_args!(
                "bench: partita vm={vm} counter={id} value={value}"
            ));
        }
    }
}
