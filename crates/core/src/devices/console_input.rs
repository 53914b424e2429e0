//! Console input focus: which VM the bytes typed on the physical console go to, switched
//! with Ctrl-\ followed by the VM's number.
//!
//! The key sequence is Ctrl-\ (0x1c) then `1`..`9` for VM 1 to 9 in configuration order, or
//! `0` to show every VM's output (`crate::console::View::All`) while input stays with the
//! VM that had it; Ctrl-\ twice types one Ctrl-\; Ctrl-\ followed by anything else is
//! dropped with it. This module only decodes keystrokes; the hypervisor owns the queues and
//! the physical UART.

/// Ctrl-\: starts a focus switch.
pub const FOCUS_ESCAPE: u8 = 0x1c;

/// What one typed byte means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keystroke {
    /// A byte for the VM that has focus.
    Byte(u8),
    /// Give focus to the VM with this index (0-based).
    Focus(usize),
    /// Show every VM's output; input keeps its VM.
    ShowAll,
    /// Part of an escape sequence, or a dropped one.
    Swallowed,
}

/// The decoder state between two bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct FocusKeys {
    escaped: bool,
}

impl FocusKeys {
    /// Decodes `byte` for a system of `vms` VMs.
    pub fn feed(&mut self, byte: u8, vms: usize) -> Keystroke {
        if !self.escaped {
            if byte == FOCUS_ESCAPE {
                self.escaped = true;
                return Keystroke::Swallowed;
            }
            return Keystroke::Byte(byte);
        }
        self.escaped = false;
        match byte {
            FOCUS_ESCAPE => Keystroke::Byte(FOCUS_ESCAPE),
            b'0' => Keystroke::ShowAll,
            b'1'..=b'9' if usize::from(byte - b'1') < vms => {
                Keystroke::Focus(usize::from(byte - b'1'))
            }
            _ => Keystroke::Swallowed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(bytes: &[u8], vms: usize) -> alloc::vec::Vec<Keystroke> {
        let mut keys = FocusKeys::default();
        bytes.iter().map(|&b| keys.feed(b, vms)).collect()
    }

    #[test]
    fn plain_bytes_pass_through() {
        assert_eq!(
            typed(b"ls", 2),
            [Keystroke::Byte(b'l'), Keystroke::Byte(b's')]
        );
    }

    #[test]
    fn escape_and_number_switch_focus() {
        assert_eq!(
            typed(&[FOCUS_ESCAPE, b'2', b'x'], 2),
            [
                Keystroke::Swallowed,
                Keystroke::Focus(1),
                Keystroke::Byte(b'x')
            ]
        );
    }

    #[test]
    fn double_escape_types_one_and_bad_numbers_are_dropped() {
        assert_eq!(
            typed(&[FOCUS_ESCAPE, FOCUS_ESCAPE, FOCUS_ESCAPE, b'3', b'a'], 2),
            [
                Keystroke::Swallowed,
                Keystroke::Byte(FOCUS_ESCAPE),
                Keystroke::Swallowed,
                Keystroke::Swallowed,
                Keystroke::Byte(b'a')
            ]
        );
        assert_eq!(typed(&[FOCUS_ESCAPE, b'a'], 9)[1], Keystroke::Swallowed);
    }

    #[test]
    fn escape_and_zero_show_every_vm() {
        assert_eq!(
            typed(&[FOCUS_ESCAPE, b'0', b'0'], 2),
            [
                Keystroke::Swallowed,
                Keystroke::ShowAll,
                Keystroke::Byte(b'0')
            ]
        );
    }
}
