//! The one error type of the core. The binding crate maps each variant to a Python exception in
//! exactly one place (`fabricscope-py/src/error.rs`).

use std::fmt::Write as _;
use std::path::PathBuf;

/// Where in an input a problem was found. Line numbers are 1-based; byte offsets are 0-based and
/// count bytes of the *decompressed* stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Position {
    /// 1-based line number, when the format is line oriented.
    pub line: Option<u64>,
    /// 0-based byte offset of the start of the offending record.
    pub byte_offset: u64,
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line} (byte {})", self.byte_offset),
            None => write!(f, "byte {}", self.byte_offset),
        }
    }
}

/// Everything that can go wrong while reading telemetry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operating system refused to open or read a path.
    #[error("{path}: {source}")]
    Io {
        /// The path being read.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A record does not follow its format.
    #[error("{path}: {position}: expected {expected}, found {found}")]
    Format {
        /// The input file.
        path: PathBuf,
        /// Where the bad record starts.
        position: Position,
        /// What the reader expected there.
        expected: String,
        /// A short, printable excerpt of what was there instead.
        found: String,
    },
    /// No reader recognises the content.
    #[error(
        "{path}: cannot detect the format ({reason}); name it with --format (format= in Python; see `fabricscope formats`)"
    )]
    UnknownFormat {
        /// The input file.
        path: PathBuf,
        /// Why detection failed.
        reason: String,
    },
    /// A gzip or zstd stream is corrupt or truncated.
    #[error("{path}: {codec} stream is corrupt or truncated after {byte_offset} decompressed bytes: {message}")]
    Decompress {
        /// The input file.
        path: PathBuf,
        /// `gzip` or `zstd`.
        codec: &'static str,
        /// Decompressed bytes produced before the failure.
        byte_offset: u64,
        /// The decoder's message.
        message: String,
    },
    /// A configured resource bound was hit (line length, decompressed size, ...).
    #[error("{path}: {position}: {what} exceeds the limit of {limit} (raise it with {option})")]
    LimitExceeded {
        /// The input file.
        path: PathBuf,
        /// Where it happened.
        position: Position,
        /// What was too large.
        what: &'static str,
        /// The limit in force.
        limit: u64,
        /// The option that raises it.
        option: &'static str,
    },
    /// A caller passed an argument that cannot be used (unknown format name, bad host, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

/// Result alias for the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The file the error is about, if any.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Error::Io { path, .. }
            | Error::Format { path, .. }
            | Error::UnknownFormat { path, .. }
            | Error::Decompress { path, .. }
            | Error::LimitExceeded { path, .. } => Some(path),
            Error::InvalidArgument(_) => None,
        }
    }
}

/// A short printable excerpt of raw bytes for error messages: at most `max` characters, invalid
/// UTF-8 and control characters escaped, so a binary file never garbles a terminal.
pub fn excerpt(bytes: &[u8], max: usize) -> String {
    let mut out = String::with_capacity(max.min(bytes.len()) + 8);
    out.push('"');
    let mut n = 0;
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if n >= max {
                out.push_str("...\"");
                return out;
            }
            if c.is_control() {
                // One escape style for the whole excerpt, Python's (the messages end up in Python
                // exceptions): \t \n \r, else \xNN. Control characters are all below U+0100.
                match c {
                    '\t' => out.push_str("\\t"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    _ => {
                        let _ = write!(out, "\\x{:02x}", u32::from(c));
                    }
                }
            } else {
                out.push(c);
            }
            n += 1;
        }
        for b in chunk.invalid() {
            if n >= max {
                out.push_str("...\"");
                return out;
            }
            let _ = write!(out, "\\x{b:02x}");
            n += 1;
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod excerpt_tests {
    use super::excerpt;

    #[test]
    fn one_escape_style_for_invalid_bytes_and_control_characters() {
        // 0xcb is invalid UTF-8 on its own; C2 92 is U+0092 (a C1 control); 0x12 a C0 control.
        let got = excerpt(b"\xcbA\xc2\x92\x12\t\n", 40);
        assert_eq!(got, r#""\xcbA\x92\x12\t\n""#);
        assert!(!got.contains("\\u{"));
    }
}
