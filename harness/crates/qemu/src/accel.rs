//! Accelerator choice: KVM when asked for and a vCPU really runs, else TCG with
//! one or many host threads depending on the vCPU count.
//!
//! On the project's build machines `/dev/kvm` exists (nested virtualisation)
//! and a tiny real-mode program runs, yet Debian's kernels crash early under
//! KVM (an invalid-opcode at a VEX-encoded instruction). So the default is TCG;
//! `--accel kvm` forces KVM after the probe, `--accel auto` trusts the probe (and
//! `rig::run_one` runs the machine again under TCG when the KVM guest stays silent).

use std::time::Duration;

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AccelChoice {
    /// TCG (the default: see the module docs).
    #[default]
    Tcg,
    /// KVM; an error if the probe fails.
    Kvm,
    /// KVM if the probe passes, else TCG.
    Auto,
    /// TCG forced to one host thread.
    TcgSingle,
    /// TCG forced to a thread per vCPU.
    TcgMulti,
}

impl std::str::FromStr for AccelChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "tcg" => Ok(AccelChoice::Tcg),
            "kvm" => Ok(AccelChoice::Kvm),
            "auto" => Ok(AccelChoice::Auto),
            "tcg-single" => Ok(AccelChoice::TcgSingle),
            "tcg-multi" => Ok(AccelChoice::TcgMulti),
            other => Err(format!("accelerator {other:?}: expected tcg, tcg-single, tcg-multi, kvm or auto")),
        }
    }
}

/// The accelerator a run used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    /// Hardware virtualisation.
    Kvm,
    /// TCG with one host thread for all vCPUs (`thread=single`).
    TcgSingle,
    /// TCG with a host thread per vCPU (`thread=multi`).
    TcgMulti,
}

impl Accel {
    /// The `-accel` argument value.
    pub fn qemu_arg(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::TcgSingle => "tcg,thread=single",
            Accel::TcgMulti => "tcg,thread=multi",
        }
    }
}

/// vCPU count from which TCG runs one thread per vCPU. Measured on the 2-core
/// build machine with the speed-ups (serial CPU bring-up, no MTRR/PAT
/// rendezvous), whole run in host seconds, single vs multi: `6.12-min` 32 vCPUs
/// 5.8 vs 6.9, 48 vCPUs 7.8 vs 7.3, 64 vCPUs 14.0 vs 11.3, 96 vCPUs 33.4 vs
/// 15.5, 128 vCPUs 80.4 vs 23.4; Debian 6.12 32 vCPUs 10.6 vs 11.0, 64 vCPUs
/// 36.8 vs 20.2. (Before those speed-ups single won up to 96: the parallel
/// bring-up's spinning APs made every extra host thread a cost.)
pub const TCG_MULTI_FROM_VCPUS: u32 = 48;

/// vCPUs per host core that TCG still brings to a report. Measured on the
/// 2-core build machine with the speed-ups: seed 003's 256 CPUs in 16 nodes (128
/// per core, intel-iommu interrupt remapping for x2APIC) PASS with all 256 online
/// in 64 s on `6.12-min` and 108 s on Debian's 6.12. (Before `cpuhp.parallel=0`
/// Debian's kernel had, after 200 s, a guest clock at 10 s and 64 CPUs online,
/// then RCU stalls.) More per core is unmeasured.
pub const TCG_MAX_VCPUS_PER_HOST_CORE: u32 = 128;

/// The same without the speed-ups' command line (`--no-speedups`): the parallel
/// CPU bring-up's spinning APs then decide. Debian's 6.12 reached the report
/// with 128 vCPUs on 2 cores (64 per core, 157-398 s); with 256 it had 64
/// CPUs online after 200 s, and seed 003 on `6.12-min` without the speed-ups
/// had no report after 17 minutes.
pub const TCG_MAX_VCPUS_PER_HOST_CORE_PLAIN: u32 = 64;

/// Host CPUs this process may run on (sched_getaffinity), at least 1.
pub fn host_cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
}

/// Refuse a TCG guest too large to boot on `host_cores` host CPUs, before QEMU
/// starts: more than [`TCG_MAX_VCPUS_PER_HOST_CORE`] per core with the speed-ups'
/// command line (`speedups`), [`TCG_MAX_VCPUS_PER_HOST_CORE_PLAIN`] without.
///
/// # Errors
/// A message naming the vCPU count, the host cores and what would work.
pub fn check_tcg_size(accel: Accel, vcpus: u32, host_cores: u32, speedups: bool) -> Result<(), String> {
    let per_core = if speedups { TCG_MAX_VCPUS_PER_HOST_CORE } else { TCG_MAX_VCPUS_PER_HOST_CORE_PLAIN };
    if accel == Accel::Kvm || vcpus <= per_core.saturating_mul(host_cores) {
        return Ok(());
    }
    let hint = if !speedups && vcpus <= TCG_MAX_VCPUS_PER_HOST_CORE.saturating_mul(host_cores) {
        format!("without --no-speedups (up to {TCG_MAX_VCPUS_PER_HOST_CORE} per core), ")
    } else {
        String::new()
    };
    let cores = if host_cores == 1 { "1 host core".to_string() } else { format!("{host_cores} host cores") };
    Err(format!(
        "{vcpus} vCPUs under TCG on {cores}: at most {per_core} vCPUs per host core were measured to reach \
         the guest report{}; run {hint}on a host with at least {} cores, or with KVM (`--accel kvm`) where it \
         runs guests",
        if speedups { " (256 on 2 cores)" } else { " without the speed-ups" },
        vcpus.div_ceil(per_core)
    ))
}

/// Errors choosing the accelerator.
#[derive(Debug, thiserror::Error)]
#[error("KVM was requested but cannot run a vCPU here: {0}")]
pub struct AccelError(pub String);

/// Resolve the choice for a guest with `vcpus` vCPUs.
///
/// # Errors
/// [`AccelError`] when KVM is forced and [`probe_kvm`] fails.
pub fn choose(choice: AccelChoice, vcpus: u32) -> Result<Accel, AccelError> {
    let tcg = if vcpus >= TCG_MULTI_FROM_VCPUS { Accel::TcgMulti } else { Accel::TcgSingle };
    match choice {
        AccelChoice::Tcg => Ok(tcg),
        AccelChoice::TcgSingle => Ok(Accel::TcgSingle),
        AccelChoice::TcgMulti => Ok(Accel::TcgMulti),
        AccelChoice::Kvm => probe_kvm().map(|_| Accel::Kvm).map_err(AccelError),
        AccelChoice::Auto => Ok(if probe_kvm().is_ok() { Accel::Kvm } else { tcg }),
    }
}

/// Check that `/dev/kvm` runs a vCPU: create a VM with one page of memory
/// holding `mov al, 0x2a; out 0x10, al; hlt` (real mode), run it, and expect an
/// I/O exit on port 0x10 with 0x2a and then a HLT exit. Opening `/dev/kvm` is not
/// enough evidence on nested hosts. Gives up after 5 s.
///
/// # Errors
/// A description of the step that failed.
pub fn probe_kvm() -> Result<(), String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run_probe());
    });
    rx.recv_timeout(Duration::from_secs(5)).unwrap_or_else(|_| Err("the probe vCPU did not exit within 5 s".into()))
}

/// One page of anonymous memory, unmapped on drop.
struct Page(*mut libc::c_void);

const PAGE: usize = 4096;

impl Page {
    fn new() -> Result<Page, String> {
        // SAFETY: anonymous private mapping of one page; no file, no fixed address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        Ok(Page(p))
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        // SAFETY: self.0 is the start of a PAGE-sized mapping made in Page::new.
        unsafe { libc::munmap(self.0, PAGE) };
    }
}

fn run_probe() -> Result<(), String> {
    use kvm_ioctls::{Kvm, VcpuExit};
    const GPA: u64 = 0x1000;
    let code: [u8; 5] = [0xb0, 0x2a, 0xe6, 0x10, 0xf4];
    let page = Page::new()?;
    // SAFETY: the mapping is PAGE bytes long, writable, and code is shorter.
    unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), page.0.cast::<u8>(), code.len()) };
    let kvm = Kvm::new().map_err(|e| format!("open /dev/kvm: {e}"))?;
    let vm = kvm.create_vm().map_err(|e| format!("KVM_CREATE_VM: {e}"))?;
    let region = kvm_bindings::kvm_userspace_memory_region {
        slot: 0,
        guest_phys_addr: GPA,
        memory_size: PAGE as u64,
        userspace_addr: page.0 as u64,
        flags: 0,
    };
    // SAFETY: the region points at `page`, which outlives `vm` (declared before it,
    // dropped after it), and it is the VM's only region.
    unsafe { vm.set_user_memory_region(region) }.map_err(|e| format!("KVM_SET_USER_MEMORY_REGION: {e}"))?;
    let mut vcpu = vm.create_vcpu(0).map_err(|e| format!("KVM_CREATE_VCPU: {e}"))?;
    let mut sregs = vcpu.get_sregs().map_err(|e| format!("KVM_GET_SREGS: {e}"))?;
    sregs.cs.base = 0;
    sregs.cs.selector = 0;
    vcpu.set_sregs(&sregs).map_err(|e| format!("KVM_SET_SREGS: {e}"))?;
    let regs = kvm_bindings::kvm_regs { rip: GPA, rflags: 2, ..Default::default() };
    vcpu.set_regs(&regs).map_err(|e| format!("KVM_SET_REGS: {e}"))?;
    let mut saw_out = false;
    for _ in 0..4 {
        match vcpu.run().map_err(|e| format!("KVM_RUN: {e}"))? {
            VcpuExit::IoOut(0x10, data) if data.first() == Some(&0x2a) => saw_out = true,
            VcpuExit::Hlt if saw_out => return Ok(()),
            other => return Err(format!("unexpected vCPU exit {other:?}")),
        }
    }
    Err("the probe program did not halt".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcg_thread_mode_follows_the_vcpu_count() {
        assert_eq!(choose(AccelChoice::Tcg, 8).expect("tcg"), Accel::TcgSingle);
        // Crossover measured between 32 and 64 vCPUs (see TCG_MULTI_FROM_VCPUS).
        assert_eq!(choose(AccelChoice::Tcg, 32).expect("tcg"), Accel::TcgSingle);
        assert_eq!(choose(AccelChoice::Tcg, 64).expect("tcg"), Accel::TcgMulti);
        assert_eq!(choose(AccelChoice::Tcg, 256).expect("tcg"), Accel::TcgMulti);
    }

    #[test]
    fn tcg_refuses_guests_too_large_for_the_host() {
        // Measured (see the constants): 256 on 2 cores works with Debian's and the minimal
        // kernel with the speed-ups; without them 128 does.
        assert!(check_tcg_size(Accel::TcgMulti, 256, 2, true).is_ok());
        let e = check_tcg_size(Accel::TcgMulti, 257, 2, true).expect_err("257 on 2 cores");
        assert!(e.contains("257 vCPUs under TCG on 2 host cores") && e.contains("at least 3 cores"), "{e}");
        assert!(check_tcg_size(Accel::TcgMulti, 512, 4, true).is_ok());
        assert!(check_tcg_size(Accel::Kvm, 1024, 2, true).is_ok());
        assert!(check_tcg_size(Accel::TcgMulti, 128, 2, false).is_ok());
        let e = check_tcg_size(Accel::TcgMulti, 256, 2, false).expect_err("256 plain");
        assert!(e.contains("without --no-speedups") && e.contains("at least 4 cores"), "{e}");
        let e = check_tcg_size(Accel::TcgMulti, 200, 1, true).expect_err("1 core");
        assert!(e.contains("on 1 host core:"), "{e}");
    }

    #[test]
    fn accel_names_parse() {
        assert_eq!("kvm".parse::<AccelChoice>(), Ok(AccelChoice::Kvm));
        assert!("xen".parse::<AccelChoice>().is_err());
    }

    #[test]
    fn probe_returns_instead_of_hanging() {
        // Either result is fine (depends on the host); it must come back.
        let _ = probe_kvm();
    }
}
