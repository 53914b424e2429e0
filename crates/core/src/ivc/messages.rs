//! The messages Partita's own guests exchange over a channel (the FreeRTOS demo and the
//! Linux `partita-ivc` command): tags and payload layouts, all little-endian, as
//! `docs/ivc.md` documents them for the C side.
//!
//! The ring carries any tag; these are only the application's. Decoders take the peer's
//! bytes and return `None` for anything that does not fit, never panic.

/// FreeRTOS -> Linux, once per period: the real-time task's cumulative statistics,
/// `Sample` (five u64).
pub const TAG_SAMPLE: u32 = 1;
/// Linux -> FreeRTOS: a command, `Command` (two u32).
pub const TAG_COMMAND: u32 = 2;
/// Either way: the receiver sends the payload straight back as `TAG_PONG`.
pub const TAG_PING: u32 = 3;
pub const TAG_PONG: u32 = 4;
/// Either way, in the exchange test: `test_message`.
pub const TAG_TEST: u32 = 5;
/// Linux -> FreeRTOS: text FreeRTOS prints (`partita-ivc send`); FreeRTOS -> Linux: the
/// result of `COMMAND_PING`.
pub const TAG_TEXT: u32 = 6;
/// The longest message the demo's two ends exchange (pings in `partita-ivc bench`).
pub const MAX_MESSAGE: usize = 4096;

/// `Command::code`: set the sample period to `value` milliseconds.
pub const COMMAND_PERIOD: u32 = 1;
/// `Command::code`: time `value` round trips FreeRTOS -> Linux -> FreeRTOS now (Linux
/// answers the pings), and send the result back as `TAG_TEXT`.
pub const COMMAND_PING: u32 = 2;
/// The period a command may ask for, in milliseconds.
pub const PERIOD_RANGE_MS: core::ops::RangeInclusive<u32> = 1..=60_000;

/// Bytes of a test message: sequence number, six filler words, checksum.
pub const TEST_MESSAGE: usize = 32;

/// The real-time task's figures as sent to Linux.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    pub samples: u64,
    pub max_ns: u64,
    pub mean_ns: u64,
    pub misses: u64,
    pub period_ms: u64,
}

impl Sample {
    pub const SIZE: usize = 40;

    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut out = [0; Self::SIZE];
        let fields = [
            self.samples,
            self.max_ns,
            self.mean_ns,
            self.misses,
            self.period_ms,
        ];
        for (chunk, value) in out.chunks_exact_mut(8).zip(fields) {
            chunk.copy_from_slice(&value.to_le_bytes());
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Sample> {
        if bytes.len() != Self::SIZE {
            return None;
        }
        let field = |i: usize| {
            let mut word = [0; 8];
            word.copy_from_slice(&bytes[8 * i..8 * i + 8]);
            u64::from_le_bytes(word)
        };
        Some(Sample {
            samples: field(0),
            max_ns: field(1),
            mean_ns: field(2),
            misses: field(3),
            period_ms: field(4),
        })
    }
}

/// A command from Linux.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Command {
    pub code: u32,
    pub value: u32,
}

impl Command {
    pub const SIZE: usize = 8;

    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut out = [0; Self::SIZE];
        out[..4].copy_from_slice(&self.code.to_le_bytes());
        out[4..].copy_from_slice(&self.value.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Command> {
        if bytes.len() != Self::SIZE {
            return None;
        }
        let word =
            |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        Some(Command {
            code: word(0),
            value: word(4),
        })
    }
}

/// FNV-1a, 32 bits: the exchange test's checksum (the C side has the same six lines).
pub fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |hash, &b| {
        (hash ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// Test message `seq`: `seq`, six words derived from it, and the FNV-1a of those 28 bytes.
pub fn test_message(seq: u32) -> [u8; TEST_MESSAGE] {
    let mut out = [0; TEST_MESSAGE];
    out[..4].copy_from_slice(&seq.to_le_bytes());
    for i in 1..7 {
        let word = seq.wrapping_mul(0x9e37_79b9).wrapping_add(i as u32);
        out[4 * i..4 * i + 4].copy_from_slice(&word.to_le_bytes());
    }
    let sum = fnv1a(&out[..28]);
    out[28..].copy_from_slice(&sum.to_le_bytes());
    out
}

/// The sequence number of a sound test message, or `None` for a damaged one.
pub fn check_test_message(bytes: &[u8]) -> Option<u32> {
    if bytes.len() != TEST_MESSAGE {
        return None;
    }
    let seq = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    (bytes == test_message(seq)).then_some(seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_messages_carry_their_checksum() {
        let m = test_message(41);
        assert_eq!(check_test_message(&m), Some(41));
        assert_eq!(fnv1a(b""), 0x811c_9dc5);
        assert_eq!(fnv1a(b"a"), 0xe40c_292c);
        for at in 0..TEST_MESSAGE {
            let mut bad = m;
            bad[at] ^= 1;
            assert_eq!(check_test_message(&bad), None, "byte {at}");
        }
        assert_eq!(check_test_message(&m[..31]), None);
    }

    #[test]
    fn samples_and_commands_round_trip() {
        let s = Sample {
            samples: 1,
            max_ns: 2,
            mean_ns: 3,
            misses: 4,
            period_ms: 100,
        };
        assert_eq!(Sample::decode(&s.encode()), Some(s));
        assert_eq!(Sample::decode(&[0; 39]), None);
        let c = Command {
            code: COMMAND_PERIOD,
            value: 250,
        };
        assert_eq!(c.encode(), [1, 0, 0, 0, 250, 0, 0, 0]);
        assert_eq!(Command::decode(&c.encode()), Some(c));
        assert_eq!(Command::decode(&[0; 9]), None);
    }
}
