//! The planned memory layout of a loaded system, as `cargo xtask check-config` prints it.
//!
//! Pure formatting of a validated `System`; it decides nothing and reads no file.

use std::fmt::Write;

use partita_core::board::Region;
use partita_core::config::{DeviceConfig, VmConfig, DTB_SIZE};

use crate::config::System;

fn range(r: Region) -> String {
    format!("{:#010x}..{:#010x}", r.base, r.base + r.size)
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// The layout of every VM, one line per region, image and device.
pub fn describe(system: &System) -> String {
    let cfg = &system.config;
    let board = cfg.board.platform.board();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "board {}: {} physical CPU(s), RAM {}, Partita {} (loaded at {:#x})",
        board.platform.name(),
        cfg.board.cpus,
        board.ram_ranges(),
        range(board.hypervisor),
        board.hypervisor_load
    );
    for (i, vm) in cfg.vms.iter().enumerate() {
        describe_vm(&mut out, i, vm);
    }
    for (c, channel) in cfg.channels.iter().enumerate() {
        let phys = channel
            .physical()
            .map_or_else(|| "unplanned".to_string(), range);
        let _ = writeln!(
            out,
            "channel[{c}] {}: physical {phys} ({}), a doorbell at most every {} us per VM",
            channel.name,
            size(channel.size),
            channel.ring_interval_us
        );
        for m in &channel.members {
            let _ = writeln!(
                out,
                "  vm {:<10} at {:#x} ({}), doorbell irq {}",
                m.vm,
                m.base,
                m.access.name(),
                m.irq
            );
        }
    }
    if let Some(f) = &cfg.fabric {
        let _ = writeln!(
            out,
            "fabric: CPU {}, {} region(s), {} accelerator(s)",
            f.cpu,
            f.regions.len(),
            f.accelerators.len()
        );
        for (d, a) in f.accelerators.iter().enumerate() {
            let pages: Vec<String> = a
                .vms
                .iter()
                .filter_map(|name| {
                    let vm = cfg.vms.iter().position(|v| v.name == *name)?;
                    let page = f.interface_page(vm, d)?;
                    Some(format!("{name} {page:#x}"))
                })
                .collect();
            let _ = writeln!(
                out,
                "  accelerator[{d}] {} at {:#x}, irq {}: interface pages {}",
                a.name,
                a.base,
                a.irq,
                if pages.is_empty() {
                    "unplanned".to_string()
                } else {
                    pages.join(", ")
                }
            );
        }
    }
    out
}

fn describe_vm(out: &mut String, i: usize, vm: &VmConfig) {
    let cpus: Vec<String> = vm.cpus.iter().map(u8::to_string).collect();
    let _ = writeln!(
        out,
        "vm[{i}] {}: {}, priority {}, CPU {}, bootargs \"{}\"",
        vm.name,
        vm.kind.name(),
        vm.priority,
        cpus.join(","),
        vm.bootargs
    );
    for (j, m) in vm.memory.iter().enumerate() {
        let phys = m.physical().map_or_else(|| "unplanned".to_string(), range);
        let _ = writeln!(
            out,
            "  memory[{j}]  guest {} -> physical {phys} ({})",
            range(m.guest()),
            size(m.size)
        );
    }
    let _ = writeln!(
        out,
        "  image      \"{}\" ({} bytes) at {:#x}",
        vm.image.path,
        vm.image.size,
        vm.load_address().unwrap_or(0)
    );
    if let Some(k) = vm.image.kernel {
        let _ = writeln!(
            out,
            "             arm64 Linux Image: text_offset {:#x}, image_size {} bytes",
            k.text_offset, k.image_size
        );
    }
    if let (Some(initrd), Some(at)) = (&vm.initrd, vm.initrd_region()) {
        let _ = writeln!(
            out,
            "  initrd     \"{}\" ({} bytes) at {:#x}",
            initrd.path, initrd.size, at.base
        );
    }
    if let Some(first) = vm.memory.first() {
        let dtb = first.base + first.size - DTB_SIZE;
        let _ = writeln!(
            out,
            "  dtb        at {dtb:#x} (last {} of memory[0])",
            size(DTB_SIZE)
        );
    }
    for (j, d) in vm.devices.iter().enumerate() {
        let line = match *d {
            DeviceConfig::Pl011 { base, irq } => format!("pl011   at {base:#x}, irq {irq}"),
            DeviceConfig::TestDev { base } => format!("testdev at {base:#x}"),
        };
        let _ = writeln!(out, "  device[{j}]  {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_the_largest_exact_unit() {
        assert_eq!(size(0x20_0000), "2 MiB");
        assert_eq!(size(0x4000_0000), "1 GiB");
        assert_eq!(size(0x1000), "4 KiB");
        assert_eq!(size(0x1234), "4660 bytes");
    }
}
