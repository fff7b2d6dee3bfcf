//! QEMU: the machine description ([`MachineSpec`]) and the launcher ([`boot`]).

pub mod command;
pub mod launch;
pub mod report_port;
pub mod speed;
pub mod spec;
pub mod watch;

pub use launch::{boot, BootOutcome, BootRequest, LaunchError, MarkerHook};
pub use speed::{Speedups, SPEED_CMDLINE};
pub use spec::{machines, vfio_user_nic, MachineSpec, NicPlacement, NodeSpec, SpecError};
