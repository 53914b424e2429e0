//! What the fuzz targets share: access sizes drawn from the fuzzer's bytes.
//!
//! Each target lives in `fuzz_targets/` and checks one decoder or model against the
//! invariants its documentation promises; a panic or a failed assertion is a finding.
//! Nothing here touches the models' state.

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use partita_core::devices::AccessSize;

/// An MMIO access width, as a guest can choose it.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Size {
    Byte,
    Half,
    Word,
    Double,
}

impl Size {
    pub fn access(self) -> AccessSize {
        match self {
            Size::Byte => AccessSize::Byte,
            Size::Half => AccessSize::Half,
            Size::Word => AccessSize::Word,
            Size::Double => AccessSize::Double,
        }
    }
}
