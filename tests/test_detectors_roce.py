"""RoCEv2 detectors: positive cases, near misses that stay silent, and the traps."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import fabricscope
import polars as pl
import pytest
from fabricscope.incidents.findings import FINDINGS_SCHEMA

from .test_rates import samples

ROCE = ["pfc_storm", "pfc_congestion", "ecn_congestion", "packet_loss", "lossy_collapse", "lossless_misconfig"]


def ser(counter: str, values: list[int], *, step: float = 10, t0: float = 0, **entity: object) -> list[tuple]:
    e = {"host": "h1", "device": "eth2", "port": None, "priority": None, "is_counter": True, **entity}
    return [
        (t0 + i * step, counter, v, 4 if counter.endswith("data_bytes") else 1, *e.values())
        for i, v in enumerate(values)
        if v is not None
    ]


def cum(start: int, per_interval: list[float]) -> list[int]:
    out, v = [start], start
    for d in per_interval:
        v += round(d)
        out.append(v)
    return out


def run(rows: list[tuple], **kw: object) -> pl.DataFrame:
    f = fabricscope.analyze(samples(rows), **kw)
    assert f.schema == FINDINGS_SCHEMA
    return f


def only(f: pl.DataFrame, kind: str) -> pl.DataFrame:
    return f.filter(pl.col("kind") == kind)


def ev(row: dict) -> dict:
    return json.loads(row["evidence"])


def pause(ratios: list[float], *, direction: str = "rx", step: float = 10, **entity: object) -> list[tuple]:
    return ser(f"{direction}_pause_duration_us", cum(10**9, [r * step * 1e6 for r in ratios]), step=step, **entity)


# --- pfc_storm ---------------------------------------------------------------------------------


def test_pause_over_99_percent_is_a_storm_with_the_window_stated() -> None:
    f = run(pause([0.01, 0.995, 0.998, 0.02], priority=3))
    s = only(f, "pfc_storm")
    assert s.height == 1
    row = s.row(0, named=True)
    assert row["severity"] == "critical" and row["priority"] == 3 and row["metric"] == "rx_pause_ratio"
    assert row["observed"] == pytest.approx(0.9965)
    e = ev(row)
    assert e["rule"] == "pfc_storm.pause_ratio" and e["detection_window_s"] == 10 and e["watchdog_window_s"] == 0.2
    assert "200 ms" in e["threshold_source"]


def test_storm_near_miss_97_percent_is_congestion_not_storm() -> None:
    f = run(pause([0.97, 0.97, 0.97], priority=3))
    assert only(f, "pfc_storm").is_empty()
    assert only(f, "pfc_congestion")["severity"].to_list() == ["critical"]


def test_storm_needs_200_ms_when_sampling_faster() -> None:
    # 100 ms sampling: one fully paused interval is not a 200 ms storm, two in a row are
    one = run(pause([0.1, 1.0, 0.1, 0.1], step=0.1, priority=3))
    assert only(one, "pfc_storm").is_empty()
    two = run(pause([0.1, 1.0, 1.0, 0.1], step=0.1, priority=3))
    s = only(two, "pfc_storm").row(0, named=True)
    assert ev(s)["detection_window_s"] == 0.2


def _sleep_loop(pause_share: float, *, period_s: float, n: int, whole_seconds: bool) -> list[tuple]:
    """A `while sleep 15; do date +%s; ethtool -S; done` log: readings every ``period_s``, stamped
    to the second when ``whole_seconds`` (T0 is a whole second), the pause counter accruing
    ``pause_share`` of the real time."""
    rows = []
    for k in range(n):
        t = k * period_s
        stamp = float(int(t)) if whole_seconds else t
        rows.append(
            (stamp, "tx_pause_duration_us", 10**9 + round(pause_share * t * 1e6), 1, "h1", "eth2", None, 3, True)
        )
    return rows


def test_storm_read_through_one_second_stamps_stays_one_storm() -> None:
    rows = _sleep_loop(0.997, period_s=15.07, n=33, whole_seconds=True)
    # the trap: one interval reads 16 s, and 99.7% of 15.07 s over 16 s is 94%, under the threshold
    times = [r[0] for r in rows]
    assert sorted({b - a for a, b in itertools.pairwise(times)}) == [15.0, 16.0]
    assert 0.93 < 0.997 * 15.07 / 16 < 0.95
    storms = only(run(rows), "pfc_storm")
    assert storms.height == 1
    row = storms.row(0, named=True)
    assert row["start"] == samples(rows)["time"][0] and row["end"] == samples(rows)["time"][-1]
    assert row["observed"] == pytest.approx(0.997, abs=0.002)
    e = ev(row)
    assert e["timestamp_resolution_s"] == 1.0 and e["ratio_upper_bound"] >= 0.99
    # the same loop stamped with `date +%s.%N` (readings here fall on whole milliseconds): the same
    # one storm, judged with the stamps' 1 ms
    exact = only(run(_sleep_loop(0.997, period_s=15.07, n=33, whole_seconds=False)), "pfc_storm")
    assert exact.height == 1 and ev(exact.row(0, named=True))["timestamp_resolution_s"] == 0.001


def test_steady_93_percent_pause_on_one_second_stamps_is_no_storm() -> None:
    # each 15 s interval could be 14 s long (bound 99.6%), but the ten together span 150 s to within
    # one second: 93.6% at most, congestion, not a storm
    f = run(_sleep_loop(0.93, period_s=15.0, n=11, whole_seconds=True))
    assert only(f, "pfc_storm").is_empty()
    assert only(f, "pfc_congestion").height == 1


def test_nic_watchdog_events_are_critical_storms() -> None:
    rows = ser("tx_pause_storm_error_events", [0, 0, 1, 1]) + pause([0.3, 0.9, 0.4], priority=3, direction="tx")
    s = only(run(rows), "pfc_storm")
    assert s.height == 1
    row = s.row(0, named=True)
    assert row["metric"] == "tx_pause_storm_error_events" and row["observed"] == 1.0
    assert "pause TX disabled" in row["message"]
    assert ev(row)["pause_ratio_peaks"] == {"tx priority 3": pytest.approx(0.9)}


def _unbroken(transitions: list[int]) -> list[tuple]:
    # received pause 96% on priority 3; our transmit on priority 3 falls from 3 GB/s to 0.1 GB/s
    return (
        pause([0.0, 0.0, 0.0, 0.96, 0.96], priority=3)
        + ser("rx_pause_transitions", transitions, priority=3)
        + ser("prio_tx_bytes", cum(10**12, [3e10, 3e10, 3e10, 1e9, 1e9]), priority=3)
    )


def test_unbroken_pause_while_throughput_collapses_is_a_storm() -> None:
    s = only(run(_unbroken([5, 5, 5, 5, 5, 5])), "pfc_storm")
    assert s["metric"].to_list() == ["rx_pause_ratio"]
    e = ev(s.row(0, named=True))
    assert e["rule"] == "pfc_storm.unbroken_pause"
    assert e["bytes_per_s"] == pytest.approx(1e8) and e["baseline_bytes_per_s"] == pytest.approx(3e9)


def test_pause_with_transitions_is_not_unbroken() -> None:
    assert only(run(_unbroken([5, 5, 5, 5, 90, 170])), "pfc_storm").is_empty()


# --- pfc_congestion ----------------------------------------------------------------------------


def test_sustained_pause_ratio_per_priority_and_direction() -> None:
    rows = pause([0.2] * 5, priority=3) + pause([0.0] * 5, priority=3, direction="tx")
    c = only(run(rows), "pfc_congestion")
    assert c.height == 1
    row = c.row(0, named=True)
    assert (row["severity"], row["priority"], row["metric"]) == ("warning", 3, "rx_pause_ratio")
    assert row["observed"] == pytest.approx(0.2)
    assert "network cannot absorb" in row["message"]


def test_sent_pause_means_nic_cannot_absorb() -> None:
    c = only(run(pause([0.1] * 4, priority=3, direction="tx")), "pfc_congestion").row(0, named=True)
    assert c["metric"] == "tx_pause_ratio" and "NIC cannot absorb" in c["message"]


def test_pause_near_miss_stays_silent() -> None:
    assert only(run(pause([0.04] * 6, priority=3)), "pfc_congestion").is_empty()


def test_bursty_but_normal_pfc_stays_silent() -> None:
    # spikes of 30% in single 10 s intervals between quiet ones: normal incast, not sustained
    f = run(pause([0.01, 0.3, 0.01, 0.02, 0.3, 0.0, 0.25, 0.01], priority=3))
    assert only(f, "pfc_congestion").is_empty() and only(f, "pfc_storm").is_empty()


def test_one_missing_sample_keeps_the_window_contiguous() -> None:
    rows = pause([0.2] * 6, priority=3)
    del rows[3]  # the reading at t=30 is missing: one 20 s interval, still 20% paused
    c = only(run(rows), "pfc_congestion")
    assert c.height == 1
    assert c["observed"][0] == pytest.approx(0.2)
    assert (c["end"][0] - c["start"][0]).total_seconds() == 60


def test_hosts_pausing_together_are_named() -> None:
    rows = pause([0.2] * 4, priority=3) + pause([0.3] * 4, priority=3, host="h2")
    rows += pause([0.3] * 4, priority=0, host="h3")
    c = only(run(rows), "pfc_congestion").filter(pl.col("host") == "h1").row(0, named=True)
    assert ev(c)["paused_together"] == ["h2/eth2 rx"]
    assert "h2" in c["message"] and "h3" not in c["message"]


def test_global_pause_has_null_priority() -> None:
    c = only(run(pause([0.2] * 4)), "pfc_congestion").row(0, named=True)
    assert c["priority"] is None and "802.3x" in c["message"]


# --- ecn_congestion ----------------------------------------------------------------------------


def _ecn(
    marked_per_interval: float, *, rx_packets: float = 1e8, ignored: float = 0, cnp: float = 1000, handled: float = 1000
) -> list[tuple]:
    d = {"device": "mlx5_0", "port": 1}
    return (
        ser("np_ecn_marked_roce_packets", cum(5000, [marked_per_interval] * 4), **d)
        + ser("np_cnp_sent_packets", cum(4000, [cnp] * 4), **d)
        + ser("rp_cnp_handled_packets", cum(4000, [handled] * 4), **d)
        + ser("rp_cnp_ignored_packets", cum(0, [ignored] * 4), **d)
        + ser("port_rcv_packets", cum(10**12, [rx_packets] * 4), **d)
    )


def test_ecn_marked_share_above_1_percent_warns() -> None:
    e = only(run(_ecn(3e6)), "ecn_congestion")
    assert e["severity"].to_list() == ["warning"]
    assert e["observed"][0] == pytest.approx(0.03)
    assert ev(e.row(0, named=True))["rule"] == "ecn_congestion.marked_ratio"


def test_ecn_marked_share_near_miss_is_info_only() -> None:
    e = only(run(_ecn(5e5)), "ecn_congestion")  # 0.5%: a working loop, reported as info
    assert e["severity"].to_list() == ["info"]
    assert e["observed"][0] == pytest.approx(0.005)
    assert "DCQCN loop active" in e["message"][0]


def test_cnp_ignored_rising_means_congestion_control_off() -> None:
    e = only(run(_ecn(5e5, ignored=50)), "ecn_congestion")
    assert e["metric"].to_list() == ["rp_cnp_ignored_packets"]
    assert "congestion control (DCQCN) is off" in e["message"][0]


def test_marks_without_cnps_mean_notification_point_off() -> None:
    e = only(run(_ecn(5e5, cnp=0)), "ecn_congestion")
    assert e["metric"].to_list() == ["np_cnp_sent_packets"]


def test_idle_nic_marked_share_undefined_no_finding() -> None:
    # zero received packets: the share is undefined, not infinite; no marked_ratio finding
    e = only(run(_ecn(0, rx_packets=0, cnp=0, handled=0)), "ecn_congestion")
    assert e.is_empty()
    e = only(run(_ecn(100, rx_packets=0, cnp=10)), "ecn_congestion")
    assert e["severity"].to_list() == ["info"] and e["observed"].to_list() == [None]


def test_cnp_balance_across_nics() -> None:
    def nic(host: str, sent: float, handled: float) -> list[tuple]:
        d = {"host": host, "device": "mlx5_0", "port": 1}
        return ser("np_cnp_sent_packets", cum(0, [sent] * 3), **d) + ser(
            "rp_cnp_handled_packets", cum(0, [handled] * 3), **d
        )

    bad = only(run(nic("a", 1000, 100) + nic("b", 1000, 100)), "ecn_congestion").filter(pl.col("host").is_null())
    assert bad["metric"].to_list() == ["cnp_received_ratio"] and bad["observed"][0] == pytest.approx(0.1)
    good = only(run(nic("a", 1000, 100) + nic("b", 0, 900)), "ecn_congestion").filter(pl.col("host").is_null())
    assert good.is_empty()


# --- packet_loss -------------------------------------------------------------------------------


def _loss(oos: list[float], *, packets: float = 1e8, start: int = 10_000, **d: object) -> list[tuple]:
    d = {"device": "mlx5_0", "port": 1, **d}
    n = len(oos)
    return ser("out_of_sequence_packets", cum(start, oos), **d) + ser(
        "port_rcv_packets", cum(10**12, [packets] * n), **d
    )


def test_loss_rate_from_out_of_sequence_over_received_packets() -> None:
    p = only(run(_loss([1000, 1000, 1000])), "packet_loss")
    assert p.height == 1
    row = p.row(0, named=True)
    assert row["metric"] == "loss_rate_rx" and row["observed"] == pytest.approx(1e-5)
    e = ev(row)
    assert e["events"] == 3000 and e["packets_estimated"] is False


def test_loss_near_miss_stays_silent() -> None:
    assert only(run(_loss([50, 50, 50])), "packet_loss").is_empty()  # p = 5e-7


def test_q_counter_wrap_is_not_a_loss_burst() -> None:
    # 32-bit out_of_sequence wraps: 2^32-100 -> +150 -> +150; p = 1.5e-6 per interval, exact
    rows = _loss([150, 150, 150], start=2**32 - 200)
    p = only(run(rows), "packet_loss")
    assert p["observed"].to_list() == [pytest.approx(1.5e-6)]
    assert ev(p.row(0, named=True))["events"] == 450
    assert only(run(_loss([20, 20, 20], start=2**32 - 30)), "packet_loss").is_empty()


def test_idle_nic_loss_ratio_undefined() -> None:
    assert only(run(_loss([30, 30, 30], packets=0)), "packet_loss").is_empty()


def test_packets_estimated_from_bytes_and_largest_counter_taken() -> None:
    d = {"device": "mlx5_0", "port": 1}
    rows = (
        ser("packet_seq_errors", cum(0, [400, 400]), **d)
        + ser("local_ack_timeout_errors", cum(0, [10, 10]), **d)
        + ser("port_xmit_data_bytes", cum(10**14, [4096 * 1e7, 4096 * 1e7]), **d)
    )
    row = only(run(rows), "packet_loss").row(0, named=True)
    assert row["metric"] == "loss_rate_tx" and row["observed"] == pytest.approx(4e-5)
    e = ev(row)
    assert e["packets_estimated"] is True and e["counts"] == {"packet_seq_errors": 800, "local_ack_timeout_errors": 20}


def test_loss_without_any_traffic_counter_is_info() -> None:
    rows = ser("out_of_sequence_packets", cum(0, [100, 100]), device="mlx5_0", port=1)
    p = only(run(rows), "packet_loss")
    assert p["severity"].to_list() == ["info"] and "p unknown" in p["message"][0]


def test_one_missing_loss_sample_uses_the_covering_packet_interval() -> None:
    rows = _loss([1000, 1000, 1000, 1000])
    rows = [r for r in rows if not (r[1] == "port_rcv_packets" and r[0] == 20)]
    p = only(run(rows), "packet_loss")
    assert p["observed"].to_list() == [pytest.approx(1e-5)]


# --- lossy_collapse ----------------------------------------------------------------------------


def _collapse(p: float, *, healthy: float = 4e10, lossy: float = 2e10) -> list[tuple]:
    d = {"device": "mlx5_0", "port": 1}
    pk = 1e8
    return (
        ser("out_of_sequence_packets", cum(0, [0, 0, 0, p * pk, p * pk]), **d)
        + ser("port_rcv_packets", cum(10**12, [pk] * 5), **d)
        + ser("port_rcv_data_bytes", cum(10**14, [healthy * 10] * 3 + [lossy * 10] * 2), **d)
        + ser("link_rate_bytes_per_s", [50_000_000_000] * 6, is_counter=False, **d)
    )


def test_loss_above_0_1_percent_collapses_with_model_and_baseline() -> None:
    c = only(run(_collapse(0.005)), "lossy_collapse")
    assert c.height == 1
    row = c.row(0, named=True)
    assert row["severity"] == "critical"
    assert row["observed"] == pytest.approx(2e10) and row["expected"] == pytest.approx(4e10)
    e = ev(row)
    w = 50e9 * 10e-6 / 4096
    assert e["gbn_efficiency"] == pytest.approx(1 / (1 + 0.005 * w))
    assert e["go_back_0_efficiency"] == pytest.approx((1 - 0.005) ** 1024)
    assert e["observed_drop_ratio"] == pytest.approx(0.5)
    assert "own median" in e["expected_basis"]


def test_loss_just_below_0_1_percent_is_not_collapse() -> None:
    f = run(_collapse(0.0009))
    assert only(f, "lossy_collapse").is_empty()
    assert only(f, "packet_loss").height == 1


def test_collapse_expected_from_peers_when_no_own_baseline() -> None:
    d = {"device": "mlx5_0", "port": 1}
    lossy = (
        ser("out_of_sequence_packets", cum(0, [2e5, 2e5]), **d)
        + ser("port_rcv_packets", cum(0, [1e8, 1e8]), **d)
        + ser("port_rcv_data_bytes", cum(0, [1e10, 1e10]), **d)
    )
    peer = ser("port_rcv_packets", cum(0, [1e8, 1e8]), host="h2", **d) + ser(
        "port_rcv_data_bytes", cum(0, [4e10, 4e10]), host="h2", **d
    )
    peer += ser("out_of_sequence_packets", cum(0, [0, 0]), host="h2", **d)
    row = only(run(lossy + peer), "lossy_collapse").row(0, named=True)
    assert row["expected"] == pytest.approx(4e9) and "peer" in ev(row)["expected_basis"]
    assert ev(row)["link_rate_assumed"] is True


# --- lossless_misconfig ------------------------------------------------------------------------


def _eth(discards: list[float], *, pause_prios: tuple[int, ...] = (), marked: bool = False) -> list[tuple]:
    rows = ser("phy_rx_discards", cum(0, discards)) + ser("phy_rx_packets", cum(0, [1e8] * len(discards)))
    rows += ser("prio_rx_bytes", cum(0, [1e10] * len(discards)), priority=3)
    for p in pause_prios:
        rows += pause([0.0] * len(discards), priority=p)
    if marked:
        rows += ser("prio_rx_ecn_marked_packets", cum(0, [0] * len(discards)), priority=3)
    return rows


def test_roce_drops_without_pfc_or_ecn_are_misconfiguration() -> None:
    m = only(run(_eth([500, 500, 500], marked=True)), "lossless_misconfig")
    assert m["metric"].to_list() == ["loss_events"]
    assert "no PFC pause and no ECN mark" in m["message"][0]


def test_drops_with_pfc_pausing_are_not_misconfiguration() -> None:
    rows = _eth([500, 500, 500], marked=True) + pause([0.0, 0.1, 0.1], priority=3)
    assert only(run(rows), "lossless_misconfig").is_empty()


def test_drops_with_xoff_frames_pausing_are_not_misconfiguration() -> None:
    # Intel ice counts PFC as XOFF frames per priority (no pause-time counter): the core gives its
    # rx_xoff_frames the pause-frames role, so its pausing counts as PFC at work.
    rows = _eth([500, 500, 500], marked=True) + ser("rx_xoff_frames", cum(0, [0, 4000, 4000]), priority=3)
    assert only(run(rows), "lossless_misconfig").is_empty()
    # The same NIC with its XOFF counter flat: drops with no pause and no mark are the misconfiguration.
    flat = _eth([500, 500, 500], marked=True) + ser("rx_xoff_frames", cum(0, [0, 0, 0]), priority=3)
    assert only(run(flat), "lossless_misconfig")["metric"].to_list() == ["loss_events"]


def test_unknown_ecn_does_not_claim_misconfiguration() -> None:
    assert only(run(_eth([500, 500, 500], pause_prios=(3,))), "lossless_misconfig").is_empty()


def test_host_level_pause_and_ecn_for_rdma_device() -> None:
    # loss counted on mlx5_0 (hw_counters), pause and ECN seen on the host's netdev eth2: both flat
    rows = _loss([1000, 1000, 1000]) + _eth([0, 0, 0], pause_prios=(3,), marked=True)
    m = only(run(rows), "lossless_misconfig")
    assert m["device"].to_list() == ["mlx5_0"]
    assert ev(m.row(0, named=True))["pause_basis"] == "host"


def test_drops_on_priority_without_pfc_or_with_ecn_disabled(tmp_path: Path) -> None:
    rows = ser("prio_rx_discards", cum(0, [40, 40]), priority=0) + ser("prio_rx_bytes", cum(0, [1e9, 1e9]), priority=0)
    rows += pause([0.0, 0.0], priority=3) + ser("prio_rx_discards", cum(0, [40, 40]), priority=3)
    attrs = pl.DataFrame(
        {
            "time": [samples(rows)["time"][0]] * 2,
            "host": ["h1", "h1"],
            "device": ["eth2", "eth2"],
            "port": [None, None],
            "key": ["ecn.roce_np.enable.3", "ecn.roce_rp.enable.3"],
            "value": ["0", "1"],
            "source": ["sysfs", "sysfs"],
        },
        schema={
            "time": pl.Datetime("ns", "UTC"),
            "host": pl.Categorical(),
            "device": pl.Categorical(),
            "port": pl.UInt16,
            "key": pl.Categorical(),
            "value": pl.String,
            "source": pl.Categorical(),
        },
    )
    f = fabricscope.run_analysis(samples(rows), attributes=attrs).findings
    m = only(f, "lossless_misconfig").sort("priority")
    assert m["priority"].to_list() == [0, 3]
    assert "PFC not enabled" in m["message"][0]
    assert "ecn/roce_np/enable/3 = 0" in m["message"][1] and "PFC" not in m["message"][1]
    del tmp_path


def test_misconfig_near_miss_few_drops_silent() -> None:
    assert only(run(_eth([3, 3, 2], marked=True)), "lossless_misconfig").is_empty()


# --- committed sample traces -------------------------------------------------------------------


def test_sample_ethtool_trace_pfc_storm_and_congestion(samples_dir: Path) -> None:
    f = fabricscope.analyze(samples_dir / "ethtool" / "roce01-eth2.log")
    roce = f.filter(pl.col("kind").is_in(ROCE))
    assert sorted(roce["kind"].to_list()) == ["pfc_congestion", "pfc_storm"]
    s = only(f, "pfc_storm").row(0, named=True)
    # the last interval is paused 99.5% with no Xoff->Xon transition while transmit collapses:
    # the ratio, unbroken-pause and no-transition rules fire and fold into one finding
    assert (s["host"], s["device"], s["priority"], s["metric"]) == ("roce01", "eth2", 3, "rx_pause_ratio")
    assert s["observed"] == pytest.approx(0.995)
    assert s["start"].timestamp() == 1_796_200_020 and s["end"].timestamp() == 1_796_200_030
    assert sorted(a["rule"] for a in ev(s)["also_fired"]) == ["pfc_storm.no_transition", "pfc_storm.unbroken_pause"]
    c = only(f, "pfc_congestion").row(0, named=True)
    assert (c["severity"], c["priority"], c["metric"]) == ("critical", 3, "rx_pause_ratio")
    assert c["observed"] == pytest.approx((0.6 + 0.995) / 2)  # 60% then 99.5% over the last 20 s
    assert ev(c)["peak_ratio"] == pytest.approx(0.995)


def test_sample_sysfs_grep_trace_loss_and_ecn(samples_dir: Path) -> None:
    f = fabricscope.analyze(samples_dir / "sysfs-grep" / "roce02-counters.txt")
    loss = only(f, "packet_loss").sort("metric")
    assert loss["metric"].to_list() == ["loss_rate_rx", "loss_rate_tx"]
    # 2210 out-of-sequence and 2204 NAK sequence errors in 30 s; packets from bytes / 4096
    assert loss["observed"].to_list() == [
        pytest.approx(2210 / (1_425_000_000_000 / 4096)),
        pytest.approx(2204 / (1_440_000_000_000 / 4096)),
    ]
    e = only(f, "ecn_congestion")
    assert e["severity"].to_list() == ["info"]  # ~0.0055% marked, CNPs sent ~ handled: loop healthy
    assert ev(e.row(0, named=True))["cnp_sent_per_s"] == pytest.approx(18004 / 30)
    assert only(f, "lossy_collapse").is_empty() and only(f, "lossless_misconfig").is_empty()


def test_captures_are_judged_like_counters(samples_dir: Path) -> None:
    # the synthetic RoCE+PFC capture: 397 RoCE packets in one 1 s bin with 4 PSN gaps and 14 CE marks
    f = fabricscope.analyze(samples_dir / "pcap" / "roce_pfc.pcap")
    got = {(r["kind"], r["severity"]) for r in f.iter_rows(named=True) if r["severity"] != "info"}
    assert got == {("lossy_collapse", "critical"), ("ecn_congestion", "warning")}
    loss = f.filter(pl.col("kind") == "lossy_collapse").row(0, named=True)
    assert ev(loss)["p"] == pytest.approx(4 / 397, rel=1e-3)
    assert ev(loss)["packets"] == 397
    assert loss["device"] == "capture0"


def test_pause_ratio_read_through_one_second_stamps_is_one_window() -> None:
    # 5.15% pause in a 15.07 s loop stamped to the second: 15 s intervals read 5.17%, the one 16 s
    # interval reads 4.85%, under the 5% warning. Judged with the stamps' 1 s, it is one window.
    rows = _sleep_loop(0.0515, period_s=15.07, n=20, whole_seconds=True)
    times = [r[0] for r in rows]
    assert sorted({b - a for a, b in itertools.pairwise(times)}) == [15.0, 16.0]
    assert 0.0515 * 15.07 / 16 < 0.05 < 0.0515 * 15.07 / 15
    f = only(run(rows), "pfc_congestion")
    assert f.height == 1
    row = f.row(0, named=True)
    assert (row["severity"], row["metric"]) == ("warning", "tx_pause_ratio")
    assert row["start"] == samples(rows)["time"][0] and row["end"] == samples(rows)["time"][-1]
    assert row["observed"] == pytest.approx(0.0515, abs=0.001)


def test_steady_pause_under_the_threshold_on_one_second_stamps_stays_quiet() -> None:
    # 4.8%: every 15 s interval could be 14 s long (bound 5.17%), but none is measured at 5%
    rows = _sleep_loop(0.048, period_s=15.07, n=20, whole_seconds=True)
    assert only(run(rows), "pfc_congestion").is_empty()
