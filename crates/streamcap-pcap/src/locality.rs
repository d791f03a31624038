//! Locality buffering (`locality-buffering.txt` §4): a batch of captured
//! packets is handed to the program grouped by the lower of their two
//! ports, so that the packets of one service, and of each of its flows,
//! come back to back and the program's per-flow and per-service state
//! stays in cache.
//!
//! A [`Batch`] gathers packets (copied: see below) and indexes each by
//! its key, min(source port, destination port), in a table of 65,536
//! lists plus one for packets without ports (not TCP or UDP, or a later IP
//! fragment), each list in arrival order (a head and a tail per key, as
//! the paper's index). Once sealed it gives the packets back list by list,
//! by ascending port, the port-less list last. A flow's packets keep their
//! order; timestamps and contents are untouched.
//!
//! The library copies each packet into the batch, because the system
//! libpcap returns each ring block to the kernel as soon as the callback
//! of its last packet returns; holding blocks would mean owning the ring.
//! `bench/README.md` ("Locality buffering") measures what the copy costs.

use streamcap::decode::decode_ip;
use streamcap::LinkType;

/// libpcap's `struct pcap_pkthdr` (Linux, 64-bit `struct timeval`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PktHdr {
    /// Seconds of the capture time.
    pub tv_sec: libc::time_t,
    /// Microseconds (or nanoseconds, for a handle opened with nanosecond
    /// precision) of the capture time.
    pub tv_usec: libc::suseconds_t,
    /// Bytes captured.
    pub caplen: u32,
    /// Bytes on the wire.
    pub len: u32,
}

/// The key of packets without ports: their list comes last.
pub const NO_PORTS: u32 = 1 << 16;
/// The end of a list.
const NIL: u32 = u32::MAX;

/// The most packet bytes one batch holds; a batch is handed over when it
/// would grow past this, whatever its packet count.
pub const MAX_BATCH_BYTES: usize = 256 << 20;

/// The locality key of a frame of link type `dlt` (libpcap's
/// `pcap_datalink`): the lower of its TCP or UDP ports, or [`NO_PORTS`].
pub fn key_of(dlt: i32, frame: &[u8]) -> u32 {
    let Ok(link) = u16::try_from(dlt) else {
        return NO_PORTS;
    };
    let Ok(p) = decode_ip(LinkType(link), frame) else {
        return NO_PORTS;
    };
    let later_fragment = p.fragment.as_ref().is_some_and(|f| f.offset > 0);
    if !matches!(p.proto, 6 | 17) || later_fragment {
        return NO_PORTS;
    }
    match p.payload {
        [a, b, c, d, ..] => {
            let (s, d) = (u16::from_be_bytes([*a, *b]), u16::from_be_bytes([*c, *d]));
            u32::from(s.min(d))
        }
        _ => NO_PORTS,
    }
}

/// One gathered packet.
#[derive(Copy, Clone, Debug)]
struct Slot {
    hdr: PktHdr,
    /// Where its bytes start in [`Batch::data`].
    at: usize,
    /// The next packet of the same key, or [`NIL`].
    next: u32,
}

/// A batch of packets, gathered in arrival order and handed out by key.
pub struct Batch {
    data: Vec<u8>,
    slots: Vec<Slot>,
    /// The first and last packet of each key's list ([`NIL`]: empty).
    heads: Box<[u32]>,
    tails: Box<[u32]>,
    /// The keys with a list in this batch, in first-seen order; sorted
    /// when sealed.
    keys: Vec<u32>,
    /// When sealed: the order of delivery, and how far it went.
    order: Vec<u32>,
    delivered: usize,
    sealed: bool,
}

impl Default for Batch {
    fn default() -> Batch {
        Batch::new()
    }
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Batch {
        let lists = NO_PORTS as usize + 1;
        Batch {
            data: Vec::new(),
            slots: Vec::new(),
            heads: vec![NIL; lists].into_boxed_slice(),
            tails: vec![NIL; lists].into_boxed_slice(),
            keys: Vec::new(),
            order: Vec::new(),
            delivered: 0,
            sealed: false,
        }
    }

    /// Packets gathered (delivered or not).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether nothing was gathered.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Packet bytes held.
    pub fn bytes(&self) -> usize {
        self.data.len()
    }

    /// Whether it is sealed with packets still to hand out.
    pub fn pending(&self) -> bool {
        self.sealed && self.delivered < self.order.len()
    }

    /// Empties it for the next gathering; only the lists it used are reset.
    pub fn clear(&mut self) {
        for &k in &self.keys {
            self.heads[k as usize] = NIL;
            self.tails[k as usize] = NIL;
        }
        self.keys.clear();
        self.data.clear();
        self.slots.clear();
        self.order.clear();
        self.delivered = 0;
        self.sealed = false;
    }

    /// Adds a packet with header `hdr` and captured bytes `bytes` (at most
    /// `hdr.caplen` of them are kept) to the list of `key`.
    pub fn push(&mut self, hdr: &PktHdr, bytes: &[u8], key: u32) {
        debug_assert!(!self.sealed);
        let key = key.min(NO_PORTS);
        let n = bytes.len().min(hdr.caplen as usize);
        let Ok(i) = u32::try_from(self.slots.len()) else {
            return;
        };
        let at = self.data.len();
        self.data.extend_from_slice(&bytes[..n]);
        let mut hdr = *hdr;
        hdr.caplen = n as u32;
        self.slots.push(Slot { hdr, at, next: NIL });
        let k = key as usize;
        match self.tails[k] {
            NIL => {
                self.heads[k] = i;
                self.keys.push(key);
            }
            t => self.slots[t as usize].next = i,
        }
        self.tails[k] = i;
    }

    /// Ends the gathering: fixes the order of delivery (by ascending key,
    /// each list in arrival order).
    pub fn seal(&mut self) {
        self.keys.sort_unstable();
        self.order.clear();
        self.order.reserve(self.slots.len());
        for &k in &self.keys {
            let mut i = self.heads[k as usize];
            while i != NIL {
                self.order.push(i);
                i = self.slots[i as usize].next;
            }
        }
        self.delivered = 0;
        self.sealed = true;
    }

    /// The next packet to hand out, if the batch is sealed and has one.
    pub fn next_packet(&mut self) -> Option<(&PktHdr, &[u8])> {
        if !self.sealed {
            return None;
        }
        let &i = self.order.get(self.delivered)?;
        self.delivered += 1;
        let s = &self.slots[i as usize];
        let bytes = &self.data[s.at..s.at + s.hdr.caplen as usize];
        Some((&s.hdr, bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamcap_gen::{Capture, Direction, TcpConversation, UdpFlow};

    fn hdr(sec: i64, len: usize) -> PktHdr {
        PktHdr {
            tv_sec: sec as libc::time_t,
            tv_usec: 0,
            caplen: len as u32,
            len: len as u32,
        }
    }

    /// Packets come back grouped by key, keys ascending, the port-less
    /// list last, each list in arrival order, nothing lost or changed.
    #[test]
    fn packets_come_back_by_key_in_arrival_order_within_a_key() {
        let mut b = Batch::new();
        let input = [
            (80, 1),
            (443, 2),
            (80, 3),
            (NO_PORTS, 4),
            (53, 5),
            (443, 6),
            (80, 7),
        ];
        for (key, n) in input {
            b.push(&hdr(n, 1), &[n as u8], key);
        }
        b.seal();
        let mut out = Vec::new();
        while let Some((h, d)) = b.next_packet() {
            assert_eq!(d, &[h.tv_sec as u8]);
            out.push(h.tv_sec);
        }
        assert_eq!(out, [5, 1, 3, 7, 2, 6, 4]);
        assert!(!b.pending());
        b.clear();
        assert!(b.is_empty());
        b.push(&hdr(9, 2), &[1, 2], 80);
        b.seal();
        assert_eq!(
            b.next_packet().map(|(h, d)| (h.tv_sec, d.len())),
            Some((9, 2))
        );
    }

    /// The key is the lower port of either direction, of TCP and UDP
    /// alike; frames without ports have none.
    #[test]
    fn the_key_is_the_lower_port_of_either_direction() {
        let ep = |s: &str| s.parse().expect("address");
        let mut g = Capture::new();
        g.add(
            &TcpConversation::new(ep("10.0.0.1:40000"), ep("10.0.0.2:80"))
                .send(Direction::ToServer, b"GET / HTTP/1.0\r\n\r\n".to_vec())
                .send(Direction::ToClient, b"HTTP/1.0 200 OK\r\n\r\n".to_vec()),
        );
        g.add(
            &UdpFlow::new(ep("10.0.0.1:5353"), ep("10.0.0.2:53"))
                .datagram(Direction::ToServer, vec![0; 20]),
        );
        let packets = g.packets();
        assert!(packets.len() > 6);
        // DLT_RAW (12 on Linux): the IP packets as they are.
        for (_, p) in &packets {
            let k = key_of(12, &p.ip);
            assert!(k == 80 || k == 53, "{k}");
        }
        assert_eq!(key_of(1, &[0u8; 10]), NO_PORTS);
        assert_eq!(key_of(-1, &packets[0].1.ip), NO_PORTS);
    }

    /// A packet keeps at most `caplen` bytes.
    #[test]
    fn caplen_bounds_what_is_kept() {
        let mut b = Batch::new();
        b.push(&hdr(1, 2), &[1, 2, 3, 4], 7);
        b.seal();
        assert_eq!(b.next_packet().map(|(_, d)| d.to_vec()), Some(vec![1, 2]));
    }
}
