"""The Ray engine on a real multi-node cluster: every node its own raylet and object store.

A ``ray.cluster_utils.Cluster`` on this machine: a head node that runs no tasks (the GCS and the
driver's raylet) and two worker nodes of one CPU each, so every read and analysis task runs on a
node other than the driver's and partitions cross between object stores. ``fabricscope analyze
--engine ray --address`` runs as a subprocess against it and must give the local engine's
findings and incidents; with a worker process killed, or a whole node removed, while a task reads
its input, it must give the same again (Ray retries the task and rebuilds what the node held) or
stop UNKNOWN (exit 3) naming the lost node, never a different result.

The fault lands at an observable moment, not after a sleep: one input is a FIFO, so the read task
that owns it blocks until this test writes to it; the test finds the process holding the FIFO
open, kills it or removes its node, and then feeds every later reader (the retries) the content.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

ray_cluster_utils = pytest.importorskip(
    "ray.cluster_utils", reason="the ray engine needs Ray: pip install 'fabricscope[ray]'"
)

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_traces"
# The FIFO carries this file's content; the other inputs are read as files.
FED = SAMPLES / "prometheus" / "federate-rail0.prom"
FILES = [SAMPLES / d for d in ("ib", "ethtool", "sysfs", "pcap", "scenarios/chain-bad-cable", "scenarios/link-flap")]
# Ray's minimum: every node keeps a small object store of its own.
OBJECT_STORE = 80 << 20
# A run on a loaded 2-core machine, Ray's worker start-up included, stays far below this.
RUN_TIMEOUT = 240


def _cmd() -> list[str]:
    exe = Path(sys.executable).parent / "fabricscope"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "fabricscope"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    # A temporary directory of its own keeps this cluster's address out of /tmp/ray, where
    # `ray.init()` without an address (other tests' local Ray) would find and join it. Short,
    # because Ray's Unix socket paths live under it.
    tmp = tempfile.mkdtemp(prefix="fsray", dir="/tmp")
    old = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = tmp
    c = ray_cluster_utils.Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 0,
            "object_store_memory": OBJECT_STORE,
            "include_dashboard": False,
            # A removed node is declared dead within about two seconds, not Ray's default 30.
            "_system_config": {
                "health_check_initial_delay_ms": 0,
                "health_check_period_ms": 500,
                "health_check_failure_threshold": 4,
            },
        },
    )
    try:
        for _ in range(2):
            c.add_node(num_cpus=1, object_store_memory=OBJECT_STORE)
        c.wait_for_nodes()
        yield c
    finally:
        c.shutdown()
        if old is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = old
        subprocess.run(["rm", "-rf", tmp], check=False)


def _holders(path: Path) -> list[int]:
    """Processes (other than this one) that have ``path`` open."""
    target = Path(path)
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if any(fd.readlink() == target for fd in (proc / "fd").iterdir()):
                pids.append(int(proc.name))
    return pids


class Feeder(threading.Thread):
    """Feeds ``content`` to every process that opens the FIFO ``path``, until stopped.

    ``fault`` is called with the first reader's pid before anything is written; that reader gets
    nothing (it is expected to die), every later one gets the whole content.
    """

    def __init__(self, path: Path, content: bytes, fault: Callable[[int], None] | None = None) -> None:
        super().__init__(daemon=True)
        self.path, self.content, self.fault = path, content, fault
        self.stop = threading.Event()
        # (pid, whether it was a Ray worker) of every process that opened the FIFO.
        self.readers: list[tuple[int, bool]] = []
        self.error: BaseException | None = None

    def _wait(self, until: Callable[[], Any]) -> Any:
        while not self.stop.is_set():
            got = until()
            if got:
                return got
            time.sleep(0.01)
        return None

    def _open(self) -> int | None:
        # Opening the write end without blocking succeeds exactly when a reader has it open.
        try:
            return os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != errno.ENXIO:
                raise
            return None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                fd = self._wait(self._open)
                if fd is None:
                    return
                pids = self._wait(lambda: _holders(self.path))
                if pids is None:
                    os.close(fd)
                    return
                self.readers += [(pid, _is_ray_worker(pid)) for pid in pids]
                if self.fault is not None:
                    fault, self.fault = self.fault, None
                    fault(pids[0])
                    # The write end stays open until the reader has died: closing it first would
                    # give it an end of file, an empty input, and a worker outliving its removed
                    # node for a moment could still hand that result to the driver.
                    self._wait(lambda held=set(pids): not set(_holders(self.path)) & held)
                    os.close(fd)
                else:
                    os.set_blocking(fd, True)
                    with contextlib.suppress(BrokenPipeError):
                        os.write(fd, self.content)
                    os.close(fd)
                # The next open must be a new reader's, not this one's still reading to its end.
                self._wait(lambda held=set(pids): not set(_holders(self.path)) & held)
        except BaseException as e:  # reported by the test, not lost in the thread
            self.error = e


def _analyze(
    fifo: Path, *engine: str, fault: Callable[[int], None] | None = None
) -> tuple[subprocess.CompletedProcess[str], Feeder]:
    feeder = Feeder(fifo, FED.read_bytes(), fault)
    feeder.start()
    try:
        out = subprocess.run(
            [*_cmd(), "analyze", str(fifo), *map(str, FILES), "--json", "-", *engine],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
    finally:
        feeder.stop.set()
        feeder.join()
    assert feeder.error is None, feeder.error
    return out, feeder


@pytest.fixture(scope="module")
def fifo() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / FED.name
        os.mkfifo(path)
        yield path


@pytest.fixture(scope="module")
def local(fifo: Path) -> dict[str, Any]:
    out, _ = _analyze(fifo)
    assert out.returncode == 2, out.stderr
    doc = json.loads(out.stdout)
    # Enough of a fabric to tell a wrong result from a right one: per-host and fabric-wide
    # detectors, and incidents across hosts.
    assert len(doc["findings"]) == 37
    # 9: the capture's loss and its ECN marks are one incident, on one physical root
    assert len(doc["incidents"]) == 9
    assert {"link_flap", "link_degraded", "pfc_congestion", "lossy_collapse"} <= {f["kind"] for f in doc["findings"]}
    return doc


def _same(out: subprocess.CompletedProcess[str], local: dict[str, Any]) -> None:
    assert out.returncode == 2, out.stderr
    doc = json.loads(out.stdout)
    assert doc["findings"] == local["findings"]
    assert doc["incidents"] == local["incidents"]
    assert [i["records"] for i in doc["inputs"]] == [i["records"] for i in local["inputs"]]


def _worker_node(cluster: Any, pid: int) -> Any:
    """The cluster node whose raylet started the worker ``pid``."""
    raylets = {n.all_processes["raylet"][0].process.pid: n for n in cluster.worker_nodes}
    while pid > 1 and pid not in raylets:
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    assert pid in raylets, "the reader is a worker of one of the worker nodes"
    return raylets[pid]


def _is_ray_worker(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::")
    return False


# One test, so that one cluster serves all three runs whichever test worker pytest-xdist picks.
def test_ray_across_nodes_gives_the_local_findings_also_when_a_worker_or_a_node_dies(
    cluster: Any, fifo: Path, local: dict[str, Any]
) -> None:
    ray = ("--engine", "ray", "--address", cluster.address)

    out, feeder = _analyze(fifo, *ray)
    _same(out, local)
    assert feeder.readers and all(worker for _, worker in feeder.readers), "tasks, not the driver, read the input"

    # A worker killed while its task reads: Ray runs the task again.
    killed: list[int] = []

    def kill(pid: int) -> None:
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    out, feeder = _analyze(fifo, *ray, fault=kill)
    assert killed, "a worker was killed while it read its input"
    assert len(feeder.readers) >= 2, "the read task ran again after its worker died"
    _same(out, local)

    # A whole node removed while one of its workers reads: its raylet, its workers and the
    # objects in its store are gone. Ray reruns what they held on the other node, or the run
    # stops UNKNOWN naming the node; never findings from part of the fabric.
    removed: list[str] = []

    def remove(pid: int) -> None:
        node = _worker_node(cluster, pid)
        removed.append(node.node_id)
        cluster.remove_node(node, allow_graceful=False)

    out, _ = _analyze(fifo, *ray, fault=remove)
    assert removed, "a node was removed while one of its workers read its input"
    print(f"\nnode {removed[0]} removed mid-run: exit status {out.returncode}")
    if out.returncode == 3:
        assert out.stdout == ""
        assert "UNKNOWN" in out.stderr
        assert removed[0] in out.stderr
    else:
        _same(out, local)


def test_a_run_ray_gives_up_on_names_the_nodes_lost_since_it_started() -> None:
    import ray
    from fabricscope.engines.ray import _lost
    from fabricscope.exceptions import EngineFailedError

    alive = [{"NodeID": "aa01", "NodeManagerAddress": "10.0.0.1", "Alive": True}]
    cluster = SimpleNamespace(nodes=lambda: alive, exceptions=ray.exceptions)
    at_start = {"aa01": "10.0.0.1", "bb02": "10.0.0.2"}
    err = _lost(cluster, at_start, ray.exceptions.ObjectLostError("00ff", owner_address=None, call_site=""))
    assert isinstance(err, EngineFailedError)
    assert str(err).startswith("the Ray cluster lost node(s) bb02 (10.0.0.2) during the run and Ray could not recover")
    # A crashed worker with every node alive: no node is named, and nothing is waited for.
    every = {"aa01": "10.0.0.1"}
    t = time.monotonic()
    err = _lost(cluster, every, ray.exceptions.WorkerCrashedError())
    assert time.monotonic() - t < 5
    assert str(err).startswith("a Ray worker or object was lost during the run")
