//! A captured console turned into clean lines and per-experiment sections.
//!
//! Guests print the same lines in every configuration, but the transport differs: Partita
//! prefixes a VM's lines with `[<vm>] `, Xen a domU's with `(XEN) DOM<id>: `, serial
//! consoles add `\r`. This module removes those and cuts the Linux job's output at the markers the job script prints
//! (`partita-bench: begin <name>` / `partita-bench: end <name> <status>`). It never
//! interprets what an experiment printed.

/// The marker a job script prints before an experiment's command.
pub const BEGIN: &str = "partita-bench: begin ";
/// The marker a job script prints after it, with the command's exit status.
pub const END: &str = "partita-bench: end ";

/// One line as the guest printed it: without `\r` and without Partita's `[vm] ` or Xen's
/// `(XEN) DOM<id>: ` prefix.
pub fn clean(line: &str) -> &str {
    let line = line.trim_end_matches(['\r', '\n']);
    if let Some((_, text)) = crate::xen::domu_text(line) {
        return text;
    }
    match line.strip_prefix('[') {
        Some(rest) => match rest.split_once("] ") {
            Some((vm, text)) if is_vm_name(vm) => text,
            _ => line,
        },
        None => line,
    }
}

/// The VM whose line `line` is, by Partita's `[vm] ` prefix; None for an untagged line.
pub fn vm_of(line: &str) -> Option<&str> {
    let (vm, _) = line.strip_prefix('[')?.split_once("] ")?;
    is_vm_name(vm).then_some(vm)
}

/// VM names are short identifiers; kernel timestamps (`[   1.23]`) are not.
fn is_vm_name(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && word.chars().any(|c| c.is_ascii_alphabetic())
}

/// The lines one experiment printed and how its command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub lines: Vec<String>,
    /// The command's exit status; None when the end marker never came.
    pub status: Option<i32>,
}

/// Cuts `output` into the sections of the job script, in order.
pub fn sections(output: &str) -> Vec<Section> {
    let mut done = Vec::new();
    let mut open: Option<Section> = None;
    for line in output.lines().map(clean) {
        if let Some(name) = line.strip_prefix(BEGIN) {
            done.extend(open.take());
            open = Some(Section {
                name: name.trim().to_owned(),
                lines: Vec::new(),
                status: None,
            });
        } else if let Some(rest) = line.strip_prefix(END) {
            if let Some(mut section) = open.take() {
                section.status = rest
                    .rsplit_once(' ')
                    .and_then(|(_, status)| status.trim().parse().ok());
                done.push(section);
            }
        } else if let Some(section) = open.as_mut() {
            section.lines.push(line.to_owned());
        }
    }
    done.extend(open);
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_carriage_returns_are_removed() {
        assert_eq!(clean("[linux] Time: 1.9\r"), "Time: 1.9");
        assert_eq!(clean("[    0.000000] Booting"), "[    0.000000] Booting");
        assert_eq!(clean("(XEN) Xen version"), "(XEN) Xen version");
        assert_eq!(clean("(XEN) DOM1: bench: done\r"), "bench: done");
        assert_eq!(
            clean("(XEN) [    2.825079] DOM1: bench: done"),
            "bench: done"
        );
    }

    #[test]
    fn sections_follow_the_markers() {
        let output = "boot\n[linux] partita-bench: begin a\r\n[linux] x\n\
                      [linux] partita-bench: end a 0\nnoise\n\
                      partita-bench: begin b\ny\npartita-bench: end b 3\n\
                      partita-bench: begin c\nz\n";
        let found = sections(output);
        assert_eq!(found.len(), 3);
        assert_eq!(found[0].name, "a");
        assert_eq!(found[0].lines, ["x"]);
        assert_eq!(found[0].status, Some(0));
        assert_eq!(found[1].status, Some(3));
        assert_eq!(found[2].lines, ["z"]);
        assert_eq!(found[2].status, None);
    }
}
