//! The ingest cursors saved with the journal offset they reflect (FORMAT.md, "Cursor
//! snapshot"): a 72-byte header and a checksummed body. A process that has one reads only the
//! records written after it, where without one it reads the whole journal to rebuild its
//! cursors (every frame checked, so every byte of the history read and kept mapped, at every
//! start). A snapshot that does not check out in every byte, is of another format, store or
//! epoch, reflects more of the journal than there is, or is of another copy of the journal
//! (its last record not the journal's), is never trusted: the cursors are
//! rebuilt from the journal. So cursors still come from the journal: a snapshot only says
//! what a prefix of it held.

use std::io;
use std::path::{Path, PathBuf};

use origin_engine::snapshot::{read_file, write_file_within, SnapshotOf, WriteError};
use origin_engine::vfs::OsFs;
use origin_engine::{Journal, StoreId};

use crate::cursor::Cursors;
use crate::limits::CURSORS_SNAPSHOT_SIZE_BYTES_MAX;

/// The snapshot's usual file name, in `$ORIGIN_HOME/projections/`.
pub const CURSORS_FILE_NAME: &str = "cursors.snap";

/// Where the cursor snapshot of the store at `home` lives: `<home>/projections/cursors.snap`.
pub fn path_in(home: &Path) -> PathBuf {
    home.join("projections").join(CURSORS_FILE_NAME)
}
/// Magic bytes at the start of a cursor snapshot.
pub const CURSORS_MAGIC: [u8; 8] = *b"ORGNCURS";
/// The format this build writes and the only one it reads; any other is rebuilt.
pub const CURSORS_FORMAT_VERSION: u16 = 1;
/// Size of the header ([`origin_engine::snapshot`], shared with the state snapshot).
pub const CURSORS_HEADER_SIZE: usize = origin_engine::snapshot::SNAPSHOT_HEADER_SIZE;

/// What became of the snapshot when the cursors were first needed.
pub use origin_engine::snapshot::SnapshotUse;

/// The body's encoding: bincode 2, standard configuration (little-endian, variable-length
/// integers), at most the snapshot's size limit decoded.
fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_little_endian().with_variable_int_encoding().with_limit::<{ CURSORS_SNAPSHOT_SIZE_BYTES_MAX as usize }>()
}

/// What a cursor snapshot of the journal of `store_id` and `epoch` is, for its header.
fn of(store_id: StoreId, epoch: u64) -> SnapshotOf {
    SnapshotOf {
        magic: CURSORS_MAGIC,
        version: CURSORS_FORMAT_VERSION,
        reads: origin_engine::record::kinds_read_fingerprint(crate::cursor::reads_kind),
        store_id,
        epoch,
    }
}

/// A whole snapshot file of `cursors`, written for the journal of `store_id` and `epoch`
/// whose record before `cursors.read_to` has the fingerprint `last_record`
/// ([`origin_engine::snapshot::last_record`]).
pub fn encode(cursors: &Cursors, store_id: StoreId, epoch: u64, last_record: u32) -> Result<Vec<u8>, String> {
    let body = bincode::serde::encode_to_vec(cursors, config()).map_err(|e| format!("the cursors do not encode: {e}"))?;
    Ok(of(store_id, epoch).seal(cursors.read_to, last_record, &body))
}

/// Checks every byte of a snapshot file written for `store_id` and `epoch`, and the cursors it
/// holds, with the fingerprint of the last record they reflect; or why it is refused.
pub fn decode(bytes: &[u8], store_id: StoreId, epoch: u64) -> Result<(Cursors, u32), String> {
    let (read_to, last_record, body) = of(store_id, epoch).open(bytes)?;
    let (cursors, used): (Cursors, usize) =
        bincode::serde::decode_from_slice(body, config()).map_err(|e| format!("body does not decode: {e}"))?;
    if used != body.len() {
        return Err(format!("body decodes in {used} of its {} bytes", body.len()));
    }
    if cursors.read_to != read_to {
        return Err(format!("body reflects offset {}, the header says {read_to}", cursors.read_to));
    }
    Ok((cursors, last_record))
}

/// Writes a snapshot of `cursors` next to `path` and renames it into place
/// ([`origin_engine::snapshot::write_file_within`], waiting for its turn as `journal` waits for
/// its lock), for `journal`, which holds the records they reflect.
pub fn save(path: &Path, cursors: &Cursors, journal: &Journal) -> Result<(), WriteError> {
    let failed = |op: &'static str| move |reason: String| WriteError { op, path: path.to_path_buf(), source: io::Error::other(reason) };
    let last = origin_engine::snapshot::last_record(journal, cursors.read_to).map_err(|e| failed("read the last record for")(e.to_string()))?;
    let bytes = encode(cursors, journal.store_id(), journal.epoch(), last).map_err(failed("encode"))?;
    write_file_within(&OsFs, path, &bytes, journal.lock_wait())
}

/// Reads the snapshot at `path` for `journal` (as this handle sees it): the cursors, or what
/// became of it. Anything wrong means rebuild: failing to read it, a snapshot of another store
/// or epoch, past the journal's end (after a second look at it), or of another copy of the
/// journal (the record before its offset is not the one it saw: a journal restored from a
/// backup and written to since).
pub fn load(path: &Path, journal: &Journal) -> Result<Cursors, SnapshotUse> {
    let rejected = |reason: String| Err(SnapshotUse::Rejected { reason });
    let bytes = match read_file(&OsFs, path, CURSORS_SNAPSHOT_SIZE_BYTES_MAX) {
        Ok(None) => return Err(SnapshotUse::Missing),
        Err(reason) => return rejected(reason),
        Ok(Some(bytes)) => bytes,
    };
    let (c, last) = match decode(&bytes, journal.store_id(), journal.epoch()) {
        Ok(found) => found,
        Err(reason) => return rejected(reason),
    };
    if c.read_to > journal.next_offset() {
        // Another process may have saved it after appending records this handle has not seen
        // yet: look at the journal again before calling it ahead.
        if let Err(e) = journal.refresh() {
            return rejected(format!("the journal could not be read again: {e}"));
        }
        if c.read_to > journal.next_offset() {
            return rejected(format!("reflects offset {} but the journal ends at {}", c.read_to, journal.next_offset()));
        }
    }
    match origin_engine::snapshot::of_another_copy(journal, c.read_to, last) {
        Ok(None) => Ok(c),
        Ok(Some(reason)) => rejected(reason),
        Err(e) => rejected(format!("the record before offset {} could not be read: {e}", c.read_to)),
    }
}

/// The cursors of `journal` (as this handle sees it): from the snapshot at `path` when it
/// checks out, else from the journal's start, then caught up; and what became of the snapshot.
pub fn caught_up(journal: &Journal, path: &Path) -> origin_engine::Result<(Cursors, SnapshotUse)> {
    let (mut cursors, used) = match load(path, journal) {
        Ok(c) => {
            let read_to = c.read_to;
            (c, SnapshotUse::Loaded { read_to })
        }
        Err(used) => (Cursors::default(), used),
    };
    cursors.catch_up(journal)?;
    Ok((cursors, used))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use origin_engine::record::{kinds_read_fingerprint, RecordKind};
    use proptest::prelude::*;

    const STORE: StoreId = [7; 16];

    /// A header that checks out, over `body` reflecting `read_to`.
    fn sealed(body: &[u8], read_to: u64) -> Vec<u8> {
        of(STORE, 3).seal(read_to, 0x1234, body)
    }

    #[test]
    fn cursor_snapshot_round_trips_and_names_its_store_and_epoch() {
        let mut c = Cursors::default();
        c.read_to = 42;
        c.cwds.insert("/home/dev/p".into());
        c.totals.entry("codex".into()).or_default().lines = 9;
        let bytes = encode(&c, STORE, 3, 0x1234).unwrap();
        assert_eq!(&bytes[..8], b"ORGNCURS");
        assert_eq!(bytes, sealed(&bytes[CURSORS_HEADER_SIZE..], 42));
        assert_eq!(decode(&bytes, STORE, 3).unwrap(), (c, 0x1234));
        assert!(decode(&bytes, [8; 16], 3).unwrap_err().contains("another store"));
        assert!(decode(&bytes, STORE, 4).unwrap_err().contains("another store or epoch"));
        // A header whose offset is not the body's.
        let other = sealed(&bytes[CURSORS_HEADER_SIZE..], 41);
        assert!(decode(&other, STORE, 3).unwrap_err().contains("header says 41"));
        // The header names the kinds cursors read: saved by a build that passed over
        // `corrected` records (memory files' items), it is not used.
        assert_eq!(bytes[64..68], kinds_read_fingerprint(crate::cursor::reads_kind).to_le_bytes());
        let fewer = kinds_read_fingerprint(|k| crate::cursor::reads_kind(k) && k != RecordKind::Corrected as u8);
        let mut passed_over = bytes.clone();
        passed_over[64..68].copy_from_slice(&fewer.to_le_bytes());
        origin_engine::snapshot::set_checksums(&mut passed_over);
        assert!(decode(&passed_over, STORE, 3).unwrap_err().contains("reads other kinds of record"));
    }

    /// A snapshot another process saved of records it appended after this handle last looked
    /// at the journal is used: the journal is looked at again before the snapshot is called
    /// ahead of it.
    #[test]
    fn a_snapshot_of_records_this_handle_has_not_seen_yet_is_used() {
        use origin_engine::{Journal, NewRecord, Options};
        let dir = tempfile::tempdir().unwrap();
        let j1 = Journal::open(dir.path().join("journal"), Options::default()).unwrap();
        let j2 = Journal::open(dir.path().join("journal"), Options::default()).unwrap();
        for i in 0..3u8 {
            j2.append(vec![NewRecord::scratch(vec![i])]).unwrap();
        }
        let mut c = Cursors::default();
        c.catch_up(&j2).unwrap();
        assert_eq!(c.read_to, 3);
        let path = dir.path().join("cursors.snap");
        save(&path, &c, &j2).unwrap();
        assert_eq!(j1.next_offset(), 0, "the first handle has not looked since");
        let (loaded, used) = caught_up(&j1, &path).unwrap();
        assert_eq!(used, SnapshotUse::Loaded { read_to: 3 });
        assert_eq!(loaded, c);
    }

    /// A snapshot of another copy of the journal (the same store and epoch, as long, its
    /// records others: restored from a backup and written to since) is not used.
    #[test]
    fn a_snapshot_of_another_copy_of_the_journal_is_not_used() {
        use origin_engine::{Journal, NewRecord, Options};
        let dir = tempfile::tempdir().unwrap();
        let a = Journal::open(dir.path().join("a"), Options::default()).unwrap();
        for i in 0..3u8 {
            a.append(vec![NewRecord::scratch(vec![i])]).unwrap();
        }
        let mut c = Cursors::default();
        c.catch_up(&a).unwrap();
        let path = dir.path().join("cursors.snap");
        save(&path, &c, &a).unwrap();
        assert_eq!(caught_up(&a, &path).unwrap().1, SnapshotUse::Loaded { read_to: 3 });
        let b = Journal::open(dir.path().join("b"), Options { new_store_identity: Some((a.store_id(), a.epoch())), ..Options::default() }).unwrap();
        for i in 0..3u8 {
            b.append(vec![NewRecord::scratch(vec![i, i])]).unwrap();
        }
        let (_, used) = caught_up(&b, &path).unwrap();
        assert_eq!(
            used,
            SnapshotUse::Rejected {
                reason: "the journal's record at offset 2 is not the one it reflects: the journal is another copy of this store".into()
            }
        );
    }

    proptest! {
        #[test]
        fn cursor_snapshot_decoder_refuses_garbage_without_panicking(
            body in proptest::collection::vec(any::<u8>(), 0..512),
            raw in proptest::collection::vec(any::<u8>(), 0..200),
            read_to in any::<u64>(),
        ) {
            // Checksums that match, so the body decoder is reached.
            let _ = decode(&sealed(&body, read_to), STORE, 3);
            let _ = decode(&raw, STORE, 3);
        }
    }
}
