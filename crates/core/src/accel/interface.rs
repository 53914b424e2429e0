//! The PR accelerator interface (Ker-ONE Table 1): one 4 KiB page per (VM, accelerator),
//! at the accelerator's guest-physical address in every VM that may use it.
//!
//! Connected, the page is mapped read-write and the VM drives the accelerator through it;
//! unconnected, read-only: the VM still reads its last status and result, and its first
//! write traps and is its request. The fabric only *reads* START, CMD, DATA_ADDR,
//! DATA_SIZE, INT_CTRL and the custom ports, and only *writes* STAT, OVER, RESULT and
//! SIGNAL; whatever a VM writes elsewhere only confuses that VM. The second KiB is the
//! context area where a preempted task is saved (sealed, see `Context`).

/// Register offsets in the interface page. START and OVER are 8-bit flags, each in a word
/// of its own; RESULT is 64-bit.
pub mod reg {
    pub const STAT: u64 = 0x00;
    pub const START: u64 = 0x04;
    pub const OVER: u64 = 0x08;
    pub const CMD: u64 = 0x0c;
    pub const DATA_ADDR: u64 = 0x10;
    pub const DATA_SIZE: u64 = 0x14;
    pub const RESULT: u64 = 0x18;
    pub const INT_CTRL: u64 = 0x20;
    /// Eight IP-defined 32-bit ports; port 0 is the output buffer address and port 1 its
    /// size for every function here.
    pub const CUSTOM: u64 = 0x24;
    pub const OUT_ADDR: u64 = CUSTOM;
    pub const OUT_SIZE: u64 = CUSTOM + 4;
    /// Partita's addition: the last manager signal (`Signal`) and a sequence number.
    pub const SIGNAL: u64 = 0x44;
    /// The 1 KiB context area (Ker-ONE section 4.3).
    pub const CONTEXT: u64 = 0x400;
    pub const CONTEXT_SIZE: u64 = 0x400;
}

/// STAT bits.
pub mod stat {
    /// The interface is connected to a region (the page is writable).
    pub const CONNECTED: u32 = 1 << 0;
    /// A job is running.
    pub const BUSY: u32 = 1 << 1;
    /// A job is saved in the context area, waiting to resume.
    pub const SUSPENDED: u32 = 1 << 2;
    /// The last job was refused: a buffer outside the VM's RAM.
    pub const ERR_DMA: u32 = 1 << 8;
    /// The last job was refused: a size that is not a whole number of frames, or an
    /// output buffer too small.
    pub const ERR_SIZE: u32 = 1 << 9;
    /// The saved context did not verify: the job was abandoned.
    pub const ERR_CONTEXT: u32 = 1 << 10;
}

/// INT_CTRL bits.
pub mod int_ctrl {
    /// Raise the accelerator's interrupt when a job is over.
    pub const ON_OVER: u32 = 1 << 0;
    /// Raise it for the manager's signals (the guest programming model).
    pub const ON_SIGNAL: u32 = 1 << 1;
}

/// What the manager tells a VM about one of its devices (Ker-ONE Table 2), in SIGNAL's low
/// byte, with the accelerator's interrupt when INT_CTRL asks for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Signal {
    /// IPC_WAIT: the device is unavailable for now; the request is queued.
    Wait = 1,
    /// IPC_READY: the device is connected.
    Ready = 2,
    /// IPC_PREEMPT: the device was taken away; unfinished work resumes later by itself.
    Preempt = 3,
}

impl Signal {
    pub fn from_word(word: u32) -> Option<Signal> {
        match word & 0xff {
            1 => Some(Signal::Wait),
            2 => Some(Signal::Ready),
            3 => Some(Signal::Preempt),
            _ => None,
        }
    }

    /// SIGNAL's value for this signal, the `sequence`-th sent on the interface.
    pub fn word(self, sequence: u32) -> u32 {
        (sequence << 8) | self as u32
    }
}

/// A job saved at a consistency point: where it stands, sealed so that what comes back from
/// the context area is either exactly this or refused. Buffers are re-checked against the
/// VM's memory at resume anyway; the seal only stops a tampered context from resuming a
/// different job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Context {
    pub dev: u8,
    pub cmd: u32,
    pub in_addr: u32,
    pub in_size: u32,
    pub out_addr: u32,
    pub out_size: u32,
    pub frames_done: u32,
    /// The running RESULT (FNV-1a of the output so far).
    pub result: u64,
}

const _: () = assert!(reg::SIGNAL + 4 <= reg::CONTEXT);
const _: () = assert!(reg::CONTEXT + reg::CONTEXT_SIZE <= 0x1000);
const _: () = assert!(SEALED_LEN as u64 <= reg::CONTEXT_SIZE);
// Partita moves a sealed context in and out of the page a double word at a time.
const _: () = assert!(SEALED_LEN.is_multiple_of(8));

const CONTEXT_MAGIC: u32 = 0x4b31_4358; // "XC1K"
/// Bytes of a sealed context: magic, the fields, and the 64-bit seal.
pub const SEALED_LEN: usize = 48;

impl Context {
    fn fields(&self) -> [u32; 8] {
        [
            CONTEXT_MAGIC,
            u32::from(self.dev),
            self.cmd,
            self.in_addr,
            self.in_size,
            self.out_addr,
            self.out_size,
            self.frames_done,
        ]
    }

    /// The context as stored, sealed with `key` (secret to Partita, per boot).
    pub fn seal(&self, key: u64) -> [u8; SEALED_LEN] {
        let mut out = [0u8; SEALED_LEN];
        for (i, f) in self.fields().iter().enumerate() {
            out[i * 4..i * 4 + 4].copy_from_slice(&f.to_le_bytes());
        }
        out[32..40].copy_from_slice(&self.result.to_le_bytes());
        let seal = keyed_hash(key, &out[..40]);
        out[40..48].copy_from_slice(&seal.to_le_bytes());
        out
    }

    /// The context in `bytes` if it carries `key`'s seal; `None` for anything else.
    pub fn open(bytes: &[u8], key: u64) -> Option<Context> {
        let bytes = bytes.get(..SEALED_LEN)?;
        let word =
            |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let mut seal = [0u8; 8];
        seal.copy_from_slice(&bytes[40..48]);
        if u64::from_le_bytes(seal) != keyed_hash(key, &bytes[..40]) || word(0) != CONTEXT_MAGIC {
            return None;
        }
        let mut result = [0u8; 8];
        result.copy_from_slice(&bytes[32..40]);
        Some(Context {
            dev: u8::try_from(word(4)).ok()?,
            cmd: word(8),
            in_addr: word(12),
            in_size: word(16),
            out_addr: word(20),
            out_size: word(24),
            frames_done: word(28),
            result: u64::from_le_bytes(result),
        })
    }
}

/// SipHash would be the textbook choice; this keyed FNV-1a mix (key folded in before and
/// after) is enough here: a VM never sees a sealed context while it can write the area
/// (the page is read-only while the job is suspended), so the seal guards against a
/// context written while connected and replayed, not against a cryptanalyst. It takes a
/// double word at a time (a consistency point seals a context), each step a bijection of
/// the state, so changing one word always changes the seal.
fn keyed_hash(key: u64, bytes: &[u8]) -> u64 {
    let mut h = FNV_OFFSET ^ key;
    for chunk in bytes.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h = (h ^ u64::from_le_bytes(word)).wrapping_mul(FNV_PRIME);
        h ^= h >> 29;
    }
    h ^= key.rotate_left(29);
    h.wrapping_mul(FNV_PRIME) ^ (h >> 31)
}

pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

/// FNV-1a over `bytes`, continuing from `state` (start with `FNV_OFFSET`): RESULT is the
/// FNV-1a of a job's whole output, so a guest checks it without reading the buffer.
pub fn fnv1a(mut state: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        state ^= u64::from(b);
        state = state.wrapping_mul(FNV_PRIME);
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context {
            dev: 2,
            cmd: 0,
            in_addr: 0x4010_0000,
            in_size: 2 * 18_800,
            out_addr: 0x4020_0000,
            out_size: 2 * 20_480,
            frames_done: 1,
            result: 0x1234_5678_9abc_def0,
        }
    }

    #[test]
    fn a_sealed_context_opens_with_its_key_only() {
        let sealed = ctx().seal(7);
        assert_eq!(Context::open(&sealed, 7), Some(ctx()));
        assert_eq!(Context::open(&sealed, 8), None);
        assert_eq!(Context::open(&sealed[..40], 7), None);
    }

    #[test]
    fn any_changed_byte_is_refused() {
        let sealed = ctx().seal(99);
        for i in 0..SEALED_LEN {
            let mut bad = sealed;
            bad[i] ^= 0x10;
            assert_eq!(Context::open(&bad, 99), None, "byte {i}");
        }
    }

    #[test]
    fn signals_round_trip_with_a_sequence() {
        for s in [Signal::Wait, Signal::Ready, Signal::Preempt] {
            assert_eq!(Signal::from_word(s.word(0x1234)), Some(s));
        }
        assert_eq!(Signal::from_word(0), None);
    }
}
