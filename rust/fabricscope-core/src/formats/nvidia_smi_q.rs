//! `nvidia-smi -q` text: every GPU's identity and its NVLink fabric registration and health.
//!
//! ```text
//! ==============NVSMI LOG==============
//!
//! Timestamp                                 : Wed Jul 31 11:22:39 2024
//! Driver Version                            : 560.35.03
//!
//! Attached GPUs                             : 8
//! GPU 00000000:19:00.0
//!     Product Name                          : NVIDIA H100 80GB HBM3
//!     GPU UUID                              : GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa
//!     Fabric
//!         State                             : Completed
//!         Status                            : Success
//!         CliqueId                          : 0
//!         ClusterUUID                       : 00000000-0000-0000-0000-000000000000
//!         Health
//!             Bandwidth                     : N/A
//! ```
//!
//! * One attribute row per reading on device `gpu<N>`, N the GPU's place in the log (nvidia-smi
//!   lists GPUs in index order, as `nvidia-smi nvlink` and DCGM number them), port null.
//! * Keys and values are split at the first `:`; the key column's width differs between drivers
//!   (32, 36 and 42 characters are all in public outputs), so only the indentation (the section)
//!   and the key's words count. Values may hold `:` (bus ids, times).
//! * Identity: `gpu_name` (Product Name), `gpu_uuid`, `gpu_bus_id` (the `GPU <bus id>` line),
//!   `gpu_serial`, `driver_version`, `gpu_recovery_action`; on NVL72-class systems the `Platform
//!   Info` block (`gpu_chassis_serial`, `gpu_slot_index`, `gpu_tray_index`, `gpu_module_id`, and
//!   `Chassis Serial Number` where drivers print it at the GPU's top level).
//! * Fabric: `fabric_state`, `fabric_status`, `fabric_clique_id`, `fabric_cluster_uuid`, and the
//!   `Health` rows `fabric_health_summary`, `fabric_health_bandwidth`, `fabric_route_recovery`,
//!   `fabric_route_unhealthy`, `fabric_access_timeout_recovery`, `fabric_incorrect_configuration`.
//! * Sentinels (`N/A`, `[N/A]`, `Not Supported`, `[Not Supported]`, `Unknown Error`) are unknown:
//!   no row. Every other section is skipped.
//! * Time: the log's `Timestamp` (nvidia-smi prints local time without a zone: read as UTC), else a
//!   timestamp line, else the driver's fallbacks; a new `NVSMI LOG` banner starts a new snapshot
//!   (`nvidia-smi -q -l <s>` appends them). Host: a `# host:` line, else the driver's fallbacks.

use chrono::{NaiveDateTime, TimeZone, Utc};

use crate::error::{Position, Result};
use crate::formats::{DirectiveState, LineReader, feed_lines};
use crate::read::ReadContext;
use crate::schema::Attribute;
use crate::timestamp::Stamp;

const NS_PER_S: i64 = 1_000_000_000;

/// True when the first bytes look like `nvidia-smi -q` output.
pub fn looks_like(text: &str) -> bool {
    if text.contains("==============NVSMI LOG==============") {
        return true;
    }
    // A log cut above its banner: a `GPU <bus id>` line followed by an indented `Product Name`.
    let mut gpu = false;
    for line in text.lines().take(200) {
        if parse_gpu_line(line).is_some() {
            gpu = true;
        } else if gpu && line.starts_with(' ') && line.trim_start().starts_with("Product Name") && line.contains(':') {
            return true;
        }
    }
    false
}

/// `GPU 00000000:18:00.0` (no indentation) → the bus id.
fn parse_gpu_line(line: &str) -> Option<&str> {
    let rest = line.trim_end().strip_prefix("GPU ")?;
    let id = rest.trim();
    let ok = !id.is_empty()
        && id.contains(':')
        && id.contains('.')
        && id.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.');
    ok.then_some(id)
}

/// `line N: ` for a warning, when the position has a line.
fn at(pos: Position) -> String {
    pos.line.map_or_else(String::new, |n| format!("line {n}: "))
}

/// A value nvidia-smi prints for "unknown": never a reading.
fn is_sentinel(v: &str) -> bool {
    let v = v.trim().trim_start_matches('[').trim_end_matches(']').trim();
    v.is_empty()
        || v.eq_ignore_ascii_case("N/A")
        || v.eq_ignore_ascii_case("Not Supported")
        || v.eq_ignore_ascii_case("Unknown Error")
        || v.eq_ignore_ascii_case("Not Available")
}

/// `Thu Nov 14 07:00:14 2024` (C `ctime`, local time without a zone): read as UTC.
fn parse_ctime(v: &str) -> Option<Stamp> {
    let words: Vec<&str> = v.split_whitespace().collect();
    if words.len() != 5 {
        return None;
    }
    let joined = format!("{} {} {} {}", words[1], words[2], words[4], words[3]);
    let dt = NaiveDateTime::parse_from_str(&joined, "%b %d %Y %H:%M:%S").ok()?;
    Some(Stamp { ns: Utc.from_utc_datetime(&dt).timestamp_nanos_opt()?, resolution_ns: NS_PER_S })
}

/// The attribute key of a row, from its section path and key; None: not read.
fn key_of(section: &[String], key: &str) -> Option<&'static str> {
    let sec: Vec<&str> = section.iter().map(String::as_str).collect();
    Some(match (sec.as_slice(), key) {
        ([], "Product Name") => "gpu_name",
        ([], "GPU UUID") => "gpu_uuid",
        ([], "Serial Number") => "gpu_serial",
        ([], "GPU Recovery Action") => "gpu_recovery_action",
        ([], "Chassis Serial Number") | (["Platform Info"], "Chassis Serial Number" | "RACK Serial Number") => {
            "gpu_chassis_serial"
        }
        (["Platform Info"], "Chassis Physical Slot Number") => "gpu_slot_index",
        (["Platform Info"], "Compute Slot Index") => "gpu_tray_index",
        (["Platform Info"] | [], "Module Id" | "Module ID") => "gpu_module_id",
        (["Fabric"], "State") => "fabric_state",
        (["Fabric"], "Status") => "fabric_status",
        (["Fabric"], "CliqueId" | "Clique Id" | "Clique ID") => "fabric_clique_id",
        (["Fabric"], "ClusterUUID" | "Cluster UUID") => "fabric_cluster_uuid",
        (["Fabric", "Health"], "Summary") => "fabric_health_summary",
        (["Fabric", "Health"], "Bandwidth") => "fabric_health_bandwidth",
        (["Fabric", "Health"], k) if k.starts_with("Route Recovery") => "fabric_route_recovery",
        (["Fabric", "Health"], "Route Unhealthy") => "fabric_route_unhealthy",
        (["Fabric", "Health"], "Access Timeout Recovery") => "fabric_access_timeout_recovery",
        (["Fabric", "Health"], "Incorrect Configuration") => "fabric_incorrect_configuration",
        _ => return None,
    })
}

/// Streaming reader for `nvidia-smi -q` text.
#[derive(Default)]
pub struct NvidiaSmiQReader {
    directives: DirectiveState,
    /// The log's own `Timestamp`, which dates the snapshot.
    log_time: Option<Stamp>,
    driver: Option<String>,
    gpu: Option<u32>,
    next_gpu: u32,
    /// Open sections under the GPU: (indentation, name).
    sections: Vec<(usize, String)>,
    warned_orphan: bool,
}

impl NvidiaSmiQReader {
    /// A reader for one input.
    pub fn new() -> Self {
        NvidiaSmiQReader::default()
    }

    fn attribute(&mut self, key: &str, value: &str, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Some(gpu) = self.gpu else { return Ok(()) };
        let time_ns = match self.log_time {
            Some(t) => ctx.stated_time(t),
            None => self.directives.time_ns(ctx)?,
        };
        let host = self.directives.host(ctx);
        let a = Attribute { time_ns, host: 0, device: 0, port: None, key, value };
        ctx.push_attribute(&host, &format!("gpu{gpu}"), &a)
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let line = line.trim_end();
        let t = line.trim_start();
        if t.is_empty() {
            return Ok(());
        }
        if t.contains("NVSMI LOG") {
            // a new snapshot: GPUs are numbered from 0 again
            self.gpu = None;
            self.next_gpu = 0;
            self.sections.clear();
            self.log_time = None;
            return Ok(());
        }
        let indent = line.len() - t.len() + line[..line.len() - t.len()].matches('\t').count() * 3;
        if indent == 0 {
            if let Some(bus) = parse_gpu_line(line) {
                let bus = bus.to_owned();
                self.gpu = Some(self.next_gpu);
                self.next_gpu = self.next_gpu.saturating_add(1);
                self.sections.clear();
                self.attribute("gpu_bus_id", &bus, ctx)?;
                if let Some(d) = self.driver.clone() {
                    self.attribute("driver_version", &d, ctx)?;
                }
                return Ok(());
            }
            if let Some((k, v)) = t.split_once(':') {
                let (k, v) = (k.trim(), v.trim());
                match k {
                    "Timestamp" => {
                        self.log_time = parse_ctime(v);
                        if self.log_time.is_none() && !is_sentinel(v) {
                            ctx.warn(format!("{}nvidia-smi Timestamp `{v}` not understood", at(pos)));
                        }
                        return Ok(());
                    }
                    "Driver Version" => {
                        self.driver = (!is_sentinel(v)).then(|| v.to_owned());
                        return Ok(());
                    }
                    "CUDA Version" | "Attached GPUs" | "HIC Info" => return Ok(()),
                    _ => {}
                }
            }
            // A top-level line that is none of the log's own: the GPU's block is over.
            self.gpu = None;
            self.directives.apply_line(t);
            return Ok(());
        }
        if self.gpu.is_none() {
            if !self.warned_orphan && t.contains(':') {
                self.warned_orphan = true;
                ctx.warn(format!("{}nvidia-smi -q rows before any `GPU <bus id>` line are skipped (`{t}`)", at(pos)));
            }
            return Ok(());
        }
        while self.sections.last().is_some_and(|(i, _)| *i >= indent) {
            self.sections.pop();
        }
        let Some((k, v)) = t.split_once(':') else {
            self.sections.push((indent, t.to_owned()));
            return Ok(());
        };
        let names: Vec<String> = self.sections.iter().map(|(_, n)| n.clone()).collect();
        let Some(key) = key_of(&names, k.trim()) else { return Ok(()) };
        let v = v.trim();
        if is_sentinel(v) {
            return Ok(());
        }
        self.attribute(key, v, ctx)
    }
}

impl LineReader for NvidiaSmiQReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |raw, pos, ctx| self.line(raw, pos, ctx))
    }

    fn finish(&mut self, _ctx: &mut ReadContext<'_>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_sentinels() {
        assert_eq!(parse_gpu_line("GPU 00000000:18:00.0"), Some("00000000:18:00.0"));
        assert_eq!(parse_gpu_line("GPU 0000:00:1E.0"), Some("0000:00:1E.0"));
        assert_eq!(parse_gpu_line("GPU 0: NVIDIA H800 (UUID: GPU-1)"), None);
        assert!(is_sentinel("N/A") && is_sentinel("[N/A]") && is_sentinel("[Not Supported]"));
        assert!(!is_sentinel("Completed"));
        let t = parse_ctime("Thu Nov 14 07:00:14 2024").expect("ctime");
        assert_eq!(t.ns, 1_731_567_614 * NS_PER_S);
        assert!(parse_ctime("Thu Nov 14 2024").is_none());
        assert!(looks_like("==============NVSMI LOG==============\n"));
        assert!(looks_like("GPU 00000000:18:00.0\n    Product Name      : NVIDIA H100\n"));
        assert!(!looks_like("GPU 0: NVIDIA H800 (UUID: GPU-1)\n         Link 0: 26.562 GB/s\n"));
        let fabric = ["Fabric".to_owned()];
        assert_eq!(key_of(&fabric, "CliqueId"), Some("fabric_clique_id"));
        let health = ["Fabric".to_owned(), "Health".to_owned()];
        assert_eq!(key_of(&health, "Route Recovery in progress"), Some("fabric_route_recovery"));
        assert_eq!(key_of(&[], "State"), None);
    }
}
