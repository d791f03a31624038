#!/usr/bin/env python3
"""Turns the raw records of bench/pcap-locality.sh and bench/pcap-fanout.sh
into their JSON result files and prints the Markdown tables of
bench/README.md ("Locality buffering and fan-out for libpcap programs").

    python3 bench/pcap_report.py locality RECORDS.tsv OUT.json
    python3 bench/pcap_report.py fanout RECORDS.tsv OUT.json
    python3 bench/pcap_report.py suricata RECORDS.tsv OUT.json
    python3 bench/pcap_report.py tables locality|fanout|suricata OUT.json

The first two write OUT.json and print the tables; `tables` prints them
again from a result file.
"""
import json
import statistics
import sys

EVENTS = ["Ir", "I1mr", "ILmr", "Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw"]
LL_TITLES = {"llc": "last level", "l2": "L2-sized last level"}


def cache_text(spec):
    size, ways, line = (int(x) for x in spec.split(","))
    unit = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
    return f"{unit}, {ways}-way, {line} B lines"


def config_batch(config):
    if config.startswith("locality-"):
        return int(config.split("-", 1)[1])
    return None


def per_packet(totals, startup, packets):
    net = {e: totals[e] - startup[e] for e in EVENTS}
    n = packets - 1
    return {
        "instructions": net["Ir"] / n,
        "d1_misses": (net["D1mr"] + net["D1mw"]) / n,
        "ll_misses": (net["DLmr"] + net["DLmw"]) / n,
        "ll_read_misses": net["DLmr"] / n,
        "ll_write_misses": net["DLmw"] / n,
    }


def records(tsv):
    """The records of a raw file: its `meta` rows as a dict, and the other
    rows, each a list of fields, the kind first."""
    meta, rows = {}, []
    for line in open(tsv):
        f = line.rstrip("\n").split("\t")
        if f[0] == "meta":
            meta[f[1]] = f[2]
        else:
            rows.append(f)
    return meta, rows


def write_doc(out, doc, tables):
    """Writes a result file and prints its tables."""
    with open(out, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    tables(doc)


def cachegrind_counts(fields):
    """The EVENTS of a `cg` row's NAME=VALUE fields."""
    vals = dict(x.split("=") for x in fields)
    return {e: int(vals[e]) for e in EVENTS}


def locality(tsv, out):
    traces, checks, cg, times = [], {}, {}, {}
    meta, rows = records(tsv)
    for f in rows:
        kind = f[0]
        if kind == "trace":
            traces.append({"name": f[1], "file": f[2], "bytes": int(f[3]), "about": f[4]})
        elif kind == "check":
            _, trace, tool, config, ip, total, flows = f
            checks[(trace, tool, config)] = {
                "ip_packets": int(ip),
                "packets": int(total),
                "flows": int(flows),
            }
        elif kind == "cg":
            _, trace, tool, ll, config = f[:5]
            cg[(trace, tool, ll, config)] = cachegrind_counts(f[5:])
        elif kind == "time":
            _, trace, tool, config, run, wall, user, sys_, load = f
            times.setdefault((trace, tool, config), []).append(
                {"wall": float(wall), "user": float(user), "sys": float(sys_), "load": load}
            )
    packets = int(meta["packets"])
    results = []
    configs = []
    for key in cg:
        if not key[3].startswith("startup-") and (key[0], key[1], key[3]) not in configs:
            configs.append((key[0], key[1], key[3]))
    for trace, tool, config in configs:
        r = {"trace": trace, "tool": tool, "config": config, "batch": config_batch(config)}
        if (trace, tool, config) in checks:
            r["check"] = checks[(trace, tool, config)]
        r["cachegrind"] = {}
        for ll in LL_TITLES:
            t = cg.get((trace, tool, ll, config))
            s = cg.get((trace, tool, ll, "startup-" + config))
            if t is None or s is None:
                continue
            r["cachegrind"][ll] = {
                "totals": t,
                "startup": s,
                "per_packet": per_packet(t, s, packets),
            }
        runs = times.get((trace, tool, config), [])
        if runs:
            r["time"] = {
                "runs": runs,
                "wall_median": statistics.median(x["wall"] for x in runs),
                "cpu_median": statistics.median(x["user"] + x["sys"] for x in runs),
                "wall_min": min(x["wall"] for x in runs),
                "wall_max": max(x["wall"] for x in runs),
            }
        results.append(r)
    doc = {
        "experiment": "locality buffering (locality-buffering.txt §5) for unmodified libpcap programs reading a file under libstreamcap_pcap.so",
        "command": "bench/pcap-locality.sh",
        "commit": meta.get("commit"),
        "packets": packets,
        "runs": int(meta["runs"]),
        "copy_runs": int(meta["copy_runs"]),
        "cpu": int(meta["cpu"]),
        "machine": {
            "cpu_model": meta.get("cpu_model"),
            "valgrind": meta.get("valgrind"),
            "ndpi": meta.get("ndpi"),
            "libpcap": meta.get("libpcap"),
        },
        "cachegrind": {
            "I1": meta["I1"],
            "D1": meta["D1"],
            "LL": {"llc": meta["LL_llc"], "l2": meta["LL_l2"]},
            "per_packet": "(run - run of the same configuration on the trace's first packet alone) / (packets - 1)",
        },
        "traces": traces,
        "results": results,
    }
    write_doc(out, doc, locality_tables)


def pct(v, base):
    if base == 0:
        return "-"
    r = round(100.0 * (v - base) / base, 1)
    return f"{r + 0.0:+.1f} %"


def label(r):
    if r["config"] == "plain":
        return "no library"
    if r["config"] == "preload":
        return "library, no PCAP_LOCALITY"
    return f"PCAP_LOCALITY={r['batch']}"


def locality_tables(doc):
    c = doc["cachegrind"]
    print(
        f"cachegrind: I1 {cache_text(c['I1'])}, D1 {cache_text(c['D1'])}; "
        f"last level {cache_text(c['LL']['llc'])} (the machine's), "
        f"L2-sized {cache_text(c['LL']['l2'])}. Per packet: {c['per_packet']}. "
        f"Time: median of {doc['runs']} runs (pcap_count: {doc['copy_runs']}), "
        f"taskset -c {doc['cpu']}.\n"
    )
    by = {}
    for r in doc["results"]:
        by.setdefault((r["trace"], r["tool"]), []).append(r)
    for tr in doc["traces"]:
        name = tr["name"]
        rows = by.get((name, "ndpiReader"), [])
        if not rows:
            continue
        plain = next(r for r in rows if r["config"] == "plain")
        flows = plain.get("check", {}).get("flows")
        print(f"#### {name}: ndpiReader -i FILE -q, {doc['packets']} packets"
              + (f", {flows} flows (ndpiReader's count)" if flows else "") + "\n")
        print("| configuration | instructions/packet | D1 misses/packet | LL misses/packet (last level) | LL misses/packet (L2-sized) | wall s (min–max) | user+sys s | LL misses vs no library | L2-sized vs no library | wall vs no library | CPU vs no library |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        pb = plain["cachegrind"]
        pt = plain["time"]
        for r in rows:
            g = r["cachegrind"]
            t = r["time"]
            llc, l2 = g["llc"]["per_packet"], g["l2"]["per_packet"]
            print(
                f"| {label(r)} | {llc['instructions']:.0f} | {llc['d1_misses']:.2f} | {llc['ll_misses']:.3f} | {l2['ll_misses']:.3f} "
                f"| {t['wall_median']:.3f} ({t['wall_min']:.3f}–{t['wall_max']:.3f}) | {t['cpu_median']:.3f} "
                f"| {pct(llc['ll_misses'], pb['llc']['per_packet']['ll_misses'])} "
                f"| {pct(l2['ll_misses'], pb['l2']['per_packet']['ll_misses'])} "
                f"| {pct(t['wall_median'], pt['wall_median'])} | {pct(t['cpu_median'], pt['cpu_median'])} |"
            )
        loc = [r for r in rows if r["batch"]]
        if loc:
            best_ll = min(loc, key=lambda r: r["cachegrind"]["llc"]["per_packet"]["ll_misses"])
            best_l2 = min(loc, key=lambda r: r["cachegrind"]["l2"]["per_packet"]["ll_misses"])
            best_t = min(loc, key=lambda r: r["time"]["wall_median"])
            print(
                f"\nFewest last-level misses: batch {best_ll['batch']}; fewest L2-sized misses: batch "
                f"{best_l2['batch']}; least wall time: batch {best_t['batch']} "
                f"({pct(best_t['time']['wall_median'], pt['wall_median'])} against no library).\n"
            )
    for tr in doc["traces"]:
        name = tr["name"]
        rows = by.get((name, "pcap_count"), [])
        if not rows:
            continue
        plain = next(r for r in rows if r["config"] == "plain")
        print(f"#### {name}: pcap_count FILE (the copy's cost), {doc['packets']} packets\n")
        print("| configuration | instructions/packet | D1 misses/packet | LL misses/packet (last level) | LL misses/packet (L2-sized) | wall s | user+sys s | instructions added/packet | CPU ns added/packet |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        pi = plain["cachegrind"]["llc"]["per_packet"]["instructions"]
        pc = plain["time"]["cpu_median"]
        for r in rows:
            g = r["cachegrind"]
            t = r["time"]
            llc, l2 = g["llc"]["per_packet"], g["l2"]["per_packet"]
            added_ns = (t["cpu_median"] - pc) / doc["packets"] * 1e9
            print(
                f"| {label(r)} | {llc['instructions']:.0f} | {llc['d1_misses']:.2f} | {llc['ll_misses']:.3f} | {l2['ll_misses']:.3f} "
                f"| {t['wall_median']:.3f} | {t['cpu_median']:.3f} | {round(llc['instructions'] - pi):+d} | {round(added_ns):+d} |"
            )
        print()


def suricata(tsv, out):
    """bench/pcap-locality-suricata.sh: Suricata under locality buffering."""
    traces, cg, times, startups = [], {}, {}, {}
    meta, rows = records(tsv)
    for f in rows:
        kind = f[0]
        if kind == "trace":
            traces.append({"name": f[1], "file": f[2]})
        elif kind == "cg":
            _, trace, ll, config, alerts = f[:5]
            cg[(trace, ll, config)] = cachegrind_counts(f[5:])
            cg[(trace, ll, config)]["alerts"] = int(alerts.split("=")[1])
        elif kind in ("time", "startup"):
            _, trace, mpm, config, run, wall, user, sys_, load, alerts = f
            into = times if kind == "time" else startups
            into.setdefault((trace, mpm, config), []).append(
                {"wall": float(wall), "cpu": float(user) + float(sys_), "load": load,
                 "alerts": int(alerts.split("=")[1])}
            )
    packets = int(meta["packets"])
    results = []
    configs = []
    for key in cg:
        if not key[2].startswith("startup-") and (key[0], key[2]) not in configs:
            configs.append((key[0], key[2]))
    for trace, config in configs:
        base = "plain" if config == "plain" else "preload"
        r = {"trace": trace, "config": config, "batch": config_batch(config), "cachegrind": {}, "time": {}}
        for ll in LL_TITLES:
            t = cg.get((trace, ll, config))
            st = cg.get((trace, ll, "startup-" + base))
            if t is None or st is None:
                continue
            r["cachegrind"][ll] = {
                "alerts": t["alerts"],
                "per_packet": per_packet(t, st, packets),
                "i1_misses": (t["I1mr"] - st["I1mr"]) / (packets - 1),
            }
        for mpm in ("ac", "hs"):
            runs = times.get((trace, mpm, config), [])
            ups = startups.get((trace, mpm, base), [])
            if not runs or not ups:
                continue
            up_wall = statistics.median(x["wall"] for x in ups)
            up_cpu = statistics.median(x["cpu"] for x in ups)
            r["time"][mpm] = {
                "runs": runs,
                "startup_wall_median": up_wall,
                "startup_cpu_median": up_cpu,
                "wall_median": statistics.median(x["wall"] for x in runs),
                "net_wall_median": statistics.median(x["wall"] for x in runs) - up_wall,
                "net_cpu_median": statistics.median(x["cpu"] for x in runs) - up_cpu,
                "alerts": sorted({x["alerts"] for x in runs}),
            }
        results.append(r)
    doc = {
        "experiment": "locality buffering (locality-buffering.txt §5) under Suricata with per-port rule groups, reading a file under libstreamcap_pcap.so",
        "command": "bench/pcap-locality-suricata.sh",
        "commit": meta.get("commit"),
        "packets": packets,
        "rules": int(meta["rules"]),
        "runs": int(meta["runs"]),
        "cpu": int(meta["cpu"]),
        "machine": {"cpu_model": meta.get("cpu_model"), "valgrind": meta.get("valgrind"),
                    "suricata": meta.get("suricata")},
        "cachegrind": {
            "I1": meta["I1"], "D1": meta["D1"],
            "LL": {"llc": meta["LL_llc"], "l2": meta["LL_l2"]},
            "mpm": "ac",
            "per_packet": "(run - start-up run of the same configuration, the library's for PCAP_LOCALITY, on the trace's first packet) / (packets - 1)",
        },
        "time": "pinned to one CPU; wall and user+sys CPU, median of the runs, minus the median of the start-up runs",
        "traces": traces,
        "results": results,
    }
    write_doc(out, doc, suricata_tables)


def suricata_tables(doc):
    c = doc["cachegrind"]
    print(
        f"Suricata ({doc['machine']['suricata']}), {doc['rules']} rules in port groups, "
        f"{doc['packets']} packets. cachegrind with mpm-algo ac: I1 {cache_text(c['I1'])}, "
        f"D1 {cache_text(c['D1'])}; last level {cache_text(c['LL']['llc'])} (the machine's), "
        f"L2-sized {cache_text(c['LL']['l2'])}; per packet, net of start-up. Time: taskset -c {doc['cpu']}, "
        f"median of {doc['runs']} runs minus the median start-up.\n"
    )
    for tr in doc["traces"]:
        rows = [r for r in doc["results"] if r["trace"] == tr["name"]]
        if not rows:
            continue
        rows.sort(key=lambda r: (r["batch"] or 0, r["config"] != "plain"))
        plain = next(r for r in rows if r["config"] == "plain")
        print(f"#### {tr['name']}: suricata -r FILE, {doc['packets']} packets\n")
        print("| configuration | instructions/packet | I1 misses/packet | D1 misses/packet | LL misses/packet (last level) | vs no library | LL misses/packet (L2-sized) | vs no library | alerts | ac: net wall s, median (min–max) | vs no library | hs: net wall s, median (min–max) | vs no library |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        pg = plain["cachegrind"]
        for r in rows:
            g = r["cachegrind"]
            llc, l2 = g["llc"]["per_packet"], g["l2"]["per_packet"]
            cells = [label(r), f"{llc['instructions']:.0f}", f"{g['llc']['i1_misses']:.1f}",
                     f"{llc['d1_misses']:.1f}", f"{llc['ll_misses']:.2f}",
                     pct(llc["ll_misses"], pg["llc"]["per_packet"]["ll_misses"]),
                     f"{l2['ll_misses']:.2f}", pct(l2["ll_misses"], pg["l2"]["per_packet"]["ll_misses"]),
                     str(g["llc"]["alerts"])]
            for mpm in ("ac", "hs"):
                t = r["time"].get(mpm)
                p = plain["time"].get(mpm)
                if t and p:
                    up = t["startup_wall_median"]
                    lo = min(x["wall"] for x in t["runs"]) - up
                    hi = max(x["wall"] for x in t["runs"]) - up
                    cells += [f"{t['net_wall_median']:.2f} ({lo:.2f}–{hi:.2f})",
                              pct(t["net_wall_median"], p["net_wall_median"])]
                else:
                    cells += ["-", "-"]
            print("| " + " | ".join(cells) + " |")
        print()


def fanout(tsv, out):
    meta, rows = records(tsv)
    runs = [json.loads(f[1]) for f in rows if f[0] == "run"]
    groups = []
    def key(x):
        return (x["program"], x["config"], x["instances"])

    for rec in runs:
        if key(rec) not in [key(g) for g in groups]:
            groups.append({"program": rec["program"], "config": rec["config"],
                           "instances": rec["instances"], "command": rec["command"], "runs": []})
        next(g for g in groups if key(g) == key(rec))["runs"].append(rec)
    for g in groups:
        rs = g["runs"]
        g["sent_median"] = statistics.median(r["sent"] for r in rs)
        g["send_s_median"] = statistics.median(r["send_s"] for r in rs)
        g["offered_pps_median"] = statistics.median(r["sent"] / r["send_s"] for r in rs)
        g["handled_median"] = statistics.median(r["handled"] for r in rs)
        g["handled_pps_median"] = statistics.median(r["handled"] / r["send_s"] for r in rs)
        losses = [1.0 - r["handled"] / r["sent"] for r in rs]
        g["loss_median"] = statistics.median(losses)
        g["loss_min"], g["loss_max"] = min(losses), max(losses)
        if all(r.get("kernel_dropped") is not None for r in rs):
            g["kernel_dropped_median"] = statistics.median(r["kernel_dropped"] for r in rs)
    doc = {
        "experiment": "kernel fan-out (pcap-fanout.txt §VIII) for unmodified libpcap programs under libstreamcap_pcap.so, and streamcap flows' workers, on a veth pair in a network namespace",
        "command": "bench/pcap-fanout.sh",
        "commit": meta.get("commit"),
        "trace": meta.get("trace"),
        "trace_about": meta.get("trace_about"),
        "cpus": int(meta.get("cpus", "0")),
        "cpu_model": meta.get("cpu_model"),
        "rounds": int(meta.get("rounds", "0")),
        "note": "2 CPUs: the sender (streamcap replay), the kernel's veth path and every capturing instance share them; the figures show fan-out sharing the load between instances, not scaling with cores",
        "groups": groups,
    }
    write_doc(out, doc, fanout_tables)


def fanout_tables(doc):
    print(
        f"{doc['trace_about']}; median of {doc['rounds']} rounds; {doc['cpus']} CPUs shared by the sender and the receivers.\n"
    )
    print("| program | configuration | instances | frames sent | send s | offered pps | handled (all instances) | handled pps | loss (min–max) | kernel drops |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for g in doc["groups"]:
        kd = g.get("kernel_dropped_median")
        print(
            f"| {g['program']} | {g['config']} | {g['instances']} | {g['sent_median']:.0f} | {g['send_s_median']:.2f} "
            f"| {g['offered_pps_median']:,.0f} | {g['handled_median']:,.0f} | {g['handled_pps_median']:,.0f} "
            f"| {100 * g['loss_median']:.1f} % ({100 * g['loss_min']:.1f}–{100 * g['loss_max']:.1f}) "
            f"| {'-' if kd is None else f'{kd:,.0f}'} |"
        )
    print()


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "locality":
        locality(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "fanout":
        fanout(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "suricata":
        suricata(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "tables":
        doc = json.load(open(sys.argv[3]))
        tables = {"locality": locality_tables, "fanout": fanout_tables, "suricata": suricata_tables}
        tables[sys.argv[2]](doc)
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
