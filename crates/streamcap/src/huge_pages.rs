//! A global allocator that asks the kernel for transparent huge pages on
//! large allocations: [`HugePageAlloc`].
//!
//! streamcap's large structures are a few big vectors: the flow table's slab
//! of connections, its hash index, its expiry queues, batch buffers. They
//! grow by doubling and are touched page by page as flows arrive, so with
//! 4 KiB pages every 4 KiB of new connections costs a page fault (a minor
//! fault with its cgroup accounting, about a microsecond here). A SYN flood
//! of 200,000 connections (`streamcap flows`, 53 MB peak memory) took
//! 14,800 page faults in all; with this allocator 6,400, and 0.063 s
//! instead of 0.073 s.
//!
//! Linux gives huge pages to anonymous memory only where the process asked
//! for them with `madvise(MADV_HUGEPAGE)` when
//! `/sys/kernel/mm/transparent_hugepage/enabled` is `madvise` (the default
//! of most distributions). glibc's allocator asks only when told to by the
//! environment (`GLIBC_TUNABLES=glibc.malloc.hugetlb=1`), so this one asks
//! itself: every allocation or reallocation of at least [`THRESHOLD`] bytes is
//! advised, over the pages it spans. Small allocations are left alone, so
//! the memory of a small run does not grow.
//!
//! Guarantees: memory comes from and goes back to [`System`] unchanged, and
//! the advice changes the contents of no page; a failing `madvise` (huge
//! pages disabled, an old kernel) changes nothing but speed. What it costs:
//! a touched 2 MiB block is backed whole, so each large vector may hold up
//! to 2 MiB more than it uses (200,000 idle connections: 248–255 instead of
//! 246 bytes each; 1,000,000: 246 instead of 245); and with the kernel's
//! `defrag` setting at `madvise` (the default), a fault may compact memory
//! to find a huge page.
//!
//! The library does not install it; a program opts in:
//!
//! ```
//! #[global_allocator]
//! static ALLOC: streamcap::huge_pages::HugePageAlloc = streamcap::huge_pages::HugePageAlloc;
//! # fn main() {}
//! ```

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};

/// The size of a transparent huge page on x86-64 and most other targets.
pub const HUGE_PAGE: usize = 2 << 20;

/// Allocations of at least this many bytes are advised to use huge pages.
pub const THRESHOLD: usize = HUGE_PAGE;

/// The system allocator, advising allocations of at least [`THRESHOLD`]
/// bytes to be backed by transparent huge pages (see the
/// [module documentation](self)).
#[derive(Clone, Copy, Debug, Default)]
pub struct HugePageAlloc;

/// Small pages: advice is given on whole pages.
const PAGE: usize = 4096;

/// The pages spanned by `[start, start + len)`, as (first address, bytes).
fn spanned_pages(start: usize, len: usize) -> Option<(usize, usize)> {
    let first = start & !(PAGE - 1);
    let end = start.checked_add(len)?.checked_add(PAGE - 1)? & !(PAGE - 1);
    (end > first).then(|| (first, end - first))
}

/// Advises the pages of the `len` bytes at `ptr`.
///
/// The advice covers every page the block spans, not just the 2 MiB blocks
/// inside it: a block large enough to be advised is usually a mapping of
/// its own (glibc serves it with `mmap`), and advising part of a mapping
/// splits it, after which glibc's `mremap` of a growing vector fails and it
/// copies the whole vector instead.
fn advise(ptr: *mut u8, len: usize) {
    if len < THRESHOLD || ptr.is_null() {
        return;
    }
    if let Some((first, bytes)) = spanned_pages(ptr as usize, len) {
        // SAFETY: the range is the pages spanned by the allocation of `len`
        // bytes at `ptr` that the caller was just given; they are mapped
        // (the allocation lies in them). MADV_HUGEPAGE only sets a flag on
        // the mapping: it neither frees nor changes the contents of any
        // page, so memory the caller already wrote (a reallocation) and any
        // bytes of the first and last page outside the allocation (the
        // allocator's header, a neighbouring block) keep their values. A
        // failure (EINVAL with huge pages compiled out, ENOMEM) is ignored:
        // the memory stays usable with small pages.
        unsafe {
            libc::madvise(first as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE);
        }
    }
}

// SAFETY: every method hands the request to `System` unchanged and returns
// its result, so `System`'s guarantees (alignment, size, no overlap) hold;
// `advise` only adds a hint on memory just returned to the caller.
unsafe impl GlobalAlloc for HugePageAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        let ptr = unsafe { System.alloc(layout) };
        advise(ptr, layout.size());
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        advise(ptr, layout.size());
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` (through this allocator) with
        // `layout`, as the caller guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`, and the caller guarantees `new_size`.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        advise(new, new_size);
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mapping holding `addr` (its bounds and `VmFlags`), from
    /// /proc/self/smaps.
    fn mapping(addr: usize) -> Option<(usize, usize, String)> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = None;
        for line in smaps.lines() {
            let head = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = head.split_once('-') {
                if let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                {
                    inside = (lo..hi).contains(&addr).then_some((lo, hi));
                    continue;
                }
            }
            if let (Some((lo, hi)), Some(flags)) = (inside, line.strip_prefix("VmFlags:")) {
                return Some((lo, hi, flags.to_string()));
            }
        }
        None
    }

    fn vm_flags(addr: usize) -> Option<String> {
        mapping(addr).map(|(_, _, flags)| flags)
    }

    fn thp_mode() -> Option<String> {
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()
    }

    #[test]
    fn spanned_pages_cover_the_block() {
        assert_eq!(spanned_pages(0, HUGE_PAGE), Some((0, HUGE_PAGE)));
        assert_eq!(spanned_pages(16, PAGE), Some((0, 2 * PAGE)));
        assert_eq!(spanned_pages(PAGE + 16, 10), Some((PAGE, PAGE)));
        assert_eq!(
            spanned_pages(8 * PAGE, 3 * PAGE),
            Some((8 * PAGE, 3 * PAGE))
        );
        assert_eq!(spanned_pages(usize::MAX - 10, 5), None);
    }

    #[test]
    fn large_allocations_are_advised_and_keep_their_contents() {
        let Some(mode) = thp_mode() else {
            crate::skip("no transparent huge pages in this kernel");
            return;
        };
        if mode.contains("[never]") {
            crate::skip("transparent huge pages are disabled (enabled = never)");
            return;
        }
        let small = Layout::from_size_align(64 << 10, 16).expect("valid layout");
        let large = Layout::from_size_align(8 << 20, 16).expect("valid layout");
        // SAFETY: both layouts have a non-zero size; each block is freed
        // below with the layout (and size) it has at that point.
        unsafe {
            let s = HugePageAlloc.alloc(small);
            let p = HugePageAlloc.alloc(large);
            assert!(!s.is_null() && !p.is_null());
            let middle = p as usize + (4 << 20);
            let flags = vm_flags(middle).expect("the allocation's mapping");
            assert!(flags.contains(" hg"), "no huge-page advice: {flags}");
            // (Its middle: its first or last page may share a page with a
            // neighbour, which the neighbour's advice covers.)
            if let Some(flags) = vm_flags(s as usize + (32 << 10)) {
                assert!(!flags.contains(" hg"), "small block advised: {flags}");
            }
            // Growing keeps what was written and advises the new block.
            p.write_bytes(0xa5, large.size());
            let q = HugePageAlloc.realloc(p, large, 32 << 20);
            assert!(!q.is_null());
            assert!(std::slice::from_raw_parts(q, large.size())
                .iter()
                .all(|&b| b == 0xa5));
            let (lo, hi, flags) = mapping(q as usize).expect("the grown mapping");
            assert!(flags.contains(" hg"), "grown block not advised: {flags}");
            // One mapping holds the whole block: advice on part of it
            // would split it, and glibc's `mremap` of a growing vector
            // would then fail and fall back to copying.
            assert!(lo <= q as usize && q as usize + (32 << 20) <= hi);
            HugePageAlloc.dealloc(
                q,
                Layout::from_size_align(32 << 20, 16).expect("valid layout"),
            );
            HugePageAlloc.dealloc(s, small);
        }
    }
}
