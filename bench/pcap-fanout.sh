#!/usr/bin/env bash
# Kernel fan-out for unmodified libpcap programs (pcap-fanout.txt §VIII in
# spirit): packets handled per second by one and two instances of a
# libpcap program joined in one fan-out group by libstreamcap_pcap.so
# (PCAP_GROUP=1 PCAP_FANOUT=hash), against one instance without the
# library; and streamcap's own `flows` with one and two workers.
#
#   bench/pcap-fanout.sh        (root: it makes a network namespace)
#
# A veth pair sca/scb (MTU 9000, IPv6 off) in a network namespace of its
# own (PCAP_FANOUT_NS, default scpcapfan; deleted on exit). The trace:
# streamcap-gen campus --seed 1, 1,000,000 packets. Each run starts the
# receivers on scb, waits 1.5 s, replays the trace on sca as fast as
# possible (streamcap replay), waits 2 s for the receivers to drain their
# buffers and stops them with SIGINT. Counted: frames sent and the
# replay's seconds (its own report), packets each instance handled
# (ndpiReader: "IP packets: … of N packets total"; tcpdump -w /dev/null:
# "packets captured" and "dropped by kernel"; streamcap flows
# --stats-json: packets.processed and kernel.dropped), summed over the
# instances. handled pps = handled / replay seconds; loss = 1 - handled /
# sent. Rounds are round-robin over the configurations; before each run
# the script waits while another benchmark runs
# (pgrep -f 'locality-batch|streamcap-bench').
# The machine's CPUs are shared by the sender, the kernel's veth path and
# the receivers: with 2 CPUs the figures show fan-out sharing the load, not
# scaling with cores.
# Results: bench/results/pcap-fanout.json and the Markdown table on stdout.
# Environment: CARGO_TARGET_DIR, PCAP_BENCH_WORK (default
# /dev/shm/streamcap-pcap-bench), PCAP_FANOUT_PACKETS (trace size;
# 1000000), PCAP_FANOUT_ROUNDS (3), PCAP_FANOUT_NS.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
say() { echo "pcap-fanout: $*" >&2; }
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
  "") ;;
  *) echo "pcap-fanout.sh: no options but --help" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { say "needs root (ip netns, raw sockets)"; exit 1; }
for t in ip ndpiReader tcpdump python3; do
  command -v "$t" >/dev/null || { say "$t not found (iproute2, libndpi-bin, tcpdump, python3)"; exit 1; }
done

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
BIN="$TARGET/release"
LIB="$BIN/libstreamcap_pcap.so"
WORK="${PCAP_BENCH_WORK:-/dev/shm/streamcap-pcap-bench}"
PACKETS="${PCAP_FANOUT_PACKETS:-1000000}"
ROUNDS="${PCAP_FANOUT_ROUNDS:-3}"
NS="${PCAP_FANOUT_NS:-scpcapfan}"

cargo build --release --workspace >&2
mkdir -p "$WORK" bench/results
TRACE="$WORK/campus-$PACKETS.pcap"
if [ ! -s "$TRACE" ]; then
  "$BIN/streamcap-gen" campus -o "$TRACE" --packets "$PACKETS" --seed 1 >&2
fi

# The namespace and its veth pair.
cleanup() {
  local p
  for p in $(ip netns pids "$NS" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
  ip netns del "$NS" 2>/dev/null || true
}
trap cleanup EXIT
if ip netns list | grep -qw "$NS"; then cleanup; fi
ip netns add "$NS"
ip -n "$NS" link add sca type veth peer name scb
ip -n "$NS" link set lo up
for d in sca scb; do
  ip netns exec "$NS" sysctl -qw "net.ipv6.conf.$d.disable_ipv6=1"
  ip -n "$NS" link set "$d" mtu 9000 up
done

wait_idle() {
  local said=0
  while pgrep -f 'locality-batch|streamcap-bench' >/dev/null; do
    [ "$said" = 1 ] || say "waiting: another benchmark runs ($(pgrep -af 'locality-batch|streamcap-bench' | head -n 1 | cut -c1-100))"
    said=1
    sleep 5
  done
}

# configuration: program|name|instances|environment (words for env(1))
CONFIGS=(
  "ndpiReader|no library|1|-u LD_PRELOAD"
  "ndpiReader|library, PCAP_GROUP=1 PCAP_FANOUT=hash|1|LD_PRELOAD=$LIB PCAP_GROUP=1 PCAP_FANOUT=hash"
  "ndpiReader|library, PCAP_GROUP=1 PCAP_FANOUT=hash|2|LD_PRELOAD=$LIB PCAP_GROUP=1 PCAP_FANOUT=hash"
  "tcpdump|no library|1|-u LD_PRELOAD"
  "tcpdump|library, PCAP_GROUP=1 PCAP_FANOUT=hash|1|LD_PRELOAD=$LIB PCAP_GROUP=1 PCAP_FANOUT=hash"
  "tcpdump|library, PCAP_GROUP=1 PCAP_FANOUT=hash|2|LD_PRELOAD=$LIB PCAP_GROUP=1 PCAP_FANOUT=hash"
  "streamcap flows|--workers 1|1|-u LD_PRELOAD"
  "streamcap flows|--workers 2|1|-u LD_PRELOAD"
)
command_of() { # PROGRAM NAME INSTANCE -> the receiver's command
  case "$1" in
    ndpiReader) echo "ndpiReader -i scb" ;;
    tcpdump) echo "tcpdump -i scb -w /dev/null" ;;
    "streamcap flows") echo "$BIN/streamcap flows -i scb ${2} -o /dev/null -q --stats-json $WORK/fanout-$3.json" ;;
  esac
}

TSV="$WORK/pcap-fanout.tsv"
: >"$TSV"
run_one() { # ROUND CONFIG
  local program name instances envw i cmd pids=() line sent send_s handled=0 dropped=0 per=()
  IFS='|' read -r program name instances envw <<<"$2"
  wait_idle
  for ((i = 0; i < instances; i++)); do
    rm -f "$WORK/fanout-$i.out" "$WORK/fanout-$i.json"
    cmd="$(command_of "$program" "$name" "$i")"
    # ip netns exec and env exec the receiver: $! is its process.
    # shellcheck disable=SC2086
    ip netns exec "$NS" env $envw $cmd >"$WORK/fanout-$i.out" 2>&1 &
    pids+=("$!")
  done
  sleep 1.5
  line="$(ip netns exec "$NS" "$BIN/streamcap" replay -r "$TRACE" -i sca 2>&1 | grep 'frames sent')"
  sleep 2
  for i in "${pids[@]}"; do kill -INT "$i" 2>/dev/null || true; done
  for i in "${pids[@]}"; do wait "$i" || true; done
  # "streamcap: N frames sent on sca, S skipped, T s, P pps, M Mbit/s"
  sent="$(sed -n 's/.*: \([0-9]*\) frames sent.*/\1/p' <<<"$line")"
  send_s="$(sed -n 's/.* skipped, \([0-9.]*\) s,.*/\1/p' <<<"$line")"
  for ((i = 0; i < instances; i++)); do
    local h d=null
    case "$program" in
      ndpiReader) h="$(awk '/IP packets:/ { print $5 }' "$WORK/fanout-$i.out")" ;;
      tcpdump)
        h="$(awk '/packets captured/ { print $1 }' "$WORK/fanout-$i.out")"
        d="$(awk '/dropped by kernel/ { print $1 }' "$WORK/fanout-$i.out")" ;;
      "streamcap flows")
        read -r h d < <(python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print(s["packets"]["processed"], s["kernel"]["dropped"])' "$WORK/fanout-$i.json") ;;
    esac
    [ -n "$h" ] || { say "$program ($name) instance $i reported nothing:"; cat "$WORK/fanout-$i.out" >&2; exit 1; }
    handled=$((handled + h))
    [ "$d" = null ] || dropped=$((dropped + d))
    per+=("$h")
  done
  local kd=null
  case "$program" in tcpdump|"streamcap flows") kd="$dropped" ;; esac
  say "round $1: $program ($name) x$instances: sent $sent in $send_s s, handled $handled (${per[*]})"
  printf 'run\t%s\n' "$(python3 -c '
import json, sys
a = sys.argv[1:]
print(json.dumps({"program": a[0], "config": a[1], "instances": int(a[2]), "command": a[3],
                  "round": int(a[4]), "sent": int(a[5]), "send_s": float(a[6]), "handled": int(a[7]),
                  "per_instance": [int(x) for x in a[8].split()],
                  "kernel_dropped": None if a[9] == "null" else int(a[9]), "load": a[10]}))
' "$program" "$name" "$instances" "env $envw $(command_of "$program" "$name" 0)" "$1" "$sent" "$send_s" \
    "$handled" "${per[*]}" "$kd" "$(cut -d' ' -f1-3 /proc/loadavg)")" >>"$TSV"
}
cat "$TRACE" >/dev/null
for ((r = 1; r <= ROUNDS; r++)); do
  for c in "${CONFIGS[@]}"; do run_one "$r" "$c"; done
done

{
  printf 'meta\tcommit\t%s\n' "$(git rev-parse HEAD)"
  printf 'meta\ttrace\t%s\n' "$TRACE"
  printf 'meta\ttrace_about\t%s\n' "streamcap-gen campus --packets $PACKETS --seed 1 ($(stat -c %s "$TRACE") bytes), replayed with streamcap replay -r FILE -i sca"
  printf 'meta\tcpus\t%s\n' "$(nproc)"
  printf 'meta\tcpu_model\t%s\n' "$(lscpu | sed -n 's/^Model name: *//p')"
  printf 'meta\trounds\t%s\n' "$ROUNDS"
} >>"$TSV"
python3 bench/pcap_report.py fanout "$TSV" bench/results/pcap-fanout.json
say "wrote bench/results/pcap-fanout.json"
