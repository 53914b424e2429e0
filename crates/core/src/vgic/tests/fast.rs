//! The short injection (`Vgic::inject_loaded`) against the general path (`sync`, `inject`,
//! `flush`): over random sequences of injections, guest acknowledges and EOIs, level changes
//! and priority changes, a system that takes the short injection whenever it is offered keeps
//! the same model and presents the same interrupts in its list registers as one that always
//! takes the general path.

use super::flush::{acknowledge, end_of_interrupt, maintenance_due, ready, set_priority};
use crate::test_rng::Rng;
use crate::vgic::{ListRegister, LrState, Vgic};
use std::vec::Vec;

const LRS: usize = 4;
/// The virtual timer (backed by the physical one), an edge SPI, an SGI, a level SPI.
const TIMER: u32 = 27;
const EDGE_SPI: u32 = 33;
const SGI: u32 = 1;
const LEVEL_SPI: u32 = 40;

struct System {
    vgic: Vgic,
    lrs: [u64; LRS],
    hcr: u64,
}

impl System {
    fn new() -> Self {
        let mut vgic = ready();
        vgic.set_hw(0, TIMER, Some(TIMER)).unwrap();
        // GICD_ICFGR2: INTID 33 edge-triggered (SPIs reset level-sensitive).
        super::dist_write(&mut vgic, 0xc08, 0b10 << 2);
        let mut s = System {
            vgic,
            lrs: [0; LRS],
            hcr: 0,
        };
        s.general(|_| {});
        s
    }

    /// An exit that folds, changes the model and chooses the list registers again.
    fn general(&mut self, change: impl FnOnce(&mut Vgic)) {
        self.vgic.sync(0, &self.lrs).unwrap();
        change(&mut self.vgic);
        let flush = self.vgic.flush(0, &self.lrs).unwrap();
        self.lrs.copy_from_slice(flush.values());
        self.hcr = flush.hcr;
    }

    /// The short injection when the model offers it; true when it did.
    fn inject_short(&mut self, intid: u32) -> bool {
        let free = self
            .lrs
            .iter()
            .enumerate()
            .filter(|(_, &raw)| ListRegister::decode(raw).is_free())
            .fold(0u16, |bits, (n, _)| bits | 1 << n);
        match self.vgic.inject_loaded(0, intid, free, LRS).unwrap() {
            Some((slot, value)) => {
                assert!(free & 1 << slot != 0, "list register {slot} was not free");
                self.lrs[slot] = value;
                true
            }
            None => {
                self.general(|v| v.inject(0, intid).unwrap());
                false
            }
        }
    }

    /// The model after folding, and the interrupts in valid list registers, sorted.
    fn view(&self) -> (Vec<crate::vgic::IrqState>, Vec<(u32, u64)>) {
        let mut vgic = self.vgic.clone();
        vgic.sync(0, &self.lrs).unwrap();
        let states = (0..96).map(|intid| vgic.irq(0, intid).unwrap()).collect();
        let mut live: Vec<(u32, u64)> = self
            .lrs
            .iter()
            .filter(|&&raw| ListRegister::decode(raw).state != LrState::Invalid)
            .map(|&raw| (ListRegister::decode(raw).vintid, raw))
            .collect();
        live.sort_unstable();
        (states, live)
    }
}

fn lowest_active(lrs: &[u64]) -> Option<u32> {
    lrs.iter()
        .map(|&raw| ListRegister::decode(raw))
        .filter(|lr| lr.state.is_active())
        .map(|lr| lr.vintid)
        .min()
}

fn run_sequence(seed: u64, steps: usize) -> usize {
    let mut rng = Rng(seed);
    let (mut short, mut general) = (System::new(), System::new());
    let mut taken = 0;
    for step in 0..steps {
        for s in [&mut short, &mut general] {
            if maintenance_due(s.hcr, &s.lrs) {
                s.general(|_| {});
            }
        }
        match rng.below(10) {
            0..=2 => {
                acknowledge(&mut short.lrs);
                acknowledge(&mut general.lrs);
            }
            3..=4 => {
                if let Some(intid) = lowest_active(&general.lrs) {
                    end_of_interrupt(&mut short.lrs, intid);
                    end_of_interrupt(&mut general.lrs, intid);
                }
            }
            5..=7 => {
                let intid = [TIMER, EDGE_SPI, SGI, LEVEL_SPI][rng.below(4) as usize];
                taken += usize::from(short.inject_short(intid));
                general.general(|v| v.inject(0, intid).unwrap());
            }
            8 => {
                let level = rng.chance(2);
                for s in [&mut short, &mut general] {
                    s.general(|v| v.set_level(0, LEVEL_SPI, level).unwrap());
                }
            }
            _ => {
                let intid = [TIMER, EDGE_SPI, SGI, LEVEL_SPI][rng.below(4) as usize];
                let priority = [0x10, 0xa0, 0xc0][rng.below(3) as usize];
                for s in [&mut short, &mut general] {
                    s.general(|v| set_priority(v, intid, priority));
                }
            }
        }
        assert_eq!(
            short.view(),
            general.view(),
            "seed {seed}, step {step}: the short injection diverged"
        );
    }
    taken
}

#[test]
fn the_short_injection_matches_the_general_path() {
    let mut taken = 0;
    for seed in 0..200 {
        taken += run_sequence(seed, 300);
    }
    assert!(taken > 500, "the short injection was taken {taken} times");
}

#[test]
fn a_finished_timer_list_register_is_reused_and_nothing_else_changes() {
    let mut s = System::new();
    s.general(|v| v.inject(0, TIMER).unwrap());
    assert_eq!(acknowledge(&mut s.lrs), Some(TIMER));
    end_of_interrupt(&mut s.lrs, TIMER);
    assert!(
        s.inject_short(TIMER),
        "the only interrupt, its register finished"
    );
    let lr = ListRegister::decode(s.lrs[0]);
    assert_eq!((lr.vintid, lr.state), (TIMER, LrState::Pending));
    assert!(s.lrs[1..].iter().all(|&raw| raw == 0));
}

#[test]
fn a_queued_interrupt_sends_the_injection_to_the_general_path() {
    let mut s = System::new();
    for intid in 40..45 {
        s.general(|v| v.inject(0, intid).unwrap());
    }
    assert!(
        !s.inject_short(TIMER),
        "a fifth interrupt waits in the model"
    );
}

#[test]
fn list_registers_may_go_back_as_they_were_only_while_nothing_changed() {
    let mut s = System::new();
    s.general(|v| v.inject(0, TIMER).unwrap());
    assert!(s.vgic.unchanged_since_choice(0), "just chosen");
    // The guest's own progress is in the list registers, not the model.
    acknowledge(&mut s.lrs);
    end_of_interrupt(&mut s.lrs, TIMER);
    assert!(s.vgic.unchanged_since_choice(0), "the guest ran");
    assert!(s.inject_short(TIMER));
    assert!(
        s.vgic.unchanged_since_choice(0),
        "the short injection is a choice"
    );
    let changes: [&dyn Fn(&mut Vgic); 6] = [
        &|v| v.inject(0, EDGE_SPI).unwrap(),
        &|v| v.set_level(0, LEVEL_SPI, true).unwrap(),
        &|v| {
            super::dist_read(v, 0x0);
        },
        &|v| {
            super::redist_read(v, 0x14);
        },
        &|v| {
            let lrs = [0u64; LRS];
            v.sync(0, &lrs).unwrap();
        },
        &|v| {
            v.send_sgi(0, crate::vgic::SgiRequest::decode(1 << 24 | 1))
                .unwrap();
        },
    ];
    for (n, change) in changes.iter().enumerate() {
        let mut v = s.vgic.clone();
        change(&mut v);
        assert!(!v.unchanged_since_choice(0), "change {n} went unnoticed");
    }
}
