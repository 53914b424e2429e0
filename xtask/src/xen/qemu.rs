//! Boots Xen on QEMU with the Linux guest as dom0: Xen is QEMU's `-kernel`
//! (entered at EL2), its own command line is `-append`, and QEMU's
//! `guest-loader` devices place dom0's kernel (with its bootargs) and
//! initramfs in RAM and describe them to Xen as `/chosen` multiboot modules.
//! It only builds commands and strings; running them is the caller's business.

use crate::linux::{self, LinuxGuest};
use crate::qemu::{Clock, Machine};
use anyhow::Result;
use std::path::Path;
use std::process::Command;

/// dom0's console: Xen keeps the PL011 for itself and gives dom0 its PV
/// console.
const DOM0_CONSOLE: &str = "hvc0";

/// dom0 arguments on top of the native ones (KPTI off explicitly, so Xen's
/// view of the CPU cannot switch it on).
const DOM0_EXTRA: [&str; 1] = ["kpti=0"];

/// Xen's command line. One pCPU (Xen 4.17 hangs with several under icount)
/// and one dom0 vCPU; 2 GiB for dom0 out of the machine's 4 GiB; no boot-time
/// scrubbing of free memory (it would run in the idle loop, beside the
/// measurements); console on the board's PL011; boot-relative timestamps
/// on Xen's lines (virtual time since Xen started).
const XEN_CMDLINE: [&str; 7] = [
    "dom0_mem=2G,max:2G",
    "dom0_max_vcpus=1",
    "maxcpus=1",
    "bootscrub=0",
    "console=dtuart",
    "dtuart=/pl011@9000000",
    "console_timestamps=boot",
];

/// Where guest-loader puts dom0's kernel: above the 2 MiB Xen loads at
/// (0x4020_0000) and the device tree QEMU places at 0x4800_0000.
const DOM0_KERNEL_ADDR: u64 = 0x4900_0000;

/// Alignment of the initramfs after the kernel.
const MODULE_ALIGN: u64 = 0x20_0000;

/// Guest-physical addresses of dom0's boot modules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dom0Layout {
    pub kernel: u64,
    pub initrd: u64,
}

impl Dom0Layout {
    /// The kernel at `DOM0_KERNEL_ADDR`, the initramfs at the next 2 MiB
    /// boundary after a kernel of `kernel_size` bytes.
    pub fn after_kernel(kernel_size: u64) -> Dom0Layout {
        let end = DOM0_KERNEL_ADDR + kernel_size;
        Dom0Layout {
            kernel: DOM0_KERNEL_ADDR,
            initrd: end.div_ceil(MODULE_ALIGN) * MODULE_ALIGN,
        }
    }
}

/// How to run QEMU for a Xen boot.
#[derive(Debug, Clone)]
pub struct XenOptions {
    pub clock: Clock,
}

/// dom0's kernel command line: the native one with the console on `hvc0`
/// and `kpti=0`, then the job if any.
pub fn dom0_bootargs(job: Option<&str>) -> Result<String> {
    linux::bootargs_on(DOM0_CONSOLE, job, &DOM0_EXTRA)
}

/// The qemu-system-aarch64 command booting `xen` with `guest` as dom0.
pub fn command(
    xen: &Path,
    guest: &LinuxGuest,
    layout: Dom0Layout,
    bootargs: &str,
    options: &XenOptions,
) -> Command {
    let kernel = format!(
        "guest-loader,addr={:#x},kernel={},bootargs={}",
        layout.kernel,
        escape(&guest.kernel.to_string_lossy()),
        escape(bootargs)
    );
    let initrd = format!(
        "guest-loader,addr={:#x},initrd={}",
        layout.initrd,
        escape(&guest.initramfs.to_string_lossy())
    );
    let mut command = Machine::single(options.clock).command(xen);
    command
        .args(["-append", &XEN_CMDLINE.join(" ")])
        .args(["-device", &kernel, "-device", &initrd]);
    command
}

/// A value inside a QEMU `-device` option list: commas are doubled.
fn escape(value: &str) -> String {
    value.replace(',', ",,")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::describe;
    use std::path::PathBuf;

    #[test]
    fn initrd_follows_the_kernel_on_a_2_mib_boundary() {
        let layout = Dom0Layout::after_kernel(32_956_352);
        assert_eq!(layout.kernel, 0x4900_0000);
        assert_eq!(layout.initrd, 0x4b00_0000);
        assert_eq!(Dom0Layout::after_kernel(0x20_0000).initrd, 0x4920_0000);
    }

    #[test]
    fn dom0_runs_the_job_on_the_xen_console() {
        assert_eq!(
            dom0_bootargs(Some("true")).unwrap(),
            "console=hvc0 nokaslr kpti=0 partita.job=74727565"
        );
    }

    #[test]
    fn the_command_line_boots_xen_with_dom0_modules() {
        let guest = LinuxGuest {
            kernel: PathBuf::from("cache/linux/Image"),
            initramfs: PathBuf::from("cache/a,b/initramfs.cpio"),
            versions: Vec::new(),
        };
        let layout = Dom0Layout {
            kernel: 0x4900_0000,
            initrd: 0x4b00_0000,
        };
        let options = XenOptions {
            clock: Clock::Counted,
        };
        let command = command(
            Path::new("cache/xen/xen-4.17-arm64"),
            &guest,
            layout,
            "console=hvc0 nokaslr x=1,2",
            &options,
        );
        assert_eq!(
            describe(&command),
            "qemu-system-aarch64 -M virt,virtualization=on,gic-version=3 -cpu cortex-a72 -m 4G \
             -smp 1 -nic none -nographic -semihosting-config enable=on,target=native \
             -kernel cache/xen/xen-4.17-arm64 \
             -icount shift=0,align=off,sleep=off -seed 1 -rtc base=2020-01-01T00:00:00,clock=vm \
             -append 'dom0_mem=2G,max:2G dom0_max_vcpus=1 maxcpus=1 bootscrub=0 console=dtuart \
             dtuart=/pl011@9000000 console_timestamps=boot' \
             -device 'guest-loader,addr=0x49000000,kernel=cache/linux/Image,bootargs=console=hvc0 nokaslr x=1,,2' \
             -device guest-loader,addr=0x4b000000,initrd=cache/a,,b/initramfs.cpio"
        );
    }
}
