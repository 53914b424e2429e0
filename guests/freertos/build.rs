//! Build script of the FreeRTOS guest: compiles the real FreeRTOS kernel shipped by the
//! `freertos-next` crate (its `links = "freertos"` exposes the kernel directory as
//! `DEP_FREERTOS_KERNEL`) with the Debian cross compiler, together with the ARM_AARCH64_SRE
//! port built for EL1 (`-DGUEST`) and this crate's `c/FreeRTOSConfig.h`, and passes the
//! linker script. It never copies kernel sources into the repository.

use std::env;
use std::path::PathBuf;

/// Kernel files the guest needs (timers.c compiles to nothing while configUSE_TIMERS is 0).
const KERNEL_SOURCES: &[&str] = &["tasks.c", "list.c", "queue.c", "timers.c"];
const PORT_DIR: &str = "portable/GCC/ARM_AARCH64_SRE";
const HEAP: &str = "portable/MemMang/heap_4.c";

fn main() {
    let kernel = PathBuf::from(
        env::var("DEP_FREERTOS_KERNEL").expect("freertos-next exports DEP_FREERTOS_KERNEL"),
    );
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let config_dir = manifest.join("c");
    let port = kernel.join(PORT_DIR);
    let compiler = env::var("PARTITA_CROSS_CC").unwrap_or_else(|_| "aarch64-linux-gnu-gcc".into());
    let archiver = env::var("PARTITA_CROSS_AR").unwrap_or_else(|_| "aarch64-linux-gnu-ar".into());

    let mut build = cc::Build::new();
    build
        .compiler(&compiler)
        .archiver(&archiver)
        .include(&config_dir)
        .include(kernel.join("include"))
        .include(&port)
        .define("GUEST", None)
        .flag("-ffreestanding")
        .flag("-fno-builtin")
        .flag("-fno-pie")
        .flag("-fno-stack-protector")
        .flag("-mstrict-align")
        .flag("-mno-outline-atomics")
        .flag("-march=armv8-a")
        .opt_level(2)
        .warnings(false);
    for source in KERNEL_SOURCES {
        build.file(kernel.join(source));
    }
    build.file(kernel.join(HEAP));
    build.file(port.join("port.c"));
    build.file(port.join("portASM.S"));
    build.compile("freertos_kernel");

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
