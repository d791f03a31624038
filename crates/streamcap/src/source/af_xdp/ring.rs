//! The four rings of an AF_XDP socket, shared with the kernel: the fill
//! ring (frames user space gives the kernel to receive into), the RX ring
//! (received packets), the TX ring (frames to send) and the completion
//! ring (sent frames coming back).
//!
//! libxdp creates and maps them and fills in a `struct xsk_ring_prod` or
//! `struct xsk_ring_cons` for each ([`XskRing`]); its functions that move
//! the indexes are `static inline` in its header, so they are written
//! here, with the same memory orderings: the side that reads the other's
//! index does so with acquire, and publishes its own with release, after
//! it has read or written the entries.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

/// `XDP_RING_NEED_WAKEUP`: the kernel waits for a syscall before it
/// looks at the ring again.
const XDP_RING_NEED_WAKEUP: u32 = 1;

/// `struct xsk_ring_prod` / `struct xsk_ring_cons` (libxdp's `xsk.h`).
#[repr(C)]
#[derive(Debug)]
pub(crate) struct XskRing {
    pub cached_prod: u32,
    pub cached_cons: u32,
    pub mask: u32,
    pub size: u32,
    pub producer: *mut u32,
    pub consumer: *mut u32,
    pub ring: *mut c_void,
    pub flags: *mut u32,
}

impl Default for XskRing {
    fn default() -> XskRing {
        XskRing {
            cached_prod: 0,
            cached_cons: 0,
            mask: 0,
            size: 0,
            producer: std::ptr::null_mut(),
            consumer: std::ptr::null_mut(),
            ring: std::ptr::null_mut(),
            flags: std::ptr::null_mut(),
        }
    }
}

/// `struct xdp_desc`: one packet in the RX or TX ring.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct XdpDesc {
    /// UMEM address of the packet's first byte.
    pub addr: u64,
    /// Its length.
    pub len: u32,
    /// Flags (multi-buffer continuation); 0 here.
    pub options: u32,
}

impl XskRing {
    /// Whether libxdp mapped the ring.
    pub fn is_mapped(&self) -> bool {
        !self.producer.is_null() && !self.consumer.is_null() && !self.ring.is_null()
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: `producer` points at the ring's producer index in the
        // ring's mapping (checked non-null by `is_mapped` when the ring was
        // set up), 4-byte aligned, alive as long as the socket, which owns
        // this ring; the kernel accesses it atomically too.
        unsafe { AtomicU32::from_ptr(self.producer) }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as for `producer`.
        unsafe { AtomicU32::from_ptr(self.consumer) }
    }

    // ----- producer side (fill, TX) -----

    /// Free entries (up to `want`, looking at the kernel's index only when
    /// the cached count is short).
    pub fn prod_free(&mut self, want: u32) -> u32 {
        let free = self.cached_cons.wrapping_sub(self.cached_prod);
        if free >= want {
            return free;
        }
        // The consumer's index is one ring behind the producer's view.
        self.cached_cons = self
            .consumer()
            .load(Ordering::Acquire)
            .wrapping_add(self.size);
        self.cached_cons.wrapping_sub(self.cached_prod)
    }

    /// Reserves `n` entries; returns the first one's index, or `None` when
    /// fewer are free.
    pub fn prod_reserve(&mut self, n: u32) -> Option<u32> {
        if self.prod_free(n) < n {
            return None;
        }
        let idx = self.cached_prod;
        self.cached_prod = self.cached_prod.wrapping_add(n);
        Some(idx)
    }

    /// Writes a fill-ring entry (a frame address) at reserved index `idx`.
    pub fn set_addr(&mut self, idx: u32, addr: u64) {
        let slot = (idx & self.mask) as usize;
        // SAFETY: a fill or completion ring's entries are `u64`s, `size`
        // (= mask + 1) of them from `ring`; `slot <= mask`. The entry was
        // reserved, so the kernel does not read it until `prod_submit`.
        unsafe { self.ring.cast::<u64>().add(slot).write(addr) }
    }

    /// Writes a TX-ring entry at reserved index `idx`.
    pub fn set_desc(&mut self, idx: u32, desc: XdpDesc) {
        let slot = (idx & self.mask) as usize;
        // SAFETY: an RX or TX ring's entries are `struct xdp_desc`s, `size`
        // of them from `ring`; `slot <= mask`. Reserved, as in `set_addr`.
        unsafe { self.ring.cast::<XdpDesc>().add(slot).write(desc) }
    }

    /// Publishes `n` reserved entries to the kernel.
    pub fn prod_submit(&mut self, n: u32) {
        let p = self.producer();
        // Only this side writes the producer index: a plain read suffices.
        let now = p.load(Ordering::Relaxed);
        p.store(now.wrapping_add(n), Ordering::Release);
    }

    /// Whether the kernel asks for a syscall (`poll`, `sendto`) to look at
    /// the ring again.
    pub fn needs_wakeup(&self) -> bool {
        if self.flags.is_null() {
            return false;
        }
        // SAFETY: `flags` points at the ring's flags word in its mapping
        // (non-null, checked), alive with the socket; the kernel updates it
        // atomically.
        let flags = unsafe { AtomicU32::from_ptr(self.flags) };
        flags.load(Ordering::Relaxed) & XDP_RING_NEED_WAKEUP != 0
    }

    // ----- consumer side (RX, completion) -----

    /// Entries ready (up to `max`): reserves them for reading and returns
    /// how many and the first one's index.
    pub fn cons_peek(&mut self, max: u32) -> (u32, u32) {
        let mut entries = self.cached_prod.wrapping_sub(self.cached_cons);
        if entries == 0 {
            self.cached_prod = self.producer().load(Ordering::Acquire);
            entries = self.cached_prod.wrapping_sub(self.cached_cons);
        }
        let n = entries.min(max);
        let idx = self.cached_cons;
        self.cached_cons = self.cached_cons.wrapping_add(n);
        (n, idx)
    }

    /// Entries the kernel has produced and this side has not released,
    /// looking at the kernel's index now.
    pub fn cons_pending(&self) -> u32 {
        let prod = self.producer().load(Ordering::Acquire);
        prod.wrapping_sub(self.consumer().load(Ordering::Relaxed))
    }

    /// An RX-ring entry at peeked index `idx`.
    pub fn desc(&self, idx: u32) -> XdpDesc {
        let slot = (idx & self.mask) as usize;
        // SAFETY: RX entries are `struct xdp_desc`s, `size` of them from
        // `ring`; `slot <= mask`; the entry was produced (acquire in
        // `cons_peek`) and is not released, so the kernel does not write it.
        unsafe { self.ring.cast::<XdpDesc>().add(slot).read() }
    }

    /// A completion-ring entry (a frame address) at peeked index `idx`.
    pub fn addr(&self, idx: u32) -> u64 {
        let slot = (idx & self.mask) as usize;
        // SAFETY: completion entries are `u64`s; as in `desc`.
        unsafe { self.ring.cast::<u64>().add(slot).read() }
    }

    /// Gives `n` read entries back to the kernel.
    pub fn cons_release(&mut self, n: u32) {
        let c = self.consumer();
        let now = c.load(Ordering::Relaxed);
        c.store(now.wrapping_add(n), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring in ordinary memory, driven from both sides.
    struct Fake {
        prod: Box<u32>,
        cons: Box<u32>,
        entries: Vec<XdpDesc>,
        flags: Box<u32>,
    }

    fn ring(fake: &mut Fake, as_producer: bool) -> XskRing {
        let size = fake.entries.len() as u32;
        XskRing {
            cached_prod: 0,
            cached_cons: if as_producer { size } else { 0 },
            mask: size - 1,
            size,
            producer: &mut *fake.prod,
            consumer: &mut *fake.cons,
            ring: fake.entries.as_mut_ptr().cast(),
            flags: &mut *fake.flags,
        }
    }

    #[test]
    fn a_producer_and_a_consumer_agree_across_wrap_around() {
        let mut fake = Fake {
            prod: Box::new(0),
            cons: Box::new(0),
            entries: vec![XdpDesc::default(); 8],
            flags: Box::new(0),
        };
        let mut tx = ring(&mut fake, true);
        let mut rx = ring(&mut fake, false);
        let mut next = 0u64;
        let mut seen = 0u64;
        for round in 0..50u32 {
            let n = round % 7 + 1;
            if let Some(idx) = tx.prod_reserve(n) {
                for i in 0..n {
                    tx.set_desc(
                        idx.wrapping_add(i),
                        XdpDesc {
                            addr: next,
                            len: 60,
                            options: 0,
                        },
                    );
                    next += 1;
                }
                tx.prod_submit(n);
            }
            assert!(rx.cons_pending() <= 8);
            let (got, idx) = rx.cons_peek(5);
            for i in 0..got {
                assert_eq!(rx.desc(idx.wrapping_add(i)).addr, seen);
                seen += 1;
            }
            rx.cons_release(got);
        }
        assert!(seen > 100, "{seen}");
        assert!(!tx.needs_wakeup());
        *fake.flags = XDP_RING_NEED_WAKEUP;
        assert!(tx.needs_wakeup());
    }
}
