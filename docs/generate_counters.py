"""Print docs/counters.md from the live registry: `python docs/generate_counters.py > docs/counters.md`."""

from __future__ import annotations

import fabricscope


def main() -> None:
    c = fabricscope.counters()
    print("# Counter vocabulary")
    print()
    print("Generated from `rust/fabricscope-core/src/vocabulary.rs` by `make docs`; do not edit.")
    print("`fabricscope counters` prints the same registry.")
    print()
    print("- **unit** is the unit of the stored value (after parse-time conversion).")
    print("- **overflow**: `saturate@N` pegs at 2^N-1 (IB PMA), `wrap@N` wraps at 2^N,")
    print("  `saturate@32|wrap@64` is 32-bit saturating or 64-bit depending on PMA capability.")
    print("- Spellings are `namespace:raw`; `(xN)` marks values multiplied at parse time")
    print("  (4-octet data words). Ethtool `{p}` is the priority 0-7, which goes to `priority`.")
    print("- `[bnxt_en]` after a spelling names the vendor drivers that print it (from their string")
    print("  tables); `fabricscope counters --vendor NAME` lists one driver's or vendor's spellings.")
    print("- **roles** name what analyses read a counter for (`tx_bytes`, `rx_loss`, ...), with the")
    print("  counter's preference in each role: where a port has several counters of a role, an")
    print("  analysis that needs one takes the lowest number with data. Detectors, the report and the")
    print("  dashboard ask `fabricscope.reading.vocabulary.counters_with_role(role)`; a counter gets a role")
    print("  in `vocabulary.rs` and every analysis of that role reads it. **stands for** names the")
    print("  counter a capture counter is read as (its roles come through that counter).")
    print()
    for layer in ["network", "nvlink", "pcie", "cxl", "device"]:
        part = c.filter(c["layer"] == layer)
        if part.is_empty():
            continue
        print(f"## Layer: {layer}")
        print()
        print("| counter | unit | kind | overflow | per priority | roles | meaning | spellings |")
        print("|---|---|---|---|---|---|---|---|")
        for r in part.iter_rows(named=True):
            sp = "<br>".join(f"`{s}`" for s in r["spellings"])
            pp = "yes" if r["per_priority"] else ""
            roles = [f"`{role}` {rank}" for role, rank in zip(r["roles"], r["role_ranks"], strict=True)]
            if r["stands_for"]:
                roles.append(f"stands for `{r['stands_for']}`")
            cells = [
                f"`{r['name']}`",
                r["unit"],
                r["kind"],
                r["overflow"],
                pp,
                "<br>".join(roles),
                r["description"],
                sp,
            ]
            print("| " + " | ".join(cells) + " |")
        print()
    print("## Roles")
    print()
    print("| role | layer | counters, most preferred first |")
    print("|---|---|---|")
    ranked: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for r in c.iter_rows(named=True):
        for role, rank in zip(r["roles"], r["role_ranks"], strict=True):
            ranked.setdefault((role, r["layer"]), []).append((rank, r["name"]))
    for (role, layer), names in sorted(ranked.items()):
        print(f"| `{role}` | {layer} | " + ", ".join(f"`{n}`" for _, n in sorted(names)) + " |")
    print()
    print("## Formats")
    print()
    print("| format | also accepted as | produced by | detection | timestamps | time resolution |")
    print("|---|---|---|---|---|---|")
    for r in fabricscope.formats().iter_rows(named=True):
        aliases = ", ".join(f"`{a}`" for a in r["aliases"])
        cells = [f"`{r['name']}`", aliases, r["produced_by"], r["detection"], r["timestamps"], r["time_resolution"]]
        print(f"| {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
