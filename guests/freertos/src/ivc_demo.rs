//! The IVC task: FreeRTOS's end of the channel to Linux (`docs/ivc.md`, "Try it").
//!
//! It always answers pings (`TAG_PING` -> `TAG_PONG`), obeys commands (`TAG_COMMAND`: the
//! sample period, or a series of round trips of its own whose result it also sends back as
//! `TAG_TEXT`) and prints texts (`TAG_TEXT`). Its mode comes from the boot arguments:
//! - `stream` (default): every period (100 ms, `ivc.period=<ms>`) it sends the real-time
//!   task's figures (`TAG_SAMPLE`);
//! - `ivc=exchange`: it sends `ivc.count` (default 10,000) checksummed test messages and
//!   checks as many from Linux, then prints
//!   `ivc: exchange sent=<n> received=<n> bad=<n>`;
//! - `ivc=ping`: it times `ivc.count` (default 1,000) round trips FreeRTOS -> Linux ->
//!   FreeRTOS and prints `ivc: ping n=<n> min_ns=.. mean_ns=.. p99_ns=.. max_ns=..`.
//!
//! It runs below the real-time task, waits for the doorbell (or its next deadline) when it
//! has nothing to do, and never trusts what the peer wrote: a broken ring is reported once
//! and emptied.

use core::ffi::c_void;
use core::fmt::Write;

use partita_core::ivc::messages::{
    check_test_message, test_message, Command, Sample, COMMAND_PERIOD, COMMAND_PING, MAX_MESSAGE,
    PERIOD_RANGE_MS, TAG_COMMAND, TAG_PING, TAG_PONG, TAG_SAMPLE, TAG_TEST, TAG_TEXT, TEST_MESSAGE,
};
use partita_core::ivc::ring::{Consumer, Message, Producer, RingError};

use crate::ivc::{Channel, ChannelMemory, Rang};
use crate::{console, rt, timer};

/// What the task does besides answering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Stream,
    Exchange,
    Ping,
}

/// The task's options from the boot arguments.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The boot arguments name a mode (`ivc=...`): the task runs even beside the
    /// benchmarks.
    pub requested: bool,
    pub mode: Mode,
    pub count: u32,
    pub period_ms: u32,
}

impl Options {
    pub fn parse(line: &str) -> Options {
        let mut mode = Mode::Stream;
        let mut requested = false;
        let mut count = None;
        let mut period_ms = 100;
        for word in line.split_ascii_whitespace() {
            match word {
                "ivc=stream" => mode = Mode::Stream,
                "ivc=exchange" => mode = Mode::Exchange,
                "ivc=ping" => mode = Mode::Ping,
                _ => {}
            }
            requested |= word.starts_with("ivc=");
            if let Some(n) = word.strip_prefix("ivc.count=").and_then(|v| v.parse().ok()) {
                count = Some(n);
            }
            if let Some(ms) = word
                .strip_prefix("ivc.period=")
                .and_then(|v| v.parse().ok())
            {
                if PERIOD_RANGE_MS.contains(&ms) {
                    period_ms = ms;
                }
            }
        }
        let count = count.unwrap_or(match mode {
            Mode::Ping => 1000,
            _ => 10_000,
        });
        Options {
            requested,
            mode,
            count,
            period_ms,
        }
    }
}

/// Round trips kept for the percentile.
const MAX_PINGS: usize = 1000;

struct Service<'c> {
    channel: &'c Channel,
    tx: Producer<'c, ChannelMemory>,
    rx: Consumer<'c, ChannelMemory>,
    options: Options,
    /// The peer is waiting for a doorbell (for data or for room) we have not rung yet.
    owed_ring: bool,
    /// The count of Linux's requests for room last answered (`Consumer::space_wanted`).
    space_answered: u32,
    /// A pong that found the ring full, sent first next time.
    pending_pong: Option<([u8; MAX_MESSAGE], usize)>,
    corrupt_reported: bool,
    next_sample: u64,
    // Exchange.
    sent: u32,
    received: u32,
    bad: u32,
    done: bool,
    // Ping.
    ping_sent_at: Option<u64>,
    rtts: [u32; MAX_PINGS],
    pings: usize,
    /// The pings were asked for by Linux: the result goes back to it too, and the task
    /// returns to mode `resume`.
    report_to_linux: bool,
    resume: Mode,
}

/// The IVC task's entry; it never returns.
pub extern "C" fn task(options: *mut c_void) {
    let options = Options::parse_raw(options);
    let Some(channel) = crate::ivc::published() else {
        console::line(format_args!("ivc: no channel"));
        crate::freertos::delay_forever();
    };
    let peer = 1 - channel.info.member.min(1);
    let (Some(tx), Some(rx)) = (channel.producer(), channel.consumer(peer)) else {
        console::line(format_args!(
            "ivc: channel {} is read-only here",
            channel.info.id
        ));
        crate::freertos::delay_forever();
    };
    console::line(format_args!(
        "ivc: channel {} at {:#x} ({} bytes, doorbell {}), ring {} of {}, mode {:?}",
        channel.info.id,
        channel.info.base,
        channel.info.size,
        channel.info.irq,
        channel.info.member,
        channel.info.members,
        options.mode
    ));
    let mut service = Service {
        channel: &channel,
        tx,
        rx,
        options,
        owed_ring: false,
        space_answered: 0,
        pending_pong: None,
        corrupt_reported: false,
        next_sample: timer::now(),
        sent: 0,
        received: 0,
        bad: 0,
        done: false,
        ping_sent_at: None,
        rtts: [0; MAX_PINGS],
        pings: 0,
        report_to_linux: false,
        resume: options.mode,
    };
    service.run()
}

impl Options {
    /// The options handed to the task as its parameter (`Options::into_raw`).
    fn parse_raw(raw: *mut c_void) -> Options {
        let bits = raw as usize as u64;
        let mode = match bits & 3 {
            1 => Mode::Exchange,
            2 => Mode::Ping,
            _ => Mode::Stream,
        };
        Options {
            requested: true,
            mode,
            count: (bits >> 32) as u32,
            period_ms: ((bits >> 2) & 0x3fff_ffff) as u32,
        }
    }

    /// The options packed into a task parameter (count, period and mode fit 64 bits).
    pub fn into_raw(self) -> *mut c_void {
        let mode = match self.mode {
            Mode::Stream => 0,
            Mode::Exchange => 1,
            Mode::Ping => 2,
        };
        let bits =
            (u64::from(self.count) << 32) | (u64::from(self.period_ms & 0x3fff_ffff) << 2) | mode;
        bits as usize as *mut c_void
    }
}

impl Service<'_> {
    fn run(&mut self) -> ! {
        loop {
            self.receive_all();
            // Linux waits for room in its ring, which the pops above may have freed.
            if let Some(wanted) = self.rx.space_wanted(self.space_answered) {
                self.space_answered = wanted;
                self.owed_ring = true;
            }
            let mut blocked = self.send_work();
            if blocked {
                // Our ring is full: ask Linux to ring when it frees room, then look again
                // (room freed in between rang no doorbell).
                self.tx.want_space();
                blocked = self.send_work();
            }
            self.settle_ring();
            if blocked || self.owed_ring {
                // Still full (or a ring was refused): give the CPU away until Linux rings
                // or a tick passes, rather than spin, so Linux can run and drain it.
                self.channel.wait_ms(1);
                continue;
            }
            self.rx.set_waiting(true);
            if self.rx.is_empty() {
                self.channel.wait_ms(self.ms_to_next_sample());
            }
            self.rx.set_waiting(false);
        }
    }

    fn receive_all(&mut self) {
        let mut buf = [0u8; MAX_MESSAGE];
        loop {
            // A pong the ring refused goes first; until it is out, pings wait in Linux's
            // ring (flow control, nothing dropped).
            self.send_pong();
            if self.pending_pong.is_some() {
                return;
            }
            match self.rx.pop(&mut buf) {
                Ok(Some(message)) => self.handle(message, &buf[..message.len]),
                Ok(None) => return,
                Err(RingError::BufferTooSmall { len }) => {
                    console::line(format_args!("ivc: dropped a {len}-byte message"));
                    self.rx.discard_all();
                    return;
                }
                Err(error) => {
                    if !self.corrupt_reported {
                        console::line(format_args!(
                            "ivc: the peer's ring is broken ({error:?}); emptied"
                        ));
                        self.corrupt_reported = true;
                    }
                    self.rx.discard_all();
                    return;
                }
            }
        }
    }

    fn handle(&mut self, message: Message, payload: &[u8]) {
        match message.tag {
            TAG_PING => self.answer_ping(payload),
            TAG_TEXT => match core::str::from_utf8(payload) {
                Ok(text) => console::line(format_args!("ivc: text {text:?}")),
                Err(_) => console::line(format_args!(
                    "ivc: {} bytes of text, not UTF-8",
                    payload.len()
                )),
            },
            TAG_PONG => self.pong_received(payload),
            TAG_COMMAND => match Command::decode(payload) {
                Some(Command {
                    code: COMMAND_PERIOD,
                    value,
                }) if PERIOD_RANGE_MS.contains(&value) => {
                    self.options.period_ms = value;
                    self.next_sample = timer::now();
                    console::line(format_args!("ivc: sample period {value} ms"));
                }
                Some(Command {
                    code: COMMAND_PING,
                    value,
                }) if (1..=MAX_PINGS as u32).contains(&value) => {
                    self.resume = self.options.mode;
                    self.options.mode = Mode::Ping;
                    self.options.count = value;
                    self.pings = 0;
                    self.ping_sent_at = None;
                    self.report_to_linux = true;
                }
                _ => console::line(format_args!("ivc: unknown command ignored")),
            },
            TAG_TEST => {
                match check_test_message(payload) {
                    Some(seq) if seq == self.received => {}
                    _ => self.bad += 1,
                }
                self.received += 1;
            }
            _ => {}
        }
    }

    /// Echoes a ping, or keeps the pong for later when the ring is full.
    fn answer_ping(&mut self, payload: &[u8]) {
        if !self.push(TAG_PONG, payload) {
            let mut copy = [0u8; MAX_MESSAGE];
            copy[..payload.len()].copy_from_slice(payload);
            self.pending_pong = Some((copy, payload.len()));
        }
    }

    fn send_pong(&mut self) {
        if let Some((payload, len)) = self.pending_pong {
            if self.push(TAG_PONG, &payload[..len]) {
                self.pending_pong = None;
            }
        }
    }

    /// Pushes one message; false when the ring is full (try again later).
    fn push(&mut self, tag: u32, payload: &[u8]) -> bool {
        match self.tx.push(tag, payload) {
            Ok(waiting) => {
                self.owed_ring |= waiting;
                true
            }
            Err(_) => false,
        }
    }

    /// Rings Linux if it waits for a doorbell; a ring the rate rule refuses is retried on
    /// the next pass.
    fn settle_ring(&mut self) {
        if self.owed_ring {
            self.owed_ring = matches!(self.channel.ring(), Rang::TooSoon(_));
        }
    }

    /// Sends what the mode asks; true when our ring is full with more to send.
    fn send_work(&mut self) -> bool {
        self.send_pong();
        let more = match self.options.mode {
            Mode::Stream => {
                if timer::now() >= self.next_sample {
                    self.send_sample();
                }
                false
            }
            Mode::Exchange => self.exchange(),
            Mode::Ping => self.ping(),
        };
        more || self.pending_pong.is_some()
    }

    /// Sends the figures; a sample that finds the ring full (nobody reads it) is dropped:
    /// the stream is the latest figures, not a log, and the task then wakes once a period
    /// rather than retrying every tick.
    fn send_sample(&mut self) {
        let [samples, max_ns, mean_ns, misses] = rt::published();
        let sample = Sample {
            samples,
            max_ns,
            mean_ns,
            misses,
            period_ms: u64::from(self.options.period_ms),
        };
        let _ = self.push(TAG_SAMPLE, &sample.encode());
        let period = timer::frequency() * u64::from(self.options.period_ms) / 1000;
        self.next_sample = timer::now() + period;
    }

    fn ms_to_next_sample(&self) -> u64 {
        if self.options.mode != Mode::Stream {
            return 1000;
        }
        let ticks = self.next_sample.saturating_sub(timer::now());
        (ticks * 1000 / timer::frequency().max(1)).max(1)
    }

    fn exchange(&mut self) -> bool {
        while self.sent < self.options.count {
            let message: [u8; TEST_MESSAGE] = test_message(self.sent);
            if !self.push(TAG_TEST, &message) {
                return true;
            }
            self.sent += 1;
        }
        if !self.done && self.received >= self.options.count {
            self.done = true;
            console::line(format_args!(
                "ivc: exchange sent={} received={} bad={}",
                self.sent, self.received, self.bad
            ));
        }
        false
    }

    fn ping(&mut self) -> bool {
        if self.ping_sent_at.is_some() || self.pings >= self.options.count as usize {
            return false;
        }
        let now = timer::now();
        if self.push(TAG_PING, &now.to_le_bytes()) {
            self.ping_sent_at = Some(now);
        }
        false
    }

    fn pong_received(&mut self, payload: &[u8]) {
        let now = timer::now();
        let Some(sent) = self.ping_sent_at else {
            return;
        };
        if payload != sent.to_le_bytes() {
            return;
        }
        self.ping_sent_at = None;
        let ns = timer::ticks_to_ns(now - sent, timer::frequency());
        if let Some(slot) = self.rtts.get_mut(self.pings) {
            *slot = u32::try_from(ns).unwrap_or(u32::MAX);
        }
        self.pings += 1;
        if self.pings == (self.options.count as usize).min(MAX_PINGS) {
            self.report_pings();
        }
    }

    fn report_pings(&mut self) {
        let n = self.pings.min(MAX_PINGS);
        let rtts = &mut self.rtts[..n];
        rtts.sort_unstable();
        let sum: u64 = rtts.iter().map(|&r| u64::from(r)).sum();
        let p99 = rtts[(n * 99).div_ceil(100).saturating_sub(1)];
        let mut line = Line::default();
        let _ = write!(
            line,
            "ping n={n} min_ns={} mean_ns={} p99_ns={p99} max_ns={}",
            rtts[0],
            sum / n as u64,
            rtts[n - 1]
        );
        console::line(format_args!("ivc: {}", line.text()));
        if core::mem::take(&mut self.report_to_linux) {
            // Sent after the last pong was taken, so the ring has room; a full ring only
            // loses the copy Linux would print.
            let _ = self.push(TAG_TEXT, line.text().as_bytes());
            self.settle_ring();
            self.options.mode = self.resume;
        }
    }
}

/// A short line of text built without the heap.
struct Line {
    bytes: [u8; 120],
    len: usize,
}

impl Default for Line {
    fn default() -> Self {
        Line {
            bytes: [0; 120],
            len: 0,
        }
    }
}

impl Line {
    fn text(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len + s.len();
        let room = self.bytes.get_mut(self.len..end).ok_or(core::fmt::Error)?;
        room.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}
