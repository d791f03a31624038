//! The indirection table: which worker owns each flow-hash bucket, like a
//! NIC's RSS redirection table, changed between packets when buckets move.

use super::bucket::{BucketSet, BUCKETS};

/// Bucket → worker, with a version number bumped by every change.
///
/// The router reads [`owner`](Self::owner) per packet; a change
/// ([`move_buckets`](Self::move_buckets), [`assign`](Self::assign)) takes
/// effect at a packet boundary, with the moved buckets' connections handed
/// from the old owner to the new one ([`crate::Worker::export_buckets`],
/// [`crate::Worker::import_handover`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndirectionTable {
    owner: Vec<u16>,
    workers: usize,
    version: u64,
}

impl IndirectionTable {
    /// `workers` workers (at least 1, at most 65,536), bucket `b` owned by
    /// worker `b mod workers` to begin with; version 0.
    pub fn spread(workers: usize) -> IndirectionTable {
        let workers = workers.clamp(1, 1 << 16);
        IndirectionTable {
            owner: (0..BUCKETS).map(|b| (b % workers) as u16).collect(),
            workers,
            version: 0,
        }
    }

    /// How many workers share the buckets.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// The table's version: how many changes it went through.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The worker that owns `bucket` (worker 0 for a bucket past
    /// [`BUCKETS`], which the bucket function never gives).
    #[inline]
    pub fn owner(&self, bucket: u16) -> usize {
        self.owner
            .get(usize::from(bucket))
            .map_or(0, |&w| usize::from(w))
    }

    /// The buckets `worker` owns.
    pub fn buckets_of(&self, worker: usize) -> BucketSet {
        (0..BUCKETS as u16)
            .filter(|&b| self.owner(b) == worker)
            .collect()
    }

    /// Gives every bucket of `buckets` to worker `to` (buckets it already
    /// owns stay). Returns the new version, or `None` (nothing changed)
    /// when `to` is not a worker of the table.
    pub fn assign(&mut self, buckets: &BucketSet, to: usize) -> Option<u64> {
        let to16 = u16::try_from(to).ok().filter(|_| to < self.workers)?;
        for b in buckets.iter() {
            if let Some(o) = self.owner.get_mut(usize::from(b)) {
                *o = to16;
            }
        }
        self.version += 1;
        Some(self.version)
    }

    /// Moves up to `how_many` of worker `from`'s buckets to worker `to`
    /// and returns them (empty when `from` owns none, `from == to`, or
    /// either is not a worker of the table). The buckets taken are the
    /// highest-numbered ones `from` owns: buckets are hash ranges, so any
    /// choice moves an expected `how_many / BUCKETS` of the flows; a caller
    /// that measures per-bucket load picks its own set and calls
    /// [`assign`](Self::assign).
    pub fn move_buckets(&mut self, from: usize, to: usize, how_many: usize) -> BucketSet {
        if from == to || from >= self.workers || to >= self.workers {
            return BucketSet::new();
        }
        let set: BucketSet = (0..BUCKETS as u16)
            .rev()
            .filter(|&b| self.owner(b) == from)
            .take(how_many)
            .collect();
        if !set.is_empty() {
            self.assign(&set, to);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_move_and_version() {
        let mut t = IndirectionTable::spread(3);
        let sizes: Vec<usize> = (0..3).map(|w| t.buckets_of(w).len()).collect();
        assert_eq!(sizes.iter().sum::<usize>(), BUCKETS);
        assert!(sizes.iter().all(|&n| n >= BUCKETS / 3));
        let moved = t.move_buckets(0, 2, 10);
        assert_eq!(moved.len(), 10);
        assert_eq!(t.version(), 1);
        assert!(moved.iter().all(|b| t.owner(b) == 2));
        assert_eq!(t.buckets_of(0).len(), sizes[0] - 10);
        assert!(t.move_buckets(1, 1, 5).is_empty());
        assert!(t.move_buckets(0, 3, 5).is_empty());
        assert_eq!(t.assign(&moved, 7), None);
        assert_eq!(t.version(), 1);
        let all = t.move_buckets(1, 0, usize::MAX);
        assert_eq!(all.len(), sizes[1]);
        assert!(t.buckets_of(1).is_empty());
    }
}
