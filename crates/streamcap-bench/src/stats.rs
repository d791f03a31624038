//! Medians, spreads (min–max) and paired ratios of repeated runs.
//!
//! A ratio between two tools is taken run by run: run `i` of one tool
//! against run `i` of the other, both measured in the same round of the
//! round-robin, so that a slow spell of the machine touches both sides of
//! each ratio. The median of those per-round ratios is reported with their
//! range.

use serde::{Deserialize, Serialize};

/// Median, minimum and maximum of a set of values, and how many there were.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// The median (the mean of the two middle values for an even count).
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
    /// How many values (runs, or pairs of runs for a ratio).
    pub n: usize,
}

impl Spread {
    /// The spread of the finite values of `v`; `None` when there are none.
    pub fn of(v: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = v.into_iter().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let (&min, &max) = (v.first()?, v.last()?);
        let median = if n % 2 == 1 {
            *v.get(n / 2)?
        } else {
            (v.get(n / 2 - 1)? + v.get(n / 2)?) / 2.0
        };
        Some(Spread {
            median,
            min,
            max,
            n,
        })
    }
}

/// Per-round ratios `peer / tool` over the rounds that both have, for
/// values given as `(round, value)`. A pair is left out when either value
/// is below `floor` (a CPU time under the timer's resolution says nothing)
/// or the tool's value is not positive. `None` when no pair is left.
pub fn paired_ratio(peer: &[(usize, f64)], tool: &[(usize, f64)], floor: f64) -> Option<Spread> {
    Spread::of(tool.iter().filter_map(|&(round, t)| {
        let &(_, p) = peer.iter().find(|(r, _)| *r == round)?;
        (t > 0.0 && t >= floor && p >= floor).then(|| p / t)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_odd_even_and_empty() {
        let s = Spread::of([3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        let s = Spread::of([4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.5, 1.0, 4.0, 4));
        assert!(Spread::of([]).is_none());
        assert!(Spread::of([f64::NAN]).is_none());
        let s = Spread::of([f64::INFINITY, 5.0]).unwrap();
        assert_eq!(s.n, 1);
    }

    #[test]
    fn paired_ratio_matches_rounds() {
        // The peer has rounds 0..3, the tool 0..2 and 3 (round 2 failed
        // or was not run): ratios 2/1, 4/2, 9/3.
        let peer = [(0, 2.0), (1, 4.0), (2, 100.0), (3, 9.0)];
        let tool = [(0, 1.0), (1, 2.0), (3, 3.0)];
        let r = paired_ratio(&peer, &tool, 0.0).unwrap();
        assert_eq!((r.median, r.min, r.max, r.n), (2.0, 2.0, 3.0, 3));
    }

    #[test]
    fn paired_ratio_floor_and_zero() {
        let peer = [(0, 0.01), (1, 0.5)];
        let tool = [(0, 0.0), (1, 0.25)];
        let r = paired_ratio(&peer, &tool, 0.1).unwrap();
        assert_eq!((r.median, r.n), (2.0, 1));
        assert!(paired_ratio(&peer[..1], &tool[..1], 0.0).is_none());
        assert!(paired_ratio(&[], &tool, 0.0).is_none());
    }
}
