//! A patch series: `.patch`/`.diff` files of a folder (in `series` order when
//! there is a quilt `series` file, else by name) or the messages of one mbox
//! (`git format-patch --stdout`, `b4 am`; [`super::mbox`]) or a commit range of a
//! git tree ([`super::commits`]), applied with GNU `patch -p1`.
//! A patch that does not apply is an error naming the patch, the file, the
//! hunk (its `@@` header) and the line `patch` tried.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One patch of a series.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Patch {
    /// Its name: the file name, or `<mbox>#N <Subject>` for an mbox message.
    pub name: String,
    /// The patch text (mail headers and all; `patch` skips them).
    pub text: String,
}

/// Errors of reading or applying a series.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// The folder or file cannot be read.
    #[error("{path}: {error}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// The folder has no patches, or the file no diff.
    #[error("{0}: no patches (a folder of *.patch / *.diff files, or an mbox of them)")]
    Empty(PathBuf),
    /// A `series` file names a patch that is not there.
    #[error("{series}: names {name}, which is not in the folder")]
    SeriesMissing {
        /// The series file.
        series: PathBuf,
        /// The missing patch.
        name: String,
    },
    /// GNU patch is not installed.
    #[error("cannot run `patch` ({0}); install the host package `patch`")]
    NoTool(std::io::Error),
    /// A patch does not apply.
    #[error("patch {patch} does not apply to {tree}:\n{}\n--- patch said:\n{output}", problems.iter().map(|p| format!("  {p}")).collect::<Vec<_>>().join("\n"))]
    DoesNotApply {
        /// The patch's name.
        patch: String,
        /// The tree.
        tree: PathBuf,
        /// One line per failed hunk or file, e.g. `drivers/x.c: hunk #2
        /// (@@ -1261,7 +1261,7 @@ static int irq_setup(…)) FAILED at 1261`.
        problems: Vec<String>,
        /// `patch`'s own output.
        output: String,
    },
}

/// Read a series from a folder or an mbox/patch file.
///
/// # Errors
/// [`PatchError::Io`], [`PatchError::Empty`], [`PatchError::SeriesMissing`].
pub fn read_series(path: &Path) -> Result<Vec<Patch>, PatchError> {
    let io = |source| PatchError::Io { path: path.to_path_buf(), error: source };
    if path.is_dir() {
        let series = path.join("series");
        let names: Vec<String> = if series.is_file() {
            let text = std::fs::read_to_string(&series)
                .map_err(|source| PatchError::Io { path: series.clone(), error: source })?;
            let names: Vec<String> = text
                .lines()
                .map(|l| l.split('#').next().unwrap_or("").trim())
                .filter(|l| !l.is_empty())
                .map(|l| l.split_whitespace().next().unwrap_or(l).to_string())
                .collect();
            if let Some(n) = names.iter().find(|n| !path.join(n).is_file()) {
                return Err(PatchError::SeriesMissing { series, name: n.clone() });
            }
            names
        } else {
            let mut names: Vec<String> = std::fs::read_dir(path)
                .map_err(io)?
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".patch") || n.ends_with(".diff"))
                .collect();
            names.sort();
            names
        };
        let mut out = Vec::new();
        for n in names {
            let p = path.join(&n);
            let text =
                std::fs::read_to_string(&p).map_err(|source| PatchError::Io { path: p.clone(), error: source })?;
            out.push(Patch { name: n, text });
        }
        if out.is_empty() {
            return Err(PatchError::Empty(path.to_path_buf()));
        }
        Ok(out)
    } else {
        let text = std::fs::read_to_string(path).map_err(io)?;
        let file = path.file_name().map_or_else(|| path.display().to_string(), |f| f.to_string_lossy().into_owned());
        let out = split_mbox(&text, &file);
        if out.iter().all(|p| !p.text.contains("\n@@ ") && !p.text.starts_with("@@ ")) {
            return Err(PatchError::Empty(path.to_path_buf()));
        }
        Ok(out)
    }
}

/// Split an mbox into its patches: `git format-patch --stdout`, `b4 am`, a list
/// thread (cover letter and replies skipped); the rules are in [`super::mbox`]. A
/// file without `From ` separators is one patch named `file`.
pub fn split_mbox(text: &str, file: &str) -> Vec<Patch> {
    super::mbox::split(text, file).into_iter().map(|(name, text)| Patch { name, text }).collect()
}

/// The files a patch changes (paths after `-p1`, i.e. without `a/`/`b/`).
pub fn touched_files(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in text.lines() {
        let Some(rest) = l.strip_prefix("+++ ").or_else(|| l.strip_prefix("--- ")) else { continue };
        let path = rest.split('\t').next().unwrap_or(rest).trim();
        if path == "/dev/null" {
            continue;
        }
        let stripped = path.split_once('/').map_or(path, |(_, p)| p).to_string();
        if !out.contains(&stripped) {
            out.push(stripped);
        }
    }
    out
}

/// The `@@` header of hunk `n` (1-based) of `file` in the patch text.
fn hunk_header(text: &str, file: &str, n: usize) -> Option<String> {
    let mut in_file = false;
    let mut count = 0;
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("+++ ") {
            let path = rest.split('\t').next().unwrap_or(rest).trim();
            in_file = path.split_once('/').is_some_and(|(_, p)| p == file) || path == file;
            count = 0;
        } else if in_file && l.starts_with("@@ ") {
            count += 1;
            if count == n {
                return Some(l.to_string());
            }
        }
    }
    None
}

/// Turn GNU patch's output into one line per problem.
pub fn problems(output: &str, patch_text: &str) -> Vec<String> {
    let mut file = String::new();
    let mut out = Vec::new();
    for l in output.lines() {
        let t = l.trim();
        if let Some(f) = t.strip_prefix("checking file ").or_else(|| t.strip_prefix("patching file ")) {
            file = f.trim_matches(['\'', '"']).to_string();
        } else if let Some(rest) = t.strip_prefix("Hunk #") {
            // "Hunk #2 FAILED at 1293." / "Hunk #1 FAILED at 10 (different line endings)."
            if let Some((n, tail)) = rest.split_once(" FAILED") {
                let header = n.parse().ok().and_then(|n| hunk_header(patch_text, &file, n));
                let at = tail.trim().trim_end_matches('.');
                out.push(match header {
                    Some(h) => format!("{file}: hunk #{n} ({h}) FAILED {at}"),
                    None => format!("{file}: hunk #{n} FAILED {at}"),
                });
            }
        } else if t.starts_with("Reversed (or previously applied) patch detected") {
            out.push(format!("{file}: already applied (patch detected it reversed)"));
        } else if t.starts_with("can't find file to patch") {
            let names = touched_files(patch_text);
            out.push(format!("cannot find the file to patch (the patch names {})", names.join(", ")));
        } else if t.starts_with("patch: **** ") {
            out.push(t.trim_start_matches("patch: **** ").to_string());
        } else if t.starts_with("Only garbage was found") {
            out.push("no diff found in the patch".into());
        }
    }
    if out.is_empty() {
        out.push("patch failed (see its output)".into());
    }
    out
}

/// Apply `series` to `tree` in order with `patch -p1`: each patch is checked
/// first (`--dry-run`), so a failing one leaves the tree as the previous
/// patches left it. Files a patch touches are first replaced by private
/// copies, so a tree of hard links to a pristine source stays pristine.
///
/// # Errors
/// [`PatchError::DoesNotApply`] for the first patch that does not apply;
/// [`PatchError::NoTool`] / [`PatchError::Io`].
pub fn apply_series(tree: &Path, series: &[Patch]) -> Result<(), PatchError> {
    for p in series {
        let run = |dry: bool| -> Result<std::process::Output, PatchError> {
            use std::io::Write;
            let mut cmd = Command::new("patch");
            // --fuzz=0: like `git am`, a hunk whose context lines differ fails
            // instead of landing somewhere near (line offsets are still fine).
            cmd.args(["-p1", "--forward", "--batch", "--fuzz=0", "--no-backup-if-mismatch", "-r", "-"])
                .arg("-d")
                .arg(tree);
            if dry {
                cmd.arg("--dry-run");
            }
            let mut child = cmd
                .env("LC_ALL", "C")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(PatchError::NoTool)?;
            if let Some(mut stdin) = child.stdin.take() {
                // patch reads all input before writing much; a write error
                // (patch exited early) shows in its status and output.
                let _ = stdin.write_all(p.text.as_bytes());
            }
            child.wait_with_output().map_err(|source| PatchError::Io { path: tree.to_path_buf(), error: source })
        };
        let check = run(true)?;
        let output = format!("{}{}", String::from_utf8_lossy(&check.stdout), String::from_utf8_lossy(&check.stderr));
        if !check.status.success() {
            return Err(PatchError::DoesNotApply {
                patch: p.name.clone(),
                tree: tree.to_path_buf(),
                problems: problems(&output, &p.text),
                output,
            });
        }
        for f in touched_files(&p.text) {
            unshare(&tree.join(&f))?;
        }
        let done = run(false)?;
        if !done.status.success() {
            let output = format!("{}{}", String::from_utf8_lossy(&done.stdout), String::from_utf8_lossy(&done.stderr));
            return Err(PatchError::DoesNotApply {
                patch: p.name.clone(),
                tree: tree.to_path_buf(),
                problems: problems(&output, &p.text),
                output,
            });
        }
    }
    Ok(())
}

/// Turn `work` — a hard-link copy of `pristine` with `current` applied — into
/// `pristine` + `new`: every file a patch of `current` touched is restored
/// from `pristine` (a fresh copy, or removed if `pristine` lacks it), then
/// `new` is applied. Other files keep their inode and mtime, so an object
/// folder built from `work` only rebuilds what the change of series affects.
/// Nothing is done when the two series are equal.
///
/// On a patch that does not apply, `work` is restored to `pristine` and the
/// error returned (the caller then records an empty series).
///
/// # Errors
/// As [`apply_series`], plus [`PatchError::Io`] while restoring.
pub fn switch_series(work: &Path, pristine: &Path, current: &[Patch], new: &[Patch]) -> Result<(), PatchError> {
    if current == new {
        return Ok(());
    }
    restore(work, pristine, current)?;
    if let Err(e) = apply_series(work, new) {
        restore(work, pristine, new)?;
        return Err(e);
    }
    Ok(())
}

/// Put back the pristine version of every file `series` touches.
fn restore(work: &Path, pristine: &Path, series: &[Patch]) -> Result<(), PatchError> {
    for p in series {
        for f in touched_files(&p.text) {
            let (w, o) = (work.join(&f), pristine.join(&f));
            let io = |source| PatchError::Io { path: w.clone(), error: source };
            if o.is_file() {
                let tmp = w.with_extension("manarig-restore");
                std::fs::copy(&o, &tmp).map_err(io)?;
                std::fs::rename(&tmp, &w).map_err(io)?;
            } else if w.is_file() {
                std::fs::remove_file(&w).map_err(io)?;
            }
        }
    }
    Ok(())
}

/// Replace a (possibly hard-linked) file by a private copy of itself.
fn unshare(path: &Path) -> Result<(), PatchError> {
    if !path.is_file() {
        return Ok(());
    }
    let io = |source| PatchError::Io { path: path.to_path_buf(), error: source };
    let tmp = path.with_extension("manarig-unshare");
    std::fs::copy(path, &tmp).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str =
        "Subject: [PATCH] change b\n---\n--- a/dir/f.c\n+++ b/dir/f.c\n@@ -1,3 +1,3 @@ int f(void)\n a\n-b\n+B\n c\n";

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(d.path().join("dir")).expect("mkdir");
        std::fs::write(d.path().join("dir/f.c"), "a\nb\nc\n").expect("write");
        d
    }

    /// GNU patch: SKIP without it, a failure under `CI=true`.
    fn has_patch() -> bool {
        manarig_test_support::tools_present("kbuild::patches", &["patch"])
    }

    #[test]
    fn a_patch_applies_and_keeps_hard_links_pristine() {
        if !has_patch() {
            return;
        }
        let t = tree();
        let pristine = t.path().join("pristine.c");
        std::fs::hard_link(t.path().join("dir/f.c"), &pristine).expect("link");
        apply_series(t.path(), &[Patch { name: "0001.patch".into(), text: PATCH.into() }]).expect("applies");
        assert_eq!(std::fs::read_to_string(t.path().join("dir/f.c")).expect("read"), "a\nB\nc\n");
        assert_eq!(std::fs::read_to_string(&pristine).expect("read"), "a\nb\nc\n");
    }

    #[test]
    fn a_failing_hunk_names_the_patch_file_and_hunk() {
        if !has_patch() {
            return;
        }
        let t = tree();
        std::fs::write(t.path().join("dir/f.c"), "x\ny\nz\n").expect("write");
        let series = [Patch { name: "0002-change-b.patch".into(), text: PATCH.into() }];
        let e = apply_series(t.path(), &series).expect_err("must fail");
        let PatchError::DoesNotApply { patch, problems, .. } = &e else { panic!("{e}") };
        assert_eq!(patch, "0002-change-b.patch");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("dir/f.c: hunk #1 (@@ -1,3 +1,3 @@ int f(void)) FAILED at 1"),
            "{}",
            problems[0]
        );
        // The tree is untouched (dry run first).
        assert_eq!(std::fs::read_to_string(t.path().join("dir/f.c")).expect("read"), "x\ny\nz\n");
    }

    #[test]
    fn a_hunk_with_one_wrong_context_line_fails_instead_of_fuzzing() {
        if !has_patch() {
            return;
        }
        let t = tree();
        // GNU patch's default fuzz would ignore the differing first context line.
        std::fs::write(t.path().join("dir/f.c"), "A\nb\nc\n").expect("write");
        let e = apply_series(t.path(), &[Patch { name: "0001-x.patch".into(), text: PATCH.into() }]).expect_err("fuzz");
        let PatchError::DoesNotApply { patch, problems, .. } = &e else { panic!("{e}") };
        assert_eq!(patch, "0001-x.patch");
        assert_eq!(problems, &["dir/f.c: hunk #1 (@@ -1,3 +1,3 @@ int f(void)) FAILED at 1"]);
    }

    #[test]
    fn an_applied_patch_and_a_missing_file_are_named() {
        if !has_patch() {
            return;
        }
        let t = tree();
        std::fs::write(t.path().join("dir/f.c"), "a\nB\nc\n").expect("write");
        let e = apply_series(t.path(), &[Patch { name: "p".into(), text: PATCH.into() }]).expect_err("reversed");
        assert!(
            matches!(&e, PatchError::DoesNotApply { problems, .. }
                if problems == &["dir/f.c: already applied (patch detected it reversed)"]),
            "{e}"
        );
        let other = PATCH.replace("dir/f.c", "dir/absent.c");
        let e = apply_series(t.path(), &[Patch { name: "q".into(), text: other }]).expect_err("missing");
        assert!(
            matches!(&e, PatchError::DoesNotApply { problems, .. }
                if problems == &["cannot find the file to patch (the patch names dir/absent.c)"]),
            "{e}"
        );
    }

    #[test]
    fn switching_series_restores_only_the_touched_files() {
        if !has_patch() {
            return;
        }
        let pristine = tree();
        std::fs::write(pristine.path().join("other.c"), "o\n").expect("w");
        let work = tempfile::tempdir().expect("tmp");
        let w = work.path().join("src");
        assert!(Command::new("cp").arg("-al").arg(pristine.path()).arg(&w).status().expect("cp").success());
        let a = vec![Patch { name: "a.patch".into(), text: PATCH.into() }];
        let creates = "--- /dev/null\n+++ b/dir/new.c\n@@ -0,0 +1 @@\n+n\n";
        let b = vec![Patch { name: "b.patch".into(), text: creates.into() }];
        switch_series(&w, pristine.path(), &[], &a).expect("apply a");
        assert_eq!(std::fs::read_to_string(w.join("dir/f.c")).expect("r"), "a\nB\nc\n");
        let other_ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).expect("meta"));
        switch_series(&w, pristine.path(), &a, &b).expect("a -> b");
        assert_eq!(std::fs::read_to_string(w.join("dir/f.c")).expect("r"), "a\nb\nc\n");
        assert_eq!(std::fs::read_to_string(w.join("dir/new.c")).expect("r"), "n\n");
        // Untouched files are still the pristine inodes.
        assert_eq!(other_ino(&w.join("other.c")), other_ino(&pristine.path().join("other.c")));
        switch_series(&w, pristine.path(), &b, &[]).expect("b -> none");
        assert!(!w.join("dir/new.c").exists());
        assert_eq!(std::fs::read_to_string(pristine.path().join("dir/f.c")).expect("r"), "a\nb\nc\n");
        // A series that fails leaves the pristine state behind.
        let bad = vec![a[0].clone(), Patch { name: "bad.patch".into(), text: PATCH.into() }];
        let e = switch_series(&w, pristine.path(), &[], &bad).expect_err("second fails: already applied");
        assert!(matches!(&e, PatchError::DoesNotApply { patch, .. } if patch == "bad.patch"), "{e}");
        assert_eq!(std::fs::read_to_string(w.join("dir/f.c")).expect("r"), "a\nb\nc\n");
    }

    #[test]
    fn patch_output_is_parsed_without_running_patch() {
        let out = "checking file dir/f.c\nHunk #1 FAILED at 1261.\nHunk #2 succeeded at 1300 (offset 3 lines).\n1 out of 2 hunks FAILED\n";
        assert_eq!(problems(out, PATCH), ["dir/f.c: hunk #1 (@@ -1,3 +1,3 @@ int f(void)) FAILED at 1261"]);
    }

    #[test]
    fn mbox_messages_become_patches_in_order_named_by_subject() {
        let mbox = format!("From 1 Mon Sep 17 00:00:00 2001\nSubject: [PATCH 1/2] one\n\n{PATCH}\nFrom 2 Mon Sep 17 00:00:00 2001\nSubject: [PATCH 2/2] two\n\n{PATCH}");
        let s = split_mbox(&mbox, "series.mbox");
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name, "series.mbox#1 [PATCH 1/2] one");
        assert_eq!(s[1].name, "series.mbox#2 [PATCH 2/2] two");
        assert_eq!(split_mbox(PATCH, "x.patch")[0].name, "x.patch");
    }

    #[test]
    fn folders_follow_series_or_name_order() {
        let d = tempfile::tempdir().expect("tmp");
        std::fs::write(d.path().join("0002-b.patch"), PATCH).expect("w");
        std::fs::write(d.path().join("0001-a.patch"), PATCH).expect("w");
        std::fs::write(d.path().join("notes.txt"), "x").expect("w");
        let names: Vec<_> = read_series(d.path()).expect("read").into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["0001-a.patch", "0002-b.patch"]);
        std::fs::write(d.path().join("series"), "0002-b.patch\n# comment\n0001-a.patch -p1\n").expect("w");
        let names: Vec<_> = read_series(d.path()).expect("read").into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["0002-b.patch", "0001-a.patch"]);
        std::fs::write(d.path().join("series"), "0003-c.patch\n").expect("w");
        let e = read_series(d.path()).expect_err("missing");
        assert!(matches!(&e, PatchError::SeriesMissing { name, .. } if name == "0003-c.patch"), "{e}");
        let empty = tempfile::tempdir().expect("tmp");
        assert!(matches!(read_series(empty.path()), Err(PatchError::Empty(_))));
    }

    #[test]
    fn touched_files_strip_one_level() {
        assert_eq!(touched_files(PATCH), ["dir/f.c"]);
        assert_eq!(touched_files("--- /dev/null\n+++ b/new.c\n"), ["new.c"]);
    }
}
