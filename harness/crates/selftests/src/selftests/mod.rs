//! The kernel's own drivers/net selftests against the emulated MANA
//! (`cargo xtask selftests`, `run --selftests`, `matrix --selftests`): an
//! outside judge of the NIC. docs/selftests.md says which tests there are,
//! what each needs and checks, and what mana implements.
//!
//! - The tests come from the guest kernel's own source ([`tree`]): Debian's
//!   `linux-source-<series>` of the pinned kernel, or a user's `--source`
//!   tree; their C helpers are built from it ([`helpers`]).
//! - The guest tools (Python, bash, iproute2, ethtool, socat, iperf3, ping)
//!   are the lock's `[selftests]` packages
//!   ([`crate::provision::selftest_tools`]), in the initramfs of selftest runs only.
//! - The remote end is NIPA's: a second guest NIC (virtio-net, its driver from
//!   the kernel's packages: [`remote_modules`]) whose host TAP is bridged with
//!   the MANA's TAP in the rig's private network namespace (the traffic peer,
//!   `manarig-flows peer --remote-tap`); the agent moves it into netns
//!   [`REMOTE_NETNS`], and `net.config` ([`net_config`]) tells the tests
//!   (`REMOTE_TYPE=netns`).
//! - The guest agent runs each selected test ([`catalog`]) and reports its
//!   output; [`ktap`] reads it, [`baseline`] says which non-passing cases the
//!   driver explains, and the verdict makes every case a check
//!   (`crate::verdict::selftests`).

pub mod baseline;
pub mod catalog;
pub mod clang;
pub mod helpers;
pub mod ktap;
pub mod remote_modules;
pub mod tree;

use crate::provision::tools::GuestFile;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

/// The MANA netdev the tests judge (`NETIF`): the agent loads the remote
/// NIC's driver after mana, so the MANA's first vPort is `eth0`.
pub const NETIF: &str = "eth0";
/// The network namespace of the remote end (`REMOTE_ARGS`), in the guest.
pub const REMOTE_NETNS: &str = "remote";
/// `LOCAL_V4`: TEST-NET-2 (RFC 5737), never a real network.
pub const LOCAL_V4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
/// `REMOTE_V4`.
pub const REMOTE_V4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 2);
/// `LOCAL_V6`: the documentation prefix 2001:db8::/32 (RFC 3849).
pub const LOCAL_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1);
/// `REMOTE_V6`.
pub const REMOTE_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 2);
/// The remote NIC's MAC (a locally administered address, unlike the MANA's).
pub const REMOTE_MAC: &str = "02:00:00:00:0e:02";
/// The remote NIC's TAP in the peer's namespace.
pub const REMOTE_TAP: &str = "remote0";
/// Guest seconds one test program may take by default (under TCG the tests
/// run several times slower than on hardware; drivers/net/settings gives 360 s).
pub const DEFAULT_TEST_TIMEOUT_S: u32 = 600;
/// The test programs' timer slack by default, in microseconds (the kernel's
/// own is 50 µs; `--test-timer-slack 0` keeps it). Every program the agent
/// starts for a test inherits it (`/proc/self/timerslack_ns`), so a user-space
/// sleep may end up to this much late. Why: hw/toeplitz.py's receiver polls
/// its packet rings with `usleep(100)` between empty passes
/// (tools/testing/selftests/drivers/net/hw/toeplitz.c process_rings), and
/// under TCG those 10,000 wake-ups a second tripled what every other guest
/// program cost (socat -V: 85 ms alone, 130-345 ms beside the receiver); the
/// sender's socat loop then got 3 to 9 frames into the receiver's 4-s window,
/// under its minimum of 10. With 4 ms its four base variants passed on an
/// idle host and at load 4 (docs/selftests.md, "The receiver's polling").
pub const DEFAULT_TIMER_SLACK_US: u32 = 4000;

/// The `net.config` the tests read from their own folder
/// (drivers/net/lib/py/env.py `_load_env_file`): NIPA's netns remote.
pub fn net_config() -> String {
    format!(
        "# Written by manarig (harness/crates/selftests/src/selftests/mod.rs): the MANA netdev and the\n\
         # remote end in netns {REMOTE_NETNS} (a virtio-net NIC bridged with the MANA's wire).\n\
         NETIF={NETIF}\nLOCAL_V4={LOCAL_V4}\nREMOTE_V4={REMOTE_V4}\nLOCAL_V6={LOCAL_V6}\nREMOTE_V6={REMOTE_V6}\n\
         REMOTE_TYPE=netns\nREMOTE_ARGS={REMOTE_NETNS}\n"
    )
}

/// The kernel series (`7.3`, `6.12`) of a source tree, from its Makefile's
/// `VERSION` and `PATCHLEVEL`.
pub fn series(source: &Path) -> Option<String> {
    let text = std::fs::read_to_string(source.join("Makefile")).ok()?;
    let field = |name: &str| {
        text.lines().find_map(|l| l.strip_prefix(name)?.trim_start().strip_prefix('=').map(|v| v.trim().to_owned()))
    };
    Some(format!("{}.{}", field("VERSION")?, field("PATCHLEVEL")?))
}

/// The upstream series (`7.3`, `6.12`) of a kernel's `uname -r`
/// (`7.3.4+deb13-cloud-amd64`) or Debian version (`7.3.4-1~bpo13+1`, `1:…`).
pub fn kernel_series(release_or_version: &str) -> Option<String> {
    let v = release_or_version.split_once(':').map_or(release_or_version, |(_, rest)| rest);
    let mut parts = v.split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.parse().ok()?;
    Some(format!("{major}.{minor}"))
}

/// The Debian source package of a kernel, by its series: the
/// `linux-source-<series>` pin of guest-images/kernel-sources.lock, which
/// pins the version kernels.lock pins. A kernel that fell back to a newer
/// version of its series still finds it; the source then goes through the
/// lock's own fallback (`crate::kbuild::source::resolve`).
pub fn debian_source_of(kernel_release: &str) -> Option<crate::kbuild::source::SourcePin> {
    let package = format!("linux-source-{}", kernel_series(kernel_release)?);
    crate::kbuild::source::pins().ok()?.into_iter().find(|p| p.package == package)
}

/// `net.config` files for the tests' folders, as initramfs files written under `dir`.
///
/// # Errors
/// The files cannot be written.
pub fn net_config_files(dir: &Path) -> std::io::Result<Vec<GuestFile>> {
    let host = dir.join("net.config");
    std::fs::write(&host, net_config())?;
    Ok(["", "hw/"]
        .iter()
        .map(|sub| GuestFile {
            guest_path: format!("{}/{}/{sub}net.config", tree::GUEST_ROOT, tree::DRIVERS_NET),
            host: host.clone(),
            mode: 0o644,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_config_is_nipas_netns_remote_on_documentation_addresses() {
        let c = net_config();
        for line in [
            "NETIF=eth0",
            "LOCAL_V4=198.51.100.1",
            "REMOTE_V4=198.51.100.2",
            "LOCAL_V6=2001:db8:1::1",
            "REMOTE_V6=2001:db8:1::2",
            "REMOTE_TYPE=netns",
            "REMOTE_ARGS=remote",
        ] {
            assert!(c.lines().any(|l| l == line), "{line} in\n{c}");
        }
    }

    #[test]
    fn the_series_comes_from_the_makefile() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::write(d.path().join("Makefile"), "# SPDX\nVERSION = 7\nPATCHLEVEL = 3\nSUBLEVEL = 4\n").expect("w");
        assert_eq!(series(d.path()).as_deref(), Some("7.3"));
        assert_eq!(series(&d.path().join("none")), None);
    }

    #[test]
    fn a_kernel_finds_its_debian_source_by_series_whatever_its_patch_version() {
        let pkg = |r: &str| debian_source_of(r).map(|p| p.package);
        assert_eq!(pkg("7.3.4+deb13-cloud-amd64").as_deref(), Some("linux-source-7.3"));
        assert_eq!(pkg("6.12.117+deb13-cloud-amd64").as_deref(), Some("linux-source-6.12"));
        // A kernel the lock's track moved on (a newer ABI, a newer patch level).
        assert_eq!(pkg("7.3.9+deb13-cloud-amd64").as_deref(), Some("linux-source-7.3"));
        assert_eq!(pkg("6.12.121+deb13-cloud-amd64").as_deref(), Some("linux-source-6.12"));
        assert_eq!(pkg("6.1.0-58-cloud-amd64").as_deref(), Some("linux-source-6.1"));
        assert_eq!(pkg("5.10.0-30-cloud-amd64"), None, "no source pinned for the series");
        assert_eq!(pkg("cloud"), None);
    }

    #[test]
    fn the_series_reads_releases_and_debian_versions() {
        assert_eq!(kernel_series("7.3.4-1~bpo13+1").as_deref(), Some("7.3"));
        assert_eq!(kernel_series("1:6.12.117-1").as_deref(), Some("6.12"));
        assert_eq!(kernel_series("6.12.117+deb13-cloud-amd64").as_deref(), Some("6.12"));
        assert_eq!(kernel_series("7"), None);
        assert_eq!(kernel_series(""), None);
    }
}
