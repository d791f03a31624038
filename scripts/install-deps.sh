#!/usr/bin/env bash
# Installs what the test suite compares against or needs at run time:
#   tshark   - reference reassembly (follow,tcp,raw) and conversation counts
#   tcpflow  - reference for `streamcap streams -w` files
#   libpcap  - libpcap's filter compiler, loaded at run time for tcpdump-syntax filters
# Tests that need a missing tool skip with a message, so this is optional on a
# developer machine; CI runs it. Needs root (or sudo) and Debian/Ubuntu.
set -euo pipefail
pkgs=(tshark tcpflow libpcap0.8 libpcap-dev tcpdump)
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
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
