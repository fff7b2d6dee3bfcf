//! A patch series from a commit range of a local git tree: `--source TREE --commits A..B`.
//!
//! The series is `git format-patch --stdout A..B` (split like any mbox, [`super::mbox`]);
//! the tree it applies to is **A's**, exported with `git archive A` into
//! `<cache>/kbuild/src/git-<A16>/` once per commit (a stamp holds A's full id). The
//! user's checkout is only read: it may be at B, at A or anywhere else, dirty or not.
//! The build then treats the export like any source tree with a patch series (a
//! hard-link work copy, the series switched in, incremental `make`), and names each
//! patch `<A12>..<B12>.mbox#k [PATCH k/N] subject`; the mbox itself is kept at
//! `<cache>/kbuild/git/<A12>..<B12>.mbox` for reference.
//!
//! `--commits A` (no range) builds A's tree alone, exported the same way: the baseline
//! (K0) of the series `A..B`, built with the same config and compiler ([`prepare_base`]).
//!
//! Refused, each with one line: a range that is not `A..B`, a name git does not know,
//! an `A` that is not an ancestor of `B` (the series would not be based on A), merge
//! commits in the range (`format-patch` drops them), an empty range. `git archive`
//! leaves out files marked `export-ignore` in `.gitattributes` (Linux marks none).

use super::patches::{split_mbox, Patch};
use super::source::SourceSpec;
use super::KbuildError;
use crate::text::{plural, plural_as};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A resolved `A..B`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitRange {
    /// The git tree (as given).
    pub repo: PathBuf,
    /// The range as given (`v6.12..mana-fix`).
    pub spec: String,
    /// A's full commit id: the tree the series applies to.
    pub base: String,
    /// B's full commit id.
    pub tip: String,
    /// Commits in the range (= patches).
    pub commits: u32,
}

impl CommitRange {
    /// `<A12>..<B12>`, the series' file name stem.
    pub fn short(&self) -> String {
        format!("{}..{}", &self.base[..12.min(self.base.len())], &self.tip[..12.min(self.tip.len())])
    }
}

/// What a build of a commit range needs: the source (A's export) and the series' mbox.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The range.
    pub range: CommitRange,
    /// A's tree, exported into the cache.
    pub source: SourceSpec,
    /// The series as an mbox in the cache (`--patches` for the build).
    pub mbox: PathBuf,
    /// The patches, in order.
    pub series: Vec<Patch>,
}

fn bad(spec: &str, why: impl std::fmt::Display) -> KbuildError {
    KbuildError::Source(format!("--commits {spec}: {why}"))
}

/// `git -C repo args…`; its stdout, or an error naming the command and git's stderr.
fn git(repo: &Path, args: &[&str]) -> Result<String, KbuildError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| KbuildError::Tool { tool: "git".into(), error: e })?;
    if !out.status.success() {
        return Err(KbuildError::Source(format!(
            "git -C {} {}: {}",
            repo.display(),
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The full commit id of `rev`.
fn commit_id(repo: &Path, spec: &str, rev: &str) -> Result<String, KbuildError> {
    let want = format!("{rev}^{{commit}}");
    git(repo, &["rev-parse", "--verify", "--quiet", "--end-of-options", &want])
        .map(|s| s.trim().to_owned())
        .map_err(|_| bad(spec, format!("{rev:?} is not a commit of {}", repo.display())))
}

/// `rev`'s full commit id in the git tree `repo` (`--commits A`, a baseline's tree).
///
/// # Errors
/// [`KbuildError::Source`] when `repo` is not a git tree or `rev` is not a commit of it.
pub fn resolve_commit(repo: &Path, rev: &str) -> Result<String, KbuildError> {
    git(repo, &["rev-parse", "--git-dir"]).map_err(|_| bad(rev, format!("{} is not a git tree", repo.display())))?;
    commit_id(repo, rev, rev)
}

/// What KCIDB's checkout can say of a commit of a local tree: where the repository can
/// be fetched (its `origin` remote, only when that is an `https://` or `git://` URL, the
/// only forms the schema takes) and the commit's `git describe` name.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GitFacts {
    /// The base commit's full id (40 hex digits).
    pub commit_hash: String,
    /// `remote.origin.url`, when it is an `https://` or `git://` URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_url: Option<String>,
    /// `git describe --always` of the base commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_name: Option<String>,
}

/// [`GitFacts`] of `commit` in `repo`; the optional parts are left out when git
/// cannot tell them.
pub fn git_facts(repo: &Path, commit: &str) -> GitFacts {
    let url = git(repo, &["config", "--get", "remote.origin.url"])
        .ok()
        .map(|u| u.trim().to_owned())
        .filter(|u| u.starts_with("https://") || u.starts_with("git://"));
    let name = git(repo, &["describe", "--always", commit]).ok().map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
    GitFacts { commit_hash: commit.to_owned(), repository_url: url, commit_name: name }
}

/// Resolve `spec` (`A..B`) in the git tree `repo`.
///
/// # Errors
/// [`KbuildError::Source`] for a malformed range, unknown names, `A` not an ancestor of
/// `B`, merge commits in the range or an empty range; [`KbuildError::Tool`] when git
/// cannot run.
pub fn resolve(repo: &Path, spec: &str) -> Result<CommitRange, KbuildError> {
    let (a, b) = match spec.split_once("..") {
        Some((a, b)) if !a.is_empty() && !b.is_empty() && !b.starts_with('.') => (a, b),
        _ => return Err(bad(spec, "give a range A..B (two dots): the series A..B applied to A's tree")),
    };
    git(repo, &["rev-parse", "--git-dir"]).map_err(|_| bad(spec, format!("{} is not a git tree", repo.display())))?;
    let (base, tip) = (commit_id(repo, spec, a)?, commit_id(repo, spec, b)?);
    let ancestor = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["merge-base", "--is-ancestor", &base, &tip])
        .status()
        .map_err(|e| KbuildError::Tool { tool: "git".into(), error: e })?;
    if !ancestor.success() {
        return Err(bad(spec, format!("{a} is not an ancestor of {b}: the series would not be based on {a}'s tree")));
    }
    let range = format!("{base}..{tip}");
    let merges = git(repo, &["rev-list", "--merges", &range])?;
    if let Some(m) = merges.lines().next() {
        return Err(bad(spec, format!("the range holds merge commits ({m}…), which git format-patch leaves out")));
    }
    let commits: u32 = git(repo, &["rev-list", "--count", &range])?.trim().parse().unwrap_or(0);
    if commits == 0 {
        return Err(bad(spec, format!("no commits between {a} and {b}")));
    }
    Ok(CommitRange { repo: repo.to_path_buf(), spec: spec.to_owned(), base, tip, commits })
}

/// `git format-patch --stdout A..B` as an mbox: numbered, no cover letter, no
/// signature, plain `a/` `b/` prefixes (whatever the user's git config says), no
/// rename detection (GNU `patch` then sees a delete and an add), and paths relative to
/// `repo` (a kernel tree that is a folder of a larger repository: `git archive` from
/// there exports that folder only).
///
/// # Errors
/// As [`resolve`] for git failures.
pub fn mbox(range: &CommitRange) -> Result<String, KbuildError> {
    let span = format!("{}..{}", range.base, range.tip);
    git(
        &range.repo,
        &[
            "-c",
            "diff.noprefix=false",
            "-c",
            "diff.mnemonicPrefix=false",
            "format-patch",
            "--stdout",
            "--numbered",
            "--no-cover-letter",
            "--no-signature",
            "--no-renames",
            "--relative",
            &span,
        ],
    )
}

/// The range's patches, in commit order, named `<A12>..<B12>.mbox#k [PATCH k/N] subject`.
///
/// # Errors
/// As [`mbox`]; [`KbuildError::Source`] when the patches are not as many as the commits
/// (a commit without a diff: `format-patch` writes no diff for an empty commit).
pub fn series(range: &CommitRange) -> Result<Vec<Patch>, KbuildError> {
    patches_of(range, &mbox(range)?)
}

/// [`series`] of an mbox already read.
fn patches_of(range: &CommitRange, text: &str) -> Result<Vec<Patch>, KbuildError> {
    let out = split_mbox(text, &format!("{}.mbox", range.short()));
    if out.len() != range.commits as usize {
        return Err(bad(
            &range.spec,
            format!(
                "{} but {} with a diff (an empty commit?)",
                plural(range.commits, "commit"),
                plural_as(out.len(), "patch", "patches")
            ),
        ));
    }
    Ok(out)
}

/// A's tree in `<cache>/kbuild/src/git-<A16>/`, exported with `git archive` on first use.
///
/// # Errors
/// [`KbuildError::Io`] / [`KbuildError::Tool`] / [`KbuildError::Source`] when the export
/// fails.
pub fn export_base(range: &CommitRange, cache: &Path, progress: &mut dyn FnMut(&str)) -> Result<PathBuf, KbuildError> {
    export_commit(&range.repo, &range.base, &range.spec, cache, progress)
}

/// `--commits A` alone: A's tree without patches, exported like [`export_base`] — the
/// baseline (K0) build of a series `A..B`, with the same config and compiler.
///
/// # Errors
/// As [`resolve`] for an unknown name or a folder that is not a git tree; as
/// [`export_base`]; [`KbuildError::Source`] when A's tree is not a Linux tree.
pub fn prepare_base(
    repo: &Path,
    rev: &str,
    cache: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<SourceSpec, KbuildError> {
    git(repo, &["rev-parse", "--git-dir"]).map_err(|_| bad(rev, format!("{} is not a git tree", repo.display())))?;
    let id = commit_id(repo, rev, rev)?;
    let tree = export_commit(repo, &id, rev, cache, progress)?;
    SourceSpec::parse(&tree.display().to_string())
}

/// Export commit `id` (a full id) of `repo`; `spec` names the request in errors.
fn export_commit(
    repo: &Path,
    id: &str,
    spec: &str,
    cache: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<PathBuf, KbuildError> {
    let base = cache.join("kbuild/src");
    let dir = base.join(format!("git-{}", &id[..16.min(id.len())]));
    let stamp = dir.with_extension("stamp");
    let identity = format!("git:{id}");
    if dir.is_dir() && std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == identity) {
        progress(&format!("source: {} at {id} (exported in {})", repo.display(), dir.display()));
        return Ok(dir);
    }
    std::fs::create_dir_all(&base).map_err(|e| KbuildError::io(&base, e))?;
    progress(&format!("source: git archive {id} of {} into {}", repo.display(), dir.display()));
    let tmp = tempfile::tempdir_in(&base).map_err(|e| KbuildError::io(&base, e))?;
    let mut archive = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["archive", "--format=tar", id])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| KbuildError::Tool { tool: "git".into(), error: e })?;
    let tar_in = archive.stdout.take().map_or_else(Stdio::null, Stdio::from);
    let untar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(tmp.path())
        .stdin(tar_in)
        .output()
        .map_err(|e| KbuildError::Tool { tool: "tar".into(), error: e })?;
    let archived = archive.wait_with_output().map_err(|e| KbuildError::Tool { tool: "git".into(), error: e })?;
    if !archived.status.success() || !untar.status.success() {
        return Err(bad(
            spec,
            format!(
                "git archive {id} | tar -x failed: {}{}",
                String::from_utf8_lossy(&archived.stderr).trim(),
                String::from_utf8_lossy(&untar.stderr).trim()
            ),
        ));
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| KbuildError::io(&dir, e))?;
    }
    let kept = tmp.keep();
    std::fs::rename(&kept, &dir).map_err(|e| KbuildError::io(&dir, e))?;
    std::fs::write(&stamp, &identity).map_err(|e| KbuildError::io(&stamp, e))?;
    Ok(dir)
}

/// The source to build and its patches, as `kernel build` and a matrix's
/// `source` kernels give them: without `commits`, `source` parsed as a
/// [`SourceSpec`] with `patches`; with `commits`, `source` is a git tree and
/// `A..B` is A's tree with the range as its series ([`prepare`]), a lone `A`
/// is A's tree without patches ([`prepare_base`]).
///
/// # Errors
/// As [`SourceSpec::parse`], [`prepare`] and [`prepare_base`].
pub fn source_and_patches(
    source: &str,
    commits: Option<&str>,
    patches: Option<&Path>,
    cache: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<(SourceSpec, Option<PathBuf>), KbuildError> {
    match commits {
        Some(range) if range.contains("..") => {
            let prepared = prepare(Path::new(source), range, cache, progress)?;
            Ok((prepared.source, Some(prepared.mbox)))
        }
        Some(base) => Ok((prepare_base(Path::new(source), base, cache, progress)?, None)),
        None => Ok((SourceSpec::parse(source)?, patches.map(Path::to_path_buf))),
    }
}

/// Everything `kernel build --source TREE --commits A..B` needs: the range resolved,
/// its series read (and kept as an mbox in `<cache>/kbuild/git/`), A's tree exported.
///
/// # Errors
/// As [`resolve`], [`series`] and [`export_base`]; [`KbuildError::Source`] when A's
/// tree is not a Linux tree (no `Makefile` and `Kconfig`).
pub fn prepare(repo: &Path, spec: &str, cache: &Path, progress: &mut dyn FnMut(&str)) -> Result<Prepared, KbuildError> {
    let range = resolve(repo, spec)?;
    let text = mbox(&range)?;
    let series = patches_of(&range, &text)?;
    let folder = cache.join("kbuild/git");
    std::fs::create_dir_all(&folder).map_err(|e| KbuildError::io(&folder, e))?;
    let mbox_path = folder.join(format!("{}.mbox", range.short()));
    std::fs::write(&mbox_path, text).map_err(|e| KbuildError::io(&mbox_path, e))?;
    let tree = export_base(&range, cache, progress)?;
    let source = SourceSpec::parse(&tree.display().to_string())?;
    progress(&format!("commits: {spec} = {} patch(es) on {} ({})", series.len(), range.base, mbox_path.display()));
    Ok(Prepared { range, source, mbox: mbox_path, series })
}

#[cfg(test)]
pub(crate) mod tests;
