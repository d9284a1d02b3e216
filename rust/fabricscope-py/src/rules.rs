//! Rules the Python package views instead of re-implementing: the reader limits and their
//! defaults, what a path expands to, the directive grammar, the GUID spelling, the links schema.

use std::path::PathBuf;

use fabricscope_core::formats::{Directive, parse_directive};
use fabricscope_core::{FORMATS, Format, Limits, expand_inputs, normalize_guid as core_normalize_guid};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3_arrow::PySchema;

/// The reader limits and their defaults, by name, in the order the core lists them.
#[pyfunction]
pub fn limits() -> Vec<(&'static str, u64)> {
    Limits::default().named().to_vec()
}

/// What `paths` expand to, in reading order: `(path, kind)` with kind `file`, `walked`,
/// `sysfs-tree` or `failed` (see `fabricscope_core::expand_inputs`).
#[pyfunction]
#[pyo3(signature = (paths, format=None))]
pub fn expand(py: Python<'_>, paths: Vec<PathBuf>, format: Option<&str>) -> PyResult<Vec<(String, &'static str)>> {
    let format = match format {
        None => None,
        Some(f) if f.eq_ignore_ascii_case("auto") => None,
        Some(f) => Some(Format::from_name(f).ok_or_else(|| {
            let names: Vec<&str> = FORMATS.iter().map(|i| i.name).collect();
            PyValueError::new_err(format!("unknown format {f:?}; expected \"auto\" or one of {}", names.join(", ")))
        })?),
    };
    let units = py.detach(move || expand_inputs(&paths, format));
    Ok(units.into_iter().map(|(p, k)| (p.to_string_lossy().into_owned(), k.as_str())).collect())
}

/// A directive line as the readers understand it: `("host", name)`, `("device", netdev)` (an
/// `ethtool -S DEV` command line) or `("time", ns)`; None for any other line.
#[pyfunction]
pub fn parse_directive_line(py: Python<'_>, line: &str) -> PyResult<Option<(&'static str, Py<PyAny>)>> {
    Ok(match parse_directive(line) {
        Some(Directive::Host(h)) => Some(("host", h.into_pyobject(py)?.into_any().unbind())),
        Some(Directive::Device(d)) => Some(("device", d.into_pyobject(py)?.into_any().unbind())),
        Some(Directive::Time(t)) => Some(("time", t.into_pyobject(py)?.into_any().unbind())),
        None => None,
    })
}

/// A node GUID as every reader stores it (`0x` + 16 lowercase hex digits), or None.
#[pyfunction]
pub fn normalize_guid(text: &str) -> Option<String> {
    core_normalize_guid(text)
}

/// Arrow schema of the links table (topology).
#[pyfunction]
pub fn links_schema_arrow() -> PySchema {
    PySchema::new(fabricscope_core::topology::links_schema())
}
