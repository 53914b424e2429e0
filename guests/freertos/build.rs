//! Build script of the FreeRTOS guest: compiles the real FreeRTOS kernel shipped by the
//! `freertos-next` crate (its `links = "freertos"` exposes the kernel directory as
//! `DEP_FREERTOS_KERNEL`) with the Debian cross compiler, together with the ARM_AARCH64_SRE
//! port built for EL1 (`-DGUEST`) and this crate's `c/FreeRTOSConfig.h`, and passes the
//! linker script. It never copies kernel sources into the repository.

use std::env;
use std::path::{Path, PathBuf};

/// Kernel files the guest needs (timers.c compiles to nothing while configUSE_TIMERS is 0).
const KERNEL_SOURCES: &[&str] = &[
    "tasks.c",
    "list.c",
    "queue.c",
    "timers.c",
    "portable/MemMang/heap_4.c",
];
const PORT_DIR: &str = "portable/GCC/ARM_AARCH64_SRE";

fn main() {
    let kernel = PathBuf::from(
        env::var("DEP_FREERTOS_KERNEL").expect("freertos-next exports DEP_FREERTOS_KERNEL"),
    );
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let port = kernel.join(PORT_DIR);

    let mut c = cross_build(&kernel, &port, &manifest.join("c"));
    // port.c calls memset (configUSE_TASK_FPU_SUPPORT = 2) without including string.h.
    c.flag("-include").flag("string.h");
    for source in KERNEL_SOURCES {
        c.file(kernel.join(source));
    }
    c.file(port.join("port.c"));
    c.compile("freertos_kernel");

    let mut asm = cross_build(&kernel, &port, &manifest.join("c"));
    asm.file(port.join("portASM.S"));
    asm.compile("freertos_port_asm");

    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=c/FreeRTOSConfig.h");
    println!("cargo:rerun-if-changed=link.ld");
    println!("cargo:rerun-if-env-changed=PARTITA_CROSS_CC");
    println!("cargo:rerun-if-env-changed=PARTITA_CROSS_AR");
    println!(
        "cargo:rustc-link-arg-bins=-T{}",
        manifest.join("link.ld").display()
    );
}

/// The cross compiler set up for bare-metal EL1 code: no libc, no PIE, no stack protector,
/// no unaligned accesses (the MMU is off, so memory is Device memory), no outline atomics.
fn cross_build(kernel: &Path, port: &Path, config_dir: &Path) -> cc::Build {
    let compiler = env::var("PARTITA_CROSS_CC").unwrap_or_else(|_| "aarch64-linux-gnu-gcc".into());
    let archiver = env::var("PARTITA_CROSS_AR").unwrap_or_else(|_| "aarch64-linux-gnu-ar".into());
    let mut build = cc::Build::new();
    build
        .compiler(compiler)
        .archiver(archiver)
        .include(config_dir)
        .include(kernel.join("include"))
        .include(port)
        .define("GUEST", None)
        .flag("-ffreestanding")
        .flag("-fno-builtin")
        .flag("-fno-pie")
        .flag("-fno-stack-protector")
        .flag("-mstrict-align")
        .flag("-mno-outline-atomics")
        .flag("-march=armv8-a")
        .opt_level(2)
        .warnings(true)
        .extra_warnings(true);
    build
}
