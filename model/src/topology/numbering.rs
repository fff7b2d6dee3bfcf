//! CPU numbering: file CPU id ↔ (socket, die, core, thread) ↔ QEMU cpu index.
//!
//! QEMU numbers CPUs with threads innermost:
//! `cpu index = ((socket * dies + die) * cores + core) * threads + thread`
//! (`-smp …,sockets=S,dies=D,cores=C,threads=T`; `-numa node,cpus=` takes these indices).
//! QEMU's ACPI MADT lists CPUs in cpu-index order and Linux x86 gives logical CPU ids in
//! MADT order, so **in a QEMU guest, Linux CPU id = QEMU cpu index** (siblings are N, N+1).
//!
//! Real machines often number the first thread of every core first and the second
//! threads after them (seed 003, AMD EPYC 7763: node 0 = `0-7,128-135`, so CPU N and
//! N+128 are siblings). A topology file says which scheme its CPU ids follow
//! ([`CpuNumbering`]); the model works in the file's ids, and
//! [`super::Topology::qemu_index`] / [`super::Topology::cpu_of_qemu_index`] translate.

use serde::{Deserialize, Serialize};

/// How a file's CPU ids map onto sockets, dies, cores and threads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuNumbering {
    /// `id = global_core * threads + thread` (QEMU cpu index; siblings N, N+1).
    #[default]
    Qemu,
    /// `id = thread * total_cores + global_core` (Linux on most real x86 servers;
    /// siblings N, N + total_cores).
    LinuxSmtOuter,
}

/// The `-smp` shape: sockets × dies × cores (per die) × threads (per core).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CpuShape {
    /// Sockets (≥ 1).
    pub sockets: u32,
    /// Dies per socket (≥ 1).
    pub dies: u32,
    /// Cores per die (≥ 1).
    pub cores: u32,
    /// Threads per core (≥ 1).
    pub threads: u32,
}

/// Where one CPU sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CpuLocation {
    /// Socket index.
    pub socket: u32,
    /// Die index within the socket.
    pub die: u32,
    /// Core index within the die.
    pub core: u32,
    /// Thread index within the core.
    pub thread: u32,
}

impl CpuShape {
    /// Total cores (`sockets * dies * cores`).
    pub fn total_cores(&self) -> u32 {
        self.sockets * self.dies * self.cores
    }

    /// Total CPUs (`total_cores * threads`).
    pub fn total_cpus(&self) -> u32 {
        self.total_cores() * self.threads
    }

    /// Physical core id of a location: `(socket * dies + die) * cores + core`
    /// (the "Cores" column of the seeds' tables).
    pub fn global_core(&self, loc: CpuLocation) -> u32 {
        (loc.socket * self.dies + loc.die) * self.cores + loc.core
    }

    fn location_of_core(&self, global_core: u32, thread: u32) -> CpuLocation {
        CpuLocation {
            socket: global_core / (self.dies * self.cores),
            die: global_core / self.cores % self.dies,
            core: global_core % self.cores,
            thread,
        }
    }

    /// QEMU cpu index of a location (threads innermost).
    pub fn qemu_index(&self, loc: CpuLocation) -> u32 {
        self.global_core(loc) * self.threads + loc.thread
    }

    /// Location of a QEMU cpu index (`idx < total_cpus()`).
    pub fn location_of_qemu_index(&self, idx: u32) -> CpuLocation {
        self.location_of_core(idx / self.threads, idx % self.threads)
    }

    /// Location of a CPU id under `numbering` (`cpu < total_cpus()`).
    pub fn location(&self, numbering: CpuNumbering, cpu: u32) -> CpuLocation {
        match numbering {
            CpuNumbering::Qemu => self.location_of_qemu_index(cpu),
            CpuNumbering::LinuxSmtOuter => {
                let total = self.total_cores();
                self.location_of_core(cpu % total, cpu / total)
            }
        }
    }

    /// CPU id of a location under `numbering`.
    pub fn cpu_id(&self, numbering: CpuNumbering, loc: CpuLocation) -> u32 {
        match numbering {
            CpuNumbering::Qemu => self.qemu_index(loc),
            CpuNumbering::LinuxSmtOuter => loc.thread * self.total_cores() + self.global_core(loc),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPYC: CpuShape = CpuShape { sockets: 2, dies: 1, cores: 64, threads: 2 };

    #[test]
    fn qemu_numbering_puts_threads_innermost() {
        let s = CpuShape { sockets: 2, dies: 2, cores: 3, threads: 2 };
        let loc = s.location(CpuNumbering::Qemu, 17);
        // 17 = ((1*2 + 0)*3 + 2)*2 + 1
        assert_eq!(loc, CpuLocation { socket: 1, die: 0, core: 2, thread: 1 });
        assert_eq!(s.qemu_index(loc), 17);
    }

    #[test]
    fn linux_smt_outer_matches_seed_003() {
        // Seed 003: node0 = 0-7,128-135, so CPU 128 is the second thread of core 0.
        let loc = EPYC.location(CpuNumbering::LinuxSmtOuter, 128);
        assert_eq!(loc, CpuLocation { socket: 0, die: 0, core: 0, thread: 1 });
        assert_eq!(EPYC.qemu_index(loc), 1);
        let loc = EPYC.location(CpuNumbering::LinuxSmtOuter, 247);
        assert_eq!((loc.socket, loc.core, loc.thread), (1, 55, 1));
        for cpu in 0..EPYC.total_cpus() {
            let l = EPYC.location(CpuNumbering::LinuxSmtOuter, cpu);
            assert_eq!(EPYC.cpu_id(CpuNumbering::LinuxSmtOuter, l), cpu);
            assert_eq!(EPYC.location_of_qemu_index(EPYC.qemu_index(l)), l);
        }
    }
}
