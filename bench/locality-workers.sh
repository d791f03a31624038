#!/usr/bin/env bash
# Locality buffering in the workers (`--locality-batch N`): `flows` wall and
# CPU time on a generated campus trace for each batch size, one worker
# pinned to CPU 0, rounds taken round-robin; then, if valgrind is
# installed, cachegrind's last-level data misses per packet on a slice of
# the trace. Writes the raw numbers as JSON (bench/results/locality-workers.json
# by default) and prints a table. See bench/README.md, "Locality buffering
# in the workers".
#
#   bench/locality-workers.sh [OUT.json]
#
# Environment: BIN (default target/release), WORK (default
# /dev/shm/streamcap-locality; removed at the end), PACKETS (2000000),
# SLICE (200000), ROUNDS (3; 0 keeps the timings of an existing OUT and
# redoes only cachegrind), BATCHES ("0 100 1000 8000 32000"), CG_BATCHES
# ("0 8000"), CG_LL (a last-level cache for a second cachegrind run of each
# batch, SIZE,WAYS,LINE as valgrind's --LL; default this machine's L3 as
# lscpu reports it, 32 MiB 16-way: cachegrind's own choice comes from CPUID,
# which a virtual machine may fill with anything).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench/results/locality-workers.json}
BIN=${BIN:-target/release}
WORK=${WORK:-/dev/shm/streamcap-locality}
PACKETS=${PACKETS:-2000000}
SLICE=${SLICE:-200000}
ROUNDS=${ROUNDS:-3}
BATCHES=${BATCHES:-0 100 1000 8000 32000}
CG_BATCHES=${CG_BATCHES:-0 8000}
CG_LL=${CG_LL:-33554432,16,64}

mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
TRACE="$WORK/campus-$PACKETS.pcap"
"$BIN/streamcap-gen" campus -o "$TRACE" --packets "$PACKETS" --seed 1 >&2
TIMES="$WORK/times.tsv"
: >"$TIMES"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq "$ROUNDS"); do
  for n in $BATCHES; do
    t=$( { taskset -c 0 /usr/bin/time -f "%e s wall %U+%S s cpu" \
      "$BIN/streamcap" flows -q -r "$TRACE" --locality-batch "$n" >/dev/null; } 2>&1 )
    echo "round $round, batch $n: $t" >&2
    printf '%s\t%s\t%s\n' "$round" "$n" "$t" >>"$TIMES"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

CG="$WORK/cachegrind.tsv"
: >"$CG"
if command -v valgrind >/dev/null; then
  CUT="$WORK/campus-$SLICE.pcap"
  editcap -r "$TRACE" "$CUT" "1-$SLICE"
  for n in $CG_BATCHES; do
    valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file="$WORK/cg-$n.out" \
      "$BIN/streamcap" flows -q -r "$CUT" --locality-batch "$n" >/dev/null 2>"$WORK/cg-$n.err"
    printf '%s\t%s\t%s\n' "$n" "auto" "$WORK/cg-$n.out" >>"$CG"
    valgrind --tool=cachegrind --cache-sim=yes --LL="$CG_LL" \
      --cachegrind-out-file="$WORK/cg-$n-ll.out" \
      "$BIN/streamcap" flows -q -r "$CUT" --locality-batch "$n" >/dev/null 2>"$WORK/cg-$n-ll.err"
    printf '%s\t%s\t%s\n' "$n" "--LL=$CG_LL" "$WORK/cg-$n-ll.out" >>"$CG"
  done
fi

python3 - "$OUT" "$TIMES" "$CG" "$PACKETS" "$SLICE" "$load_before" "$load_after" <<'PY'
import json, os, re, statistics, subprocess, sys
out, times, cg, packets, slice_, load_before, load_after = sys.argv[1:]
runs = {}
for line in open(times):
    rnd, n, t = line.rstrip("\n").split("\t")
    m = re.match(r"([\d.]+) s wall ([\d.]+)\+([\d.]+) s cpu", t)
    wall, user, sys_ = (float(x) for x in m.groups())
    runs.setdefault(int(n), []).append({"round": int(rnd), "wall_s": wall,
                                        "user_s": user, "sys_s": sys_,
                                        "cpu_s": round(user + sys_, 2)})
rows = []
base = None
keep = None
if not runs and os.path.exists(out):
    keep = json.load(open(out))
for n in sorted(runs):
    r = runs[n]
    wall = statistics.median(x["wall_s"] for x in r)
    cpu = statistics.median(x["cpu_s"] for x in r)
    if n == 0:
        base = (wall, cpu)
    rows.append({"batch": n, "median_wall_s": wall, "median_cpu_s": cpu,
                 "ns_per_packet_cpu": round(cpu * 1e9 / int(packets), 1),
                 "runs": r})
for row in rows:
    row["wall_vs_batch_0"] = round(row["median_wall_s"] / base[0], 3)
    row["cpu_vs_batch_0"] = round(row["median_cpu_s"] / base[1], 3)
cache = []
for line in open(cg):
    n, ll, path = line.rstrip("\n").split("\t")
    desc = {}
    totals = {}
    by_fn = {}
    fn = None
    for l in open(path):
        if l.startswith("desc:"):
            k, v = l[5:].strip().split(":", 1)
            desc[k.strip()] = v.strip()
        elif l.startswith("events:"):
            events = l.split()[1:]
        elif l.startswith("summary:"):
            totals = dict(zip(events, map(int, l.split()[1:])))
        elif l.startswith("fn="):
            fn = l[3:].strip()
        elif l[:1].isdigit() and fn is not None:
            counts = list(map(int, l.split()[1:]))
            acc = by_fn.setdefault(fn, [0] * len(events))
            for i, c in enumerate(counts):
                acc[i] += c
    # The functions with the most D1 and LL data misses, per packet.
    idx = {e: i for i, e in enumerate(events)}
    def top(keys):
        score = lambda v: sum(v[idx[k]] for k in keys)
        best = sorted(by_fn.items(), key=lambda kv: -score(kv[1]))[:8]
        return [{"function": f[:120], "per_packet": round(score(v) / int(slice_), 3)}
                for f, v in best]
    per = lambda k: round(totals[k] / int(slice_), 3)
    cache.append({"batch": int(n), "cache_option": ll, "cache_config": desc, "totals": totals,
                  "top_D1_data_misses": top(["D1mr", "D1mw"]),
                  "top_LL_data_misses": top(["DLmr", "DLmw"]),
                  "per_packet": {"instructions": per("Ir"),
                                 "data_refs": round((totals["Dr"] + totals["Dw"]) / int(slice_), 1),
                                 "D1_misses": round((totals["D1mr"] + totals["D1mw"]) / int(slice_), 3),
                                 "LL_data_misses": round((totals["DLmr"] + totals["DLmw"]) / int(slice_), 3),
                                 "LL_data_read_misses": per("DLmr")}})
cpu = open("/proc/cpuinfo").read()
model = re.search(r"model name\s*:\s*(.*)", cpu).group(1)
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                        text=True).stdout.strip()
if keep is not None:
    commit = keep["commit"]
    rows = keep["timings"]
    load_before = keep["machine"]["load_average_before"]
    load_after = keep["machine"]["load_average_after"]
doc = {"what": "streamcap flows -q on a generated campus trace (streamcap-gen campus --seed 1), "
               "one worker, taskset -c 0, --locality-batch N; medians of the rounds, taken round-robin",
       "commit": commit, "machine": {"cpu": model, "cpus": os.cpu_count(),
                                     "load_average_before": load_before,
                                     "load_average_after": load_after},
       "packets": int(packets), "timings": rows,
       "cachegrind": {"packets": int(slice_), "slice": f"the first {slice_} packets of the trace",
                      "runs": cache}}
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
print(f"| batch | wall s (median) | CPU s (median) | CPU vs 0 |")
print("|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['batch']} | {r['median_wall_s']:.2f} | {r['median_cpu_s']:.2f} | {r['cpu_vs_batch_0']:.3f} |")
for c in cache:
    p = c["per_packet"]
    print(f"cachegrind batch {c['batch']} ({c['cache_option']}): {p['instructions']} instructions, "
          f"{p['D1_misses']} D1 misses, {p['LL_data_misses']} LL data misses per packet")
PY
