#!/usr/bin/env python3
"""Top talkers and the largest HTTP objects of a capture.

    python examples/top_talkers.py CAPTURE [--top N]

Top talkers come from the flow records (``streamcap.flows``): the bytes each
address sent and received (IP-layer bytes, as ``bytes`` in the records).

The HTTP objects come from the streams themselves (``streamcap.Capture``):
an ``on_data`` callback parses HTTP/1.x message heads in both directions of
every TCP connection, on any port, and skips the bodies by their length
(``Content-Length``, chunked encoding, or up to the end of the connection),
so a body is never copied. A head split across chunks is completed with
``stream.keep_chunk()``: the next call gets the kept bytes followed by the
new ones. When both directions of a connection are closed, its requests
and responses are paired in order.
"""

from __future__ import annotations

import argparse
import collections
import sys
from dataclasses import dataclass, field
from typing import Optional

import streamcap

MAX_HEAD = 64 * 1024  # a head longer than this is not HTTP (or not parsed)


@dataclass
class Message:
    """One HTTP message: the first line, a few headers, the body's size."""

    first: str
    headers: dict[str, str]
    body: int = 0
    complete: bool = False


@dataclass
class Parser:
    """HTTP/1.x messages of one direction, parsed as the bytes come."""

    is_response: bool
    messages: list[Message] = field(default_factory=list)
    next_at: int = 0  # stream offset where parsing goes on
    mode: str = "head"  # head, body, chunk-size, chunk-data, chunk-end, trailer, rest, lost
    left: int = 0  # bytes left in the body or the chunk

    def feed(self, stream: streamcap.Stream, data: memoryview) -> None:
        base = stream.offset or 0
        if stream.gap is not None and self.mode != "lost":
            # Bytes are missing before these. Inside a body of known length
            # they are counted and skipped (as Zeek counts them); anywhere
            # else the messages cannot be followed any more.
            _, missing = stream.gap
            if self.mode == "rest" or (self.mode in ("body", "chunk-data") and missing < self.left):
                self.messages[-1].body += missing
                if self.mode != "rest":
                    self.left -= missing
                self.next_at = base
            else:
                self.mode = "lost"
        if self.mode == "lost":
            return
        i = self.next_at - base
        n = len(data)
        while i < n:
            if self.mode == "head":
                end = bytes(data[i:]).find(b"\r\n\r\n")
                if end < 0:
                    if n - i > MAX_HEAD:
                        self.mode = "lost"
                        return
                    stream.keep_chunk()  # the rest of the head comes next
                    break
                self._head(bytes(data[i:i + end]).decode("latin-1"))
                i += end + 4
            elif self.mode in ("body", "chunk-data"):
                take = min(self.left, n - i)
                self.messages[-1].body += take
                self.left -= take
                i += take
                if self.left == 0:
                    if self.mode == "body":
                        self._done()
                    else:
                        self.mode = "chunk-end"
            elif self.mode == "rest":  # a body delimited by the connection's end
                self.messages[-1].body += n - i
                i = n
            else:  # chunk-size, chunk-end, trailer: lines
                eol = bytes(data[i:i + 1024]).find(b"\r\n")
                if eol < 0:
                    if n - i > 1024:
                        self.mode = "lost"
                        return
                    stream.keep_chunk()
                    break
                line = bytes(data[i:i + eol])
                i += eol + 2
                if self.mode == "chunk-size":
                    try:
                        self.left = int(line.split(b";")[0].strip(), 16)
                    except ValueError:
                        self.mode = "lost"
                        return
                    self.mode = "chunk-data" if self.left else "trailer"
                elif self.mode == "chunk-end":
                    self.mode = "chunk-size"
                elif not line:  # the empty line after the trailers
                    self._done()
        self.next_at = base + i

    def _head(self, text: str) -> None:
        first, *lines = text.split("\r\n")
        headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        msg = Message(first, headers)
        self.messages.append(msg)
        status = first.split(" ")[1] if self.is_response and " " in first else ""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self.mode = "chunk-size"
        elif "content-length" in headers:
            self.left = int(headers["content-length"] or 0)
            self.mode = "body"
            if self.left == 0:
                self._done()
        elif self.is_response and not (status.startswith("1") or status in ("204", "304")):
            self.mode = "rest"
        else:
            self._done()

    def _done(self) -> None:
        self.messages[-1].complete = True
        self.mode = "head"

    def finish(self) -> None:
        if self.mode == "rest" and self.messages:
            self.messages[-1].complete = True


def http_objects(path: str) -> list[tuple[int, str, str, str]]:
    """(body bytes, status, content type, URL) of every HTTP response found."""
    open_conns: dict[int, dict] = {}
    objects: list[tuple[int, str, str, str]] = []

    def on_data(s: streamcap.Stream, data: memoryview) -> None:
        if s.proto != 6:
            s.discard()
            return
        if s.state is None:
            # The first bytes tell whether this direction speaks HTTP/1.
            head = bytes(data[:8])
            if head.startswith(b"HTTP/1."):
                s.state = Parser(is_response=True)
            elif head.split(b" ")[0] in (b"GET", b"POST", b"HEAD", b"PUT", b"DELETE",
                                          b"OPTIONS", b"PATCH", b"CONNECT"):
                s.state = Parser(is_response=False)
            else:
                s.state = False  # not HTTP: no more bytes for this direction
                s.discard()
                return
        if s.state:
            s.state.feed(s, data)

    def on_close(s: streamcap.Stream) -> None:
        conn = open_conns.setdefault(s.conn_id, {})
        if isinstance(s.state, Parser):
            s.state.finish()
            conn["responses" if s.state.is_response else "requests"] = s.state.messages
        conn[s.direction] = True
        if "orig" in conn and "resp" in conn:
            del open_conns[s.conn_id]
            pair(conn)

    def pair(conn: dict) -> None:
        requests: list[Message] = conn.get("requests", [])
        for k, resp in enumerate(conn.get("responses", [])):
            req: Optional[Message] = requests[k] if k < len(requests) else None
            url = "?"
            if req is not None:
                parts = req.first.split(" ")
                target = parts[1] if len(parts) > 1 else "?"
                url = f"http://{req.headers.get('host', '?')}{target}"
            status = resp.first.split(" ")[1] if " " in resp.first else "?"
            ctype = resp.headers.get("content-type", "-").split(";")[0]
            objects.append((resp.body, status, ctype, url))

    streamcap.Capture(path, on_data=on_data, on_close=on_close).run()
    for conn in open_conns.values():  # a direction that never closed on its own
        pair(conn)
    return sorted(objects, reverse=True)


def top_talkers(path: str) -> list[tuple[str, int, int, int]]:
    """(address, bytes sent, bytes received, connections) by total bytes."""
    sent: collections.Counter = collections.Counter()
    received: collections.Counter = collections.Counter()
    conns: collections.Counter = collections.Counter()
    for r in streamcap.flows(path):
        o, p = r["orig"]["bytes"], r["resp"]["bytes"]
        sent[r["src_ip"]] += o
        received[r["src_ip"]] += p
        sent[r["dst_ip"]] += p
        received[r["dst_ip"]] += o
        conns[r["src_ip"]] += 1
        conns[r["dst_ip"]] += 1
    hosts = sorted(conns, key=lambda h: sent[h] + received[h], reverse=True)
    return [(h, sent[h], received[h], conns[h]) for h in hosts]


def main() -> int:
    ap = argparse.ArgumentParser(description="Top talkers and largest HTTP objects of a capture.")
    ap.add_argument("capture")
    ap.add_argument("--top", type=int, default=10)
    a = ap.parse_args()
    print(f"Top talkers of {a.capture} (IP bytes):")
    print(f"  {'address':<40} {'sent':>12} {'received':>12} {'conns':>6}")
    for h, s, r, c in top_talkers(a.capture)[: a.top]:
        print(f"  {h:<40} {s:>12} {r:>12} {c:>6}")
    objects = http_objects(a.capture)
    print(f"\nLargest HTTP objects ({len(objects)} responses):")
    print(f"  {'bytes':>10} {'status':>6} {'type':<24} url")
    for size, status, ctype, url in objects[: a.top]:
        print(f"  {size:>10} {status:>6} {ctype:<24} {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
