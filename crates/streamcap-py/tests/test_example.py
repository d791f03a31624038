"""The worked example (examples/top_talkers.py) against the command line's
HTTP analyser (`streamcap http`)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLE, corpus_root

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "top_talkers.py"


def load_example():
    spec = importlib.util.spec_from_file_location("top_talkers", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["top_talkers"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def cli_body_sizes(cli, path):
    p = subprocess.run([str(cli), "http", "-q", "-r", str(path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return sorted((json.loads(line)["response_body_len"] for line in p.stdout.splitlines()),
                  reverse=True)


@pytest.mark.parametrize("path", [SAMPLE, corpus_root() / "mixed-large" / "ndpi__1kxun.pcap"],
                         ids=["sample", "1kxun"])
def test_largest_http_objects_match_the_cli(cli, path):
    if not path.exists():
        pytest.skip(f"{path} is not there (corpus)")
    mod = load_example()
    objects = mod.http_objects(str(path))
    want = cli_body_sizes(cli, path)
    assert len(objects) > 10
    assert [o[0] for o in objects[:10]] == want[:10]


def test_top_talkers_add_up():
    mod = load_example()
    import streamcap

    rows = mod.top_talkers(str(SAMPLE))
    total = sum(r["orig"]["bytes"] + r["resp"]["bytes"] for r in streamcap.flows(SAMPLE))
    assert sum(s for _, s, _, _ in rows) == total
    assert sum(r for _, _, r, _ in rows) == total
    assert rows[0][1] + rows[0][2] >= rows[-1][1] + rows[-1][2]
