//! What an application builder returns: the messages of a flow, in order,
//! and the details the classifier should extract from them.

use std::net::{IpAddr, SocketAddr};

use crate::capture::Direction;
use crate::prng::SplitMix64;
use crate::truth::Protocol;

use super::AppDetails;

/// Client to server.
pub(super) const C: Direction = Direction::ToServer;
/// Server to client.
pub(super) const S: Direction = Direction::ToClient;

/// The endpoints of the flow being built. A builder may change the
/// client's port (DHCP, NTP) before using it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ctx {
    pub proto: Protocol,
    pub client: SocketAddr,
    pub server: SocketAddr,
}

impl Ctx {
    /// `IP4` or `IP6`, as SDP writes the address type.
    pub(super) fn sdp_family(&self) -> &'static str {
        match self.client.ip() {
            IpAddr::V4(_) => "IP4",
            IpAddr::V6(_) => "IP6",
        }
    }

    /// `UDP` or `TCP`, as SIP's Via header names the transport.
    pub(super) fn transport(&self) -> &'static str {
        match self.proto {
            Protocol::Udp => "UDP",
            Protocol::Tcp => "TCP",
        }
    }
}

/// The messages of one flow (TCP sends or UDP datagrams), the name of the
/// scenario and the details for the truth.
#[derive(Clone, Debug, Default)]
pub(super) struct Dialog {
    pub msgs: Vec<(Direction, Vec<u8>)>,
    pub variant: String,
    pub details: AppDetails,
}

impl Dialog {
    pub(super) fn new(variant: impl Into<String>) -> Self {
        Dialog {
            variant: variant.into(),
            ..Dialog::default()
        }
    }

    /// Appends a message (empty ones are dropped).
    pub(super) fn push(&mut self, dir: Direction, bytes: impl Into<Vec<u8>>) {
        let b = bytes.into();
        if !b.is_empty() {
            self.msgs.push((dir, b));
        }
    }

    /// Appends a text message.
    pub(super) fn text(&mut self, dir: Direction, s: &str) {
        self.push(dir, s.as_bytes().to_vec());
    }
}

/// `n` random lower-case hex digits.
pub(super) fn hex(rng: &mut SplitMix64, n: usize) -> String {
    (0..n)
        .map(|_| char::from(b"0123456789abcdef"[rng.below(16) as usize]))
        .collect()
}

/// `n` random letters and digits.
pub(super) fn alnum(rng: &mut SplitMix64, n: usize) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..n)
        .map(|_| char::from(A[rng.below(A.len() as u64) as usize]))
        .collect()
}

/// Host names used by the builders.
pub(super) const HOSTS: &[&str] = &[
    "www.example.com",
    "api.example.net",
    "cdn.example.org",
    "mail.example.org",
    "login.example.edu",
    "updates.example.com",
    "static.example.net",
    "portal.campus.example.edu",
    "files.example.org",
    "video.example.com",
];

/// A host name: one of [`HOSTS`], sometimes with a random first label.
pub(super) fn host(rng: &mut SplitMix64) -> String {
    let h = *rng.pick(HOSTS);
    if rng.chance(1, 4) {
        let base = h.split_once('.').map_or(h, |(_, b)| b);
        format!("{}.{base}", alnum(rng, 6).to_lowercase())
    } else {
        h.to_string()
    }
}

/// User names used by the builders.
pub(super) const USERS: &[&str] = &["alice", "bob", "carol", "dave", "erin", "frank", "grace"];

/// Big-endian u16.
pub(super) fn be16(v: usize) -> [u8; 2] {
    (v as u16).to_be_bytes()
}

/// Big-endian u32.
pub(super) fn be32(v: usize) -> [u8; 4] {
    (v as u32).to_be_bytes()
}

/// DER tag-length-value.
pub(super) fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    match content.len() {
        n if n < 128 => v.push(n as u8),
        n if n < 256 => v.extend_from_slice(&[0x81, n as u8]),
        n => {
            v.push(0x82);
            v.extend_from_slice(&be16(n));
        }
    }
    v.extend_from_slice(content);
    v
}
