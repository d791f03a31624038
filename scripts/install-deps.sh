#!/usr/bin/env bash
# Installs what the test suite compares against or needs at run time:
#   tshark   - reference reassembly (follow,tcp,raw) and conversation counts
#   tcpflow  - reference for `streamcap streams -w` files
#   libpcap  - libpcap's filter compiler, loaded at run time for tcpdump-syntax filters
#   iproute2 - `ip netns` / veth pairs for the live-capture tests (run as root)
#   procps   - sysctl, to switch IPv6 off on the test veth pairs
#   libhyperscan5 - Hyperscan, loaded at run time by `streamcap nids` (the
#              tests run every NIDS case on it and on aho-corasick)
#   libndpi-bin - nDPI's ndpiReader (4.2 on Debian 12), which the classifier
#              is compared with (crates/streamcap-apps/tests/ndpi.rs)
#   gcc, libc6-dev, pkg-config, valgrind - the C API's tests compile the C
#              examples through pkg-config and run them under memcheck
#   tcpdump  - the unmodified libpcap program libstreamcap_pcap.so is tested
#              with (crates/streamcap-pcap/tests/tcpdump.rs), with ndpiReader
#   ethtool  - what the channel calls of libstreamcap_pcap.so are compared
#              with (crates/streamcap-pcap/tests/channels.rs)
#   nfdump   - nfcapd, the IPFIX collector `flows --ipfix` is tested
#              against, and nfdump to read its files back
#   suricata - Suricata 7, which `streamcap nids` is compared with; on
#              Debian 12 it comes from bookworm-backports, which this script
#              adds to apt's sources when it is missing
#   duckdb, pandas, pyarrow (pip, pinned) - read the files of `flows --format
#              parquet` back (crates/streamcap-cli/tests/parquet.rs), into the
#              python3 on PATH, which the test runs ($STREAMCAP_PYTHON names
#              another); with Debian's own python3, past its
#              externally-managed marker
#   cmake, g++ - build librdkafka from its bundled source for the `kafka`
#              feature (`--kafka`; scripts/test-kafka.sh, which CI runs)
#   clang, libbpf-dev - compile and load the XDP flow-drop program of the
#              `xdp` feature (`--xdp`; scripts/test-xdp.sh, which CI runs)
#   libxdp1    - creates the AF_XDP sockets of `--source af_xdp` (opened at
#              run time; scripts/test-xdp.sh)
#   default-jdk-headless, maven - the Kafka 4.1 broker the Kafka tests
#              produce to (scripts/kafka-broker.sh: Maven fetches its jars
#              once, the JDK runs it)
# Tests that need a missing tool skip with a message, so this is optional on a
# developer machine; CI runs it. Needs root (or sudo) and Debian/Ubuntu.
#
# `scripts/install-deps.sh --bench` also installs what bench/run.sh uses:
#   libnids-dev (with gcc, libc6-dev and libpcap-dev from the default set) - to build the C peers in bench/peers
#       (libnids-dev depends only on libnids1.21 and libc6-dev; libnids1.21
#       brings the runtime libpcap0.8, libnet1 and libglib2.0-0. That is all
#       the peers need: they link the shared libnids.so with -lnids -lpcap.
#       libnet1-dev and libglib2.0-dev would only be needed for the static
#       libnids.a, which run.sh tries second.)
#   softflowd                                 - NetFlow exporter peer (its collector, nfcapd, is in the default set)
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
pkgs=(tshark tcpflow libpcap0.8 libpcap-dev tcpdump iproute2 procps libhyperscan5 libndpi-bin gcc libc6-dev pkg-config valgrind nfdump
  cmake g++ default-jdk-headless maven clang libbpf-dev libxdp1 ethtool)
if [ "${1:-}" = "--bench" ]; then
  pkgs+=(libnids-dev softflowd time wireshark-common util-linux fonts-dejavu-core linux-perf libssl-dev tcpreplay libhyperscan-dev)
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

# Suricata 7: Debian 12 has it only in bookworm-backports.
if ! command -v suricata >/dev/null 2>&1; then
  suite=""
  if grep -q 'VERSION_CODENAME=bookworm' /etc/os-release 2>/dev/null; then
    suite="bookworm-backports"
    if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
      echo "install-deps: adding bookworm-backports to apt's sources (for Suricata 7)"
      printf '%s\n' 'Types: deb' 'URIs: http://deb.debian.org/debian' 'Suites: bookworm-backports' \
        'Components: main' 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' |
        $SUDO tee /etc/apt/sources.list.d/streamcap-backports.sources >/dev/null
    fi
  fi
  $SUDO apt-get update -qq
  if [ -n "$suite" ]; then
    $SUDO apt-get install -y -qq -t "$suite" suricata >/dev/null || echo "install-deps: could not install suricata"
  else
    $SUDO apt-get install -y -qq suricata >/dev/null || echo "install-deps: could not install suricata"
  fi
fi

# Python packages of the Parquet tests: a pinned install is a no-op when
# they are there (no network), and a failure only skips those tests. Run
# after apt, which brings python3-pip where python3 has no pip.
py_pkgs=(duckdb==2.0.1 pandas==3.1.1 pyarrow==26.0.1)
install_python_packages() {
  if command -v python3 >/dev/null 2>&1 && ! python3 -m pip --version >/dev/null 2>&1; then
    $SUDO apt-get install -y -qq --no-install-recommends python3-pip >/dev/null 2>&1 ||
      ($SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends python3-pip >/dev/null 2>&1) || true
  fi
  if command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
    local pip_install=(python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore)
    "${pip_install[@]}" "${py_pkgs[@]}" 2>/dev/null ||
      "${pip_install[@]}" --break-system-packages "${py_pkgs[@]}" ||
      echo "install-deps: could not install ${py_pkgs[*]} (the Parquet tests that use them skip)"
  else
    echo "install-deps: python3 with pip not found: ${py_pkgs[*]} not installed (the Parquet tests that use them skip)"
  fi
}

# Installed means "install ok installed": `dpkg -s` also succeeds for a
# package removed with its configuration files left behind.
installed() {
  [ "$(dpkg-query -W -f '${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}
missing=()
for p in "${pkgs[@]}"; do
  installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all present (${pkgs[*]})"
  install_python_packages
  exit 0
fi
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
for p in "${missing[@]}"; do
  installed "$p" || echo "install-deps: still missing: $p (the tests that need it skip, or fail where CI requires it)"
done
install_python_packages
