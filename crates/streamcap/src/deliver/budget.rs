//! The memory budget: one bounded, accounted pool for all stream data.
//!
//! Chunk buffers, out-of-order segments and per-packet records are charged
//! here before they are stored and released when they are freed. When a
//! charge does not fit, the caller drops the data and counts it. This is the
//! single place where "is there room?" is decided, so overload control
//! (priorities and watermarks, Scap II-B) can be built on it.

/// The stream-data memory budget (Scap's `memory_size`).
#[derive(Clone, Debug)]
pub struct Budget {
    limit: usize,
    used: usize,
    peak: usize,
    refused: u64,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Budget {
        Budget {
            limit,
            used: 0,
            peak: 0,
            refused: 0,
        }
    }

    /// Charges `n` bytes if they fit; returns whether they did.
    #[inline]
    pub fn try_charge(&mut self, n: usize) -> bool {
        let want = self.used.saturating_add(n);
        if want > self.limit {
            self.refused += 1;
            return false;
        }
        self.used = want;
        self.peak = self.peak.max(want);
        true
    }

    /// Charges `n` bytes that already exist elsewhere and move here (the
    /// stream data of flows handed over from another worker): charged even
    /// past the limit, since refusing would not free them; the overload
    /// control then sees the higher usage.
    pub fn charge_moved(&mut self, n: usize) {
        self.used = self.used.saturating_add(n);
        self.peak = self.peak.max(self.used);
    }

    /// Returns `n` bytes to the budget.
    #[inline]
    pub fn release(&mut self, n: usize) {
        debug_assert!(n <= self.used, "released {n} > used {}", self.used);
        self.used = self.used.saturating_sub(n);
    }

    /// Bytes in use.
    pub fn used(&self) -> usize {
        self.used
    }

    /// The configured limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The highest usage seen.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// How many charges were refused.
    pub fn refusals(&self) -> u64 {
        self.refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_within_limit_only() {
        let mut b = Budget::new(10);
        assert!(b.try_charge(6));
        assert!(!b.try_charge(5));
        assert!(b.try_charge(4));
        b.release(10);
        assert_eq!((b.used(), b.peak(), b.refusals()), (0, 10, 1));
    }
}
