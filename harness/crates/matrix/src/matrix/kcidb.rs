//! The matrix as KCIDB report data, schema v5.3 (kcidb-io's
//! `kcidb_io/schema/v05_03.py`), for KernelCI's common results database:
//!
//! - a **checkout** per kernel source (pinned Debian kernel, Debian source,
//!   or `--source` with its patch set: `patchset_files` in order of
//!   application and `patchset_hash`, and `valid: false` when the patches did
//!   not apply; with `--commits`, the base commit's `git_commit_hash` and
//!   `git_commit_name`, and `git_repository_url` when the tree's `origin` is an
//!   `https://` or `git://` URL);
//! - a **build** per kernel and guest architecture (`architecture`: x86_64,
//!   or arm64 for the pairs `matrix --arch` or the file's `[machine] arch`
//!   puts on arm64; `duration`: how long a build from source took;
//!   `status` PASS when it booted, FAIL when `make`
//!   failed, MISS when its checkout was not valid, ERROR for other failures);
//! - a **test** per pair at path `manarig.<topology>` (PASS / FAIL / ERROR,
//!   MISS for a pair that did not run) and one per check of its verdict at
//!   `manarig.<topology>.<check>` (PASS / FAIL / SKIP).
//!
//! Facts of the schema this follows: ids are `<origin>:<anything>` with the
//! origin `[a-z0-9_]+`; test paths are dot-separated `[a-zA-Z0-9_-]+` parts;
//! no property may be null (absent instead); `log_excerpt` holds at most 16384
//! characters; resource `name`s contain no `/`, and `url`s are URIs;
//! `patchset_hash` is `""` when no patches were applied.

use super::kernels::{KernelFacts, KernelSpec};
use super::report::{MatrixReport, PairRecord, PairStatus};
use super::shard::Shard;
use crate::text::plural;
use crate::topology::Arch;
use crate::verdict::CheckStatus;
use serde::Serialize;
use serde_json::{json, Value};

/// The schema version written (`version.major`, `version.minor`).
pub const KCIDB_VERSION: (u32, u32) = (5, 3);

/// Longest `log_excerpt` the schema takes, in characters.
const EXCERPT_MAX: usize = 16384;

/// How the KCIDB document is addressed.
#[derive(Debug, Clone)]
pub struct KcidbOptions {
    /// The origin KernelCI assigned to the submitter (`[a-z0-9_]+`; default `manarig`).
    pub origin: String,
    /// Where the patch files can be downloaded (`<base>/<file name>`); default
    /// `file://` URLs of the files on this machine.
    pub patch_url_base: Option<String>,
}

/// An origin that KCIDB would refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("KCIDB origin {0:?}: use lower-case letters, digits and _ only")]
pub struct BadOrigin(pub String);

#[derive(Serialize)]
struct Resource {
    name: String,
    url: String,
}

#[derive(Serialize)]
struct Checkout {
    id: String,
    origin: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    tree_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    comment: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    git_repository_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    git_commit_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    git_commit_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patchset_files: Option<Vec<Resource>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patchset_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_time: Option<String>,
    valid: bool,
    misc: Value,
}

#[derive(Serialize)]
struct Build {
    id: String,
    origin: String,
    checkout_id: String,
    comment: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration: Option<f64>,
    architecture: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    compiler: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    config_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    log_excerpt: Option<String>,
    misc: Value,
}

#[derive(Serialize)]
struct Environment {
    comment: String,
    misc: Value,
}

#[derive(Serialize)]
struct Test {
    id: String,
    origin: String,
    build_id: String,
    path: String,
    status: &'static str,
    comment: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    log_excerpt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    environment: Option<Environment>,
    misc: Value,
}

/// A test path part: `[a-zA-Z0-9_-]+`, other characters as `_`.
fn path_part(s: &str) -> String {
    let p: String =
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    if p.is_empty() {
        "_".to_owned()
    } else {
        p
    }
}

/// An id part: printable, no NUL, no spaces.
fn id_part(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_graphic() { c } else { '_' }).collect()
}

fn excerpt(s: &str) -> String {
    s.replace('\0', "").chars().take(EXCERPT_MAX).collect()
}

/// A check's test path: `<pair path>.<check>`, except the kernel's selftests,
/// whose cases keep their own hierarchy as KernelCI knows it from other
/// labs' kselftest runs: `manarig.selftests.<program>.<case>` (their pair is
/// in the test's `misc` and id).
fn check_path(pair_path: &str, check: &str) -> String {
    match check.strip_prefix("selftests.") {
        Some(rest) => {
            let parts: Vec<String> = rest.split('.').map(path_part).collect();
            format!("manarig.selftests.{}", parts.join("."))
        }
        None => format!("{pair_path}.{}", path_part(check)),
    }
}

/// Percent-encode a URL path (RFC 3986 unreserved characters and `/` kept).
fn url_path(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The checkout a kernel belongs to: kernels from one source with one patch
/// set share it.
fn checkout_key(k: &KernelSpec) -> String {
    match (&k.source, &k.patchset) {
        (Some(s), Some(p)) => format!("{s}|{}", p.hash),
        (Some(s), None) => s.clone(),
        (None, _) => k.identity.clone(),
    }
}

/// Whether the kernel's source is one of Debian's (a pinned package or source).
fn is_debian(k: &KernelSpec) -> bool {
    ["pinned:", "minimal:", "source:debian:"].iter().any(|p| k.identity.starts_with(p))
}

fn resources(k: &KernelSpec, opts: &KcidbOptions) -> Option<Vec<Resource>> {
    let p = k.patchset.as_ref()?;
    Some(
        p.files
            .iter()
            .map(|f| {
                let name = f.name.replace(['/', '\0'], "_");
                let url = match &opts.patch_url_base {
                    Some(base) => format!("{}/{}", base.trim_end_matches('/'), url_path(&name)),
                    None => {
                        let abs = std::path::absolute(&f.path).unwrap_or_else(|_| f.path.clone().into());
                        format!("file://{}", url_path(&abs.display().to_string()))
                    }
                };
                Resource { name, url }
            })
            .collect(),
    )
}

fn build_status(f: Option<&KernelFacts>) -> Option<&'static str> {
    let f = f?;
    f.prepare_s?;
    Some(match (&f.error, f.patches_failed, f.build_failed) {
        (None, ..) => "PASS",
        (Some(_), true, _) => "MISS",
        (Some(_), _, true) => "FAIL",
        (Some(_), ..) => "ERROR",
    })
}

fn pair_status(s: PairStatus) -> &'static str {
    match s {
        PairStatus::Pass => "PASS",
        PairStatus::Fail => "FAIL",
        PairStatus::RigError => "ERROR",
        PairStatus::Skip => "SKIP",
        PairStatus::NotRun => "MISS",
    }
}

/// Render the matrix as a KCIDB v5.3 document (pretty JSON, one object).
///
/// # Errors
/// [`BadOrigin`] for an origin KCIDB would refuse.
pub fn render_kcidb(m: &MatrixReport, opts: &KcidbOptions) -> Result<String, BadOrigin> {
    let origin = &opts.origin;
    if origin.is_empty() || !origin.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        return Err(BadOrigin(origin.clone()));
    }
    let h = &m.header;
    let run = id_part(&h.run_id);
    let start = h.shards.iter().map(|s| s.started.clone()).min();
    let mut checkouts: Vec<(String, Checkout)> = Vec::new();
    let mut builds = Vec::new();
    for k in &h.spec.kernels {
        let facts = h.kernels.iter().find(|f| f.label == k.label);
        let key = checkout_key(k);
        let index = match checkouts.iter().position(|(c, _)| *c == key) {
            Some(i) => i,
            None => {
                let id = format!("{origin}:manarig-{run}-checkout{}", checkouts.len() + 1);
                let patchset_hash = match (&k.patchset, facts.map(|f| f.patches.is_empty())) {
                    (Some(p), _) => Some(p.hash.clone()),
                    (None, Some(false)) => None,
                    (None, _) => Some(String::new()),
                };
                checkouts.push((
                    key,
                    Checkout {
                        id,
                        origin: origin.clone(),
                        tree_name: is_debian(k).then(|| "debian".to_owned()),
                        comment: k.source.clone().or_else(|| Some(k.identity.clone())),
                        git_repository_url: k.git.as_ref().and_then(|g| g.repository_url.clone()),
                        git_commit_hash: k.git.as_ref().map(|g| g.commit_hash.clone()),
                        git_commit_name: k.git.as_ref().and_then(|g| g.commit_name.clone()),
                        patchset_files: resources(k, opts),
                        patchset_hash,
                        start_time: start.clone(),
                        valid: !facts.is_some_and(|f| f.patches_failed),
                        misc: json!({ "identity": k.identity, "kernels": [] }),
                    },
                ));
                checkouts.len() - 1
            }
        };
        if let Some(list) = checkouts[index].1.misc.get_mut("kernels").and_then(Value::as_array_mut) {
            list.push(json!(k.label));
        }
        for arch in archs_of(m, &k.label) {
            let release = facts.and_then(|f| f.release.clone()).or_else(|| release_from_runs(m, &k.label, arch));
            builds.push(Build {
                id: build_id(origin, &run, &k.label, arch),
                origin: origin.clone(),
                checkout_id: checkouts[index].1.id.clone(),
                comment: match &release {
                    Some(r) => format!("{}: Linux {r}", k.label),
                    None => k.label.clone(),
                },
                start_time: start.clone(),
                duration: facts.and_then(|f| f.build_s),
                architecture: arch.as_str(),
                compiler: facts.and_then(|f| f.compiler.clone()),
                config_name: Some(match k.kind {
                    super::cost::KernelKind::Minimal => {
                        "manarig minimal (guest-images/kernel-config/manarig.config)".to_owned()
                    }
                    super::cost::KernelKind::Debian => format!("debian cloud-{}", arch.debian()),
                }),
                status: build_status(facts),
                log_excerpt: facts.and_then(|f| f.error.as_deref()).map(excerpt),
                misc: json!({
                    "label": k.label,
                    "identity": k.identity,
                    "release": release,
                    "model": facts.and_then(|f| f.model.clone()),
                    "model_note": facts.and_then(|f| f.model_note.clone()),
                    "build_key": facts.and_then(|f| f.build_key.clone()),
                    "patches": facts.map(|f| f.patches.clone()).unwrap_or_default(),
                    // The Debian packages its runs used, each naming its pin when it differs.
                    "packages": packages_from_runs(m, &k.label, arch),
                }),
            });
        }
    }
    let mut tests = Vec::new();
    for r in &m.pairs {
        tests.extend(pair_tests(m, r, origin, &run));
    }
    let doc = json!({
        "version": { "major": KCIDB_VERSION.0, "minor": KCIDB_VERSION.1 },
        "checkouts": checkouts.into_iter().map(|(_, c)| c).collect::<Vec<_>>(),
        "builds": builds,
        "tests": tests,
    });
    Ok(serde_json::to_string_pretty(&strip_nulls(doc)).unwrap_or_default() + "\n")
}

/// A build's id: one per kernel and guest architecture (an x86_64 build's
/// without the architecture, as before the arch axis).
fn build_id(origin: &str, run: &str, label: &str, arch: Arch) -> String {
    match arch {
        Arch::X86_64 => format!("{origin}:manarig-{run}-{}", id_part(label)),
        other => format!("{origin}:manarig-{run}-{}-{other}", id_part(label)),
    }
}

/// The architectures kernel `label`'s pairs run on, in the order they first
/// appear (a kernel is a build per architecture); x86_64 when it has none.
fn archs_of(m: &MatrixReport, label: &str) -> Vec<Arch> {
    let mut out = Vec::new();
    for r in m.pairs.iter().filter(|r| r.pair.kernel == label) {
        let a = m.header.spec.arch_of(&r.pair);
        if !out.contains(&a) {
            out.push(a);
        }
    }
    if out.is_empty() {
        out.push(Arch::X86_64);
    }
    out
}

/// The pairs of kernel `label` on `arch`.
fn pairs_on<'m>(m: &'m MatrixReport, label: &'m str, arch: Arch) -> impl Iterator<Item = &'m PairRecord> {
    m.pairs.iter().filter(move |r| r.pair.kernel == label && m.header.spec.arch_of(&r.pair) == arch)
}

fn release_from_runs(m: &MatrixReport, label: &str, arch: Arch) -> Option<String> {
    pairs_on(m, label, arch).find_map(|r| r.verdict().map(|v| v.run.kernel_release.clone()))
}

/// The packages a kernel's first judged run on `arch` used (QEMU, the kernel
/// or its source, busybox, the guest tools), as `run.packages` holds them.
fn packages_from_runs(m: &MatrixReport, label: &str, arch: Arch) -> Vec<crate::provision::UsedPackage> {
    pairs_on(m, label, arch).find_map(|r| r.verdict().map(|v| v.run.packages.clone())).unwrap_or_default()
}

/// KCIDB takes no nulls: drop every null-valued key (arrays keep their items).
fn strip_nulls(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k, strip_nulls(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

fn pair_tests(m: &MatrixReport, r: &PairRecord, origin: &str, run: &str) -> Vec<Test> {
    let h = &m.header;
    let build = build_id(origin, run, &r.pair.kernel, h.spec.arch_of(&r.pair));
    let id = format!("{build}-{}", id_part(&r.pair.topology));
    let path = format!("manarig.{}", path_part(&r.pair.topology));
    let input = h.spec.inputs.iter().find(|i| i.path == r.pair.file);
    let verdict = r.verdict();
    let log = match r.status {
        PairStatus::Fail => {
            verdict.map(|v| v.failures().map(|c| format!("{}: {}", c.name, c.message)).collect::<Vec<_>>().join("\n"))
        }
        _ => r.error.clone(),
    };
    let shard = Shard { index: r.pair.shard, count: h.spec.shards };
    let mut out = vec![Test {
        id: id.clone(),
        origin: origin.to_owned(),
        build_id: build.clone(),
        path: path.clone(),
        status: pair_status(r.status),
        comment: match &r.first_mismatch {
            Some(f) => format!("{}: {f}", r.pair.name),
            None => r.pair.name.clone(),
        },
        start_time: r.started.clone(),
        duration: r.duration_s,
        log_excerpt: log.filter(|l| !l.is_empty()).as_deref().map(excerpt),
        environment: Some(Environment {
            comment: format!(
                "QEMU guest ({}) with an emulated MANA NIC: topology {} ({}) from {}",
                verdict.map_or_else(|| h.mode.clone(), |v| v.run.accel.clone()),
                r.pair.topology,
                r.pair.vcpus.map_or_else(|| "? vCPUs".into(), |v| plural(v, "vCPU")),
                r.pair.file
            ),
            misc: json!({ "file": r.pair.file, "sha256": input.map(|i| i.sha256.clone()), "vcpus": r.pair.vcpus }),
        }),
        misc: json!({
            "pair": r.pair.name,
            "oracle": h.spec.oracle,
            "spec": h.spec_digest,
            "shard": shard.to_string(),
            "kernel_release": verdict.map(|v| v.run.kernel_release.clone()),
            "model": verdict.map(|v| v.run.model.clone()),
        }),
    }];
    for c in verdict.map(|v| v.checks.as_slice()).unwrap_or_default() {
        let status = match c.status {
            CheckStatus::Pass => "PASS",
            CheckStatus::Fail => "FAIL",
            CheckStatus::Skip => "SKIP",
        };
        let mut text = vec![c.message.clone()];
        text.extend(c.detail.iter().cloned());
        out.push(Test {
            id: format!("{id}-{}", id_part(&c.name)),
            origin: origin.to_owned(),
            build_id: build.clone(),
            path: check_path(&path, &c.name),
            status,
            comment: c.message.lines().next().unwrap_or("").to_owned(),
            start_time: r.started.clone(),
            duration: None,
            log_excerpt: (c.status == CheckStatus::Fail).then(|| excerpt(&text.join("\n"))),
            environment: None,
            misc: json!({ "pair": r.pair.name }),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_ids_and_urls_follow_the_schema_patterns() {
        assert_eq!(path_part("seed-002"), "seed-002");
        assert_eq!(path_part("a.b c"), "a_b_c");
        assert_eq!(path_part(""), "_");
        assert_eq!(check_path("manarig.seed-002", "probe"), "manarig.seed-002.probe");
        assert_eq!(
            check_path("manarig.seed-002", "selftests.toeplitz.test.tcp_ipv4"),
            "manarig.selftests.toeplitz.test.tcp_ipv4"
        );
        assert_eq!(id_part("build:79684e84 x"), "build:79684e84_x");
        assert_eq!(url_path("/tmp/a b/0001-x.patch"), "/tmp/a%20b/0001-x.patch");
        assert_eq!(excerpt(&"x".repeat(20000)).len(), EXCERPT_MAX);
        let v = strip_nulls(json!({"a": null, "b": [1, {"c": null, "d": 2}]}));
        assert_eq!(v, json!({"b": [1, {"d": 2}]}));
    }
}

#[cfg(test)]
mod render_tests {
    use super::*;
    use crate::matrix::shard::Shard;
    use crate::matrix::shard_run::dry_report;

    fn opts() -> KcidbOptions {
        KcidbOptions { origin: "manarig".into(), patch_url_base: Some("https://example.org/p/".into()) }
    }

    #[test]
    fn statuses_map_to_kcidb_and_nothing_is_null() {
        let mut m = dry_report(&["seed-002", "r24-no-smt"], &["6.12-min"], Shard::WHOLE);
        m.pairs[1] = PairRecord::rig_error(m.pairs[1].pair.clone(), &std::io::Error::other("QEMU exited"), None, None);
        m.header.kernels[0].error = Some("make failed".into());
        m.header.kernels[0].build_failed = true;
        let doc: Value = serde_json::from_str(&render_kcidb(&m, &opts()).expect("render")).expect("JSON");
        assert_eq!(doc["version"], json!({"major": 5, "minor": 3}));
        assert_eq!(doc["builds"][0]["status"], "FAIL");
        let tests = doc["tests"].as_array().expect("tests");
        let status = |path: &str| tests.iter().find(|t| t["path"] == path).map(|t| t["status"].clone());
        assert_eq!(status("manarig.seed-002"), Some(json!("PASS")));
        assert_eq!(status("manarig.seed-002.vector_count"), Some(json!("PASS")));
        assert_eq!(status("manarig.r24-no-smt"), Some(json!("ERROR")));
        assert!(!doc.to_string().contains("null"), "KCIDB takes no nulls");
        assert!(tests.iter().all(|t| t["id"].as_str().is_some_and(|i| i.starts_with("manarig:"))));
        let bad = KcidbOptions { origin: "Man Arig".into(), patch_url_base: None };
        assert!(render_kcidb(&m, &bad).is_err());
    }

    #[test]
    fn a_commit_range_checkout_names_its_base_commit_and_a_build_its_duration_and_kcidb_io_takes_it() {
        let mut m = dry_report(&["seed-002"], &["6.12-min"], Shard::WHOLE);
        let base = "0123456789abcdef0123456789abcdef01234567";
        m.header.spec.kernels[0].git = Some(crate::kbuild::commits::GitFacts {
            commit_hash: base.into(),
            repository_url: Some("https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git".into()),
            commit_name: Some("v6.12-3-g0123456789ab".into()),
        });
        m.header.kernels[0].build_s = Some(512.5);
        let text = render_kcidb(&m, &opts()).expect("render");
        let doc: Value = serde_json::from_str(&text).expect("JSON");
        let checkout = &doc["checkouts"][0];
        assert_eq!(checkout["git_commit_hash"], base);
        assert_eq!(checkout["git_commit_name"], "v6.12-3-g0123456789ab");
        assert!(checkout["git_repository_url"].as_str().is_some_and(|u| u.starts_with("https://")));
        assert_eq!(doc["builds"][0]["duration"], json!(512.5));
        let cache = crate::provision::cache_dir(None).expect("cache");
        let validator = crate::matrix::kcidb_check::validator(&cache, &mut |l| eprintln!("{l}")).expect("kcidb-io");
        let file = tempfile::NamedTempFile::new().expect("tmp");
        std::fs::write(file.path(), &text).expect("write");
        validator.check(file.path()).expect("kcidb-io takes the git fields and the build duration");
    }

    /// `matrix --arch x86_64,arm64`: a build per kernel and architecture, its
    /// `architecture` and config from the pairs' guests, each pair's tests
    /// under its architecture's build; an arm64 file off the axis is arm64 too.
    #[test]
    fn each_architecture_is_a_build_of_its_own_and_kcidb_io_takes_them() {
        let m = crate::matrix::shard_run::dry_report_on(
            &["seed-002"],
            &["6.12"],
            &[Arch::X86_64, Arch::Arm64],
            Shard::WHOLE,
        );
        let text = render_kcidb(&m, &opts()).expect("render");
        let doc: Value = serde_json::from_str(&text).expect("JSON");
        let builds = doc["builds"].as_array().expect("builds");
        let seen: Vec<(&str, &str, &str)> = builds
            .iter()
            .map(|b| {
                let s = |k: &str| b[k].as_str().unwrap_or_default();
                (s("id"), s("architecture"), s("config_name"))
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("manarig:manarig-test-6.12", "x86_64", "debian cloud-amd64"),
                ("manarig:manarig-test-6.12-arm64", "arm64", "debian cloud-arm64"),
            ]
        );
        let tests = doc["tests"].as_array().expect("tests");
        let build_of = |pair: &str| {
            tests
                .iter()
                .find(|t| t["misc"]["pair"] == pair && t["path"] == "manarig.seed-002")
                .map(|t| t["build_id"].clone())
        };
        assert_eq!(build_of("seed-002@6.12@arm64"), Some(json!("manarig:manarig-test-6.12-arm64")));
        assert_eq!(build_of("seed-002@6.12@x86_64"), Some(json!("manarig:manarig-test-6.12")));
        // Off the axis, an arm64 topology file's pairs are arm64 builds.
        let own = dry_report(&["arm64/cobalt-16"], &["6.12"], Shard::WHOLE);
        let doc: Value = serde_json::from_str(&render_kcidb(&own, &opts()).expect("render")).expect("JSON");
        assert_eq!(doc["builds"][0]["architecture"], "arm64");
        let cache = crate::provision::cache_dir(None).expect("cache");
        let validator = crate::matrix::kcidb_check::validator(&cache, &mut |l| eprintln!("{l}")).expect("kcidb-io");
        let file = tempfile::NamedTempFile::new().expect("tmp");
        std::fs::write(file.path(), &text).expect("write");
        validator.check(file.path()).expect("kcidb-io takes a build per architecture");
    }
}
