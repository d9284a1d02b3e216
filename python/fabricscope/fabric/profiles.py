"""Technology profiles: what "expected" means for a link, with the source of every number.

Line rates are per direction in bytes per second (1 GB/s = 1e9 B/s). ``achievable`` is the
fraction of line rate that well-configured production systems reach for bulk RDMA/NCCL traffic.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

__all__ = [
    "PROFILES",
    "Profile",
    "get_profile",
    "nvlink_profile_for_gpu",
    "profile_for_device",
    "profile_for_port",
    "profiles",
]

_NCCL = "https://github.com/NVIDIA/nccl-tests/issues/"


@dataclass(frozen=True)
class Profile:
    """One interconnect technology.

    Attributes:
        name: Registry key (``ndr400``, ``roce400``, ...).
        family: ``infiniband``, ``roce``, ``uec``, ``nvlink``, ``pcie``, ``cxl`` or ``hbm``.
        layer: ``network``, ``nvlink``, ``pcie`` or ``cxl`` (HBM is reported as ``device``).
        line_rate_bytes_per_s: Line rate per direction.
        lanes: Lanes (or links for NVLink) per port.
        lane_gbps: Signalling rate per lane in Gb/s (effective data rate).
        achievable_low_ratio: Lower end of the fraction of line rate seen in practice.
        achievable_high_ratio: Upper end of that fraction.
        latency_us: Typical one-way latency, microseconds (None when not sourced).
        expected: True for technologies not yet shipping (figures are targets).
        source: Where the numbers come from.
    """

    name: str
    family: str
    layer: str
    line_rate_bytes_per_s: float
    lanes: int
    lane_gbps: float
    achievable_low_ratio: float
    achievable_high_ratio: float
    latency_us: float | None
    expected: bool
    source: str

    @property
    def achievable_bytes_per_s(self) -> float:
        """Midpoint of the achievable range in bytes per second."""
        return self.line_rate_bytes_per_s * (self.achievable_low_ratio + self.achievable_high_ratio) / 2


def _p(*args: object) -> Profile:
    return Profile(*args)  # type: ignore[arg-type]


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in [
        _p(
            "xdr800",
            "infiniband",
            "network",
            100e9,
            4,
            200,
            0.92,
            0.96,
            1.5,
            False,
            "IB XDR: 4 x 200G lanes (kernel sysfs rate table); achievable assumed as NDR class",
        ),
        _p(
            "ndr400",
            "infiniband",
            "network",
            50e9,
            4,
            100,
            0.92,
            0.96,
            1.5,
            False,
            f"4x100G PAM4 = 50 GB/s (IBTA NDR); NCCL 46-48 GB/s per NIC ({_NCCL}290, {_NCCL}267); "
            "~1-2 us latency (NVIDIA ConnectX-7 product brief)",
        ),
        _p(
            "hdr200",
            "infiniband",
            "network",
            25e9,
            4,
            50,
            0.94,
            0.96,
            1.5,
            False,
            "4x50G = 25 GB/s; ~24 GB/s per NIC with NCCL (https://github.com/NVIDIA/nccl/issues/1048)",
        ),
        _p("ndr200", "infiniband", "network", 25e9, 2, 100, 0.92, 0.96, 1.5, False, "NDR 2X (200G): half of ndr400"),
        _p("hdr100", "infiniband", "network", 12.5e9, 2, 50, 0.92, 0.96, 1.5, False, "HDR 2X (HDR100)"),
        _p(
            "edr100",
            "infiniband",
            "network",
            12.5e9,
            4,
            25,
            0.90,
            0.95,
            1.5,
            False,
            "4x25G = 12.5 GB/s (kernel sysfs rate table)",
        ),
        _p(
            "fdr56",
            "infiniband",
            "network",
            7e9,
            4,
            14,
            0.90,
            0.95,
            1.5,
            False,
            "IB FDR: 4 x 14.0625 Gb/s, 64b/66b; Linux Documentation/ABI/stable/sysfs-class-infiniband "
            "rate prints 56 Gb/sec (4X FDR); NVIDIA ConnectX-3 VPI user manual: FDR 56 Gb/s maximum",
        ),
        _p(
            "fdr10",
            "infiniband",
            "network",
            5e9,
            4,
            10,
            0.90,
            0.95,
            1.5,
            False,
            "IB FDR10: 4 x 10.3125 Gb/s, 64b/66b = 40 Gb/s (Linux Documentation/ABI/stable/sysfs-class-infiniband "
            "rate: 40 Gb/sec (4X FDR10))",
        ),
        _p(
            "roce800",
            "roce",
            "network",
            100e9,
            8,
            100,
            0.80,
            0.90,
            2.5,
            False,
            "800GbE; IEEE 802.3df; achievable: fabricscope default, "
            "the share of line rate a tuned lossless RoCEv2 NIC keeps",
        ),
        _p(
            "roce400",
            "roce",
            "network",
            50e9,
            4,
            100,
            0.80,
            0.92,
            2.5,
            False,
            f"400GbE = 50 GB/s; CX-7 RoCE ~48-49 GB/s when lossless ({_NCCL}267)",
        ),
        _p(
            "roce200",
            "roce",
            "network",
            25e9,
            4,
            50,
            0.80,
            0.92,
            2.5,
            False,
            "200GbE = 25 GB/s (IEEE 802.3bs); achievable: fabricscope default, as 400GbE",
        ),
        _p(
            "roce100",
            "roce",
            "network",
            12.5e9,
            4,
            25,
            0.80,
            0.92,
            3.0,
            False,
            "100GbE = 12.5 GB/s (IEEE 802.3ba/cd); achievable: fabricscope default, as 400GbE",
        ),
        _p(
            "roce40",
            "roce",
            "network",
            5e9,
            4,
            10,
            0.80,
            0.92,
            3.0,
            False,
            "40GbE = 5 GB/s (IEEE 802.3ba, 4 x 10G); achievable: fabricscope default, as 400GbE",
        ),
        _p(
            "uec800",
            "uec",
            "network",
            100e9,
            8,
            100,
            0.85,
            0.95,
            1.0,
            True,
            "Ultra Ethernet Consortium Specification 1.0 (800G transport); achievable: fabricscope default, as 400GbE",
        ),
        _p(
            "nvlink3",
            "nvlink",
            "nvlink",
            300e9,
            12,
            25 * 8,
            0.77,
            0.83,
            None,
            False,
            "A100: 12 links x 25 GB/s = 300 GB/s per direction (600 GB/s bidirectional); 8xA100 busbw 230-250 GB/s "
            "(https://docs.alayanew.com/en/docs/tech-blog/2026-05-06-nccl-tests)",
        ),
        _p(
            "nvlink4",
            "nvlink",
            "nvlink",
            450e9,
            18,
            26.5625 * 8,
            0.80,
            0.85,
            None,
            False,
            f"H100: 18 links x 26.5625 GB/s = 450 GB/s per direction; ring busbw ~370 GB/s ({_NCCL}212)",
        ),
        _p(
            "nvlink5",
            "nvlink",
            "nvlink",
            900e9,
            18,
            53.125 * 8,
            0.80,
            0.92,
            None,
            False,
            "B200/GB200: 1.8 TB/s bidirectional = 900 GB/s per direction; 830+ GB/s busbw (https://github.com/NVIDIA/nccl/issues/1807)",
        ),
        _p(
            "nvlink6",
            "nvlink",
            "nvlink",
            1800e9,
            18,
            106.25 * 8,
            0.80,
            0.92,
            None,
            True,
            "Rubin: NVLink 6, 3.6 TB/s per GPU (NVIDIA Vera Rubin NVL144 announcement), expected",
        ),
        _p(
            "pcie4x16",
            "pcie",
            "pcie",
            31.5e9,
            16,
            16,
            0.75,
            0.80,
            None,
            False,
            "16 GT/s x16 128b/130b = 31.5 GB/s; ~25 GB/s measured (https://github.com/NVIDIA/nvbandwidth/issues/42)",
        ),
        _p(
            "pcie5x16",
            "pcie",
            "pcie",
            63e9,
            16,
            32,
            0.56,
            0.84,
            None,
            False,
            "32 GT/s x16 = 63 GB/s; H100 D2H 52.8, H2D 35.2 GB/s (https://github.com/NVIDIA/nvbandwidth/issues/24)",
        ),
        _p(
            "pcie6x16",
            "pcie",
            "pcie",
            126e9,
            16,
            64,
            0.70,
            0.84,
            None,
            True,
            "64 GT/s PAM4 x16 = ~126 GB/s per direction (PCIe 6 spec); achievable assumed as Gen5",
        ),
        _p(
            "cxl3x16",
            "cxl",
            "cxl",
            128e9,
            16,
            64,
            0.60,
            0.80,
            0.5,
            False,
            "CXL 3 over PCIe 6: 128 GB/s per x16 link, sub-microsecond latency (CXL 3.0 specification); "
            "achievable: fabricscope default, no public measurement found",
        ),
        _p(
            "cxl2x8",
            "cxl",
            "cxl",
            31.5e9,
            8,
            32,
            0.60,
            0.80,
            None,
            False,
            "CXL 1.1/2.0 Type-3 expander on PCIe Gen5 x8 (typical E3.S, e.g. Samsung CMM-D) = ~32 GB/s per direction; "
            "achievable: fabricscope default, no public measurement found",
        ),
        _p(
            "hbm3e",
            "hbm",
            "device",
            8000e9,
            1,
            0,
            0.80,
            0.90,
            None,
            False,
            "HBM3e 8 TB/s per B200 (NVIDIA DGX B200 datasheet)",
        ),
    ]
}

# Aliases users type.
_ALIASES = {"ndr": "ndr400", "hdr": "hdr200", "edr": "edr100", "xdr": "xdr800", "roce": "roce400"}


def get_profile(name: str) -> Profile:
    """Look up a profile by name (case-insensitive; ``ndr`` means ``ndr400``).

    Raises:
        ValueError: unknown name; the message lists the known ones.

    Example:
        >>> from fabricscope.fabric.profiles import get_profile
        >>> get_profile("NDR400").line_rate_bytes_per_s
        50000000000.0
    """
    key = _ALIASES.get(name.lower(), name.lower())
    try:
        return PROFILES[key]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; known: {', '.join(sorted(PROFILES))}") from None


def profile_for_port(
    link_layer: str | None, rate_bytes_per_s: float | None, lanes: int | None = None
) -> Profile | None:
    """Detect the profile of a port from its link layer and reported rate.

    The sysfs ``rate`` is the effective data rate (``400 Gb/sec (4X NDR)`` = 50 GB/s), which is how
    ``link_rate_bytes_per_s`` is stored. A port whose rate matches no profile of its family gets
    the nearest faster one of the same lane count when known, else None.

    Example:
        >>> from fabricscope.fabric.profiles import profile_for_port
        >>> profile_for_port("InfiniBand", 50e9, 4).name
        'ndr400'
        >>> profile_for_port("Ethernet", 25e9).name
        'roce200'
    """
    if rate_bytes_per_s is None or rate_bytes_per_s <= 0:
        return None
    family = "roce" if (link_layer or "").lower() == "ethernet" else "infiniband"
    candidates = [p for p in PROFILES.values() if p.family == family and not p.expected]
    exact = [p for p in candidates if abs(p.line_rate_bytes_per_s - rate_bytes_per_s) < 1e6]
    if lanes is not None:
        by_lanes = [p for p in exact if p.lanes == lanes]
        exact = by_lanes or exact
    if exact:
        return exact[0]
    return None


# GPU model name fragments -> NVLink generation (NVIDIA product pages). PCIe cards have no
# NVSwitch: their GPU-to-GPU path is PCIe.
_GPU_NVLINK = (
    ("GB300", "nvlink5"),
    ("GB200", "nvlink5"),
    ("B300", "nvlink5"),
    ("B200", "nvlink5"),
    ("B100", "nvlink5"),
    ("H200", "nvlink4"),
    ("H100", "nvlink4"),
    ("H800", "nvlink4"),
    ("H20", "nvlink4"),
    ("A100", "nvlink3"),
    ("A800", "nvlink3"),
)


# RDMA device name prefixes (the kernel driver) whose hardware cannot exceed a profile: the rate a
# perftest on that device can be judged against when nothing measured the port. mlx5 spans
# ConnectX-4 to -8 (EDR to XDR), so it says nothing about the rate.
_DEVICE_MAX = (
    ("mlx4", "infiniband", "fdr56", "ConnectX-3/-3 Pro (mlx4 driver) support at most FDR 56 Gb/s InfiniBand"),
    ("mlx4", "roce", "roce40", "ConnectX-3/-3 Pro (mlx4 driver) support at most 40 GbE"),
)


def profile_for_device(device: str | None, link_type: str | None) -> tuple[Profile, str] | None:
    """The fastest profile an RDMA device's hardware supports, when its driver name says so.

    Args:
        device: RDMA device name as perftest prints it (``mlx4_0``).
        link_type: ``IB`` or ``Ethernet`` (perftest's ``Link type``); None means InfiniBand.

    Returns:
        ``(profile, reason)`` or None when the device name does not bound the rate.

    Example:
        >>> from fabricscope.fabric.profiles import profile_for_device
        >>> profile_for_device("mlx4_0", "IB")[0].name
        'fdr56'
        >>> profile_for_device("mlx5_0", "IB") is None
        True
    """
    if not device:
        return None
    family = "roce" if (link_type or "").strip().lower() == "ethernet" else "infiniband"
    for prefix, fam, name, reason in _DEVICE_MAX:
        if device.lower().startswith(prefix) and fam == family:
            return PROFILES[name], reason
    return None


def nvlink_profile_for_gpu(gpu_name: str | None) -> Profile | None:
    """The GPU-to-GPU profile of a GPU model as nvidia-smi or DCGM name it.

    SXM/HGX parts map to their NVLink generation; PCIe cards (no NVSwitch) to ``pcie5x16``
    (Hopper and later) or ``pcie4x16``. None when the model is unknown.

    Example:
        >>> from fabricscope.fabric.profiles import nvlink_profile_for_gpu
        >>> nvlink_profile_for_gpu("NVIDIA H100 80GB HBM3").name
        'nvlink4'
        >>> nvlink_profile_for_gpu("NVIDIA H100 PCIe").name
        'pcie5x16'
        >>> nvlink_profile_for_gpu("NVIDIA B200").name
        'nvlink5'
    """
    if not gpu_name:
        return None
    name = gpu_name.upper()
    for frag, prof in _GPU_NVLINK:
        if frag in name:
            if "PCIE" in name:
                return PROFILES["pcie4x16" if prof == "nvlink3" else "pcie5x16"]
            return PROFILES[prof]
    return None


def profiles() -> pl.DataFrame:
    """The registry as a frame (one row per technology, with sources).

    Example:
        >>> from fabricscope.fabric.profiles import profiles
        >>> {"ndr400", "hdr200", "roce400", "roce200"} <= set(profiles()["name"])
        True
    """
    return pl.DataFrame([{**p.__dict__, "achievable_bytes_per_s": p.achievable_bytes_per_s} for p in PROFILES.values()])
