//! Drives the vfio-user server over a real unix socket with the `vfio_user`
//! crate's own client, the way QEMU's `vfio-user-pci` does: version
//! negotiation, region and IRQ info, config space, BAR0, DMA_MAP with a
//! memfd, stepwise MSI-X enable, an interrupt raised by the core, reset,
//! disconnect. No QEMU, no guest.

use device_model::bar::{Bar0Factory, Bar0Handler, DmaMemory};
use device_model::interrupt::InterruptSink;
use device_model::shell::server::DeviceServer;
use mana_device_api::config::DeviceConfig;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE, VFIO_PCI_BAR0_REGION_INDEX,
    VFIO_PCI_BAR2_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX, VFIO_PCI_MSIX_IRQ_INDEX,
};
use vfio_user::Client;
use vm_memory::{Bytes, GuestAddress, GuestAddressSpace};
use vmm_sys_util::eventfd::{EventFd, EFD_NONBLOCK};

/// Register of [`TestCore`]: writing vector N raises MSI-X vector N.
const RAISE: u64 = 0x100;
/// Register of [`TestCore`]: reading returns the u64 at guest-physical 0x2000 (a DMA read).
const DMA_PEEK: u64 = 0x108;

/// A device core that raises vectors and reads guest memory on request.
struct TestCore {
    memory: DmaMemory,
    sink: Arc<dyn InterruptSink>,
}

impl Bar0Handler for TestCore {
    fn size(&self) -> u64 {
        0x4000
    }
    fn read(&mut self, offset: u64, data: &mut [u8]) {
        let value: u64 = if offset == DMA_PEEK {
            self.memory.memory().read_obj(GuestAddress(0x2000)).unwrap_or(u64::MAX)
        } else {
            0
        };
        data.copy_from_slice(&value.to_le_bytes()[..data.len()]);
    }
    fn write(&mut self, offset: u64, data: &[u8]) {
        if offset == RAISE {
            self.sink.raise(u16::from_le_bytes([data[0], data[1]]));
        }
    }
    fn reset(&mut self) {}
}

fn test_core() -> Bar0Factory {
    Box::new(|memory, sink| Box::new(TestCore { memory, sink }))
}

fn read_u64(client: &mut Client, region: u32, offset: u64) -> u64 {
    let mut data = [0u8; 8];
    client.region_read(region, offset, &mut data).expect("region read");
    u64::from_le_bytes(data)
}

#[test]
fn qemu_like_session_from_connect_to_disconnect() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mana.sock");
    let config = DeviceConfig { msix_table_size: 9, ..DeviceConfig::default() };
    let server = Arc::new(DeviceServer::bind(&path, config, test_core()).expect("bind"));
    assert!(path.exists(), "socket file is the readiness signal");
    let status = server.status_handle();
    let serving = Arc::clone(&server);
    let thread = std::thread::spawn(move || serving.run());

    let mut client = Client::new(&path).expect("connect and negotiate");
    assert_eq!(client.region(VFIO_PCI_BAR0_REGION_INDEX).expect("BAR0").size, 0x4000);
    assert_eq!(client.region(VFIO_PCI_BAR2_REGION_INDEX).expect("BAR2").size, 0x1_0000);
    assert_eq!(client.region(VFIO_PCI_CONFIG_REGION_INDEX).expect("config").size, 4096);
    assert_eq!(client.get_irq_info(VFIO_PCI_MSIX_IRQ_INDEX).expect("irq info").count, 9);

    // Identity and the command register round trip (docs/rig-pitfalls.md).
    let id = read_u64(&mut client, VFIO_PCI_CONFIG_REGION_INDEX, 0) as u32;
    assert_eq!(id, 0x00ba_1414);
    client.region_write(VFIO_PCI_CONFIG_REGION_INDEX, 4, &[0x06, 0x00]).expect("command");
    let command = read_u64(&mut client, VFIO_PCI_CONFIG_REGION_INDEX, 4) as u16;
    assert_eq!(command, 0x0006);

    // DMA: guest RAM as a memfd; the core reads what the "guest" wrote.
    let ram = memfd::MemfdOptions::default().create("ram").expect("memfd").into_file();
    ram.set_len(0x10_0000).expect("size");
    std::os::unix::fs::FileExt::write_all_at(&ram, &0x1122_3344_5566_7788_u64.to_le_bytes(), 0x2000).expect("write");
    client.dma_map(0, 0, 0x10_0000, ram.as_raw_fd()).expect("dma map");
    assert_eq!(read_u64(&mut client, VFIO_PCI_BAR0_REGION_INDEX, DMA_PEEK), 0x1122_3344_5566_7788);
    assert_eq!(status.status().dma_ranges, vec![(0, 0x10_0000)]);

    // MSI-X the way QEMU enables it: count 1 without fd, then one vector at a time.
    let trigger_fd = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
    client.set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, trigger_fd, 0, 1, &[]).expect("enable");
    let vector3 = EventFd::new(EFD_NONBLOCK).expect("eventfd");
    client.set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, trigger_fd, 3, 1, &[vector3.as_raw_fd()]).expect("vector 3");
    client.region_write(VFIO_PCI_BAR0_REGION_INDEX, RAISE, &3u64.to_le_bytes()).expect("raise");
    assert_eq!(vector3.read().expect("vector 3 fired"), 1);
    // Vector 4 has no eventfd yet: pending, delivered when QEMU hands one over.
    client.region_write(VFIO_PCI_BAR0_REGION_INDEX, RAISE, &4u64.to_le_bytes()).expect("raise");
    assert_eq!(status.status().msix.pending, vec![4]);
    let vector4 = EventFd::new(EFD_NONBLOCK).expect("eventfd");
    client.set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, trigger_fd, 4, 1, &[vector4.as_raw_fd()]).expect("vector 4");
    assert_eq!(vector4.read().expect("vector 4 fired"), 1);

    // Disable, reset, unmap.
    let disable = VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER;
    client.set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, disable, 0, 0, &[]).expect("disable");
    client.reset().expect("reset");
    client.dma_unmap(0, 0x10_0000).expect("dma unmap");
    let snapshot = status.status();
    assert!(!snapshot.msix.enabled);
    assert_eq!((snapshot.resets, snapshot.pci_command), (1, 0));
    assert!(snapshot.dma_ranges.is_empty());

    client.shutdown().expect("disconnect");
    thread.join().expect("server thread").expect("clean end of session");
    drop(server);
    assert!(!path.exists(), "socket removed");
}

#[test]
fn binding_over_an_existing_path_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("taken");
    std::fs::write(&path, b"").expect("file");
    let err = DeviceServer::bind(&path, DeviceConfig::default(), test_core()).expect_err("exists");
    assert!(err.to_string().contains("already exists"), "{err}");
}
