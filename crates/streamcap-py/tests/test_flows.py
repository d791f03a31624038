"""flows() and flows_df(): the records equal the command line's JSON."""

from __future__ import annotations

import sys

import pytest

import streamcap
from conftest import SAMPLE, cli_records, corpus_captures, corpus_root


def _py_records(path, **opts):
    """The records and whether an input error ended the run."""
    try:
        return streamcap.flows(path, **opts), False
    except streamcap.InputError as e:
        return e.records, True


def _key(r):
    return (r["ts"], r["src_ip"], r["src_port"], r["dst_ip"], r["dst_port"], str(r["proto"]))


@pytest.mark.parametrize("opts,args", [
    ({}, []),
    ({"digest": True}, ["--digest"]),
    ({"cutoff": "1KiB"}, ["--cutoff", "1KiB"]),
    ({"digest": True, "cutoff_resp": 100, "chunk_size": 512}, ["--digest", "--cutoff-resp", "100", "--chunk", "512"]),
    ({"mode": "strict", "policy": "first"}, ["--mode", "strict", "--policy", "first"]),
    ({"timeout": 1.5, "count": 200}, ["--timeout", "1.5", "-c", "200"]),
    ({"digest": True, "delivery": "segments", "memory": "1MiB"}, ["--digest", "--delivery", "segments", "--memory", "1MiB"]),
    ({"community_id_seed": 7, "priority": 3}, ["--community-id-seed", "7", "--priority", "3"]),
])
def test_sample_records_equal_the_cli(cli, opts, args):
    want, status = cli_records(cli, SAMPLE, *args)
    assert status == 0
    got = streamcap.flows(SAMPLE, **opts)
    assert len(got) == len(want) > 0
    # Same records, in the same order (one worker).
    assert got == want


def test_filter_equals_the_cli(cli):
    want, status = cli_records(cli, SAMPLE, "--digest", "tcp port 80")
    if status == 2:
        pytest.skip("libpcap is not installed: the command line refuses filters too")
    got = streamcap.flows(SAMPLE, digest=True, filter="tcp port 80")
    assert got == want and 0 < len(got) < len(streamcap.flows(SAMPLE))


def test_workers_give_the_same_records(cli):
    want, _ = cli_records(cli, SAMPLE, "--digest", "--workers", "2")
    got = streamcap.flows(SAMPLE, digest=True, workers=2)
    assert sorted(got, key=_key) == sorted(want, key=_key)
    assert sorted(got, key=_key) == sorted(streamcap.flows(SAMPLE, digest=True), key=_key)


def test_records_have_the_json_types():
    r = streamcap.flows(SAMPLE, digest=True)[0]
    assert isinstance(r["ts"], float) and isinstance(r["orig"], dict)
    assert set(r["orig"]) == {"pkts", "bytes", "stream_bytes", "captured", "discarded",
                              "dropped", "missing", "sha256", "priority"}
    assert list(r)[:10] == ["ts", "last_ts", "proto", "src_ip", "src_port", "dst_ip",
                            "dst_port", "vlan", "orig", "resp"]


CORPUS = corpus_captures()


@pytest.mark.skipif(not CORPUS, reason=f"no corpus at {corpus_root()} (set STREAMCAP_CORPUS)")
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_corpus_records_equal_the_cli(cli, path):
    for opts, args in (({}, []), ({"digest": True}, ["--digest"])):
        want, status = cli_records(cli, path, *args)
        got, broke = _py_records(path, **opts)
        # An input error: the CLI prints the records before it and exits 1;
        # flows() raises InputError with them.
        assert broke == (status == 1), (status, broke)
        assert got == want


def test_input_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        streamcap.flows(tmp_path / "missing.pcap")
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"not a capture at all")
    with pytest.raises(streamcap.InputError, match="not a pcap or pcapng file"):
        streamcap.flows(junk)
    cut = tmp_path / "cut.pcap"
    data = SAMPLE.read_bytes()
    cut.write_bytes(data[: len(data) // 2 + 7])
    with pytest.raises(streamcap.InputError) as e:
        streamcap.flows(cut)
    assert isinstance(e.value, ValueError)
    assert len(e.value.records) > 0


def test_bad_options():
    with pytest.raises(TypeError):
        streamcap.flows(SAMPLE, colour="blue")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="mode"):
        streamcap.flows(SAMPLE, mode="slow")
    with pytest.raises(ValueError, match="policy"):
        streamcap.flows(SAMPLE, policy="random")
    with pytest.raises(ValueError, match="cutoff"):
        streamcap.flows(SAMPLE, cutoff="12 parsecs")
    with pytest.raises(ValueError, match="workers"):
        streamcap.flows(SAMPLE, workers=0)
    with pytest.raises(ValueError, match="chunk"):
        streamcap.flows(SAMPLE, chunk_size=0)
    with pytest.raises(ValueError, match="timeout"):
        streamcap.flows(SAMPLE, timeout=-1)
    with pytest.raises(TypeError):
        streamcap._native.flows(str(SAMPLE), {"colour": 1})


def test_bad_filter():
    try:
        streamcap.flows(SAMPLE, filter="tcp")
    except ValueError as e:
        pytest.skip(f"no libpcap: {e}")
    with pytest.raises(ValueError, match="invalid filter"):
        streamcap.flows(SAMPLE, filter="tcp port eighty")


def test_flows_df():
    pandas = pytest.importorskip("pandas")
    df = streamcap.flows_df(SAMPLE, digest=True)
    recs = streamcap.flows(SAMPLE, digest=True)
    assert isinstance(df, pandas.DataFrame)
    assert list(df.columns) == list(streamcap.FLOW_COLUMNS)
    assert len(df) == len(recs)
    assert df["orig_stream_bytes"].sum() == sum(r["orig"]["stream_bytes"] for r in recs)
    assert df.loc[0, "resp_sha256"] == recs[0]["resp"]["sha256"]


def test_flows_df_without_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        streamcap.flows_df(SAMPLE)
