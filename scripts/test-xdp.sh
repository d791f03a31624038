#!/usr/bin/env bash
# The XDP tests: builds the command line with the `xdp` feature (the
# flow-drop and forwarding programs are compiled with clang against
# libbpf-dev's headers and loaded with libbpf) and runs the library's XDP
# and AF_XDP tests, crates/streamcap-cli/tests/xdp.rs, which captures
# replays on a veth pair inside a network namespace of its own with and
# without `--xdp` (docs/xdp.md) and with `--source af_xdp`
# (docs/capture.md), and crates/streamcap-cli/tests/forward.rs, which
# forwards replays between namespaces (docs/forward.md); they need root.
# The library's forward tests check the XDP cBPF interpreter against
# libpcap on the corpus.
#
#   scripts/test-xdp.sh [TEST ARGS...]        e.g. -- --nocapture
#
# Without clang, libbpf-dev or libxdp1 it says what is missing and exits 0
# (sudo scripts/install-deps.sh installs them), unless STREAMCAP_XDP_REQUIRED=1,
# when it fails instead; the same without root, where the live tests would
# skip. The rest of the project builds and tests without either.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v "${CLANG:-clang}" >/dev/null 2>&1 || missing+=("clang (compiles the XDP program)")
[ -e /usr/include/bpf/bpf_helpers.h ] || missing+=("libbpf-dev (the program's headers, and libbpf to load it)")
# The loader's cache is read whole into a variable: `ldconfig -p | grep -q`
# fails under pipefail when grep stops at the first match and ldconfig, with
# more than a pipe's worth still to write, dies of SIGPIPE.
has_libxdp() {
  local cache
  cache=$(ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true)
  [[ $cache == *libxdp.so.1* ]] && return 0
  compgen -G '/usr/lib/*/libxdp.so.1' >/dev/null || compgen -G '/lib/*/libxdp.so.1' >/dev/null
}
has_libxdp || missing+=("libxdp1 (creates the AF_XDP sockets of --source af_xdp)")
if [ ${#missing[@]} -gt 0 ]; then
  for m in "${missing[@]}"; do
    echo "test-xdp: missing: $m" >&2
  done
  echo "test-xdp: the XDP tests were not run (sudo scripts/install-deps.sh installs clang, libbpf-dev and libxdp1)" >&2
  [ "${STREAMCAP_XDP_REQUIRED:-0}" = 1 ] && exit 1
  exit 0
fi
if [ "$(id -u)" -ne 0 ] && [ "${STREAMCAP_XDP_REQUIRED:-0}" = 1 ]; then
  echo "test-xdp: the XDP tests need root (a veth pair, a BPF program)" >&2
  exit 1
fi
cargo test -p streamcap --features xdp --lib -- subzero af_xdp forward
cargo test -p streamcap --features xdp --test af_xdp
cargo test -p streamcap-cli --features xdp --test xdp "$@"
cargo test -p streamcap-cli --features xdp --test forward "$@"
