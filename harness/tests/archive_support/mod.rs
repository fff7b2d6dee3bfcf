//! A real Debian archive on disk for the provisioning tests: `.deb`s built by
//! `dpkg-deb`, indexed by `dpkg-scanpackages`, a `Release` with the indexes'
//! SHA-256 sums, signed (`InRelease`, `Release.gpg`) by a throwaway GnuPG key
//! that the test's sources list trusts through `signed-by`. Real apt reads it;
//! nothing is mocked.

#![allow(dead_code)]

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The tools the archive needs, with the package that brings each.
pub const TOOLS: &[(&str, &str)] =
    &[("gpg", "gnupg"), ("dpkg-deb", "dpkg"), ("dpkg-scanpackages", "dpkg-dev"), ("apt-get", "apt"), ("gcc", "gcc")];

/// Whether every tool of [`TOOLS`] is on PATH; when one is missing the test
/// says SKIP and passes, except under `CI=true`, where it fails.
pub fn tools_present(test: &str) -> bool {
    let missing: Vec<String> = TOOLS
        .iter()
        .filter(|(tool, _)| {
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .map_or(true, |o| !o.status.success())
        })
        .map(|(tool, pkg)| format!("{tool} (Debian package {pkg})"))
        .collect();
    if missing.is_empty() {
        return true;
    }
    let why = format!("{test}: SKIP: missing {}", missing.join(", "));
    assert!(std::env::var("CI").map_or(true, |v| v != "true"), "{why} (CI=true: a missing tool fails)");
    eprintln!("{why}");
    false
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One file of a package: path inside it, contents, mode.
pub struct FileSpec {
    /// Path relative to `/` (`usr/bin/busybox`).
    pub path: String,
    /// Bytes.
    pub contents: Vec<u8>,
    /// Permission bits.
    pub mode: u32,
}

impl FileSpec {
    /// A file with the given text.
    pub fn text(path: &str, text: &str) -> FileSpec {
        FileSpec { path: path.to_owned(), contents: text.as_bytes().to_vec(), mode: 0o644 }
    }
    /// A file copied from the host.
    pub fn copy(path: &str, from: &Path, mode: u32) -> FileSpec {
        FileSpec { path: path.to_owned(), contents: std::fs::read(from).expect("read host file"), mode }
    }
}

/// A package to publish.
pub struct DebSpec {
    /// Package name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Its files.
    pub files: Vec<FileSpec>,
    /// `Depends:` (empty: none).
    pub depends: String,
}

/// A signed archive in a temporary folder, with one or more suites.
pub struct Archive {
    /// The archive's root (`file:` URI).
    pub root: tempfile::TempDir,
    gnupg: PathBuf,
    /// The public key, as apt's `signed-by` wants it.
    pub keyring: PathBuf,
}

impl Archive {
    /// An empty archive and a fresh throwaway signing key.
    pub fn new() -> Archive {
        let root = tempfile::tempdir().expect("tempdir");
        let gnupg = root.path().join("gnupg");
        std::fs::create_dir_all(&gnupg).expect("gnupg dir");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&gnupg, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        }
        run(Command::new("gpg").env("GNUPGHOME", &gnupg).args([
            "--batch",
            "--pinentry-mode",
            "loopback",
            "--passphrase",
            "",
            "--quick-gen-key",
            "manarig test archive <archive@manarig.invalid>",
            "ed25519",
            "sign",
            "never",
        ]));
        let keyring = root.path().join("archive-key.gpg");
        let key = std::process::Command::new("gpg")
            .env("GNUPGHOME", &gnupg)
            .args(["--batch", "--export"])
            .output()
            .expect("gpg --export");
        std::fs::write(&keyring, key.stdout).expect("write keyring");
        Archive { root, gnupg, keyring }
    }

    fn pool(&self, suite: &str) -> PathBuf {
        self.root.path().join("pool").join(suite)
    }

    /// Build `deb` with `dpkg-deb` into the suite's pool; its SHA-256.
    pub fn add(&self, suite: &str, deb: &DebSpec) -> String {
        self.add_for(suite, deb, "amd64")
    }

    /// [`Archive::add`] for Debian architecture `arch` (`amd64`, `arm64`, `all`:
    /// indexed for both).
    #[allow(dead_code)] // not every test binary that shares this module publishes arm64 packages
    pub fn add_for(&self, suite: &str, deb: &DebSpec, arch: &str) -> String {
        let work = tempfile::tempdir().expect("tempdir");
        let tree = work.path().join("pkg");
        for f in &deb.files {
            let p = tree.join(&f.path);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(&p, &f.contents).expect("write");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(f.mode)).expect("chmod");
        }
        std::fs::create_dir_all(tree.join("DEBIAN")).expect("DEBIAN");
        let depends = if deb.depends.is_empty() { String::new() } else { format!("Depends: {}\n", deb.depends) };
        std::fs::write(
            tree.join("DEBIAN/control"),
            format!(
                "Package: {}\nVersion: {}\nArchitecture: {arch}\nMaintainer: manarig tests <t@manarig.invalid>\n\
                 {depends}Description: a package of the provisioning tests\n",
                deb.name, deb.version
            ),
        )
        .expect("control");
        let pool = self.pool(suite);
        std::fs::create_dir_all(&pool).expect("pool");
        let file = pool.join(format!("{}_{}_{arch}.deb", deb.name, deb.version.replace(':', "%3a")));
        run(Command::new("dpkg-deb").args(["--root-owner-group", "-Zgzip", "--build"]).arg(&tree).arg(&file));
        sha256(&file)
    }

    /// Remove a published package's file from the pool (run [`Archive::publish`] after).
    pub fn remove(&self, suite: &str, name: &str, version: &str) {
        let file = self.pool(suite).join(format!("{name}_{}_amd64.deb", version.replace(':', "%3a")));
        std::fs::remove_file(&file).expect("remove deb");
    }

    /// Index the suite's pool (an index per architecture: its own packages
    /// and those of `all`) and sign its `Release`.
    pub fn publish(&self, suite: &str) {
        let dists = self.root.path().join("dists").join(suite);
        let rel_pool = format!("pool/{suite}");
        let mut release = format!(
            "Origin: manarig-test\nLabel: manarig-test\nSuite: {suite}\nCodename: {suite}\n\
             Date: Thu, 01 Jan 2026 00:00:00 UTC\nArchitectures: amd64 arm64\nComponents: main\nSHA256:\n"
        );
        for arch in ["amd64", "arm64"] {
            let bin = dists.join(format!("main/binary-{arch}"));
            std::fs::create_dir_all(&bin).expect("dists");
            let packages = run(Command::new("dpkg-scanpackages")
                .args(["--multiversion", "--arch", arch, &rel_pool, "/dev/null"])
                .current_dir(self.root.path()));
            std::fs::write(bin.join("Packages"), &packages).expect("Packages");
            release.push_str(&format!(
                " {} {} main/binary-{arch}/Packages\n",
                hex(&Sha256::digest(packages.as_bytes())),
                packages.len()
            ));
        }
        std::fs::write(dists.join("Release"), &release).expect("Release");
        for f in ["InRelease", "Release.gpg"] {
            let _ = std::fs::remove_file(dists.join(f));
        }
        run(Command::new("gpg")
            .env("GNUPGHOME", &self.gnupg)
            .args(["--batch", "--yes", "--clearsign", "-o"])
            .arg(dists.join("InRelease"))
            .arg(dists.join("Release")));
        run(Command::new("gpg")
            .env("GNUPGHOME", &self.gnupg)
            .args(["--batch", "--yes", "-abs", "-o"])
            .arg(dists.join("Release.gpg"))
            .arg(dists.join("Release")));
    }

    /// The suite's `InRelease` and `Release.gpg` removed: an unsigned archive.
    pub fn unsign(&self, suite: &str) {
        let dists = self.root.path().join("dists").join(suite);
        for f in ["InRelease", "Release.gpg"] {
            std::fs::remove_file(dists.join(f)).expect("remove signature");
        }
    }

    /// The suite's `Packages` changed after signing: its hash no longer matches `Release`.
    pub fn tamper(&self, suite: &str) {
        let p = self.root.path().join("dists").join(suite).join("main/binary-amd64/Packages");
        let mut text = std::fs::read_to_string(&p).expect("Packages");
        text.push_str("\nPackage: intruder\nVersion: 1\nArchitecture: amd64\nFilename: pool/x.deb\nSize: 1\n");
        std::fs::write(&p, text).expect("write Packages");
    }

    /// A sources list for `suites`, trusting this archive's key (`copy:`: apt copies
    /// the `.deb` files into its cache, as it downloads them from a mirror).
    pub fn sources(&self, suites: &[&str]) -> String {
        suites
            .iter()
            .map(|s| {
                format!("deb [signed-by={}] copy:{} {s} main\n", self.keyring.display(), self.root.path().display())
            })
            .collect()
    }
}

/// Lower-case hex SHA-256 of a file.
pub fn sha256(path: &Path) -> String {
    hex(&Sha256::digest(std::fs::read(path).expect("read")))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A tiny ELF object with a `.modinfo` section, as `collect_modules` reads a
/// `.ko` (built by the host's gcc); `defines` names functions it defines.
pub fn fake_module(defines: &[&str]) -> Vec<u8> {
    let work = tempfile::tempdir().expect("tempdir");
    let src = work.path().join("m.c");
    let mut text = String::from("const char modinfo[] __attribute__((section(\".modinfo\"))) = \"depends=\";\n");
    for f in defines {
        text.push_str(&format!("int {f}(void) {{ return 0; }}\n"));
    }
    std::fs::write(&src, text).expect("write");
    let obj = work.path().join("m.ko");
    run(Command::new("gcc").arg("-c").arg(&src).arg("-o").arg(&obj));
    std::fs::read(obj).expect("read module")
}

/// A program that answers QEMU's probe (`--version`, `-device help` with
/// `vfio-user-pci`) as `version_line` says, built by the host's gcc; it runs
/// through the package's own copy of the host's loader and libc, as a private
/// QEMU does.
pub fn fake_qemu(version_line: &str) -> Vec<u8> {
    let work = tempfile::tempdir().expect("tempdir");
    let src = work.path().join("q.c");
    std::fs::write(
        &src,
        format!(
            "#include <stdio.h>\n#include <string.h>\nint main(int c, char **v) {{\n\
             for (int i = 1; i < c; i++) if (!strcmp(v[i], \"--version\")) {{ puts(\"{version_line}\"); return 0; }}\n\
             puts(\"name \\\"vfio-user-pci\\\", bus PCI\"); return 0; }}\n"
        ),
    )
    .expect("write");
    let bin = work.path().join("q");
    run(Command::new("gcc").arg(&src).arg("-o").arg(&bin));
    std::fs::read(bin).expect("read program")
}
