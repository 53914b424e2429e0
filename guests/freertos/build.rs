//! Build script of the FreeRTOS guest: compiles the real FreeRTOS kernel shipped by the
//! `freertos-next` crate (its `links = "freertos"` exposes the kernel directory as
//! `DEP_FREERTOS_KERNEL`) with the Debian cross compiler, together with the port built for
//! EL1 (`-DGUEST`) and this crate's `c/FreeRTOSConfig.h`, and passes the linker script. It
//! never copies kernel sources into the repository.
//!
//! The port follows the GIC the guest is built for: ARM_AARCH64_SRE (GICv3 system
//! registers) by default; ARM_AARCH64 (a memory-mapped GICv2 CPU interface) with the
//! `gicv2` feature, whose register addresses the port takes at compile time: the builder
//! passes the board's distributor and CPU interface in `PARTITA_GUEST_GICD` and
//! `PARTITA_GUEST_GICC`, and the Rust side gets them too (`env!`) to check them against the
//! device tree at start-up.

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
const PORT_DIR_GICV3: &str = "portable/GCC/ARM_AARCH64_SRE";
const PORT_DIR_GICV2: &str = "portable/GCC/ARM_AARCH64";
/// The GICv2 frames the `gicv2` build is compiled for (see the module comment).
const GICD_VAR: &str = "PARTITA_GUEST_GICD";
const GICC_VAR: &str = "PARTITA_GUEST_GICC";

fn main() {
    let kernel = PathBuf::from(
        env::var("DEP_FREERTOS_KERNEL").expect("freertos-next exports DEP_FREERTOS_KERNEL"),
    );
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let gicv2 = env::var_os("CARGO_FEATURE_GICV2").is_some();
    let port = kernel.join(if gicv2 {
        PORT_DIR_GICV2
    } else {
        PORT_DIR_GICV3
    });
    let frames = gicv2.then(gicv2_frames);

    let mut c = cross_build(&kernel, &port, &manifest.join("c"), frames);
    // port.c calls memset (configUSE_TASK_FPU_SUPPORT = 2) without including string.h.
    c.flag("-include").flag("string.h");
    for source in KERNEL_SOURCES {
        c.file(kernel.join(source));
    }
    c.file(port.join("port.c"));
    c.compile("freertos_kernel");

    let mut asm = cross_build(&kernel, &port, &manifest.join("c"), frames);
    asm.file(port.join("portASM.S"));
    asm.compile("freertos_port_asm");

    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=c/FreeRTOSConfig.h");
    println!("cargo:rerun-if-changed=link.ld");
    println!("cargo:rerun-if-env-changed=PARTITA_CROSS_CC");
    println!("cargo:rerun-if-env-changed=PARTITA_CROSS_AR");
    println!("cargo:rerun-if-env-changed={GICD_VAR}");
    println!("cargo:rerun-if-env-changed={GICC_VAR}");
    println!(
        "cargo:rustc-link-arg-bins=-T{}",
        manifest.join("link.ld").display()
    );
}

/// The GICv2 distributor and CPU interface addresses from the environment (`gicv2`), also
/// handed to the Rust code.
fn gicv2_frames() -> (u64, u64) {
    let address = |var: &str| -> u64 {
        let text = env::var(var)
            .unwrap_or_else(|_| panic!("the gicv2 build needs {var} (a hexadecimal address)"));
        u64::from_str_radix(text.trim_start_matches("0x"), 16)
            .unwrap_or_else(|_| panic!("{var}={text} is not a hexadecimal address"))
    };
    let (gicd, gicc) = (address(GICD_VAR), address(GICC_VAR));
    assert!(gicc > gicd, "{GICC_VAR} must lie above {GICD_VAR}");
    println!("cargo:rustc-env={GICD_VAR}={gicd:#x}");
    println!("cargo:rustc-env={GICC_VAR}={gicc:#x}");
    (gicd, gicc)
}

/// The cross compiler set up for bare-metal EL1 code: no libc, no PIE, no stack protector,
/// no unaligned accesses (the MMU is off, so memory is Device memory), no outline atomics.
fn cross_build(
    kernel: &Path,
    port: &Path,
    config_dir: &Path,
    gicv2: Option<(u64, u64)>,
) -> cc::Build {
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
    if let Some((gicd, gicc)) = gicv2 {
        // The ARM_AARCH64 port's `#warning` about running as a guest is its GUEST build's
        // normal case here.
        build
            .flag("-Wno-cpp")
            .define("PARTITA_GICV2_DISTRIBUTOR", format!("{gicd:#x}UL").as_str())
            .define(
                "PARTITA_GICV2_CPU_OFFSET",
                format!("{:#x}UL", gicc - gicd).as_str(),
            );
    }
    build
}
