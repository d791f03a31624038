#!/usr/bin/env bash
# Installs streamcap's C library under PREFIX:
#   PREFIX/include/streamcap.h
#   PREFIX/lib/libstreamcap.so, PREFIX/lib/libstreamcap.a
#   PREFIX/lib/pkgconfig/streamcap.pc   (with PREFIX's paths)
#
#   scripts/install-c.sh PREFIX               # builds the release library first
#   scripts/install-c.sh PREFIX --from DIR    # copies DIR's libstreamcap.{so,a} (no build)
#
# Then: PKG_CONFIG_PATH=PREFIX/lib/pkgconfig cc prog.c $(pkg-config --cflags --libs streamcap)
# (and PREFIX/lib on the run-time search path: ldconfig, LD_LIBRARY_PATH or -Wl,-rpath).
# docs/c-api.md has the details.
set -euo pipefail
usage() {
  echo "usage: $0 PREFIX [--from DIR]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
prefix=$1
shift
from=""
if [ $# -gt 0 ]; then
  [ "$1" = "--from" ] && [ $# -eq 2 ] || usage
  from=$2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$from" ]; then
  (cd "$root" && cargo build --release -p streamcap-c)
  from="${CARGO_TARGET_DIR:-$root/target}/release"
fi
for f in libstreamcap.so libstreamcap.a; do
  [ -f "$from/$f" ] || { echo "install-c: $from/$f is missing (build it: cargo build -p streamcap-c)" >&2; exit 1; }
done
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)
# What a program linked with the static library also needs (as in build.rs).
libs_private=$(sed -n 's/^const LIBS_PRIVATE: &str = "\(.*\)";/\1/p' "$root/crates/streamcap-c/build.rs")
install -d "$prefix/include" "$prefix/lib/pkgconfig"
install -m 644 "$root/crates/streamcap-c/include/streamcap.h" "$prefix/include/streamcap.h"
install -m 755 "$from/libstreamcap.so" "$prefix/lib/libstreamcap.so"
install -m 644 "$from/libstreamcap.a" "$prefix/lib/libstreamcap.a"
cat > "$prefix/lib/pkgconfig/streamcap.pc" <<EOF
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: streamcap
Description: Stream-oriented network capture (the Scap API in C)
Version: $version
Libs: -L\${libdir} -lstreamcap
Libs.private: $libs_private
Cflags: -I\${includedir}
EOF
echo "install-c: installed streamcap $version under $prefix"
