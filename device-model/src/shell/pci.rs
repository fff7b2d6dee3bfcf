//! PCI configuration space of the emulated MANA VF.
//!
//! 4 KiB of PCI Express configuration space: a type-0 header (vendor
//! 0x1414, device 0x00BA, class 0x020000), BAR registers that answer the
//! standard sizing protocol, an MSI-X capability and a PCI Express endpoint
//! capability. Every byte has a write mask: the guest (through QEMU) may
//! change only what the PCI spec lets software change, and what it wrote
//! reads back (QEMU relies on that for the command register, see
//! docs/rig-pitfalls.md).

use bitfield_struct::bitfield;
use thiserror::Error;
use zerocopy::little_endian::{U16, U32};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

/// PCI vendor id of Microsoft (`PCI_VENDOR_ID_MICROSOFT`, include/linux/pci_ids.h).
pub const VENDOR_ID_MICROSOFT: u16 = 0x1414;
/// Device id of a MANA virtual function (`MANA_VF_DEVICE_ID` in
/// include/net/mana/gdma.h; the `mana` driver binds to it).
pub const DEVICE_ID_MANA_VF: u16 = 0x00BA;
/// PCI class "network controller" (0x02), subclass "Ethernet" (0x00), prog-if 0.
pub const CLASS_ETHERNET: [u8; 3] = [0x00, 0x00, 0x02];

/// Size of the configuration space in bytes (PCI Express: 4 KiB).
pub const CONFIG_SPACE_SIZE: usize = 4096;
/// Offset of the MSI-X capability.
pub const MSIX_CAP_OFFSET: usize = 0x40;
/// Offset of the PCI Express capability.
pub const PCIE_CAP_OFFSET: usize = 0x50;

/// Largest MSI-X table the capability can describe (Table Size is 11 bits, N-1 encoded).
pub const MSIX_MAX_VECTORS: u16 = 2048;
/// BAR holding the MSI-X table and PBA.
pub const MSIX_BAR_INDEX: u8 = 2;
/// Size of the MSI-X BAR: the table (16 bytes per entry) and the PBA (1 bit per entry)
/// for [`MSIX_MAX_VECTORS`] entries, rounded up to a power of two.
pub const MSIX_BAR_SIZE: u64 = 0x10000;
/// Offset of the MSI-X table in the MSI-X BAR.
pub const MSIX_TABLE_OFFSET: u64 = 0;
/// Offset of the Pending Bit Array in the MSI-X BAR (after a 2048-entry table).
pub const MSIX_PBA_OFFSET: u64 = 0x8000;

const CAP_ID_MSIX: u8 = 0x11;
const CAP_ID_PCIE: u8 = 0x10;
const STATUS_CAP_LIST: u16 = 1 << 4;
/// Command register bits software may set: I/O space, memory space, bus
/// master, parity error response, SERR# enable, INTx disable.
const COMMAND_WRITABLE: u16 = 0x0001 | 0x0002 | 0x0004 | 0x0040 | 0x0100 | 0x0400;
/// Memory space enable (PCI command register bit 1).
pub const COMMAND_MEMORY: u16 = 0x0002;
/// Bus master enable (PCI command register bit 2).
pub const COMMAND_BUS_MASTER: u16 = 0x0004;

/// Type-0 configuration header (PCI Local Bus spec 3.0, 6.1), 64 bytes.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
struct Type0Header {
    vendor_id: U16,
    device_id: U16,
    command: U16,
    status: U16,
    revision_id: u8,
    /// prog-if, subclass, base class.
    class_code: [u8; 3],
    cache_line_size: u8,
    latency_timer: u8,
    header_type: u8,
    bist: u8,
    bars: [U32; 6],
    cardbus_cis: U32,
    subsystem_vendor_id: U16,
    subsystem_id: U16,
    expansion_rom: U32,
    capabilities_pointer: u8,
    reserved: [u8; 7],
    interrupt_line: u8,
    interrupt_pin: u8,
    min_gnt: u8,
    max_lat: u8,
}

/// MSI-X Message Control register (PCI 3.0, 6.8.2.3).
#[bitfield(u16, repr = U16, from = U16::new, into = U16::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct MsixControl {
    /// Number of table entries minus one.
    #[bits(11)]
    pub table_size_minus_one: u16,
    #[bits(3)]
    __: u8,
    /// All vectors masked.
    pub function_mask: bool,
    /// MSI-X enabled.
    pub enable: bool,
}

/// MSI-X Table / PBA offset register: BAR indicator and 8-byte aligned offset.
#[bitfield(u32, repr = U32, from = U32::new, into = U32::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct MsixLocation {
    /// BAR index (BIR).
    #[bits(3)]
    pub bir: u8,
    /// Offset in the BAR divided by 8.
    #[bits(29)]
    pub offset_div8: u32,
}

/// MSI-X capability structure, 12 bytes.
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
struct MsixCap {
    cap_id: u8,
    next: u8,
    control: MsixControl,
    table: MsixLocation,
    pba: MsixLocation,
}

/// PCI Express Capabilities register (PCIe base spec 7.5.3.2).
#[bitfield(u16, repr = U16, from = U16::new, into = U16::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
struct PcieCapabilities {
    #[bits(4)]
    version: u8,
    /// 0 = PCI Express endpoint.
    #[bits(4)]
    device_port_type: u8,
    slot_implemented: bool,
    #[bits(5)]
    interrupt_message_number: u8,
    #[bits(2)]
    __: u8,
}

/// Link Capabilities register (PCIe base spec 7.5.3.6).
#[bitfield(u32, repr = U32, from = U32::new, into = U32::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
struct LinkCapabilities {
    /// 1 = 2.5 GT/s.
    #[bits(4)]
    max_link_speed: u8,
    #[bits(6)]
    max_link_width: u8,
    #[bits(22)]
    __: u32,
}

/// Link Status register (PCIe base spec 7.5.3.8).
#[bitfield(u16, repr = U16, from = U16::new, into = U16::get)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
struct LinkStatus {
    #[bits(4)]
    current_link_speed: u8,
    #[bits(6)]
    negotiated_link_width: u8,
    #[bits(6)]
    __: u8,
}

/// PCI Express capability structure, version 2 (60 bytes).
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
struct PcieCap {
    cap_id: u8,
    next: u8,
    capabilities: PcieCapabilities,
    device_capabilities: U32,
    device_control: U16,
    device_status: U16,
    link_capabilities: LinkCapabilities,
    link_control: U16,
    link_status: LinkStatus,
    slot_capabilities: U32,
    slot_control: U16,
    slot_status: U16,
    root_control: U16,
    root_capabilities: U16,
    root_status: U32,
    device_capabilities2: U32,
    device_control2: U16,
    device_status2: U16,
    link_capabilities2: U32,
    link_control2: U16,
    link_status2: U16,
    slot_capabilities2: U32,
    slot_control2: U16,
    slot_status2: U16,
}

/// Memory BAR kinds the device uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BarKind {
    /// 32-bit memory BAR (one BAR register).
    Memory32,
    /// 64-bit memory BAR (this BAR register and the next one).
    Memory64,
}

/// One memory BAR: index 0..=5, size in bytes (a power of two, at least 16), kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarSpec {
    /// BAR register index (a 64-bit BAR also uses `index + 1`).
    pub index: u8,
    /// Size in bytes.
    pub size: u64,
    /// 32- or 64-bit.
    pub kind: BarKind,
}

/// Errors building or accessing configuration space.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PciError {
    /// An access reaches outside the 4 KiB configuration space.
    #[error("config space access of {len} bytes at offset {offset:#x} is outside the {CONFIG_SPACE_SIZE} bytes")]
    OutOfRange {
        /// Byte offset of the access.
        offset: u64,
        /// Length of the access in bytes.
        len: usize,
    },
    /// A BAR description is not valid.
    #[error("BAR{index}: {reason}")]
    InvalidBar {
        /// BAR index.
        index: u8,
        /// What is wrong.
        reason: &'static str,
    },
    /// The MSI-X table size is outside 1..=2048.
    #[error("MSI-X table size {0} is outside 1..={MSIX_MAX_VECTORS}")]
    InvalidMsixTableSize(u16),
}

/// The configuration space: current bytes, the power-on bytes and a
/// per-byte write mask.
#[derive(Debug, Clone)]
pub struct ConfigSpace {
    bytes: Vec<u8>,
    initial: Vec<u8>,
    write_mask: Vec<u8>,
}

impl ConfigSpace {
    /// Builds the MANA VF's configuration space with the given memory BARs and an
    /// MSI-X capability of `msix_table_size` entries (table and PBA in BAR
    /// [`MSIX_BAR_INDEX`], which must be one of `bars`).
    ///
    /// # Errors
    /// [`PciError::InvalidBar`] for a BAR that is not a power of two, overlaps
    /// another BAR register, or does not fit; [`PciError::InvalidMsixTableSize`]
    /// for a table size outside 1..=2048.
    pub fn new_mana_vf(bars: &[BarSpec], msix_table_size: u16) -> Result<Self, PciError> {
        if msix_table_size == 0 || msix_table_size > MSIX_MAX_VECTORS {
            return Err(PciError::InvalidMsixTableSize(msix_table_size));
        }
        let mut space =
            Self { bytes: vec![0; CONFIG_SPACE_SIZE], initial: Vec::new(), write_mask: vec![0; CONFIG_SPACE_SIZE] };

        let header = Type0Header {
            vendor_id: VENDOR_ID_MICROSOFT.into(),
            device_id: DEVICE_ID_MANA_VF.into(),
            status: STATUS_CAP_LIST.into(),
            class_code: CLASS_ETHERNET,
            subsystem_vendor_id: VENDOR_ID_MICROSOFT.into(),
            subsystem_id: DEVICE_ID_MANA_VF.into(),
            capabilities_pointer: MSIX_CAP_OFFSET as u8,
            ..Default::default()
        };
        space.put(0, header.as_bytes());
        space.set_mask(0x04, &COMMAND_WRITABLE.to_le_bytes());
        // Interrupt Line is a scratch register for software.
        space.set_mask(0x3c, &[0xff]);

        let mut used = [false; 6];
        for bar in bars {
            space.add_bar(bar, &mut used)?;
        }
        if !bars.iter().any(|b| b.index == MSIX_BAR_INDEX && b.size >= MSIX_BAR_SIZE) {
            return Err(PciError::InvalidBar {
                index: MSIX_BAR_INDEX,
                reason: "the MSI-X table BAR is missing or smaller than 64 KiB",
            });
        }

        let msix = MsixCap {
            cap_id: CAP_ID_MSIX,
            next: PCIE_CAP_OFFSET as u8,
            control: MsixControl::new().with_table_size_minus_one(msix_table_size - 1),
            table: MsixLocation::new().with_bir(MSIX_BAR_INDEX).with_offset_div8((MSIX_TABLE_OFFSET / 8) as u32),
            pba: MsixLocation::new().with_bir(MSIX_BAR_INDEX).with_offset_div8((MSIX_PBA_OFFSET / 8) as u32),
        };
        space.put(MSIX_CAP_OFFSET, msix.as_bytes());
        let control_mask = MsixControl::new().with_function_mask(true).with_enable(true);
        space.set_mask(MSIX_CAP_OFFSET + 2, control_mask.as_bytes());

        let pcie = PcieCap {
            cap_id: CAP_ID_PCIE,
            next: 0,
            capabilities: PcieCapabilities::new().with_version(2).with_device_port_type(0),
            link_capabilities: LinkCapabilities::new().with_max_link_speed(1).with_max_link_width(1),
            link_status: LinkStatus::new().with_current_link_speed(1).with_negotiated_link_width(1),
            ..PcieCap::new_zeroed()
        };
        space.put(PCIE_CAP_OFFSET, pcie.as_bytes());
        // Device Control: error reporting, relaxed ordering, max payload/read request,
        // no-snoop (bits 0..=14; bit 15 would start an FLR, which is not advertised).
        space.set_mask(PCIE_CAP_OFFSET + 8, &0x7fff_u16.to_le_bytes());
        // Device Control 2: completion timeout value/disable and friends.
        space.set_mask(PCIE_CAP_OFFSET + 0x28, &0xffff_u16.to_le_bytes());

        space.initial = space.bytes.clone();
        Ok(space)
    }

    fn put(&mut self, offset: usize, data: &[u8]) {
        self.bytes[offset..offset + data.len()].copy_from_slice(data);
    }

    fn set_mask(&mut self, offset: usize, mask: &[u8]) {
        self.write_mask[offset..offset + mask.len()].copy_from_slice(mask);
    }

    fn add_bar(&mut self, bar: &BarSpec, used: &mut [bool; 6]) -> Result<(), PciError> {
        let invalid = |reason| PciError::InvalidBar { index: bar.index, reason };
        let slots = match bar.kind {
            BarKind::Memory32 => 1,
            BarKind::Memory64 => 2,
        };
        let first = usize::from(bar.index);
        if first + slots > 6 {
            return Err(invalid("does not fit in the six BAR registers"));
        }
        if used[first..first + slots].iter().any(|u| *u) {
            return Err(invalid("overlaps another BAR"));
        }
        if !bar.size.is_power_of_two() || bar.size < 16 {
            return Err(invalid("size is not a power of two of at least 16 bytes"));
        }
        if bar.kind == BarKind::Memory32 && bar.size > 1 << 31 {
            return Err(invalid("too large for a 32-bit BAR"));
        }
        used[first..first + slots].fill(true);

        let offset = 0x10 + 4 * first;
        // Bits 3:0 of a memory BAR: bit 0 = memory, bits 2:1 = type (0b10 = 64-bit),
        // bit 3 = prefetchable (no). The size mask makes sizing work: software
        // writes all ones and reads back ~(size - 1) with the type bits.
        let size_mask = !(bar.size - 1);
        let low_type: u32 = match bar.kind {
            BarKind::Memory32 => 0,
            BarKind::Memory64 => 0b100,
        };
        self.put(offset, &low_type.to_le_bytes());
        self.set_mask(offset, &((size_mask as u32) & !0xf).to_le_bytes());
        if bar.kind == BarKind::Memory64 {
            self.set_mask(offset + 4, &((size_mask >> 32) as u32).to_le_bytes());
        }
        Ok(())
    }

    fn range(offset: u64, len: usize) -> Result<std::ops::Range<usize>, PciError> {
        let start = usize::try_from(offset).map_err(|_| PciError::OutOfRange { offset, len })?;
        match start.checked_add(len) {
            Some(end) if end <= CONFIG_SPACE_SIZE => Ok(start..end),
            _ => Err(PciError::OutOfRange { offset, len }),
        }
    }

    /// Reads `data.len()` bytes at byte `offset` (any length and alignment inside the 4 KiB).
    ///
    /// # Errors
    /// [`PciError::OutOfRange`] if the access leaves configuration space.
    pub fn read(&self, offset: u64, data: &mut [u8]) -> Result<(), PciError> {
        let range = Self::range(offset, data.len())?;
        data.copy_from_slice(&self.bytes[range]);
        Ok(())
    }

    /// Writes `data` at byte `offset`; only bits set in the write mask change.
    ///
    /// # Errors
    /// [`PciError::OutOfRange`] if the access leaves configuration space.
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), PciError> {
        let range = Self::range(offset, data.len())?;
        for ((byte, mask), new) in self.bytes[range.clone()].iter_mut().zip(&self.write_mask[range]).zip(data) {
            *byte = (*byte & !mask) | (new & mask);
        }
        Ok(())
    }

    /// Current value of the command register (offset 0x04).
    pub fn command(&self) -> u16 {
        u16::from_le_bytes([self.bytes[4], self.bytes[5]])
    }

    /// Current MSI-X Message Control register.
    pub fn msix_control(&self) -> MsixControl {
        let at = MSIX_CAP_OFFSET + 2;
        MsixControl::from_bits(U16::new(u16::from_le_bytes([self.bytes[at], self.bytes[at + 1]])))
    }

    /// Returns every register to its power-on value (device reset).
    pub fn reset(&mut self) {
        self.bytes.copy_from_slice(&self.initial);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mana_bars() -> Vec<BarSpec> {
        vec![
            BarSpec { index: 0, size: 0x10_0000, kind: BarKind::Memory64 },
            BarSpec { index: MSIX_BAR_INDEX, size: MSIX_BAR_SIZE, kind: BarKind::Memory32 },
        ]
    }

    fn read_u32(space: &ConfigSpace, offset: u64) -> u32 {
        let mut data = [0; 4];
        space.read(offset, &mut data).expect("in range");
        u32::from_le_bytes(data)
    }

    #[test]
    fn header_identifies_a_mana_vf_ethernet_controller() {
        let space = ConfigSpace::new_mana_vf(&mana_bars(), 65).expect("valid");
        // 1414:00ba is what mana_id_table in gdma_main.c matches (MANA_VF_DEVICE_ID).
        assert_eq!(read_u32(&space, 0), 0x00ba_1414);
        // class 0x020000: Ethernet controller, in bits 31:8 of dword 2.
        assert_eq!(read_u32(&space, 8) >> 8, 0x02_0000);
        // Capabilities list bit in status, pointer at 0x34.
        assert_eq!(read_u32(&space, 4) >> 16 & 0x10, 0x10);
        assert_eq!(read_u32(&space, 0x34) & 0xff, 0x40);
    }

    #[test]
    fn command_register_keeps_what_was_written() {
        // docs/rig-pitfalls.md: pci_set_master() reads the command register back; if
        // memory decoding is lost the guest's BAR0 reads return 0.
        let mut space = ConfigSpace::new_mana_vf(&mana_bars(), 65).expect("valid");
        space.write(4, &0x0006_u16.to_le_bytes()).expect("in range");
        assert_eq!(space.command(), COMMAND_MEMORY | COMMAND_BUS_MASTER);
        space.write(4, &[0x07]).expect("in range");
        assert_eq!(space.command(), 0x0007);
        // Read-only bits (e.g. special cycles, bit 3) stay clear; status is untouched.
        space.write(4, &0xffff_ffff_u32.to_le_bytes()).expect("in range");
        assert_eq!(space.command(), COMMAND_WRITABLE);
        assert_eq!(read_u32(&space, 4) >> 16, u32::from(STATUS_CAP_LIST));
    }

    #[test]
    fn bar_sizing_reports_size_and_type() {
        let mut space = ConfigSpace::new_mana_vf(&mana_bars(), 65).expect("valid");
        assert_eq!(read_u32(&space, 0x10), 0b100, "BAR0: 64-bit, non-prefetchable memory");
        for offset in [0x10, 0x14, 0x18] {
            space.write(offset, &u32::MAX.to_le_bytes()).expect("in range");
        }
        // 1 MiB 64-bit BAR: low dword ~(1 MiB - 1) with type bits, high dword all ones.
        assert_eq!(read_u32(&space, 0x10), 0xfff0_0004);
        assert_eq!(read_u32(&space, 0x14), 0xffff_ffff);
        // 64 KiB 32-bit BAR2.
        assert_eq!(read_u32(&space, 0x18), 0xffff_0000);
        // Unimplemented BARs and the expansion ROM read 0 after sizing.
        for offset in [0x1c, 0x20, 0x24, 0x30] {
            space.write(offset, &u32::MAX.to_le_bytes()).expect("in range");
            assert_eq!(read_u32(&space, offset), 0, "offset {offset:#x}");
        }
        // An address assignment reads back.
        space.write(0x10, &0xfe00_0000_u32.to_le_bytes()).expect("in range");
        assert_eq!(read_u32(&space, 0x10), 0xfe00_0004);
    }

    #[test]
    fn msix_capability_bytes_describe_table_and_pba_in_bar2() {
        let space = ConfigSpace::new_mana_vf(&mana_bars(), 65).expect("valid");
        let mut cap = [0u8; 12];
        space.read(MSIX_CAP_OFFSET as u64, &mut cap).expect("in range");
        // id 0x11, next = PCIe cap at 0x50, Table Size field = 65 - 1 = 0x40,
        // table at BAR2 + 0 (BIR 2), PBA at BAR2 + 0x8000 (BIR 2).
        assert_eq!(cap, [0x11, 0x50, 0x40, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x80, 0x00, 0x00]);
        let max = ConfigSpace::new_mana_vf(&mana_bars(), 2048).expect("valid");
        assert_eq!(max.msix_control().table_size_minus_one(), 2047);
    }

    #[test]
    fn msix_enable_and_mask_bits_are_writable_table_size_is_not() {
        let mut space = ConfigSpace::new_mana_vf(&mana_bars(), 9).expect("valid");
        space.write(MSIX_CAP_OFFSET as u64 + 2, &0xffff_u16.to_le_bytes()).expect("in range");
        let control = space.msix_control();
        assert!(control.enable() && control.function_mask());
        assert_eq!(control.table_size_minus_one(), 8);
    }

    #[test]
    fn pcie_capability_is_a_version_2_endpoint_ending_the_list() {
        let space = ConfigSpace::new_mana_vf(&mana_bars(), 65).expect("valid");
        let dword = read_u32(&space, PCIE_CAP_OFFSET as u64);
        assert_eq!(dword & 0xff, 0x10, "capability id");
        assert_eq!(dword >> 8 & 0xff, 0, "last capability");
        assert_eq!(dword >> 16 & 0xf, 2, "version");
        assert_eq!(dword >> 20 & 0xf, 0, "PCI Express endpoint");
        // No extended capabilities.
        assert_eq!(read_u32(&space, 0x100), 0);
    }

    #[test]
    fn reset_restores_power_on_values() {
        let mut space = ConfigSpace::new_mana_vf(&mana_bars(), 65).expect("valid");
        space.write(4, &[0x06]).expect("in range");
        space.write(0x10, &0xfe00_0000_u32.to_le_bytes()).expect("in range");
        space.reset();
        assert_eq!(space.command(), 0);
        assert_eq!(read_u32(&space, 0x10), 0b100);
    }

    #[test]
    fn accesses_outside_config_space_are_errors() {
        let mut space = ConfigSpace::new_mana_vf(&mana_bars(), 65).expect("valid");
        let mut data = [0u8; 4];
        assert_eq!(space.read(0xffe, &mut data), Err(PciError::OutOfRange { offset: 0xffe, len: 4 }));
        assert!(space.write(u64::MAX, &[0]).is_err());
        let mut whole = vec![0u8; CONFIG_SPACE_SIZE];
        assert!(space.read(0, &mut whole).is_ok());
    }

    #[test]
    fn invalid_layouts_are_rejected() {
        assert_eq!(ConfigSpace::new_mana_vf(&mana_bars(), 0).err(), Some(PciError::InvalidMsixTableSize(0)));
        assert!(ConfigSpace::new_mana_vf(&mana_bars(), 2049).is_err());
        let odd = [BarSpec { index: 0, size: 3000, kind: BarKind::Memory64 }];
        assert!(matches!(ConfigSpace::new_mana_vf(&odd, 65), Err(PciError::InvalidBar { index: 0, .. })));
        let overlap = [
            BarSpec { index: 1, size: 0x1000, kind: BarKind::Memory64 },
            BarSpec { index: 2, size: MSIX_BAR_SIZE, kind: BarKind::Memory32 },
        ];
        assert!(ConfigSpace::new_mana_vf(&overlap, 65).is_err());
        let no_msix_bar = [BarSpec { index: 0, size: 0x1000, kind: BarKind::Memory64 }];
        assert!(ConfigSpace::new_mana_vf(&no_msix_bar, 65).is_err());
    }
}
