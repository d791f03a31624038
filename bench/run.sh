#!/usr/bin/env bash
# One command for the benchmark: builds streamcap (release) and the C peers,
# makes or picks the workloads, runs streamcap's modes and every available
# peer on each, and prints one table per workload.
#
#   bench/run.sh [--quick] [--plot] [--runs N] [--no-pgo]
#
# streamcap is measured as built by scripts/pgo-build.sh (profile-guided
# optimisation, trained on generated traffic of other seeds), with the plain
# release build's `flows` and `streams` rows next to it; --no-pgo, or a
# machine where the PGO build fails, measures the plain release build only.
# Also measures peak memory per idle TCP connection (1,000,000 and 200,000
# idle connections; 200,000 with --quick).
# Then runs every adversarial profile (streamcap-gen attack) against the
# memory, RSS, throughput and accounting bounds (bench/results/attacks.json).
# Results: bench/results/latest.json (and latest.png with --plot).
# Environment: CARGO_TARGET_DIR (cargo's), BENCH_WORK (where generated traces
# and per-run scratch go; default /dev/shm/streamcap-bench when writable),
# BENCH_PACKETS (generated trace size), BENCH_CORPUS (default ../shared/corpus),
# BENCH_IDLE_CONNS (comma-separated idle-connection counts; empty: skip),
# BENCH_ATTACK_PACKETS (packets per attack profile; default 200000, --quick
# 50000; 0: skip), BENCH_ATTACK_MEMORY (--memory of the attack runs, bytes).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

QUICK=0 PLOT=0 RUNS="" PGO=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --plot) PLOT=1 ;;
    --no-pgo) PGO=0 ;;
    --runs) RUNS="${2:?--runs needs a number}"; shift ;;
    --runs=*) RUNS="${1#--runs=}" ;;
    -h|--help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$RUNS" ]; then
  if [ "$QUICK" = 1 ]; then RUNS=1; else RUNS=5; fi
fi
PACKETS="${BENCH_PACKETS:-$([ "$QUICK" = 1 ] && echo 300000 || echo 2000000)}"
IDLE_CONNS="${BENCH_IDLE_CONNS-$([ "$QUICK" = 1 ] && echo 200000 || echo 200000,1000000)}"
ATTACK_PACKETS="${BENCH_ATTACK_PACKETS:-$([ "$QUICK" = 1 ] && echo 50000 || echo 200000)}"
ATTACK_MEMORY="${BENCH_ATTACK_MEMORY:-33554432}"
say() { echo "bench: $*" >&2; }

# 1. Dependencies: install what we can when root, else carry on and skip.
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  scripts/install-deps.sh --bench || say "install-deps failed; missing peers will be skipped"
else
  say "not root: not installing packages (run 'sudo scripts/install-deps.sh --bench'); missing peers are skipped"
fi

# 2. Build streamcap, the generator and the runner.
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
cargo build --release -q -p streamcap-cli -p streamcap-gen -p streamcap-bench
BIN="$TARGET/release"
STREAMCAP="$BIN/streamcap" PLAIN=()
if [ "$PGO" = 1 ]; then
  if PGO_BIN="$(scripts/pgo-build.sh)"; then
    STREAMCAP="$PGO_BIN" PLAIN=(--streamcap-plain "$BIN/streamcap")
    say "measuring the PGO build $STREAMCAP (plain build: rows marked 'plain build')"
  else
    say "PGO build failed (see above): measuring the plain release build"
  fi
fi

# 3. Build the C peers (each skipped when its libraries are missing).
# build_peer NAME "LIBS" ["LIBS"...]: tries each library list in turn. The
# log ($PEERS/NAME.log) keeps every failed attempt; the runner quotes its
# first error in the "skipped:" line when the peer is missing.
PEERS="$TARGET/bench-peers"
mkdir -p "$PEERS"
build_peer() {
  local name="$1"; shift
  local log="$PEERS/$name.log" libs
  rm -f "$PEERS/$name" "$log"
  for libs in "$@"; do
    echo "== cc -O2 -Wall -o $PEERS/$name bench/peers/$name.c $libs" >>"$log"
    # $libs is a word list on purpose.
    # shellcheck disable=SC2086
    if cc -O2 -Wall -o "$PEERS/$name" "bench/peers/$name.c" $libs 2>>"$log"; then
      say "built peer $name ($libs)"
      return 0
    fi
  done
  say "SKIPPING PEER $name: build failed with every library list (see $log; needs cc and libnids-dev/libpcap-dev)"
  sed -n '/error\|cannot find\|not found/{p;q}' "$log" | sed 's/^/bench:   /' >&2
}
# Debian's libnids.so is linked against libpcap, libnet and glib itself, so
# -lnids -lpcap is enough (libnids-dev does not pull libnet1-dev or
# libglib2.0-dev); the long list is for a static libnids.a only.
NIDS_SHORT="-lnids -lpcap"
NIDS_LONG="-lnids -lpcap -lnet -lgthread-2.0 -lglib-2.0 -lpthread"
build_peer nids_streams "$NIDS_SHORT" "$NIDS_LONG"
build_peer nids_flows "$NIDS_SHORT" "$NIDS_LONG"
build_peer pcap_flows "-lpcap"

# 4. Workloads.
if [ -z "${BENCH_WORK:-}" ]; then
  if [ -w /dev/shm ]; then BENCH_WORK=/dev/shm/streamcap-bench; else BENCH_WORK="$TARGET/bench-work"; fi
fi
mkdir -p "$BENCH_WORK"
WORKLOADS=()
# A reused trace is copied afresh first, and streamcap-bench measures every
# tool on one fresh copy: a tmpfs file kept for a while was seen to lose the
# kernel's fault-around for memory mappings, which cost streamcap up to
# +0.8 s on the 1.6 GB trace while it mapped its input (until the seventh
# session; every tool read()s it now).
refresh() { cp "$1" "$1.fresh" && mv "$1.fresh" "$1"; }
if "$BIN/streamcap-gen" --help 2>&1 | grep -q campus; then
  f="$BENCH_WORK/campus-$PACKETS.pcap"
  if [ -s "$f" ]; then refresh "$f"; else "$BIN/streamcap-gen" campus -o "$f" --packets "$PACKETS" --seed 1; fi
  WORKLOADS+=("campus=$f")
  f="$BENCH_WORK/campus-small-$PACKETS.pcap"
  if [ -s "$f" ]; then refresh "$f"; else "$BIN/streamcap-gen" campus -o "$f" --packets "$PACKETS" --seed 2 --small-packets; fi
  WORKLOADS+=("campus-small=$f")
else
  say "streamcap-gen has no campus model yet: using repeated generated sample captures"
  f="$BENCH_WORK/sample-repeat-$PACKETS.pcap"
  if [ -s "$f" ]; then refresh "$f"; else "$BIN/streamcap-bench" gen -o "$f" --packets "$PACKETS"; fi
  WORKLOADS+=("sample-repeat=$f")
fi
CORPUS="${BENCH_CORPUS:-$ROOT/../shared/corpus}"
for rel in bulk-flows/zeek__contentline-telnet-long-line-no-eol.pcapng mixed-large/zeek__echo-connections.pcap; do
  if [ -f "$CORPUS/$rel" ]; then
    name="$(basename "$rel")"; name="${name%.*}"; name="${name#zeek__}"
    WORKLOADS+=("$name=$CORPUS/$rel")
  else
    say "skipping corpus capture $rel: not found under $CORPUS"
  fi
done

# 5. Run.
mkdir -p bench/results
ARGS=(run --streamcap "$STREAMCAP" "${PLAIN[@]}" --peers "$PEERS" --runs "$RUNS"
      --json bench/results/latest.json --tmp "$BENCH_WORK/scratch")
[ "$PLOT" = 1 ] && ARGS+=(--png bench/results/latest.png)
[ -n "$IDLE_CONNS" ] && ARGS+=(--idle-conns "$IDLE_CONNS")
"$BIN/streamcap-bench" "${ARGS[@]}" "${WORKLOADS[@]}"

# 6. Adversarial traffic: every streamcap-gen attack profile and the normal
# baseline of the same size, checked against the bounds (a report: FAIL rows
# do not stop the script).
if [ "$ATTACK_PACKETS" != 0 ]; then
  "$BIN/streamcap-bench" attacks --streamcap "$STREAMCAP" --packets "$ATTACK_PACKETS" \
    --memory "$ATTACK_MEMORY" --runs "$RUNS" \
    --tmp "$BENCH_WORK/attacks" --json bench/results/attacks.json || say "attack benchmark failed (see above)"
fi

# 7. Live capture on a veth pair (root, iproute2): the highest replay rate
# without kernel drops, streamcap flows -i next to tcpdump -w /dev/null.
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null 2>&1; then
  LIVE_PCAP="$BENCH_WORK/campus-small-$PACKETS.pcap"
  [ -s "$LIVE_PCAP" ] || LIVE_PCAP="${WORKLOADS[0]#*=}"
  "$BIN/streamcap-bench" live --streamcap "$STREAMCAP" --pcap "$LIVE_PCAP" \
    --json bench/results/live.json || say "live benchmark failed (see above)"
else
  say "skipping the live benchmark: needs root and iproute2 (network namespaces, veth)"
fi
