//! The AF_XDP socket and its pool (see the module above).
#![allow(unsafe_code)]

use super::libxdp::{self, CreateParams, Libxdp, XskHandles};
use super::pool::{ChunkPool, PoolConfig};
use super::ring::XdpDesc;
use super::XskStats;
use crate::source::afpacket::{get_option, poll_readable, poll_timeout_ms, PollOutcome};
use crate::source::{physical_memory, KernelStats, LiveError, LiveErrorKind};
use crate::source::{LinkType, RawPacket};
use crate::subzero::xdp::XdpFlowDrop;
use crate::time::Timestamp;
use std::ffi::c_void;
use std::fmt;
use std::io;
use std::os::fd::BorrowedFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// `SOL_XDP`.
const SOL_XDP: i32 = 283;
/// `XDP_STATISTICS` socket option.
const XDP_STATISTICS: i32 = 7;
/// `XDP_OPTIONS` socket option.
const XDP_OPTIONS: i32 = 8;
/// `XDP_OPTIONS_ZEROCOPY`.
const XDP_OPTIONS_ZEROCOPY: u32 = 1;
/// Bind flags (`struct sockaddr_xdp.sxdp_flags`).
const XDP_COPY: u16 = 1 << 1;
const XDP_ZEROCOPY: u16 = 1 << 2;
const XDP_USE_NEED_WAKEUP: u16 = 1 << 3;

/// How the socket may get packets from the driver.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum BindMode {
    /// Zero-copy if the driver has it, else copy.
    #[default]
    Auto,
    /// The kernel copies each packet into the UMEM (every driver, veth
    /// included).
    Copy,
    /// The driver receives straight into the UMEM (drivers with AF_XDP
    /// zero-copy support only).
    ZeroCopy,
}

impl BindMode {
    /// Parses `auto`, `copy` or `zero-copy`.
    pub fn parse(s: &str) -> Option<BindMode> {
        match s {
            "auto" => Some(BindMode::Auto),
            "copy" => Some(BindMode::Copy),
            "zero-copy" | "zerocopy" => Some(BindMode::ZeroCopy),
            _ => None,
        }
    }
}

/// How the socket got bound.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum XskMode {
    /// The kernel copies packets into the UMEM.
    Copy,
    /// The driver writes packets into the UMEM itself.
    ZeroCopy,
}

impl fmt::Display for XskMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            XskMode::Copy => "copy",
            XskMode::ZeroCopy => "zero-copy",
        })
    }
}

/// What [`AfXdp::open`] needs.
#[derive(Clone, Debug)]
pub struct AfXdpConfig {
    /// The interface.
    pub interface: String,
    /// Its receive queue this socket takes packets from.
    pub queue: u32,
    /// The pool's shape.
    pub pool: PoolConfig,
    /// Copy or zero-copy.
    pub bind: BindMode,
    /// Bytes of each packet handed over at most (the rest is cut).
    pub snaplen: u32,
    /// Entries of a TX ring, for sending frames of the UMEM (forwarding);
    /// 0 for none.
    pub tx_ring: u32,
}

impl AfXdpConfig {
    /// Queue 0 of `interface`, the default pool, any mode, whole packets.
    pub fn new(interface: impl Into<String>) -> AfXdpConfig {
        AfXdpConfig {
            interface: interface.into(),
            queue: 0,
            pool: PoolConfig::default(),
            bind: BindMode::Auto,
            snaplen: crate::source::MAX_SNAPLEN,
            tx_ring: 0,
        }
    }
}

/// `struct xdp_statistics`.
#[repr(C)]
#[derive(Copy, Clone, Default)]
struct RawXdpStats {
    rx_dropped: u64,
    rx_invalid_descs: u64,
    tx_invalid_descs: u64,
    rx_ring_full: u64,
    rx_fill_ring_empty_descs: u64,
    tx_ring_empty_descs: u64,
}

/// The UMEM: anonymous, page-aligned memory, unmapped when the socket and
/// every [`Chunk`] are gone.
struct Umem {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory; which frames may be read is decided
// by the pool (a frame is read only while user space owns it), not by the
// thread, so sharing the pointer between threads is sound.
unsafe impl Send for Umem {}
// SAFETY: as for Send: shared access only reads frames user space owns.
unsafe impl Sync for Umem {}

impl Umem {
    fn map(len: usize) -> io::Result<Umem> {
        // SAFETY: an anonymous private mapping at an address of the
        // kernel's choosing; no existing memory is affected.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Umem {
            ptr: ptr.cast(),
            len,
        })
    }

    /// The bytes of a received frame, if the descriptor lies in the UMEM.
    fn frame(&self, desc: &XdpDesc) -> Option<&[u8]> {
        let start = usize::try_from(desc.addr).ok()?;
        let end = start.checked_add(desc.len as usize)?;
        if end > self.len {
            return None;
        }
        // SAFETY: `start..end` lies inside the mapping (checked), which
        // lives as long as `self`. The frame was received and is owned by
        // user space until it is recycled, which needs the borrow to end
        // (next_block) or the chunk holding it to drop (Chunk): the kernel
        // does not write it meanwhile.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.add(start), end - start) })
    }
}

impl Umem {
    /// The received packet of `desc` as a [`RawPacket`], cut at `snaplen`.
    fn packet(
        &self,
        desc: &XdpDesc,
        ts: Timestamp,
        record: u64,
        snaplen: u32,
    ) -> Option<RawPacket<'_>> {
        let data = self.frame(desc)?;
        Some(RawPacket {
            ts,
            link: LinkType::ETHERNET,
            data: &data[..data.len().min(snaplen as usize)],
            orig_len: desc.len,
            record,
            interface: 0,
        })
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `map` made; the socket that
        // used it is deleted (it drops first) and no frame slice outlives
        // `self`.
        unsafe { libc::munmap(self.ptr.cast::<c_void>(), self.len) };
    }
}

/// Frames of chunks the application kept, given back from any thread.
type Returns = Arc<Mutex<Vec<u64>>>;

/// Received packets handed over by [`AfXdp::next_chunk`]: their frames
/// stay out of the pool until this is dropped.
pub struct Chunk {
    umem: Arc<Umem>,
    descs: Vec<XdpDesc>,
    ts: Timestamp,
    first_record: u64,
    snaplen: u32,
    returns: Returns,
}

impl Chunk {
    /// How many packets.
    pub fn len(&self) -> usize {
        self.descs.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.descs.is_empty()
    }

    /// The packets, in the order they were received.
    pub fn packets(&self) -> impl Iterator<Item = RawPacket<'_>> {
        (0..self.descs.len()).filter_map(|i| self.packet(i))
    }

    /// Packet `i` (0-based), if there is one.
    pub fn packet(&self, i: usize) -> Option<RawPacket<'_>> {
        let d = self.descs.get(i)?;
        self.umem
            .packet(d, self.ts, self.first_record + i as u64, self.snaplen)
    }
}

impl fmt::Debug for Chunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chunk")
            .field("packets", &self.descs.len())
            .field("first_record", &self.first_record)
            .finish()
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // A poisoned lock only means another holder panicked mid-push; the
        // vector is still a list of addresses.
        let mut returns = self.returns.lock().unwrap_or_else(|e| e.into_inner());
        returns.extend(self.descs.iter().map(|d| d.addr));
    }
}

/// An AF_XDP socket on one receive queue, with its pool.
pub struct AfXdp {
    interface: String,
    queue: u32,
    // Field order is drop order: the sockets before the memory they use,
    // the send-only socket before the one that owns the UMEM.
    tx: Option<TxSide>,
    handles: XskHandles,
    umem: Arc<Umem>,
    pool: ChunkPool,
    mode: XskMode,
    snaplen: u32,
    delivered: u64,
    returns: Returns,
    held_frames: u64,
    /// Whether the last top-up found every frame out of the pool.
    exhausted: bool,
    /// Whether it found the fill ring empty too.
    dry: bool,
    /// The kernel's counters at the last reading, and the fill-ring-empty
    /// drops attributed so far.
    last_raw: RawXdpStats,
    fill_empty: u64,
    pool_exhausted: u64,
    descs: Vec<XdpDesc>,
    /// Keeps streamcap's XDP program on the interface while the socket
    /// lives (the socket receives nothing without it).
    _program: Arc<XdpFlowDrop>,
}

impl fmt::Debug for AfXdp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AfXdp")
            .field("interface", &self.interface)
            .field("queue", &self.queue)
            .field("mode", &self.mode)
            .field("pool", &self.pool.config())
            .finish()
    }
}

impl AfXdp {
    /// Opens a socket on `cfg.queue` of `cfg.interface`, with its pool,
    /// and has `program` (streamcap's XDP program, attached to that
    /// interface) redirect the queue's packets to it.
    ///
    /// Needs root (`CAP_NET_RAW`, `CAP_NET_ADMIN`) and libxdp; fails with a
    /// message naming what is missing, a pool larger than half the
    /// machine's memory, or one larger than `RLIMIT_MEMLOCK` allows.
    pub fn open(cfg: &AfXdpConfig, program: Arc<XdpFlowDrop>) -> Result<AfXdp, LiveError> {
        let name = cfg.interface.as_str();
        let invalid = |reason: String| {
            LiveError::other(name, "AF_XDP pool", LiveErrorKind::InvalidConfig, reason)
        };
        cfg.pool.validate().map_err(invalid)?;
        if cfg.snaplen == 0 {
            return Err(invalid("the snapshot length is 0".into()));
        }
        let bytes = cfg.pool.bytes();
        if let Some(phys) = physical_memory() {
            if bytes > phys / 2 {
                return Err(invalid(format!(
                    "a pool of {bytes} bytes is more than half the machine's memory ({phys} bytes)"
                )));
            }
        }
        let len = usize::try_from(bytes).map_err(|_| invalid("the pool is too large".into()))?;
        let ring_size = cfg.pool.ring_size();
        // The rings are pinned too: 8 bytes per fill entry, 16 per RX entry.
        let pinned = bytes + u64::from(ring_size) * 24 + u64::from(cfg.tx_ring) * 24;
        allow_locked_memory(pinned).map_err(|reason| {
            LiveError::other(name, "AF_XDP UMEM", LiveErrorKind::PermissionDenied, reason)
        })?;
        let lib = Libxdp::get().map_err(|reason| {
            LiveError::other(name, "AF_XDP", LiveErrorKind::InvalidConfig, reason)
        })?;
        crate::source::afpacket::interface_index(name)?;
        let umem = Arc::new(
            Umem::map(len).map_err(|e| LiveError::os(name, "mapping the AF_XDP UMEM", e))?,
        );
        let tries: &[u16] = match cfg.bind {
            BindMode::Auto => &[XDP_ZEROCOPY, XDP_COPY],
            BindMode::Copy => &[XDP_COPY],
            BindMode::ZeroCopy => &[XDP_ZEROCOPY],
        };
        let mut last = None;
        let mut handles = None;
        for &flags in tries {
            let params = CreateParams {
                interface: name,
                queue: cfg.queue,
                area: umem.ptr.cast(),
                len: bytes,
                frame_size: cfg.pool.frame_size,
                ring_size,
                tx_size: cfg.tx_ring,
                bind_flags: flags | XDP_USE_NEED_WAKEUP,
            };
            // A socket closed just before on the same queue releases its
            // hold on the queue a little later (the kernel frees it from a
            // work queue): EBUSY is retried for up to a second.
            let mut tries = 0;
            let res = loop {
                match libxdp::create(lib, &params) {
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) && tries < 20 => {
                        tries += 1;
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    other => break other,
                }
            };
            match res {
                Ok(h) => {
                    handles = Some(h);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let Some(handles) = handles else {
            let e = last.unwrap_or_else(|| io::Error::other("no bind mode to try"));
            let what = format!("creating the AF_XDP socket on queue {}", cfg.queue);
            return Err(match e.raw_os_error() {
                Some(libc::EPERM) | Some(libc::EACCES) => LiveError::other(
                    name,
                    what,
                    LiveErrorKind::PermissionDenied,
                    "AF_XDP needs root (CAP_NET_RAW and CAP_NET_ADMIN)",
                ),
                Some(libc::EINVAL) | Some(libc::ENOENT) if cfg.bind != BindMode::Copy => {
                    LiveError::other(
                        name,
                        what,
                        LiveErrorKind::InvalidConfig,
                        format!("{e} (no such queue, or the driver has no zero-copy mode)"),
                    )
                }
                _ => LiveError::os(name, what, e),
            });
        };
        let mode =
            xsk_mode(handles.fd).map_err(|e| LiveError::os(name, "getsockopt(XDP_OPTIONS)", e))?;
        // SAFETY: the descriptor belongs to `handles`, open for this call.
        let fd = unsafe { BorrowedFd::borrow_raw(handles.fd) };
        program.redirect_queue(cfg.queue, fd).map_err(|e| {
            LiveError::other(
                name,
                "redirecting the queue to the socket",
                LiveErrorKind::Os,
                e.message,
            )
        })?;
        let mut socket = AfXdp {
            interface: cfg.interface.clone(),
            queue: cfg.queue,
            tx: None,
            handles,
            umem,
            pool: ChunkPool::new(cfg.pool),
            mode,
            snaplen: cfg.snaplen,
            delivered: 0,
            returns: Arc::default(),
            held_frames: 0,
            exhausted: false,
            dry: false,
            last_raw: RawXdpStats::default(),
            fill_empty: 0,
            pool_exhausted: 0,
            descs: Vec::with_capacity(cfg.pool.frames_per_chunk as usize),
            _program: program,
        };
        socket.top_up();
        Ok(socket)
    }

    /// The interface.
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// The receive queue.
    pub fn queue(&self) -> u32 {
        self.queue
    }

    /// Copy or zero-copy, as the kernel bound it.
    pub fn mode(&self) -> XskMode {
        self.mode
    }

    /// The pool's shape.
    pub fn pool_config(&self) -> PoolConfig {
        self.pool.config()
    }

    /// Packets handed to the application so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Waits up to `timeout` for received packets and calls `f` on each
    /// of up to `M` of them, in place; their frames go back to the pool
    /// when `f` has seen them all. Returns how many there were (0 when the
    /// timeout passed).
    pub fn next_block(
        &mut self,
        timeout: Duration,
        f: &mut dyn FnMut(&RawPacket<'_>),
    ) -> Result<usize, LiveError> {
        if !self.receive(timeout)? {
            return Ok(0);
        }
        let ts = wall_clock();
        let first = self.delivered + 1;
        for (i, d) in self.descs.iter().enumerate() {
            if let Some(p) = self.umem.packet(d, ts, first + i as u64, self.snaplen) {
                f(&p);
            }
        }
        let n = self.descs.len();
        self.delivered += n as u64;
        for i in 0..n {
            let addr = self.descs[i].addr;
            self.recycle(addr);
        }
        self.top_up();
        Ok(n)
    }

    /// Waits up to `timeout` for received packets and hands up to `M` of
    /// them over as a [`Chunk`], whose frames stay out of the pool until it
    /// is dropped (on any thread). `None` when the timeout passed.
    pub fn next_chunk(&mut self, timeout: Duration) -> Result<Option<Chunk>, LiveError> {
        if !self.receive(timeout)? {
            return Ok(None);
        }
        let descs = std::mem::take(&mut self.descs);
        let first = self.delivered + 1;
        self.delivered += descs.len() as u64;
        self.held_frames += descs.len() as u64;
        Ok(Some(Chunk {
            umem: self.umem.clone(),
            descs,
            ts: wall_clock(),
            first_record: first,
            snaplen: self.snaplen,
            returns: self.returns.clone(),
        }))
    }

    /// Takes up to `M` descriptors off the RX ring into `self.descs`,
    /// waiting up to `timeout`; false when none came.
    fn receive(&mut self, timeout: Duration) -> Result<bool, LiveError> {
        self.take_returns();
        self.top_up();
        self.descs.clear();
        let deadline = Instant::now().checked_add(timeout);
        loop {
            if self.peek() {
                return Ok(true);
            }
            let wait = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let Some(ms) = poll_timeout_ms(wait) else {
                return Ok(false);
            };
            match poll_readable(&RawFdRef(self.handles.fd), ms) {
                Ok(PollOutcome::Ready) => {}
                Ok(PollOutcome::TimedOut) => {
                    return Ok(self.peek());
                }
                Ok(PollOutcome::Error) | Ok(PollOutcome::HungUp) => {
                    return Err(LiveError::other(
                        &self.interface,
                        "poll",
                        LiveErrorKind::InterfaceDown,
                        "the AF_XDP socket reported an error (the interface went down?)",
                    ))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(self.peek()),
                Err(e) => return Err(LiveError::os(&self.interface, "poll", e)),
            }
            // Frames recycled by other threads meanwhile go back first.
            self.take_returns();
        }
    }

    /// Moves up to `M` ready descriptors into `self.descs`.
    fn peek(&mut self) -> bool {
        let m = self.pool.config().frames_per_chunk;
        let (n, idx) = self.handles.rx.cons_peek(m);
        if n == 0 {
            return false;
        }
        for i in 0..n {
            self.descs.push(self.handles.rx.desc(idx.wrapping_add(i)));
        }
        self.handles.rx.cons_release(n);
        true
    }

    /// Adds a send-only socket on `queue` of `interface` that shares this
    /// socket's UMEM: [`AfXdp::forward_block`] then sends the packets its
    /// verdict passes on `interface` from the frames they were received
    /// in. In copy mode the kernel copies each into an skb to send it; in
    /// zero-copy mode the driver sends the frame itself.
    pub fn open_tx(&mut self, interface: &str, queue: u32) -> Result<XskMode, LiveError> {
        let size = self.pool.config().ring_size();
        let tries: &[u16] = match self.mode {
            XskMode::ZeroCopy => &[XDP_ZEROCOPY, XDP_COPY],
            XskMode::Copy => &[XDP_COPY],
        };
        let mut last = None;
        for &flags in tries {
            match libxdp::create_tx(
                &self.handles,
                interface,
                queue,
                size,
                flags | XDP_USE_NEED_WAKEUP,
            ) {
                Ok(h) => {
                    let mode = xsk_mode(h.fd)
                        .map_err(|e| LiveError::os(interface, "getsockopt(XDP_OPTIONS)", e))?;
                    self.tx = Some(TxSide {
                        handles: h,
                        in_flight: 0,
                        stats: ForwardStats::default(),
                    });
                    return Ok(mode);
                }
                Err(e) => last = Some(e),
            }
        }
        let e = last.unwrap_or_else(|| io::Error::other("no bind mode to try"));
        Err(LiveError::os(
            interface,
            format!(
                "creating an AF_XDP socket on queue {queue} that shares the UMEM of {}",
                self.interface
            ),
            e,
        ))
    }

    /// Waits up to `timeout` for received packets; sends those `verdict`
    /// passes on the interface of [`AfXdp::open_tx`] from their frames
    /// (no copy in user space), and gives the others back to the pool.
    /// Sent frames come back to the pool when the kernel has sent them.
    /// Returns how many packets were received (0 when the timeout passed).
    pub fn forward_block(
        &mut self,
        timeout: Duration,
        verdict: &mut dyn FnMut(&RawPacket<'_>) -> bool,
    ) -> Result<usize, LiveError> {
        if self.tx.is_none() {
            return Err(LiveError::other(
                &self.interface,
                "forwarding",
                LiveErrorKind::InvalidConfig,
                "no send-only socket (AfXdp::open_tx)",
            ));
        }
        self.reap_completions();
        if !self.receive(timeout)? {
            return Ok(0);
        }
        let ts = wall_clock();
        let first = self.delivered + 1;
        let descs = std::mem::take(&mut self.descs);
        let mut pass = Vec::with_capacity(descs.len());
        for (i, d) in descs.iter().enumerate() {
            let keep = self
                .umem
                .packet(d, ts, first + i as u64, self.snaplen)
                .is_some_and(|p| verdict(&p));
            if keep {
                pass.push(*d);
            } else {
                if let Some(tx) = self.tx.as_mut() {
                    tx.stats.filtered += 1;
                }
                self.recycle(d.addr);
            }
        }
        self.delivered += descs.len() as u64;
        let n = descs.len();
        self.descs = descs;
        self.send(&pass);
        self.top_up();
        Ok(n)
    }

    /// Puts `pass` on the TX ring, waiting briefly for room; what finds
    /// none is counted and recycled.
    fn send(&mut self, pass: &[XdpDesc]) {
        let mut sent = 0usize;
        let mut tries = 0;
        while sent < pass.len() {
            let Some(tx) = self.tx.as_mut() else {
                return;
            };
            let want = (pass.len() - sent) as u32;
            let room = tx.handles.tx.prod_free(want).min(want);
            if room == 0 {
                tries += 1;
                if tries > 1000 {
                    break;
                }
                kick(tx.handles.fd);
                self.reap_completions();
                std::thread::yield_now();
                continue;
            }
            let Some(idx) = tx.handles.tx.prod_reserve(room) else {
                break;
            };
            for (i, d) in pass[sent..sent + room as usize].iter().enumerate() {
                tx.handles.tx.set_desc(idx.wrapping_add(i as u32), *d);
                tx.stats.forwarded_bytes += u64::from(d.len);
            }
            tx.handles.tx.prod_submit(room);
            tx.stats.forwarded += u64::from(room);
            tx.in_flight += u64::from(room);
            sent += room as usize;
            kick(tx.handles.fd);
        }
        for d in &pass[sent..] {
            if let Some(tx) = self.tx.as_mut() {
                tx.stats.tx_ring_full += 1;
            }
            self.recycle(d.addr);
        }
    }

    /// Gives frames the kernel has sent back to the pool.
    fn reap_completions(&mut self) {
        let Some(tx) = self.tx.as_mut() else {
            return;
        };
        let (n, idx) = tx.handles.comp.cons_peek(u32::MAX);
        if n == 0 {
            return;
        }
        let addrs: Vec<u64> = (0..n)
            .map(|i| tx.handles.comp.addr(idx.wrapping_add(i)))
            .collect();
        tx.handles.comp.cons_release(n);
        tx.in_flight = tx.in_flight.saturating_sub(u64::from(n));
        tx.stats.completed += u64::from(n);
        for a in addrs {
            self.recycle(a);
        }
    }

    /// Waits up to `timeout` for every frame sent to come back; returns
    /// how many are still in flight.
    pub fn flush_tx(&mut self, timeout: Duration) -> u64 {
        let deadline = Instant::now() + timeout;
        loop {
            self.reap_completions();
            let Some((in_flight, fd)) = self.tx.as_ref().map(|t| (t.in_flight, t.handles.fd))
            else {
                return 0;
            };
            if in_flight == 0 || Instant::now() >= deadline {
                self.top_up();
                return in_flight;
            }
            kick(fd);
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// What forwarding did so far.
    pub fn forward_stats(&self) -> ForwardStats {
        self.tx
            .as_ref()
            .map_or(ForwardStats::default(), |t| t.stats)
    }

    /// Gives a received frame back to the pool.
    fn recycle(&mut self, addr: u64) {
        // A frame the kernel handed over always came from the pool; an
        // address outside it would be a kernel bug, and is ignored rather
        // than trusted.
        let _ = self.pool.recycle(addr);
    }

    /// Recycles the frames of dropped [`Chunk`]s.
    fn take_returns(&mut self) {
        let back = {
            let mut r = self.returns.lock().unwrap_or_else(|e| e.into_inner());
            if r.is_empty() {
                return;
            }
            std::mem::take(&mut *r)
        };
        self.held_frames = self.held_frames.saturating_sub(back.len() as u64);
        for addr in back {
            self.recycle(addr);
        }
        self.top_up();
    }

    /// Gives every free chunk to the fill ring.
    fn top_up(&mut self) {
        let m = self.pool.config().frames_per_chunk;
        let mut gave = false;
        while self.handles.fill.prod_free(m) >= m {
            let Some(chunk) = self.pool.attach() else {
                break;
            };
            let Some(idx) = self.handles.fill.prod_reserve(m) else {
                // Cannot happen (the room was just checked); the chunk
                // goes back rather than out of the pool for good.
                self.pool.unattach(chunk);
                break;
            };
            for (i, addr) in self.pool.frame_addrs(chunk).enumerate() {
                self.handles.fill.set_addr(idx.wrapping_add(i as u32), addr);
            }
            self.handles.fill.prod_submit(m);
            gave = true;
        }
        let size = self.handles.fill.size;
        let room = self.handles.fill.prod_free(size);
        // Every frame is out: drops from here on are the pool's.
        let exhausted = self.pool.free_chunks() == 0 && room >= m;
        if exhausted != self.exhausted {
            // Drops up to now belong to the state that is ending.
            self.read_kernel_stats();
            self.exhausted = exhausted;
        }
        // Dry: not one frame left for the kernel to receive into.
        let dry = exhausted && room == size;
        if dry && !self.dry {
            self.pool.note_exhausted();
        }
        self.dry = dry;
        if gave && self.handles.fill.needs_wakeup() {
            // Zero-copy drivers wait for a syscall to see new frames.
            wake(self.handles.fd);
        }
    }

    /// Reads the kernel's counters and attributes the fill-ring-empty
    /// drops since the last reading to the pool's state then.
    fn read_kernel_stats(&mut self) -> RawXdpStats {
        let mut raw = RawXdpStats::default();
        if get_option(
            &RawFdRef(self.handles.fd),
            SOL_XDP,
            XDP_STATISTICS,
            &mut raw,
        )
        .is_err()
        {
            return self.last_raw;
        }
        // The kernel counts a packet that found the fill ring empty in
        // `rx_dropped` as well.
        raw.rx_dropped = raw.rx_dropped.saturating_sub(raw.rx_fill_ring_empty_descs);
        let new = raw
            .rx_fill_ring_empty_descs
            .saturating_sub(self.last_raw.rx_fill_ring_empty_descs);
        if self.exhausted {
            self.pool_exhausted += new;
        } else {
            self.fill_empty += new;
        }
        self.last_raw = raw;
        raw
    }

    /// The socket's and the pool's counters, cumulative since
    /// [`AfXdp::open`].
    pub fn xsk_stats(&mut self) -> XskStats {
        self.take_returns();
        let raw = self.read_kernel_stats();
        XskStats {
            received: self.delivered,
            fill_ring_empty: self.fill_empty,
            pool_exhausted: self.pool_exhausted,
            rx_ring_full: raw.rx_ring_full,
            rx_dropped: raw.rx_dropped,
            rx_invalid: raw.rx_invalid_descs,
            pool: self.pool.stats(),
            held_frames: self.held_frames,
        }
    }

    /// Where the pool's frames are now, after taking back those of dropped
    /// [`Chunk`]s: every frame out of the pool is in the fill ring, in the
    /// RX ring or in a chunk the application holds (the pool leaks nothing
    /// when [`FrameCensus::balanced`]). Packets arriving meanwhile can move
    /// frames from the fill ring to the RX ring; read it on a quiet link.
    pub fn census(&mut self) -> FrameCensus {
        self.take_returns();
        let size = self.handles.fill.size;
        let in_tx = self.tx.as_ref().map_or(0, |t| t.in_flight);
        FrameCensus {
            out: self.pool.frames_out(),
            in_tx,
            // The fill ring as the kernel sees it: entries it has not taken.
            in_fill: u64::from(size - self.handles.fill.prod_free(size)),
            in_rx: u64::from(self.handles.rx.cons_pending()),
            held: self.held_frames,
        }
    }

    /// Frames received and waiting in the RX ring: the socket's backlog.
    pub fn backlog(&self) -> u32 {
        self.handles.rx.cons_pending()
    }

    /// The counters in the shape of an `AF_PACKET` socket's: packets that
    /// reached the socket (handed over or dropped), drops, and the times the
    /// pool ran dry in place of ring freezes.
    pub fn stats(&mut self) -> Result<KernelStats, LiveError> {
        let s = self.xsk_stats();
        Ok(KernelStats {
            packets: s.received + s.drops(),
            drops: s.drops(),
            freeze_count: s.pool.exhausted,
        })
    }
}

/// The send-only socket of a forwarding [`AfXdp`].
struct TxSide {
    handles: libxdp::XskTxHandles,
    /// Frames on the TX ring or being sent.
    in_flight: u64,
    stats: ForwardStats,
}

/// What [`AfXdp::forward_block`] did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ForwardStats {
    /// Packets put on the TX ring.
    pub forwarded: u64,
    /// Their bytes.
    pub forwarded_bytes: u64,
    /// Packets the verdict dropped.
    pub filtered: u64,
    /// Packets dropped because the TX ring stayed full.
    pub tx_ring_full: u64,
    /// Packets the kernel reported sent (their frames back in the pool).
    pub completed: u64,
}

/// Where the frames of a pool are ([`AfXdp::census`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FrameCensus {
    /// Frames out of the pool (not free).
    pub out: u64,
    /// In the fill ring, waiting for a packet.
    pub in_fill: u64,
    /// In the RX ring, holding a packet.
    pub in_rx: u64,
    /// In chunks the application holds.
    pub held: u64,
    /// Sent or on the TX ring, not yet completed (forwarding).
    pub in_tx: u64,
}

impl FrameCensus {
    /// Whether every frame out of the pool is accounted for.
    pub fn balanced(&self) -> bool {
        self.out == self.in_fill + self.in_rx + self.held + self.in_tx
    }
}

/// A raw descriptor borrowed for one call (the helpers of the AF_PACKET
/// module take `impl AsRawFd`).
struct RawFdRef(i32);

impl std::os::fd::AsRawFd for RawFdRef {
    fn as_raw_fd(&self) -> i32 {
        self.0
    }
}

/// Tells the kernel to send what is on the TX ring (copy mode sends only
/// from a system call, at most 32 frames per call: it answers `EAGAIN`
/// while more are left, so this calls again, up to `MAX_KICKS` times).
fn kick(fd: i32) {
    /// Enough calls for a TX ring of 65,536 entries at 32 per call.
    const MAX_KICKS: usize = 2048;
    for _ in 0..MAX_KICKS {
        // SAFETY: a zero-length, non-blocking send on a socket descriptor
        // we own; no buffer is passed.
        let rc = unsafe {
            libc::sendto(
                fd,
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        // EBUSY, ENOBUFS (the device is busy) and success end the round:
        // the next kick or completion covers what is left.
        if rc >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EAGAIN) {
            return;
        }
    }
}

/// Tells the kernel to look at the fill ring (`XDP_USE_NEED_WAKEUP`).
fn wake(fd: i32) {
    // SAFETY: a zero-length, non-blocking receive on a socket descriptor
    // we own; no buffer is passed.
    unsafe {
        libc::recvfrom(
            fd,
            std::ptr::null_mut(),
            0,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
}

/// Whether the socket is in zero-copy mode.
fn xsk_mode(fd: i32) -> io::Result<XskMode> {
    let mut flags = 0u32;
    get_option(&RawFdRef(fd), SOL_XDP, XDP_OPTIONS, &mut flags)?;
    Ok(if flags & XDP_OPTIONS_ZEROCOPY != 0 {
        XskMode::ZeroCopy
    } else {
        XskMode::Copy
    })
}

/// Makes sure `bytes` of pinned memory are allowed: raises
/// `RLIMIT_MEMLOCK` if it is lower and the process may; a process with
/// `CAP_IPC_LOCK` (root) is not held to it by the kernel.
fn allow_locked_memory(bytes: u64) -> Result<(), String> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) } != 0 {
        return Ok(());
    }
    if lim.rlim_cur == libc::RLIM_INFINITY || lim.rlim_cur >= bytes {
        return Ok(());
    }
    let want = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: lim.rlim_max.max(bytes),
    };
    // SAFETY: `want` is a valid rlimit; setrlimit only reads it.
    if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &want) } == 0 {
        return Ok(());
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    Err(format!(
        "the pool pins {bytes} bytes, more than RLIMIT_MEMLOCK allows ({} bytes); raise it \
         (`ulimit -l`, /etc/security/limits.conf) or choose fewer chunks",
        lim.rlim_cur
    ))
}

/// The wall clock as a packet timestamp.
fn wall_clock() -> Timestamp {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp::from_secs_nanos(d.as_secs(), u64::from(d.subsec_nanos()))
}

impl crate::source::LiveSocket for AfXdp {
    fn next_block(
        &mut self,
        timeout: Duration,
        f: &mut dyn FnMut(&RawPacket<'_>),
    ) -> Result<usize, LiveError> {
        AfXdp::next_block(self, timeout, f)
    }

    fn stats(&mut self) -> Result<KernelStats, LiveError> {
        AfXdp::stats(self)
    }

    fn xsk_stats(&mut self) -> Option<XskStats> {
        Some(AfXdp::xsk_stats(self))
    }
}
