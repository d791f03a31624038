"""streams(): every stream with its bytes, bounded memory, early stop."""

from __future__ import annotations

import hashlib

import pytest

import streamcap
from conftest import SAMPLE, cli_records

EMPTY = hashlib.sha256().hexdigest()


def test_streams_carry_every_byte(cli):
    recs, _ = cli_records(cli, SAMPLE, "--digest")
    want = sorted(d for r in recs for d in (r["orig"]["sha256"], r["resp"]["sha256"]) if d != EMPTY)
    it = streamcap.streams(SAMPLE)
    got = []
    for s in it:
        assert isinstance(s.data, bytes) and len(s) == len(s.data)
        assert s.counters["captured"] == len(s.data)
        assert s.complete == (s.counters["missing"] == 0)
        if s.data:
            got.append(hashlib.sha256(s.data).hexdigest())
    assert sorted(got) == want
    assert it.stats["captured"] == sum(r["orig"]["captured"] + r["resp"]["captured"] for r in recs)


def test_streams_options_and_keys():
    all_ = list(streamcap.streams(SAMPLE, cutoff=100))
    assert all_ and all(len(s.data) <= 100 for s in all_)
    s = all_[0]
    assert s.key == (s.src_ip, s.src_port, s.dst_ip, s.dst_port, s.proto_name)
    assert s.direction in ("orig", "resp")
    assert repr(s).startswith("<StreamData ")


def test_max_buffered_bounds_the_bytes_held():
    full = {(s.conn_id, s.direction): len(s.data) for s in streamcap.streams(SAMPLE)}
    small = list(streamcap.streams(SAMPLE, max_buffered=2000, queue=1))
    assert len(small) == len(full)
    cut = [s for s in small if not s.complete and s.counters["discarded"] > 0]
    assert cut, "some streams were cut at the bound"
    for s in small:
        assert len(s.data) <= full[(s.conn_id, s.direction)]


def test_close_stops_early():
    it = streamcap.streams(SAMPLE, queue=1)
    first = next(it)
    assert first.key
    it.close()
    assert list(it) == []
    assert it.stats is not None


def test_breaking_out_of_the_loop_is_fine():
    for n, _ in enumerate(streamcap.streams(SAMPLE, queue=1)):
        if n == 2:
            break
    assert streamcap.flows(SAMPLE)


def test_stream_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        streamcap.streams(tmp_path / "nothing.pcap")
    with pytest.raises(TypeError):
        streamcap.streams(SAMPLE, digest=True)  # type: ignore[call-arg]
