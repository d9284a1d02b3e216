"""``fabricscope advise``: all-reduce time per step and the InfiniBand vs RoCEv2 break-even."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import polars as pl

from fabricscope._atomic import write_text
from fabricscope.doors.cli._common import add_config_argument, add_lenient_argument
from fabricscope.exceptions import FabricscopeError
from fabricscope.fabric.advise import advise, load_inputs
from fabricscope.incidents.findings import json_text
from fabricscope.pipeline import run_analysis
from fabricscope.redaction import redact_text


def _print(df: pl.DataFrame, title: str) -> None:
    print(title)
    with pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=250,
        float_precision=3,
        tbl_hide_column_data_types=True,
        tbl_hide_dataframe_shape=True,
    ):
        print(df)
    print()


def _cmd_advise(args: argparse.Namespace) -> int:
    try:
        inputs = load_inputs(
            args.config,
            gpus=args.gpus,
            gradient_gb=args.gradient_gb,
            bandwidth_gbps=args.bandwidth_gbps,
            gpus_per_node=args.gpus_per_node,
            utilisation_ratio=args.utilisation,
            gpu_hour_usd=args.gpu_hour_usd,
        )
    except OSError as e:
        print(f"fabricscope advise: {redact_text(str(e))}", file=sys.stderr)
        return 3
    analysis = None
    if args.inputs:
        try:
            analysis = run_analysis(args.inputs, strict=not args.lenient)
        except FabricscopeError as e:
            print(f"fabricscope advise: cannot read input: {redact_text(str(e))}", file=sys.stderr)
            return 3
    a = advise(inputs, analysis=analysis)
    if args.json:
        text = json_text(a.to_dict(), indent=2)
        if args.json == "-":
            print(text)
            return 0
        target = Path(args.json)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text(target, text + "\n")
    ar = a.allreduce.select(
        "gradient_gb",
        "gpus",
        "nodes",
        "bandwidth_gbps",
        "flat_ring_ms",
        "hierarchical_ms",
        "hierarchical_speedup_ratio",
    )
    _print(ar, "All-reduce per step: flat ring 2(n-1)/n*S/B vs hierarchical (NVLink, network, NVLink)")
    be = a.breakeven.select(
        "utilisation_ratio",
        "penalty_ratio",
        "saving_per_gpu_usd",
        "lost_usd_per_gpu_per_year",
        "payback_years",
        "break_even_utilisation_ratio",
        "choice",
    )
    _print(be, f"InfiniBand vs RoCEv2 over {a.inputs.lifetime_years:g} years at ${a.inputs.gpu_hour_usd:g}/GPU-hour")
    print("sources:")
    for k, v in a.sources.items():
        print(f"  {k}: {v}")
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``advise`` subcommand to the ``fabricscope`` parser.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers`` returned.

    Returns:
        The subcommand's parser.
    """
    p = subparsers.add_parser(
        "advise",
        help="what-if: all-reduce time per step and the InfiniBand vs RoCEv2 break-even",
        description=(
            "All-reduce time (flat ring and hierarchical NVLink-then-network) per gradient size, GPU count and "
            "bandwidth, and the InfiniBand versus RoCEv2 break-even. Every default cites its source."
        ),
        epilog=(
            "examples:\n"
            "  fabricscope advise\n"
            "  fabricscope advise --gpus 512 --gradient-gb 2 10 --bandwidth-gbps 400\n"
            "  fabricscope advise --from perftest.log nccl.log --json advice.json\n"
            "  fabricscope advise --config cluster.toml --json - | jq .breakeven\n"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_argument(p, help="TOML file of inputs (keys as in docs/advise.md)")
    p.add_argument("--gpus", type=int, nargs="+", metavar="N", help="GPU counts")
    p.add_argument("--gpus-per-node", type=int, metavar="G", help="GPUs per node (NVLink domain)")
    p.add_argument("--gradient-gb", type=float, nargs="+", metavar="X", help="gradient GB all-reduced per step")
    p.add_argument("--bandwidth-gbps", type=float, nargs="+", metavar="B", help="network Gb/s per GPU")
    p.add_argument("--utilisation", type=float, nargs="+", metavar="U", help="cluster utilisations (0-1)")
    p.add_argument("--gpu-hour-usd", type=float, metavar="USD", help="value of one GPU-hour")
    p.add_argument("--from", dest="inputs", nargs="+", metavar="INPUT", help="measured bandwidths from these inputs")
    add_lenient_argument(p, help="skip and count bad records in --from inputs")
    p.add_argument("--json", metavar="PATH|-", help="write the advice document (fabricscope.advice/1)")
    p.set_defaults(func=_cmd_advise)
    return p
