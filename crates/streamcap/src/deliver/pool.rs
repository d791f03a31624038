//! Spare chunk-buffer vectors, kept by a worker so that streams which start,
//! grow and end do not each go through the allocator.
//!
//! A stream's chunk buffer starts small and doubles up to the chunk size (most
//! streams are short; see `Cx::commit_data`). With the system allocator every
//! doubling was a `realloc` and every stream end a `free`: on the campus
//! trace in `streams` mode, `realloc` alone was 6.9 % of the instructions
//! (callgrind; glibc's large-bin bookkeeping, about 1,600 instructions a
//! call), and freed buffers went back to the kernel only to be faulted in and
//! zeroed again. The pool keeps buffers whose capacity is a power of two
//! from [`MIN_POOLED`] to [`MAX_POOLED`] bytes, one free list per capacity,
//! up to [`POOL_LIMIT`] bytes in all per worker. What does not fit is freed
//! as before.

/// Smallest capacity kept, bytes (a stream buffer's first allocation).
pub(crate) const MIN_POOLED: usize = 512;
/// Largest capacity kept, bytes.
pub(crate) const MAX_POOLED: usize = 1 << 20;
/// Total capacity the pool may hold, bytes.
pub(crate) const POOL_LIMIT: usize = 8 << 20;

const CLASSES: usize = (MAX_POOLED.trailing_zeros() - MIN_POOLED.trailing_zeros() + 1) as usize;

/// Empty byte vectors by capacity class, for reuse as chunk buffers.
///
/// Guarantees: every vector handed out by [`BufferPool::take`] is empty and
/// has room for at least the bytes asked for; the vectors held never total
/// more than [`POOL_LIMIT`] bytes of capacity.
#[derive(Debug, Default)]
pub(crate) struct BufferPool {
    free: [Vec<Vec<u8>>; CLASSES],
    /// Capacity of the vectors held, bytes.
    held: usize,
}

/// The free list of a capacity, if that capacity is pooled.
fn class_of(capacity: usize) -> Option<usize> {
    (capacity.is_power_of_two() && (MIN_POOLED..=MAX_POOLED).contains(&capacity))
        .then(|| (capacity.trailing_zeros() - MIN_POOLED.trailing_zeros()) as usize)
}

impl BufferPool {
    /// An empty vector with capacity `capacity` (at least), from the pool when
    /// it holds one of exactly that capacity.
    pub(crate) fn take(&mut self, capacity: usize) -> Vec<u8> {
        if let Some(v) = class_of(capacity).and_then(|c| self.free[c].pop()) {
            self.held -= v.capacity();
            return v;
        }
        Vec::with_capacity(capacity)
    }

    /// Takes `v` back for reuse (its bytes are dropped), or frees it when its
    /// capacity is not pooled or the pool is full.
    pub(crate) fn put(&mut self, mut v: Vec<u8>) {
        let cap = v.capacity();
        let Some(c) = class_of(cap) else {
            return;
        };
        if self.held + cap > POOL_LIMIT {
            return;
        }
        v.clear();
        self.held += cap;
        self.free[c].push(v);
    }

    /// Makes room in `v` for `additional` more bytes without the allocator's
    /// `realloc`: when `v` is too small, its bytes move to a vector of twice
    /// its capacity (or of the next power of two that holds them), from the
    /// pool when there is one, and the old vector goes back to the pool.
    /// `soft_cap` is where growth stops doubling: a buffer that needs at most
    /// `soft_cap` bytes gets no more capacity than that (the chunk size).
    pub(crate) fn reserve(&mut self, v: &mut Vec<u8>, additional: usize, soft_cap: usize) {
        let want = v.len().saturating_add(additional);
        if want <= v.capacity() {
            return;
        }
        let mut cap = want
            .max(v.capacity().saturating_mul(2))
            .max(MIN_POOLED)
            .checked_next_power_of_two()
            .unwrap_or(want);
        if want <= soft_cap {
            cap = cap.min(soft_cap);
        }
        let mut grown = self.take(cap);
        grown.extend_from_slice(v);
        let old = std::mem::replace(v, grown);
        self.put(old);
    }

    /// Capacity held for reuse, bytes.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_a_buffer_of_the_same_capacity() {
        let mut pool = BufferPool::default();
        let mut v = Vec::new();
        pool.reserve(&mut v, 100, 16 << 10);
        assert_eq!(v.capacity(), MIN_POOLED);
        v.extend_from_slice(&[7; 100]);
        let ptr = v.as_ptr();
        pool.put(v);
        assert_eq!(pool.held(), MIN_POOLED);
        let w = pool.take(MIN_POOLED);
        assert_eq!(w.as_ptr(), ptr, "the pooled vector is handed out again");
        assert!(w.is_empty());
        assert_eq!(pool.held(), 0);
    }

    #[test]
    fn growth_doubles_keeps_the_bytes_and_stops_at_the_chunk_size() {
        let mut pool = BufferPool::default();
        let mut v = Vec::new();
        let mut expect = Vec::new();
        let cs = 10_000; // not a power of two
        for i in 0..100u32 {
            let piece = [i as u8; 97];
            pool.reserve(&mut v, piece.len(), cs);
            assert!(v.capacity() >= v.len() + piece.len());
            v.extend_from_slice(&piece);
            expect.extend_from_slice(&piece);
            if v.len() <= cs {
                assert!(
                    v.capacity() <= cs.max(MIN_POOLED),
                    "capacity {}",
                    v.capacity()
                );
            }
        }
        assert_eq!(v, expect, "growing moves every byte, in order");
        // The outgrown vectors (512 .. 8192) were pooled.
        assert_eq!(pool.held(), 512 + 1024 + 2048 + 4096 + 8192);
    }

    #[test]
    fn never_holds_more_than_the_limit_nor_odd_capacities() {
        let mut pool = BufferPool::default();
        for _ in 0..(POOL_LIMIT / MAX_POOLED + 4) {
            pool.put(Vec::with_capacity(MAX_POOLED));
        }
        assert_eq!(pool.held(), POOL_LIMIT);
        pool.put(Vec::with_capacity(MIN_POOLED));
        assert_eq!(pool.held(), POOL_LIMIT);
        let mut small = BufferPool::default();
        small.put(Vec::with_capacity(1000));
        small.put(Vec::with_capacity(MAX_POOLED * 2));
        small.put(Vec::with_capacity(256));
        assert_eq!(small.held(), 0);
    }
}
