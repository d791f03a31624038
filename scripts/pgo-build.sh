#!/usr/bin/env bash
# Builds the `streamcap` command with profile-guided optimisation (PGO):
# an instrumented build runs a training set of generated traffic, and the
# final build is optimised with the profile it recorded. Prints the path of
# the optimised binary on stdout (everything else goes to stderr).
#
#   scripts/pgo-build.sh            # -> target/pgo/release/streamcap
#
# Needs rustup's llvm-tools component (for llvm-profdata); installs it when
# rustup is there. Exits non-zero, with the reason, when it cannot build;
# callers (bench/run.sh) then fall back to the plain release build.
#
# The training set is traffic from streamcap-gen only, with seeds that the
# benchmark does not use: a campus trace (large packets), the same with
# 64-byte segments, an impaired campus trace (reordering, duplicates, loss,
# conflicting retransmissions, IPv4 fragments) and each attack profile; each
# through `flows`, `streams` (chunks and segments), `streams --cutoff 10KiB`
# and two workers.
# Environment: CARGO_TARGET_DIR (cargo's), PGO_WORK (scratch for the training
# traces and profiles; default a fresh directory under /tmp).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
say() { echo "pgo-build: $*" >&2; }

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
SYSROOT="$(rustc --print sysroot)"
HOST="$(rustc -vV | sed -n 's/^host: //p')"
PROFDATA="$SYSROOT/lib/rustlib/$HOST/bin/llvm-profdata"
if [ ! -x "$PROFDATA" ] && command -v rustup >/dev/null 2>&1; then
  say "installing rustup component llvm-tools (for llvm-profdata)"
  rustup component add llvm-tools >&2 || true
fi
if [ ! -x "$PROFDATA" ]; then
  say "no llvm-profdata at $PROFDATA (rustup component llvm-tools): cannot build with PGO"
  exit 1
fi

WORK="${PGO_WORK:-$(mktemp -d /tmp/streamcap-pgo.XXXXXX)}"
PROFILES="$WORK/profiles"
rm -rf "$PROFILES"
mkdir -p "$PROFILES"

# 1. The generator (plain build) and the instrumented streamcap.
cargo build --release -q -p streamcap-gen
GEN="$TARGET/release/streamcap-gen"
say "instrumented build"
RUSTFLAGS="-Cprofile-generate=$PROFILES" \
  cargo build --release -q -p streamcap-cli --target-dir "$TARGET/pgo-instrumented"
TRAIN_BIN="$TARGET/pgo-instrumented/release/streamcap"

# 2. Training traces (seeds the benchmark does not use).
say "training traces in $WORK"
"$GEN" campus -o "$WORK/campus.pcap" --packets 300000 --seed 101 >&2
"$GEN" campus -o "$WORK/small.pcap" --packets 300000 --seed 102 --small-packets >&2
"$GEN" campus -o "$WORK/impaired.pcap" --packets 200000 --seed 103 \
  --reorder 0.02 --dup 0.01 --loss 0.01 --conflict 0.005 --fragment 0.02 >&2
TRACES=("$WORK/campus.pcap" "$WORK/small.pcap" "$WORK/impaired.pcap")
for p in $("$GEN" attack --profile list 2>&1 | sed -n 's/^\([a-z-]*\) .*/\1/p'); do
  "$GEN" attack --profile "$p" -o "$WORK/attack-$p.pcap" --packets 50000 --seed 104 >&2
  TRACES+=("$WORK/attack-$p.pcap")
done

# 3. Training runs.
for t in "${TRACES[@]}"; do
  for mode in "flows" "streams" "streams --delivery segments" "streams --cutoff 10KiB" \
    "flows --workers 2" "streams --workers 2"; do
    # $mode is a word list on purpose.
    # shellcheck disable=SC2086
    "$TRAIN_BIN" $mode -q -r "$t" -o /dev/null >/dev/null 2>&1 ||
      { say "training run failed: streamcap $mode -r $t"; exit 1; }
  done
done
"$PROFDATA" merge -o "$WORK/streamcap.profdata" "$PROFILES"/*.profraw

# 4. The optimised build.
say "optimised build"
RUSTFLAGS="-Cprofile-use=$WORK/streamcap.profdata" \
  cargo build --release -q -p streamcap-cli --target-dir "$TARGET/pgo"
[ -z "${PGO_WORK:-}" ] && rm -rf "$WORK"
echo "$TARGET/pgo/release/streamcap"
