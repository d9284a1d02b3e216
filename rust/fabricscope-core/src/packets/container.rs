//! Capture containers: classic pcap (both byte orders, µs/ns, the "modified" variant) and pcapng
//! (SHB/IDB/EPB/SPB/PB, unknown blocks skipped, per-interface `if_tsresol`/`if_tsoffset`, several
//! sections with different byte orders). Streams the input through a bounded buffer: memory is
//! the largest record, never the file.

use std::io::Read;

use crate::error::{Error, Result};

/// Largest record or block we accept (a 256 KiB snaplen is the libpcap maximum; leave room).
pub const MAX_RECORD: usize = 16 << 20;

const READ_CHUNK: usize = 1 << 20;

/// A bounded, growable window over a stream.
///
/// The bytes the driver already read (`head`) are parsed in place; only when a record runs past
/// them is a buffer allocated (once) and the rest streamed through it: each refill moves the
/// unread bytes (less than one record) to the front and reads straight into the free tail. The
/// buffer grows only for a record larger than itself.
pub struct Stream<'a> {
    rest: &'a mut dyn Read,
    head: &'a [u8],
    /// True while the window is `head`; false once bytes come from `buf`.
    on_head: bool,
    buf: Vec<u8>,
    pos: usize,
    /// End of the valid bytes in `buf` (`buf[filled..]` is scratch).
    filled: usize,
    /// Stream offset of the window's first byte (`head[0]` or `buf[0]`).
    base: u64,
    eof: bool,
}

impl<'a> Stream<'a> {
    /// Start with the bytes the driver already read.
    pub fn new(head: &'a [u8], rest: &'a mut dyn Read) -> Self {
        Stream { rest, head, on_head: true, buf: Vec::new(), pos: 0, filled: 0, base: 0, eof: false }
    }

    /// Offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// The unread bytes in the window.
    #[inline]
    pub fn window(&self) -> &[u8] {
        if self.on_head {
            self.head.get(self.pos..).unwrap_or(&[])
        } else {
            self.buf.get(self.pos..self.filled).unwrap_or(&[])
        }
    }

    /// Make at least `n` bytes available. Returns false when the stream ends first.
    #[inline]
    pub fn ensure(&mut self, n: usize) -> std::io::Result<bool> {
        let end = if self.on_head { self.head.len() } else { self.filled };
        if end.saturating_sub(self.pos) >= n {
            return Ok(true);
        }
        self.refill(n)
    }

    #[cold]
    fn refill(&mut self, n: usize) -> std::io::Result<bool> {
        if self.on_head {
            // Leave the head: carry its unread tail into the stream buffer.
            let tail = self.head.get(self.pos..).unwrap_or(&[]);
            self.buf = vec![0u8; (2 * READ_CHUNK).max(n).max(tail.len())];
            self.buf[..tail.len()].copy_from_slice(tail);
            self.filled = tail.len();
            self.base += self.pos as u64;
            self.pos = 0;
            self.on_head = false;
        }
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.filled, 0);
            self.filled -= self.pos;
            self.base += self.pos as u64;
            self.pos = 0;
        }
        if self.buf.len() < n {
            self.buf.resize(n.max(self.buf.len() * 2), 0);
        }
        while self.filled < n {
            let got = loop {
                match self.rest.read(&mut self.buf[self.filled..]) {
                    Ok(k) => break k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            };
            if got == 0 {
                self.eof = true;
                return Ok(false);
            }
            self.filled += got;
        }
        Ok(true)
    }

    /// Skip `n` bytes of the window (must be available).
    #[inline]
    pub fn consume(&mut self, n: usize) {
        let end = if self.on_head { self.head.len() } else { self.filled };
        self.pos = (self.pos + n).min(end);
    }

    /// True when nothing is left.
    pub fn at_end(&mut self) -> std::io::Result<bool> {
        Ok(!self.ensure(1)?)
    }
}

/// Byte order of a container section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    /// Little-endian.
    Little,
    /// Big-endian.
    Big,
}

impl Endian {
    /// Read a u16 at `off`.
    #[inline]
    pub fn u16(self, b: &[u8], off: usize) -> Option<u16> {
        let a: [u8; 2] = b.get(off..off + 2)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u16::from_le_bytes(a),
            Endian::Big => u16::from_be_bytes(a),
        })
    }

    /// Read a u32 at `off`.
    #[inline]
    pub fn u32(self, b: &[u8], off: usize) -> Option<u32> {
        let a: [u8; 4] = b.get(off..off + 4)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u32::from_le_bytes(a),
            Endian::Big => u32::from_be_bytes(a),
        })
    }

    /// Read a u64 at `off`.
    #[inline]
    pub fn u64(self, b: &[u8], off: usize) -> Option<u64> {
        let a: [u8; 8] = b.get(off..off + 8)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u64::from_le_bytes(a),
            Endian::Big => u64::from_be_bytes(a),
        })
    }
}

/// Classic pcap header facts.
#[derive(Debug, Clone, Copy)]
pub struct PcapHeader {
    /// Byte order.
    pub endian: Endian,
    /// Nanosecond (true) or microsecond timestamps.
    pub nanos: bool,
    /// Kuznetsov "modified" format: 24-byte record headers.
    pub modified: bool,
    /// Snap length.
    pub snaplen: u32,
    /// LINKTYPE (FCS bits masked off).
    pub linktype: u16,
    /// FCS bytes at the end of each full frame (from the FCS bits of the link-type field).
    pub fcs_len: u8,
}

/// Recognise the pcap magic. `None` when it is not classic pcap.
pub fn pcap_magic(b: &[u8]) -> Option<(Endian, bool, bool)> {
    let m: [u8; 4] = b.get(..4)?.try_into().ok()?;
    match u32::from_le_bytes(m) {
        0xA1B2_C3D4 => Some((Endian::Little, false, false)),
        0xA1B2_3C4D => Some((Endian::Little, true, false)),
        0xD4C3_B2A1 => Some((Endian::Big, false, false)),
        0x4D3C_B2A1 => Some((Endian::Big, true, false)),
        0xA1B2_CD34 => Some((Endian::Little, false, true)),
        0x34CD_B2A1 => Some((Endian::Big, false, true)),
        _ => None,
    }
}

/// True when `b` starts a pcapng Section Header Block with a valid byte-order magic.
pub fn is_pcapng(b: &[u8]) -> bool {
    b.starts_with(&[0x0A, 0x0D, 0x0D, 0x0A])
        && matches!(b.get(8..12), Some([0x4D, 0x3C, 0x2B, 0x1A] | [0x1A, 0x2B, 0x3C, 0x4D]))
}

/// Parse the 24-byte pcap file header.
pub fn parse_pcap_header(b: &[u8]) -> std::result::Result<PcapHeader, &'static str> {
    let (endian, nanos, modified) = pcap_magic(b).ok_or("a pcap magic number (a1b2c3d4, a1b23c4d, a1b2cd34)")?;
    if b.len() < 24 {
        return Err("a complete 24-byte pcap file header");
    }
    let major = endian.u16(b, 4).unwrap_or(0);
    if major != 2 {
        return Err("pcap version 2.x");
    }
    let snaplen = endian.u32(b, 16).unwrap_or(0);
    let lt = endian.u32(b, 20).unwrap_or(0);
    let fcs_len = if lt & 0x0400_0000 != 0 { ((lt >> 28) * 2) as u8 } else { 0 };
    Ok(PcapHeader { endian, nanos, modified, snaplen, linktype: (lt & 0xFFFF) as u16, fcs_len })
}

/// A pcapng interface (IDB).
#[derive(Debug, Clone)]
pub struct Interface {
    /// LINKTYPE.
    pub linktype: u16,
    /// Snap length (0 = unlimited).
    pub snaplen: u32,
    /// `if_name`.
    pub name: Option<String>,
    /// Timestamp units per second (from `if_tsresol`; default 10^6).
    pub units_per_sec: u64,
    /// `if_tsoffset` seconds.
    pub ts_offset_s: i64,
    /// `if_fcslen`.
    pub fcs_len: u8,
    /// `if_speed` bit/s.
    pub speed_bps: Option<u64>,
}

impl Interface {
    /// Convert a pcapng 64-bit timestamp to ns since the epoch (integer math, as Wireshark does).
    #[inline]
    pub fn ts_ns(&self, units: u64) -> i64 {
        let ups = self.units_per_sec.max(1);
        let secs = units / ups;
        // The two common resolutions without a 128-bit division per packet (same integers).
        let frac = match ups {
            1_000_000 => u128::from(units % ups) * 1000,
            1_000_000_000 => u128::from(units % ups),
            _ => u128::from(units % ups) * 1_000_000_000 / u128::from(ups),
        };
        let secs = i64::try_from(secs).unwrap_or(i64::MAX).saturating_add(self.ts_offset_s);
        secs.saturating_mul(1_000_000_000).saturating_add(frac as i64)
    }
}

/// Decode `if_tsresol` into units per second. `None` when not representable in a u64.
pub fn tsresol_units(v: u8) -> Option<u64> {
    let exp = u32::from(v & 0x7F);
    if v & 0x80 == 0 { 10u64.checked_pow(exp) } else { 1u64.checked_shl(exp) }
}

/// Iterate pcapng options: `(code, value)` pairs. Stops at `opt_endofopt` or the end.
pub fn options(e: Endian, mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let code = e.u16(b, 0)?;
        let len = e.u16(b, 2)? as usize;
        if code == 0 {
            return None;
        }
        let value = b.get(4..4 + len)?;
        let padded = (4 + len + 3) & !3;
        b = b.get(padded..).unwrap_or(&[]);
        Some((code, value))
    })
}

/// Parse an IDB body (after the 8-byte block header, before the trailing length).
pub fn parse_idb(e: Endian, body: &[u8]) -> std::result::Result<Interface, &'static str> {
    let linktype = e.u16(body, 0).ok_or("an interface description body of at least 8 bytes")?;
    let snaplen = e.u32(body, 4).ok_or("an interface description body of at least 8 bytes")?;
    let mut iface = Interface {
        linktype,
        snaplen,
        name: None,
        units_per_sec: 1_000_000,
        ts_offset_s: 0,
        fcs_len: 0,
        speed_bps: None,
    };
    for (code, v) in options(e, body.get(8..).unwrap_or(&[])) {
        match code {
            2 => iface.name = Some(String::from_utf8_lossy(v).trim_end_matches('\0').to_owned()),
            8 => iface.speed_bps = e.u64(v, 0),
            9 => {
                let r = *v.first().ok_or("a 1-byte if_tsresol option")?;
                iface.units_per_sec = tsresol_units(r).ok_or("an if_tsresol of at most 10^19 or 2^63")?;
            }
            13 => iface.fcs_len = v.first().copied().unwrap_or(0),
            14 => iface.ts_offset_s = e.u64(v, 0).map_or(0, |x| x as i64),
            _ => {}
        }
    }
    Ok(iface)
}

/// Build a format error at an offset (no line numbers in binary formats).
pub fn format_error(path: &std::path::Path, byte_offset: u64, expected: &str, found: &[u8]) -> Error {
    Error::Format {
        path: path.to_path_buf(),
        position: crate::error::Position { line: None, byte_offset },
        expected: expected.to_owned(),
        found: crate::error::excerpt(found, 40),
    }
}

/// Map an I/O error.
pub fn io_error(path: &std::path::Path, e: std::io::Error) -> Error {
    Error::Io { path: path.to_path_buf(), source: e }
}

/// Result alias for container helpers.
pub type CResult<T> = Result<T>;
