//! Paced replay of a capture file: packets fall due on a schedule, and
//! those that fall due while the capture stage is busy wait in a modelled
//! kernel ring, which drops what it has no room for.
//!
//! A file is normally read as fast as the engine takes it. With a [`Pace`]
//! ([`crate::CaptureBuilder::pace`]) each packet instead falls due at a time
//! of its own, in virtual time kept by the capture stage itself (the thread
//! that runs the read loop; there is no pacer thread): time 0 is the moment
//! the first packet is read, and packet `k` falls due at
//!
//! - [`Pace::Rate`]: when its last bit has arrived at that bit rate, counting
//!   the on-the-wire length of every packet up to and including it
//!   ([`crate::RawPacket::orig_len`]; no Ethernet preamble, start delimiter
//!   or inter-frame gap is added);
//! - [`Pace::Pps`]: `k / rate` seconds (the first packet at once);
//! - [`Pace::Speed`]: `(ts_k - ts_0) / factor` of the trace's own
//!   timestamps, never earlier than the packet before it (timestamps that
//!   go backwards do not move time back).
//!
//! Before the capture stage hands packet `k` to the engine, the [`Pacer`]
//! either waits for it ([`clock`]: it sleeps, and yields the CPU only for
//! the last tens of microseconds) or, if it is late, finds that it has been
//! waiting in the ring since it fell due: if the ring had no room for it
//! then ([`ring`]), it is a *ring drop*, never handed to the engine
//! ([`crate::GlobalStats::ring_drops`]). Every packet of the file is paced
//! and offered to the ring, as a network card sees every frame; a filter
//! ([`crate::RunHooks::inspect`]) and the packet limit apply afterwards, to
//! the packets the ring let through.
//!
//! - [`schedule`]: when each packet falls due.
//! - [`ring`]: the ring model: what a `TPACKET_V3` ring of a given size holds and drops.
//! - [`clock`]: the capture stage's clock and how it waits.

pub mod clock;
pub mod ring;
pub mod schedule;

pub use clock::{Clock, WallClock};
pub use ring::{frame_cost, RingModel, DEFAULT_RING_SIZE, FRAME_HEADER};
pub use schedule::Schedule;

use crate::source::RawPacket;
use crate::stats::GlobalStats;
use std::fmt;
use std::sync::atomic::AtomicBool;

/// How fast a capture file is replayed ([`crate::CaptureBuilder::pace`]).
/// Every value must be finite and above 0 ([`Pace::check`]).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Pace {
    /// Bits per second, counting each packet's on-the-wire length
    /// ([`crate::RawPacket::orig_len`]) without preamble or inter-frame gap.
    Rate {
        /// The bit rate.
        bits_per_sec: f64,
    },
    /// Packets per second.
    Pps {
        /// The packet rate.
        packets_per_sec: f64,
    },
    /// A multiple of the trace's own pace: 2.0 replays it twice as fast as
    /// it was captured, 0.5 at half speed.
    Speed(f64),
}

/// A [`Pace`] whose value is not a finite number above 0.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct PaceError(pub Pace);

impl fmt::Display for PaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, v) = match self.0 {
            Pace::Rate { bits_per_sec } => ("bit rate", bits_per_sec),
            Pace::Pps { packets_per_sec } => ("packet rate", packets_per_sec),
            Pace::Speed(f) => ("speed factor", f),
        };
        write!(f, "{what} {v}: expected a finite number above 0")
    }
}

impl std::error::Error for PaceError {}

impl Pace {
    /// The pace itself if its value is a finite number above 0.
    pub fn check(self) -> Result<Pace, PaceError> {
        let v = match self {
            Pace::Rate { bits_per_sec } => bits_per_sec,
            Pace::Pps { packets_per_sec } => packets_per_sec,
            Pace::Speed(f) => f,
        };
        if v.is_finite() && v > 0.0 {
            Ok(self)
        } else {
            Err(PaceError(self))
        }
    }
}

/// What pacing measured, beside the ring drops themselves
/// ([`crate::GlobalStats::ring_drops`]). Times are nanoseconds of the
/// capture stage's clock.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PaceStats {
    /// Bytes the modelled ring holds.
    pub ring_size: u64,
    /// Most bytes the ring held at once ([`RingModel::peak`]).
    pub ring_peak: u64,
    /// Time the capture stage spent waiting for packets to fall due.
    pub idle_ns: u64,
    /// How long after it fell due a packet was taken, at most (0 if the
    /// capture stage kept up with every packet).
    pub max_late_ns: u64,
}

impl PaceStats {
    /// Adds the figures of another worker: sizes, peaks and idle time add
    /// up (as memory budgets do in [`crate::GlobalStats::merge`]), the
    /// lateness is the larger.
    pub fn merge(&mut self, o: &PaceStats) {
        self.ring_size = self.ring_size.saturating_add(o.ring_size);
        self.ring_peak = self.ring_peak.saturating_add(o.ring_peak);
        self.idle_ns = self.idle_ns.saturating_add(o.idle_ns);
        self.max_late_ns = self.max_late_ns.max(o.max_late_ns);
    }
}

/// What [`Pacer::admit`] decided for a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Admit {
    /// The packet is due and was in the ring: hand it to the engine now.
    Take,
    /// The ring had no room for the packet when it fell due: a ring drop.
    Drop,
    /// The stop flag was set while waiting for the packet.
    Stop,
}

/// Paces the packets of one capture stage: the schedule, the ring and the
/// clock together. Offer it every packet read, in order, just before the
/// packet would be handed to the engine.
#[derive(Debug)]
pub struct Pacer<C: Clock = WallClock> {
    schedule: Schedule,
    ring: RingModel,
    clock: C,
    /// The clock's reading when the first packet was offered.
    origin: Option<u64>,
    idle_ns: u64,
    max_late_ns: u64,
    drops: u64,
    drop_bytes: u64,
}

impl<C: Clock> Pacer<C> {
    /// A pacer with a ring of `ring_size` bytes, on `clock`.
    pub fn new(pace: Pace, ring_size: u64, clock: C) -> Pacer<C> {
        Pacer {
            schedule: Schedule::new(pace),
            ring: RingModel::new(ring_size),
            clock,
            origin: None,
            idle_ns: 0,
            max_late_ns: 0,
            drops: 0,
            drop_bytes: 0,
        }
    }

    /// Decides the next packet: waits until it falls due if it is early
    /// (returning [`Admit::Stop`] if `stop` is set meanwhile), takes it if
    /// it is due and the ring had room for it when it fell due, and drops
    /// it otherwise. Reads the clock once, and once more after a wait that
    /// a stop ended.
    pub fn admit(&mut self, pkt: &RawPacket<'_>, stop: Option<&AtomicBool>) -> Admit {
        let now_abs = self.clock.now_ns();
        let origin = *self.origin.get_or_insert(now_abs);
        let now = now_abs.saturating_sub(origin);
        let due = self.schedule.next_due(pkt.ts, pkt.orig_len);
        let take = if now < due {
            match self.clock.wait_until(origin.saturating_add(due), stop) {
                Some(reached) => {
                    let reached = reached.saturating_sub(origin).max(due);
                    self.idle_ns = self.idle_ns.saturating_add(reached - now);
                    reached
                }
                None => {
                    let t = self.clock.now_ns().saturating_sub(origin);
                    self.idle_ns = self.idle_ns.saturating_add(t.saturating_sub(now));
                    return Admit::Stop;
                }
            }
        } else {
            self.max_late_ns = self.max_late_ns.max(now - due);
            now
        };
        if self.ring.offer(due, take, frame_cost(pkt.data.len())) {
            Admit::Take
        } else {
            self.drops += 1;
            self.drop_bytes = self.drop_bytes.saturating_add(u64::from(pkt.orig_len));
            Admit::Drop
        }
    }

    /// Packets dropped so far, and their on-the-wire bytes.
    pub fn ring_drops(&self) -> (u64, u64) {
        (self.drops, self.drop_bytes)
    }

    /// What pacing measured so far.
    pub fn stats(&self) -> PaceStats {
        PaceStats {
            ring_size: self.ring.size(),
            ring_peak: self.ring.peak(),
            idle_ns: self.idle_ns,
            max_late_ns: self.max_late_ns,
        }
    }

    /// Adds the ring drops and what pacing measured to a worker's
    /// statistics ([`GlobalStats::ring_drops`], [`GlobalStats::pace`]).
    pub fn add_to(&self, stats: &mut GlobalStats) {
        stats.ring_drops += self.drops;
        stats.ring_drop_bytes = stats.ring_drop_bytes.saturating_add(self.drop_bytes);
        stats.pace = Some(self.stats());
    }

    /// The clock.
    pub fn clock(&self) -> &C {
        &self.clock
    }
}

#[cfg(test)]
pub(crate) mod tests;
