#!/usr/bin/env bash
# Locality buffering for an unmodified libpcap program
# (locality-buffering.txt §5): ndpiReader (nDPI's demo reader, Debian's
# libndpi-bin) reads a 200,000-packet capture file under
# libstreamcap_pcap.so with PCAP_LOCALITY at each batch size, without the
# library, and with the library but no PCAP_LOCALITY.
#
#   bench/pcap-locality.sh
#
# For each trace and configuration:
# - cachegrind (valgrind --tool=cachegrind --cache-sim=yes) counts
#   instructions, D1 misses and last-level data misses (DLmr + DLmw),
#   twice: with the last level sized as this machine's last-level cache
#   (the highest unified cache of cpu0 in sysfs) and sized as its per-core
#   L2 (the level the paper measured). I1 and D1 as this machine's.
#   Figures per packet are net of start-up: (run - run of the same
#   configuration on the trace's first packet alone) / (packets - 1);
# - wall and user + sys CPU seconds, median of PCAP_BENCH_RUNS runs
#   pinned to one CPU (taskset), round-robin over the configurations;
#   before each timed run the script waits while another benchmark runs
#   (pgrep -f 'locality-batch|streamcap-bench');
# - the same for bench/peers/pcap_count.c (pcap_loop counting packets,
#   nothing else), which shows what the library's copy of each packet into
#   the batch costs by itself.
# Traces: `campus` (streamcap-gen campus, seed 1) and `corpus-real`: the
# Ethernet captures of the corpus not described as synthetic or generated
# in MANIFEST.tsv (packets spanning at most 1 h), each shifted to one start
# time and merged by time with mergecap, repeated one copy after another
# (copy k shifted by k x (span + 600 s)) and cut at the packet count.
# Results: bench/results/pcap-locality.json, the Markdown tables on stdout,
# bench/results/pcap-locality-misses.png and pcap-locality-time.png.
# Environment: CARGO_TARGET_DIR, PCAP_BENCH_WORK (traces and scratch;
# default /dev/shm/streamcap-pcap-bench), PCAP_BENCH_PACKETS (200000),
# PCAP_BENCH_BATCHES (100,500,1000,2000,4000,8000,16000,32000),
# PCAP_BENCH_RUNS (5), PCAP_BENCH_COPY_RUNS (runs of pcap_count; 11),
# PCAP_BENCH_CPU (0), BENCH_CORPUS (default ../shared/corpus, then
# /work/shared/corpus), PCAP_BENCH_TRACES_ONLY=1 (build the traces and
# their one-packet heads, then stop; bench/pcap-locality-suricata.sh uses
# it).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
say() { echo "pcap-locality: $*" >&2; }
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
  "") ;;
  *) echo "pcap-locality.sh: no options but --help" >&2; exit 2 ;;
esac

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
BIN="$TARGET/release"
LIB="$BIN/libstreamcap_pcap.so"
WORK="${PCAP_BENCH_WORK:-/dev/shm/streamcap-pcap-bench}"
PACKETS="${PCAP_BENCH_PACKETS:-200000}"
BATCHES="${PCAP_BENCH_BATCHES:-100,500,1000,2000,4000,8000,16000,32000}"
RUNS="${PCAP_BENCH_RUNS:-5}"
COPY_RUNS="${PCAP_BENCH_COPY_RUNS:-11}"
CPU="${PCAP_BENCH_CPU:-0}"
CORPUS="${BENCH_CORPUS:-}"
if [ -z "$CORPUS" ]; then
  for c in "$ROOT/../shared/corpus" /work/shared/corpus; do
    if [ -f "$c/MANIFEST.tsv" ]; then CORPUS="$c"; break; fi
  done
fi
for t in valgrind ndpiReader taskset capinfos editcap mergecap cc python3; do
  command -v "$t" >/dev/null || { say "$t not found (valgrind, libndpi-bin, util-linux, wireshark-common, gcc, python3)"; exit 1; }
done
[ -n "$CORPUS" ] && [ -f "$CORPUS/MANIFEST.tsv" ] || { say "no corpus (set BENCH_CORPUS)"; exit 1; }
IFS=, read -r -a BATCH_LIST <<<"$BATCHES"

# 1. Build.
cargo build --release --workspace >&2
mkdir -p "$WORK" "$TARGET/pcap-bench" bench/results
COUNT="$TARGET/pcap-bench/pcap_count"
cc -O2 -Wall -o "$COUNT" bench/peers/pcap_count.c -lpcap

# 2. Caches: sysfs of cpu0.
# shellcheck source=bench/cache-sizes.sh
. "$ROOT/bench/cache-sizes.sh"
say "caches (sysfs, cpu0): I1 $I1, D1 $D1, L2 $L2, last level $LLC (bytes,ways,line)"
LL_NAMES=(llc l2)
LL_SPECS=("$LLC" "$L2")

# 3. Traces.
campus="$WORK/campus-$PACKETS.pcap"
if [ ! -s "$campus" ]; then
  "$BIN/streamcap-gen" campus -o "$campus" --packets "$PACKETS" --seed 1 >&2
fi
corpus="$WORK/corpus-real-$PACKETS.pcap"
if [ ! -s "$corpus" ] || [ ! -s "$corpus.about" ] || [ "$CORPUS/MANIFEST.tsv" -nt "$corpus" ]; then
  dir="$WORK/corpus-real.tmp" t0=1600000000 n=0
  rm -rf "$dir" && mkdir -p "$dir"
  picked=()
  # MANIFEST.tsv: path, bytes, packets, source_repo, source_path,
  # license_note, theme, description.
  while IFS=$'\t' read -r rel _ _ _ _ _ _ desc; do
    f="$CORPUS/$rel"
    [ -f "$f" ] || continue
    if grep -qiE 'synthetic|generated' <<<"$desc"; then continue; fi
    row="$(capinfos -T -r -E -a -e -S "$f" 2>/dev/null | tail -n 1)" || true
    IFS=$'\t' read -r _ encap start end <<<"$row"
    [ "$encap" = ether ] || continue
    awk -v s="$start" -v e="$end" 'BEGIN { exit !(s ~ /^[0-9.]+$/ && e ~ /^[0-9.]+$/ && e - s <= 3600) }' || continue
    if editcap -F pcap -t "$((t0 - ${start%.*}))" "$f" "$dir/in-$n.pcap" 2>/dev/null && [ -s "$dir/in-$n.pcap" ]; then
      picked+=("$rel"); n=$((n + 1))
    fi
  done < <(tail -n +2 "$CORPUS/MANIFEST.tsv" | sort -t $'\t' -k2,2nr)
  [ "$n" -gt 0 ] || { say "no Ethernet capture in the corpus"; exit 1; }
  mergecap -F pcap -w "$dir/base.pcap" "$dir"/in-*.pcap
  IFS=$'\t' read -r _ base_packets base_end <<<"$(capinfos -T -r -c -e -S "$dir/base.pcap" | tail -n 1)"
  step=$(( ${base_end%.*} + 1 - t0 + 600 ))
  copies=$(( (PACKETS + base_packets - 1) / base_packets ))
  cp "$dir/base.pcap" "$dir/all.pcap"
  for ((k = 1; k < copies; k++)); do
    editcap -F pcap -t "$((k * step))" "$dir/base.pcap" "$dir/copy.pcap"
    cmp -s -n 24 "$dir/copy.pcap" "$dir/base.pcap" || { say "editcap changed the pcap file header"; exit 1; }
    tail -c +25 "$dir/copy.pcap" >>"$dir/all.pcap"
  done
  editcap -F pcap -r "$dir/all.pcap" "$corpus.tmp" "1-$PACKETS"
  {
    echo "corpus-real: the $n Ethernet captures of the corpus not described as synthetic or generated (MANIFEST.tsv; packets spanning at most 1 h), shifted to one start time and merged by time with mergecap ($base_packets packets), then $copies copies one after another, copy k shifted by k x $step s, cut at $PACKETS packets"
    printf '%s\n' "${picked[@]}"
  } >"$corpus.about"
  mv "$corpus.tmp" "$corpus"
  rm -rf "$dir"
fi
TRACES=("campus=$campus" "corpus-real=$corpus")
for tr in "${TRACES[@]}"; do
  f="${tr#*=}"
  got="$(capinfos -T -r -c "$f" | tail -n 1 | cut -f2)"
  [ "$got" = "$PACKETS" ] || { say "$f has $got packets, not $PACKETS"; exit 1; }
  editcap -F pcap -r "$f" "$f.first" 1 2>/dev/null
done
if [ "${PCAP_BENCH_TRACES_ONLY:-0}" = 1 ]; then
  say "traces ready: $campus $corpus"
  exit 0
fi

TSV="$WORK/pcap-locality.tsv"
: >"$TSV"
# configuration name -> environment
CONFIGS=(plain preload)
for b in "${BATCH_LIST[@]}"; do CONFIGS+=("locality-$b"); done
env_of() { # CONFIG -> words for env(1)
  case "$1" in
    plain) echo "-u LD_PRELOAD -u PCAP_LOCALITY" ;;
    preload) echo "-u PCAP_LOCALITY LD_PRELOAD=$LIB" ;;
    locality-*) echo "LD_PRELOAD=$LIB PCAP_LOCALITY=${1#locality-}" ;;
  esac
}
tool_cmd() { # TOOL FILE -> the command's words
  case "$1" in
    ndpiReader) echo "ndpiReader -i $2 -q" ;;
    pcap_count) echo "$COUNT $2" ;;
  esac
}

# 4. What each configuration delivers: every packet, and to ndpiReader the
# same flows (ndpiReader without -q prints its totals).
for tr in "${TRACES[@]}"; do
  name="${tr%%=*}" f="${tr#*=}"
  for c in "${CONFIGS[@]}"; do
    # shellcheck disable=SC2046
    out="$(env $(env_of "$c") ndpiReader -i "$f" 2>/dev/null)"
    ip="$(awk '/IP packets:/ { print $3 "\t" $5 }' <<<"$out")"
    flows="$(awk '/Unique flows:/ { print $3 }' <<<"$out")"
    printf 'check\t%s\tndpiReader\t%s\t%s\t%s\n' "$name" "$c" "$ip" "$flows" >>"$TSV"
    # shellcheck disable=SC2046
    n="$(env $(env_of "$c") "$COUNT" "$f" | sed -n 's/^packets=\([0-9]*\).*/\1/p')"
    [ "$n" = "$PACKETS" ] || { say "$c on $name: pcap_count saw $n packets"; exit 1; }
    total="${ip#*$'\t'}"
    [ "$total" = "$PACKETS" ] || { say "$c on $name: ndpiReader saw $total packets"; exit 1; }
  done
done
say "every configuration hands every packet to ndpiReader and pcap_count"

# 5. cachegrind.
cg() { # TRACE TOOL LLNAME CONFIG FILE [LABEL]
  local spec out
  spec="${LL_SPECS[0]}"
  [ "$3" = l2 ] && spec="${LL_SPECS[1]}"
  out="$WORK/cg.out"
  # shellcheck disable=SC2046
  env $(env_of "$4") valgrind --tool=cachegrind --cache-sim=yes \
    --I1="$I1" --D1="$D1" --LL="$spec" --cachegrind-out-file="$out" \
    $(tool_cmd "$2" "$5") >/dev/null 2>"$WORK/cg.err" ||
    { say "cachegrind failed: $*"; cat "$WORK/cg.err" >&2; exit 1; }
  # events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
  awk -v pre="cg	$1	$2	$3	${6:-$4}" '
    /^events:/ { for (i = 2; i <= NF; i++) name[i] = $i }
    /^summary:/ { line = pre; for (i = 2; i <= NF; i++) line = line "\t" name[i] "=" $i; print line }
  ' "$out" >>"$TSV"
}
t_cg=$SECONDS
for tr in "${TRACES[@]}"; do
  name="${tr%%=*}" f="${tr#*=}"
  for ll in "${LL_NAMES[@]}"; do
    for tool in ndpiReader pcap_count; do
      for c in "${CONFIGS[@]}"; do
        say "cachegrind: $name $tool LL=$ll $c"
        cg "$name" "$tool" "$ll" "$c" "$f.first" "startup-$c"
        cg "$name" "$tool" "$ll" "$c" "$f"
      done
    done
  done
done
say "cachegrind runs: $((SECONDS - t_cg)) s"

# 6. Time, pinned to CPU $CPU, round-robin.
wait_idle() {
  local said=0
  while pgrep -f 'locality-batch|streamcap-bench' >/dev/null; do
    [ "$said" = 1 ] || say "waiting: another benchmark runs ($(pgrep -af 'locality-batch|streamcap-bench' | head -n 1 | cut -c1-100))"
    said=1
    sleep 5
  done
}
timed() { # TRACE TOOL CONFIG RUN FILE
  local tf="$WORK/time.out"
  wait_idle
  # shellcheck disable=SC2046
  { TIMEFORMAT='%3R %3U %3S'; time taskset -c "$CPU" env $(env_of "$3") $(tool_cmd "$2" "$5") >/dev/null 2>&1; } 2>"$tf"
  read -r wall user sys <"$tf"
  printf 'time\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$wall" "$user" "$sys" "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$TSV"
}
t_time=$SECONDS
for tr in "${TRACES[@]}"; do
  name="${tr%%=*}" f="${tr#*=}"
  cat "$f" >/dev/null
  for ((r = 1; r <= RUNS; r++)); do
    say "time: $name ndpiReader round $r/$RUNS"
    for c in "${CONFIGS[@]}"; do timed "$name" ndpiReader "$c" "$r" "$f"; done
  done
  for ((r = 1; r <= COPY_RUNS; r++)); do
    for c in "${CONFIGS[@]}"; do timed "$name" pcap_count "$c" "$r" "$f"; done
  done
done
say "timed runs: $((SECONDS - t_time)) s"

# 7. JSON, tables, plots.
{
  printf 'meta\tpackets\t%s\n' "$PACKETS"
  printf 'meta\truns\t%s\n' "$RUNS"
  printf 'meta\tcopy_runs\t%s\n' "$COPY_RUNS"
  printf 'meta\tcpu\t%s\n' "$CPU"
  printf 'meta\tI1\t%s\n' "$I1"
  printf 'meta\tD1\t%s\n' "$D1"
  printf 'meta\tLL_llc\t%s\n' "$LLC"
  printf 'meta\tLL_l2\t%s\n' "$L2"
  printf 'meta\tcpu_model\t%s\n' "$(lscpu | sed -n 's/^Model name: *//p')"
  printf 'meta\tvalgrind\t%s\n' "$(valgrind --version)"
  printf 'meta\tndpi\t%s\n' "$(dpkg-query -W -f '${Version}' libndpi-bin 2>/dev/null || echo unknown)"
  printf 'meta\tlibpcap\t%s\n' "$( (dpkg-query -W -f '${Version}\n' 'libpcap0.8*' 2>/dev/null || echo unknown) | head -n 1)"
  printf 'meta\tcommit\t%s\n' "$(git rev-parse HEAD)"
  for tr in "${TRACES[@]}"; do
    f="${tr#*=}"
    printf 'trace\t%s\t%s\t%s\t%s\n' "${tr%%=*}" "$f" "$(stat -c %s "$f")" \
      "$(if [ -s "$f.about" ]; then head -n 1 "$f.about"; else echo "streamcap-gen campus -o $f --packets $PACKETS --seed 1"; fi)"
  done
} >>"$TSV"
python3 bench/pcap_report.py locality "$TSV" bench/results/pcap-locality.json
"$BIN/streamcap-bench" pcap-plot --json bench/results/pcap-locality.json --png bench/results/pcap-locality
say "wrote bench/results/pcap-locality.json, bench/results/pcap-locality-misses.png, bench/results/pcap-locality-time.png"
