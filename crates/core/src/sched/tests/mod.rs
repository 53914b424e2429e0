//! Host tests of the run queue: priority preemption, round robin, blocking and waking, timer
//! deadlines, and random call sequences checked against the policy's invariants.

mod blocking;
mod deadlines;
mod priority;
mod property;
mod round_robin;

use super::{RunQueue, VcpuId};

/// Slice of every test queue, in counter ticks.
const SLICE: u64 = 100;

const RTOS_PRIORITY: u8 = 2;
const GPOS_PRIORITY: u8 = 1;

const RTOS: VcpuId = VcpuId::new(0, 0);
const LINUX: VcpuId = VcpuId::new(1, 0);
/// A second GPOS sharing Linux's priority level.
const OTHER: VcpuId = VcpuId::new(2, 0);
const THIRD: VcpuId = VcpuId::new(3, 0);

/// A queue with `vcpus` added in order, all ready.
fn queue(vcpus: &[(VcpuId, u8)]) -> RunQueue {
    let mut q = RunQueue::new(SLICE);
    for &(vcpu, priority) in vcpus {
        q.add(vcpu, priority).expect("room for the test vCPUs");
    }
    q
}

/// RTOS and Linux on one CPU, both ready.
fn rtos_and_linux() -> RunQueue {
    queue(&[(LINUX, GPOS_PRIORITY), (RTOS, RTOS_PRIORITY)])
}

/// Three GPOS vCPUs of one priority, ready in the order LINUX, OTHER, THIRD.
fn three_peers() -> RunQueue {
    queue(&[
        (LINUX, GPOS_PRIORITY),
        (OTHER, GPOS_PRIORITY),
        (THIRD, GPOS_PRIORITY),
    ])
}
