//! `streamcap._native`: the native module of the `streamcap` Python
//! package (PyO3, stable ABI of Python 3.11 and later).
//!
//! The Python package (`python/streamcap/__init__.py`) wraps these
//! functions with keyword arguments, defaults and docstrings; see
//! docs/python.md. What is here:
//!
//! - [`records`]: `flows()`, the command line's flow records as dicts;
//! - [`callbacks`]: `run_capture()`, Python callbacks on the streams;
//! - [`streams`]: `streams()`, an iterator over finished streams;
//! - [`buffer`]: chunk bytes lent to Python as a `memoryview`, no copy;
//! - [`desc`]: the stream descriptor objects;
//! - [`engine`]: the engine on threads of its own, the GIL released;
//! - [`options`]: keyword options mapped as the command line maps its own.
//!
//! The flow record's code is the command line's own, compiled in here:
//! `record.rs`, `community_id.rs` and `size.rs` of `streamcap-cli`.

mod buffer;
mod callbacks;
mod desc;
mod engine;
mod options;
mod records;
mod streams;

// The command line's record, Community ID and size code, as they are (the
// CLI is a binary crate), and the JSON writer the record uses, from
// streamcap-apps. Parts only the CLI uses are unused here.
#[allow(dead_code)]
#[path = "../../streamcap-cli/src/record.rs"]
mod record;

#[allow(dead_code)]
#[path = "../../streamcap-apps/src/json.rs"]
mod json;

#[allow(dead_code)]
#[path = "../../streamcap-cli/src/community_id.rs"]
mod community_id;

#[allow(dead_code)]
#[path = "../../streamcap-cli/src/size.rs"]
mod size;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::PathBuf;

/// Flow records of a capture file, one dict per connection, in the order
/// `streamcap flows -r PATH` prints them (with one worker). `options`: the
/// keyword options of `streamcap.flows` as a dict.
#[pyfunction]
#[pyo3(signature = (path, options=None))]
fn flows(
    py: Python<'_>,
    path: PathBuf,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyList>> {
    records::flows(py, path, options)
}

/// Runs callbacks over the streams of a capture file; returns the run's
/// statistics (dict). `options`: the keyword options of
/// `streamcap.Capture` as a dict.
#[pyfunction]
#[pyo3(signature = (path, options=None, on_create=None, on_data=None, on_close=None, on_flow_end=None))]
fn run_capture(
    py: Python<'_>,
    path: PathBuf,
    options: Option<&Bound<'_, PyDict>>,
    on_create: Option<Py<PyAny>>,
    on_data: Option<Py<PyAny>>,
    on_close: Option<Py<PyAny>>,
    on_flow_end: Option<Py<PyAny>>,
) -> PyResult<Py<PyDict>> {
    let none = |f: Option<Py<PyAny>>| f.filter(|f| !f.is_none(py));
    callbacks::run_capture(
        py,
        path,
        options,
        callbacks::Callables {
            on_create: none(on_create),
            on_data: none(on_data),
            on_close: none(on_close),
            on_flow_end: none(on_flow_end),
        },
    )
}

/// An iterator over the finished streams of a capture file (each
/// direction of each connection, with its bytes). `options`: the keyword
/// options of `streamcap.streams` as a dict.
#[pyfunction]
#[pyo3(name = "streams", signature = (path, options=None))]
fn stream_iterator(
    path: PathBuf,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<streams::StreamIterator> {
    streams::streams(path, options)
}

/// The native part of the `streamcap` package.
#[pymodule]
#[pyo3(name = "_native")]
fn streamcap_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(flows, m)?)?;
    m.add_function(wrap_pyfunction!(run_capture, m)?)?;
    m.add_function(wrap_pyfunction!(stream_iterator, m)?)?;
    m.add_class::<desc::PyStream>()?;
    m.add_class::<desc::StreamData>()?;
    m.add_class::<buffer::ChunkBuffer>()?;
    m.add_class::<streams::StreamIterator>()?;
    m.add("InputError", m.py().get_type::<engine::InputError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
