"""streamcap: flow records and reassembled TCP/UDP streams of capture files.

The streamcap engine (Rust) reads a pcap or pcapng file, tracks every
connection, reassembles TCP and UDP streams and hands them over in three
ways:

- :func:`flows` (and :func:`flows_df`): one record per connection, the
  records that ``streamcap flows`` prints as JSON, as dicts (or a pandas
  DataFrame);
- :class:`Capture`: callbacks ``on_create``, ``on_data``, ``on_close`` and
  ``on_flow_end`` on each stream, the chunk bytes as a ``memoryview``
  without a copy;
- :func:`streams`: an iterator over finished streams with their bytes.

The engine runs on threads of its own with the GIL released; callbacks take
the GIL for their own duration. Ctrl-C stops a run (``KeyboardInterrupt``).
See docs/python.md in the repository for the whole story.

Options shared by all three (keyword-only; ``None`` means the default):

``filter``
    a tcpdump-syntax filter, e.g. ``"tcp port 80"`` (needs libpcap at run time).
``cutoff``, ``cutoff_orig``, ``cutoff_resp``
    bytes delivered per stream: an int, a size such as ``"10KiB"``, ``"1MB"``
    or ``"unlimited"``. Default: 0 for :func:`flows` without ``digest``
    (statistics only, as ``streamcap flows``), unlimited otherwise.
``mode``
    ``"fast"`` (default; picks up connections mid-stream) or ``"strict"``.
``policy``
    overlap policy for conflicting retransmissions: ``"first"``, ``"last"``,
    ``"linux"``, ``"bsd"`` (default), ``"windows"``, ``"solaris"``.
``timeout``
    inactivity timeout of every flow, seconds of capture time (default TCP
    300, UDP and others 60).
``workers``
    worker threads, each owning a shard of the flows (default 1).
``memory``
    memory for stream data (default 512 MiB), split between the workers.
``chunk_size``
    bytes per data event (default 16 KiB).
``delivery``
    ``"chunks"`` (default) or ``"segments"``.
``count``
    stop after this many packets that pass the filter.
``priority``
    default stream priority for overload control, 0 to 255.
``community_id_seed``
    seed of the records' Community ID, 0 to 65535.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Optional, Union

from . import _native
from ._native import ChunkBuffer, InputError, Stream, StreamData, StreamIterator

__all__ = [
    "Capture",
    "ChunkBuffer",
    "InputError",
    "Stream",
    "StreamData",
    "StreamIterator",
    "flows",
    "flows_df",
    "streams",
    "__version__",
]

__version__: str = _native.__version__

#: A byte size: an int, a text such as "10KiB", or "unlimited" (cutoffs only).
Size = Union[int, str]
PathLike = Union[str, "os.PathLike[str]"]


def _common(
    filter: Optional[str],
    cutoff: Optional[Size],
    cutoff_orig: Optional[Size],
    cutoff_resp: Optional[Size],
    mode: Optional[str],
    policy: Optional[str],
    timeout: Optional[float],
    workers: Optional[int],
    memory: Optional[Size],
    chunk_size: Optional[Size],
    delivery: Optional[str],
    count: Optional[int],
    priority: Optional[int],
    community_id_seed: Optional[int],
) -> dict[str, Any]:
    return {
        "filter": filter,
        "cutoff": cutoff,
        "cutoff_orig": cutoff_orig,
        "cutoff_resp": cutoff_resp,
        "mode": mode,
        "policy": policy,
        "timeout": timeout,
        "workers": workers,
        "memory": memory,
        "chunk_size": chunk_size,
        "delivery": delivery,
        "count": count,
        "priority": priority,
        "community_id_seed": community_id_seed,
    }


def flows(
    path: PathLike,
    *,
    filter: Optional[str] = None,
    digest: bool = False,
    cutoff: Optional[Size] = None,
    cutoff_orig: Optional[Size] = None,
    cutoff_resp: Optional[Size] = None,
    mode: Optional[str] = None,
    policy: Optional[str] = None,
    timeout: Optional[float] = None,
    workers: Optional[int] = None,
    memory: Optional[Size] = None,
    chunk_size: Optional[Size] = None,
    delivery: Optional[str] = None,
    count: Optional[int] = None,
    priority: Optional[int] = None,
    community_id_seed: Optional[int] = None,
) -> list[dict[str, Any]]:
    """Flow records of a capture file: one dict per connection.

    Each record is what ``streamcap flows -r PATH`` prints as one JSON line,
    as ``json.loads`` would give it: the keys ``ts``, ``last_ts``, ``proto``,
    ``src_ip``, ``src_port``, ``dst_ip``, ``dst_port``, ``vlan``, ``orig``
    and ``resp`` (dicts: ``pkts``, ``bytes``, ``stream_bytes``,
    ``captured``, ``discarded``, ``dropped``, ``missing``, ``sha256``,
    ``priority``), ``end``, ``errors`` (list), ``tunnel`` (only for a
    connection that came through a tunnel) and ``community_id``
    (docs/json-format.md). With one worker the records come in the
    command line's order; with several, each worker's records in order but
    the workers' interleaved.

    ``digest=True`` adds each direction's SHA-256 (``sha256``) and makes the
    default cutoff unlimited, as ``--digest``. The other options are those
    of the module (see ``help(streamcap)``).

    Raises ``FileNotFoundError``/``OSError`` when the file cannot be read,
    :class:`InputError` when it is not a capture or breaks off part-way (the
    records of what came before are in the exception's ``records``),
    ``ValueError`` for a bad option or filter, ``KeyboardInterrupt`` on
    Ctrl-C (the run is stopped first).
    """
    opts = _common(
        filter, cutoff, cutoff_orig, cutoff_resp, mode, policy, timeout, workers,
        memory, chunk_size, delivery, count, priority, community_id_seed,
    )
    opts["digest"] = digest
    return _native.flows(os.fspath(path), opts)


#: The columns of :func:`flows_df`, in order: the command line's CSV header.
FLOW_COLUMNS: tuple[str, ...] = (
    "ts", "last_ts", "proto", "src_ip", "src_port", "dst_ip", "dst_port", "vlan",
    "orig_pkts", "orig_bytes", "orig_stream_bytes", "orig_captured",
    "orig_discarded", "orig_dropped", "orig_missing", "orig_sha256", "orig_priority",
    "resp_pkts", "resp_bytes", "resp_stream_bytes", "resp_captured",
    "resp_discarded", "resp_dropped", "resp_missing", "resp_sha256", "resp_priority",
    "end", "errors", "tunnel", "community_id",
)

_DIR_FIELDS = (
    "pkts", "bytes", "stream_bytes", "captured", "discarded", "dropped",
    "missing", "sha256", "priority",
)


def flatten(record: dict[str, Any]) -> dict[str, Any]:
    """A record with ``orig`` and ``resp`` flattened into ``orig_pkts``,
    ``orig_bytes``, … ``resp_priority`` (the CSV's columns: ``FLOW_COLUMNS``).
    ``errors`` stays a list; ``tunnel`` is None outside tunnels."""
    row = {k: record.get(k) for k in FLOW_COLUMNS[:8]}
    for side in ("orig", "resp"):
        d = record[side]
        for f in _DIR_FIELDS:
            row[f"{side}_{f}"] = d[f]
    row["end"] = record["end"]
    row["errors"] = record["errors"]
    row["tunnel"] = record.get("tunnel")
    row["community_id"] = record["community_id"]
    if "app" in record:
        row["app"] = record["app"]
    return row


def flows_df(path: PathLike, **options: Any) -> "pandas.DataFrame":  # type: ignore[name-defined] # noqa: F821
    """The flow records of :func:`flows` as a pandas DataFrame.

    One row per connection; the columns are the command line's CSV columns
    (``FLOW_COLUMNS``): ``orig`` and ``resp`` flattened with a ``_``
    (``orig_bytes``, ``resp_stream_bytes``, …), ``errors`` a list per row,
    ``tunnel`` None outside tunnels, ``ts``/``last_ts`` float seconds
    (``pandas.to_datetime(df.ts, unit="s")`` for timestamps). Takes the
    options of :func:`flows`.

    Raises ``ImportError`` when pandas is not installed.
    """
    try:
        import pandas
    except ImportError as e:
        raise ImportError(
            "streamcap.flows_df() needs pandas, which is not installed: "
            "pip install pandas (or use streamcap.flows(), which returns dicts)"
        ) from e
    rows = [flatten(r) for r in flows(path, **options)]
    return pandas.DataFrame(rows, columns=list(FLOW_COLUMNS))


StreamCallback = Callable[[Stream], Any]
DataCallback = Callable[[Stream, memoryview], Any]
FlowCallback = Callable[[dict[str, Any]], Any]


class Capture:
    """Callbacks on the streams of a capture file (Scap's model).

    Give the callbacks as keyword arguments or define them as methods of a
    subclass, then call :meth:`run`:

    ``on_create(stream)``
        a stream (one direction of a connection) saw its first packet;
    ``on_data(stream, data)``
        new bytes of the stream, ``data`` a read-only ``memoryview`` of the
        chunk, lent without a copy and **valid only during the call**: it
        is released when the callback returns (using it later raises
        ``ValueError``). Keep bytes with ``bytes(data)``. A slice of it or a
        NumPy array made from it that outlives the call keeps the chunk's
        bytes alive (safe, but the engine cannot reuse the buffer).
        ``stream.offset`` is the stream offset of ``data[0]``;
        ``data[stream.new_from:]`` are the bytes never delivered before
        (all of them unless ``stream.keep_chunk()`` was called);
    ``on_close(stream)``
        the stream ended; its counters are final;
    ``on_flow_end(record)``
        a connection ended: its flow record (the dict of :func:`flows`, with
        ``sha256`` None).

    The same :class:`Stream` object comes to every callback of a stream
    (``stream.state`` holds whatever you put there). Inside a callback it
    steers the stream: ``discard()``, ``set_cutoff(n)``,
    ``set_priority(p)``, ``set_chunk_size(n)``, ``keep_chunk()``.

    An exception raised by a callback stops the capture (open streams are
    terminated without further callbacks) and is raised by :meth:`run`
    with its traceback.

    The options are those of the module (``help(streamcap)``); the default
    cutoff is unlimited.
    """

    on_create: Optional[StreamCallback] = None
    on_data: Optional[DataCallback] = None
    on_close: Optional[StreamCallback] = None
    on_flow_end: Optional[FlowCallback] = None

    def __init__(
        self,
        path: PathLike,
        *,
        on_create: Optional[StreamCallback] = None,
        on_data: Optional[DataCallback] = None,
        on_close: Optional[StreamCallback] = None,
        on_flow_end: Optional[FlowCallback] = None,
        filter: Optional[str] = None,
        cutoff: Optional[Size] = None,
        cutoff_orig: Optional[Size] = None,
        cutoff_resp: Optional[Size] = None,
        mode: Optional[str] = None,
        policy: Optional[str] = None,
        timeout: Optional[float] = None,
        workers: Optional[int] = None,
        memory: Optional[Size] = None,
        chunk_size: Optional[Size] = None,
        delivery: Optional[str] = None,
        count: Optional[int] = None,
        priority: Optional[int] = None,
        community_id_seed: Optional[int] = None,
    ) -> None:
        self.path = os.fspath(path)
        self.options = _common(
            filter, cutoff, cutoff_orig, cutoff_resp, mode, policy, timeout,
            workers, memory, chunk_size, delivery, count, priority,
            community_id_seed,
        )
        # Given callbacks replace the class's (a subclass's methods stay
        # when none is given).
        if on_create is not None:
            self.on_create = on_create
        if on_data is not None:
            self.on_data = on_data
        if on_close is not None:
            self.on_close = on_close
        if on_flow_end is not None:
            self.on_flow_end = on_flow_end

    def run(self) -> dict[str, Any]:
        """Runs the capture, calling the callbacks; returns the run's
        statistics (packets, flows, streams, stream_bytes, captured,
        discarded, dropped, missing, chunks, memory_peak, stopped, …).

        Raises what a callback raised (the capture stops at once), the input
        errors of :func:`flows`, or ``KeyboardInterrupt`` on Ctrl-C.
        """
        return _native.run_capture(
            self.path,
            self.options,
            self.on_create,
            self.on_data,
            self.on_close,
            self.on_flow_end,
        )


def streams(
    path: PathLike,
    *,
    max_buffered: Optional[Size] = None,
    queue: Optional[int] = None,
    filter: Optional[str] = None,
    cutoff: Optional[Size] = None,
    cutoff_orig: Optional[Size] = None,
    cutoff_resp: Optional[Size] = None,
    mode: Optional[str] = None,
    policy: Optional[str] = None,
    timeout: Optional[float] = None,
    workers: Optional[int] = None,
    memory: Optional[Size] = None,
    chunk_size: Optional[Size] = None,
    delivery: Optional[str] = None,
    count: Optional[int] = None,
    priority: Optional[int] = None,
    community_id_seed: Optional[int] = None,
) -> StreamIterator:
    """The finished streams of a capture file, as they close::

        for s in streamcap.streams("trace.pcap", filter="tcp"):
            print(s.key, s.direction, len(s.data), s.complete)

    Each item is a :class:`StreamData`: one direction of one connection,
    with ``key`` (src_ip, src_port, dst_ip, dst_port, proto_name),
    ``direction``, ``data`` (the reassembled bytes, gaps skipped),
    ``complete``, ``counters``, ``errors``, ``start``, ``end``.

    Memory is bounded: the bytes of open and queued streams together are
    held up to ``max_buffered`` (default 256 MiB); past it, the streams that
    receive more bytes are discarded from there on (their ``data`` is a
    prefix, ``complete`` False, ``counters["discarded"]`` says how much).
    At most ``queue`` finished streams (default 64) wait for the loop; the
    engine waits beyond. ``cutoff`` (default unlimited) bounds each stream.
    The capture runs on its own thread; ``close()`` (or dropping the
    iterator) stops it. The other options are those of the module.
    """
    opts = _common(
        filter, cutoff, cutoff_orig, cutoff_resp, mode, policy, timeout, workers,
        memory, chunk_size, delivery, count, priority, community_id_seed,
    )
    opts["max_buffered"] = max_buffered
    opts["queue"] = queue
    return _native.streams(os.fspath(path), opts)

