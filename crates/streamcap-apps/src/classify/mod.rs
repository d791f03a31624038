//! Layer-7 traffic classification (Scap §VII-C): each connection's
//! application protocol, told from the first bytes of each direction,
//! after which the direction is discarded and only counted.
//!
//! Labels ([`App`]): `http`, `tls` (with the SNI and ALPN of the
//! ClientHello, and the version and cipher of the ServerHello), `ssh`
//! (with both version lines), `dns` (UDP and TCP), `smtp`, `ftp`, `imap`,
//! `pop3`, `quic` (with its version), `smb`, `rdp`, `sip`, `ntp`, `dhcp`,
//! `bittorrent`, `mqtt`, `redis`, `postgresql`, `mysql`, and `unknown`.
//! They come from content, whatever the ports; a well-known port only
//! breaks a tie (see [`decide`](mod@decide) for the rules).
//!
//! Built for streamcap's per-direction delivery:
//!
//! - each direction keeps an [`Evidence`] (its stream user state: one
//!   pointer, `Default`), fed with that direction's bytes and their stream
//!   offsets (TCP), or its datagrams (UDP);
//! - feeding says when the direction has shown all it will
//!   ([`Progress::Done`]): the caller then discards it, the way Scap
//!   discards a classified stream;
//! - [`decide()`] combines both directions' evidence into a
//!   [`Classification`] when the connection ends (or at any time).
//!
//! At most [`INSPECT_LIMIT`] bytes of a TCP direction are read by the
//! probes (the first contiguous ones), and at most
//! [`MAX_DATAGRAMS`] datagrams of a UDP direction (each up to
//! [`INSPECT_LIMIT`] bytes). A direction that starts like TLS also has its
//! record headers walked up to [`TLS_WALK_LIMIT`] bytes, to see both sides
//! go encrypted ([`TlsInfo::established`]).
//!
//! ```
//! use streamcap_apps::classify::{classify_flow, App, Transport};
//!
//! let c = classify_flow(
//!     Transport::Tcp,
//!     &[b"GET /index.html HTTP/1.1\r\n", b"Host: example.com\r\n\r\n"],
//!     &[b"HTTP/1.1 200 OK\r\n\r\n"],
//!     40000,
//!     8081,
//! );
//! assert_eq!(c.app, App::Http);
//! assert_eq!(c.app.zeek_service(), Some("http"));
//! ```
//!
//! In a [`Handler`](streamcap::Handler): call [`prepare`] from
//! `on_create`, feed [`Evidence::feed_chunk`] from `on_data` and
//! [`discard`](streamcap::Stream::discard) the stream when it says
//! [`Progress::Done`], then [`decide()`] in `on_flow_end` with both
//! directions' states.

pub mod app;
pub mod decide;
pub mod evidence;
pub mod handler;
pub mod probe;
pub mod tls;

pub use app::{App, Transport};
pub use decide::{decide, quic_version_name, Classification, TlsInfo};
pub use evidence::{Evidence, Progress, MAX_DATAGRAMS};
pub use handler::{Classify, ClassifyStats, LabelTotals};
pub use tls::TLS_WALK_LIMIT;

use streamcap::deliver::{Delivery, Stream};

/// Bytes of a TCP direction (and of a datagram) the probes read at most.
/// Protocols announce themselves in their first message; 4 KiB holds a
/// ClientHello with post-quantum key shares, and an HTTP request line
/// with a long URL.
pub const INSPECT_LIMIT: usize = 4096;

/// The largest UDP payload: with this chunk size and segment delivery,
/// each data event of a datagram stream is one datagram.
pub const DATAGRAM_CHUNK: usize = 65_536;

/// Sets up a new stream for classification: datagram protocols get
/// segment delivery with room for a whole datagram per event, so that each
/// event is one datagram. Call it from `on_create`.
pub fn prepare<S>(s: &mut Stream<'_, S>) {
    if s.proto() != 6 {
        s.set_delivery(Delivery::Segments);
        s.set_chunk_size(DATAGRAM_CHUNK);
    }
}

/// Both directions of one connection, classified without streamcap:
/// feed each direction's bytes in order (TCP) or its datagrams (UDP).
#[derive(Clone, Debug)]
pub struct Classifier {
    transport: Transport,
    orig_port: u16,
    resp_port: u16,
    orig: Evidence,
    resp: Evidence,
    orig_next: u64,
    resp_next: u64,
}

impl Classifier {
    /// A connection on `transport` from `orig_port` to `resp_port`.
    pub fn new(transport: Transport, orig_port: u16, resp_port: u16) -> Classifier {
        Classifier {
            transport,
            orig_port,
            resp_port,
            orig: Evidence::new(),
            resp: Evidence::new(),
            orig_next: 0,
            resp_next: 0,
        }
    }

    /// The initiator's next bytes (TCP) or next datagram (UDP).
    pub fn orig(&mut self, data: &[u8]) -> Progress {
        feed(self.transport, &mut self.orig, &mut self.orig_next, data)
    }

    /// The responder's next bytes (TCP) or next datagram (UDP).
    pub fn resp(&mut self, data: &[u8]) -> Progress {
        feed(self.transport, &mut self.resp, &mut self.resp_next, data)
    }

    /// The initiator's evidence.
    pub fn orig_evidence(&self) -> &Evidence {
        &self.orig
    }

    /// The responder's evidence.
    pub fn resp_evidence(&self) -> &Evidence {
        &self.resp
    }

    /// The label from what was fed so far.
    pub fn classify(&self) -> Classification {
        decide(
            self.transport,
            self.orig_port,
            self.resp_port,
            &self.orig,
            &self.resp,
        )
    }
}

fn feed(t: Transport, e: &mut Evidence, next: &mut u64, data: &[u8]) -> Progress {
    match t {
        Transport::Tcp => {
            let p = e.feed_stream(*next, data);
            *next += data.len() as u64;
            p
        }
        Transport::Udp => e.feed_datagram(data),
    }
}

/// Classifies one connection from its directions' pieces: TCP stream
/// bytes in order (cut anywhere), or UDP datagrams.
pub fn classify_flow(
    transport: Transport,
    orig: &[&[u8]],
    resp: &[&[u8]],
    orig_port: u16,
    resp_port: u16,
) -> Classification {
    let mut c = Classifier::new(transport, orig_port, resp_port);
    for d in orig {
        c.orig(d);
    }
    for d in resp {
        c.resp(d);
    }
    c.classify()
}

#[cfg(test)]
mod tests;
