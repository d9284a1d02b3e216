//! The `links` table: which port is cabled to which, from `ibnetdiscover` (topology file or `-p`),
//! `iblinkinfo`, `ibdiagnet2.db_csv` LINKS or `ibdiagnet2.net_dump` (`docs/schema.md`, section "links", is the prose version).
//!
//! | column | Arrow type | notes |
//! |---|---|---|
//! | `node_guid`, `peer_node_guid` | utf8, nullable | `0x` + 16 lowercase hex digits; null on Ethernet (LLDP) ends |
//! | `port`, `peer_port` | uint16, nullable | port numbers; null on Ethernet ends, which have a `port_name` |
//! | `node_name`, `peer_node_name` | utf8, nullable | node description |
//! | `node_type`, `peer_node_type` | utf8 | `switch`, `hca`, `router`, `unknown` |
//! | `lid`, `peer_lid` | uint32, nullable | LID (base LID of the port) |
//! | `tier`, `peer_tier` | utf8, nullable | `hca`, `leaf`, `spine`, `router` |
//! | `width` | utf8, nullable | active width, `4x` |
//! | `speed` | utf8, nullable | active speed name, `EDR`, `HDR`, `NDR`, `FDR10` ... |
//! | `lane_gbps` | float64, nullable | per-lane signalling rate (`iblinkinfo`'s number) |
//! | `data_rate_gbps` | float64, nullable | width x effective per-lane data rate |
//! | `supported_width`, `supported_speed` | utf8, nullable | what the link could run at ("Could be", `LinkWidthSup`) |
//! | `port_name`, `peer_port_name` | utf8, nullable | Ethernet interface names (`eth0`, `Ethernet8`, `swp3`) from LLDP |
//! | `source` | utf8 | reader name |
//!
//! An Ethernet end (from `lldpctl`) has no GUID: its node is known by `node_name` (a host's
//! `<host> <netdev>` in rdma-ndd's `%h %d` shape, a switch's LLDP system name) and its port by
//! `port_name`. Version 2 made the GUID and port columns nullable and added the port names.
//!
//! One row per physical link: both directions of `ibnetdiscover` merge into one. The end with the
//! lower tier comes first (hca, leaf, spine, router), so an HCA link always starts at the HCA.
//! Tiers are computed once a whole input is read: a switch is a **leaf** when it is cabled to an
//! HCA, else a **spine**. SHARP aggregation nodes (CAs named `Mellanox Technologies Aggregation
//! Node`) live inside switches and do not make a switch a leaf.

use std::sync::Arc;

use ahash::{AHashMap, AHashSet};
use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray, UInt16Array, UInt32Array};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};

use crate::formats::ib;

/// Version of the links schema. Bump on any incompatible change.
pub const LINKS_SCHEMA_VERSION: u32 = 2;

/// Schema of the links table.
pub fn links_schema() -> SchemaRef {
    let utf8 = |n: &str, null: bool| Field::new(n, DataType::Utf8, null);
    let meta = [(crate::schema::SCHEMA_VERSION_KEY.to_owned(), LINKS_SCHEMA_VERSION.to_string())].into_iter().collect();
    Arc::new(Schema::new_with_metadata(
        vec![
            utf8("node_guid", true),
            Field::new("port", DataType::UInt16, true),
            utf8("node_name", true),
            utf8("node_type", false),
            Field::new("lid", DataType::UInt32, true),
            utf8("tier", true),
            utf8("peer_node_guid", true),
            Field::new("peer_port", DataType::UInt16, true),
            utf8("peer_node_name", true),
            utf8("peer_node_type", false),
            Field::new("peer_lid", DataType::UInt32, true),
            utf8("peer_tier", true),
            utf8("width", true),
            utf8("speed", true),
            Field::new("lane_gbps", DataType::Float64, true),
            Field::new("data_rate_gbps", DataType::Float64, true),
            utf8("supported_width", true),
            utf8("supported_speed", true),
            utf8("source", false),
            utf8("port_name", true),
            utf8("peer_port_name", true),
        ],
        meta,
    ))
}

/// Kind of an IB node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum NodeType {
    /// A switch (`SW`, NodeType 2).
    Switch,
    /// A channel adapter (`CA`, NodeType 1).
    Hca,
    /// A router (`RT`, NodeType 3).
    Router,
    /// Not stated by the input.
    #[default]
    Unknown,
}

impl NodeType {
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeType::Switch => "switch",
            NodeType::Hca => "hca",
            NodeType::Router => "router",
            NodeType::Unknown => "unknown",
        }
    }

    /// From the tools' abbreviations (`SW`, `CA`, `RT`, `Switch`) or IBA NodeType numbers.
    pub fn parse(s: &str) -> NodeType {
        match s.trim().to_ascii_lowercase().as_str() {
            "sw" | "switch" | "2" => NodeType::Switch,
            "ca" | "hca" | "1" => NodeType::Hca,
            "rt" | "router" | "3" => NodeType::Router,
            _ => NodeType::Unknown,
        }
    }
}

/// One end of a link.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct End {
    /// Normalised node GUID.
    pub guid: String,
    /// Port number.
    pub port: u16,
    /// Node description.
    pub name: Option<String>,
    /// Node kind.
    pub node_type: NodeType,
    /// LID.
    pub lid: Option<u32>,
    /// Ethernet interface name (LLDP ends, which have no GUID and no port number).
    pub port_name: Option<String>,
}

impl End {
    /// The node's identity: its GUID, else (an Ethernet end) its name.
    pub fn node_id(&self) -> &str {
        if self.guid.is_empty() { self.name.as_deref().unwrap_or("") } else { &self.guid }
    }

    /// The port's identity within its node: the number, or the interface name of an Ethernet end.
    fn port_key(&self) -> (u16, String) {
        (self.port, self.port_name.clone().unwrap_or_default())
    }
}

/// One link as a reader saw it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Link {
    /// One end.
    pub a: End,
    /// The other end.
    pub b: End,
    /// Active width, normalised (`4x`).
    pub width: Option<String>,
    /// Active speed name (`EDR`).
    pub speed: Option<String>,
    /// Supported width, when the input says.
    pub supported_width: Option<String>,
    /// Supported speed, when the input says.
    pub supported_speed: Option<String>,
}

/// A finished row: first end, second end, and the link's facts.
type Row<'a> = (&'a End, &'a End, &'a Link);

/// A link's key: both ends' (node identity, port number, port name), the smaller first.
type EndKey = ((String, u16, String), (String, u16, String));

/// Collects the links of one input, merging duplicates (both directions).
#[derive(Debug, Default)]
pub struct LinkSet {
    links: Vec<Link>,
    index: AHashMap<EndKey, usize>,
}

fn fill<T: Clone>(dst: &mut Option<T>, src: Option<&T>) {
    if dst.is_none() {
        *dst = src.cloned();
    }
}

fn merge_end(dst: &mut End, src: &End) {
    fill(&mut dst.name, src.name.as_ref());
    fill(&mut dst.lid, src.lid.as_ref());
    if dst.node_type == NodeType::Unknown {
        dst.node_type = src.node_type;
    }
}

impl LinkSet {
    /// An empty set.
    pub fn new() -> Self {
        LinkSet::default()
    }

    /// Number of distinct links.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// True when no link was added.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// Add a link; a link already seen (in either direction) is merged, filling missing facts.
    pub fn add(&mut self, link: Link) {
        let end_key = |e: &End| {
            let (p, n) = e.port_key();
            (e.node_id().to_owned(), p, n)
        };
        let (ka, kb) = (end_key(&link.a), end_key(&link.b));
        let key = if ka <= kb { (ka, kb) } else { (kb, ka) };
        if let Some(&i) = self.index.get(&key)
            && let Some(old) = self.links.get_mut(i)
        {
            let (sa, sb) = if old.a.node_id() == link.a.node_id() && old.a.port_key() == link.a.port_key() {
                (&link.a, &link.b)
            } else {
                (&link.b, &link.a)
            };
            merge_end(&mut old.a, sa);
            merge_end(&mut old.b, sb);
            fill(&mut old.width, link.width.as_ref());
            fill(&mut old.speed, link.speed.as_ref());
            fill(&mut old.supported_width, link.supported_width.as_ref());
            fill(&mut old.supported_speed, link.supported_speed.as_ref());
            return;
        }
        self.index.insert(key, self.links.len());
        self.links.push(link);
    }

    /// The finished table (tiers computed, ends oriented, rows sorted by first end), or `None`
    /// when no link was seen.
    pub fn batch(&self, source: &str) -> Result<Option<RecordBatch>, ArrowError> {
        if self.links.is_empty() {
            return Ok(None);
        }
        // Facts about a node from any link it appears on.
        let mut names: AHashMap<&str, &str> = AHashMap::new();
        let mut types: AHashMap<&str, NodeType> = AHashMap::new();
        for l in &self.links {
            for e in [&l.a, &l.b] {
                if let Some(n) = &e.name {
                    names.entry(e.node_id()).or_insert(n.as_str());
                }
                if e.node_type != NodeType::Unknown {
                    types.entry(e.node_id()).or_insert(e.node_type);
                }
            }
        }
        let is_aggregation =
            |guid: &str| names.get(guid).is_some_and(|n| n.to_ascii_lowercase().contains("aggregation node"));
        let ty = |e: &End| types.get(e.node_id()).copied().unwrap_or(e.node_type);
        let mut leaves: AHashSet<&str> = AHashSet::new();
        for l in &self.links {
            for (sw, other) in [(&l.a, &l.b), (&l.b, &l.a)] {
                if ty(sw) == NodeType::Switch && ty(other) == NodeType::Hca && !is_aggregation(other.node_id()) {
                    leaves.insert(sw.node_id());
                }
            }
        }
        let tier = |e: &End| -> Option<&'static str> {
            match ty(e) {
                NodeType::Hca => Some("hca"),
                NodeType::Router => Some("router"),
                NodeType::Switch if leaves.contains(e.node_id()) => Some("leaf"),
                NodeType::Switch => Some("spine"),
                NodeType::Unknown => None,
            }
        };
        let rank = |t: Option<&str>| match t {
            Some("hca") => 0,
            Some("leaf") => 1,
            Some("spine") => 2,
            Some("router") => 3,
            _ => 4,
        };
        let mut rows: Vec<Row<'_>> = self
            .links
            .iter()
            .map(|l| {
                let (ra, rb) = (rank(tier(&l.a)), rank(tier(&l.b)));
                if rb < ra || (rb == ra && (l.b.node_id(), l.b.port_key()) < (l.a.node_id(), l.a.port_key())) {
                    (&l.b, &l.a, l)
                } else {
                    (&l.a, &l.b, l)
                }
            })
            .collect();
        rows.sort_by(|x, y| (x.0.node_id(), x.0.port_key()).cmp(&(y.0.node_id(), y.0.port_key())));

        let name_of = |e: &End| e.name.clone().or_else(|| names.get(e.node_id()).map(|s| (*s).to_owned()));
        let guid_of = |e: &End| (!e.guid.is_empty()).then(|| e.guid.clone());
        // an Ethernet end is named, not numbered
        let port_of = |e: &End| if e.port_name.is_some() && e.port == 0 { None } else { Some(e.port) };
        let strings = |f: &dyn Fn(&Row<'_>) -> Option<String>| -> ArrayRef {
            Arc::new(rows.iter().map(f).collect::<StringArray>())
        };
        let lanes = |l: &Link| l.width.as_deref().and_then(ib::width).map(|(_, n)| f64::from(n));
        let columns: Vec<ArrayRef> = vec![
            strings(&|r| guid_of(r.0)),
            Arc::new(rows.iter().map(|r| port_of(r.0)).collect::<UInt16Array>()),
            strings(&|r| name_of(r.0)),
            strings(&|r| Some(ty(r.0).as_str().to_owned())),
            Arc::new(rows.iter().map(|r| r.0.lid).collect::<UInt32Array>()),
            strings(&|r| tier(r.0).map(str::to_owned)),
            strings(&|r| guid_of(r.1)),
            Arc::new(rows.iter().map(|r| port_of(r.1)).collect::<UInt16Array>()),
            strings(&|r| name_of(r.1)),
            strings(&|r| Some(ty(r.1).as_str().to_owned())),
            Arc::new(rows.iter().map(|r| r.1.lid).collect::<UInt32Array>()),
            strings(&|r| tier(r.1).map(str::to_owned)),
            strings(&|r| r.2.width.clone()),
            strings(&|r| r.2.speed.clone()),
            Arc::new(
                rows.iter().map(|r| r.2.speed.as_deref().and_then(ib::lane_signalling_gbps)).collect::<Float64Array>(),
            ),
            Arc::new(
                rows.iter()
                    .map(|r| Some(lanes(r.2)? * r.2.speed.as_deref().and_then(ib::lane_data_gbps)?))
                    .collect::<Float64Array>(),
            ),
            strings(&|r| r.2.supported_width.clone()),
            strings(&|r| r.2.supported_speed.clone()),
            strings(&|_| Some(source.to_owned())),
            strings(&|r| r.0.port_name.clone()),
            strings(&|r| r.1.port_name.clone()),
        ];
        RecordBatch::try_new(links_schema(), columns).map(Some)
    }
}

/// Emit a finished link set as the `links` table of the input being read.
pub fn emit(links: &LinkSet, ctx: &mut crate::read::ReadContext<'_>, source: &str) -> crate::error::Result<()> {
    let batch =
        links.batch(source).map_err(|e| crate::error::Error::InvalidArgument(format!("arrow (links table): {e}")))?;
    if let Some(b) = batch {
        ctx.emit_table("links", b);
    }
    Ok(())
}
