//! Rules the Python package views instead of re-implementing: the reader limits and their
//! defaults, what a path expands to, the directive grammar, the GUID spelling, the links schema.

use std::path::PathBuf;

use fabricscope_core::formats::{Directive, parse_directive};
use fabricscope_core::{FORMATS, Format, Limits, expand_inputs, normalize_guid as core_normalize_guid};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict};
use pyo3_arrow::{PySchema, PyTable};

/// The reader limits by name, in the order the core lists them: the defaults, with `overrides`
/// (a `{name: value}` dict, validated as every reader validates it) applied.
#[pyfunction]
#[pyo3(signature = (overrides=None))]
pub fn limits(overrides: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(&'static str, u64)>> {
    Ok(limits_arg(overrides)?.named().to_vec())
}

/// [`Limits`] from the `limits` argument every reader takes (`{name: value}`, None for the
/// defaults): the one place a limit's name meets its value. Unknown names and values that are
/// not positive integers raise `ValueError` naming the limit (and, for a name, the accepted ones).
pub fn limits_arg(limits: Option<&Bound<'_, PyDict>>) -> PyResult<Limits> {
    let Some(limits) = limits else { return Ok(Limits::default()) };
    let shown = |o: &Bound<'_, PyAny>| o.repr().map_or_else(|_| "?".to_owned(), |r| r.to_string());
    let mut named: Vec<(String, u64)> = Vec::with_capacity(limits.len());
    for (key, value) in limits.iter() {
        let name: String = key
            .extract()
            .map_err(|_| PyValueError::new_err(format!("limit names are strings, got {}", shown(&key))))?;
        // `True` is an int to Python, never a size.
        let number = if value.is_instance_of::<PyBool>() { None } else { value.extract::<u64>().ok() };
        let Some(number) = number else {
            Limits::check_name(&name).map_err(PyValueError::new_err)?;
            return Err(PyValueError::new_err(format!(
                "limit {name} must be a positive integer, got {}",
                shown(&value)
            )));
        };
        named.push((name, number));
    }
    Limits::from_named(named.iter().map(|(n, v)| (n.as_str(), *v))).map_err(PyValueError::new_err)
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
        Some(Directive::Time(t)) => Some(("time", t.ns.into_pyobject(py)?.into_any().unbind())),
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

/// The links tables of several inputs as one table: each cable once, tiers over the whole fabric
/// (`fabricscope_core::topology::merge_links`); None when no table holds a link. The GIL is
/// released while it runs.
#[pyfunction]
pub fn merge_links(py: Python<'_>, tables: Vec<PyTable>) -> PyResult<Option<PyTable>> {
    let batches: Vec<_> = tables.into_iter().flat_map(|t| t.into_inner().0).collect();
    let batches = std::panic::AssertUnwindSafe(batches);
    let merged = crate::error::guarded(py, move || {
        let batches = batches;
        fabricscope_core::topology::merge_links(&batches.0)
    })?;
    let merged = merged.map_err(|e| PyValueError::new_err(format!("links tables: {e}")))?;
    merged.map(|b| PyTable::try_new(vec![b], fabricscope_core::topology::links_schema())).transpose()
}

/// The (host, RDMA device) an HCA's node description names (rdma-ndd's `%h %d`), or None
/// (`fabricscope_core::node_description::hca_host_device`).
#[pyfunction]
pub fn hca_host_device(description: &str) -> Option<(String, String)> {
    fabricscope_core::node_description::hca_host_device(description).map(|(h, d)| (h.to_owned(), d.to_owned()))
}

/// A switch's own name from its node description (`MF0;ib-leaf01:MQM9700/U1` is `ib-leaf01`).
#[pyfunction]
pub fn switch_name(description: &str) -> String {
    fabricscope_core::node_description::switch_name(description).to_owned()
}
