//! Prometheus text exposition 0.0.4 and OpenMetrics 1.0. (Being implemented.)

use crate::error::{Position, Result};
use crate::formats::LineReader;
use crate::read::ReadContext;

/// Which dialect: decides the unit of sample timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Text 0.0.4: timestamps are integer milliseconds.
    Prometheus,
    /// OpenMetrics 1.0: timestamps are (possibly fractional) seconds.
    OpenMetrics,
}

/// Streaming reader for Prometheus/OpenMetrics text.
pub struct PrometheusReader {
    flavor: Flavor,
}

impl PrometheusReader {
    /// A reader for one input.
    pub fn new(flavor: Flavor) -> Self {
        PrometheusReader { flavor }
    }
}

impl LineReader for PrometheusReader {
    fn feed(&mut self, _chunk: &[u8], _start: Position, _ctx: &mut ReadContext<'_>) -> Result<()> {
        let _ = self.flavor;
        Ok(())
    }
    fn finish(&mut self, _ctx: &mut ReadContext<'_>) -> Result<()> {
        Ok(())
    }
}
