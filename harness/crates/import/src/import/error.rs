//! Import errors: one line naming the input file and line (`paste.txt:41: …`, or for a
//! sysfs snapshot the member: `machine.tar:sys/devices/system/node/node1/distance:1: …`).

use std::fmt;

/// Where a fact was read: an input file (or a member of a snapshot, `machine.tar:sys/…`)
/// and, when known, its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The input as the user named it, or `input:member` inside a snapshot.
    pub file: String,
    /// 1-based line, if the fact comes from one line.
    pub line: Option<usize>,
}

impl Origin {
    /// Line `line` (1-based) of `file`.
    pub fn line(file: &str, line: usize) -> Self {
        Self { file: file.to_owned(), line: Some(line) }
    }

    /// The whole of `file` (no single line to name).
    pub fn file(file: &str) -> Self {
        Self { file: file.to_owned(), line: None }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

/// What is wrong with the inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input cannot be read (missing file, permissions, not UTF-8).
    Unreadable,
    /// The input is not one of the forms the importer reads, or a line of it is not.
    Unknown,
    /// The input stops before what it announced (a node count with fewer nodes, a
    /// distance matrix with missing rows, a cut-off archive or XML document).
    Truncated,
    /// Two facts disagree (CPUs in two nodes, a node count that disagrees with the
    /// distance matrix, two inputs that describe different machines).
    Contradiction,
    /// A real machine the topology files cannot describe (off-line CPUs, sparse node
    /// ids, sockets of different sizes, a CPU numbering that is neither scheme).
    Unsupported,
    /// Something the topology needs is in no input (the CPU shape, the NIC's node).
    Missing,
    /// The generated topology fails the topology file validation.
    Invalid,
}

/// An input the importer cannot turn into a topology. Displays as one line:
/// `<file>[:<line>]: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct ImportError {
    /// Where the problem is.
    pub origin: Origin,
    /// Which class of problem.
    pub kind: ErrorKind,
    /// What is wrong, on one line.
    pub message: String,
}

impl ImportError {
    /// An error at `origin`; line breaks in `message` become spaces (one line always).
    pub fn new(kind: ErrorKind, origin: Origin, message: impl Into<String>) -> Self {
        let message: String = message.into();
        let message = message.split(['\n', '\r']).filter(|s| !s.is_empty()).collect::<Vec<_>>().join(" ");
        Self { origin, kind, message }
    }
}
