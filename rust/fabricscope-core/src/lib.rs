//! fabricscope-core: reads what InfiniBand and RoCEv2 fabrics export (Prometheus/OpenMetrics
//! text, `ethtool -S`, sysfs counter trees) into one canonical long Arrow table of samples.
//!
//! No Python here: the `fabricscope-py` crate only converts arguments, Arrow batches and errors.

pub mod error;
pub mod formats;
pub mod guid;
pub mod node_description;
pub mod number;
pub mod packets;
pub mod rates;
pub mod read;
pub mod schema;
pub mod timestamp;
pub mod topology;
pub mod vocabulary;

pub use error::{Error, Position, Result};
pub use formats::{FORMATS, Format, FormatInfo};
pub use guid::normalize_guid;
pub use read::{
    Event, InputKind, InputReport, Limits, ReadContext, ReadOptions, ReaderPool, TimeSource, expand_inputs, read_bytes,
    read_paths, read_paths_with, total_input_bytes,
};
pub use schema::{SCHEMA_VERSION, attributes_schema, samples_schema};

/// Crate version, the same as the Python package's.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
