//! List-register management, with a small model of the guest's virtual CPU interface:
//! acknowledge (pending -> active, highest priority first) and EOI (active -> invalid).

use crate::vgic::{
    ListRegister, LrFlush, LrLink, LrState, Trigger, Vgic, VgicError, ICH_HCR_NPIE, ICH_HCR_UIE,
};
use std::vec::Vec;

const LRS: usize = 4;

/// One vCPU, 64 SPIs, Group 1 enabled, every interrupt Group 1 and enabled, priority 0xa0.
pub(super) fn ready() -> Vgic {
    let mut v = super::vgic();
    super::dist_write(&mut v, 0x0, 0x2);
    for n in 0..2 {
        super::dist_write(&mut v, 0x84 + 4 * n, 0xffff_ffff);
        super::dist_write(&mut v, 0x104 + 4 * n, 0xffff_ffff);
    }
    for n in 0..16 {
        super::dist_write(&mut v, 0x420 + 4 * n, 0xa0a0_a0a0);
    }
    super::redist_write(&mut v, super::SGI_BASE + 0x80, 0xffff_ffff);
    super::redist_write(&mut v, super::SGI_BASE + 0x100, 0xffff_ffff);
    v
}

/// Flushes vCPU 0 and loads the result into `lrs`, as the hypervisor does before entry.
fn enter(v: &mut Vgic, lrs: &mut [u64]) -> LrFlush {
    let flush = v.flush(0, lrs).unwrap();
    lrs.copy_from_slice(flush.values());
    flush
}

pub(super) fn set_priority(v: &mut Vgic, intid: u32, priority: u8) {
    use crate::devices::{AccessSize, MmioDevice};
    v.distributor()
        .write(0x400 + u64::from(intid), AccessSize::Byte, priority.into())
        .unwrap();
}

fn decoded(lrs: &[u64]) -> Vec<ListRegister> {
    lrs.iter().map(|&raw| ListRegister::decode(raw)).collect()
}

/// The INTIDs in valid list registers, in list-register order.
fn intids(lrs: &[u64]) -> Vec<u32> {
    decoded(lrs)
        .iter()
        .filter(|lr| lr.state != LrState::Invalid)
        .map(|lr| lr.vintid)
        .collect()
}

fn find(lrs: &[u64], intid: u32) -> Option<ListRegister> {
    decoded(lrs)
        .into_iter()
        .find(|lr| lr.state != LrState::Invalid && lr.vintid == intid)
}

/// The guest acknowledges its highest-priority pending list register.
pub(super) fn acknowledge(lrs: &mut [u64]) -> Option<u32> {
    let (slot, lr) = decoded(lrs)
        .into_iter()
        .enumerate()
        .filter(|(_, lr)| lr.state == LrState::Pending)
        .min_by_key(|(_, lr)| (lr.priority, lr.vintid))?;
    lrs[slot] = ListRegister {
        state: LrState::Active,
        ..lr
    }
    .encode();
    Some(lr.vintid)
}

/// The guest deactivates `intid` (EOImode 0: priority drop and deactivation).
pub(super) fn end_of_interrupt(lrs: &mut [u64], intid: u32) {
    for raw in lrs.iter_mut() {
        let lr = ListRegister::decode(*raw);
        if lr.vintid == intid && lr.state.is_active() {
            let state = LrState::from_flags(lr.state.is_pending(), false);
            *raw = ListRegister { state, ..lr }.encode();
        }
    }
}

/// Whether the maintenance interrupt the hypervisor asked for is now asserted.
pub(super) fn maintenance_due(hcr: u64, lrs: &[u64]) -> bool {
    let lrs = decoded(lrs);
    let valid = lrs.iter().filter(|lr| lr.state != LrState::Invalid).count();
    let pending = lrs.iter().any(|lr| lr.state.is_pending());
    let eoi = lrs.iter().any(|lr| {
        lr.state == LrState::Invalid
            && lr.link
                == LrLink::Virtual {
                    eoi_maintenance: true,
                }
    });
    (hcr & ICH_HCR_UIE != 0 && valid <= 1) || (hcr & ICH_HCR_NPIE != 0 && !pending) || eoi
}

#[test]
fn overflow_delivers_the_highest_priorities_first_then_the_rest_after_maintenance() {
    let mut v = ready();
    let priorities = [
        (32, 0x80),
        (33, 0x10),
        (34, 0x40),
        (35, 0x20),
        (36, 0x30),
        (37, 0x90),
    ];
    for (intid, priority) in priorities {
        set_priority(&mut v, intid, priority);
        v.inject(0, intid).unwrap();
    }
    let mut lrs = [0u64; LRS];
    let first = v.flush(0, &lrs).unwrap();
    lrs.copy_from_slice(first.values());
    assert_eq!(
        intids(&lrs),
        [33, 35, 36, 34],
        "the four highest priorities"
    );
    assert_eq!(first.hcr, ICH_HCR_NPIE, "two more are queued");

    // The guest takes and completes interrupts until the maintenance interrupt fires.
    let mut delivered = Vec::new();
    while !maintenance_due(first.hcr, &lrs) {
        let intid = acknowledge(&mut lrs).expect("a pending interrupt");
        delivered.push(intid);
        end_of_interrupt(&mut lrs, intid);
    }
    assert_eq!(delivered, [33, 35, 36, 34]);

    let second = v.flush(0, &lrs).unwrap();
    lrs.copy_from_slice(second.values());
    assert_eq!(intids(&lrs), [32, 37]);
    assert_eq!(second.hcr, 0, "nothing queued any more");
    while let Some(intid) = acknowledge(&mut lrs) {
        delivered.push(intid);
        end_of_interrupt(&mut lrs, intid);
    }
    assert_eq!(delivered, [33, 35, 36, 34, 32, 37]);
    let done = v.flush(0, &lrs).unwrap();
    assert!(intids(done.values()).is_empty());
    assert!((32..38).all(|i| {
        let irq = v.irq(0, i).unwrap();
        !irq.pending() && !irq.active
    }));
}

#[test]
fn a_higher_priority_arrival_evicts_a_pending_only_entry() {
    let mut v = ready();
    for intid in 32..36 {
        v.inject(0, intid).unwrap();
    }
    let mut lrs = [0u64; LRS];
    enter(&mut v, &mut lrs);
    assert_eq!(intids(&lrs), [32, 33, 34, 35]);
    // The guest runs with interrupts masked; at the next exit a better one arrives.
    v.sync(0, &lrs).unwrap();
    set_priority(&mut v, 40, 0x10);
    v.inject(0, 40).unwrap();
    let flush = v.flush(0, &lrs).unwrap();
    assert_eq!(
        intids(flush.values()),
        [40, 32, 33, 34],
        "35 (ties: highest INTID) waits"
    );
    assert_eq!(flush.hcr, ICH_HCR_NPIE);
    assert!(
        v.irq(0, 35).unwrap().pending(),
        "the evicted one stays queued"
    );
}

#[test]
fn active_interrupts_keep_their_list_registers() {
    let mut v = ready();
    for intid in 32..36 {
        set_priority(&mut v, intid, 0x90);
        v.inject(0, intid).unwrap();
    }
    let mut lrs = [0u64; LRS];
    enter(&mut v, &mut lrs);
    for _ in 0..4 {
        acknowledge(&mut lrs);
    }
    v.sync(0, &lrs).unwrap();
    for intid in [36, 37] {
        set_priority(&mut v, intid, 0x10);
        v.inject(0, intid).unwrap();
    }
    let flush = enter(&mut v, &mut lrs);
    assert_eq!(
        intids(&lrs),
        [32, 33, 34, 35],
        "actives first, even at lower priority"
    );
    assert!(decoded(&lrs).iter().all(|lr| lr.state == LrState::Active));
    assert_eq!(
        flush.hcr, ICH_HCR_UIE,
        "no pending entry, so NPIE would fire at once"
    );
    assert!(!maintenance_due(flush.hcr, &lrs));
    for intid in [35, 34, 33] {
        end_of_interrupt(&mut lrs, intid);
    }
    assert!(maintenance_due(flush.hcr, &lrs));
    let next = v.flush(0, &lrs).unwrap();
    assert_eq!(intids(next.values()), [32, 36, 37], "the active one first");
    assert_eq!(next.hcr, 0);
}

#[test]
fn an_edge_arriving_while_active_becomes_pending_and_active() {
    let mut v = ready();
    super::dist_write(&mut v, 0xc08, 0xaaaa_aaaa);
    v.inject(0, 34).unwrap();
    let mut lrs = [0u64; LRS];
    enter(&mut v, &mut lrs);
    assert_eq!(acknowledge(&mut lrs), Some(34));
    v.sync(0, &lrs).unwrap();
    assert!(v.irq(0, 34).unwrap().active && !v.irq(0, 34).unwrap().pending());
    v.inject(0, 34).unwrap();
    enter(&mut v, &mut lrs);
    assert_eq!(find(&lrs, 34).unwrap().state, LrState::PendingActive);
    end_of_interrupt(&mut lrs, 34);
    assert_eq!(acknowledge(&mut lrs), Some(34));
    end_of_interrupt(&mut lrs, 34);
    let flush = v.flush(0, &lrs).unwrap();
    assert!(intids(flush.values()).is_empty());
}

#[test]
fn hw_interrupts_carry_the_physical_intid_and_never_pending_and_active() {
    let mut v = ready();
    v.set_hw(0, 27, Some(27)).unwrap();
    v.set_hw(0, 40, Some(72)).unwrap();
    v.inject(0, 40).unwrap();
    let mut lrs = [0u64; LRS];
    enter(&mut v, &mut lrs);
    let lr = find(&lrs, 40).unwrap();
    assert_eq!(lr.link, LrLink::Hardware { pintid: 72 });
    assert_eq!(lr.state, LrState::Pending);
    acknowledge(&mut lrs);
    v.sync(0, &lrs).unwrap();
    // A software-set pending state while active stays in the model.
    super::dist_write(&mut v, 0x204, 1 << 8);
    enter(&mut v, &mut lrs);
    assert_eq!(find(&lrs, 40).unwrap().state, LrState::Active);
    assert!(!v.has_deliverable(0), "it waits for the deactivation");
    end_of_interrupt(&mut lrs, 40);
    let flush = v.flush(0, &lrs).unwrap();
    assert_eq!(find(flush.values(), 40).unwrap().state, LrState::Pending);
    assert!(!v.irq(0, 40).unwrap().active);

    v.set_level(0, 27, true).unwrap();
    assert!(
        !v.irq(0, 27).unwrap().pending(),
        "the line of a HW interrupt is physical"
    );
    v.inject(0, 27).unwrap();
    let lr = find(v.flush(0, flush.values()).unwrap().values(), 27).unwrap();
    assert_eq!(lr.link, LrLink::Hardware { pintid: 27 });
}

#[test]
fn a_level_line_that_drops_before_acknowledge_is_withdrawn() {
    let mut v = ready();
    v.set_level(0, 33, true).unwrap();
    let mut lrs = [0u64; LRS];
    enter(&mut v, &mut lrs);
    let lr = find(&lrs, 33).unwrap();
    assert_eq!(lr.state, LrState::Pending);
    assert_eq!(
        lr.link,
        LrLink::Virtual {
            eoi_maintenance: true
        },
        "resample the line on EOI"
    );
    v.sync(0, &lrs).unwrap();
    v.set_level(0, 33, false).unwrap();
    let flush = v.flush(0, &lrs).unwrap();
    assert!(intids(flush.values()).is_empty());
}

#[test]
fn a_level_line_cleared_by_the_handler_is_not_delivered_again() {
    let mut v = ready();
    v.set_level(0, 33, true).unwrap();
    let mut lrs = [0u64; LRS];
    enter(&mut v, &mut lrs);
    assert_eq!(acknowledge(&mut lrs), Some(33));
    // The handler's MMIO access to the UART makes it drop its line.
    v.sync(0, &lrs).unwrap();
    v.set_level(0, 33, false).unwrap();
    let flush = v.flush(0, &lrs).unwrap();
    lrs.copy_from_slice(flush.values());
    let lr = find(&lrs, 33).unwrap();
    assert_eq!(lr.state, LrState::Active);
    assert_eq!(
        lr.link,
        LrLink::Virtual {
            eoi_maintenance: false
        }
    );
    end_of_interrupt(&mut lrs, 33);
    assert!(!maintenance_due(flush.hcr, &lrs));
    assert!(intids(v.flush(0, &lrs).unwrap().values()).is_empty());
}

#[test]
fn a_level_line_still_asserted_after_eoi_is_delivered_again() {
    let mut v = ready();
    v.set_level(0, 33, true).unwrap();
    let mut lrs = [0u64; LRS];
    let flush = v.flush(0, &lrs).unwrap();
    lrs.copy_from_slice(flush.values());
    acknowledge(&mut lrs);
    end_of_interrupt(&mut lrs, 33);
    assert!(maintenance_due(flush.hcr, &lrs), "EOI maintenance");
    let again = v.flush(0, &lrs).unwrap();
    assert_eq!(find(again.values(), 33).unwrap().state, LrState::Pending);
}

#[test]
fn an_acknowledged_software_pending_level_interrupt_is_consumed() {
    let mut v = ready();
    super::dist_write(&mut v, 0x204, 1 << 1);
    let mut lrs = [0u64; LRS];
    enter(&mut v, &mut lrs);
    acknowledge(&mut lrs);
    end_of_interrupt(&mut lrs, 33);
    v.sync(0, &lrs).unwrap();
    assert!(!v.irq(0, 33).unwrap().pending());
}

#[test]
fn disabled_or_group_disabled_interrupts_wait_in_the_model() {
    let mut v = ready();
    v.inject(0, 33).unwrap();
    super::dist_write(&mut v, 0x184, 1 << 1);
    let mut lrs = [0u64; LRS];
    assert!(intids(v.flush(0, &lrs).unwrap().values()).is_empty());
    assert!(!v.has_deliverable(0));
    super::dist_write(&mut v, 0x104, 1 << 1);
    assert!(v.has_deliverable(0));
    super::dist_write(&mut v, 0x0, 0x1);
    assert!(
        intids(v.flush(0, &lrs).unwrap().values()).is_empty(),
        "Group 1 disabled"
    );
    super::dist_write(&mut v, 0x0, 0x2);
    enter(&mut v, &mut lrs);
    assert_eq!(intids(&lrs), [33]);
    // Disabling it while it waits in a list register withdraws it.
    v.sync(0, &lrs).unwrap();
    super::dist_write(&mut v, 0x184, 1 << 1);
    assert!(intids(v.flush(0, &lrs).unwrap().values()).is_empty());
    assert!(v.irq(0, 33).unwrap().pending());
}

#[test]
fn group_zero_interrupts_follow_enable_grp0() {
    let mut v = ready();
    super::dist_write(&mut v, 0x84, 0);
    v.inject(0, 32).unwrap();
    assert!(intids(v.flush(0, &[0; LRS]).unwrap().values()).is_empty());
    super::dist_write(&mut v, 0x0, 0x3);
    let flush = v.flush(0, &[0; LRS]).unwrap();
    assert!(!find(flush.values(), 32).unwrap().group1);
}

#[test]
fn sync_twice_or_flush_without_running_changes_nothing() {
    let mut v = ready();
    v.inject(0, 33).unwrap();
    let mut lrs = [0u64; LRS];
    enter(&mut v, &mut lrs);
    acknowledge(&mut lrs);
    v.sync(0, &lrs).unwrap();
    // A stale copy claiming it is still pending must not be folded in again.
    v.sync(
        0,
        &[ListRegister::decode(lrs[0]).encode() & !(3 << 62) | (1 << 62)],
    )
    .unwrap();
    assert!(v.irq(0, 33).unwrap().active && !v.irq(0, 33).unwrap().pending());
    let first = v.flush(0, &lrs).unwrap();
    let second = v.flush(0, first.values()).unwrap();
    assert_eq!(first, second);
}

#[test]
fn a_free_list_register_may_be_passed_as_zero() {
    let mut v = ready();
    v.inject(0, 33).unwrap();
    let mut lrs = [0u64; LRS];
    enter(&mut v, &mut lrs);
    acknowledge(&mut lrs);
    end_of_interrupt(&mut lrs, 33);
    v.sync(0, &[0; LRS]).unwrap();
    assert!(!v.irq(0, 33).unwrap().active && !v.irq(0, 33).unwrap().pending());
}

#[test]
fn ties_go_to_the_lower_intid_and_private_interrupts_compete_with_spis() {
    let mut v = ready();
    for intid in [40, 27, 35, 1, 33] {
        v.inject(0, intid).unwrap();
    }
    let flush = v.flush(0, &[0; LRS]).unwrap();
    assert_eq!(intids(flush.values()), [1, 27, 33, 35]);
}

#[test]
fn one_list_register_never_asks_for_an_immediate_maintenance_interrupt() {
    let mut v = ready();
    v.inject(0, 32).unwrap();
    v.inject(0, 33).unwrap();
    let mut lr = [0u64; 1];
    let flush = v.flush(0, &lr).unwrap();
    assert_eq!(flush.hcr, ICH_HCR_NPIE);
    lr.copy_from_slice(flush.values());
    acknowledge(&mut lr);
    assert!(maintenance_due(flush.hcr, &lr));
    let flush = v.flush(0, &lr).unwrap();
    assert_eq!(
        flush.hcr, 0,
        "UIE would fire at once with one list register"
    );
    assert!(
        v.flush(0, &[]).unwrap().values().is_empty(),
        "no list registers at all"
    );
}

#[test]
fn spis_go_to_the_vcpu_their_router_names() {
    let mut v = Vgic::new(2, 32).unwrap();
    super::dist_write(&mut v, 0x0, 0x2);
    super::dist_write(&mut v, 0x84, 0xffff_ffff);
    super::dist_write(&mut v, 0x104, 0xffff_ffff);
    super::dist_write(&mut v, 0x6000 + 8 * 33, 0x1);
    v.inject(0, 33).unwrap();
    v.inject(0, 34).unwrap();
    assert_eq!(v.spi_target(33), Some(1));
    assert_eq!(intids(v.flush(0, &[0; LRS]).unwrap().values()), [34]);
    assert_eq!(intids(v.flush(1, &[0; LRS]).unwrap().values()), [33]);
    assert!(v.flush(2, &[0; LRS]).is_err());
}

#[test]
fn injection_rejects_what_the_vm_does_not_have() {
    let mut v = ready();
    assert!(v.inject(0, 96).is_err());
    assert!(v.inject(1, 3).is_err());
    assert!(v.set_level(0, 1020, true).is_err());
    assert!(v.set_hw(0, u32::MAX, Some(40)).is_err());
    assert_eq!(
        v.set_hw(0, 3, Some(40)),
        Err(VgicError::HwMapping),
        "an SGI"
    );
    assert_eq!(
        v.set_hw(0, 40, Some(8)),
        Err(VgicError::HwMapping),
        "a physical SGI"
    );
    assert_eq!(v.set_hw(0, 40, Some(1020)), Err(VgicError::HwMapping));
    assert_eq!(v.set_hw(0, 40, None), Ok(()));
    assert!(Vgic::new(0, 32).is_err());
    assert!(Vgic::new(65, 32).is_err());
    assert!(Vgic::new(1, 989).is_err());
}

#[test]
fn an_edge_line_latches_rising_edges() {
    let mut v = ready();
    super::dist_write(&mut v, 0xc08, 0xaaaa_aaaa);
    assert_eq!(v.irq(0, 40).unwrap().trigger, Trigger::Edge);
    v.set_level(0, 40, true).unwrap();
    super::dist_write(&mut v, 0x284, 1 << 8);
    v.set_level(0, 40, true).unwrap();
    assert!(
        !v.irq(0, 40).unwrap().pending(),
        "a line held high is no new edge"
    );
    v.set_level(0, 40, false).unwrap();
    v.set_level(0, 40, true).unwrap();
    v.set_level(0, 40, false).unwrap();
    assert!(
        v.irq(0, 40).unwrap().pending(),
        "the rising edge was latched"
    );
}

#[test]
fn flush_in_place_gives_what_flush_gives_without_copies() {
    let mut a = ready();
    for intid in [40, 27, 35, 1, 33, 50] {
        a.inject(0, intid).unwrap();
    }
    let mut b = a.clone();
    let expected = a.flush(0, &[0; LRS]).unwrap();
    let mut lrs = [0u64; LRS];
    assert_eq!(b.flush_in_place(0, &mut lrs), Ok(expected.hcr));
    assert_eq!(lrs, expected.values());
    // The guest takes one; the next flush folds it in from the same array.
    acknowledge(&mut lrs);
    let expected = a.flush(0, &lrs).unwrap();
    assert_eq!(b.flush_in_place(0, &mut lrs), Ok(expected.hcr));
    assert_eq!(lrs, expected.values());
    // More elements than any CPU interface has list registers: the rest are invalid.
    let mut many = [u64::MAX; 20];
    b.sync(0, &lrs).unwrap();
    b.flush_in_place(0, &mut many).unwrap();
    assert_eq!(intids(&many), [1, 27, 33, 35, 40, 50]);
    assert!(many[16..].iter().all(|&lr| lr == 0));
    assert_eq!(b.flush_in_place(3, &mut lrs), Err(VgicError::NoSuchVcpu));
}

#[test]
fn an_idle_vcpu_flushes_to_empty_list_registers_chosen_now() {
    let mut v = ready();
    // Nothing pending, active or live: every list register empty (stale values too), and
    // the choice is the model's current one.
    let mut lrs = [u64::MAX; LRS];
    assert_eq!(v.flush_in_place(0, &mut lrs), Ok(0));
    assert_eq!(lrs, [0; LRS]);
    assert!(v.unchanged_since_choice(0));
    // Once an interrupt was taken and finished, the vCPU is idle again: the fold of the
    // finished list register and the empty choice match the general flush.
    v.inject(0, 27).unwrap();
    let mut lrs = [0u64; LRS];
    v.flush_in_place(0, &mut lrs).unwrap();
    assert_eq!(acknowledge(&mut lrs), Some(27));
    end_of_interrupt(&mut lrs, 27);
    let mut a = v.clone();
    let expected = a.flush(0, &lrs).unwrap();
    assert_eq!(v.flush_in_place(0, &mut lrs), Ok(expected.hcr));
    assert_eq!(lrs, [0; LRS]);
    assert_eq!(lrs, expected.values());
    let mut again = [7u64; LRS];
    assert_eq!(v.flush_in_place(0, &mut again), Ok(0));
    assert_eq!(again, [0; LRS]);
}
