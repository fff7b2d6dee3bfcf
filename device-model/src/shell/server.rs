//! The vfio-user shell: serves the MANA VF to one QEMU `vfio-user-pci`
//! client over a unix socket (rust-vmm `vfio_user` 0.1.7).
//!
//! Region layout (VFIO PCI region indices):
//! - 0: BAR0, 64-bit memory, [`Bar0Handler::size`] bytes, forwarded to the device core;
//! - 2: BAR2, 32-bit memory, 64 KiB: MSI-X table (offset 0) and PBA (offset 0x8000);
//! - 7: PCI configuration space, 4 KiB ([`ConfigSpace`]);
//! - all others: size 0.
//!
//! IRQ indices: MSI-X with [`DeviceConfig::msix_table_size`] vectors
//! (eventfd, resizable so QEMU enables vectors one by one); ERR with one
//! eventfd that is never signalled (no PCIe errors are emulated); INTx, MSI
//! and REQ with 0 vectors.
//!
//! Readiness: the socket file exists and accepts connections as soon as
//! [`DeviceServer::bind`] returns.
//!
//! Each connection is served by the `vfio_user` crate's [`Server`] behind
//! the device's front ([`crate::shell::front`]): the client talks to the front,
//! which checks each message and passes it on over a private socket, and
//! puts the errno of a refusal into the reply (the crate would send 0).

use crate::bar::{Bar0Factory, Bar0Handler, DmaMemory};
use crate::interrupt::InterruptSink;
use crate::shell::dma_map::{DmaAccess, DmaError, DmaMappings};
use crate::shell::front::Refusals;
use crate::shell::msix::{MsixError, MsixVectors};
use crate::shell::pci::{BarKind, BarSpec, ConfigSpace, PciError, CONFIG_SPACE_SIZE, MSIX_BAR_INDEX, MSIX_BAR_SIZE};
use mana_device_api::config::DeviceConfig;
use mana_device_api::snapshot::Snapshot;
use mana_device_api::status::{DeviceStatus, ShellStatus};
use std::fs::File;
use std::io;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use thiserror::Error;
use vfio_bindings::bindings::vfio::{
    vfio_region_info, VFIO_IRQ_INFO_EVENTFD, VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD,
    VFIO_IRQ_SET_DATA_NONE, VFIO_PCI_BAR0_REGION_INDEX, VFIO_PCI_BAR2_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX,
    VFIO_PCI_ERR_IRQ_INDEX, VFIO_PCI_MSIX_IRQ_INDEX, VFIO_PCI_NUM_IRQS, VFIO_PCI_NUM_REGIONS,
    VFIO_REGION_INFO_FLAG_READ, VFIO_REGION_INFO_FLAG_WRITE,
};
use vfio_user::{DmaMapFlags, DmaUnmapFlags, IrqInfo, Server, ServerBackend, ServerRegion};
use vm_memory::{GuestMemoryAtomic, GuestMemoryMmap};

/// Bad guest/client requests logged at `warn` before the log goes quiet.
const WARN_LIMIT: u64 = 32;

/// Errors setting up or running the server.
#[derive(Debug, Error)]
pub enum ServerError {
    /// The device configuration cannot be turned into a PCI function.
    #[error("invalid device configuration")]
    Config(#[source] PciError),
    /// The device core reports a BAR0 size that is not a power of two >= 4 KiB.
    #[error("device core BAR0 size {0:#x} is not a power of two of at least 4 KiB")]
    Bar0Size(u64),
    /// Something already exists at the socket path.
    #[error("{0}: socket path already exists (stale socket of an earlier run?)")]
    SocketExists(PathBuf),
    /// bind() failed.
    #[error("{path}: cannot bind the vfio-user socket")]
    Bind {
        /// Socket path.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: io::Error,
    },
    /// accept() failed, or the private socket to the `vfio_user` server
    /// could not be set up.
    #[error("vfio-user connection: {what}")]
    Accept {
        /// Which step.
        what: &'static str,
        /// What went wrong.
        #[source]
        source: io::Error,
    },
    /// The front stopped serving (client socket, framing).
    #[error("vfio-user connection failed")]
    Front(#[source] crate::shell::front::FrontError),
    /// The `vfio_user` server behind the front failed.
    #[error("vfio-user connection failed")]
    Connection(#[source] vfio_user::Error),
    /// The status file could not be written.
    #[error("{path}: cannot write the status file")]
    Status {
        /// Status file path.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: io::Error,
    },
}

/// Errors from a `SET_IRQS` request.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum IrqError {
    /// The MSI-X index refused the request.
    #[error(transparent)]
    Msix(#[from] MsixError),
    /// A request for an IRQ index that has no such vectors or action.
    #[error("SET_IRQS index {index} flags {flags:#x} vectors {start}+{count} is not supported")]
    Unsupported {
        /// VFIO IRQ index.
        index: u32,
        /// `vfio_irq_set` flags.
        flags: u32,
        /// First vector.
        start: u32,
        /// Number of vectors.
        count: u32,
    },
}

/// Produces the device core's snapshot (see [`crate::shell::locked_core::mana_core`]);
/// `None` while there is no core to look at.
pub type CoreStatus = Box<dyn Fn() -> Option<Snapshot> + Send + Sync>;

/// The emulated PCI function: config space, BAR0 (device core), MSI-X BAR,
/// interrupts and DMA map.
pub struct ManaFunction {
    config: DeviceConfig,
    pci: ConfigSpace,
    bar0: Box<dyn Bar0Handler>,
    bar0_size: u64,
    msix: Arc<MsixVectors>,
    dma: DmaMappings,
    memory: DmaMemory,
    resets: u64,
    bad_requests: u64,
    /// QEMU's error-notification eventfd (VFIO_PCI_ERR_IRQ_INDEX); kept, never written.
    err_eventfd: Option<File>,
}

impl std::fmt::Debug for ManaFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManaFunction")
            .field("config", &self.config)
            .field("bar0_size", &self.bar0_size)
            .finish_non_exhaustive()
    }
}

impl ManaFunction {
    /// Builds the function: creates the shared [`DmaMemory`] (empty until
    /// DMA_MAP) and the MSI-X vectors, then the device core with `factory`.
    ///
    /// # Errors
    /// [`ServerError::Config`] for an MSI-X table size outside 1..=2048,
    /// [`ServerError::Bar0Size`] for a core with a bad BAR0 size.
    pub fn new(config: DeviceConfig, factory: Bar0Factory) -> Result<Self, ServerError> {
        let memory: DmaMemory = GuestMemoryAtomic::new(GuestMemoryMmap::new());
        let msix = Arc::new(MsixVectors::new(config.msix_table_size));
        // Validate the table size before the core is built (MsixVectors clamps).
        ConfigSpace::new_mana_vf(&Self::bars(0x1000), config.msix_table_size).map_err(ServerError::Config)?;
        let sink: Arc<dyn InterruptSink> = msix.clone();
        let bar0 = factory(memory.clone(), sink);
        let bar0_size = bar0.size();
        if !bar0_size.is_power_of_two() || bar0_size < 0x1000 {
            return Err(ServerError::Bar0Size(bar0_size));
        }
        let pci =
            ConfigSpace::new_mana_vf(&Self::bars(bar0_size), config.msix_table_size).map_err(ServerError::Config)?;
        Ok(Self {
            config,
            pci,
            bar0,
            bar0_size,
            msix,
            dma: DmaMappings::new(memory.clone()),
            memory,
            resets: 0,
            bad_requests: 0,
            err_eventfd: None,
        })
    }

    fn bars(bar0_size: u64) -> [BarSpec; 2] {
        [
            BarSpec { index: 0, size: bar0_size, kind: BarKind::Memory64 },
            BarSpec { index: MSIX_BAR_INDEX, size: MSIX_BAR_SIZE, kind: BarKind::Memory32 },
        ]
    }

    /// The region table announced to the client (index = VFIO PCI region index).
    pub fn regions(&self) -> Vec<ServerRegion> {
        (0..VFIO_PCI_NUM_REGIONS)
            .map(|index| {
                let size = match index {
                    VFIO_PCI_BAR0_REGION_INDEX => self.bar0_size,
                    VFIO_PCI_BAR2_REGION_INDEX => MSIX_BAR_SIZE,
                    VFIO_PCI_CONFIG_REGION_INDEX => CONFIG_SPACE_SIZE as u64,
                    _ => 0,
                };
                let flags = if size > 0 { VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE } else { 0 };
                ServerRegion {
                    region_info: vfio_region_info {
                        argsz: std::mem::size_of::<vfio_region_info>() as u32,
                        flags,
                        index,
                        cap_offset: 0,
                        size,
                        offset: 0,
                    },
                    sparse_areas: Vec::new(),
                    mmap_fd: None,
                }
            })
            .collect()
    }

    /// The IRQ table announced to the client (index = VFIO PCI IRQ index).
    pub fn irqs(&self) -> Vec<IrqInfo> {
        (0..VFIO_PCI_NUM_IRQS)
            .map(|index| match index {
                // No NORESIZE flag: QEMU then adds vectors one by one as the
                // guest unmasks them instead of re-enabling the whole table.
                VFIO_PCI_MSIX_IRQ_INDEX => {
                    IrqInfo { index, flags: VFIO_IRQ_INFO_EVENTFD, count: u32::from(self.msix.table_size()) }
                }
                // One error-notification eventfd: the emulated device never
                // reports PCIe errors, but QEMU warns "Could not enable error
                // recovery for the device" when the index is empty.
                VFIO_PCI_ERR_IRQ_INDEX => IrqInfo { index, flags: VFIO_IRQ_INFO_EVENTFD, count: 1 },
                _ => IrqInfo { index, flags: 0, count: 0 },
            })
            .collect()
    }

    /// The MSI-X vectors (the [`InterruptSink`] the core raises through).
    pub fn msix(&self) -> &Arc<MsixVectors> {
        &self.msix
    }

    /// The guest memory the core uses for DMA.
    pub fn dma_memory(&self) -> &DmaMemory {
        &self.memory
    }

    /// Current state for the status file.
    pub fn status(&self, connected: bool) -> ShellStatus {
        ShellStatus {
            config: self.config.clone(),
            connected,
            pci_command: self.pci.command(),
            resets: self.resets,
            msix: self.msix.snapshot(),
            dma_ranges: self.dma.ranges(),
            bad_requests: self.bad_requests,
            refused_messages: 0,
            refused_requests: 0,
        }
    }

    fn bad_request(&mut self, what: std::fmt::Arguments<'_>) {
        self.bad_requests += 1;
        if self.bad_requests <= WARN_LIMIT {
            tracing::warn!("bad request: {what}");
        } else if self.bad_requests == WARN_LIMIT + 1 {
            tracing::warn!("too many bad requests; no longer logging them");
        }
    }

    fn bar0_access_ok(&self, offset: u64, len: usize) -> bool {
        matches!(len, 1 | 2 | 4 | 8)
            && offset % len as u64 == 0
            && offset.checked_add(len as u64).is_some_and(|end| end <= self.bar0_size)
    }

    /// Which part of the device a region access of `len` bytes at `offset` reaches.
    fn route(&self, region: u32, offset: u64, len: usize) -> Option<Target> {
        match region {
            VFIO_PCI_CONFIG_REGION_INDEX => Some(Target::Config),
            VFIO_PCI_BAR0_REGION_INDEX if self.bar0_access_ok(offset, len) => Some(Target::Bar0),
            VFIO_PCI_BAR2_REGION_INDEX if offset.checked_add(len as u64).is_some_and(|end| end <= MSIX_BAR_SIZE) => {
                Some(Target::MsixBar)
            }
            _ => None,
        }
    }

    /// Region read from the client. Never fails: reads the device cannot
    /// answer (unknown region, bad offset or length) return all ones and are
    /// logged, as a PCI read that nobody claims does.
    pub fn read(&mut self, region: u32, offset: u64, data: &mut [u8]) {
        self.access(region, offset, Access::Read(data));
    }

    /// Region write from the client. Writes the device cannot take are
    /// dropped and logged.
    pub fn write(&mut self, region: u32, offset: u64, data: &[u8]) {
        self.access(region, offset, Access::Write(data));
    }

    fn access(&mut self, region: u32, offset: u64, mut access: Access<'_>) {
        let len = access.len();
        let result = match self.route(region, offset, len) {
            None => Err(AccessError::Unclaimed { offset, len }),
            Some(Target::Config) => match &mut access {
                Access::Read(data) => self.pci.read(offset, data),
                Access::Write(data) => self.pci.write(offset, data),
            }
            .map_err(AccessError::Config),
            Some(Target::Bar0) => {
                match &mut access {
                    Access::Read(data) => self.bar0.read(offset, data),
                    Access::Write(data) => self.bar0.write(offset, data),
                }
                Ok(())
            }
            Some(Target::MsixBar) => {
                match &mut access {
                    Access::Read(data) => self.msix.bar_read(offset, data),
                    Access::Write(data) => self.msix.bar_write(offset, data),
                }
                Ok(())
            }
        };
        if let Err(err) = result {
            if let Access::Read(data) = access {
                data.fill(0xff);
            }
            self.bad_request(format_args!("region {region}: {err}"));
        }
    }

    /// Device reset (VFIO_USER_DEVICE_RESET): config space to power-on
    /// values, MSI-X off with all eventfds and pending bits dropped, core reset.
    /// The DMA map belongs to the client and stays.
    pub fn reset(&mut self) {
        self.resets += 1;
        self.pci.reset();
        self.msix.reset();
        self.bar0.reset();
        tracing::info!(resets = self.resets, "device reset");
    }

    /// DMA_MAP of `size` bytes at guest-physical `iova`, from `fd` at `offset`.
    ///
    /// # Errors
    /// [`DmaError`] for empty/wrapping/overlapping ranges or a failed mmap.
    pub fn dma_map(
        &mut self,
        flags: DmaMapFlags,
        offset: u64,
        iova: u64,
        size: u64,
        fd: Option<File>,
    ) -> Result<(), DmaError> {
        let access = if flags.contains(DmaMapFlags::WRITE) { DmaAccess::ReadWrite } else { DmaAccess::ReadOnly };
        self.dma.map(iova, size, offset, access, fd).map(|_| ())
    }

    /// DMA_UNMAP of `size` bytes at `iova` (or everything with `UNMAP_ALL`).
    ///
    /// # Errors
    /// [`DmaError`] for a bad range or one that would split a mapping.
    pub fn dma_unmap(&mut self, flags: DmaUnmapFlags, iova: u64, size: u64) -> Result<(), DmaError> {
        if flags.contains(DmaUnmapFlags::UNMAP_ALL) {
            self.dma.unmap_all();
            return Ok(());
        }
        self.dma.unmap(iova, size).map(|_| ())
    }

    /// SET_IRQS for IRQ `index`. MSI-X goes to [`MsixVectors::set_irqs`];
    /// ERR keeps its one eventfd (never signalled); the other indices have no
    /// vectors and only accept "disable" (count 0).
    ///
    /// # Errors
    /// [`IrqError::Msix`] for a request the MSI-X table cannot take,
    /// [`IrqError::Unsupported`] for anything else on another index.
    pub fn set_irqs(&mut self, index: u32, flags: u32, start: u32, count: u32, fds: Vec<File>) -> Result<(), IrqError> {
        if index == VFIO_PCI_MSIX_IRQ_INDEX {
            return Ok(self.msix.set_irqs(flags, start, count, fds)?);
        }
        let disable = VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER;
        let eventfd = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
        match (index, flags, start, count) {
            (_, f, _, 0) if f == disable => {
                if index == VFIO_PCI_ERR_IRQ_INDEX {
                    self.err_eventfd = None;
                }
                Ok(())
            }
            (VFIO_PCI_ERR_IRQ_INDEX, f, 0, 1) if f == eventfd && fds.len() <= 1 => {
                self.err_eventfd = fds.into_iter().next();
                Ok(())
            }
            _ => Err(IrqError::Unsupported { index, flags, start, count }),
        }
    }
}

/// Why a region access was not served.
#[derive(Debug, Error)]
enum AccessError {
    #[error(transparent)]
    Config(PciError),
    #[error("no register claims {len} bytes at offset {offset:#x}")]
    Unclaimed { offset: u64, len: usize },
}

/// A region access: the bytes to fill or the bytes written.
enum Access<'a> {
    Read(&'a mut [u8]),
    Write(&'a [u8]),
}

impl Access<'_> {
    fn len(&self) -> usize {
        match self {
            Access::Read(data) => data.len(),
            Access::Write(data) => data.len(),
        }
    }
}

/// The part of the function a region access reaches.
#[derive(Debug, Clone, Copy)]
enum Target {
    Config,
    Bar0,
    MsixBar,
}

/// [`ServerBackend`] over a shared [`ManaFunction`], so that a status
/// request from another thread can look at the device between messages.
struct Backend {
    function: Arc<Mutex<ManaFunction>>,
    connected: Arc<AtomicBool>,
    refusals: Arc<Refusals>,
}

impl Backend {
    fn lock(&self) -> MutexGuard<'_, ManaFunction> {
        self.connected.store(true, Ordering::Relaxed);
        lock(&self.function)
    }
}

fn lock(function: &Mutex<ManaFunction>) -> MutexGuard<'_, ManaFunction> {
    // A panic in the core while handling a message is a bug; keep serving
    // the state as it is rather than wedge the status reporter.
    function.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Backend {
    /// Records the refusal's errno for the front ([`crate::shell::front`]) and
    /// turns it into the `io::Error` the `vfio_user` crate takes.
    fn refuse(&self, err: impl std::error::Error + Send + Sync + 'static, errno: i32) -> io::Error {
        let count = self.refusals.refused_by_device() + 1;
        if count <= WARN_LIMIT || count.is_power_of_two() {
            tracing::warn!(%err, errno, count, "request refused");
        }
        self.refusals.record(errno);
        io::Error::new(io::ErrorKind::InvalidInput, err)
    }
}

impl ServerBackend for Backend {
    fn region_read(&mut self, region: u32, offset: u64, data: &mut [u8]) -> io::Result<()> {
        self.lock().read(region, offset, data);
        Ok(())
    }

    fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> io::Result<()> {
        self.lock().write(region, offset, data);
        Ok(())
    }

    fn dma_map(
        &mut self,
        flags: DmaMapFlags,
        offset: u64,
        address: u64,
        size: u64,
        fd: Option<File>,
    ) -> io::Result<()> {
        let result = self.lock().dma_map(flags, offset, address, size, fd);
        result.map_err(|err| {
            let errno = err.errno();
            self.refuse(err, errno)
        })
    }

    fn dma_unmap(&mut self, flags: DmaUnmapFlags, address: u64, size: u64) -> io::Result<()> {
        let result = self.lock().dma_unmap(flags, address, size);
        result.map_err(|err| {
            let errno = err.errno();
            self.refuse(err, errno)
        })
    }

    fn reset(&mut self) -> io::Result<()> {
        self.lock().reset();
        Ok(())
    }

    fn set_irqs(&mut self, index: u32, flags: u32, start: u32, count: u32, fds: Vec<File>) -> io::Result<()> {
        tracing::debug!(index, flags, start, count, fds = fds.len(), "SET_IRQS");
        let result = self.lock().set_irqs(index, flags, start, count, fds);
        result.map_err(|err| self.refuse(err, libc::EINVAL))
    }
}

/// A bound vfio-user socket with the device behind it.
pub struct DeviceServer {
    listener: UnixListener,
    path: PathBuf,
    irqs: Vec<IrqInfo>,
    regions: Vec<ServerRegion>,
    function: Arc<Mutex<ManaFunction>>,
    connected: Arc<AtomicBool>,
    core_status: Arc<OnceLock<CoreStatus>>,
    refusals: Arc<Refusals>,
}

impl Drop for DeviceServer {
    /// Removes the socket file.
    fn drop(&mut self) {
        if self.path.exists() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl std::fmt::Debug for DeviceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceServer").field("path", &self.path).finish_non_exhaustive()
    }
}

/// A handle to look at a running server's device from another thread.
#[derive(Clone)]
pub struct StatusHandle {
    function: Arc<Mutex<ManaFunction>>,
    connected: Arc<AtomicBool>,
    core_status: Arc<OnceLock<CoreStatus>>,
    refusals: Arc<Refusals>,
}

impl StatusHandle {
    /// Current state of the shell (PCI function, MSI-X, DMA).
    pub fn status(&self) -> ShellStatus {
        let mut status = lock(&self.function).status(self.connected.load(Ordering::Relaxed));
        status.refused_messages = self.refusals.refused_by_front();
        status.refused_requests = self.refusals.refused_by_device();
        status
    }

    /// The shell's state and, if registered, the core's snapshot. The two
    /// are taken one after the other (not atomically), between messages.
    pub fn device_status(&self) -> DeviceStatus {
        let shell = self.status();
        let core = self.core_status.get().and_then(|snapshot| snapshot());
        DeviceStatus { shell, core }
    }

    /// Takes the device's lock and lets it go again: returns at once unless a
    /// client message is being handled, then when it is done. A serving thread
    /// stuck inside a message (a hang in the shell or the core, which runs under
    /// this lock) makes this block: the control channel's [`mana_device_api::control::Op::Ping`]
    /// is answered through here, so a controller that pings with a deadline
    /// sees such a hang.
    pub fn ping(&self) {
        drop(lock(&self.function));
    }

    /// Whether a client has sent a request the device handled.
    pub fn connected(&self) -> bool {
        self.connected.load(Ordering::Relaxed)
    }

    /// Writes [`Self::device_status`] as pretty JSON to `path` (via a temporary file
    /// and a rename, so readers never see half a file).
    ///
    /// # Errors
    /// [`ServerError::Status`] if the file cannot be written.
    pub fn write_status(&self, path: &Path) -> Result<(), ServerError> {
        let status = self.device_status();
        let err = |source| ServerError::Status { path: path.to_path_buf(), source };
        let json = serde_json::to_vec_pretty(&status).map_err(|e| err(e.into()))?;
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        std::fs::write(&tmp, json).map_err(err)?;
        std::fs::rename(&tmp, path).map_err(err)
    }
}

impl DeviceServer {
    /// Builds the device and binds the socket at `path`. When this returns,
    /// the socket file exists and QEMU can connect (that is the readiness
    /// signal for whoever starts the device).
    ///
    /// # Errors
    /// [`ServerError::SocketExists`] if `path` exists, [`ServerError::Bind`] if
    /// bind() fails, and the errors of [`ManaFunction::new`].
    pub fn bind(path: &Path, config: DeviceConfig, factory: Bar0Factory) -> Result<Self, ServerError> {
        if path.exists() {
            return Err(ServerError::SocketExists(path.to_path_buf()));
        }
        let function = ManaFunction::new(config, factory)?;
        let listener = UnixListener::bind(path).map_err(|source| match source.kind() {
            io::ErrorKind::AddrInUse => ServerError::SocketExists(path.to_path_buf()),
            _ => ServerError::Bind { path: path.to_path_buf(), source },
        })?;
        tracing::info!(socket = %path.display(), "vfio-user socket ready");
        Ok(Self {
            listener,
            path: path.to_path_buf(),
            irqs: function.irqs(),
            regions: function.regions(),
            function: Arc::new(Mutex::new(function)),
            connected: Arc::new(AtomicBool::new(false)),
            core_status: Arc::new(OnceLock::new()),
            refusals: Arc::new(Refusals::default()),
        })
    }

    /// Registers how to snapshot the device core for [`StatusHandle::device_status`].
    /// Only the first registration counts.
    pub fn set_core_status(&self, snapshot: CoreStatus) {
        if self.core_status.set(snapshot).is_err() {
            tracing::warn!("core status already registered; ignoring the second one");
        }
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A handle for status requests while [`Self::run`] is serving.
    pub fn status_handle(&self) -> StatusHandle {
        StatusHandle {
            function: Arc::clone(&self.function),
            connected: Arc::clone(&self.connected),
            core_status: Arc::clone(&self.core_status),
            refusals: Arc::clone(&self.refusals),
        }
    }

    /// Accepts one client and serves it until it disconnects (returns `Ok`).
    /// Dropping the server removes the socket file.
    ///
    /// # Errors
    /// [`ServerError::Accept`] if accept() fails, and those of [`Self::serve`].
    pub fn run(&self) -> Result<(), ServerError> {
        let (client, _) = self.listener.accept().map_err(|source| ServerError::Accept { what: "accept", source })?;
        self.serve(client)?;
        tracing::info!("vfio-user client disconnected");
        Ok(())
    }

    /// Serves one connected client (what [`Self::run`] accepted; a
    /// socketpair's end in tests and fuzzing) until it disconnects: the
    /// front ([`crate::shell::front::relay`]) in this thread, the `vfio_user`
    /// crate's server on a private socket in another.
    ///
    /// # Errors
    /// [`ServerError::Accept`] if the private socket cannot be set up,
    /// [`ServerError::Front`] if the client's socket or framing fails,
    /// [`ServerError::Connection`] if the `vfio_user` server fails.
    pub fn serve(&self, client: UnixStream) -> Result<(), ServerError> {
        let (server, inner) = self.start_inner()?;
        let mut backend = Backend {
            function: Arc::clone(&self.function),
            connected: Arc::clone(&self.connected),
            refusals: Arc::clone(&self.refusals),
        };
        let serving = std::thread::Builder::new()
            .name("vfio-user-device".into())
            .spawn(move || server.run(&mut backend))
            .map_err(|source| ServerError::Accept { what: "spawn the vfio-user server thread", source })?;
        let regions = self.regions.len() as u32;
        let relayed = crate::shell::front::relay(&client, &inner, &self.refusals, regions);
        // End of the front: the server sees end of file and returns.
        let _ = inner.shutdown(std::net::Shutdown::Both);
        let served = serving.join().unwrap_or(Err(vfio_user::Error::InvalidInput));
        relayed.map_err(ServerError::Front)?;
        served.map_err(ServerError::Connection)
    }

    /// The `vfio_user` server for one connection, listening on a socket in
    /// a fresh private (0700) folder that is removed again as soon as the
    /// front has connected, so that nobody else can: returns it and the
    /// front's end.
    fn start_inner(&self) -> Result<(Server, UnixStream), ServerError> {
        let step = |what| move |source| ServerError::Accept { what, source };
        let dir = tempfile::Builder::new().prefix("mana-device-").tempdir().map_err(step("create a private folder"))?;
        let path = dir.path().join("inner.sock");
        let listener = UnixListener::bind(&path).map_err(step("bind the private socket"))?;
        let front = UnixStream::connect(&path).map_err(step("connect the private socket"))?;
        drop(dir);
        let server =
            Server::from_owned_fd(std::os::fd::OwnedFd::from(listener), true, self.irqs.clone(), self.regions.clone());
        Ok((server, front))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::regs::{BAR0_SIZE, REG_SHM_OFFSET, SHM_OFFSET};
    use std::os::unix::fs::FileExt;
    use vfio_bindings::bindings::vfio::VFIO_PCI_REQ_IRQ_INDEX;
    use vm_memory::{Bytes, GuestAddress, GuestAddressSpace, GuestMemoryBackend};

    fn mana_core() -> Bar0Factory {
        crate::factory(DeviceConfig::default())
    }

    fn function(table_size: u16) -> ManaFunction {
        let config = DeviceConfig { msix_table_size: table_size, ..DeviceConfig::default() };
        ManaFunction::new(config, mana_core()).expect("valid")
    }

    #[test]
    fn region_info_sizes_bar0_msix_bar_and_config_space() {
        let f = function(65);
        let regions = f.regions();
        assert_eq!(regions.len(), VFIO_PCI_NUM_REGIONS as usize);
        let sizes: Vec<u64> = regions.iter().map(|r| r.region_info.size).collect();
        // BAR0 = the core's size, BAR2 = MSI-X 64 KiB, config 4 KiB.
        assert_eq!(sizes, vec![BAR0_SIZE, 0, 0x1_0000, 0, 0, 0, 0, 4096, 0]);
        let rw = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
        assert_eq!(regions[7].region_info.flags, rw);
        assert_eq!(regions[1].region_info.flags, 0);
    }

    #[test]
    fn msix_irq_index_has_table_size_vectors_and_is_resizable() {
        let f = function(17);
        let irqs = f.irqs();
        assert_eq!(irqs.len(), VFIO_PCI_NUM_IRQS as usize);
        let msix = irqs[VFIO_PCI_MSIX_IRQ_INDEX as usize];
        assert_eq!((msix.count, msix.flags), (17, VFIO_IRQ_INFO_EVENTFD));
        let err = irqs[VFIO_PCI_ERR_IRQ_INDEX as usize];
        assert_eq!((err.count, err.flags), (1, VFIO_IRQ_INFO_EVENTFD));
        assert!(irqs
            .iter()
            .filter(|i| ![VFIO_PCI_MSIX_IRQ_INDEX, VFIO_PCI_ERR_IRQ_INDEX].contains(&i.index))
            .all(|i| i.count == 0));
    }

    #[test]
    fn bar0_accesses_reach_the_core_and_bad_ones_read_all_ones() {
        let mut f = function(65);
        let mut qword = [0u8; 8];
        f.read(VFIO_PCI_BAR0_REGION_INDEX, REG_SHM_OFFSET, &mut qword);
        assert_eq!(u64::from_le_bytes(qword), SHM_OFFSET);
        f.read(VFIO_PCI_BAR0_REGION_INDEX, BAR0_SIZE, &mut qword);
        assert_eq!(qword, [0xff; 8], "past the end of BAR0");
        let mut odd = [0u8; 3];
        f.read(VFIO_PCI_BAR0_REGION_INDEX, 0, &mut odd);
        assert_eq!(odd, [0xff; 3], "3-byte access");
        f.read(5, 0, &mut qword);
        assert_eq!(qword, [0xff; 8], "BAR5 does not exist");
        assert_eq!(f.status(false).bad_requests, 3);
    }

    #[test]
    fn reset_restores_config_and_disables_msix() {
        let mut f = function(9);
        f.write(VFIO_PCI_CONFIG_REGION_INDEX, 4, &[0x06]);
        let flags = vfio_bindings::bindings::vfio::VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
        f.set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, flags, 0, 1, vec![]).expect("enable");
        assert!(f.status(true).msix.enabled);
        f.reset();
        let status = f.status(true);
        assert_eq!((status.pci_command, status.msix.enabled, status.resets), (0, false, 1));
    }

    #[test]
    fn other_irq_indices_only_accept_disable_and_the_err_eventfd() {
        let mut f = function(9);
        let none = VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER;
        let eventfd = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
        assert!(f.set_irqs(0, none, 0, 0, vec![]).is_ok());
        assert!(f.set_irqs(0, none, 0, 1, vec![]).is_err());
        let err_fd = memfd::MemfdOptions::default().create("err").expect("fd").into_file();
        let err = VFIO_PCI_ERR_IRQ_INDEX;
        assert!(f.set_irqs(err, eventfd, 0, 1, vec![err_fd]).is_ok());
        assert!(f.err_eventfd.is_some());
        assert!(f.set_irqs(err, none, 0, 0, vec![]).is_ok());
        assert!(f.err_eventfd.is_none());
        assert!(f.set_irqs(err, eventfd, 0, 2, vec![]).is_err());
        assert!(f.set_irqs(VFIO_PCI_REQ_IRQ_INDEX, eventfd, 0, 1, vec![]).is_err());
    }

    #[test]
    fn dma_map_publishes_guest_memory_to_the_core() {
        let mut f = function(9);
        let ram = memfd::MemfdOptions::default().create("ram").expect("memfd").into_file();
        ram.set_len(0x20_0000).expect("size");
        let fd = ram.try_clone().expect("dup");
        f.dma_map(DmaMapFlags::READ_WRITE, 0, 0x10_0000, 0x20_0000, Some(fd)).expect("map");
        f.dma_memory().memory().write_obj(0x1234_u16, GuestAddress(0x10_0002)).expect("write");
        let mut seen = [0u8; 2];
        ram.read_exact_at(&mut seen, 2).expect("read");
        assert_eq!(u16::from_le_bytes(seen), 0x1234);
        f.dma_unmap(DmaUnmapFlags::empty(), 0x10_0000, 0x20_0000).expect("unmap");
        assert_eq!(f.dma_memory().memory().num_regions(), 0);
        f.dma_map(DmaMapFlags::READ_WRITE, 0, 0, 0x1000, Some(ram)).expect("map");
        f.dma_unmap(DmaUnmapFlags::UNMAP_ALL, 0, 0).expect("unmap all");
        assert!(f.status(true).dma_ranges.is_empty());
    }

    #[test]
    fn arbitrary_region_accesses_never_panic() {
        let mut f = function(65);
        // A deterministic sequence: regions 0..=9, offsets near every
        // boundary and anywhere, lengths 0..=16 and a few large ones.
        let mut rng = manarig_model::random::Rng::new(0x9e37_79b9_7f4a_7c15);
        let mut next = || rng.next_u64();
        for _ in 0..20_000 {
            let region = (next() % 10) as u32;
            let offset = match next() % 4 {
                0 => next(),
                1 => u64::MAX - next() % 16,
                2 => next() % 0x1_0000,
                _ => BAR0_SIZE - next() % 16,
            };
            let len = match next() % 8 {
                0 => 4096,
                _ => (next() % 17) as usize,
            };
            let mut data = vec![0xa5_u8; len];
            if next() % 2 == 0 {
                f.read(region, offset, &mut data);
            } else {
                f.write(region, offset, &data);
            }
        }
        assert!(f.status(true).bad_requests > 0);
    }

    #[test]
    fn bad_configuration_is_an_error() {
        let config = DeviceConfig { msix_table_size: 0, ..DeviceConfig::default() };
        assert!(matches!(ManaFunction::new(config, mana_core()), Err(ServerError::Config(_))));
        struct Odd;
        impl Bar0Handler for Odd {
            fn size(&self) -> u64 {
                3000
            }
            fn read(&mut self, _: u64, _: &mut [u8]) {}
            fn write(&mut self, _: u64, _: &[u8]) {}
            fn reset(&mut self) {}
        }
        let odd: Bar0Factory = Box::new(|_, _| Box::new(Odd));
        assert!(matches!(ManaFunction::new(DeviceConfig::default(), odd), Err(ServerError::Bar0Size(3000))));
    }
}
