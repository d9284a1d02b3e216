"""GPU-side files: ``nvidia-smi nvlink -e`` error counters, ``nvidia-smi nvlink -s``, ``nvidia-smi -q``, DCGM XIDs.

Spelled as the tools print them (the shapes of ``tests/fixtures/nvidia-smi`` and
``tests/fixtures/nvidia-smi-q``): ``nvidia-smi nvlink -e`` as current drivers print it (``Link N:
Replay Errors: n``, ``Recovery Errors``, ``CRC Errors``, one snapshot per reading after an epoch
timestamp line), ``-s`` with ``<inactive>`` links, and ``-q``'s GPU header, Platform Info and
Fabric block with 42-column keys. A scenario's ``extra["gpu"]`` says what to write:

* ``errors``: ``{"gpu_name", "gpus", "links", "background_per_hour", "faults": [{"host", "gpu",
  "link", "crc_per_s", "start", "recovery"}], "reloads": [{"host", "at"}]}`` (fractions of the duration);
* ``nvl72``: ``{"gpus", "links", "cluster_uuid", "clique", "lost_tray", "links_per_tray"}``: every host a
  compute tray of one NVLink domain; a lost switch tray takes the same links of every GPU down and
  the fabric reports every GPU's bandwidth degraded. ``"cluster_uuids": [...]`` instead: several
  racks, the hosts split among them in order;
* ``xids``: ``{"gpus", "gpu_name", "events": [{"host", "gpu", "code", "at"}]}``: the DCGM exporter's
  last-XID gauge per GPU (``dcgm/xid.prom``), the code from its event on.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from pathlib import Path
from typing import Any

__all__ = ["write_gpu_files"]


def _uuid(rng: random.Random) -> str:
    return "GPU-" + "-".join(f"{rng.getrandbits(b * 4):0{b}x}" for b in (8, 4, 4, 4, 12))


def _ctime(t_s: float) -> str:
    d = dt.datetime.fromtimestamp(t_s, dt.timezone.utc)
    return f"{d:%a %b} {d.day:2d} {d:%H:%M:%S %Y}"


def _kv(indent: int, key: str, value: object) -> str:
    # nvidia-smi 5xx pads every key to column 42 (the colon at 42), whatever the indentation
    return f"{' ' * indent}{key:<{42 - indent}}: {value}"


def _poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 50:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    k, p, limit = 0, 1.0, math.exp(-lam)
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def _write_errors(
    names: list[str], out: Path, spec: dict[str, Any], t0: float, samples: int, interval: float, seed: int
) -> None:
    rng = random.Random(seed * 7919 + 17)
    gpus, links = int(spec.get("gpus", 8)), int(spec.get("links", 18))
    name = spec.get("gpu_name", "NVIDIA H100 80GB HBM3")
    duration = (samples - 1) * interval
    bg = float(spec.get("background_per_hour", 0.0)) / 3600
    out.mkdir(parents=True, exist_ok=True)
    for hi, host in enumerate(names):
        uuids = [_uuid(rng) for _ in range(gpus)]
        crc = [[0] * links for _ in range(gpus)]
        replay = [[0] * links for _ in range(gpus)]
        recovery = [[0] * links for _ in range(gpus)]
        reload_at = sorted(r["at"] * duration for r in spec.get("reloads", []) if r["host"] == hi)
        lines = [f"# host: {host}"]
        for s in range(samples):
            t = s * interval
            if s > 0:
                t_prev = t - interval
                if any(t_prev < r <= t for r in reload_at):
                    # the driver reloaded between two readings: every counter starts again from zero
                    crc = [[0] * links for _ in range(gpus)]
                    replay = [[0] * links for _ in range(gpus)]
                    recovery = [[0] * links for _ in range(gpus)]
                for g in range(gpus):
                    for link in range(links):
                        n = _poisson(rng, bg * interval)
                        for f in spec.get("faults", []):
                            if (
                                f["host"] == hi
                                and f["gpu"] == g
                                and f["link"] == link
                                and t_prev >= f["start"] * duration
                            ):
                                n += _poisson(rng, f["crc_per_s"] * interval)
                                recovery[g][link] += int(f.get("recovery", 0))
                        crc[g][link] += n
                        # every flit that fails its CRC check is replayed
                        replay[g][link] += n
            lines.append(str(int(t0 + t)))
            for g in range(gpus):
                lines.append(f"GPU {g}: {name} (UUID: {uuids[g]})")
                for link in range(links):
                    lines.append(f"\t Link {link}: Replay Errors: {replay[g][link]}")
                    lines.append(f"\t Link {link}: Recovery Errors: {recovery[g][link]}")
                    lines.append(f"\t Link {link}: CRC Errors: {crc[g][link]}")
        (out / f"{host}-nvlink-e.txt").write_text("\n".join(lines) + "\n")


def _write_nvl72(names: list[str], out: Path, spec: dict[str, Any], t_s: float, seed: int) -> None:
    rng = random.Random(seed * 104729 + 3)
    gpus, links = int(spec.get("gpus", 4)), int(spec.get("links", 18))
    per = int(spec.get("links_per_tray", 2))
    lost = spec.get("lost_tray")
    down = set(range(lost * per, lost * per + per)) if lost is not None else set()
    (out / "nvidia-smi").mkdir(parents=True, exist_ok=True)
    (out / "nvidia-smi-q").mkdir(parents=True, exist_ok=True)
    # several racks: the hosts split in order, one NVLink domain (ClusterUUID) each
    racks = list(spec.get("cluster_uuids") or [spec["cluster_uuid"]])
    for hi, host in enumerate(names):
        uuids = [_uuid(rng) for _ in range(gpus)]
        chassis = f"1821725{seed:02d}{hi:04d}"
        cluster = racks[hi * len(racks) // len(names)]
        s_lines = [f"# host: {host}", str(int(t_s))]
        q = [
            f"# host: {host}",
            "",
            "==============NVSMI LOG==============",
            "",
            _kv(0, "Timestamp", _ctime(t_s)),
            _kv(0, "Driver Version", "570.133.20"),
            _kv(0, "CUDA Version", "12.8"),
            "",
            _kv(0, "Attached GPUs", gpus),
        ]
        for g in range(gpus):
            s_lines.append(f"GPU {g}: NVIDIA GB200 (UUID: {uuids[g]})")
            for link in range(links):
                s_lines.append(f"\t Link {link}: <inactive>" if link in down else f"\t Link {link}: 53.125 GB/s")
            bus = f"0000000{'89AB'[g % 4]}:01:00.0"
            degraded = bool(down)
            q += [
                f"GPU {bus}",
                _kv(4, "Product Name", "NVIDIA GB200"),
                _kv(4, "Product Brand", "NVIDIA"),
                _kv(4, "Product Architecture", "Blackwell"),
                _kv(4, "GPU UUID", uuids[g]),
                _kv(4, "Chassis Serial Number", chassis),
                "    Platform Info",
                _kv(8, "Chassis Physical Slot Number", hi + 1),
                _kv(8, "Compute Slot Index", g),
                _kv(8, "Node Index", 0),
                _kv(8, "Peer Type", "Direct Connected"),
                _kv(8, "Module Id", g + 1),
                "    Fabric",
                _kv(8, "State", "Completed"),
                _kv(8, "Status", "Success"),
                _kv(8, "CliqueId", spec.get("clique", 32766)),
                _kv(8, "ClusterUUID", cluster),
                "        Health",
                _kv(12, "Summary", "Unhealthy" if degraded else "Healthy"),
                _kv(12, "Bandwidth", "Degraded" if degraded else "Full"),
                _kv(12, "Route Recovery in progress", "False"),
                _kv(12, "Route Unhealthy", "False"),
                _kv(12, "Access Timeout Recovery", "False"),
                _kv(4, "Processes", "None"),
                "",
            ]
        (out / "nvidia-smi" / f"{host}-nvlink-s.txt").write_text("\n".join(s_lines) + "\n")
        (out / "nvidia-smi-q" / f"{host}.txt").write_text("\n".join(q) + "\n")


# The DCGM exporter's err_msg label for the codes the scenarios use (dcgm-exporter 3.3.6-3.4.2 on).
_XID_MESSAGES = {
    74: "NVLINK Error",
    149: "NVLINK: NETIR Error",
}


def _write_xids(
    names: list[str], out: Path, spec: dict[str, Any], t0: float, samples: int, interval: float, seed: int
) -> None:
    """The DCGM exporter's ``DCGM_FI_DEV_XID_ERRORS`` per GPU and scrape, as Prometheus federates it.

    ``spec``: ``{"gpus", "gpu_name", "events": [{"host", "gpu", "code", "at"}]}`` (``host`` None: every
    host; ``gpu`` None: every GPU; ``at`` a fraction of the duration). The gauge holds the last XID
    from its event on (0 before), with the exporter's ``err_code``/``err_msg`` labels.
    """
    rng = random.Random(seed * 31337 + 5)
    gpus = int(spec.get("gpus", 8))
    model = spec.get("gpu_name", "NVIDIA H100 80GB HBM3")
    duration = (samples - 1) * interval
    events = spec.get("events", [])
    lines = ["# TYPE DCGM_FI_DEV_XID_ERRORS untyped"]
    uuids = {(hi, g): _uuid(rng) for hi in range(len(names)) for g in range(gpus)}
    for s in range(samples):
        t = s * interval
        ts_ms = int((t0 + t) * 1000)
        for hi, host in enumerate(names):
            for g in range(gpus):
                code = 0
                for e in events:
                    if e.get("host") in (None, hi) and e.get("gpu") in (None, g) and t >= e["at"] * duration:
                        code = int(e["code"])
                msg = _XID_MESSAGES.get(code, "No Error") if code else "No Error"
                lines.append(
                    f'DCGM_FI_DEV_XID_ERRORS{{Hostname="{host}",UUID="{uuids[(hi, g)]}",device="nvidia{g}",'
                    f'err_code="{code}",err_msg="{msg}",gpu="{g}",instance="{host}:9400",job="dcgm",'
                    f'modelName="{model}"}} {code} {ts_ms}'
                )
    # beside the node_exporter scrapes, not among them: those are the simulation's own counters
    (out / "dcgm").mkdir(parents=True, exist_ok=True)
    (out / "dcgm" / "xid.prom").write_text("\n".join(lines) + "\n")


def write_gpu_files(
    names: list[str], out: Path, spec: dict[str, Any], *, t0: float, samples: int, interval: float, seed: int
) -> None:
    """Write a scenario's GPU-side files under ``out`` (``nvidia-smi/``, ``nvidia-smi-q/``, ``dcgm/``).

    Args:
        names: The hosts' names, by index.
        out: The scenario's output directory.
        spec: ``extra["gpu"]`` (see the module docstring).
        t0: Epoch seconds of the first reading.
        samples: Readings.
        interval: Seconds between readings.
        seed: Random seed.
    """
    if "errors" in spec:
        _write_errors(names, out / "nvidia-smi", spec["errors"], t0, samples, interval, seed)
    if "nvl72" in spec:
        _write_nvl72(names, out, spec["nvl72"], t0 + (samples - 1) * interval, seed)
    if "xids" in spec:
        _write_xids(names, out, spec["xids"], t0, samples, interval, seed)
