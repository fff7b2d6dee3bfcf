//! One rig run: a topology file → a real guest with the emulated MANA NIC → a verdict.
//!
//! [`run_one`] loads the topology, builds the QEMU machine from it ([`machine`]),
//! starts the emulated NIC as a `mana-device` child process on a vfio-user
//! socket ([`device`]: a device that fails ends the run with a rig error),
//! boots the pinned kernel with the `/init` agent, turns the guest's console
//! report into [`Observed`](crate::verdict::Observed) ([`report_to_verdict`]),
//! checks the observed topology against the file, and judges the MSI-X table
//! against the reference model.
//!
//! The modules, one concern each (the private ones are re-exported here):
//! - `request`: what to run ([`RunRequest`] and its defaults) and its
//!   [`injections`];
//! - `cache`: the provisioned cache ([`provisioned`]) and the pinned kernels'
//!   ids ([`kernel_lock_id`]); [`kernel_choice`]: which kernel boots and which
//!   model judges it;
//! - `boot`: one boot with the emulated NIC (peer, devices, QEMU, the device's
//!   status at the report's markers); `boot_request`: the guest's side of it
//!   (agent options, kernel command line, extra files, deadlines), with
//!   `irqbalance` (its files and sampling); `planner`: the traffic plan from
//!   the device's RSS state;
//! - `guest_checks`: the rig errors a guest report shows (topology, `ethtool
//!   -L`, `rmmod`, CPU hotplug);
//! - `run`: [`run_one`], the sequence from topology file to [`RunOutcome`];
//!   `judging`: the booted guest judged (rig errors first, then the model at
//!   every stage and the run's other checks; [`accel_label`]); `other_nics`:
//!   the verdicts of NIC 1, 2, … of a `[[nic]]` machine; `selftests`: a
//!   selftest run's guest side ([`SelftestsRequest`]: the kernel's drivers/net
//!   tests, their tools and the remote NIC's driver);
//! - [`soak`]: a soak's host side (its options, the device process sampled
//!   and the link events raised at the guest's marks, its verdict's input);
//! - `outcome`: what a run gives back ([`RunOutcome`], [`StageOutcome`],
//!   [`TrafficBoot`], [`RunTimings`]).

mod boot;
mod boot_request;
mod cache;
mod debug_baseline;
pub mod debug_kernel;
pub mod device;
mod flows_guest;
mod guest_checks;
mod irqbalance;
mod judging;
pub mod kernel_choice;
mod kernel_finding;
pub mod machine;
mod other_nics;
mod outcome;
mod page_memory;
mod planner;
pub mod queues;
pub mod report_to_verdict;
mod request;
mod run;
pub mod selftests;
pub mod soak;
pub mod timed_injections;

pub use boot::BootError;
pub use boot_request::INJECT_AGENT_DEADLINE_S;
pub use cache::{kernel_lock_id, provisioned, provisioned_for, CacheError};
pub use debug_baseline::DebugBaselineError;
pub use flows_guest::FlowsGuestError;
pub use guest_checks::GuestCheckError;
pub use irqbalance::{IrqbalanceError, IRQBALANCE_SAMPLE_S};
pub use judging::{accel_label, JudgeError};
pub use outcome::{RunOutcome, RunTimings, StageOutcome, TrafficBoot};
pub use page_memory::ARM64_64K_MEM_MIB;
pub use request::{injections, BadInjection, RunRequest};
pub use run::{run_one, RunError};
pub use selftests::{SelftestsError, SelftestsRequest};
