//! Passing one file descriptor between processes over a Unix socket
//! (SCM_RIGHTS, unix(7)): the peer hands the TAP it created in its namespace
//! to the rig, which gives it to the emulated device.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// A connected pair of Unix sequenced-packet sockets, close-on-exec: one end
/// stays, the other goes to a child that sends a descriptor on it. Unlike a
/// datagram pair, the staying end reads end of file when the child exits.
///
/// # Errors
/// socketpair(2)'s error.
pub fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: socketpair(2) writes two descriptors into `fds`, which we own at once.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A message header over one byte (`byte`) and a control buffer (`control`).
fn header(iov: &mut libc::iovec, control: &mut [u64]) -> libc::msghdr {
    // SAFETY: msghdr is plain data; all-zero is valid, the fields are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = cmsg_space() as _;
    msg
}

/// Space for one descriptor's control message.
fn cmsg_space() -> usize {
    // SAFETY: CMSG_SPACE only computes a size.
    unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as usize }
}

/// Sends `fd` (with one byte of data, as SCM_RIGHTS needs some) on `socket`.
///
/// # Errors
/// sendmsg(2)'s error.
pub fn send_fd(socket: BorrowedFd<'_>, fd: BorrowedFd<'_>) -> io::Result<()> {
    let mut byte = [b'F'];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    // u64 words keep the control buffer aligned for cmsghdr.
    let mut control = vec![0u64; cmsg_space().div_ceil(8)];
    let msg = header(&mut iov, &mut control);
    // SAFETY: msg_control points at cmsg_space() bytes we own, so the first
    // header and its data (one c_int) lie inside it.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            return Err(io::Error::other("no room for the control message"));
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd.as_raw_fd());
    }
    // SAFETY: `msg` and the buffers it points to outlive the call.
    if unsafe { libc::sendmsg(socket.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Receives one descriptor sent by [`send_fd`] on `socket`, waiting at most
/// `timeout`; it arrives close-on-exec.
///
/// # Errors
/// `TimedOut` when nothing came in time; `UnexpectedEof` when the other end
/// closed without sending; `InvalidData` for a message without a descriptor;
/// the OS error of poll(2) or recvmsg(2).
pub fn recv_fd(socket: BorrowedFd<'_>, timeout: Duration) -> io::Result<OwnedFd> {
    let mut pfd = libc::pollfd { fd: socket.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    loop {
        // SAFETY: one pollfd we own.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::TimedOut, format!("no descriptor within {timeout:?}")));
        }
        break;
    }
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut control = vec![0u64; cmsg_space().div_ceil(8)];
    let mut msg = header(&mut iov, &mut control);
    // SAFETY: `msg` and its buffers outlive the call.
    let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the sender closed the socket"));
    }
    // SAFETY: the kernel filled msg_control up to msg_controllen; the
    // CMSG_* macros walk only inside it.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
                return Ok(OwnedFd::from_raw_fd(fd));
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Err(io::Error::new(io::ErrorKind::InvalidData, "a message without a descriptor"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;
    use std::os::unix::net::{UnixDatagram, UnixStream};

    #[test]
    fn a_descriptor_crosses_and_still_works_on_the_other_side() {
        let (a, b) = socket_pair().expect("pair");
        let (mut left, right) = UnixStream::pair().expect("pair");
        send_fd(a.as_fd(), right.as_fd()).expect("sent");
        drop(right);
        let got = recv_fd(b.as_fd(), Duration::from_secs(5)).expect("received");
        let mut right = UnixStream::from(got);
        left.write_all(b"hi").expect("write");
        let mut buf = [0u8; 2];
        right.read_exact(&mut buf).expect("read");
        assert_eq!(&buf, b"hi");
    }

    #[test]
    fn nothing_sent_is_a_timeout_and_a_closed_sender_is_eof() {
        let (a, b) = UnixDatagram::pair().expect("pair");
        let e = recv_fd(b.as_fd(), Duration::from_millis(20)).expect_err("nothing");
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        a.send(b"x").expect("plain byte");
        let e = recv_fd(b.as_fd(), Duration::from_secs(1)).expect_err("no fd");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        let (c, d) = socket_pair().expect("pair");
        drop(c);
        let e = recv_fd(d.as_fd(), Duration::from_secs(1)).expect_err("closed");
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }
}
