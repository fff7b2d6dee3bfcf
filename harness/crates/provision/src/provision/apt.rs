//! A private apt root under the cache: its own sources list, keyring reference
//! and an empty dpkg status, so `apt-get` can resolve and download Debian
//! packages without reading or changing the host's package state.
//!
//! Which archive it reads is an [`Archive`]: Debian's (deb.debian.org, signed
//! by the host's `debian-archive-keyring`), or a sources list of the user's
//! (`MANARIG_APT_SOURCES`: a mirror, or an archive on disk), whose `signed-by`
//! keys apt checks the same way. apt refuses an index whose signature or hashes
//! do not verify, and checks every downloaded `.deb` against the signed index.

use super::ProvisionError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian suites the rig takes packages from (kernels from bookworm-security,
/// trixie and trixie-backports; QEMU from trixie-backports; busybox from trixie;
/// the selftests' ethtool from forky, an [`OPT_IN_SUITES`] suite).
const DEBIAN_SOURCES: &str = "\
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie-backports main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian forky main
";

/// Suites that serve only the pins naming them (a [`super::lock::PackagePin`]'s
/// own `suite`): Debian testing (forky), whose ethtool (7.2) prints JSON for
/// `ethtool -l` (the selftests' napi_threaded.py needs it; trixie's 6.14.2
/// refuses it). The tracks that search every suite (QEMU, the kernel
/// sources) leave them out, and apt prefers any other suite for a
/// dependency (the root's preferences give them priority 100), so nothing
/// else ever comes from them.
pub const OPT_IN_SUITES: &[&str] = &["forky"];

/// apt preferences of the private root: the [`OPT_IN_SUITES`] below the default
/// priority 500, so that a closure (`-t trixie-backports`) never takes a
/// dependency from them; a package asked for by version still downloads.
const OPT_IN_PREFERENCES: &str = "\
Explanation: manarig (harness/crates/provision/src/provision/apt.rs): forky serves only the pins naming it
Package: *
Pin: release n=forky
Pin-Priority: 100
";

/// Whether `suite` serves only the pins that name it ([`OPT_IN_SUITES`]).
pub fn opt_in(suite: &str) -> bool {
    OPT_IN_SUITES.contains(&suite)
}

/// Keyring the sources list refers to (package `debian-archive-keyring`).
const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// Environment variable naming a sources list (one-line `deb [signed-by=KEY] URI
/// SUITE COMPONENT` entries) to use instead of Debian's archive: a mirror, or an
/// archive on disk.
pub const SOURCES_ENV: &str = "MANARIG_APT_SOURCES";

/// The archive a private apt root reads: its sources list text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Archive {
    /// The sources list (each entry names its `signed-by` keyring).
    pub sources: String,
    /// Where it came from, for messages (`Debian (deb.debian.org)` or a file).
    pub origin: String,
}

impl Archive {
    /// Debian's archive: trixie, trixie-backports, bookworm,
    /// bookworm-security and forky (opt-in: [`OPT_IN_SUITES`]), signed by the
    /// host's `debian-archive-keyring`.
    pub fn debian() -> Archive {
        Archive { sources: DEBIAN_SOURCES.to_owned(), origin: "Debian (deb.debian.org)".to_owned() }
    }

    /// The archive named by [`SOURCES_ENV`] when it is set, else [`Archive::debian`].
    ///
    /// # Errors
    /// [`ProvisionError::Io`] when the named file cannot be read.
    pub fn from_env() -> Result<Archive, ProvisionError> {
        match std::env::var_os(SOURCES_ENV).filter(|v| !v.is_empty()) {
            Some(path) => {
                let path = PathBuf::from(path);
                let sources = std::fs::read_to_string(&path).map_err(|e| ProvisionError::io(&path, e))?;
                Ok(Archive { sources, origin: format!("{SOURCES_ENV}={}", path.display()) })
            }
            None => Ok(Archive::debian()),
        }
    }

    /// The suites its sources list names, in order (`trixie`, `trixie-backports`, …).
    pub fn suites(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for line in self.sources.lines().map(str::trim).filter(|l| l.starts_with("deb ")) {
            // deb [options] URI SUITE COMPONENT...
            let rest = line.trim_start_matches("deb ").trim_start();
            let rest = match rest.strip_prefix('[') {
                Some(r) => r.split_once(']').map_or("", |(_, after)| after),
                None => rest,
            };
            if let Some(suite) = rest.split_whitespace().nth(1) {
                if !out.iter().any(|s| s == suite) {
                    out.push(suite.to_owned());
                }
            }
        }
        out
    }
}

/// A private apt root (`<cache>/apt`; `<cache>/apt-arm64` for arm64 guests' packages).
#[derive(Debug, Clone)]
pub struct AptRoot {
    dir: PathBuf,
    archive: Archive,
    /// Debian's architecture it reads (`amd64`, `arm64`).
    arch: String,
}

/// One version of a package in the indexes and the suite that offers it
/// (`apt-cache madison`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offered {
    /// Package name.
    pub name: String,
    /// Version.
    pub version: String,
    /// The suite (`trixie-backports`), from the index's `SUITE/COMPONENT` path.
    pub suite: String,
}

/// One package as the archive index describes it (`apt-cache show`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// Package name.
    pub name: String,
    /// Version.
    pub version: String,
    /// SHA-256 of the `.deb` as published.
    pub sha256: String,
    /// Raw `Depends:` field ("" if none).
    pub depends: String,
}

impl AptRoot {
    /// Create (or reuse) the private apt root in `dir` for `archive`: writes
    /// `apt.conf`, the sources list and an empty status file. Does not touch the
    /// network. A root whose sources list changed drops its old indexes.
    ///
    /// # Errors
    /// [`ProvisionError::Io`] on filesystem errors; [`ProvisionError::Host`] when
    /// the Debian archive keyring is missing on the host (for Debian's archive).
    pub fn prepare(dir: &Path, archive: &Archive) -> Result<AptRoot, ProvisionError> {
        Self::prepare_for(dir, archive, "amd64")
    }

    /// As [`AptRoot::prepare`], for the packages of Debian architecture `arch`
    /// (`arm64`: an arm64 guest's kernels and tools), in a root of its own so
    /// that the amd64 root's indexes stay as they are.
    ///
    /// # Errors
    /// As [`AptRoot::prepare`].
    pub fn prepare_for(dir: &Path, archive: &Archive, arch: &str) -> Result<AptRoot, ProvisionError> {
        if archive.sources == DEBIAN_SOURCES && !Path::new(KEYRING).exists() {
            return Err(ProvisionError::Host(format!(
                "{KEYRING} is missing: install the host package debian-archive-keyring"
            )));
        }
        for sub in ["etc/sources.list.d", "etc/preferences.d", "lists/partial", "archives/partial"] {
            let p = dir.join(sub);
            std::fs::create_dir_all(&p).map_err(|e| ProvisionError::io(&p, e))?;
        }
        let d = dir.display();
        let conf = format!(
            "Dir::State \"{d}\";\n\
             Dir::State::Lists \"{d}/lists\";\n\
             Dir::State::status \"{d}/status\";\n\
             Dir::Cache \"{d}\";\n\
             Dir::Cache::archives \"{d}/archives\";\n\
             Dir::Etc::SourceList \"{d}/etc/sources.list\";\n\
             Dir::Etc::SourceParts \"{d}/etc/sources.list.d\";\n\
             Dir::Etc::Preferences \"{d}/etc/preferences\";\n\
             Dir::Etc::PreferencesParts \"{d}/etc/preferences.d\";\n\
             APT::Architecture \"{arch}\";\n\
             APT::Architectures {{ \"{arch}\"; }};\n\
             APT::Get::Download-Only \"true\";\n\
             APT::Install-Recommends \"false\";\n\
             Debug::NoLocking \"true\";\n"
        );
        write_if_changed(&dir.join("apt.conf"), &conf)?;
        if write_if_changed(&dir.join("etc/sources.list"), &archive.sources)? {
            // Indexes of another archive must not answer for this one.
            let lists = dir.join("lists");
            for entry in std::fs::read_dir(&lists).map_err(|e| ProvisionError::io(&lists, e))?.flatten() {
                if entry.path().is_file() {
                    std::fs::remove_file(entry.path()).map_err(|e| ProvisionError::io(&entry.path(), e))?;
                }
            }
        }
        write_if_changed(&dir.join("etc/preferences.d/manarig-opt-in.pref"), OPT_IN_PREFERENCES)?;
        let status = dir.join("status");
        if !status.exists() {
            std::fs::write(&status, "").map_err(|e| ProvisionError::io(&status, e))?;
        }
        Ok(AptRoot { dir: dir.to_path_buf(), archive: archive.clone(), arch: arch.to_owned() })
    }

    /// Debian's architecture this root reads (`amd64`, `arm64`).
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// The archive this root reads.
    pub fn archive(&self) -> &Archive {
        &self.archive
    }

    /// An `apt-get`/`apt-cache` command using this root's configuration.
    fn tool(&self, tool: &str) -> Command {
        let mut c = Command::new(tool);
        c.env("APT_CONFIG", self.dir.join("apt.conf")).env("LC_ALL", "C").env("DEBIAN_FRONTEND", "noninteractive");
        c
    }

    /// `apt-get update` unless the indexes are already there (`force` refreshes).
    ///
    /// # Errors
    /// [`ProvisionError::Command`] with apt's output when the update fails.
    pub fn update(&self, force: bool) -> Result<(), ProvisionError> {
        let lists = self.dir.join("lists");
        let have = std::fs::read_dir(&lists)
            .map(|rd| rd.flatten().any(|e| e.file_name().to_string_lossy().ends_with("_Packages")))
            .unwrap_or(false);
        if have && !force {
            return Ok(());
        }
        run(self.tool("apt-get").args(["-q", "update"]), "apt-get update")?;
        Ok(())
    }

    /// `apt-get download name=version` into `dest`; returns the `.deb` path.
    ///
    /// # Errors
    /// [`ProvisionError::VersionGone`] when the archive no longer has that
    /// version; [`ProvisionError::Command`] for other apt failures.
    pub fn download(&self, name: &str, version: &str, dest: &Path) -> Result<PathBuf, ProvisionError> {
        std::fs::create_dir_all(dest).map_err(|e| ProvisionError::io(dest, e))?;
        let spec = format!("{name}={version}");
        let out = self
            .tool("apt-get")
            .args(["-q", "download", &spec])
            .current_dir(dest)
            .output()
            .map_err(|e| ProvisionError::spawn("apt-get download", e))?;
        if !out.status.success() {
            return Err(download_failure(format!("apt-get download {spec}"), name, version, &out.stderr));
        }
        find_deb(dest, name, version, &self.arch)
    }

    /// `apt-get install --download-only -t suite name=version` with an empty dpkg
    /// status: downloads the whole dependency closure into `<root>/archives`
    /// (cleared first) and returns the `.deb` files, sorted by file name.
    /// `-t suite` lets dependencies come from a NotAutomatic suite (backports).
    ///
    /// # Errors
    /// [`ProvisionError::VersionGone`] / [`ProvisionError::Command`] as for
    /// [`AptRoot::download`].
    pub fn download_closure(&self, name: &str, version: &str, suite: &str) -> Result<Vec<PathBuf>, ProvisionError> {
        let archives = self.dir.join("archives");
        for deb in list_debs(&archives)? {
            std::fs::remove_file(&deb).map_err(|e| ProvisionError::io(&deb, e))?;
        }
        let spec = format!("{name}={version}");
        let out = self
            .tool("apt-get")
            .args(["-q", "-y", "-t", suite, "install", "--download-only", "--no-install-recommends", &spec])
            .output()
            .map_err(|e| ProvisionError::spawn("apt-get install --download-only", e))?;
        if !out.status.success() {
            let what = format!("apt-get install --download-only {spec}");
            return Err(download_failure(what, name, version, &out.stderr));
        }
        list_debs(&archives)
    }

    /// Every version of `name` the indexes offer, with its suite, newest first
    /// as apt orders them (`apt-cache madison`); empty for an unknown name.
    ///
    /// # Errors
    /// [`ProvisionError::Command`] if `apt-cache` fails.
    pub fn offered(&self, name: &str) -> Result<Vec<Offered>, ProvisionError> {
        self.offered_all(&[name])
    }

    /// [`AptRoot::offered`] for several names in one `apt-cache` run (each run
    /// loads every index: about a second with Debian's).
    ///
    /// # Errors
    /// [`ProvisionError::Command`] if `apt-cache` fails.
    pub fn offered_all(&self, names: &[&str]) -> Result<Vec<Offered>, ProvisionError> {
        let out = run(self.tool("apt-cache").arg("madison").args(names), "apt-cache madison")?;
        Ok(parse_madison(&out))
    }

    /// The index entry of exactly `name` `version` (its SHA-256 is what a
    /// fallback is verified against), if the indexes have it.
    ///
    /// # Errors
    /// [`ProvisionError::Command`] if `apt-cache` fails.
    pub fn entry(&self, name: &str, version: &str) -> Result<Option<IndexEntry>, ProvisionError> {
        Ok(self.show(name)?.into_iter().find(|e| e.name == name && e.version == version))
    }

    /// Package names known to the indexes that start with `prefix`.
    ///
    /// # Errors
    /// [`ProvisionError::Command`] if `apt-cache` fails.
    pub fn package_names(&self, prefix: &str) -> Result<Vec<String>, ProvisionError> {
        let out = run(self.tool("apt-cache").args(["pkgnames", prefix]), "apt-cache pkgnames")?;
        Ok(out.lines().map(str::to_string).collect())
    }

    /// The index entries (all versions) of `name`.
    ///
    /// # Errors
    /// [`ProvisionError::Command`] if `apt-cache show` fails (unknown package).
    pub fn show(&self, name: &str) -> Result<Vec<IndexEntry>, ProvisionError> {
        self.show_all(&[name])
    }

    /// [`AptRoot::show`] for several names in one `apt-cache` run.
    ///
    /// # Errors
    /// [`ProvisionError::Command`] if `apt-cache show` fails otherwise than
    /// for names without a stanza.
    pub fn show_all(&self, names: &[&str]) -> Result<Vec<IndexEntry>, ProvisionError> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let name = names.join(" ");
        // A name known only as a dependency has no stanza: apt-cache prints
        // "No packages found" and that is an empty answer, not a failure.
        let out = self
            .tool("apt-cache")
            .arg("show")
            .args(names)
            .output()
            .map_err(|e| ProvisionError::spawn("apt-cache show", e))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() && text.trim().is_empty() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            if stderr.contains("No packages found") || stderr.contains("Unable to locate") {
                return Ok(Vec::new());
            }
            return Err(ProvisionError::Command {
                what: format!("apt-cache show {name}"),
                output: stderr.into_owned(),
            });
        }
        Ok(parse_show(&text))
    }

    /// Compare two Debian versions with `dpkg --compare-versions a gt b`.
    ///
    /// # Errors
    /// [`ProvisionError::Spawn`] if dpkg cannot run.
    pub fn version_gt(a: &str, b: &str) -> Result<bool, ProvisionError> {
        let st = Command::new("dpkg")
            .args(["--compare-versions", a, "gt", b])
            .status()
            .map_err(|e| ProvisionError::spawn("dpkg --compare-versions", e))?;
        Ok(st.success())
    }
}

/// Unpack a `.deb`'s data into `dest` with `dpkg-deb -x` (no maintainer scripts run).
///
/// # Errors
/// [`ProvisionError::Command`] if dpkg-deb fails.
pub fn extract_deb(deb: &Path, dest: &Path) -> Result<(), ProvisionError> {
    std::fs::create_dir_all(dest).map_err(|e| ProvisionError::io(dest, e))?;
    run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(dest), &format!("dpkg-deb -x {}", deb.display()))?;
    Ok(())
}

/// Lower-case hex SHA-256 of a file.
///
/// # Errors
/// [`ProvisionError::Io`] if the file cannot be read.
pub fn sha256_file(path: &Path) -> Result<String, ProvisionError> {
    use sha2::Digest;
    let mut f = std::fs::File::open(path).map_err(|e| ProvisionError::io(path, e))?;
    let mut h = sha2::Sha256::new();
    std::io::copy(&mut f, &mut h).map_err(|e| ProvisionError::io(path, e))?;
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether apt's error text says the version is not (or no longer) in the
/// archive: unknown to the indexes, or listed by stale indexes but gone from
/// the mirror (HTTP 404).
fn is_gone(stderr: &str) -> bool {
    stderr.contains("was not found") || stderr.contains("Unable to locate package") || stderr.contains("404")
}

/// Why `what`, an apt-get download of `name`=`version`, failed, from its
/// stderr: [`ProvisionError::VersionGone`] when the archive no longer has
/// that version ([`is_gone`]), else [`ProvisionError::Command`] with the stderr.
fn download_failure(what: String, name: &str, version: &str, stderr: &[u8]) -> ProvisionError {
    let stderr = String::from_utf8_lossy(stderr).into_owned();
    if is_gone(&stderr) {
        return ProvisionError::VersionGone { package: name.to_string(), version: version.to_string() };
    }
    ProvisionError::Command { what, output: stderr }
}

/// Parse `apt-cache madison` lines: `name | version | URI SUITE/COMPONENT ARCH Packages`.
fn parse_madison(text: &str) -> Vec<Offered> {
    text.lines()
        .filter_map(|line| {
            let mut cols = line.split('|').map(str::trim);
            let (name, version, origin) = (cols.next()?, cols.next()?, cols.next()?);
            let suite = origin.split_whitespace().nth(1)?.split('/').next()?;
            (!name.is_empty() && !version.is_empty()).then(|| Offered {
                name: name.to_owned(),
                version: version.to_owned(),
                suite: suite.to_owned(),
            })
        })
        .collect()
}

/// Parse `apt-cache show` output (RFC 822 stanzas) into entries.
fn parse_show(text: &str) -> Vec<IndexEntry> {
    text.split("\n\n")
        .filter_map(|stanza| {
            let field = |key: &str| {
                stanza
                    .lines()
                    .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix(':')))
                    .map(|v| v.trim().to_string())
            };
            Some(IndexEntry {
                name: field("Package")?,
                version: field("Version")?,
                sha256: field("SHA256")?,
                depends: field("Depends").unwrap_or_default(),
            })
        })
        .collect()
}

/// `.deb` files directly in `dir`, sorted.
fn list_debs(dir: &Path) -> Result<Vec<PathBuf>, ProvisionError> {
    let mut debs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| ProvisionError::io(dir, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .collect();
    debs.sort();
    Ok(debs)
}

/// The `.deb` apt named `<name>_<version without epoch, ':' as %3a>_<arch>.deb`.
fn find_deb(dir: &Path, name: &str, version: &str, arch: &str) -> Result<PathBuf, ProvisionError> {
    let escaped = version.replace(':', "%3a");
    let bare = version.split_once(':').map_or(version, |v| v.1);
    // Only this root's architecture (or `all`): the arm64 setup keeps the amd64
    // and arm64 builds of one package and version (libc6) side by side in one folder.
    let of_arch = |f: &str| f.ends_with(&format!("_{arch}.deb")) || f.ends_with("_all.deb");
    list_debs(dir)?
        .into_iter()
        .find(|p| {
            let f = p.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            (f.starts_with(&format!("{name}_{escaped}_")) || f.starts_with(&format!("{name}_{bare}_"))) && of_arch(&f)
        })
        .ok_or_else(|| ProvisionError::Command {
            what: format!("apt-get download {name}={version}"),
            output: format!("no {name}_{escaped}_{{{arch},all}}.deb appeared in {}", dir.display()),
        })
}

/// Run a command to completion; its stdout on success.
fn run(cmd: &mut Command, what: &str) -> Result<String, ProvisionError> {
    let out = cmd.output().map_err(|e| ProvisionError::spawn(what, e))?;
    if !out.status.success() {
        return Err(ProvisionError::Command {
            what: what.to_string(),
            output: format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Write `text` to `path` unless it already holds exactly that; whether it wrote.
pub(super) fn write_if_changed(path: &Path, text: &str) -> Result<bool, ProvisionError> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(false);
    }
    std::fs::write(path, text).map_err(|e| ProvisionError::io(path, e))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_download_is_found_by_its_architecture_beside_another_of_the_same_version() {
        // The arm64 setup's folder holds amd64 libc6 (the flows tool's) and arm64 libc6 (ethtool's).
        let dir = tempfile::tempdir().expect("tempdir");
        for f in ["libc6_2.41-2_amd64.deb", "libc6_2.41-2_arm64.deb", "qemu-efi-aarch64_2025.02-9_all.deb"] {
            std::fs::write(dir.path().join(f), "").expect("write");
        }
        let found = |name, arch| find_deb(dir.path(), name, if name == "libc6" { "2.41-2" } else { "2025.02-9" }, arch);
        assert!(found("libc6", "arm64").expect("arm64").ends_with("libc6_2.41-2_arm64.deb"));
        assert!(found("libc6", "amd64").expect("amd64").ends_with("libc6_2.41-2_amd64.deb"));
        assert!(found("qemu-efi-aarch64", "amd64").expect("all").ends_with("qemu-efi-aarch64_2025.02-9_all.deb"));
        assert!(found("libc6", "riscv64").is_err());
    }

    #[test]
    fn apt_cache_show_stanzas_parse() {
        let text = "Package: linux-binary-7.3.4+deb13-cloud-amd64\nVersion: 7.3.4-1~bpo13+1\n\
                    Depends: linux-base-7.3.4+deb13-cloud-amd64 (= 7.3.4-1~bpo13+1)\n\
                    SHA256: c4fb\n\nPackage: x\nVersion: 1\nSHA256: ab\n";
        let e = parse_show(text);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].version, "7.3.4-1~bpo13+1");
        assert_eq!(e[0].sha256, "c4fb");
        assert_eq!(e[1].depends, "");
    }

    #[test]
    fn madison_lines_give_each_version_its_suite() {
        let text = "qemu-system-x86 | 1:11.1.3+ds-2~bpo13+1 | http://deb.debian.org/debian trixie-backports/main amd64 Packages\n\
                    qemu-system-x86 | 1:7.2+dfsg-7+deb12u15 | http://deb.debian.org/debian-security bookworm-security/main amd64 Packages\n\
                    busybox-static | 1:1.0-1 | file:/tmp/repo stable/main amd64 Packages\n";
        let o = parse_madison(text);
        assert_eq!(o.len(), 3);
        assert_eq!((o[0].version.as_str(), o[0].suite.as_str()), ("1:11.1.3+ds-2~bpo13+1", "trixie-backports"));
        assert_eq!(o[1].suite, "bookworm-security");
        assert_eq!(o[2].suite, "stable");
    }

    #[test]
    fn an_arm64_root_reads_arm64_indexes_and_the_default_root_stays_amd64() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = Archive { sources: "deb file:/r stable main\n".into(), origin: "t".into() };
        let arm = AptRoot::prepare_for(&dir.path().join("apt-arm64"), &a, "arm64").expect("arm64 root");
        let conf = std::fs::read_to_string(dir.path().join("apt-arm64/apt.conf")).expect("conf");
        assert!(conf.contains("APT::Architecture \"arm64\";") && !conf.contains("amd64"), "{conf}");
        assert_eq!(arm.arch(), "arm64");
        let x86 = AptRoot::prepare(&dir.path().join("apt"), &a).expect("amd64 root");
        let conf = std::fs::read_to_string(dir.path().join("apt/apt.conf")).expect("conf");
        assert!(conf.contains("APT::Architectures { \"amd64\"; };"), "{conf}");
        assert_eq!(x86.arch(), "amd64");
    }

    #[test]
    fn an_archives_suites_come_from_its_sources_list() {
        assert_eq!(
            Archive::debian().suites(),
            ["trixie", "trixie-backports", "bookworm", "bookworm-security", "forky"]
        );
        let a = Archive { sources: "# c\ndeb file:/r stable main\n".into(), origin: "t".into() };
        assert_eq!(a.suites(), ["stable"]);
    }

    #[test]
    fn a_404_or_an_unknown_version_is_a_version_gone() {
        assert!(is_gone("E: Version '1:11.1.3+ds-1~bpo13+1' for 'qemu-system-x86' was not found"));
        assert!(is_gone("E: Failed to fetch http://deb.debian.org/x.deb  404  Not Found [IP: 1.2.3.4 80]"));
        assert!(!is_gone("E: Could not resolve 'deb.debian.org'"));
        let gone = download_failure("apt-get download x=1".into(), "x", "1", b"E: Version '1' for 'x' was not found");
        assert!(matches!(&gone, ProvisionError::VersionGone { package, version } if package == "x" && version == "1"));
        let other = download_failure("apt-get download x=1".into(), "x", "1", b"E: Could not resolve 'deb.debian.org'");
        assert!(
            matches!(&other, ProvisionError::Command { what, output } if what == "apt-get download x=1"
                && output.contains("Could not resolve")),
            "{other}"
        );
    }
}
