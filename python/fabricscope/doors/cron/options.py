"""What one ``fabricscope cron`` run is asked to do, and what it did."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from fabricscope.doors.cron.alertmanager import AlertmanagerOptions, Delivery
from fabricscope.incidents.severity import Status
from fabricscope.reading.options import FUTURE_MARGIN_S, ReadOptions
from fabricscope.reading.prometheus import RemoteOptions

#: How far before its watermark each server pull starts (seconds): Prometheus's own default
#: ``--query.lookback-delta`` (5 minutes), the span in which the server still treats a sample
#: as current (https://prometheus.io/docs/prometheus/latest/querying/basics/#staleness); a
#: sample ingested later than that is one Prometheus's own queries would miss as well.
SERVER_LOOKBACK_S = 300.0

# the Nagios exit codes, as the verdict type gives them
EXIT_OK, EXIT_WARNING, EXIT_CRITICAL, EXIT_UNKNOWN = (
    s.exit_code for s in (Status.OK, Status.WARNING, Status.CRITICAL, Status.UNKNOWN)
)


@dataclass
class CronOptions:
    """What one ``fabricscope cron`` run does (the command-line options).

    Attributes:
        inputs: Files and directories to watch.
        state: State directory (manifest, last readings, lock).
        history: History directory (see :mod:`fabricscope.reading.history`).
        config: Thresholds TOML.
        profile: Force a technology profile.
        lookback_s: Seconds of history prepended to the new samples for the detectors.
        retain_days: Delete history partitions older than this many days (None: keep all).
        compact_min_parts: Merge a partition's part files when it has at least this many.
        strict: Fail the run on a malformed record instead of skipping and counting it.
        wait_s: Wait this long for the lock (0: fail at once).
        reset_state: Rebuild the state from the history before running.
        json_path: Write the JSON document here, atomically (``-``: the CLI prints it).
        textfile: Write the node_exporter textfile here.
        now: The run's wall-clock time (tests); default: now.
        prometheus: Prometheus server URLs to pull; each keeps a watermark in the state and
            pulls ``[watermark, now)`` (the first run: the last hour), advanced only when the
            run commits.
        remote: Matchers, authentication, TLS for ``prometheus``.
        alertmanager: Send the open incidents to these Alertmanagers after the commit point.
        server_lookback_s: Each server pull starts this many seconds before the watermark, so
            samples stamped before it that reached the server later (a scrape in progress,
            remote-write or federation lag) are pulled; what the history holds is dropped
            (series and timestamp). Default :data:`SERVER_LOOKBACK_S`.
        future_margin_s: A sample dated more than this many seconds after ``now`` is a bad
            record, never stored nor its series' watermark (``math.inf``: no bound).
    """

    inputs: list[str]
    state: Path
    history: Path
    config: str | None = None
    profile: str | None = None
    lookback_s: float = 900.0
    retain_days: float | None = None
    compact_min_parts: int = 8
    strict: bool = False
    wait_s: float = 0.0
    reset_state: bool = False
    json_path: str | None = None
    textfile: str | None = None
    now: dt.datetime | None = None
    prometheus: list[str] = field(default_factory=list)
    remote: RemoteOptions | None = None
    alertmanager: AlertmanagerOptions | None = None
    server_lookback_s: float = SERVER_LOOKBACK_S
    future_margin_s: float = FUTURE_MARGIN_S

    def read_options(self, now: dt.datetime) -> ReadOptions:
        """The reader options of this run's inputs: the run's clock, ``now``, bounds their samples' times."""
        now_ns = round(now.timestamp() * 1e9)
        return ReadOptions(strict=self.strict, future_margin_s=self.future_margin_s, now_ns=now_ns)


@dataclass
class CronResult:
    """What one run did.

    Attributes:
        run_id: The run's id (derived from the state and the input ranges read).
        exit_code: Nagios exit code.
        status_line: The one-line Nagios status.
        files_read: Inputs (or tails) read.
        samples: New samples stored.
        duplicates_dropped: Readings dropped as already stored.
        active: Active faults after the run (findings schema + ``fault_id``).
        document: The JSON document.
        deliveries: What each Alertmanager was sent (empty without ``alertmanager``).
    """

    run_id: str
    exit_code: int
    status_line: str
    files_read: int
    samples: int
    duplicates_dropped: int
    active: pl.DataFrame
    document: dict[str, Any] = field(default_factory=dict)
    deliveries: list[Delivery] = field(default_factory=list)
