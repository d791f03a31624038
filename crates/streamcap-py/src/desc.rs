//! Stream descriptors as Python sees them: [`PyStream`], the live handle a
//! callback receives, and [`StreamData`], a finished stream that
//! `streams()` yields. Both read a snapshot of the engine's descriptor
//! ([`StreamInfo`]) through [`Desc`].

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use pyo3::{PyTraverseError, PyVisit};
use std::net::IpAddr;
use streamcap::deliver::{DataReason, StreamInfo, StreamStatus};
use streamcap::flow::Direction;
use streamcap::{Stream, Timestamp};

/// A stream's identity and its descriptor at some moment.
#[derive(Clone)]
pub struct Desc {
    pub src: (IpAddr, u16),
    pub dst: (IpAddr, u16),
    pub proto: u8,
    pub vlan: Option<u16>,
    pub info: StreamInfo,
}

impl Desc {
    /// From the engine's handle.
    pub fn of<S>(s: &Stream<'_, S>) -> Desc {
        Desc {
            src: s.src(),
            dst: s.dst(),
            proto: s.proto(),
            vlan: s.key().vlan(),
            info: s.info().clone(),
        }
    }

    fn proto_name(&self) -> String {
        match self.proto {
            6 => "tcp".into(),
            17 => "udp".into(),
            1 => "icmp".into(),
            58 => "icmp6".into(),
            p => p.to_string(),
        }
    }

    fn key<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(
            py,
            [
                self.src.0.to_string().into_pyobject(py)?.into_any(),
                self.src.1.into_pyobject(py)?.into_any(),
                self.dst.0.to_string().into_pyobject(py)?.into_any(),
                self.dst.1.into_pyobject(py)?.into_any(),
                self.proto_name().into_pyobject(py)?.into_any(),
            ],
        )
    }

    fn direction(&self) -> &'static str {
        match self.info.direction {
            Direction::Orig => "orig",
            Direction::Resp => "resp",
        }
    }

    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = &self.info.counters;
        let d = PyDict::new(py);
        for (k, v) in [
            ("pkts", c.pkts),
            ("bytes", c.bytes),
            ("stream_bytes", c.stream_bytes),
            ("captured", c.captured),
            ("discarded", c.discarded),
            ("dropped", c.dropped),
            ("missing", c.missing),
            ("pkts_captured", c.pkts_captured),
            ("pkts_discarded", c.pkts_discarded),
            ("pkts_dropped", c.pkts_dropped),
            ("retransmitted", c.retransmitted),
            ("overlap_conflicts", c.overlap_conflicts),
        ] {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    fn errors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.info.errors.names())
    }

    fn status(&self) -> &'static str {
        match self.info.status {
            StreamStatus::Active => "active",
            StreamStatus::Closing(_) => "closing",
            StreamStatus::Closed(_) => "closed",
        }
    }

    fn end_reason(&self) -> Option<&'static str> {
        match self.info.status {
            StreamStatus::Active => None,
            StreamStatus::Closing(r) | StreamStatus::Closed(r) => Some(r.name()),
        }
    }

    fn cutoff(&self) -> Option<u64> {
        (self.info.params.cutoff != u64::MAX).then_some(self.info.params.cutoff)
    }

    fn repr(&self, what: &str) -> String {
        let host = |(ip, port): (IpAddr, u16)| match ip {
            IpAddr::V4(a) => format!("{a}:{port}"),
            IpAddr::V6(a) => format!("[{a}]:{port}"),
        };
        format!(
            "<{what} {} {} {} -> {} captured={} stream_bytes={}>",
            self.direction(),
            self.proto_name(),
            host(self.src),
            host(self.dst),
            self.info.counters.captured,
            self.info.counters.stream_bytes
        )
    }
}

/// Seconds since the epoch as a float.
fn secs(t: Timestamp) -> f64 {
    t.as_secs_f64()
}

/// What a callback asked for its stream, applied when it returns.
#[derive(Default, Clone, Copy)]
pub struct Actions {
    pub discard: bool,
    pub cutoff: Option<Option<u64>>,
    pub priority: Option<u8>,
    pub chunk_size: Option<usize>,
    pub keep: bool,
}

impl Actions {
    /// Applies the requests to the engine's stream (all but `keep`, which
    /// the handler implements).
    pub fn apply<S>(&self, s: &mut Stream<'_, S>) {
        if let Some(c) = self.cutoff {
            s.set_cutoff(c);
        }
        if let Some(p) = self.priority {
            s.set_priority(p);
        }
        if let Some(c) = self.chunk_size {
            s.set_chunk_size(c);
        }
        if self.discard {
            s.discard();
        }
    }
}

/// The chunk a data event carries, described.
#[derive(Default, Clone, Copy)]
pub struct ChunkInfo {
    pub offset: u64,
    pub new_from: usize,
    pub gap: Option<(u64, u64)>,
    pub reason: Option<&'static str>,
}

/// The name of a data event's reason.
pub fn reason_name(r: DataReason) -> &'static str {
    match r {
        DataReason::Full => "full",
        DataReason::FlushTimeout => "flush_timeout",
        DataReason::Cutoff => "cutoff",
        DataReason::Termination => "termination",
        DataReason::Gap => "gap",
        DataReason::Packet => "packet",
        DataReason::Segment => "segment",
        _ => "other",
    }
}

/// One stream (one direction of a connection), as callbacks see it.
///
/// The same object stands for the stream in all of its callbacks
/// (`on_create`, every `on_data`, `on_close`), so attributes set on
/// `state` persist from one to the next. Its counters and status are
/// those at the start of the current callback. The steering methods
/// (`discard`, `set_cutoff`, `set_priority`, `set_chunk_size`,
/// `keep_chunk`) work only inside a callback of this stream and take
/// effect when it returns; outside they raise `RuntimeError`.
#[pyclass(module = "streamcap._native", name = "Stream")]
pub struct PyStream {
    desc: Desc,
    chunk: ChunkInfo,
    state: Py<PyAny>,
    /// Inside a callback of this stream.
    live: bool,
    actions: Actions,
}

impl PyStream {
    /// A descriptor for the stream `s`.
    pub fn new<S>(py: Python<'_>, s: &Stream<'_, S>) -> PyStream {
        PyStream {
            desc: Desc::of(s),
            chunk: ChunkInfo::default(),
            state: py.None(),
            live: false,
            actions: Actions::default(),
        }
    }

    /// Before a callback: the engine's descriptor now, and the chunk.
    pub fn enter<S>(&mut self, s: &Stream<'_, S>, chunk: ChunkInfo) {
        self.desc.info = s.info().clone();
        self.chunk = chunk;
        self.live = true;
        self.actions = Actions::default();
    }

    /// After a callback: what it asked for.
    pub fn leave(&mut self) -> Actions {
        self.live = false;
        self.chunk = ChunkInfo::default();
        std::mem::take(&mut self.actions)
    }

    fn check_live(&self, what: &str) -> PyResult<()> {
        if self.live {
            Ok(())
        } else {
            Err(PyRuntimeError::new_err(format!(
                "Stream.{what}() works only inside a callback of this stream"
            )))
        }
    }
}

#[pymethods]
impl PyStream {
    /// Sender address (str).
    #[getter]
    fn src_ip(&self) -> String {
        self.desc.src.0.to_string()
    }
    /// Sender port (int; ICMP: type).
    #[getter]
    fn src_port(&self) -> u16 {
        self.desc.src.1
    }
    /// Receiver address (str).
    #[getter]
    fn dst_ip(&self) -> String {
        self.desc.dst.0.to_string()
    }
    /// Receiver port (int; ICMP: code or counterpart type).
    #[getter]
    fn dst_port(&self) -> u16 {
        self.desc.dst.1
    }
    /// IP protocol number (6 TCP, 17 UDP, …).
    #[getter]
    fn proto(&self) -> u8 {
        self.desc.proto
    }
    /// Protocol name as the records write it: "tcp", "udp", "icmp", "icmp6", else the number as text.
    #[getter]
    fn proto_name(&self) -> String {
        self.desc.proto_name()
    }
    /// Outer VLAN id, or None.
    #[getter]
    fn vlan(&self) -> Option<u16> {
        self.desc.vlan
    }
    /// (src_ip, src_port, dst_ip, dst_port, proto_name) of this direction.
    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        self.desc.key(py)
    }
    /// "orig" (from the connection's initiator) or "resp".
    #[getter]
    fn direction(&self) -> &'static str {
        self.desc.direction()
    }
    /// The connection's serial number (unique within a worker).
    #[getter]
    fn conn_id(&self) -> u64 {
        self.desc.info.conn_id
    }
    /// Time of the stream's first packet, seconds since the epoch.
    #[getter]
    fn start(&self) -> f64 {
        secs(self.desc.info.start)
    }
    /// Time of its last packet so far.
    #[getter]
    fn end(&self) -> f64 {
        secs(self.desc.info.end)
    }
    /// Byte and packet counters (dict): pkts, bytes, stream_bytes, captured,
    /// discarded, dropped, missing, pkts_captured, pkts_discarded,
    /// pkts_dropped, retransmitted, overlap_conflicts.
    #[getter]
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.desc.counters(py)
    }
    /// Error flags (list of names: gap, no_handshake, bad_seq, …).
    #[getter]
    fn errors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.desc.errors(py)
    }
    /// "active", "closing" (closed, lingering for late packets) or "closed".
    #[getter]
    fn status(&self) -> &'static str {
        self.desc.status()
    }
    /// Why it ended ("fin", "rst", "timeout", "eof", "evicted"), or None while active.
    #[getter]
    fn end_reason(&self) -> Option<&'static str> {
        self.desc.end_reason()
    }
    /// The stream's cutoff in bytes, None for unlimited.
    #[getter]
    fn cutoff(&self) -> Option<u64> {
        self.desc.cutoff()
    }
    /// Whether the cutoff was reached.
    #[getter]
    fn cutoff_exceeded(&self) -> bool {
        self.desc.info.cutoff_exceeded
    }
    /// Priority for overload control.
    #[getter]
    fn priority(&self) -> u8 {
        self.desc.info.params.priority
    }
    /// Chunk size in bytes.
    #[getter]
    fn chunk_size(&self) -> usize {
        self.desc.info.params.chunk_size
    }
    /// Chunks delivered so far.
    #[getter]
    fn chunks(&self) -> u64 {
        self.desc.info.chunks
    }
    /// Whether discard() was called (before this callback).
    #[getter]
    fn discarded(&self) -> bool {
        self.desc.info.is_discarded()
    }
    /// In on_data: stream offset of the chunk's first byte; else None.
    #[getter]
    fn offset(&self) -> Option<u64> {
        self.chunk.reason.map(|_| self.chunk.offset)
    }
    /// In on_data: index in the chunk where bytes never delivered before
    /// begin (above 0 only after keep_chunk()); else None.
    #[getter]
    fn new_from(&self) -> Option<usize> {
        self.chunk.reason.map(|_| self.chunk.new_from)
    }
    /// In on_data: (offset, length) of the bytes missing right before the
    /// new bytes, or None.
    #[getter]
    fn gap(&self) -> Option<(u64, u64)> {
        self.chunk.gap
    }
    /// In on_data: why the event fired ("full", "flush_timeout", "cutoff",
    /// "termination", "gap", "packet", "segment"); else None.
    #[getter]
    fn reason(&self) -> Option<&'static str> {
        self.chunk.reason
    }
    /// Your per-stream state: any object (None at first); it stays with the
    /// stream until its on_close returns.
    #[getter]
    fn get_state(&self, py: Python<'_>) -> Py<PyAny> {
        self.state.clone_ref(py)
    }
    #[setter]
    fn set_state(&mut self, value: Py<PyAny>) {
        self.state = value;
    }

    /// Stops copying this stream's payload: statistics go on and on_close
    /// still comes (Scap's discard).
    fn discard(&mut self) -> PyResult<()> {
        self.check_live("discard")?;
        self.actions.discard = true;
        Ok(())
    }

    /// Sets the cutoff in bytes from the start of the stream (None:
    /// unlimited). A cutoff below what was delivered acts as discard().
    #[pyo3(signature = (cutoff))]
    fn set_cutoff(&mut self, cutoff: Option<u64>) -> PyResult<()> {
        self.check_live("set_cutoff")?;
        self.actions.cutoff = Some(cutoff);
        Ok(())
    }

    /// Sets the priority for overload control (0 to 255, larger is more important).
    fn set_priority(&mut self, priority: u8) -> PyResult<()> {
        self.check_live("set_priority")?;
        self.actions.priority = Some(priority);
        Ok(())
    }

    /// Sets the chunk size for the stream's next chunks (at least 1 byte).
    fn set_chunk_size(&mut self, bytes: usize) -> PyResult<()> {
        self.check_live("set_chunk_size")?;
        if bytes == 0 {
            return Err(PyValueError::new_err(
                "the chunk size must be at least 1 byte",
            ));
        }
        self.actions.chunk_size = Some(bytes);
        Ok(())
    }

    /// In on_data: keeps this chunk, so that the next data event of the
    /// stream receives these bytes followed by the new ones in one buffer
    /// (Scap's keep_chunk; for parsers that need more bytes). A gap
    /// releases the kept bytes.
    fn keep_chunk(&mut self) -> PyResult<()> {
        self.check_live("keep_chunk")?;
        if self.chunk.reason.is_none() {
            return Err(PyRuntimeError::new_err(
                "Stream.keep_chunk() works only in on_data",
            ));
        }
        self.actions.keep = true;
        Ok(())
    }

    fn __repr__(&self) -> String {
        self.desc.repr("Stream")
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.state)
    }

    fn __clear__(&mut self, py: Python<'_>) {
        self.state = py.None();
    }
}

/// A finished stream yielded by `streams()`: its identity, final counters
/// and its reassembled bytes.
#[pyclass(frozen, module = "streamcap._native", name = "StreamData")]
pub struct StreamData {
    desc: Desc,
    data: Py<PyBytes>,
}

impl StreamData {
    /// A finished stream with its bytes.
    pub fn new(desc: Desc, data: Py<PyBytes>) -> StreamData {
        StreamData { desc, data }
    }
}

#[pymethods]
impl StreamData {
    /// The reassembled bytes (gaps skipped: see `complete` and `counters`).
    #[getter]
    fn data(&self, py: Python<'_>) -> Py<PyBytes> {
        self.data.clone_ref(py)
    }
    /// Whether `data` is the whole stream: nothing missing, dropped or discarded.
    #[getter]
    fn complete(&self) -> bool {
        let c = &self.desc.info.counters;
        c.missing == 0 && c.dropped == 0 && c.discarded == 0
    }
    /// (src_ip, src_port, dst_ip, dst_port, proto_name) of this direction.
    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        self.desc.key(py)
    }
    /// Sender address (str).
    #[getter]
    fn src_ip(&self) -> String {
        self.desc.src.0.to_string()
    }
    /// Sender port.
    #[getter]
    fn src_port(&self) -> u16 {
        self.desc.src.1
    }
    /// Receiver address (str).
    #[getter]
    fn dst_ip(&self) -> String {
        self.desc.dst.0.to_string()
    }
    /// Receiver port.
    #[getter]
    fn dst_port(&self) -> u16 {
        self.desc.dst.1
    }
    /// IP protocol number.
    #[getter]
    fn proto(&self) -> u8 {
        self.desc.proto
    }
    /// Protocol name ("tcp", "udp", …).
    #[getter]
    fn proto_name(&self) -> String {
        self.desc.proto_name()
    }
    /// Outer VLAN id, or None.
    #[getter]
    fn vlan(&self) -> Option<u16> {
        self.desc.vlan
    }
    /// "orig" or "resp".
    #[getter]
    fn direction(&self) -> &'static str {
        self.desc.direction()
    }
    /// The connection's serial number (unique within a worker).
    #[getter]
    fn conn_id(&self) -> u64 {
        self.desc.info.conn_id
    }
    /// Time of the first packet, seconds since the epoch.
    #[getter]
    fn start(&self) -> f64 {
        secs(self.desc.info.start)
    }
    /// Time of the last packet.
    #[getter]
    fn end(&self) -> f64 {
        secs(self.desc.info.end)
    }
    /// Final counters (dict, as Stream.counters).
    #[getter]
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.desc.counters(py)
    }
    /// Error flags (list of names).
    #[getter]
    fn errors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.desc.errors(py)
    }
    /// Why it ended.
    #[getter]
    fn end_reason(&self) -> Option<&'static str> {
        self.desc.end_reason()
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.data.bind(py).as_bytes().len()
    }

    fn __repr__(&self) -> String {
        self.desc.repr("StreamData")
    }
}
