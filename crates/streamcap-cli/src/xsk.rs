//! `--source af_xdp`: live capture through an AF_XDP socket whose memory
//! is a pool of chunks ([`streamcap::source::af_xdp`]). The XDP program
//! that redirects the queue's packets to the socket is the same that
//! `--xdp` drops with: with `--xdp` both happen, drop first.

use crate::Common;
use std::time::Duration;
use streamcap::source::af_xdp::{PoolConfig, XskStats};
use streamcap::source::{AfPacket, KernelStats, LiveError, LiveSocket, RawPacket};

/// A worker's socket: an `AF_PACKET` ring or an AF_XDP socket.
pub(crate) enum AnySocket {
    /// `--source af_packet`.
    Packet(AfPacket),
    /// `--source af_xdp`.
    #[cfg(feature = "xdp")]
    Xdp(Box<streamcap::source::af_xdp::AfXdp>),
}

impl LiveSocket for AnySocket {
    fn next_block(
        &mut self,
        timeout: Duration,
        f: &mut dyn FnMut(&RawPacket<'_>),
    ) -> Result<usize, LiveError> {
        match self {
            AnySocket::Packet(s) => s.next_block(timeout, f),
            #[cfg(feature = "xdp")]
            AnySocket::Xdp(s) => s.next_block(timeout, f),
        }
    }

    fn stats(&mut self) -> Result<KernelStats, LiveError> {
        match self {
            AnySocket::Packet(s) => s.stats(),
            #[cfg(feature = "xdp")]
            AnySocket::Xdp(s) => LiveSocket::stats(s.as_mut()),
        }
    }

    fn xsk_stats(&mut self) -> Option<XskStats> {
        match self {
            AnySocket::Packet(_) => None,
            #[cfg(feature = "xdp")]
            AnySocket::Xdp(s) => Some(s.xsk_stats()),
        }
    }
}

/// What the summary says of the AF_XDP socket besides its counters.
#[derive(Clone, Debug)]
pub(crate) struct XskInfo {
    /// The receive queue.
    pub queue: u32,
    /// `copy` or `zero-copy`.
    pub mode: String,
    /// The pool's shape.
    pub pool: PoolConfig,
}

/// The pool asked for on the command line, checked.
fn pool_config(c: &Common) -> Result<PoolConfig, String> {
    let pool = PoolConfig {
        chunks: c.pool_chunks,
        frames_per_chunk: c.chunk_frames,
        frame_size: c.frame_size,
    };
    pool.validate()
        .map_err(|e| format!("--pool-chunks/--chunk-frames/--frame-size: {e}"))?;
    Ok(pool)
}

/// Checks the options that do not apply to AF_XDP.
pub(crate) fn check_options(c: &Common) -> Result<(), String> {
    if c.workers != 1 {
        return Err(format!(
            "--source af_xdp --workers {}: an AF_XDP socket reads one receive queue, with one \
             worker; run one process per queue (--queue Q). The NIC's RSS hash decides which \
             connections a queue gets, so each process sees both directions of its connections \
             only with a symmetric RSS key",
            c.workers
        ));
    }
    if c.group.is_some() {
        return Err("--group: kernel fan-out groups are for --source af_packet".into());
    }
    if c.ring_size.is_some() {
        return Err(
            "--ring-size: the AF_PACKET ring; an AF_XDP socket's memory is its pool \
                    (--pool-chunks, --chunk-frames, --frame-size)"
                .into(),
        );
    }
    pool_config(c).map(|_| ())
}

/// Opens the AF_XDP socket on `iface` with streamcap's XDP program: the
/// one `--xdp` attached (`program`), or one attached here that drops
/// nothing. Returns the socket and what the summary says of it.
#[cfg(feature = "xdp")]
pub(crate) fn open(
    c: &Common,
    iface: &str,
    snaplen: u32,
    program: Option<std::sync::Arc<streamcap::subzero::xdp::XdpFlowDrop>>,
) -> Result<(AnySocket, XskInfo), String> {
    use std::sync::Arc;
    use streamcap::source::af_xdp::{AfXdp, AfXdpConfig, BindMode};
    use streamcap::subzero::xdp::{AttachMode, XdpFlowDrop};
    let pool = pool_config(c)?;
    let Some(bind) = BindMode::parse(&c.xsk_bind) else {
        return Err(format!(
            "--xsk-bind {}: expected auto, copy or zero-copy",
            c.xsk_bind
        ));
    };
    let program = match program {
        Some(p) => p,
        None => {
            let Some(mode) = AttachMode::parse(&c.xdp_mode) else {
                return Err(format!(
                    "--xdp-mode {}: expected auto, native or generic",
                    c.xdp_mode
                ));
            };
            // No flow is listed without --xdp: one entry is enough.
            Arc::new(XdpFlowDrop::attach(iface, 1, mode, None).map_err(|e| e.to_string())?)
        }
    };
    let cfg = AfXdpConfig {
        queue: c.queue,
        pool,
        bind,
        snaplen,
        ..AfXdpConfig::new(iface)
    };
    let socket = AfXdp::open(&cfg, program).map_err(|e| e.to_string())?;
    let info = XskInfo {
        queue: c.queue,
        mode: socket.mode().to_string(),
        pool,
    };
    Ok((AnySocket::Xdp(Box::new(socket)), info))
}

/// Without the `xdp` feature there is no AF_XDP source.
#[cfg(not(feature = "xdp"))]
pub(crate) fn open(
    _c: &Common,
    _iface: &str,
    _snaplen: u32,
    _program: Option<()>,
) -> Result<(AnySocket, XskInfo), String> {
    Err(
        "--source af_xdp: this streamcap was built without XDP; rebuild it with \
         `cargo build --release --features xdp` (needs clang and libbpf-dev; libxdp1 at run time)"
            .into(),
    )
}

/// The summary's `af_xdp` line.
pub(crate) fn summary_line(info: &XskInfo, s: &XskStats) -> String {
    let p = &info.pool;
    format!(
        "queue {} ({} mode), pool of {} chunks x {} frames x {} bytes ({} MiB): fewest free {}, \
         {} chunks recycled, ran dry {} times; drops: {} pool exhausted, {} fill ring empty, \
         {} RX ring full, {} other (frame too small?)",
        info.queue,
        info.mode,
        p.chunks,
        p.frames_per_chunk,
        p.frame_size,
        p.bytes() >> 20,
        s.pool.min_free,
        s.pool.recycled,
        s.pool.exhausted,
        s.pool_exhausted,
        s.fill_ring_empty,
        s.rx_ring_full,
        s.rx_dropped,
    )
}

/// The `af_xdp` object of `--stats-json`.
pub(crate) fn stats_json(info: &XskInfo, s: &XskStats) -> serde_json::Value {
    let p = &info.pool;
    serde_json::json!({
        "queue": info.queue,
        "mode": info.mode,
        "pool_chunks": p.chunks,
        "chunk_frames": p.frames_per_chunk,
        "frame_size": p.frame_size,
        "received": s.received,
        "dropped_pool_exhausted": s.pool_exhausted,
        "dropped_fill_ring_empty": s.fill_ring_empty,
        "dropped_rx_ring_full": s.rx_ring_full,
        "dropped_other": s.rx_dropped,
        "invalid_descriptors": s.rx_invalid,
        "min_free_chunks": s.pool.min_free,
        "chunks_recycled": s.pool.recycled,
        "ran_dry": s.pool.exhausted,
        "held_frames": s.held_frames,
    })
}
