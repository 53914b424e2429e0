//! The output side of the physical console that every VM shares: what the terminal shows of
//! each VM's UART output, and what is kept for later.
//!
//! The terminal either shows one VM (`View::Vm`, the VM that also gets the typed input) or
//! all of them (`View::All`). The shown VM's bytes reach the terminal exactly as it wrote
//! them, escape sequences included, so a shell's line editing works. In the `All` view every
//! VM's output is printed as whole lines tagged with the VM's name, made safe first
//! (`sanitize`): a VM never sends a control or escape sequence to a terminal it shares. A VM
//! that is not shown keeps the lines it writes in a bounded `History`, which the terminal
//! replays when the VM is shown again. Every complete line, shown or not, also goes to the
//! VM's log.
//!
//! This module only splits, cleans and keeps bytes; the hypervisor owns the physical UART, the
//! locks and the log files. Guest bytes are hostile: any byte sequence is accepted, and no
//! line grows beyond `MAX_LINE`.

use alloc::vec::Vec;

use serde::{Deserialize, Serialize};

/// The longest line kept; a longer one is cut there and continues on the next line.
pub const MAX_LINE: usize = 200;
/// How many of its latest lines a VM keeps while it is not shown.
pub const HISTORY_LINES: usize = 20;

/// ESC, which starts a terminal escape sequence.
const ESC: u8 = 0x1b;
/// BEL, which ends an operating-system command (`ESC ]`).
const BEL: u8 = 0x07;

/// What the terminal shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum View {
    /// Every VM's lines, tagged with its name.
    All,
    /// VM `n` (configuration order) alone, byte for byte.
    Vm(usize),
}

impl View {
    /// The view as one word, for an atomic: `All` is `usize::MAX`.
    pub fn encode(self) -> usize {
        match self {
            View::All => usize::MAX,
            View::Vm(n) => n,
        }
    }

    /// The view `encode` made `word` from.
    pub fn decode(word: usize) -> View {
        match word {
            usize::MAX => View::All,
            n => View::Vm(n),
        }
    }

    /// How VM `vm` appears on the terminal in this view.
    pub fn shows(self, vm: usize) -> Shown {
        match self {
            View::All => Shown::Tagged,
            View::Vm(n) if n == vm => Shown::Raw,
            View::Vm(_) => Shown::Hidden,
        }
    }
}

/// How one VM's output appears on the terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// As written, byte for byte.
    Raw,
    /// As whole, cleaned lines tagged with the VM's name.
    Tagged,
    /// Not at all: its lines wait in its history.
    Hidden,
}

/// Where a VM's output goes.
pub trait Terminal {
    /// Bytes exactly as the shown VM wrote them.
    fn raw(&mut self, bytes: &[u8]);
    /// One whole, cleaned line of the VM, without its newline, to print tagged.
    fn tagged(&mut self, line: &[u8]);
    /// One whole, cleaned line of the VM, without its newline, for its log.
    fn log(&mut self, line: &[u8]);
}

/// Appends `line` to `out` made safe for a shared terminal: escape sequences (CSI `ESC [`,
/// OSC `ESC ]` and two-byte `ESC x`) are removed, carriage returns dropped, tabs kept and
/// every other control character replaced by `?`.
pub fn sanitize(line: &[u8], out: &mut Vec<u8>) {
    // The common line, printable ASCII and perhaps a carriage return (dropped) at its end,
    // in one copy.
    let body = line.strip_suffix(b"\r").unwrap_or(line);
    if body.iter().all(|b| (0x20..0x7f).contains(b)) {
        out.extend_from_slice(body);
        return;
    }
    let mut bytes = line.iter().copied().peekable();
    while let Some(byte) = bytes.next() {
        match byte {
            ESC => match bytes.next() {
                // CSI: parameter and intermediate bytes, then one final byte (0x40..=0x7e).
                Some(b'[') => {
                    for b in bytes.by_ref() {
                        if (0x40..=0x7e).contains(&b) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or the string terminator ESC \.
                Some(b']') => {
                    while let Some(b) = bytes.next() {
                        if b == BEL || (b == ESC && bytes.next_if_eq(&b'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            b'\r' => {}
            b'\t' => out.push(b'\t'),
            0x00..=0x1f | 0x7f => out.push(b'?'),
            _ => out.push(byte),
        }
    }
}

/// The latest lines a VM wrote while it was not shown, and how many older ones were let go.
/// Its room is taken once, in `new`: keeping lines never allocates, so a VM's output cannot
/// grow Partita's heap.
#[derive(Debug)]
pub struct History {
    /// `HISTORY_LINES` buffers of `MAX_LINE` bytes, used as a ring.
    slots: Vec<Vec<u8>>,
    first: usize,
    len: usize,
    dropped: u64,
}

impl History {
    fn new() -> Self {
        History {
            slots: (0..HISTORY_LINES)
                .map(|_| Vec::with_capacity(MAX_LINE))
                .collect(),
            first: 0,
            len: 0,
            dropped: 0,
        }
    }

    fn push(&mut self, line: &[u8]) {
        let slot = if self.len == HISTORY_LINES {
            let oldest = self.first;
            self.first = (self.first + 1) % HISTORY_LINES;
            self.dropped += 1;
            oldest
        } else {
            self.len += 1;
            (self.first + self.len - 1) % HISTORY_LINES
        };
        let buffer = &mut self.slots[slot];
        buffer.clear();
        buffer.extend_from_slice(&line[..line.len().min(MAX_LINE)]);
    }

    fn clear(&mut self) {
        self.first = 0;
        self.len = 0;
        self.dropped = 0;
    }

    /// How many lines were let go to keep the latest `HISTORY_LINES`.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The kept lines, oldest first.
    pub fn lines(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.len).map(|i| self.slots[(self.first + i) % HISTORY_LINES].as_slice())
    }
}

/// One VM's output stream: the line being written and the history of a hidden VM. Like
/// `History`, it allocates only in `new`.
#[derive(Debug)]
pub struct VmOutput {
    line: Vec<u8>,
    history: History,
    clean: Vec<u8>,
}

impl Default for VmOutput {
    fn default() -> Self {
        Self::new()
    }
}

impl VmOutput {
    pub fn new() -> Self {
        VmOutput {
            line: Vec::with_capacity(MAX_LINE),
            history: History::new(),
            clean: Vec::with_capacity(MAX_LINE),
        }
    }

    /// The VM wrote `bytes` while the terminal shows it as `shown`.
    pub fn write(&mut self, bytes: &[u8], shown: Shown, terminal: &mut impl Terminal) {
        let mut rest = bytes;
        while !rest.is_empty() {
            // Up to the next line end, or as much as the line has room for.
            let room = MAX_LINE.saturating_sub(self.line.len());
            let end = rest.iter().take(room).position(|&b| b == b'\n');
            let take = end.unwrap_or(rest.len().min(room));
            self.line.extend_from_slice(&rest[..take]);
            rest = &rest[take + usize::from(end.is_some())..];
            if end.is_some() || self.line.len() >= MAX_LINE {
                self.end_line(shown, terminal);
            }
        }
        if shown == Shown::Raw {
            terminal.raw(bytes);
        }
    }

    /// Ends the line being written, if any (the VM's boot ended in the middle of one).
    pub fn finish_line(&mut self, shown: Shown, terminal: &mut impl Terminal) {
        if !self.line.is_empty() {
            self.write(b"\r\n", shown, terminal);
        }
    }

    fn end_line(&mut self, shown: Shown, terminal: &mut impl Terminal) {
        self.clean.clear();
        sanitize(&self.line, &mut self.clean);
        self.line.clear();
        terminal.log(&self.clean);
        match shown {
            Shown::Raw => {}
            Shown::Tagged => terminal.tagged(&self.clean),
            Shown::Hidden => self.history.push(&self.clean),
        }
    }

    /// The VM is shown again: `show` gets its history and the cleaned start of the line it
    /// is writing (a shell's prompt, say), to print before the VM's next bytes; then the
    /// history is emptied.
    pub fn replay(&mut self, show: impl FnOnce(&History, &[u8])) {
        self.clean.clear();
        sanitize(&self.line, &mut self.clean);
        show(&self.history, &self.clean);
        self.history.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use alloc::vec;

    /// Records what reaches each output.
    #[derive(Default)]
    struct Screen {
        raw: Vec<u8>,
        tagged: Vec<Vec<u8>>,
        log: Vec<Vec<u8>>,
    }

    impl Terminal for Screen {
        fn raw(&mut self, bytes: &[u8]) {
            self.raw.extend_from_slice(bytes);
        }
        fn tagged(&mut self, line: &[u8]) {
            self.tagged.push(line.to_vec());
        }
        fn log(&mut self, line: &[u8]) {
            self.log.push(line.to_vec());
        }
    }

    fn clean(line: &[u8]) -> String {
        let mut out = Vec::new();
        sanitize(line, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn sanitize_removes_escape_sequences_and_controls() {
        assert_eq!(clean(b"/ # \x1b[6nuname -a\r"), "/ # uname -a");
        assert_eq!(clean(b"\x1b[1;32mgreen\x1b[0m"), "green");
        assert_eq!(clean(b"\x1b]0;title\x07x\x1b]2;t\x1b\\y"), "xy");
        assert_eq!(clean(b"a\x1bcb\tc\x08d\x7f"), "ab\tc?d?");
        assert_eq!(clean(b"cut \x1b["), "cut ");
        assert_eq!(clean(b"cut \x1b"), "cut ");
    }

    /// Writing a stream in pieces of any size gives what writing it byte by byte gives.
    #[test]
    fn pieces_split_lines_as_single_bytes_do() {
        let mut rng = crate::test_rng::Rng(16);
        for _ in 0..200 {
            let len = (rng.next() % 700) as usize;
            let stream: Vec<u8> = (0..len)
                .map(|_| match rng.next() % 8 {
                    0 => b'\n',
                    1 => (rng.next() % 0x20) as u8,
                    _ => b'a' + (rng.next() % 26) as u8,
                })
                .collect();
            for shown in [Shown::Raw, Shown::Tagged, Shown::Hidden] {
                let (mut one, mut one_screen) = (VmOutput::new(), Screen::default());
                for byte in &stream {
                    one.write(core::slice::from_ref(byte), shown, &mut one_screen);
                }
                let (mut pieces, mut screen) = (VmOutput::new(), Screen::default());
                let mut rest = &stream[..];
                while !rest.is_empty() {
                    let take = ((rng.next() % 300) as usize).min(rest.len());
                    pieces.write(&rest[..take], shown, &mut screen);
                    rest = &rest[take..];
                }
                assert_eq!(screen.raw, one_screen.raw);
                assert_eq!(screen.tagged, one_screen.tagged);
                assert_eq!(screen.log, one_screen.log);
                assert_eq!(pieces.line, one.line);
            }
        }
    }

    #[test]
    fn the_shown_vm_reaches_the_terminal_byte_for_byte() {
        let mut out = VmOutput::default();
        let mut screen = Screen::default();
        out.write(b"/ # \x1b[6n", Shown::Raw, &mut screen);
        out.write(b"ls\r\nbin\r\n", Shown::Raw, &mut screen);
        assert_eq!(screen.raw, b"/ # \x1b[6nls\r\nbin\r\n");
        assert!(screen.tagged.is_empty());
        assert_eq!(screen.log, [&b"/ # ls"[..], b"bin"]);
    }

    #[test]
    fn all_view_prints_whole_clean_lines() {
        let mut out = VmOutput::default();
        let mut screen = Screen::default();
        out.write(b"rt: samples=1\r\nhalf", Shown::Tagged, &mut screen);
        assert_eq!(screen.tagged, [b"rt: samples=1"]);
        out.write(b" line\x1b[K\n", Shown::Tagged, &mut screen);
        assert_eq!(screen.tagged, [&b"rt: samples=1"[..], b"half line"]);
        assert!(screen.raw.is_empty());
    }

    #[test]
    fn long_lines_are_cut() {
        let mut out = VmOutput::default();
        let mut screen = Screen::default();
        out.write(&vec![b'x'; MAX_LINE * 2 + 5], Shown::Tagged, &mut screen);
        assert_eq!(screen.tagged.len(), 2);
        assert!(screen.tagged.iter().all(|l| l.len() == MAX_LINE));
        out.finish_line(Shown::Tagged, &mut screen);
        assert_eq!(screen.tagged[2], b"xxxxx");
    }

    #[test]
    fn a_hidden_vm_keeps_its_latest_lines_for_the_replay() {
        let mut out = VmOutput::default();
        let mut screen = Screen::default();
        for i in 0..HISTORY_LINES + 3 {
            out.write(
                alloc::format!("line {i}\r\n").as_bytes(),
                Shown::Hidden,
                &mut screen,
            );
        }
        out.write(b"/ # \x1b[6n", Shown::Hidden, &mut screen);
        assert!(screen.raw.is_empty() && screen.tagged.is_empty());
        assert_eq!(screen.log.len(), HISTORY_LINES + 3);
        out.replay(|history, partial| {
            assert_eq!(history.dropped(), 3);
            let lines: Vec<&[u8]> = history.lines().collect();
            assert_eq!(lines.len(), HISTORY_LINES);
            assert_eq!(lines[0], b"line 3");
            assert_eq!(
                lines[HISTORY_LINES - 1],
                alloc::format!("line {}", HISTORY_LINES + 2).as_bytes()
            );
            assert_eq!(partial, b"/ # ");
        });
        out.replay(|history, partial| {
            assert_eq!((history.dropped(), history.lines().count()), (0, 0));
            assert_eq!(partial, b"/ # ");
        });
        out.write(b"\r\nagain\r\n", Shown::Hidden, &mut screen);
        out.replay(|history, _| {
            let lines: Vec<&[u8]> = history.lines().collect();
            assert_eq!(lines, [&b"/ # "[..], b"again"]);
        });
    }

    #[test]
    fn views_decide_who_is_shown() {
        assert_eq!(View::decode(View::All.encode()), View::All);
        assert_eq!(View::decode(View::Vm(3).encode()), View::Vm(3));
        assert_eq!(View::Vm(1).shows(1), Shown::Raw);
        assert_eq!(View::Vm(1).shows(0), Shown::Hidden);
        assert_eq!(View::All.shows(0), Shown::Tagged);
    }

    #[test]
    fn any_bytes_are_accepted() {
        let mut rng = crate::test_rng::Rng(7);
        let mut out = VmOutput::default();
        let mut screen = Screen::default();
        for _ in 0..2_000 {
            let bytes: Vec<u8> = (0..rng.below(300)).map(|_| rng.below(256) as u8).collect();
            let shown = [Shown::Raw, Shown::Tagged, Shown::Hidden][rng.below(3) as usize];
            out.write(&bytes, shown, &mut screen);
        }
        let printable = |l: &Vec<u8>| {
            l.iter()
                .all(|&b| b == b'\t' || (0x20..0x7f).contains(&b) || b >= 0x80)
        };
        assert!(screen.tagged.iter().all(printable));
        assert!(screen
            .log
            .iter()
            .all(|l| l.len() <= MAX_LINE && printable(l)));
    }
}
