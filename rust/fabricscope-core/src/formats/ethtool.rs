//! `ethtool -S` output. (Being implemented.)

use crate::error::{Position, Result};
use crate::formats::LineReader;
use crate::read::ReadContext;

/// Streaming reader for `ethtool -S` snapshots.
#[derive(Default)]
pub struct EthtoolReader {}

impl EthtoolReader {
    /// A reader for one input.
    pub fn new() -> Self {
        EthtoolReader::default()
    }
}

impl LineReader for EthtoolReader {
    fn feed(&mut self, _chunk: &[u8], _start: Position, _ctx: &mut ReadContext<'_>) -> Result<()> {
        Ok(())
    }
    fn finish(&mut self, _ctx: &mut ReadContext<'_>) -> Result<()> {
        Ok(())
    }
}
