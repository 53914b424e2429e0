//! QEMU `virt` as the host tool starts it: `-M virt,virtualization=on,gic-version=3 -m 4G`,
//! up to 4 CPUs in one cluster, a PL011 console, the GICv3 below RAM.

use super::{Board, Gic, GicV3, Platform, QemuMachine, Region, Uart, UartKind};

pub static QEMU_VIRT: Board = Board {
    platform: Platform::QemuVirt,
    name: "qemu-virt",
    qemu: QemuMachine {
        machine: "virt,virtualization=on,gic-version=3",
        memory: "4G",
        extra: &[],
    },
    ram: &[Region::new(0x4000_0000, 0x1_0000_0000)],
    devices: &[Region::new(0x0800_0000, 0x3800_0000)],
    hypervisor: Region::new(0x4000_0000, 0x2000_0000),
    hypervisor_load: 0x4020_0000,
    cpus: &[0, 1, 2, 3],
    uart: Uart {
        kind: UartKind::Pl011,
        region: Region::new(0x0900_0000, 0x1000),
        irq: 33,
    },
    gic: Gic::V3(GicV3 {
        gicd: Region::new(0x0800_0000, 0x1_0000),
        gicr: Region::new(0x080a_0000, 0x00f6_0000),
        gicr_stride: 0x2_0000,
    }),
    timer_hyp_irq: 26,
    timer_virt_irq: 27,
    timer_phys_irq: 30,
    maintenance_irq: 25,
    spis: 256,
};
