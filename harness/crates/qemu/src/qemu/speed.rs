//! Boot speed-ups under TCG: what the launcher changes, by default, to get from
//! QEMU start to the guest's report faster, and the `--no-speedups` A/B switch.
//!
//! Every item is chosen from a measurement (docs/boot-speed.md) and none touches
//! what the rig tests: the CPU/NUMA topology QEMU builds, the NIC's slot, or the
//! kernel code that places IRQs (irq_setup(), cpumask_local_spread(), the
//! generic IRQ affinity code). `cargo xtask bench` and the
//! `speedups_keep_the_irq_placement_*` tests (harness/tests/matrix.rs)
//! run the same scenario both ways and compare the smp_affinity_list tables.

use crate::guest_protocol::AgentOptions;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Which speed-ups a boot uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Speedups {
    /// Append [`SPEED_CMDLINE`] to the kernel command line and pin the guest
    /// agent to [`SPEED_AGENT_PIN`] (unless the caller pins it elsewhere).
    pub cmdline: bool,
    /// Boot the uncompressed kernel through its PVH entry point (see [`pvh_image`])
    /// instead of the bzImage through the BIOS, real-mode setup and decompressor.
    pub pvh: bool,
    /// Add [`SPEED_CPU_FLAGS`] to the `-cpu` model.
    pub cpu: bool,
    /// Add [`SPEED_GLOBAL`] (x86's q35 only): QEMU's ACPI tables describe no
    /// PCI hotplug slots. Absent in older serialized requests: off.
    #[serde(default)]
    pub acpi: bool,
}

impl Default for Speedups {
    /// All on: what `run` uses unless `--no-speedups` is given.
    fn default() -> Self {
        Speedups::ALL
    }
}

impl Speedups {
    /// Every speed-up.
    pub const ALL: Speedups = Speedups { cmdline: true, pvh: true, cpu: true, acpi: true };
    /// None: the plain Debian boot (`--no-speedups`).
    pub const NONE: Speedups = Speedups { cmdline: false, pvh: false, cpu: false, acpi: false };

    /// Short names of the speed-ups in use, for reports: e.g. `["cmdline", "pvh"]`;
    /// empty for [`Speedups::NONE`].
    pub fn names(self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.cmdline {
            v.push("cmdline");
        }
        if self.pvh {
            v.push("pvh");
        }
        if self.cpu {
            v.push("cpu");
        }
        if self.acpi {
            v.push("acpi");
        }
        v
    }

    /// The guest agent's options with these speed-ups: `agent` pinned to
    /// [`SPEED_AGENT_PIN`] when [`Speedups::cmdline`] is on and `agent` has no pin.
    pub fn agent(self, agent: &AgentOptions) -> AgentOptions {
        let mut out = agent.clone();
        if self.cmdline && out.pin.is_none() {
            out.pin = Some(std::iter::once(SPEED_AGENT_PIN).collect());
        }
        out
    }

    /// The `-cpu` model for `model` with these speed-ups: `model` plus each flag
    /// of [`SPEED_CPU_FLAGS`] that `model` does not set itself (a user's
    /// `--cpu max,pat=on` keeps PAT) when [`Speedups::cpu`] is on.
    pub fn cpu_model(self, model: &str) -> String {
        if !self.cpu {
            return model.to_string();
        }
        let set_by_model = |flag: &str| {
            let name = flag.split('=').next().unwrap_or(flag);
            model.split(',').skip(1).any(|p| {
                let p = p.trim_start_matches(['+', '-']);
                p.split('=').next() == Some(name)
            })
        };
        let mut out = model.to_string();
        for flag in SPEED_CPU_FLAGS.split(',').filter(|f| !set_by_model(f)) {
            out.push(',');
            out.push_str(flag);
        }
        out
    }
}

/// Kernel command-line items added for speed (measured on Debian 6.12 under
/// TCG, seed 002; docs/boot-speed.md has the numbers):
/// - `lpj=8400208`: skips calibrate_delay_direct() on the first CPU of every
///   package brought up (≈ 0.28 s of guest time each under TCG: 2 packages on
///   seed 002, 16 on a 16-socket machine). On x86 with a TSC, udelay() uses the
///   TSC, so the value only sets the reported BogoMIPS (this is the value the
///   boot CPU computed from QEMU's 2.1 GHz TSC at HZ=250);
/// - `cryptomgr.notests`: no crypto self-tests at algorithm registration
///   (crypto_algapi_init and friends: ≈ 0.3 s);
/// - `init_on_alloc=0`: Debian zeroes every page allocation; guest RAM is
///   emulated, zeroing is pure TCG work;
/// - `rcupdate.rcu_expedited=1`: synchronize_rcu() in boot paths ends without
///   waiting for grace periods whose length is set by starved vCPUs;
/// - `nowatchdog`, `no_timer_check`: no soft/hard-lockup watchdog threads per
///   CPU, no IO-APIC timer check loop;
/// - `mitigations=off`: fewer speculation work-arounds to patch in and run
///   (RSB filling on context switch, return thunks);
/// - `cpuhp.parallel=0` (Linux 6.5+; older kernels ignore it): bring secondary
///   CPUs up one at a time. In parallel mode x86 kicks every AP first and the
///   kicked APs busy-wait (`cpuhp_ap_sync_alive()`) until the boot CPU releases
///   them; under multi-threaded TCG each waiting vCPU is a host thread spinning
///   for one of the 2 host cores. Seed 003 (256 CPUs): bring-up 79 s → 8 s;
///   seed 001 (128): 13.4 s → 0.9 s;
/// - and, through the guest agent's options, [`SPEED_AGENT_PIN`].
///
/// None of these changes the topology the kernel sees or how it spreads IRQs
/// (CPU numbers come from the ACPI MADT order, not from the bring-up order;
/// mana places its vectors by the NIC's node, not by the CPU that probes).
pub const SPEED_CMDLINE: &str = "lpj=8400208 cryptomgr.notests init_on_alloc=0 rcupdate.rcu_expedited=1 \
     nowatchdog no_timer_check mitigations=off cpuhp.parallel=0";

/// Added to [`SPEED_CMDLINE`] under multi-threaded TCG (x86, from
/// `accel::TCG_MULTI_FROM_VCPUS` vCPUs) up to [`HPET_UP_TO_VCPUS`] vCPUs: the
/// kernel switches once, from jiffies to the HPET, at fs_initcall, and never to
/// the TSC. Without it the refined TSC calibration (a delayed work item)
/// registers `tsc` about a second after device_initcall, and the switch is a
/// `stop_machine()`; when that lands while PID 1 frees the init memory (no
/// scheduling point, and the minimal kernels do not preempt), every other vCPU
/// spins in `multi_cpu_stop()` as a host thread and the boot CPU gets a sliver
/// of the host: seed 001 (128 vCPUs) took 67-92 s instead of 28-34 s in 4 of 7
/// runs. With it: 3 of 3 without a stall, 33-38 s (every clock read is an HPET
/// access). docs/boot-speed.md, "Bare boots of 128 vCPUs sometimes stall".
pub const SPEED_CMDLINE_MULTI_TCG: &str = "clocksource=hpet";

/// The most vCPUs [`SPEED_CMDLINE_MULTI_TCG`] is used for. At 256 CPUs (seed
/// 003) the HPET made a boot 128 s against 61-86 s on the TSC the same evening,
/// and none of 10 boots there stalled: the HPET's reads, emulated under QEMU's
/// big lock, cost more with every vCPU.
pub const HPET_UP_TO_VCPUS: u32 = 128;

/// Whether [`SPEED_CMDLINE_MULTI_TCG`] suits `kernel` on `vcpus` vCPUs (under
/// multi-threaded TCG): a kernel built by the rig (`build:KEY`) that does not
/// preempt kernel code (the minimal config's 6.1 and 6.12 are
/// `CONFIG_PREEMPT_NONE`, where the stall was seen), up to
/// [`HPET_UP_TO_VCPUS`]. A build that preempts (7.x's minimal config is
/// `PREEMPT_LAZY`, whose `PREEMPT` the bzImage's version string names:
/// `kbuild::image::bzimage_preempts`) keeps the TSC: the stopper thread is a
/// real-time task and takes PID 1's CPU at once. Debian's packaged kernels keep
/// the TSC too: the stall was not seen on them, and the HPET made Debian's 6.12
/// on seed 001 take 126 s against 90 s on the TSC (one pair, 2026-12-03).
pub fn hpet_suits(kernel: &crate::provision::KernelInstall, vcpus: u32) -> bool {
    kernel.is_rig_build()
        && vcpus <= HPET_UP_TO_VCPUS
        && manarig_provision::kbuild::image::bzimage_preempts(&kernel.vmlinuz) != Some(true)
}

/// [`SPEED_CMDLINE`]'s items for arm64 guests: those that are not x86's
/// (`lpj` only skips an x86 calibration, `no_timer_check` is the IO-APIC's,
/// `cpuhp.parallel` only matters where secondary CPUs spin waiting for the
/// boot CPU, which arm64 does not). Not measured one by one on arm64 yet.
pub const SPEED_CMDLINE_ARM64: &str =
    "cryptomgr.notests init_on_alloc=0 rcupdate.rcu_expedited=1 nowatchdog mitigations=off";

/// The CPU the guest agent pins itself to with the command-line speed-up
/// ([`AgentOptions::pin`], rendered as `manarig.pin=0`): the agent
/// (guest-images/init.sh) pins itself, and so every process it starts (mounts,
/// `insmod`, `ip`, the report's `awk`s), to CPU 0. Unpinned, the scheduler puts
/// each new process on an idle vCPU: wake-up IPIs and TLB shootdowns between
/// vCPUs that take turns on the host's cores. Seed 002 on `6.12-min`, 5
/// alternating pairs: `/init` → report 0.29-0.49 s pinned vs 0.42-0.68 s
/// unpinned for a run, 0.13-0.23 vs 0.19-0.28 s for a bare boot.
pub const SPEED_AGENT_PIN: u32 = 0;

/// CPU features turned off for speed (QEMU `-cpu` properties): no MTRRs and no
/// PAT. With either, Linux programs them on every CPU at once after SMP
/// bring-up (`cache_aps_init()`, a `stop_machine()` over all CPUs,
/// arch/x86/kernel/cpu/cacheinfo.c), and under multi-threaded TCG every CPU
/// spins until the slowest host thread gets its turn: 7 s of seed 003's boot,
/// 2.8 s of seed 001's. Without them the guest maps memory with the plain cache
/// bits (the rig does no I/O where write-combining would matter); neither takes
/// part in IRQ placement. Debug kernels' runs keep MTRRs: without them kmemleak
/// turns itself off at boot (`speedups()` in harness/crates/rig/src/rig/debug_kernel.rs).
pub const SPEED_CPU_FLAGS: &str = "mtrr=off,pat=off";

/// QEMU `-global` for speed on x86 (q35): no ACPI PCI hotplug. With it on
/// (QEMU's default) the DSDT carries hotplug methods for every slot of every
/// bridge and root port, which the guest's ACPI interpreter loads and walks
/// at boot under TCG. Off, the pcie-root-ports offer native PCIe hotplug
/// instead; the rig never hotplugs, and the NIC's slot, its expander bridge
/// and that bridge's `_PXM` (the NIC's NUMA node) are unchanged. Seed 002 on
/// `6.12-min`, 6 alternating whole runs each: median 3.6 s off against 3.9 s
/// on, the same verdict and tables (docs/boot-speed.md). Debug kernels' runs
/// leave it off (`speedups()` in harness/crates/rig/src/rig/debug_kernel.rs).
pub const SPEED_GLOBAL: &str = "ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off";

/// Errors making the PVH image.
#[derive(Debug, thiserror::Error)]
pub enum PvhError {
    /// The file is not a bzImage this code understands.
    #[error("{path}: {reason}")]
    NotBzImage {
        /// The kernel file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The embedded kernel has no PVH entry note (CONFIG_PVH off).
    #[error("{path}: the kernel inside has no PVH entry point (XEN_ELFNOTE_PHYS32_ENTRY; CONFIG_PVH is off)")]
    NoPvhNote {
        /// The kernel file.
        path: PathBuf,
    },
    /// Reading, decompressing or writing failed.
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        error: std::io::Error,
    },
}

/// bzImage header fields, x86 boot protocol (Documentation/arch/x86/boot.rst):
/// `setup_sects` at 0x1f1 (u8; 0 means 4), the "HdrS" magic at 0x202, the
/// protocol version at 0x206 (u16), and from 2.08 `payload_offset` (u32) at
/// 0x248 and `payload_length` (u32) at 0x24c, the payload counted from the end
/// of the setup code at (setup_sects + 1) × 512.
fn payload(image: &[u8]) -> Result<&[u8], String> {
    let u16_at = |o: usize| image.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |o: usize| image.get(o..o + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    if image.get(0x202..0x206) != Some(b"HdrS") {
        return Err("no \"HdrS\" boot header at 0x202: not a bzImage".into());
    }
    let version = u16_at(0x206).ok_or("truncated header")?;
    if version < 0x0208 {
        return Err(format!("boot protocol {:#06x} has no payload fields (2.08 or later needed)", version));
    }
    let setup_sects = match image.get(0x1f1).copied().ok_or("truncated header")? {
        0 => 4,
        n => usize::from(n),
    };
    let off = u32_at(0x248).ok_or("truncated header")? as usize;
    let len = u32_at(0x24c).ok_or("truncated header")? as usize;
    let start = (setup_sects + 1) * 512 + off;
    image
        .get(start..start + len)
        .ok_or_else(|| format!("payload {start}+{len} lies outside the {} byte file", image.len()))
}

/// LZ4 "legacy" frames (what the kernel's `lz4 -l` build step writes): the
/// magic 0x184c2102, then blocks of a little-endian u32 compressed length and
/// an LZ4 block of at most 8 MiB once decompressed; the bzImage appends the
/// uncompressed size (4 bytes), which ends the walk.
fn lz4_legacy(p: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    const MAGIC: [u8; 4] = [0x02, 0x21, 0x4c, 0x18];
    const BLOCK_MAX: usize = 8 << 20;
    let mut rest = p.strip_prefix(&MAGIC).ok_or("no LZ4 legacy magic")?;
    let mut buf = vec![0u8; BLOCK_MAX];
    while rest.len() > 4 {
        let (len, tail) = rest.split_at(4);
        if len == MAGIC {
            rest = tail;
            continue;
        }
        let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let block = tail.get(..len).ok_or_else(|| format!("LZ4 block of {len} bytes past the payload end"))?;
        let n = lz4_flex::block::decompress_into(block, &mut buf).map_err(|e| format!("lz4: {e}"))?;
        out.extend_from_slice(&buf[..n]);
        rest = &tail[len..];
    }
    Ok(())
}

/// Decompress a bzImage payload: zstd, gzip, xz or LZ4 (legacy frames), told
/// apart by their magic bytes.
fn decompress(p: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let r = if p.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        ruzstd::decoding::StreamingDecoder::new(p).map_err(|e| format!("zstd: {e}"))?.read_to_end(&mut out)
    } else if p.starts_with(&[0x1f, 0x8b]) {
        flate2::read::GzDecoder::new(p).read_to_end(&mut out)
    } else if p.starts_with(&[0x02, 0x21, 0x4c, 0x18]) {
        return lz4_legacy(p, &mut out).map(|()| out);
    } else if p.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        liblzma::read::XzDecoder::new(p).read_to_end(&mut out)
    } else {
        return Err(format!("payload compression not supported (magic {:02x?})", &p[..p.len().min(6)]));
    };
    r.map_err(|e| format!("decompressing the payload: {e}"))?;
    Ok(out)
}

/// True when the ELF image has a "Xen" note of type 18 (XEN_ELFNOTE_PHYS32_ENTRY,
/// include/xen/interface/elfnote.h), the PVH entry QEMU's `-kernel` looks for.
fn has_pvh_note(elf: &[u8]) -> bool {
    use object::read::elf::{ElfFile64, FileHeader, ProgramHeader};
    use object::Endianness;
    let Ok(file) = ElfFile64::<Endianness>::parse(elf) else { return false };
    let endian = file.endian();
    let Ok(phdrs) = file.elf_header().program_headers(endian, elf) else { return false };
    phdrs.iter().any(|ph| {
        let Ok(Some(mut notes)) = ph.notes(endian, elf) else { return false };
        std::iter::from_fn(|| notes.next().ok().flatten())
            .any(|n| n.name() == b"Xen" && n.n_type(endian) == object::elf::NoteType(18))
    })
}

/// The uncompressed kernel of bzImage `vmlinuz`, for QEMU's PVH entry
/// (Debian 6.1: LZ4; 6.12 and 7.x: zstd) (`-kernel` of an ELF with XEN_ELFNOTE_PHYS32_ENTRY: no BIOS boot loader, no
/// real-mode setup, no decompression; measured 3.5-4 s shorter under TCG).
/// Written once next to `vmlinuz` as `vmlinux.pvh` (about 60 MB for Debian's
/// 6.12) and reused while it is newer than `vmlinuz`.
///
/// # Errors
/// [`PvhError`]: not a bzImage (protocol 2.08+), an unknown payload
/// compression, no PVH note (CONFIG_PVH=n), or I/O errors. Callers fall back
/// to the bzImage.
pub fn pvh_image(vmlinuz: &Path) -> Result<PathBuf, PvhError> {
    let out = vmlinuz.with_file_name("vmlinux.pvh");
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(o), Some(i)) = (mtime(&out), mtime(vmlinuz)) {
        if o >= i {
            return Ok(out);
        }
    }
    let io = |what: String| move |source| PvhError::Io { what, error: source };
    let image = std::fs::read(vmlinuz).map_err(io(format!("reading {}", vmlinuz.display())))?;
    let not = |reason: String| PvhError::NotBzImage { path: vmlinuz.to_path_buf(), reason };
    let elf = decompress(payload(&image).map_err(not)?).map_err(not)?;
    if !has_pvh_note(&elf) {
        return Err(PvhError::NoPvhNote { path: vmlinuz.to_path_buf() });
    }
    let dir = out.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io(format!("temp file in {}", dir.display())))?;
    std::io::Write::write_all(&mut tmp, &elf).map_err(io(format!("writing {}", out.display())))?;
    use std::os::unix::fs::PermissionsExt;
    let _ = tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644));
    tmp.persist(&out).map_err(|e| PvhError::Io { what: format!("renaming to {}", out.display()), error: e.error })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_bzimage_is_named() {
        let e = payload(&[0u8; 0x300]).expect_err("not a bzImage");
        assert!(e.contains("HdrS"), "{e}");
    }

    #[test]
    fn payload_outside_the_file_is_an_error_not_a_panic() {
        let mut img = vec![0u8; 0x400];
        img[0x202..0x206].copy_from_slice(b"HdrS");
        img[0x206..0x208].copy_from_slice(&0x020fu16.to_le_bytes());
        img[0x248..0x24c].copy_from_slice(&0x10u32.to_le_bytes());
        img[0x24c..0x250].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
        assert!(payload(&img).expect_err("outside").contains("outside"));
    }

    #[test]
    fn unknown_compression_is_named() {
        assert!(decompress(b"BZh91AY").expect_err("bzip2").contains("not supported"));
    }

    #[test]
    fn gzip_payload_decompresses() {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(b"\x7fELF").expect("write");
        let gz = enc.finish().expect("gzip");
        assert_eq!(decompress(&gz).expect("gzip"), b"\x7fELF");
        assert!(!has_pvh_note(b"\x7fELF"));
    }

    #[test]
    fn speedup_names() {
        assert_eq!(Speedups::ALL.names(), vec!["cmdline", "pvh", "cpu", "acpi"]);
        assert!(Speedups::NONE.names().is_empty());
        assert_eq!(Speedups::ALL.cpu_model("max"), "max,mtrr=off,pat=off");
        assert_eq!(Speedups::NONE.cpu_model("max"), "max");
        // The user's own setting wins over the speed-up's.
        assert_eq!(Speedups::ALL.cpu_model("max,pat=on"), "max,pat=on,mtrr=off");
        assert_eq!(Speedups::ALL.cpu_model("max,+mtrr,-pat"), "max,+mtrr,-pat");
        assert_eq!(Speedups::ALL.cpu_model("max,vendor=GenuineIntel"), "max,vendor=GenuineIntel,mtrr=off,pat=off");
    }

    #[test]
    fn the_command_line_speed_up_pins_the_agent_to_cpu_0_unless_it_is_pinned_already() {
        let plain = AgentOptions::default();
        assert_eq!(Speedups::ALL.agent(&plain).pin.map(|m| m.to_cpulist()).as_deref(), Some("0"));
        assert_eq!(Speedups::NONE.agent(&plain), plain);
        let pinned = AgentOptions { pin: "2-3".parse().ok(), ..AgentOptions::default() };
        assert_eq!(Speedups::ALL.agent(&pinned), pinned);
    }
}
