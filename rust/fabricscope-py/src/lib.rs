//! `fabricscope._native`: the thin binding over `fabricscope-core`. Converts arguments, exports
//! Arrow through the PyCapsule interface (pyo3-arrow), and maps errors in `error.rs`.

mod error;
mod rates;
mod reader;
mod rules;

use pyo3::prelude::*;

/// The native module. Private: the public API is the `fabricscope` Python package.
#[pymodule(gil_used = false)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", fabricscope_core::VERSION)?;
    m.add("SCHEMA_VERSION", fabricscope_core::SCHEMA_VERSION)?;
    m.add("DEBUG_BUILD", cfg!(debug_assertions))?;
    error::register(m)?;
    m.add_class::<reader::Scanner>()?;
    m.add_class::<reader::PyReaderPool>()?;
    m.add_function(wrap_pyfunction!(reader::read, m)?)?;
    m.add_function(wrap_pyfunction!(reader::read_buffer, m)?)?;
    m.add_function(wrap_pyfunction!(reader::known_prometheus_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(reader::remote_read_request, m)?)?;
    m.add_function(wrap_pyfunction!(reader::formats, m)?)?;
    m.add_function(wrap_pyfunction!(reader::compression, m)?)?;
    m.add_function(wrap_pyfunction!(reader::counters, m)?)?;
    m.add_function(wrap_pyfunction!(reader::samples_schema_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(reader::events_schema_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(reader::attributes_schema_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(rates::rates, m)?)?;
    m.add_function(wrap_pyfunction!(rates::overflow_rules, m)?)?;
    m.add_function(wrap_pyfunction!(rules::limits, m)?)?;
    m.add_function(wrap_pyfunction!(rules::expand, m)?)?;
    m.add_function(wrap_pyfunction!(rules::parse_directive_line, m)?)?;
    m.add_function(wrap_pyfunction!(rules::normalize_guid, m)?)?;
    m.add_function(wrap_pyfunction!(rules::links_schema_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(rules::merge_links, m)?)?;
    m.add_function(wrap_pyfunction!(rules::hca_host_device, m)?)?;
    m.add_function(wrap_pyfunction!(rules::switch_name, m)?)?;
    m.add_function(wrap_pyfunction!(reader::_panic_for_test, m)?)?;
    Ok(())
}
