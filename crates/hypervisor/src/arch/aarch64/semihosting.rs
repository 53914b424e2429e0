//! Arm semihosting ("Semihosting for AArch32 and AArch64", Arm IHI 0056): how Partita ends a
//! QEMU run with a status a test can read (SYS_EXIT), and writes each VM's console log to a
//! host file (SYS_OPEN, SYS_WRITE). QEMU needs `-semihosting-config enable=on,target=native`.
//!
//! On hardware without a debugger every call is an undefined instruction, so the log files
//! are used only when the host tool asked for them (`ConsoleConfig::log_dir`), which it does
//! for the QEMU runs it starts. Nothing a guest controls reaches a call but the bytes of its
//! own log lines.

use core::arch::asm;

const SYS_OPEN: u64 = 0x01;
const SYS_WRITE: u64 = 0x05;
const SYS_EXIT: u64 = 0x18;
/// ADP_Stopped_ApplicationExit: the application exited with the status in the block.
const ADP_STOPPED_APPLICATION_EXIT: u64 = 0x2_0026;
/// SYS_OPEN's mode for fopen's "w": create or truncate, write only.
const MODE_WRITE: u64 = 4;
/// The longest path `create` takes, terminating NUL included.
const MAX_PATH: usize = 256;

/// One semihosting call: operation `op` with the parameter block at `block`; the result.
fn call(op: u64, block: &[u64]) -> u64 {
    let result: u64;
    // SAFETY: the semihosting call reads the parameter block (and the memory it points to)
    // and returns its result in x0; it touches no other register or memory of Partita's.
    unsafe {
        asm!(
            "hlt #0xf000",
            inout("x0") op => result,
            in("x1") block.as_ptr(),
            options(nostack),
        );
    }
    result
}

/// Exits QEMU with `status`.
pub fn exit(status: u64) -> ! {
    let block = [ADP_STOPPED_APPLICATION_EXIT, status];
    loop {
        call(SYS_EXIT, &block);
    }
}

/// Creates (or truncates) the host file at `path` for writing; its handle, or `None` when
/// the path is too long or the host refuses.
pub fn create(path: &str) -> Option<usize> {
    let mut name = [0u8; MAX_PATH];
    name.get_mut(..path.len())?.copy_from_slice(path.as_bytes());
    if path.len() >= MAX_PATH || path.as_bytes().contains(&0) {
        return None;
    }
    let block = [name.as_ptr() as u64, MODE_WRITE, path.len() as u64];
    match call(SYS_OPEN, &block) {
        u64::MAX => None,
        handle => usize::try_from(handle).ok(),
    }
}

/// Writes `bytes` to the host file `handle` (what the host cannot take is lost).
pub fn write(handle: usize, bytes: &[u8]) {
    let block = [handle as u64, bytes.as_ptr() as u64, bytes.len() as u64];
    call(SYS_WRITE, &block);
}
