"""Shared fixtures of the streamcap Python tests.

The command line they compare with is ``$STREAMCAP_BIN``, else
``target/release/streamcap`` or ``target/debug/streamcap`` of the
repository (scripts/test-python.sh builds it). The corpus is
``$STREAMCAP_CORPUS``, else ``shared/corpus`` beside the repository; tests
that need it skip with a message without it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "samples" / "sample.pcap"


def _binary(name: str, env: str) -> Path | None:
    given = os.environ.get(env)
    if given:
        return Path(given)
    for profile in ("release", "debug"):
        p = REPO / "target" / profile / name
        if p.is_file():
            return p
    return None


def corpus_root() -> Path:
    given = os.environ.get("STREAMCAP_CORPUS")
    return Path(given) if given else REPO.parent / "shared" / "corpus"


def corpus_captures() -> list[Path]:
    root = corpus_root()
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.suffix in (".pcap", ".pcapng"))


@pytest.fixture(scope="session")
def cli() -> Path:
    b = _binary("streamcap", "STREAMCAP_BIN")
    if b is None or not b.is_file():
        pytest.skip("no streamcap command line to compare with: build it "
                    "(cargo build -p streamcap-cli) or set STREAMCAP_BIN")
    return b


@pytest.fixture(scope="session")
def gen() -> Path:
    b = _binary("streamcap-gen", "STREAMCAP_GEN")
    if b is None or not b.is_file():
        pytest.skip("no streamcap-gen: build it (cargo build --release -p "
                    "streamcap-gen) or set STREAMCAP_GEN")
    return b


def cli_records(cli: Path, path: Path, *args: str) -> tuple[list[dict], int]:
    """The records `streamcap flows -q -r PATH ARGS` prints, parsed, and its exit status."""
    p = subprocess.run([str(cli), "flows", "-q", "-r", str(path), *args],
                       capture_output=True, text=True)
    return [json.loads(line) for line in p.stdout.splitlines()], p.returncode


def pytest_collection_modifyitems(config, items):
    if os.environ.get("STREAMCAP_SLOW") == "1" or "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="slow (1 GB capture): run with STREAMCAP_SLOW=1 or -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
