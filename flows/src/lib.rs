//! manarig's traffic tool: many TCP flows (distinct 4-tuples, both
//! directions, every byte checked) between the guest and a peer in a network
//! namespace the run creates, over the kernels' own TCP/IP stacks.
//!
//! One binary, `manarig-flows`, plays both ends:
//! - `manarig-flows peer` (host, started by the rig): [`netns`] (a private
//!   namespace, a TAP whose descriptor goes to the rig with [`fdpass`]),
//!   then [`peer`];
//! - `manarig-flows guest` (in the initramfs, run by the `/init` agent): [`guest`].
//!
//! [`proto`] is what they and the rig say to each other; [`run`] runs one
//! end's side of the flows; [`stream`] makes and checks the bytes.
//!
//! Traffic goes only between the guest and the peer's namespace: the
//! namespace has no other interface than the TAP and `lo`, and no route
//! beyond the TAP's subnet.

pub mod fdpass;
pub mod guest;
pub mod netns;
pub mod peer;
pub mod proto;
pub mod run;
pub mod stream;

/// The binary's file name (the `[[bin]]` of this crate).
pub const BIN: &str = "manarig-flows";
