//! QEMU: the machine description ([`MachineSpec`]) and the launcher ([`boot`]).

pub mod abort;
pub mod go_ahead;
pub mod launch;
pub mod monitor;
pub mod nic_slots;
pub mod report_port;
pub mod spec;
pub mod speed;
pub mod tap_nic;
pub mod watch;

pub use abort::BootAbort;
pub use launch::{boot, BootMoments, BootOutcome, BootRequest, LaunchError};
pub use spec::{machines, vfio_user_nic, MachineSpec, NicPlacement, NodeSpec, SpecError};
pub use speed::{Speedups, SPEED_CMDLINE};
pub use watch::MarkerHook;
