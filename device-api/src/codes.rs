//! The GDMA codes that cross the device's boundary: the command codes an
//! `--inject` spec names ([`Command`]) and the device types a snapshot's
//! queue owners carry ([`DeviceType`]). Both are "open enums" ([`crate::open_enum!`]):
//! a value the device does not know stays representable. The device's wire
//! formats (device-model `defs`) re-export them beside the rest.
//!
//! Values from include/net/mana/gdma.h and mana.h (Debian linux-source
//! 6.1.192, 6.12.117, 7.3.4).

/// Declares an "open enum": a transparent newtype over an integer with named
/// constants, so values the driver sends that we do not know stay representable.
#[macro_export]
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        pub struct $name:ident($ty:ty) {
            $( $(#[$vmeta:meta])* $variant:ident = $value:expr, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(transparent)]
        pub struct $name(pub $ty);

        impl $name {
            $( $(#[$vmeta])* pub const $variant: Self = Self($value); )*

            /// Every value with a name.
            pub const KNOWN: &'static [Self] = &[$( Self::$variant, )*];

            /// The constant's name, or `None` for a value this device does not know.
            pub fn name(self) -> Option<&'static str> {
                match self {
                    $( Self::$variant => Some(stringify!($variant)), )*
                    _ => None,
                }
            }
        }

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                match self.name() {
                    Some(name) => write!(f, "{name}({:#x})", self.0),
                    None => write!(f, "{}({:#x})", stringify!($name), self.0),
                }
            }
        }
    };
}

crate::open_enum! {
    /// Request codes: `enum gdma_request_type` (gdma.h) and
    /// `enum mana_command_code` (mana.h), plus the mana_ib codes (0x3xxxx).
    pub struct Command(u32) {
        /// GDMA_VERIFY_VF_DRIVER_VERSION
        VERIFY_VF_DRIVER_VERSION = 1,
        /// GDMA_QUERY_MAX_RESOURCES
        QUERY_MAX_RESOURCES = 2,
        /// GDMA_LIST_DEVICES
        LIST_DEVICES = 3,
        /// GDMA_REGISTER_DEVICE
        REGISTER_DEVICE = 4,
        /// GDMA_DEREGISTER_DEVICE
        DEREGISTER_DEVICE = 5,
        /// GDMA_GENERATE_TEST_EQE
        GENERATE_TEST_EQE = 10,
        /// GDMA_CREATE_QUEUE
        CREATE_QUEUE = 12,
        /// GDMA_DISABLE_QUEUE
        DISABLE_QUEUE = 13,
        /// GDMA_ALLOCATE_RESOURCE_RANGE (mana_ib, 6.12+)
        ALLOCATE_RESOURCE_RANGE = 22,
        /// GDMA_DESTROY_RESOURCE_RANGE (mana_ib, 6.12+)
        DESTROY_RESOURCE_RANGE = 24,
        /// GDMA_CREATE_DMA_REGION
        CREATE_DMA_REGION = 25,
        /// GDMA_DMA_REGION_ADD_PAGES
        DMA_REGION_ADD_PAGES = 26,
        /// GDMA_DESTROY_DMA_REGION
        DESTROY_DMA_REGION = 27,
        /// GDMA_CREATE_PD
        CREATE_PD = 29,
        /// GDMA_DESTROY_PD
        DESTROY_PD = 30,
        /// GDMA_CREATE_MR
        CREATE_MR = 31,
        /// GDMA_DESTROY_MR
        DESTROY_MR = 32,
        /// GDMA_QUERY_HWC_TIMEOUT
        QUERY_HWC_TIMEOUT = 0x54,
        /// MANA_QUERY_DEV_CONFIG
        MANA_QUERY_DEV_CONFIG = 0x20001,
        /// MANA_QUERY_GF_STAT
        MANA_QUERY_GF_STAT = 0x20002,
        /// MANA_CONFIG_VPORT_TX
        MANA_CONFIG_VPORT_TX = 0x20003,
        /// MANA_CREATE_WQ_OBJ
        MANA_CREATE_WQ_OBJ = 0x20004,
        /// MANA_DESTROY_WQ_OBJ
        MANA_DESTROY_WQ_OBJ = 0x20005,
        /// MANA_FENCE_RQ
        MANA_FENCE_RQ = 0x20006,
        /// MANA_CONFIG_VPORT_RX
        MANA_CONFIG_VPORT_RX = 0x20007,
        /// MANA_QUERY_VPORT_CONFIG
        MANA_QUERY_VPORT_CONFIG = 0x20008,
        /// MANA_QUERY_LINK_CONFIG (7.3)
        MANA_QUERY_LINK_CONFIG = 0x2000A,
        /// MANA_SET_BW_CLAMP (7.3)
        MANA_SET_BW_CLAMP = 0x2000B,
        /// MANA_QUERY_PHY_STAT (7.3)
        MANA_QUERY_PHY_STAT = 0x2000C,
        /// MANA_IB_GET_ADAPTER_CAP
        MANA_IB_GET_ADAPTER_CAP = 0x30001,
    }
}

impl Command {
    /// First code of the mana_ib (RDMA) command range.
    pub const IB_RANGE_START: u32 = 0x30000;
    /// First code of the BNIC (`mana_command_code`) range.
    pub const BNIC_RANGE_START: u32 = 0x20000;
}

crate::open_enum! {
    /// `GDMA_DEVICE_*` (gdma.h): the `type` half of a `struct gdma_dev_id`.
    pub struct DeviceType(u16) {
        /// GDMA_DEVICE_NONE (an empty LIST_DEVICES slot).
        NONE = 0,
        /// GDMA_DEVICE_HWC
        HWC = 1,
        /// GDMA_DEVICE_MANA (Ethernet)
        MANA = 2,
        /// GDMA_DEVICE_MANA_IB (RDMA, 6.12+)
        MANA_IB = 3,
    }
}
