//! Probes of inter-VM channels (configs/tests/hostile.toml pins them): ringing a channel
//! the VM is not a member of, ringing in a loop (the rate rule must hold, whatever the
//! loop does), writing the channel it may only read, touching just outside a channel's
//! window or any channel's physical address, and scribbling over the ring FreeRTOS reads and ringing it (FreeRTOS must
//! report the broken ring and keep its deadlines, which the host scenario checks).

use aarch64_cpu::registers::{Readable, CNTFRQ_EL0, CNTVCT_EL0};

use crate::checks::{expect_abort, expect_eq, Failure, Outcome};
use crate::exceptions;
use crate::mmio::{Load, Store, UNTOUCHED};
use crate::platform::Platform;
use crate::smccc_calls::{call, Conduit, INVALID_PARAMETERS};

/// PARTITA_IVC_RING (x1 = channel id) and its refusal for ringing too soon.
const IVC_RING: u32 = 0xc600_0003;
const DENIED: i64 = -3;
/// Channel 0 ("rt-link", with FreeRTOS): this VM is member 1, read-write, at this window;
/// one ring per `RT_LINK_INTERVAL_US` at most.
const RT_LINK: u64 = 0x3000_0000;
const RT_LINK_SIZE: u64 = 0x1_0000;
const RT_LINK_INTERVAL_US: u64 = 50;
/// Channel 1 ("ro-view"): FreeRTOS writes it, this VM may only read it.
const RO_VIEW: u64 = 0x3001_0000;
/// Channel 2 joins FreeRTOS and the wreck VM, not this one.
const FOREIGN_CHANNEL: u64 = 2;
/// The channels' physical memory (pinned): as guest-physical addresses they are nothing
/// to this VM, not even its own channels' (stage 2 maps those only at their windows).
const CHANNELS_PHYS: [u64; 3] = [0x60c0_0000, 0x60d0_0000, 0x60e0_0000];
const RINGS: u32 = 20_000;

fn ring(channel: u64) -> (i64, u64) {
    let reply = call(Conduit::Hvc, IVC_RING, [channel, 0, 0]);
    (reply.status(), reply.x[1])
}

pub fn ring_foreign(_: &Platform) -> Outcome {
    for channel in [FOREIGN_CHANNEL, 63, 64, u64::MAX] {
        let (status, _) = ring(channel);
        expect_eq(
            format_args!("ring channel {channel:#x}"),
            status as u64,
            INVALID_PARAMETERS as u64,
        )?;
    }
    Ok(())
}

/// 20,000 rings as fast as the VM can make them: every accepted ring must come at least one
/// interval after the previous one, and every refusal must say how long is left (at most
/// one interval).
pub fn ring_storm(_: &Platform) -> Outcome {
    let interval_ns = RT_LINK_INTERVAL_US * 1000;
    let frequency = CNTFRQ_EL0.get().max(1);
    let start = CNTVCT_EL0.get();
    let (mut accepted, mut refused) = (0u64, 0u64);
    for i in 0..RINGS {
        match ring(0) {
            (0, _) => accepted += 1,
            (DENIED, wait) if wait > 0 && wait <= interval_ns => refused += 1,
            (status, wait) => {
                return Err(Failure::new(format_args!(
                    "ring {i}: status {status}, wait {wait} ns"
                )))
            }
        }
    }
    let elapsed_ns = (CNTVCT_EL0.get() - start) * 1_000_000_000 / frequency;
    if refused == 0 || accepted > elapsed_ns / interval_ns + 1 {
        return Err(Failure::new(format_args!(
            "{accepted} rings accepted and {refused} refused in {elapsed_ns} ns"
        )));
    }
    Ok(())
}

/// The read-only channel reads, and a store to it aborts and changes nothing.
pub fn readonly_write(_: &Platform) -> Outcome {
    let before = Load::Double.run(RO_VIEW);
    if exceptions::take_trap().is_some() || before == UNTOUCHED {
        return Err(Failure::new(format_args!(
            "ldr at {RO_VIEW:#x} did not read"
        )));
    }
    Store::Double.run(RO_VIEW, !before);
    expect_abort(format_args!("str x at {RO_VIEW:#x}"), RO_VIEW)?;
    let after = Load::Double.run(RO_VIEW);
    expect_eq(format_args!("{RO_VIEW:#x} after the store"), after, before)
}

/// The doubleword right after a channel's window and the one below it are nobody's, and
/// neither are the channels' physical addresses, its own or the foreign one.
pub fn outside_window(_: &Platform) -> Outcome {
    let around = [RT_LINK - 8, RO_VIEW + 0x1000, RO_VIEW + 0x1_0000];
    for addr in around.into_iter().chain(CHANNELS_PHYS) {
        let got = Load::Double.run(addr);
        expect_abort(format_args!("ldr x at {addr:#x}"), addr)?;
        expect_eq(format_args!("ldr x at {addr:#x}: register"), got, UNTOUCHED)?;
        Store::Double.run(addr, 0xbad0_bad0_bad0_bad0);
        expect_abort(format_args!("str x at {addr:#x}"), addr)?;
    }
    Ok(())
}

/// Breaks the ring this VM writes (member 1: the second half of the channel) with an
/// impossible head and a record longer than the ring, and rings FreeRTOS to read it.
pub fn scribble_ring(_: &Platform) -> Outcome {
    let ring1 = RT_LINK + RT_LINK_SIZE / 2;
    Store::Double.run(ring1 + 0x80, 0xffff_fff0);
    Store::Double.run(ring1, 0x7fff_fff8);
    if let Some(trap) = exceptions::take_trap() {
        return Err(Failure::new(format_args!(
            "writing its own ring aborted (ESR {:#x})",
            trap.esr
        )));
    }
    // Wait out the rate rule so this ring is accepted.
    let frequency = CNTFRQ_EL0.get().max(1);
    let until = CNTVCT_EL0.get() + frequency * RT_LINK_INTERVAL_US / 1_000_000 + 1;
    while CNTVCT_EL0.get() < until {}
    let (status, _) = ring(0);
    expect_eq(format_args!("ring channel 0"), status as u64, 0)
}
