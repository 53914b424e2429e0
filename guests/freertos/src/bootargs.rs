//! Run-time options from the device tree's `/chosen/bootargs` (QEMU's `-append`, or the
//! `bootargs` of the VM in Partita's configuration), decoded into typed values. Unknown
//! words are ignored; a malformed value is ignored like a missing one.
//!
//! `rt.samples=<n>`: the real-time task powers off after `n` samples (default: never).
//! `tick=physical`: the tick is the EL1 physical timer instead of the virtual one.
//! `bench=...` and `bench.*=...`: the benchmarks run instead of the demo (`bench::args`).
//! `ivc=...` and `ivc.*=...`: the IVC task's mode (`ivc_demo::Options`).

use crate::bench::Selection;
use crate::timer::Source;
use fdt::Fdt;

/// Options the guest understands.
#[derive(Clone, Copy, Debug, Default)]
pub struct BootArgs {
    pub rt_samples: Option<u64>,
    pub bench: Option<Selection>,
    pub tick: Source,
}

impl BootArgs {
    pub fn from_fdt(fdt: &Fdt<'_>) -> Self {
        Self::parse(Self::line(fdt))
    }

    /// The whole line (empty without one), for modules with options of their own
    /// (`ivc_demo::Options`).
    pub fn line<'a>(fdt: &Fdt<'a>) -> &'a str {
        fdt.find_node("/chosen")
            .and_then(|chosen| chosen.property("bootargs"))
            .and_then(|property| property.as_str())
            .unwrap_or("")
    }

    fn parse(line: &str) -> Self {
        let mut args = Self {
            bench: Selection::parse(line),
            ..Self::default()
        };
        for word in line.split_ascii_whitespace() {
            if let Some(value) = word.strip_prefix("rt.samples=") {
                args.rt_samples = value.parse().ok().filter(|&n| n > 0);
            } else if word == "tick=physical" {
                args.tick = Source::Physical;
            }
        }
        args
    }
}
