//! `--svg FILE` and `--html FILE` of `run` and `compare`: the picture of the run(s)
//! ([`crate::picture`]) written next to the report. A run that ends in a rig error before
//! the guest's report is still drawn (the topology, marked "no guest data").

use crate::picture::{html, svg, Picture};
use crate::topology::Topology;
use std::path::{Path, PathBuf};

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

    /// Draw `picture` of the topology at `topology` into the requested files, saying on
    /// stderr what was written.
    ///
    /// # Errors
    /// One line: the topology cannot be loaded, or a file cannot be written.
    pub fn write(&self, topology: &Path, picture: &Picture<'_>) -> Result<(), String> {
        if !self.wanted() {
            return Ok(());
        }
        let topo = Topology::load(topology).map_err(|e| format!("no picture: {e}"))?;
        let outputs = [(self.svg.as_ref(), "SVG"), (self.html.as_ref(), "HTML")];
        for (path, kind) in outputs {
            let Some(path) = path else { continue };
            let text = if kind == "SVG" { svg(&topo, picture) } else { html(&topo, picture) };
            std::fs::write(path, text)
                .map_err(|e| format!("{}: cannot write the {kind} picture: {e}", path.display()))?;
            eprintln!("manarig: wrote {} ({kind})", path.display());
        }
        Ok(())
    }
}
