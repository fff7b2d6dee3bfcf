//! QEMU: the machine description ([`MachineSpec`]) and the launcher ([`boot`]).

pub mod launch;
pub mod speed;
pub mod spec;

pub use launch::{boot, BootAbort, BootOutcome, BootRequest, LaunchError, MarkerHook};
pub use speed::{Speedups, SPEED_CMDLINE};
pub use spec::{machines, vfio_user_nic, MachineSpec, NicPlacement, NodeSpec, SpecError};
