//! Errors at the boundary: the codes, the calling thread's last message,
//! and the guard every exported function runs its body in, so that no
//! panic unwinds into C.

use crate::{SC_ERR_FILTER, SC_ERR_INVALID, SC_ERR_IO, SC_ERR_PANIC, SC_ERR_STATE, SC_OK};
use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A failed call: the code returned to C and the message kept for
/// `sc_last_error`.
#[derive(Debug)]
pub(crate) struct Error {
    pub(crate) code: c_int,
    pub(crate) msg: String,
}

impl Error {
    pub(crate) fn new(code: c_int, msg: impl Into<String>) -> Error {
        Error {
            code,
            msg: msg.into(),
        }
    }
    /// `SC_ERR_INVALID`.
    pub(crate) fn invalid(msg: impl Into<String>) -> Error {
        Error::new(SC_ERR_INVALID, msg)
    }
    /// `SC_ERR_STATE`.
    pub(crate) fn state(msg: impl Into<String>) -> Error {
        Error::new(SC_ERR_STATE, msg)
    }
    /// `SC_ERR_IO`.
    pub(crate) fn io(msg: impl Into<String>) -> Error {
        Error::new(SC_ERR_IO, msg)
    }
    /// `SC_ERR_FILTER`.
    pub(crate) fn filter(msg: impl Into<String>) -> Error {
        Error::new(SC_ERR_FILTER, msg)
    }
}

thread_local! {
    /// The message of the last failed call on this thread.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Keeps `msg` as the calling thread's last error (NUL bytes, which C
/// could not see past, are written `\0`).
pub(crate) fn set_last_error(msg: &str) {
    let c = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    // `try_with`: during the thread's teardown the slot may be gone.
    let _ = LAST_ERROR.try_with(|l| *l.borrow_mut() = c);
}

/// The calling thread's last error message, NUL-terminated ("" if none).
/// The pointer stays valid until the next failed call on this thread
/// replaces the message.
pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR
        .try_with(|l| l.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

/// The text of a panic's payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".to_string()
    }
}

/// The error a caught panic becomes.
pub(crate) fn panic_error(payload: Box<dyn Any + Send>) -> Error {
    let msg = panic_message(&*payload);
    // A payload whose destructor panics must not unwind out of here either.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
    Error::new(
        SC_ERR_PANIC,
        format!("internal error, a panic in streamcap was caught: {msg}"),
    )
}

/// Runs the body of exported function `name`: `SC_OK` on success; on an
/// error or a panic, its code, with the message (prefixed by `name`) kept
/// for `sc_last_error`.
pub(crate) fn guard(name: &str, body: impl FnOnce() -> Result<(), Error>) -> c_int {
    guard_value(name, |e| e.code, || body().map(|()| SC_OK))
}

/// [`guard`] for a function that returns a value: `on_error(&error)` when
/// the body fails or panics (the message is kept as for [`guard`]).
pub(crate) fn guard_value<T>(
    name: &str,
    on_error: impl FnOnce(&Error) -> T,
    body: impl FnOnce() -> Result<T, Error>,
) -> T {
    let result = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(payload) => Err(panic_error(payload)),
    };
    match result {
        Ok(v) => v,
        Err(e) => {
            // Nothing here panics; kept inside all the same.
            let _ = catch_unwind(AssertUnwindSafe(|| {
                set_last_error(&format!("{name}: {}", e.msg))
            }));
            on_error(&e)
        }
    }
}
