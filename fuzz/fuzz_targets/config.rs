//! The configuration file (`partita_config::parse`, then core's `plan_memory` and
//! `validate`): any text either fails with one single-line message naming a key, or yields
//! a system whose planned memory lies in RAM, clear of Partita and of every other region,
//! clear of the VM's own devices, whose channels' memory is likewise nobody else's and
//! whose channel windows are clear of their VMs' memory and devices, and that survives the
//! bundle round trip unchanged.

#![no_main]

use libfuzzer_sys::fuzz_target;
use partita_core::board::Region;
use partita_core::bundle::{encode, Bundle, VmImages};
use partita_core::config::{plan_memory, validate, ConfigError, SystemConfig};

/// The size every image and initrd gets, as if the files held this many bytes.
const FILE_SIZE: u64 = 0x1000;

/// An error is one line of plain text: no newline, no terminal control sequence.
fn one_line(error: &ConfigError) {
    let line = error.to_string();
    assert!(!error.message.is_empty(), "empty message for {}", error.key);
    assert!(
        !line.chars().any(char::is_control),
        "not one plain line: {line:?}"
    );
}

fn check_layout(config: &SystemConfig) {
    let board = config.board.platform.board();
    let mut placed: Vec<Region> = Vec::new();
    for vm in &config.vms {
        for m in &vm.memory {
            let phys = m.physical().expect("validated memory is planned");
            assert!(board.ram_bank_of(&phys).is_some(), "{phys:?} outside RAM");
            assert!(
                !phys.overlaps(&board.hypervisor),
                "{phys:?} overlaps Partita"
            );
            assert!(!placed.iter().any(|p| p.overlaps(&phys)), "{phys:?} shared");
            placed.push(phys);
            for d in &vm.devices {
                assert!(!d.window().overlaps(&m.guest()), "device over memory");
            }
        }
    }
    for channel in &config.channels {
        let phys = channel.physical().expect("a validated channel is planned");
        assert!(
            board.ram_bank_of(&phys).is_some(),
            "channel {phys:?} outside RAM"
        );
        assert!(!phys.overlaps(&board.hypervisor), "channel over Partita");
        assert!(
            !placed.iter().any(|p| p.overlaps(&phys)),
            "channel {phys:?} shared"
        );
        placed.push(phys);
        for member in &channel.members {
            let vm = config
                .vms
                .iter()
                .find(|vm| vm.name == member.vm)
                .expect("a validated channel names configured VMs");
            let window = channel.window(member);
            assert!(!vm.memory.iter().any(|m| m.guest().overlaps(&window)));
            assert!(!vm.devices.iter().any(|d| d.window().overlaps(&window)));
        }
    }
}

fn check_bundle(config: &SystemConfig) {
    let files: Vec<(Vec<u8>, Option<Vec<u8>>)> = config
        .vms
        .iter()
        .map(|vm| {
            let initrd = vm.initrd.as_ref().map(|i| vec![0x5a; i.size as usize]);
            (vec![0xa5; vm.image.size as usize], initrd)
        })
        .collect();
    let images: Vec<VmImages> = files
        .iter()
        .map(|(image, initrd)| VmImages {
            image,
            initrd: initrd.as_deref(),
        })
        .collect();
    let blob = encode(config, &images);
    let bundle = Bundle::parse(&blob).expect("an encoded bundle parses");
    assert_eq!(&bundle.config, config);
    for (i, expected) in images.iter().enumerate() {
        assert_eq!(bundle.images(i), Some(*expected));
    }
}

fn check(text: &str) {
    let mut config = match partita_config::parse(text) {
        Ok(config) => config,
        Err(e) => return one_line(&e),
    };
    for vm in &mut config.vms {
        vm.image.size = FILE_SIZE;
        if let Some(initrd) = vm.initrd.as_mut() {
            initrd.size = FILE_SIZE;
        }
    }
    if let Err(e) = plan_memory(&mut config).and_then(|()| validate(&config)) {
        return one_line(&e);
    }
    check_layout(&config);
    check_bundle(&config);
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        check(text);
    }
});
