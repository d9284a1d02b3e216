"""``fabricscope simulate``: write a simulated fabric with faults in real formats, plus truth.json."""

from __future__ import annotations

import argparse
from typing import Any

from fabricscope.doors.cli._common import EXIT_USAGE, positive_seconds_arg
from fabricscope.simulate import FORMATS, SCENARIOS, simulate
from fabricscope.simulate.scale import parse_scale, write_scale


def _cmd_simulate(args: argparse.Namespace) -> int:
    if args.list:
        width = max(len(n) for n in SCENARIOS)
        for name, sc in SCENARIOS.items():
            print(f"{name:<{width}}  {sc.tech:<8} {sc.summary}")
        print(
            f"{'--scale':<{width}}  ndr400   benchmark: PORTSxCOUNTERSxREADINGS of a healthy fabric as /federate text"
        )
        return 0
    if args.scale and args.outdir:
        try:
            ports, counters, readings = parse_scale(args.scale)
        except ValueError as e:
            print(f"fabricscope simulate: {e}")
            return EXIT_USAGE
        res = write_scale(
            args.outdir,
            ports=ports,
            counters=counters,
            readings=readings,
            interval_s=args.interval or 10.0,
            files=args.files,
            seed=args.seed,
        )
        print(
            f"wrote {res['samples']:,} samples, {res['bytes'] / 1e6:,.1f} MB in {res['files']} file(s) "
            f"in {res['seconds']:.2f} s: {res['mb_per_s']:,.0f} MB/s"
        )
        return 0
    if not args.outdir or not args.scenario:
        print("fabricscope simulate: OUTDIR and --scenario are required (or --list)")
        return EXIT_USAGE
    fmts = args.format.split(",") if args.format else None
    if args.scenario == "scale":
        print("fabricscope simulate: the scale benchmark mode is --scale PORTSxCOUNTERSxREADINGS (e.g. 512x12x200)")
        return EXIT_USAGE
    try:
        res = simulate(
            args.outdir,
            args.scenario,
            hosts=args.hosts,
            duration=args.duration,
            interval=args.interval,
            seed=args.seed,
            formats=fmts,
            sysfs_snapshots=args.sysfs_snapshots,
            lldp=args.lldp,
            nics=args.nics,
        )
    except ValueError as e:
        print(f"fabricscope simulate: {e}")
        return EXIT_USAGE
    print(f"wrote {len(res.files)} file(s), {res.bytes / 1e6:,.2f} MB under {args.outdir}")
    for e in res.truth["expected"]:
        print(f"  expect {e['severity']:<8} {e['kind']:<18} {e['host']} {','.join(e['device'] or ['-'])}")
    if not res.truth["expected"]:
        print("  expect nothing above info (a trap)")
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``simulate`` subcommand to the ``fabricscope`` parser.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers`` returned.

    Returns:
        The subcommand's parser.
    """
    p = subparsers.add_parser(
        "simulate",
        help="write a simulated fabric with faults in real formats, plus truth.json",
        description="Simulate a leaf-spine fabric with faults and write what real clusters export.",
        epilog=(
            "examples:\n"
            "  fabricscope simulate --list\n"
            "  fabricscope simulate out/storm --scenario pfc-storm --hosts 8 --duration 600\n"
            "  fabricscope simulate out/flap --scenario link-flap --format prometheus,sysfs-grep\n"
            "  fabricscope simulate out/e2e --scale 8192x12x1018 --files 8\n"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("outdir", nargs="?", metavar="OUTDIR", help="directory to write into")
    p.add_argument("--scenario", help="scenario name (see --list)")
    p.add_argument("--list", action="store_true", help="list the scenarios")
    p.add_argument("--hosts", type=int, help="number of hosts")
    p.add_argument("--nics", type=int, help="NICs per host (default: the scenario's)")
    p.add_argument("--duration", type=positive_seconds_arg, help="seconds to simulate")
    p.add_argument("--interval", type=positive_seconds_arg, help="seconds between readings")
    p.add_argument("--seed", type=int, default=1, help="random seed (output is deterministic per seed)")
    p.add_argument("--format", help=f"comma-separated formats: {','.join(FORMATS)}")
    p.add_argument("--sysfs-snapshots", choices=["last", "all"], default="last", help="sysfs trees to write")
    p.add_argument(
        "--lldp",
        choices=["lldpctl", "sonic"],
        help="RoCE topology: lldpctl files per host, or SONiC `show lldp table` per leaf (default: the scenario's)",
    )
    p.add_argument(
        "--scale",
        metavar="PORTSxCOUNTERSxREADINGS",
        help="write PORTS x COUNTERS x READINGS samples of /federate text (e.g. 8192x12x1018 = 10^8)",
    )
    p.add_argument("--files", type=int, default=1, help="--scale: split the hosts over this many files")
    p.set_defaults(func=_cmd_simulate)
    return p
