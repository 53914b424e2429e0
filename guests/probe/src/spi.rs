//! The `spi` mode: the interrupt destination table at work. The VM owns physical SPI `spi=<n>`
//! (`irqs = [n]` in its configuration); the probe asks Partita to raise it through the test
//! device's `RAISE` register and must receive it each time, through its virtual GIC with the
//! list register's HW bit (its EOI ends the physical interrupt, so the next one can come).
//! Then it asks for SPI n + 1, which it does not own: Partita must drop the request and
//! nothing may arrive. One line reports both, then the probe powers off; any failure crashes
//! it (the VM is stopped as faulted).

use crate::checks::interrupts::SPURIOUS_LIMIT;
use crate::gic::{Gic, SPURIOUS};
use crate::mmio::Store;
use crate::platform::Platform;
use crate::{crash, power_off, println};

/// Times the owned SPI is raised.
const ROUNDS: u32 = 10;
/// The test device's `RAISE` register.
const RAISE: u64 = 0x28;
/// Reads `spi=<n>` (an SPI: 32 to 1019) from the boot arguments.
fn owned_spi(bootargs: &str) -> Option<u32> {
    bootargs
        .split_ascii_whitespace()
        .find_map(|arg| arg.strip_prefix("spi="))
        .and_then(|n| n.parse().ok())
        .filter(|n| (32..1019).contains(n))
}

/// Acknowledges interrupts until `intid` comes or the CPU interface stays empty; whether it
/// came (anything else acknowledged on the way is a failure too).
fn receive(gic: Gic, intid: u32) -> bool {
    for _ in 0..SPURIOUS_LIMIT {
        match gic.acknowledge() {
            SPURIOUS => continue,
            got => return got == u64::from(intid),
        }
    }
    false
}

pub fn run(platform: &Platform) -> ! {
    let Some(owned) = owned_spi(platform.bootargs) else {
        println!("probe: spi mode needs spi=<n>, an SPI the VM owns");
        crash()
    };
    let foreign = owned + 1;
    let gic = platform.gic;
    gic.enable(0);
    gic.enable_spi(owned);
    gic.enable_spi(foreign);
    let mut delivered = 0;
    for _ in 0..ROUNDS {
        Store::Word.run(platform.testdev + RAISE, u64::from(owned));
        if receive(gic, owned) {
            delivered += 1;
        }
    }
    Store::Word.run(platform.testdev + RAISE, u64::from(foreign));
    let foreign_arrived = receive(gic, foreign);
    let verdict = if foreign_arrived {
        "delivered (wrong)"
    } else {
        "not delivered"
    };
    println!(
        "probe: spi {owned}: {delivered} of {ROUNDS} delivered; spi {foreign} (not owned): {verdict}"
    );
    if delivered == ROUNDS && !foreign_arrived {
        power_off()
    }
    crash()
}
