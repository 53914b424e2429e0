//! Access sizes and alignment: each register takes exactly the sizes IHI 0069 chapter 12 ("GIC
//! memory-mapped register access") allows, everything else is refused, and no offset, size or value
//! makes the model panic.

use super::SGI_BASE;
use crate::devices::{AccessFault, AccessSize, MmioDevice};
use crate::vgic::{Vgic, REDISTRIBUTOR_STRIDE};

const SIZES: [AccessSize; 4] = [
    AccessSize::Byte,
    AccessSize::Half,
    AccessSize::Word,
    AccessSize::Double,
];
const WORD: &[AccessSize] = &[AccessSize::Word];
const BYTE_WORD: &[AccessSize] = &[AccessSize::Byte, AccessSize::Word];
const DOUBLE: &[AccessSize] = &[AccessSize::Word, AccessSize::Double];

/// Distributor registers (first offset) and the sizes they accept.
const DIST_REGS: &[(u64, &[AccessSize])] = &[
    (0x0000, WORD),      // CTLR
    (0x0004, WORD),      // TYPER
    (0x0008, WORD),      // IIDR
    (0x000c, WORD),      // TYPER2
    (0x0010, WORD),      // STATUSR
    (0x0080, WORD),      // IGROUPR0
    (0x0084, WORD),      // IGROUPR1
    (0x0104, WORD),      // ISENABLER1
    (0x0184, WORD),      // ICENABLER1
    (0x0204, WORD),      // ISPENDR1
    (0x0284, WORD),      // ICPENDR1
    (0x0304, WORD),      // ISACTIVER1
    (0x0384, WORD),      // ICACTIVER1
    (0x0420, BYTE_WORD), // IPRIORITYR8
    (0x0820, BYTE_WORD), // ITARGETSR8
    (0x0c08, WORD),      // ICFGR2
    (0x0d04, WORD),      // IGRPMODR1
    (0x0e08, WORD),      // NSACR2
    (0x0f00, WORD),      // SGIR
    (0x0f10, BYTE_WORD), // CPENDSGIR0
    (0x0f20, BYTE_WORD), // SPENDSGIR0
    (0x6108, DOUBLE),    // IROUTER33
    (0xffe8, WORD),      // PIDR2
];

/// Redistributor registers (offset in one vCPU's frames) and the sizes they accept.
const REDIST_REGS: &[(u64, &[AccessSize])] = &[
    (0x0000, WORD),                 // CTLR
    (0x0004, WORD),                 // IIDR
    (0x0008, DOUBLE),               // TYPER
    (0x0010, WORD),                 // STATUSR
    (0x0014, WORD),                 // WAKER
    (0x0040, DOUBLE),               // SETLPIR
    (0x0048, DOUBLE),               // CLRLPIR
    (0x0070, DOUBLE),               // PROPBASER
    (0x0078, DOUBLE),               // PENDBASER
    (0x00a0, DOUBLE),               // INVLPIR
    (0x00b0, DOUBLE),               // INVALLR
    (0x00c0, WORD),                 // SYNCR
    (0xffe8, WORD),                 // PIDR2
    (SGI_BASE + 0x0080, WORD),      // IGROUPR0
    (SGI_BASE + 0x0100, WORD),      // ISENABLER0
    (SGI_BASE + 0x0180, WORD),      // ICENABLER0
    (SGI_BASE + 0x0200, WORD),      // ISPENDR0
    (SGI_BASE + 0x0280, WORD),      // ICPENDR0
    (SGI_BASE + 0x0300, WORD),      // ISACTIVER0
    (SGI_BASE + 0x0380, WORD),      // ICACTIVER0
    (SGI_BASE + 0x0400, BYTE_WORD), // IPRIORITYR0
    (SGI_BASE + 0x041c, BYTE_WORD), // IPRIORITYR7
    (SGI_BASE + 0x0c00, WORD),      // ICFGR0
    (SGI_BASE + 0x0c04, WORD),      // ICFGR1
    (SGI_BASE + 0x0d00, WORD),      // IGRPMODR0
    (SGI_BASE + 0x0e00, WORD),      // NSACR
];

fn check_sizes(device: &mut dyn MmioDevice, offset: u64, allowed: &[AccessSize]) {
    for size in SIZES {
        let expected_ok = allowed.contains(&size);
        let read = device.read(offset, size);
        let write = device.write(offset, size, 0);
        assert_eq!(read.is_ok(), expected_ok, "read {offset:#x} {size:?}");
        assert_eq!(write.is_ok(), expected_ok, "write {offset:#x} {size:?}");
    }
}

#[test]
fn distributor_registers_take_only_their_sizes() {
    let mut v = Vgic::new(1, 64).unwrap();
    for &(offset, allowed) in DIST_REGS {
        check_sizes(&mut v.distributor(), offset, allowed);
    }
    // The upper half of IROUTER takes a word, never a double.
    check_sizes(&mut v.distributor(), 0x610c, WORD);
    // A byte of a byte-accessible register at an unaligned address is still fine.
    check_sizes(&mut v.distributor(), 0x0423, &[AccessSize::Byte]);
}

#[test]
fn redistributor_registers_take_only_their_sizes() {
    let mut v = Vgic::new(2, 32).unwrap();
    for frame in [0, REDISTRIBUTOR_STRIDE] {
        for &(offset, allowed) in REDIST_REGS {
            check_sizes(&mut v.redistributors(), frame + offset, allowed);
        }
        check_sizes(&mut v.redistributors(), frame + 0xc, WORD);
    }
}

#[test]
fn misaligned_accesses_are_refused_everywhere() {
    let mut v = Vgic::new(2, 64).unwrap();
    for offset in [0x1u64, 0x2, 0x3, 0x6, 0x105, 0x6101, 0x6104, 0x8001, 0xffe9] {
        for size in [AccessSize::Half, AccessSize::Word, AccessSize::Double] {
            if !offset.is_multiple_of(size.bytes()) {
                assert_eq!(v.distributor().read(offset, size), Err(AccessFault));
                assert_eq!(v.redistributors().write(offset, size, 0), Err(AccessFault));
            }
        }
    }
}

#[test]
fn reserved_offsets_take_any_aligned_size() {
    let mut v = Vgic::new(1, 64).unwrap();
    check_sizes(&mut v.distributor(), 0x8000, &SIZES);
    check_sizes(&mut v.redistributors(), 0x1000, &SIZES);
    check_sizes(&mut v.redistributors(), 5 * REDISTRIBUTOR_STRIDE, &SIZES);
}

#[test]
fn no_offset_size_or_value_panics() {
    let mut v = Vgic::new(2, 988).unwrap();
    for offset in (0..0x1_0004).step_by(1) {
        for size in SIZES {
            for value in [0, u64::MAX] {
                let _ = v.distributor().write(offset, size, value);
                let _ = v.distributor().read(offset, size);
            }
        }
    }
    for offset in (0..3 * REDISTRIBUTOR_STRIDE).step_by(2) {
        for size in SIZES {
            let _ = v.redistributors().write(offset, size, u64::MAX);
            let _ = v.redistributors().read(offset, size);
        }
    }
    for offset in [u64::MAX, u64::MAX - 3, 1 << 63] {
        for size in SIZES {
            let _ = v.distributor().read(offset, size);
            let _ = v.redistributors().write(offset, size, 0);
        }
    }
    let flush = v.flush(0, &[u64::MAX; 16]).unwrap();
    assert_eq!(flush.count, 16);
    assert_eq!(v.flush(1, &[u64::MAX; 40]).unwrap().count, 16);
}
