//! The cost of one console line (issue 16): `lines` lines of 64 characters (63 and the line
//! end) through the UART driver, through its data register alone, and, under Partita,
//! through Partita's console call; the
//! guest's own counter time per line, as `experiment=console test=<uart|call>
//! metric=line-64` in ns. Under a hypervisor each UART character is a trapped data-register
//! write and a flag poll (`uart`, the driver), or the write alone (`uart-write`, the cost of
//! one emulated character: 65 writes a line); a console call carries 48 bytes.

use super::args::{Mode, Selection};
use super::report;
use crate::console::{self, Path};
use crate::{partita, timer};

const TEST: &str = "console";
/// 63 characters; the line end makes 64.
const LINE: &str = "console line: 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLM";

const _: () = assert!(LINE.len() == 63);

pub fn run(selection: &Selection) {
    if !selection.runs(TEST) {
        return;
    }
    let lines = match selection.mode {
        Mode::Quick => 50,
        Mode::Full => 500,
    };
    measure(Path::Uart, lines);
    measure(Path::UartWrite, lines);
    if partita::present() {
        measure(Path::Call, lines);
    }
}

/// Writes `lines` lines through `path` and reports the mean time of one.
fn measure(path: Path, lines: u64) {
    let start = timer::now();
    for _ in 0..lines {
        console::line_through(path, format_args!("{LINE}"));
    }
    let ticks = timer::now().wrapping_sub(start);
    let ns = timer::ticks_to_ns(ticks, timer::frequency()) / lines;
    report::result("console", Some(path.name()), "line-64", ns, "ns");
}
