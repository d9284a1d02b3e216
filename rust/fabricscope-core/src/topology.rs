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

use std::num::NonZeroU32;
use std::sync::Arc;

use ahash::AHashMap;
use arrow_array::builder::StringBuilder;
use arrow_array::{ArrayRef, Float64Array, RecordBatch, UInt16Array, UInt32Array};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use hashbrown::HashTable;

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

/// A string stored once in a [`LinkSet`]: its index in the set's string table, plus one (so that
/// `Option<Sym>` takes four bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Sym(NonZeroU32);

/// The distinct strings of one link set. Node names repeat on every link of a node (a leaf's name
/// on each of its hundreds of ports) and port names on every node: each is stored once, end to
/// end in one buffer (no allocation per string), found again through a table of symbols.
#[derive(Debug, Default)]
struct Strings {
    /// Every distinct string, end to end.
    text: String,
    /// Where string `i` ends in `text` (it starts where string `i - 1` ends).
    ends: Vec<usize>,
    /// Symbols, hashed by their text.
    table: HashTable<Sym>,
    hasher: ahash::RandomState,
}

/// The text of symbol `id` in a string table's buffer.
fn text_of<'t>(text: &'t str, ends: &[usize], id: Sym) -> &'t str {
    let i = id.0.get() as usize - 1;
    let start = if i == 0 { 0 } else { ends.get(i - 1).copied().unwrap_or(0) };
    let end = ends.get(i).copied().unwrap_or(start);
    text.get(start..end).unwrap_or("")
}

impl Strings {
    /// `s`'s symbol, or `None` once the table holds `u32::MAX - 1` strings (more than memory allows
    /// for link names in practice; [`LinkSet::into_batch`] then refuses the set).
    fn intern(&mut self, s: &str) -> Option<Sym> {
        let Strings { text, ends, table, hasher } = self;
        let hash = hasher.hash_one(s);
        if let Some(&id) = table.find(hash, |&id| text_of(text, ends, id) == s) {
            return Some(id);
        }
        let id = Sym(u32::try_from(ends.len()).ok().and_then(|n| n.checked_add(1)).and_then(NonZeroU32::new)?);
        text.push_str(s);
        ends.push(text.len());
        table.insert_unique(hash, id, |&id| hasher.hash_one(text_of(text, ends, id)));
        Some(id)
    }

    fn get(&self, id: Sym) -> &str {
        text_of(&self.text, &self.ends, id)
    }

    fn len(&self) -> usize {
        self.ends.len()
    }
}

/// One end of a link as a [`LinkSet`] holds it: an [`End`] with its strings interned.
#[derive(Debug, Clone, Copy)]
struct StoredEnd {
    /// The GUID, when the end has one.
    guid: Option<Sym>,
    name: Option<Sym>,
    port_name: Option<Sym>,
    lid: Option<u32>,
    port: u16,
    node_type: NodeType,
}

/// One link as a [`LinkSet`] holds it.
#[derive(Debug, Clone, Copy)]
struct StoredLink {
    a: StoredEnd,
    b: StoredEnd,
    width: Option<Sym>,
    speed: Option<Sym>,
    supported_width: Option<Sym>,
    supported_speed: Option<Sym>,
    /// The reader that named it first, when the set merges several inputs' tables ([`merge_links`]).
    source: Option<Sym>,
}

/// An end's identity in a link's key: (node identity, port number, port name or "").
type EndKey = (Sym, u16, Sym);

/// Collects the links of one input, merging duplicates (both directions).
///
/// A set holds every link of its input until the input ends (tiers need the whole fabric), so it
/// stores them compactly: about 64 bytes per link plus each distinct name once, where the links
/// as readers build them ([`Link`]) take several hundred.
#[derive(Debug, Default)]
pub struct LinkSet {
    links: Vec<StoredLink>,
    index: AHashMap<(EndKey, EndKey), u32>,
    strings: Strings,
    /// The empty string's symbol (a node without GUID or name, a port without a name), once interned.
    empty: Option<Sym>,
    /// A link could not be stored (the string table or the link count is full).
    overflowed: bool,
}

fn fill<T: Copy>(dst: &mut Option<T>, src: Option<T>) {
    if dst.is_none() {
        *dst = src;
    }
}

fn merge_end(dst: &mut StoredEnd, src: &StoredEnd) {
    fill(&mut dst.name, src.name);
    fill(&mut dst.lid, src.lid);
    if dst.node_type == NodeType::Unknown {
        dst.node_type = src.node_type;
    }
}

impl StoredEnd {
    /// The node's identity: its GUID, else (an Ethernet end) its name, else `empty`.
    fn node_id(&self, empty: Sym) -> Sym {
        self.guid.or(self.name).unwrap_or(empty)
    }

    fn key(&self, empty: Sym) -> EndKey {
        (self.node_id(empty), self.port, self.port_name.unwrap_or(empty))
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

    fn store_end(&mut self, e: &End) -> Option<StoredEnd> {
        let mut opt = |s: Option<&str>| -> Option<Option<Sym>> {
            match s {
                Some(s) => self.strings.intern(s).map(Some),
                None => Some(None),
            }
        };
        Some(StoredEnd {
            guid: opt((!e.guid.is_empty()).then_some(e.guid.as_str()))?,
            name: opt(e.name.as_deref())?,
            port_name: opt(e.port_name.as_deref())?,
            lid: e.lid,
            port: e.port,
            node_type: e.node_type,
        })
    }

    fn store(&mut self, link: &Link) -> Option<StoredLink> {
        let mut opt = |s: &Option<String>| -> Option<Option<Sym>> {
            match s {
                Some(s) => self.strings.intern(s).map(Some),
                None => Some(None),
            }
        };
        let (width, speed) = (opt(&link.width)?, opt(&link.speed)?);
        let (supported_width, supported_speed) = (opt(&link.supported_width)?, opt(&link.supported_speed)?);
        Some(StoredLink {
            a: self.store_end(&link.a)?,
            b: self.store_end(&link.b)?,
            width,
            speed,
            supported_width,
            supported_speed,
            source: None,
        })
    }

    /// Add a link; a link already seen (in either direction) is merged, filling missing facts.
    #[expect(
        clippy::needless_pass_by_value,
        reason = "readers hand over the link they built; its strings are interned"
    )]
    pub fn add(&mut self, link: Link) {
        self.add_from(&link, None);
    }

    /// [`LinkSet::add`], remembering the reader that named the link (kept for its first naming).
    fn add_from(&mut self, link: &Link, source: Option<&str>) {
        if self.empty.is_none() {
            self.empty = self.strings.intern("");
        }
        let source = match source.map(|s| self.strings.intern(s)) {
            Some(None) => {
                self.overflowed = true;
                return;
            }
            Some(Some(sym)) => Some(sym),
            None => None,
        };
        let (Some(empty), Some(mut new)) = (self.empty, self.store(link)) else {
            self.overflowed = true;
            return;
        };
        let (ka, kb) = (new.a.key(empty), new.b.key(empty));
        let key = if (ka.0.0, ka.1, ka.2.0) <= (kb.0.0, kb.1, kb.2.0) { (ka, kb) } else { (kb, ka) };
        if let Some(&i) = self.index.get(&key)
            && let Some(old) = self.links.get_mut(i as usize)
        {
            let (sa, sb) = if old.a.key(empty) == ka { (&new.a, &new.b) } else { (&new.b, &new.a) };
            merge_end(&mut old.a, sa);
            merge_end(&mut old.b, sb);
            fill(&mut old.width, new.width);
            fill(&mut old.speed, new.speed);
            fill(&mut old.supported_width, new.supported_width);
            fill(&mut old.supported_speed, new.supported_speed);
            return;
        }
        let Ok(i) = u32::try_from(self.links.len()) else {
            self.overflowed = true;
            return;
        };
        new.source = source;
        self.index.insert(key, i);
        self.links.push(new);
    }

    /// The finished table (tiers computed, ends oriented, rows sorted by first end), or `None`
    /// when no link was seen. Consumes the set: its lookup tables are freed before the table is
    /// built, so the two are never in memory together.
    pub fn into_batch(self, source: &str) -> Result<Option<RecordBatch>, ArrowError> {
        if self.overflowed {
            return Err(ArrowError::ComputeError(format!(
                "more than {} distinct links or names in one input",
                u32::MAX - 1
            )));
        }
        let LinkSet { links, index, strings, empty, .. } = self;
        let Some(empty) = empty.filter(|_| !links.is_empty()) else {
            return Ok(None);
        };
        drop(index);
        let strings = Strings { table: HashTable::new(), ..strings };
        let slot = |s: Sym| s.0.get() as usize - 1;
        // Facts about a node from any link it appears on, by node identity.
        let mut names: Vec<Option<Sym>> = vec![None; strings.len()];
        let mut types: Vec<NodeType> = vec![NodeType::Unknown; strings.len()];
        for l in &links {
            for e in [&l.a, &l.b] {
                let id = slot(e.node_id(empty));
                if let (Some(n), Some(None)) = (e.name, names.get(id)) {
                    names[id] = Some(n);
                }
                if e.node_type != NodeType::Unknown && types.get(id) == Some(&NodeType::Unknown) {
                    types[id] = e.node_type;
                }
            }
        }
        let name_of_node = |id: Sym| names.get(slot(id)).copied().flatten();
        let is_aggregation = |id: Sym| {
            name_of_node(id).is_some_and(|n| strings.get(n).to_ascii_lowercase().contains("aggregation node"))
        };
        let ty = |e: &StoredEnd| {
            types.get(slot(e.node_id(empty))).copied().filter(|t| *t != NodeType::Unknown).unwrap_or(e.node_type)
        };
        let mut leaves = vec![false; strings.len()];
        for l in &links {
            for (sw, other) in [(&l.a, &l.b), (&l.b, &l.a)] {
                if ty(sw) == NodeType::Switch && ty(other) == NodeType::Hca && !is_aggregation(other.node_id(empty)) {
                    leaves[slot(sw.node_id(empty))] = true;
                }
            }
        }
        let tier = |e: &StoredEnd| -> Option<&'static str> {
            match ty(e) {
                NodeType::Hca => Some("hca"),
                NodeType::Router => Some("router"),
                NodeType::Switch if leaves.get(slot(e.node_id(empty))) == Some(&true) => Some("leaf"),
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
        // (node identity, port number, port name) as text: the order rows are sorted in
        let order = |e: &StoredEnd| (strings.get(e.node_id(empty)), e.port, e.port_name.map_or("", |s| strings.get(s)));
        let rows: Vec<Row<'_>> = {
            let mut rows: Vec<_> = links
                .iter()
                .map(|l| {
                    let (ra, rb) = (rank(tier(&l.a)), rank(tier(&l.b)));
                    if rb < ra || (rb == ra && order(&l.b) < order(&l.a)) { (&l.b, &l.a, l) } else { (&l.a, &l.b, l) }
                })
                .collect();
            rows.sort_by(|x, y| order(x.0).cmp(&order(y.0)));
            rows
        };

        let text = |s: Option<Sym>| s.map(|s| strings.get(s));
        let name_of = |e: &StoredEnd| text(e.name.or_else(|| name_of_node(e.node_id(empty))));
        // an Ethernet end is named, not numbered
        let port_of = |e: &StoredEnd| if e.port_name.is_some() && e.port == 0 { None } else { Some(e.port) };
        let width = |l: &StoredLink| text(l.width);
        let speed = |l: &StoredLink| text(l.speed);
        let lanes = |l: &StoredLink| width(l).and_then(ib::width).map(|(_, n)| f64::from(n));
        let columns: Vec<ArrayRef> = vec![
            string_column(&rows, &|r| text(r.0.guid)),
            Arc::new(rows.iter().map(|r| port_of(r.0)).collect::<UInt16Array>()),
            string_column(&rows, &|r| name_of(r.0)),
            string_column(&rows, &|r| Some(ty(r.0).as_str())),
            Arc::new(rows.iter().map(|r| r.0.lid).collect::<UInt32Array>()),
            string_column(&rows, &|r| tier(r.0)),
            string_column(&rows, &|r| text(r.1.guid)),
            Arc::new(rows.iter().map(|r| port_of(r.1)).collect::<UInt16Array>()),
            string_column(&rows, &|r| name_of(r.1)),
            string_column(&rows, &|r| Some(ty(r.1).as_str())),
            Arc::new(rows.iter().map(|r| r.1.lid).collect::<UInt32Array>()),
            string_column(&rows, &|r| tier(r.1)),
            string_column(&rows, &|r| width(r.2)),
            string_column(&rows, &|r| speed(r.2)),
            Arc::new(rows.iter().map(|r| speed(r.2).and_then(ib::lane_signalling_gbps)).collect::<Float64Array>()),
            Arc::new(
                rows.iter()
                    .map(|r| Some(lanes(r.2)? * speed(r.2).and_then(ib::lane_data_gbps)?))
                    .collect::<Float64Array>(),
            ),
            string_column(&rows, &|r| text(r.2.supported_width)),
            string_column(&rows, &|r| text(r.2.supported_speed)),
            string_column(&rows, &|r| Some(r.2.source.map_or(source, |s| strings.get(s)))),
            string_column(&rows, &|r| text(r.0.port_name)),
            string_column(&rows, &|r| text(r.1.port_name)),
        ];
        RecordBatch::try_new(links_schema(), columns).map(Some)
    }
}

/// A finished row: first end, second end, and the link's facts.
type Row<'a> = (&'a StoredEnd, &'a StoredEnd, &'a StoredLink);

/// A utf8 column of `f` over `rows`, appended in place (no per-row `String`).
fn string_column<'s, R>(rows: &[R], f: &dyn Fn(&R) -> Option<&'s str>) -> ArrayRef {
    let mut b = StringBuilder::with_capacity(rows.len(), 0);
    for r in rows {
        b.append_option(f(r));
    }
    Arc::new(b.finish())
}

/// Emit a finished link set as the `links` table of the input being read.
pub fn emit(links: LinkSet, ctx: &mut crate::read::ReadContext<'_>, source: &str) -> crate::error::Result<()> {
    let batch = links
        .into_batch(source)
        .map_err(|e| crate::error::Error::InvalidArgument(format!("arrow (links table): {e}")))?;
    if let Some(b) = batch {
        ctx.emit_table("links", b);
    }
    Ok(())
}

/// A links column's value at a row as text, whichever string layout the table came in (readers
/// write `Utf8`; a table that went through Polars comes back as `LargeUtf8` or `Utf8View`).
fn text_at(col: Option<&ArrayRef>, row: usize) -> Option<&str> {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    let col = col?;
    if col.is_null(row) {
        return None;
    }
    match col.data_type() {
        DataType::Utf8 => Some(col.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => Some(col.as_string::<i64>().value(row)),
        DataType::Utf8View => Some(col.as_string_view().value(row)),
        _ => None,
    }
}

/// A links column's value at a row as an unsigned number, whichever integer type it came in.
fn number_at(col: Option<&ArrayRef>, row: usize) -> Option<u64> {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{
        Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
    };
    let col = col?;
    if col.is_null(row) {
        return None;
    }
    let signed = |v: i64| u64::try_from(v).ok();
    match col.data_type() {
        DataType::UInt8 => Some(u64::from(col.as_primitive::<UInt8Type>().value(row))),
        DataType::UInt16 => Some(u64::from(col.as_primitive::<UInt16Type>().value(row))),
        DataType::UInt32 => Some(u64::from(col.as_primitive::<UInt32Type>().value(row))),
        DataType::UInt64 => Some(col.as_primitive::<UInt64Type>().value(row)),
        DataType::Int8 => signed(i64::from(col.as_primitive::<Int8Type>().value(row))),
        DataType::Int16 => signed(i64::from(col.as_primitive::<Int16Type>().value(row))),
        DataType::Int32 => signed(i64::from(col.as_primitive::<Int32Type>().value(row))),
        DataType::Int64 => signed(col.as_primitive::<Int64Type>().value(row)),
        _ => None,
    }
}

/// The links tables of several inputs as one table: each cable once (a link named by several
/// inputs, in either direction, is merged: the first naming keeps its facts and its `source`,
/// later ones fill what it left out), tiers computed over the whole fabric (a switch is a leaf when
/// any input cables it to an HCA), ends oriented and rows sorted as one reader's table is.
///
/// Tables are read by column name, so any table with the links columns will do (extra columns are
/// ignored, missing ones read as null). `None` when no table holds a link.
///
/// # Errors
/// When the merged set overflows its string table or link count (see [`LinkSet::into_batch`]).
pub fn merge_links(batches: &[RecordBatch]) -> Result<Option<RecordBatch>, ArrowError> {
    let mut set = LinkSet::new();
    for batch in batches {
        let col = |name: &str| batch.column_by_name(name);
        let end = |pre: &str, row: usize| -> End {
            let c = |name: &str| col(&format!("{pre}{name}"));
            End {
                guid: text_at(c("node_guid"), row).unwrap_or("").to_owned(),
                port: number_at(c("port"), row).and_then(|p| u16::try_from(p).ok()).unwrap_or(0),
                name: text_at(c("node_name"), row).map(str::to_owned),
                node_type: text_at(c("node_type"), row).map_or(NodeType::Unknown, NodeType::parse),
                lid: number_at(c("lid"), row).and_then(|l| u32::try_from(l).ok()),
                port_name: text_at(c("port_name"), row).map(str::to_owned),
            }
        };
        let owned = |name: &str, row: usize| text_at(col(name), row).map(str::to_owned);
        for row in 0..batch.num_rows() {
            let link = Link {
                a: end("", row),
                b: end("peer_", row),
                width: owned("width", row),
                speed: owned("speed", row),
                supported_width: owned("supported_width", row),
                supported_speed: owned("supported_speed", row),
            };
            set.add_from(&link, text_at(col("source"), row));
        }
    }
    set.into_batch("")
}
