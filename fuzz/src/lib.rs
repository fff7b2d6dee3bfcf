//! libFuzzer targets over every entry point of the emulated MANA device that
//! a guest or QEMU reaches, in process, with fake guest memory.
//!
//! One target per entry point ([`targets`]); each reads its input as a
//! sequence of operations ([`ops::Op`], or the target's own small format),
//! so that a recorded real session is a valid input: the seed corpus in
//! `fuzz/corpus/<target>/` is what the in-process Linux driver model
//! (device-model/tests/support) does, recorded by the `record_corpus` binary
//! ([`corpus`]). How to build and run on stable Rust: docs/fuzzing.md and
//! `cargo xtask fuzz`.
//!
//! Adding an entry point: a new [`ops::Op`] (decode and encode side by
//! side, so seeds stay writable), or a new function in [`targets`] with a
//! `fuzz_targets/NAME.rs` and a `[[bin]]` in Cargo.toml; `cargo xtask fuzz`
//! finds the targets in Cargo.toml.

#[path = "../../device-model/tests/support/mod.rs"]
pub mod support;
#[path = "../../device-model/tests/wire_client/mod.rs"]
pub mod wire_client;

pub mod corpus;
pub mod growth;
pub mod heap;
pub mod input;
pub mod machine;
pub mod ops;
#[cfg(test)]
mod regressions;
pub mod targets;
pub mod threads;
pub mod wire_session;

/// The fuzz crate's tests count their heap (the growth watch's tests
/// measure what the watch itself holds).
#[cfg(test)]
#[global_allocator]
static HEAP: heap::Counting = heap::Counting;
