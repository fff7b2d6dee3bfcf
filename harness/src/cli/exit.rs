//! How a manarig command ends: the one exit-code type of the command line.

use crate::verdict::Status;
use std::process::ExitCode;

/// The process exit status of every manarig command (README, "Output and exit codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    /// 0: the guest matches the model (or a command that checks nothing succeeded).
    Pass,
    /// 1: the verdict found a mismatch between the guest and the model.
    Mismatch,
    /// 2: the rig itself failed (bad input, setup, QEMU, device, guest panic).
    RigError,
}

impl Exit {
    /// The numeric code: 0, 1 or 2.
    pub fn code(self) -> u8 {
        match self {
            Exit::Pass => 0,
            Exit::Mismatch => 1,
            Exit::RigError => 2,
        }
    }

    /// A verdict's exit: pass → 0, fail → 1.
    pub fn of(status: Status) -> Self {
        match status {
            Status::Pass => Exit::Pass,
            Status::Fail => Exit::Mismatch,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_ones_and_order_by_severity() {
        assert_eq!([Exit::Pass, Exit::Mismatch, Exit::RigError].map(Exit::code), [0, 1, 2]);
        assert_eq!((Exit::of(Status::Pass), Exit::of(Status::Fail)), (Exit::Pass, Exit::Mismatch));
        assert!(Exit::RigError > Exit::Mismatch && Exit::Mismatch > Exit::Pass);
    }
}
