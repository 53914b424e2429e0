//! Host tests of the virtual GICv3: register behaviour through the MMIO interfaces, Linux's
//! boot-time access sequence, list-register management and SGI decoding.

mod boot;
mod dist;
mod fast;
mod flush;
mod lr;
mod property;
mod redist;
mod sgi;
mod sizes;
mod v2;

use super::Vgic;
use crate::devices::{AccessSize, MmioDevice};

/// Offset of the SGI_base frame inside one vCPU's redistributor.
const SGI_BASE: u64 = 0x1_0000;

/// A one-vCPU VM with 64 SPIs (INTIDs 32 to 95).
fn vgic() -> Vgic {
    Vgic::new(1, 64).expect("valid configuration")
}

fn dist_read(vgic: &mut Vgic, offset: u64) -> u64 {
    vgic.distributor()
        .read(offset, AccessSize::Word)
        .expect("distributor read")
}

fn dist_write(vgic: &mut Vgic, offset: u64, value: u64) {
    vgic.distributor()
        .write(offset, AccessSize::Word, value)
        .expect("distributor write");
}

fn redist_read(vgic: &mut Vgic, offset: u64) -> u64 {
    vgic.redistributors()
        .read(offset, AccessSize::Word)
        .expect("redistributor read")
}

fn redist_write(vgic: &mut Vgic, offset: u64, value: u64) {
    vgic.redistributors()
        .write(offset, AccessSize::Word, value)
        .expect("redistributor write");
}
