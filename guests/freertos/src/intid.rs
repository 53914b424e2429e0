//! The INTID ranges of the three kinds of interrupt the guest enables, the same on GICv2
//! and GICv3 (for SPIs, the largest either architecture allows; QEMU `virt`, the ZCU102 and
//! Partita implement fewer): both GIC drivers check an INTID here before programming it.

use core::fmt;

/// An INTID that is not a (PPI, SGI, SPI), the kind of interrupt it was given as.
#[derive(Clone, Copy, Debug)]
pub enum NotA {
    Ppi(u32),
    Sgi(u32),
    Spi(u32),
}

impl fmt::Display for NotA {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ppi(intid) => write!(f, "INTID {intid} is not a PPI"),
            Self::Sgi(intid) => write!(f, "INTID {intid} is not an SGI"),
            Self::Spi(intid) => write!(f, "INTID {intid} is not an SPI"),
        }
    }
}

/// `intid` if it is a software-generated interrupt (0..15).
pub fn sgi(intid: u32) -> Result<u32, NotA> {
    (intid < 16).then_some(intid).ok_or(NotA::Sgi(intid))
}

/// `intid` if it is a private peripheral interrupt (16..31).
pub fn ppi(intid: u32) -> Result<u32, NotA> {
    (16..32)
        .contains(&intid)
        .then_some(intid)
        .ok_or(NotA::Ppi(intid))
}

/// `intid` if it is a shared peripheral interrupt (32..1019).
pub fn spi(intid: u32) -> Result<u32, NotA> {
    (32..1020)
        .contains(&intid)
        .then_some(intid)
        .ok_or(NotA::Spi(intid))
}
