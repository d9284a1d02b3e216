//! sysfs counter trees and `grep -H` dumps of them. (Being implemented.)

use std::path::Path;

use crate::error::{Position, Result};
use crate::formats::LineReader;
use crate::read::ReadContext;

/// Read a copied (or live) sysfs tree rooted at `root`.
pub fn read_tree(_root: &Path, _ctx: &mut ReadContext<'_>) -> Result<()> {
    Ok(())
}

/// Streaming reader for `path:value` lines.
#[derive(Default)]
pub struct SysfsGrepReader {}

impl SysfsGrepReader {
    /// A reader for one input.
    pub fn new() -> Self {
        SysfsGrepReader::default()
    }
}

impl LineReader for SysfsGrepReader {
    fn feed(&mut self, _chunk: &[u8], _start: Position, _ctx: &mut ReadContext<'_>) -> Result<()> {
        Ok(())
    }
    fn finish(&mut self, _ctx: &mut ReadContext<'_>) -> Result<()> {
        Ok(())
    }
}
