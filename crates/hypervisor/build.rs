//! Links the hypervisor for one board: `PARTITA_PLATFORM` names it (a `[board] platform`
//! name; `qemu-virt` when unset). The board's description gives the link address, passed to
//! the linker script (load address, image header first, stacks, heap and the
//! `__bundle_start` symbol the host tool appends the bundle at), and the board the binary
//! describes itself with (`$OUT_DIR/platform.rs`).

use std::env;
use std::fs;
use std::path::PathBuf;

use partita_core::board::Platform;

fn main() {
    let dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let name = env::var("PARTITA_PLATFORM").unwrap_or_else(|_| "qemu-virt".into());
    let Some(index) = Platform::ALL.iter().position(|p| p.name() == name) else {
        let known: Vec<_> = Platform::ALL.iter().map(|p| p.name()).collect();
        panic!(
            "PARTITA_PLATFORM: unknown platform \"{name}\"; known platforms: {}",
            known.join(", ")
        );
    };
    let board = Platform::ALL[index].board();
    let ram_base = board
        .ram_bank_of(&board.hypervisor)
        .expect("the board keeps Partita in RAM")
        .base;
    println!(
        "cargo:rustc-link-arg-bins=--defsym=PARTITA_LOAD_ADDR={:#x}",
        board.hypervisor_load
    );
    println!(
        "cargo:rustc-link-arg-bins=--defsym=PARTITA_TEXT_OFFSET={:#x}",
        board.hypervisor_load - ram_base
    );
    println!("cargo:rustc-link-arg-bins=-T{dir}/linker.ld");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(
        out.join("platform.rs"),
        format!("pub const PLATFORM: Platform = Platform::ALL[{index}];\n"),
    )
    .expect("OUT_DIR is writable");
    println!("cargo:rerun-if-changed=linker.ld");
    println!("cargo:rerun-if-env-changed=PARTITA_PLATFORM");
}
