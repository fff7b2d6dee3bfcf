//! The device's vfio-user socket as a hostile or buggy client sees it: every
//! refusal arrives as an error reply carrying a real errno (the `vfio_user`
//! crate alone sends 0, which QEMU takes for success), and messages the
//! crate cannot take (a VERSION without payload, a 4 GiB REGION_READ, a
//! size past the limit) are refused before they reach it. Raw bytes over a
//! socketpair, the real device core behind.

mod wire_client;

use device_model::shell::server::{DeviceServer, StatusHandle};
use device_model::shell::vfio_wire::{self, FLAG_NO_REPLY, HEADER_SIZE};
use mana_device_api::config::DeviceConfig;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::thread::JoinHandle;
use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_PCI_BAR0_REGION_INDEX, VFIO_PCI_MSIX_IRQ_INDEX,
};
use wire_client::*;

const MIB: u64 = 1 << 20;

struct Session {
    client: RawClient,
    status: StatusHandle,
    serving: JoinHandle<Result<(), device_model::shell::server::ServerError>>,
    _dir: tempfile::TempDir,
}

/// A device with the MANA core, serving one end of a socketpair.
fn session() -> Session {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = DeviceConfig { msix_table_size: 9, ..DeviceConfig::default() };
    let factory = device_model::factory(config.clone());
    let server = Arc::new(DeviceServer::bind(&dir.path().join("dev.sock"), config, factory).expect("bind"));
    let status = server.status_handle();
    let (ours, theirs) = UnixStream::pair().expect("socketpair");
    let serving = std::thread::spawn(move || server.serve(theirs));
    Session { client: RawClient::new(ours), status, serving, _dir: dir }
}

impl Session {
    /// Disconnects and returns how serving ended.
    fn end(self) -> Result<(), device_model::shell::server::ServerError> {
        drop(self.client);
        self.serving.join().expect("serving thread")
    }
}

fn guest_ram(size: u64) -> std::fs::File {
    let ram = memfd::MemfdOptions::default().create("ram").expect("memfd").into_file();
    ram.set_len(size).expect("size");
    ram
}

#[test]
fn refused_dma_maps_unmaps_and_set_irqs_reach_the_client_with_their_errno() {
    let mut s = session();
    let ram = guest_ram(MIB);
    let fd = [ram.as_raw_fd()];
    let c = &mut s.client;
    // Past the end of the file (would be SIGBUS on first touch).
    let reply = c.call(vfio_wire::DMA_MAP, &dma_map_fields(0, 2 * MIB, 0), &fd);
    assert_eq!(reply.errno(), Some(libc::EINVAL), "{reply:?}");
    let reply = c.call(vfio_wire::DMA_MAP, &dma_map_fields(0, MIB, 0), &fd);
    assert_eq!(reply.errno(), None, "{reply:?}");
    let reply = c.call(vfio_wire::DMA_MAP, &dma_map_fields(MIB / 2, MIB / 2, 0), &fd);
    assert_eq!(reply.errno(), Some(libc::EEXIST), "overlap");
    let reply = c.call(vfio_wire::DMA_UNMAP, &dma_unmap_fields(0, MIB / 2), &[]);
    assert_eq!(reply.errno(), Some(libc::EINVAL), "partial unmap");
    let eventfd = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
    let msix = VFIO_PCI_MSIX_IRQ_INDEX;
    let reply = c.call(vfio_wire::DEVICE_SET_IRQS, &set_irqs_fields(msix, eventfd, 8, 2), &[]);
    assert_eq!(reply.errno(), Some(libc::EINVAL), "vectors outside the table");
    let reply = c.call(vfio_wire::DEVICE_SET_IRQS, &set_irqs_fields(msix, eventfd, 0, 1), &fd);
    assert_eq!(reply.errno(), Some(libc::EINVAL), "a memfd is not an eventfd");
    let reply = c.call(vfio_wire::DMA_UNMAP, &dma_unmap_fields(0, MIB), &[]);
    assert_eq!(reply.errno(), None, "{reply:?}");
    let shell = s.status.status();
    assert_eq!(shell.refused_requests, 5);
    assert!(shell.dma_ranges.is_empty());
    s.end().expect("clean end");
}

#[test]
fn a_version_without_payload_is_refused_and_the_connection_goes_on() {
    let mut s = session();
    let c = &mut s.client;
    // The crate unwraps CString::from_vec_with_nul() of the payload: panic.
    let reply = c.call(vfio_wire::VERSION, &[0, 0, 0, 0], &[]);
    assert_eq!(reply.errno(), Some(libc::EINVAL));
    let reply = c.call(vfio_wire::VERSION, b"\0\0\0\0{\"capabilities\"", &[]);
    assert_eq!(reply.errno(), Some(libc::EINVAL), "no NUL");
    // Shorter than its fixed part: the crate's size arithmetic underflows.
    let reply = c.call(vfio_wire::VERSION, &[0, 0], &[]);
    assert_eq!(reply.errno(), Some(libc::EINVAL));
    let reply = c.call(vfio_wire::VERSION, &version_fields("{\"capabilities\":{}}"), &[]);
    assert_eq!(reply.errno(), None, "{reply:?}");
    assert!(reply.body.len() > 4, "the server's capabilities");
    let reply = c.call(vfio_wire::DEVICE_GET_INFO, &[0; 16], &[]);
    assert_eq!(reply.errno(), None);
    assert_eq!(s.status.status().refused_messages, 3);
    s.end().expect("clean end");
}

#[test]
fn a_four_gigabyte_region_read_is_refused_without_allocating_it() {
    let mut s = session();
    let c = &mut s.client;
    let bar0 = VFIO_PCI_BAR0_REGION_INDEX;
    let reply = c.call(vfio_wire::REGION_READ, &region_fields(bar0, 0, u32::MAX), &[]);
    assert_eq!(reply.errno(), Some(libc::E2BIG));
    let reply = c.call(vfio_wire::REGION_READ, &region_fields(bar0, 0x18, 8), &[]);
    assert_eq!(reply.errno(), None);
    let data = &reply.body[size_of::<vfio_wire::RegionAccess>() - HEADER_SIZE..];
    assert_eq!(data, &0x100u64.to_le_bytes(), "GDMA_REG_SHM_OFFSET");
    s.end().expect("clean end");
}

#[test]
fn no_reply_messages_get_no_reply_even_when_refused() {
    let mut s = session();
    let c = &mut s.client;
    let bar0 = VFIO_PCI_BAR0_REGION_INDEX;
    // A posted write (QEMU's BAR writes), an unknown command and a short
    // DMA_UNMAP, all NO_REPLY: nothing comes back for any of them.
    let mut write = region_fields(bar0, 0x1000, 8);
    write.extend_from_slice(&[0; 8]);
    let message = c.message(vfio_wire::REGION_WRITE, &write, FLAG_NO_REPLY);
    c.send(&message, &[]);
    let message = c.message(99, &[1, 2, 3], FLAG_NO_REPLY);
    c.send(&message, &[]);
    let message = c.message(vfio_wire::DMA_UNMAP, &[0; 4], FLAG_NO_REPLY);
    c.send(&message, &[]);
    // The next reply is the read's.
    let reply = c.call(vfio_wire::REGION_READ, &region_fields(bar0, 0x08, 8), &[]);
    assert_eq!(reply.errno(), None);
    assert_eq!(s.status.status().refused_messages, 2);
    s.end().expect("clean end");
}

#[test]
fn a_message_size_past_the_limit_is_answered_with_e2big_and_ends_the_connection() {
    let mut s = session();
    let c = &mut s.client;
    let mut message = c.message(vfio_wire::REGION_WRITE, &region_fields(0, 0, 8), 0);
    message[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    c.send(&message, &[]);
    assert_eq!(c.reply().errno(), Some(libc::E2BIG));
    let err = s.end().expect_err("framing lost");
    assert!(format!("{:?}", err).contains("Framing"), "{err:?}");
}

#[test]
fn the_version_messages_that_panic_the_bare_vfio_user_server_get_an_error_reply_here() {
    // Found by fuzzing the vfio_user 0.1.7 server alone (docs/fuzzing.md):
    // VERSION with message_size 0 makes its `message_size - 20` wrap and
    // Vec allocation panic with "capacity overflow" (the second also
    // carries garbage after the header). Here the size is refused first.
    let reproducers: [&[u8]; 2] = [
        &[
            0x70, 0x70, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x0a, 0x03, 0x08, 0x70, 0x70,
        ],
        &[
            0x70, 0x70, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x24, 0x24, 0x24, 0x24, 0x24, 0x03, 0x08, 0x70,
            0xbc, 0xbc, 0xbc, 0x60,
        ],
    ];
    for bytes in reproducers {
        let mut s = session();
        s.client.send(bytes, &[]);
        let reply = s.client.reply();
        assert_eq!(reply.errno(), Some(libc::EINVAL), "{reply:?}");
        let err = s.end().expect_err("no framing after a size of 0");
        assert!(format!("{err:?}").contains("Framing"), "{err:?}");
    }
}

#[test]
fn a_region_write_to_a_missing_region_is_refused_and_the_stream_stays_in_step() {
    // Found by the vfio_wire fuzz target (docs/fuzzing.md): the vfio_user
    // crate refuses a REGION_WRITE to a region it does not have before it
    // reads the data, then reads the data as the next header: its serving
    // thread panicked on a bogus VERSION or waited for bytes that never came.
    let mut s = session();
    let mut write = region_fields(0x00ff_0007, 4, 2);
    write.extend_from_slice(&[6, 0]);
    let reply = s.client.call(vfio_wire::REGION_WRITE, &write, &[]);
    assert_eq!(reply.errno(), Some(libc::EINVAL));
    let reply = s.client.call(vfio_wire::REGION_READ, &region_fields(9, 0, 4), &[]);
    assert_eq!(reply.errno(), Some(libc::EINVAL));
    let bar0 = VFIO_PCI_BAR0_REGION_INDEX;
    let reply = s.client.call(vfio_wire::REGION_READ, &region_fields(bar0, 0x18, 8), &[]);
    assert_eq!(reply.errno(), None, "in step");
    s.end().expect("clean end");
}

/// Open file descriptors of this process (the test's and the in-process
/// server's) on `file`: only this test's own memfd is counted, so that tests
/// running beside it on other threads (`cargo test`) do not change the count.
fn open_fds_on(file: &std::fs::File) -> usize {
    use std::os::unix::fs::MetadataExt;
    let target = file.metadata().expect("the file's metadata");
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(|entry| std::fs::metadata(entry.ok()?.path()).ok())
        .filter(|m| (m.dev(), m.ino()) == (target.dev(), target.ino()))
        .count()
}

#[test]
fn a_message_with_more_than_16_fds_is_refused_its_fds_closed_and_the_connection_goes_on() {
    // VFIO_USER_MAX_MAX_FDS is 16; the front reads up to SCM_MAX_FD (253).
    let mut s = session();
    let ram = guest_ram(MIB);
    let bar0 = VFIO_PCI_BAR0_REGION_INDEX;
    // A first message, so that the server has made its sockets before counting.
    let reply = s.client.call(vfio_wire::REGION_READ, &region_fields(bar0, 0x18, 8), &[]);
    assert_eq!(reply.errno(), None);
    let before = open_fds_on(&ram);
    for count in [17, 253] {
        let fds: Vec<i32> = (0..count).map(|_| ram.as_raw_fd()).collect();
        let reply = s.client.call(vfio_wire::DMA_MAP, &dma_map_fields(0, MIB, 0), &fds);
        assert_eq!(reply.errno(), Some(libc::EINVAL), "{count} fds");
        assert_eq!(open_fds_on(&ram), before, "the {count} fds the message brought are closed");
        let reply = s.client.call(vfio_wire::REGION_READ, &region_fields(bar0, 0x18, 8), &[]);
        assert_eq!(reply.errno(), None, "in step after {count} fds");
    }
    // Sixteen pass the front (the device itself wants one fd for a DMA_MAP).
    let fds = [ram.as_raw_fd(); 16];
    s.client.call(vfio_wire::DMA_MAP, &dma_map_fields(0, MIB, 0), &fds);
    assert_eq!(s.status.status().refused_messages, 2, "only the messages with 17 and 253 fds");
    assert_eq!(open_fds_on(&ram), before);
    s.end().expect("clean end");
}
