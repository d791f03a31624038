"""Capture callbacks: every byte, the memoryview's lifetime, steering,
exceptions, the GIL."""

from __future__ import annotations

import hashlib
import threading
import time
import traceback

import pytest

import streamcap
from conftest import SAMPLE, cli_records, corpus_captures

EMPTY = hashlib.sha256().hexdigest()


def _proto(p):
    return p if isinstance(p, str) else str(p)


def cli_digests(cli, path):
    recs, _ = cli_records(cli, path, "--digest")
    return sorted(((r["src_ip"], r["src_port"], r["dst_ip"], r["dst_port"], _proto(r["proto"])),
                   r["orig"]["sha256"], r["resp"]["sha256"]) for r in recs)


def callback_digests(path, **opts):
    """SHA-256 of each direction from on_data, per connection."""
    conns: dict[int, dict] = {}

    def on_data(s, data):
        assert isinstance(data, memoryview) and data.readonly
        if s.state is None:
            s.state = hashlib.sha256()
        s.state.update(data[s.new_from:])

    def on_close(s):
        c = conns.setdefault(s.conn_id, {})
        c[s.direction] = s.state.hexdigest() if s.state else EMPTY
        if s.direction == "orig":
            c["key"] = s.key

    stats = streamcap.Capture(path, on_data=on_data, on_close=on_close, **opts).run()
    got = sorted((c["key"], c.get("orig", EMPTY), c.get("resp", EMPTY))
                 for c in conns.values())
    return got, stats


@pytest.mark.parametrize("opts", [
    {},
    {"chunk_size": 100},
    {"delivery": "segments"},
    {"chunk_size": 7, "delivery": "segments"},
])
def test_callbacks_see_every_byte(cli, opts):
    got, stats = callback_digests(SAMPLE, **opts)
    assert got == cli_digests(cli, SAMPLE)
    assert stats["captured"] > 0 and stats["chunks"] > 0 and not stats["stopped"]


@pytest.mark.parametrize("path", [p for p in corpus_captures() if p.stat().st_size > 1_000_000][:3]
                         or [pytest.param(None, marks=pytest.mark.skip(reason="no corpus"))],
                         ids=lambda p: p.name if p else "none")
def test_callbacks_see_every_byte_of_corpus_captures(cli, path):
    _, status = cli_records(cli, path)
    if status != 0:
        pytest.skip("an input error ends this capture")
    got, _ = callback_digests(path)
    assert got == cli_digests(cli, path)


def test_keep_chunk_gives_the_kept_bytes_again(cli):
    hashes, seen = {}, {"kept": 0}

    def on_data(s, data):
        if s.state is None:
            s.state = [hashlib.sha256(), None]
        h, kept = s.state
        if kept is not None and s.gap is None:
            # The kept bytes come first, then the new ones.
            assert bytes(data[: len(kept)]) == kept
            assert s.new_from == len(kept)
            seen["kept"] += 1
        h.update(data[s.new_from:])
        if s.chunks % 2 == 0:
            s.keep_chunk()
            s.state[1] = bytes(data)
        else:
            s.state[1] = None

    def on_close(s):
        if s.state:
            hashes[(s.conn_id, s.direction)] = s.state[0].hexdigest()

    streamcap.Capture(SAMPLE, on_data=on_data, on_close=on_close, chunk_size=50).run()
    want = {d for _, o, r in cli_digests(cli, SAMPLE) for d in (o, r)} - {EMPTY}
    assert set(hashes.values()) == want
    assert seen["kept"] > 10


def test_the_view_is_released_after_the_callback():
    views, slices, arrays = [], [], []

    def on_data(s, data):
        views.append(data)
        slices.append((data[:8], bytes(data[:8])))

    streamcap.Capture(SAMPLE, on_data=on_data).run()
    assert views
    for v in views:
        with pytest.raises(ValueError, match="released"):
            v[0]
        with pytest.raises(ValueError):
            bytes(v)
    # A slice that outlived its callback keeps its chunk's bytes, unchanged.
    assert all(bytes(sl) == copy for sl, copy in slices)
    # The exporter refuses new views once the bytes went back to the engine.
    del slices[:]
    with pytest.raises(ValueError):
        views[0].obj  # released views give nothing away
    del arrays


def test_a_buffer_held_past_the_callback_stays_valid():
    held = []

    def on_data(s, data):
        # A buffer export of the view itself (as numpy.frombuffer makes).
        held.append((memoryview(data).cast("B"), bytes(data)))

    streamcap.Capture(SAMPLE, on_data=on_data, chunk_size=64).run()
    assert len(held) > 100
    assert all(bytes(m) == b for m, b in held)


def test_steering_from_callbacks(cli):
    def on_create(s):
        if s.dst_port == 80 or s.src_port == 80:
            s.discard()
        else:
            s.set_cutoff(10)
        s.set_priority(3)

    closed = []
    streamcap.Capture(SAMPLE, on_create=on_create, on_close=closed.append).run()
    assert closed
    for s in closed:
        c = s.counters
        assert c["stream_bytes"] == c["captured"] + c["discarded"] + c["dropped"] + c["missing"]
        assert s.priority == 3
        if 80 in (s.src_port, s.dst_port):
            assert c["captured"] == 0 and s.discarded
        else:
            assert c["captured"] <= 10 and s.cutoff == 10
    with pytest.raises(RuntimeError, match="only inside a callback"):
        closed[0].discard()
    with pytest.raises(RuntimeError):
        closed[0].set_cutoff(None)


def test_descriptor_fields():
    seen = {}

    def on_create(s):
        seen.setdefault("create", s)
        assert s.status == "active" and s.end_reason is None and s.reason is None

    def on_data(s, data):
        assert s.reason in ("full", "termination", "gap", "cutoff", "flush_timeout", "packet")
        assert s.offset is not None and s.new_from == 0

    def on_close(s):
        assert s.status == "closed" and s.end_reason in ("fin", "rst", "timeout", "eof", "evicted")
        assert s.offset is None
        assert s.proto_name in ("tcp", "udp", "icmp", "icmp6") or s.proto_name.isdigit()
        assert s.key == (s.src_ip, s.src_port, s.dst_ip, s.dst_port, s.proto_name)
        assert s.start <= s.end
        seen.setdefault("close", s)

    streamcap.Capture(SAMPLE, on_create=on_create, on_data=on_data, on_close=on_close).run()
    assert repr(seen["close"]).startswith("<Stream ")


def test_same_descriptor_in_every_callback():
    objs = {}

    def note(kind):
        def f(self, s, *rest):
            objs.setdefault((s.conn_id, s.direction), set()).add(id(s))
        return f

    class Mine(streamcap.Capture):
        on_create = note("create")
        on_data = note("data")
        on_close = note("close")

    Mine(SAMPLE).run()
    assert objs and all(len(ids) == 1 for ids in objs.values())


def test_on_flow_end_gets_the_records():
    recs = []
    streamcap.Capture(SAMPLE, on_flow_end=recs.append, cutoff=0).run()
    want = streamcap.flows(SAMPLE)
    assert recs == want


def test_an_exception_propagates_and_stops_the_capture():
    calls = {"data": 0, "close": 0}

    def failing_callback(s, data):
        calls["data"] += 1
        if calls["data"] == 3:
            raise KeyError("boom")

    def on_close(s):
        calls["close"] += 1

    cap = streamcap.Capture(SAMPLE, on_data=failing_callback, on_close=on_close)
    with pytest.raises(KeyError, match="boom") as e:
        cap.run()
    names = [f.name for f in traceback.extract_tb(e.value.__traceback__)]
    assert "failing_callback" in names
    # No callback ran after the exception.
    assert calls["data"] == 3
    total = streamcap.Capture(SAMPLE, on_close=on_close)
    calls["close"] = 0
    total.run()
    assert calls["close"] > 0
    # The engine is usable again.
    assert streamcap.flows(SAMPLE)


def test_an_exception_in_on_create_and_on_flow_end():
    def bad(s):
        raise RuntimeError("in on_create")

    with pytest.raises(RuntimeError, match="in on_create"):
        streamcap.Capture(SAMPLE, on_create=bad).run()

    def bad_record(r):
        raise ZeroDivisionError(r["src_ip"])

    with pytest.raises(ZeroDivisionError):
        streamcap.Capture(SAMPLE, on_flow_end=bad_record).run()


@pytest.fixture(scope="module")
def medium_capture(gen, tmp_path_factory):
    """A generated campus capture of 40,000 packets (about 30 MB)."""
    path = tmp_path_factory.mktemp("gen") / "campus40k.pcap"
    import subprocess
    subprocess.run([str(gen), "campus", "--packets", "40000", "-o", str(path)],
                   check=True, capture_output=True)
    return path


def test_the_gil_is_released_while_the_engine_runs(medium_capture):
    path = medium_capture
    done = threading.Event()
    ticks = [0]

    def spin():
        while not done.is_set():
            ticks[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    start = time.perf_counter()
    try:
        streamcap.flows(path, digest=True)
    finally:
        elapsed = time.perf_counter() - start
        done.set()
        t.join()
    # The other thread ran while flows() did: a thread that held the GIL
    # for the whole run would leave it next to no ticks.
    assert ticks[0] > 100_000 * elapsed, (ticks[0], elapsed)


def test_ctrl_c_stops_the_run():
    import signal
    import subprocess
    import sys

    script = f"""
import sys, time, streamcap
calls = []
def slow(s, data):
    calls.append(1)
    if len(calls) == 1:
        print("started", flush=True)
    time.sleep(0.05)
try:
    streamcap.Capture({str(SAMPLE)!r}, on_data=slow, chunk_size=64).run()
except KeyboardInterrupt:
    print("interrupted after", len(calls), flush=True)
    sys.exit(3)
"""
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "started"
    time.sleep(0.3)
    t = time.perf_counter()
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 3, out
    assert time.perf_counter() - t < 5
    # Far fewer than the capture's thousands of chunks.
    assert int(out.split()[-1]) < 200


def test_a_failed_run_leaves_no_thread_and_no_reference():
    import gc
    import os
    import weakref

    def threads():
        return len(os.listdir("/proc/self/task"))

    class Boom:
        def __call__(self, s, data):
            raise OSError("no more")

    before = threads()
    for _ in range(20):
        cb = Boom()
        ref = weakref.ref(cb)
        with pytest.raises(OSError):
            streamcap.Capture(SAMPLE, on_data=cb, on_close=lambda s: None).run()
        del cb
        gc.collect()
        # The engine let go of the callback (and of every descriptor).
        assert ref() is None
    # The engine's threads (workers, read-ahead) are gone.
    assert threads() == before
