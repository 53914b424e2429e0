//! The virtual GICv2 front-end (`partita_core::vgic::Vgic::distributor_v2`, GICD_SGIR and the
//! GICH_LR encoding) under any sequence of guest distributor accesses from any vCPU, device
//! lines, injections and list-register round trips through the GICv2 encoding: it never
//! panics, refuses only misaligned or wrongly sized accesses and offsets past the 4 KiB
//! frame, keeps GICD_ICFGR0, ICPIDR2, GICD_SGIR reads and reserved offsets fixed, reads
//! ITARGETSR0..7 as the accessing CPU, and only loads list registers with implemented,
//! distinct, pending-or-active interrupts that survive the GICv2 encoding.

#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use partita_core::devices::{AccessSize, MmioDevice};
use partita_core::vgic::{
    from_v2, to_v2, ListRegister, LrState, Vgic, DISTRIBUTOR_V2_SIZE, PRIVATE_IRQS,
};
use partita_fuzz::Size;

#[derive(Arbitrary, Debug)]
enum Op {
    Read {
        vcpu: u8,
        offset: u16,
        size: Size,
    },
    Write {
        vcpu: u8,
        offset: u16,
        size: Size,
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
    /// Load four GICv2 list registers, let the guest move them to the given states, fold back.
    Run {
        vcpu: u8,
        states: [u8; 4],
    },
}

struct Machine {
    vgic: Vgic,
    lrs: Vec<[u32; 4]>,
}

impl Machine {
    fn vcpu(&self, raw: u8) -> usize {
        usize::from(raw) % (self.vgic.vcpu_count() + 1)
    }

    fn read(&mut self, vcpu: usize, offset: u64, size: AccessSize) -> Option<u64> {
        let result = self.vgic.distributor_v2(vcpu).read(offset, size);
        if offset >= DISTRIBUTOR_V2_SIZE {
            assert!(result.is_err(), "read {offset:#x} past the frame accepted");
        }
        if size == AccessSize::Word && offset.is_multiple_of(4) && offset < DISTRIBUTOR_V2_SIZE {
            assert!(result.is_ok(), "aligned word read {offset:#x} refused");
        }
        let value = result.ok()?;
        assert_eq!(value & !size.mask(), 0);
        let exists = vcpu < self.vgic.vcpu_count();
        match (offset, size) {
            (0x000, _) => assert_eq!(value & !0x3, 0, "GICD_CTLR {value:#x}"),
            (0xc00, _) if exists => assert_eq!(value, 0xaaaa_aaaa, "GICD_ICFGR0"),
            (0xfe8, _) => assert_eq!(value, 0x2b, "ICPIDR2"),
            (0xf00, _) | (0xd00..0xf00, _) | (0xf30..0xfe8, _) => {
                assert_eq!(value, 0, "{offset:#x} not RAZ")
            }
            (0x800..0x820, _) if exists => {
                let me = 1u64 << (vcpu % 8);
                for byte in 0..size.bytes() {
                    assert_eq!(value >> (8 * byte) & 0xff, me, "ITARGETSR of INTID < 32");
                }
            }
            _ => {}
        }
        Some(value)
    }

    fn run(&mut self, vcpu: usize, states: [u8; 4]) {
        let Some(current) = self.lrs.get(vcpu).copied() else {
            return;
        };
        let mut lrs: Vec<u64> = current.iter().map(|&lr| from_v2(lr)).collect();
        self.vgic
            .flush_in_place(vcpu, &mut lrs)
            .expect("flush of an existing vCPU");
        let limit = PRIVATE_IRQS + self.vgic.spi_count();
        let mut seen = Vec::new();
        let mut gich = [0u32; 4];
        for (slot, &raw) in gich.iter_mut().zip(&lrs) {
            *slot = to_v2(raw);
            let lr = ListRegister::decode_v2(*slot);
            assert_eq!(lr.vintid, ListRegister::decode(raw).vintid, "INTID lost");
            if lr.state == LrState::Invalid {
                continue;
            }
            assert!(lr.vintid < limit, "LR holds {}", lr.vintid);
            assert!(!seen.contains(&lr.vintid), "INTID {} twice", lr.vintid);
            seen.push(lr.vintid);
            let irq = self.vgic.irq(vcpu, lr.vintid).expect("implemented INTID");
            assert!(
                irq.active || irq.pending(),
                "LR for idle INTID {}",
                lr.vintid
            );
        }
        for (slot, &state) in gich.iter_mut().zip(&states) {
            *slot = (*slot & !(3 << 28)) | (u32::from(state & 3) << 28);
        }
        let back: Vec<u64> = gich.iter().map(|&lr| from_v2(lr)).collect();
        self.vgic
            .sync(vcpu, &back)
            .expect("sync of an existing vCPU");
        self.vgic.has_deliverable(vcpu);
        self.lrs[vcpu] = gich;
    }

    fn apply(&mut self, op: Op) {
        let limit = PRIVATE_IRQS + self.vgic.spi_count();
        match op {
            Op::Read { vcpu, offset, size } => {
                let vcpu = self.vcpu(vcpu);
                self.read(vcpu, u64::from(offset), size.access());
            }
            Op::Write {
                vcpu,
                offset,
                size,
                value,
            } => {
                let vcpu = self.vcpu(vcpu);
                let offset = u64::from(offset);
                let result = self
                    .vgic
                    .distributor_v2(vcpu)
                    .write(offset, size.access(), value);
                if offset >= DISTRIBUTOR_V2_SIZE {
                    assert!(result.is_err(), "write {offset:#x} past the frame accepted");
                }
                if result.is_ok() {
                    assert!(self.read(vcpu, offset, size.access()).is_some());
                }
            }
            Op::Inject { vcpu, intid } => {
                let vcpu = self.vcpu(vcpu);
                let ok = vcpu < self.vgic.vcpu_count() && u32::from(intid) < limit;
                assert_eq!(self.vgic.inject(vcpu, u32::from(intid)).is_ok(), ok);
            }
            Op::Level { vcpu, intid, level } => {
                let vcpu = self.vcpu(vcpu);
                let ok = vcpu < self.vgic.vcpu_count() && u32::from(intid) < limit;
                let result = self.vgic.set_level(vcpu, u32::from(intid), level);
                assert_eq!(result.is_ok(), ok);
            }
            Op::Run { vcpu, states } => self.run(self.vcpu(vcpu), states),
        }
    }
}

fuzz_target!(|input: (u8, u16, Vec<Op>)| {
    let (vcpus, spis, ops) = input;
    // A GICv2 has at most 8 CPU interfaces and 988 SPIs.
    let Ok(vgic) = Vgic::new(usize::from(vcpus % 9), u32::from(spis % 989)) else {
        return;
    };
    let lrs = vec![[0u32; 4]; vgic.vcpu_count()];
    let mut machine = Machine { vgic, lrs };
    for op in ops {
        machine.apply(op);
    }
});
