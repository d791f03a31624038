//! One flow of the campus model: a small state machine (handshake, data,
//! acknowledgments, impairments, close) that produces its next packet on
//! demand, and its ground truth when it ends.

use std::collections::VecDeque;
use std::io::{self, Write};

use sha2::{Digest, Sha256};

use super::dist::hit;
use super::payload::{fill_msg, Msg};
use super::wire::{Ends, Wire, L4, TCP_ACK, TCP_FIN, TCP_PSH, TCP_RST, TCP_SYN};
use super::{CampusDirectionTruth, CampusFlowTruth, ImpairmentCounts, SignatureTruth};
use crate::prng::SplitMix64;
use crate::truth::{ByteRange, ConflictTruth, EndReason, Protocol};

/// Shared, read-only context.
pub(super) struct Cx {
    pub(super) text: Vec<u8>,
    pub(super) signatures: Vec<Vec<u8>>,
    pub(super) sig_th: u64,
    pub(super) reorder: u64,
    pub(super) dup: u64,
    pub(super) loss: u64,
    pub(super) conflict: u64,
    pub(super) fragment: u64,
    pub(super) ipv6: u64,
    pub(super) vlan: u64,
    pub(super) small: bool,
    pub(super) gap: u64,
}

// ---------------------------------------------------------------------------
// Flows.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    Syn,
    SynAck,
    HsAck,
    Data,
    Fin1,
    Fin2,
    LastAck,
    Rst,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum App {
    Http,
    Tls,
    Ssh,
    Smtp,
    Ftp,
    FtpData,
    TcpUnknown,
    Dns,
    UdpUnknown,
}

impl App {
    pub(super) fn label(self) -> &'static str {
        match self {
            App::Http => "http",
            App::Tls => "tls",
            App::Ssh => "ssh",
            App::Smtp => "smtp",
            App::Ftp => "ftp",
            App::FtpData => "ftp-data",
            App::TcpUnknown => "tcp-unknown",
            App::Dns => "dns",
            App::UdpUnknown => "udp-unknown",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Extra {
    Held,
    Dup,
    Conflict,
}

/// A data packet whose payload is kept (rare: impairments only).
#[derive(Clone, Debug)]
pub(super) struct Owned {
    pub(super) s: usize,
    pub(super) l4: L4,
    pub(super) off: u64,
    pub(super) payload: Vec<u8>,
    pub(super) kind: Extra,
    /// For conflicts: the intended bytes.
    pub(super) original: Vec<u8>,
}

pub(super) struct Flow {
    pub(super) id: usize,
    pub(super) app: App,
    pub(super) elephant: bool,
    pub(super) ends: Ends,
    pub(super) rng: SplitMix64,
    pub(super) isn: [u32; 2],
    pub(super) ip_id: [u16; 2],
    pub(super) phase: Phase,
    pub(super) msgs: Vec<Msg>,
    pub(super) mi: usize,
    pub(super) mpos: u64,
    pub(super) sent: [u64; 2],
    pub(super) hash: [Sha256; 2],
    pub(super) unacked: u32,
    pub(super) ack_every: u32,
    pub(super) ack_due: Option<usize>,
    pub(super) held: Option<Owned>,
    pub(super) extra: VecDeque<Owned>,
    pub(super) closer: usize,
    pub(super) rst: bool,
    pub(super) end: EndReason,
    pub(super) gap: u64,
    pub(super) packets: [u64; 2],
    pub(super) ip_bytes: [u64; 2],
    pub(super) datagrams: [u64; 2],
    pub(super) datagram_bytes: [u64; 2],
    pub(super) lost: [Vec<ByteRange>; 2],
    pub(super) conflicts: [Vec<ConflictTruth>; 2],
    pub(super) imp: ImpairmentCounts,
    pub(super) sigs: Vec<SignatureTruth>,
}

pub(super) fn push_range(v: &mut Vec<ByteRange>, start: u64, end: u64) {
    if let Some(last) = v.last_mut() {
        if last.end == start {
            last.end = end;
            return;
        }
    }
    v.push(ByteRange { start, end });
}

impl Flow {
    pub(super) fn seq(&self, s: usize, extra: u32) -> u32 {
        self.isn[s]
            .wrapping_add(1)
            .wrapping_add(self.sent[s] as u32)
            .wrapping_add(extra)
    }

    /// Sends the packet whose payload is at `w.buf[hdr..]`.
    pub(super) fn send<W: Write>(
        &mut self,
        w: &mut Wire<W>,
        s: usize,
        l4: L4,
        frag: bool,
    ) -> io::Result<()> {
        let id = self.ip_id[s];
        self.ip_id[s] = id.wrapping_add(1);
        let iplen = self.ends.write_headers(&mut w.buf, s, &l4, id);
        let is_tcp = self.ends.tcp;
        let n = if frag && !self.ends.v6 && w.remaining() >= 2 && iplen >= 20 + 24 {
            self.imp.fragmented += 1;
            let lens = w.write_fragments(self.ends.l2())?;
            self.ip_bytes[s] += lens[0] + lens[1];
            w.stats.ip_bytes += lens[0] + lens[1];
            2
        } else {
            w.write(false)?;
            self.ip_bytes[s] += iplen;
            w.stats.ip_bytes += iplen;
            1
        };
        self.packets[s] += n;
        self.datagrams[s] += 1;
        self.datagram_bytes[s] += iplen;
        if is_tcp {
            w.stats.tcp_packets += n;
        }
        if self.elephant {
            w.stats.elephant_packets += n;
        }
        Ok(())
    }

    pub(super) fn control<W: Write>(
        &mut self,
        w: &mut Wire<W>,
        s: usize,
        l4: L4,
    ) -> io::Result<()> {
        let h = self.ends.hdr_len(&l4);
        w.prepare(h);
        self.send(w, s, l4, false)
    }

    pub(super) fn send_owned<W: Write>(
        &mut self,
        w: &mut Wire<W>,
        o: Owned,
        cx: &Cx,
    ) -> io::Result<()> {
        let h = self.ends.hdr_len(&o.l4);
        w.prepare(h + o.payload.len());
        w.buf[h..].copy_from_slice(&o.payload);
        let frag = hit(&mut self.rng, cx.fragment);
        self.send(w, o.s, o.l4, frag)?;
        let end = o.off + o.payload.len() as u64;
        match o.kind {
            Extra::Held => self.imp.reordered += 1,
            Extra::Dup => self.imp.duplicated += 1,
            Extra::Conflict => {
                self.imp.conflicts += 1;
                self.conflicts[o.s].push(ConflictTruth {
                    range: ByteRange { start: o.off, end },
                    original: o.original,
                    conflicting: o.payload,
                    conflict_first: false,
                });
            }
        }
        Ok(())
    }

    /// Produces the next packet(s). Returns the virtual gap to the next
    /// call, or `None` when the flow is over.
    pub(super) fn step<W: Write>(&mut self, w: &mut Wire<W>, cx: &Cx) -> io::Result<Option<u64>> {
        if let Some(o) = self.extra.pop_front() {
            self.send_owned(w, o, cx)?;
            return Ok(Some(self.gap / 2 + 1));
        }
        if !self.ends.tcp {
            return self.step_udp(w, cx);
        }
        loop {
            match self.phase {
                Phase::Syn => {
                    let l4 = L4::Tcp {
                        seq: self.isn[0],
                        ack: 0,
                        flags: TCP_SYN,
                    };
                    self.control(w, 0, l4)?;
                    self.phase = Phase::SynAck;
                    return Ok(Some(self.rtt()));
                }
                Phase::SynAck => {
                    let l4 = L4::Tcp {
                        seq: self.isn[1],
                        ack: self.seq(0, 0),
                        flags: TCP_SYN | TCP_ACK,
                    };
                    self.control(w, 1, l4)?;
                    self.phase = Phase::HsAck;
                    return Ok(Some(self.rtt()));
                }
                Phase::HsAck => {
                    let l4 = L4::Tcp {
                        seq: self.seq(0, 0),
                        ack: self.seq(1, 0),
                        flags: TCP_ACK,
                    };
                    self.control(w, 0, l4)?;
                    self.phase = Phase::Data;
                    return Ok(Some(self.next_gap()));
                }
                Phase::Data => {
                    if let Some(r) = self.ack_due.take() {
                        let l4 = L4::Tcp {
                            seq: self.seq(r, 0),
                            ack: self.seq(1 - r, 0),
                            flags: TCP_ACK,
                        };
                        self.control(w, r, l4)?;
                        return Ok(Some(self.next_gap()));
                    }
                    if self.mi >= self.msgs.len() {
                        if let Some(h) = self.held.take() {
                            self.extra.push_back(h);
                            return self.step(w, cx);
                        }
                        self.phase = if self.rst { Phase::Rst } else { Phase::Fin1 };
                        continue;
                    }
                    if let Some(g) = self.data_segment(w, cx)? {
                        return Ok(Some(g));
                    }
                }
                Phase::Fin1 => {
                    let (a, b) = (self.closer, 1 - self.closer);
                    let l4 = L4::Tcp {
                        seq: self.seq(a, 0),
                        ack: self.seq(b, 0),
                        flags: TCP_FIN | TCP_ACK,
                    };
                    self.control(w, a, l4)?;
                    self.phase = Phase::Fin2;
                    return Ok(Some(self.rtt()));
                }
                Phase::Fin2 => {
                    let (a, b) = (self.closer, 1 - self.closer);
                    let l4 = L4::Tcp {
                        seq: self.seq(b, 0),
                        ack: self.seq(a, 1),
                        flags: TCP_FIN | TCP_ACK,
                    };
                    self.control(w, b, l4)?;
                    self.end = EndReason::Fin;
                    self.phase = Phase::LastAck;
                    return Ok(Some(self.rtt()));
                }
                Phase::LastAck => {
                    let (a, b) = (self.closer, 1 - self.closer);
                    let l4 = L4::Tcp {
                        seq: self.seq(a, 1),
                        ack: self.seq(b, 1),
                        flags: TCP_ACK,
                    };
                    self.control(w, a, l4)?;
                    self.phase = Phase::Done;
                    return Ok(None);
                }
                Phase::Rst => {
                    let (a, b) = (self.closer, 1 - self.closer);
                    let l4 = L4::Tcp {
                        seq: self.seq(a, 0),
                        ack: self.seq(b, 0),
                        flags: TCP_RST | TCP_ACK,
                    };
                    self.control(w, a, l4)?;
                    self.end = EndReason::Rst;
                    self.phase = Phase::Done;
                    return Ok(None);
                }
                Phase::Done => return Ok(None),
            }
        }
    }

    pub(super) fn rtt(&mut self) -> u64 {
        self.gap * 3 + self.rng.below(self.gap * 2 + 1)
    }

    pub(super) fn next_gap(&mut self) -> u64 {
        self.gap / 2 + self.rng.below(self.gap + 1)
    }

    /// Called when message `mi` starts: records its planted signature.
    pub(super) fn start_msg(&mut self) {
        let m = &self.msgs[self.mi];
        if let Some((p, at)) = m.sig {
            let s = m.dir as usize;
            let off = self.sent[s] + m.head.len() as u64 + at;
            // Kept only if fully produced (checked in `truth`).
            self.sigs.push(SignatureTruth {
                pattern_index: p as usize,
                dir: if s == 0 { "to_server" } else { "to_client" }.into(),
                offset: off,
            });
        }
    }

    /// Produces one TCP data segment. Returns `None` when nothing was
    /// emitted (the segment was lost or held back).
    pub(super) fn data_segment<W: Write>(
        &mut self,
        w: &mut Wire<W>,
        cx: &Cx,
    ) -> io::Result<Option<u64>> {
        if self.mpos == 0 {
            self.start_msg();
        }
        let m = &self.msgs[self.mi];
        let s = m.dir as usize;
        let r = 1 - s;
        let total = m.len();
        let n = (total - self.mpos).min(u64::from(self.ends.mss)) as usize;
        let last = self.mpos + n as u64 == total;
        let flags = TCP_ACK | if last { TCP_PSH } else { 0 };
        let l4 = L4::Tcp {
            seq: self.seq(s, 0),
            ack: self.seq(r, 0),
            flags,
        };
        let h = self.ends.hdr_len(&l4);
        w.prepare(h + n);
        fill_msg(m, cx, self.mpos, &mut w.buf[h..]);
        self.hash[s].update(&w.buf[h..]);
        let off = self.sent[s];
        self.sent[s] += n as u64;
        self.mpos += n as u64;
        let next_dir = if last {
            self.mi += 1;
            self.mpos = 0;
            self.msgs.get(self.mi).map(|m| m.dir as usize)
        } else {
            Some(s)
        };
        // ACK policy: every `ack_every` segments, and at the end of a
        // message unless the receiver answers right away (piggyback).
        self.unacked += 1;
        if last && next_dir == Some(r) {
            self.unacked = 0;
        } else if last || self.unacked >= self.ack_every {
            self.ack_due = Some(r);
            self.unacked = 0;
        }
        let turn = next_dir != Some(s);

        let emitted = if hit(&mut self.rng, cx.loss) {
            self.imp.lost += 1;
            push_range(&mut self.lost[s], off, off + n as u64);
            false
        } else if !last && self.held.is_none() && hit(&mut self.rng, cx.reorder) {
            self.held = Some(Owned {
                s,
                l4,
                off,
                payload: w.buf[h..].to_vec(),
                kind: Extra::Held,
                original: Vec::new(),
            });
            false
        } else {
            let dup = hit(&mut self.rng, cx.dup);
            let conflict = n >= 8 && hit(&mut self.rng, cx.conflict);
            let frag = hit(&mut self.rng, cx.fragment);
            let copy = (dup || conflict).then(|| w.buf[h..].to_vec());
            self.send(w, s, l4, frag)?;
            if let Some(h) = self.held.take() {
                self.extra.push_back(h);
            }
            if let Some(p) = copy {
                if dup {
                    self.extra.push_back(Owned {
                        s,
                        l4,
                        off,
                        payload: p.clone(),
                        kind: Extra::Dup,
                        original: Vec::new(),
                    });
                }
                if conflict {
                    let half = n / 2;
                    let original = p[half..].to_vec();
                    let payload: Vec<u8> = original
                        .iter()
                        .map(|b| b ^ (self.rng.next_u32() as u8 | 1))
                        .collect();
                    let seq = self.isn[s]
                        .wrapping_add(1)
                        .wrapping_add((off + half as u64) as u32);
                    self.extra.push_back(Owned {
                        s,
                        l4: L4::Tcp {
                            seq,
                            ack: self.seq(r, 0),
                            flags: TCP_ACK | TCP_PSH,
                        },
                        off: off + half as u64,
                        payload,
                        kind: Extra::Conflict,
                        original,
                    });
                }
            }
            true
        };
        if turn {
            if let Some(h) = self.held.take() {
                self.extra.push_back(h);
            }
        }
        if !emitted {
            return Ok(None);
        }
        Ok(Some(if turn && next_dir.is_some() {
            self.rtt()
        } else {
            self.next_gap()
        }))
    }

    pub(super) fn step_udp<W: Write>(
        &mut self,
        w: &mut Wire<W>,
        cx: &Cx,
    ) -> io::Result<Option<u64>> {
        loop {
            if self.mi >= self.msgs.len() {
                return Ok(None);
            }
            self.start_msg();
            let m = &self.msgs[self.mi];
            let s = m.dir as usize;
            let n = m.len() as usize;
            let h = self.ends.hdr_len(&L4::Udp);
            w.prepare(h + n);
            fill_msg(m, cx, 0, &mut w.buf[h..]);
            self.hash[s].update(&w.buf[h..]);
            let off = self.sent[s];
            self.sent[s] += n as u64;
            self.mi += 1;
            let next_dir = self.msgs.get(self.mi).map(|m| m.dir as usize);
            if hit(&mut self.rng, cx.loss) {
                self.imp.lost += 1;
                push_range(&mut self.lost[s], off, off + n as u64);
                continue;
            }
            let frag = hit(&mut self.rng, cx.fragment);
            if hit(&mut self.rng, cx.dup) {
                self.extra.push_back(Owned {
                    s,
                    l4: L4::Udp,
                    off,
                    payload: w.buf[h..].to_vec(),
                    kind: Extra::Dup,
                    original: Vec::new(),
                });
            }
            self.send(w, s, L4::Udp, frag)?;
            let more = next_dir.is_some() || !self.extra.is_empty();
            return Ok(more.then(|| {
                if next_dir.is_some_and(|d| d != s) {
                    self.rtt()
                } else {
                    self.next_gap()
                }
            }));
        }
    }

    /// The truth line (consumes the hashes).
    pub(super) fn truth(&mut self, cx: &Cx) -> CampusFlowTruth {
        // Held back or queued data never emitted is lost for the capture.
        let mut pend: Vec<Owned> = self.held.take().into_iter().collect();
        pend.extend(self.extra.drain(..));
        for o in pend {
            if o.kind == Extra::Held {
                self.imp.lost += 1;
                let v = &mut self.lost[o.s];
                v.push(ByteRange {
                    start: o.off,
                    end: o.off + o.payload.len() as u64,
                });
                *v = crate::truth::merge(std::mem::take(v));
            }
        }
        let sent = self.sent;
        let sigs = self
            .sigs
            .drain(..)
            .filter(|t| {
                let s = usize::from(t.dir != "to_server");
                t.offset + cx.signatures[t.pattern_index].len() as u64 <= sent[s]
            })
            .collect::<Vec<_>>();
        let mut dir = |s: usize| {
            let h = std::mem::take(&mut self.hash[s]);
            CampusDirectionTruth {
                packets: self.packets[s],
                ip_bytes: self.ip_bytes[s],
                datagrams: self.datagrams[s],
                datagram_bytes: self.datagram_bytes[s],
                stream_len: self.sent[s],
                sha256: hex::encode(h.finalize()),
                lost: std::mem::take(&mut self.lost[s]),
                conflicts: std::mem::take(&mut self.conflicts[s]),
            }
        };
        let to_server = dir(0);
        let to_client = dir(1);
        CampusFlowTruth {
            id: self.id,
            label: self.app.label().into(),
            proto: if self.ends.tcp {
                Protocol::Tcp
            } else {
                Protocol::Udp
            },
            client: self.ends.addr(0),
            server: self.ends.addr(1),
            vlan: if self.ends.vlan != 0 {
                vec![self.ends.vlan]
            } else {
                vec![]
            },
            end: self.end,
            elephant: self.elephant,
            to_server,
            to_client,
            impairments: self.imp,
            signatures: sigs,
        }
    }
}

// ---------------------------------------------------------------------------
// The generator.
