//! A VM's console output (`partita_core::console`) under any bytes a guest can transmit and
//! any sequence of view changes: it never panics; the shown VM's bytes reach the terminal
//! unchanged; every tagged, logged or replayed line is at most `MAX_LINE` bytes and holds no
//! control character but a tab, so no escape sequence reaches a shared terminal or a log;
//! a hidden VM keeps at most `HISTORY_LINES` lines and counts the ones it let go.

#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use partita_core::console::{Shown, Terminal, VmOutput, HISTORY_LINES, MAX_LINE};

#[derive(Arbitrary, Debug)]
enum Op {
    Write { bytes: Vec<u8>, shown: View },
    FinishLine { shown: View },
    Replay,
}

#[derive(Arbitrary, Clone, Copy, Debug)]
enum View {
    Raw,
    Tagged,
    Hidden,
}

impl View {
    fn shown(self) -> Shown {
        match self {
            View::Raw => Shown::Raw,
            View::Tagged => Shown::Tagged,
            View::Hidden => Shown::Hidden,
        }
    }
}

/// Checks every line that is not the shown VM's own bytes.
fn assert_clean(line: &[u8]) {
    assert!(line.len() <= MAX_LINE, "line of {} bytes", line.len());
    assert!(
        line.iter().all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f)),
        "control byte in {line:?}"
    );
}

#[derive(Default)]
struct Screen {
    raw: Vec<u8>,
    lines: usize,
}

impl Terminal for Screen {
    fn raw(&mut self, bytes: &[u8]) {
        self.raw.extend_from_slice(bytes);
    }
    fn tagged(&mut self, line: &[u8]) {
        assert_clean(line);
        self.lines += 1;
    }
    fn log(&mut self, line: &[u8]) {
        assert_clean(line);
    }
}

fuzz_target!(|ops: Vec<Op>| {
    let mut output = VmOutput::new();
    let mut hidden_lines = 0u64;
    for op in ops {
        match op {
            Op::Write { bytes, shown } => {
                let mut screen = Screen::default();
                output.write(&bytes, shown.shown(), &mut screen);
                match shown {
                    View::Raw => assert_eq!(screen.raw, bytes),
                    _ => assert!(screen.raw.is_empty()),
                }
                if matches!(shown, View::Hidden) {
                    hidden_lines += bytes.iter().filter(|&&b| b == b'\n').count() as u64;
                }
            }
            Op::FinishLine { shown } => {
                let mut screen = Screen::default();
                output.finish_line(shown.shown(), &mut screen);
            }
            Op::Replay => output.replay(|history, partial| {
                assert_clean(partial);
                let kept = history.lines().count();
                assert!(kept <= HISTORY_LINES);
                history.lines().for_each(assert_clean);
                // Lines also end at MAX_LINE, so a hidden VM keeps at least its newlines.
                assert!(kept as u64 + history.dropped() >= hidden_lines.min(HISTORY_LINES as u64));
                hidden_lines = 0;
            }),
        }
    }
});
