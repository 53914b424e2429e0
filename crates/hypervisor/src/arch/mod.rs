//! Architecture-specific code. Only AArch64 exists; a second architecture would be a sibling
//! module with the same file names, chosen here.

pub mod aarch64;
