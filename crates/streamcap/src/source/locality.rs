//! Locality buffering (`locality-buffering.txt` §4): a batch of captured
//! packets is handed on grouped by the lower of their two ports, so that
//! the packets of one service, and of each of its flows, come back to back
//! and the per-flow and per-service state of whoever processes them stays
//! in cache.
//!
//! A [`LocalityBatch`] gathers packets (copied) and indexes each by its
//! key, min(source port, destination port) ([`locality_key`]), in a table
//! of 65,536 lists plus one for packets without ports (not TCP or UDP, or
//! a later IP fragment), each list in arrival order (a head and a tail per
//! key, as the paper's index). Once sealed it gives the packets back list
//! by list, by ascending port, the port-less list last. A flow's packets
//! keep their order; each packet's header (`H`: a timestamp and lengths,
//! as the caller keeps them) and bytes are untouched.
//!
//! `libstreamcap_pcap.so` uses it inside libpcap's read calls, and the
//! engine's workers with `--locality-batch`.

use crate::decode::{decode_ip, NetPacket};
use crate::source::LinkType;

/// The key of packets without ports: their list comes last.
pub const NO_PORTS: u32 = 1 << 16;
/// The end of a list.
const NIL: u32 = u32::MAX;

/// The locality key of a frame of link type `link`: the lower of its TCP or
/// UDP ports, or [`NO_PORTS`].
pub fn locality_key(link: LinkType, frame: &[u8]) -> u32 {
    match decode_ip(link, frame) {
        Ok(p) => locality_key_of(&p),
        Err(_) => NO_PORTS,
    }
}

/// [`locality_key`] of a packet already decoded: the lower of its TCP or
/// UDP ports, or [`NO_PORTS`] (other protocols, later IP fragments, a
/// transport header too short for its ports).
pub fn locality_key_of(p: &NetPacket<'_>) -> u32 {
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
struct Slot<H> {
    hdr: H,
    /// Where its bytes are in [`LocalityBatch::data`].
    at: usize,
    len: usize,
    /// The next packet of the same key, or [`NIL`].
    next: u32,
}

/// A batch of packets with headers of type `H`, gathered in arrival order
/// and handed out by key.
pub struct LocalityBatch<H> {
    data: Vec<u8>,
    slots: Vec<Slot<H>>,
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

impl<H: Copy> Default for LocalityBatch<H> {
    fn default() -> LocalityBatch<H> {
        LocalityBatch::new()
    }
}

impl<H: Copy> LocalityBatch<H> {
    /// An empty batch.
    pub fn new() -> LocalityBatch<H> {
        let lists = NO_PORTS as usize + 1;
        LocalityBatch {
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

    /// Packets gathered (handed out or not).
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

    /// Adds a packet with header `hdr` and bytes `bytes` to the list of
    /// `key` (at most [`NO_PORTS`]). A batch holds at most `u32::MAX - 1`
    /// packets; more are not added.
    pub fn push(&mut self, hdr: H, bytes: &[u8], key: u32) {
        let key = key.min(NO_PORTS);
        let Ok(i) = u32::try_from(self.slots.len()) else {
            return;
        };
        if i == NIL {
            return;
        }
        let at = self.data.len();
        self.data.extend_from_slice(bytes);
        self.slots.push(Slot {
            hdr,
            at,
            len: bytes.len(),
            next: NIL,
        });
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

    /// Every packet of a sealed batch in the order of delivery, from the
    /// first, by shared reference (several at once), without marking any
    /// handed out; nothing if the batch is not sealed.
    pub fn in_order(&self) -> impl Iterator<Item = (&H, &[u8])> + '_ {
        let order = if self.sealed { &self.order[..] } else { &[] };
        order.iter().map(|&i| {
            let s = &self.slots[i as usize];
            (&s.hdr, &self.data[s.at..s.at + s.len])
        })
    }

    /// The next packet to hand out, if the batch is sealed and has one. Its
    /// header and bytes stay in place until the batch is cleared.
    pub fn next_packet(&mut self) -> Option<(&H, &[u8])> {
        if !self.sealed {
            return None;
        }
        let &i = self.order.get(self.delivered)?;
        self.delivered += 1;
        let s = &self.slots[i as usize];
        Some((&s.hdr, &self.data[s.at..s.at + s.len]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packets come back grouped by key, keys ascending, the port-less
    /// list last, each list in arrival order, nothing lost or changed.
    #[test]
    fn packets_come_back_by_key_in_arrival_order_within_a_key() {
        let mut b = LocalityBatch::new();
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
            b.push(n, &[n as u8], key);
        }
        assert_eq!(b.in_order().count(), 0, "not sealed");
        b.seal();
        let all: Vec<u32> = b.in_order().map(|(&h, _)| h).collect();
        assert_eq!(all, [5, 1, 3, 7, 2, 6, 4]);
        let mut out = Vec::new();
        while let Some((&h, d)) = b.next_packet() {
            assert_eq!(d, &[h as u8]);
            out.push(h);
        }
        assert_eq!(out, [5, 1, 3, 7, 2, 6, 4]);
        assert!(!b.pending());
        b.clear();
        assert!(b.is_empty());
        b.push(9, &[1, 2], 80);
        b.seal();
        assert_eq!(b.next_packet().map(|(&h, d)| (h, d.len())), Some((9, 2)));
    }

    /// The key is the lower port, of TCP and UDP; frames without ports
    /// have none.
    #[test]
    fn the_key_is_the_lower_port() {
        let mut f = Vec::new();
        etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(40000, 80, 1, 1024)
            .write(&mut f, b"x")
            .expect("frame");
        assert_eq!(locality_key(LinkType::RAW, &f), 80);
        let mut u = Vec::new();
        etherparse::PacketBuilder::ipv4([10, 0, 0, 2], [10, 0, 0, 1], 64)
            .udp(53, 5353)
            .write(&mut u, b"x")
            .expect("frame");
        assert_eq!(locality_key(LinkType::RAW, &u), 53);
        assert_eq!(locality_key(LinkType::ETHERNET, &[0u8; 10]), NO_PORTS);
    }
}
