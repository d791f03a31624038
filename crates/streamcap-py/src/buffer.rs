//! The bytes of a chunk, lent to Python without a copy.
//!
//! The engine hands each chunk's buffer over by value
//! ([`streamcap::Handler::TAKES_CHUNKS`]); a [`ChunkBuffer`] owns it and
//! exports it through the buffer protocol, and the callback gets a
//! read-only `memoryview` of it. When the callback returns, the view is
//! released (using it then raises `ValueError`), and the buffer protocol's
//! count of exports says whether anything else still points at the bytes
//! (a slice of the view, a NumPy array made from it): if nothing does, the
//! buffer goes back to the engine for reuse; if something does, the
//! `ChunkBuffer` keeps the bytes, unchanged, until the last such view is
//! released (Python's reference counting frees them then). Either way no
//! view ever sees memory that was freed or reused.

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// The bytes of one chunk, exported read-only through the buffer protocol.
///
/// `memoryview(buffer)` is how a callback sees them; the object itself is
/// reachable as the view's `.obj`.
#[pyclass(frozen, module = "streamcap._native", name = "ChunkBuffer")]
pub struct ChunkBuffer {
    /// The bytes; `None` once they went back to the engine. Never changed
    /// while `exports` is above 0, so an exported pointer stays valid.
    data: Mutex<Option<Vec<u8>>>,
    /// Buffer views of `data` not yet released.
    exports: AtomicUsize,
}

impl ChunkBuffer {
    /// A buffer owning `data`.
    pub fn new(data: Vec<u8>) -> ChunkBuffer {
        ChunkBuffer {
            data: Mutex::new(Some(data)),
            exports: AtomicUsize::new(0),
        }
    }

    /// The bytes, if no view of them is left (they are no longer
    /// reachable from Python then); `None` while some view remains.
    pub fn reclaim(&self) -> Option<Vec<u8>> {
        let mut data = self.data.lock().unwrap_or_else(PoisonError::into_inner);
        if self.exports.load(Ordering::Acquire) == 0 {
            data.take()
        } else {
            None
        }
    }

    /// A copy of the bytes (for bytes kept while views of them remain).
    pub fn copy(&self) -> Vec<u8> {
        let data = self.data.lock().unwrap_or_else(PoisonError::into_inner);
        data.clone().unwrap_or_default()
    }
}

#[pymethods]
impl ChunkBuffer {
    /// The buffer protocol: a read-only, one-dimensional view of bytes.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("no view to fill"));
        }
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("a chunk's bytes are read-only"));
        }
        let me = slf.get();
        let data = me.data.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(bytes) = data.as_ref() else {
            return Err(PyBufferError::new_err(
                "the chunk's bytes are gone: a chunk is valid only during its on_data \
                 callback (copy it with bytes(data) to keep it)",
            ));
        };
        let len = ffi::Py_ssize_t::try_from(bytes.len())
            .map_err(|_| PyBufferError::new_err("chunk too large"))?;
        // SAFETY: `view` is the non-null `Py_buffer` the interpreter asks us
        // to fill; `PyBuffer_FillInfo` fills it for `len` read-only bytes at
        // `bytes.as_ptr()` (format "B", contiguous) and takes a new reference
        // to the exporter (`slf`), released with the view. The bytes stay
        // where they are while the view exists: `reclaim` does not take them
        // while `exports` (incremented below, decremented by
        // `__releasebuffer__`) is above 0, and nothing else changes them.
        let rc = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                bytes.as_ptr() as *mut c_void,
                len,
                1,
                flags,
            )
        };
        if rc != 0 {
            return Err(PyErr::take(slf.py())
                .unwrap_or_else(|| PyBufferError::new_err("cannot export the chunk")));
        }
        me.exports.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// One view fewer.
    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {
        self.exports.fetch_sub(1, Ordering::AcqRel);
    }

    /// The number of bytes (0 once they went back to the engine).
    fn __len__(&self) -> usize {
        let data = self.data.lock().unwrap_or_else(PoisonError::into_inner);
        data.as_ref().map_or(0, Vec::len)
    }

    fn __repr__(&self) -> String {
        let data = self.data.lock().unwrap_or_else(PoisonError::into_inner);
        match data.as_ref() {
            Some(d) => format!("<ChunkBuffer of {} bytes>", d.len()),
            None => "<ChunkBuffer released>".to_string(),
        }
    }
}
