//! Writes the seed corpus ([`manarig_fuzz::corpus`]) into
//! `fuzz/corpus/<target>/<name>`, replacing seeds of the same name: run by
//! `cargo xtask fuzz --record` after a change of the driver model or of an
//! input format.

use std::process::ExitCode;

fn main() -> ExitCode {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for (target, seeds) in manarig_fuzz::corpus::all() {
        let dir = root.join(target);
        if let Err(err) = std::fs::create_dir_all(&dir) {
            eprintln!("record_corpus: {}: {err}", dir.display());
            return ExitCode::FAILURE;
        }
        for (name, bytes) in seeds {
            let path = dir.join(&name);
            if let Err(err) = std::fs::write(&path, &bytes) {
                eprintln!("record_corpus: {}: {err}", path.display());
                return ExitCode::FAILURE;
            }
            println!("{target}/{name}: {} bytes", bytes.len());
        }
    }
    ExitCode::SUCCESS
}
