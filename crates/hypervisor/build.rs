//! Links the hypervisor with its own linker script (load address, image header first, stacks,
//! heap and the `__bundle_start` symbol the host tool appends the bundle at).

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rustc-link-arg-bins=-T{dir}/linker.ld");
    println!("cargo:rerun-if-changed=linker.ld");
}
