//! Frame decoding: Ethernet / Linux cooked v1 and v2, 802.1Q / QinQ, MAC Control (PAUSE, PFC),
//! IPv4 / IPv6 with ECN, UDP 4791 RoCEv2 BTH / RETH / AETH. Every read is bounds-checked: a
//! snaplen-truncated frame decodes as far as its bytes go.

/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u16 = 1;
/// LINKTYPE_LINUX_SLL.
pub const LINKTYPE_SLL: u16 = 113;
/// LINKTYPE_LINUX_SLL2.
pub const LINKTYPE_SLL2: u16 = 276;

/// Link types the decoder understands.
pub fn supported_linktype(lt: u16) -> bool {
    matches!(lt, LINKTYPE_ETHERNET | LINKTYPE_SLL | LINKTYPE_SLL2)
}

/// RoCEv2 UDP destination port.
pub const ROCE_PORT: u16 = 4791;

#[inline]
fn be16(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(off..off + 2)?.try_into().ok()?))
}

#[inline]
fn be32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

/// MAC control frame content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MacControl {
    /// 802.3x PAUSE with its quanta.
    Pause(u16),
    /// 802.1Qbb PFC: enable vector (low byte) and the eight timers.
    Pfc {
        /// Priority enable vector (bit n = priority n).
        enable: u8,
        /// Quanta per priority.
        quanta: [u16; 8],
    },
}

/// RoCEv2 transport facts of one packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Roce {
    /// BTH opcode.
    pub opcode: u8,
    /// BTH destination QP.
    pub dest_qp: u32,
    /// BTH PSN.
    pub psn: u32,
    /// BTH PadCnt.
    pub pad: u8,
    /// AETH syndrome, when the opcode carries one and the bytes are present.
    pub syndrome: Option<u8>,
    /// RETH DMA length (READ requests, first/only WRITEs).
    pub dma_len: Option<u32>,
    /// Bytes of BTH payload (excluding extension headers, pad and ICRC), from the UDP length.
    pub payload_len: u32,
}

/// What a frame is, as far as the analysis cares.
#[derive(Debug, Clone, Copy, Default)]
pub struct Frame {
    /// Number of VLAN tags.
    pub tags: u8,
    /// VLAN id of the outermost tag.
    pub vlan: Option<u16>,
    /// PCP of the outermost tag (the 802.1p / PFC priority).
    pub pcp: Option<u8>,
    /// MAC control content.
    pub mac_control: Option<MacControl>,
    /// IP version (4 or 6) when the frame is IP.
    pub ip_version: u8,
    /// ECN codepoint.
    pub ecn: u8,
    /// DSCP.
    pub dscp: u8,
    /// Source address (IPv4 in the first four bytes).
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
    /// RoCEv2 transport, when UDP 4791 with a full BTH.
    pub roce: Option<Roce>,
}

/// Is a BTH opcode one that carries an AETH directly after the BTH?
fn has_aeth(op: u8) -> bool {
    matches!(op & 0x1F, 0x0D | 0x0F | 0x10 | 0x11 | 0x12) && matches!(op >> 5, 0 | 5)
}

/// Decode a frame of `linktype`. `data` is the captured bytes with any FCS already removed.
/// Returns `None` for a link type we do not decode.
#[inline]
pub fn decode(linktype: u16, data: &[u8]) -> Option<Frame> {
    let mut f = Frame::default();
    decode_into(linktype, data, &mut f).then_some(f)
}

/// [`decode`] into a caller's `Frame` (which must start as `Frame::default()`): the per-packet
/// path fills one frame on its stack instead of moving a ~100-byte `Option<Frame>` around.
/// Returns false for a link type we do not decode.
#[inline]
pub fn decode_into(linktype: u16, data: &[u8], f: &mut Frame) -> bool {
    let (mut ethertype, mut off) = match linktype {
        LINKTYPE_ETHERNET => (be16(data, 12), 14usize),
        LINKTYPE_SLL => (be16(data, 14), 16),
        LINKTYPE_SLL2 => (be16(data, 0), 20),
        _ => return false,
    };
    // VLAN tags (802.1Q, 802.1ad, legacy QinQ TPIDs).
    while let Some(t @ (0x8100 | 0x88A8 | 0x9100 | 0x9200)) = ethertype {
        let _ = t;
        let Some(tci) = be16(data, off) else {
            ethertype = None;
            break;
        };
        if f.tags == 0 {
            f.pcp = Some((tci >> 13) as u8);
            f.vlan = Some(tci & 0x0FFF);
        }
        f.tags = f.tags.saturating_add(1);
        ethertype = be16(data, off + 2);
        off += 4;
    }
    match ethertype {
        Some(0x8808) => {
            f.mac_control = match be16(data, off) {
                Some(0x0001) => be16(data, off + 2).map(MacControl::Pause),
                Some(0x0101) => {
                    let enable = be16(data, off + 2).map(|v| (v & 0xFF) as u8);
                    enable.map(|enable| {
                        let mut quanta = [0u16; 8];
                        for (n, q) in quanta.iter_mut().enumerate() {
                            *q = be16(data, off + 4 + 2 * n).unwrap_or(0);
                        }
                        MacControl::Pfc { enable, quanta }
                    })
                }
                _ => None,
            };
        }
        Some(0x0800) => decode_ipv4(data, off, f),
        Some(0x86DD) => decode_ipv6(data, off, f),
        _ => {}
    }
    true
}

#[inline]
fn decode_ipv4(data: &[u8], off: usize, f: &mut Frame) {
    let Some(ip) = data.get(off..) else { return };
    let (Some(&vihl), Some(&tos)) = (ip.first(), ip.get(1)) else { return };
    if vihl >> 4 != 4 {
        return;
    }
    f.ip_version = 4;
    f.ecn = tos & 3;
    f.dscp = tos >> 2;
    if let (Some(s), Some(d)) = (ip.get(12..16), ip.get(16..20)) {
        f.src[..4].copy_from_slice(s);
        f.dst[..4].copy_from_slice(d);
    } else {
        return;
    }
    let ihl = usize::from(vihl & 0x0F) * 4;
    // Later fragments carry no UDP header.
    let frag_off = be16(ip, 6).unwrap_or(0) & 0x1FFF;
    if ihl >= 20 && ip.get(9) == Some(&17) && frag_off == 0 {
        decode_udp(ip, ihl, f);
    }
}

#[inline]
fn decode_ipv6(data: &[u8], off: usize, f: &mut Frame) {
    let Some(ip) = data.get(off..) else { return };
    let (Some(&b0), Some(&b1)) = (ip.first(), ip.get(1)) else { return };
    if b0 >> 4 != 6 {
        return;
    }
    f.ip_version = 6;
    let tc = ((b0 & 0x0F) << 4) | (b1 >> 4);
    f.ecn = tc & 3;
    f.dscp = tc >> 2;
    if let (Some(s), Some(d)) = (ip.get(8..24), ip.get(24..40)) {
        f.src.copy_from_slice(s);
        f.dst.copy_from_slice(d);
    } else {
        return;
    }
    let mut next = ip.get(6).copied().unwrap_or(59);
    let mut pos = 40usize;
    // Walk extension headers (hop-by-hop, routing, destination options, fragment).
    for _ in 0..8 {
        match next {
            17 => {
                decode_udp(ip, pos, f);
                return;
            }
            0 | 43 | 60 => {
                let (Some(&nh), Some(&len)) = (ip.get(pos), ip.get(pos + 1)) else { return };
                next = nh;
                pos += (usize::from(len) + 1) * 8;
            }
            44 => {
                let Some(&nh) = ip.get(pos) else { return };
                if be16(ip, pos + 2).unwrap_or(0) & 0xFFF8 != 0 {
                    return; // not the first fragment
                }
                next = nh;
                pos += 8;
            }
            _ => return,
        }
    }
}

#[inline]
fn decode_udp(ip: &[u8], off: usize, f: &mut Frame) {
    if be16(ip, off + 2) != Some(ROCE_PORT) {
        return;
    }
    let udp_len = be16(ip, off + 4).unwrap_or(0);
    let bth = off + 8;
    let (Some(&opcode), Some(&b1), Some(qp), Some(psn)) =
        (ip.get(bth), ip.get(bth + 1), be32(ip, bth + 4), be32(ip, bth + 8))
    else {
        return;
    };
    let mut r =
        Roce { opcode, dest_qp: qp & 0x00FF_FFFF, psn: psn & 0x00FF_FFFF, pad: (b1 >> 4) & 3, ..Roce::default() };
    let mut ext = 0usize;
    let xrc = opcode >> 5 == 5;
    if has_aeth(opcode) {
        r.syndrome = ip.get(bth + 12).copied();
        ext += 4;
        if opcode & 0x1F == 0x12 {
            ext += 8;
        }
    } else if matches!(opcode >> 5, 0 | 1 | 5) {
        if xrc {
            ext += 4; // XRCETH
        }
        match opcode & 0x1F {
            0x06 | 0x0A | 0x0B | 0x0C => {
                r.dma_len = be32(ip, bth + 12 + ext + 12);
                ext += 16;
            }
            0x13 | 0x14 => ext += 28,
            _ => {}
        }
        if matches!(opcode & 0x1F, 0x03 | 0x05 | 0x09 | 0x0B | 0x16 | 0x17) {
            ext += 4;
        }
    }
    r.payload_len = u32::from(udp_len).saturating_sub(8 + 12 + 4 + ext as u32 + u32::from(r.pad));
    f.roce = Some(r);
}
