#!/usr/bin/env bash
# Locality buffering under a signature-matching NIDS, the kind of program
# locality-buffering.txt §5 measured (Snort 2.9, Aho-Corasick, per-port
# rule groups): unmodified Suricata reads the 200,000-packet traces of
# bench/pcap-locality.sh under libstreamcap_pcap.so, with PCAP_LOCALITY at
# each batch size, without the library, and with the library but no
# PCAP_LOCALITY.
#
#   bench/pcap-locality-suricata.sh
#
# Suricata: `suricata -r FILE -S RULES --runmode single -k none -c YAML
# --set mpm-algo=MPM` with EVE alerts only (the YAML of `streamcap-bench
# nids`). MPM is `ac` (Suricata's Aho-Corasick with full state tables, as
# the paper's Snort) and, for the time runs, also `hs` (Hyperscan,
# Suricata's default here).
# Rules: `streamcap-bench nids-rules --count N --seed 1` (the NIDS
# benchmark's content rules), each given a port group as rule sets do, so
# that Suricata builds one rule group per port: of the TCP rules, 35 % on
# port 80, 10 % 443, 8 % 445, 5 % 25, 5 % 8080, 3 % each 21, 139, 1433 and
# 3306, 2 % each 22, 23, 110, 143, 3389 and 5900, 1 % 53 and 12 % any
# port; of the UDP rules, 50 % on 53, 10 % each 67, 161 and 5060, 5 % 123
# and 15 % any; a rule with a port is `any any -> any P` (60 %) or
# `any P -> any any` (40 %), drawn with Python's random.seed(1).
# Measures, per trace and configuration:
# - cachegrind (as bench/pcap-locality.sh: this machine's I1 and D1, the
#   last level sized as its last-level cache and as its L2), net of
#   start-up: (run - start-up run) / (packets - 1), the start-up run being
#   the same configuration (for PCAP_LOCALITY: the library's) on the
#   trace's first packet; Suricata's alerts in each run;
# - time pinned to one CPU, median of PCAP_BENCH_RUNS runs round-robin,
#   net of the median start-up time.
# Results: bench/results/pcap-locality-suricata.json and the Markdown
# tables on stdout.
# Environment: as bench/pcap-locality.sh (CARGO_TARGET_DIR,
# PCAP_BENCH_WORK, PCAP_BENCH_PACKETS, PCAP_BENCH_RUNS (5), PCAP_BENCH_CPU,
# BENCH_CORPUS), plus PCAP_BENCH_SURICATA_BATCHES (100,1000,8000,32000),
# PCAP_BENCH_SURICATA_RULES (10000), PCAP_BENCH_JOBS (cachegrind runs at
# once; default the number of CPUs: the counts do not depend on load).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
say() { echo "pcap-locality-suricata: $*" >&2; }
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
  "") ;;
  *) echo "pcap-locality-suricata.sh: no options but --help" >&2; exit 2 ;;
esac
command -v suricata >/dev/null || { say "suricata not found (Debian: suricata)"; exit 1; }

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
BIN="$TARGET/release"
LIB="$BIN/libstreamcap_pcap.so"
WORK="${PCAP_BENCH_WORK:-/dev/shm/streamcap-pcap-bench}"
PACKETS="${PCAP_BENCH_PACKETS:-200000}"
RUNS="${PCAP_BENCH_RUNS:-5}"
CPU="${PCAP_BENCH_CPU:-0}"
BATCHES="${PCAP_BENCH_SURICATA_BATCHES:-100,1000,8000,32000}"
NRULES="${PCAP_BENCH_SURICATA_RULES:-10000}"
JOBS="${PCAP_BENCH_JOBS:-$(nproc)}"
IFS=, read -r -a BATCH_LIST <<<"$BATCHES"

# 1. Build and traces (bench/pcap-locality.sh makes them).
PCAP_BENCH_TRACES_ONLY=1 bench/pcap-locality.sh
TRACES=("campus=$WORK/campus-$PACKETS.pcap" "corpus-real=$WORK/corpus-real-$PACKETS.pcap")
S="$WORK/suricata"
rm -rf "$S" && mkdir -p "$S"

# 2. Rules and configuration.
"$BIN/streamcap-bench" nids-rules --count "$NRULES" --seed 1 -o "$S/any.rules" >&2
python3 - "$S/any.rules" >"$S/ports.rules" <<'EOF'
import random, re, sys
random.seed(1)
TCP = [(80, 35), (443, 10), (445, 8), (25, 5), (8080, 5), (21, 3), (139, 3), (1433, 3),
       (3306, 3), (22, 2), (23, 2), (110, 2), (143, 2), (3389, 2), (5900, 2), (53, 1), (None, 12)]
UDP = [(53, 50), (67, 10), (161, 10), (5060, 10), (123, 5), (None, 15)]
for line in open(sys.argv[1]):
    m = re.match(r"alert (tcp|udp) any any -> any any (.*)", line)
    if not m:
        print(line, end="")
        continue
    proto, rest = m.groups()
    table = TCP if proto == "tcp" else UDP
    port = random.choices([p for p, _ in table], [w for _, w in table])[0]
    if port is None:
        head = "any any -> any any"
    elif random.random() < 0.6:
        head = f"any any -> any {port}"
    else:
        head = f"any {port} -> any any"
    print(f"alert {proto} {head} {rest}")
EOF
cat >"$S/suricata.yaml" <<'EOF'
%YAML 1.1
---
outputs:
  - eve-log:
      enabled: yes
      filetype: regular
      filename: eve.json
      types:
        - alert
stats:
  enabled: no
EOF
RULES="$S/ports.rules"

# 3. Caches (sysfs of cpu0), as bench/pcap-locality.sh.
# shellcheck source=bench/cache-sizes.sh
. "$ROOT/bench/cache-sizes.sh"

CONFIGS=(plain preload)
for b in "${BATCH_LIST[@]}"; do CONFIGS+=("locality-$b"); done
env_of() {
  case "$1" in
    plain) echo "-u LD_PRELOAD -u PCAP_LOCALITY" ;;
    preload) echo "-u PCAP_LOCALITY LD_PRELOAD=$LIB" ;;
    locality-*) echo "LD_PRELOAD=$LIB PCAP_LOCALITY=${1#locality-}" ;;
  esac
}
TSV="$WORK/pcap-locality-suricata.tsv"
: >"$TSV"
n=0
suri() { # OUTDIR MPM FILE [more words]: the command
  echo "suricata -r $3 -S $RULES --runmode single -k none -c $S/suricata.yaml -l $1 --set mpm-algo=$2"
}

# 4. cachegrind, JOBS at a time (each run: its own directory).
cg_one() { # N TRACE LL CONFIG FILE LABEL
  local spec="$LLC" dir="$S/cg-$1"
  shift
  [ "$2" = l2 ] && spec="$L2"
  mkdir -p "$dir"
  # shellcheck disable=SC2046
  if env $(env_of "$3") valgrind --tool=cachegrind --cache-sim=yes \
      --I1="$I1" --D1="$D1" --LL="$spec" --cachegrind-out-file="$dir/cg.out" \
      $(suri "$dir" ac "$4") >/dev/null 2>"$dir/err"; then
    awk -v pre="cg	$1	$2	$5	alerts=$(wc -l <"$dir/eve.json")" '
      /^events:/ { for (i = 2; i <= NF; i++) name[i] = $i }
      /^summary:/ { line = pre; for (i = 2; i <= NF; i++) line = line "\t" name[i] "=" $i; print line }
    ' "$dir/cg.out" >>"$TSV"
    rm -rf "$dir"
  else
    say "cachegrind failed: $* (see $dir/err)"
  fi
}
t_cg=$SECONDS
for tr in "${TRACES[@]}"; do
  name="${tr%%=*}" f="${tr#*=}"
  for ll in llc l2; do
    for c in plain preload; do
      n=$((n + 1)); cg_one "$n" "$name" "$ll" "$c" "$f.first" "startup-$c" &
      while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
    done
    for c in "${CONFIGS[@]}"; do
      say "cachegrind: $name LL=$ll $c"
      n=$((n + 1)); cg_one "$n" "$name" "$ll" "$c" "$f" "$c" &
      while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
    done
  done
done
wait
say "cachegrind runs: $((SECONDS - t_cg)) s"

# 5. Time, pinned, round-robin; start-up on the first packet alone.
timed() { # TRACE MPM CONFIG RUN FILE KIND
  local tf="$S/time.out" dir="$S/time"
  rm -rf "$dir" && mkdir -p "$dir"
  # shellcheck disable=SC2046
  { TIMEFORMAT='%3R %3U %3S'; time taskset -c "$CPU" env $(env_of "$3") $(suri "$dir" "$2" "$5") >/dev/null 2>&1; } 2>"$tf"
  read -r wall user sys <"$tf"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\talerts=%s\n' "$6" "$1" "$2" "$3" "$4" "$wall" "$user" "$sys" \
    "$(cut -d' ' -f1-3 /proc/loadavg)" "$(wc -l <"$dir/eve.json")" >>"$TSV"
}
t_time=$SECONDS
for tr in "${TRACES[@]}"; do
  name="${tr%%=*}" f="${tr#*=}"
  cat "$f" >/dev/null
  for ((r = 1; r <= RUNS; r++)); do
    say "time: $name round $r/$RUNS"
    for mpm in ac hs; do
      for c in "${CONFIGS[@]}"; do timed "$name" "$mpm" "$c" "$r" "$f" time; done
      for c in plain preload; do timed "$name" "$mpm" "$c" "$r" "$f.first" startup; done
    done
  done
done
say "timed runs: $((SECONDS - t_time)) s"

{
  printf 'meta\tpackets\t%s\n' "$PACKETS"
  printf 'meta\truns\t%s\n' "$RUNS"
  printf 'meta\tcpu\t%s\n' "$CPU"
  printf 'meta\trules\t%s\n' "$NRULES"
  printf 'meta\tI1\t%s\n' "$I1"
  printf 'meta\tD1\t%s\n' "$D1"
  printf 'meta\tLL_llc\t%s\n' "$LLC"
  printf 'meta\tLL_l2\t%s\n' "$L2"
  printf 'meta\tcpu_model\t%s\n' "$(lscpu | sed -n 's/^Model name: *//p')"
  printf 'meta\tvalgrind\t%s\n' "$(valgrind --version)"
  printf 'meta\tsuricata\t%s\n' "$(suricata -V | head -n 1)"
  printf 'meta\tcommit\t%s\n' "$(git rev-parse HEAD)"
  for tr in "${TRACES[@]}"; do
    printf 'trace\t%s\t%s\n' "${tr%%=*}" "${tr#*=}"
  done
} >>"$TSV"
python3 bench/pcap_report.py suricata "$TSV" bench/results/pcap-locality-suricata.json
say "wrote bench/results/pcap-locality-suricata.json"
