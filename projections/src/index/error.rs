//! The index's error type: every variant names the object and the failure.

use std::io;
use std::path::PathBuf;

use super::DocId;

/// The reason given when the manifest lists a segment whose file is missing.
pub(crate) const MISSING_SEGMENT: &str = "the manifest lists this segment but the file is missing";

/// What can go wrong in the text index.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// An I/O call failed. `op` names the call, `path` the file it was made on.
    #[error("index: {op} {path}: {source}")]
    Io {
        /// The operation that failed (`open`, `write`, `fsync`, `rename`, ...).
        op: &'static str,
        /// The file or directory it was made on.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A file of the index is not what the index wrote. The index is a projection: delete its
    /// directory and rebuild it from the journal.
    #[error(
        "index file {path} is damaged at byte {position}: {reason} (delete the index folder to rebuild it from the journal)"
    )]
    Corrupt {
        /// The damaged file (`<memory>` for a segment held in memory).
        path: PathBuf,
        /// Byte position of the damage within that file, as near as is known.
        position: u64,
        /// What was found.
        reason: String,
    },
    /// A document id was added twice.
    #[error("index: document {0} is already indexed")]
    DuplicateDoc(DocId),
    /// A caller passed something the index does not accept.
    #[error("index: {0}")]
    Invalid(String),
}

impl IndexError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        IndexError::Io { op, path: path.into(), source }
    }

    pub(crate) fn corrupt(path: impl Into<PathBuf>, position: u64, reason: impl Into<String>) -> Self {
        IndexError::Corrupt { path: path.into(), position, reason: reason.into() }
    }

    /// True for damage found in a file (as opposed to an I/O failure or a bad call).
    pub fn is_corruption(&self) -> bool {
        matches!(self, IndexError::Corrupt { .. })
    }

    /// True if the manifest lists a segment whose file is not there.
    pub(crate) fn is_missing_segment(&self) -> bool {
        matches!(self, IndexError::Corrupt { reason, .. } if reason == MISSING_SEGMENT)
    }
}
