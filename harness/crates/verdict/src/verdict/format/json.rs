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

/// `err` and its causes on one line, `outer: inner: …`, leaving out a cause
/// whose text the message before it already contains (many error types here
/// print their source in their own message).
pub fn error_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let line = cause.to_string();
        if text.contains(&line) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&line);
    }
    text
}

impl RigErrorReport {
    /// Build the report for `err` while running `run`.
    pub fn new(err: &anyhow::Error, run: &str) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            status: RigErrorStatus::RigError,
            run: run.to_owned(),
            error: error_text(err).replace(['\n', '\r'], " "),
            causes: err.chain().map(|c| c.to_string()).collect(),
        }
    }
}

pub(super) fn render(v: &Verdict) -> Result<String, serde_json::Error> {
    Ok(serde_json::to_string_pretty(v)? + "\n")
}

#[cfg(test)]
mod error_text_tests {
    use super::error_text;

    #[test]
    fn causes_already_in_the_message_are_not_repeated() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let err = anyhow::Error::new(io).context("x.toml: cannot read: No such file").context("loading");
        assert_eq!(error_text(&err), "loading: x.toml: cannot read: No such file");
    }
}
