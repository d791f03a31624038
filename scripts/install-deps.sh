#!/usr/bin/env bash
# Installs what the test suite compares against or needs at run time:
#   tshark   - reference reassembly (follow,tcp,raw) and conversation counts
#   tcpflow  - reference for `streamcap streams -w` files
#   libpcap  - libpcap's filter compiler, loaded at run time for tcpdump-syntax filters
#   iproute2 - `ip netns` / veth pairs for the live-capture tests (run as root)
#   procps   - sysctl, to switch IPv6 off on the test veth pairs
# Tests that need a missing tool skip with a message, so this is optional on a
# developer machine; CI runs it. Needs root (or sudo) and Debian/Ubuntu.
#
# `scripts/install-deps.sh --bench` also installs what bench/run.sh uses:
#   gcc, libc6-dev, libnids-dev, libpcap-dev  - to build the C peers in bench/peers
#       (libnids-dev depends only on libnids1.21 and libc6-dev; libnids1.21
#       brings the runtime libpcap0.8, libnet1 and libglib2.0-0. That is all
#       the peers need: they link the shared libnids.so with -lnids -lpcap.
#       libnet1-dev and libglib2.0-dev would only be needed for the static
#       libnids.a, which run.sh tries second.)
#   softflowd, nfdump                         - NetFlow exporter peer and its collector (nfcapd)
#   time                                      - /usr/bin/time: CPU seconds and peak RSS of each run
#   wireshark-common                          - mergecap, editcap, capinfos: the corpus-merged workload
#   util-linux                                - taskset: the rows pinned to one CPU
#   fonts-dejavu-core                         - labels of the --plot chart
#   linux-perf                                - optional profiles (perf record)
#   libssl-dev                                - OpenSSL's SHA-256 for the nids_analyse peer
#   tcpreplay                                 - streamcap-bench overload-live's paced replay
#   libhyperscan-dev                          - Hyperscan for the nids_match peer (libnids + Hyperscan)
#   suricata                                  - the NIDS benchmark's Suricata rows
set -euo pipefail
pkgs=(tshark tcpflow libpcap0.8 libpcap-dev tcpdump iproute2 procps)
if [ "${1:-}" = "--bench" ]; then
  pkgs+=(gcc libc6-dev libnids-dev softflowd nfdump time wireshark-common util-linux fonts-dejavu-core linux-perf libssl-dev tcpreplay libhyperscan-dev suricata)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all present (${pkgs[*]})"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
# Install one by one when the whole set fails, so one missing package (e.g.
# linux-perf on a distribution that names it differently) does not stop the rest.
if ! $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  for p in "${missing[@]}"; do
    $SUDO apt-get install -y -qq --no-install-recommends "$p" >/dev/null ||
      echo "install-deps: could not install $p"
  done
fi
