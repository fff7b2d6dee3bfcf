//! The device core behind [`crate::bar::Bar0Handler`]: [`ManaDevice`] and
//! what it is made of.
//!
//! - [`mana`]: [`ManaDevice`]: BAR0 dispatch, doorbells, the HWC request
//!   loop, counters and the snapshot;
//! - [`regs`]: the BAR0 layout; [`smc`]: the shared-memory channel;
//!   [`hwc`]: the hardware channel;
//! - [`framing`]: a request's and a response's framing; [`commands`]:
//!   routing by command code to [`gdma`] and [`bnic`]; [`gf_stats`]: the
//!   function's counters MANA_QUERY_GF_STAT reports;
//! - [`resources`]: what the commands create; [`budget`]: what the device
//!   advertises and enforces.
#![forbid(unsafe_code)]

pub mod bnic;
pub mod budget;
pub mod commands;
pub mod framing;
pub mod gdma;
pub mod gf_stats;
pub mod hwc;
pub mod mana;
pub mod regs;
pub mod resources;
pub mod smc;

pub use mana::{factory, ManaDevice};
