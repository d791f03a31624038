#!/usr/bin/env bash
# One command for the benchmark: builds streamcap (release) and the C peers,
# makes or picks the workloads, runs streamcap's modes and every available
# peer on each, and prints a Markdown report (one table per workload) at the
# end of the runs.
#
#   bench/run.sh [--quick] [--plot] [--runs N] [--no-pgo] [--archive]
#
# streamcap is measured as built by scripts/pgo-build.sh (profile-guided
# optimisation, trained on generated traffic of other seeds), with the plain
# release build's `flows` and `streams` rows next to it; --no-pgo, or a
# machine where the PGO build fails, measures the plain release build only.
# streamcap's flows, streams and segments rows and the C peers are also
# measured pinned to one CPU (taskset), marked `1 CPU`.
# Workloads: generated campus traces, two corpus captures, and
# `corpus-merged` (the largest Ethernet captures of the corpus merged with
# mergecap and repeated in time; see bench/README.md, "Running the benchmark").
# Also measures peak memory per idle TCP connection (1,000,000 and 200,000
# idle connections; 200,000 with --quick).
# Then runs every adversarial profile (streamcap-gen attack) against the
# memory, RSS, throughput and accounting bounds (bench/results/attacks.json),
# and the overload-control experiments (bench/results/overload.json), and
# the NIDS benchmark: streamcap nids against Suricata and libnids +
# Hyperscan with 100, 1,000 and 10,000 content rules
# (bench/results/nids.json, and nids.png with --plot); and the
# applications benchmark: flows --app against flows and ndpiReader, http
# against tshark, the one-pass `run` of three applications against the
# three run separately (bench/results/apps.json); and Scap's cutoff
# experiment on a veth pair (root, tcpreplay): the machine's CPU and the
# packet loss against the stream cutoff for streamcap discarding in user
# space and with --xdp, libnids and tcpdump (bench/results/xdp-cutoff.json,
# and xdp-cutoff.png with --plot).
# Results: bench/results/latest.json (and latest.png with --plot); --archive
# also copies it to bench/results/COMMIT.json.
# Environment: CARGO_TARGET_DIR (cargo's), BENCH_WORK (where generated traces
# and per-run scratch go; default /dev/shm/streamcap-bench when writable),
# BENCH_PACKETS (generated trace size), BENCH_CORPUS (default ../shared/corpus),
# BENCH_CORPUS_FILES (captures merged into corpus-merged; default 24),
# BENCH_CORPUS_PACKETS (corpus-merged size; default 8000000, --quick
# BENCH_PACKETS), BENCH_ONE_CPU (CPU of the `1 CPU` rows, or `none`),
# BENCH_IDLE_CONNS (comma-separated idle-connection counts; empty: skip),
# BENCH_ATTACK_PACKETS (packets per attack profile; default 200000, --quick
# 50000; 0: skip), BENCH_ATTACK_MEMORY (--memory of the attack runs, bytes),
# BENCH_OVERLOAD (0: skip the overload experiments), BENCH_MAIN (0: skip the
# throughput tables and the idle-connection measurement), BENCH_LIVE (0: skip
# the live benchmark), BENCH_NIDS (0: skip the NIDS benchmark),
# BENCH_NIDS_RULES (its rule counts on the campus trace; default
# 100,1000,10000), BENCH_NIDS_CORPUS (0: leave corpus-merged out of it),
# BENCH_WAIT_IDLE (before each round of the NIDS and applications
# benchmarks, wait until other processes keep at most this many CPUs busy;
# default: no wait), BENCH_APPS (0: skip the applications benchmark),
# BENCH_APPS_FLOWS (flows of its generated `apps` trace; default 100000,
# --quick 20000), BENCH_APPS_CAMPUS_PACKETS and BENCH_APPS_CORPUS_PACKETS
# (its campus trace and its prefix of corpus-merged; default 300000 and
# 1000000, --quick 100000 each; 0 leaves that workload out),
# BENCH_XDP_CUTOFF (0: skip the XDP cutoff experiment), BENCH_XDP_CUTOFF_RATE
# (its fixed replay rate; default 0.5, in Gbit/s, or e.g. 70000pps).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

QUICK=0 PLOT=0 RUNS="" PGO=1 ARCHIVE=0 OVERLOAD="${BENCH_OVERLOAD:-1}"
MAIN="${BENCH_MAIN:-1}" LIVE="${BENCH_LIVE:-1}" NIDS="${BENCH_NIDS:-1}" APPS="${BENCH_APPS:-1}"
XDP_CUTOFF="${BENCH_XDP_CUTOFF:-1}"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --archive) ARCHIVE=1 ;;
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
CORPUS_FILES="${BENCH_CORPUS_FILES:-24}"
CORPUS_PACKETS="${BENCH_CORPUS_PACKETS:-$([ "$QUICK" = 1 ] && echo "$PACKETS" || echo 8000000)}"
say() { echo "bench: $*" >&2; }

# 1. Dependencies: install what we can when root, else carry on and skip.
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  # stdout to stderr too: stdout is the report.
  scripts/install-deps.sh --bench >&2 || say "install-deps failed; missing peers will be skipped"
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
  say "SKIPPING PEER $name: build failed with every library list (see $log; needs cc and libnids-dev/libpcap-dev${PEER_HINT:+, $PEER_HINT})"
  sed -n '/error\|cannot find\|not found/{p;q}' "$log" | sed 's/^/bench:   /' >&2
}
# Debian's libnids.so is linked against libpcap, libnet and glib itself, so
# -lnids -lpcap is enough (libnids-dev does not pull libnet1-dev or
# libglib2.0-dev); the long list is for a static libnids.a only.
NIDS_SHORT="-lnids -lpcap"
NIDS_LONG="-lnids -lpcap -lnet -lgthread-2.0 -lglib-2.0 -lpthread"
build_peer nids_streams "$NIDS_SHORT" "$NIDS_LONG"
build_peer nids_flows "$NIDS_SHORT" "$NIDS_LONG"
build_peer nids_analyse "$NIDS_SHORT -lcrypto" "$NIDS_LONG -lcrypto"
build_peer pcap_flows "-lpcap"
# libnids + Hyperscan (the NIDS benchmark's C peer): libhyperscan-dev.
PEER_HINT=libhyperscan-dev build_peer nids_match "-lhs $NIDS_SHORT" "-lhs $NIDS_LONG -lstdc++ -lm"

# 4. Workloads.
if [ -z "${BENCH_WORK:-}" ]; then
  if [ -w /dev/shm ]; then BENCH_WORK=/dev/shm/streamcap-bench; else BENCH_WORK="$TARGET/bench-work"; fi
fi
mkdir -p "$BENCH_WORK"
WORKLOADS=()
# A reused trace is copied afresh first (a new tmpfs file, as a trace made
# now would be), and streamcap-bench measures every tool on one fresh copy.
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

# corpus-merged: real traffic the project does not produce. The largest
# Ethernet captures of the corpus (mergecap needs one link type) whose
# packets span at most an hour (a few have stray timestamps years apart),
# each shifted to start at the same second (editcap -t) and merged by time
# (mergecap), as if all were seen at once on one link. That base is
# repeated until the file has CORPUS_PACKETS packets: copy k shifted by
# k x (the base's span + 600 s) and appended without its file header.
# editcap cannot rewrite addresses, so every copy has the same 5-tuples;
# the 600 s gap, longer than streamcap's 300 s TCP inactivity timeout and
# its 240 s close linger, makes each copy's connections new ones rather
# than continuations of the copy before.
corpus_merged() {
  local out="$BENCH_WORK/corpus-merged-$CORPUS_FILES-$CORPUS_PACKETS.pcap"
  local manifest="$CORPUS/MANIFEST.tsv" t
  for t in mergecap editcap capinfos; do
    if ! command -v "$t" >/dev/null; then
      say "skipping corpus-merged: $t not found (apt-get install wireshark-common)"
      return 0
    fi
  done
  if [ ! -f "$manifest" ]; then
    say "skipping corpus-merged: no $manifest"
    return 0
  fi
  if [ -s "$out" ] && [ -s "$out.about" ] && [ "$out" -nt "$manifest" ]; then
    refresh "$out"
    WORKLOADS+=("corpus-merged=$out")
    return 0
  fi
  local dir="$BENCH_WORK/corpus-merged.tmp" t0=1600000000 n=0 rel f row
  local -a picked=()
  rm -rf "$dir" && mkdir -p "$dir"
  # MANIFEST.tsv: path, bytes, packets, ...; largest first.
  while IFS=$'\t' read -r rel _; do
    [ "$n" -ge "$CORPUS_FILES" ] && break
    f="$CORPUS/$rel"
    [ -f "$f" ] || continue
    # path, encapsulation, first and last packet time (epoch seconds);
    # capinfos exits non-zero on a capture cut short but still reports it.
    row="$(capinfos -T -r -E -a -e -S "$f" 2>/dev/null | tail -n 1)" || true
    local encap start end
    IFS=$'\t' read -r _ encap start end <<<"$row"
    [ "$encap" = ether ] || continue
    awk -v s="$start" -v e="$end" 'BEGIN { exit !(s ~ /^[0-9.]+$/ && e ~ /^[0-9.]+$/ && e - s <= 3600) }' || continue
    if editcap -F pcap -t "$((t0 - ${start%.*}))" "$f" "$dir/in-$n.pcap" 2>/dev/null &&
       [ -s "$dir/in-$n.pcap" ]; then
      picked+=("$rel")
      n=$((n + 1))
    fi
  done < <(tail -n +2 "$manifest" | sort -t $'\t' -k2,2nr)
  if [ "$n" = 0 ]; then
    say "skipping corpus-merged: no Ethernet capture under $CORPUS"
    rm -rf "$dir"
    return 0
  fi
  mergecap -F pcap -w "$dir/base.pcap" "$dir"/in-*.pcap
  local base_packets base_end span step copies k
  row="$(capinfos -T -r -c -e -S "$dir/base.pcap" | tail -n 1)"
  IFS=$'\t' read -r _ base_packets base_end <<<"$row"
  span=$(( ${base_end%.*} + 1 - t0 ))
  step=$(( span + 600 ))
  copies=$(( (CORPUS_PACKETS + base_packets - 1) / base_packets ))
  [ "$copies" -ge 1 ] || copies=1
  cp "$dir/base.pcap" "$out.tmp"
  for ((k = 1; k < copies; k++)); do
    editcap -F pcap -t "$((k * step))" "$dir/base.pcap" "$dir/copy.pcap"
    if ! cmp -s -n 24 "$dir/copy.pcap" "$dir/base.pcap"; then
      say "skipping corpus-merged: editcap changed the pcap file header of a copy"
      rm -rf "$dir" "$out.tmp"
      return 0
    fi
    tail -c +25 "$dir/copy.pcap" >>"$out.tmp"
  done
  {
    echo "corpus-merged: the $n largest Ethernet captures of the corpus (MANIFEST.tsv; packets spanning at most 1 h), shifted to one start time and merged by time with mergecap ($base_packets packets, ${span} s), then $copies copies one after another, copy k shifted by k x $step s (span + 600 s, longer than streamcap's 300 s TCP timeout): the same addresses in every copy, separated in time."
    printf '%s\n' "${picked[@]}"
  } >"$out.about"
  mv "$out.tmp" "$out"
  rm -rf "$dir"
  say "made corpus-merged: $out ($n captures, $copies copies of $base_packets packets)"
  WORKLOADS+=("corpus-merged=$out")
}
if [ -d "$CORPUS" ]; then
  corpus_merged
else
  say "skipping corpus-merged: no corpus at $CORPUS"
fi

# 5. Run.
mkdir -p bench/results
COMMIT="$(git rev-parse HEAD 2>/dev/null || true)"
if [ -n "$COMMIT" ] && [ -n "$(git status --porcelain -- . ':!bench/results' 2>/dev/null)" ]; then
  COMMIT="$COMMIT-dirty"
fi
ARGS=(run --streamcap "$STREAMCAP" "${PLAIN[@]}" --peers "$PEERS" --runs "$RUNS"
      --json bench/results/latest.json --tmp "$BENCH_WORK/scratch" --commit "$COMMIT")
[ "$PLOT" = 1 ] && ARGS+=(--png bench/results/latest.png)
[ -n "$IDLE_CONNS" ] && ARGS+=(--idle-conns "$IDLE_CONNS")
[ -n "${BENCH_ONE_CPU:-}" ] && ARGS+=(--one-cpu "$BENCH_ONE_CPU")
if [ "$MAIN" = 1 ]; then
  "$BIN/streamcap-bench" "${ARGS[@]}" "${WORKLOADS[@]}"
  if [ "$ARCHIVE" = 1 ]; then
    cp bench/results/latest.json "bench/results/${COMMIT:-unknown}.json"
    say "archived bench/results/${COMMIT:-unknown}.json"
  fi
else
  say "skipping the throughput tables (BENCH_MAIN=0)"
fi

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
if [ "$LIVE" != 1 ]; then
  say "skipping the live benchmark (BENCH_LIVE=0)"
elif [ "$(id -u)" = 0 ] && command -v ip >/dev/null 2>&1; then
  LIVE_PCAP="$BENCH_WORK/campus-small-$PACKETS.pcap"
  [ -s "$LIVE_PCAP" ] || LIVE_PCAP="${WORKLOADS[0]#*=}"
  "$BIN/streamcap-bench" live --streamcap "$STREAMCAP" --pcap "$LIVE_PCAP" \
    --json bench/results/live.json || say "live benchmark failed (see above)"
else
  say "skipping the live benchmark: needs root and iproute2 (network namespaces, veth)"
fi

# 8. Overload control (bench/README.md, "Overload control"): a 300,000-packet
# campus trace replayed at 0.5-2x the rate of an analysis of SHA-256 rounds
# per chunk, decoupled with prioritized packet loss and inline; the highest
# loss-free rate with 1 and 2 analysis threads; the M/M/1/N model beside PPL
# simulated (bench/results/overload.json, and overload-*.png with --plot).
if [ "$OVERLOAD" = 1 ]; then
  OV="$BENCH_WORK/campus-300000.pcap"
  [ -s "$OV" ] || "$BIN/streamcap-gen" campus -o "$OV" --packets 300000 --seed 1
  OV_ARGS=(overload --pcap "$OV" --json bench/results/overload.json)
  [ "$PLOT" = 1 ] && OV_ARGS+=(--png bench/results/overload)
  "$BIN/streamcap-bench" "${OV_ARGS[@]}" || say "overload experiments failed (see above)"
fi

# 9. NIDS (bench/README.md, "NIDS"): streamcap nids (engine auto, aho-corasick,
# cutoffs, segment delivery; the plain build too when the PGO one is
# measured) against Suricata (--runmode single, default configuration and
# app-layer off) and nids_match (libnids + Hyperscan) on the campus trace
# with the rule sets of `streamcap-bench nids-rules` (100, 1,000, 10,000
# rules), and with 1,000 rules on corpus-merged; 1-CPU and start-up rows
# (bench/results/nids.json, and nids.png with --plot).
if [ "$NIDS" = 1 ]; then
  NIDS_ARGS=(nids --streamcap "$STREAMCAP" "${PLAIN[@]}" --peers "$PEERS" --runs "$RUNS"
             --json bench/results/nids.json --tmp "$BENCH_WORK/nids" --commit "$COMMIT")
  [ "$PLOT" = 1 ] && NIDS_ARGS+=(--png bench/results/nids.png)
  [ -n "${BENCH_ONE_CPU:-}" ] && NIDS_ARGS+=(--one-cpu "$BENCH_ONE_CPU")
  [ -n "${BENCH_WAIT_IDLE:-}" ] && NIDS_ARGS+=(--wait-idle "$BENCH_WAIT_IDLE")
  [ -n "${BENCH_NIDS_RULES:-}" ] && NIDS_ARGS+=(--rules "$BENCH_NIDS_RULES")
  NIDS_WORKLOADS=()
  for w in "${WORKLOADS[@]}"; do
    case "$w" in
      campus=*) NIDS_WORKLOADS=("$w" "${NIDS_WORKLOADS[@]}") ;;
      sample-repeat=*) NIDS_WORKLOADS=("$w" "${NIDS_WORKLOADS[@]}") ;;
      corpus-merged=*) [ "${BENCH_NIDS_CORPUS:-1}" = 1 ] && NIDS_WORKLOADS+=("$w") ;;
    esac
  done
  "$BIN/streamcap-bench" "${NIDS_ARGS[@]}" "${NIDS_WORKLOADS[@]}" || say "NIDS benchmark failed (see above)"
fi

# 10. Applications (bench/README.md, "Applications"): streamcap flows,
# flows --app and ndpiReader; streamcap http and tshark -Y http -T fields;
# streamcap nids (1,000 rules); streamcap run --with flows --with http
# --with nids (and --with app) against the three run separately; every row
# pinned to one CPU, streamcap's also unpinned (bench/results/apps.json).
# Workloads: the generator's labelled application traffic (streamcap-gen
# apps), a campus trace, and, from corpus-merged (traffic the project does
# not generate), its first copy (`corpus-base`) and its first
# BENCH_APPS_CORPUS_PACKETS packets (tshark needs minutes for all of it).
if [ "$APPS" = 1 ]; then
  APPS_FLOWS="${BENCH_APPS_FLOWS:-$([ "$QUICK" = 1 ] && echo 20000 || echo 100000)}"
  APPS_CAMPUS="${BENCH_APPS_CAMPUS_PACKETS:-$([ "$QUICK" = 1 ] && echo 100000 || echo 300000)}"
  APPS_CORPUS="${BENCH_APPS_CORPUS_PACKETS:-$([ "$QUICK" = 1 ] && echo 100000 || echo 1000000)}"
  APPS_WORKLOADS=()
  f="$BENCH_WORK/apps-$APPS_FLOWS.pcap"
  [ -s "$f" ] || "$BIN/streamcap-gen" apps -o "$f" --flows "$APPS_FLOWS" --seed 1 >&2
  APPS_WORKLOADS+=("apps=$f")
  if [ "$APPS_CAMPUS" != 0 ]; then
    f="$BENCH_WORK/campus-$APPS_CAMPUS.pcap"
    [ -s "$f" ] || "$BIN/streamcap-gen" campus -o "$f" --packets "$APPS_CAMPUS" --seed 1
    APPS_WORKLOADS+=("campus=$f")
  fi
  for w in "${WORKLOADS[@]}"; do
    case "$w" in
      corpus-merged=*)
        [ "$APPS_CORPUS" != 0 ] || continue
        src="${w#*=}"
        # corpus-base: the merged captures once (the first copy, its
        # packet count from the .about file), no address repeated later.
        n="$(sed -n '1s/.*mergecap (\([0-9]*\) packets.*/\1/p' "$src.about" 2>/dev/null)"
        if [ -n "$n" ]; then
          f="$BENCH_WORK/corpus-base-$n.pcap"
          if [ ! -s "$f" ] || [ "$src" -nt "$f" ]; then
            editcap -F pcap -r "$src" "$f" "1-$n"
          fi
          APPS_WORKLOADS+=("corpus-base=$f")
        fi
        # The first APPS_CORPUS packets (editcap -r keeps those selected).
        f="$BENCH_WORK/corpus-merged-apps-$APPS_CORPUS.pcap"
        if [ ! -s "$f" ] || [ "$src" -nt "$f" ]; then
          editcap -F pcap -r "$src" "$f" "1-$APPS_CORPUS"
        fi
        APPS_WORKLOADS+=("corpus-merged=$f") ;;
    esac
  done
  APPS_ARGS=(apps --streamcap "$STREAMCAP" --runs "$RUNS" --json bench/results/apps.json
             --tmp "$BENCH_WORK/apps" --commit "$COMMIT")
  [ -n "${BENCH_ONE_CPU:-}" ] && APPS_ARGS+=(--one-cpu "$BENCH_ONE_CPU")
  [ -n "${BENCH_WAIT_IDLE:-}" ] && APPS_ARGS+=(--wait-idle "$BENCH_WAIT_IDLE")
  "$BIN/streamcap-bench" "${APPS_ARGS[@]}" "${APPS_WORKLOADS[@]}" || say "applications benchmark failed (see above)"
else
  say "skipping the applications benchmark (BENCH_APPS=0)"
fi

# 11. The cutoff experiment (bench/README.md, "XDP cutoff"; Scap Fig. 8): a
# campus trace with 64 elephant flows (most of its bytes in streams longer
# than 1 MiB) replayed by tcpreplay at one fixed rate onto a veth pair in a
# namespace of its own, captured in turn by streamcap flows -i with each
# cutoff (discarding in user space, and with --xdp), libnids and tcpdump;
# the machine's CPU while packets flow and the loss
# (bench/results/xdp-cutoff.json, and xdp-cutoff.png with --plot); then
# the same on the NIC path (xdp-cutoff-nic.json, .png). --xdp
# needs the build with the xdp feature (clang, libbpf-dev): built here, last,
# into the same target (the next run.sh builds the plain one again); where
# it fails, the experiment runs without the --xdp rows.
if [ "$XDP_CUTOFF" != 1 ]; then
  say "skipping the XDP cutoff experiment (BENCH_XDP_CUTOFF=0)"
elif [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null 2>&1; then
  say "skipping the XDP cutoff experiment: needs root and iproute2 (network namespaces, veth)"
else
  XC_PCAP="$BENCH_WORK/campus-long-300000.pcap"
  [ -s "$XC_PCAP" ] || "$BIN/streamcap-gen" campus -o "$XC_PCAP" --packets 300000 --seed 1 --elephants 64 >&2
  cargo build --release -q -p streamcap-cli --features xdp >&2 ||
    say "the streamcap build with --features xdp failed (see above): no --xdp rows"
  # On the veth pair, then on the NIC path (--nic-path: the frames reach
  # the capture interface as XDP frames, redirected by a program that
  # clang compiles), each with its own results file.
  for XC_PATH in veth nic; do
    XC_OUT=bench/results/xdp-cutoff
    XC_ARGS=(xdp-cutoff --streamcap "$BIN/streamcap" --pcap "$XC_PCAP" --peers "$PEERS"
             --rate "${BENCH_XDP_CUTOFF_RATE:-0.5}")
    if [ "$XC_PATH" = nic ]; then
      XC_OUT=bench/results/xdp-cutoff-nic
      XC_ARGS+=(--nic-path)
    fi
    XC_ARGS+=(--json "$XC_OUT.json")
    [ "$PLOT" = 1 ] && XC_ARGS+=(--png "$XC_OUT.png")
    [ -n "${BENCH_WAIT_IDLE:-}" ] && XC_ARGS+=(--wait-idle "$BENCH_WAIT_IDLE")
    "$BIN/streamcap-bench" "${XC_ARGS[@]}" || say "XDP cutoff experiment ($XC_PATH) failed (see above)"
  done
fi
