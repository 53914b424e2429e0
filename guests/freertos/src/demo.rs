//! The background demo tasks (like Kim & Choi's figure 8): two low-priority tasks that
//! print a greeting periodically while the real-time task runs above them.

use crate::{console, freertos};
use core::ffi::c_void;

/// Period of the "hello" task.
const HELLO_PERIOD_MS: u64 = 500;
/// Period of the "goodbye" task.
const GOODBYE_PERIOD_MS: u64 = 700;

pub extern "C" fn hello_task(_: *mut c_void) {
    loop {
        console::line(format_args!("hello from FreeRTOS task 1"));
        freertos::delay_ms(HELLO_PERIOD_MS);
    }
}

pub extern "C" fn goodbye_task(_: *mut c_void) {
    loop {
        console::line(format_args!("goodbye from FreeRTOS task 2"));
        freertos::delay_ms(GOODBYE_PERIOD_MS);
    }
}
