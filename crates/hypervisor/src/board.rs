//! The board this binary is built for (`PARTITA_PLATFORM` at build time, see `build.rs`):
//! its description is where every driver finds its device, and the bundle's configuration
//! must name the same platform.

use partita_core::board::{Board, Platform};

include!(concat!(env!("OUT_DIR"), "/platform.rs"));

/// The description of the board Partita runs on.
pub const BOARD: &Board = PLATFORM.board();
