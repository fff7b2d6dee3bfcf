//! [`ScenarioProblem`]: what is wrong with a `[scenario]` field (its own module so that
//! `error` and `scenario` do not import each other).

use crate::cpulist::CpuMask;
use crate::text::{agree, plural};

/// What is wrong with a `[scenario]` field: a CPU state or policy the guest kernel cannot
/// have, so no run is started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioProblem {
    /// `irqbalance = true` with fewer than two CPUs online after the probe.
    #[error(
        "needs at least two online CPUs after the probe: irqbalance 1.9 exits at start on a single CPU \
         (\"Balancing is ineffective on systems with a single cpu\")"
    )]
    IrqbalanceOneCpu,
    /// `maxcpus` outside 1..=CPUs.
    #[error("{value}: must be 1..={ncpu} (the machine has {ncpu} CPUs; maxcpus=0 would boot without SMP)")]
    MaxCpus {
        /// The value given.
        value: i64,
        /// CPUs of the machine.
        ncpu: u32,
    },
    /// A list names CPU 0, which x86 Linux cannot offline.
    #[error(
        "CPU 0 cannot go offline: x86 Linux has no /sys/devices/system/cpu/cpu0/online (CPU 0 hotplug was \
         removed in 6.5; 6.1 needs the cpu0_hotplug parameter, which the rig does not set)"
    )]
    CpuZero,
    /// CPUs to offline that are not online at that point.
    #[error("{} {} not online {when}", .cpus.named(), agree(.cpus.count(), "is", "are"))]
    NotOnline {
        /// The CPUs.
        cpus: CpuMask,
        /// When (`at boot (maxcpus = 4)`, `after offline`).
        when: String,
    },
    /// CPUs to online that are online already.
    #[error("{} {} online already after the probe and offline_after", .cpus.named(), agree(.cpus.count(), "is", "are"))]
    AlreadyOnline {
        /// The CPUs.
        cpus: CpuMask,
    },
    /// A policy that names every CPU (no housekeeping CPU would be left).
    #[error("names every CPU ({cpus}): the kernel keeps at least one housekeeping CPU and would ignore it")]
    EveryCpu {
        /// The CPUs.
        cpus: CpuMask,
    },
    /// An `isolcpus=` flag the kernel does not know.
    #[error("{flag:?} is not an isolcpus flag (nohz, domain, managed_irq)")]
    IsolcpusFlag {
        /// The flag.
        flag: String,
    },
    /// CPUs the machine does not have.
    #[error("{} {} not exist (the machine has {})", .cpus.named(), agree(.cpus.count(), "does", "do"), plural(.ncpu, "CPU"))]
    Beyond {
        /// The CPUs.
        cpus: CpuMask,
        /// CPUs of the machine.
        ncpu: u32,
    },
    /// `isolcpus=nohz,…` and `nohz_full=` with different CPUs.
    #[error(
        "isolcpus with the nohz flag names {isolcpus} but nohz_full names {nohz_full}: the kernel keeps the \
         first and ignores the second (\"Housekeeping: nohz_full= must match isolcpus=\", \
         kernel/sched/isolation.c)"
    )]
    NohzMismatch {
        /// isolcpus' CPUs.
        isolcpus: CpuMask,
        /// nohz_full's CPUs.
        nohz_full: CpuMask,
    },
    /// An empty cpulist where CPUs are needed.
    #[error("an empty cpulist")]
    Empty,
}
