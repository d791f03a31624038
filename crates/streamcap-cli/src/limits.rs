//! Size options bounded by the machine: what a run may allocate (the
//! memory budget, chunk buffers, the kernel rings of a live capture) must
//! fit in physical memory, or the run is refused before it starts (exit 2)
//! instead of letting the kernel's OOM killer pick a victim.
//!
//! The options and what bounds them:
//!
//! | option | allocates | bound |
//! |---|---|---|
//! | `--memory` | up to that much stream data (chunks, out-of-order segments) | physical memory |
//! | `--chunk` | one buffer per stream, held in the budget | each worker's share of the budget |
//! | `--ring-size` | live: that much kernel memory per worker, at once, pinned; a paced file: a model of such a ring, up to 16 bytes per 80 of it | rings of all workers + budget ≤ physical memory |
//! | `--snaplen` | nothing beyond the ring | at most `MAX_SNAPLEN` (checked in `live.rs`) |
//! | `--cutoff*`, `--cutoff-class` | nothing: a cutoff limits what is delivered, not what is held | none needed |
//! | `--workers` | a thread, an engine and output batches each | at most `MAX_WORKERS` (checked in `run.rs`) |
//! | `--locality-batch` | per worker, a batch of that many packets, copied | at most `MAX_LOCALITY_BATCH` packets (checked in `run.rs`), and bytes: [`locality_bytes`] |
//!
//! Read buffers (a record longer than the 1 MiB window widens it up to the
//! library's 16 MiB record limit), output batches and the flow table's
//! limit are fixed by the library and the CLI, not options.

use crate::size::binary;

/// The memory budget when `--memory` is not given (the library's default).
pub fn default_memory() -> u64 {
    streamcap::Config::default().memory_size as u64
}

/// The most bytes one worker's locality batch holds (`--locality-batch`):
/// the library's default, 64 MiB, or less so that the batches of all
/// `workers` together hold at most a quarter of `physical` bytes of memory
/// (but at least 1 MiB each); a batch that reaches it is processed whatever
/// its packet count.
pub fn locality_bytes(workers: u64, physical: Option<u64>) -> usize {
    let default = streamcap::dispatch::locality::DEFAULT_LOCALITY_BYTES as u64;
    let share = physical.map_or(default, |p| p / 4 / workers.max(1));
    usize::try_from(share.clamp(1 << 20, default)).unwrap_or(usize::MAX)
}

/// The sizes a run asks for, given or default.
#[derive(Copy, Clone, Debug)]
pub struct Sizes {
    /// `--memory`, if given.
    pub memory: Option<u64>,
    /// `--chunk`, if given.
    pub chunk: Option<u64>,
    /// `--ring-size` (live capture, or a paced replay of a file;
    /// `Some(default)` for such a run without the option), with whether it
    /// was given.
    pub ring: Option<(u64, bool)>,
    /// The ring is a paced replay's model, not the kernel's.
    pub modelled_ring: bool,
    /// Worker threads.
    pub workers: u64,
}

/// Checks `s` against `physical` bytes of memory (`None`: unknown, only the
/// checks that do not need it are made). The error is a usage error's
/// message naming the option, the value and the bound.
pub fn check(s: &Sizes, physical: Option<u64>) -> Result<(), String> {
    let workers = s.workers.max(1);
    let memory = s.memory.unwrap_or_else(default_memory);
    if let (Some(m), Some(phys)) = (s.memory, physical) {
        if m > phys {
            return Err(format!(
                "--memory {}: more than this machine's physical memory ({}); the budget is memory the run may really use",
                binary(m),
                binary(phys)
            ));
        }
    }
    let share = memory / workers;
    if let Some(c) = s.chunk {
        if c > share {
            let how = if workers > 1 {
                format!("--memory {} / {workers} workers", binary(memory))
            } else {
                format!("--memory {}", binary(memory))
            };
            return Err(format!(
                "--chunk {}: larger than a worker's memory budget ({} = {how}); a chunk is held in that budget until it is delivered",
                binary(c),
                binary(share)
            ));
        }
    }
    if let (Some((ring, given)), Some(phys)) = (s.ring, physical) {
        let rings = ring.saturating_mul(workers);
        let total = rings.saturating_add(memory);
        if (given || s.memory.is_some()) && total > phys {
            let per = if workers > 1 {
                format!(" x {workers} workers")
            } else {
                String::new()
            };
            let why = if s.modelled_ring {
                "a paced replay models the ring a live capture would allocate"
            } else {
                "the kernel allocates the rings at once and cannot swap them"
            };
            return Err(format!(
                "--ring-size {}{per} + memory budget {} = {}: more than this machine's physical memory ({}); {why}",
                binary(ring),
                binary(memory),
                binary(total),
                binary(phys)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn sizes() -> Sizes {
        Sizes {
            memory: None,
            chunk: None,
            ring: None,
            modelled_ring: false,
            workers: 1,
        }
    }

    #[test]
    fn every_size_is_bounded() {
        let phys = Some(24 * GIB);
        assert!(check(&sizes(), phys).is_ok());
        let e = check(
            &Sizes {
                ring: Some((100 * GIB, true)),
                ..sizes()
            },
            phys,
        )
        .expect_err("ring");
        assert!(
            e.contains("--ring-size 100 GiB") && e.contains("24 GiB"),
            "{e}"
        );
        // Each worker has a ring.
        let rings = Sizes {
            ring: Some((8 * GIB, true)),
            workers: 3,
            ..sizes()
        };
        assert!(check(&rings, phys).is_err());
        assert!(check(
            &Sizes {
                workers: 2,
                ..rings
            },
            phys
        )
        .is_ok());
        let e = check(
            &Sizes {
                memory: Some(100 * GIB),
                ..sizes()
            },
            phys,
        )
        .expect_err("memory");
        assert!(e.contains("--memory 100 GiB"), "{e}");
        let e = check(
            &Sizes {
                chunk: Some(GIB),
                ..sizes()
            },
            phys,
        )
        .expect_err("chunk");
        assert!(e.contains("--chunk 1 GiB") && e.contains("512 MiB"), "{e}");
        let ok = Sizes {
            chunk: Some(GIB),
            memory: Some(4 * GIB),
            workers: 4,
            ..sizes()
        };
        assert!(check(&ok, phys).is_ok());
        assert!(check(&Sizes { workers: 5, ..ok }, phys).is_err());
        // Defaults alone are never refused, whatever the machine.
        let live = Sizes {
            ring: Some((32 << 20, false)),
            ..sizes()
        };
        assert!(check(&live, Some(256 << 20)).is_ok());
        // A paced replay's ring is a model, held to the same bound.
        let e = check(
            &Sizes {
                ring: Some((100 * GIB, true)),
                modelled_ring: true,
                ..sizes()
            },
            phys,
        )
        .expect_err("modelled ring");
        assert!(
            e.contains("--ring-size 100 GiB") && e.contains("a paced replay models the ring"),
            "{e}"
        );
        // Unknown memory: only the relative bounds.
        assert!(check(
            &Sizes {
                memory: Some(1 << 50),
                ..sizes()
            },
            None
        )
        .is_ok());
    }

    #[test]
    fn locality_batches_hold_at_most_a_quarter_of_memory() {
        const MIB: u64 = 1 << 20;
        let default = 64 * MIB as usize;
        assert_eq!(locality_bytes(1, Some(24 * GIB)), default);
        assert_eq!(
            locality_bytes(256, Some(24 * GIB)),
            (24 * GIB / 4 / 256) as usize
        );
        assert_eq!(locality_bytes(2, Some(256 * MIB)), 32 * MIB as usize);
        assert_eq!(locality_bytes(64, Some(64 * MIB)), MIB as usize);
        assert_eq!(locality_bytes(0, None), default);
    }
}
