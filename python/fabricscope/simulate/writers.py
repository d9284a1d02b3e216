"""Writers in the formats real clusters export, spelled from the shared counter vocabulary.

Every writer returns the samples a correct reader must produce from what it wrote (columns
``time`` as epoch ns, ``host``, ``device``, ``port``, ``priority``, ``counter``, ``value_u64``,
``source``), so a round-trip test compares readers against the simulator's own truth.
"""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path

import polars as pl

from fabricscope.simulate.fabric import Fabric
from fabricscope.simulate.model import Simulation

__all__ = [
    "go_float_expr",
    "spellings",
    "write_ethtool",
    "write_perfquery",
    "write_prometheus",
    "write_sysfs",
    "write_sysfs_grep",
    "write_ufm_csv",
]

STATE_NAMES = {1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
PHYS_NAMES = {1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining", 5: "LinkUp"}
_EXPECTED_SCHEMA = {
    "time": pl.Int64,
    "host": pl.String,
    "device": pl.String,
    "port": pl.UInt16,
    "priority": pl.UInt8,
    "counter": pl.String,
    "value_u64": pl.UInt64,
    "source": pl.String,
}


@functools.cache
def spellings() -> dict[str, dict[str, tuple[str, int]]]:
    """Canonical counter -> namespace -> (raw spelling, multiplier), from ``fabricscope.counters()``.

    The preferred spelling per namespace is the one current tools print: node_exporter's
    ``node_infiniband_*`` for Prometheus, the new-style ``rx_prio{p}_*`` for ethtool, and the
    ``counters/``/``hw_counters/`` file for sysfs.
    """
    from fabricscope.reading.vocabulary import counters

    out: dict[str, dict[str, tuple[str, int]]] = {}
    for row in counters().iter_rows(named=True):
        per: dict[str, tuple[str, int]] = {}
        for sp in row["spellings"]:
            ns, raw = sp.split(":", 1)
            mult = 1
            if raw.endswith(")") and " (x" in raw:
                raw, m = raw[:-1].split(" (x")
                mult = int(m)
            if raw.endswith("]") and " [" in raw:
                continue  # a vendor driver's spelling: see vendor_spellings()
            if ns == "prometheus" and not (raw.startswith(("node_infiniband_", "DCGM_FI_"))):
                continue
            if ns == "ethtool" and raw.startswith("prio{p}"):
                continue  # old kernels' spelling
            if ns == "sysfs" and raw.startswith("counters_ext/"):
                continue
            if ns == "ethtool" and "{p}" in raw:
                per["ethtool_prio"] = (raw, mult)
                continue
            per.setdefault(ns, (raw, mult))
        out[row["name"]] = per
    return out


@functools.cache
def vendor_spellings(driver: str) -> dict[tuple[str, bool], str]:
    """(canonical counter, per priority) -> the ``ethtool -S`` name ``driver`` prints for it.

    From the vocabulary's vendor spellings (``ethtool:rx_pfc_ena_frames_pri{p} [bnxt_en]``): the
    templated name for per-priority rows, the plain one for rows with priority null.
    """
    from fabricscope.reading.vocabulary import counters

    out: dict[tuple[str, bool], str] = {}
    for row in counters().iter_rows(named=True):
        for sp in row["spellings"]:
            if not (sp.startswith("ethtool:") and sp.endswith("]") and " [" in sp):
                continue
            raw, drivers = sp[len("ethtool:") : -1].split(" [")
            if driver in drivers.split(", "):
                out.setdefault((row["name"], "{p}" in raw), raw)
    return out


# What a driver counts differently from the model's mlx5-shaped counters. ice counts XOFF and XON
# frames apart and has no pause duration: while a priority is paused every pause frame sent is an
# XOFF refresh, and each pause episode (an XOFF->XON transition) ends with one XON.
DIALECT_COUNTERS: dict[str, dict[str, str]] = {
    "ice": {
        "tx_pause_frames": "tx_xoff_frames",
        "rx_pause_frames": "rx_xoff_frames",
        "rx_pause_transitions": "rx_xon_frames",
        "tx_pause_transitions": "tx_xon_frames",
    },
}


def _vendor_stat(counter: str, prio: int | None, driver: str) -> str | None:
    raw = vendor_spellings(driver).get((counter, prio is not None))
    if raw is None:
        return None
    return raw.replace("{p}", str(prio)) if prio is not None else raw


def go_float_expr(col: str) -> pl.Expr:
    """Go's ``strconv.FormatFloat(v, 'g', -1, 64)`` of a UInt64 column holding integers <= 2^53.

    Integers below 1e6 print plainly; larger ones as shortest mantissa and a two-digit exponent
    (``1.493376e+07``), exactly as node_exporter (client_golang) writes them.
    """
    s = pl.col(col).cast(pl.String)
    digits = s.str.strip_chars_end("0")
    mant = pl.concat_str(
        digits.str.slice(0, 1),
        pl.when(digits.str.len_chars() > 1).then(pl.lit(".") + digits.str.slice(1)).otherwise(pl.lit("")),
    )
    exp = (s.str.len_chars() - 1).cast(pl.String).str.zfill(2)
    return pl.when(pl.col(col) < 1_000_000).then(s).otherwise(pl.concat_str(mant, pl.lit("e+"), exp))


def _renamed_ethtool(name: str) -> str:
    # node_exporter buildEthtoolFQName: rx -> received, tx -> transmitted at word boundaries
    words = ["received" if w == "rx" else "transmitted" if w == "tx" else w for w in name.split("_")]
    out = "node_ethtool_" + "_".join(words)
    if name in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets"):
        out += "_total"
    return out


def _ethtool_name(counter: str, prio: int | None) -> str | None:
    sp = spellings().get(counter, {})
    if prio is not None:
        t = sp.get("ethtool_prio")
        return t[0].replace("{p}", str(prio)) if t else None
    t = sp.get("ethtool")
    return t[0] if t else None


def _time_ns(df: pl.DataFrame, times_ms: list[int]) -> pl.Expr:
    del df
    return pl.col("k").replace_strict(
        list(range(len(times_ms))), [t * 1_000_000 for t in times_ms], return_dtype=pl.Int64
    )


def _present(sim: Simulation) -> pl.DataFrame:
    """Truth rows the collectors recorded (minus missing samples)."""
    df = sim.samples
    if sim.missing:
        miss = pl.DataFrame(
            [(h, k) for h, k in sorted(sim.missing)], schema={"host": pl.String, "k": pl.Int64}, orient="row"
        )
        df = df.join(miss, on=["host", "k"], how="anti")
    return df


def _jitter_ms(sim: Simulation, seed: int) -> pl.DataFrame:
    """Per (host, sample) scrape offset in milliseconds (deterministic)."""
    import random

    rng = random.Random(f"jitter-{seed}")
    rows = [(h.name, k, rng.randrange(0, 60)) for h in sim.fabric.hosts for k in range(len(sim.times_ms))]
    return pl.DataFrame(rows, schema={"host": pl.String, "k": pl.Int64, "jitter_ms": pl.Int64}, orient="row")


def write_prometheus(sim: Simulation, out: Path, *, seed: int = 0, domain: str = "") -> pl.DataFrame:
    """Prometheus ``/federate`` text: one block per scrape, every family ``# TYPE ... untyped``.

    node_exporter families (``node_infiniband_*``, ``node_ethtool_*``) carry ``instance="<host>:9100"``
    and ``job="node"``; DCGM exporter families ``instance="<host>:9400"``, ``job="dcgm"``, ``gpu``,
    ``UUID``, ``modelName``, ``Hostname``. Timestamps are integer milliseconds.

    Args:
        sim: The simulation.
        out: The file to write.
        seed: Scrape jitter seed.
        domain: DNS domain of the scrape targets: ``instance="<host>.<domain>:9100"`` (Prometheus
            scrapes by FQDN while rdma-ndd, nccl-tests and Slurm use the short name).

    Returns:
        The samples a reader must produce (hosts as the file names them).
    """
    sp = spellings()
    df = _present(sim).join(_jitter_ms(sim, seed), on=["host", "k"], how="left")
    names: list[tuple[str, int | None, str, str | None]] = []
    for c, p, fam in df.select("counter", "priority", "family").unique().iter_rows():
        if fam == "eth":
            e = _ethtool_name(c, p)
            names.append((c, p, fam, _renamed_ethtool(e) if e else None))
        else:
            names.append((c, p, fam, sp.get(c, {}).get("prometheus", (None, 1))[0]))
    nm = pl.DataFrame(
        names,
        schema={"counter": pl.String, "priority": pl.UInt8, "family": pl.String, "metric": pl.String},
        orient="row",
    )
    df = df.join(nm, on=["counter", "priority", "family"], how="left", nulls_equal=True).filter(
        pl.col("metric").is_not_null()
    )
    uuids = pl.DataFrame(
        [(h.name, f"gpu{g.index}", g.uuid) for h in sim.fabric.hosts for g in h.gpus],
        schema={"host": pl.String, "device": pl.String, "uuid": pl.String},
        orient="row",
    )
    df = df.join(uuids, on=["host", "device"], how="left")
    if domain:
        df = df.with_columns(pl.col("host") + "." + domain)
    times = pl.Series(sim.times_ms, dtype=pl.Int64)
    df = df.with_columns(
        (pl.col("k").map_elements(lambda k: times[k], return_dtype=pl.Int64) + pl.col("jitter_ms")).alias("ts_ms")
    )
    labels = (
        pl.when(pl.col("family") == "gpu")
        .then(
            pl.concat_str(
                pl.lit('Hostname="'),
                pl.col("host"),
                pl.lit('",UUID="'),
                pl.col("uuid"),
                pl.lit('",device="nvidia'),
                pl.col("device").str.slice(3),
                pl.lit('",gpu="'),
                pl.col("device").str.slice(3),
                pl.lit('",instance="'),
                pl.col("host"),
                pl.lit(':9400",job="dcgm",modelName="NVIDIA H100 80GB HBM3"'),
            )
        )
        .when(pl.col("port").is_not_null())
        .then(
            pl.concat_str(
                pl.lit('device="'),
                pl.col("device"),
                pl.lit('",instance="'),
                pl.col("host"),
                pl.lit(':9100",job="node",port="'),
                pl.col("port").cast(pl.String),
                pl.lit('"'),
            )
        )
        .otherwise(
            pl.concat_str(
                pl.lit('device="'),
                pl.col("device"),
                pl.lit('",instance="'),
                pl.col("host"),
                pl.lit(':9100",job="node"'),
            )
        )
    )
    lines = (
        df.sort("k", "metric", "host", "device")
        .with_columns(
            pl.concat_str(
                pl.col("metric"),
                pl.lit("{"),
                labels,
                pl.lit("} "),
                go_float_expr("value"),
                pl.lit(" "),
                pl.col("ts_ms").cast(pl.String),
            ).alias("line"),
            ((pl.col("k") != pl.col("k").shift(1)) | (pl.col("metric") != pl.col("metric").shift(1)))
            .fill_null(True)
            .alias("_first"),
        )
        .with_columns(
            pl.when(pl.col("_first"))
            .then(pl.concat_str(pl.lit("# TYPE "), pl.col("metric"), pl.lit(" untyped\n"), pl.col("line")))
            .otherwise(pl.col("line"))
            .alias("line")
        )
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    info = _prom_info(sim.fabric, sim.times_ms[0], domain)
    with out.open("w") as fh:
        fh.write(info)
        fh.write("\n".join(lines["line"].to_list()))
        fh.write("\n")
    return lines.select(
        (pl.col("ts_ms") * 1_000_000).alias("time"),
        "host",
        "device",
        "port",
        "priority",
        "counter",
        pl.col("value").alias("value_u64"),
        pl.lit("prometheus").alias("source"),
    ).cast(_EXPECTED_SCHEMA)


def _prom_info(fabric: Fabric, ts_ms: int, domain: str = "") -> str:
    lines = ["# TYPE node_infiniband_info untyped"]
    suffix = f".{domain}" if domain else ""
    for h in fabric.hosts:
        for n in h.nics:
            lines.append(
                f'node_infiniband_info{{board_id="{fabric.tech.board_id}",device="{n.device}",'
                f'firmware_version="{fabric.tech.fw_ver}",hca_type="{fabric.tech.hca_type}",'
                f'instance="{h.name}{suffix}:9100",'
                f'job="node"}} 1 {ts_ms}'
            )
    return "\n".join(lines) + "\n"


def _stamp(ms: int) -> str:
    if ms % 1000 == 0:
        return str(ms // 1000)  # `date +%s`
    return f"{ms // 1000}.{(ms % 1000) * 1_000_000:09d}"  # `date +%s.%N`


def write_ethtool(sim: Simulation, outdir: Path, *, driver: str = "mlx5", whole_seconds: bool = False) -> pl.DataFrame:
    """``while sleep N; do date +%s; ethtool -S ethX; done >> host-ethX.log`` logs, one per netdev.

    Per-priority pause counters appear only for priorities with PFC enabled, as mlx5 prints them.
    With another ``driver`` (``bnxt_en``, ``ice``) only the counters that driver prints are written,
    under its names (:func:`vendor_spellings`, :data:`DIALECT_COUNTERS`).

    Args:
        sim: The simulation.
        outdir: Directory for the logs.
        driver: The NIC driver whose ``ethtool -S`` names to print (``mlx5``, ``bnxt_en``, ``ice``).
        whole_seconds: Stamp every snapshot with ``date +%s`` (the time truncated to the second)
            although readings are not whole seconds apart: a ``sleep 15`` loop really runs every
            ~15.07 s, so its intervals read 15 or 16 s.

    Returns:
        The samples a reader must produce.
    """
    df = _present(sim).filter(pl.col("family") == "eth")
    if df.is_empty():
        return pl.DataFrame(schema=_EXPECTED_SCHEMA)
    if driver != "mlx5":
        renames = DIALECT_COUNTERS.get(driver, {})
        df = df.with_columns(pl.col("counter").replace(renames))
        pairs = df.select("counter", "priority").unique().iter_rows()
        names = {(c, p): _vendor_stat(c, p, driver) for c, p in pairs}
    else:
        names = {(c, p): _ethtool_name(c, p) for c, p in df.select("counter", "priority").unique().iter_rows()}
    nm = pl.DataFrame(
        [(c, p, n) for (c, p), n in names.items()],
        schema={"counter": pl.String, "priority": pl.UInt8, "stat": pl.String},
        orient="row",
    )
    df = df.join(nm, on=["counter", "priority"], how="left", nulls_equal=True).filter(pl.col("stat").is_not_null())
    outdir.mkdir(parents=True, exist_ok=True)
    for (host, dev), g in df.sort("k", "counter", "priority", nulls_last=False).group_by(
        ["host", "device"], maintain_order=True
    ):
        lines = [f"# host: {host}"]
        for (k,), snap in g.group_by(["k"], maintain_order=True):
            lines.append(str(sim.times_ms[k] // 1000) if whole_seconds else _stamp(sim.times_ms[k]))
            lines.append(f"# ethtool -S {dev}")
            lines.append("NIC statistics:")
            lines.extend(f"     {s}: {v}" for s, v in snap.select("stat", "value").iter_rows())
        (outdir / f"{host}-{dev}.log").write_text("\n".join(lines) + "\n")
    times = [(t // 1000 * 1000 if whole_seconds else t) * 1_000_000 for t in sim.times_ms]
    return df.select(
        pl.col("k").map_elements(lambda k: times[k], return_dtype=pl.Int64).alias("time"),
        "host",
        "device",
        "port",
        "priority",
        "counter",
        pl.col("value").alias("value_u64"),
        pl.lit("ethtool").alias("source"),
    ).cast(_EXPECTED_SCHEMA)


def _sysfs_entries(
    sim: Simulation, snap: pl.DataFrame
) -> list[tuple[str, str, str, str, int | None, str | None, int | None]]:
    """(relative path, value text, host, device, port, canonical counter, stored value) for one host snapshot."""
    sp = spellings()
    tech = sim.fabric.tech
    out: list[tuple[str, str, str, str, int | None, str | None, int | None]] = []
    for host, dev, port, c, v, fam in snap.select("host", "device", "port", "counter", "value", "family").iter_rows():
        if fam == "ib":
            if c == "link_rate_bytes_per_s":
                nic = next(n for h in sim.fabric.hosts if h.name == host for n in h.nics if n.device == dev)
                out.append((f"class/infiniband/{dev}/ports/{port}/rate", nic.rate_text, host, dev, port, None, None))
                continue
            if c in ("port_state_id", "port_phys_state_id"):
                names = STATE_NAMES if c == "port_state_id" else PHYS_NAMES
                f = "state" if c == "port_state_id" else "phys_state"
                out.append((f"class/infiniband/{dev}/ports/{port}/{f}", f"{v}: {names[v]}", host, dev, port, c, v))
                continue
            s = sp.get(c, {}).get("sysfs")
            if s is None:
                continue
            raw, mult = s
            out.append((f"class/infiniband/{dev}/ports/{port}/{raw}", str(v // mult), host, dev, port, c, v))
        elif fam == "net":
            s = sp.get(c, {}).get("sysfs")
            if s:
                out.append((f"class/net/{dev}/{s[0]}", str(v), host, dev, None, c, v))
    hosts = {h.name: h for h in sim.fabric.hosts}
    for host in snap["host"].unique().to_list():
        for n in hosts[host].nics:
            base = f"class/infiniband/{n.device}"
            out += [
                (f"{base}/node_guid", n.sysfs_guid, host, n.device, None, None, None),
                (f"{base}/fw_ver", tech.fw_ver, host, n.device, None, None, None),
                (f"{base}/board_id", tech.board_id, host, n.device, None, None, None),
                (f"{base}/hca_type", tech.hca_type, host, n.device, None, None, None),
                (f"{base}/ports/{n.port}/link_layer", tech.link_layer, host, n.device, n.port, None, None),
                (f"{base}/ports/{n.port}/hw_counters/lifespan", "10", host, n.device, n.port, None, None),
            ]
            if n.netdev:
                on = 0 if (host, n.index) in sim.ecn_disabled else 1
                for p in range(8):
                    for side in ("roce_np", "roce_rp"):
                        out.append(
                            (
                                f"class/net/{n.netdev}/ecn/{side}/enable/{p}",
                                str(on if p == 3 else 0),
                                host,
                                n.netdev,
                                None,
                                None,
                                None,
                            )
                        )
    return out


def _expected_from(entries: list, t_ns: int, source: str, sim: Simulation) -> list[tuple]:
    rows = []
    nics = {(h.name, n.device): n for h in sim.fabric.hosts for n in h.nics}
    for rel, _text, host, dev, port, c, v in entries:
        if rel.endswith("/rate"):
            n = nics[(host, dev)]
            rows.append((t_ns, host, dev, port, None, "link_rate_bytes_per_s", n.line_rate, source))
            rows.append((t_ns, host, dev, port, None, "link_width_lanes", n.width, source))
        elif c is not None:
            rows.append((t_ns, host, dev, port, None, c, v, source))
    return rows


def write_sysfs_grep(sim: Simulation, outdir: Path) -> pl.DataFrame:
    """``date +%s; grep -H . /sys/class/infiniband/*/ports/*/{counters,hw_counters}/* ...`` dumps, one per host.

    Returns:
        The samples a reader must produce.
    """
    df = _present(sim).filter(pl.col("family").is_in(["ib", "net"]))
    outdir.mkdir(parents=True, exist_ok=True)
    expected: list[tuple] = []
    for (host,), g in df.sort("k", "device", "counter").group_by(["host"], maintain_order=True):
        lines = [f"# host: {host}"]
        for (k,), snap in g.group_by(["k"], maintain_order=True):
            t = sim.times_ms[k]
            lines.append(_stamp(t))
            entries = _sysfs_entries(sim, snap)
            lines.extend(f"/sys/{rel}:{text}" for rel, text, *_ in entries)
            expected += _expected_from(entries, t * 1_000_000, "sysfs-grep", sim)
        (outdir / f"{host}-counters.txt").write_text("\n".join(lines) + "\n")
    return pl.DataFrame(expected, schema=_EXPECTED_SCHEMA, orient="row")


def write_sysfs(sim: Simulation, outdir: Path, *, snapshots: str = "all") -> pl.DataFrame:
    """Copied ``/sys/class/{infiniband,net}`` trees, ``<UTC stamp>/<host>/sys/...``, each with a ``timestamp`` file.

    Args:
        sim: The simulation.
        outdir: Directory to write under.
        snapshots: ``all`` (one tree per reading) or ``last`` (the final reading only).

    Returns:
        The samples a reader must produce.
    """
    df = _present(sim).filter(pl.col("family").is_in(["ib", "net"]))
    if snapshots == "last":
        df = df.filter(pl.col("k") == pl.col("k").max().over("host"))
    expected: list[tuple] = []
    for (host, k), snap in df.group_by(["host", "k"], maintain_order=True):
        t = sim.times_ms[k]
        stamp = dt.datetime.fromtimestamp(t / 1000, dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        root = outdir / stamp / host / "sys"
        for rel, text, *_ in (entries := _sysfs_entries(sim, snap)):
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text + "\n")
        (root / "timestamp").write_text(_stamp(t) + "\n")
        expected += _expected_from(entries, t * 1_000_000, "sysfs", sim)
    return pl.DataFrame(expected, schema=_EXPECTED_SCHEMA, orient="row")


# libibmad field order of `perfquery -x` (PortCountersExtended, error block included as current
# firmware reports it) and of plain `perfquery` (PortCounters), as perfquery prints them.
_PQ_EXT_FIELDS = (
    "PortXmitData",
    "PortRcvData",
    "PortXmitPkts",
    "PortRcvPkts",
    "PortUnicastXmitPkts",
    "PortUnicastRcvPkts",
    "PortMulticastXmitPkts",
    "PortMulticastRcvPkts",
    "CounterSelect2",
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortRcvSwitchRelayErrors",
    "PortXmitDiscards",
    "PortXmitConstraintErrors",
    "PortRcvConstraintErrors",
    "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors",
    "VL15Dropped",
    "PortXmitWait",
    "QP1Dropped",
)
_PQ_BASIC_FIELDS = (
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortRcvSwitchRelayErrors",
    "PortXmitDiscards",
    "PortXmitConstraintErrors",
    "PortRcvConstraintErrors",
    "CounterSelect2",
    "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors",
    "QP1Dropped",
    "VL15Dropped",
    "PortXmitData",
    "PortRcvData",
    "PortXmitPkts",
    "PortRcvPkts",
    "PortXmitWait",
)
_SELECTORS = {"CounterSelect2": ("0x00000000", "0x00")}


def _pq_field(name: str, value: str) -> str:
    return f"{name}:".ljust(33, ".") + value


def _ns_names(ns: str) -> dict[str, tuple[str, int]]:
    """Canonical counter -> (spelling, multiplier) in one vocabulary namespace."""
    return {c: per[ns] for c, per in spellings().items() if ns in per}


def _lids(sim: Simulation) -> dict[tuple[str, str], int]:
    """A LID per HCA port, as the subnet manager hands them out (deterministic)."""
    nics = [(h.name, n.device) for h in sim.fabric.hosts for n in h.nics]
    return {hd: 2 + 4 * i for i, hd in enumerate(nics)}


def write_perfquery(sim: Simulation, outdir: Path) -> pl.DataFrame:
    """``while sleep N; do date +%s; perfquery -x -a ...; done >> <host>-<guid>.log`` logs.

    One file per HCA (an IB node, named by its node GUID as infiniband_exporter names its
    files), a ``# host:`` line, then per reading a ``date +%s`` line and one ``# Port extended
    counters:`` block per port of the node. A port whose PMA lacks 64-bit counters (the
    saturated-32bit trap) prints the basic ``# Port counters:`` block instead, as ``perfquery``
    without ``-x`` does. Data fields are 4-octet words. Only fields the model simulates are
    printed (``QP1Dropped`` is not modelled). RoCE fabrics get no perfquery logs.

    Returns:
        The samples a reader must produce (device: the node GUID, as perfquery names it).
    """
    pq = _ns_names("perfquery")
    by_name = {raw: c for c, (raw, _m) in pq.items()}
    df = _present(sim).filter((pl.col("family") == "ib") & pl.col("counter").is_in(list(pq)))
    if df.is_empty() or sim.fabric.tech.family != "infiniband":  # no PMA MADs over RoCE
        return pl.DataFrame(schema=_EXPECTED_SCHEMA)
    nics = {(h.name, n.device): n for h in sim.fabric.hosts for n in h.nics}
    lids = _lids(sim)
    outdir.mkdir(parents=True, exist_ok=True)
    expected: list[tuple] = []
    for (host, dev), g in df.sort("host", "device", "k", "port").group_by(["host", "device"], maintain_order=True):
        nic = nics[(host, dev)]
        lines = [f"# host: {host}"]
        for (k,), snap in g.group_by(["k"], maintain_order=True):
            t = sim.times_ms[k]
            lines.append(_stamp(t))
            for (port,), ps in snap.group_by(["port"], maintain_order=True):
                vals = dict(zip(ps["counter"].to_list(), ps["value"].to_list(), strict=True))
                if nic.ext_width:
                    fields, caps = _PQ_EXT_FIELDS, "CapMask: 0x5300 CapMask2: 0x0000002"
                    lines.append(f"# Port extended counters: Lid {lids[(host, dev)]} port {port} ({caps})")
                    lines += [_pq_field("PortSelect", str(port)), _pq_field("CounterSelect", "0x0000")]
                    sel = 0
                else:
                    fields, caps = _PQ_BASIC_FIELDS, "CapMask: 0x1000"
                    lines.append(f"# Port counters: Lid {lids[(host, dev)]} port {port} ({caps})")
                    lines += [_pq_field("PortSelect", str(port)), _pq_field("CounterSelect", "0x1000")]
                    sel = 1
                for f in fields:
                    if f in _SELECTORS:
                        lines.append(_pq_field(f, _SELECTORS[f][sel]))
                        continue
                    c = by_name.get(f)
                    if c is None or c not in vals:
                        continue
                    mult = pq[c][1]
                    lines.append(_pq_field(f, str(vals[c] // mult)))
                    expected.append((t * 1_000_000, host, nic.guid, port, None, c, vals[c] // mult * mult, "perfquery"))
        (outdir / f"{host}-{nic.guid}.log").write_text("\n".join(lines) + "\n")
    return pl.DataFrame(expected, schema=_EXPECTED_SCHEMA, orient="row")


UFM_HOST = "unknown"
"""Host a reader gives UFM rows: UFM exports the fabric, not one host (no host argument)."""


def write_ufm_csv(sim: Simulation, out: Path) -> pl.DataFrame:
    """UFM telemetry CSV (``/csv/metrics`` pulls appended): one header, one row per port per pull.

    Columns ``timestamp`` (µs epoch), ``source_id``, ``tag``, ``Node_GUID``, ``port_guid``,
    ``Port_Number``, then the counters in UFM's spelling (``PortXmitDataExtended`` in bytes).
    InfiniBand fabrics only (UFM does not manage RoCE).

    Returns:
        The samples a reader must produce (device: the node GUID; host :data:`UFM_HOST`).
    """
    uf = _ns_names("ufm")
    df = _present(sim).filter((pl.col("family") == "ib") & pl.col("counter").is_in(list(uf)))
    if df.is_empty() or sim.fabric.tech.family != "infiniband":  # UFM manages InfiniBand fabrics
        return pl.DataFrame(schema=_EXPECTED_SCHEMA)
    order = [c for c in uf if c in set(df["counter"].unique().to_list())]
    guids = pl.DataFrame(
        [(h.name, n.device, n.guid) for h in sim.fabric.hosts for n in h.nics],
        schema={"host": pl.String, "device": pl.String, "guid": pl.String},
        orient="row",
    )
    df = df.join(guids, on=["host", "device"], how="left").with_columns(
        (
            pl.col("value") // pl.col("counter").replace_strict({c: uf[c][1] for c in order}, return_dtype=pl.UInt64)
        ).alias("raw"),
        pl.col("k").replace_strict(list(range(len(sim.times_ms))), sim.times_ms, return_dtype=pl.Int64).alias("ms"),
    )
    wide = df.pivot("counter", index=["ms", "guid", "port"], values="raw").sort("ms", "guid", "port")
    wide = wide.select(
        (pl.col("ms") * 1000).alias("timestamp"),
        pl.col("guid").alias("source_id"),
        pl.lit(0).alias("tag"),
        pl.col("guid").alias("Node_GUID"),
        pl.col("guid").alias("port_guid"),
        pl.col("port").alias("Port_Number"),
        *[pl.col(c).alias(uf[c][0]) for c in order],
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    wide.write_csv(out, null_value="", quote_style="never")
    return df.select(
        (pl.col("ms") * 1_000_000).alias("time"),
        pl.lit(UFM_HOST).alias("host"),
        pl.col("guid").alias("device"),
        "port",
        "priority",
        "counter",
        (pl.col("raw") * pl.col("counter").replace_strict({c: uf[c][1] for c in order}, return_dtype=pl.UInt64)).alias(
            "value_u64"
        ),
        pl.lit("ufm-csv").alias("source"),
    ).cast(_EXPECTED_SCHEMA)
