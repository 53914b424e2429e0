//! The message ring both sides of a channel share, and how a channel is cut into rings.
//!
//! A channel of `n` members holds `n` rings of equal size, one per member; member `k` is
//! the only producer of ring `k` and reads the others. A ring is a single-producer,
//! single-consumer byte queue of length-prefixed records (`docs/ivc.md` gives the layout
//! byte by byte; the C library in `guests/linux/ivc/` follows it). The peer is hostile:
//! every index and length read from shared memory is checked, and a ring that breaks its
//! rules is reported as `RingError::Corrupt`, never trusted and never a panic. This module
//! touches memory only through `SharedMemory`, so the hypervisor, the FreeRTOS guest and
//! the host tests each supply their own access.

/// Offsets inside one ring. `HEAD` and `TAIL` sit in different cache lines so producer and
/// consumer never write the same line.
pub const HEAD: usize = 0x00;
pub const TAIL: usize = 0x40;
pub const WAITING: usize = 0x48;
/// Written by the producer: how many times it has waited for room. A consumer that frees
/// room and sees it changed since it last looked rings the producer.
pub const SPACE_WANTED: usize = 0x08;
/// Where the records start.
pub const DATA: usize = 0x80;
/// The record header: `u32` payload length, `u32` tag.
pub const RECORD_HEADER: usize = 8;
/// The smallest ring: the control lines and room for one record of up to 8 bytes.
pub const MIN_RING: usize = DATA + RECORD_HEADER + 8;

/// Word access to the shared memory of one channel, at byte offsets from its start.
///
/// `load_u64` must have acquire and `store_u64` release semantics; `fence` is a full
/// barrier. Offsets given by this module are aligned to the access and lie inside the
/// channel (`size`).
pub trait SharedMemory {
    fn size(&self) -> usize;
    fn load_u32(&self, offset: usize) -> u32;
    fn store_u32(&self, offset: usize, value: u32);
    fn load_u64(&self, offset: usize) -> u64;
    fn store_u64(&self, offset: usize, value: u64);
    fn fence(&self);
}

/// Why a ring operation did not happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingError {
    /// No room for the record now: the consumer has not caught up.
    Full,
    /// The message could never fit in this ring.
    TooLarge,
    /// The buffer given to `pop` is shorter than the next message (`len` bytes).
    BufferTooSmall { len: usize },
    /// The shared indices or a record header break the ring's rules: the peer is broken or
    /// hostile.
    Corrupt,
    /// The ring does not fit the channel or is too small.
    BadLayout,
}

/// Where ring `member` of a channel of `size` bytes shared by `members` VMs lies: the
/// channel cut into equal parts, each a multiple of 8 bytes.
pub fn ring_of(size: usize, members: usize, member: usize) -> Option<(usize, usize)> {
    if members == 0 || member >= members {
        return None;
    }
    let part = size / members / 8 * 8;
    (part >= MIN_RING).then_some((member * part, part))
}

/// Bytes a record with `len` bytes of payload takes: header plus payload rounded up to a
/// word.
pub fn record_size(len: usize) -> usize {
    RECORD_HEADER + len.div_ceil(4) * 4
}

/// One ring inside a channel's memory. Its indices count bytes since the channel was
/// cleared and are taken modulo the capacity; they would wrap after 2^64 bytes (five
/// centuries at 1 GB/s), which the format does not provide for. A hostile peer may write
/// any index: every one still lands inside the ring, and the checks reject the rest.
#[derive(Clone, Copy, Debug)]
struct Ring {
    base: usize,
    capacity: usize,
}

impl Ring {
    fn new(mem: &impl SharedMemory, base: usize, size: usize) -> Result<Ring, RingError> {
        let fits = base.is_multiple_of(8)
            && size.is_multiple_of(8)
            && size >= MIN_RING
            && base.checked_add(size).is_some_and(|end| end <= mem.size());
        if !fits {
            return Err(RingError::BadLayout);
        }
        Ok(Ring {
            base,
            capacity: size - DATA,
        })
    }

    fn data(&self, position: u64) -> usize {
        self.base + DATA + (position % self.capacity as u64) as usize
    }

    /// Bytes between the indices, if they obey the rules (never more than the capacity,
    /// word aligned).
    fn used(&self, head: u64, tail: u64) -> Result<usize, RingError> {
        let used = head.wrapping_sub(tail);
        if used > self.capacity as u64 || !head.is_multiple_of(4) || !tail.is_multiple_of(4) {
            return Err(RingError::Corrupt);
        }
        Ok(used as usize)
    }
}

/// The producer's end of a ring.
pub struct Producer<'m, M: SharedMemory> {
    mem: &'m M,
    ring: Ring,
}

impl<'m, M: SharedMemory> Producer<'m, M> {
    /// The ring of `size` bytes at offset `base` of `mem`.
    pub fn new(mem: &'m M, base: usize, size: usize) -> Result<Self, RingError> {
        Ok(Producer {
            mem,
            ring: Ring::new(mem, base, size)?,
        })
    }

    /// The largest payload this ring carries.
    pub fn max_message(&self) -> usize {
        (self.ring.capacity - RECORD_HEADER) / 4 * 4
    }

    /// Appends one message. `Ok(true)` when the consumer is waiting for a doorbell: the
    /// caller rings it.
    pub fn push(&self, tag: u32, payload: &[u8]) -> Result<bool, RingError> {
        if payload.len() > self.max_message() {
            return Err(RingError::TooLarge);
        }
        let ring = self.ring;
        let head = self.mem.load_u64(ring.base + HEAD);
        let tail = self.mem.load_u64(ring.base + TAIL);
        let used = ring.used(head, tail)?;
        let size = record_size(payload.len());
        if ring.capacity - used < size {
            return Err(RingError::Full);
        }
        self.mem.store_u32(ring.data(head), payload.len() as u32);
        self.mem.store_u32(ring.data(head.wrapping_add(4)), tag);
        for (i, chunk) in payload.chunks(4).enumerate() {
            let mut word = [0u8; 4];
            word[..chunk.len()].copy_from_slice(chunk);
            let at = head.wrapping_add((RECORD_HEADER + 4 * i) as u64);
            self.mem.store_u32(ring.data(at), u32::from_le_bytes(word));
        }
        self.mem
            .store_u64(ring.base + HEAD, head.wrapping_add(size as u64));
        // The consumer sets WAITING and then reads HEAD; the producer stores HEAD and then
        // reads WAITING: with a full barrier on both sides one of them sees the other.
        self.mem.fence();
        Ok(self.mem.load_u32(ring.base + WAITING) != 0)
    }

    /// Announces that the producer is about to wait for room (its ring was full): the
    /// consumer rings after it next frees some. Try the push again before waiting: room
    /// freed in between rang no doorbell only if the push now succeeds.
    pub fn want_space(&self) {
        let at = self.ring.base + SPACE_WANTED;
        self.mem
            .store_u32(at, self.mem.load_u32(at).wrapping_add(1));
        self.mem.fence();
    }

    /// Bytes free for records now.
    pub fn free(&self) -> Result<usize, RingError> {
        let head = self.mem.load_u64(self.ring.base + HEAD);
        let tail = self.mem.load_u64(self.ring.base + TAIL);
        Ok(self.ring.capacity - self.ring.used(head, tail)?)
    }
}

/// A message taken from a ring: its tag and payload length (the payload is in the buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    pub tag: u32,
    pub len: usize,
}

/// The consumer's end of a ring.
pub struct Consumer<'m, M: SharedMemory> {
    mem: &'m M,
    ring: Ring,
}

impl<'m, M: SharedMemory> Consumer<'m, M> {
    /// The ring of `size` bytes at offset `base` of `mem`.
    pub fn new(mem: &'m M, base: usize, size: usize) -> Result<Self, RingError> {
        Ok(Consumer {
            mem,
            ring: Ring::new(mem, base, size)?,
        })
    }

    /// Takes the oldest message into `buf`; `Ok(None)` when the ring is empty. A message
    /// longer than `buf` stays in the ring.
    pub fn pop(&self, buf: &mut [u8]) -> Result<Option<Message>, RingError> {
        let ring = self.ring;
        let tail = self.mem.load_u64(ring.base + TAIL);
        let head = self.mem.load_u64(ring.base + HEAD);
        let used = ring.used(head, tail)?;
        if used == 0 {
            return Ok(None);
        }
        if used < RECORD_HEADER {
            return Err(RingError::Corrupt);
        }
        let len = self.mem.load_u32(ring.data(tail)) as usize;
        let tag = self.mem.load_u32(ring.data(tail.wrapping_add(4)));
        if len > used - RECORD_HEADER || record_size(len) > used {
            return Err(RingError::Corrupt);
        }
        if len > buf.len() {
            return Err(RingError::BufferTooSmall { len });
        }
        for (i, chunk) in buf[..len].chunks_mut(4).enumerate() {
            let at = tail.wrapping_add((RECORD_HEADER + 4 * i) as u64);
            let word = self.mem.load_u32(ring.data(at)).to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
        self.mem
            .store_u64(ring.base + TAIL, tail.wrapping_add(record_size(len) as u64));
        Ok(Some(Message { tag, len }))
    }

    /// Whether the ring holds no message (a broken ring counts as not empty, so the caller
    /// reads it and learns it is broken).
    pub fn is_empty(&self) -> bool {
        let tail = self.mem.load_u64(self.ring.base + TAIL);
        let head = self.mem.load_u64(self.ring.base + HEAD);
        tail == head
    }

    /// Announces that the consumer is about to wait for a doorbell (`true`) or is awake
    /// (`false`). After announcing, check `is_empty` again before waiting: a message pushed
    /// in between rang no doorbell only if it is already visible.
    pub fn set_waiting(&self, waiting: bool) {
        self.mem
            .store_u32(self.ring.base + WAITING, u32::from(waiting));
        self.mem.fence();
    }

    /// After popping: `Some(count)` when the producer has asked for room since this
    /// consumer saw `answered` and at least half the ring is free (keep `count` and ring
    /// the producer), else `None`. Waiting for half keeps a full ring from costing one
    /// doorbell, and one switch to the producer, per record.
    pub fn space_wanted(&self, answered: u32) -> Option<u32> {
        // The pop stored TAIL; the producer bumps SPACE_WANTED and then reads TAIL: with a
        // full barrier on both sides one of them sees the other.
        self.mem.fence();
        let wanted = self.mem.load_u32(self.ring.base + SPACE_WANTED);
        let tail = self.mem.load_u64(self.ring.base + TAIL);
        let head = self.mem.load_u64(self.ring.base + HEAD);
        let half_free = self
            .ring
            .used(head, tail)
            .map_or(true, |used| used <= self.ring.capacity / 2);
        (wanted != answered && half_free).then_some(wanted)
    }

    /// Drops everything in the ring: the way out after `Corrupt`.
    pub fn discard_all(&self) {
        let head = self.mem.load_u64(self.ring.base + HEAD);
        self.mem.store_u64(self.ring.base + TAIL, head / 4 * 4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;
    use alloc::collections::VecDeque;
    use alloc::vec;
    use alloc::vec::Vec;

    use crate::ivc::memory::WordMemory as HostMemory;

    #[test]
    fn a_message_goes_through_and_the_waiting_flag_asks_for_a_ring() {
        let mem = HostMemory::new(0x1000);
        let p = Producer::new(&mem, 0, 0x800).unwrap();
        let c = Consumer::new(&mem, 0, 0x800).unwrap();
        assert!(c.is_empty());
        assert_eq!(p.push(7, b"hello"), Ok(false));
        c.set_waiting(true);
        assert_eq!(p.push(8, b""), Ok(true));
        c.set_waiting(false);
        let mut buf = [0u8; 16];
        assert_eq!(c.pop(&mut buf), Ok(Some(Message { tag: 7, len: 5 })));
        assert_eq!(&buf[..5], b"hello");
        assert_eq!(c.pop(&mut buf), Ok(Some(Message { tag: 8, len: 0 })));
        assert_eq!(c.pop(&mut buf), Ok(None));
        assert_eq!(mem.load_u64(HEAD), 8 + 8 + 8);
    }

    #[test]
    fn a_producer_waiting_for_room_is_rung_once() {
        let mem = HostMemory::new(0x100);
        let p = Producer::new(&mem, 0, 0x100).unwrap();
        let c = Consumer::new(&mem, 0, 0x100).unwrap();
        for tag in 0..4 {
            assert_eq!(p.push(tag, &[0; 24]), Ok(false));
        }
        assert_eq!(p.push(4, &[0; 8]), Err(RingError::Full));
        assert_eq!(c.space_wanted(0), None);
        p.want_space();
        // One record freed is not half the ring: no doorbell yet.
        c.pop(&mut [0; 32]).unwrap().unwrap();
        assert_eq!(c.space_wanted(0), None);
        c.pop(&mut [0; 32]).unwrap().unwrap();
        assert_eq!(c.space_wanted(0), Some(1));
        assert_eq!(c.space_wanted(1), None);
        assert_eq!(p.push(4, &[0; 8]), Ok(false));
        mem.store_u32(SPACE_WANTED, u32::MAX);
        p.want_space();
        c.pop(&mut [0; 32]).unwrap().unwrap();
        assert_eq!(c.space_wanted(u32::MAX), Some(0));
    }

    #[test]
    fn sizes_are_enforced() {
        let mem = HostMemory::new(0x200);
        assert_eq!(
            Producer::new(&mem, 0, 0x400).err(),
            Some(RingError::BadLayout)
        );
        assert_eq!(
            Producer::new(&mem, 4, 0x100).err(),
            Some(RingError::BadLayout)
        );
        let p = Producer::new(&mem, 0, 0x100).unwrap();
        assert_eq!(p.max_message(), 0x80 - 8);
        assert_eq!(p.push(0, &[1; 0x79]), Err(RingError::TooLarge));
        assert_eq!(p.push(0, &[1; 0x78]), Ok(false));
        assert_eq!(p.push(0, &[1]), Err(RingError::Full));
        let c = Consumer::new(&mem, 0, 0x100).unwrap();
        assert_eq!(
            c.pop(&mut [0; 4]),
            Err(RingError::BufferTooSmall { len: 0x78 })
        );
        assert_eq!(c.pop(&mut [0; 0x78]).unwrap().unwrap().len, 0x78);
    }

    #[test]
    fn rings_split_the_channel() {
        assert_eq!(ring_of(0x1_0000, 2, 1), Some((0x8000, 0x8000)));
        assert_eq!(ring_of(0x3000, 3, 2), Some((0x2000, 0x1000)));
        assert_eq!(ring_of(0x1000, 2, 2), None);
        assert_eq!(ring_of(0x100, 8, 0), None);
        assert_eq!(ring_of(0x1000, 0, 0), None);
    }

    #[test]
    fn a_hostile_peer_is_reported_never_trusted() {
        let mem = HostMemory::new(0x400);
        let c = Consumer::new(&mem, 0, 0x400).unwrap();
        let p = Producer::new(&mem, 0, 0x400).unwrap();
        let mut buf = [0u8; 0x400];
        mem.store_u64(HEAD, 0x1000);
        assert_eq!(c.pop(&mut buf), Err(RingError::Corrupt));
        assert_eq!(p.push(1, b"x"), Err(RingError::Corrupt));
        mem.store_u64(HEAD, 6);
        assert_eq!(c.pop(&mut buf), Err(RingError::Corrupt));
        mem.store_u64(HEAD, 4);
        assert_eq!(c.pop(&mut buf), Err(RingError::Corrupt));
        mem.store_u64(HEAD, 16);
        mem.store_u32(DATA, 0xffff_fff0);
        assert_eq!(c.pop(&mut buf), Err(RingError::Corrupt));
        mem.store_u32(DATA, 9);
        assert_eq!(c.pop(&mut buf), Err(RingError::Corrupt));
        c.discard_all();
        assert!(c.is_empty());
        assert_eq!(c.pop(&mut buf), Ok(None));
        mem.store_u64(TAIL, u64::MAX - 3);
        mem.store_u64(HEAD, 0x1000);
        assert_eq!(c.pop(&mut buf), Err(RingError::Corrupt));
        // Indices across 2^64 with a sound record between them are a valid ring.
        mem.store_u64(HEAD, 12);
        assert!(c.pop(&mut buf).is_ok());
    }

    /// Seeded property test: random pushes and pops of random lengths, interleaved, through
    /// many wrap-arounds of a small ring (from index 0 or from a random one): every message
    /// comes out once, in order, with its bytes.
    #[test]
    fn no_message_is_lost_or_duplicated_across_wrap_arounds() {
        for seed in 1..=40u64 {
            let mut rng = Rng(seed);
            let size = MIN_RING + 8 * rng.below(100) as usize;
            let mem = HostMemory::new(size + 0x100);
            let base = 8 * rng.below(8) as usize;
            let p = Producer::new(&mem, base, size).unwrap();
            let c = Consumer::new(&mem, base, size).unwrap();
            let start = if seed % 2 == 0 {
                4 * rng.below(1 << 40)
            } else {
                0
            };
            mem.store_u64(base + HEAD, start);
            mem.store_u64(base + TAIL, start);
            let mut expected: VecDeque<(u32, Vec<u8>)> = VecDeque::new();
            let mut buf = vec![0u8; size];
            let (mut sent, mut received) = (0u32, 0u32);
            for _ in 0..3000 {
                if rng.below(2) == 0 {
                    let len = rng.below(p.max_message() as u64 + 1) as usize;
                    let payload: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
                    match p.push(sent, &payload) {
                        Ok(_) => {
                            expected.push_back((sent, payload));
                            sent += 1;
                        }
                        Err(RingError::Full) => {
                            let free = p.free().unwrap();
                            assert!(free < record_size(len), "seed {seed}");
                        }
                        Err(e) => panic!("seed {seed}: {e:?}"),
                    }
                } else {
                    match c.pop(&mut buf).unwrap() {
                        Some(m) => {
                            let (tag, payload) = expected.pop_front().expect("extra message");
                            assert_eq!(m.tag, tag, "seed {seed}");
                            assert_eq!(&buf[..m.len], &payload[..], "seed {seed}");
                            received += 1;
                        }
                        None => assert!(expected.is_empty(), "seed {seed}: lost"),
                    }
                }
            }
            while let Some(m) = c.pop(&mut buf).unwrap() {
                let (tag, payload) = expected.pop_front().expect("extra message");
                assert_eq!((m.tag, &buf[..m.len]), (tag, &payload[..]));
                received += 1;
            }
            assert!(expected.is_empty());
            assert_eq!(sent, received);
            let laps = (mem.load_u64(base + HEAD) - start) / (size - DATA) as u64;
            assert!(laps >= 3, "seed {seed}: only {laps} laps");
        }
    }
}
