//! The virtual GICv3 (`partita_core::vgic`) under any sequence of guest distributor and
//! redistributor accesses, SGI requests, device lines, injections and list-register round
//! trips: it never panics, refuses only misaligned or wrongly sized accesses, keeps reserved
//! and unimplemented registers RAZ/WI, its identification registers fixed, and only ever
//! loads list registers with implemented, distinct, pending-or-active interrupts.

#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use partita_core::devices::{AccessSize, MmioDevice};
use partita_core::vgic::{
    ListRegister, LrLink, LrState, SelfSgi, SgiRequest, Vgic, DISTRIBUTOR_SIZE, MAX_LIST_REGISTERS,
    PRIVATE_IRQS, REDISTRIBUTOR_STRIDE,
};
use partita_fuzz::Size;

#[derive(Arbitrary, Debug)]
enum Op {
    DistRead {
        offset: u16,
        size: Size,
    },
    DistWrite {
        offset: u16,
        size: Size,
        value: u64,
    },
    RedistRead {
        offset: u32,
        size: Size,
    },
    RedistWrite {
        offset: u32,
        size: Size,
        value: u64,
    },
    /// Accesses past the frames.
    Far {
        offset: u64,
        size: Size,
        redist: bool,
    },
    Sgi {
        source: u8,
        value: u64,
    },
    Inject {
        vcpu: u8,
        intid: u16,
    },
    Level {
        vcpu: u8,
        intid: u16,
        level: bool,
    },
    Hw {
        vcpu: u8,
        intid: u16,
        pintid: Option<u16>,
    },
    /// Load the list registers, let the guest move them to the given states, fold back.
    Run {
        vcpu: u8,
        count: u8,
        states: Vec<u8>,
    },
    /// Load the list registers, let the guest move them to the given states, then inject
    /// `intid` by the short path (`Vgic::inject_loaded`) and fold back.
    Short {
        vcpu: u8,
        count: u8,
        states: Vec<u8>,
        intid: u16,
    },
    /// Load the list registers, let the guest move them to the given states, then ask
    /// whether the vCPU may wait with them loaded (`Vgic::settle_loaded`) and fold back.
    Wait {
        vcpu: u8,
        count: u8,
        states: Vec<u8>,
    },
}

/// What happens between the guest's run and the fold (`Machine::run_with`).
enum Between {
    Nothing,
    /// The short injection of an INTID.
    Inject(u32),
    /// The short wait's question.
    Wait,
}

/// Distributor offsets that are reserved or have no function here: RAZ/WI.
const DIST_RAZ: [(u64, u64); 8] = [
    (0x0014, 0x0080),
    (0x0800, 0x0c00),
    (0x0d00, 0x0d80),
    (0x0d80, 0x0e00),
    (0x0e00, 0x0f04),
    (0x0f04, 0x0f30),
    (0x0f30, 0x6000),
    (0x8000, 0xffe8),
];

/// Whether an offset inside one vCPU's redistributor frames is reserved or has no function
/// (no LPIs, single Security state): everything but IIDR, TYPER, WAKER, PIDR2 and the SGI
/// frame's banked registers.
fn redist_raz(inner: u64) -> bool {
    const SGI: u64 = 0x1_0000;
    let live = match inner {
        0x0004..0x0018 | 0xffe8..0xffec => true,
        SGI.. => match inner - SGI {
            o @ 0x0080..0x0400 => o % 0x80 < 4,
            0x0400..0x0420 | 0x0c00..0x0c08 => true,
            _ => false,
        },
        _ => false,
    };
    !live
}

struct Machine {
    vgic: Vgic,
    /// The list registers as the hardware would hold them, per vCPU.
    lrs: Vec<Vec<u64>>,
}

impl Machine {
    fn implemented(&self, intid: u64) -> bool {
        intid < u64::from(PRIVATE_IRQS + self.vgic.spi_count())
    }

    /// An SPI the distributor implements (SGIs and PPIs are RAZ/WI there).
    fn spi(&self, intid: u64) -> bool {
        intid >= u64::from(PRIVATE_IRQS) && self.implemented(intid)
    }

    /// The bits of a distributor read that must be zero whatever was written.
    fn dist_raz_mask(&self, offset: u64, size: AccessSize) -> u64 {
        if offset >= 0xffec || DIST_RAZ.iter().any(|&(s, e)| (s..e).contains(&offset)) {
            return u64::MAX;
        }
        match offset {
            0x0080..0x0400 => {
                let first = (offset % 0x80) / 4 * 32;
                (0..32)
                    .filter(|bit| !self.spi(first + bit))
                    .fold(0, |m, bit| m | 1 << bit)
            }
            0x0400..0x0800 => (0..size.bytes())
                .filter(|byte| !self.spi(offset - 0x400 + byte))
                .fold(0, |m, byte| m | 0xff << (8 * byte)),
            0x6000..0x8000 if !self.spi((offset - 0x6000) / 8) => u64::MAX,
            _ => 0,
        }
    }

    fn dist_read(&mut self, offset: u64, size: AccessSize) -> Option<u64> {
        let result = self.vgic.distributor().read(offset, size);
        if offset >= DISTRIBUTOR_SIZE {
            assert!(result.is_err(), "distributor read {offset:#x} accepted");
        }
        if size == AccessSize::Word && offset.is_multiple_of(4) && offset < DISTRIBUTOR_SIZE {
            assert!(result.is_ok(), "aligned word read {offset:#x} refused");
        }
        let value = result.ok()?;
        assert_eq!(value & !size.mask(), 0);
        assert_eq!(
            value & self.dist_raz_mask(offset, size),
            0,
            "{offset:#x} not RAZ"
        );
        match (offset, size) {
            (0x0000, AccessSize::Word) => assert_eq!(value & !0x3, 0x50, "GICD_CTLR {value:#x}"),
            (0x0008, AccessSize::Word) => assert_eq!(value, 0x5000_043b),
            (0xffe8, AccessSize::Word) => assert_eq!(value, 0x3b),
            _ => {}
        }
        Some(value)
    }

    fn dist_write(&mut self, offset: u64, size: AccessSize, value: u64) {
        let result = self.vgic.distributor().write(offset, size, value);
        if offset >= DISTRIBUTOR_SIZE {
            assert!(result.is_err(), "distributor write {offset:#x} accepted");
        }
        // Read back what was written: reserved and unimplemented bits stay zero.
        if result.is_ok() && self.dist_read(offset, size).is_none() {
            panic!("write to {offset:#x} accepted but the read back refused");
        }
    }

    fn redist_read(&mut self, offset: u64, size: AccessSize) {
        let result = self.vgic.redistributors().read(offset, size);
        if size == AccessSize::Word && offset.is_multiple_of(4) {
            assert!(result.is_ok(), "aligned word read {offset:#x} refused");
        }
        let Ok(value) = result else { return };
        assert_eq!(value & !size.mask(), 0);
        let frame = offset / REDISTRIBUTOR_STRIDE;
        if frame >= self.vgic.vcpu_count() as u64 {
            assert_eq!(value, 0, "redistributor {frame} does not exist");
        }
        let inner = offset % REDISTRIBUTOR_STRIDE;
        if redist_raz(inner) {
            assert_eq!(value, 0, "GICR offset {inner:#x} of vCPU {frame} not RAZ");
        }
        match (inner, size) {
            (0x1_0c00, AccessSize::Word) if frame < self.vgic.vcpu_count() as u64 => {
                assert_eq!(value, 0xaaaa_aaaa, "GICR_ICFGR0 (SGIs are edge-triggered)");
            }
            (0x0014, AccessSize::Word) => {
                assert_eq!(value & !0x6, 0, "GICR_WAKER {value:#x}");
                assert_eq!(
                    value >> 1 & 1,
                    value >> 2 & 1,
                    "ChildrenAsleep mirrors sleep"
                );
            }
            _ => {}
        }
    }

    fn redist_write(&mut self, offset: u64, size: AccessSize, value: u64) {
        let result = self.vgic.redistributors().write(offset, size, value);
        if size == AccessSize::Word && offset.is_multiple_of(4) {
            assert!(result.is_ok(), "aligned word write {offset:#x} refused");
        }
        if result.is_ok() {
            self.redist_read(offset, size);
        }
    }

    fn vcpu(&self, raw: u8) -> usize {
        usize::from(raw) % (self.vgic.vcpu_count() + 1)
    }

    fn run(&mut self, vcpu: usize, count: u8, states: &[u8]) {
        self.run_with(vcpu, count, states, Between::Nothing);
    }

    /// `run`, with a short injection or the short wait's question between the guest's run
    /// and the fold.
    fn run_with(&mut self, vcpu: usize, count: u8, states: &[u8], between: Between) {
        let Some(mut lrs) = self.lrs.get_mut(vcpu).map(std::mem::take) else {
            assert!(self.vgic.flush(vcpu, &[]).is_err());
            return;
        };
        lrs.resize(usize::from(count % 20), 0);
        let flush = self
            .vgic
            .flush(vcpu, &lrs)
            .expect("flush of an existing vCPU");
        assert_eq!(flush.count, lrs.len().min(MAX_LIST_REGISTERS));
        let mut seen = Vec::new();
        for &raw in flush.values() {
            let lr = ListRegister::decode(raw);
            if lr.state == LrState::Invalid {
                continue;
            }
            assert!(
                self.implemented(u64::from(lr.vintid)),
                "LR holds {}",
                lr.vintid
            );
            assert!(!seen.contains(&lr.vintid), "INTID {} in two LRs", lr.vintid);
            seen.push(lr.vintid);
            let irq = self.vgic.irq(vcpu, lr.vintid).expect("implemented INTID");
            assert!(
                irq.active || irq.pending(),
                "LR for idle INTID {}",
                lr.vintid
            );
            if let LrLink::Hardware { pintid } = lr.link {
                assert!((16..1020).contains(&pintid), "pINTID {pintid}");
            }
        }
        // The guest acknowledges, completes or ignores each interrupt it was given (any state
        // is accepted); a list register holding none (Invalid) stays so, since only EL2
        // writes list registers (an empty one made pending would be an interrupt nobody
        // gave, e.g. INTID 0 beside a real SGI 0).
        let mut values = flush.values().to_vec();
        for (value, &state) in values.iter_mut().zip(states) {
            if ListRegister::decode(*value).state == LrState::Invalid {
                continue;
            }
            *value = (*value & !(3 << 62)) | (u64::from(state & 3) << 62);
        }
        let free = values
            .iter()
            .enumerate()
            .filter(|(_, &raw)| ListRegister::decode(raw).is_free())
            .fold(0u16, |bits, (n, _)| bits | 1 << n);
        if let Between::Wait = between {
            let settled = self
                .vgic
                .settle_loaded(vcpu, free)
                .expect("settle of an existing vCPU");
            if settled {
                assert!(
                    values
                        .iter()
                        .all(|&raw| ListRegister::decode(raw).is_free()),
                    "a vCPU waits with a list register in use"
                );
                assert!(!self.vgic.has_deliverable(vcpu), "it waits with work");
            }
        }
        if let Between::Inject(intid) = between {
            let result = self.vgic.inject_loaded(vcpu, intid, free, values.len());
            assert_eq!(result.is_ok(), self.implemented(u64::from(intid)));
            if let Ok(Some((slot, value))) = result {
                assert!(free & 1 << slot != 0, "list register {slot} was not free");
                let lr = ListRegister::decode(value);
                assert_eq!(lr.vintid, intid);
                assert!(lr.state.is_pending(), "the injected interrupt is pending");
                values[slot] = value;
                let valid = values
                    .iter()
                    .map(|&raw| ListRegister::decode(raw))
                    .filter(|lr| lr.state != LrState::Invalid);
                let mut seen = Vec::new();
                for lr in valid {
                    assert!(!seen.contains(&lr.vintid), "INTID {} in two LRs", lr.vintid);
                    seen.push(lr.vintid);
                }
            }
        }
        self.vgic
            .sync(vcpu, &values)
            .expect("sync of an existing vCPU");
        self.vgic.has_deliverable(vcpu);
        self.lrs[vcpu] = values;
    }

    fn apply(&mut self, op: Op) {
        let redist_span = (self.vgic.vcpu_count() as u64 + 1) * REDISTRIBUTOR_STRIDE;
        let limit = u64::from(PRIVATE_IRQS + self.vgic.spi_count());
        match op {
            Op::DistRead { offset, size } => {
                self.dist_read(u64::from(offset), size.access());
            }
            Op::DistWrite {
                offset,
                size,
                value,
            } => self.dist_write(u64::from(offset), size.access(), value),
            Op::RedistRead { offset, size } => {
                self.redist_read(u64::from(offset) % redist_span, size.access())
            }
            Op::RedistWrite {
                offset,
                size,
                value,
            } => self.redist_write(u64::from(offset) % redist_span, size.access(), value),
            Op::Far {
                offset,
                size,
                redist: false,
            } => {
                self.dist_read(offset, size.access());
            }
            Op::Far { offset, size, .. } => self.redist_read(offset, size.access()),
            Op::Sgi { source, value } => {
                let source = self.vcpu(source);
                let request = SgiRequest::decode(value);
                // The hypervisor's one-compare test of a self-SGI (its short injection).
                let own = SelfSgi::new(source).intid(value);
                match self.vgic.send_sgi(source, request) {
                    Ok(targets) => {
                        assert!(targets.iter().all(|t| t < self.vgic.vcpu_count()));
                        if let Some(intid) = own {
                            assert!(targets.is_only(source), "{value:#x}: not to itself alone");
                            assert_eq!(intid, u32::from(request.intid));
                        }
                    }
                    Err(_) => assert!(source >= self.vgic.vcpu_count()),
                }
            }
            Op::Inject { vcpu, intid } => {
                let vcpu = self.vcpu(vcpu);
                let ok = vcpu < self.vgic.vcpu_count() && u64::from(intid) < limit;
                assert_eq!(self.vgic.inject(vcpu, u32::from(intid)).is_ok(), ok);
            }
            Op::Level { vcpu, intid, level } => {
                let vcpu = self.vcpu(vcpu);
                let ok = vcpu < self.vgic.vcpu_count() && u64::from(intid) < limit;
                let result = self.vgic.set_level(vcpu, u32::from(intid), level);
                assert_eq!(result.is_ok(), ok);
            }
            Op::Hw {
                vcpu,
                intid,
                pintid,
            } => {
                let vcpu = self.vcpu(vcpu);
                let _ = self
                    .vgic
                    .set_hw(vcpu, u32::from(intid), pintid.map(u32::from));
            }
            Op::Run {
                vcpu,
                count,
                states,
            } => self.run(self.vcpu(vcpu), count, &states),
            Op::Short {
                vcpu,
                count,
                states,
                intid,
            } => self.run_with(
                self.vcpu(vcpu),
                count,
                &states,
                Between::Inject(u32::from(intid)),
            ),
            Op::Wait {
                vcpu,
                count,
                states,
            } => self.run_with(self.vcpu(vcpu), count, &states, Between::Wait),
        }
    }
}

fuzz_target!(|input: (u8, u16, Vec<Op>)| {
    let (vcpus, spis, ops) = input;
    let Ok(vgic) = Vgic::new(usize::from(vcpus % 5), u32::from(spis % 1024)) else {
        return;
    };
    let lrs = vec![Vec::new(); vgic.vcpu_count()];
    let mut machine = Machine { vgic, lrs };
    for op in ops {
        machine.apply(op);
    }
});
