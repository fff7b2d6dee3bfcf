#![doc = include_str!("report-schema.md")]

use super::super::outcome::{Verdict, SCHEMA_VERSION};
use serde::{Deserialize, Serialize};

/// The JSON document for a run the rig could not finish (`"status": "rig-error"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RigErrorReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Always `"rig-error"`.
    pub status: RigErrorStatus,
    /// What was being run (`seed-002@6.12`).
    pub run: String,
    /// The error in one line, outermost context first (`a: b: c`).
    pub error: String,
    /// The error chain, outermost first, one entry per context.
    pub causes: Vec<String>,
}

/// The `status` of a [`RigErrorReport`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RigErrorStatus {
    /// The rig failed; there is no verdict.
    RigError,
}

/// `err` and its causes on one line, `outer: inner: …` ([`crate::text::chain`]).
pub fn error_text(err: &(dyn std::error::Error + 'static)) -> String {
    crate::text::chain(err)
}

impl RigErrorReport {
    /// Build the report for `err` while running `run`.
    pub fn new(err: &(dyn std::error::Error + 'static), run: &str) -> Self {
        let mut causes = Vec::new();
        let mut cause = Some(err);
        while let Some(c) = cause {
            causes.push(c.to_string());
            cause = c.source();
        }
        Self {
            schema_version: SCHEMA_VERSION,
            status: RigErrorStatus::RigError,
            run: run.to_owned(),
            error: error_text(err).replace(['\n', '\r'], " "),
            causes,
        }
    }
}

pub(super) fn render(v: &Verdict) -> Result<String, serde_json::Error> {
    Ok(serde_json::to_string_pretty(v)? + "\n")
}
