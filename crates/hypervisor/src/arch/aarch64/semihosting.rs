//! Arm semihosting SYS_EXIT, how Partita ends a QEMU run with a status a test can read
//! (QEMU needs `-semihosting-config enable=on,target=native`). It must never be used for
//! anything but ending the run.

use core::arch::asm;

const SYS_EXIT: u64 = 0x18;
/// ADP_Stopped_ApplicationExit: the application exited with the status in the block.
const ADP_STOPPED_APPLICATION_EXIT: u64 = 0x2_0026;

/// Exits QEMU with `status`.
pub fn exit(status: u64) -> ! {
    let block = [ADP_STOPPED_APPLICATION_EXIT, status];
    loop {
        // SAFETY: the semihosting call reads the two-word parameter block and stops the
        // emulator; on hardware without a debugger it is an undefined instruction, which ends
        // in Partita's EL2 exception path.
        unsafe {
            asm!(
                "hlt #0xf000",
                in("x0") SYS_EXIT,
                in("x1") block.as_ptr(),
                options(nostack),
            );
        }
    }
}
