//! `lldpctl` / `lldpcli show neighbors` (lldpd) on a host: which switch port each NIC is cabled
//! to, as `links` rows (host NIC ↔ leaf port) for RoCE fabrics, which have no GUIDs.
//!
//! Two of lldpd's output formats (`src/client/kv_writer.c`, `json_writer.c`; the layouts of its
//! own `tests/integration/test_lldpcli.py`):
//!
//! * `-f keyvalue`: one `lldp.<iface>.<path>=<value>` line per datum. The chassis and port ID
//!   types replace the `id` element (`lldp.eth0.chassis.mac=...`, `lldp.eth0.port.ifname=Ethernet8`),
//!   capabilities are `lldp.eth0.chassis.Bridge.enabled=on`. An interface name may itself contain
//!   dots (`eth0.100`): the record key is everything before `.chassis.`/`.port.`/`.via=`...
//! * `-f json`: `{"lldp": {"interface": {...}}}`, where `interface` is an object keyed by name
//!   for one interface and an array of one-key objects for several; the chassis is an object keyed
//!   by the system name (or the bare chassis object when there is none). `-f json0` (every value a
//!   list of `{"value": ...}` objects, the name in a `name` field) is read too.
//!
//! `show interfaces` prints the same shape for the local ports (with a `status`): those records
//! describe no neighbour and are skipped. The host is the `# host:` line, else the host argument;
//! the NIC end is named `<host> <iface>` (rdma-ndd's `%h %d` shape, as IB HCAs are) with the
//! interface as its `port_name`; the switch end by its system name (else chassis ID) and the port
//! ID (`ifname`/`local`), else its description; a `local` ID that is a bare number (an ifIndex, as
//! Junos sends) gives way to a one-word description (`ge-0/0/17`).

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value as J;

use crate::error::{Position, Result};
use crate::formats::{BinaryReader, DirectiveState, LineReader, feed_lines};
use crate::read::ReadContext;
use crate::schema::Interner;
use crate::topology::{End, Link, LinkSet, NodeType};

/// Reader name in the links table's `source` column.
const SOURCE_KV: &str = "lldpctl-keyvalue";
const SOURCE_JSON: &str = "lldpctl-json";

/// True when the first lines look like `lldpctl -f keyvalue` output.
pub fn looks_like_keyvalue(text: &str) -> bool {
    let mut seen = 0;
    for t in text.lines().map(str::trim).filter(|t| !skippable(t)).take(5) {
        let Some((k, _)) = t.split_once('=') else { return false };
        if !(k.starts_with("lldp.") && k.len() > 5) {
            return false;
        }
        seen += 1;
    }
    seen > 0
}

/// Blank, comment and directive lines (`# host:`, a `date` line) before or between records.
fn skippable(t: &str) -> bool {
    t.is_empty() || t.starts_with('#') || crate::formats::parse_directive(t).is_some()
}

/// True when the document starts like `lldpctl -f json` / `-f json0` output (after any `# host:`
/// or timestamp lines).
pub fn looks_like_json(text: &str) -> bool {
    let body: String = text.lines().skip_while(|l| skippable(l.trim())).take(10).collect();
    let head: String = body.chars().take(200).filter(|c| !c.is_whitespace()).collect();
    head.starts_with("{\"lldp\":{") || head.starts_with("{\"lldp\":[") || head.starts_with("{\"lldp\":{}")
}

/// What one neighbour record says.
#[derive(Debug, Default, Clone)]
struct Neighbor {
    /// Local interface.
    iface: String,
    chassis_name: Option<String>,
    chassis_id: Option<String>,
    /// Port ID and its subtype (`ifname`, `local`, `mac`, ...).
    port_id: Option<(String, String)>,
    port_descr: Option<String>,
    /// Bridge or Router capability enabled.
    forwards: bool,
    /// Station only: another host, not a switch.
    station: bool,
    /// A `show interfaces` record (local port), not a neighbour.
    local: bool,
}

impl Neighbor {
    /// The link, or `None` when the record names no neighbour.
    fn link(&self, host: &str) -> Option<Link> {
        if self.local {
            return None;
        }
        let name = self.chassis_name.clone().or_else(|| self.chassis_id.clone())?;
        // A switch port is best named by its interface name; a MAC port ID is no name, its
        // description usually is (`PortDescr: Ethernet8`). Junos and some EOS releases send a
        // locally assigned ID that is the port's SNMP ifIndex (`local 541`) with the interface
        // name as the description (`ge-0/0/17`): the number names no port anyone knows, so a
        // one-word description wins (a ProCurve's `local 1` described `Port #1` stays `1`).
        let descr_word = self.port_descr.clone().filter(|d| !d.is_empty() && !d.contains(char::is_whitespace));
        let port = match &self.port_id {
            Some((kind, v)) if kind == "local" && is_if_index(v) && descr_word.is_some() => descr_word,
            Some((kind, v)) if matches!(kind.as_str(), "ifname" | "local" | "ifalias") => Some(v.clone()),
            _ => self.port_descr.clone().or_else(|| self.port_id.as_ref().map(|p| p.1.clone())),
        }?;
        let node_type = if self.forwards {
            NodeType::Switch
        } else if self.station {
            NodeType::Hca
        } else {
            NodeType::Unknown
        };
        Some(Link {
            a: End {
                name: Some(format!("{host} {}", self.iface)),
                node_type: NodeType::Hca,
                port_name: Some(self.iface.clone()),
                ..End::default()
            },
            b: End { name: Some(name), node_type, port_name: Some(port), ..End::default() },
            ..Link::default()
        })
    }
}

/// A port ID that is only a number, as an SNMP ifIndex is.
fn is_if_index(v: &str) -> bool {
    !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())
}

/// Streaming reader for `lldpctl -f keyvalue`.
#[derive(Default)]
pub struct LldpKeyValueReader {
    directives: DirectiveState,
    /// Records in order of first appearance, each with the host in force then.
    records: Vec<KvRecord>,
    /// (host, interface) -> position in `records`.
    index: ahash::AHashMap<(i32, i32), usize>,
    /// Every string the records hold, once: host, interface, leaf and port names repeat on
    /// every record, and a record is held until the input ends.
    strings: Interner,
}

/// A [`Neighbor`] as the keyvalue reader holds it until the input ends, its strings interned.
#[derive(Debug, Clone, Copy)]
struct KvRecord {
    host: i32,
    iface: i32,
    chassis_name: Option<i32>,
    chassis_id: Option<i32>,
    port_id: Option<(&'static str, i32)>,
    port_descr: Option<i32>,
    forwards: bool,
    station: bool,
    local: bool,
}

impl KvRecord {
    fn neighbor(&self, strings: &Interner) -> Neighbor {
        let text = |k: i32| strings.get(k).unwrap_or_default().to_owned();
        Neighbor {
            iface: text(self.iface),
            chassis_name: self.chassis_name.map(text),
            chassis_id: self.chassis_id.map(text),
            port_id: self.port_id.map(|(kind, v)| (kind.to_owned(), text(v))),
            port_descr: self.port_descr.map(text),
            forwards: self.forwards,
            station: self.station,
            local: self.local,
        }
    }
}

/// The port ID subtypes lldpd's keyvalue writer spells (`lldp.eth0.port.<subtype>=<id>`).
const PORT_ID_KINDS: [&str; 7] = ["ifname", "local", "ifalias", "mac", "ip", "unhandled", "agentcid"];

impl LldpKeyValueReader {
    /// A fresh reader.
    pub fn new() -> Self {
        Self::default()
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(t) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = t.trim();
        if t.is_empty() || self.directives.apply_line(t) || t.starts_with('#') {
            return Ok(());
        }
        let Some((key, value)) = t.split_once('=') else {
            return ctx.bad_record(pos, "a `lldp.<interface>.<field>=<value>` line", raw);
        };
        let Some(rest) = key.strip_prefix("lldp.") else {
            return ctx.bad_record(pos, "a key starting with `lldp.`", raw);
        };
        // `<iface>.<field path>`: the field path starts at the first known top-level element.
        let split = [
            "chassis.",
            "port.",
            "via",
            "rid",
            "age",
            "status",
            "ttl",
            "vlan",
            "ppvid",
            "pi",
            "lldp-med",
            "unknown-tlvs",
        ]
        .iter()
        .filter_map(|f| rest.find(&format!(".{f}")).map(|i| (i, *f)))
        .min_by_key(|(i, _)| *i);
        let Some((i, _)) = split else {
            return ctx.bad_record(pos, "a `lldp.<interface>.chassis|port|via...` key", raw);
        };
        let (iface, path) = (&rest[..i], &rest[i + 1..]);
        if iface.is_empty() {
            return ctx.bad_record(pos, "an interface name after `lldp.`", raw);
        }
        let host = self.directives.host(ctx);
        let (host, iface) = (self.strings.intern(&host), self.strings.intern(iface));
        // an index, not a scan: a hostile file may name a million interfaces
        let next = self.records.len();
        let idx = *self.index.entry((host, iface)).or_insert(next);
        if idx == next {
            self.records.push(KvRecord {
                host,
                iface,
                chassis_name: None,
                chassis_id: None,
                port_id: None,
                port_descr: None,
                forwards: false,
                station: false,
                local: false,
            });
        }
        let Some(n) = self.records.get_mut(idx) else { return Ok(()) };
        let value = value.trim();
        let mut parts = path.split('.');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("status"), None, _) => n.local = true,
            (Some("chassis"), Some("name"), None) => n.chassis_name = Some(self.strings.intern(value)),
            (Some("chassis"), Some("descr" | "mgmt-ip" | "mgmt-iface" | "ttl"), None) => {}
            (Some("chassis"), Some(_), None) if n.chassis_id.is_none() => {
                n.chassis_id = Some(self.strings.intern(value));
            }
            (Some("chassis"), Some(cap), Some("enabled")) => match cap {
                "Bridge" | "Router" if value == "on" => n.forwards = true,
                "Station" if value == "on" => n.station = true,
                _ => {}
            },
            (Some("port"), Some("descr"), None) => n.port_descr = Some(self.strings.intern(value)),
            (Some("port"), Some(kind), None) => {
                if let Some(kind) = PORT_ID_KINDS.iter().find(|k| **k == kind) {
                    n.port_id = Some((kind, self.strings.intern(value)));
                }
            }
            _ => {}
        }
        Ok(())
    }
}

impl LineReader for LldpKeyValueReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |raw, pos, ctx| self.line(raw, pos, ctx))
    }

    fn finish(&mut self, ctx: &mut ReadContext<'_>) -> Result<()> {
        let mut set = LinkSet::new();
        for r in std::mem::take(&mut self.records) {
            let host = self.strings.get(r.host).unwrap_or_default();
            if let Some(l) = r.neighbor(&self.strings).link(host) {
                set.add(l);
            }
        }
        crate::topology::emit(set, ctx, SOURCE_KV)
    }
}

/// Reader for `lldpctl -f json` and `-f json0` (a whole document, bounded).
#[derive(Default)]
pub struct LldpJsonReader;

/// A string from a json value, or from json0's `[{"value": ...}]`.
fn text(v: Option<&J>) -> Option<String> {
    match v? {
        J::String(s) => Some(s.clone()),
        J::Array(a) => text(a.first()),
        J::Object(o) => text(o.get("value")),
        _ => None,
    }
}

/// The first object of a json0 list, or the object itself.
fn object(v: Option<&J>) -> Option<&serde_json::Map<String, J>> {
    match v? {
        J::Object(o) => Some(o),
        J::Array(a) => a.first().and_then(J::as_object),
        _ => None,
    }
}

fn neighbor(iface: &str, rec: &serde_json::Map<String, J>) -> Neighbor {
    let mut n = Neighbor { iface: iface.to_owned(), local: rec.contains_key("status"), ..Neighbor::default() };
    if let Some(ch) = object(rec.get("chassis")) {
        // json: {"<sysname>": {...}} or the bare chassis; json0: [{"id": .., "name": [..]}]
        let (name, body) = match ch.iter().next() {
            Some((k, J::Object(b))) if ch.len() == 1 && !matches!(k.as_str(), "id" | "descr" | "name") => {
                (Some(k.clone()), b)
            }
            _ => (text(ch.get("name")), ch),
        };
        n.chassis_name = name;
        n.chassis_id = object(body.get("id")).and_then(|id| text(id.get("value")));
        if let Some(J::Array(caps)) = body.get("capability") {
            for c in caps {
                let kind = c.get("type").and_then(J::as_str).unwrap_or("");
                let on = c.get("enabled").and_then(J::as_bool).unwrap_or(false);
                match kind {
                    "Bridge" | "Router" if on => n.forwards = true,
                    "Station" if on => n.station = true,
                    _ => {}
                }
            }
        }
    }
    if let Some(p) = object(rec.get("port")) {
        if let Some(id) = object(p.get("id")) {
            let kind = text(id.get("type")).unwrap_or_default();
            if let Some(v) = text(id.get("value")) {
                n.port_id = Some((kind, v));
            }
        }
        n.port_descr = text(p.get("descr"));
    }
    n
}

/// What a visitor of one document found wrong in its shape (a serde error message).
const SHAPE: &str = "an object `{\"lldp\": {\"interface\": ...}}`";

/// Walks one document's `lldp.interface`, in its three spellings, handing every (interface,
/// record) to `on` as soon as it is parsed: the document is never built whole, only one record at
/// a time (a record is a few hundred bytes; the document up to `max_document_bytes`).
struct DocumentSeed<'f>(&'f mut dyn FnMut(&str, &serde_json::Map<String, J>));

/// `lldp`: an object, or (json0) a list whose first element is that object.
struct LldpSeed<'f>(&'f mut dyn FnMut(&str, &serde_json::Map<String, J>));

/// `lldp.interface`: `{name: record}`, `[{name: record}, ...]`, or (json0) `[{"name": name, ...}]`.
struct InterfacesSeed<'f>(&'f mut dyn FnMut(&str, &serde_json::Map<String, J>));

impl<'de> DeserializeSeed<'de> for DocumentSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for DocumentSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(SHAPE)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let mut seen = false;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "lldp" {
                map.next_value_seed(LldpSeed(&mut *self.0))?;
                seen = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if seen { Ok(()) } else { Err(serde::de::Error::custom(format!("no `lldp` key: expected {SHAPE}"))) }
    }
}

impl<'de> DeserializeSeed<'de> for LldpSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for LldpSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object or a list of one object under `lldp`")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "interface" {
                map.next_value_seed(InterfacesSeed(&mut *self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        // json0: the first element is the object; any further ones are ignored
        if seq.next_element_seed(LldpObjectSeed(&mut *self.0))?.is_none() {
            return Err(serde::de::Error::invalid_length(0, &self));
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
}

/// The first element of a json0 `lldp` list: it must be an object.
struct LldpObjectSeed<'f>(&'f mut dyn FnMut(&str, &serde_json::Map<String, J>));

impl<'de> DeserializeSeed<'de> for LldpObjectSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(LldpSeed(self.0))
    }
}

impl<'de> DeserializeSeed<'de> for InterfacesSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for InterfacesSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object or a list of objects under `lldp.interface`")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        while let Some(name) = map.next_key::<String>()? {
            let rec = map.next_value::<serde_json::Map<String, J>>()?;
            (self.0)(&name, &rec);
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        while let Some(item) = seq.next_element::<serde_json::Map<String, J>>()? {
            if let Some(name) = item.get("name").and_then(J::as_str) {
                (self.0)(name, &item); // json0
                continue;
            }
            for (name, rec) in &item {
                let Some(rec) = rec.as_object() else {
                    return Err(serde::de::Error::custom(format!("interface {name:?}: expected an object")));
                };
                (self.0)(name, rec);
            }
        }
        Ok(())
    }
}

impl BinaryReader for LldpJsonReader {
    fn read(&mut self, head: &[u8], rest: &mut dyn std::io::Read, ctx: &mut ReadContext<'_>) -> Result<u64> {
        let buf = crate::formats::read_bounded(head, rest, ctx, "lldpctl JSON size")?;
        let total = buf.len() as u64;
        // A `# host:` line may precede the document (as for the other readers).
        let mut directives = DirectiveState::default();
        let mut body = 0usize;
        for line in buf.split_inclusive(|b| *b == b'\n') {
            let t = String::from_utf8_lossy(line);
            let t = t.trim();
            if t.starts_with('{') || !(t.is_empty() || directives.apply_line(t) || t.starts_with('#')) {
                break;
            }
            body += line.len();
        }
        let host = directives.host(ctx);
        let doc = buf.get(body..).unwrap_or_default();
        // Where a serde error inside `doc` (from `from`) is in the file.
        let position = |from: usize, e: &serde_json::Error| {
            let before = doc.get(..from).unwrap_or_default();
            let lines = memchr::memchr_iter(b'\n', &buf[..body]).count() + memchr::memchr_iter(b'\n', before).count();
            Position { line: Some((lines + e.line().max(1)) as u64), byte_offset: (body + from) as u64 }
        };
        let mut set = LinkSet::new();
        // Each document is first checked whole as JSON without being built (a borrowed raw
        // value): a cut or garbled document adds no link. Its records are then read one at a time.
        let mut documents = serde_json::Deserializer::from_slice(doc).into_iter::<&serde_json::value::RawValue>();
        loop {
            let from = documents.byte_offset();
            let raw = match documents.next() {
                None => break,
                Some(Ok(raw)) => raw,
                Some(Err(e)) => {
                    ctx.bad_record(position(from, &e), &format!("valid lldpctl JSON ({e})"), b"")?;
                    break;
                }
            };
            let start = documents.byte_offset() - raw.get().len();
            let mut on = |iface: &str, rec: &serde_json::Map<String, J>| {
                if let Some(l) = neighbor(iface, rec).link(&host) {
                    set.add(l);
                }
            };
            let mut de = serde_json::Deserializer::from_str(raw.get());
            if let Err(e) = DocumentSeed(&mut on).deserialize(&mut de) {
                // A wrong shape: the records before it are kept (lenient), the rest is skipped.
                ctx.bad_record(position(start, &e), &format!("{SHAPE} ({e})"), b"")?;
            }
        }
        crate::topology::emit(set, ctx, SOURCE_JSON)?;
        Ok(total)
    }
}
