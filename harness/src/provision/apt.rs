//! A private apt root under the cache: its own sources list, keyring reference
//! and an empty dpkg status, so `apt-get` can resolve and download Debian
//! packages without reading or changing the host's package state.

use super::ProvisionError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian suites the rig takes packages from (kernels from bookworm-security,
/// trixie and trixie-backports; QEMU from trixie-backports; busybox from trixie).
const SOURCES: &str = "\
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie-backports main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main
";

/// Keyring the sources list refers to (package `debian-archive-keyring`).
const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// A private apt root (`<cache>/apt`).
#[derive(Debug, Clone)]
pub struct AptRoot {
    dir: PathBuf,
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
    /// Create (or reuse) the private apt root in `dir`: writes `apt.conf`, the
    /// sources list and an empty status file. Does not touch the network.
    ///
    /// # Errors
    /// [`ProvisionError::Io`] on filesystem errors; [`ProvisionError::Host`] when
    /// `apt-get` or the Debian archive keyring is missing on the host.
    pub fn prepare(dir: &Path) -> Result<AptRoot, ProvisionError> {
        if !Path::new(KEYRING).exists() {
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
             APT::Architecture \"amd64\";\n\
             APT::Architectures {{ \"amd64\"; }};\n\
             APT::Get::Download-Only \"true\";\n\
             APT::Install-Recommends \"false\";\n\
             Debug::NoLocking \"true\";\n"
        );
        write_if_changed(&dir.join("apt.conf"), &conf)?;
        write_if_changed(&dir.join("etc/sources.list"), SOURCES)?;
        let status = dir.join("status");
        if !status.exists() {
            std::fs::write(&status, "").map_err(|e| ProvisionError::io(&status, e))?;
        }
        Ok(AptRoot { dir: dir.to_path_buf() })
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
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            if stderr.contains("was not found") || stderr.contains("Unable to locate package") {
                return Err(ProvisionError::VersionGone { package: name.to_string(), version: version.to_string() });
            }
            return Err(ProvisionError::Command { what: format!("apt-get download {spec}"), output: stderr });
        }
        find_deb(dest, name, version)
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
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            if stderr.contains("was not found") {
                return Err(ProvisionError::VersionGone { package: name.to_string(), version: version.to_string() });
            }
            return Err(ProvisionError::Command {
                what: format!("apt-get install --download-only {spec}"),
                output: stderr,
            });
        }
        list_debs(&archives)
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
        let out = run(self.tool("apt-cache").args(["show", name]), "apt-cache show")?;
        Ok(parse_show(&out))
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
fn find_deb(dir: &Path, name: &str, version: &str) -> Result<PathBuf, ProvisionError> {
    let escaped = version.replace(':', "%3a");
    list_debs(dir)?
        .into_iter()
        .find(|p| {
            let f = p.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            f.starts_with(&format!("{name}_{escaped}_"))
                || f.starts_with(&format!("{name}_{}_", version.split_once(':').map_or(version, |v| v.1)))
        })
        .ok_or_else(|| ProvisionError::Command {
            what: format!("apt-get download {name}={version}"),
            output: format!("no {name}_{escaped}_*.deb appeared in {}", dir.display()),
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

/// Write `text` to `path` unless it already holds exactly that.
pub(super) fn write_if_changed(path: &Path, text: &str) -> Result<(), ProvisionError> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| ProvisionError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
