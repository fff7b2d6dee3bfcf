//! The host ↔ guest protocol, in one place: what the host asks of the `/init`
//! agent (guest-images/init.sh) and what the agent answers. The written spec is
//! guest-images/README.md; `spec_tests` checks that it, init.sh and this code
//! name the same items.
//!
//! - [`options`]: [`AgentOptions`], the only writer of the `manarig.*` kernel
//!   command-line items;
//! - [`markers`]: the begin/end lines of the report and of the stages, a
//!   soak's marks ([`soak`]), a selftest run's marks, and the report's [`Version`];
//! - [`parse()`] (`parse.rs`): the agent's output → [`Transcript`] (stages, then the
//!   report), once, with [`report`]'s types and the line [`Key`]s;
//! - `assemble`, `interrupts`: sysfs/procfs paths and `/proc/interrupts` lines
//!   → CPUs, nodes, PCI functions, MSI-X vectors.

#[cfg(test)]
mod agent_tests;
mod assemble;
mod interrupts;
pub mod irqbalance;
pub mod markers;
pub mod options;
mod parse;
pub mod report;
pub mod selftests;
pub mod soak;
#[cfg(test)]
mod spec_tests;
#[cfg(test)]
mod tests;

pub use irqbalance::{GuestIrqbalance, IrqbalanceSample, IrqbalanceState};
pub use markers::{Marker, Version, GO_AHEAD};
pub use options::{AgentOptions, PciId, ReportChannel};
pub use parse::{parse, Key};
pub use report::{
    format_cpulist, GuestCpu, GuestCpuState, GuestIrq, GuestNode, GuestPci, GuestReport, GuestTraffic, Stage,
    TrafficCounts, Transcript, Unload, UnloadHandshake,
};
pub use selftests::{
    GuestSelftestRun, GuestSelftests, NetdevRxCounters, RemoteCounters, SelftestExit, SelftestMarkCounters,
};
pub use soak::{GuestSoak, SoakMark, SoakRound, SoakStep, SoakStepResult};

/// Errors reading the agent's output. Line numbers are 1-based, in the text
/// given to [`parse()`] (the console, or the report channel).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReportError {
    /// No begin marker.
    #[error("no {} line in the guest's output", markers::REPORT_BEGIN)]
    NoBegin,
    /// A begin line without its end (the guest died or was cut off mid-block).
    #[error("the block that begins on line {line} has no {end} line")]
    NoEnd {
        /// The begin line.
        line: usize,
        /// The end line that is missing.
        end: &'static str,
    },
    /// A report of a version this parser does not read.
    #[error(
        "the guest's report is format version {got:?}; this manarig reads versions {} (its guest-images/init.sh prints {}): \
         the guest agent and the harness come from different trees",
        Version::known_list(),
        Version::CURRENT
    )]
    Version {
        /// The version as the guest printed it.
        got: String,
    },
    /// A line does not parse.
    #[error("report line {line}: {what}: {text:?}")]
    Line {
        /// 1-based line.
        line: usize,
        /// What is wrong.
        what: String,
        /// The line.
        text: String,
    },
}
