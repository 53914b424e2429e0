//! The short injection (`Vgic::inject_loaded`) and the short wait (`Vgic::settle_loaded`)
//! against the general path (`sync`, `inject`, `flush`): over random sequences of
//! injections, guest acknowledges and EOIs, waits, level changes and priority changes, a
//! system that takes the short paths whenever they are offered keeps the same model and
//! presents the same interrupts in its list registers as one that always takes the general
//! path. The usual case (`Vgic::inject_alone`: one list register, no scan) is checked on its
//! own, with every condition that must send it to the general path.

use super::flush::{acknowledge, end_of_interrupt, maintenance_due, ready, set_priority};
use crate::test_rng::Rng;
use crate::vgic::{ListRegister, LrState, Vgic};
use std::format;
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
    /// How many injections `Vgic::inject_again` answered.
    agains: usize,
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
            agains: 0,
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

    /// The short injection when the model offers it, the same interrupt again first (as
    /// the hypervisor asks for an interrupt taken while the vCPU runs); true when it did.
    fn inject_short(&mut self, intid: u32) -> bool {
        let free = self.free();
        if let Some(value) = self.vgic.inject_again(0, intid, free) {
            self.agains += 1;
            self.lrs[0] = value;
            return true;
        }
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

    /// The free list registers, as ICH_ELRSR_EL2 reports them.
    fn free(&self) -> u16 {
        self.lrs
            .iter()
            .enumerate()
            .filter(|(_, &raw)| ListRegister::decode(raw).is_free())
            .fold(0u16, |bits, (n, _)| bits | 1 << n)
    }

    /// The vCPU is about to wait: the short wait when the model offers it (the hypervisor
    /// asks only when the last choice requested no maintenance interrupt), else the
    /// general path's fold and choice. True when the short wait was taken.
    fn wait(&mut self) -> bool {
        let free = self.free();
        if self.hcr == 0
            && (self.vgic.idle_again(0, free) || self.vgic.settle_loaded(0, free).unwrap())
        {
            return true;
        }
        self.general(|_| {});
        false
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

/// One random sequence; returns how many short injections, short waits and injections of
/// the same interrupt again were taken. With `ticks`, three injections in four are of one
/// interrupt (the timer, or an SGI for odd seeds), as a busy guest's ticks or a port's
/// self-SGIs, and three in four of the other steps that would change the model are EOIs
/// instead, so that the same one comes again with nothing changed between.
fn run_sequence(seed: u64, steps: usize, ticks: bool) -> (usize, usize, usize) {
    let mut rng = Rng(seed);
    let (mut short, mut general) = (System::new(), System::new());
    let (mut taken, mut waited) = (0, 0);
    for step in 0..steps {
        for s in [&mut short, &mut general] {
            if maintenance_due(s.hcr, &s.lrs) {
                s.general(|_| {});
            }
        }
        let mut choice = rng.below(11);
        // With `ticks`, three in four of the waits and changes become EOIs.
        if ticks && choice >= 8 && rng.below(4) != 0 {
            choice = 3;
        }
        match choice {
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
                let intid = if ticks && rng.below(4) != 0 {
                    [TIMER, SGI][(seed % 2) as usize]
                } else {
                    [TIMER, EDGE_SPI, SGI, LEVEL_SPI][rng.below(4) as usize]
                };
                taken += usize::from(short.inject_short(intid));
                general.general(|v| v.inject(0, intid).unwrap());
            }
            8 => {
                waited += usize::from(short.wait());
                general.general(|_| {});
            }
            9 => {
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
    (taken, waited, short.agains)
}

#[test]
fn the_short_injection_and_wait_match_the_general_path() {
    let (mut taken, mut waited, mut agains) = (0, 0, 0);
    for seed in 0..400 {
        let (t, w, a) = run_sequence(seed, 300, seed >= 200);
        taken += t;
        waited += w;
        agains += a;
    }
    assert!(taken > 500, "the short injection was taken {taken} times");
    assert!(waited > 100, "the short wait was taken {waited} times");
    assert!(
        agains > 100,
        "the same interrupt again was taken {agains} times"
    );
}

/// The usual case on a copy of `s`: its answer, and whether the model changed.
fn alone(s: &System, intid: u32, free: u16) -> (Option<(usize, u64)>, bool) {
    let mut v = s.vgic.clone();
    let before = v.clone();
    let done = v.inject_alone(0, intid, free, LRS);
    let changed = format!("{v:?}") != format!("{before:?}");
    (done, changed)
}

/// The timer injected, taken and finished by the guest, its list register folded by a
/// wait: nothing live, nothing pending or active.
fn idle_after_a_tick() -> System {
    let mut s = System::new();
    s.general(|v| v.inject(0, TIMER).unwrap());
    assert_eq!(acknowledge(&mut s.lrs), Some(TIMER));
    end_of_interrupt(&mut s.lrs, TIMER);
    assert!(s.wait(), "the finished timer leaves nothing to wait for");
    s
}

#[test]
fn the_usual_case_is_the_general_paths_choice() {
    for intid in [TIMER, SGI, EDGE_SPI] {
        let mut s = idle_after_a_tick();
        let free = s.free();
        let (done, _) = alone(&s, intid, free);
        let (slot, value) = done.unwrap_or_else(|| panic!("INTID {intid}: refused"));
        assert_eq!(slot, 0, "the lowest free list register");
        let mut general = idle_after_a_tick();
        general.general(|v| v.inject(0, intid).unwrap());
        assert_eq!(value, general.lrs[0], "INTID {intid}: another value");
        assert!(s.vgic.inject_alone(0, intid, free, LRS).is_some());
        s.lrs[0] = value;
        assert_eq!(s.view(), general.view(), "INTID {intid}: another model");
        // A later sync sees it as if flush had chosen it.
        acknowledge(&mut s.lrs);
        acknowledge(&mut general.lrs);
        s.general(|_| {});
        general.general(|_| {});
        assert_eq!(
            s.view(),
            general.view(),
            "INTID {intid}: after the guest took it"
        );
    }
}

#[test]
fn the_usual_case_folds_finished_timer_list_registers_first() {
    // The timer taken and finished, not folded by a wait (a tick while the guest runs).
    let mut s = System::new();
    s.general(|v| v.inject(0, TIMER).unwrap());
    acknowledge(&mut s.lrs);
    end_of_interrupt(&mut s.lrs, TIMER);
    let mut general = System::new();
    general.general(|v| v.inject(0, TIMER).unwrap());
    acknowledge(&mut general.lrs);
    end_of_interrupt(&mut general.lrs, TIMER);
    let (slot, value) = s.vgic.inject_alone(0, TIMER, s.free(), LRS).expect("taken");
    s.lrs[slot] = value;
    general.general(|v| v.inject(0, TIMER).unwrap());
    assert_eq!(s.view(), general.view());
}

#[test]
fn the_same_interrupt_again_into_its_finished_list_register_is_the_general_paths_choice() {
    // A self-SGI sent again each round (Thread-Metric's interrupt test) and the timer: the
    // one live list register holds the interrupt, taken and finished, so the usual case
    // injects it again without folding it first; the model must end as the general path's.
    for intid in [SGI, TIMER] {
        let (mut s, mut general) = (idle_after_a_tick(), idle_after_a_tick());
        for round in 0..3 {
            let (slot, value) = s
                .vgic
                .inject_alone(0, intid, s.free(), LRS)
                .unwrap_or_else(|| panic!("INTID {intid}, round {round}: refused"));
            assert_eq!(slot, 0, "its own list register again");
            s.lrs[slot] = value;
            general.general(|v| v.inject(0, intid).unwrap());
            assert_eq!(s.view(), general.view(), "INTID {intid}, round {round}");
            for sys in [&mut s, &mut general] {
                assert_eq!(acknowledge(&mut sys.lrs), Some(intid));
                end_of_interrupt(&mut sys.lrs, intid);
            }
            assert_eq!(
                s.view(),
                general.view(),
                "INTID {intid}, round {round}: taken"
            );
        }
    }
    // Taken but not finished (active in its list register): not again, and refused.
    let mut s = idle_after_a_tick();
    let (slot, value) = s.vgic.inject_alone(0, SGI, s.free(), LRS).expect("taken");
    s.lrs[slot] = value;
    acknowledge(&mut s.lrs);
    assert_eq!(alone(&s, SGI, s.free()), (None, false));
    // Finished, but another interrupt made pending meanwhile: refused, nothing folded.
    end_of_interrupt(&mut s.lrs, SGI);
    s.vgic.inject(0, TIMER).unwrap();
    assert_eq!(alone(&s, SGI, s.free()), (None, false));
}

#[test]
fn the_usual_case_refuses_whatever_the_general_path_would_choose_differently() {
    let s = idle_after_a_tick();
    let free = s.free();
    assert!(alone(&s, TIMER, free).0.is_some(), "the reference case");
    // What changes, the INTID injected, and the free list registers when they are not
    // what the list registers say.
    type Change = dyn Fn(&mut System);
    let refusals: [(&str, &Change, u32, Option<u16>); 11] = [
        (
            "a pending list register",
            &|s| s.general(|v| v.inject(0, SGI).unwrap()),
            TIMER,
            None,
        ),
        (
            "an active list register",
            &|s| {
                s.general(|v| v.inject(0, SGI).unwrap());
                acknowledge(&mut s.lrs);
            },
            TIMER,
            None,
        ),
        (
            "a finished SPI in a list register",
            &|s| {
                s.general(|v| v.inject(0, EDGE_SPI).unwrap());
                acknowledge(&mut s.lrs);
                end_of_interrupt(&mut s.lrs, EDGE_SPI);
            },
            TIMER,
            None,
        ),
        (
            "another interrupt pending",
            &|s| {
                s.general(|v| {
                    super::dist_write(v, 0x184, 1 << (EDGE_SPI - 32));
                    v.inject(0, EDGE_SPI).unwrap();
                })
            },
            TIMER,
            None,
        ),
        (
            "a disabled level line asserted",
            &|s| {
                s.general(|v| {
                    super::dist_write(v, 0x184, 1 << (LEVEL_SPI - 32));
                    v.set_level(0, LEVEL_SPI, true).unwrap();
                })
            },
            TIMER,
            None,
        ),
        (
            "another interrupt active",
            &|s| {
                s.general(|v| v.inject(0, SGI).unwrap());
                acknowledge(&mut s.lrs);
                // Folded: nothing live, the SGI active in the model.
                s.vgic.sync(0, &s.lrs).unwrap();
            },
            TIMER,
            Some(free),
        ),
        (
            "the interrupt disabled",
            &|s| s.general(|v| super::dist_write(v, 0x184, 1 << (EDGE_SPI - 32))),
            EDGE_SPI,
            None,
        ),
        (
            "its group disabled",
            &|s| s.general(|v| super::dist_write(v, 0x0, 0)),
            TIMER,
            None,
        ),
        ("no list register free", &|_| {}, TIMER, Some(0)),
        (
            "only beyond the vCPU interface's",
            &|_| {},
            TIMER,
            Some(1 << LRS),
        ),
        ("no such INTID", &|_| {}, 2000, None),
    ];
    for (what, change, intid, free) in refusals {
        let mut t = idle_after_a_tick();
        change(&mut t);
        let free = free.unwrap_or_else(|| t.free());
        let (done, changed) = alone(&t, intid, free);
        assert_eq!(done, None, "{what}: not refused");
        assert!(!changed, "{what}: the model changed");
    }
}

#[test]
fn the_usual_case_refuses_an_spi_routed_to_another_vcpu() {
    let mut v = Vgic::new(2, 64).unwrap();
    super::dist_write(&mut v, 0x0, 0x2);
    super::dist_write(&mut v, 0x84, 0xffff_ffff);
    super::dist_write(&mut v, 0x104, 0xffff_ffff);
    super::dist_write(&mut v, 0x6000 + 8 * EDGE_SPI as u64, 1);
    assert_eq!(v.spi_target(EDGE_SPI), Some(1));
    let free = (1 << LRS) - 1;
    assert_eq!(v.inject_alone(0, EDGE_SPI, free, LRS), None, "vCPU 1's");
    assert!(v.inject_alone(1, EDGE_SPI, free, LRS).is_some(), "its own");
    assert_eq!(
        v.inject_loaded(0, EDGE_SPI, free, LRS).unwrap(),
        None,
        "the folding path refuses it too"
    );
}

#[test]
fn a_wait_is_short_only_when_nothing_is_left() {
    let mut s = System::new();
    s.general(|v| v.inject(0, TIMER).unwrap());
    assert!(!s.wait(), "the timer is pending in its list register");
    s.general(|v| v.inject(0, TIMER).unwrap());
    acknowledge(&mut s.lrs);
    assert!(!s.wait(), "the timer is active");
    end_of_interrupt(&mut s.lrs, TIMER);
    assert!(s.wait(), "the timer finished");
    assert!(!s.vgic.has_deliverable(0));
    assert!(
        s.vgic.unchanged_since_choice(0),
        "the folded list registers are the choice"
    );
    s.general(|v| {
        super::dist_write(v, 0x184, 1 << (EDGE_SPI - 32));
        v.inject(0, EDGE_SPI).unwrap();
    });
    assert!(
        !s.wait(),
        "a disabled interrupt pending: the general path looks"
    );
}

#[test]
fn a_wait_after_one_finished_list_register_folds_it_as_the_general_path() {
    // One live list register, finished by the guest: an SGI or PPI is folded by the wait's
    // usual case (`fold_first_finished`), an SPI by its general case; either way the model
    // ends as the general path's fold leaves it, with nothing to take.
    for intid in [TIMER, SGI, EDGE_SPI] {
        let (mut s, mut general) = (System::new(), System::new());
        for sys in [&mut s, &mut general] {
            sys.general(|v| v.inject(0, intid).unwrap());
            assert_eq!(acknowledge(&mut sys.lrs), Some(intid));
            end_of_interrupt(&mut sys.lrs, intid);
        }
        let free = s.free();
        assert!(
            s.vgic.settle_loaded(0, free).unwrap(),
            "INTID {intid}: nothing is left"
        );
        general.general(|_| {});
        assert_eq!(s.view(), general.view(), "INTID {intid}");
        assert!(!s.vgic.has_deliverable(0), "INTID {intid}");
        assert!(s.vgic.unchanged_since_choice(0), "INTID {intid}");
    }
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

#[test]
fn the_same_interrupt_again_with_nothing_changed_is_the_usual_cases_answer() {
    // A tick, or a self-SGI, taken and finished while the guest runs, then the same again
    // with nothing changed between: `inject_again` gives `inject_alone`'s value and leaves
    // the model as `inject_alone` leaves it, rounds after rounds.
    for intid in [TIMER, SGI] {
        let (mut s, mut general) = (idle_after_a_tick(), idle_after_a_tick());
        assert!(s.inject_short(intid), "INTID {intid}: the first injection");
        general.general(|v| v.inject(0, intid).unwrap());
        for round in 0..3 {
            for sys in [&mut s, &mut general] {
                assert_eq!(acknowledge(&mut sys.lrs), Some(intid));
                end_of_interrupt(&mut sys.lrs, intid);
            }
            let (done, _) = alone(&s, intid, s.free());
            let value = s.vgic.inject_again(0, intid, s.free());
            assert_eq!(
                value,
                done.map(|(_, value)| value),
                "INTID {intid}, round {round}"
            );
            assert!(s.inject_short(intid));
            general.general(|v| v.inject(0, intid).unwrap());
            assert_eq!(s.view(), general.view(), "INTID {intid}, round {round}");
        }
        assert_eq!(s.agains, 3, "INTID {intid}");
    }
}

#[test]
fn the_same_interrupt_again_is_refused_after_any_change_or_before_the_guest_finished() {
    let finished = |intid: u32| {
        let mut s = idle_after_a_tick();
        assert!(s.inject_short(intid));
        assert_eq!(acknowledge(&mut s.lrs), Some(intid));
        end_of_interrupt(&mut s.lrs, intid);
        s
    };
    // The list register taken but not finished (active), or still pending.
    let mut s = idle_after_a_tick();
    assert!(s.inject_short(TIMER));
    assert_eq!(s.vgic.inject_again(0, TIMER, s.free()), None, "pending");
    acknowledge(&mut s.lrs);
    assert_eq!(s.vgic.inject_again(0, TIMER, s.free()), None, "active");
    // Another interrupt than the one in list register 0.
    let s = finished(TIMER);
    assert_eq!(s.vgic.inject_again(0, SGI, s.free()), None, "another INTID");
    assert_eq!(
        s.vgic.inject_again(1, TIMER, s.free()),
        None,
        "another vCPU"
    );
    // Any change of the model since: another injection, a priority, a distributor read.
    let mut s = finished(TIMER);
    s.vgic.inject(0, EDGE_SPI).unwrap();
    assert_eq!(
        s.vgic.inject_again(0, TIMER, s.free()),
        None,
        "an injection"
    );
    let mut s = finished(TIMER);
    set_priority(&mut s.vgic, TIMER, 0x10);
    assert_eq!(s.vgic.inject_again(0, TIMER, s.free()), None, "a priority");
    let mut s = finished(TIMER);
    let _ = super::dist_read(&mut s.vgic, 0x0);
    assert_eq!(
        s.vgic.inject_again(0, TIMER, s.free()),
        None,
        "a distributor read"
    );
    // The short wait keeps the finished list register as it is (`idle_again`), the
    // general path's settle folds it.
    let mut s = finished(TIMER);
    assert!(s.vgic.idle_again(0, s.free()));
    assert!(s.wait());
    assert!(
        s.vgic.inject_again(0, TIMER, s.free()).is_some(),
        "a short wait"
    );
    assert!(s.vgic.settle_loaded(0, s.free()).unwrap());
    assert!(!s.vgic.idle_again(0, s.free()));
    assert_eq!(s.vgic.inject_again(0, TIMER, s.free()), None, "a settle");
    // An SPI left alone in list register 0 is not repeated this way.
    let mut s = idle_after_a_tick();
    assert!(s.inject_short(EDGE_SPI));
    acknowledge(&mut s.lrs);
    end_of_interrupt(&mut s.lrs, EDGE_SPI);
    assert_eq!(s.vgic.inject_again(0, EDGE_SPI, s.free()), None, "an SPI");
}
