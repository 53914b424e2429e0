//! Boots Xen on QEMU: Xen is QEMU's `-kernel` (entered at EL2) and its own command line is
//! `-append`. Linux as dom0 is placed by QEMU's `guest-loader` devices, which put its
//! kernel (with its bootargs) and initramfs in RAM and describe them to Xen as `/chosen`
//! multiboot modules. A dom0less domU (the FreeRTOS image) is loaded by QEMU's generic
//! `loader` and described by the device tree given with `-dtb` (`dom0less`), made from the
//! one this same machine dumps. It only builds commands and strings; running them is the
//! caller's business.

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

/// The scheduler set-up of every boot with a domU (docs/xen.md, "The RTOS as a dom0less
/// domU"). Debian's build has only credit and credit2 (its `boot/xen-4.17-arm64.config`:
/// no RTDS, ARINC653 or null scheduler, which need CONFIG_UNSUPPORTED); weights and caps
/// need a toolstack in dom0, which the project's initramfs does not have. So: credit2, with
/// its rate limit off, so that a waking RTOS vCPU may preempt dom0 at once instead of after
/// dom0 has run its 1 ms minimum slice.
pub const DOMU_SCHEDULER: [&str; 2] = ["sched=credit2", "sched_ratelimit_us=0"];

/// Where the first boot module goes: above the 2 MiB Xen loads at (0x4020_0000) and the
/// device tree QEMU places at 0x4800_0000.
const FIRST_MODULE_ADDR: u64 = 0x4900_0000;

/// Alignment of every module after the first.
const MODULE_ALIGN: u64 = 0x20_0000;

/// Guest-physical addresses of the boot modules, one after the other from
/// `FIRST_MODULE_ADDR` on 2 MiB boundaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleLayout {
    pub addresses: Vec<u64>,
}

impl ModuleLayout {
    /// Places modules of `sizes` bytes in order.
    pub fn place(sizes: &[u64]) -> ModuleLayout {
        let mut next = FIRST_MODULE_ADDR;
        let addresses = sizes
            .iter()
            .map(|size| {
                let at = next;
                next = (at + size).div_ceil(MODULE_ALIGN) * MODULE_ALIGN;
                at
            })
            .collect();
        ModuleLayout { addresses }
    }
}

/// Linux as dom0: the prepared guest, its kernel command line, where its kernel and
/// initramfs go.
pub struct Dom0<'a> {
    pub guest: &'a LinuxGuest,
    pub bootargs: &'a str,
    pub kernel: u64,
    pub initrd: u64,
}

/// A dom0less domU's image and where it goes; the device tree describing it is `-dtb`.
pub struct DomUImage<'a> {
    pub image: &'a Path,
    pub addr: u64,
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

/// Xen's own command line: `XEN_CMDLINE`, and `DOMU_SCHEDULER` when a domU runs.
pub fn xen_cmdline(with_domu: bool) -> String {
    let scheduler: &[&str] = if with_domu { &DOMU_SCHEDULER } else { &[] };
    [XEN_CMDLINE.as_slice(), scheduler].concat().join(" ")
}

/// The command that only writes this machine's device tree to `out` and exits: the same
/// machine, Xen command line, dom0 modules and seed as `command`, so the tree is the one
/// Xen would get (its `rng-seed` included), before the domU nodes are added.
pub fn dump_command(
    xen: &Path,
    dom0: Option<&Dom0<'_>>,
    out: &Path,
    options: &XenOptions,
) -> Command {
    let mut command = xen_command(xen, true, options);
    command.args(["-machine", &format!("dumpdtb={}", out.to_string_lossy())]);
    add_dom0(&mut command, dom0);
    command
}

/// The qemu-system-aarch64 command booting `xen` with `dom0` and, given the device tree
/// that describes it, a dom0less `domu`.
pub fn command(
    xen: &Path,
    dom0: Option<&Dom0<'_>>,
    domu: Option<(&DomUImage<'_>, &Path)>,
    options: &XenOptions,
) -> Command {
    let mut command = xen_command(xen, domu.is_some(), options);
    add_dom0(&mut command, dom0);
    if let Some((image, dtb)) = domu {
        let loader = format!(
            "loader,file={},addr={:#x},force-raw=on",
            escape(&image.image.to_string_lossy()),
            image.addr
        );
        command.args(["-device", &loader]).arg("-dtb").arg(dtb);
    }
    command
}

/// The one-CPU machine of every configuration booting `xen` with its command line.
fn xen_command(xen: &Path, with_domu: bool, options: &XenOptions) -> Command {
    let mut command = Machine::single(options.clock).command(xen);
    command.args(["-append", &xen_cmdline(with_domu)]);
    command
}

fn add_dom0(command: &mut Command, dom0: Option<&Dom0<'_>>) {
    let Some(dom0) = dom0 else { return };
    let kernel = format!(
        "guest-loader,addr={:#x},kernel={},bootargs={}",
        dom0.kernel,
        escape(&dom0.guest.kernel.to_string_lossy()),
        escape(dom0.bootargs)
    );
    let initrd = format!(
        "guest-loader,addr={:#x},initrd={}",
        dom0.initrd,
        escape(&dom0.guest.initramfs.to_string_lossy())
    );
    command.args(["-device", &kernel, "-device", &initrd]);
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
    fn modules_follow_each_other_on_2_mib_boundaries() {
        let layout = ModuleLayout::place(&[32_956_352, 0x20_0000, 5]);
        assert_eq!(layout.addresses, [0x4900_0000, 0x4b00_0000, 0x4b20_0000]);
        assert!(ModuleLayout::place(&[]).addresses.is_empty());
    }

    #[test]
    fn dom0_runs_the_job_on_the_xen_console() {
        assert_eq!(
            dom0_bootargs(Some("true")).unwrap(),
            "console=hvc0 nokaslr kpti=0 partita.job=74727565"
        );
    }

    fn guest() -> LinuxGuest {
        LinuxGuest {
            kernel: PathBuf::from("cache/linux/Image"),
            initramfs: PathBuf::from("cache/a,b/initramfs.cpio"),
            versions: Vec::new(),
        }
    }

    #[test]
    fn the_command_line_boots_xen_with_dom0_modules() {
        let guest = guest();
        let dom0 = Dom0 {
            guest: &guest,
            bootargs: "console=hvc0 nokaslr x=1,2",
            kernel: 0x4900_0000,
            initrd: 0x4b00_0000,
        };
        let options = XenOptions {
            clock: Clock::Counted,
        };
        let command = command(
            Path::new("cache/xen/xen-4.17-arm64"),
            Some(&dom0),
            None,
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

    #[test]
    fn a_domu_is_loaded_raw_and_described_by_the_given_tree() {
        let image = DomUImage {
            image: Path::new("build/guests/freertos.bin"),
            addr: 0x4900_0000,
        };
        let options = XenOptions { clock: Clock::Host };
        let dump = dump_command(
            Path::new("xen"),
            None,
            Path::new("build/xen/host.dtb"),
            &options,
        );
        let run = command(
            Path::new("xen"),
            None,
            Some((&image, Path::new("build/xen/freertos.dtb"))),
            &options,
        );
        let append = "-append 'dom0_mem=2G,max:2G dom0_max_vcpus=1 maxcpus=1 bootscrub=0 \
                      console=dtuart dtuart=/pl011@9000000 console_timestamps=boot \
                      sched=credit2 sched_ratelimit_us=0'";
        let machine = "qemu-system-aarch64 -M virt,virtualization=on,gic-version=3 \
                       -cpu cortex-a72 -m 4G -smp 1 -nic none -nographic \
                       -semihosting-config enable=on,target=native -kernel xen";
        assert_eq!(
            describe(&dump),
            format!("{machine} {append} -machine dumpdtb=build/xen/host.dtb")
        );
        assert_eq!(
            describe(&run),
            format!(
                "{machine} {append} \
                 -device loader,file=build/guests/freertos.bin,addr=0x49000000,force-raw=on \
                 -dtb build/xen/freertos.dtb"
            )
        );
    }
}
