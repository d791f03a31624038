//! HTTP/1.x analysis on reassembled TCP streams (Scap §VII-D), logged as
//! Zeek's `http.log`.
//!
//! HTTP is found by content, on any port: a direction is parsed if its
//! first bytes are a request line (a known method, a target, `HTTP/1.x`)
//! or, for the responder, a status line (`HTTP/1.x NNN`); a direction
//! that starts otherwise is discarded after its first bytes (Scap's early
//! discard), so the engine stops copying it. Two exceptions, for
//! connections picked up in the middle: a direction whose first bytes are
//! the other side's (a capture that begins with the server's packet, so
//! the engine's initiator is the server) is parsed as that side; and a
//! direction whose first bytes are missing (a gap) or are not a head while
//! the other direction is HTTP — or, for the server's direction, while the
//! client's is not known yet — is looked through for a head, at most
//! [`parser::HUNT_LIMIT`] (1 MiB) bytes, and discarded as soon as the other
//! direction turns out not to be HTTP. So a protocol where the server
//! speaks first (SMTP, FTP, SSH) keeps its server direction until the
//! client's first bytes.
//!
//! - [`head`]: request and status lines and header fields (`httparse`),
//!   the fields the log keeps, Zeek's URI unescaping.
//! - [`body`]: body framing (`Content-Length`, chunked, until close),
//!   counted and never copied, optionally hashed.
//! - [`parser`]: the streaming parser of one direction: heads parsed with
//!   their bytes contiguous, keeping the chunk while a head is incomplete.
//! - [`exchange`]: requests and responses paired per connection as Zeek
//!   pairs them (pipelining, 1xx, missing requests or responses).
//! - [`record`]: the records, as Zeek's JSON and TSV writers write them.
//! - [`analyzer`]: the per-worker analyser (`start`, `data`, `close`,
//!   `flow_end`), usable inside a composite handler; [`handler`]: it as a
//!   [`streamcap::Handler`]; [`session`]: a conversation fed by hand.
//!
//! # Incomplete heads: `keep_chunk`
//!
//! As in Scap's HTTP parser, a head (or a chunk-size line or trailer) is
//! parsed only when all its bytes are contiguous. When the bytes given end
//! inside one, the analyser calls `Stream::keep_chunk`: the next data event
//! re-presents the kept bytes followed by the new ones, and the parser,
//! which tracks stream offsets, goes on from the start of the incomplete
//! head (bytes before it, re-presented too, are not handled again; the
//! search for the end of the head resumes where it stopped). It does so
//! only with chunk delivery. With segment delivery keeping would copy the
//! whole segment (and is refused when the memory budget is full, which the
//! parser learns only when the bytes do not come back), so the parser
//! copies the incomplete part itself instead, at most
//! [`parser::HEAD_LIMIT`] (64 KiB); a longer head is dropped as garbage.
//! If kept bytes do not come back, the message they began is dropped as
//! if lost to a gap, and counted (`keep_refused`).
//!
//! # Body bytes are not copied
//!
//! The parser only counts body bytes (and hashes them when asked); it
//! reports where a body ends ([`parser::Fed::body_until`]) so that a
//! caller could skip them. Whether the engine copies them depends on the
//! delivery:
//!
//! - Segment delivery hands each in-order segment over in place, without
//!   a copy. [`HttpAnalyzer::prepare`] (called by [`Http`]) sets it on the
//!   request direction, which also makes every request reach the
//!   analyser before its response. With segment delivery on both
//!   directions (`--delivery segments`) no byte past a head is copied,
//!   and the only copies are the parser's own of heads split across
//!   segments.
//! - Chunk delivery copies every byte into the stream's chunk before the
//!   callback sees it. A per-stream cutoff or `discard()` stops the
//!   copying, but only for good: bytes past the cutoff are never
//!   delivered, so the next request or response head on a persistent
//!   connection would be lost. The analyser uses it only where nothing
//!   follows: a response whose body runs until the connection closes is
//!   discarded right after its head (unless bodies are hashed) and its
//!   length taken from the stream's length at the close; and directions
//!   that are not HTTP, or turned into a tunnel, are discarded.
//!
//! # Pairing needs both directions
//!
//! Streamcap's state is per direction, and a response's framing depends
//! on its request (`HEAD`, `CONNECT`). The analyser keeps each
//! connection's transactions in a map keyed by the connection's serial
//! number, removed at `flow_end`. If the request a response answers has
//! not been parsed yet but more request bytes exist (chunk delivery on the
//! request direction), the response waits, kept, up to
//! [`parser::HEAD_LIMIT`] bytes; past that it is taken for the answer to a
//! GET.
//!
//! # Differences from Zeek
//!
//! - Bodies are counted as sent: Zeek counts gzip/deflate content
//!   decompressed; multipart bodies are not parsed as MIME.
//! - After a gap outside a body, or bytes that are not HTTP where a head
//!   should begin, Zeek stops parsing the connection; this parser drops
//!   the message and resumes at the next line that starts a request (or
//!   status) line.
//! - A request whose head never completes is not logged (Zeek logs its
//!   request line).
//! - HTTP/0.9 is not parsed; chunked transfer coding is accepted in
//!   HTTP/1.0 messages too.
//! - A 101 response ends parsing of both directions whatever its headers.
//! - The records' `id.orig_h`/`id.orig_p` are the engine's initiator (as
//!   in streamcap's `conn.log`, whose `uid` they share), even when the
//!   capture began with the server's packet; Zeek would flip them.
//! - `ts` is the time of the packet that carried the head's first byte
//!   (Zeek: the packet that completed the request line). With chunk
//!   delivery, without packet records, it is the time of the newest
//!   packet of the chunk the head began in.
//! - No file analysis: the `*_fuids`, `*_filenames` and `*_mime_types`
//!   fields are left out ([`record`]).

pub mod analyzer;
pub mod body;
pub mod exchange;
pub mod handler;
pub mod head;
pub mod parser;
pub mod record;
pub mod session;

pub use analyzer::{HttpAnalyzer, HttpConfig, HttpState, HttpStats};
pub use exchange::{ConnMeta, Exchange};
pub use handler::Http;
pub use parser::{Event, Fed, Input, Parser, Side};
pub use record::{FnSink, HttpRecord, JsonLines, RecordSink, ZeekTsv};
pub use session::Session;

#[cfg(test)]
mod tests;
