//! Inter-VM channels under a hostile peer: the ring (`partita_core::ivc::ring`) over shared
//! memory whose every word the peer may have written, and doorbell routing
//! (`partita_core::ivc::doorbell`) for any caller, channel id and time. Nothing panics,
//! every message handed out fits the buffer and the ring, a corrupt ring is reported and
//! recovers with `discard_all`, and a ring is accepted only from a member at most once per
//! interval.

#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use partita_core::board::Platform;
use partita_core::config::{
    Access, BoardConfig, ChannelConfig, ChannelMember, DeviceConfig, EndAction, ImageConfig,
    MemoryRegion, ResetAction, SystemConfig, TimerMode, VmConfig, VmKind,
};
use partita_core::hypercall::Ring;
use partita_core::ivc::doorbell::Doorbells;
use partita_core::ivc::memory::WordMemory;
use partita_core::ivc::ring::{Consumer, Producer, RingError, SharedMemory, DATA, RECORD_HEADER};

#[derive(Arbitrary, Debug)]
enum Op {
    Push {
        tag: u32,
        len: u16,
    },
    Pop {
        buf: u16,
    },
    WantSpace,
    SpaceWanted {
        answered: u32,
    },
    /// The peer scribbles a word anywhere in the channel.
    Scribble {
        word: u16,
        value: u32,
    },
    Ring {
        caller: u8,
        channel: u64,
        advance: u32,
    },
}

fn vm(name: &str) -> VmConfig {
    VmConfig {
        name: name.into(),
        kind: VmKind::Rtos,
        priority: 1,
        cpus: vec![0],
        memory: vec![MemoryRegion {
            base: 0x4000_0000,
            size: 0x20_0000,
            phys: None,
        }],
        image: ImageConfig {
            path: "x".into(),
            load: None,
            size: 1,
            kernel: None,
        },
        initrd: None,
        bootargs: String::new(),
        devices: vec![DeviceConfig::TestDev { base: 0x0a00_0000 }],
        on_reset: ResetAction::Restart,
        on_fault: EndAction::Stop,
        on_poweroff: EndAction::Stop,
        timer: TimerMode::Virtual,
        irqs: vec![],
        migrate: false,
        timer_advance_ns: 0,
    }
}

/// Three VMs; channel 0 joins VMs 0 and 1, channel 1 joins all three.
fn system(interval_us: u32) -> SystemConfig {
    let member = |vm: &str| ChannelMember {
        vm: vm.into(),
        base: 0x5000_0000,
        access: Access::ReadWrite,
        irq: 64,
    };
    let channel = |name: &str, members: &[&str]| ChannelConfig {
        name: name.into(),
        size: 0x1000,
        phys: None,
        ring_interval_us: interval_us,
        members: members.iter().map(|m| member(m)).collect(),
    };
    SystemConfig {
        board: BoardConfig {
            platform: Platform::QemuVirt,
            cpus: 1,
            slice_us: 10_000,
        },
        vms: vec![vm("a"), vm("b"), vm("c")],
        console: Default::default(),
        channels: vec![channel("ab", &["a", "b"]), channel("abc", &["a", "b", "c"])],
        fabric: None,
    }
}

fn ring_op(
    doorbells: &Doorbells,
    last: &mut [Vec<Option<u64>>; 3],
    now: u64,
    caller: u8,
    channel: u64,
) {
    let caller = usize::from(caller % 4);
    let Some(table) = last.get_mut(caller) else {
        // VM 3 does not exist: it is never a member.
        let mut scratch = vec![None; 2];
        assert_eq!(
            doorbells.ring(caller, channel, now, &mut scratch),
            Err(Ring::NotMember)
        );
        return;
    };
    let before = table.clone();
    let member = match channel {
        0 => caller < 2,
        1 => true,
        _ => false,
    };
    match doorbells.ring(caller, channel, now, table) {
        Ok(peers) => {
            assert!(member);
            assert_eq!(table[channel as usize], Some(now));
            let peers: Vec<usize> = peers.iter().collect();
            assert!(!peers.contains(&caller));
            assert_eq!(peers.len(), if channel == 0 { 1 } else { 2 });
        }
        Err(Ring::NotMember) => {
            assert!(!member);
            assert_eq!(*table, before);
        }
        Err(Ring::TooSoon { wait_ns }) => {
            assert!(member && wait_ns > 0);
            assert_eq!(*table, before);
        }
        Err(Ring::Rung) => unreachable!("not an error"),
    }
}

fuzz_target!(|input: (u8, u8, u32, Vec<Op>)| {
    let (ring_words, interval, frequency, ops) = input;
    let size = DATA + RECORD_HEADER + 8 + 8 * usize::from(ring_words);
    let mem = WordMemory::new(size + 8);
    let producer = Producer::new(&mem, 8, size).unwrap();
    let consumer = Consumer::new(&mem, 8, size).unwrap();
    let doorbells = Doorbells::new(&system(u32::from(interval) + 1), u64::from(frequency));
    let mut last = [vec![None; 2], vec![None; 2], vec![None; 2]];
    let mut now = 0u64;
    for op in ops.into_iter().take(512) {
        match op {
            Op::Push { tag, len } => {
                let payload = vec![0x5a; usize::from(len)];
                match producer.push(tag, &payload) {
                    Ok(_) | Err(RingError::Full) | Err(RingError::Corrupt) => {}
                    Err(RingError::TooLarge) => assert!(payload.len() > producer.max_message()),
                    Err(e) => panic!("push: {e:?}"),
                }
            }
            Op::Pop { buf } => {
                let mut buffer = vec![0u8; usize::from(buf)];
                match consumer.pop(&mut buffer) {
                    Ok(Some(message)) => assert!(message.len <= buffer.len() && message.len < size),
                    Ok(None) => assert!(consumer.is_empty()),
                    Err(RingError::BufferTooSmall { len }) => assert!(len > buffer.len()),
                    Err(RingError::Corrupt) => {
                        // Recovered, unless the peer's head itself is not a word index.
                        consumer.discard_all();
                        if consumer.is_empty() {
                            assert_eq!(consumer.pop(&mut buffer).ok(), Some(None));
                        }
                    }
                    Err(e) => panic!("pop: {e:?}"),
                }
            }
            Op::WantSpace => producer.want_space(),
            Op::SpaceWanted { answered } => {
                if let Some(count) = consumer.space_wanted(answered) {
                    assert_ne!(count, answered);
                }
            }
            Op::Scribble { word, value } => {
                // A hostile peer writes any word of the channel.
                let at = usize::from(word) % (mem.size() / 4);
                mem.store_u32(at * 4, value);
            }
            Op::Ring {
                caller,
                channel,
                advance,
            } => {
                now = now.wrapping_add(u64::from(advance));
                ring_op(&doorbells, &mut last, now, caller, channel);
            }
        }
    }
});
