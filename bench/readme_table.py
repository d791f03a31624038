#!/usr/bin/env python3
"""Prints the README's performance table from a streamcap-bench result file.

    python3 bench/readme_table.py [bench/results/latest.json]

One row per workload and streamcap mode: median wall time over the runs
(fastest-slowest), user + system CPU seconds, and the median per-round
ratios to libnids (collect both directions) and to the C libpcap flow
exporter, wall time and CPU time, then the same wall ratio with every tool
pinned to one CPU.
"""
import json
import sys

MODES = ["flows", "streams --delivery segments", "streams"]
WORKLOADS = ["campus", "campus-small", "corpus-merged"]


def ratio(r, peer):
    v = r.get(peer)
    if not v:
        return "-", "-"
    wall, cpu = v.get("wall"), v.get("cpu")
    w = f"{wall['median']:.2f}×" if wall else "-"
    c = f"{cpu['median']:.2f}×" if cpu else "-"
    return w, c


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "bench/results/latest.json"
    d = json.load(open(path))
    print("| workload | streamcap | wall s (min–max) | CPU s | vs libnids, wall / CPU | vs C exporter, wall / CPU | vs libnids, vs C exporter, 1 CPU |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for w in d["workloads"]:
        if w["name"] not in WORKLOADS:
            continue
        rows = {(r["tool"], r["mode"]): r for r in w["results"]}
        for m in MODES:
            r = rows.get(("streamcap", m))
            if r is None:
                continue
            one = rows.get(("streamcap", f"{m}, 1 CPU"))
            wall = r["wall_s"]
            nw, nc = ratio(r, "vs_nids_streams")
            pw, pc = ratio(r, "vs_pcap_flows")
            ow = "-"
            if one:
                a, _ = ratio(one, "vs_nids_streams")
                b, _ = ratio(one, "vs_pcap_flows")
                ow = f"{a}, {b}"
            print(
                f"| {w['name']} | {m} | {wall['median']:.3f} ({wall['min']:.3f}–{wall['max']:.3f}) "
                f"| {r['cpu_s']['median']:.2f} | {nw} / {nc} | {pw} / {pc} | {ow} |"
            )


if __name__ == "__main__":
    main()
