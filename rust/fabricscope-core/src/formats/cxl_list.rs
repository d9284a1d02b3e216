//! `cxl list` (ndctl's cxl-cli) JSON: the CXL memory-device inventory, into the side table
//! `cxl_devices` (one row per memdev). No samples: these are inventory and health facts.
//!
//! * The document is an array, or a single object when one device matched. Topology listings
//!   (`-BEMPu`) nest memdevs under keys like `"endpoints:port8"`; every object whose `memdev` is a
//!   string is a device, wherever it sits (the endpoint objects' `memdev` is the nested object).
//! * `-u` (human) prints sizes as `"256.00 MiB (268.44 MB)"` and serials as `"0x1"`; without it
//!   they are integers. Both are read; the serial is stored as `0x` hex. Human sizes are exact
//!   only to their two decimals.
//! * `host` is the memdev's parent (PCI address or `cxl_mem.N`), stored as `pci_host`; the
//!   `host` column is the machine (`--host`/directive fallback).
//! * `media_errors` (with `--media-errors`) is a list of records: its length is stored.

use std::io::Read;
use std::sync::Arc;

use ahash::AHashSet;
use arrow_array::{ArrayRef, Int32Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use serde_json::Value as J;

use crate::error::{Error, Position, Result};
use crate::formats::BinaryReader;
use crate::read::ReadContext;

/// Name of the inventory table.
pub const DEVICES_TABLE: &str = "cxl_devices";

/// Schema of `cxl_devices`.
pub fn devices_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("host", DataType::Utf8, false),
        Field::new("memdev", DataType::Utf8, false),
        Field::new("ram_size_bytes", DataType::UInt64, true),
        Field::new("pmem_size_bytes", DataType::UInt64, true),
        Field::new("serial", DataType::Utf8, true),
        Field::new("pci_host", DataType::Utf8, true),
        Field::new("numa_node", DataType::Int32, true),
        Field::new("firmware_version", DataType::Utf8, true),
        Field::new("media_errors", DataType::UInt64, true),
    ]))
}

/// True when a JSON document's head is `cxl list` output.
pub fn looks_like(text: &str) -> bool {
    let t = text.trim_start();
    (t.starts_with('[') || t.starts_with('{')) && t.contains("\"memdev\"")
}

/// `"256.00 MiB (268.44 MB)"` or an integer → bytes.
fn size_bytes(v: &J) -> std::result::Result<Option<u64>, ()> {
    match v {
        J::Null => Ok(None),
        J::Number(n) => n.as_u64().map(Some).ok_or(()),
        J::String(s) => {
            let mut words = s.split_whitespace();
            let number = words.next().ok_or(())?.parse::<f64>().map_err(|_| ())?;
            let unit = words.next().unwrap_or("B");
            let factor: f64 = match unit {
                "B" => 1.0,
                "KiB" => 1024.0,
                "MiB" => 1_048_576.0,
                "GiB" => 1_073_741_824.0,
                "TiB" => 1_099_511_627_776.0,
                "PiB" => 1_125_899_906_842_624.0,
                _ => return Err(()),
            };
            let bytes = (number * factor).round();
            if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
                return Err(());
            }
            Ok(Some(bytes as u64))
        }
        _ => Err(()),
    }
}

/// Serial as `0x` hex, from an integer or a (`-u`) string.
fn serial(v: &J) -> Option<String> {
    match v {
        J::Number(n) => n.as_u64().map(|x| format!("{x:#x}")),
        J::String(s) => Some(s.clone()),
        _ => None,
    }
}

#[derive(Default)]
struct Devices {
    host: Vec<String>,
    memdev: Vec<String>,
    ram: Vec<Option<u64>>,
    pmem: Vec<Option<u64>>,
    serial: Vec<Option<String>>,
    pci_host: Vec<Option<String>>,
    numa: Vec<Option<i32>>,
    firmware: Vec<Option<String>>,
    media_errors: Vec<Option<u64>>,
}

/// Reader for `cxl list` JSON.
#[derive(Default)]
pub struct CxlListReader {
    seen: AHashSet<String>,
    rows: Devices,
}

impl CxlListReader {
    /// A reader for one input.
    pub fn new() -> Self {
        CxlListReader::default()
    }

    fn walk(&mut self, v: &J, host: &str, ctx: &mut ReadContext<'_>, depth: usize) -> Result<()> {
        if depth > 64 {
            return ctx.bad_record(Position::default(), "a cxl list document at most 64 levels deep", b"");
        }
        match v {
            J::Array(items) => {
                for item in items {
                    self.walk(item, host, ctx, depth + 1)?;
                }
            }
            J::Object(obj) => {
                if let Some(J::String(name)) = obj.get("memdev") {
                    self.device(name, obj, host, ctx)?;
                }
                for child in obj.values() {
                    if child.is_array() || child.is_object() {
                        self.walk(child, host, ctx, depth + 1)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn device(
        &mut self,
        name: &str,
        obj: &serde_json::Map<String, J>,
        host: &str,
        ctx: &mut ReadContext<'_>,
    ) -> Result<()> {
        if !self.seen.insert(name.to_owned()) {
            return Ok(());
        }
        let pos = Position::default();
        let get_size = |k: &str| size_bytes(obj.get(k).unwrap_or(&J::Null));
        let (Ok(ram), Ok(pmem)) = (get_size("ram_size"), get_size("pmem_size")) else {
            let found = format!("{name}: {:?} / {:?}", obj.get("ram_size"), obj.get("pmem_size"));
            return ctx.bad_record(pos, "sizes as integers or `<n> MiB (<m> MB)` strings", found.as_bytes());
        };
        let numa = match obj.get("numa_node") {
            None | Some(J::Null) => None,
            Some(J::Number(n)) => match n.as_i64().and_then(|x| i32::try_from(x).ok()) {
                Some(x) => Some(x),
                None => return ctx.bad_record(pos, "an integer numa_node", n.to_string().as_bytes()),
            },
            Some(other) => return ctx.bad_record(pos, "an integer numa_node", other.to_string().as_bytes()),
        };
        let media_errors = match obj.get("media_errors") {
            Some(J::Array(records)) => Some(records.len() as u64),
            Some(J::Object(o)) => o.get("nr_records").and_then(J::as_u64),
            Some(J::Number(n)) => n.as_u64(),
            _ => None,
        };
        let r = &mut self.rows;
        r.host.push(host.to_owned());
        r.memdev.push(name.to_owned());
        r.ram.push(ram);
        r.pmem.push(pmem);
        r.serial.push(obj.get("serial").and_then(serial));
        r.pci_host.push(obj.get("host").and_then(J::as_str).map(str::to_owned));
        r.numa.push(numa);
        r.firmware.push(obj.get("firmware_version").and_then(J::as_str).map(str::to_owned));
        r.media_errors.push(media_errors);
        Ok(())
    }
}

impl BinaryReader for CxlListReader {
    fn read(&mut self, head: &[u8], rest: &mut dyn Read, ctx: &mut ReadContext<'_>) -> Result<u64> {
        let buf = crate::formats::read_bounded(head, rest, ctx, "cxl list JSON size")?;
        let total = buf.len() as u64;
        let host = ctx.fallback_host();
        // `cxl list` may print one document per invocation; appended runs are read in turn.
        let stream = serde_json::Deserializer::from_slice(&buf).into_iter::<J>();
        for item in stream {
            match item {
                Ok(v) => self.walk(&v, &host, ctx, 0)?,
                Err(e) => {
                    let pos = Position { line: Some(e.line() as u64), byte_offset: 0 };
                    ctx.bad_record(pos, &format!("valid cxl list JSON ({e})"), b"")?;
                    break;
                }
            }
        }
        let r = std::mem::take(&mut self.rows);
        if !r.memdev.is_empty() {
            let columns: Vec<ArrayRef> = vec![
                Arc::new(StringArray::from(r.host)),
                Arc::new(StringArray::from(r.memdev)),
                Arc::new(UInt64Array::from(r.ram)),
                Arc::new(UInt64Array::from(r.pmem)),
                Arc::new(StringArray::from(r.serial)),
                Arc::new(StringArray::from(r.pci_host)),
                Arc::new(Int32Array::from(r.numa)),
                Arc::new(StringArray::from(r.firmware)),
                Arc::new(UInt64Array::from(r.media_errors)),
            ];
            let batch = RecordBatch::try_new(devices_schema(), columns)
                .map_err(|e| Error::InvalidArgument(format!("arrow (cxl_devices): {e}")))?;
            ctx.emit_table(DEVICES_TABLE, batch);
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_human_and_raw() {
        assert_eq!(size_bytes(&J::from(268_435_456u64)), Ok(Some(268_435_456)));
        assert_eq!(size_bytes(&J::from("256.00 MiB (268.44 MB)")), Ok(Some(268_435_456)));
        assert_eq!(size_bytes(&J::from("1024.00 MiB (1073.74 MB)")), Ok(Some(1_073_741_824)));
        assert_eq!(size_bytes(&J::from("12 parsecs")), Err(()));
        assert_eq!(size_bytes(&J::from(-1)), Err(()));
        assert_eq!(serial(&J::from(1u64)).as_deref(), Some("0x1"));
    }
}
