#!/usr/bin/env python3
"""Reassembling the TCP streams of a capture: streamcap vs scapy vs dpkt.

    python bench/reassemble.py [CAPTURE] [--repeat N] [--skip scapy,dpkt,...]

Each contender reads CAPTURE and produces the bytes of every TCP stream (one
direction of one connection); the script reports, for each, the wall time
(best of --repeat runs), the capture's megabytes per second, how many
streams had bytes, and their total bytes and SHA-256 of the sorted stream
digests (equal digests: the same bytes, stream for stream):

- ``streamcap.streams``: the iterator of finished streams (bytes per stream);
- ``streamcap.Capture``: an ``on_data`` callback that appends each chunk
  (a memoryview) to the stream's list, joined at ``on_close``;
- ``scapy``: ``rdpcap(...).sessions()``, the payloads of each session's
  packets concatenated in capture order (what scapy offers; retransmissions
  and reordering are not handled);
- ``dpkt``: ``dpkt.pcap.Reader`` and a simple reassembler written here:
  per direction, data segments collected, ordered by sequence number
  (relative to the first seen, modulo 2^32) and joined, bytes already
  covered skipped.

Needs ``pip install scapy dpkt`` (``pip install streamcap[bench]``). The
default capture is the corpus's mixed-large/zeek__echo-connections.pcap
(6.8 MB, 82,582 packets, 500 TCP connections) under $STREAMCAP_CORPUS.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import socket
import sys
import time
from pathlib import Path

import streamcap

DEFAULT = "mixed-large/zeek__echo-connections.pcap"


def summary(streams: dict) -> tuple[int, int, str]:
    """(streams with bytes, total bytes, digest of the sorted per-stream digests)."""
    digests = sorted(hashlib.sha256(b).hexdigest() for b in streams.values() if b)
    return len(digests), sum(len(b) for b in streams.values()), hashlib.sha256(
        "".join(digests).encode()).hexdigest()[:16]


def with_streamcap_streams(path: str) -> dict:
    out = {}
    for s in streamcap.streams(path, filter=None):
        if s.proto == 6:
            out[(s.conn_id, s.direction)] = s.data
    return out


def with_streamcap_callbacks(path: str) -> dict:
    out = {}

    def on_data(s, data):
        if s.proto == 6:
            if s.state is None:
                s.state = []
            s.state.append(bytes(data))

    def on_close(s):
        if s.state:
            out[(s.conn_id, s.direction)] = b"".join(s.state)

    streamcap.Capture(path, on_data=on_data, on_close=on_close).run()
    return out


def with_scapy(path: str) -> dict:
    from scapy.all import TCP, rdpcap  # noqa: PLC0415

    out = {}
    for key, pkts in rdpcap(path).sessions().items():
        if not key.startswith("TCP"):
            continue
        data = b"".join(bytes(p[TCP].payload) for p in pkts if TCP in p)
        if data:
            out[key] = data
    return out


def with_dpkt(path: str) -> dict:
    import dpkt  # noqa: PLC0415

    segments: dict = {}
    with open(path, "rb") as f:
        try:
            reader = dpkt.pcap.Reader(f)
        except ValueError:
            f.seek(0)
            reader = dpkt.pcapng.Reader(f)
        link = reader.datalink()
        for _ts, buf in reader:
            try:
                if link == dpkt.pcap.DLT_EN10MB:
                    ip = dpkt.ethernet.Ethernet(buf).data
                elif link == dpkt.pcap.DLT_LINUX_SLL:
                    ip = dpkt.sll.SLL(buf).data
                elif link in (dpkt.pcap.DLT_RAW, 101):
                    ip = dpkt.ip.IP(buf) if buf[0] >> 4 == 4 else dpkt.ip6.IP6(buf)
                else:
                    continue
            except (dpkt.UnpackError, IndexError):
                continue
            if isinstance(ip, dpkt.ip.IP):
                fam = socket.AF_INET
            elif isinstance(ip, dpkt.ip6.IP6):
                fam = socket.AF_INET6
            else:
                continue
            tcp = ip.data
            if not isinstance(tcp, dpkt.tcp.TCP):
                continue
            key = (socket.inet_ntop(fam, ip.src), tcp.sport, socket.inet_ntop(fam, ip.dst), tcp.dport)
            seg = segments.setdefault(key, [None, []])
            if tcp.flags & dpkt.tcp.TH_SYN:
                seg[0] = (tcp.seq + 1) & 0xFFFFFFFF
            if tcp.data:
                seg[1].append((tcp.seq, bytes(tcp.data)))
    out = {}
    for key, (isn, segs) in segments.items():
        if not segs:
            continue
        base = isn if isn is not None else segs[0][0]
        ordered = sorted(((s - base) & 0xFFFFFFFF, d) for s, d in segs)
        parts, nxt = [], ordered[0][0]
        for off, d in ordered:
            if off + len(d) <= nxt:
                continue  # a retransmission of bytes already taken
            if off < nxt:
                d = d[nxt - off:]
                off = nxt
            parts.append(d)  # a hole is skipped, as streamcap skips gaps
            nxt = off + len(d)
        out[key] = b"".join(parts)
    return out


CONTENDERS = {
    "streamcap.streams": with_streamcap_streams,
    "streamcap.Capture": with_streamcap_callbacks,
    "scapy": with_scapy,
    "dpkt": with_dpkt,
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    corpus = os.environ.get("STREAMCAP_CORPUS", str(Path(__file__).resolve().parents[4] / "shared" / "corpus"))
    ap.add_argument("capture", nargs="?", default=os.path.join(corpus, DEFAULT))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip", default="", help="comma-separated contenders to skip")
    a = ap.parse_args()
    size = os.path.getsize(a.capture)
    print(f"{a.capture}: {size / 1e6:.1f} MB")
    print(f"{'contender':<20} {'seconds':>8} {'MB/s':>8} {'streams':>8} {'bytes':>12}  digest")
    skip = set(filter(None, a.skip.split(",")))
    for name, f in CONTENDERS.items():
        if name in skip:
            continue
        try:
            best, result = None, None
            for _ in range(a.repeat):
                t = time.perf_counter()
                result = f(a.capture)
                dt = time.perf_counter() - t
                best = dt if best is None else min(best, dt)
        except ImportError as e:
            print(f"{name:<20} skipped: {e} (pip install scapy dpkt)")
            continue
        n, total, digest = summary(result)
        print(f"{name:<20} {best:8.3f} {size / best / 1e6:8.1f} {n:8d} {total:12d}  {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
