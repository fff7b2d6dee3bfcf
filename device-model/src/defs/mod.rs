//! GDMA / HWC / BNIC wire formats: structs, bitfields and open enums only.
//!
//! Every layout here is the one the Linux `mana` driver uses (the spec):
//! include/net/mana/{gdma,hw_channel,shm_channel,mana}.h in Debian's
//! linux-source 6.1.192, 6.12.117 and 7.3.4. All fields are little-endian and
//! naturally aligned in the C headers; here they are zerocopy little-endian
//! integers (alignment 1), and each struct's size is asserted against the C
//! `sizeof` (see docs/mana-protocol.md §3-§4, checked with gcc).
//! No logic lives here.
#![forbid(unsafe_code)]

use zerocopy::little_endian::{U16, U32, U64};

/// Little-endian u16 on the wire.
pub type Le16 = U16;
/// Little-endian u32 on the wire.
pub type Le32 = U32;
/// Little-endian u64 on the wire.
pub type Le64 = U64;

pub mod bnic_messages;
pub mod codes;
pub mod entries;
pub mod ethernet;
pub mod gdma_messages;
pub mod smc;

pub use bnic_messages::*;
pub use codes::*;
pub use entries::*;
pub use ethernet::*;
pub use gdma_messages::*;
pub use smc::*;
