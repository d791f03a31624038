#!/usr/bin/env bash
# Builds the Python package (crates/streamcap-py) and runs its pytest suite.
#
#   scripts/test-python.sh [PYTEST ARGS...]
#
# Creates a virtual environment ($STREAMCAP_VENV, default target/py-venv),
# installs maturin, pytest and pandas into it, builds the release wheel
# (target/wheels) and installs it, builds the command line the tests compare
# with (debug; release with STREAMCAP_SLOW=1, for the 1 GB speed check), and
# runs pytest on crates/streamcap-py/tests. The corpus tests read
# $STREAMCAP_CORPUS (default: shared/corpus beside the repository) and skip
# without it. STREAMCAP_SLOW=1 also runs the 1 GB speed check (see
# crates/streamcap-py/tests/test_speed.py).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
py=${PYTHON:-python3}
venv=${STREAMCAP_VENV:-$root/target/py-venv}

if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "test-python: $("$py" --version 2>&1) is too old: the package needs CPython 3.11 or later" >&2
  exit 1
fi
if [ ! -x "$venv/bin/python" ]; then
  if ! "$py" -m venv "$venv" 2>/dev/null; then
    # Debian's python3 needs python3-venv for this.
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
      apt-get install -y -qq python3-venv >/dev/null || (apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null)
      rm -rf "$venv"
      "$py" -m venv "$venv"
    else
      echo "test-python: cannot create a virtual environment (install python3-venv)" >&2
      exit 1
    fi
  fi
fi
vpy="$venv/bin/python"
"$vpy" -m pip install -q --disable-pip-version-check maturin pytest pandas

profile=debug
cargo_profile=()
if [ "${STREAMCAP_SLOW:-}" = 1 ]; then
  profile=release
  cargo_profile=(--release)
fi
cargo build -q "${cargo_profile[@]}" -p streamcap-cli -p streamcap-gen

rm -rf "$root/target/wheels/streamcap-"*.whl
"$venv/bin/maturin" build -q --release -m crates/streamcap-py/Cargo.toml -o "$root/target/wheels"
"$vpy" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$root/target/wheels/"streamcap-*.whl

export STREAMCAP_BIN="$root/target/$profile/streamcap"
export STREAMCAP_GEN="$root/target/$profile/streamcap-gen"
cd crates/streamcap-py
exec "$vpy" -m pytest -q -rs tests "$@"
