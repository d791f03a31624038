#!/usr/bin/env bash
# Packets per second forwarded by `streamcap forward` on each path: the
# plain AF_PACKET forwarder (sendmmsg per ring block, and one send per
# frame), the XDP devmap redirect in native and in generic mode, and the
# AF_XDP pool with a send-only socket sharing it (docs/forward.md).
#
#   bench/forward.sh        (root: it makes network namespaces)
#
# Three namespaces (FORWARD_NS-s, -f, -r; deleted on exit), IPv6 off:
# sender fs <-> fin forwarder fout <-> fr receiver, MTU 9000, GRO on fr
# (a veth takes frames redirected by XDP only while its peer runs NAPI).
# The trace: streamcap-gen campus --seed 1, FORWARD_PACKETS packets
# (default 1000000). Each run starts `streamcap forward -i fin --to fout
# --via PATH FILTER`, replays the trace on fs as fast as possible
# (`tcpreplay --topspeed`, or `streamcap replay` with FORWARD_SENDER=streamcap
# or without tcpreplay), waits 1 s and stops the forwarder with SIGINT. Printed per path: frames sent, frames forwarded
# (the forwarder's count), frames the receiver's fr counted (rx_packets),
# forwarded pps = forwarded / the replay's seconds, the forwarder's CPU
# seconds (its own process: the XDP program runs in softirq context and is
# charged to no process) and the machine's busy CPU seconds over the run
# (/proc/stat, every CPU: sender, kernel, forwarder and receiver together).
# Sender, forwarder and receiver share the machine's CPUs: the figures
# compare the paths on one machine, they are not line rates.
# Environment: CARGO_TARGET_DIR; STREAMCAP_BIN (a streamcap built with
# --features xdp; default: cargo build --release -p streamcap-cli
# --features xdp); FORWARD_PACKETS; FORWARD_FILTER (default "tcp or udp");
# FORWARD_PATHS (default "af_packet af_packet:frame devmap:native
# devmap:generic af_xdp"); FORWARD_WORK (default /dev/shm/streamcap-forward-bench);
# FORWARD_NS (default scfwd); FORWARD_SENDER (tcpreplay or streamcap).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
say() { echo "forward-bench: $*" >&2; }
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
  "") ;;
  *) echo "forward.sh: no options but --help" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { say "needs root (ip netns, raw sockets, XDP)"; exit 1; }
for t in ip ethtool; do
  command -v "$t" >/dev/null || { say "$t not found (iproute2, ethtool)"; exit 1; }
done

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
PACKETS="${FORWARD_PACKETS:-1000000}"
FILTER="${FORWARD_FILTER:-tcp or udp}"
PATHS="${FORWARD_PATHS:-af_packet af_packet:frame devmap:native devmap:generic af_xdp}"
WORK="${FORWARD_WORK:-/dev/shm/streamcap-forward-bench}"
NS="${FORWARD_NS:-scfwd}"
SENDER="${FORWARD_SENDER:-tcpreplay}"
command -v tcpreplay >/dev/null || SENDER=streamcap
if [ -n "${STREAMCAP_BIN:-}" ]; then
  SC="$STREAMCAP_BIN"
  GEN="$(dirname "$SC")/streamcap-gen"
else
  cargo build --release -p streamcap-cli --features xdp >&2
  cargo build --release -p streamcap-gen >&2
  SC="$TARGET/release/streamcap"
  GEN="$TARGET/release/streamcap-gen"
fi
[ -x "$GEN" ] || { say "no streamcap-gen beside $SC (cargo build -p streamcap-gen)"; exit 1; }

mkdir -p "$WORK"
TRACE="$WORK/campus-$PACKETS.pcap"
[ -s "$TRACE" ] || "$GEN" campus -o "$TRACE" --packets "$PACKETS" --seed 1 >&2

S="$NS-s" F="$NS-f" R="$NS-r"
cleanup() {
  local ns p
  for ns in "$S" "$F" "$R"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
}
trap cleanup EXIT
cleanup
for ns in "$S" "$F" "$R"; do
  ip netns add "$ns"
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
ip link add fs netns "$S" type veth peer name fin netns "$F"
ip link add fout netns "$F" type veth peer name fr netns "$R"
for x in "$S fs" "$F fin" "$F fout" "$R fr"; do
  set -- $x
  ip -n "$1" link set "$2" mtu 9000 up
done
ip netns exec "$R" ethtool -K fr gro on >/dev/null

# Busy CPU seconds of the whole machine so far (/proc/stat: all but idle
# and iowait, in clock ticks).
busy() {
  awk -v hz="$(getconf CLK_TCK)" '/^cpu /{print ($2+$3+$4+$7+$8+$9)/hz}' /proc/stat
}
rx() { ip netns exec "$R" cat /sys/class/net/fr/statistics/rx_packets; }

say "trace $TRACE ($PACKETS packets), filter: ${FILTER:-none}, sender: $SENDER"
printf '%-16s %10s %10s %10s %12s %9s %9s\n' path sent forwarded received "fwd pps" "fwd CPU" "all CPU"
for p in $PATHS; do
  via="${p%%:*}" opt="${p#*:}"
  args=(--via "$via")
  case "$p" in
    af_packet:frame) args+=(--send frame) ;;
    devmap:*) args+=(--xdp-mode "$opt") ;;
  esac
  log="$WORK/forward-$p.log"
  rx0="$(rx)" cpu0="$(busy)"
  # shellcheck disable=SC2086
  ip netns exec "$F" "$SC" forward -i fin --to fout "${args[@]}" $FILTER 2>"$log" &
  pid=$!
  for _ in $(seq 200); do grep -q "forwarding from" "$log" && break; sleep 0.05; done
  if ! grep -q "forwarding from" "$log"; then
    say "$p did not start: $(cat "$log")"
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    continue
  fi
  if [ "$SENDER" = tcpreplay ]; then
    # "Actual: N packets (B bytes) sent in S seconds"
    rep="$(ip netns exec "$S" tcpreplay --topspeed -i fs "$TRACE" 2>&1 | grep 'Actual:')"
    sent="$(echo "$rep" | awk '{print $2}')"
    secs="$(echo "$rep" | sed -n 's/.* sent in \([0-9.]*\) seconds.*/\1/p')"
  else
    # "N frames sent on fs, 0 skipped, S s, P pps, ..."
    rep="$(ip netns exec "$S" "$SC" replay -r "$TRACE" -i fs 2>&1 | tail -1)"
    sent="$(echo "$rep" | awk '{print $2}')"
    secs="$(echo "$rep" | sed -n 's/.* \([0-9.]*\) s, .*/\1/p')"
  fi
  sleep 1
  kill -INT "$pid"
  wait "$pid" || true
  cpu1="$(busy)" rx1="$(rx)"
  sum="$(grep "forwarded " "$log" | tail -1)"
  fwd="$(echo "$sum" | sed -n 's/.*forwarded \([0-9]*\) packets.*/\1/p')"
  fcpu="$(echo "$sum" | sed -n 's/.* \([0-9.]*\) CPU s.*/\1/p')"
  pps="$(awk -v n="${fwd:-0}" -v s="${secs:-0}" 'BEGIN{if (s>0) printf "%.0f", n/s; else print 0}')"
  all="$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN{printf "%.2f", b-a}')"
  printf '%-16s %10s %10s %10s %12s %9s %9s\n' "$p" "${sent:-?}" "${fwd:-?}" "$((rx1 - rx0))" "$pps" "${fcpu:-?}" "$all"
done
