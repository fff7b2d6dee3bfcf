//! What runs around the device in the `mana-device` process (src/main.rs).
//!
//! - [`control`]: status and liveness requests from whoever started the
//!   device, over stdin/stdout;
//! - [`backend_loop`]: the event loop that feeds frames from a backend with
//!   a readiness fd (a TAP) into the core;
//! - [`fault`]: test-only faults of the device process itself.

pub mod backend_loop;
pub mod control;
pub mod fault;
