//! One module per input format, plus content-based detection.
//!
//! Line-oriented readers implement [`LineReader`]: the driver (`crate::read`) hands them
//! complete lines in bounded chunks, so a 10 GB file never sits in memory. Directory-shaped
//! inputs (a copied sysfs tree) are read by [`sysfs::read_tree`].

// Helpers several readers share.
pub mod common;
pub mod ethtool;
pub mod prometheus;
pub mod prometheus_api;
pub mod remote_read;
pub mod sysfs;
// InfiniBand diagnostic sources.
pub mod ib;
pub mod ibdiagnet;
pub mod iblinkinfo;
pub mod ibnetdiscover;
pub mod ibqueryerrors;
pub mod ibswinfo;
pub mod lldpctl;
pub mod netdump;
pub mod perfquery;
pub mod rdma_statistic;
pub mod sonic_lldp;
// RDMA device <-> network device identity.
pub mod ibdev2netdev;
pub mod rdma_link;
pub mod telegraf;
pub mod ufm;
// Measured-performance and GPU/CXL sources.
pub mod cxl_list;
pub mod nccl_tests;
pub mod nvidia_smi;
pub mod nvidia_smi_q;
pub mod perf_stat;
pub mod perftest;
// Physical layer: mlxlink BER/FEC and transceiver readings.
pub mod mlxlink;
// Port-state tools run on a host, and DCGM's command-line monitor.
pub mod dcgmi_dmon;
pub mod ibstat;
pub mod ibstatus;
pub mod ibv_devinfo;
// Lossless configuration (host QoS) and switch-side PFC.
pub mod mlnx_qos;
pub mod sonic_pfc;

pub use ib::normalize_guid;

use crate::error::{Position, Result};
use crate::read::ReadContext;
use crate::timestamp::Stamp;

/// Static description of a format for `fabricscope formats`.
#[derive(Debug, Clone, Copy)]
pub struct FormatInfo {
    /// The format.
    pub format: Format,
    /// Name used by `format=`.
    pub name: &'static str,
    /// How its input is read.
    pub reader: Reader,
    /// Other names `format=` accepts (case-insensitive).
    pub aliases: &'static [&'static str],
    /// Whether a file of this format only ever grows by whole appended records, so cron mode may
    /// read just the new tail instead of the whole file again.
    pub appendable: bool,
    /// Whether the reader fills the `links` (topology) table.
    pub emits_links: bool,
    /// Whether an input of this format is what one host prints about itself (`ethtool -S`,
    /// `rdma`, `lldpctl` run on the host), so a file of it that names no host is that host's and
    /// its path may name it; not a fabric-wide dump, a capture or a benchmark log.
    pub about_its_host: bool,
    /// What produces it.
    pub produced_by: &'static str,
    /// How detection recognises it.
    pub detection: &'static str,
    /// Where timestamps come from.
    pub timestamps: &'static str,
    /// The resolution of its timestamps, where the format fixes it.
    pub time_resolution: TimeResolution,
    /// What content detection recognises as this format's own.
    pub signature: Signature,
}

/// A format's own signature in the first bytes of an input. [`detect`] checks the signatures in
/// [`FORMATS`] order, before the heuristics the other formats share (InfiniBand diagnostic shapes,
/// then Prometheus, sysfs and ethtool lines scored against each other).
#[derive(Debug, Clone, Copy)]
pub enum Signature {
    /// Recognised by the shared heuristics (or only by name, `format=`).
    Shared,
    /// A magic number in the head bytes.
    Bytes(fn(&[u8]) -> bool),
    /// Text only this format prints, in the head decoded as UTF-8 (lossily).
    Text(fn(&str) -> bool),
}

/// The head of a JSON document (after leading whitespace), for the signatures of JSON formats.
fn json_head(text: &str) -> Option<&str> {
    let trimmed = text.trim_start();
    (trimmed.starts_with('{') || trimmed.starts_with('[')).then_some(trimmed)
}

/// The resolution of a format's timestamps. What an input actually stated is in its report
/// ([`crate::read::InputReport::time_resolution_ns`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeResolution {
    /// The format fixes it, in nanoseconds (Prometheus text: integer milliseconds).
    Fixed(i64),
    /// Each capture's header sets it (pcap: µs or ns by magic; pcapng: `if_tsresol` per interface).
    PerCapture,
    /// Decided per input: by how its timestamp lines or its file name write the time (`date +%s`
    /// 1 s, `date +%s.%N` 1 ns), or as each timestamp is written.
    PerInput,
    /// The format dates no rows of its own (an inventory or topology table).
    None,
}

impl TimeResolution {
    /// The fixed resolution in nanoseconds, if the format fixes one.
    pub fn ns(self) -> Option<i64> {
        match self {
            TimeResolution::Fixed(ns) => Some(ns),
            TimeResolution::PerCapture | TimeResolution::PerInput | TimeResolution::None => None,
        }
    }

    /// `1 ms`, `1 µs`, `per capture`, `per input`, `none`.
    pub fn describe(self) -> String {
        match self {
            TimeResolution::Fixed(ns) => match ns {
                1 => "1 ns".to_owned(),
                1_000 => "1 µs".to_owned(),
                1_000_000 => "1 ms".to_owned(),
                1_000_000_000 => "1 s".to_owned(),
                other => format!("{other} ns"),
            },
            TimeResolution::PerCapture => "per capture".to_owned(),
            TimeResolution::PerInput => "per input".to_owned(),
            TimeResolution::None => "none".to_owned(),
        }
    }
}

/// Integer milliseconds (Prometheus, its APIs).
const MS: TimeResolution = TimeResolution::Fixed(1_000_000);
/// Integer microseconds (UFM telemetry).
const US: TimeResolution = TimeResolution::Fixed(1_000);

/// How a format's input is read: the constructor of a fresh reader.
#[derive(Debug, Clone, Copy)]
pub enum Reader {
    /// Complete lines in bounded chunks.
    Lines(fn() -> Box<dyn LineReader>),
    /// The whole (decompressed) byte stream.
    Binary(fn() -> Box<dyn BinaryReader>),
    /// A directory (read by [`sysfs::read_tree`]).
    Tree,
}

/// Declares [`Format`] (one variant per entry, documented by the entry's doc comment) and
/// [`FORMATS`] (the entries, in order) from one list, so a format is registered in one place.
macro_rules! formats {
    ($($(#[$doc:meta])* $variant:ident => FormatInfo { $($field:ident: $value:expr),* $(,)? }),* $(,)?) => {
        /// A supported input format.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Format {
            $($(#[$doc])* $variant,)*
        }

        /// Every format, in the order `fabricscope formats` lists them and [`detect`] checks their
        /// signatures. Adding a format is its module plus its entry in `formats!`.
        pub static FORMATS: &[FormatInfo] = &[$(FormatInfo { format: Format::$variant, $($field: $value),* },)*];
    };
}

formats! {
    /// Prometheus text exposition 0.0.4 (timestamps in milliseconds).
    Prometheus => FormatInfo {
        reader: Reader::Lines(|| Box::new(prometheus::PrometheusReader::new(prometheus::Flavor::Prometheus))),
        name: "prometheus",
        aliases: &["prom", "node_exporter", "federate"],
        appendable: true,
        emits_links: false,
        about_its_host: false,
        produced_by: "node_exporter (infiniband, ethtool), infiniband_exporter, DCGM exporter, Prometheus /federate",
        detection: "`# HELP`/`# TYPE` lines or `name{labels} value` samples",
        timestamps: "per-sample (ms); else timestamp lines, file name, argument, mtime",
        time_resolution: MS,
        signature: Signature::Shared,
    },
    /// OpenMetrics 1.0 text (timestamps in seconds, `# EOF`).
    OpenMetrics => FormatInfo {
        reader: Reader::Lines(|| Box::new(prometheus::PrometheusReader::new(prometheus::Flavor::OpenMetrics))),
        name: "openmetrics",
        aliases: &["om"],
        appendable: true,
        emits_links: false,
        about_its_host: false,
        produced_by: "OpenMetrics 1.0 exporters and scrapes (`# EOF` terminated)",
        detection: "as prometheus, plus `# EOF` or `# UNIT`",
        timestamps: "per-sample (s); else timestamp lines, file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Shared,
    },
    /// A Prometheus HTTP API query response (`/api/v1/query`, `/api/v1/query_range` JSON).
    PrometheusApi => FormatInfo {
        reader: Reader::Binary(|| Box::new(prometheus_api::PrometheusApiReader)),
        name: "prometheus-api",
        aliases: &["prometheus-http", "prometheus-json"],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "a Prometheus server's HTTP API (`/api/v1/query` with a range selector, `/api/v1/query_range`): what `fabricscope analyze http://prometheus:9090` pulls, or a saved response",
        detection: "a JSON object with `\"status\"` and `\"resultType\"`",
        timestamps: "per-sample (s with ms precision)",
        time_resolution: MS,
        signature: Signature::Text(|t| json_head(t).is_some_and(prometheus_api::looks_like)),
    },
    /// A Prometheus remote read response (`/api/v1/read`: snappy-compressed protobuf).
    PrometheusRemoteRead => FormatInfo {
        reader: Reader::Binary(|| Box::new(remote_read::RemoteReadReader)),
        name: "prometheus-remote-read",
        aliases: &["remote-read", "prometheus-read"],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "a Prometheus server's remote read API (`POST /api/v1/read`, snappy-compressed protobuf `ReadResponse`): what `fabricscope analyze http://prometheus:9090` pulls by default",
        detection: "none (binary without a magic number): name it with format=prometheus-remote-read",
        timestamps: "per-sample (ms)",
        time_resolution: MS,
        signature: Signature::Shared,
    },
    /// `ethtool -S <iface>` output, one or more snapshots.
    Ethtool => FormatInfo {
        reader: Reader::Lines(|| Box::new(ethtool::EthtoolReader::new())),
        name: "ethtool",
        aliases: &["ethtool-s"],
        appendable: true,
        emits_links: false,
        about_its_host: true,
        produced_by: "`ethtool -S <iface>` (mlx5 and generic drivers), appended snapshots",
        detection: "a `NIC statistics:` line, or only `<name>: <integer>` lines (the header cut off)",
        timestamps: "timestamp line before each snapshot; else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Shared,
    },
    /// A copied `/sys/class/{infiniband,net}` tree (a directory).
    SysfsTree => FormatInfo {
        reader: Reader::Tree,
        name: "sysfs",
        aliases: &["sysfs-tree"],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "a copy of /sys/class/infiniband and /sys/class/net (directory)",
        detection: "a directory containing class/infiniband or class/net, or ports/<n>/counters",
        timestamps: "a `timestamp` file at the tree root; else directory name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Shared,
    },
    /// `path:value` lines as `grep -H . /sys/class/infiniband/*/ports/*/counters/*` prints them.
    SysfsGrep => FormatInfo {
        reader: Reader::Lines(|| Box::new(sysfs::SysfsGrepReader::new())),
        name: "sysfs-grep",
        aliases: &[],
        appendable: true,
        emits_links: false,
        about_its_host: true,
        produced_by: "`grep -H . /sys/class/infiniband/*/ports/*/{counters,hw_counters}/*` (path:value lines)",
        detection: "lines `/sys/class/.../<counter>:<value>` or `.../ports/<n>/...:<value>`",
        timestamps: "timestamp line before each snapshot; else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Shared,
    },
    // --- InfiniBand diagnostic sources ---
    /// `perfquery` output (basic, `-x` extended, `-E` receive-error details), several blocks.
    Perfquery => FormatInfo {
        reader: Reader::Lines(|| Box::new(perfquery::PerfqueryReader::new())),
        name: "perfquery",
        aliases: &[],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "`perfquery [-x] [-E] [-l] <lid|guid> [ports]` (infiniband-diags), appended snapshots",
        detection: "a `# Port counters:`/`# Port extended counters:`/`# <X> counters: ... port N` header or `Name:....value` lines",
        timestamps: "timestamp line before each block; else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Shared,
    },
    /// `ibqueryerrors` output (`Errors for ...`, `GUID ... port N: [Name == v]`, `##` summary).
    Ibqueryerrors => FormatInfo {
        reader: Reader::Lines(|| Box::new(ibqueryerrors::IbqueryerrorsReader::new())),
        name: "ibqueryerrors",
        aliases: &[],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "`ibqueryerrors [--data]` (infiniband-diags)",
        detection: "`Errors for ...` lines or `GUID 0x... port N: [Name == value]` lines",
        timestamps: "timestamp line before the run; else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Shared,
    },
    /// `iblinkinfo` output (per-switch/CA blocks of links with width, speed, peer).
    Iblinkinfo => FormatInfo {
        reader: Reader::Lines(|| Box::new(iblinkinfo::IblinkinfoReader::new())),
        name: "iblinkinfo",
        aliases: &[],
        appendable: false,
        emits_links: true,
        about_its_host: false,
        produced_by: "`iblinkinfo [-l]` (infiniband-diags); also emits the `links` table",
        detection: "`Switch: 0x...`/`CA: ...` block headers or `==( ... )==>` link lines",
        timestamps: "timestamp line; else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Shared,
    },
    /// `ibnetdiscover`: the topology file (default output) or the `-p` ports report.
    Ibnetdiscover => FormatInfo {
        reader: Reader::Lines(|| Box::new(ibnetdiscover::IbnetdiscoverReader::new())),
        name: "ibnetdiscover",
        aliases: &[],
        appendable: false,
        emits_links: true,
        about_its_host: false,
        produced_by: "`ibnetdiscover` topology file (default output, `-g` grouped too) and `ibnetdiscover -p` (ports report); emits the `links` table",
        detection: "`switchguid=0x...`/`caguid=0x...` lines, `Switch|Ca <ports> \"S-|H-<guid>\" # ...` node headers, `[<port>] \"S-<guid>\"[<port>] # ...` port lines, or `-p` lines `CA|SW|RT <lid> <port> 0x<guid> <width> <speed> ...`",
        timestamps: "timestamp line; else `# Topology file: generated on <ctime>` (local time read as UTC); else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Shared,
    },
    /// `ibdiagnet2.db_csv`: `START_<SECTION>` ... `END_<SECTION>` CSV sections.
    IbdiagnetDbCsv => FormatInfo {
        reader: Reader::Lines(|| Box::new(ibdiagnet::DbCsvReader::new())),
        name: "ibdiagnet-db-csv",
        aliases: &["db_csv", "db-csv", "ibdiagnet", "ibdiagnet2"],
        appendable: false,
        emits_links: true,
        about_its_host: false,
        produced_by: "`ibdiagnet` → `ibdiagnet2.db_csv` (NODES, PORTS, LINKS, PM_INFO; others skipped); emits `links`",
        detection: "a `START_<SECTION>` line",
        timestamps: "none in the file: file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Shared,
    },
    /// UFM telemetry CSV: a header, then one row per port.
    UfmCsv => FormatInfo {
        reader: Reader::Lines(|| Box::new(ufm::UfmCsvReader::new())),
        name: "ufm-csv",
        aliases: &[],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "UFM telemetry `/csv/metrics`, `/csv/xcset/<name>` (header, one row per port)",
        detection: "a comma-separated header with `timestamp` and `node_guid`/`Node_GUID`",
        timestamps: "per-row `timestamp` (µs epoch); else file name, argument, mtime",
        time_resolution: US,
        signature: Signature::Shared,
    },
    /// UFM telemetry JSON (`{"values": [{"node_guid": ..., "port_num": ..., ...}]}`).
    UfmJson => FormatInfo {
        reader: Reader::Binary(|| Box::new(ufm::UfmJsonReader::new())),
        name: "ufm-json",
        aliases: &[],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "UFM telemetry JSON (fluentd telemetry plugin messages, REST), at most `max_document_bytes` (256 MiB) per document",
        detection: "a JSON document whose head contains `\"node_guid\"` and `\"port_num\"`",
        timestamps: "per-record `timestamp` (µs epoch); else file name, argument, mtime",
        time_resolution: US,
        signature: Signature::Shared,
    },
    /// Influx line protocol as telegraf writes it (`infiniband` and `ethtool` inputs).
    Telegraf => FormatInfo {
        reader: Reader::Lines(|| Box::new(telegraf::TelegrafReader::new())),
        name: "telegraf",
        aliases: &["influx", "line-protocol"],
        appendable: true,
        emits_links: false,
        about_its_host: false,
        produced_by: "telegraf `infiniband` and `ethtool` inputs (Influx line protocol)",
        detection: "line protocol `infiniband,...`/`ethtool,...` lines (`measurement,tags fields timestamp`)",
        timestamps: "per-line timestamp (ns; s/ms/µs by magnitude); else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Shared,
    },
    /// `ibdiagnet2.net_dump`: per-node blocks of a ` :`-separated port table (LWA, LSA, neighbor).
    IbdiagnetNetDump => FormatInfo {
        reader: Reader::Lines(|| Box::new(netdump::NetDumpReader::new())),
        name: "ibdiagnet-net-dump",
        aliases: &["net_dump", "net-dump", "ibdiagnet-net_dump"],
        appendable: false,
        emits_links: true,
        about_its_host: false,
        produced_by: "`ibdiagnet` → `ibdiagnet2.net_dump` (per-port state, width, speed, FEC, neighbor)",
        detection: "a block header `\"<description>\", <vendor>, 0x<guid>, LID <n>`",
        timestamps: "none in the file: file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Shared,
    },
    /// `ibswinfo` switch vitals (`key | value`, or `key : value` in vitals mode).
    Ibswinfo => FormatInfo {
        reader: Reader::Lines(|| Box::new(ibswinfo::IbswinfoReader::new())),
        name: "ibswinfo",
        aliases: &[],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "`ibswinfo -d <lid>` (unmanaged switch vitals: part/serial/firmware, PSUs, fans, temperatures, uptime), also `-o vitals`",
        detection: "`part number | ...`, `fan#N (rpm) | ...`, `cur.temp (C) : ...` and similar vitals lines",
        timestamps: "timestamp line; else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Shared,
    },
    // --- packet captures ---
    /// Classic libpcap capture (both byte orders, µs/ns, the "modified" variant).
    Pcap => FormatInfo {
        reader: Reader::Binary(|| Box::new(crate::packets::CaptureReader)),
        name: "pcap",
        aliases: &[],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "tcpdump/dumpcap/NIC sniffers: classic pcap (Ethernet, Linux cooked v1/v2); emits `packet_events`, `packet_flows`",
        detection: "magic a1b2c3d4 / a1b23c4d / a1b2cd34 in either byte order",
        timestamps: "per-packet (µs or ns, integer)",
        time_resolution: TimeResolution::PerCapture,
        signature: Signature::Bytes(|b| crate::packets::container::pcap_magic(b).is_some()),
    },
    /// pcapng capture (SHB/IDB/EPB/SPB; several sections, per-interface resolution).
    Pcapng => FormatInfo {
        reader: Reader::Binary(|| Box::new(crate::packets::CaptureReader)),
        name: "pcapng",
        aliases: &[],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "dumpcap/Wireshark/tcpdump pcapng; emits `packet_events`, `packet_flows`",
        detection: "a Section Header Block (0a0d0d0a + byte-order magic)",
        timestamps: "per-packet, per-interface if_tsresol/if_tsoffset (integer ns)",
        time_resolution: TimeResolution::PerCapture,
        signature: Signature::Bytes(crate::packets::container::is_pcapng),
    },
    // --- vendor-neutral RDMA ---
    /// `rdma statistic show` (iproute2): RDMA port counters of any RDMA driver, text or `-j` JSON.
    RdmaStatistic => FormatInfo {
        reader: Reader::Lines(|| Box::new(rdma_statistic::RdmaStatisticReader::new())),
        name: "rdma-statistic",
        aliases: &[],
        appendable: false,
        emits_links: false,
        about_its_host: true,
        produced_by: "`rdma [-j] statistic [qp] show [link <dev>/<port>]` (iproute2 5.3+; any RDMA driver: mlx5, bnxt_re, irdma, ionic, qedr)",
        detection: "only `link <dev>/<port> <counter> <value> ...` records (wrapped, `-p`) and `mode [supported]` lines past prompts and comments, or a JSON array of objects with `ifindex`, `ifname`, `port`",
        timestamps: "timestamp line before each snapshot; else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(rdma_statistic::looks_like),
    },
    // --- RDMA device <-> network device identity ---
    /// `rdma [-j] link show` (iproute2): port state and netdev, port attributes only.
    RdmaLink => FormatInfo {
        reader: Reader::Lines(|| Box::new(rdma_link::RdmaLinkReader::new())),
        name: "rdma-link",
        aliases: &[],
        appendable: false,
        emits_links: false,
        about_its_host: true,
        produced_by: "`rdma [-j] [-d] link show` (iproute2 4.16+; any RDMA driver): port state, LID, netdev; port attributes only",
        detection: "only `link <dev>/<port>` lines whose first key is `state`, `lid`, `subnet_prefix` or `netdev` (or `<i>/<p>: <dev>/<port>: ...`) past prompts and comments, or a JSON array of objects with `ifname` and `state`",
        timestamps: "timestamp line; else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(rdma_link::looks_like),
    },
    /// `ibdev2netdev [-v]` (MLNX_OFED): `mlx5_0 port 1 ==> ens1f0 (Up)`, port attributes only.
    Ibdev2netdev => FormatInfo {
        reader: Reader::Lines(|| Box::new(ibdev2netdev::Ibdev2netdevReader::new())),
        name: "ibdev2netdev",
        aliases: &[],
        appendable: false,
        emits_links: false,
        about_its_host: true,
        produced_by: "`ibdev2netdev [-v]` (MLNX_OFED / mlnx-tools): which netdev each RDMA port drives; port attributes only",
        detection: "`<dev> port <n> ==> <netdev> (Up)` lines (`-v`: PCI address, part, fw before `port`; old style `<===>`)",
        timestamps: "timestamp line; else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(ibdev2netdev::looks_like),
    },
    // --- Ethernet (RoCE) topology ---
    /// SONiC `show lldp table` (sonic-utilities `lldpshow`) on one switch: the `links` table.
    SonicLldpTable => FormatInfo {
        reader: Reader::Lines(|| Box::new(sonic_lldp::SonicLldpReader::new())),
        name: "sonic-lldp-table",
        aliases: &["show-lldp-table", "lldpshow"],
        appendable: false,
        emits_links: true,
        about_its_host: false,
        produced_by: "`show lldp table` (SONiC, sonic-utilities `lldpshow`) on a switch; emits `links`",
        detection: "the header `LocalPort RemoteDevice RemotePortID Capability RemotePortDescr`",
        timestamps: "none (topology table); switch from `# host:` line, the echoed prompt (`admin@leaf01:~$`), argument or file name",
        time_resolution: TimeResolution::None,
        signature: Signature::Text(sonic_lldp::looks_like),
    },
    /// `lldpctl -f json` / `-f json0` (lldpd) neighbours of one host: the `links` table.
    LldpctlJson => FormatInfo {
        reader: Reader::Binary(|| Box::new(lldpctl::LldpJsonReader)),
        name: "lldpctl-json",
        aliases: &[],
        appendable: false,
        emits_links: true,
        about_its_host: true,
        produced_by: "`lldpctl -f json` or `-f json0` (lldpd) on a host; emits `links`",
        detection: "a JSON object starting `{\"lldp\": {` or `{\"lldp\": [`",
        timestamps: "none (topology table); host from `# host:` line or argument",
        time_resolution: TimeResolution::None,
        signature: Signature::Text(lldpctl::looks_like_json),
    },
    /// `lldpctl -f keyvalue` (lldpd) neighbours of one host: the `links` table.
    LldpctlKeyvalue => FormatInfo {
        reader: Reader::Lines(|| Box::new(lldpctl::LldpKeyValueReader::new())),
        name: "lldpctl-keyvalue",
        aliases: &["lldpctl", "lldp", "lldpcli"],
        appendable: false,
        emits_links: true,
        about_its_host: true,
        produced_by: "`lldpctl -f keyvalue` / `lldpcli -f keyvalue show neighbors [details]` (lldpd) on a host; emits `links`",
        detection: "`lldp.<interface>.<field>=<value>` lines",
        timestamps: "none (topology table); host from `# host:` line or argument",
        time_resolution: TimeResolution::None,
        signature: Signature::Text(lldpctl::looks_like_keyvalue),
    },
    // --- measured performance, GPU and CXL sources ---
    /// nccl-tests `-J` JSON report.
    NcclTestsJson => FormatInfo {
        reader: Reader::Binary(|| Box::new(nccl_tests::NcclJsonReader)),
        name: "nccl-tests-json",
        aliases: &[],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "nccl-tests `-J <file>` JSON report; emits `nccl_results`, `nccl_ranks`",
        detection: "a JSON object with `\"nccl_version\"` and `\"start_time\"`/`\"results\"`",
        timestamps: "`start_time` (local time read as UTC); else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(|t| json_head(t).is_some_and(nccl_tests::looks_like_json)),
    },
    /// `cxl list` JSON (ndctl cxl-cli): the `cxl_devices` table.
    CxlList => FormatInfo {
        reader: Reader::Binary(|| Box::new(cxl_list::CxlListReader::new())),
        name: "cxl-list",
        aliases: &["cxl"],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "`cxl list [-M] [-u] [-BEMP]` (ndctl cxl-cli) JSON; emits `cxl_devices`",
        detection: "a JSON array/object containing `\"memdev\"`",
        timestamps: "none (inventory table)",
        time_resolution: TimeResolution::None,
        signature: Signature::Text(|t| json_head(t).is_some_and(cxl_list::looks_like)),
    },
    /// `nvidia-smi nvlink` throughput (`-gt d|r`, `-g`), status (`-s`) and error (`-e`) output.
    NvidiaSmiNvlink => FormatInfo {
        reader: Reader::Lines(|| Box::new(nvidia_smi::NvidiaSmiReader::new())),
        name: "nvidia-smi-nvlink",
        aliases: &["nvidia-smi", "nvlink"],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "`nvidia-smi nvlink -gt d|r`, `-g <set>` (KiB counters), `-s` (link speed), `-e` (error counters)",
        detection: "a `GPU <n>: <name> (UUID: GPU-...)` line followed by `Link <n>: ...` lines",
        timestamps: "timestamp line before each snapshot; else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(nvidia_smi::looks_like),
    },
    /// `nvidia-smi -q` text: GPU identity, NVLink fabric state and health (attributes only).
    NvidiaSmiQ => FormatInfo {
        reader: Reader::Lines(|| Box::new(nvidia_smi_q::NvidiaSmiQReader::new())),
        name: "nvidia-smi-q",
        aliases: &["nvidia-smi-query"],
        appendable: false,
        emits_links: false,
        about_its_host: true,
        produced_by: "`nvidia-smi -q` (any `-d` selection, `-l` appended logs): GPU name, UUID, bus id, Platform Info, the Fabric block (state, status, clique, cluster UUID, health)",
        detection: "the `==============NVSMI LOG==============` banner, or a `GPU <bus id>` line followed by an indented `Product Name`",
        timestamps: "the log's `Timestamp` (local time read as UTC); else timestamp line, file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(nvidia_smi_q::looks_like),
    },
    /// nccl-tests text logs (`all_reduce_perf` ...): the `nccl_results`/`nccl_ranks` tables.
    NcclTests => FormatInfo {
        reader: Reader::Lines(|| Box::new(nccl_tests::NcclTestsReader::new())),
        name: "nccl-tests",
        aliases: &["nccl", "rccl-tests"],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "nccl-tests/rccl-tests `*_perf` logs; emits `nccl_results`, `nccl_ranks`",
        detection: "`# Collective test starting`, `# nThread ... nGpus`, `#  Rank N ... on HOST device N` or a `size count type ... busbw` header",
        timestamps: "the `timestamp` column (local time read as UTC); else timestamp line, file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(nccl_tests::looks_like_log),
    },
    /// perftest output (`ib_write_bw`, `ib_read_lat`, ...): the `perftest_results` table.
    Perftest => FormatInfo {
        reader: Reader::Lines(|| Box::new(perftest::PerftestReader::new())),
        name: "perftest",
        aliases: &[],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "perftest `ib_{write,read,send,atomic}_{bw,lat}` client/server output; emits `perftest_results`",
        detection: "a ` #bytes #iterations ...` results header or a `... BW Test`/`... Latency Test` banner",
        timestamps: "timestamp line before each run; else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(perftest::looks_like),
    },
    /// `perf stat` (CSV `-x,` or table, totals or `-I` intervals) for `cxl_pmu_mem*` events.
    PerfStatCxl => FormatInfo {
        reader: Reader::Lines(|| Box::new(perf_stat::PerfStatReader::new())),
        name: "perf-stat-cxl",
        aliases: &["perf-stat"],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "`perf stat [-x,] [-I ms] -e cxl_pmu_mem<X>.<Y>/<event>/` (CXL PMU)",
        detection: "a line naming a `cxl_pmu_<pmu>/<event>/` event",
        timestamps: "`# started on` + interval stamps (local time read as UTC); else timestamp line, file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(perf_stat::looks_like),
    },
    // --- physical layer ---
    /// `mlxlink` (NVIDIA MFT / mstflint) text: operational, BER/FEC counters, module (DDM) info.
    Mlxlink => FormatInfo {
        reader: Reader::Lines(|| Box::new(mlxlink::MlxlinkReader::new())),
        name: "mlxlink",
        aliases: &["mstlink"],
        appendable: false,
        emits_links: false,
        about_its_host: true,
        produced_by: "`mlxlink -d <dev> [-p <port>] [-c|--show_counters] [-m] [-e]` (NVIDIA MFT, mstflint `mstlink`): BER, FEC, link counters, module temperature/voltage/optical power and their alarm thresholds",
        detection: "two section titles mlxlink prints (`Operational Info`, `Physical Counters and BER Info`, `Module Info`, ...) each over a line of dashes",
        timestamps: "timestamp line before each run; else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(mlxlink::looks_like_text),
    },
    /// `mlxlink --json`: the same sections under `result.output`.
    MlxlinkJson => FormatInfo {
        reader: Reader::Binary(|| Box::new(mlxlink::MlxlinkJsonReader)),
        name: "mlxlink-json",
        aliases: &[],
        appendable: false,
        emits_links: false,
        about_its_host: true,
        produced_by: "`mlxlink -d <dev> ... --json` (NVIDIA MFT, mstflint)",
        detection: "a JSON document with `\"result\"`, `\"output\"` and a mlxlink section title (`\"Operational Info\"`, `\"Physical Counters and BER Info\"`, `\"Module Info\"`)",
        timestamps: "none in the document: file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(|t| json_head(t).is_some_and(mlxlink::looks_like_json)),
    },
    // --- Port-state tools run on a host, and DCGM's command-line monitor ---
    /// `ibstat` output (infiniband-diags): each CA and its ports' state, rate, LIDs, GUIDs.
    Ibstat => FormatInfo {
        reader: Reader::Lines(|| Box::new(ibstat::IbstatReader::new())),
        name: "ibstat",
        aliases: &[],
        appendable: false,
        emits_links: false,
        about_its_host: true,
        produced_by: "`ibstat [<ca> [<port>]]` (rdma-core infiniband-diags)",
        detection: "a `CA '<name>'` (or `CA: '<name>'`) header followed by `CA type:`, `Number of ports:` or `Port <n>:`",
        timestamps: "timestamp line; else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(ibstat::looks_like),
    },
    /// `ibstatus` output (infiniband-diags script): each port's sysfs state, rate, link layer.
    Ibstatus => FormatInfo {
        reader: Reader::Lines(|| Box::new(ibstatus::IbstatusReader::new())),
        name: "ibstatus",
        aliases: &[],
        appendable: false,
        emits_links: false,
        about_its_host: true,
        produced_by: "`ibstatus [<dev>[:<port>]]` (rdma-core infiniband-diags script)",
        detection: "an `Infiniband device '<dev>' port <n> status:` header followed by one of its keys",
        timestamps: "timestamp line; else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(ibstatus::looks_like),
    },
    /// `ibv_devinfo [-v]` output (libibverbs): devices, port state, width, speed, link layer.
    IbvDevinfo => FormatInfo {
        reader: Reader::Lines(|| Box::new(ibv_devinfo::IbvDevinfoReader::new())),
        name: "ibv-devinfo",
        aliases: &["ibv_devinfo", "devinfo"],
        appendable: false,
        emits_links: false,
        about_its_host: true,
        produced_by: "`ibv_devinfo [-v] [-d <dev>]` (rdma-core libibverbs)",
        detection: "an `hca_id: <dev>` line followed by `transport:`, `fw_ver:` or `node_guid:`",
        timestamps: "timestamp line; else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(ibv_devinfo::looks_like),
    },
    /// `dcgmi dmon -e <fields>` output (NVIDIA DCGM): per-GPU field values per sample.
    DcgmiDmon => FormatInfo {
        reader: Reader::Lines(|| Box::new(dcgmi_dmon::DcgmiDmonReader::new())),
        name: "dcgmi-dmon",
        aliases: &["dcgmi"],
        // Read whole when it changes: a tail lacks the `#Entity` header that places its columns and
        // the start its samples are dated from (each sample is `-d` after the previous one).
        appendable: false,
        emits_links: false,
        about_its_host: true,
        produced_by: "`dcgmi dmon -e <field ids> [-d ms] [-c n]` (NVIDIA DCGM)",
        detection: "a `#Entity` header line naming DCGM field short names, with its `ID` units line",
        timestamps: "timestamp line before a sample; else file name, argument, mtime (samples spaced by `-d`)",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(dcgmi_dmon::looks_like),
    },
    // --- lossless configuration and switch-side PFC ---
    /// `mlnx_qos -i <if>` (mlnx-tools): a RoCE NIC's trust mode, PFC priorities, DSCP map, buffers.
    MlnxQos => FormatInfo {
        reader: Reader::Lines(|| Box::new(mlnx_qos::MlnxQosReader::new())),
        name: "mlnx-qos",
        aliases: &["mlnx_qos"],
        appendable: false,
        emits_links: false,
        about_its_host: true,
        produced_by: "`mlnx_qos -i <if>` (Mellanox/NVIDIA mlnx-tools, MLNX_OFED/DOCA): trust state, PFC per priority, dscp2prio, receive buffers, traffic classes; interface attributes only",
        detection: "a `PFC configuration:` line with `DCBX mode:`, `Priority trust state:`, `dscp2prio mapping:` or `Receive buffer size (bytes):`",
        timestamps: "timestamp line; else file name, argument, mtime",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(mlnx_qos::looks_like),
    },
    /// SONiC `show pfc counters`, `show pfcwd stats`, `show queue counters` on a switch.
    SonicPfc => FormatInfo {
        reader: Reader::Lines(|| Box::new(sonic_pfc::SonicPfcReader::new())),
        name: "sonic-pfc",
        aliases: &["show-pfc-counters", "pfcstat", "pfcwd-stats", "show-queue-counters", "queuestat"],
        appendable: false,
        emits_links: false,
        about_its_host: false,
        produced_by: "SONiC `show pfc counters [--history]` (pfcstat), `show pfcwd stats`, `show queue counters` (queuestat) on a switch: PFC frames, watchdog storms and drops, egress queue drops per port and priority",
        detection: "a `Port Rx|Tx PFC0 ... PFC7`, `QUEUE STATUS STORM DETECTED/RESTORED ...`, `Port TxQ Counter/pkts ...` or `Port Priority RX Pause Transitions ...` header",
        timestamps: "timestamp line before each table; else file name, argument, mtime; switch from `# host:`, the echoed prompt, argument or file name",
        time_resolution: TimeResolution::PerInput,
        signature: Signature::Text(sonic_pfc::looks_like),
    },
}

impl Format {
    /// Name used by `format=`.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// This format's entry in [`FORMATS`].
    pub fn info(self) -> &'static FormatInfo {
        // Every variant is registered once in FORMATS (the `every_format_is_registered` test).
        FORMATS.iter().find(|f| f.format == self).unwrap_or(&FORMATS[0])
    }

    /// Parse a `format=` name (case-insensitive; `auto` is handled by the caller).
    pub fn from_name(name: &str) -> Option<Format> {
        let lower = name.to_ascii_lowercase();
        FORMATS.iter().find(|f| f.name == lower || f.aliases.contains(&lower.as_str())).map(|f| f.format)
    }

    /// A fresh binary reader for this format (`None` for text and directory formats).
    pub fn binary_reader(self) -> Option<Box<dyn BinaryReader>> {
        match self.info().reader {
            Reader::Binary(new) => Some(new()),
            Reader::Lines(_) | Reader::Tree => None,
        }
    }

    /// A fresh line reader for this format (`None` for directory and binary formats).
    pub fn line_reader(self) -> Option<Box<dyn LineReader>> {
        match self.info().reader {
            Reader::Lines(new) => Some(new()),
            Reader::Binary(_) | Reader::Tree => None,
        }
    }
}

/// A reader of a binary stream (packet captures). The driver has already read the first bytes
/// (`head`, at least 64 KiB unless the input is shorter) to detect the format; `rest` yields the
/// remainder of the decompressed stream. Returns the number of bytes consumed.
pub trait BinaryReader: Send {
    /// Read the whole input.
    fn read(&mut self, head: &[u8], rest: &mut dyn std::io::Read, ctx: &mut ReadContext<'_>) -> Result<u64>;
}

/// Read a whole JSON-like input (`head` plus the rest of the stream) into memory, refusing more
/// than `Limits::max_document_bytes` with a [`crate::error::Error::LimitExceeded`] naming `what`
/// and that option (one override for every whole-document reader).
pub fn read_bounded(
    head: &[u8],
    rest: &mut dyn std::io::Read,
    ctx: &ReadContext<'_>,
    what: &'static str,
) -> Result<Vec<u8>> {
    use std::io::Read as _;
    let limit = ctx.options().limits.max_document_bytes;
    let mut buf = head.to_vec();
    let io = |source| crate::error::Error::Io { path: ctx.path.to_path_buf(), source };
    let more = limit.saturating_sub(buf.len() as u64) + 1;
    rest.take(more).read_to_end(&mut buf).map_err(io)?;
    if buf.len() as u64 > limit {
        return Err(crate::error::Error::LimitExceeded {
            path: ctx.path.to_path_buf(),
            position: Position { line: None, byte_offset: limit },
            what,
            limit,
            option: "max_document_bytes",
        });
    }
    Ok(buf)
}

/// A reader of line-oriented text.
pub trait LineReader: Send {
    /// Consume a chunk of complete lines. `chunk` ends with `\n` except possibly the last chunk of
    /// the input; `start` is the position of `chunk[0]` (line numbers are 1-based). Implementations
    /// strip a trailing `\r` from each line.
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()>;
    /// Called once after the last chunk (flush pending state, check a missing `# EOF`, ...).
    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()>;
    /// Called after [`Self::finish`] when another input of the same format and options may
    /// follow: make ready to read it as a new reader would, keeping what serves it (caches), and
    /// say whether anything is worth keeping (false: the reader is dropped).
    fn carry_over(&mut self, _ctx: &mut ReadContext<'_>) -> bool {
        false
    }
}

/// Hand every line of a chunk to `line` (a reader's per-line method), stopping early when the
/// read was cancelled (the consumer went away or another input failed in strict mode).
pub fn feed_lines(
    chunk: &[u8],
    start: Position,
    ctx: &mut ReadContext<'_>,
    mut line: impl FnMut(&[u8], Position, &mut ReadContext<'_>) -> Result<()>,
) -> Result<()> {
    for (raw, pos) in lines(chunk, start) {
        if ctx.cancelled() {
            break;
        }
        line(raw, pos, ctx)?;
    }
    Ok(())
}

/// Iterate the lines of a chunk with their positions. Yields the line without `\n` or `\r\n`.
pub fn lines(chunk: &[u8], start: Position) -> impl Iterator<Item = (&[u8], Position)> {
    let mut offset = 0usize;
    let mut line_no = start.line.unwrap_or(1);
    std::iter::from_fn(move || {
        if offset >= chunk.len() {
            return None;
        }
        let rest = &chunk[offset..];
        let (line, advance) = match memchr::memchr(b'\n', rest) {
            Some(i) => (&rest[..i], i + 1),
            None => (rest, rest.len()),
        };
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let pos = Position { line: Some(line_no), byte_offset: start.byte_offset + offset as u64 };
        offset += advance;
        line_no += 1;
        Some((line, pos))
    })
}

/// A directive line that text readers without their own metadata understand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// A timestamp line (see [`crate::timestamp::parse_timestamp_line`]) with the resolution it
    /// is written to.
    Time(Stamp),
    /// `# host: NAME`, `# hostname: NAME`, `host=NAME`.
    Host(String),
    /// A command echo naming the interface: `# ethtool -S eth0`, `$ ethtool -S eth0`.
    Device(String),
}

/// The time and host an input's own directive lines set (a `date +%s` line, `# host: NAME`), with
/// the driver's fallbacks when they set none. Shared by the text readers whose records carry no
/// time or host of their own, so they all resolve them the same way.
#[derive(Debug, Default, Clone)]
pub struct DirectiveState {
    time: Option<Stamp>,
    host: Option<String>,
    /// Host from the arguments or `unknown`, computed on first use (it may warn).
    fallback_host: Option<String>,
}

impl DirectiveState {
    /// A timestamp line: it dates every following record until the next one.
    pub fn set_time(&mut self, time: Stamp) {
        self.time = Some(time);
    }

    /// A `# host: NAME` line: it names the host of every following record.
    pub fn set_host(&mut self, host: String) {
        self.host = Some(host);
    }

    /// Apply a line if it is a time or host directive (a device directive is ignored). Returns
    /// whether it was a directive. For readers whose other lines never look like directives.
    pub fn apply_line(&mut self, line: &str) -> bool {
        match parse_directive(line) {
            Some(Directive::Time(t)) => self.set_time(t),
            Some(Directive::Host(h)) => self.set_host(h),
            Some(Directive::Device(_)) => {}
            None => return false,
        }
        true
    }

    /// The time the last timestamp line set, if any.
    pub fn explicit_time(&self) -> Option<Stamp> {
        self.time
    }

    /// The time of the current record: the last timestamp line, else the driver's fallback (file
    /// name, argument, mtime).
    pub fn time_ns(&self, ctx: &mut ReadContext<'_>) -> Result<i64> {
        match self.time {
            Some(t) => Ok(ctx.stated_time(t)),
            None => ctx.fallback_time_ns(),
        }
    }

    /// The host of the current record: the last host line, else the driver's fallback.
    pub fn host(&mut self, ctx: &mut ReadContext<'_>) -> String {
        match &self.host {
            Some(h) => h.clone(),
            None => self.fallback_host.get_or_insert_with(|| ctx.fallback_host()).clone(),
        }
    }
}

/// Recognise a directive line. Returns `None` for anything else.
pub fn parse_directive(line: &str) -> Option<Directive> {
    let t = line.trim();
    if t.is_empty() {
        return None;
    }
    let body = t.trim_start_matches(['#', '$', '>']).trim_start();
    for key in ["hostname:", "hostname=", "host:", "host=", "node:", "node="] {
        if body.len() > key.len() && body.get(..key.len()).is_some_and(|p| p.eq_ignore_ascii_case(key)) {
            let name = body[key.len()..].trim();
            if !name.is_empty() && !name.contains(char::is_whitespace) {
                return Some(Directive::Host(name.to_owned()));
            }
        }
    }
    let words: Vec<&str> = body.split_whitespace().collect();
    if let Some(i) = words.iter().position(|w| *w == "ethtool" || w.ends_with("/ethtool"))
        && let Some(rest) = words.get(i + 1..)
        && let Some(flag) = rest.iter().position(|w| *w == "-S" || *w == "--statistics")
        && let Some(dev) = rest.get(flag + 1)
    {
        return Some(Directive::Device((*dev).to_owned()));
    }
    crate::timestamp::parse_stamp_line(t).map(Directive::Time)
}

/// Detect the format of a file from its first bytes (already decompressed). `name` is the file
/// name, used only as a tie-breaker.
pub fn detect(head: &[u8], name: &str) -> Option<Format> {
    let text = String::from_utf8_lossy(head);
    // Formats with a signature of their own: binary magic numbers, then text only one tool
    // prints (strict, so a `Link 0: 25 GB/s` or a perftest banner's `key : value` cannot misfire).
    for f in FORMATS {
        let own = match f.signature {
            Signature::Shared => false,
            Signature::Bytes(magic) => magic(head),
            Signature::Text(sig) => sig(&text),
        };
        if own {
            return Some(f.format);
        }
    }
    // InfiniBand diagnostic outputs have distinctive shapes; checked first because a few of their
    // lines (`CA   134  1 0x...`) would otherwise score as Prometheus samples.
    if let Some(f) = ib::detect(&text) {
        return Some(f);
    }
    if looks_like_headerless_ethtool(&text) {
        return Some(Format::Ethtool);
    }
    let mut prom_score = 0u32;
    let mut prom_meta = false;
    let mut openmetrics = false;
    let mut sysfs_grep = 0u32;
    // Lines that are neither comments nor samples: prose (a README, a SOURCES.md) may contain a
    // line or two shaped like `name 1.5`, but an exposition without HELP/TYPE is mostly samples.
    let mut other = 0u32;
    for raw in text.lines().take(200) {
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        if trimmed == "NIC statistics:" {
            return Some(Format::Ethtool);
        }
        if line.starts_with("# HELP ") || line.starts_with("# TYPE ") {
            prom_score += 2;
            prom_meta = true;
        } else if line.starts_with("# UNIT ") || line == "# EOF" {
            openmetrics = true;
            prom_meta = true;
            prom_score += 2;
        } else if looks_like_sysfs_grep(line) {
            sysfs_grep += 1;
        } else if looks_like_prom_sample(line) {
            prom_score += 1;
        } else if !trimmed.is_empty() && !trimmed.starts_with('#') {
            other += 1;
        }
    }
    if sysfs_grep > 0 && sysfs_grep >= prom_score {
        return Some(Format::SysfsGrep);
    }
    if prom_score > 0 && (prom_meta || prom_score >= other) {
        return Some(if openmetrics { Format::OpenMetrics } else { Format::Prometheus });
    }
    let lower = name.to_ascii_lowercase();
    if lower.contains("ethtool") && text.contains(": ") {
        return Some(Format::Ethtool);
    }
    None
}

/// `ethtool -S` stat lines without their `NIC statistics:` header (`tail -n +2`, `grep`, tools
/// that print the same lines): every line that is not blank, a comment, a timestamp or a command
/// echo is `<name>: <integer>`, and there is at least one.
fn looks_like_headerless_ethtool(text: &str) -> bool {
    let mut stats = 0u32;
    for raw in text.lines().take(200) {
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') || parse_directive(t).is_some() {
            continue;
        }
        if !is_ethtool_stat(t) {
            return false;
        }
        stats += 1;
    }
    stats > 0
}

/// `<name>: <integer>` as ethtool prints a stat (name split on the last `": "`).
fn is_ethtool_stat(t: &str) -> bool {
    let Some((name, value)) = t.rsplit_once(": ") else { return false };
    let name = name.trim();
    !name.is_empty()
        && !name.contains(": ")
        && name.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && !value.is_empty()
        && value.bytes().all(|b| b.is_ascii_digit())
}

fn looks_like_sysfs_grep(line: &str) -> bool {
    (line.starts_with("/sys/") || line.contains("/ports/") || line.contains("/class/net/"))
        && line.rsplit_once(':').is_some_and(|(p, _)| !p.contains(' '))
}

fn looks_like_prom_sample(line: &str) -> bool {
    let b = line.as_bytes();
    let Some(&first) = b.first() else { return false };
    if !(first.is_ascii_alphabetic() || first == b'_' || first == b':') {
        return false;
    }
    let name_end = b.iter().position(|c| !(c.is_ascii_alphanumeric() || *c == b'_' || *c == b':')).unwrap_or(b.len());
    let rest = match b.get(name_end) {
        Some(b'{') => match line[name_end..].rfind('}') {
            Some(close) => &line[name_end + close + 1..],
            None => return false,
        },
        Some(b' ' | b'\t') => &line[name_end..],
        _ => return false,
    };
    // `rx_packets: 1260062` (a name ending in `:` before a bare value) is ethtool, never a sample.
    if line.as_bytes().get(name_end.wrapping_sub(1)) == Some(&b':') && b.get(name_end) != Some(&b'{') {
        return false;
    }
    // The value token must be a number: `pub fn main() {` is not a sample.
    rest.split_whitespace()
        .next()
        .is_some_and(|v| v.parse::<f64>().is_ok() || matches!(v, "NaN" | "+Inf" | "-Inf" | "Inf"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_is_registered_once_with_unique_names() {
        let mut names = std::collections::HashSet::new();
        for f in FORMATS {
            assert!(std::ptr::eq(f.format.info(), f), "{} registered twice", f.name);
            assert_eq!(Format::from_name(f.name), Some(f.format));
            assert!(names.insert(f.name), "{} used twice", f.name);
            for alias in f.aliases {
                assert_eq!(Format::from_name(alias), Some(f.format));
                assert!(names.insert(alias), "{alias} used twice");
            }
        }
        assert_eq!(Format::from_name("LLDP"), Some(Format::LldpctlKeyvalue));
        assert_eq!(Format::from_name("no-such-format"), None);
    }

    #[test]
    fn detects_formats_from_content() {
        assert_eq!(detect(b"# HELP x y\n# TYPE x counter\nx 1\n", "a.txt"), Some(Format::Prometheus));
        assert_eq!(detect(b"# TYPE x counter\nx_total 1\n# EOF\n", "a"), Some(Format::OpenMetrics));
        assert_eq!(detect(b"node_ethtool_x{device=\"eth0\"} 1\n", "a"), Some(Format::Prometheus));
        assert_eq!(detect(b"1764686822\nNIC statistics:\n     rx_packets: 1\n", "x"), Some(Format::Ethtool));
        assert_eq!(
            detect(b"/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data:123\n", "x"),
            Some(Format::SysfsGrep)
        );
        assert_eq!(detect(b"\x00\x01\x02garbage", "x"), None);
        assert_eq!(detect(b"", "x"), None);
        assert_eq!(detect(b"pub fn main() {\n    let x = 1;\n}\n", "main.rs"), None);
        assert_eq!(detect(b"up 1\n", "x"), Some(Format::Prometheus));
        // ethtool -S without its header, indented or not, with a timestamp line
        assert_eq!(detect(b"     rx_packets: 1260062\n     port.rx_dropped: 12028\n", "x"), Some(Format::Ethtool));
        assert_eq!(detect(b"1764686822\nrx_packets: 1\nrx_prio3_pause: 0\n", "x"), Some(Format::Ethtool));
        assert_eq!(detect(b"rx_packets: 1\nnode_load1 0.5\nup 1\n", "x"), Some(Format::Prometheus));
        assert!(!looks_like_prom_sample("rx_packets: 1260062"));
        assert!(looks_like_prom_sample("a:b 1"));
        // a YAML-like line with a non-integer value is not a stat
        assert_eq!(detect(b"name: eth0\nrx_packets: 1\n", "x"), None);
        // prose with one sample-shaped line is not an exposition (tests/fixtures/captures/SOURCES.md)
        let prose =
            b"# Sample captures\n\nCopied verbatim from the reference.\nTotal 1.1 MB\nNo real capture was found.\n";
        assert_eq!(detect(prose, "SOURCES.md"), None);
        // but a scrape whose samples outnumber stray lines still is
        assert_eq!(detect(b"1764686822\nup 1\nnode_load1 0.5\n", "x"), Some(Format::Prometheus));
    }

    #[test]
    fn detects_infiniband_formats_without_misfiring() {
        let pq = b"# Port extended counters: Lid 1719 port 1 (CapMask: 0x5300 CapMask2: 0x0000002)\nPortSelect:......................1\n";
        assert_eq!(detect(pq, "x"), Some(Format::Perfquery));
        assert_eq!(
            detect(b"PortSelect:......................1\nPortXmitData:....................5\n", "x"),
            Some(Format::Perfquery)
        );
        assert_eq!(detect(b"Errors for 0x2c903006e29b0 \"sw\"\n", "x"), Some(Format::Ibqueryerrors));
        assert_eq!(detect(b"Switch: 0x506b4b0300820910 sw:\n    2   17[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>  4 1[ ] \"h\" ( )\n", "x"), Some(Format::Iblinkinfo));
        assert_eq!(detect(b"SW  2052 37 0x506b4b03005c2740 4x ???   'ib-i4l1s01'\n", "x"), Some(Format::Ibnetdiscover));
        assert_eq!(detect(b"START_NODES\nNodeDesc,NodeGUID\n", "x"), Some(Format::IbdiagnetDbCsv));
        assert_eq!(detect(b"timestamp,source_id,tag,Node_GUID,port_guid,Port_Number,X\n", "x"), Some(Format::UfmCsv));
        assert_eq!(detect(b"{\"values\": [{\"node_guid\": \"0x1\", \"port_num\": 1}]}", "x"), Some(Format::UfmJson));
        assert_eq!(
            detect(b"infiniband,device=mlx5_0,host=h,port=1 port_xmit_data=1i 1737652060000000000\n", "x"),
            Some(Format::Telegraf)
        );
        // existing formats keep their detection
        assert_eq!(detect(b"# HELP x y\n# TYPE x counter\nx{a=\"b\",c=\"d\"} 1\n", "a"), Some(Format::Prometheus));
        assert_eq!(detect(b"NIC statistics:\n     rx_packets: 1\n", "x"), Some(Format::Ethtool));
        assert_eq!(
            detect(b"/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data:1\n", "x"),
            Some(Format::SysfsGrep)
        );
        assert_eq!(detect(b"{\"a\": 1}", "x"), None);
        // InfiniBand diagnostic sources: net_dump and ibswinfo
        assert_eq!(
            detect(b"\"MF0;sw:MQM8700/U1\", Mellanox, 0xb8cef603001bf9de, LID 1\nIB# : Sta : LWA\n", "x"),
            Some(Format::IbdiagnetNetDump)
        );
        assert_eq!(
            detect(b"=====\nQuantum Mellanox Technologies\n=====\npart number        | MQM8790-HS2F\n", "x"),
            Some(Format::Ibswinfo)
        );
        assert_eq!(detect(b"uptime (sec)       : 16982312\ncur.temp (C)       : 73\n", "x"), Some(Format::Ibswinfo));
        assert_eq!(detect(b"NIC statistics:\n     temperature (C): 1\n", "x"), Some(Format::Ethtool));
    }

    #[test]
    fn directives() {
        assert_eq!(parse_directive("# ethtool -S eth2"), Some(Directive::Device("eth2".into())));
        assert_eq!(parse_directive("$ sudo ethtool -S ens1f0np0"), Some(Directive::Device("ens1f0np0".into())));
        assert_eq!(parse_directive("# host: gpu017"), Some(Directive::Host("gpu017".into())));
        assert_eq!(
            parse_directive("1764686822"),
            Some(Directive::Time(Stamp { ns: 1_764_686_822_000_000_000, resolution_ns: 1_000_000_000 }))
        );
        assert_eq!(parse_directive("     rx_packets: 5"), None);
    }

    #[test]
    fn lines_carry_positions_and_strip_crlf() {
        let got: Vec<_> = lines(b"a\r\nbb\nccc", Position { line: Some(10), byte_offset: 100 }).collect();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], (&b"a"[..], Position { line: Some(10), byte_offset: 100 }));
        assert_eq!(got[1], (&b"bb"[..], Position { line: Some(11), byte_offset: 103 }));
        assert_eq!(got[2], (&b"ccc"[..], Position { line: Some(12), byte_offset: 106 }));
    }
}
