//! Commit ranges on a tiny git tree made in a temporary folder (no kernel build).

use super::*;
use crate::kbuild::patches::{apply_series, read_series, PatchError};
use crate::kbuild::{copy_tree, KbuildError};

use manarig_test_support::git_in;

/// git, GNU patch and tar: SKIP without one, a failure under `CI=true`.
fn have_tools() -> bool {
    manarig_test_support::tools_present("kbuild::commits", &["git", "patch", "tar"])
}

fn write(repo: &Path, file: &str, text: &str) {
    let p = repo.join(file);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

fn read(dir: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(file)).ok()
}

/// A "kernel tree" at tag `base` and three commits after it up to tag `tip`: a change,
/// a new file, a removed file. Also a side branch `other` off the first commit.
fn repo() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tmp");
    let r = d.path();
    git_in(r, &["init", "-q"]);
    write(r, "Makefile", "all:\n");
    write(r, "Kconfig", "config X\n");
    write(r, "drivers/net/ethernet/microsoft/mana/gdma_main.c", "a\nb\nc\n");
    write(r, "old.c", "gone\n");
    git_in(r, &["add", "-A"]);
    git_in(r, &["commit", "-q", "-m", "base"]);
    git_in(r, &["tag", "base"]);
    write(r, "drivers/net/ethernet/microsoft/mana/gdma_main.c", "a\nB\nc\n");
    git_in(
        r,
        &[
            "commit",
            "-q",
            "-am",
            "net: mana: change b\n\nFrom the review: b is better as B.\n\nReviewed-by: Someone <s@example.org>",
        ],
    );
    git_in(r, &["branch", "other"]);
    write(r, "new.c", "n\n");
    git_in(r, &["add", "new.c"]);
    git_in(r, &["commit", "-q", "-m", "add new.c"]);
    git_in(r, &["rm", "-q", "old.c"]);
    git_in(r, &["commit", "-q", "-m", "remove old.c"]);
    git_in(r, &["tag", "tip"]);
    git_in(r, &["checkout", "-q", "other"]);
    write(r, "side.c", "s\n");
    git_in(r, &["add", "side.c"]);
    git_in(r, &["commit", "-q", "-m", "side"]);
    git_in(r, &["checkout", "-q", "main"]);
    d
}

#[test]
fn a_range_becomes_a_series_that_turns_the_base_export_into_the_tip() {
    if !have_tools() {
        return;
    }
    let r = repo();
    let range = resolve(r.path(), "base..tip").expect("resolves");
    assert_eq!(range.commits, 3);
    assert_eq!(range.base, git_in(r.path(), &["rev-parse", "base"]));
    let series = series(&range).expect("series");
    let stem = range.short();
    let names: Vec<String> = series.iter().map(|p| p.name.clone()).collect();
    assert_eq!(
        names,
        [
            format!("{stem}.mbox#1 [PATCH 1/3] net: mana: change b"),
            format!("{stem}.mbox#2 [PATCH 2/3] add new.c"),
            format!("{stem}.mbox#3 [PATCH 3/3] remove old.c"),
        ]
    );
    assert!(series[0].text.contains("From the review: b is better as B."), "a commit message 'From' line stays");
    let cache = tempfile::tempdir().expect("cache");
    let mut lines = Vec::new();
    let base = export_base(&range, cache.path(), &mut |l| lines.push(l.to_owned())).expect("export");
    assert_eq!(read(&base, "drivers/net/ethernet/microsoft/mana/gdma_main.c").as_deref(), Some("a\nb\nc\n"));
    assert!(read(&base, "new.c").is_none() && read(&base, "old.c").is_some(), "A's tree, not the checkout's");
    // As the build does: a hard-link copy of the export, the series applied to it.
    let work = cache.path().join("work");
    copy_tree(&base, &work).expect("cp -al");
    apply_series(&work, &series).expect("applies");
    assert_eq!(read(&work, "drivers/net/ethernet/microsoft/mana/gdma_main.c").as_deref(), Some("a\nB\nc\n"));
    assert_eq!(read(&work, "new.c").as_deref(), Some("n\n"));
    assert!(read(&work, "old.c").is_none());
    assert_eq!(
        read(&base, "drivers/net/ethernet/microsoft/mana/gdma_main.c").as_deref(),
        Some("a\nb\nc\n"),
        "export pristine"
    );
    // A second export of the same commit is reused.
    lines.clear();
    assert_eq!(export_base(&range, cache.path(), &mut |l| lines.push(l.to_owned())).expect("again"), base);
    assert!(lines[0].contains("exported in"), "{lines:?}");
}

#[test]
fn prepare_keeps_the_mbox_and_names_the_export_as_the_source() {
    if !have_tools() {
        return;
    }
    let r = repo();
    let cache = tempfile::tempdir().expect("cache");
    let p = prepare(r.path(), "base..tip", cache.path(), &mut |_| {}).expect("prepared");
    assert_eq!(p.mbox, cache.path().join(format!("kbuild/git/{}.mbox", p.range.short())));
    let again = read_series(&p.mbox).expect("the kept mbox reads as a series");
    assert_eq!(again, p.series);
    let SourceSpec::Tree(tree) = &p.source else { panic!("{:?}", p.source) };
    assert!(tree.ends_with(format!("git-{}", &p.range.base[..16])), "{}", tree.display());
}

#[test]
fn a_patch_that_does_not_apply_keeps_its_one_line_naming_patch_file_and_hunk() {
    if !have_tools() {
        return;
    }
    let r = repo();
    let range = resolve(r.path(), "base..tip").expect("resolves");
    let series = series(&range).expect("series");
    let cache = tempfile::tempdir().expect("cache");
    let base = export_base(&range, cache.path(), &mut |_| {}).expect("export");
    let work = cache.path().join("work");
    copy_tree(&base, &work).expect("cp -al");
    std::fs::remove_file(work.join("drivers/net/ethernet/microsoft/mana/gdma_main.c")).expect("rm");
    write(&work, "drivers/net/ethernet/microsoft/mana/gdma_main.c", "x\ny\nz\n");
    let e = apply_series(&work, &series).expect_err("hunk fails");
    let PatchError::DoesNotApply { patch, problems, .. } = &e else { panic!("{e}") };
    assert_eq!(patch, &format!("{}.mbox#1 [PATCH 1/3] net: mana: change b", range.short()));
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0]
            .starts_with("drivers/net/ethernet/microsoft/mana/gdma_main.c: hunk #1 (@@ -1,3 +1,3 @@) FAILED at 1"),
        "{}",
        problems[0]
    );
}

#[test]
fn bad_ranges_are_refused_with_one_line() {
    if !have_tools() {
        return;
    }
    let r = repo();
    let msg = |spec: &str| match resolve(r.path(), spec) {
        Err(KbuildError::Source(m)) => m,
        other => panic!("{spec}: {other:?}"),
    };
    assert!(msg("tip").contains("give a range A..B"));
    assert!(msg("base...tip").contains("give a range A..B"));
    assert!(msg("base..nope").contains("\"nope\" is not a commit of"));
    assert!(msg("tip..base").contains("tip is not an ancestor of base"));
    assert!(msg("other..tip").contains("other is not an ancestor of tip"));
    assert!(msg("tip..tip").contains("no commits between tip and tip"));
    git_in(r.path(), &["checkout", "-q", "-b", "merged", "tip"]);
    git_in(r.path(), &["merge", "-q", "--no-edit", "other"]);
    assert!(msg("base..merged").contains("merge commits"));
    let plain = tempfile::tempdir().expect("tmp");
    match resolve(plain.path(), "a..b") {
        Err(KbuildError::Source(m)) => assert!(m.contains("is not a git tree"), "{m}"),
        other => panic!("{other:?}"),
    }
    for m in [msg("tip"), msg("tip..base")] {
        assert!(!m.contains('\n') && m.starts_with("--commits "), "{m}");
    }
}

#[test]
fn a_tree_in_a_folder_of_a_larger_repository_exports_and_patches_that_folder() {
    if !have_tools() {
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let r = d.path();
    git_in(r, &["init", "-q"]);
    write(r, "README", "top\n");
    write(r, "linux/Makefile", "all:\n");
    write(r, "linux/Kconfig", "config X\n");
    write(r, "linux/lib/cpumask.c", "a\nb\nc\n");
    git_in(r, &["add", "-A"]);
    git_in(r, &["commit", "-q", "-m", "base"]);
    git_in(r, &["tag", "base"]);
    write(r, "linux/lib/cpumask.c", "a\nB\nc\n");
    write(r, "README", "top, changed\n");
    git_in(r, &["commit", "-q", "-am", "change both"]);
    let cache = tempfile::tempdir().expect("cache");
    let p = prepare(&r.join("linux"), "base..HEAD", cache.path(), &mut |_| {}).expect("prepared");
    let SourceSpec::Tree(base) = &p.source else { panic!("{:?}", p.source) };
    assert!(base.join("lib/cpumask.c").is_file() && !base.join("README").exists(), "the folder, not the repository");
    assert!(!p.series[0].text.contains("README"), "{}", p.series[0].text);
    let work = cache.path().join("work");
    copy_tree(base, &work).expect("cp -al");
    apply_series(&work, &p.series).expect("applies");
    assert_eq!(read(&work, "lib/cpumask.c").as_deref(), Some("a\nB\nc\n"));
}

#[test]
fn a_single_commit_is_its_tree_alone_the_baseline_of_the_series() {
    if !have_tools() {
        return;
    }
    let r = repo();
    let cache = tempfile::tempdir().expect("cache");
    let source = prepare_base(r.path(), "base", cache.path(), &mut |_| {}).expect("base");
    let SourceSpec::Tree(tree) = &source else { panic!("{source:?}") };
    assert_eq!(read(tree, "drivers/net/ethernet/microsoft/mana/gdma_main.c").as_deref(), Some("a\nb\nc\n"));
    // The same export as the range's base: one copy per commit.
    let range = resolve(r.path(), "base..tip").expect("range");
    assert_eq!(&export_base(&range, cache.path(), &mut |_| {}).expect("export"), tree);
    match prepare_base(r.path(), "nope", cache.path(), &mut |_| {}) {
        Err(KbuildError::Source(m)) => assert!(m.starts_with("--commits nope: \"nope\" is not a commit of"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_source_with_a_range_a_commit_or_patches_gives_the_tree_and_patches_to_build() {
    if !have_tools() {
        return;
    }
    let r = repo();
    let cache = tempfile::tempdir().expect("cache");
    let repo = r.path().to_str().expect("utf-8 path");
    let given = Path::new("/p/series.mbox");
    let mut quiet = |_: &str| {};
    let (source, patches) =
        source_and_patches(repo, Some("base..tip"), Some(given), cache.path(), &mut quiet).expect("range");
    let p = prepare(r.path(), "base..tip", cache.path(), &mut quiet).expect("prepared");
    assert_eq!((source, patches), (p.source.clone(), Some(p.mbox)), "the range's series, not the given patches");
    let (source, patches) = source_and_patches(repo, Some("base"), None, cache.path(), &mut quiet).expect("base");
    assert_eq!((source, patches), (p.source, None), "a lone commit: its tree alone");
    let (source, patches) = source_and_patches(repo, None, Some(given), cache.path(), &mut quiet).expect("tree");
    assert_eq!(source, SourceSpec::Tree(r.path().canonicalize().expect("canonical")));
    assert_eq!(patches.as_deref(), Some(given));
}
