//! QEMU 7.2's `xlnx-zcu102` (Zynq UltraScale+ MPSoC ZCU102) as the host tool starts it:
//! `-M xlnx-zcu102,virtualization=on -m 3G` (QEMU refuses 4 GiB or more without a `-dtb`,
//! which this machine does not generate), its DisplayPort audio on the `none` backend. Four
//! Cortex-A53 in one cluster, DDR in two banks (2 GiB at 0, the third GiB at 32 GiB), a
//! GIC-400 (GICv2 with the virtualization extensions),
//! the Cadence UART 0 as console. Addresses as `info mtree` shows them: the GIC-400 frames
//! repeat every 4 KiB inside 64 KiB, and the last 4 KiB alias of GICC (and of GICV) is
//! followed by its second page, so 0xf902f000 and 0xf906f000 hold whole 8 KiB interfaces.

use super::{Board, Gic, GicV2, Platform, QemuMachine, Region, Uart, UartKind};

pub static ZCU102: Board = Board {
    platform: Platform::Zcu102,
    name: "zcu102",
    qemu: QemuMachine {
        machine: "xlnx-zcu102,virtualization=on",
        memory: "3G",
        extra: &["-audiodev", "none,id=audio0"],
    },
    ram: &[
        Region::new(0, 0x8000_0000),
        Region::new(0x8_0000_0000, 0x4000_0000),
    ],
    devices: &[Region::new(0xf900_0000, 0x0700_0000)],
    hypervisor: Region::new(0, 0x2000_0000),
    hypervisor_load: 0x20_0000,
    cpus: &[0, 1, 2, 3],
    uart: Uart {
        kind: UartKind::Cadence,
        region: Region::new(0xff00_0000, 0x1000),
        irq: 53,
    },
    gic: Gic::V2(GicV2 {
        gicd: Region::new(0xf901_0000, 0x1000),
        gicc: Region::new(0xf902_f000, 0x2000),
        gich: Region::new(0xf904_0000, 0x1000),
        gicv: Region::new(0xf906_f000, 0x2000),
    }),
    timer_hyp_irq: 26,
    timer_virt_irq: 27,
    timer_phys_irq: 30,
    maintenance_irq: 25,
    spis: 160,
};
