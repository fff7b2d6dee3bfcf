//! The interface of the emulated MANA device (the `device-model` crate and
//! its `mana-device` process) to whoever runs it (the harness): what crosses
//! the process boundary, and the few protocol facts both sides compute with.
//!
//! Both ends use these types, so the status and the requests are read back
//! into the same shapes they were written from, never through a private copy.
//! The crate knows nothing of vfio-user, guest memory or the device's state
//! machines; its dependencies are serde, zerocopy and bitfield-struct.
//!
//! Modules:
//! - [`config`]: what the device advertises ([`config::DeviceConfig`]);
//! - [`control`]: the control channel's requests and replies;
//! - [`status`]: the device's status (PCI function, MSI-X, DMA map) and
//!   [`snapshot`]: the device core's state inside it, with [`traffic`]
//!   counters, [`flows`] records and [`rss`] steering;
//! - [`inject`]: `--inject SPEC`, the faults the device shows the driver;
//!   [`fault`]: `--inject-fault KIND:N`, faults of the device process;
//! - [`codes`]: the GDMA codes these name (commands, device types);
//!   [`toeplitz`]: the RSS hash, which the rig recomputes to plan flows.
#![forbid(unsafe_code)]

pub mod codes;
pub mod config;
pub mod control;
pub mod fault;
pub mod flows;
pub mod inject;
pub mod rss;
pub mod snapshot;
pub mod status;
pub mod toeplitz;
pub mod traffic;
