//! Provisioning against a real apt archive on disk (no network): a pin that
//! has left the archive falls back to the newest of its track and says so;
//! `--locked` refuses; `--update-lock` rewrites every section of both lock
//! files; an unsigned, tampered or foreign-signed index is refused. The
//! archive is built with dpkg-deb and dpkg-scanpackages and signed with a
//! throwaway GnuPG key (tests/archive_support); real apt reads it.

mod archive_support;

use archive_support::{fake_module, fake_qemu, Archive, DebSpec, FileSpec};
use harness::provision::apt;
use harness::provision::update::LockFiles;
use harness::provision::{setup, ProvisionError, Provisioned, SetupOptions};
use std::path::Path;

const STABLE: &str = "stable";
const BACKPORTS: &str = "backports";
/// An opt-in suite (harness::provision::apt::OPT_IN_SUITES): only the pins naming it.
const FORKY: &str = "forky";

fn deb(name: &str, version: &str, files: Vec<FileSpec>) -> DebSpec {
    DebSpec { name: name.to_owned(), version: version.to_owned(), files, depends: String::new() }
}

/// The libc6 of the test archive: the host's loader and libc (the fake tools
/// need none of them to run; the private QEMU runs through them).
fn libc6(version: &str) -> DebSpec {
    let lib = Path::new("/lib/x86_64-linux-gnu");
    deb(
        "libc6",
        version,
        vec![
            FileSpec::copy("usr/lib/x86_64-linux-gnu/libc.so.6", &lib.join("libc.so.6"), 0o755),
            FileSpec::copy("usr/lib/x86_64-linux-gnu/libm.so.6", &lib.join("libm.so.6"), 0o644),
            FileSpec::copy("usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", &lib.join("ld-linux-x86-64.so.2"), 0o755),
            FileSpec::copy("usr/lib64/ld-linux-x86-64.so.2", &lib.join("ld-linux-x86-64.so.2"), 0o755),
        ],
    )
}

fn qemu(version: &str) -> DebSpec {
    let lib = Path::new("/lib/x86_64-linux-gnu");
    let upstream = version.split(['+', '-']).next().unwrap_or(version).trim_start_matches("1:");
    let mut bin = FileSpec::text("usr/bin/qemu-system-x86_64", "");
    bin.contents = fake_qemu(&format!("QEMU emulator version {upstream} (Debian {version})"));
    bin.mode = 0o755;
    deb(
        "qemu-system-x86",
        version,
        vec![
            bin,
            FileSpec::copy("usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", &lib.join("ld-linux-x86-64.so.2"), 0o755),
            FileSpec::copy("usr/lib/x86_64-linux-gnu/libc.so.6", &lib.join("libc.so.6"), 0o755),
            FileSpec::text("usr/share/qemu/README", "firmware would be here"),
        ],
    )
}

/// qemu-system-arm (amd64): `qemu-system-aarch64`, run through the host's loader.
fn qemu_arm(version: &str) -> DebSpec {
    let mut d = qemu(version);
    d.name = "qemu-system-arm".into();
    let upstream = version.split(['+', '-']).next().unwrap_or(version).trim_start_matches("1:");
    d.files[0].path = "usr/bin/qemu-system-aarch64".into();
    d.files[0].contents = fake_qemu(&format!("QEMU emulator version {upstream} (Debian {version})"));
    d
}

fn kernel(release: &str, version: &str) -> DebSpec {
    let mut ko =
        FileSpec::text(&format!("lib/modules/{release}/kernel/drivers/net/ethernet/microsoft/mana/mana.ko"), "");
    ko.contents = fake_module(&["mana_gd_probe"]);
    deb(
        &format!("linux-image-{release}"),
        version,
        vec![FileSpec::text(&format!("boot/vmlinuz-{release}"), "a bzImage would be here"), ko],
    )
}

fn tool_files(tool: harness::provision::tools::Tool) -> Vec<FileSpec> {
    tool.files
        .iter()
        .filter(|(from, _)| !from.contains("libc.so.6") && !from.contains("libm.so.6") && !from.contains("ld-linux"))
        .map(|(from, _)| FileSpec::text(from, &format!("{} of the test archive", tool.name)))
        .collect()
}

fn source(version: &str) -> DebSpec {
    deb("linux-source-6.12", version, vec![FileSpec::text("usr/src/linux-source-6.12.tar.xz", "a tarball")])
}

/// The archive's packages, by suite: every pin below has a newer version
/// beside it, and `gone` pins are not published at all.
struct Published {
    archive: Archive,
    /// SHA-256 of each published (name, version).
    sums: Vec<((String, String), String)>,
}

impl Published {
    fn sum(&self, name: &str, version: &str) -> String {
        self.sums
            .iter()
            .find(|((n, v), _)| n == name && v == version)
            .map_or_else(|| "0".repeat(64), |(_, s)| s.clone())
    }
}

fn publish() -> Published {
    let archive = Archive::new();
    let mut sums = Vec::new();
    let mut add = |suite: &str, d: DebSpec| {
        let s = archive.add(suite, &d);
        sums.push(((d.name, d.version), s));
    };
    // The pins' own versions that stay: ethtool 1.0-1, irqbalance 1.9-1.
    add(STABLE, deb("ethtool", "1:1.0-1", tool_files(harness::provision::tools::ETHTOOL)));
    add(STABLE, deb("irqbalance", "1.9-1", tool_files(harness::provision::tools::IRQBALANCE)));
    // The selftest runs' tools are unpacked whole: one package with Python's path is enough here.
    add(STABLE, deb("python3.13-minimal", "3.13.5-1", vec![FileSpec::text("usr/bin/python3.13", "not a python")]));
    // Newer versions of the pins that are gone.
    add(STABLE, libc6("2.41-2"));
    add(STABLE, deb("busybox-static", "1:1.1-2", vec![FileSpec::text("usr/bin/busybox", "#!/bin/sh\n")]));
    add(STABLE, kernel("6.12.2+deb13-cloud-amd64", "6.12.2-1"));
    add(STABLE, source("6.12.2-1"));
    // An old QEMU in stable (below 10.1: never a fallback) and the rebuilt backport.
    add(STABLE, qemu("1:9.2.0+ds-1"));
    add(BACKPORTS, qemu("1:11.1.3+ds-2~bpo13+1"));
    // The selftests' clang: the pin 1:14.0-1 is gone.
    add(STABLE, deb("clang-14", "1:14.0-2", vec![FileSpec::text("usr/lib/llvm-14/bin/clang", "not a clang")]));
    // A package of the opt-in suite (the selftests' ethtool): its pin 1:2.0-1 is gone.
    let mut testing_ethtool = deb("ethtool", "1:2.0-2", tool_files(harness::provision::tools::ETHTOOL));
    testing_ethtool.depends = "libc6 (>= 2.41), libmnl0 (>= 1.0.3-4~)".into();
    add(FORKY, testing_ethtool);
    // The arm64 guests' parts ([arm64]): every pin below has a newer version here.
    let mut add_for = |suite: &str, d: DebSpec, arch: &str| {
        let s = archive.add_for(suite, &d, arch);
        sums.push(((d.name, d.version), s));
    };
    add_for(BACKPORTS, qemu_arm("1:11.1.3+ds-2~bpo13+1"), "amd64");
    add_for(STABLE, deb("qemu-efi-aarch64", "2025.02-9", tool_files(harness::provision::tools::AAVMF)), "all");
    add_for(STABLE, deb("busybox-static", "1:1.1-2", vec![FileSpec::text("usr/bin/busybox", "#!/bin/sh\n")]), "arm64");
    add_for(STABLE, deb("ethtool", "1:1.0-1", tool_files(harness::provision::tools::ETHTOOL_ARM64)), "arm64");
    let aarch64_libc = ["libc.so.6", "libm.so.6", "ld-linux-aarch64.so.1"]
        .map(|f| FileSpec::text(&format!("usr/lib/aarch64-linux-gnu/{f}"), "an arm64 library"));
    add_for(STABLE, deb("libc6", "2.41-2", aarch64_libc.into()), "arm64");
    add_for(
        BACKPORTS,
        deb("qemu-user", "1:11.1.3+ds-2~bpo13+1", tool_files(harness::provision::tools::X86_USER)),
        "arm64",
    );
    add_for(STABLE, kernel("6.12.2+deb13-cloud-arm64", "6.12.2-1"), "arm64");
    archive.publish(STABLE);
    archive.publish(BACKPORTS);
    archive.publish(FORKY);
    Published { archive, sums }
}

/// Appends an `[arm64]` section to `files`' kernels lock, pinning gone
/// versions of every arm64 part but ethtool itself (its pin stays, its libc
/// moves), and of the x86_64 libc the flows tool loads.
fn add_arm64_pins(files: &LockFiles, p: &Published) {
    let zero = "0".repeat(64);
    let section = format!(
        r#"
# the arm64 guests
[arm64.qemu]
package = "qemu-system-arm"
version = "1:11.1.3+ds-1~bpo13+1"
suite = "backports"

[arm64.firmware]
suite = "stable"
packages = [
  {{ name = "qemu-efi-aarch64", version = "2025.02-8", sha256 = "{zero}" }},
]

[arm64.busybox]
track = "busybox-static"
suite = "stable"
package = {{ name = "busybox-static", version = "1:1.1-1", sha256 = "{zero}" }}

[arm64.ethtool]
suite = "stable"
packages = [
  {{ name = "ethtool", version = "1:1.0-1", sha256 = "{ethtool}" }},
  {{ name = "libc6", version = "2.41-1", sha256 = "{zero}" }},
]

[arm64.x86_user]
suite = "backports"
packages = [
  {{ name = "qemu-user", version = "1:11.1.3+ds-1~bpo13+1", sha256 = "{zero}" }},
]

[arm64.x86_libc]
suite = "stable"
packages = [
  {{ name = "libc6", version = "2.41-1", sha256 = "{zero}" }},
]

[[arm64.kernel]]
id = "6.12"
release = "6.12.1+deb13-cloud-arm64"
track = "linux-image-6.12.*+deb13-cloud-arm64"
packages = [
  {{ name = "linux-image-6.12.1+deb13-cloud-arm64", version = "6.12.1-1", sha256 = "{zero}" }},
]
"#,
        // The arm64 ethtool's checksum (the amd64 one of the same version comes first in `sums`).
        ethtool = p
            .sums
            .iter()
            .rev()
            .find(|((n, v), _)| n == "ethtool" && v == "1:1.0-1")
            .map(|(_, s)| s.as_str())
            .unwrap_or(&zero),
    );
    let mut text = std::fs::read_to_string(&files.kernels).expect("read lock");
    text.push_str(&section);
    std::fs::write(&files.kernels, text).expect("write lock");
}

/// kernels.lock and kernel-sources.lock pinning gone versions of QEMU,
/// busybox, libc6, the 6.12 kernel and its source, and present ones of
/// ethtool and irqbalance.
fn write_locks(dir: &Path, p: &Published) -> LockFiles {
    let zero = "0".repeat(64);
    let kernels = format!(
        r#"# a test lock
[qemu]
package = "qemu-system-x86"
version = "1:11.1.3+ds-1~bpo13+1"
suite = "backports"

[busybox]
track = "busybox-static"
suite = "stable"
package = {{ name = "busybox-static", version = "1:1.1-1", sha256 = "{zero}" }}

# ethtool and its libraries
[ethtool]
suite = "stable"
packages = [
  {{ name = "ethtool", version = "1:1.0-1", sha256 = "{ethtool}" }},
  {{ name = "libc6", version = "2.41-1", sha256 = "{zero}" }},
]

[irqbalance]
suite = "stable"
packages = [
  {{ name = "irqbalance", version = "1.9-1", sha256 = "{irqbalance}" }},
  {{ name = "libc6", version = "2.41-1", sha256 = "{zero}" }},
]

[selftests]
suite = "stable"
packages = [
  {{ name = "python3.13-minimal", version = "3.13.5-1", sha256 = "{python}" }},
  {{ name = "libc6", version = "2.41-1", sha256 = "{zero}" }},
]

[[kernel]]
id = "6.12"
release = "6.12.1+deb13-cloud-amd64"
track = "linux-image-6.12.*+deb13-cloud-amd64"
packages = [
  {{ name = "linux-image-6.12.1+deb13-cloud-amd64", version = "6.12.1-1", sha256 = "{zero}" }},
]
"#,
        ethtool = p.sum("ethtool", "1:1.0-1"),
        irqbalance = p.sum("irqbalance", "1.9-1"),
        python = p.sum("python3.13-minimal", "3.13.5-1"),
    );
    let sources = format!(
        r#"# test sources
[[source]]
package = "linux-source-6.12"
version = "6.12.1-1"
sha256 = "{zero}"
tarball = "usr/src/linux-source-6.12.tar.xz"

[clang]
package = "clang-14"
version = "1:14.0-1"
suite = "stable"
"#
    );
    let files = LockFiles { kernels: dir.join("kernels.lock"), sources: dir.join("kernel-sources.lock") };
    std::fs::write(&files.kernels, kernels).expect("write lock");
    std::fs::write(&files.sources, sources).expect("write lock");
    files
}

fn options(p: &Published, suites: &[&str], files: &LockFiles) -> SetupOptions {
    SetupOptions {
        private_qemu: true,
        archive: Some(apt::Archive { sources: p.archive.sources(suites), origin: "the test archive".into() }),
        lock_files: Some(files.clone()),
        ..SetupOptions::default()
    }
}

fn provision(cache: &Path, opts: &SetupOptions) -> (Result<Provisioned, ProvisionError>, Vec<String>) {
    let mut lines = Vec::new();
    let r = setup(cache, opts, &mut |l| lines.push(l.to_owned()));
    (r, lines)
}

#[test]
fn gone_pins_fall_back_to_their_tracks_and_say_so_and_locked_refuses() {
    if !archive_support::tools_present("gone_pins_fall_back") {
        return;
    }
    let p = publish();
    let locks = tempfile::tempdir().expect("tempdir");
    let files = write_locks(locks.path(), &p);
    let cache = tempfile::tempdir().expect("cache");
    let opts = options(&p, &[STABLE, BACKPORTS], &files);

    // --locked on an empty cache: the first gone pin is an error, nothing falls back.
    let locked = SetupOptions { locked: true, ..opts.clone() };
    let (r, _) = provision(cache.path(), &locked);
    match r {
        Err(ProvisionError::VersionGone { package, version }) => {
            assert_eq!((package.as_str(), version.as_str()), ("qemu-system-x86", "1:11.1.3+ds-1~bpo13+1"));
        }
        other => panic!("--locked must refuse the gone QEMU pin: {other:?}"),
    }

    let (r, lines) = provision(cache.path(), &opts);
    let prov = r.unwrap_or_else(|e| panic!("setup falls back: {e}\n{}", lines.join("\n")));
    let said = |line: &str| assert!(lines.iter().any(|l| l == line), "no line {line:?} in:\n{}", lines.join("\n"));
    said("qemu-system-x86: pinned 1:11.1.3+ds-1~bpo13+1 is gone from backports; using 1:11.1.3+ds-2~bpo13+1");
    said("busybox-static: pinned 1:1.1-1 is gone from stable; using 1:1.1-2");
    said("libc6: pinned 2.41-1 is gone from stable; using 2.41-2");
    said(
        "linux-image-6.12.1+deb13-cloud-amd64: pinned 6.12.1-1 is gone from the archive; using \
         linux-image-6.12.2+deb13-cloud-amd64 6.12.2-1",
    );
    // What was used, against the pins: QEMU 11.1 (not stable's 9.2), the newer kernel.
    assert_eq!(prov.qemu.version, (11, 1, 3));
    let k = prov.kernel("6.12").expect("kernel");
    assert_eq!(k.release, "6.12.2+deb13-cloud-amd64");
    assert!(k.is_fallback());
    let fell: Vec<String> = prov.fallbacks().iter().map(|u| format!("{} {}", u.name, u.version)).collect();
    assert_eq!(
        fell,
        [
            "qemu-system-x86 1:11.1.3+ds-2~bpo13+1",
            "linux-image-6.12.2+deb13-cloud-amd64 6.12.2-1",
            "busybox-static 1:1.1-2",
            "libc6 2.41-2",
            "libc6 2.41-2",
            "libc6 2.41-2",
        ]
    );
    // The tools' shared libc comes from one resolution: ethtool's pin stays, its libc moved with irqbalance's.
    assert!(prov.ethtool.packages.iter().any(|u| u.name == "ethtool" && u.version == "1:1.0-1" && u.locked.is_none()));
    let line = harness::provision::used::summary(&prov.run_packages(k, &["ethtool"]));
    assert!(line.contains("libc6 2.41-2 (lock: libc6 2.41-1)"), "{line}");

    // A second setup reads stamps only: no fallback line, the same versions.
    let (r, again) = provision(cache.path(), &opts);
    assert!(r.is_ok() && again.iter().all(|l| !l.contains("is gone")), "{}", again.join("\n"));

    // --locked on the cache that holds fallbacks: refused, naming one.
    let (r, _) = provision(cache.path(), &locked);
    match r {
        Err(ProvisionError::LockedFallback { what, .. }) => {
            assert!(what.contains("(lock: qemu-system-x86 1:11.1.3+ds-1~bpo13+1)"), "{what}")
        }
        other => panic!("--locked must refuse a cached fallback: {other:?}"),
    }
}

#[test]
fn update_lock_moves_every_section_of_both_lock_files() {
    if !archive_support::tools_present("update_lock_moves_every_section") {
        return;
    }
    let p = publish();
    let locks = tempfile::tempdir().expect("tempdir");
    let files = write_locks(locks.path(), &p);
    let cache = tempfile::tempdir().expect("cache");
    let opts = SetupOptions { update_lock: true, ..options(&p, &[STABLE, BACKPORTS], &files) };
    let (r, lines) = provision(cache.path(), &opts);
    r.unwrap_or_else(|e| panic!("update-lock: {e}\n{}", lines.join("\n")));
    for change in [
        "lock: qemu-system-x86: 1:11.1.3+ds-1~bpo13+1 -> 1:11.1.3+ds-2~bpo13+1 (backports)",
        "lock: busybox-static: 1:1.1-1 -> 1:1.1-2",
        "lock: ethtool: libc6: 2.41-1 -> 2.41-2",
        "lock: irqbalance: libc6: 2.41-1 -> 2.41-2",
        "lock: selftests: libc6: 2.41-1 -> 2.41-2",
        "lock: kernel 6.12: 6.12.1+deb13-cloud-amd64 -> 6.12.2+deb13-cloud-amd64 (6.12.2-1)",
        "lock: linux-source-6.12: 6.12.1-1 -> 6.12.2-1",
        "lock: clang-14: 1:14.0-1 -> 1:14.0-2",
    ] {
        assert!(lines.iter().any(|l| l == change), "no {change:?} in:\n{}", lines.join("\n"));
    }
    // The rewritten files pin what the archive has, with its checksums; comments stay.
    let lock = files.read_kernels().expect("rewritten lock parses");
    assert_eq!(lock.qemu.version, "1:11.1.3+ds-2~bpo13+1");
    assert_eq!(lock.busybox.package.sha256, p.sum("busybox-static", "1:1.1-2"));
    assert_eq!(lock.kernels[0].release, "6.12.2+deb13-cloud-amd64");
    assert_eq!(lock.kernels[0].packages[0].sha256, p.sum("linux-image-6.12.2+deb13-cloud-amd64", "6.12.2-1"));
    assert!(lock.ethtool.packages.iter().chain(&lock.irqbalance.packages).all(|x| x.sha256 != "0".repeat(64)));
    let kernels_text = std::fs::read_to_string(&files.kernels).expect("read");
    assert!(kernels_text.starts_with("# a test lock") && kernels_text.contains("# ethtool and its libraries"));
    let sources_text = std::fs::read_to_string(&files.sources).expect("read");
    assert!(
        sources_text.contains("version = \"6.12.2-1\"")
            && sources_text.contains(&p.sum("linux-source-6.12", "6.12.2-1"))
    );
    // Provisioned from the new pins: nothing differs from the lock now.
    let prov =
        harness::provision::setup(cache.path(), &SetupOptions { update_lock: false, ..opts.clone() }, &mut |_| {})
            .expect("setup");
    assert!(prov.fallbacks().is_empty(), "{:?}", prov.fallbacks());
    // A second update finds nothing to move and says so, never "already the newest" of a gone pin.
    let (r, lines) = provision(cache.path(), &opts);
    assert!(r.is_ok());
    assert!(lines.iter().any(|l| l == "lock: every pin is the newest of its track and in the archive"), "{lines:?}");
}

#[test]
fn update_lock_moves_the_arm64_pins_and_setup_arch_arm64_provisions_from_them() {
    if !archive_support::tools_present("update_lock_moves_the_arm64_pins") {
        return;
    }
    let p = publish();
    let locks = tempfile::tempdir().expect("tempdir");
    let files = write_locks(locks.path(), &p);
    add_arm64_pins(&files, &p);
    let cache = tempfile::tempdir().expect("cache");
    let opts = SetupOptions { update_lock: true, ..options(&p, &[STABLE, BACKPORTS], &files) };
    let mut lines = Vec::new();
    let r = harness::provision::arm64::setup(cache.path(), &opts, &mut |l| lines.push(l.to_owned()));
    r.unwrap_or_else(|e| panic!("update-lock --arch arm64: {e}\n{}", lines.join("\n")));
    for change in [
        // Both lock files move whatever the architecture provisioned: the x86 pins too.
        "lock: kernel 6.12: 6.12.1+deb13-cloud-amd64 -> 6.12.2+deb13-cloud-amd64 (6.12.2-1)",
        "lock: qemu-system-arm: 1:11.1.3+ds-1~bpo13+1 -> 1:11.1.3+ds-2~bpo13+1 (backports)",
        "lock: arm64.firmware: qemu-efi-aarch64: 2025.02-8 -> 2025.02-9",
        "lock: arm64.x86_libc: libc6: 2.41-1 -> 2.41-2",
        "lock: arm64.busybox: busybox-static: 1:1.1-1 -> 1:1.1-2",
        "lock: arm64.ethtool: libc6: 2.41-1 -> 2.41-2",
        "lock: arm64.x86_user: qemu-user: 1:11.1.3+ds-1~bpo13+1 -> 1:11.1.3+ds-2~bpo13+1",
        "lock: arm64.kernel 6.12: 6.12.1+deb13-cloud-arm64 -> 6.12.2+deb13-cloud-arm64 (6.12.2-1)",
    ] {
        assert!(lines.iter().any(|l| l == change), "no {change:?} in:\n{}", lines.join("\n"));
    }
    // The rewritten [arm64] pins what the archive has, with its checksums; comments stay.
    let lock = files.read_kernels().expect("rewritten lock parses");
    let arm = lock.arm64.as_ref().expect("[arm64]");
    assert_eq!(arm.qemu.version, "1:11.1.3+ds-2~bpo13+1");
    assert_eq!(arm.kernels[0].release, "6.12.2+deb13-cloud-arm64");
    assert_eq!(arm.kernels[0].packages[0].sha256, p.sum("linux-image-6.12.2+deb13-cloud-arm64", "6.12.2-1"));
    assert_eq!(arm.firmware.packages[0].sha256, p.sum("qemu-efi-aarch64", "2025.02-9"));
    assert!(std::fs::read_to_string(&files.kernels).expect("read").contains("# the arm64 guests"));
    // Provisioned from the new pins: nothing differs from the lock now.
    let again = SetupOptions { update_lock: false, ..opts.clone() };
    let prov = harness::provision::arm64::setup(cache.path(), &again, &mut |_| {}).expect("setup --arch arm64");
    assert!(prov.fallbacks().is_empty(), "{:?}", prov.fallbacks());
    assert_eq!(prov.kernel("6.12").expect("arm64 kernel").release, "6.12.2+deb13-cloud-arm64");
    // A second update finds nothing to move.
    let mut lines = Vec::new();
    let r = harness::provision::arm64::setup(cache.path(), &opts, &mut |l| lines.push(l.to_owned()));
    assert!(r.is_ok(), "{r:?}");
    assert!(lines.iter().any(|l| l == "lock: every pin is the newest of its track and in the archive"), "{lines:?}");
}

#[test]
fn an_unsigned_tampered_or_foreign_signed_index_is_refused() {
    if !archive_support::tools_present("an_unsigned_tampered_or_foreign_signed_index") {
        return;
    }
    let refused = |p: &Published, what: &str, expect: &[&str]| {
        let locks = tempfile::tempdir().expect("tempdir");
        let files = write_locks(locks.path(), p);
        let cache = tempfile::tempdir().expect("cache");
        let (r, _) = provision(cache.path(), &options(p, &[STABLE, BACKPORTS], &files));
        let e = r.err().unwrap_or_else(|| panic!("{what}: setup must fail")).to_string();
        assert!(e.contains("apt-get update"), "{what}: {e}");
        assert!(expect.iter().any(|x| e.contains(x)), "{what}: none of {expect:?} in {e}");
        assert!(!cache.path().join("kernels").exists(), "{what}: nothing provisioned from a refused index");
    };
    let p = publish();
    p.archive.unsign(STABLE);
    refused(&p, "unsigned", &["is not signed", "NO_PUBKEY", "not signed"]);

    let p = publish();
    p.archive.tamper(STABLE);
    refused(&p, "tampered", &["Hash Sum mismatch", "File has unexpected size", "Hashes of expected file"]);

    // Signed by one key, trusted with another.
    let p = publish();
    let other = Archive::new();
    std::fs::copy(&other.keyring, &p.archive.keyring).expect("swap the trusted key");
    refused(&p, "foreign-signed", &["NO_PUBKEY", "not signed", "signatures couldn't be verified"]);
}

/// A sources list of the archive's stable suite, named by
/// [`apt::SOURCES_ENV`] in this test's own process (each test is one), as a
/// user's shell would name it; the file lives as long as the value.
fn stable_in_env(p: &Published) -> tempfile::NamedTempFile {
    let list = tempfile::NamedTempFile::new().expect("sources list");
    std::fs::write(list.path(), p.archive.sources(&[STABLE])).expect("write");
    std::env::set_var(apt::SOURCES_ENV, list.path());
    list
}

#[test]
fn a_gone_kernel_source_builds_the_newest_of_its_package_and_locked_refuses() {
    use harness::kbuild::source::{resolve, SourcePin, SourceSpec};
    if !archive_support::tools_present("a_gone_kernel_source") {
        return;
    }
    let p = publish();
    let list = stable_in_env(&p);
    let cache = tempfile::tempdir().expect("cache");
    let pin = SourcePin {
        package: "linux-source-6.12".into(),
        version: "6.12.1-1".into(),
        sha256: "0".repeat(64),
        tarball: "usr/src/linux-source-6.12.tar.xz".into(),
    };
    let spec = SourceSpec::Debian(pin.clone());
    let mut lines = Vec::new();
    let got = resolve(&spec, cache.path(), &mut |l| lines.push(l.to_owned())).expect("resolves");
    let SourceSpec::Debian(used) = &got else { panic!("a Debian source stays one: {got:?}") };
    assert_eq!((used.version.as_str(), used.sha256.clone()), ("6.12.2-1", p.sum("linux-source-6.12", "6.12.2-1")));
    assert!(
        lines.iter().any(|l| l == "linux-source-6.12: pinned 6.12.1-1 is gone from the archive; using 6.12.2-1"),
        "{lines:?}"
    );
    assert_ne!(spec.identity(), got.identity(), "the build's key follows the source it builds");
    // Remembered: the next build resolves without apt, to the same source.
    std::env::set_var(apt::SOURCES_ENV, "/nonexistent/sources.list");
    assert_eq!(resolve(&spec, cache.path(), &mut |_| {}).expect("remembered"), got);
    // --locked refuses it, remembered or not.
    std::env::set_var(apt::SOURCES_ENV, list.path());
    harness::provision::fallback::set_locked();
    let e = resolve(&spec, cache.path(), &mut |_| {}).expect_err("locked");
    assert!(
        matches!(&e, harness::kbuild::KbuildError::Provision(p)
            if matches!(&**p, ProvisionError::VersionGone { package, version }
                if package == "linux-source-6.12" && version == "6.12.1-1")),
        "{e}"
    );
}

/// The test lock with forky's ethtool in `[selftests]`, pinned at a version
/// forky no longer has.
fn with_forky_ethtool(files: &LockFiles) {
    let text = std::fs::read_to_string(&files.kernels).expect("read");
    let zero = "0".repeat(64);
    let line = format!("  {{ name = \"ethtool\", version = \"1:2.0-1\", sha256 = \"{zero}\", suite = \"forky\" }},\n");
    let at = text.find("  { name = \"python3.13-minimal\"").expect("the [selftests] list");
    std::fs::write(&files.kernels, format!("{}{line}{}", &text[..at], &text[at..])).expect("write");
}

#[test]
fn a_package_of_an_opt_in_suite_falls_back_there_only_when_the_list_meets_its_depends() {
    if !archive_support::tools_present("a_package_of_an_opt_in_suite") {
        return;
    }
    let p = publish();
    let locks = tempfile::tempdir().expect("tempdir");
    let files = write_locks(locks.path(), &p);
    with_forky_ethtool(&files);
    let cache = tempfile::tempdir().expect("cache");
    let opts = options(&p, &[STABLE, BACKPORTS, FORKY], &files);
    let (r, lines) = provision(cache.path(), &opts);
    let prov = r.unwrap_or_else(|e| panic!("setup falls back: {e}\n{}", lines.join("\n")));
    let said = |line: &str| assert!(lines.iter().any(|l| l == line), "no line {line:?} in:\n{}", lines.join("\n"));
    // Its own suite, not the section's (stable has ethtool 1:1.0-1 only).
    said("ethtool: pinned 1:2.0-1 is gone from forky; using 1:2.0-2");
    let tools = prov.selftest_tools.as_ref().expect("selftest tools");
    assert!(tools.packages.iter().any(|u| u.name == "ethtool" && u.version == "1:2.0-2"), "{:?}", tools.packages);
    // --update-lock keeps the package's suite in the rewritten list.
    let (r, lines) = provision(cache.path(), &SetupOptions { update_lock: true, ..opts.clone() });
    r.unwrap_or_else(|e| panic!("update-lock: {e}\n{}", lines.join("\n")));
    let lock = files.read_kernels().expect("rewritten lock parses");
    let ethtool = lock.selftests.packages.iter().find(|x| x.name == "ethtool").expect("ethtool");
    assert_eq!((ethtool.version.as_str(), ethtool.suite.as_deref()), ("1:2.0-2", Some(FORKY)));

    // forky moves on to an ethtool that needs a newer libc6 than the list's.
    let p = publish();
    let mut newer = deb("ethtool", "1:2.0-3", tool_files(harness::provision::tools::ETHTOOL));
    newer.depends = "libc6 (>= 2.42)".into();
    p.archive.add(FORKY, &newer);
    p.archive.remove(FORKY, "ethtool", "1:2.0-2");
    p.archive.publish(FORKY);
    let files = write_locks(locks.path(), &p);
    with_forky_ethtool(&files);
    let cache = tempfile::tempdir().expect("cache");
    let (r, lines) = provision(cache.path(), &options(&p, &[STABLE, BACKPORTS, FORKY], &files));
    let e = r.err().unwrap_or_else(|| panic!("a libc6 the list lacks is refused:\n{}", lines.join("\n"))).to_string();
    assert!(e.contains("ethtool, the newest of its suite, depends on libc6 (>= 2.42), and the list has 2.41-2"), "{e}");
}

#[test]
fn a_gone_clang_pin_falls_back_to_the_newest_of_its_suite_and_locked_refuses() {
    use harness::kbuild::source::ClangPin;
    use harness::selftests::clang::clang_for;
    if !archive_support::tools_present("a_gone_clang_pin") {
        return;
    }
    let p = publish();
    let list = stable_in_env(&p);
    let cache = tempfile::tempdir().expect("cache");
    let pin = ClangPin { package: "clang-14".into(), version: "1:14.0-1".into(), suite: STABLE.into() };
    let mut lines = Vec::new();
    let bin = clang_for(&pin, cache.path(), &mut |l| lines.push(l.to_owned()))
        .unwrap_or_else(|e| panic!("falls back: {e}\n{}", lines.join("\n")));
    assert!(
        lines.iter().any(|l| l == "selftests: clang-14: pinned 1:14.0-1 is gone from stable; using 1:14.0-2"),
        "{lines:?}"
    );
    let wrapper = std::fs::read_to_string(&bin).expect("the wrapper");
    assert!(wrapper.contains("usr/lib/llvm-14/bin/clang"), "{wrapper}");
    // Remembered: the next call needs no apt.
    std::env::set_var(apt::SOURCES_ENV, "/nonexistent/sources.list");
    assert_eq!(clang_for(&pin, cache.path(), &mut |_| {}).expect("cached"), bin);
    // --locked refuses the fallback, cached or not.
    std::env::set_var(apt::SOURCES_ENV, list.path());
    harness::provision::fallback::set_locked();
    let e = clang_for(&pin, cache.path(), &mut |_| {}).expect_err("locked");
    assert!(e.contains("clang-14 1:14.0-1") && e.contains("--locked"), "{e}");
}
