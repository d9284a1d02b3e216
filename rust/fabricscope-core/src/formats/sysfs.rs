//! sysfs counter trees (`/sys/class/{infiniband,net}`, live or copied) and `grep -H` dumps of them.
//!
//! Both inputs go through one mapping, [`emit_file`]: a file's path relative to its IB port, IB
//! device or net device directory plus its content gives the same rows whether it was read from a
//! tree or from a `path:value` line.
//!
//! What is read (everything else is ignored, so a live tree is never walked through `device/`,
//! `subsystem/` or other symlinks that lead back up):
//!
//! | relative path | rows |
//! |---|---|
//! | IB port `counters/*`, `counters_ext/*`, `hw_counters/*` | counter samples (`lookup(Sysfs, "<dir>/<file>")`, data words x4); unknown files keep the file name; `N/A (no PMA)` is a null value |
//! | IB port `hw_counters/lifespan` | attribute `hw_counters.lifespan_ms` (a cache lifetime, not a counter) |
//! | IB port `rate` | gauges `link_rate_bytes_per_s`, `link_width_lanes`; attribute `rate` |
//! | IB port `state`, `phys_state` | gauges `port_state_id`, `port_phys_state_id`; attributes with the state name |
//! | IB port `link_layer`, `lid`, `sm_lid`, `cap_mask` | attributes |
//! | IB device `node_guid`, `sys_image_guid` | attributes, plus `<name>_hex` normalised to `0x` + 16 hex digits |
//! | IB device `fw_ver`, `board_id`, `hca_type`, `node_desc` | attributes (port null) |
//! | net `statistics/*`, `carrier_changes`, `speed` | samples (`speed` -1 or unreadable: skipped) |
//! | net `operstate`, `mtu`, `address`, `duplex` | attributes |
//! | net `device/infiniband/<rdma dev>` (listed, not walked), `dev_port` | attribute `netdev` of the RDMA device's port `dev_port` + 1: a RoCE NIC's two names |
//! | net `ecn/roce_{np,rp}/**` | attributes keyed `ecn.roce_np.enable.3`: DCQCN configuration |

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, Position, Result, excerpt};
use crate::formats::{Directive, LineReader, feed_lines, parse_directive};
use crate::read::ReadContext;
use crate::schema::{Attribute, Sample, Value};
use crate::timestamp::parse_stamp_line;
use crate::vocabulary::{self, Kind, Namespace};

/// Largest sysfs attribute we read. The kernel caps them at one page; a bigger file is not sysfs.
const MAX_FILE_BYTES: u64 = 64 << 10;

/// IB device files that become attributes.
const IB_DEVICE_FILES: &[&str] = &["board_id", "fw_ver", "hca_type", "node_desc", "node_guid", "sys_image_guid"];
/// IB port directories whose files are counters.
const IB_COUNTER_DIRS: &[&str] = &["counters", "counters_ext", "hw_counters"];
/// Single files of an IB port directory that we map.
const IB_PORT_FILES: &[&str] = &["cap_mask", "lid", "link_layer", "phys_state", "rate", "sm_lid", "state"];
/// Single files of a net device directory that we map.
const NET_FILES: &[&str] = &["address", "carrier_changes", "duplex", "mtu", "operstate", "speed"];
/// Net files that fail to read whenever the link is down (EINVAL): skipped without a warning.
const NET_QUIET_FILES: &[&str] = &["duplex", "speed"];

/// Which directory a relative path is relative to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// `class/infiniband/<dev>/`.
    IbDevice,
    /// `class/infiniband/<dev>/ports/<n>/`.
    IbPort(u16),
    /// `class/net/<if>/`.
    Net,
}

/// Where rows of one file go.
struct Target<'a> {
    time_ns: i64,
    host: &'a str,
    device: &'a str,
    owner: Owner,
}

/// Where a problem is reported: a file of a tree, or a line of a dump.
#[derive(Clone, Copy)]
enum Loc<'a> {
    File(&'a Path),
    Line(Position),
}

fn bad(ctx: &mut ReadContext<'_>, loc: Loc<'_>, expected: &str, found: &[u8]) -> Result<()> {
    match loc {
        Loc::Line(pos) => ctx.bad_record(pos, expected, found),
        Loc::File(path) => ctx.bad_record_error(Error::Format {
            path: path.to_path_buf(),
            position: Position { line: Some(1), byte_offset: 0 },
            expected: expected.to_owned(),
            found: excerpt(found, 80),
        }),
    }
}

impl Target<'_> {
    fn port(&self) -> Option<u16> {
        match self.owner {
            Owner::IbPort(p) => Some(p),
            Owner::IbDevice | Owner::Net => None,
        }
    }

    fn attribute(&self, ctx: &mut ReadContext<'_>, key: &str, value: &str) -> Result<()> {
        if value.is_empty() {
            return Ok(());
        }
        let a = Attribute {
            time_ns: self.time_ns,
            host: ctx.samples.host(self.host),
            device: ctx.samples.device(self.device),
            port: self.port(),
            key,
            value,
        };
        ctx.push_attribute(self.host, self.device, &a)
    }

    fn sample(
        &self,
        ctx: &mut ReadContext<'_>,
        counter: &str,
        value: Value,
        scale: u32,
        is_counter: bool,
    ) -> Result<()> {
        let s = Sample {
            time_ns: self.time_ns,
            host: ctx.samples.host(self.host),
            device: ctx.samples.device(self.device),
            port: self.port(),
            priority: None,
            counter: ctx.samples.counter(counter),
            value,
            scale,
            is_counter,
        };
        ctx.push(&s)
    }

    /// A gauge named by its canonical counter (sysfs text such as `rate` has no raw spelling).
    fn gauge(&self, ctx: &mut ReadContext<'_>, canonical: &str, value: u64) -> Result<()> {
        match vocabulary::counter(canonical) {
            Some(def) => self.sample(ctx, def.name, Value::U64(value), 1, def.kind == Kind::Counter),
            None => Ok(()),
        }
    }

    /// A one-number file: vocabulary spelling `rel`, else the raw file name as a counter.
    fn counter_file(&self, ctx: &mut ReadContext<'_>, rel: &str, text: &str, loc: Loc<'_>) -> Result<()> {
        let value = if text.starts_with("N/A") {
            // iWARP/RoCE devices without a PMA: the counter exists but has no value.
            Value::Null
        } else if let Some(v) = parse_u64(text) {
            Value::U64(v)
        } else {
            return bad(ctx, loc, "an unsigned 64-bit decimal value or `N/A (no PMA)`", text.as_bytes());
        };
        if let Some(m) = vocabulary::lookup(Namespace::Sysfs, rel) {
            self.sample(ctx, m.def.name, value.multiplied(m.multiply), m.scale, m.def.kind == Kind::Counter)
        } else {
            let raw = rel.rsplit('/').next().unwrap_or(rel);
            self.sample(ctx, raw, value, 1, true)
        }
    }
}

/// Map one sysfs file to rows. `rel` is relative to the owner directory (`counters/port_xmit_data`,
/// `rate`, `node_guid`, `statistics/rx_bytes`, `ecn/roce_np/enable/3`); unknown paths give nothing.
fn emit_file(ctx: &mut ReadContext<'_>, t: &Target<'_>, rel: &str, content: &[u8], loc: Loc<'_>) -> Result<()> {
    let Ok(text) = std::str::from_utf8(content) else {
        return bad(ctx, loc, "UTF-8 text", content);
    };
    if text.chars().any(|c| c.is_control() && !c.is_whitespace()) {
        return bad(ctx, loc, "printable text", content);
    }
    let v = text.trim();
    match t.owner {
        Owner::IbDevice => match rel {
            "node_guid" | "sys_image_guid" => {
                t.attribute(ctx, rel, v)?;
                if let Some(hex) = crate::guid::normalize_guid(v) {
                    t.attribute(ctx, &format!("{rel}_hex"), &hex)?;
                }
                Ok(())
            }
            "fw_ver" | "board_id" | "hca_type" | "node_desc" => t.attribute(ctx, rel, v),
            _ => Ok(()),
        },
        Owner::IbPort(_) => match rel {
            // The kernel re-reads hardware only when this many ms have passed: not a counter.
            "hw_counters/lifespan" => t.attribute(ctx, "hw_counters.lifespan_ms", v),
            "rate" => {
                let Some((bytes_per_s, lanes)) = parse_rate(v) else {
                    return bad(ctx, loc, "a rate like `400 Gb/sec (4X NDR)`", v.as_bytes());
                };
                t.gauge(ctx, "link_rate_bytes_per_s", bytes_per_s)?;
                if let Some(l) = lanes {
                    t.gauge(ctx, "link_width_lanes", l)?;
                }
                t.attribute(ctx, "rate", v)
            }
            "state" | "phys_state" => {
                let Some((id, name)) = parse_state(v) else {
                    return bad(ctx, loc, "a state like `4: ACTIVE`", v.as_bytes());
                };
                let gauge = if rel == "state" { "port_state_id" } else { "port_phys_state_id" };
                t.gauge(ctx, gauge, id)?;
                t.attribute(ctx, rel, name)
            }
            "link_layer" | "lid" | "sm_lid" | "cap_mask" => t.attribute(ctx, rel, v),
            _ => match rel.split_once('/') {
                Some((dir, file)) if IB_COUNTER_DIRS.contains(&dir) && !file.is_empty() && !file.contains('/') => {
                    t.counter_file(ctx, rel, v, loc)
                }
                _ => Ok(()),
            },
        },
        Owner::Net => {
            if rel == "speed" {
                // SPEED_UNKNOWN is -1, printed as `-1` or, by older kernels, as its u32 form.
                if v == "-1" || v == "4294967295" {
                    return Ok(());
                }
                return t.counter_file(ctx, rel, v, loc);
            }
            if rel == "carrier_changes" {
                return t.counter_file(ctx, rel, v, loc);
            }
            if let Some(file) = rel.strip_prefix("statistics/") {
                if !file.is_empty() && !file.contains('/') {
                    return t.counter_file(ctx, rel, v, loc);
                }
                return Ok(());
            }
            if matches!(rel, "operstate" | "mtu" | "address" | "duplex") {
                return t.attribute(ctx, rel, v);
            }
            if rel.starts_with("ecn/roce_np/") || rel.starts_with("ecn/roce_rp/") {
                return t.attribute(ctx, &rel.replace('/', "."), v);
            }
            Ok(())
        }
    }
}

fn parse_u64(s: &str) -> Option<u64> {
    crate::number::parse_u64_digits(s.as_bytes())
}

/// `400 Gb/sec (4X NDR)` -> (`50_000_000_000` B/s, `Some(4)`). The kernel prints the effective data
/// rate with at most a `.5` fraction; up to six fraction digits stay exact (1 Gb/s = 125e6 B/s).
pub(crate) fn parse_rate(v: &str) -> Option<(u64, Option<u64>)> {
    let (num, rest) = v.split_once(' ')?;
    let rest = rest.trim_start().strip_prefix("Gb/sec")?;
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if frac.len() > 6 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut bytes = parse_u64(int)?.checked_mul(125_000_000)?;
    if !frac.is_empty() {
        let digits = parse_u64(frac)?;
        let per_digit_unit = 125_000_000 / 10u64.pow(frac.len() as u32);
        bytes = bytes.checked_add(digits * per_digit_unit)?;
    }
    let lanes = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.split([' ', ')']).next())
        .and_then(|w| w.strip_suffix('X'))
        .and_then(parse_u64);
    Some((bytes, lanes))
}

/// `4: ACTIVE` -> (4, `ACTIVE`).
pub(crate) fn parse_state(v: &str) -> Option<(u64, &str)> {
    let (id, name) = v.split_once(':')?;
    Some((parse_u64(id.trim())?, name.trim()))
}

// ---------------------------------------------------------------------------------------------
// Trees

/// What the root handed to [`read_tree`] is.
enum Layout {
    /// `class/infiniband` and/or `class/net` directories to list.
    Classes {
        ib: Option<PathBuf>,
        net: Option<PathBuf>,
    },
    IbDevice {
        dir: PathBuf,
        device: String,
    },
    IbPort {
        dir: PathBuf,
        device: String,
        port: u16,
    },
    NetDevice {
        dir: PathBuf,
        device: String,
    },
}

/// A directory's own name, resolving `.` and `..` when the path ends in one.
fn name_of(p: &Path) -> Option<String> {
    match p.file_name() {
        Some(n) => Some(n.to_string_lossy().into_owned()),
        None => std::fs::canonicalize(p).ok()?.file_name().map(|n| n.to_string_lossy().into_owned()),
    }
}

fn dir_if(p: PathBuf) -> Option<PathBuf> {
    p.is_dir().then_some(p)
}

impl Layout {
    fn of(root: &Path) -> Option<Layout> {
        let root = if root.join("sys/class").is_dir() { root.join("sys") } else { root.to_path_buf() };
        if root.join("class").is_dir() {
            return Some(Layout::Classes {
                ib: dir_if(root.join("class/infiniband")),
                net: dir_if(root.join("class/net")),
            });
        }
        if root.join("infiniband").is_dir() || root.join("net").is_dir() {
            return Some(Layout::Classes { ib: dir_if(root.join("infiniband")), net: dir_if(root.join("net")) });
        }
        let name = name_of(&root)?;
        if root.join("ports").is_dir() {
            return Some(Layout::IbDevice { dir: root, device: name });
        }
        if name == "infiniband" {
            return Some(Layout::Classes { ib: Some(root), net: None });
        }
        if name == "net" {
            return Some(Layout::Classes { ib: None, net: Some(root) });
        }
        // Live sysfs reaches devices through symlinks: judge by where the directory really is.
        let canon = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
        let parent = canon.parent();
        let parent_is = |n: &str| parent.and_then(Path::file_name).is_some_and(|p| p == n);
        if root.join("statistics").is_dir() || root.join("operstate").is_file() || parent_is("net") {
            return Some(Layout::NetDevice { dir: root, device: name });
        }
        if parent_is("ports") {
            let port = name.parse::<u16>().ok()?;
            let device = parent.and_then(Path::parent).and_then(name_of)?;
            return Some(Layout::IbPort { dir: root, device, port });
        }
        None
    }
}

/// Read a copied (or live) sysfs tree rooted at `root`: `<x>/sys`, `<x>/sys/class`,
/// `.../class/infiniband`, `.../class/net`, one IB device, one of its `ports/<n>`, or one net
/// device. All rows share one time: a `timestamp` file in the root or its parent, else the
/// driver's fallbacks.
pub fn read_tree(root: &Path, ctx: &mut ReadContext<'_>) -> Result<()> {
    let Some(layout) = Layout::of(root) else {
        return Err(Error::UnknownFormat {
            path: root.to_path_buf(),
            reason: "no class/infiniband, class/net, ports/<n> or statistics/ under this directory".into(),
        });
    };
    let time_ns = tree_time(root, ctx)?;
    let host = ctx.fallback_host();
    let walk = Walk { host: &host, time_ns };
    match layout {
        Layout::Classes { ib, net } => {
            if ib.is_none() && net.is_none() {
                ctx.warn("no class/infiniband or class/net under this sysfs tree");
            }
            if let Some(ib) = ib {
                for (name, path) in list_dir(ctx, &ib) {
                    if ctx.cancelled() {
                        break;
                    }
                    if path.is_dir() {
                        walk.ib_device(ctx, &path, &name)?;
                    }
                }
            }
            if let Some(net) = net {
                for (name, path) in list_dir(ctx, &net) {
                    if ctx.cancelled() {
                        break;
                    }
                    if path.is_dir() {
                        walk.net_device(ctx, &path, &name)?;
                    }
                }
            }
        }
        Layout::IbDevice { dir, device } => walk.ib_device(ctx, &dir, &device)?,
        Layout::IbPort { dir, device, port } => walk.ib_port(ctx, &dir, &device, port)?,
        Layout::NetDevice { dir, device } => walk.net_device(ctx, &dir, &device)?,
    }
    Ok(())
}

/// The tree's time: a `timestamp` file (`date +%s > timestamp` next to the copy) or the fallbacks.
fn tree_time(root: &Path, ctx: &mut ReadContext<'_>) -> Result<i64> {
    let parent = root.parent().filter(|p| !p.as_os_str().is_empty());
    for dir in std::iter::once(root).chain(parent) {
        let file = dir.join("timestamp");
        if !file.is_file() {
            continue;
        }
        match read_small(&file) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                if let Some(t) = parse_stamp_line(text.trim()) {
                    return Ok(ctx.stated_time(t));
                }
                bad(ctx, Loc::File(&file), "a timestamp (`date +%s`, `date -Is`)", &bytes)?;
            }
            Err(e) => ctx.warn(format!("{}: not read: {e}", file.display())),
        }
        break;
    }
    ctx.fallback_time_ns()
}

/// Sorted `(name, path)` entries of a directory; an unlistable directory is warned and empty.
fn list_dir(ctx: &mut ReadContext<'_>, dir: &Path) -> Vec<(String, PathBuf)> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            ctx.warn(format!("{}: not listed: {e}", dir.display()));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for entry in rd {
        match entry {
            Ok(e) => out.push((e.file_name().to_string_lossy().into_owned(), e.path())),
            Err(e) => ctx.warn(format!("{}: not listed: {e}", dir.display())),
        }
    }
    out.sort();
    out
}

/// At most [`MAX_FILE_BYTES`] + 1 bytes of a file (the extra byte tells an oversized file).
///
/// Only a regular file is read (sysfs attributes are regular files): a FIFO, a socket or a device
/// in a copied tree is an error of that file, found before it is opened and again on the open
/// file, whose open never waits for a FIFO's writer (`O_NONBLOCK`).
fn read_small(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let refuse = || std::io::Error::other("not a regular file");
    if !std::fs::metadata(path)?.is_file() {
        return Err(refuse());
    }
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    if !file.metadata()?.is_file() {
        return Err(refuse());
    }
    let mut buf = Vec::with_capacity(64);
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut buf)?;
    Ok(buf)
}

struct Walk<'h> {
    host: &'h str,
    time_ns: i64,
}

impl Walk<'_> {
    /// Read one file and map it. Read failures (EACCES, EINVAL, EOPNOTSUPP on live sysfs, dangling
    /// links in copies) skip the file with a warning; `quiet` skips without one.
    fn file(
        &self,
        ctx: &mut ReadContext<'_>,
        path: &Path,
        device: &str,
        owner: Owner,
        rel: &str,
        quiet: bool,
    ) -> Result<()> {
        let bytes = match read_small(path) {
            Ok(b) => b,
            Err(e) => {
                if !quiet {
                    ctx.warn(format!("{}: not read: {e}", path.display()));
                }
                return Ok(());
            }
        };
        if bytes.len() as u64 > MAX_FILE_BYTES {
            let head = bytes.get(..80).unwrap_or(&bytes);
            return bad(ctx, Loc::File(path), "a sysfs attribute of at most 64 KiB", head);
        }
        let t = Target { time_ns: self.time_ns, host: self.host, device, owner };
        emit_file(ctx, &t, rel, &bytes, Loc::File(path))
    }

    fn ib_device(&self, ctx: &mut ReadContext<'_>, dir: &Path, device: &str) -> Result<()> {
        let entries = list_dir(ctx, dir);
        for (name, path) in &entries {
            if IB_DEVICE_FILES.contains(&name.as_str()) && !path.is_dir() {
                self.file(ctx, path, device, Owner::IbDevice, name, false)?;
            }
        }
        let Some((_, ports_dir)) = entries.iter().find(|(n, p)| n == "ports" && p.is_dir()) else {
            return Ok(());
        };
        let mut ports: Vec<(u16, PathBuf)> =
            list_dir(ctx, ports_dir).into_iter().filter_map(|(n, p)| Some((n.parse::<u16>().ok()?, p))).collect();
        ports.sort();
        for (port, path) in ports {
            if ctx.cancelled() {
                break;
            }
            if path.is_dir() {
                self.ib_port(ctx, &path, device, port)?;
            }
        }
        Ok(())
    }

    fn ib_port(&self, ctx: &mut ReadContext<'_>, dir: &Path, device: &str, port: u16) -> Result<()> {
        let owner = Owner::IbPort(port);
        for (name, path) in list_dir(ctx, dir) {
            if IB_COUNTER_DIRS.contains(&name.as_str()) && path.is_dir() {
                for (file, fpath) in list_dir(ctx, &path) {
                    self.file(ctx, &fpath, device, owner, &format!("{name}/{file}"), false)?;
                }
            } else if IB_PORT_FILES.contains(&name.as_str()) {
                self.file(ctx, &path, device, owner, &name, false)?;
            }
        }
        Ok(())
    }

    fn net_device(&self, ctx: &mut ReadContext<'_>, dir: &Path, device: &str) -> Result<()> {
        for (name, path) in list_dir(ctx, dir) {
            if name == "statistics" && path.is_dir() {
                for (file, fpath) in list_dir(ctx, &path) {
                    self.file(ctx, &fpath, device, Owner::Net, &format!("statistics/{file}"), false)?;
                }
            } else if name == "ecn" && path.is_dir() {
                self.ecn(ctx, &path, device, "ecn", 0)?;
            } else if NET_FILES.contains(&name.as_str()) {
                let quiet = NET_QUIET_FILES.contains(&name.as_str());
                self.file(ctx, &path, device, Owner::Net, &name, quiet)?;
            }
        }
        self.rdma_of_netdev(ctx, dir, device)
    }

    /// `class/net/<if>/device/infiniband/<rdma dev>`: the RDMA device of the same PCI function (a
    /// RoCE NIC's two names). Only that directory is listed, never walked. The port is
    /// `dev_port` + 1 (`dev_port` numbers a function's ports from 0, RDMA ports from 1); without
    /// `dev_port` it is left unknown. Emitted as the `netdev` attribute of the RDMA port, as
    /// `ibdev2netdev` and `rdma link show` give it.
    fn rdma_of_netdev(&self, ctx: &mut ReadContext<'_>, dir: &Path, netdev: &str) -> Result<()> {
        let ib = dir.join("device").join("infiniband");
        if !ib.is_dir() {
            return Ok(());
        }
        let port = read_small(&dir.join("dev_port"))
            .ok()
            .and_then(|b| String::from_utf8_lossy(&b).trim().parse::<u16>().ok())
            .and_then(|p| p.checked_add(1));
        for (rdma, _) in list_dir(ctx, &ib) {
            let a = Attribute {
                time_ns: self.time_ns,
                host: ctx.samples.host(self.host),
                device: ctx.samples.device(&rdma),
                port,
                key: "netdev",
                value: netdev,
            };
            ctx.push_attribute(self.host, &rdma, &a)?;
        }
        Ok(())
    }

    /// `ecn/roce_{np,rp}/<param>` and `ecn/roce_{np,rp}/enable/<prio>`: three levels at most.
    fn ecn(&self, ctx: &mut ReadContext<'_>, dir: &Path, device: &str, rel: &str, depth: u8) -> Result<()> {
        for (name, path) in list_dir(ctx, dir) {
            let child = format!("{rel}/{name}");
            if depth == 0 && name != "roce_np" && name != "roce_rp" {
                continue;
            }
            if path.is_dir() {
                if depth < 2 {
                    self.ecn(ctx, &path, device, &child, depth + 1)?;
                }
            } else if depth > 0 {
                self.file(ctx, &path, device, Owner::Net, &child, false)?;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// grep dumps

/// A `path:value` line split and located.
struct GrepLine<'a> {
    host: Option<&'a str>,
    device: &'a str,
    owner: Owner,
    rel: String,
    value: &'a str,
}

/// An optional `host: ` prefix as pdsh and clush print it: no `/`, `:` or blank in the host, and a
/// path after it.
fn split_host_prefix(line: &str) -> (Option<&str>, &str) {
    if let Some((h, rest)) = line.split_once(": ") {
        let rest = rest.trim_start();
        if !h.is_empty() && !h.contains(['/', ':']) && !h.contains(char::is_whitespace) && rest.contains('/') {
            return (Some(h), rest);
        }
    }
    (None, line)
}

/// Locate a sysfs path: its owner directory, device name and the path relative to the owner.
/// Accepts absolute paths (also through `/sys/devices/pci...`) and relative ones
/// (`class/infiniband/...`, `mlx5_0/ports/1/...`, `eth0/statistics/...`).
fn locate(path: &str) -> Option<(Owner, &str, String)> {
    if path.contains(char::is_whitespace) {
        return None;
    }
    let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
    // The last marker wins, so a PCI path (`/sys/devices/pci.../infiniband/mlx5_0/ports/1/...`)
    // and a relative one (`mlx5_0/ports/1/...`) locate alike.
    let at = |name: &str| comps.iter().rposition(|c| *c == name);
    if let Some(k) = at("ports")
        && let (Some(dev), Some(port), Some(rest)) =
            (k.checked_sub(1).and_then(|d| comps.get(d)), comps.get(k + 1), comps.get(k + 2..))
        && (1..=2).contains(&rest.len())
        && let Ok(port) = port.parse::<u16>()
    {
        return Some((Owner::IbPort(port), dev, rest.join("/")));
    }
    if let Some(k) = at("infiniband")
        && let (Some(dev), Some([file])) = (comps.get(k + 1), comps.get(k + 2..))
    {
        return Some((Owner::IbDevice, dev, (*file).to_owned()));
    }
    if let Some(k) = at("net")
        && let (Some(dev), Some(rest)) = (comps.get(k + 1), comps.get(k + 2..))
        && (1..=4).contains(&rest.len())
    {
        return Some((Owner::Net, dev, rest.join("/")));
    }
    if let Some(k) = at("statistics")
        && let (Some(dev), Some(tail @ [_, _])) = (k.checked_sub(1).and_then(|d| comps.get(d)), comps.get(k..))
    {
        return Some((Owner::Net, dev, tail.join("/")));
    }
    None
}

/// Split `path:value` at the first `:` that ends a recognisable sysfs path. Earlier colons belong
/// to PCI addresses (`/sys/devices/pci0000:00/0000:00:02.0/...`); later ones to values (`4: ACTIVE`,
/// `0a7f:bc12:45ef:d23b`), which may also contain `/` (`40 Gb/sec`, `N/A (no PMA)`).
fn parse_grep_line(line: &str) -> Option<GrepLine<'_>> {
    let (host, rest) = split_host_prefix(line);
    for (i, _) in rest.match_indices(':') {
        let (Some(path), Some(value)) = (rest.get(..i), rest.get(i + 1..)) else { continue };
        if let Some((owner, device, rel)) = locate(path) {
            return Some(GrepLine { host, device, owner, rel, value });
        }
    }
    None
}

/// Streaming reader for `path:value` lines (`grep -H . /sys/class/infiniband/*/ports/*/counters/*`,
/// optionally through pdsh/clush, with `date` lines between snapshots).
#[derive(Default)]
pub struct SysfsGrepReader {
    /// Last timestamp line; it dates the lines after it.
    time: Option<crate::timestamp::Stamp>,
    /// Last `# host: NAME` line.
    host: Option<String>,
    fallback_time: Option<i64>,
    fallback_host: Option<String>,
}

impl SysfsGrepReader {
    /// A reader for one input.
    pub fn new() -> Self {
        SysfsGrepReader::default()
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return Ok(());
        }
        if trimmed.contains('/')
            && let Some(g) = parse_grep_line(trimmed)
        {
            return self.emit(&g, pos, ctx);
        }
        match parse_directive(trimmed) {
            Some(Directive::Time(t)) => self.time = Some(t),
            Some(Directive::Host(h)) => self.host = Some(h),
            Some(Directive::Device(_)) => {}
            None if trimmed.starts_with('#') || trimmed.starts_with("$ ") => {}
            None => return ctx.bad_record(pos, "a `<sysfs path>:<value>` line or a timestamp line", raw),
        }
        Ok(())
    }

    fn emit(&mut self, g: &GrepLine<'_>, pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let time_ns = match self.time {
            Some(t) => ctx.stated_time(t),
            None => match self.fallback_time {
                Some(t) => t,
                None => *self.fallback_time.insert(ctx.fallback_time_ns()?),
            },
        };
        let fallback;
        let host = match (g.host, &self.host) {
            (Some(h), _) => h,
            (None, Some(h)) => h.as_str(),
            (None, None) => {
                fallback = self.fallback_host.get_or_insert_with(|| ctx.fallback_host()).clone();
                fallback.as_str()
            }
        };
        let t = Target { time_ns, host, device: g.device, owner: g.owner };
        emit_file(ctx, &t, &g.rel, g.value.as_bytes(), Loc::Line(pos))
    }
}

impl LineReader for SysfsGrepReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |line, pos, ctx| self.line(line, pos, ctx))
    }

    fn finish(&mut self, _ctx: &mut ReadContext<'_>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_exact_bytes_per_second() {
        assert_eq!(parse_rate("25 Gb/sec (1X EDR)"), Some((3_125_000_000, Some(1))));
        assert_eq!(parse_rate("400 Gb/sec (4X NDR)"), Some((50_000_000_000, Some(4))));
        assert_eq!(parse_rate("56 Gb/sec (4X FDR)"), Some((7_000_000_000, Some(4))));
        assert_eq!(parse_rate("2.5 Gb/sec (1X SDR)"), Some((312_500_000, Some(1))));
        assert_eq!(parse_rate("10 Gb/sec (4X)"), Some((1_250_000_000, Some(4))));
        assert_eq!(parse_rate("40 Gb/sec"), Some((5_000_000_000, None)));
        assert_eq!(parse_rate("fast"), None);
        assert_eq!(parse_rate("-1 Gb/sec (4X)"), None);
        assert_eq!(parse_rate("99999999999999999999 Gb/sec (4X)"), None);
    }

    #[test]
    fn states_split_id_and_name() {
        assert_eq!(parse_state("4: ACTIVE"), Some((4, "ACTIVE")));
        assert_eq!(parse_state("5: LinkUp"), Some((5, "LinkUp")));
        assert_eq!(parse_state("ACTIVE"), None);
    }

    #[test]
    fn grep_lines_split_after_the_path() {
        let g = parse_grep_line("/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE").expect("line");
        assert_eq!((g.device, g.owner, g.rel.as_str(), g.value), ("mlx5_0", Owner::IbPort(1), "state", "4: ACTIVE"));
        let g = parse_grep_line(
            "/sys/devices/pci0000:00/0000:00:02.0/0000:03:00.0/infiniband/mlx5_1/ports/2/counters/port_xmit_data:9",
        )
        .expect("pci");
        assert_eq!(
            (g.device, g.owner, g.rel.as_str(), g.value),
            ("mlx5_1", Owner::IbPort(2), "counters/port_xmit_data", "9")
        );
        let g = parse_grep_line("mlx4_0/ports/1/rate:40 Gb/sec (4X QDR)").expect("relative");
        assert_eq!((g.rel.as_str(), g.value), ("rate", "40 Gb/sec (4X QDR)"));
        let g = parse_grep_line("/sys/class/infiniband/i40iw0/ports/1/counters/symbol_error:N/A (no PMA)").expect("na");
        assert_eq!(g.value, "N/A (no PMA)");
        let g = parse_grep_line("/sys/class/infiniband/mlx5_0/node_guid:0a7f:bc12:45ef:d23b").expect("guid");
        assert_eq!((g.owner, g.rel.as_str(), g.value), (Owner::IbDevice, "node_guid", "0a7f:bc12:45ef:d23b"));
        let g = parse_grep_line("gpu01: /sys/class/net/eth0/ecn/roce_np/enable/3:1").expect("pdsh");
        assert_eq!(
            (g.host, g.device, g.owner, g.rel.as_str()),
            (Some("gpu01"), "eth0", Owner::Net, "ecn/roce_np/enable/3")
        );
        assert!(parse_grep_line("rx_packets: 5").is_none());
        assert!(parse_grep_line("/tmp/some/file:5").is_none());
    }
}
