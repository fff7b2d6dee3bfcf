//! `--svg FILE` and `--html FILE` of `run` and `compare`: the picture of the run(s)
//! ([`crate::picture`]) written next to the report. A run that ends in a rig error before
//! the guest's report is still drawn (the topology, marked "no guest data").
//! `matrix` and `matrix-merge` take `--svg DIR` (one SVG per pair) and `--html FILE`
//! (the whole matrix on one page: [`crate::matrix::pictures`]).

use crate::matrix::pictures::{html_report, pair_svgs, Topologies};
use crate::matrix::report::MatrixReport;
use crate::picture::{html, svg, Picture};
use crate::topology::Topology;
use std::path::{Path, PathBuf};

/// A picture that cannot be drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum PictureError {
    /// The folder of a picture file does not exist.
    #[error("{option} {}: no folder {}", file.display(), folder.display())]
    NoFolder {
        /// The option (`--svg`, `--html`).
        option: &'static str,
        /// The file given.
        file: PathBuf,
        /// Its folder.
        folder: PathBuf,
    },
    /// `matrix --svg DIR` cannot be created.
    #[error("--svg {}: cannot create the folder: {error}", dir.display())]
    CreateFolder {
        /// The folder.
        dir: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// The topology to draw cannot be loaded.
    #[error("no picture: {0}")]
    Topology(Box<crate::topology::TopologyError>),
    /// A picture file cannot be written.
    #[error("{}: cannot write the {kind} picture: {error}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// `SVG` or `HTML`.
        kind: &'static str,
        /// The OS error.
        error: std::io::Error,
    },
}

/// The picture options.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PictureArgs {
    /// Also draw the machine with each CPU's MANA IRQs as SVG into FILE (nested boxes:
    /// package, node, core, thread; hop bands from the NIC's node; a legend).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Also write an HTML report (the picture and the tables) into FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

impl PictureArgs {
    /// Whether any picture is asked for.
    pub fn wanted(&self) -> bool {
        self.svg.is_some() || self.html.is_some()
    }

    /// Refuse, before anything boots, a picture file whose folder does not exist.
    ///
    /// # Errors
    /// [`PictureError::NoFolder`]: one line naming the option, the file and the
    /// missing folder.
    pub fn check(&self) -> Result<(), PictureError> {
        for (path, option) in [(self.svg.as_ref(), "--svg"), (self.html.as_ref(), "--html")] {
            if let Some(file) = path {
                folder_exists(option, file)?;
            }
        }
        Ok(())
    }

    /// Draw `picture` of the topology at `topology` into the requested files, saying on
    /// stderr what was written.
    ///
    /// # Errors
    /// [`PictureError`]: the topology cannot be loaded, or a file cannot be written.
    pub fn write(&self, topology: &Path, picture: &Picture<'_>) -> Result<(), PictureError> {
        if !self.wanted() {
            return Ok(());
        }
        let topo = Topology::load(topology).map_err(|e| PictureError::Topology(Box::new(e)))?;
        let outputs = [(self.svg.as_ref(), "SVG"), (self.html.as_ref(), "HTML")];
        for (path, kind) in outputs {
            let Some(path) = path else { continue };
            let text = if kind == "SVG" { svg(&topo, picture) } else { html(&topo, picture) };
            std::fs::write(path, text).map_err(|error| PictureError::Write { path: path.clone(), kind, error })?;
            eprintln!("manarig: wrote {} ({kind})", path.display());
        }
        Ok(())
    }
}

/// The picture options of `matrix` and `matrix-merge`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct MatrixPictureArgs {
    /// Also draw every pair's machine with its CPUs' MANA IRQs, one SVG per pair, into
    /// this folder (`DIR/<topology>@<kernel>.svg`; created if missing).
    #[arg(long = "svg", value_name = "DIR")]
    pub svg_dir: Option<PathBuf>,
    /// Also write one HTML report into FILE: the topology × kernel table, then every
    /// pair's picture and tables, failures first.
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<PathBuf>,
}

impl MatrixPictureArgs {
    /// Refuse a picture destination that cannot be written before any guest boots: the
    /// `--svg` folder is created, `--html`'s folder must exist.
    ///
    /// # Errors
    /// [`PictureError`]: one line naming the option and the path.
    pub fn check(&self) -> Result<(), PictureError> {
        if let Some(dir) = &self.svg_dir {
            std::fs::create_dir_all(dir).map_err(|error| PictureError::CreateFolder { dir: dir.clone(), error })?;
        }
        match &self.html {
            Some(file) => folder_exists("--html", file),
            None => Ok(()),
        }
    }

    /// Draw the matrix `m` into the requested files (every pair, failures first), saying
    /// on stderr through `note` what was written and which pairs could not be drawn.
    /// Never changes the matrix's outcome: a file that cannot be written is a note.
    pub fn write(&self, m: &MatrixReport, note: &mut dyn FnMut(&str)) {
        if self.svg_dir.is_none() && self.html.is_none() {
            return;
        }
        let topologies = Topologies::load(m);
        if let Some(dir) = &self.svg_dir {
            let crate::matrix::pictures::PairSvgs { drawn, skipped } = pair_svgs(m, &topologies);
            let mut written = 0;
            for (name, text) in &drawn {
                let path = dir.join(name);
                match std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, text)) {
                    Ok(()) => written += 1,
                    Err(e) => note(&format!("{}: cannot write the SVG picture: {e}", path.display())),
                }
            }
            for (pair, why) in &skipped {
                note(&format!("no picture of {pair}: {why}"));
            }
            note(&format!("wrote {written} SVG pictures into {}", dir.display()));
        }
        if let Some(path) = &self.html {
            match std::fs::write(path, html_report(m, &topologies)) {
                Ok(()) => note(&format!("wrote {} (HTML)", path.display())),
                Err(e) => note(&format!("{}: cannot write the HTML report: {e}", path.display())),
            }
        }
    }
}

/// `option FILE`'s folder exists (the current one for a bare name), or one line saying not.
fn folder_exists(option: &'static str, file: &Path) -> Result<(), PictureError> {
    let parent = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if parent.is_dir() {
        Ok(())
    } else {
        Err(PictureError::NoFolder { option, file: file.to_path_buf(), folder: parent.to_path_buf() })
    }
}
