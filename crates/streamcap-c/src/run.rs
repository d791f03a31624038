//! `sc_start_capture`: runs the handle's settings over its file or
//! interface, with one [`CHandler`] per worker thread, and keeps the
//! statistics for `sc_get_stats`.

use crate::error::Error;
use crate::handler::CHandler;
use crate::{sc_stats_t, sc_t, Settings, Source};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use streamcap_core::capture::{RunHooks, Verdict};
use streamcap_core::dispatch::live::total_kernel_stats;
use streamcap_core::dispatch::workers::{Parallel, ParallelReport};
use streamcap_core::filter::Filter;
use streamcap_core::source::{KernelStats, RawPacket};
use streamcap_core::stats::GlobalStats;

/// A worker's hooks: the user-space filter, if there is one.
pub(crate) struct Hooks(pub(crate) Option<Filter>);

impl RunHooks for Hooks {
    fn inspect(&mut self, pkt: &RawPacket<'_>) -> Verdict {
        match &mut self.0 {
            Some(f) => f.inspect(pkt),
            None => Verdict::Process,
        }
    }
}

/// Clears the handle's `running` flag when the run ends, however it ends.
struct Running<'a>(&'a sc_t);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.running.store(false, Ordering::SeqCst);
    }
}

/// The body of `sc_start_capture`.
pub(crate) fn start(sc: &sc_t) -> Result<(), Error> {
    if sc.running.swap(true, Ordering::SeqCst) {
        return Err(Error::state("a capture is already running on this handle"));
    }
    let _running = Running(sc);
    sc.stop.store(false, Ordering::SeqCst);
    let settings = sc.settings().clone();
    let cap = settings.capture();
    let par = Parallel {
        workers: settings.workers,
        stop: sc.stop.clone(),
        ..Parallel::default()
    };
    let make_handler = || CHandler {
        sc: sc as *const sc_t as usize,
        create: settings.create,
        data: settings.data,
        close: settings.close,
        test_panic: settings.test_panic == 1,
        packets: Vec::new(),
    };
    // One filter per worker, compiled before any packet is read.
    let user_filters = |n: usize| -> Result<Vec<Mutex<Option<Filter>>>, Error> {
        (0..n)
            .map(|_| match &settings.filter {
                Some(expr) => Filter::new(expr)
                    .map(|f| Mutex::new(Some(f)))
                    .map_err(|e| Error::filter(e.to_string())),
                None => Ok(Mutex::new(None)),
            })
            .collect()
    };
    let take = |filters: &[Mutex<Option<Filter>>], i: usize| {
        Hooks(
            filters
                .get(i)
                .and_then(|m| m.lock().unwrap_or_else(|e| e.into_inner()).take()),
        )
    };
    match &sc.source {
        Source::File(path) => {
            let filters = user_filters(settings.workers)?;
            let report = cap
                .run_file_parallel(path, &par, |i| (make_handler(), take(&filters, i)))
                .map_err(|e| Error::io(e.to_string()))?;
            finish(sc, report, None)
        }
        Source::Interface(name) => run_live(sc, &settings, &cap, &par, name, &make_handler),
    }
}

/// A live capture on interface `name`.
#[cfg(target_os = "linux")]
fn run_live(
    sc: &sc_t,
    settings: &Settings,
    cap: &streamcap_core::Capture,
    par: &Parallel,
    name: &str,
    make_handler: &(dyn Fn() -> CHandler + Sync),
) -> Result<(), Error> {
    use streamcap_core::filter::libpcap::Libpcap;
    use streamcap_core::source::{LiveConfig, ANY_INTERFACE, MAX_SNAPLEN};
    let mut live = LiveConfig::new(name);
    // As the command line does: the filter runs in the kernel, compiled
    // for Ethernet; on `any` (cooked packets, whose header the kernel
    // filter does not see) in user space.
    let mut filters = Vec::new();
    if let Some(expr) = &settings.filter {
        if name == ANY_INTERFACE {
            for _ in 0..settings.workers {
                let f = Filter::new(expr).map_err(|e| Error::filter(e.to_string()))?;
                filters.push(Mutex::new(Some(f)));
            }
        } else {
            let lib = Libpcap::load().map_err(|e| {
                Error::filter(format!(
                    "filters need libpcap, which could not be loaded: {e}"
                ))
            })?;
            let prog = lib
                .compile(expr, 1, MAX_SNAPLEN as i32)
                .map_err(|m| Error::filter(format!("invalid filter {expr:?}: {m}")))?;
            live.filter = Some(prog);
        }
    }
    let report = cap
        .run_live(&live, par, |i| {
            let hooks = filters
                .get(i)
                .and_then(|m| m.lock().unwrap_or_else(|e| e.into_inner()).take());
            (make_handler(), Hooks(hooks))
        })
        .map_err(|e| {
            Error::io(format!(
                "{name:?} is not a file, and capturing on it as an interface failed: {e}"
            ))
        })?;
    let kernel = total_kernel_stats(report.workers.iter().filter_map(|w| w.kernel.as_ref()));
    let live_error = report
        .workers
        .iter()
        .find_map(|w| w.live_error.as_ref().map(|e| e.to_string()));
    finish(sc, report, Some(kernel))?;
    match live_error {
        Some(e) => Err(Error::io(e)),
        None => Ok(()),
    }
}

#[cfg(not(target_os = "linux"))]
fn run_live(
    _sc: &sc_t,
    _settings: &Settings,
    _cap: &streamcap_core::Capture,
    _par: &Parallel,
    name: &str,
    _make_handler: &(dyn Fn() -> CHandler + Sync),
) -> Result<(), Error> {
    Err(Error::io(format!(
        "{name:?}: no such file (live capture is supported on Linux only)"
    )))
}

/// Keeps a run's statistics in the handle and turns what stopped it
/// early into an error: a filter that failed, or an input error.
fn finish(
    sc: &sc_t,
    mut report: ParallelReport<CHandler, Hooks>,
    kernel: Option<KernelStats>,
) -> Result<(), Error> {
    let filter_error = report
        .workers
        .iter_mut()
        .find_map(|w| w.hooks.0.as_mut().and_then(Filter::take_error));
    let stats = stats_of(&report.stats, report.packets_read, kernel);
    *sc.stats.lock().unwrap_or_else(|e| e.into_inner()) = stats;
    if let Some(e) = filter_error {
        return Err(Error::filter(e.to_string()));
    }
    if let Some(e) = report.error {
        return Err(Error::io(format!(
            "the input broke after {} packets (every stream read until then was delivered): {e}",
            report.packets_read
        )));
    }
    Ok(())
}

/// The C statistics of a run.
pub(crate) fn stats_of(
    s: &GlobalStats,
    packets_read: u64,
    kernel: Option<KernelStats>,
) -> sc_stats_t {
    let k = kernel.unwrap_or_default();
    sc_stats_t {
        packets_read,
        packets: s.packets,
        wire_bytes: s.wire_bytes,
        ip_packets: s.ip_packets,
        truncated_packets: s.truncated_packets,
        malformed_packets: s.malformed(),
        late_packets: s.late_packets,
        fragments: s.fragments,
        flows: s.flows_created.iter().sum(),
        flows_tcp: s.flows_created[0],
        flows_udp: s.flows_created[1],
        flows_icmp: s.flows_created[2],
        flows_other: s.flows_created[3],
        flows_fin: s.flows_ended[0],
        flows_rst: s.flows_ended[1],
        flows_timeout: s.flows_ended[2],
        flows_eof: s.flows_ended[3],
        flows_evicted: s.flows_ended[4],
        streams: s.streams,
        stream_bytes: s.totals.stream_bytes,
        bytes_captured: s.totals.captured,
        bytes_discarded: s.totals.discarded,
        bytes_dropped: s.totals.dropped,
        bytes_missing: s.totals.missing,
        pkts_captured: s.totals.pkts_captured,
        pkts_discarded: s.totals.pkts_discarded,
        pkts_dropped: s.totals.pkts_dropped,
        chunks: s.chunks,
        memory_peak: s.memory_peak as u64,
        memory_limit: s.memory_limit as u64,
        memory_refusals: s.memory_refusals,
        kernel_packets: k.packets,
        kernel_drops: k.drops,
    }
}
