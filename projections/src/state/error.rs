//! The state projection's error type.

use std::io;
use std::path::PathBuf;

/// Result alias for the state projection.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong while building or querying the state.
///
/// A damaged snapshot is not an error: it is never trusted, and the state is rebuilt from the
/// journal instead (see [`SnapshotUse::Rejected`](crate::state::SnapshotUse::Rejected)).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the journal failed (damage, I/O, or a record this build cannot decode).
    #[error(transparent)]
    Journal(#[from] origin_engine::Error),
    /// Writing a snapshot failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// The operation that failed.
        op: &'static str,
        /// The file it was made on.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The state points at a record that does not hold what it says: the state does not
    /// belong to this journal.
    #[error(
        "event {id} is not where the projection says (record at offset {offset}, event {index}): {reason}; \
         delete the projection snapshot and reopen to rebuild it"
    )]
    Inconsistent {
        /// The event looked for.
        id: String,
        /// The record offset the state holds for it.
        offset: u64,
        /// Its index in that record.
        index: u32,
        /// What was found instead.
        reason: String,
    },
}

impl Error {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io { op, path: path.into(), source }
    }
}
