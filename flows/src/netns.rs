//! The host side's private network: a new network namespace for this
//! process, a TAP interface in it, and its IPv4 address.
//!
//! Everything here dies with the process that made it and the holders of
//! the TAP's file descriptor: the namespace has no name (no `ip netns add`,
//! nothing in /run/netns), the TAP is not persistent (`TUNSETPERSIST` is
//! never called), so the kernel removes the interface when the last
//! descriptor closes and the namespace when its last process and socket are
//! gone. Nothing needs cleaning up after a crash or a SIGKILL.
//!
//! Configuration uses the interface ioctls of netdevice(7) (`SIOCSIFADDR`,
//! `SIOCSIFNETMASK`, `SIOCSIFFLAGS`) on a socket inside the namespace: one
//! address and "up" on one interface is all the peer needs, and this needs
//! neither a netlink crate nor iproute2 on the host.
//!
//! Requires CAP_SYS_ADMIN (to unshare the network namespace) and
//! CAP_NET_ADMIN in it: root, as CI runs the rig.

use std::fs::OpenOptions;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;

/// Moves this process into a new, empty network namespace (only `lo`, down).
///
/// # Errors
/// The OS error of unshare(2) (EPERM without CAP_SYS_ADMIN).
pub fn enter_new_namespace() -> io::Result<()> {
    // SAFETY: unshare(2) with a flag only changes this process's namespace
    // membership; it touches no memory of ours.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// An interface request for `name` with zeroed data.
fn request(name: &str) -> io::Result<libc::ifreq> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad interface name {name:?}")));
    }
    // SAFETY: ifreq is plain old data (a name array and a union of plain
    // data); all-zero bytes are a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    Ok(req)
}

/// Runs ioctl `op` on `fd` with `req`.
fn ioctl(fd: &OwnedFd, op: libc::Ioctl, req: &mut libc::ifreq, what: &str) -> io::Result<()> {
    // SAFETY: every request used here (TUNSETIFF, SIOC[GS]IF*) reads and
    // writes one `struct ifreq`, which `req` is, for the call's duration.
    if unsafe { libc::ioctl(fd.as_raw_fd(), op, req as *mut libc::ifreq) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(())
}

/// Creates TAP interface `name` (`IFF_TAP | IFF_NO_PI`: one Ethernet frame
/// per read or write, no extra header) in this process's namespace and
/// returns its descriptor, non-blocking and close-on-exec.
///
/// # Errors
/// /dev/net/tun cannot be opened, or TUNSETIFF fails (a bad name, no CAP_NET_ADMIN).
pub fn create_tap(name: &str) -> io::Result<OwnedFd> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")
        .map_err(|e| io::Error::new(e.kind(), format!("/dev/net/tun: {e}")))?;
    let fd = OwnedFd::from(file);
    let mut req = request(name)?;
    req.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
    ioctl(&fd, libc::TUNSETIFF, &mut req, "TUNSETIFF")?;
    Ok(fd)
}

/// A socket to configure interfaces with.
fn control_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket(2) with constant arguments; the result is checked and
    // owned at once.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket(2) and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn sockaddr(addr: Ipv4Addr) -> libc::sockaddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(addr.octets()) },
        sin_zero: [0; 8],
    };
    // SAFETY: sockaddr_in and sockaddr have the same size (16 bytes) and
    // both are plain data; the kernel reads it back as sockaddr_in.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

/// Sets interface `name` up (IFF_UP), with `addr/prefix` when given.
///
/// # Errors
/// The failing ioctl, named, with its OS error.
pub fn configure(name: &str, addr: Option<(Ipv4Addr, u8)>) -> io::Result<()> {
    let sock = control_socket()?;
    if let Some((addr, prefix)) = addr {
        if prefix > 32 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("prefix /{prefix}")));
        }
        let mut req = request(name)?;
        req.ifr_ifru.ifru_addr = sockaddr(addr);
        ioctl(&sock, libc::SIOCSIFADDR, &mut req, "SIOCSIFADDR")?;
        let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
        let mut req = request(name)?;
        req.ifr_ifru.ifru_netmask = sockaddr(Ipv4Addr::from(mask));
        ioctl(&sock, libc::SIOCSIFNETMASK, &mut req, "SIOCSIFNETMASK")?;
    }
    let mut req = request(name)?;
    ioctl(&sock, libc::SIOCGIFFLAGS, &mut req, "SIOCGIFFLAGS")?;
    // SAFETY: SIOCGIFFLAGS filled the union's flags member.
    let flags = unsafe { req.ifr_ifru.ifru_flags };
    req.ifr_ifru.ifru_flags = flags | libc::IFF_UP as libc::c_short;
    ioctl(&sock, libc::SIOCSIFFLAGS, &mut req, "SIOCSIFFLAGS")
}

/// Creates bridge `name` (`SIOCBRADDBR`, the bridge ioctls of
/// net/bridge/br_ioctl.c): no STP, so its ports forward as soon as they are up.
///
/// # Errors
/// The ioctl's error (EEXIST, no bridge support in the host kernel).
pub fn create_bridge(name: &str) -> io::Result<()> {
    let sock = control_socket()?;
    let c = std::ffi::CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in name"))?;
    request(name)?;
    // SAFETY: SIOCBRADDBR reads a NUL-terminated name, which `c` is, for the call's duration.
    if unsafe { libc::ioctl(sock.as_raw_fd(), SIOCBRADDBR, c.as_ptr()) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("SIOCBRADDBR: {e}")));
    }
    Ok(())
}

/// Makes interface `port` a port of bridge `bridge` (`SIOCBRADDIF`).
///
/// # Errors
/// An interface that does not exist, the ioctl's error.
pub fn add_to_bridge(bridge: &str, port: &str) -> io::Result<()> {
    let sock = control_socket()?;
    let mut req = request(port)?;
    ioctl(&sock, libc::SIOCGIFINDEX, &mut req, "SIOCGIFINDEX")?;
    // SAFETY: SIOCGIFINDEX filled the union's index member.
    let index = unsafe { req.ifr_ifru.ifru_ifindex };
    let mut req = request(bridge)?;
    req.ifr_ifru.ifru_ifindex = index;
    ioctl(&sock, SIOCBRADDIF, &mut req, "SIOCBRADDIF")
}

/// Sets interface `name`'s MTU (`SIOCSIFMTU`).
///
/// # Errors
/// The ioctl's error (a value the device does not take).
pub fn set_mtu(name: &str, mtu: u32) -> io::Result<()> {
    let sock = control_socket()?;
    let mut req = request(name)?;
    req.ifr_ifru.ifru_mtu = i32::try_from(mtu).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "MTU"))?;
    ioctl(&sock, libc::SIOCSIFMTU, &mut req, "SIOCSIFMTU")
}

/// Turns bridge netfilter off in this process's namespace: with
/// br_netfilter in the host kernel, a new namespace starts with
/// `bridge-nf-call-iptables` (and `-ip6tables`, `-arptables`) at 1, and
/// bridged IPv4 then passes netfilter's checks, which drop a frame whose IP
/// header checksum is bad and defragment and refragment IP fragments
/// (net/bridge/br_netfilter_hooks.c): the wire must carry the guest's frames
/// as they are. The sysctls are per namespace (they show in a new one);
/// without br_netfilter there is nothing to turn off.
///
/// # Errors
/// A sysctl file exists but cannot be written.
pub fn disable_bridge_netfilter() -> io::Result<()> {
    for name in ["bridge-nf-call-iptables", "bridge-nf-call-ip6tables", "bridge-nf-call-arptables"] {
        let path = format!("/proc/sys/net/bridge/{name}");
        match std::fs::write(&path, "0") {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            other => other.map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?,
        }
    }
    Ok(())
}

/// `SIOCBRADDBR` (include/uapi/linux/sockios.h).
const SIOCBRADDBR: libc::Ioctl = 0x89a0;
/// `SIOCBRADDIF` (include/uapi/linux/sockios.h).
const SIOCBRADDIF: libc::Ioctl = 0x89a2;

/// Turns IPv6 off on interface `name` (no router or neighbour solicitations,
/// no MLD reports: only the flows and ARP cross the wire). A host without
/// IPv6 has nothing to turn off.
///
/// # Errors
/// The sysctl file exists but cannot be written.
pub fn disable_ipv6(name: &str) -> io::Result<()> {
    // /proc/sys/net is the namespace of the process that opens it: ours.
    let path = format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6");
    match std::fs::write(&path, "1") {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other.map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_are_checked_before_any_ioctl() {
        assert!(request("tap0").is_ok());
        for bad in ["", "a-name-that-is-too-long", "a\0b"] {
            assert_eq!(request(bad).map(|_| ()).expect_err(bad).kind(), io::ErrorKind::InvalidInput);
        }
    }

    #[test]
    fn an_address_becomes_a_sockaddr_in_in_network_byte_order() {
        let sa = sockaddr(Ipv4Addr::new(192, 0, 2, 1));
        assert_eq!(sa.sa_family, libc::AF_INET as libc::sa_family_t);
        // sa_data: port (2 bytes), then the address.
        let data: Vec<u8> = sa.sa_data.iter().map(|&c| c as u8).collect();
        assert_eq!(&data[..6], &[0, 0, 192, 0, 2, 1]);
    }
}
