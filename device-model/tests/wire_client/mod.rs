//! A raw vfio-user client for tests: sends messages byte for byte (with fds)
//! and reads whole replies, so that tests can send what QEMU never would and
//! see the error replies that the `vfio_user` crate's own client ignores.
#![allow(dead_code)]

use device_model::shell::vfio_wire::{self, Header, HEADER_SIZE};
use std::io::{Read, Write};
use std::os::fd::RawFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;
use vmm_sys_util::sock_ctrl_msg::ScmSocket;
use zerocopy::{FromBytes, IntoBytes};

/// A reply: its header and the bytes after it.
#[derive(Debug)]
pub struct Reply {
    pub header: Header,
    pub body: Vec<u8>,
}

impl Reply {
    /// The errno of an error reply, `None` for a success.
    pub fn errno(&self) -> Option<i32> {
        self.header.is_error().then(|| self.header.error.get() as i32)
    }
}

/// A connected raw client.
pub struct RawClient {
    pub stream: UnixStream,
    next_id: u16,
}

impl RawClient {
    /// Wraps a connected stream; replies must come within 30 s.
    pub fn new(stream: UnixStream) -> Self {
        stream.set_read_timeout(Some(Duration::from_secs(30))).expect("read timeout");
        Self { stream, next_id: 1 }
    }

    /// Sends `message` (header included) as is, `fds` with its first byte.
    pub fn send(&mut self, message: &[u8], fds: &[RawFd]) {
        if fds.is_empty() {
            self.stream.write_all(message).expect("send");
        } else {
            let sent = self.stream.send_with_fds(&[message], fds).expect("send with fds");
            self.stream.write_all(&message[sent..]).expect("send the rest");
        }
    }

    /// Reads one reply.
    pub fn reply(&mut self) -> Reply {
        let mut raw = [0u8; HEADER_SIZE];
        self.stream.read_exact(&mut raw).expect("a reply header");
        let (header, _) = Header::read_from_prefix(&raw).expect("header");
        let mut body = vec![0u8; header.message_size.get() as usize - HEADER_SIZE];
        self.stream.read_exact(&mut body).expect("the reply body");
        Reply { header, body }
    }

    /// Sends a request of `command` with `fields` after the header, and reads its reply.
    pub fn call(&mut self, command: u16, fields: &[u8], fds: &[RawFd]) -> Reply {
        let message = self.message(command, fields, 0);
        self.send(&message, fds);
        let reply = self.reply();
        assert_eq!(reply.header.command.get(), command, "{reply:?}");
        reply
    }

    /// A whole message of `command` with `fields` and `flags`, with the next message id.
    pub fn message(&mut self, command: u16, fields: &[u8], flags: u32) -> Vec<u8> {
        let size = (HEADER_SIZE + fields.len()) as u32;
        let header = Header::request(self.next_id, command, size, flags);
        self.next_id = self.next_id.wrapping_add(1);
        let mut message = header.as_bytes().to_vec();
        message.extend_from_slice(fields);
        message
    }
}

/// The fields of a VERSION message with `json` as its capabilities.
pub fn version_fields(json: &str) -> Vec<u8> {
    let mut fields = vec![0u8; 4];
    fields.extend_from_slice(json.as_bytes());
    fields.push(0);
    fields
}

/// The fields of a DMA_MAP (read-write) of `size` bytes at `iova`, file offset `offset`.
pub fn dma_map_fields(iova: u64, size: u64, offset: u64) -> Vec<u8> {
    let map = vfio_wire::DmaMap {
        argsz: 32.into(),
        flags: 3.into(),
        offset: offset.into(),
        iova: iova.into(),
        size: size.into(),
        ..Default::default()
    };
    map.as_bytes()[HEADER_SIZE..].to_vec()
}

/// The fields of a DMA_UNMAP of `size` bytes at `iova`.
pub fn dma_unmap_fields(iova: u64, size: u64) -> Vec<u8> {
    let unmap = vfio_wire::DmaUnmap { argsz: 24.into(), iova: iova.into(), size: size.into(), ..Default::default() };
    unmap.as_bytes()[HEADER_SIZE..].to_vec()
}

/// The fields of a SET_IRQS.
pub fn set_irqs_fields(index: u32, flags: u32, start: u32, count: u32) -> Vec<u8> {
    let set = vfio_wire::SetIrqs {
        argsz: 20.into(),
        flags: flags.into(),
        index: index.into(),
        start: start.into(),
        count: count.into(),
        ..Default::default()
    };
    set.as_bytes()[HEADER_SIZE..].to_vec()
}

/// The fields of a REGION_READ / REGION_WRITE header (data follows for a write).
pub fn region_fields(region: u32, offset: u64, count: u32) -> Vec<u8> {
    let access = vfio_wire::RegionAccess {
        offset: offset.into(),
        region: region.into(),
        count: count.into(),
        ..Default::default()
    };
    access.as_bytes()[HEADER_SIZE..].to_vec()
}
