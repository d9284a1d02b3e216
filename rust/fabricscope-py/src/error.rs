//! The one place where core errors become Python exceptions.
//!
//! The hierarchy lives in `fabricscope.exceptions` (re-exported there by `exceptions.py`):
//!
//! ```text
//! FabricscopeError
//! ├── InputError              (a path cannot be opened or read; also an OSError in spirit)
//! ├── FormatError             (a record does not follow its format)
//! │   ├── UnknownFormatError
//! │   └── DecompressionError
//! ├── LimitExceededError      (a resource bound; the message names the option that raises it)
//! └── InternalError           (a bug: a Rust panic caught at the boundary)
//! ```
//! Every instance carries `path`, `line`, `byte_offset`, `expected` and `found` attributes (None
//! where they do not apply), so callers never parse messages.

use fabricscope_core::Error;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(fabricscope.exceptions, FabricscopeError, PyException, "Base of every fabricscope error.");
pyo3::create_exception!(
    fabricscope.exceptions,
    InputError,
    FabricscopeError,
    "An input path cannot be opened or read."
);
pyo3::create_exception!(fabricscope.exceptions, FormatError, FabricscopeError, "A record does not follow its format.");
pyo3::create_exception!(fabricscope.exceptions, UnknownFormatError, FormatError, "No reader recognises the input.");
pyo3::create_exception!(
    fabricscope.exceptions,
    DecompressionError,
    FormatError,
    "A gzip/zstd stream is corrupt or truncated."
);
pyo3::create_exception!(fabricscope.exceptions, LimitExceededError, FabricscopeError, "A resource bound was exceeded.");
pyo3::create_exception!(
    fabricscope.exceptions,
    InternalError,
    FabricscopeError,
    "A bug in fabricscope (a Rust panic caught at the boundary)."
);

struct Details {
    path: Option<String>,
    line: Option<u64>,
    byte_offset: Option<u64>,
    expected: Option<String>,
    found: Option<String>,
}

/// Convert a core error into the matching Python exception, with structured attributes.
pub fn to_py_err(py: Python<'_>, err: &Error) -> PyErr {
    let msg = err.to_string();
    let path = err.path().map(|p| p.display().to_string());
    let mut d = Details { path, line: None, byte_offset: None, expected: None, found: None };
    let py_err = match err {
        Error::Io { .. } => InputError::new_err(msg),
        Error::Format { position, expected, found, .. } => {
            d.line = position.line;
            d.byte_offset = Some(position.byte_offset);
            d.expected = Some(expected.clone());
            d.found = Some(found.clone());
            FormatError::new_err(msg)
        }
        Error::UnknownFormat { reason, .. } => {
            d.expected = Some("a supported format (see fabricscope.formats())".into());
            d.found = Some(reason.clone());
            UnknownFormatError::new_err(msg)
        }
        Error::Decompress { byte_offset, .. } => {
            d.byte_offset = Some(*byte_offset);
            DecompressionError::new_err(msg)
        }
        Error::LimitExceeded { position, .. } => {
            d.line = position.line;
            d.byte_offset = Some(position.byte_offset);
            LimitExceededError::new_err(msg)
        }
        Error::InvalidArgument(_) => PyValueError::new_err(msg),
        _ => FabricscopeError::new_err(msg),
    };
    let value = py_err.value(py);
    // Attribute setting on a fresh exception instance cannot fail in practice; if it does, the
    // exception still carries its message, which is what matters.
    let _ = value.setattr("path", d.path);
    let _ = value.setattr("line", d.line);
    let _ = value.setattr("byte_offset", d.byte_offset);
    let _ = value.setattr("expected", d.expected);
    let _ = value.setattr("found", d.found);
    py_err
}

/// Run `f` with the GIL released and turn a panic into `InternalError` instead of letting it
/// abort or surface as a `PanicException` (which is not an `Exception`).
pub fn guarded<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send + std::panic::UnwindSafe) -> PyResult<T> {
    py.detach(|| std::panic::catch_unwind(f)).map_err(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        InternalError::new_err(format!("internal error (please report): {what}"))
    })
}

/// Register the exception classes on the native module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("FabricscopeError", py.get_type::<FabricscopeError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("FormatError", py.get_type::<FormatError>())?;
    m.add("UnknownFormatError", py.get_type::<UnknownFormatError>())?;
    m.add("DecompressionError", py.get_type::<DecompressionError>())?;
    m.add("LimitExceededError", py.get_type::<LimitExceededError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    Ok(())
}
