//! Test-only faults of the device *process*: `mana-device --inject-fault
//! KIND:N` makes the device fail at the N-th guest write to BAR0 (SMC dwords
//! and doorbells, so in the middle of the driver's probe for N of a few
//! dozen), to check that whoever runs the device (the rig,
//! harness/crates/rig/src/rig/device.rs) turns a broken device into a clear error.
//!
//! Kinds: `panic` (a panic in the serving thread: the binary's panic hook
//! ends the process with exit status 101), `exit` (the process exits with
//! status 3), `kill` (the process sends itself SIGKILL, as the OOM killer
//! would) and `hang` (the serving thread stops inside the write, holding the
//! device's lock, so that device-model's `StatusHandle::ping` blocks).
#![forbid(unsafe_code)]

use std::fmt;
use std::str::FromStr;

/// What an injected fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Panic in the serving thread.
    Panic,
    /// Exit the process with status 3.
    Exit,
    /// SIGKILL the process.
    Kill,
    /// Block the serving thread for good, holding the device's lock.
    Hang,
}

/// A fault and when it strikes: `KIND:N` (`kill:30`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceFault {
    /// What happens.
    pub kind: FaultKind,
    /// At which guest write to BAR0 (1 = the first).
    pub at_bar0_write: u64,
}

impl FromStr for DeviceFault {
    type Err = String;

    /// Parses `panic:N`, `exit:N`, `kill:N` or `hang:N` with N ≥ 1.
    fn from_str(text: &str) -> Result<Self, String> {
        let (kind, n) = text.split_once(':').ok_or_else(|| format!("{text:?}: expected KIND:N, e.g. kill:30"))?;
        let kind = match kind {
            "panic" => FaultKind::Panic,
            "exit" => FaultKind::Exit,
            "kill" => FaultKind::Kill,
            "hang" => FaultKind::Hang,
            other => return Err(format!("{text:?}: unknown fault {other:?} (panic, exit, kill or hang)")),
        };
        let at_bar0_write = n
            .parse::<u64>()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| format!("{text:?}: {n:?} is not a BAR0 write count (1 or more)"))?;
        Ok(Self { kind, at_bar0_write })
    }
}

impl fmt::Display for DeviceFault {
    /// The `KIND:N` form [`FromStr`] reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            FaultKind::Panic => "panic",
            FaultKind::Exit => "exit",
            FaultKind::Kill => "kill",
            FaultKind::Hang => "hang",
        };
        write!(f, "{kind}:{}", self.at_bar0_write)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse_and_print_as_kind_colon_count() {
        for text in ["panic:1", "exit:2", "kill:30", "hang:400"] {
            let fault: DeviceFault = text.parse().expect(text);
            assert_eq!(fault.to_string(), text);
        }
        for (text, needle) in [
            ("kill", "expected KIND:N"),
            ("stop:3", "unknown fault"),
            ("kill:0", "not a BAR0 write count"),
            ("kill:x", "not a BAR0 write count"),
        ] {
            let err = text.parse::<DeviceFault>().expect_err(text);
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
