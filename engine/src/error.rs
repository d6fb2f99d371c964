//! The engine's error type: every variant carries the context needed to act on it.

use std::io;
use std::path::PathBuf;

/// Result alias for the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong in the journal.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O call failed. `op` names the call, `path` the file it was made on.
    #[error("{op} {path}: {source}{hint}", hint = io_hint(source))]
    Io {
        /// The operation that failed (`write`, `fdatasync`, `open`, ...).
        op: &'static str,
        /// The file or directory it was made on.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Bytes on disk are not what the journal wrote: mid-log damage, never skipped silently.
    #[error("journal corrupt in segment {segment} at byte {position}: {reason}")]
    Corrupt {
        /// The segment file holding the damage.
        segment: PathBuf,
        /// Byte position of the damage within that file.
        position: u64,
        /// What was found.
        reason: String,
    },
    /// An earlier write or fsync failed; the kernel may have dropped pages, so nothing more is
    /// written until the journal is reopened and recovered (or, for a write that could not be
    /// cut off, until the tail is judged again a moment later: the cause says which).
    #[error("journal refuses writes: an earlier write failed ({cause})")]
    Poisoned {
        /// The failure that poisoned the journal.
        cause: String,
    },
    /// A caller passed something the journal does not accept.
    #[error("invalid append: {0}")]
    Invalid(String),
    /// A journal a salvage or a replay was writing when it was stopped (killed, a power cut):
    /// it holds only part of what it would ([`crate::journal::UNFINISHED_FILE_NAME`]).
    #[error("{}", unfinished_text(dir, what, *running))]
    Unfinished {
        /// The journal's folder.
        dir: PathBuf,
        /// What was writing it.
        what: String,
        /// Whether it is writing it still (its mark is held): not stopped, not finished yet.
        running: bool,
    },
    /// Another process held the store's lock for all the time this one would wait for it
    /// ([`crate::journal::Journal::set_lock_wait`]): it is writing (a compaction takes a while), or
    /// was stopped while it held it. Nothing was written.
    #[error("another process has held the store's lock {} for {:.0} s: {holders}", path.display(), waited.as_secs_f64())]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// How long it has been waited for: this wait, and those before it that ran out
        /// while it was not taken.
        waited: std::time::Duration,
        /// Who holds it, in words ([`crate::vfs::lock_holders`]).
        holders: String,
    },
    /// There is no journal where one was expected.
    #[error("no Origin journal in {dir} (nothing has been written there yet, or ORIGIN_HOME points elsewhere)")]
    NoJournal {
        /// The directory looked in.
        dir: PathBuf,
    },
    /// A record of a kind, or a version of a kind, this build does not read: a newer Origin
    /// wrote it. Not damage: the store is read by that version.
    #[error(
        "record at offset {offset} is {what}, which this version of Origin does not read: a newer version wrote it; \
         read this store with that version (or a later one)"
    )]
    Unreadable {
        /// Offset of the record.
        offset: u64,
        /// Its kind and version, in words.
        what: String,
    },
    /// A payload could not be decoded with the journal's codec: damage inside a record that
    /// passed its checksum.
    #[error(
        "record at offset {offset} could not be decoded: {reason} (`origin journal verify` names the segment and byte of a record \
         that should and does not; `origin journal salvage --to DIR` copies every other record)"
    )]
    Decode {
        /// Offset of the record.
        offset: u64,
        /// Why.
        reason: String,
    },
}

/// What to do about an I/O failure, where there is something to say beyond the system's own
/// words (`""` where there is not), to be written after them.
pub fn io_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => " (the disk is full: free space, then retry)",
        Some(libc::EDQUOT) => " (disk quota exceeded)",
        Some(libc::EACCES) | Some(libc::EPERM) => " (check who owns the store's files, and their permissions)",
        _ => "",
    }
}

impl Error {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io { op, path: path.into(), source }
    }

    pub(crate) fn corrupt(segment: impl Into<PathBuf>, position: u64, reason: impl Into<String>) -> Self {
        Error::Corrupt { segment: segment.into(), position, reason: reason.into() }
    }

    /// True for a write refused for want of write access (a read-only file system, or
    /// permissions that let this process read and not write): such a store can still be read.
    pub fn is_write_refused(&self) -> bool {
        matches!(self, Error::Io { source, .. } if crate::vfs::is_read_only_error(source))
    }

    /// True for damage found on disk (as opposed to an I/O failure or a bad call): bytes that
    /// fail their checks, or a record that passes them and does not decode.
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corrupt { .. } | Error::Decode { .. })
    }
}

/// What [`Error::Unfinished`] says: of a run stopped part way, to run it again; of one
/// still going, to wait for it.
fn unfinished_text(dir: &std::path::Path, what: &str, running: bool) -> String {
    if running {
        format!("the journal in {} is unfinished: {what} is writing it now; wait for it to finish", dir.display())
    } else {
        format!(
            "the journal in {} is unfinished: {what} was writing it and stopped before the end, so it holds only part of what \
             it would; run it again as it was run (it starts over in the same place)",
            dir.display()
        )
    }
}
