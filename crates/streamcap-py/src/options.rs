//! The options of `flows`, `Capture` and `streams`, from the dictionary the
//! Python layer passes, mapped onto the engine's configuration as the
//! command line maps its options (`crates/streamcap-cli/src/run.rs`).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use streamcap::deliver::Delivery;
use streamcap::filter::{Filter, FilterError};
use streamcap::{Capture, Config, OverlapPolicy, ReassemblyMode};

/// Most worker threads accepted (as the command line).
const MAX_WORKERS: usize = 256;

/// Which function the options are for: it decides the default cutoff and
/// the keys accepted.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `flows()`: statistics only unless `digest` (cutoff 0, as `streamcap flows`).
    Flows,
    /// `Capture`: every byte to the callbacks (cutoff unlimited, as `streamcap streams`).
    Capture,
    /// `streams()`: every byte into the yielded streams, up to the bounds.
    Streams,
}

/// The options, checked.
pub struct Options {
    /// The engine's configuration and limits.
    pub capture: Capture,
    /// The tcpdump-syntax filter, if any.
    pub filter: Option<String>,
    /// Worker threads.
    pub workers: usize,
    /// `flows(digest=True)`: each direction's SHA-256.
    pub digest: bool,
    /// The Community ID seed.
    pub community_id_seed: u16,
    /// `streams()`: most bytes held at once in streams not yet consumed.
    pub max_buffered: usize,
    /// `streams()`: finished streams queued for the consumer at most.
    pub queue: usize,
}

/// The keys every kind accepts.
const COMMON: &[&str] = &[
    "filter",
    "cutoff",
    "cutoff_orig",
    "cutoff_resp",
    "mode",
    "policy",
    "timeout",
    "workers",
    "memory",
    "chunk_size",
    "delivery",
    "count",
    "priority",
    "community_id_seed",
];

/// A byte size from Python: an int, or text as on the command line
/// (`"10KiB"`, `"1MB"`, `"1M"`); `"unlimited"` (where `unlimited` is
/// allowed) gives `None`.
fn size(name: &str, v: &Bound<'_, PyAny>, unlimited: bool) -> PyResult<Option<u64>> {
    if let Ok(s) = v.cast::<PyString>() {
        let s = s.to_cow()?;
        let parsed = if unlimited {
            crate::size::parse_limit(&s)
        } else {
            crate::size::parse_size(&s).map(Some)
        };
        return parsed.map_err(|e| PyValueError::new_err(format!("{name}: {e}")));
    }
    if v.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{name}: expected a number of bytes, not a bool"
        )));
    }
    match v.extract::<i128>() {
        Ok(n) if (0..=i128::from(u64::MAX)).contains(&n) => Ok(Some(n as u64)),
        Ok(n) => Err(PyValueError::new_err(format!(
            "{name}: {n} is not a size in bytes (0 or more)"
        ))),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{name}: expected an int or a size such as \"10KiB\"{}, not {}",
            if unlimited { " or \"unlimited\"" } else { "" },
            v.get_type().name()?
        ))),
    }
}

/// A filter error as the command line words it.
pub fn filter_message(e: FilterError) -> String {
    match e {
        FilterError::Unavailable(e) => format!(
            "a filter was given but libpcap could not be loaded; install libpcap0.8 to use filters ({e})"
        ),
        FilterError::Compile { expr, message, .. } => {
            format!("invalid filter {expr:?}: {message}")
        }
        e => e.to_string(),
    }
}

/// Compiles the filter for one worker.
pub fn compile_filter(expr: &str) -> PyResult<Filter> {
    Filter::new(expr).map_err(|e| PyValueError::new_err(filter_message(e)))
}

fn text<'py>(name: &str, v: &Bound<'py, PyAny>) -> PyResult<String> {
    v.extract::<String>()
        .map_err(|_| PyTypeError::new_err(format!("{name}: expected a str")))
}

impl Options {
    /// Reads `opts` (keyword arguments as a dict; `None` values mean the
    /// default) for `kind`.
    pub fn parse(kind: Kind, opts: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
        let mut cfg = Config {
            // Nothing reads callback processing times here.
            measure_processing_time: false,
            ..Config::default()
        };
        let mut cutoff: Option<Option<u64>> = None;
        let mut filter = None;
        let mut workers = 1usize;
        let mut digest = false;
        let mut seed = 0u16;
        let mut timeout = None;
        let mut count = None;
        let mut max_buffered = 256usize << 20;
        let mut queue = 64usize;
        if let Some(opts) = opts {
            for (k, v) in opts.iter() {
                let key: String = k.extract()?;
                let key = key.as_str();
                let extra: &[&str] = match kind {
                    Kind::Flows => &["digest"],
                    Kind::Capture => &[],
                    Kind::Streams => &["max_buffered", "queue"],
                };
                if !COMMON.contains(&key) && !extra.contains(&key) {
                    return Err(PyTypeError::new_err(format!(
                        "unexpected option {key:?} (accepted: {})",
                        COMMON
                            .iter()
                            .chain(extra)
                            .copied()
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
                if v.is_none() {
                    continue;
                }
                match key {
                    "filter" => {
                        let f = text(key, &v)?;
                        if !f.trim().is_empty() {
                            filter = Some(f);
                        }
                    }
                    "cutoff" => cutoff = Some(size(key, &v, true)?),
                    "cutoff_orig" => {
                        cfg.cutoff_orig = Some(size(key, &v, true)?.unwrap_or(u64::MAX))
                    }
                    "cutoff_resp" => {
                        cfg.cutoff_resp = Some(size(key, &v, true)?.unwrap_or(u64::MAX))
                    }
                    "mode" => {
                        cfg.mode = text(key, &v)?
                            .parse::<ReassemblyMode>()
                            .map_err(|e| PyValueError::new_err(format!("mode: {e}")))?
                    }
                    "policy" => {
                        let p = text(key, &v)?;
                        cfg.policy = match p.to_ascii_lowercase().as_str() {
                            "first" => OverlapPolicy::First,
                            "last" => OverlapPolicy::Last,
                            "linux" => OverlapPolicy::Linux,
                            "bsd" => OverlapPolicy::Bsd,
                            "windows" => OverlapPolicy::Windows,
                            "solaris" => OverlapPolicy::Solaris,
                            _ => {
                                return Err(PyValueError::new_err(format!(
                                    "policy: unknown policy {p:?} (expected first, last, linux, bsd, windows or solaris)"
                                )))
                            }
                        }
                    }
                    "timeout" => {
                        let t: f64 = v.extract().map_err(|_| {
                            PyTypeError::new_err("timeout: expected a number of seconds")
                        })?;
                        if !t.is_finite() || t < 0.0 {
                            return Err(PyValueError::new_err(format!(
                                "timeout: {t}: expected a number of seconds >= 0"
                            )));
                        }
                        timeout = Some(t);
                    }
                    "workers" => {
                        let n: usize = v.extract().map_err(|_| {
                            PyTypeError::new_err("workers: expected an int from 1 to 256")
                        })?;
                        if n == 0 || n > MAX_WORKERS {
                            return Err(PyValueError::new_err(format!(
                                "workers: {n}: expected 1 to {MAX_WORKERS}"
                            )));
                        }
                        workers = n;
                    }
                    "memory" => {
                        let m = size(key, &v, false)?.unwrap_or(u64::MAX);
                        cfg.memory_size = usize::try_from(m).unwrap_or(usize::MAX);
                    }
                    "chunk_size" => {
                        let c = size(key, &v, false)?.unwrap_or(0);
                        if c == 0 {
                            return Err(PyValueError::new_err(
                                "chunk_size: the chunk size must be at least 1 byte",
                            ));
                        }
                        cfg.chunk_size = usize::try_from(c).unwrap_or(usize::MAX);
                    }
                    "delivery" => {
                        cfg.delivery = text(key, &v)?
                            .parse::<Delivery>()
                            .map_err(|e| PyValueError::new_err(format!("delivery: {e}")))?
                    }
                    "count" => {
                        count = Some(
                            v.extract::<u64>()
                                .map_err(|_| PyTypeError::new_err("count: expected an int >= 0"))?,
                        )
                    }
                    "priority" => {
                        cfg.priority = v.extract::<u8>().map_err(|_| {
                            PyValueError::new_err("priority: expected an int from 0 to 255")
                        })?
                    }
                    "community_id_seed" => {
                        seed = v.extract::<u16>().map_err(|_| {
                            PyValueError::new_err(
                                "community_id_seed: expected an int from 0 to 65535",
                            )
                        })?
                    }
                    "digest" => digest = v.is_truthy()?,
                    "max_buffered" => {
                        let m = size(key, &v, false)?.unwrap_or(0);
                        max_buffered = usize::try_from(m).unwrap_or(usize::MAX);
                    }
                    "queue" => {
                        let q: usize = v
                            .extract()
                            .map_err(|_| PyTypeError::new_err("queue: expected an int >= 1"))?;
                        queue = q.max(1);
                    }
                    _ => unreachable!("checked above"),
                }
            }
        }
        // The default cutoff: statistics only for plain flow records (as
        // `streamcap flows`), every byte otherwise (`flows --digest`,
        // `streams`).
        let default_cutoff = match kind {
            Kind::Flows if !digest => Some(0),
            _ => None,
        };
        cfg.cutoff = cutoff.unwrap_or(default_cutoff);
        let mut builder = Capture::builder().config(cfg);
        if let Some(t) = timeout {
            builder = builder.inactivity_timeout(t);
        }
        if let Some(n) = count {
            builder = builder.max_packets(n);
        }
        Ok(Options {
            capture: builder.build(),
            filter,
            workers,
            digest,
            community_id_seed: seed,
            max_buffered,
            queue,
        })
    }

    /// One compiled filter per worker (`None` without a filter); fails
    /// before any packet is read on an expression libpcap refuses.
    pub fn filters(&self) -> PyResult<Vec<Option<Filter>>> {
        (0..self.workers)
            .map(|_| self.filter.as_deref().map(compile_filter).transpose())
            .collect()
    }
}
