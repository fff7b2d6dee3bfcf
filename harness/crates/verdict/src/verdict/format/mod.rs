//! Output formats for a [`Verdict`]: every format renders the same facts (header, IRQ
//! table, checks, summary), from the same value.

mod compare;
mod human;
mod irqbalance_text;
pub mod json;
mod junit;
mod ktap;
mod nics_text;
mod selftests_text;
mod soak_text;
mod text;
mod traffic_text;

pub use compare::render_before_after;
pub use json::{error_text, RigErrorReport};

use super::outcome::Verdict;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A report format, as `--format` takes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// The seeds' table (IRQ, Nodes, Cores, CPUs, …), the summary block and a last line
    /// `verdict: PASS|FAIL (…)`.
    #[default]
    Human,
    /// KTAP version 1 (Documentation/dev-tools/ktap.rst): the run is one test whose
    /// subtests are the checks.
    Ktap,
    /// JUnit XML (quick-junit): one `<testsuite>` per run, one `<testcase>` per check.
    Junit,
    /// The [`Verdict`] as JSON (schema: [`json`]).
    Json,
}

impl Format {
    /// All formats, in `--help` order.
    pub const ALL: [Format; 4] = [Format::Human, Format::Ktap, Format::Junit, Format::Json];

    /// The `--format` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Human => "human",
            Self::Ktap => "ktap",
            Self::Junit => "junit",
            Self::Json => "json",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `--format` value that is not one of [`Format::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown report format {0:?}: use human, ktap, junit or json")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// A report that could not be serialised (not expected outside an out-of-memory
/// condition; the caller reports it as a rig error).
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// quick-junit could not write the XML.
    #[error("cannot write the JUnit report: {0}")]
    Junit(quick_junit::SerializeError),
    /// serde_json could not write the JSON.
    #[error("cannot write the JSON report: {0}")]
    Json(serde_json::Error),
}

// By hand rather than `#[from]`, which would also make the serialiser's error the
// variant's source: the message prints it, and a cause is printed once.
impl From<quick_junit::SerializeError> for RenderError {
    fn from(e: quick_junit::SerializeError) -> Self {
        RenderError::Junit(e)
    }
}

impl From<serde_json::Error> for RenderError {
    fn from(e: serde_json::Error) -> Self {
        RenderError::Json(e)
    }
}

/// Render a verdict in `format`. The text ends with a newline.
///
/// # Errors
/// [`RenderError`] if the JUnit or JSON serialiser fails.
pub fn render(verdict: &Verdict, format: Format) -> Result<String, RenderError> {
    Ok(match format {
        Format::Human => human::render(verdict),
        Format::Ktap => ktap::render(std::slice::from_ref(verdict)),
        Format::Junit => junit::render(std::slice::from_ref(verdict))?,
        Format::Json => json::render(verdict)?,
    })
}

/// Render several runs (a matrix) as one document: human reports one after another;
/// KTAP under one plan `1..N`, one test per run with its checks as subtests; one JUnit
/// report with a `<testsuite>` per run; a JSON array of verdict documents.
///
/// # Errors
/// [`RenderError`] if the JUnit or JSON serialiser fails.
pub fn render_many(verdicts: &[Verdict], format: Format) -> Result<String, RenderError> {
    Ok(match format {
        Format::Human => verdicts.iter().map(human::render).collect::<Vec<_>>().join("\n"),
        Format::Ktap => ktap::render(verdicts),
        Format::Junit => junit::render(verdicts)?,
        Format::Json => serde_json::to_string_pretty(verdicts)? + "\n",
    })
}

/// One run as test `number` of a KTAP document someone else writes the
/// version line and plan of (a matrix: one test per pair, its checks as
/// subtests): the lines [`render_many`] gives that run, numbered `number`.
pub fn render_ktap_test(number: usize, verdict: &Verdict) -> String {
    ktap::render_test(number, verdict)
}

/// Report a rig failure (setup, QEMU, device, guest panic, bad input) in `format`, so a
/// CI parser sees a result either way: human `verdict: RIG ERROR (…)`, KTAP `not ok 1
/// <run> # ERROR …`, a JUnit `<error>` test case, JSON `{"status": "rig-error", …}`.
/// `run` names what was being run (`seed-002@6.12`). (The command then exits with 2.)
///
/// # Errors
/// [`RenderError`] if the JUnit or JSON serialiser fails.
pub fn render_rig_error(
    err: &(dyn std::error::Error + 'static),
    run: &str,
    format: Format,
) -> Result<String, RenderError> {
    let report = RigErrorReport::new(err, run);
    Ok(match format {
        Format::Human => human::render_rig_error(&report),
        Format::Ktap => ktap::render_rig_error(&report),
        Format::Junit => junit::render_rig_error(&report)?,
        Format::Json => serde_json::to_string_pretty(&report)? + "\n",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_parses_from_the_command_line() {
        for f in Format::ALL {
            assert_eq!(f.as_str().parse::<Format>(), Ok(f));
            assert_eq!(<Format as clap::ValueEnum>::from_str(f.as_str(), false), Ok(f));
        }
        assert_eq!("KTAP".parse::<Format>(), Ok(Format::Ktap));
        assert!("tap".parse::<Format>().is_err());
    }
}
