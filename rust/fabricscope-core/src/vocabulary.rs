//! The counter vocabulary: one registry of canonical counters and of every source spelling that
//! maps to them. Readers never hard-code canonical names; they ask [`lookup`]. Writers (the
//! simulator, later) use the same spellings, so a name cannot drift between what we write and read.
//!
//! Conventions:
//! * Canonical names carry their unit as a suffix (`_bytes`, `_packets`, `_errors`, `_us`, ...).
//! * Per-priority counters share one canonical name; the priority goes to its own column.
//! * `multiply` is the factor *we* apply at parse time; `scale` is the factor between the hardware
//!   register and the stored value (recorded per row), so saturation can be checked against the
//!   register width even when an exporter already multiplied (node_exporter's `*_data_*_bytes`).

use std::collections::HashMap;
use std::sync::LazyLock;

/// Unit of a canonical counter's stored value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Octets.
    Bytes,
    /// Packets or frames.
    Packets,
    /// Discrete events or errors.
    Events,
    /// Microseconds.
    Microseconds,
    /// Hardware ticks (IB `PortXmitWait`: one tick is a port-dependent time).
    Ticks,
    /// Bits.
    Bits,
    /// Bytes per second (a gauge).
    BytesPerSecond,
    /// Percent 0-100 (a gauge).
    Percent,
    /// Degrees Celsius (a gauge).
    Celsius,
    /// An enumerated state id (a gauge).
    StateId,
    /// Lane count (a gauge).
    Lanes,
    /// Milliseconds.
    Milliseconds,
    /// Seconds (a gauge: uptime).
    Seconds,
    /// Revolutions per minute (a gauge: fan speed).
    Rpm,
    /// Watts (a gauge: power draw).
    Watts,
    /// A dimensionless ratio (a gauge: a bit error ratio).
    Ratio,
    /// Millivolts (a gauge: a transceiver's supply voltage, an eye opening).
    Millivolts,
    /// Milliamperes (a gauge: a laser's bias current).
    Milliamps,
    /// Decibel-milliwatts (a gauge: optical power).
    Dbm,
}

impl Unit {
    /// Stable lowercase name used in tables and docs.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Bytes => "bytes",
            Unit::Packets => "packets",
            Unit::Events => "events",
            Unit::Microseconds => "microseconds",
            Unit::Ticks => "ticks",
            Unit::Bits => "bits",
            Unit::BytesPerSecond => "bytes_per_s",
            Unit::Percent => "percent",
            Unit::Celsius => "celsius",
            Unit::StateId => "state_id",
            Unit::Lanes => "lanes",
            Unit::Milliseconds => "milliseconds",
            Unit::Seconds => "seconds",
            Unit::Rpm => "rpm",
            Unit::Watts => "watts",
            Unit::Ratio => "ratio",
            Unit::Millivolts => "millivolts",
            Unit::Milliamps => "milliamps",
            Unit::Dbm => "dbm",
        }
    }
}

/// Whether a value accumulates (rate it) or is an instantaneous reading (never rate it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Cumulative, monotonic until it wraps, saturates or resets.
    Counter,
    /// Instantaneous reading.
    Gauge,
}

impl Kind {
    /// `counter` or `gauge`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }
}

/// What a counter does at the top of its range, in hardware units (before `scale`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Overflow {
    /// Stops at `2^bits - 1` and stays there (IBA PMA PortCounters).
    Saturate(u8),
    /// Wraps to zero at `2^bits` (mlx5 Q counters: 32; extended and PPCNT counters: 64).
    Wrap(u8),
    /// IB data/packet counters in sysfs: 32-bit saturating unless the PMA advertises extended
    /// width, in which case 64-bit; the file name does not say which.
    SaturateOrWide {
        /// Width of the basic PortCounters field.
        basic: u8,
        /// Width when extended counters are in use.
        extended: u8,
    },
    /// Not applicable (gauges).
    None,
}

impl Overflow {
    /// Human-readable description: `saturate@32`, `wrap@64`, `saturate@32|wrap@64`, `none`.
    pub fn describe(self) -> String {
        match self {
            Overflow::Saturate(b) => format!("saturate@{b}"),
            Overflow::Wrap(b) => format!("wrap@{b}"),
            Overflow::SaturateOrWide { basic, extended } => format!("saturate@{basic}|wrap@{extended}"),
            Overflow::None => "none".to_owned(),
        }
    }
}

/// Which layer of the stack a counter describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    /// InfiniBand or Ethernet/RoCE network.
    Network,
    /// GPU-to-GPU NVLink.
    Nvlink,
    /// PCIe between host, NIC and GPU.
    Pcie,
    /// CXL memory.
    Cxl,
    /// The device itself (temperature, clocks).
    Device,
}

impl Layer {
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Network => "network",
            Layer::Nvlink => "nvlink",
            Layer::Pcie => "pcie",
            Layer::Cxl => "cxl",
            Layer::Device => "device",
        }
    }
}

/// Declares [`Role`] with its stable names once: each variant and its name on one line.
macro_rules! roles {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// What an analysis reads a counter for. Detectors, the report and the dashboard ask for a role
        /// ("the bytes this port transmitted") instead of naming counters, so a new source's counter joins
        /// every analysis by getting a role here. A counter may carry several roles (`rx_xoff_frames` is
        /// both pause frames and XOFF frames). Names start with the direction when there is one: `rx_`
        /// for traffic the port receives, `tx_` for traffic it sends.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Role {
            $($(#[$doc])* $variant,)*
        }

        impl Role {
            /// Every role, in declaration order.
            pub const ALL: &'static [Role] = &[$(Role::$variant,)*];

            /// Stable lowercase name used in tables, docs and by Python (`counters_with_role`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Role::$variant => $name,)*
                }
            }
        }
    };
}

roles! {
    /// Data bytes the port sent.
    TxBytes => "tx_bytes",
    /// Data bytes the port received.
    RxBytes => "rx_bytes",
    /// Packets the port sent.
    TxPackets => "tx_packets",
    /// Packets the port received.
    RxPackets => "rx_packets",
    /// Bytes sent, per priority.
    TxPriorityBytes => "tx_priority_bytes",
    /// Bytes received, per priority.
    RxPriorityBytes => "rx_priority_bytes",
    /// Packets sent, per priority.
    TxPriorityPackets => "tx_priority_packets",
    /// Packets received, per priority.
    RxPriorityPackets => "rx_priority_packets",
    /// Bytes the kernel network stack sent through the port: excludes RDMA, so never an RDMA
    /// port's traffic; a view for a port with no other byte counter.
    TxStackBytes => "tx_stack_bytes",
    /// Bytes the kernel network stack received.
    RxStackBytes => "rx_stack_bytes",
    /// Packets the kernel network stack sent.
    TxStackPackets => "tx_stack_packets",
    /// Packets the kernel network stack received.
    RxStackPackets => "rx_stack_packets",
    /// Every byte the port put on the wire, all priorities and protocols: what a pause stops.
    TxWireBytes => "tx_wire_bytes",
    /// Every byte the port took off the wire.
    RxWireBytes => "rx_wire_bytes",
    /// Pause (PFC or 802.3x) frames the port sent.
    TxPauseFrames => "tx_pause_frames",
    /// Pause frames the port received.
    RxPauseFrames => "rx_pause_frames",
    /// XOFF frames sent, on NICs that count XOFF and XON apart.
    TxXoffFrames => "tx_xoff_frames",
    /// XOFF frames received.
    RxXoffFrames => "rx_xoff_frames",
    /// XON frames sent.
    TxXonFrames => "tx_xon_frames",
    /// XON frames received.
    RxXonFrames => "rx_xon_frames",
    /// Time this port paused its peer.
    TxPauseDuration => "tx_pause_duration",
    /// Time the port was paused by its peer.
    RxPauseDuration => "rx_pause_duration",
    /// Xoff to Xon transitions of sent pause.
    TxPauseTransitions => "tx_pause_transitions",
    /// Xoff to Xon transitions of received pause.
    RxPauseTransitions => "rx_pause_transitions",
    /// The NIC's pause storm watchdog firing (it stops sending pause).
    TxPauseStorm => "tx_pause_storm",
    /// Packets a switch's PFC watchdog dropped on a queue it declared stormed (either direction).
    SwitchWatchdogDrops => "switch_watchdog_drops",
    /// Packets dropped on a priority.
    RxPriorityDrops => "rx_priority_drops",
    /// Loss on traffic the port receives: drops, out-of-sequence arrivals, duplicate requests.
    RxLoss => "rx_loss",
    /// Loss on traffic the port sends, as the requester sees it: NAKs, timeouts, retransmissions.
    TxLoss => "tx_loss",
    /// RoCE packets received with an ECN congestion mark, counted by the RDMA device.
    RxEcnMarked => "rx_ecn_marked",
    /// Packets received with an ECN congestion mark, per priority, counted by the net device.
    RxPriorityEcnMarked => "rx_priority_ecn_marked",
    /// Congestion notification packets sent (the notification point).
    TxCnp => "tx_cnp",
    /// Congestion notification packets received and acted on (the reaction point).
    RxCnpHandled => "rx_cnp_handled",
    /// Congestion notification packets received and ignored: congestion control off.
    RxCnpIgnored => "rx_cnp_ignored",
    /// Time the port had data to send and no credit to send it.
    TxWait => "tx_wait",
    /// Physical link errors and recoveries.
    LinkErrors => "link_errors",
    /// The link's data rate.
    LinkSpeed => "link_speed",
    /// The link's width in lanes.
    LinkWidth => "link_width",
    /// The logical port state.
    LinkState => "link_state",
    /// The physical port state.
    LinkPhysState => "link_phys_state",
    /// Data messages of a memory link towards the host.
    ToHostMessages => "to_host_messages",
    /// Data messages of a memory link towards the device.
    ToDeviceMessages => "to_device_messages",
}

/// One role of a counter and its preference among the counters of that role: where one port has
/// several counters of a role (an RDMA byte counter and a wire byte counter), analyses that need
/// one take the lowest `rank` that has data; analyses that need all take every one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoleRank {
    /// The role.
    pub role: Role,
    /// Preference among the counters of the role: 1 first.
    pub rank: u8,
}

/// A canonical counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterDef {
    /// Canonical name, unit suffixed.
    pub name: &'static str,
    /// Unit of stored values.
    pub unit: Unit,
    /// Counter or gauge.
    pub kind: Kind,
    /// Behaviour at the top of the range (typical; a spelling may override).
    pub overflow: Overflow,
    /// Stack layer.
    pub layer: Layer,
    /// Whether the counter is reported per priority (priority column set).
    pub per_priority: bool,
    /// One-line meaning, with the source of the definition.
    pub description: &'static str,
    /// What analyses read the counter for (empty: only by its name).
    pub roles: &'static [RoleRank],
    /// The counter this one is read as by analyses written against NIC counters (a capture's
    /// count of CE-marked packets stands for the NIC's `np_ecn_marked_roce_packets`). Its roles
    /// come through that counter, so a capture is never counted twice.
    pub stands_for: Option<&'static str>,
}

impl CounterDef {
    /// The same counter with `roles`.
    const fn with(self, roles: &'static [RoleRank]) -> CounterDef {
        CounterDef { roles, ..self }
    }

    /// The same counter, read as `counter` by analyses.
    const fn stands_for(self, counter: &'static str) -> CounterDef {
        CounterDef { stands_for: Some(counter), ..self }
    }
}

/// A role with its preference rank.
const fn r(role: Role, rank: u8) -> RoleRank {
    RoleRank { role, rank }
}

/// The namespace a raw spelling lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Namespace {
    /// Path relative to a sysfs port directory (`counters/port_xmit_data`, `hw_counters/out_of_buffer`)
    /// or to a net device directory (`statistics/rx_bytes`, `speed`).
    Sysfs,
    /// `ethtool -S` names; per-priority names use a `{p}` placeholder (`rx_prio{p}_pause`).
    Ethtool,
    /// Prometheus metric names (node_exporter, infiniband_exporter, DCGM exporter).
    Prometheus,
    // --- InfiniBand diagnostic sources ---
    /// libibmad field names as `perfquery` and `ibqueryerrors` print them (`PortXmitData`).
    Perfquery,
    /// `ibdiagnet2.db_csv` PM_INFO column names (mixed `Ext`/`Extended` suffixes).
    Ibdiagnet,
    /// UFM telemetry CSV columns (`PortXmitDataExtended`) and JSON keys (`Infiniband_PckOut_u_Packets`).
    Ufm,
    /// Telegraf `infiniband` input field names (the sysfs counter file names, read raw).
    Telegraf,
    // --- packet captures ---
    /// Counters derived from packet captures (`capture_*`): canonical names, no raw spellings.
    Capture,
    // --- measured-performance, GPU and CXL sources ---
    /// `nvidia-smi nvlink` row labels (`Data Tx`, `Raw Rx`, `Tx0`, `Replay Errors`).
    NvidiaSmi,
    /// `perf stat` CXL PMU event names (`clock_ticks`, `m2s_req_memrd`; kernel `cxl_pmu.c`).
    PerfStat,
    /// `mlxlink` row labels (`Effective Physical BER`, `Rx Power Current [dBm]`; mstflint
    /// `mlxlink_commander.cpp`), a threshold as `<label> [low]` / `<label> [high]`.
    Mlxlink,
    /// `dcgmi dmon` column short names (DCGM `dcgm_fields.cpp`: `PCITX` is field 1009).
    Dcgmi,
    // --- switch-side PFC ---
    /// SONiC `show pfc counters`, `show pfcwd stats`, `show queue counters` column names, with the
    /// table's direction or queue kind and a `{p}` placeholder (`Port Rx PFC{p}`, `UC{p} Drop/pkts`).
    Sonic,
}

impl Namespace {
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Namespace::Sysfs => "sysfs",
            Namespace::Ethtool => "ethtool",
            Namespace::Prometheus => "prometheus",
            Namespace::Perfquery => "perfquery",
            Namespace::Ibdiagnet => "ibdiagnet",
            Namespace::Ufm => "ufm",
            Namespace::Telegraf => "telegraf",
            Namespace::Capture => "capture",
            Namespace::NvidiaSmi => "nvidia-smi",
            Namespace::PerfStat => "perf-stat",
            Namespace::Mlxlink => "mlxlink",
            Namespace::Dcgmi => "dcgmi",
            Namespace::Sonic => "sonic",
        }
    }
}

/// One source spelling of a canonical counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spelling {
    /// Namespace of `raw`.
    pub namespace: Namespace,
    /// The raw spelling, exactly as the source writes it (after trimming).
    pub raw: &'static str,
    /// Canonical counter it maps to.
    pub counter: &'static str,
    /// Factor applied at parse time (4 for 4-octet data words read raw).
    pub multiply: u32,
    /// Factor between hardware register and stored value, recorded per row.
    pub scale: u32,
    /// Overflow behaviour of this source when it differs from the counter's default.
    pub overflow: Option<Overflow>,
}

/// The resolved meaning of a raw name: what a reader needs per row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// The canonical counter.
    pub def: &'static CounterDef,
    /// Factor to apply to the raw value.
    pub multiply: u32,
    /// Factor recorded in the `scale` column.
    pub scale: u32,
    /// Effective overflow behaviour for this source.
    pub overflow: Overflow,
}

const fn c(
    name: &'static str,
    unit: Unit,
    kind: Kind,
    overflow: Overflow,
    layer: Layer,
    per_priority: bool,
    description: &'static str,
) -> CounterDef {
    CounterDef { name, unit, kind, overflow, layer, per_priority, description, roles: &[], stands_for: None }
}

use Kind::{Counter as CTR, Gauge as GAU};
use Layer::{Cxl as CXL, Device as DEV, Network as NET, Nvlink as NVL, Pcie as PCI};
use Overflow::{None as NOOVF, Saturate as SAT, Wrap as WRAP};
use Role as R;
use Unit::{
    Bits, Bytes, BytesPerSecond, Celsius, Dbm, Events, Lanes, Microseconds, Milliamps, Millivolts, Packets, Percent,
    Ratio, Rpm, Seconds, StateId, Ticks, Watts,
};

const IB_DATA: Overflow = Overflow::SaturateOrWide { basic: 32, extended: 64 };

/// Every canonical counter. Sources: kernel `drivers/infiniband/core/sysfs.c` (PMA widths),
/// `drivers/infiniband/hw/mlx5/counters.c` (hw_counters), mlx5 `counters.rst` (ethtool), IBA spec
/// via perfquery man page (4-octet data words), DCGM `dcgm_fields.h`.
///
/// Role ranks of the traffic roles (`tx_bytes`, `rx_packets`, ...), one order for every analysis:
/// 1. `vport_rdma_*`: exactly the RoCE traffic the transport loss counters belong to, 64-bit;
/// 2. `ext_port_*`: the IB port's 64-bit copies (legacy `counters_ext/`), which never saturate;
/// 3. `port_*`: the IB PMA counters (RDMA only on a RoCE port), 32-bit saturating on older PMAs;
/// 4. `phy_*`: the wire, every protocol and header, when the NIC has no RDMA counter.
///
/// The `netdev_*` counters exclude RDMA, so they are not an RDMA port's traffic: they carry their
/// own `*_stack_*` roles, which a view may show for a port without any of the above.
///
/// Capture counters carry no traffic role: `fabricscope.reading.captures` adds the NIC counters each
/// stands for, which carry the roles, and a role on both would count a capture twice.
#[rustfmt::skip]
pub static COUNTERS: &[CounterDef] = &[
    // --- InfiniBand PMA PortCounters / PortCountersExtended -------------------------------------
    c("port_xmit_data_bytes", Bytes, CTR, IB_DATA, NET, false, "Data octets transmitted on all VLs (PMA PortXmitData, counted in 4-octet words, stored as bytes)").with(&[r(R::TxBytes, 3)]),
    c("port_rcv_data_bytes", Bytes, CTR, IB_DATA, NET, false, "Data octets received on all VLs (PMA PortRcvData, counted in 4-octet words, stored as bytes)").with(&[r(R::RxBytes, 3)]),
    c("port_xmit_packets", Packets, CTR, IB_DATA, NET, false, "Packets transmitted on all VLs, including errors (PMA PortXmitPkts)").with(&[r(R::TxPackets, 3)]),
    c("port_rcv_packets", Packets, CTR, IB_DATA, NET, false, "Packets received on all VLs, including errors (PMA PortRcvPkts)").with(&[r(R::RxPackets, 3)]),
    c("unicast_xmit_packets", Packets, CTR, WRAP(64), NET, false, "Unicast packets transmitted (PMA PortUnicastXmitPkts, extended only)"),
    c("unicast_rcv_packets", Packets, CTR, WRAP(64), NET, false, "Unicast packets received (PMA PortUnicastRcvPkts, extended only)"),
    c("multicast_xmit_packets", Packets, CTR, WRAP(64), NET, false, "Multicast packets transmitted (PMA PortMulticastXmitPkts, extended only)"),
    c("multicast_rcv_packets", Packets, CTR, WRAP(64), NET, false, "Multicast packets received (PMA PortMulticastRcvPkts, extended only)"),
    // Old mlx4 kernels (< 4.5) expose 64-bit copies in `counters_ext/` beside the basic
    // 32-bit `counters/` files (node_exporter calls them `legacy_*`). Both exist on one port with
    // different values, so they are distinct series; analysis prefers these when present.
    c("ext_port_xmit_data_bytes", Bytes, CTR, WRAP(64), NET, false, "64-bit PortXmitData from legacy counters_ext (4-octet words, stored as bytes)").with(&[r(R::TxBytes, 2)]),
    c("ext_port_rcv_data_bytes", Bytes, CTR, WRAP(64), NET, false, "64-bit PortRcvData from legacy counters_ext (4-octet words, stored as bytes)").with(&[r(R::RxBytes, 2)]),
    c("ext_port_xmit_packets", Packets, CTR, WRAP(64), NET, false, "64-bit PortXmitPkts from legacy counters_ext").with(&[r(R::TxPackets, 2)]),
    c("ext_port_rcv_packets", Packets, CTR, WRAP(64), NET, false, "64-bit PortRcvPkts from legacy counters_ext").with(&[r(R::RxPackets, 2)]),
    c("ext_unicast_xmit_packets", Packets, CTR, WRAP(64), NET, false, "Unicast packets transmitted, legacy counters_ext"),
    c("ext_unicast_rcv_packets", Packets, CTR, WRAP(64), NET, false, "Unicast packets received, legacy counters_ext"),
    c("ext_multicast_xmit_packets", Packets, CTR, WRAP(64), NET, false, "Multicast packets transmitted, legacy counters_ext"),
    c("ext_multicast_rcv_packets", Packets, CTR, WRAP(64), NET, false, "Multicast packets received, legacy counters_ext"),
    c("symbol_errors", Events, CTR, SAT(16), NET, false, "Minor link errors detected on one or more physical lanes (PMA SymbolErrorCounter)").with(&[r(R::LinkErrors, 1)]),
    c("link_error_recovery_events", Events, CTR, SAT(8), NET, false, "Successful link error recoveries (PMA LinkErrorRecoveryCounter)").with(&[r(R::LinkErrors, 5)]),
    c("link_downed_events", Events, CTR, SAT(8), NET, false, "Link error recoveries that failed and took the link down (PMA LinkDownedCounter)").with(&[r(R::LinkErrors, 6)]),
    c("port_rcv_errors", Events, CTR, SAT(16), NET, false, "Received packets containing an error (PMA PortRcvErrors)").with(&[r(R::LinkErrors, 2)]),
    c("port_rcv_remote_physical_errors", Events, CTR, SAT(16), NET, false, "Received packets marked with the EBP delimiter (PMA PortRcvRemotePhysicalErrors)").with(&[r(R::LinkErrors, 3)]),
    c("port_rcv_switch_relay_errors", Events, CTR, SAT(16), NET, false, "Received packets discarded because they could not be forwarded (PMA PortRcvSwitchRelayErrors)"),
    c("port_rcv_discards", Packets, CTR, WRAP(64), NET, false, "Inbound packets discarded because the port is down or congested (node_exporter port_discards_received_total, procfs counters/port_rcv_discards)"),
    c("port_xmit_discards", Packets, CTR, SAT(16), NET, false, "Outbound packets discarded because the port is down or congested (PMA PortXmitDiscards)"),
    c("port_xmit_constraint_errors", Events, CTR, SAT(8), NET, false, "Packets not transmitted because of partition/raw constraints (PMA PortXmitConstraintErrors)"),
    c("port_rcv_constraint_errors", Events, CTR, SAT(8), NET, false, "Packets received and discarded because of constraints (PMA PortRcvConstraintErrors)"),
    c("local_link_integrity_errors", Events, CTR, SAT(4), NET, false, "Times the local physical error count exceeded its threshold (PMA LocalLinkIntegrityErrors)").with(&[r(R::LinkErrors, 4)]),
    c("excessive_buffer_overrun_errors", Events, CTR, SAT(4), NET, false, "Consecutive flow-control update periods with buffer overrun (PMA ExcessiveBufferOverrunErrors)"),
    c("vl15_dropped_packets", Packets, CTR, SAT(16), NET, false, "Incoming VL15 packets dropped for lack of buffers (PMA VL15Dropped)"),
    c("qp1_dropped_packets", Packets, CTR, SAT(16), NET, false, "QP1 MADs dropped (PMA QP1Dropped)"),
    c("port_xmit_wait_ticks", Ticks, CTR, IB_DATA, NET, false, "Ticks during which the port had data to send but sent none (PMA PortXmitWait, 32-bit saturating or 64-bit extended): congestion").with(&[r(R::TxWait, 1)]),
    c("port_local_physical_errors", Events, CTR, WRAP(64), NET, false, "PortRcvErrorDetails: local physical errors"),
    c("port_malformed_packet_errors", Events, CTR, WRAP(64), NET, false, "PortRcvErrorDetails: malformed packets"),
    c("port_buffer_overrun_errors", Events, CTR, WRAP(64), NET, false, "PortRcvErrorDetails: buffer overruns"),
    c("port_dlid_mapping_errors", Events, CTR, WRAP(64), NET, false, "PortRcvErrorDetails: DLID mapping errors"),
    c("port_vl_mapping_errors", Events, CTR, WRAP(64), NET, false, "PortRcvErrorDetails: VL mapping errors"),
    c("port_looping_errors", Events, CTR, WRAP(64), NET, false, "PortRcvErrorDetails: looping errors"),
    // --- InfiniBand diagnostic sources: counters no other source had -----------------------
    c("port_inactive_discards", Packets, CTR, WRAP(64), NET, false, "Packets discarded because the port was not active (PortRcvErrorDetails/PortXmitDiscardDetails, UFM PortInactiveDiscards)"),
    c("port_neighbor_mtu_discards", Packets, CTR, WRAP(64), NET, false, "Packets discarded for exceeding the neighbor MTU (UFM PortNeighborMTUDiscards)"),
    c("port_sw_lifetime_limit_discards", Packets, CTR, WRAP(64), NET, false, "Packets discarded by the switch lifetime limit (UFM PortSwLifetimeLimitDiscards)"),
    c("port_sw_hoq_lifetime_limit_discards", Packets, CTR, WRAP(64), NET, false, "Packets discarded by the head-of-queue lifetime limit (UFM PortSwHOQLifetimeLimitDiscards)"),
    c("fec_correctable_blocks", Events, CTR, WRAP(64), NET, false, "FEC blocks corrected (PortFECCorrectableBlockCounter)"),
    c("fec_uncorrectable_blocks", Events, CTR, WRAP(64), NET, false, "FEC blocks that could not be corrected: data loss on the link (PortFECUncorrectableBlockCounter)").with(&[r(R::LinkErrors, 10)]),
    c("fec_corrected_symbols", Events, CTR, WRAP(64), NET, false, "Symbols corrected by FEC (PortFECCorrectedSymbolCounter)"),
    // --- port attributes as gauges -------------------------------------------------------------
    c("link_rate_bytes_per_s", BytesPerSecond, GAU, NOOVF, NET, false, "Effective data rate of the link (sysfs `rate`, exporter rate gauges)").with(&[r(R::LinkSpeed, 1)]),
    c("link_width_lanes", Lanes, GAU, NOOVF, NET, false, "Active link width in lanes (1X/2X/4X/8X)").with(&[r(R::LinkWidth, 1)]),
    c("port_state_id", StateId, GAU, NOOVF, NET, false, "Logical port state: 1 down, 2 init, 3 armed, 4 active, 5 act defer").with(&[r(R::LinkState, 1)]),
    c("port_phys_state_id", StateId, GAU, NOOVF, NET, false, "Physical port state: 1 sleep, 2 polling, 3 disabled, 4 training, 5 link up, 6 error recovery, 7 phy test").with(&[r(R::LinkPhysState, 1)]),
    // --- mlx5 hw_counters (RDMA transport, congestion) -------------------------------------------
    c("rx_write_requests", Events, CTR, WRAP(32), NET, false, "RDMA WRITE requests received (mlx5 Q counter)"),
    c("rx_read_requests", Events, CTR, WRAP(32), NET, false, "RDMA READ requests received (mlx5 Q counter)"),
    c("rx_atomic_requests", Events, CTR, WRAP(32), NET, false, "Atomic requests received (mlx5 Q counter)"),
    c("rx_out_of_buffer_packets", Packets, CTR, WRAP(32), NET, false, "Packets dropped for lack of receive WQEs (mlx5 Q counter out_of_buffer / ethtool rx_out_of_buffer)").with(&[r(R::RxLoss, 4)]),
    c("out_of_sequence_packets", Packets, CTR, WRAP(32), NET, false, "Out-of-sequence packets received: loss signal on RoCE (mlx5 Q counter)").with(&[r(R::RxLoss, 1)]),
    c("duplicate_requests", Events, CTR, WRAP(32), NET, false, "Duplicate requests received: retransmissions (mlx5 Q counter)").with(&[r(R::RxLoss, 2)]),
    c("rnr_nak_retry_errors", Events, CTR, WRAP(32), NET, false, "RNR NAK retries exceeded (mlx5 Q counter)"),
    c("packet_seq_errors", Events, CTR, WRAP(32), NET, false, "NAK sequence errors received: go-back-N triggers (mlx5 Q counter)").with(&[r(R::TxLoss, 1)]),
    c("implied_nak_seq_errors", Events, CTR, WRAP(32), NET, false, "Implied NAK sequence errors (mlx5 Q counter)").with(&[r(R::TxLoss, 2)]),
    c("local_ack_timeout_errors", Events, CTR, WRAP(32), NET, false, "Local ACK timeouts: lost packets or ACKs (mlx5 Q counter)").with(&[r(R::TxLoss, 3)]),
    c("rp_cnp_ignored_packets", Packets, CTR, WRAP(64), NET, false, "CNPs received and ignored by the reaction point: congestion control off").with(&[r(R::RxCnpIgnored, 1)]),
    c("rp_cnp_handled_packets", Packets, CTR, WRAP(64), NET, false, "CNPs handled by the reaction point (sender throttled)").with(&[r(R::RxCnpHandled, 1)]),
    c("np_ecn_marked_roce_packets", Packets, CTR, WRAP(64), NET, false, "RoCEv2 packets received with ECN CE at the notification point").with(&[r(R::RxEcnMarked, 1)]),
    c("np_cnp_sent_packets", Packets, CTR, WRAP(64), NET, false, "CNPs sent by the notification point").with(&[r(R::TxCnp, 1)]),
    c("req_cqe_errors", Events, CTR, WRAP(32), NET, false, "Requester completions with error"),
    c("req_cqe_flush_errors", Events, CTR, WRAP(32), NET, false, "Requester completions flushed with error"),
    c("resp_cqe_errors", Events, CTR, WRAP(32), NET, false, "Responder completions with error"),
    c("resp_cqe_flush_errors", Events, CTR, WRAP(32), NET, false, "Responder completions flushed with error"),
    c("req_remote_access_errors", Events, CTR, WRAP(32), NET, false, "Remote access errors seen by the requester"),
    c("resp_remote_access_errors", Events, CTR, WRAP(32), NET, false, "Remote access errors seen by the responder"),
    c("req_remote_invalid_requests", Events, CTR, WRAP(32), NET, false, "Remote invalid request errors seen by the requester"),
    c("resp_local_length_errors", Events, CTR, WRAP(32), NET, false, "Local length errors at the responder"),
    c("roce_adp_retrans_events", Events, CTR, WRAP(32), NET, false, "Adaptive retransmissions (MLNX_OFED 5.0+/kernel 5.6+)").with(&[r(R::TxLoss, 4)]),
    c("roce_adp_retrans_to_events", Events, CTR, WRAP(32), NET, false, "Adaptive retransmission timeouts"),
    c("roce_slow_restart_events", Events, CTR, WRAP(32), NET, false, "Slow restarts"),
    c("roce_slow_restart_cnp_packets", Packets, CTR, WRAP(32), NET, false, "CNPs that triggered slow restart"),
    c("roce_slow_restart_trans_events", Events, CTR, WRAP(32), NET, false, "Transitions to slow restart"),
    c("rx_dct_connect_events", Events, CTR, WRAP(32), NET, false, "DCT connect requests received"),
    c("rx_icrc_encapsulated_packets", Packets, CTR, WRAP(32), NET, false, "Packets received with an encapsulated ICRC"),
    // --- Ethernet PHY / PPCNT (ethtool -S, mlx5) --------------------------------------------------
    c("phy_rx_bytes", Bytes, CTR, WRAP(64), NET, false, "Bytes received on the wire, including Ethernet header and FCS (rx_bytes_phy)").with(&[r(R::RxBytes, 4), r(R::RxWireBytes, 1)]),
    c("phy_tx_bytes", Bytes, CTR, WRAP(64), NET, false, "Bytes transmitted on the wire (tx_bytes_phy)").with(&[r(R::TxBytes, 4), r(R::TxWireBytes, 1)]),
    c("phy_rx_packets", Packets, CTR, WRAP(64), NET, false, "Packets received on the wire (rx_packets_phy)").with(&[r(R::RxPackets, 4)]),
    c("phy_tx_packets", Packets, CTR, WRAP(64), NET, false, "Packets transmitted on the wire (tx_packets_phy)").with(&[r(R::TxPackets, 4)]),
    c("phy_rx_crc_errors", Events, CTR, WRAP(64), NET, false, "Frames received with FCS errors (rx_crc_errors_phy)").with(&[r(R::LinkErrors, 7)]),
    c("phy_rx_symbol_errors", Events, CTR, WRAP(64), NET, false, "PHY symbol errors (rx_symbol_err_phy)").with(&[r(R::LinkErrors, 8)]),
    c("phy_rx_pcs_symbol_errors", Events, CTR, WRAP(64), NET, false, "PCS symbol errors (rx_pcs_symbol_err_phy)"),
    c("phy_rx_corrected_bits", Bits, CTR, WRAP(64), NET, false, "Bits corrected by FEC (rx_corrected_bits_phy)"),
    c("phy_rx_bits", Bits, CTR, WRAP(64), NET, false, "Bits received, the BER denominator (rx_bits_phy)"),
    c("phy_rx_discards", Packets, CTR, WRAP(64), NET, false, "Packets dropped for lack of buffers on the physical port: adapter congested (rx_discards_phy)").with(&[r(R::RxLoss, 3)]),
    c("phy_tx_discards", Packets, CTR, WRAP(64), NET, false, "Packets discarded on transmit (tx_discards_phy)"),
    c("phy_tx_errors", Events, CTR, WRAP(64), NET, false, "Transmit errors (tx_errors_phy)"),
    c("phy_rx_pause_ctrl_frames", Packets, CTR, WRAP(64), NET, false, "Pause control frames received (rx_pause_ctrl_phy)"),
    c("phy_tx_pause_ctrl_frames", Packets, CTR, WRAP(64), NET, false, "Pause control frames sent (tx_pause_ctrl_phy)"),
    c("phy_link_down_events", Events, CTR, WRAP(64), NET, false, "Link down events (link_down_events_phy)").with(&[r(R::LinkErrors, 9)]),
    c("rx_buffer_passed_thres_events", Events, CTR, WRAP(64), NET, false, "Events with the receive buffer above 85% (rx_buffer_passed_thres_phy)"),
    c("rx_pause_frames", Packets, CTR, WRAP(64), NET, true, "PFC (per priority) or 802.3x (priority null) pause frames received").with(&[r(R::RxPauseFrames, 1)]),
    c("tx_pause_frames", Packets, CTR, WRAP(64), NET, true, "PFC (per priority) or 802.3x (priority null) pause frames sent").with(&[r(R::TxPauseFrames, 1)]),
    c("rx_pause_duration_us", Microseconds, CTR, WRAP(64), NET, true, "Time the port was paused by received pause frames, microseconds").with(&[r(R::RxPauseDuration, 1)]),
    c("tx_pause_duration_us", Microseconds, CTR, WRAP(64), NET, true, "Time this port paused its peer, microseconds").with(&[r(R::TxPauseDuration, 1)]),
    c("rx_pause_transitions", Events, CTR, WRAP(64), NET, true, "Xoff to Xon transitions of received pause").with(&[r(R::RxPauseTransitions, 1)]),
    c("tx_pause_storm_warning_events", Events, CTR, WRAP(64), NET, false, "Pause stall exceeded the minor watermark").with(&[r(R::TxPauseStorm, 1)]),
    c("tx_pause_storm_error_events", Events, CTR, WRAP(64), NET, false, "Pause stall hit the critical watermark: pause TX disabled, drops possible").with(&[r(R::TxPauseStorm, 2)]),
    c("prio_rx_bytes", Bytes, CTR, WRAP(64), NET, true, "Bytes received on a priority (rx_prio<p>_bytes)").with(&[r(R::RxPriorityBytes, 1)]),
    c("prio_tx_bytes", Bytes, CTR, WRAP(64), NET, true, "Bytes sent on a priority (tx_prio<p>_bytes)").with(&[r(R::TxPriorityBytes, 1)]),
    c("prio_rx_packets", Packets, CTR, WRAP(64), NET, true, "Packets received on a priority").with(&[r(R::RxPriorityPackets, 1)]),
    c("prio_tx_packets", Packets, CTR, WRAP(64), NET, true, "Packets sent on a priority").with(&[r(R::TxPriorityPackets, 1)]),
    c("prio_rx_discards", Packets, CTR, WRAP(64), NET, true, "Packets discarded on a priority").with(&[r(R::RxPriorityDrops, 1)]),
    c("prio_rx_buf_discards", Packets, CTR, WRAP(64), NET, true, "Packets discarded on a priority for lack of buffer").with(&[r(R::RxPriorityDrops, 2)]),
    c("prio_rx_cong_discards", Packets, CTR, WRAP(64), NET, true, "Packets discarded on a priority by congestion").with(&[r(R::RxPriorityDrops, 3)]),
    c("prio_rx_ecn_marked_packets", Packets, CTR, WRAP(64), NET, true, "Packets ECN-marked by the device on a priority (rx_prio<p>_marked)").with(&[r(R::RxPriorityEcnMarked, 1)]),
    c("vport_rdma_rx_unicast_bytes", Bytes, CTR, WRAP(64), NET, false, "RoCE unicast bytes received (rx_vport_rdma_unicast_bytes)").with(&[r(R::RxBytes, 1)]),
    c("vport_rdma_tx_unicast_bytes", Bytes, CTR, WRAP(64), NET, false, "RoCE unicast bytes sent (tx_vport_rdma_unicast_bytes)").with(&[r(R::TxBytes, 1)]),
    c("vport_rdma_rx_unicast_packets", Packets, CTR, WRAP(64), NET, false, "RoCE unicast packets received").with(&[r(R::RxPackets, 1)]),
    c("vport_rdma_tx_unicast_packets", Packets, CTR, WRAP(64), NET, false, "RoCE unicast packets sent").with(&[r(R::TxPackets, 1)]),
    c("pci_outbound_stalled_rd_percent", Percent, GAU, NOOVF, PCI, false, "Share of the last second PCIe reads were stalled (outbound_pci_stalled_rd, a gauge)"),
    c("pci_outbound_stalled_wr_percent", Percent, GAU, NOOVF, PCI, false, "Share of the last second PCIe writes were stalled (outbound_pci_stalled_wr, a gauge)"),
    c("pci_outbound_stalled_rd_events", Events, CTR, WRAP(64), PCI, false, "Seconds with PCIe read stalls above 30%"),
    c("pci_outbound_stalled_wr_events", Events, CTR, WRAP(64), PCI, false, "Seconds with PCIe write stalls above 30%"),
    // --- netdev software statistics ---------------------------------------------------------------
    c("netdev_rx_bytes", Bytes, CTR, WRAP(64), NET, false, "Bytes received by the netdev (software, excludes RDMA)").with(&[r(R::RxStackBytes, 1)]),
    c("netdev_tx_bytes", Bytes, CTR, WRAP(64), NET, false, "Bytes sent by the netdev (software, excludes RDMA)").with(&[r(R::TxStackBytes, 1)]),
    c("netdev_rx_packets", Packets, CTR, WRAP(64), NET, false, "Packets received by the netdev").with(&[r(R::RxStackPackets, 1)]),
    c("netdev_tx_packets", Packets, CTR, WRAP(64), NET, false, "Packets sent by the netdev").with(&[r(R::TxStackPackets, 1)]),
    c("netdev_rx_errors", Events, CTR, WRAP(64), NET, false, "Receive errors on the netdev"),
    c("netdev_tx_errors", Events, CTR, WRAP(64), NET, false, "Transmit errors on the netdev"),
    c("netdev_rx_dropped", Packets, CTR, WRAP(64), NET, false, "Packets dropped on receive by the netdev"),
    c("netdev_tx_dropped", Packets, CTR, WRAP(64), NET, false, "Packets dropped on transmit by the netdev"),
    c("netdev_carrier_changes", Events, CTR, WRAP(64), NET, false, "Carrier up/down transitions (link flaps)"),
    // --- GPU: NVLink, PCIe, device (DCGM) -----------------------------------------------------------
    c("nvlink_tx_bytes_per_s", BytesPerSecond, GAU, NOOVF, NVL, false, "NVLink transmit rate incl. headers (DCGM_FI_PROF_NVLINK_TX_BYTES, field 1011: a rate)").with(&[r(R::TxBytes, 2)]),
    c("nvlink_rx_bytes_per_s", BytesPerSecond, GAU, NOOVF, NVL, false, "NVLink receive rate incl. headers (DCGM_FI_PROF_NVLINK_RX_BYTES, field 1012: a rate)").with(&[r(R::RxBytes, 2)]),
    c("nvlink_bandwidth_total", Events, CTR, WRAP(64), NVL, false, "DCGM NVLink bandwidth counter summed over lanes (DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL)"),
    c("nvlink_crc_flit_errors", Events, CTR, WRAP(64), NVL, false, "NVLink flow-control CRC errors").with(&[r(R::LinkErrors, 1)]),
    c("nvlink_crc_data_errors", Events, CTR, WRAP(64), NVL, false, "NVLink data CRC errors").with(&[r(R::LinkErrors, 2)]),
    c("nvlink_replay_errors", Events, CTR, WRAP(64), NVL, false, "NVLink replays").with(&[r(R::LinkErrors, 4)]),
    c("nvlink_recovery_errors", Events, CTR, WRAP(64), NVL, false, "NVLink recoveries").with(&[r(R::LinkErrors, 5)]),
    c("pcie_tx_bytes_per_s", BytesPerSecond, GAU, NOOVF, PCI, false, "GPU PCIe transmit rate incl. headers (DCGM_FI_PROF_PCIE_TX_BYTES: a rate)").with(&[r(R::TxBytes, 1)]),
    c("pcie_rx_bytes_per_s", BytesPerSecond, GAU, NOOVF, PCI, false, "GPU PCIe receive rate incl. headers (DCGM_FI_PROF_PCIE_RX_BYTES: a rate)").with(&[r(R::RxBytes, 1)]),
    c("pcie_replay_events", Events, CTR, WRAP(64), PCI, false, "GPU PCIe replays (DCGM_FI_DEV_PCIE_REPLAY_COUNTER)"),
    // DCGM PCIe link training (dcgm_fields.h fields 235-238): a GPU trained below x16 or below its
    // generation halves its PCIe bandwidth (the bottleneck detector's PCIe layer).
    c("pcie_link_generation", StateId, GAU, NOOVF, PCI, false, "Current PCIe link generation of the GPU, 1-6 (DCGM_FI_DEV_PCIE_LINK_GEN, field 237)"),
    c("pcie_link_max_generation", StateId, GAU, NOOVF, PCI, false, "Highest PCIe link generation the GPU supports (DCGM_FI_DEV_PCIE_MAX_LINK_GEN, field 235)"),
    c("pcie_link_width_lanes", Lanes, GAU, NOOVF, PCI, false, "Current PCIe link width of the GPU in lanes (DCGM_FI_DEV_PCIE_LINK_WIDTH, field 238)"),
    c("pcie_link_max_width_lanes", Lanes, GAU, NOOVF, PCI, false, "Widest PCIe link the GPU supports, lanes (DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH, field 236)"),
    // `nvidia-smi nvlink`: per link (port = link number), KiB counters stored in bytes.
    c("nvlink_tx_bytes", Bytes, CTR, WRAP(64), NVL, false, "NVLink data payload transmitted per link (nvidia-smi nvlink -gt d `Data Tx`, KiB x 1024)").with(&[r(R::TxBytes, 1)]),
    c("nvlink_rx_bytes", Bytes, CTR, WRAP(64), NVL, false, "NVLink data payload received per link (nvidia-smi nvlink -gt d `Data Rx`, KiB x 1024)").with(&[r(R::RxBytes, 1)]),
    c("nvlink_raw_tx_bytes", Bytes, CTR, WRAP(64), NVL, false, "NVLink payload plus protocol overhead transmitted per link (nvidia-smi nvlink -gt r `Raw Tx`, KiB x 1024)"),
    c("nvlink_raw_rx_bytes", Bytes, CTR, WRAP(64), NVL, false, "NVLink payload plus protocol overhead received per link (nvidia-smi nvlink -gt r `Raw Rx`, KiB x 1024)"),
    c("nvlink_counter0_tx_bytes", Bytes, CTR, WRAP(64), NVL, false, "Deprecated NVLink counter set 0, transmit (nvidia-smi nvlink -g 0 `Tx0`, KiB x 1024); counts what `-sc` configured"),
    c("nvlink_counter0_rx_bytes", Bytes, CTR, WRAP(64), NVL, false, "Deprecated NVLink counter set 0, receive (nvidia-smi nvlink -g 0 `Rx0`, KiB x 1024); counts what `-sc` configured"),
    c("nvlink_counter1_tx_bytes", Bytes, CTR, WRAP(64), NVL, false, "Deprecated NVLink counter set 1, transmit (nvidia-smi nvlink -g 1 `Tx1`, KiB x 1024); counts what `-sc` configured"),
    c("nvlink_counter1_rx_bytes", Bytes, CTR, WRAP(64), NVL, false, "Deprecated NVLink counter set 1, receive (nvidia-smi nvlink -g 1 `Rx1`, KiB x 1024); counts what `-sc` configured"),
    c("nvlink_crc_errors", Events, CTR, WRAP(64), NVL, false, "NVLink CRC errors as nvidia-smi nvlink -e prints them (`CRC Errors`; which NVML DL CRC counter it sums is not documented)").with(&[r(R::LinkErrors, 3)]),
    // --- CXL PMU: kernel drivers/perf/cxl_pmu.c event names, CXL 3.0 section 13.2 ---
    c("cxl_clock_ticks", Ticks, CTR, WRAP(64), CXL, false, "CXL PMU clock ticks (perf event cxl_pmu_mem<X>.<Y>/clock_ticks/)"),
    c("cxl_m2s_req_meminv", Events, CTR, WRAP(64), CXL, false, "CXL.mem M2S Req MemInv messages (CXL 3.0 Table 3-29; perf event m2s_req_meminv)"),
    c("cxl_m2s_req_memrd", Events, CTR, WRAP(64), CXL, false, "CXL.mem M2S Req MemRd messages: host reads of device memory (CXL 3.0 Table 3-29; perf event m2s_req_memrd)"),
    c("cxl_m2s_req_memrddata", Events, CTR, WRAP(64), CXL, false, "CXL.mem M2S Req MemRdData messages (CXL 3.0 Table 3-29; perf event m2s_req_memrddata)"),
    c("cxl_m2s_req_memspecrd", Events, CTR, WRAP(64), CXL, false, "CXL.mem M2S Req MemSpecRd messages (CXL 3.0 Table 3-29; perf event m2s_req_memspecrd)"),
    c("cxl_m2s_rwd_memwr", Events, CTR, WRAP(64), CXL, false, "CXL.mem M2S RwD MemWr messages: host writes to device memory (CXL 3.0 Table 3-35; perf event m2s_rwd_memwr)").with(&[r(R::ToDeviceMessages, 1)]),
    c("cxl_m2s_rwd_memwrptl", Events, CTR, WRAP(64), CXL, false, "CXL.mem M2S RwD MemWrPtl (partial write) messages (CXL 3.0 Table 3-35; perf event m2s_rwd_memwrptl)").with(&[r(R::ToDeviceMessages, 2)]),
    c("cxl_s2m_drs_memdata", Events, CTR, WRAP(64), CXL, false, "CXL.mem S2M DRS MemData messages: read data returned (CXL 3.0 Table 3-46; perf event s2m_drs_memdata)").with(&[r(R::ToHostMessages, 1)]),
    c("cxl_s2m_ndr_cmp", Events, CTR, WRAP(64), CXL, false, "CXL.mem S2M NDR Cmp completions (CXL 3.0 Table 3-43; perf event s2m_ndr_cmp)"),
    c("cxl_d2h_req_rdcurr", Events, CTR, WRAP(64), CXL, false, "CXL.cache D2H Req RdCurr messages (perf event d2h_req_rdcurr)"),
    c("cxl_d2h_req_rdown", Events, CTR, WRAP(64), CXL, false, "CXL.cache D2H Req RdOwn messages (perf event d2h_req_rdown)"),
    c("cxl_d2h_req_rdshared", Events, CTR, WRAP(64), CXL, false, "CXL.cache D2H Req RdShared messages (perf event d2h_req_rdshared)"),
    c("cxl_h2d_req_snpdata", Events, CTR, WRAP(64), CXL, false, "CXL.cache H2D Req SnpData snoops (CXL 3.0 Table 3-21; perf event h2d_req_snpdata)"),
    c("cxl_h2d_req_snpinv", Events, CTR, WRAP(64), CXL, false, "CXL.cache H2D Req SnpInv snoops (CXL 3.0 Table 3-21; perf event h2d_req_snpinv)"),
    c("cxl_h2d_req_snpcur", Events, CTR, WRAP(64), CXL, false, "CXL.cache H2D Req SnpCur snoops (CXL 3.0 Table 3-21; perf event h2d_req_snpcur)"),
    c("cxl_cachedata_d2h_data", Events, CTR, WRAP(64), CXL, false, "CXL.cache D2H data messages (CXL 3.0 Table 13-5; perf event cachedata_d2h_data)").with(&[r(R::ToHostMessages, 2)]),
    c("cxl_cachedata_h2d_data", Events, CTR, WRAP(64), CXL, false, "CXL.cache H2D data messages (CXL 3.0 Table 13-5; perf event cachedata_h2d_data)").with(&[r(R::ToDeviceMessages, 3)]),
    c("cxl_ddr_casrd", Events, CTR, WRAP(64), CXL, false, "Device DDR read CAS commands (CXL 3.0 Table 13-5; perf event ddr_casrd)"),
    c("cxl_ddr_caswr", Events, CTR, WRAP(64), CXL, false, "Device DDR write CAS commands (CXL 3.0 Table 13-5; perf event ddr_caswr)"),
    c("gpu_temperature_celsius", Celsius, GAU, NOOVF, DEV, false, "GPU temperature (DCGM_FI_DEV_GPU_TEMP)"),
    // A code, not an amount: the gauge holds the driver's last XID until the exporter restarts
    // (dcgm-exporter holds it until it restarts), so a change of value is the event.
    c("gpu_last_xid", StateId, GAU, NOOVF, DEV, false, "The last XID error the GPU's driver reported, 0 for none (DCGM_FI_DEV_XID_ERRORS, field 230)"),
    c("gpu_memory_temperature_celsius", Celsius, GAU, NOOVF, DEV, false, "GPU memory temperature (DCGM_FI_DEV_MEMORY_TEMP)"),
    // Codes too: dcgmFabricManagerStatus_t (dcgm_structs.h) and the NVML fabric health mask
    // (nvmlGpuFabricInfoV_t.healthMask, NVML_GPU_FABRIC_HEALTH_MASK_*), decoded by nvlink_fabric.
    c("gpu_fabric_manager_status", StateId, GAU, NOOVF, DEV, false, "The GPU's fabric manager status: 0 not supported, 1 not started, 2 in progress, 3 success, 4 failure, 5 unrecognized, 6 NVML too old (DCGM_FI_DEV_FABRIC_MANAGER_STATUS, field 170)"),
    c("gpu_fabric_health_mask", StateId, GAU, NOOVF, DEV, false, "The GPU's NVLink fabric health mask: 2-bit degraded bandwidth, route recovery, route unhealthy, access timeout recovery (1 true, 2 false) and 4-bit incorrect configuration (DCGM_FI_DEV_FABRIC_HEALTH_MASK, field 174)"),
    // --- switch vitals (`ibswinfo`): per switch, or per fan/PSU sub-device `<switch>/fan<n>`, `<switch>/psu<n>` ---
    c("switch_temperature_celsius", Celsius, GAU, NOOVF, DEV, false, "Switch ASIC temperature now (ibswinfo `temperature (C)`, `cur.temp (C)`)"),
    c("switch_max_temperature_celsius", Celsius, GAU, NOOVF, DEV, false, "Highest switch ASIC temperature recorded by the device (ibswinfo `max temp (C)`, `max.temp (C)`)"),
    c("switch_fan_speed_rpm", Rpm, GAU, NOOVF, DEV, false, "Switch fan speed, one row per fan on device `<switch>/fan<n>` (ibswinfo `fan#<n> (rpm)`)"),
    c("switch_psu_power_watts", Watts, GAU, NOOVF, DEV, false, "Switch power supply output, one row per PSU on device `<switch>/psu<n>` (ibswinfo `power (W)`, `psu<n>.power (W)`)"),
    c("switch_uptime_seconds", Seconds, GAU, NOOVF, DEV, false, "Switch uptime (ibswinfo `uptime (d-h:m:s)` converted, `uptime (sec)`)"),
    // --- packet captures -----------------------------------------------------------------
    // Cumulative counts of what a pcap/pcapng capture saw at its capture point, per capture
    // interface (device) and priority (VLAN PCP; null when untagged), sampled at the end of every
    // time bin. Direction convention: every frame is counted as received at the capture point
    // (so captured PFC frames go to the shared `rx_pause_frames`). Values are exact (64-bit).
    c("capture_packets", Packets, CTR, WRAP(64), NET, true, "Frames in the capture (per interface and VLAN priority)"),
    c("capture_bytes", Bytes, CTR, WRAP(64), NET, true, "On-the-wire bytes of captured frames (original length, without preamble/IFG)"),
    c("capture_roce_packets", Packets, CTR, WRAP(64), NET, true, "RoCEv2 packets (UDP 4791 with a BTH) in the capture").stands_for("vport_rdma_rx_unicast_packets"),
    c("capture_roce_bytes", Bytes, CTR, WRAP(64), NET, true, "On-the-wire bytes of captured RoCEv2 packets").stands_for("vport_rdma_rx_unicast_bytes"),
    c("capture_ce_marked_packets", Packets, CTR, WRAP(64), NET, true, "Captured IP packets with ECN = CE (congestion experienced)").stands_for("np_ecn_marked_roce_packets"),
    c("capture_cnp_packets", Packets, CTR, WRAP(64), NET, true, "Captured congestion notification packets (BTH opcode 0x81 RoCEv2, 0x80 IB)").stands_for("np_cnp_sent_packets"),
    c("capture_nak_seq_packets", Packets, CTR, WRAP(64), NET, true, "Captured NAKs with a PSN sequence error syndrome (go-back-N triggers)").stands_for("packet_seq_errors"),
    c("capture_rnr_nak_packets", Packets, CTR, WRAP(64), NET, true, "Captured RNR NAKs (receiver not ready: no receive WQE)"),
    c("capture_psn_gap_events", Events, CTR, WRAP(64), NET, true, "Forward PSN jumps on a (src IP, dst IP, dest QP) request stream: loss or reordering before the capture point").stands_for("out_of_sequence_packets"),
    c("capture_retransmitted_packets", Packets, CTR, WRAP(64), NET, true, "Request packets whose PSN is below the highest PSN already seen on their flow (go-back-N, timeouts)"),
    c("capture_read_request_packets", Packets, CTR, WRAP(64), NET, true, "Captured RDMA READ requests"),
    c("capture_pfc_xoff_frames", Packets, CTR, WRAP(64), NET, true, "Captured PFC frames pausing a priority (enable bit set, quanta > 0)"),
    c("capture_pfc_xon_frames", Packets, CTR, WRAP(64), NET, true, "Captured PFC frames resuming a priority (enable bit set, quanta 0)"),
    c("capture_paused_time_us", Microseconds, CTR, WRAP(64), NET, true, "Time a priority was paused per captured PFC/PAUSE frames (quanta x 512 bit times at the link speed; XON ends it; refreshes extend it), microseconds").stands_for("rx_pause_duration_us"),
    // --- non-mlx5 RoCE NICs (bnxt_en, ice, ionic, qede): counters mlx5 has no spelling for -----
    c("rx_pfc_frames", Packets, CTR, WRAP(64), NET, false, "PFC frames received, all priorities summed (bnxt_en/qede rx_pfc_frames, ionic frames_rx_pripause)").with(&[r(R::RxPauseFrames, 3)]),
    c("tx_pfc_frames", Packets, CTR, WRAP(64), NET, false, "PFC frames sent, all priorities summed (bnxt_en/qede tx_pfc_frames, ionic frames_tx_pripause)").with(&[r(R::TxPauseFrames, 3)]),
    c("rx_xoff_frames", Packets, CTR, WRAP(64), NET, true, "XOFF (pause) frames received: PFC per priority, 802.3x with priority null (ice rx_priority_<p>_xoff.nic, link_xoff_rx.nic)").with(&[r(R::RxPauseFrames, 2), r(R::RxXoffFrames, 1)]),
    c("rx_xon_frames", Packets, CTR, WRAP(64), NET, true, "XON (resume) frames received: PFC per priority, 802.3x with priority null (ice rx_priority_<p>_xon.nic, link_xon_rx.nic)").with(&[r(R::RxXonFrames, 1)]),
    c("tx_xoff_frames", Packets, CTR, WRAP(64), NET, true, "XOFF (pause) frames sent: PFC per priority, 802.3x with priority null (ice tx_priority_<p>_xoff.nic, link_xoff_tx.nic)").with(&[r(R::TxPauseFrames, 2), r(R::TxXoffFrames, 1)]),
    c("tx_xon_frames", Packets, CTR, WRAP(64), NET, true, "XON (resume) frames sent: PFC per priority, 802.3x with priority null (ice tx_priority_<p>_xon.nic, link_xon_tx.nic)").with(&[r(R::TxXonFrames, 1)]),
    c("tx_pause_transitions", Events, CTR, WRAP(64), NET, true, "Xoff to Xon transitions of sent pause (bnxt_en pfc_pri<p>_tx_transitions)").with(&[r(R::TxPauseTransitions, 1)]),
    // --- physical layer: mlxlink (mstflint/MFT) BER, FEC and transceiver readings ---------------
    // Per-lane rows sit on the sub-device `<device>/lane<n>` (lanes from 0, the order mlxlink
    // prints them), as ibswinfo's fans sit on `<switch>/fan<n>`; everything else on the port.
    c("phy_effective_ber_ratio", Ratio, GAU, NOOVF, NET, false, "Bit error ratio left after FEC, as the device computed it since the counters were cleared (mlxlink `Effective Physical BER`)"),
    c("phy_raw_ber_ratio", Ratio, GAU, NOOVF, NET, false, "Bit error ratio before FEC (mlxlink `Raw Physical BER`): the earliest sign of a degrading cable"),
    c("phy_symbol_ber_ratio", Ratio, GAU, NOOVF, NET, false, "InfiniBand symbol error ratio after FEC (mlxlink `Symbol BER`, HDR/NDR)"),
    c("phy_effective_errors", Events, CTR, WRAP(64), NET, false, "Errors FEC could not correct (mlxlink `Effective Physical Errors`)"),
    c("phy_lane_raw_errors", Events, CTR, WRAP(64), NET, false, "Bit errors before FEC on one lane, device `<dev>/lane<n>` (mlxlink `Raw Physical Errors Per Lane`)"),
    c("phy_lane_raw_ber_ratio", Ratio, GAU, NOOVF, NET, false, "Bit error ratio before FEC on one lane, device `<dev>/lane<n>` (mlxlink `Raw Physical BER Per Lane`)"),
    c("phy_counters_age_seconds", Seconds, GAU, NOOVF, NET, false, "Time since the physical counters were last cleared: the span the BER covers (mlxlink `Time Since Last Clear [Min]` x 60)"),
    c("phy_lane_eye_height_millivolts", Millivolts, GAU, NOOVF, NET, false, "Receiver eye height of one lane, device `<dev>/lane<n>` (mlxlink -e `Height Eye Opening [mV]`)"),
    c("module_temperature_celsius", Celsius, GAU, NOOVF, DEV, false, "Transceiver/cable module temperature (mlxlink -m `Temperature [C]`)"),
    c("module_temperature_low_alarm_celsius", Celsius, GAU, NOOVF, DEV, false, "The module's own low temperature alarm threshold (mlxlink -m `Temperature [C]`, `[low..high]`)"),
    c("module_temperature_high_alarm_celsius", Celsius, GAU, NOOVF, DEV, false, "The module's own high temperature alarm threshold (mlxlink -m `Temperature [C]`, `[low..high]`)"),
    c("module_voltage_millivolts", Millivolts, GAU, NOOVF, DEV, false, "Module supply voltage (mlxlink -m `Voltage [mV]`)"),
    c("module_voltage_low_alarm_millivolts", Millivolts, GAU, NOOVF, DEV, false, "The module's own low supply voltage alarm threshold (mlxlink -m `Voltage [mV]`, `[low..high]`)"),
    c("module_voltage_high_alarm_millivolts", Millivolts, GAU, NOOVF, DEV, false, "The module's own high supply voltage alarm threshold (mlxlink -m `Voltage [mV]`, `[low..high]`)"),
    c("module_tx_bias_milliamps", Milliamps, GAU, NOOVF, DEV, false, "Laser bias current of one lane, device `<dev>/lane<n>` (mlxlink -m `Bias Current [mA]`)"),
    c("module_tx_bias_low_alarm_milliamps", Milliamps, GAU, NOOVF, DEV, false, "The module's own low bias current alarm threshold (mlxlink -m `Bias Current [mA]`)"),
    c("module_tx_bias_high_alarm_milliamps", Milliamps, GAU, NOOVF, DEV, false, "The module's own high bias current alarm threshold (mlxlink -m `Bias Current [mA]`)"),
    c("module_rx_power_dbm", Dbm, GAU, NOOVF, DEV, false, "Received optical power of one lane, device `<dev>/lane<n>` (mlxlink -m `Rx Power Current [dBm]`)"),
    c("module_rx_power_low_alarm_dbm", Dbm, GAU, NOOVF, DEV, false, "The module's own low received power alarm threshold (mlxlink -m `Rx Power Current [dBm]`)"),
    c("module_rx_power_high_alarm_dbm", Dbm, GAU, NOOVF, DEV, false, "The module's own high received power alarm threshold (mlxlink -m `Rx Power Current [dBm]`)"),
    c("module_tx_power_dbm", Dbm, GAU, NOOVF, DEV, false, "Transmitted optical power of one lane, device `<dev>/lane<n>` (mlxlink -m `Tx Power Current [dBm]`)"),
    c("module_tx_power_low_alarm_dbm", Dbm, GAU, NOOVF, DEV, false, "The module's own low transmitted power alarm threshold (mlxlink -m `Tx Power Current [dBm]`)"),
    c("module_tx_power_high_alarm_dbm", Dbm, GAU, NOOVF, DEV, false, "The module's own high transmitted power alarm threshold (mlxlink -m `Tx Power Current [dBm]`)"),
    // --- Spectrum switch ports (mlxsw ethtool -S): what only a switch counts ---
    c("tx_ecn_marked_packets", Packets, CTR, WRAP(64), NET, false, "Packets the switch marked with ECN CE on egress (mlxsw `ecn_marked`, PPCNT extended group)"),
    // --- switch-side PFC (SONiC sonic-utilities pfcwd, queuestat): per switch port and priority --
    // The PFC watchdog (SONiC `pfcwd`) declares a queue stormed when it stays paused by its peer
    // for the detection time, then drops or forwards its packets until the pause ends.
    c("pfcwd_storms_detected_events", Events, CTR, WRAP(64), NET, true, "PFC storms the switch watchdog declared on a queue (SONiC pfcwd STORM DETECTED; PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED)"),
    c("pfcwd_storms_restored_events", Events, CTR, WRAP(64), NET, true, "PFC storms the switch watchdog saw end on a queue (SONiC pfcwd STORM RESTORED)"),
    c("pfcwd_tx_ok_packets", Packets, CTR, WRAP(64), NET, true, "Packets a stormed queue still transmitted (SONiC pfcwd TX OK)"),
    c("pfcwd_tx_dropped_packets", Packets, CTR, WRAP(64), NET, true, "Packets the watchdog dropped on transmit while the queue was stormed (SONiC pfcwd TX DROP)").with(&[r(R::SwitchWatchdogDrops, 2)]),
    c("pfcwd_rx_ok_packets", Packets, CTR, WRAP(64), NET, true, "Packets received for a stormed queue and forwarded (SONiC pfcwd RX OK)"),
    c("pfcwd_rx_dropped_packets", Packets, CTR, WRAP(64), NET, true, "Packets received for a stormed queue and dropped by the watchdog (SONiC pfcwd RX DROP)").with(&[r(R::SwitchWatchdogDrops, 1)]),
    c("pfcwd_last_storm_tx_ok_packets", Packets, GAU, NOOVF, NET, true, "TX OK of the last storm only (SONiC pfcwd TX LAST OK)"),
    c("pfcwd_last_storm_tx_dropped_packets", Packets, GAU, NOOVF, NET, true, "TX DROP of the last storm only (SONiC pfcwd TX LAST DROP)"),
    c("pfcwd_last_storm_rx_ok_packets", Packets, GAU, NOOVF, NET, true, "RX OK of the last storm only (SONiC pfcwd RX LAST OK)"),
    c("pfcwd_last_storm_rx_dropped_packets", Packets, GAU, NOOVF, NET, true, "RX DROP of the last storm only (SONiC pfcwd RX LAST DROP)"),
    c("pfcwd_stormed_state", StateId, GAU, NOOVF, NET, true, "The watchdog's queue status: 1 stormed, 0 operational (SONiC pfcwd STATUS)"),
    c("switch_queue_tx_packets", Packets, CTR, WRAP(64), NET, true, "Packets a switch port's egress unicast queue transmitted (SONiC queuestat Counter/pkts; queue = priority)"),
    c("switch_queue_tx_bytes", Bytes, CTR, WRAP(64), NET, true, "Bytes a switch port's egress unicast queue transmitted (SONiC queuestat Counter/bytes)"),
    c("switch_queue_dropped_packets", Packets, CTR, WRAP(64), NET, true, "Packets a switch port's egress unicast queue dropped (SONiC queuestat Drop/pkts)"),
    c("switch_queue_dropped_bytes", Bytes, CTR, WRAP(64), NET, true, "Bytes a switch port's egress unicast queue dropped (SONiC queuestat Drop/bytes)"),
];

const fn s(namespace: Namespace, raw: &'static str, counter: &'static str) -> Spelling {
    Spelling { namespace, raw, counter, multiply: 1, scale: 1, overflow: None }
}
/// A 4-octet-word data counter read raw: we multiply by 4.
const fn words(namespace: Namespace, raw: &'static str, counter: &'static str, overflow: Option<Overflow>) -> Spelling {
    Spelling { namespace, raw, counter, multiply: 4, scale: 4, overflow }
}
/// A data counter the exporter already multiplied by 4: record the scale, do not multiply again.
const fn words_done(
    namespace: Namespace,
    raw: &'static str,
    counter: &'static str,
    overflow: Option<Overflow>,
) -> Spelling {
    Spelling { namespace, raw, counter, multiply: 1, scale: 4, overflow }
}
const fn ovf(namespace: Namespace, raw: &'static str, counter: &'static str, overflow: Overflow) -> Spelling {
    Spelling { namespace, raw, counter, multiply: 1, scale: 1, overflow: Some(overflow) }
}

use Namespace::{Ethtool as ETH, Prometheus as PROM, Sysfs as SYS};
// InfiniBand diagnostic sources.
use Namespace::{Ibdiagnet as IBD, Perfquery as PQ, Telegraf as TG, Ufm as UFM};
// Measured-performance, GPU and CXL sources.
use Namespace::{Dcgmi as DCGMI, Mlxlink as MLX, NvidiaSmi as NSMI, PerfStat as PERF};
// Switch-side PFC.
use Namespace::Sonic as SONIC;

/// An `nvidia-smi nvlink` throughput row: printed in KiB, stored in bytes.
const fn kib(raw: &'static str, counter: &'static str) -> Spelling {
    Spelling { namespace: NSMI, raw, counter, multiply: 1024, scale: 1, overflow: None }
}

/// Every known spelling.
#[rustfmt::skip]
pub static SPELLINGS: &[Spelling] = &[
    // --- sysfs: /sys/class/infiniband/<dev>/ports/<n>/... (kernel core/sysfs.c, hw/mlx5/counters.c)
    words(SYS, "counters/port_xmit_data", "port_xmit_data_bytes", None),
    words(SYS, "counters/port_rcv_data", "port_rcv_data_bytes", None),
    s(SYS, "counters/port_xmit_packets", "port_xmit_packets"),
    s(SYS, "counters/port_rcv_packets", "port_rcv_packets"),
    s(SYS, "counters/unicast_xmit_packets", "unicast_xmit_packets"),
    s(SYS, "counters/unicast_rcv_packets", "unicast_rcv_packets"),
    s(SYS, "counters/multicast_xmit_packets", "multicast_xmit_packets"),
    s(SYS, "counters/multicast_rcv_packets", "multicast_rcv_packets"),
    s(SYS, "counters/symbol_error", "symbol_errors"),
    s(SYS, "counters/link_error_recovery", "link_error_recovery_events"),
    s(SYS, "counters/link_downed", "link_downed_events"),
    s(SYS, "counters/port_rcv_errors", "port_rcv_errors"),
    s(SYS, "counters/port_rcv_remote_physical_errors", "port_rcv_remote_physical_errors"),
    s(SYS, "counters/port_rcv_switch_relay_errors", "port_rcv_switch_relay_errors"),
    s(SYS, "counters/port_xmit_discards", "port_xmit_discards"),
    s(SYS, "counters/port_xmit_constraint_errors", "port_xmit_constraint_errors"),
    s(SYS, "counters/port_rcv_constraint_errors", "port_rcv_constraint_errors"),
    s(SYS, "counters/local_link_integrity_errors", "local_link_integrity_errors"),
    s(SYS, "counters/excessive_buffer_overrun_errors", "excessive_buffer_overrun_errors"),
    s(SYS, "counters/VL15_dropped", "vl15_dropped_packets"),
    s(SYS, "counters/port_xmit_wait", "port_xmit_wait_ticks"),
    // legacy mlx4 counters_ext (kernels < 4.5): 64-bit, data still in words
    words(SYS, "counters_ext/port_xmit_data_64", "ext_port_xmit_data_bytes", None),
    words(SYS, "counters_ext/port_rcv_data_64", "ext_port_rcv_data_bytes", None),
    s(SYS, "counters_ext/port_xmit_packets_64", "ext_port_xmit_packets"),
    s(SYS, "counters_ext/port_rcv_packets_64", "ext_port_rcv_packets"),
    s(SYS, "counters_ext/port_unicast_xmit_packets", "ext_unicast_xmit_packets"),
    s(SYS, "counters_ext/port_unicast_rcv_packets", "ext_unicast_rcv_packets"),
    s(SYS, "counters_ext/port_multicast_xmit_packets", "ext_multicast_xmit_packets"),
    s(SYS, "counters_ext/port_multicast_rcv_packets", "ext_multicast_rcv_packets"),
    s(SYS, "hw_counters/rx_write_requests", "rx_write_requests"),
    s(SYS, "hw_counters/rx_read_requests", "rx_read_requests"),
    s(SYS, "hw_counters/rx_atomic_requests", "rx_atomic_requests"),
    s(SYS, "hw_counters/out_of_buffer", "rx_out_of_buffer_packets"),
    s(SYS, "hw_counters/out_of_sequence", "out_of_sequence_packets"),
    s(SYS, "hw_counters/duplicate_request", "duplicate_requests"),
    s(SYS, "hw_counters/rnr_nak_retry_err", "rnr_nak_retry_errors"),
    s(SYS, "hw_counters/packet_seq_err", "packet_seq_errors"),
    s(SYS, "hw_counters/implied_nak_seq_err", "implied_nak_seq_errors"),
    s(SYS, "hw_counters/local_ack_timeout_err", "local_ack_timeout_errors"),
    s(SYS, "hw_counters/rp_cnp_ignored", "rp_cnp_ignored_packets"),
    s(SYS, "hw_counters/rp_cnp_handled", "rp_cnp_handled_packets"),
    s(SYS, "hw_counters/np_ecn_marked_roce_packets", "np_ecn_marked_roce_packets"),
    s(SYS, "hw_counters/np_cnp_sent", "np_cnp_sent_packets"),
    s(SYS, "hw_counters/req_cqe_error", "req_cqe_errors"),
    s(SYS, "hw_counters/req_cqe_flush_error", "req_cqe_flush_errors"),
    s(SYS, "hw_counters/resp_cqe_error", "resp_cqe_errors"),
    s(SYS, "hw_counters/resp_cqe_flush_error", "resp_cqe_flush_errors"),
    s(SYS, "hw_counters/req_remote_access_errors", "req_remote_access_errors"),
    s(SYS, "hw_counters/resp_remote_access_errors", "resp_remote_access_errors"),
    s(SYS, "hw_counters/req_remote_invalid_request", "req_remote_invalid_requests"),
    s(SYS, "hw_counters/resp_local_length_error", "resp_local_length_errors"),
    s(SYS, "hw_counters/roce_adp_retrans", "roce_adp_retrans_events"),
    s(SYS, "hw_counters/roce_adp_retrans_to", "roce_adp_retrans_to_events"),
    s(SYS, "hw_counters/roce_slow_restart", "roce_slow_restart_events"),
    s(SYS, "hw_counters/roce_slow_restart_cnps", "roce_slow_restart_cnp_packets"),
    s(SYS, "hw_counters/roce_slow_restart_trans", "roce_slow_restart_trans_events"),
    s(SYS, "hw_counters/rx_dct_connect", "rx_dct_connect_events"),
    s(SYS, "hw_counters/rx_icrc_encapsulated", "rx_icrc_encapsulated_packets"),
    // /sys/class/net/<if>/...: speed is in Mb/s; 1 Mb/s = 125000 B/s
    Spelling { namespace: SYS, raw: "speed", counter: "link_rate_bytes_per_s", multiply: 125_000, scale: 125_000, overflow: None },
    s(SYS, "carrier_changes", "netdev_carrier_changes"),
    s(SYS, "statistics/rx_bytes", "netdev_rx_bytes"),
    s(SYS, "statistics/tx_bytes", "netdev_tx_bytes"),
    s(SYS, "statistics/rx_packets", "netdev_rx_packets"),
    s(SYS, "statistics/tx_packets", "netdev_tx_packets"),
    s(SYS, "statistics/rx_errors", "netdev_rx_errors"),
    s(SYS, "statistics/tx_errors", "netdev_tx_errors"),
    s(SYS, "statistics/rx_dropped", "netdev_rx_dropped"),
    s(SYS, "statistics/tx_dropped", "netdev_tx_dropped"),
    // --- ethtool -S (mlx5 counters.rst; old prio%d_%s naming of kernels ~4.7-4.9) ------------------
    s(ETH, "rx_bytes_phy", "phy_rx_bytes"),
    s(ETH, "tx_bytes_phy", "phy_tx_bytes"),
    s(ETH, "rx_packets_phy", "phy_rx_packets"),
    s(ETH, "tx_packets_phy", "phy_tx_packets"),
    s(ETH, "rx_crc_errors_phy", "phy_rx_crc_errors"),
    s(ETH, "rx_symbol_err_phy", "phy_rx_symbol_errors"),
    s(ETH, "rx_pcs_symbol_err_phy", "phy_rx_pcs_symbol_errors"),
    s(ETH, "rx_corrected_bits_phy", "phy_rx_corrected_bits"),
    s(ETH, "rx_bits_phy", "phy_rx_bits"),
    s(ETH, "rx_discards_phy", "phy_rx_discards"),
    s(ETH, "tx_discards_phy", "phy_tx_discards"),
    s(ETH, "tx_errors_phy", "phy_tx_errors"),
    s(ETH, "rx_pause_ctrl_phy", "phy_rx_pause_ctrl_frames"),
    s(ETH, "tx_pause_ctrl_phy", "phy_tx_pause_ctrl_frames"),
    s(ETH, "link_down_events_phy", "phy_link_down_events"),
    s(ETH, "rx_buffer_passed_thres_phy", "rx_buffer_passed_thres_events"),
    s(ETH, "rx_global_pause", "rx_pause_frames"),
    s(ETH, "tx_global_pause", "tx_pause_frames"),
    s(ETH, "rx_global_pause_duration", "rx_pause_duration_us"),
    s(ETH, "tx_global_pause_duration", "tx_pause_duration_us"),
    s(ETH, "rx_global_pause_transition", "rx_pause_transitions"),
    s(ETH, "tx_pause_storm_warning_events", "tx_pause_storm_warning_events"),
    s(ETH, "tx_pause_storm_error_events", "tx_pause_storm_error_events"),
    s(ETH, "rx_prio{p}_pause", "rx_pause_frames"),
    s(ETH, "tx_prio{p}_pause", "tx_pause_frames"),
    s(ETH, "rx_prio{p}_pause_duration", "rx_pause_duration_us"),
    s(ETH, "tx_prio{p}_pause_duration", "tx_pause_duration_us"),
    s(ETH, "rx_prio{p}_pause_transition", "rx_pause_transitions"),
    s(ETH, "rx_prio{p}_bytes", "prio_rx_bytes"),
    s(ETH, "tx_prio{p}_bytes", "prio_tx_bytes"),
    s(ETH, "rx_prio{p}_packets", "prio_rx_packets"),
    s(ETH, "tx_prio{p}_packets", "prio_tx_packets"),
    s(ETH, "rx_prio{p}_discards", "prio_rx_discards"),
    s(ETH, "rx_prio{p}_buf_discard", "prio_rx_buf_discards"),
    s(ETH, "rx_prio{p}_cong_discard", "prio_rx_cong_discards"),
    s(ETH, "rx_prio{p}_marked", "prio_rx_ecn_marked_packets"),
    s(ETH, "prio{p}_rx_octets", "prio_rx_bytes"),
    s(ETH, "prio{p}_tx_octets", "prio_tx_bytes"),
    s(ETH, "prio{p}_rx_frames", "prio_rx_packets"),
    s(ETH, "prio{p}_tx_frames", "prio_tx_packets"),
    s(ETH, "prio{p}_rx_pause", "rx_pause_frames"),
    s(ETH, "prio{p}_tx_pause", "tx_pause_frames"),
    s(ETH, "prio{p}_rx_pause_duration", "rx_pause_duration_us"),
    s(ETH, "prio{p}_tx_pause_duration", "tx_pause_duration_us"),
    s(ETH, "prio{p}_rx_pause_transition", "rx_pause_transitions"),
    ovf(ETH, "rx_out_of_buffer", "rx_out_of_buffer_packets", WRAP(32)),
    s(ETH, "rx_vport_rdma_unicast_bytes", "vport_rdma_rx_unicast_bytes"),
    s(ETH, "tx_vport_rdma_unicast_bytes", "vport_rdma_tx_unicast_bytes"),
    s(ETH, "rx_vport_rdma_unicast_packets", "vport_rdma_rx_unicast_packets"),
    s(ETH, "tx_vport_rdma_unicast_packets", "vport_rdma_tx_unicast_packets"),
    s(ETH, "outbound_pci_stalled_rd", "pci_outbound_stalled_rd_percent"),
    s(ETH, "outbound_pci_stalled_wr", "pci_outbound_stalled_wr_percent"),
    s(ETH, "outbound_pci_stalled_rd_events", "pci_outbound_stalled_rd_events"),
    s(ETH, "outbound_pci_stalled_wr_events", "pci_outbound_stalled_wr_events"),
    s(ETH, "rx_bytes", "netdev_rx_bytes"),
    s(ETH, "tx_bytes", "netdev_tx_bytes"),
    s(ETH, "rx_packets", "netdev_rx_packets"),
    s(ETH, "tx_packets", "netdev_tx_packets"),
    // --- Prometheus: node_exporter infiniband collector (collector/infiniband_linux.go) -------------
    // Exactly the names that collector prints (`node_infiniband_` + the key of its `descriptions`
    // map); the test fixture `node_exporter-infiniband-metric-names.txt` is that list.
    words_done(PROM, "node_infiniband_port_data_transmitted_bytes_total", "port_xmit_data_bytes", None),
    words_done(PROM, "node_infiniband_port_data_received_bytes_total", "port_rcv_data_bytes", None),
    s(PROM, "node_infiniband_port_packets_transmitted_total", "port_xmit_packets"),
    s(PROM, "node_infiniband_port_packets_received_total", "port_rcv_packets"),
    s(PROM, "node_infiniband_unicast_packets_transmitted_total", "unicast_xmit_packets"),
    s(PROM, "node_infiniband_unicast_packets_received_total", "unicast_rcv_packets"),
    s(PROM, "node_infiniband_multicast_packets_transmitted_total", "multicast_xmit_packets"),
    s(PROM, "node_infiniband_multicast_packets_received_total", "multicast_rcv_packets"),
    words_done(PROM, "node_infiniband_legacy_data_transmitted_bytes_total", "ext_port_xmit_data_bytes", None),
    words_done(PROM, "node_infiniband_legacy_data_received_bytes_total", "ext_port_rcv_data_bytes", None),
    s(PROM, "node_infiniband_legacy_packets_transmitted_total", "ext_port_xmit_packets"),
    s(PROM, "node_infiniband_legacy_packets_received_total", "ext_port_rcv_packets"),
    s(PROM, "node_infiniband_legacy_unicast_packets_transmitted_total", "ext_unicast_xmit_packets"),
    s(PROM, "node_infiniband_legacy_unicast_packets_received_total", "ext_unicast_rcv_packets"),
    s(PROM, "node_infiniband_legacy_multicast_packets_transmitted_total", "ext_multicast_xmit_packets"),
    s(PROM, "node_infiniband_legacy_multicast_packets_received_total", "ext_multicast_rcv_packets"),
    s(PROM, "node_infiniband_link_downed_total", "link_downed_events"),
    s(PROM, "node_infiniband_link_error_recovery_total", "link_error_recovery_events"),
    s(PROM, "node_infiniband_port_constraint_errors_received_total", "port_rcv_constraint_errors"),
    s(PROM, "node_infiniband_port_constraint_errors_transmitted_total", "port_xmit_constraint_errors"),
    s(PROM, "node_infiniband_port_discards_transmitted_total", "port_xmit_discards"),
    // procfs reads it from `counters/port_rcv_discards`, not from the switch relay errors file.
    s(PROM, "node_infiniband_port_discards_received_total", "port_rcv_discards"),
    s(PROM, "node_infiniband_port_errors_received_total", "port_rcv_errors"),
    s(PROM, "node_infiniband_port_receive_remote_physical_errors_total", "port_rcv_remote_physical_errors"),
    s(PROM, "node_infiniband_port_receive_switch_relay_errors_total", "port_rcv_switch_relay_errors"),
    s(PROM, "node_infiniband_port_transmit_wait_total", "port_xmit_wait_ticks"),
    s(PROM, "node_infiniband_symbol_error_total", "symbol_errors"),
    s(PROM, "node_infiniband_local_link_integrity_errors_total", "local_link_integrity_errors"),
    s(PROM, "node_infiniband_excessive_buffer_overrun_errors_total", "excessive_buffer_overrun_errors"),
    s(PROM, "node_infiniband_vl15_dropped_total", "vl15_dropped_packets"),
    s(PROM, "node_infiniband_rate_bytes_per_second", "link_rate_bytes_per_s"),
    s(PROM, "node_infiniband_state_id", "port_state_id"),
    s(PROM, "node_infiniband_physical_state_id", "port_phys_state_id"),
    // hw_counters (mlx5 Q counters and congestion), node_exporter 1.11 and later
    s(PROM, "node_infiniband_out_of_buffer_drops_total", "rx_out_of_buffer_packets"),
    s(PROM, "node_infiniband_out_of_sequence_packets_received_total", "out_of_sequence_packets"),
    s(PROM, "node_infiniband_duplicate_requests_packets_total", "duplicate_requests"),
    s(PROM, "node_infiniband_packet_sequence_errors_total", "packet_seq_errors"),
    s(PROM, "node_infiniband_implied_nak_seq_errors_total", "implied_nak_seq_errors"),
    s(PROM, "node_infiniband_local_ack_timeout_errors_total", "local_ack_timeout_errors"),
    s(PROM, "node_infiniband_rnr_nak_retry_packets_received_total", "rnr_nak_retry_errors"),
    s(PROM, "node_infiniband_np_cnp_packets_sent_total", "np_cnp_sent_packets"),
    s(PROM, "node_infiniband_np_ecn_marked_roce_packets_received_total", "np_ecn_marked_roce_packets"),
    s(PROM, "node_infiniband_rp_cnp_packets_handled_total", "rp_cnp_handled_packets"),
    s(PROM, "node_infiniband_rp_cnp_ignored_packets_received_total", "rp_cnp_ignored_packets"),
    s(PROM, "node_infiniband_req_cqes_errors_total", "req_cqe_errors"),
    s(PROM, "node_infiniband_req_cqes_flush_errors_total", "req_cqe_flush_errors"),
    s(PROM, "node_infiniband_resp_cqes_errors_total", "resp_cqe_errors"),
    s(PROM, "node_infiniband_resp_cqes_flush_errors_total", "resp_cqe_flush_errors"),
    s(PROM, "node_infiniband_req_remote_access_errors_total", "req_remote_access_errors"),
    s(PROM, "node_infiniband_resp_remote_access_errors_total", "resp_remote_access_errors"),
    s(PROM, "node_infiniband_req_remote_invalid_request_errors_total", "req_remote_invalid_requests"),
    s(PROM, "node_infiniband_resp_local_length_errors_total", "resp_local_length_errors"),
    s(PROM, "node_infiniband_roce_adp_retransmits_total", "roce_adp_retrans_events"),
    s(PROM, "node_infiniband_roce_adp_retransmits_timeout_total", "roce_adp_retrans_to_events"),
    // `roce_slow_restart_used_total` is hw_counters/roce_slow_restart, `roce_slow_restart_total` is
    // hw_counters/roce_slow_restart_trans (the collector's pushCounter calls).
    s(PROM, "node_infiniband_roce_slow_restart_used_total", "roce_slow_restart_events"),
    s(PROM, "node_infiniband_roce_slow_restart_cnps_total", "roce_slow_restart_cnp_packets"),
    s(PROM, "node_infiniband_roce_slow_restart_total", "roce_slow_restart_trans_events"),
    s(PROM, "node_infiniband_rx_write_requests_total", "rx_write_requests"),
    s(PROM, "node_infiniband_rx_read_requests_total", "rx_read_requests"),
    s(PROM, "node_infiniband_rx_atomic_requests_total", "rx_atomic_requests"),
    s(PROM, "node_infiniband_rx_dct_connect_requests_total", "rx_dct_connect_events"),
    s(PROM, "node_infiniband_rx_icrc_encapsulated_errors_total", "rx_icrc_encapsulated_packets"),
    // --- Prometheus: node_exporter netdev and netclass collectors (/proc/net/dev, /sys/class/net) ---
    // The same kernel statistics the sysfs reader reads from `statistics/*` and `carrier_changes`.
    s(PROM, "node_network_receive_bytes_total", "netdev_rx_bytes"),
    s(PROM, "node_network_transmit_bytes_total", "netdev_tx_bytes"),
    s(PROM, "node_network_receive_packets_total", "netdev_rx_packets"),
    s(PROM, "node_network_transmit_packets_total", "netdev_tx_packets"),
    s(PROM, "node_network_receive_errs_total", "netdev_rx_errors"),
    s(PROM, "node_network_transmit_errs_total", "netdev_tx_errors"),
    s(PROM, "node_network_receive_drop_total", "netdev_rx_dropped"),
    s(PROM, "node_network_transmit_drop_total", "netdev_tx_dropped"),
    s(PROM, "node_network_carrier_changes_total", "netdev_carrier_changes"),
    // netclass writes sysfs `speed` (Mb/s) already multiplied by 125000: bytes per second.
    s(PROM, "node_network_speed_bytes", "link_rate_bytes_per_s"),
    // --- Prometheus: treydock/SckyzO infiniband_exporter (Data already x4) --------------------------
    words_done(PROM, "infiniband_hca_port_transmit_data_bytes_total", "port_xmit_data_bytes", Some(WRAP(64))),
    words_done(PROM, "infiniband_hca_port_receive_data_bytes_total", "port_rcv_data_bytes", Some(WRAP(64))),
    words_done(PROM, "infiniband_switch_port_transmit_data_bytes_total", "port_xmit_data_bytes", Some(WRAP(64))),
    words_done(PROM, "infiniband_switch_port_receive_data_bytes_total", "port_rcv_data_bytes", Some(WRAP(64))),
    ovf(PROM, "infiniband_hca_port_transmit_packets_total", "port_xmit_packets", WRAP(64)),
    ovf(PROM, "infiniband_hca_port_receive_packets_total", "port_rcv_packets", WRAP(64)),
    ovf(PROM, "infiniband_switch_port_transmit_packets_total", "port_xmit_packets", WRAP(64)),
    ovf(PROM, "infiniband_switch_port_receive_packets_total", "port_rcv_packets", WRAP(64)),
    s(PROM, "infiniband_hca_port_unicast_transmit_packets_total", "unicast_xmit_packets"),
    s(PROM, "infiniband_hca_port_unicast_receive_packets_total", "unicast_rcv_packets"),
    s(PROM, "infiniband_switch_port_unicast_transmit_packets_total", "unicast_xmit_packets"),
    s(PROM, "infiniband_switch_port_unicast_receive_packets_total", "unicast_rcv_packets"),
    s(PROM, "infiniband_hca_port_multicast_transmit_packets_total", "multicast_xmit_packets"),
    s(PROM, "infiniband_hca_port_multicast_receive_packets_total", "multicast_rcv_packets"),
    s(PROM, "infiniband_switch_port_multicast_transmit_packets_total", "multicast_xmit_packets"),
    s(PROM, "infiniband_switch_port_multicast_receive_packets_total", "multicast_rcv_packets"),
    s(PROM, "infiniband_hca_port_symbol_error_total", "symbol_errors"),
    s(PROM, "infiniband_switch_port_symbol_error_total", "symbol_errors"),
    s(PROM, "infiniband_hca_port_link_error_recovery_total", "link_error_recovery_events"),
    s(PROM, "infiniband_switch_port_link_error_recovery_total", "link_error_recovery_events"),
    s(PROM, "infiniband_hca_port_link_downed_total", "link_downed_events"),
    s(PROM, "infiniband_switch_port_link_downed_total", "link_downed_events"),
    s(PROM, "infiniband_hca_port_receive_errors_total", "port_rcv_errors"),
    s(PROM, "infiniband_switch_port_receive_errors_total", "port_rcv_errors"),
    s(PROM, "infiniband_hca_port_receive_remote_physical_errors_total", "port_rcv_remote_physical_errors"),
    s(PROM, "infiniband_switch_port_receive_remote_physical_errors_total", "port_rcv_remote_physical_errors"),
    s(PROM, "infiniband_hca_port_receive_switch_relay_errors_total", "port_rcv_switch_relay_errors"),
    s(PROM, "infiniband_switch_port_receive_switch_relay_errors_total", "port_rcv_switch_relay_errors"),
    s(PROM, "infiniband_hca_port_transmit_discards_total", "port_xmit_discards"),
    s(PROM, "infiniband_switch_port_transmit_discards_total", "port_xmit_discards"),
    s(PROM, "infiniband_hca_port_transmit_constraint_errors_total", "port_xmit_constraint_errors"),
    s(PROM, "infiniband_switch_port_transmit_constraint_errors_total", "port_xmit_constraint_errors"),
    s(PROM, "infiniband_hca_port_receive_constraint_errors_total", "port_rcv_constraint_errors"),
    s(PROM, "infiniband_switch_port_receive_constraint_errors_total", "port_rcv_constraint_errors"),
    s(PROM, "infiniband_hca_port_local_link_integrity_errors_total", "local_link_integrity_errors"),
    s(PROM, "infiniband_switch_port_local_link_integrity_errors_total", "local_link_integrity_errors"),
    s(PROM, "infiniband_hca_port_excessive_buffer_overrun_errors_total", "excessive_buffer_overrun_errors"),
    s(PROM, "infiniband_switch_port_excessive_buffer_overrun_errors_total", "excessive_buffer_overrun_errors"),
    s(PROM, "infiniband_hca_port_vl15_dropped_total", "vl15_dropped_packets"),
    s(PROM, "infiniband_switch_port_vl15_dropped_total", "vl15_dropped_packets"),
    s(PROM, "infiniband_hca_port_qp1_dropped_total", "qp1_dropped_packets"),
    s(PROM, "infiniband_switch_port_qp1_dropped_total", "qp1_dropped_packets"),
    s(PROM, "infiniband_hca_port_transmit_wait_total", "port_xmit_wait_ticks"),
    s(PROM, "infiniband_switch_port_transmit_wait_total", "port_xmit_wait_ticks"),
    s(PROM, "infiniband_hca_port_local_physical_errors_total", "port_local_physical_errors"),
    s(PROM, "infiniband_switch_port_local_physical_errors_total", "port_local_physical_errors"),
    s(PROM, "infiniband_hca_port_malformed_packet_errors_total", "port_malformed_packet_errors"),
    s(PROM, "infiniband_switch_port_malformed_packet_errors_total", "port_malformed_packet_errors"),
    s(PROM, "infiniband_hca_port_buffer_overrun_errors_total", "port_buffer_overrun_errors"),
    s(PROM, "infiniband_switch_port_buffer_overrun_errors_total", "port_buffer_overrun_errors"),
    s(PROM, "infiniband_hca_port_dli_mapping_errors_total", "port_dlid_mapping_errors"),
    s(PROM, "infiniband_switch_port_dli_mapping_errors_total", "port_dlid_mapping_errors"),
    s(PROM, "infiniband_hca_port_vl_mapping_errors_total", "port_vl_mapping_errors"),
    s(PROM, "infiniband_switch_port_vl_mapping_errors_total", "port_vl_mapping_errors"),
    s(PROM, "infiniband_hca_port_looping_errors_total", "port_looping_errors"),
    s(PROM, "infiniband_switch_port_looping_errors_total", "port_looping_errors"),
    s(PROM, "infiniband_hca_rate_bytes_per_second", "link_rate_bytes_per_s"),
    s(PROM, "infiniband_switch_port_rate_bytes_per_second", "link_rate_bytes_per_s"),
    // --- Prometheus: DCGM exporter (etc/default-counters.csv, dcp-metrics-included.csv) ------------
    s(PROM, "DCGM_FI_PROF_NVLINK_TX_BYTES", "nvlink_tx_bytes_per_s"),
    s(PROM, "DCGM_FI_PROF_NVLINK_RX_BYTES", "nvlink_rx_bytes_per_s"),
    s(PROM, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "nvlink_bandwidth_total"),
    s(PROM, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "nvlink_crc_flit_errors"),
    s(PROM, "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "nvlink_crc_data_errors"),
    s(PROM, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "nvlink_replay_errors"),
    s(PROM, "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "nvlink_recovery_errors"),
    s(PROM, "DCGM_FI_PROF_PCIE_TX_BYTES", "pcie_tx_bytes_per_s"),
    s(PROM, "DCGM_FI_PROF_PCIE_RX_BYTES", "pcie_rx_bytes_per_s"),
    s(PROM, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "pcie_replay_events"),
    s(PROM, "DCGM_FI_DEV_GPU_TEMP", "gpu_temperature_celsius"),
    s(PROM, "DCGM_FI_DEV_XID_ERRORS", "gpu_last_xid"),
    s(PROM, "DCGM_FI_DEV_FABRIC_MANAGER_STATUS", "gpu_fabric_manager_status"),
    s(PROM, "DCGM_FI_DEV_FABRIC_HEALTH_MASK", "gpu_fabric_health_mask"),
    s(PROM, "DCGM_FI_DEV_MEMORY_TEMP", "gpu_memory_temperature_celsius"),
    s(PROM, "DCGM_FI_DEV_PCIE_LINK_GEN", "pcie_link_generation"),
    s(PROM, "DCGM_FI_DEV_PCIE_MAX_LINK_GEN", "pcie_link_max_generation"),
    s(PROM, "DCGM_FI_DEV_PCIE_LINK_WIDTH", "pcie_link_width_lanes"),
    s(PROM, "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", "pcie_link_max_width_lanes"),
    // --- nvidia-smi nvlink ------------------------------------------------------------
    kib("Data Tx", "nvlink_tx_bytes"),
    kib("Data Rx", "nvlink_rx_bytes"),
    kib("Raw Tx", "nvlink_raw_tx_bytes"),
    kib("Raw Rx", "nvlink_raw_rx_bytes"),
    kib("Tx0", "nvlink_counter0_tx_bytes"),
    kib("Rx0", "nvlink_counter0_rx_bytes"),
    kib("Tx1", "nvlink_counter1_tx_bytes"),
    kib("Rx1", "nvlink_counter1_rx_bytes"),
    s(NSMI, "Replay Errors", "nvlink_replay_errors"),
    s(NSMI, "Recovery Errors", "nvlink_recovery_errors"),
    s(NSMI, "CRC Errors", "nvlink_crc_errors"),
    s(NSMI, "CRC FLIT Errors", "nvlink_crc_flit_errors"),
    s(NSMI, "CRC Data Errors", "nvlink_crc_data_errors"),
    // --- perf stat CXL PMU events (kernel drivers/perf/cxl_pmu.c) ----------------------
    s(PERF, "clock_ticks", "cxl_clock_ticks"),
    s(PERF, "m2s_req_meminv", "cxl_m2s_req_meminv"),
    s(PERF, "m2s_req_memrd", "cxl_m2s_req_memrd"),
    s(PERF, "m2s_req_memrddata", "cxl_m2s_req_memrddata"),
    s(PERF, "m2s_req_memspecrd", "cxl_m2s_req_memspecrd"),
    s(PERF, "m2s_rwd_memwr", "cxl_m2s_rwd_memwr"),
    s(PERF, "m2s_rwd_memwrptl", "cxl_m2s_rwd_memwrptl"),
    s(PERF, "s2m_drs_memdata", "cxl_s2m_drs_memdata"),
    s(PERF, "s2m_ndr_cmp", "cxl_s2m_ndr_cmp"),
    s(PERF, "d2h_req_rdcurr", "cxl_d2h_req_rdcurr"),
    s(PERF, "d2h_req_rdown", "cxl_d2h_req_rdown"),
    s(PERF, "d2h_req_rdshared", "cxl_d2h_req_rdshared"),
    s(PERF, "h2d_req_snpdata", "cxl_h2d_req_snpdata"),
    s(PERF, "h2d_req_snpinv", "cxl_h2d_req_snpinv"),
    s(PERF, "h2d_req_snpcur", "cxl_h2d_req_snpcur"),
    s(PERF, "cachedata_d2h_data", "cxl_cachedata_d2h_data"),
    s(PERF, "cachedata_h2d_data", "cxl_cachedata_h2d_data"),
    s(PERF, "ddr_casrd", "cxl_ddr_casrd"),
    s(PERF, "ddr_caswr", "cxl_ddr_caswr"),
    // dcgmi dmon: the short column names DCGM's `dcgm_fields.cpp` gives the fields the exporter's
    // `DCGM_FI_*` metrics above carry (field id in the comment), to the same counters.
    s(DCGMI, "PCITX", "pcie_tx_bytes_per_s"), // 1009 DCGM_FI_PROF_PCIE_TX_BYTES
    s(DCGMI, "PCIRX", "pcie_rx_bytes_per_s"), // 1010 DCGM_FI_PROF_PCIE_RX_BYTES
    s(DCGMI, "NVLTX", "nvlink_tx_bytes_per_s"), // 1011 DCGM_FI_PROF_NVLINK_TX_BYTES
    s(DCGMI, "NVLRX", "nvlink_rx_bytes_per_s"), // 1012 DCGM_FI_PROF_NVLINK_RX_BYTES
    s(DCGMI, "NBWLT", "nvlink_bandwidth_total"), // 449 DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL
    s(DCGMI, "NFELT", "nvlink_crc_flit_errors"), // 409 DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL
    s(DCGMI, "NDELT", "nvlink_crc_data_errors"), // 419 DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL
    s(DCGMI, "NRELT", "nvlink_replay_errors"), // 429 DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL
    s(DCGMI, "NRCLT", "nvlink_recovery_errors"), // 439 DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL
    s(DCGMI, "RPCTR", "pcie_replay_events"), // 202 DCGM_FI_DEV_PCIE_REPLAY_COUNTER
    s(DCGMI, "TMPTR", "gpu_temperature_celsius"), // 150 DCGM_FI_DEV_GPU_TEMP
    s(DCGMI, "XIDER", "gpu_last_xid"), // 230 DCGM_FI_DEV_XID_ERRORS
    s(DCGMI, "MMTMP", "gpu_memory_temperature_celsius"), // 140 DCGM_FI_DEV_MEMORY_TEMP
    s(DCGMI, "PCILG", "pcie_link_generation"), // 237 DCGM_FI_DEV_PCIE_LINK_GEN
    s(DCGMI, "PCIMG", "pcie_link_max_generation"), // 235 DCGM_FI_DEV_PCIE_MAX_LINK_GEN
    s(DCGMI, "PCILW", "pcie_link_width_lanes"), // 238 DCGM_FI_DEV_PCIE_LINK_WIDTH
    s(DCGMI, "PCIMW", "pcie_link_max_width_lanes"), // 236 DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH
    // --- InfiniBand diagnostic sources ----------------------------------------------------
    // perfquery / ibqueryerrors: libibmad `fields.c` names. Data fields are 4-octet words read raw.
    words(PQ, "PortXmitData", "port_xmit_data_bytes", None),
    words(PQ, "PortRcvData", "port_rcv_data_bytes", None),
    s(PQ, "PortXmitPkts", "port_xmit_packets"),
    s(PQ, "PortRcvPkts", "port_rcv_packets"),
    s(PQ, "PortUnicastXmitPkts", "unicast_xmit_packets"),
    s(PQ, "PortUnicastRcvPkts", "unicast_rcv_packets"),
    s(PQ, "PortMulticastXmitPkts", "multicast_xmit_packets"),
    s(PQ, "PortMulticastRcvPkts", "multicast_rcv_packets"),
    s(PQ, "SymbolErrorCounter", "symbol_errors"),
    s(PQ, "LinkErrorRecoveryCounter", "link_error_recovery_events"),
    s(PQ, "LinkDownedCounter", "link_downed_events"),
    s(PQ, "PortRcvErrors", "port_rcv_errors"),
    s(PQ, "PortRcvRemotePhysicalErrors", "port_rcv_remote_physical_errors"),
    s(PQ, "PortRcvSwitchRelayErrors", "port_rcv_switch_relay_errors"),
    s(PQ, "PortXmitDiscards", "port_xmit_discards"),
    s(PQ, "PortXmitConstraintErrors", "port_xmit_constraint_errors"),
    s(PQ, "PortRcvConstraintErrors", "port_rcv_constraint_errors"),
    s(PQ, "LocalLinkIntegrityErrors", "local_link_integrity_errors"),
    s(PQ, "ExcessiveBufferOverrunErrors", "excessive_buffer_overrun_errors"),
    s(PQ, "VL15Dropped", "vl15_dropped_packets"),
    s(PQ, "QP1Dropped", "qp1_dropped_packets"),
    s(PQ, "PortXmitWait", "port_xmit_wait_ticks"),
    s(PQ, "PortLocalPhysicalErrors", "port_local_physical_errors"),
    s(PQ, "PortMalformedPktErrors", "port_malformed_packet_errors"),
    s(PQ, "PortBufferOverrunErrors", "port_buffer_overrun_errors"),
    s(PQ, "PortDLIDMappingErrors", "port_dlid_mapping_errors"),
    s(PQ, "PortVLMappingErrors", "port_vl_mapping_errors"),
    s(PQ, "PortLoopingErrors", "port_looping_errors"),
    s(PQ, "PortInactiveDiscards", "port_inactive_discards"),
    s(PQ, "PortNeighborMTUDiscards", "port_neighbor_mtu_discards"),
    s(PQ, "PortSwLifetimeLimitDiscards", "port_sw_lifetime_limit_discards"),
    s(PQ, "PortSwHOQLifetimeLimitDiscards", "port_sw_hoq_lifetime_limit_discards"),
    // OFED 1.x libibmad `fields.c` (before the IBA names were adopted, ~2009): the same PortCounters
    // under short names. XmtData/RcvData are the 32-bit 4-octet-word fields.
    s(PQ, "SymbolErrors", "symbol_errors"),
    s(PQ, "LinkRecovers", "link_error_recovery_events"),
    s(PQ, "LinkDowned", "link_downed_events"),
    s(PQ, "RcvErrors", "port_rcv_errors"),
    s(PQ, "RcvRemotePhysErrors", "port_rcv_remote_physical_errors"),
    s(PQ, "RcvSwRelayErrors", "port_rcv_switch_relay_errors"),
    s(PQ, "XmtDiscards", "port_xmit_discards"),
    s(PQ, "XmtConstraintErrors", "port_xmit_constraint_errors"),
    s(PQ, "RcvConstraintErrors", "port_rcv_constraint_errors"),
    s(PQ, "LinkIntegrityErrors", "local_link_integrity_errors"),
    s(PQ, "ExcBufOverrunErrors", "excessive_buffer_overrun_errors"),
    words(PQ, "XmtData", "port_xmit_data_bytes", Some(SAT(32))),
    words(PQ, "RcvData", "port_rcv_data_bytes", Some(SAT(32))),
    ovf(PQ, "XmtPkts", "port_xmit_packets", SAT(32)),
    ovf(PQ, "RcvPkts", "port_rcv_packets", SAT(32)),
    // ibdiagnet2.db_csv PM_INFO: basic names as perfquery plus `...Ext`/`...Extended` 64-bit copies
    // (readers prefer the extended column when both hold a value). Data still in words.
    words(IBD, "PortXmitData", "port_xmit_data_bytes", None),
    words(IBD, "PortRcvData", "port_rcv_data_bytes", None),
    s(IBD, "PortXmitPkts", "port_xmit_packets"),
    s(IBD, "PortRcvPkts", "port_rcv_packets"),
    s(IBD, "PortUnicastXmitPkts", "unicast_xmit_packets"),
    s(IBD, "PortUnicastRcvPkts", "unicast_rcv_packets"),
    s(IBD, "PortMulticastXmitPkts", "multicast_xmit_packets"),
    s(IBD, "PortMulticastRcvPkts", "multicast_rcv_packets"),
    s(IBD, "SymbolErrorCounter", "symbol_errors"),
    s(IBD, "LinkErrorRecoveryCounter", "link_error_recovery_events"),
    s(IBD, "LinkDownedCounter", "link_downed_events"),
    s(IBD, "PortRcvErrors", "port_rcv_errors"),
    s(IBD, "PortRcvRemotePhysicalErrors", "port_rcv_remote_physical_errors"),
    s(IBD, "PortRcvSwitchRelayErrors", "port_rcv_switch_relay_errors"),
    s(IBD, "PortXmitDiscards", "port_xmit_discards"),
    s(IBD, "PortXmitConstraintErrors", "port_xmit_constraint_errors"),
    s(IBD, "PortRcvConstraintErrors", "port_rcv_constraint_errors"),
    s(IBD, "LocalLinkIntegrityErrors", "local_link_integrity_errors"),
    s(IBD, "ExcessiveBufferOverrunErrors", "excessive_buffer_overrun_errors"),
    s(IBD, "VL15Dropped", "vl15_dropped_packets"),
    s(IBD, "QP1Dropped", "qp1_dropped_packets"),
    s(IBD, "PortXmitWait", "port_xmit_wait_ticks"),
    s(IBD, "PortLocalPhysicalErrors", "port_local_physical_errors"),
    s(IBD, "PortMalformedPktErrors", "port_malformed_packet_errors"),
    s(IBD, "PortBufferOverrunErrors", "port_buffer_overrun_errors"),
    s(IBD, "PortDLIDMappingErrors", "port_dlid_mapping_errors"),
    s(IBD, "PortVLMappingErrors", "port_vl_mapping_errors"),
    s(IBD, "PortLoopingErrors", "port_looping_errors"),
    s(IBD, "PortInactiveDiscards", "port_inactive_discards"),
    s(IBD, "PortNeighborMTUDiscards", "port_neighbor_mtu_discards"),
    s(IBD, "PortSwLifetimeLimitDiscards", "port_sw_lifetime_limit_discards"),
    s(IBD, "PortSwHOQLifetimeLimitDiscards", "port_sw_hoq_lifetime_limit_discards"),
    words(IBD, "PortXmitDataExtended", "port_xmit_data_bytes", None),
    words(IBD, "PortRcvDataExtended", "port_rcv_data_bytes", None),
    s(IBD, "PortXmitPktsExtended", "port_xmit_packets"),
    s(IBD, "PortRcvPktsExtended", "port_rcv_packets"),
    s(IBD, "PortUnicastXmitPktsExtended", "unicast_xmit_packets"),
    s(IBD, "PortUnicastRcvPktsExtended", "unicast_rcv_packets"),
    s(IBD, "PortMulticastXmitPktsExtended", "multicast_xmit_packets"),
    s(IBD, "PortMulticastRcvPktsExtended", "multicast_rcv_packets"),
    s(IBD, "PortXmitWaitExt", "port_xmit_wait_ticks"),
    s(IBD, "PortXmitWaitExtended", "port_xmit_wait_ticks"),
    s(IBD, "SymbolErrorCounterExt", "symbol_errors"),
    s(IBD, "LinkErrorRecoveryCounterExt", "link_error_recovery_events"),
    s(IBD, "LinkDownedCounterExt", "link_downed_events"),
    s(IBD, "PortRcvErrorsExt", "port_rcv_errors"),
    s(IBD, "PortXmitDiscardsExt", "port_xmit_discards"),
    s(IBD, "PortRcvRemotePhysicalErrorsExt", "port_rcv_remote_physical_errors"),
    s(IBD, "PortRcvSwitchRelayErrorsExt", "port_rcv_switch_relay_errors"),
    s(IBD, "PortFECCorrectableBlockCounter", "fec_correctable_blocks"),
    s(IBD, "PortFECUncorrectableBlockCounter", "fec_uncorrectable_blocks"),
    s(IBD, "PortFECCorrectedSymbolCounter", "fec_corrected_symbols"),
    // UFM telemetry CSV: data counted in bytes (UFM-SDN field table; its Grafana dashboards rate x8 as
    // bits/s), i.e. UFM already multiplied the 4-octet words: scale 4, not multiplied again.
    words_done(UFM, "PortXmitDataExtended", "port_xmit_data_bytes", None),
    words_done(UFM, "PortRcvDataExtended", "port_rcv_data_bytes", None),
    s(UFM, "PortXmitPktsExtended", "port_xmit_packets"),
    s(UFM, "PortRcvPktsExtended", "port_rcv_packets"),
    s(UFM, "PortUniCastXmitPktsExtended", "unicast_xmit_packets"),
    s(UFM, "PortUniCastRcvPktsExtended", "unicast_rcv_packets"),
    s(UFM, "PortMultiCastXmitPktsExtended", "multicast_xmit_packets"),
    s(UFM, "PortMultiCastRcvPktsExtended", "multicast_rcv_packets"),
    s(UFM, "SymbolErrorCounterExtended", "symbol_errors"),
    s(UFM, "LinkErrorRecoveryCounterExtended", "link_error_recovery_events"),
    s(UFM, "LinkDownedCounterExtended", "link_downed_events"),
    s(UFM, "PortRcvErrorsExtended", "port_rcv_errors"),
    s(UFM, "PortRcvRemotePhysicalErrorsExtended", "port_rcv_remote_physical_errors"),
    s(UFM, "PortRcvSwitchRelayErrorsExtended", "port_rcv_switch_relay_errors"),
    s(UFM, "PortXmitDiscardsExtended", "port_xmit_discards"),
    s(UFM, "PortXmitConstraintErrorsExtended", "port_xmit_constraint_errors"),
    s(UFM, "PortRcvConstraintErrorsExtended", "port_rcv_constraint_errors"),
    s(UFM, "LocalLinkIntegrityErrorsExtended", "local_link_integrity_errors"),
    s(UFM, "ExcessiveBufferOverrunErrorsExtended", "excessive_buffer_overrun_errors"),
    s(UFM, "VL15DroppedExtended", "vl15_dropped_packets"),
    s(UFM, "QP1DroppedExtended", "qp1_dropped_packets"),
    s(UFM, "PortXmitWaitExtended", "port_xmit_wait_ticks"),
    s(UFM, "PortLocalPhysicalErrors", "port_local_physical_errors"),
    s(UFM, "PortMalformedPacketErrors", "port_malformed_packet_errors"),
    s(UFM, "PortBufferOverrunErrors", "port_buffer_overrun_errors"),
    s(UFM, "PortDLIDMappingErrors", "port_dlid_mapping_errors"),
    s(UFM, "PortVLMappingErrors", "port_vl_mapping_errors"),
    s(UFM, "PortLoopingErrors", "port_looping_errors"),
    s(UFM, "PortInactiveDiscards", "port_inactive_discards"),
    s(UFM, "PortNeighborMTUDiscards", "port_neighbor_mtu_discards"),
    s(UFM, "PortSwLifetimeLimitDiscards", "port_sw_lifetime_limit_discards"),
    s(UFM, "PortSwHOQLifetimeLimitDiscards", "port_sw_hoq_lifetime_limit_discards"),
    s(UFM, "PortFECCorrectableBlockCounter", "fec_correctable_blocks"),
    s(UFM, "PortFECUncorrectableBlockCounter", "fec_uncorrectable_blocks"),
    s(UFM, "PortFECCorrectedSymbolCounter", "fec_corrected_symbols"),
    // UFM telemetry JSON (fluentd plugin sample): packets and errors only. `Infiniband_MBOut_u_Gb` is
    // left raw: its name says megabytes, its suffix gigabits, and no sample calibrates it.
    s(UFM, "Infiniband_PckOut_u_Packets", "port_xmit_packets"),
    s(UFM, "Infiniband_PckIn_u_Packets", "port_rcv_packets"),
    s(UFM, "Infiniband_SymbolErrors_u_Errors", "symbol_errors"),
    s(UFM, "Infiniband_LinkRecovers_u_Errors", "link_error_recovery_events"),
    s(UFM, "Infiniband_LinkDowned_u_Errors", "link_downed_events"),
    s(UFM, "Infiniband_RcvErrors_u_Errors", "port_rcv_errors"),
    s(UFM, "Infiniband_RcvRemotePhysErrors_u_Errors", "port_rcv_remote_physical_errors"),
    s(UFM, "Infiniband_RcvSwRelayErrors_u_Errors", "port_rcv_switch_relay_errors"),
    s(UFM, "Infiniband_XmtDiscards_u_Errors", "port_xmit_discards"),
    s(UFM, "Infiniband_XmtConstraintErrors_u_Errors", "port_xmit_constraint_errors"),
    s(UFM, "Infiniband_RcvConstraintErrors_u_Errors", "port_rcv_constraint_errors"),
    s(UFM, "Infiniband_LinkIntegrityErrors_u_Errors", "local_link_integrity_errors"),
    s(UFM, "Infiniband_ExcBufOverrunErrors_u_Errors", "excessive_buffer_overrun_errors"),
    s(UFM, "Infiniband_VL15Dropped_u_Drops", "vl15_dropped_packets"),
    s(UFM, "Infiniband_XmitWait_u_Ticks", "port_xmit_wait_ticks"),
    // telegraf `infiniband` input: sysfs `counters/` file names, read raw (data NOT multiplied upstream).
    // Its hw_counters fields resolve through the sysfs `hw_counters/` spellings (see formats/telegraf.rs).
    words(TG, "port_xmit_data", "port_xmit_data_bytes", None),
    words(TG, "port_rcv_data", "port_rcv_data_bytes", None),
    s(TG, "port_xmit_packets", "port_xmit_packets"),
    s(TG, "port_rcv_packets", "port_rcv_packets"),
    s(TG, "unicast_xmit_packets", "unicast_xmit_packets"),
    s(TG, "unicast_rcv_packets", "unicast_rcv_packets"),
    s(TG, "multicast_xmit_packets", "multicast_xmit_packets"),
    s(TG, "multicast_rcv_packets", "multicast_rcv_packets"),
    s(TG, "symbol_error", "symbol_errors"),
    s(TG, "link_error_recovery", "link_error_recovery_events"),
    s(TG, "link_downed", "link_downed_events"),
    s(TG, "port_rcv_errors", "port_rcv_errors"),
    s(TG, "port_rcv_remote_physical_errors", "port_rcv_remote_physical_errors"),
    s(TG, "port_rcv_switch_relay_errors", "port_rcv_switch_relay_errors"),
    s(TG, "port_xmit_discards", "port_xmit_discards"),
    s(TG, "port_xmit_constraint_errors", "port_xmit_constraint_errors"),
    s(TG, "port_rcv_constraint_errors", "port_rcv_constraint_errors"),
    s(TG, "local_link_integrity_errors", "local_link_integrity_errors"),
    s(TG, "excessive_buffer_overrun_errors", "excessive_buffer_overrun_errors"),
    s(TG, "VL15_dropped", "vl15_dropped_packets"),
    s(TG, "port_xmit_wait", "port_xmit_wait_ticks"),
    // --- mlxlink row labels (mstflint mlxlink/modules/mlxlink_commander.cpp setPrintVal) ---------
    s(MLX, "Effective Physical BER", "phy_effective_ber_ratio"),
    s(MLX, "Raw Physical BER", "phy_raw_ber_ratio"),
    s(MLX, "Symbol BER", "phy_symbol_ber_ratio"),
    s(MLX, "Effective Physical Errors", "phy_effective_errors"),
    // PPCNT 64-bit copies, not the 16-bit PMA field
    ovf(MLX, "Symbol Errors", "symbol_errors", WRAP(64)),
    s(MLX, "Raw Physical Errors Per Lane", "phy_lane_raw_errors"),
    s(MLX, "Raw Physical BER Per Lane", "phy_lane_raw_ber_ratio"),
    Spelling { namespace: MLX, raw: "Time Since Last Clear [Min]", counter: "phy_counters_age_seconds", multiply: 60, scale: 1, overflow: None },
    // PPCNT link_down_events / successful_recovery_events are 32-bit fields
    ovf(MLX, "Link Down Counter", "link_downed_events", WRAP(32)),
    ovf(MLX, "Link Error Recovery Counter", "link_error_recovery_events", WRAP(32)),
    s(MLX, "Height Eye Opening [mV]", "phy_lane_eye_height_millivolts"),
    s(MLX, "Temperature [C]", "module_temperature_celsius"),
    s(MLX, "Temperature [C] [low]", "module_temperature_low_alarm_celsius"),
    s(MLX, "Temperature [C] [high]", "module_temperature_high_alarm_celsius"),
    s(MLX, "Voltage [mV]", "module_voltage_millivolts"),
    s(MLX, "Voltage [mV] [low]", "module_voltage_low_alarm_millivolts"),
    s(MLX, "Voltage [mV] [high]", "module_voltage_high_alarm_millivolts"),
    s(MLX, "Bias Current [mA]", "module_tx_bias_milliamps"),
    s(MLX, "Bias Current [mA] [low]", "module_tx_bias_low_alarm_milliamps"),
    s(MLX, "Bias Current [mA] [high]", "module_tx_bias_high_alarm_milliamps"),
    s(MLX, "Rx Power Current [dBm]", "module_rx_power_dbm"),
    s(MLX, "Rx Power Current [dBm] [low]", "module_rx_power_low_alarm_dbm"),
    s(MLX, "Rx Power Current [dBm] [high]", "module_rx_power_high_alarm_dbm"),
    s(MLX, "Tx Power Current [dBm]", "module_tx_power_dbm"),
    s(MLX, "Tx Power Current [dBm] [low]", "module_tx_power_low_alarm_dbm"),
    s(MLX, "Tx Power Current [dBm] [high]", "module_tx_power_high_alarm_dbm"),
    // --- SONiC switch-side PFC (sonic-utilities scripts/pfcstat, pfcwd/main.py, scripts/queuestat)
    s(SONIC, "Port Rx PFC{p}", "rx_pause_frames"),
    s(SONIC, "Port Tx PFC{p}", "tx_pause_frames"),
    s(SONIC, "RX Pause Transitions", "rx_pause_transitions"),
    s(SONIC, "Total RX Pause Time US", "rx_pause_duration_us"),
    s(SONIC, "STATUS", "pfcwd_stormed_state"),
    s(SONIC, "STORM DETECTED", "pfcwd_storms_detected_events"),
    s(SONIC, "STORM RESTORED", "pfcwd_storms_restored_events"),
    s(SONIC, "TX OK", "pfcwd_tx_ok_packets"),
    s(SONIC, "TX DROP", "pfcwd_tx_dropped_packets"),
    s(SONIC, "RX OK", "pfcwd_rx_ok_packets"),
    s(SONIC, "RX DROP", "pfcwd_rx_dropped_packets"),
    s(SONIC, "TX LAST OK", "pfcwd_last_storm_tx_ok_packets"),
    s(SONIC, "TX LAST DROP", "pfcwd_last_storm_tx_dropped_packets"),
    s(SONIC, "RX LAST OK", "pfcwd_last_storm_rx_ok_packets"),
    s(SONIC, "RX LAST DROP", "pfcwd_last_storm_rx_dropped_packets"),
    s(SONIC, "UC{p} Counter/pkts", "switch_queue_tx_packets"),
    s(SONIC, "UC{p} Counter/bytes", "switch_queue_tx_bytes"),
    s(SONIC, "UC{p} Drop/pkts", "switch_queue_dropped_packets"),
    s(SONIC, "UC{p} Drop/bytes", "switch_queue_dropped_bytes"),
];

/// A spelling one or more vendor drivers print, with the drivers that print it: what
/// `fabricscope counters --vendor NAME` lists. Names are the drivers' own string tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VendorSpelling {
    /// Kernel drivers printing this name (`bnxt_en`, `bnxt_re`, `ice`, `i40e`, `irdma`, `ionic`, `qede`).
    pub drivers: &'static [&'static str],
    /// The spelling itself.
    pub spelling: Spelling,
}

/// Broadcom NetXtreme-C/E Ethernet (Thor): `drivers/net/ethernet/broadcom/bnxt/bnxt_ethtool.c`.
pub const BNXT_EN: &[&str] = &["bnxt_en"];
/// Broadcom RoCE: `drivers/infiniband/hw/bnxt_re/hw_counters.c`.
pub const BNXT_RE: &[&str] = &["bnxt_re"];
/// Intel E810 Ethernet: `drivers/net/ethernet/intel/ice/ice_ethtool.c`.
pub const ICE: &[&str] = &["ice"];
/// Intel X710/XL710/X722 Ethernet: `drivers/net/ethernet/intel/i40e/i40e_ethtool.c`.
pub const I40E: &[&str] = &["i40e"];
/// Intel RDMA (E810, X722): `drivers/infiniband/hw/irdma/verbs.c` `irdma_hw_stat_names`.
pub const IRDMA: &[&str] = &["irdma"];
/// AMD Pensando (Pollara, DSC): `drivers/net/ethernet/pensando/ionic/ionic_stats.c`.
pub const IONIC: &[&str] = &["ionic"];
/// Marvell/QLogic FastLinQ: `drivers/net/ethernet/qlogic/qede/qede_ethtool.c`.
pub const QEDE: &[&str] = &["qede"];
/// NVIDIA Spectrum switch ports: `drivers/net/ethernet/mellanox/mlxsw/spectrum_ethtool.c`
/// (per-priority names are `<stat>_prio_<p>`, PPCNT per-priority group as mlx5 reads it).
pub const MLXSW: &[&str] = &["mlxsw_spectrum"];
/// Names bnxt_en and qede both print, with the same meaning.
pub const BNXT_EN_QEDE: &[&str] = &["bnxt_en", "qede"];

const fn v(drivers: &'static [&'static str], spelling: Spelling) -> VendorSpelling {
    VendorSpelling { drivers, spelling }
}

/// Every vendor-driver spelling. A name already in [`SPELLINGS`] with the same meaning may be
/// repeated here to record which drivers print it (`spellings_agree_with_vendor_tables` checks).
#[rustfmt::skip]
pub static VENDOR_SPELLINGS: &[VendorSpelling] = &[
    // --- mlxsw (Spectrum switch ports) ethtool -S: PPCNT per-priority group, the same register
    // mlx5 reads for rx_prio<p>_pause (pause durations in microseconds), discard and extended groups.
    v(MLXSW, s(ETH, "rx_pause_prio_{p}", "rx_pause_frames")),
    v(MLXSW, s(ETH, "tx_pause_prio_{p}", "tx_pause_frames")),
    v(MLXSW, s(ETH, "rx_pause_duration_prio_{p}", "rx_pause_duration_us")),
    v(MLXSW, s(ETH, "tx_pause_duration_prio_{p}", "tx_pause_duration_us")),
    v(MLXSW, s(ETH, "rx_octets_prio_{p}", "prio_rx_bytes")),
    v(MLXSW, s(ETH, "tx_octets_prio_{p}", "prio_tx_bytes")),
    v(MLXSW, s(ETH, "rx_frames_prio_{p}", "prio_rx_packets")),
    v(MLXSW, s(ETH, "tx_frames_prio_{p}", "prio_tx_packets")),
    v(MLXSW, s(ETH, "a_frame_check_sequence_errors", "phy_rx_crc_errors")),
    v(MLXSW, s(ETH, "a_symbol_error_during_carrier", "phy_rx_symbol_errors")),
    v(MLXSW, s(ETH, "a_octets_received_ok", "phy_rx_bytes")),
    v(MLXSW, s(ETH, "a_octets_transmitted_ok", "phy_tx_bytes")),
    v(MLXSW, s(ETH, "a_frames_received_ok", "phy_rx_packets")),
    v(MLXSW, s(ETH, "a_frames_transmitted_ok", "phy_tx_packets")),
    v(MLXSW, s(ETH, "discard_ingress_general", "phy_rx_discards")),
    v(MLXSW, s(ETH, "discard_egress_general", "phy_tx_discards")),
    v(MLXSW, s(ETH, "ecn_marked", "tx_ecn_marked_packets")),
    // --- bnxt_en ethtool -S: port stats, port stats ext (PFC duration/transitions per priority,
    // kernel 5.1+), per-priority bytes/packets (pri2cos), FEC. 802.3x pause has priority null.
    v(BNXT_EN, s(ETH, "rx_pfc_ena_frames_pri{p}", "rx_pause_frames")),
    v(BNXT_EN, s(ETH, "tx_pfc_ena_frames_pri{p}", "tx_pause_frames")),
    v(BNXT_EN, s(ETH, "pfc_pri{p}_rx_duration_us", "rx_pause_duration_us")),
    v(BNXT_EN, s(ETH, "pfc_pri{p}_tx_duration_us", "tx_pause_duration_us")),
    v(BNXT_EN, s(ETH, "pfc_pri{p}_rx_transitions", "rx_pause_transitions")),
    v(BNXT_EN, s(ETH, "pfc_pri{p}_tx_transitions", "tx_pause_transitions")),
    v(BNXT_EN, s(ETH, "rx_bytes_pri{p}", "prio_rx_bytes")),
    v(BNXT_EN, s(ETH, "tx_bytes_pri{p}", "prio_tx_bytes")),
    v(BNXT_EN, s(ETH, "rx_packets_pri{p}", "prio_rx_packets")),
    v(BNXT_EN, s(ETH, "tx_packets_pri{p}", "prio_tx_packets")),
    v(BNXT_EN_QEDE, s(ETH, "rx_pause_frames", "rx_pause_frames")),
    v(BNXT_EN_QEDE, s(ETH, "tx_pause_frames", "tx_pause_frames")),
    v(BNXT_EN_QEDE, s(ETH, "rx_pfc_frames", "rx_pfc_frames")),
    v(BNXT_EN_QEDE, s(ETH, "tx_pfc_frames", "tx_pfc_frames")),
    v(BNXT_EN, s(ETH, "rx_fcs_err_frames", "phy_rx_crc_errors")),
    v(BNXT_EN, s(ETH, "rx_stat_discard", "phy_rx_discards")),
    v(BNXT_EN, s(ETH, "tx_stat_discard", "phy_tx_discards")),
    v(BNXT_EN, s(ETH, "link_down_events", "phy_link_down_events")),
    v(BNXT_EN, s(ETH, "rx_bits", "phy_rx_bits")),
    v(BNXT_EN, s(ETH, "rx_corrected_bits", "phy_rx_corrected_bits")),
    v(BNXT_EN, s(ETH, "rx_pcs_symbol_err", "phy_rx_pcs_symbol_errors")),
    v(BNXT_EN, s(ETH, "rx_buffer_passed_threshold", "rx_buffer_passed_thres_events")),
    v(BNXT_EN, s(ETH, "rx_fec_corrected_blocks", "fec_correctable_blocks")),
    v(BNXT_EN, s(ETH, "rx_fec_uncorrectable_blocks", "fec_uncorrectable_blocks")),
    // --- bnxt_re hw_counters: kernels < 6.5 spell CNP/ECN their own way, later ones as mlx5 does.
    v(BNXT_RE, s(SYS, "hw_counters/tx_cnp_pkts", "np_cnp_sent_packets")),
    v(BNXT_RE, s(SYS, "hw_counters/np_cnp_pkts", "np_cnp_sent_packets")),
    v(BNXT_RE, s(SYS, "hw_counters/rx_cnp_pkts", "rp_cnp_handled_packets")),
    v(BNXT_RE, s(SYS, "hw_counters/rx_ecn_marked_pkts", "np_ecn_marked_roce_packets")),
    v(BNXT_RE, s(SYS, "hw_counters/np_cnp_sent", "np_cnp_sent_packets")),
    v(BNXT_RE, s(SYS, "hw_counters/rp_cnp_handled", "rp_cnp_handled_packets")),
    v(BNXT_RE, s(SYS, "hw_counters/rp_cnp_ignored", "rp_cnp_ignored_packets")),
    v(BNXT_RE, s(SYS, "hw_counters/np_ecn_marked_roce_packets", "np_ecn_marked_roce_packets")),
    v(BNXT_RE, ovf(SYS, "hw_counters/rx_out_of_buffer", "rx_out_of_buffer_packets", WRAP(64))),
    v(BNXT_RE, s(SYS, "hw_counters/out_of_sequence", "out_of_sequence_packets")),
    v(BNXT_RE, s(SYS, "hw_counters/seq_err_naks_rcvd", "packet_seq_errors")),
    v(BNXT_RE, s(SYS, "hw_counters/to_retransmits", "local_ack_timeout_errors")),
    v(BNXT_RE, s(SYS, "hw_counters/dup_req", "duplicate_requests")),
    v(BNXT_RE, s(SYS, "hw_counters/roce_adp_retrans", "roce_adp_retrans_events")),
    v(BNXT_RE, s(SYS, "hw_counters/roce_adp_retrans_to", "roce_adp_retrans_to_events")),
    // --- ice ethtool -S: PF port stats carry a `.nic` suffix; XON and XOFF counted apart.
    v(ICE, s(ETH, "rx_priority_{p}_xoff.nic", "rx_xoff_frames")),
    v(ICE, s(ETH, "rx_priority_{p}_xon.nic", "rx_xon_frames")),
    v(ICE, s(ETH, "tx_priority_{p}_xoff.nic", "tx_xoff_frames")),
    v(ICE, s(ETH, "tx_priority_{p}_xon.nic", "tx_xon_frames")),
    v(ICE, s(ETH, "link_xoff_rx.nic", "rx_xoff_frames")),
    v(ICE, s(ETH, "link_xon_rx.nic", "rx_xon_frames")),
    v(ICE, s(ETH, "link_xoff_tx.nic", "tx_xoff_frames")),
    v(ICE, s(ETH, "link_xon_tx.nic", "tx_xon_frames")),
    v(ICE, s(ETH, "rx_bytes.nic", "phy_rx_bytes")),
    v(ICE, s(ETH, "tx_bytes.nic", "phy_tx_bytes")),
    v(ICE, s(ETH, "rx_dropped.nic", "phy_rx_discards")),
    v(ICE, s(ETH, "tx_dropped_link_down.nic", "phy_tx_discards")),
    v(ICE, s(ETH, "rx_crc_errors.nic", "phy_rx_crc_errors")),
    // --- i40e ethtool -S: port stats carry a `port.` prefix; XON and XOFF counted apart, per
    // priority (PFC) and for the link (802.3x, priority null). The kernel driver suffixes the
    // per-priority names with `_rx`/`_tx` (`port.rx_priority_3_xoff_rx`), some driver releases do not.
    v(I40E, s(ETH, "port.rx_priority_{p}_xoff_rx", "rx_xoff_frames")),
    v(I40E, s(ETH, "port.rx_priority_{p}_xon_rx", "rx_xon_frames")),
    v(I40E, s(ETH, "port.tx_priority_{p}_xoff_tx", "tx_xoff_frames")),
    v(I40E, s(ETH, "port.tx_priority_{p}_xon_tx", "tx_xon_frames")),
    v(I40E, s(ETH, "port.rx_priority_{p}_xoff", "rx_xoff_frames")),
    v(I40E, s(ETH, "port.rx_priority_{p}_xon", "rx_xon_frames")),
    v(I40E, s(ETH, "port.tx_priority_{p}_xoff", "tx_xoff_frames")),
    v(I40E, s(ETH, "port.tx_priority_{p}_xon", "tx_xon_frames")),
    v(I40E, s(ETH, "port.link_xoff_rx", "rx_xoff_frames")),
    v(I40E, s(ETH, "port.link_xon_rx", "rx_xon_frames")),
    v(I40E, s(ETH, "port.link_xoff_tx", "tx_xoff_frames")),
    v(I40E, s(ETH, "port.link_xon_tx", "tx_xon_frames")),
    v(I40E, s(ETH, "port.rx_bytes", "phy_rx_bytes")),
    v(I40E, s(ETH, "port.tx_bytes", "phy_tx_bytes")),
    v(I40E, s(ETH, "port.rx_dropped", "phy_rx_discards")),
    v(I40E, s(ETH, "port.tx_dropped_link_down", "phy_tx_discards")),
    v(I40E, s(ETH, "port.rx_crc_errors", "phy_rx_crc_errors")),
    // --- irdma hw_counters (RoCEv2 gen 2+): DCQCN counters.
    v(IRDMA, s(SYS, "hw_counters/cnpHandled", "rp_cnp_handled_packets")),
    v(IRDMA, s(SYS, "hw_counters/cnpIgnored", "rp_cnp_ignored_packets")),
    v(IRDMA, s(SYS, "hw_counters/cnpSent", "np_cnp_sent_packets")),
    v(IRDMA, s(SYS, "hw_counters/RxECNMrkd", "np_ecn_marked_roce_packets")),
    // --- ionic ethtool -S port stats: pause durations count 1 us ticks.
    v(IONIC, s(ETH, "rx_pripause_{p}_1us_count", "rx_pause_duration_us")),
    v(IONIC, s(ETH, "tx_pripause_{p}_1us_count", "tx_pause_duration_us")),
    v(IONIC, s(ETH, "rx_pause_1us_count", "rx_pause_duration_us")),
    v(IONIC, s(ETH, "frames_rx_pri_{p}", "prio_rx_packets")),
    v(IONIC, s(ETH, "frames_tx_pri_{p}", "prio_tx_packets")),
    v(IONIC, s(ETH, "frames_rx_pause", "rx_pause_frames")),
    v(IONIC, s(ETH, "frames_tx_pause", "tx_pause_frames")),
    v(IONIC, s(ETH, "frames_rx_pripause", "rx_pfc_frames")),
    v(IONIC, s(ETH, "frames_tx_pripause", "tx_pfc_frames")),
    v(IONIC, s(ETH, "frames_rx_bad_fcs", "phy_rx_crc_errors")),
    v(IONIC, s(ETH, "frames_rx_dropped", "phy_rx_discards")),
    v(IONIC, s(ETH, "octets_rx_all", "phy_rx_bytes")),
    v(IONIC, s(ETH, "octets_tx_total", "phy_tx_bytes")),
    // --- qede ethtool -S: no per-priority counters; BRB (receive buffer) discards are the
    // adapter-congestion drop, `no_buff_discards` the receive-queue one.
    v(QEDE, s(ETH, "rx_crc_errors", "phy_rx_crc_errors")),
    v(QEDE, s(ETH, "brb_discards", "phy_rx_discards")),
    v(QEDE, ovf(ETH, "no_buff_discards", "rx_out_of_buffer_packets", WRAP(64))),
];

struct Registry {
    by_name: HashMap<&'static str, &'static CounterDef>,
    by_spelling: HashMap<(Namespace, &'static str), Mapping>,
}

static REGISTRY: LazyLock<Registry> = LazyLock::new(|| {
    let by_name: HashMap<&'static str, &'static CounterDef> = COUNTERS.iter().map(|d| (d.name, d)).collect();
    let mut by_spelling = HashMap::with_capacity(SPELLINGS.len());
    for sp in SPELLINGS {
        // A spelling naming an unknown counter is a bug in this file; the unit test
        // `every_spelling_names_a_counter` catches it, and here we simply skip it.
        if let Some(def) = by_name.get(sp.counter) {
            by_spelling.insert(
                (sp.namespace, sp.raw),
                Mapping { def, multiply: sp.multiply, scale: sp.scale, overflow: sp.overflow.unwrap_or(def.overflow) },
            );
        }
    }
    for vs in VENDOR_SPELLINGS {
        let sp = vs.spelling;
        if let Some(def) = by_name.get(sp.counter) {
            // A name shared with the generic table keeps the generic meaning (the unit test
            // `spellings_agree_with_vendor_tables` checks that the two agree).
            by_spelling.entry((sp.namespace, sp.raw)).or_insert(Mapping {
                def,
                multiply: sp.multiply,
                scale: sp.scale,
                overflow: sp.overflow.unwrap_or(def.overflow),
            });
        }
    }
    Registry { by_name, by_spelling }
});

/// Resolve a raw spelling in a namespace. Per-priority ethtool names must be passed in their
/// template form (`rx_prio{p}_pause`); see [`split_priority`].
pub fn lookup(namespace: Namespace, raw: &str) -> Option<Mapping> {
    REGISTRY.by_spelling.get(&(namespace, raw)).copied()
}

/// A canonical counter by name.
pub fn counter(name: &str) -> Option<&'static CounterDef> {
    REGISTRY.by_name.get(name).copied()
}

/// The counters of `layer` that carry `role`, most preferred first.
pub fn counters_with_role(role: Role, layer: Layer) -> Vec<&'static CounterDef> {
    let mut found: Vec<(u8, &'static CounterDef)> = COUNTERS
        .iter()
        .filter(|d| d.layer == layer)
        .filter_map(|d| d.roles.iter().find(|r| r.role == role).map(|r| (r.rank, d)))
        .collect();
    found.sort_by_key(|(rank, _)| *rank);
    found.into_iter().map(|(_, d)| d).collect()
}

/// Split a per-priority ethtool name into its template and priority: `rx_prio3_pause` gives
/// (`rx_prio{p}_pause`, 3) and the old `prio3_rx_pause` gives (`prio{p}_rx_pause`, 3). The other
/// vendors' spellings split the same way: bnxt_en `rx_pfc_ena_frames_pri3` and
/// `pfc_pri3_rx_duration_us`, ice `rx_priority_3_xoff.nic`, ionic `rx_pripause_3_1us_count` and
/// `frames_rx_pri_3`, mlxsw `rx_pause_prio_3`. The priority marker (`prio`, `prio_`, `pri`,
/// `priority_`, `pripause_`, `pri_`) starts
/// the name or follows `_`; the single digit 0-7 ends the name or is followed by `_` or `.`.
/// Returns `None` for names without such a priority.
pub fn split_priority(name: &str) -> Option<(String, u8)> {
    const MARKERS: [&str; 6] = ["priority_", "pripause_", "prio_", "prio", "pri_", "pri"];
    let bytes = name.as_bytes();
    let mut i = 0;
    while let Some(pos) = name[i..].find("pri") {
        let at = i + pos;
        let boundary_before = at == 0 || bytes[at - 1] == b'_';
        if boundary_before {
            for marker in MARKERS {
                if !name[at..].starts_with(marker) {
                    continue;
                }
                let digit_at = at + marker.len();
                if digit_at < bytes.len()
                    && (b'0'..=b'7').contains(&bytes[digit_at])
                    && (digit_at + 1 == bytes.len() || matches!(bytes[digit_at + 1], b'_' | b'.'))
                {
                    let template = format!("{}{{p}}{}", &name[..digit_at], &name[digit_at + 1..]);
                    return Some((template, bytes[digit_at] - b'0'));
                }
            }
        }
        i = at + 3;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_names_a_counter() {
        for sp in SPELLINGS {
            assert!(counter(sp.counter).is_some(), "spelling {:?} names unknown counter {}", sp.raw, sp.counter);
        }
    }

    #[test]
    fn canonical_names_are_unique_and_unit_suffixed() {
        let mut seen = std::collections::HashSet::new();
        for d in COUNTERS {
            assert!(seen.insert(d.name), "duplicate counter {}", d.name);
        }
    }

    #[test]
    fn role_ranks_are_one_order_per_layer() {
        let layers = [Layer::Network, Layer::Nvlink, Layer::Pcie, Layer::Cxl, Layer::Device];
        for &role in Role::ALL {
            let mut used = false;
            for layer in layers {
                let mut ranks: Vec<(u8, &str)> = COUNTERS
                    .iter()
                    .filter(|d| d.layer == layer)
                    .flat_map(|d| d.roles.iter().filter(|r| r.role == role).map(|r| (r.rank, d.name)))
                    .collect();
                ranks.sort_unstable();
                used |= !ranks.is_empty();
                for (i, (rank, name)) in ranks.iter().enumerate() {
                    assert_eq!(
                        usize::from(*rank),
                        i + 1,
                        "{} rank {rank} of {}: ranks run 1, 2, ...",
                        name,
                        role.as_str()
                    );
                }
            }
            assert!(used, "role {} has no counter", role.as_str());
        }
        for d in COUNTERS {
            let mut roles: Vec<&str> = d.roles.iter().map(|r| r.role.as_str()).collect();
            let n = roles.len();
            roles.dedup();
            assert_eq!(roles.len(), n, "{} lists a role twice", d.name);
        }
    }

    #[test]
    fn roles_follow_the_direction_and_unit_they_name() {
        for d in COUNTERS {
            for r in d.roles {
                let role = r.role.as_str();
                if role.starts_with("tx_") {
                    assert!(!d.name.contains("rx_") && !d.name.contains("_rcv_"), "{} is {role}", d.name);
                }
                if role.starts_with("rx_") {
                    assert!(!d.name.contains("tx_") && !d.name.contains("_xmit_"), "{} is {role}", d.name);
                }
                if role.ends_with("_bytes") {
                    assert!(matches!(d.unit, Unit::Bytes | Unit::BytesPerSecond), "{} is {role}", d.name);
                }
            }
        }
        let tx: Vec<&str> = counters_with_role(Role::TxBytes, Layer::Network).iter().map(|d| d.name).collect();
        assert_eq!(
            tx,
            ["vport_rdma_tx_unicast_bytes", "ext_port_xmit_data_bytes", "port_xmit_data_bytes", "phy_tx_bytes",]
        );
        let nvlink: Vec<&str> = counters_with_role(Role::TxBytes, Layer::Nvlink).iter().map(|d| d.name).collect();
        assert_eq!(nvlink, ["nvlink_tx_bytes", "nvlink_tx_bytes_per_s"]);
    }

    #[test]
    fn a_stand_in_is_read_as_a_counter_of_its_unit_with_roles_of_its_own() {
        let mut stand_ins = 0;
        for d in COUNTERS {
            if let Some(target) = d.stands_for {
                stand_ins += 1;
                let t = counter(target).expect("stands for a known counter");
                assert!(d.roles.is_empty(), "{} has roles of its own and through {target}: counted twice", d.name);
                assert!(!t.roles.is_empty() && t.stands_for.is_none(), "{target} is no analysed counter");
                assert_eq!((d.kind, d.layer), (t.kind, t.layer), "{} and {target}", d.name);
                assert!(
                    d.unit == t.unit
                        || (d.unit, t.unit) == (Unit::Packets, Unit::Events)
                        || (d.unit, t.unit) == (Unit::Events, Unit::Packets)
                );
            }
        }
        assert_eq!(stand_ins, 7);
    }

    #[test]
    fn spellings_are_unique_per_namespace() {
        let mut seen = std::collections::HashSet::new();
        for sp in SPELLINGS {
            assert!(seen.insert((sp.namespace, sp.raw)), "duplicate spelling {:?}", sp.raw);
        }
    }

    #[test]
    fn ib_data_words_are_multiplied_once() {
        let m = lookup(Namespace::Sysfs, "counters/port_xmit_data").expect("known");
        assert_eq!((m.multiply, m.scale, m.def.name), (4, 4, "port_xmit_data_bytes"));
        let m = lookup(Namespace::Prometheus, "node_infiniband_port_data_transmitted_bytes_total").expect("known");
        assert_eq!((m.multiply, m.scale), (1, 4));
        assert_eq!(m.overflow, Overflow::SaturateOrWide { basic: 32, extended: 64 });
    }

    #[test]
    fn priority_split_handles_both_namings() {
        assert_eq!(split_priority("rx_prio3_pause"), Some(("rx_prio{p}_pause".into(), 3)));
        assert_eq!(split_priority("prio0_rx_octets"), Some(("prio{p}_rx_octets".into(), 0)));
        assert_eq!(split_priority("rx_prio7_pause_duration"), Some(("rx_prio{p}_pause_duration".into(), 7)));
        assert_eq!(split_priority("rx_prio8_pause"), None);
        assert_eq!(split_priority("rx_prio31_bytes"), None);
        assert_eq!(split_priority("rx_global_pause"), None);
        assert_eq!(lookup(Namespace::Ethtool, "prio{p}_rx_octets").map(|m| m.def.name), Some("prio_rx_bytes"));
    }

    #[test]
    fn priority_split_handles_other_vendors() {
        assert_eq!(split_priority("rx_pfc_ena_frames_pri3"), Some(("rx_pfc_ena_frames_pri{p}".into(), 3)));
        assert_eq!(split_priority("pfc_pri5_tx_duration_us"), Some(("pfc_pri{p}_tx_duration_us".into(), 5)));
        assert_eq!(split_priority("rx_priority_3_xoff.nic"), Some(("rx_priority_{p}_xoff.nic".into(), 3)));
        assert_eq!(split_priority("rx_pripause_7_1us_count"), Some(("rx_pripause_{p}_1us_count".into(), 7)));
        assert_eq!(split_priority("frames_tx_pri_0"), Some(("frames_tx_pri_{p}".into(), 0)));
        assert_eq!(split_priority("rx_bytes_cos3"), None);
        assert_eq!(split_priority("rx_priority_8_xoff.nic"), None);
        assert_eq!(split_priority("sprio3_x"), None);
        assert_eq!(split_priority("rx_pri33"), None);
        let m = lookup(Namespace::Ethtool, "pfc_pri{p}_rx_duration_us").expect("bnxt_en duration");
        assert_eq!(m.def.name, "rx_pause_duration_us");
        let m = lookup(Namespace::Ethtool, "rx_priority_{p}_xoff.nic").expect("ice xoff");
        assert_eq!(m.def.name, "rx_xoff_frames");
    }

    #[test]
    fn spellings_agree_with_vendor_tables() {
        for vs in VENDOR_SPELLINGS {
            let sp = vs.spelling;
            assert!(counter(sp.counter).is_some(), "vendor spelling {:?} names unknown counter {}", sp.raw, sp.counter);
            assert!(!vs.drivers.is_empty(), "vendor spelling {:?} names no driver", sp.raw);
            if let Some(generic) = SPELLINGS.iter().find(|g| g.namespace == sp.namespace && g.raw == sp.raw) {
                assert_eq!(generic.counter, sp.counter, "{:?} means two things", sp.raw);
                assert_eq!(generic.multiply, sp.multiply, "{:?} is multiplied two ways", sp.raw);
            }
            let twice =
                VENDOR_SPELLINGS.iter().filter(|o| o.spelling.namespace == sp.namespace && o.spelling.raw == sp.raw);
            assert_eq!(twice.count(), 1, "vendor spelling {:?} listed twice: list its drivers together", sp.raw);
        }
    }
}
