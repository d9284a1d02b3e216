"""The physical fabric: technologies, hosts, NICs, GPUs, leaves and spines.

Numbers here are physics and product facts (line rates, lane counts, frame sizes), never detector
thresholds: the simulator must not share a constant with the detectors it is used to test.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = ["TECHNOLOGIES", "Fabric", "Gpu", "Host", "Nic", "Technology", "build_fabric"]


@dataclass(frozen=True)
class Technology:
    """A link technology.

    Attributes:
        name: ``ndr400``, ``hdr200``, ``roce400`` or ``roce200``.
        family: ``infiniband`` or ``roce``.
        line_rate: Effective data rate per direction, bytes/s (sysfs ``rate`` semantics).
        lanes: Lanes per port.
        lane_gbps: Effective data rate per lane, Gb/s.
        speed_name: The sysfs speed name (``NDR``, ``HDR``; RoCE ports reuse the IB encoding).
        hca_type: Adapter model as ``hca_type`` prints it.
        board_id: A board id as ``board_id`` prints it.
        fw_ver: Firmware version.
        data_frame: Bytes on the wire per full data packet (4096 B payload plus headers).
        ctrl_frame: Bytes on the wire per ACK/CNP-sized packet.
    """

    name: str
    family: str
    line_rate: int
    lanes: int
    lane_gbps: int
    speed_name: str
    hca_type: str
    board_id: str
    fw_ver: str
    data_frame: int
    ctrl_frame: int

    @property
    def link_layer(self) -> str:
        """``InfiniBand`` or ``Ethernet`` as sysfs ``link_layer`` prints it."""
        return "InfiniBand" if self.family == "infiniband" else "Ethernet"


# IB data packet: LRH 8 + BTH 12 + RETH 16 + payload 4096 + ICRC 4 + VCRC 2, padded to 4-octet words.
# RoCEv2 frame: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 + payload 4096 + ICRC 4 + FCS 4.
TECHNOLOGIES: dict[str, Technology] = {
    "ndr400": Technology(
        "ndr400", "infiniband", 50_000_000_000, 4, 100, "NDR", "MT4129", "MT_0000000838", "28.39.1002", 4140, 32
    ),
    "hdr200": Technology(
        "hdr200", "infiniband", 25_000_000_000, 4, 50, "HDR", "MT4123", "MT_0000000223", "20.38.1002", 4140, 32
    ),
    "roce400": Technology(
        "roce400", "roce", 50_000_000_000, 4, 100, "NDR", "MT4129", "MT_0000000834", "28.39.1002", 4174, 84
    ),
    "roce200": Technology(
        "roce200", "roce", 25_000_000_000, 4, 50, "HDR", "MT4125", "MT_0000000359", "22.38.1002", 4174, 84
    ),
}

# NVLink 4 (H100): 18 links x 26.5625 GB/s per direction.
NVLINK_BYTES_PER_S = 450_000_000_000


@dataclass
class Nic:
    """One adapter port: an RDMA device (``mlx5_N``), its netdev on RoCE, and its link.

    Attributes:
        index: Position of the NIC in its host (its rail).
        device: RDMA device name.
        netdev: Network interface name (RoCE), else None.
        port: IB port number.
        guid: Node GUID, lowercase ``0x`` + 16 hex digits.
        width: Active lanes.
        lane_gbps: Active effective rate per lane, Gb/s.
        speed_name: Active speed name.
        ext_width: Whether the PMA supports 64-bit extended counters.
    """

    index: int
    device: str
    netdev: str | None
    port: int
    guid: str
    width: int
    lane_gbps: int
    speed_name: str
    ext_width: bool = True

    @property
    def line_rate(self) -> int:
        """Active effective data rate per direction, bytes/s."""
        return self.width * self.lane_gbps * 125_000_000

    @property
    def rate_text(self) -> str:
        """The sysfs ``rate`` file content."""
        return f"{self.width * self.lane_gbps} Gb/sec ({self.width}X {self.speed_name})"

    @property
    def sysfs_guid(self) -> str:
        """The sysfs ``node_guid`` spelling (``a088:c203:00ab:cdef``)."""
        h = self.guid[2:]
        return ":".join(h[i : i + 4] for i in range(0, 16, 4))


@dataclass
class Gpu:
    """A GPU (for DCGM NVLink metrics)."""

    index: int
    uuid: str


@dataclass
class Host:
    """A host with its NICs and GPUs, attached to one leaf."""

    name: str
    leaf: int
    nics: list[Nic]
    gpus: list[Gpu]
    role: str = "train"


@dataclass
class Fabric:
    """A two-tier leaf-spine fabric.

    Attributes:
        tech: The link technology of every host port.
        hosts: Hosts in order.
        leaves: Number of leaf switches.
        spines: Number of spine switches.
        oversubscription: Host-facing to spine-facing bandwidth ratio per leaf (1.0 = non-blocking).
        leaf_guids: GUIDs of the leaves.
        spine_guids: GUIDs of the spines.
    """

    tech: Technology
    hosts: list[Host]
    leaves: int
    spines: int
    oversubscription: float
    leaf_guids: list[str] = field(default_factory=list)
    spine_guids: list[str] = field(default_factory=list)

    def uplink_capacity(self, leaf: int) -> float:
        """Bytes/s a leaf can carry to (or from) the spines."""
        ports = sum(len(h.nics) for h in self.hosts if h.leaf == leaf)
        return ports * self.tech.line_rate / self.oversubscription

    @property
    def ports(self) -> list[tuple[Host, Nic]]:
        """Every (host, NIC) pair, host-major."""
        return [(h, n) for h in self.hosts for n in h.nics]


def _guid(rng: random.Random, oui: str = "a088c2") -> str:
    return "0x" + oui + "03" + f"{rng.getrandbits(32):08x}"


def build_fabric(
    tech: str,
    hosts: int,
    *,
    prefix: str,
    nics_per_host: int = 2,
    gpus_per_host: int = 8,
    hosts_per_leaf: int = 4,
    spines: int = 2,
    oversubscription: float = 1.0,
    seed: int = 0,
) -> Fabric:
    """Build a leaf-spine fabric with named hosts, NICs and GUIDs.

    Args:
        tech: Key of :data:`TECHNOLOGIES`.
        hosts: Number of hosts.
        prefix: Host name prefix (hosts are ``<prefix>-gpu01``...), unique per scenario so that
            scenarios analysed together never share a series.
        nics_per_host: Adapter ports per host (one rail each).
        gpus_per_host: GPUs per host.
        hosts_per_leaf: Hosts under each leaf.
        spines: Spine switches.
        oversubscription: Leaf downlink to uplink bandwidth ratio.
        seed: Seed for GUIDs and UUIDs.

    Returns:
        The :class:`Fabric`.
    """
    t = TECHNOLOGIES[tech]
    rng = random.Random(f"fabric-{seed}-{prefix}")
    out = []
    for i in range(hosts):
        nics = [
            Nic(
                index=j,
                device=f"mlx5_{j}",
                netdev=f"eth{j}" if t.family == "roce" else None,
                port=1,
                guid=_guid(rng),
                width=t.lanes,
                lane_gbps=t.lane_gbps,
                speed_name=t.speed_name,
            )
            for j in range(nics_per_host)
        ]
        gpus = [
            Gpu(g, "GPU-" + "-".join(f"{rng.getrandbits(b * 4):0{b}x}" for b in (8, 4, 4, 4, 12)))
            for g in range(gpus_per_host)
        ]
        out.append(Host(f"{prefix}-gpu{i + 1:02d}", i // hosts_per_leaf, nics, gpus))
    leaves = max(1, (hosts + hosts_per_leaf - 1) // hosts_per_leaf)
    return Fabric(
        t,
        out,
        leaves,
        spines,
        oversubscription,
        [_guid(rng, "b8cef6") for _ in range(leaves)],
        [_guid(rng, "b8cef6") for _ in range(spines)],
    )
