//! Prioritized packet loss (PPL, Scap §II-B): when the memory budget fills,
//! which packets' payload is given up, so that the loss falls on
//! low-priority streams and on the long tails of streams.
//!
//! Priorities are small integers, larger = more important. The `n` distinct
//! priorities in use, sorted, are numbered `i = 1..=n` (their *levels*). The
//! memory above the base threshold is divided by `n + 1` equally spaced
//! watermarks: watermark 0 is the base threshold, watermark `n` the memory
//! size. When a packet carrying payload arrives for a stream of level `i`,
//! with `used` bytes of the budget in use:
//!
//! - `used` at or below the base threshold: the packet is kept;
//! - `used` above watermark `i`: its payload is dropped;
//! - `used` between watermarks `i - 1` and `i`: its payload is dropped if
//!   its first byte lies at or beyond the stream's overload cutoff (when one
//!   is set), else kept.
//!
//! Packets that create or end streams are never judged: a TCP segment with
//! SYN, FIN or RST and the first packet of each direction of a UDP (or other
//! datagram) flow are always processed, so every flow is still created,
//! ended and counted. A dropped payload is accounted as `dropped` in its
//! stream (a gap, as when the budget itself refuses bytes); the packet's
//! headers are still tracked (sequence numbers, acknowledgments, counters).
//!
//! The levels in use are the default priority, the priorities of the
//! priority classes, and every priority a callback has set
//! ([`crate::Stream::set_priority`]), from the moment it is set. The
//! watermarks move when a level joins; levels never leave during a run.

use super::StreamCounters;

/// Why PPL dropped a packet's payload.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PplRule {
    /// Memory in use was above the watermark of the stream's level.
    Watermark,
    /// Memory in use was between the watermarks below and at the stream's
    /// level, and the packet lay beyond the overload cutoff.
    OverloadCutoff,
}

/// The per-priority-level figures of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// The priority.
    pub priority: u8,
    /// Packets whose payload PPL dropped because of the watermark rule.
    pub ppl_watermark_packets: u64,
    /// Packets whose payload PPL dropped because of the overload cutoff.
    pub ppl_cutoff_packets: u64,
    /// Payload bytes (on the wire) of the packets PPL dropped.
    pub ppl_bytes: u64,
    /// Streams that terminated with this priority.
    pub streams: u64,
    /// The sum of those streams' counters (`dropped` holds both what PPL
    /// and what the memory budget dropped; `missing` what never reached
    /// the engine).
    pub totals: StreamCounters,
}

impl LevelStats {
    /// Packets whose payload PPL dropped, by either rule.
    pub fn ppl_packets(&self) -> u64 {
        self.ppl_watermark_packets + self.ppl_cutoff_packets
    }
}

/// Overload-control figures by priority, sorted by priority.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OverloadStats {
    /// One entry per priority that had a stream or a PPL drop, and one for
    /// the default priority in the statistics of a worker
    /// ([`crate::Worker::stats`]).
    pub levels: Vec<LevelStats>,
}

impl OverloadStats {
    /// The entry of `priority`, created if needed.
    pub fn level_mut(&mut self, priority: u8) -> &mut LevelStats {
        let at = match self.levels.binary_search_by_key(&priority, |l| l.priority) {
            Ok(i) => i,
            Err(i) => {
                self.levels.insert(
                    i,
                    LevelStats {
                        priority,
                        ..LevelStats::default()
                    },
                );
                i
            }
        };
        &mut self.levels[at]
    }

    /// The entry of `priority`, if any.
    pub fn level(&self, priority: u8) -> Option<&LevelStats> {
        self.levels.iter().find(|l| l.priority == priority)
    }

    /// Packets PPL dropped, all levels.
    pub fn ppl_packets(&self) -> u64 {
        self.levels.iter().map(LevelStats::ppl_packets).sum()
    }

    /// Adds another worker's figures.
    pub fn add(&mut self, o: &OverloadStats) {
        for l in &o.levels {
            let me = self.level_mut(l.priority);
            me.ppl_watermark_packets += l.ppl_watermark_packets;
            me.ppl_cutoff_packets += l.ppl_cutoff_packets;
            me.ppl_bytes += l.ppl_bytes;
            me.streams += l.streams;
            me.totals.add(&l.totals);
        }
    }
}

/// The PPL state of one worker: the levels in use and the watermarks over
/// its memory budget.
#[derive(Clone, Debug)]
pub struct Overload {
    limit: usize,
    base: usize,
    /// The priorities in use, as a bit set.
    levels: [u64; 4],
    /// How many priorities are in use (at least 1).
    n: u32,
    /// Stream offset from which a packet is dropped between watermarks
    /// (`u64::MAX`: no overload cutoff).
    overload_cutoff: u64,
}

impl Overload {
    /// PPL over a budget of `limit` bytes: `base_threshold` is the fraction
    /// of it below which nothing is dropped (clamped to 0..=1), the given
    /// priorities are in use from the start.
    pub fn new(
        limit: usize,
        base_threshold: f64,
        overload_cutoff: Option<u64>,
        priorities: impl IntoIterator<Item = u8>,
    ) -> Overload {
        let fraction = if base_threshold.is_nan() {
            1.0
        } else {
            base_threshold.clamp(0.0, 1.0)
        };
        let base = ((limit as f64) * fraction) as usize;
        let mut o = Overload {
            limit,
            base: base.min(limit),
            levels: [0; 4],
            n: 0,
            overload_cutoff: overload_cutoff.unwrap_or(u64::MAX),
        };
        for p in priorities {
            o.note(p);
        }
        o
    }

    /// The base threshold, bytes (watermark 0).
    pub fn base(&self) -> usize {
        self.base
    }

    /// The number of priority levels in use.
    pub fn levels_in_use(&self) -> u32 {
        self.n
    }

    /// Adds `priority` to the levels in use.
    pub fn note(&mut self, priority: u8) {
        let (word, bit) = (usize::from(priority / 64), priority % 64);
        if self.levels[word] & (1 << bit) == 0 {
            self.levels[word] |= 1 << bit;
            self.n += 1;
        }
    }

    /// The level (1-based rank among the priorities in use) of `priority`,
    /// which must be in use.
    fn level_of(&self, priority: u8) -> u32 {
        let (word, bit) = (usize::from(priority / 64), u32::from(priority % 64));
        let below: u32 = self.levels[..word].iter().map(|w| w.count_ones()).sum();
        let mask = if bit == 63 {
            u64::MAX
        } else {
            (1u64 << (bit + 1)) - 1
        };
        below + (self.levels[word] & mask).count_ones()
    }

    /// Watermark `i` (0 = the base threshold, `n` = the memory size), bytes.
    pub fn watermark(&self, i: u32) -> usize {
        let n = u128::from(self.n.max(1));
        let span = (self.limit - self.base) as u128;
        self.base + (span * u128::from(i.min(self.n.max(1))) / n) as usize
    }

    /// Whether memory in use is above the base threshold: only then is a
    /// packet judged. One comparison, for the per-packet path.
    #[inline(always)]
    pub fn pressured(&self, used: usize) -> bool {
        used > self.base
    }

    /// Judges a packet as [`Overload::judge`] does and counts a drop in
    /// `stats` under `priority` (`wire`: the payload's bytes on the wire).
    /// Returns whether the payload is dropped. Kept off the per-packet path:
    /// callers test [`Overload::pressured`] first, the one comparison a
    /// packet pays while memory in use is below the base threshold.
    #[cold]
    #[inline(never)]
    pub fn drops(
        &mut self,
        stats: &mut OverloadStats,
        used: usize,
        priority: u8,
        offset: u64,
        wire: u64,
    ) -> bool {
        let Some(rule) = self.judge(used, priority, offset) else {
            return false;
        };
        let level = stats.level_mut(priority);
        match rule {
            PplRule::Watermark => level.ppl_watermark_packets += 1,
            PplRule::OverloadCutoff => level.ppl_cutoff_packets += 1,
        }
        level.ppl_bytes += wire;
        true
    }

    /// Judges a packet carrying payload of a stream of `priority`, whose
    /// first byte lies at stream offset `offset`, while `used` bytes of the
    /// budget are in use. `None` keeps it. Control packets (SYN, FIN, RST,
    /// a datagram stream's first packet) must not be judged.
    pub fn judge(&mut self, used: usize, priority: u8, offset: u64) -> Option<PplRule> {
        if !self.pressured(used) {
            return None;
        }
        self.note(priority);
        let i = self.level_of(priority);
        if used > self.watermark(i) {
            Some(PplRule::Watermark)
        } else if used > self.watermark(i - 1) && offset >= self.overload_cutoff {
            Some(PplRule::OverloadCutoff)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two levels (0 and 1) over 1000 bytes with base 50 %: watermarks
    /// 500, 750, 1000.
    fn two_levels(cutoff: Option<u64>) -> Overload {
        Overload::new(1000, 0.5, cutoff, [0, 1])
    }

    #[test]
    fn watermarks_are_equally_spaced_above_the_base() {
        let o = two_levels(None);
        assert_eq!(o.levels_in_use(), 2);
        assert_eq!(
            (0..=2).map(|i| o.watermark(i)).collect::<Vec<_>>(),
            [500, 750, 1000]
        );
        let three = Overload::new(1000, 0.4, None, [7, 0, 200]);
        assert_eq!(
            (0..=3).map(|i| three.watermark(i)).collect::<Vec<_>>(),
            [400, 600, 800, 1000]
        );
        assert_eq!(
            (three.level_of(0), three.level_of(7), three.level_of(200)),
            (1, 2, 3)
        );
    }

    #[test]
    fn below_the_base_threshold_nothing_is_dropped() {
        let mut o = two_levels(Some(0));
        for used in [0, 1, 499, 500] {
            assert_eq!(o.judge(used, 0, u64::MAX - 1), None, "{used}");
            assert_eq!(o.judge(used, 1, u64::MAX - 1), None, "{used}");
        }
    }

    #[test]
    fn above_its_watermark_a_level_is_dropped() {
        let mut o = two_levels(None);
        // Level 1 (priority 0) loses everything above 750 ...
        assert_eq!(o.judge(750, 0, 0), None);
        assert_eq!(o.judge(751, 0, 0), Some(PplRule::Watermark));
        // ... level 2 (priority 1) nothing below the memory size.
        assert_eq!(o.judge(999, 1, 0), None);
        assert_eq!(o.judge(1000, 1, 0), None);
    }

    #[test]
    fn between_watermarks_the_overload_cutoff_decides() {
        let mut o = two_levels(Some(100));
        // Priority 0 between watermark 0 (500) and 1 (750).
        assert_eq!(o.judge(600, 0, 99), None);
        assert_eq!(o.judge(600, 0, 100), Some(PplRule::OverloadCutoff));
        // Priority 1 is below its lower watermark (750) at 600: kept.
        assert_eq!(o.judge(600, 1, 100_000), None);
        // ... and between 750 and 1000 its tail goes.
        assert_eq!(o.judge(800, 1, 99), None);
        assert_eq!(o.judge(800, 1, 100), Some(PplRule::OverloadCutoff));
        // Without an overload cutoff, nothing goes between watermarks.
        let mut none = two_levels(None);
        assert_eq!(none.judge(600, 0, u64::MAX - 1), None);
    }

    #[test]
    fn one_level_loses_only_its_tails() {
        let mut o = Overload::new(1000, 0.5, Some(10), [0]);
        assert_eq!(o.watermark(1), 1000);
        assert_eq!(o.judge(999, 0, 9), None);
        assert_eq!(o.judge(999, 0, 10), Some(PplRule::OverloadCutoff));
    }

    #[test]
    fn a_new_priority_joins_the_levels_and_moves_the_watermarks() {
        let mut o = Overload::new(1000, 0.5, None, [0]);
        assert_eq!(o.judge(900, 0, 0), None);
        // A callback raised a stream to 5: now two levels, 500/750/1000.
        assert_eq!(o.judge(900, 5, 0), None);
        assert_eq!(o.levels_in_use(), 2);
        assert_eq!(o.judge(900, 0, 0), Some(PplRule::Watermark));
    }

    #[test]
    fn odd_thresholds_are_clamped() {
        let o = Overload::new(1000, 7.0, None, [0]);
        assert_eq!(o.base(), 1000);
        let o = Overload::new(1000, -1.0, None, [0]);
        assert_eq!(o.base(), 0);
        let o = Overload::new(1000, f64::NAN, None, [0]);
        assert_eq!(o.base(), 1000);
        let o = Overload::new(0, 0.5, None, []);
        assert_eq!(o.watermark(0), 0);
        assert!(!o.pressured(0));
    }

    #[test]
    fn level_stats_merge_by_priority() {
        let mut a = OverloadStats::default();
        a.level_mut(3).ppl_watermark_packets = 2;
        a.level_mut(0).streams = 1;
        let mut b = OverloadStats::default();
        b.level_mut(3).ppl_cutoff_packets = 5;
        b.level_mut(1).streams = 4;
        a.add(&b);
        let p: Vec<_> = a.levels.iter().map(|l| l.priority).collect();
        assert_eq!(p, [0, 1, 3]);
        assert_eq!(a.ppl_packets(), 7);
        assert_eq!(a.level(3).map(LevelStats::ppl_packets), Some(7));
    }
}
