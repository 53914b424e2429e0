//! The configuration file's schema: which sections and keys exist, their types and defaults.
//!
//! It walks the parsed TOML table and builds core's `SystemConfig`, reporting the first
//! mistake as a `ConfigError` with the exact key. It checks only the shape of the file
//! (keys, types, names, ranges); the rules about the system itself (overlaps, CPUs, image
//! room) belong to `partita_core::config::validate`, and the image files are read elsewhere.

use partita_core::accel::functions::Function;
use partita_core::board::Platform;
use partita_core::config::{
    default_timer_advance_ns, AcceleratorConfig, Access, BitstreamConfig, BoardConfig,
    ChannelConfig, ChannelMember, ConfigError, ConsoleConfig, ConsoleView, DeviceConfig, EndAction,
    FabricConfig, ImageConfig, InitrdConfig, MemoryRegion, RegionConfig, ResetAction, SystemConfig,
    TimerMode, VmConfig, VmKind, DEFAULT_GUEST_BEAT_US, DEFAULT_HOLD_US,
    DEFAULT_RECONFIG_BYTES_PER_US, DEFAULT_RING_INTERVAL_US,
};
use partita_core::sched::DEFAULT_SLICE_US;
use toml::{Table, Value};

use super::fields::{integer, wrong_type, Fields};

const TOP_KEYS: [&str; 5] = ["board", "vm", "console", "channel", "fabric"];
const BOARD_KEYS: [&str; 3] = ["platform", "cpus", "slice_us"];
const VM_KEYS: [&str; 16] = [
    "name",
    "kind",
    "priority",
    "cpus",
    "bootargs",
    "memory",
    "image",
    "initrd",
    "device",
    "on_reset",
    "on_fault",
    "on_poweroff",
    "timer",
    "timer_advance_ns",
    "irqs",
    "migrate",
];
const CONSOLE_KEYS: [&str; 1] = ["view"];
const MEMORY_KEYS: [&str; 3] = ["base", "size", "phys"];
const IMAGE_KEYS: [&str; 2] = ["path", "load"];
const PL011_KEYS: [&str; 3] = ["type", "base", "irq"];
const TESTDEV_KEYS: [&str; 2] = ["type", "base"];
const CHANNEL_KEYS: [&str; 5] = ["name", "size", "phys", "ring_interval_us", "vm"];
const CHANNEL_VM_KEYS: [&str; 4] = ["name", "base", "access", "irq"];
const FABRIC_KEYS: [&str; 6] = [
    "cpu",
    "reconfig_bytes_per_us",
    "hold_us",
    "guest_beat_us",
    "region",
    "accelerator",
];
const REGION_KEYS: [&str; 2] = ["name", "size"];
const ACCELERATOR_KEYS: [&str; 7] = [
    "name",
    "function",
    "base",
    "irq",
    "frame_ns",
    "vms",
    "bitstream",
];
const BITSTREAM_KEYS: [&str; 2] = ["region", "size"];

/// Scheduling priority of a VM that names none.
fn default_priority(kind: VmKind) -> u8 {
    match kind {
        VmKind::Rtos => 200,
        VmKind::Gpos => 100,
    }
}

/// Builds the system from the whole file. Image sizes are left at 0 for the caller to fill.
pub fn system(top: &Table) -> Result<SystemConfig, ConfigError> {
    let top = Fields::new("", top, "the top level", &TOP_KEYS)?;
    let board = match top.required("board")? {
        Value::Table(t) => board(t)?,
        v => return Err(wrong_type("board", "a table ([board])", v)),
    };
    if let Some(v @ Value::Table(_)) = top.get("vm") {
        return Err(wrong_type("vm", "an array of tables ([[vm]])", v));
    }
    let vms = top
        .tables("vm")?
        .into_iter()
        .enumerate()
        .map(|(i, t)| vm(i, t))
        .collect::<Result<_, _>>()?;
    if let Some(v @ Value::Table(_)) = top.get("channel") {
        return Err(wrong_type("channel", "an array of tables ([[channel]])", v));
    }
    let channels = top
        .tables("channel")?
        .into_iter()
        .enumerate()
        .map(|(c, t)| channel(c, t))
        .collect::<Result<_, _>>()?;
    let console = match top.get("console") {
        None => ConsoleConfig::default(),
        Some(Value::Table(t)) => console(t)?,
        Some(v) => return Err(wrong_type("console", "a table ([console])", v)),
    };
    let fabric = match top.get("fabric") {
        None => None,
        Some(Value::Table(t)) => Some(fabric(t)?),
        Some(v) => return Err(wrong_type("fabric", "a table ([fabric])", v)),
    };
    Ok(SystemConfig {
        board,
        vms,
        console,
        channels,
        fabric,
    })
}

fn fabric(table: &Table) -> Result<FabricConfig, ConfigError> {
    let f = Fields::new("fabric", table, "[fabric]", &FABRIC_KEYS)?;
    let regions = f
        .tables("region")?
        .into_iter()
        .enumerate()
        .map(|(r, t)| {
            let f = Fields::new(format!("fabric.region[{r}]"), t, "a region", &REGION_KEYS)?;
            Ok(RegionConfig {
                name: f.required_string("name")?.to_string(),
                size: f.size("size")?,
            })
        })
        .collect::<Result<_, ConfigError>>()?;
    let accelerators = f
        .tables("accelerator")?
        .into_iter()
        .enumerate()
        .map(|(d, t)| accelerator(d, t))
        .collect::<Result<_, _>>()?;
    Ok(FabricConfig {
        cpu: integer(&f.key("cpu"), f.required("cpu")?)?,
        reconfig_bytes_per_us: f
            .optional_u32("reconfig_bytes_per_us")?
            .unwrap_or(DEFAULT_RECONFIG_BYTES_PER_US),
        hold_us: f.optional_u32("hold_us")?.unwrap_or(DEFAULT_HOLD_US),
        guest_beat_us: f
            .optional_u32("guest_beat_us")?
            .unwrap_or(DEFAULT_GUEST_BEAT_US),
        regions,
        accelerators,
        phys: None,
    })
}

fn accelerator(d: usize, table: &Table) -> Result<AcceleratorConfig, ConfigError> {
    let path = format!("fabric.accelerator[{d}]");
    let f = Fields::new(path, table, "an accelerator", &ACCELERATOR_KEYS)?;
    let name = f.required_string("function")?;
    let function = Function::from_name(name).ok_or_else(|| {
        ConfigError::new(
            f.key("function"),
            format!("unknown function \"{name}\"; expected \"qam16\", \"qam64\", \"fft512\" or \"fft1024\""),
        )
    })?;
    let bitstreams = f
        .tables("bitstream")?
        .into_iter()
        .enumerate()
        .map(|(b, t)| {
            let f = Fields::new(
                format!("fabric.accelerator[{d}].bitstream[{b}]"),
                t,
                "a bitstream",
                &BITSTREAM_KEYS,
            )?;
            Ok(BitstreamConfig {
                region: f.required_string("region")?.to_string(),
                size: f.size("size")?,
            })
        })
        .collect::<Result<_, ConfigError>>()?;
    Ok(AcceleratorConfig {
        name: f.required_string("name")?.to_string(),
        function,
        base: f.required_address("base")?,
        irq: f.u32("irq")?,
        frame_ns: f
            .optional_u32("frame_ns")?
            .unwrap_or_else(|| function.table6_frame_ns()),
        vms: f.strings("vms")?,
        bitstreams,
    })
}

fn channel(c: usize, table: &Table) -> Result<ChannelConfig, ConfigError> {
    let f = Fields::new(
        format!("channel[{c}]"),
        table,
        "a [[channel]] table",
        &CHANNEL_KEYS,
    )?;
    let name = f.required_string("name")?.to_string();
    let size = f.size("size")?;
    let phys = f.address("phys")?;
    let ring_interval_us = f
        .optional_u32("ring_interval_us")?
        .unwrap_or(DEFAULT_RING_INTERVAL_US);
    f.required("vm")?;
    let members = f
        .tables("vm")?
        .into_iter()
        .enumerate()
        .map(|(j, t)| channel_member(&f.key(&format!("vm[{j}]")), t))
        .collect::<Result<_, _>>()?;
    Ok(ChannelConfig {
        name,
        size,
        phys,
        ring_interval_us,
        members,
    })
}

fn channel_member(path: &str, table: &Table) -> Result<ChannelMember, ConfigError> {
    let f = Fields::new(path, table, "a channel's VM", &CHANNEL_VM_KEYS)?;
    let vm = f.required_string("name")?.to_string();
    let base = f.required_address("base")?;
    let access = match f.string("access")? {
        None => Access::ReadWrite,
        Some(name) => Access::from_name(name).ok_or_else(|| {
            ConfigError::new(
                f.key("access"),
                format!("unknown access \"{name}\"; expected \"rw\" or \"ro\""),
            )
        })?,
    };
    let irq = f.u32("irq")?;
    Ok(ChannelMember {
        vm,
        base,
        access,
        irq,
    })
}

fn console(table: &Table) -> Result<ConsoleConfig, ConfigError> {
    let f = Fields::new("console", table, "[console]", &CONSOLE_KEYS)?;
    let view = match f.string("view")? {
        None => ConsoleView::default(),
        Some(name) => ConsoleView::from_name(name).ok_or_else(|| {
            ConfigError::new(
                f.key("view"),
                format!("unknown view \"{name}\"; expected \"focus\" or \"all\""),
            )
        })?,
    };
    Ok(ConsoleConfig {
        view,
        log_dir: None,
    })
}

fn board(table: &Table) -> Result<BoardConfig, ConfigError> {
    let f = Fields::new("board", table, "[board]", &BOARD_KEYS)?;
    let name = f.required_string("platform")?;
    let platform = Platform::from_name(name).ok_or_else(|| {
        let known: Vec<_> = Platform::ALL.iter().map(|p| p.name()).collect();
        ConfigError::new(
            f.key("platform"),
            format!(
                "unknown platform \"{name}\"; known platforms: {}",
                known.join(", ")
            ),
        )
    })?;
    let cpus = f.u8("cpus")?.unwrap_or(1);
    let slice_us = f.optional_u32("slice_us")?.unwrap_or(DEFAULT_SLICE_US);
    Ok(BoardConfig {
        platform,
        cpus,
        slice_us,
    })
}

fn vm(i: usize, table: &Table) -> Result<VmConfig, ConfigError> {
    let f = Fields::new(format!("vm[{i}]"), table, "a [[vm]] table", &VM_KEYS)?;
    let name = f.required_string("name")?.to_string();
    let kind_name = f.required_string("kind")?;
    let kind = VmKind::from_name(kind_name).ok_or_else(|| {
        ConfigError::new(
            f.key("kind"),
            format!("unknown kind \"{kind_name}\"; expected \"rtos\" or \"gpos\""),
        )
    })?;
    let priority = f.u8("priority")?.unwrap_or(default_priority(kind));
    let cpus = f.u8_array("cpus")?;
    let bootargs = f.string("bootargs")?.unwrap_or_default().to_string();
    f.required("memory")?;
    let memory = f
        .tables("memory")?
        .into_iter()
        .enumerate()
        .map(|(j, t)| memory(&f.key(&format!("memory[{j}]")), t))
        .collect::<Result<_, _>>()?;
    let image = image(&f)?;
    let initrd = initrd(&f)?;
    let on_reset = on_reset(&f)?;
    let on_fault = end_action(&f, "on_fault")?;
    let on_poweroff = end_action(&f, "on_poweroff")?;
    let timer = timer(&f)?;
    let irqs = f.u32_array("irqs")?;
    let migrate = f.boolean("migrate")?.unwrap_or(false);
    let timer_advance_ns = f
        .optional_u32("timer_advance_ns")?
        .unwrap_or(default_timer_advance_ns(kind, timer));
    let devices = f
        .tables("device")?
        .into_iter()
        .enumerate()
        .map(|(j, t)| device(&f.key(&format!("device[{j}]")), t))
        .collect::<Result<_, _>>()?;
    Ok(VmConfig {
        name,
        kind,
        priority,
        cpus,
        memory,
        image,
        initrd,
        bootargs,
        devices,
        on_reset,
        on_fault,
        on_poweroff,
        timer,
        irqs,
        migrate,
        timer_advance_ns,
    })
}

fn timer(vm: &Fields) -> Result<TimerMode, ConfigError> {
    let Some(name) = vm.string("timer")? else {
        return Ok(TimerMode::Virtual);
    };
    TimerMode::from_name(name).ok_or_else(|| {
        ConfigError::new(
            vm.key("timer"),
            format!("unknown timer \"{name}\"; expected \"virtual\" or \"physical\""),
        )
    })
}

fn initrd(vm: &Fields) -> Result<Option<InitrdConfig>, ConfigError> {
    match vm.string("initrd")? {
        Some("") => Err(ConfigError::new(
            vm.key("initrd"),
            "the initrd path is empty",
        )),
        Some(path) => Ok(Some(InitrdConfig {
            path: path.to_string(),
            size: 0,
        })),
        None => Ok(None),
    }
}

fn on_reset(vm: &Fields) -> Result<ResetAction, ConfigError> {
    let Some(name) = vm.string("on_reset")? else {
        return Ok(ResetAction::Restart);
    };
    ResetAction::from_name(name).ok_or_else(|| {
        ConfigError::new(
            vm.key("on_reset"),
            format!("unknown action \"{name}\"; expected \"restart\" or \"fault\""),
        )
    })
}

/// What ends a boot (`on_fault`, `on_poweroff`) leads to; "stop" when not given.
fn end_action(vm: &Fields, key: &str) -> Result<EndAction, ConfigError> {
    let Some(name) = vm.string(key)? else {
        return Ok(EndAction::Stop);
    };
    EndAction::from_name(name).ok_or_else(|| {
        ConfigError::new(
            vm.key(key),
            format!("unknown action \"{name}\"; expected \"stop\" or \"restart\""),
        )
    })
}

fn memory(path: &str, table: &Table) -> Result<MemoryRegion, ConfigError> {
    let f = Fields::new(path, table, "a memory region", &MEMORY_KEYS)?;
    Ok(MemoryRegion {
        base: f.required_address("base")?,
        size: f.size("size")?,
        phys: f.address("phys")?,
    })
}

fn image(vm: &Fields) -> Result<ImageConfig, ConfigError> {
    let key = vm.key("image");
    let (path, load) = match vm.required("image")? {
        Value::String(path) => (path.clone(), None),
        Value::Table(t) => {
            let f = Fields::new(key.clone(), t, "an image table", &IMAGE_KEYS)?;
            (f.required_string("path")?.to_string(), f.address("load")?)
        }
        v => {
            return Err(wrong_type(
                &key,
                "a path string or a table { path, load }",
                v,
            ))
        }
    };
    if path.is_empty() {
        return Err(ConfigError::new(key, "the image path is empty"));
    }
    Ok(ImageConfig {
        path,
        load,
        size: 0,
        kernel: None,
    })
}

fn device(path: &str, table: &Table) -> Result<DeviceConfig, ConfigError> {
    let type_key = format!("{path}.type");
    let kind = match table.get("type") {
        Some(Value::String(s)) => s.as_str(),
        Some(v) => return Err(wrong_type(&type_key, "a string", v)),
        None => return Err(ConfigError::new(type_key, "missing required key")),
    };
    match kind {
        "pl011" => {
            let f = Fields::new(path, table, "a \"pl011\" device", &PL011_KEYS)?;
            Ok(DeviceConfig::Pl011 {
                base: f.required_address("base")?,
                irq: f.u32("irq")?,
            })
        }
        "testdev" => {
            let f = Fields::new(path, table, "a \"testdev\" device", &TESTDEV_KEYS)?;
            Ok(DeviceConfig::TestDev {
                base: f.required_address("base")?,
            })
        }
        other => Err(ConfigError::new(
            type_key,
            format!(
                "unknown device type \"{other}\"; known types: {}",
                DeviceConfig::TYPES.join(", ")
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROBE: &str = r#"
        [board]
        platform = "qemu-virt"
        [[vm]]
        name = "probe"
        kind = "rtos"
        cpus = [0]
        memory = [ { base = 0x4000_0000, size = "2M" } ]
        image = "probe.bin"
        [[vm.device]]
        type = "pl011"
        base = 0x0900_0000
        irq = 33
        [[vm.device]]
        type = "testdev"
        base = 0x0a00_0000
    "#;

    use partita_core::config::RTOS_TIMER_ADVANCE_NS;

    fn parse(text: &str) -> Result<SystemConfig, String> {
        system(&text.parse::<Table>().unwrap()).map_err(|e| e.to_string())
    }

    #[test]
    fn the_probe_system_parses_with_defaults() {
        let cfg = parse(PROBE).unwrap();
        assert_eq!(cfg.board.cpus, 1);
        assert_eq!(cfg.board.slice_us, DEFAULT_SLICE_US);
        assert_eq!(cfg.vms[0].timer, TimerMode::Virtual);
        assert!(cfg.vms[0].irqs.is_empty());
        let vm = &cfg.vms[0];
        assert_eq!(vm.priority, 200);
        assert_eq!(vm.bootargs, "");
        assert_eq!(
            vm.memory,
            [MemoryRegion {
                base: 0x4000_0000,
                size: 0x20_0000,
                phys: None
            }]
        );
        assert_eq!(vm.image.load, None);
        assert_eq!(vm.devices.len(), 2);
        assert_eq!(vm.devices[1], DeviceConfig::TestDev { base: 0x0a00_0000 });
        assert_eq!(vm.initrd, None);
        assert_eq!(vm.on_reset, ResetAction::Restart);
        assert_eq!(vm.on_fault, EndAction::Stop);
        assert_eq!(vm.on_poweroff, EndAction::Stop);
    }

    #[test]
    fn end_actions_parse() {
        let text = PROBE.replace(
            "image = \"probe.bin\"",
            "image = \"probe.bin\"\non_fault = \"restart\"\non_poweroff = \"restart\"",
        );
        let vm = &parse(&text).unwrap().vms[0];
        assert_eq!(vm.on_fault, EndAction::Restart);
        assert_eq!(vm.on_poweroff, EndAction::Restart);
        let bad = PROBE.replace(
            "image = \"probe.bin\"",
            "image = \"probe.bin\"\non_poweroff = \"fault\"",
        );
        assert_eq!(
            parse(&bad).unwrap_err(),
            "vm[0].on_poweroff: unknown action \"fault\"; expected \"stop\" or \"restart\""
        );
    }

    #[test]
    fn linux_keys_parse() {
        let text = PROBE.replace(
            "image = \"probe.bin\"",
            "image = \"Image\"\ninitrd = \"initrd.cpio\"\non_reset = \"fault\"",
        );
        let cfg = parse(&text).unwrap();
        let vm = &cfg.vms[0];
        assert_eq!(
            vm.initrd.as_ref().map(|i| i.path.as_str()),
            Some("initrd.cpio")
        );
        assert_eq!(vm.on_reset, ResetAction::Fault);
    }

    #[test]
    fn scheduling_and_interrupt_keys_parse() {
        let text = PROBE
            .replace("[board]", "[board]\nslice_us = 2000")
            .replace(
                "cpus = [0]",
                "cpus = [0]\ntimer = \"physical\"\nirqs = [40, 41]",
            );
        let cfg = parse(&text).unwrap();
        assert_eq!(cfg.board.slice_us, 2000);
        assert_eq!(cfg.vms[0].timer, TimerMode::Physical);
        assert_eq!(cfg.vms[0].irqs, [40, 41]);
        assert_eq!(
            cfg.vms[0].timer_advance_ns, 0,
            "no advance on the physical timer"
        );
    }

    #[test]
    fn the_timer_advance_defaults_by_kind_and_can_be_set() {
        let rtos = parse(PROBE).unwrap();
        assert_eq!(rtos.vms[0].timer_advance_ns, RTOS_TIMER_ADVANCE_NS);
        let gpos = parse(&PROBE.replace("kind = \"rtos\"", "kind = \"gpos\"")).unwrap();
        assert_eq!(gpos.vms[0].timer_advance_ns, 0);
        let set = PROBE.replace("cpus = [0]", "cpus = [0]\ntimer_advance_ns = 0");
        assert_eq!(parse(&set).unwrap().vms[0].timer_advance_ns, 0);
        let set = PROBE.replace("cpus = [0]", "cpus = [0]\ntimer_advance_ns = 5000");
        assert_eq!(parse(&set).unwrap().vms[0].timer_advance_ns, 5000);
        let bad = PROBE.replace("cpus = [0]", "cpus = [0]\ntimer_advance_ns = \"2us\"");
        assert_eq!(
            parse(&bad).unwrap_err(),
            "vm[0].timer_advance_ns: expected an integer, found a string"
        );
    }

    #[test]
    fn image_tables_carry_a_load_address() {
        let text = PROBE.replace(
            "image = \"probe.bin\"",
            "image = { path = \"k\", load = 0x4008_0000 }\nkind = \"gpos\"",
        );
        let text = text.replace("kind = \"rtos\"\n", "");
        let cfg = parse(&text).unwrap();
        assert_eq!(cfg.vms[0].image.load, Some(0x4008_0000));
        assert_eq!(cfg.vms[0].priority, 100);
    }

    #[test]
    fn channels_parse_with_defaults() {
        let text = format!(
            "{PROBE}\n[[channel]]\nname = \"c\"\nsize = \"64K\"\n\
             vm = [{{ name = \"probe\", base = 0x5000_0000, irq = 64 }},\n\
             {{ name = \"x\", base = 0x6000_0000, access = \"ro\", irq = 65 }}]\n"
        );
        let cfg = parse(&text).unwrap();
        let c = &cfg.channels[0];
        assert_eq!((c.name.as_str(), c.size, c.phys), ("c", 0x1_0000, None));
        assert_eq!(c.ring_interval_us, DEFAULT_RING_INTERVAL_US);
        assert_eq!(c.members[0].access, Access::ReadWrite);
        assert_eq!(c.members[1].access, Access::ReadOnly);
        assert_eq!((c.members[1].base, c.members[1].irq), (0x6000_0000, 65));
        let bad = text.replace("\"ro\"", "\"wo\"");
        assert_eq!(
            parse(&bad).unwrap_err(),
            "channel[0].vm[1].access: unknown access \"wo\"; expected \"rw\" or \"ro\""
        );
    }

    #[test]
    fn shape_mistakes_name_the_key() {
        let cases = [
            ("platform = \"qemu-virt\"", "platform = \"rpi4\"", "board.platform: unknown platform \"rpi4\"; known platforms: qemu-virt, zcu102"),
            ("kind = \"rtos\"", "kind = \"linux\"", "vm[0].kind: unknown kind \"linux\"; expected \"rtos\" or \"gpos\""),
            ("type = \"testdev\"", "type = \"virtio\"", "vm[0].device[1].type: unknown device type \"virtio\"; known types: pl011, testdev"),
            ("irq = 33", "", "vm[0].device[0].irq: missing required key"),
            ("size = \"2M\"", "size = \"2 MiB\"", "vm[0].memory[0].size: \"2 MiB\" is not a size: write a number of bytes, or a number followed by K, M or G (\"4K\", \"2M\", \"1G\")"),
            ("image = \"probe.bin\"", "image = 7", "vm[0].image: expected a path string or a table { path, load }, found an integer"),
            ("cpus = [0]", "cpus = [0]\ntimer = \"hyp\"", "vm[0].timer: unknown timer \"hyp\"; expected \"virtual\" or \"physical\""),
            ("cpus = [0]", "cpus = [0]\nirqs = 40", "vm[0].irqs: expected an array of integers, found an integer"),
        ];
        for (from, to, expected) in cases {
            assert_eq!(parse(&PROBE.replace(from, to)).unwrap_err(), expected);
        }
        assert_eq!(
            parse("[board]\nplatform = \"qemu-virt\"\n[vm]\nname = \"a\"").unwrap_err(),
            "vm: expected an array of tables ([[vm]]), found a table"
        );
    }
}
