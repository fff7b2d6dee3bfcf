//! Checking KCIDB output with KernelCI's own validator: the `kcidb-io`
//! package from PyPI (pinned), installed on first use into a private venv in
//! the cache (`<cache>/venv-kcidb`, `python3 -m venv` + `pip install`), never
//! into the host's Python. Its `kcidb_io.schema.V5_3.validate_exactly()` is
//! the check.

use crate::provision::pyvenv::{self, run_bounded, Failure};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The kcidb-io release the check installs (its v5.3 schema is what
/// [`super::kcidb`] writes).
pub const KCIDB_IO_PIN: &str = "kcidb-io==141";

/// Time allowed for one validation.
const CHECK_DEADLINE: Duration = Duration::from_secs(120);

/// What went wrong checking a KCIDB document.
#[derive(Debug, thiserror::Error)]
pub enum KcidbCheckError {
    /// The validator could not be installed or run.
    #[error("kcidb-io validator: {0}")]
    Setup(String),
    /// The document does not validate.
    #[error("{file}: not valid KCIDB v5.3: {message}")]
    Invalid {
        /// The document.
        file: String,
        /// kcidb-io's words: the failing property's path and the reason.
        message: String,
    },
}

/// The installed validator: a venv's Python with kcidb-io.
#[derive(Debug, Clone)]
pub struct KcidbValidator {
    python: PathBuf,
}

/// The validator in `<cache>/venv-kcidb`, installed first when missing
/// ([`pyvenv::ensure`]). `progress` hears the steps.
///
/// # Errors
/// [`KcidbCheckError::Setup`]: no `python3`, venv or pip failed, a deadline passed.
pub fn validator(cache: &Path, progress: &mut dyn FnMut(&str)) -> Result<KcidbValidator, KcidbCheckError> {
    let venv = pyvenv::ensure(cache, "venv-kcidb", &[KCIDB_IO_PIN], progress)
        .map_err(|e| KcidbCheckError::Setup(e.to_string()))?;
    Ok(KcidbValidator { python: venv.join("bin/python") })
}

/// The script: validate the file named by argv[1] against v5.3, exactly.
const SCRIPT: &str = r#"
import json, sys
import jsonschema
import kcidb_io
with open(sys.argv[1]) as f:
    data = json.load(f)
try:
    kcidb_io.schema.V5_3.validate_exactly(data)
except jsonschema.exceptions.ValidationError as e:
    where = "/".join(str(p) for p in e.absolute_path) or "(document)"
    print(f"{where}: {e.message}"[:2000], file=sys.stderr)
    sys.exit(1)
print("valid")
"#;

impl KcidbValidator {
    /// Check `file` against KCIDB v5.3.
    ///
    /// # Errors
    /// [`KcidbCheckError::Invalid`] with kcidb-io's reason, or
    /// [`KcidbCheckError::Setup`] when the check itself cannot run.
    pub fn check(&self, file: &Path) -> Result<(), KcidbCheckError> {
        let mut cmd = Command::new(&self.python);
        cmd.arg("-c").arg(SCRIPT).arg(file);
        match run_bounded(cmd, CHECK_DEADLINE, "kcidb-io validation") {
            Ok(_) => Ok(()),
            Err(Failure { code: Some(1), output_tail, .. }) => {
                Err(KcidbCheckError::Invalid { file: file.display().to_string(), message: output_tail })
            }
            Err(f) => Err(KcidbCheckError::Setup(f.to_string())),
        }
    }
}
