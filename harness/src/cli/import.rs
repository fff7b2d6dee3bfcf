//! `import INPUT… [--nic-node N] [--nic-if IF] [--name NAME] [-o FILE]`: write a topology
//! file for a real machine, and the `--from-*` options that let `expect`, `run` and
//! `compare` take the same inputs directly.

use super::Exit;
use crate::import::{import, Declared, ImportError, ImportOptions, Imported, Input, NicNode};
use crate::scratch::ScratchDir;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// Inputs, each detected by its content: `lscpu` and `numactl -H` output as pasted
    /// (one file or several; `$ command` lines and `..` elisions allowed), `lscpu -p`,
    /// `lscpu -e`, a sysfs snapshot folder or tar(.gz), hwloc XML (`lstopo --of xml`).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The NIC's NUMA node (or `none`) when no input gives it.
    #[arg(long, value_name = "N|none")]
    pub nic_node: Option<NicNode>,
    /// The NIC's interface when an input lists several (sysfs snapshot, hwloc XML).
    #[arg(long, value_name = "IF")]
    pub nic_if: Option<String>,
    /// The topology's name (default: the first input's file name).
    #[arg(long)]
    pub name: Option<String>,
    /// Write the topology file here instead of to stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The `--from-*` inputs of `expect`, `run` and `compare`: a real machine instead of a
/// topology file (the same inputs as `import`).
#[derive(Debug, Clone, Default, clap::Args)]
#[group(id = "from_inputs", multiple = true)]
pub struct FromArgs {
    /// lscpu output (plain, -p or -e; numactl -H and numa_node may be pasted in the same file).
    #[arg(long, value_name = "FILE", group = "from_inputs")]
    pub from_lscpu: Vec<PathBuf>,
    /// numactl -H output.
    #[arg(long, value_name = "FILE", group = "from_inputs")]
    pub from_numactl: Vec<PathBuf>,
    /// A sysfs snapshot: a folder, /sys, or a tar(.gz) (README, "Import a machine").
    #[arg(long, value_name = "DIR|TAR", group = "from_inputs")]
    pub from_sysfs: Vec<PathBuf>,
    /// hwloc XML (`lstopo --of xml`).
    #[arg(long, value_name = "XML", group = "from_inputs")]
    pub from_hwloc: Vec<PathBuf>,
    /// Any of these, detected by content.
    #[arg(long, value_name = "INPUT", group = "from_inputs")]
    pub from: Vec<PathBuf>,
    /// With --from-*: the NIC's NUMA node (or `none`) when no input gives it.
    #[arg(long, value_name = "N|none", requires = "from_inputs")]
    pub nic_node: Option<NicNode>,
    /// With --from-*: the NIC's interface when an input lists several.
    #[arg(long, value_name = "IF", requires = "from_inputs")]
    pub nic_if: Option<String>,
}

impl FromArgs {
    /// Whether any `--from-*` input is given.
    pub fn given(&self) -> bool {
        !self.inputs().is_empty()
    }

    /// The inputs with the kind each flag declares.
    pub fn inputs(&self) -> Vec<Input> {
        let tagged = [
            (&self.from_lscpu, Declared::Lscpu),
            (&self.from_numactl, Declared::Numactl),
            (&self.from_sysfs, Declared::Sysfs),
            (&self.from_hwloc, Declared::Hwloc),
            (&self.from, Declared::Any),
        ];
        tagged
            .into_iter()
            .flat_map(|(paths, declared)| paths.iter().map(move |p| Input { path: p.clone(), declared }))
            .collect()
    }

    /// Import the machine, printing what was assumed on stderr.
    ///
    /// # Errors
    /// The import's one-line error.
    pub fn import(&self) -> Result<Imported, ImportError> {
        let opts = ImportOptions { nic_node: self.nic_node, nic_if: self.nic_if.clone(), name: None };
        let imported = import(&self.inputs(), &opts)?;
        print_notes(&imported);
        Ok(imported)
    }
}

fn print_notes(imported: &Imported) {
    for note in &imported.notes {
        eprintln!("manarig: note: {}: {note}", imported.topology.name());
    }
}

/// An imported topology written where `run` and `compare` can load it: a temporary
/// folder (removed on drop) holding `<name>.toml`, so runs are named `<name>@<kernel>`.
#[derive(Debug)]
pub struct ImportedFile {
    _dir: ScratchDir,
    path: PathBuf,
}

impl ImportedFile {
    /// The topology file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A `--from-*` machine that could not be imported into a topology file.
#[derive(Debug, thiserror::Error)]
pub enum ImportFileError {
    /// The inputs do not make a topology.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// The temporary folder cannot be made.
    #[error("cannot create a temporary folder for the imported topology: {0}")]
    Scratch(std::io::Error),
    /// The topology file cannot be written.
    #[error("{}: cannot write the topology: {error}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

/// Import and write the topology into a temporary folder.
///
/// # Errors
/// [`ImportFileError`]: the import's error, or the folder or file cannot be written.
pub fn import_to_file(from: &FromArgs) -> Result<ImportedFile, ImportFileError> {
    let imported = from.import()?;
    let dir = ScratchDir::new("manarig-run-").map_err(ImportFileError::Scratch)?;
    let path = dir.path().join(format!("{}.toml", imported.topology.name()));
    std::fs::write(&path, &imported.toml).map_err(|error| ImportFileError::Write { path: path.clone(), error })?;
    eprintln!(
        "manarig: imported {} (the topology file: `cargo xtask import … -o FILE` keeps it)",
        imported.topology.name()
    );
    Ok(ImportedFile { _dir: dir, path })
}

/// `import`: the topology on stdout or in `-o FILE`; exit 0, or 2 with one error line.
pub fn run(args: &ImportArgs) -> ExitCode {
    let inputs: Vec<Input> = args.inputs.iter().map(Input::any).collect();
    let opts = ImportOptions { nic_node: args.nic_node, nic_if: args.nic_if.clone(), name: args.name.clone() };
    let imported = match import(&inputs, &opts) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::RigError.into();
        }
    };
    print_notes(&imported);
    // What the kernel accepts with a warning (an asymmetric SLIT); `run --from-*` prints
    // these when it loads the file.
    for warning in imported.topology.warnings() {
        eprintln!("warning: {warning}");
    }
    match &args.output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &imported.toml) {
                eprintln!("error: {}: cannot write the topology: {e}", path.display());
                return Exit::RigError.into();
            }
            eprintln!("manarig: wrote {} ({})", path.display(), imported.topology.description().unwrap_or(""));
        }
        None => {
            // A closed pipe (`| head`) is not an error worth a panic.
            let _ = std::io::stdout().lock().write_all(imported.toml.as_bytes());
        }
    }
    Exit::Pass.into()
}
