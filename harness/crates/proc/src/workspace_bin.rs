//! The workspace's own helper binaries (`mana-device`, `manarig-flows`),
//! found beside the running executable: cargo puts the workspace's binaries
//! in `target/<profile>/` and integration-test executables in
//! `target/<profile>/deps/`, so the folder of the executable and its parent
//! are searched.

use std::path::{Path, PathBuf};

/// `name` in the folder of `exe` or in that folder's parent.
///
/// # Errors
/// The folders looked in, as one line (`A or B`), when neither has the file.
pub fn find_beside(exe: &Path, name: &str) -> Result<PathBuf, String> {
    let dirs: Vec<&Path> = exe.parent().into_iter().flat_map(|d| [Some(d), d.parent()]).flatten().collect();
    dirs.iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(" or "))
}
