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
    /// The first receive queue, and how many.
    pub queue: u32,
    pub queues: u32,
    /// How work moves between the queues' workers.
    pub offload: String,
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
    match c.offload.as_str() {
        "flows" | "off" => {}
        "packets" => {
            return Err(
                "--offload packets: handing whole chunks to a buddy splits connections \
                        between workers, so flow records and streams cannot use it; use flows \
                        (buckets of connections move, with their state) or off"
                    .into(),
            )
        }
        other => return Err(format!("--offload {other}: expected flows or off")),
    }
    if let Some(n) = c.analysis_threads.filter(|&n| n > 0) {
        if c.workers > 1 && c.offload == "flows" {
            return Err(format!(
                "--analysis-threads {n} with --offload flows: connections move between workers \
                 with their state, but the analysis threads keep theirs; use --analysis-threads 0 \
                 (the default there) or --offload off"
            ));
        }
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

/// Opens an AF_XDP socket on each of `--workers` queues of `iface` from
/// `--queue` on, with streamcap's XDP program: the one `--xdp` attached
/// (`program`), or one attached here that drops nothing. Returns the
/// sockets and what the summary says of them.
#[cfg(feature = "xdp")]
pub(crate) fn open(
    c: &Common,
    iface: &str,
    snaplen: u32,
    program: Option<std::sync::Arc<streamcap::subzero::xdp::XdpFlowDrop>>,
) -> Result<(Vec<AnySocket>, XskInfo), String> {
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
    if let Some(phys) = streamcap::source::physical_memory() {
        let all = pool.bytes().saturating_mul(u64::from(c.workers));
        if all > phys / 2 {
            return Err(format!(
                "--workers {} pools of {} bytes ({all} bytes) are more than half the machine's memory ({phys} bytes)",
                c.workers,
                pool.bytes()
            ));
        }
    }
    let mut sockets = Vec::new();
    let mut mode = String::new();
    for q in 0..c.workers {
        let cfg = AfXdpConfig {
            queue: c.queue + q,
            pool,
            bind,
            snaplen,
            ..AfXdpConfig::new(iface)
        };
        let socket = AfXdp::open(&cfg, program.clone()).map_err(|e| e.to_string())?;
        mode = socket.mode().to_string();
        sockets.push(AnySocket::Xdp(Box::new(socket)));
    }
    let info = XskInfo {
        queue: c.queue,
        queues: c.workers,
        offload: c.offload.clone(),
        mode,
        pool,
    };
    Ok((sockets, info))
}

/// Without the `xdp` feature there is no AF_XDP source.
#[cfg(not(feature = "xdp"))]
pub(crate) fn open(
    _c: &Common,
    _iface: &str,
    _snaplen: u32,
    _program: Option<()>,
) -> Result<(Vec<AnySocket>, XskInfo), String> {
    Err(crate::xdp::built_without_xdp("--source af_xdp", true))
}

/// The queues as the first line and the summary name them.
pub(crate) fn queues(info: &XskInfo) -> String {
    if info.queues > 1 {
        format!(
            "queues {}-{} (offload {})",
            info.queue,
            info.queue + info.queues - 1,
            info.offload
        )
    } else {
        format!("queue {}", info.queue)
    }
}

/// The summary's `af_xdp` line.
pub(crate) fn summary_line(info: &XskInfo, s: &XskStats) -> String {
    let p = &info.pool;
    format!(
        "{} ({} mode), pool of {} chunks x {} frames x {} bytes ({} MiB): fewest free {}, \
         {} chunks recycled, ran dry {} times; drops: {} pool exhausted, {} fill ring empty, \
         {} RX ring full, {} other (frame too small?)",
        queues(info),
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

/// What the buddy group of several queues did (`--offload`).
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct GroupStats {
    /// Packets processed by another worker than their queue's.
    pub packets_handed: u64,
    /// Moves of buckets, buckets moved, connections moved with them.
    pub moves: u64,
    pub buckets_moved: u64,
    pub flows_moved: u64,
}

/// The summary's `offload` line.
pub(crate) fn group_line(g: &GroupStats) -> String {
    format!(
        "{} packets processed by another queue's worker; {} moves of {} buckets with {} connections",
        g.packets_handed, g.moves, g.buckets_moved, g.flows_moved
    )
}

/// How the queues' workers run as a buddy group, and where the group's
/// counters go.
pub(crate) struct GroupPlan<'a> {
    #[cfg_attr(not(feature = "xdp"), allow(dead_code))]
    off: bool,
    #[cfg_attr(not(feature = "xdp"), allow(dead_code))]
    threshold: u64,
    #[cfg_attr(not(feature = "xdp"), allow(dead_code))]
    stats: &'a std::sync::Mutex<Option<GroupStats>>,
}

impl<'a> GroupPlan<'a> {
    /// The plan of `--offload` and `--offload-threshold`.
    pub(crate) fn new(
        c: &Common,
        info: &XskInfo,
        stats: &'a std::sync::Mutex<Option<GroupStats>>,
    ) -> GroupPlan<'a> {
        GroupPlan {
            off: c.offload == "off",
            threshold: c.offload_threshold.unwrap_or(info.pool.frames() / 4).max(1),
            stats,
        }
    }

    /// Runs the workers of `sockets` as a buddy group.
    #[cfg(feature = "xdp")]
    pub(crate) fn run<H: crate::stage::CliStage>(
        self,
        capture: &streamcap::Capture,
        sockets: Vec<AnySocket>,
        par: &streamcap::dispatch::workers::Parallel,
        parts: &crate::run::WorkerParts<H>,
    ) -> streamcap::dispatch::workers::ParallelReport<H, crate::run::Hooks> {
        use streamcap::dispatch::buddies::{BuddyConfig, Offload};
        let xsks = sockets
            .into_iter()
            .filter_map(|s| match s {
                AnySocket::Xdp(x) => Some(*x),
                AnySocket::Packet(_) => None,
            })
            .collect();
        let cfg = BuddyConfig {
            offload: if self.off {
                Offload::Off
            } else {
                Offload::Flows
            },
            threshold: self.threshold,
            ..BuddyConfig::default()
        };
        let (report, s) = capture.run_buddies(xsks, par, &cfg, |i| parts.take(i));
        if let Ok(mut g) = self.stats.lock() {
            *g = Some(GroupStats {
                packets_handed: s.packets_handed,
                moves: s.moves,
                buckets_moved: s.buckets_moved,
                flows_moved: s.flows_moved,
            });
        }
        report
    }

    /// Without the `xdp` feature no AF_XDP socket exists: the sockets run
    /// one per worker.
    #[cfg(not(feature = "xdp"))]
    pub(crate) fn run<H: crate::stage::CliStage>(
        self,
        capture: &streamcap::Capture,
        sockets: Vec<AnySocket>,
        par: &streamcap::dispatch::workers::Parallel,
        parts: &crate::run::WorkerParts<H>,
    ) -> streamcap::dispatch::workers::ParallelReport<H, crate::run::Hooks> {
        capture.run_live_on(sockets, par, |i| parts.take(i))
    }
}

/// The `af_xdp` object of `--stats-json`.
pub(crate) fn stats_json(
    info: &XskInfo,
    s: &XskStats,
    g: Option<&GroupStats>,
) -> serde_json::Value {
    let p = &info.pool;
    serde_json::json!({
        "offload_moves": g.map(|g| g.moves),
        "offload_buckets_moved": g.map(|g| g.buckets_moved),
        "offload_flows_moved": g.map(|g| g.flows_moved),
        "offload_packets_handed": g.map(|g| g.packets_handed),
        "queue": info.queue,
        "queues": info.queues,
        "offload": info.offload,
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
