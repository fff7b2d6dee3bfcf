//! What `matrix` and `matrix-merge` write: every format into `--out DIR`
//! (`summary.md`, `junit.xml`, `results.ktap`, `matrix.json`, `kcidb.json`),
//! the chosen `--format` on stdout, and the KCIDB check.

use super::pictures::MatrixPictureArgs;
use crate::matrix::kcidb::{render_kcidb, KcidbOptions};
use crate::matrix::report::MatrixReport;
use crate::matrix::{junit, kcidb_check, ktap, summary};
use std::io::Write;
use std::path::PathBuf;

/// A matrix output format, as `--format` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MatrixFormat {
    /// The Markdown summary: topology × kernel table, shards, failures.
    Markdown,
    /// JUnit XML: a testsuite per kernel, a testcase per topology.
    Junit,
    /// KTAP version 1: a test per pair, its checks as subtests.
    Ktap,
    /// The matrix document (header + verdict documents; `matrix-merge` reads it).
    Json,
    /// KCIDB v5.3 report data (checkout, builds, tests) for `kcidb-submit`.
    Kcidb,
}

impl MatrixFormat {
    /// Every format with the file `--out` writes it to.
    pub const FILES: [(MatrixFormat, &'static str); 5] = [
        (MatrixFormat::Markdown, "summary.md"),
        (MatrixFormat::Junit, "junit.xml"),
        (MatrixFormat::Ktap, "results.ktap"),
        (MatrixFormat::Json, "matrix.json"),
        (MatrixFormat::Kcidb, "kcidb.json"),
    ];
}

/// Output options shared by `matrix` and `matrix-merge`.
#[derive(Debug, clap::Args)]
pub struct OutputArgs {
    /// Write every format into this folder: summary.md, junit.xml, results.ktap,
    /// matrix.json (the input of matrix-merge), kcidb.json; and, for boots, each
    /// pair's console under console/.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: MatrixFormat,
    /// Names this run in KCIDB ids (default: GITHUB_RUN_ID-GITHUB_RUN_ATTEMPT,
    /// CI_PIPELINE_ID, else the time; give every shard the same one).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// The KCIDB origin KernelCI gave you ([a-z0-9_]+).
    #[arg(long, value_name = "NAME", default_value = "manarig")]
    pub kcidb_origin: String,
    /// Where the patch files can be downloaded, for KCIDB's patchset_files
    /// (`<URL>/<file name>`; default: file:// URLs on this machine).
    #[arg(long, value_name = "URL")]
    pub patch_url_base: Option<String>,
    /// Validate the KCIDB output with kcidb-io (installed into CACHE/venv-kcidb
    /// from PyPI on first use); an invalid document is a rig error (exit 2).
    #[arg(long)]
    pub check_kcidb: bool,
    /// Cache folder for the kcidb-io venv (default: $MANARIG_CACHE, else ~/.cache/manarig).
    #[arg(long = "kcidb-cache-dir", value_name = "DIR", hide = true)]
    pub kcidb_cache_dir: Option<PathBuf>,
    /// Pictures of every pair.
    #[command(flatten)]
    pub pictures: MatrixPictureArgs,
}

impl OutputArgs {
    /// The KCIDB addressing options.
    pub fn kcidb(&self) -> KcidbOptions {
        KcidbOptions { origin: self.kcidb_origin.clone(), patch_url_base: self.patch_url_base.clone() }
    }
}

/// A matrix document that cannot be rendered, written or checked.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// quick-junit could not write the XML.
    #[error("cannot write the JUnit document: {0}")]
    Junit(quick_junit::SerializeError),
    /// serde_json could not write the JSON.
    #[error("cannot write the matrix document: {0}")]
    Json(serde_json::Error),
    /// The KCIDB origin is not one KCIDB takes.
    #[error(transparent)]
    Kcidb(#[from] crate::matrix::kcidb::BadOrigin),
    /// `--out` or a file in it cannot be written.
    #[error("{}: {error}", path.display())]
    Write {
        /// The folder or file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// No cache folder for the KCIDB check's venv.
    #[error(transparent)]
    Cache(Box<crate::provision::ProvisionError>),
    /// The KCIDB check could not run, or the document is not valid.
    #[error(transparent)]
    KcidbCheck(#[from] kcidb_check::KcidbCheckError),
}

/// The document in `format`.
///
/// # Errors
/// [`OutputError`]: a renderer's error (JUnit/JSON serialisation, a bad KCIDB origin).
pub fn render(m: &MatrixReport, format: MatrixFormat, kcidb: &KcidbOptions) -> Result<String, OutputError> {
    Ok(match format {
        MatrixFormat::Markdown => summary::render(m),
        MatrixFormat::Junit => junit::render_matrix(m).map_err(OutputError::Junit)?,
        MatrixFormat::Ktap => ktap::render_matrix(m),
        MatrixFormat::Json => serde_json::to_string_pretty(m).map_err(OutputError::Json)? + "\n",
        MatrixFormat::Kcidb => render_kcidb(m, kcidb)?,
    })
}

/// Write every format into `--out`, print `--format` on stdout and, with
/// `--check-kcidb`, validate the KCIDB document. Returns the files written.
///
/// # Errors
/// [`OutputError`]: a file cannot be written, a renderer fails, or the KCIDB
/// document is not valid.
pub fn emit(m: &MatrixReport, args: &OutputArgs, note: &mut dyn FnMut(&str)) -> Result<Vec<PathBuf>, OutputError> {
    let kcidb = args.kcidb();
    let mut written = Vec::new();
    let write_error = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |error| OutputError::Write { path, error }
    };
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).map_err(write_error(dir))?;
        for (format, file) in MatrixFormat::FILES {
            let path = dir.join(file);
            let text = render(m, format, &kcidb)?;
            std::fs::write(&path, text).map_err(write_error(&path))?;
            written.push(path);
        }
    }
    let text = render(m, args.format, &kcidb)?;
    // A closed pipe (`| head`) is not worth a panic.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    if args.check_kcidb {
        let cache = crate::provision::cache_dir(args.kcidb_cache_dir.as_deref())
            .map_err(|e| OutputError::Cache(Box::new(e)))?;
        let validator = kcidb_check::validator(&cache, &mut |l| note(l))?;
        let tmp = tempfile::NamedTempFile::new().map_err(write_error(&std::env::temp_dir()))?;
        let file: PathBuf = match &args.out {
            Some(dir) => dir.join("kcidb.json"),
            None => {
                std::fs::write(tmp.path(), render(m, MatrixFormat::Kcidb, &kcidb)?).map_err(write_error(tmp.path()))?;
                tmp.path().to_path_buf()
            }
        };
        validator.check(&file)?;
        note(&format!("{}: valid KCIDB v5.3 (kcidb-io)", file.display()));
    }
    Ok(written)
}
