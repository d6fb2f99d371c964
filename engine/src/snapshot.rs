//! The header every snapshot file of a projection carries (FORMAT.md, "State snapshot" and
//! "Cursor snapshot"): a cache of what a prefix of the journal holds is saved with the store
//! id, epoch and offset it reflects, and checksums of itself and of its body, so that a
//! reader can tell a snapshot of this journal that reached the disk whole from anything else.
//! What the body holds is the projection's own business. The file is read and written here
//! too ([`read_file`], [`write_file`]), the same way for every kind.

use std::io;
use std::path::{Path, PathBuf};

use crate::journal::Journal;
use crate::segment::StoreId;
use crate::vfs::{Mapped, Vfs};

/// Size of the header.
pub const SNAPSHOT_HEADER_SIZE: usize = 72;

/// The header's size before it named the last record a snapshot reflects (2026-12-06).
const SNAPSHOT_HEADER_SIZE_V1: u32 = 64;

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// What became of a snapshot when its projection was opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnapshotUse {
    /// It checked out and was used; the journal was read from `read_to` on.
    Loaded {
        /// The offset it reflected.
        read_to: u64,
    },
    /// There was none: the projection was rebuilt from the journal.
    Missing,
    /// It was damaged, of another format, store or epoch, or ahead of the journal: the
    /// projection was rebuilt from the journal.
    Rejected {
        /// What was wrong with it.
        reason: String,
    },
}

/// What a snapshot is of: its kind's magic and format version, the record kinds its
/// projection reads, and the journal (store id and epoch) it was written for.
#[derive(Clone, Copy, Debug)]
pub struct SnapshotOf {
    /// The kind's magic bytes.
    pub magic: [u8; 8],
    /// The kind's format version.
    pub version: u16,
    /// The fingerprint of the record kinds the projection reads
    /// ([`crate::record::kinds_read_fingerprint`]): a snapshot saved by a build that reads
    /// other kinds passed over records this one would have read, below its offset.
    pub reads: u32,
    /// The journal's store id.
    pub store_id: StoreId,
    /// The journal's epoch.
    pub epoch: u64,
}

impl SnapshotOf {
    /// A whole snapshot file: the header (reflecting the journal up to `read_to`, whose last
    /// record has the fingerprint `last_record`: see [`last_record`]), then `body`.
    pub fn seal(&self, read_to: u64, last_record: u32, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(SNAPSHOT_HEADER_SIZE + body.len());
        out.extend_from_slice(&self.magic);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&(SNAPSHOT_HEADER_SIZE as u32).to_le_bytes());
        out.extend_from_slice(&self.store_id);
        out.extend_from_slice(&self.epoch.to_le_bytes());
        out.extend_from_slice(&read_to.to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
        out.extend_from_slice(&last_record.to_le_bytes());
        out.extend_from_slice(&self.reads.to_le_bytes());
        let header_crc = crc32fast::hash(&out[..68]);
        out.extend_from_slice(&header_crc.to_le_bytes());
        debug_assert_eq!(out.len(), SNAPSHOT_HEADER_SIZE);
        out.extend_from_slice(body);
        out
    }

    /// Checks a snapshot file's header and its body's size and checksum: the offset it
    /// reflects, the fingerprint of the last record it reflects, and its body, or why it is
    /// refused. (Whether that record is the journal's is the caller's to check, with
    /// [`last_record`].)
    pub fn open<'a>(&self, bytes: &'a [u8]) -> Result<(u64, u32, &'a [u8]), String> {
        if bytes.len() < SNAPSHOT_HEADER_SIZE {
            return Err(format!("{} bytes, shorter than the {SNAPSHOT_HEADER_SIZE}-byte header", bytes.len()));
        }
        let h = &bytes[..SNAPSHOT_HEADER_SIZE];
        if h[..8] != self.magic {
            return Err(format!("not a {} snapshot (magic)", String::from_utf8_lossy(&self.magic)));
        }
        if le_u32(h, 12) == SNAPSHOT_HEADER_SIZE_V1 && crc32fast::hash(&h[..60]) == le_u32(h, 60) {
            return Err("written by an older version of Origin (its header does not name the last record it reflects)".into());
        }
        if crc32fast::hash(&h[..68]) != le_u32(h, 68) {
            return Err("header checksum does not match".into());
        }
        let version = le_u16(h, 8);
        if version != self.version {
            return Err(format!("format {version}; this build reads format {} only", self.version));
        }
        if h[10..12] != [0, 0] || le_u32(h, 12) != SNAPSHOT_HEADER_SIZE as u32 {
            return Err("reserved bytes or header length not as written".into());
        }
        match le_u32(h, 64) {
            0 => return Err("written by an older version of Origin (its header does not name the record kinds it read)".into()),
            reads if reads != self.reads => {
                return Err("written by a version of Origin that reads other kinds of record than this one".into());
            }
            _ => {}
        }
        if h[16..32] != self.store_id || le_u64(h, 32) != self.epoch {
            return Err("written for another store or epoch".into());
        }
        let read_to = le_u64(h, 40);
        let body_size = le_u64(h, 48);
        let body = &bytes[SNAPSHOT_HEADER_SIZE..];
        if body.len() as u64 != body_size {
            return Err(format!("body of {} bytes, the header says {body_size}", body.len()));
        }
        if crc32fast::hash(body) != le_u32(h, 56) {
            return Err("body checksum does not match".into());
        }
        Ok((read_to, le_u32(h, 60), body))
    }
}

/// Sets a snapshot file's body size and both checksums to match its bytes (a file at least a
/// header long): fuzzing and tests edit a file this way and still reach the checks after them.
pub fn set_checksums(bytes: &mut [u8]) {
    let body_len = (bytes.len() - SNAPSHOT_HEADER_SIZE) as u64;
    bytes[48..56].copy_from_slice(&body_len.to_le_bytes());
    let body_crc = crc32fast::hash(&bytes[SNAPSHOT_HEADER_SIZE..]);
    bytes[56..60].copy_from_slice(&body_crc.to_le_bytes());
    let header_crc = crc32fast::hash(&bytes[..68]);
    bytes[68..72].copy_from_slice(&header_crc.to_le_bytes());
}

/// The fingerprint of the last record a projection reflecting `journal` up to `read_to` has
/// seen (the record at `read_to - 1`; 0 for none): a checksum of its offset, time, kind,
/// version and payload. A snapshot keeps it, so that a journal that is not the one it was
/// saved from, though of the same store and epoch and as long (a copy restored from a backup
/// and written to since), is told apart: the record there is another.
pub fn last_record(journal: &Journal, read_to: u64) -> crate::Result<u32> {
    let Some(offset) = read_to.checked_sub(1) else { return Ok(0) };
    let found = journal.read_one(offset, |r| {
        let mut h = crc32fast::Hasher::new();
        h.update(&r.offset.to_le_bytes());
        h.update(&r.time_unix_ms.to_le_bytes());
        h.update(&[r.kind, r.kind_version]);
        h.update(r.payload);
        Ok(h.finalize())
    })?;
    found.ok_or_else(|| crate::Error::Invalid(format!("no record at offset {offset}: the journal ends at {}", journal.next_offset())))
}

/// Why a snapshot reflecting `journal` up to `read_to`, whose last record had the fingerprint
/// `last` ([`last_record`]), is of another copy of the journal; `None` when it is of this one.
pub fn of_another_copy(journal: &Journal, read_to: u64, last: u32) -> crate::Result<Option<String>> {
    Ok((last_record(journal, read_to)? != last).then(|| {
        format!(
            "the journal's record at offset {} is not the one it reflects: the journal is another copy of this store",
            read_to.saturating_sub(1)
        )
    }))
}

/// A snapshot file that could not be written: the operation, the file, and why.
#[derive(Debug, thiserror::Error)]
#[error("{op} {path}: {source}")]
pub struct WriteError {
    /// The operation that failed.
    pub op: &'static str,
    /// The file it was made on.
    pub path: PathBuf,
    /// The underlying error.
    #[source]
    pub source: io::Error,
}

/// `path` with `suffix` appended to its file name.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// Writes a snapshot file's `bytes` to `path` through `vfs`: to `<path>.tmp`, synced, then
/// renamed into place, under an exclusive lock on `<path>.lock`, so that processes saving at
/// once (every agent's `origin mcp` on one store) take turns and each renames a whole file of
/// its own. A temporary file a killed writer left is replaced by the next, never piled up. The
/// directory is not synced: losing a snapshot costs a rebuild, never a wrong answer. A write
/// that fails removes its temporary file. Its turn is waited for as long as it takes.
pub fn write_file(vfs: &dyn Vfs, path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    write_file_within(vfs, path, bytes, None)
}

/// [`write_file`], waiting for its turn at most `wait` (a server answering an agent passes its
/// journal's [`Journal::lock_wait`]: another process stopped while it saved a snapshot kept the
/// server's tools waiting for good). Past it, nothing is written, and the error says who holds
/// the turn.
pub fn write_file_within(vfs: &dyn Vfs, path: &Path, bytes: &[u8], wait: Option<std::time::Duration>) -> Result<(), WriteError> {
    fn err<'p>(op: &'static str, path: &'p Path) -> impl FnOnce(io::Error) -> WriteError + 'p {
        move |source| WriteError { op, path: path.to_path_buf(), source }
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        vfs.create_dir_all(dir).map_err(err("create directory", dir))?;
    }
    let lock = beside(path, ".lock");
    let Some(_turn) = crate::vfs::lock_within(vfs, &lock, crate::vfs::LockMode::Exclusive, wait).map_err(err("lock", &lock))? else {
        let why = format!(
            "another process has held it for {} s, saving a snapshot or stopped while it did ({}); this one is not saved now",
            wait.unwrap_or_default().as_secs_f64(),
            crate::vfs::lock_holders(&lock, false)
        );
        return Err(WriteError { op: "lock", path: lock, source: io::Error::new(io::ErrorKind::WouldBlock, why) });
    };
    let tmp = beside(path, ".tmp");
    let written = (|| {
        if vfs.exists(&tmp).map_err(err("stat", &tmp))? {
            vfs.remove_file(&tmp).map_err(err("remove", &tmp))?;
        }
        let f = vfs.create_new(&tmp).map_err(err("create", &tmp))?;
        f.write_all_at(bytes, 0).map_err(err("write", &tmp))?;
        f.sync_data().map_err(err("fdatasync", &tmp))?;
        drop(f);
        vfs.rename(&tmp, path).map_err(err("rename", &tmp))
    })();
    if written.is_err() {
        // Best effort: the write's own error is the one returned.
        let _ = vfs.remove_file(&tmp);
    }
    written
}

/// Reads the snapshot file at `path` through `vfs`: `None` if there is none, its bytes, or why
/// it cannot be used (it cannot be read, or is over `max_bytes`).
///
/// The bytes are the file mapped, not copied: a copy was a server start's largest allocation
/// (100 MB for the state of a 1M-event store), which the allocator kept after the state was
/// decoded from it. Mapping is safe because snapshot files are only ever replaced whole, by a
/// rename ([`write_file`]), never truncated or written in place (ARCHITECTURE.md, invariants).
pub fn read_file(vfs: &dyn Vfs, path: &Path, max_bytes: u64) -> Result<Option<Mapped>, String> {
    match vfs.exists(path) {
        Ok(false) => return Ok(None),
        Ok(true) => {}
        Err(e) => return Err(format!("cannot stat {}: {e}", path.display())),
    }
    let read = || -> io::Result<Result<Mapped, String>> {
        let f = vfs.open_read(path)?;
        let len = f.len()?;
        if len > max_bytes {
            return Ok(Err(format!("{len} bytes, over the {max_bytes}-byte limit")));
        }
        let map = f.map()?;
        if map.len() as u64 != len {
            // Its length changed in place between the two looks, which no writer of Origin does.
            return Ok(Err(format!("changed while it was read ({len} bytes, then {})", map.len())));
        }
        Ok(Ok(map))
    };
    match read() {
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        Ok(Err(reason)) => Err(reason),
        Ok(Ok(bytes)) => Ok(Some(bytes)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A writer whose turn another holds past the wait writes nothing and says who holds it;
    /// once it is let go, the next write goes through. Without a bound, it waits.
    #[test]
    fn a_snapshot_whose_turn_is_held_past_the_wait_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = crate::vfs::OsFs;
        let path = dir.path().join("x.snap");
        write_file(&vfs, &path, b"first").unwrap();
        let held = vfs.lock(&beside(&path, ".lock"), crate::vfs::LockMode::Exclusive).unwrap();
        let e = write_file_within(&vfs, &path, b"second", Some(std::time::Duration::from_millis(300))).unwrap_err();
        assert_eq!((e.op, e.path.clone()), ("lock", beside(&path, ".lock")));
        assert!(e.to_string().contains("another process has held it for 0.3 s") && e.to_string().contains("holds it"), "{e}");
        assert_eq!(&read_file(&vfs, &path, 100).unwrap().unwrap()[..], b"first");
        drop(held);
        write_file_within(&vfs, &path, b"second", Some(std::time::Duration::from_millis(300))).unwrap();
        assert_eq!(&read_file(&vfs, &path, 100).unwrap().unwrap()[..], b"second");
        // Unbounded (a command's), it waits for its turn.
        let held = vfs.lock(&beside(&path, ".lock"), crate::vfs::LockMode::Exclusive).unwrap();
        let waiting = {
            let path = path.clone();
            std::thread::spawn(move || write_file(&crate::vfs::OsFs, &path, b"third"))
        };
        std::thread::sleep(std::time::Duration::from_millis(600));
        assert!(!waiting.is_finished(), "a command's snapshot waits for its turn");
        drop(held);
        waiting.join().unwrap().unwrap();
        assert_eq!(&read_file(&vfs, &path, 100).unwrap().unwrap()[..], b"third");
    }

    #[test]
    fn snapshot_file_is_written_whole_read_back_bounded_and_leaves_no_temporary_on_failure() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = crate::vfs::OsFs;
        let path = dir.path().join("sub").join("x.snap");
        assert!(read_file(&vfs, &path, 100).unwrap().is_none());
        write_file(&vfs, &path, b"first").unwrap();
        write_file(&vfs, &path, b"second, longer").unwrap();
        assert_eq!(read_file(&vfs, &path, 100).unwrap().as_deref(), Some(&b"second, longer"[..]));
        assert!(read_file(&vfs, &path, 5).unwrap_err().contains("over the 5-byte limit"));
        // A rename over a directory fails: the error names it, and no temporary file is left.
        let blocked = dir.path().join("blocked");
        std::fs::create_dir_all(blocked.join("inside")).unwrap();
        let e = write_file(&vfs, &blocked, b"x").unwrap_err();
        assert_eq!(e.op, "rename", "{e}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        let mut left: Vec<String> = left.into_iter().map(|n| n.to_string_lossy().into_owned()).collect();
        left.sort();
        assert_eq!(left, ["blocked", "blocked.lock", "sub"], "no temporary file left");
        assert!(std::fs::read_dir(dir.path().join("sub")).unwrap().all(|e| {
            let name = e.unwrap().file_name();
            name == "x.snap" || name == "x.snap.lock"
        }));
        // A temporary file a killed writer left is replaced, and the write goes through.
        std::fs::write(dir.path().join("sub").join("x.snap.tmp"), b"torn").unwrap();
        write_file(&vfs, &path, b"third").unwrap();
        assert_eq!(read_file(&vfs, &path, 100).unwrap().as_deref(), Some(&b"third"[..]));
        assert!(!dir.path().join("sub").join("x.snap.tmp").exists());
    }

    #[test]
    fn snapshot_header_seals_and_opens_and_refuses_every_damaged_byte() {
        let of = SnapshotOf { magic: *b"ORGNTEST", version: 4, reads: 0x5eed, store_id: [9; 16], epoch: 2 };
        let bytes = of.seal(77, 0xfeed_f00d, b"body bytes");
        assert_eq!(of.open(&bytes).unwrap(), (77, 0xfeed_f00d, &b"body bytes"[..]));
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x04;
            assert!(of.open(&bad).is_err(), "byte {i} flipped");
        }
        for len in 0..bytes.len() {
            assert!(of.open(&bytes[..len]).is_err(), "cut to {len}");
        }
        assert!(SnapshotOf { epoch: 3, ..of }.open(&bytes).unwrap_err().contains("another store or epoch"));
        assert!(SnapshotOf { version: 5, ..of }.open(&bytes).unwrap_err().contains("format 4;"));
        assert!(SnapshotOf { magic: *b"ORGNELSE", ..of }.open(&bytes).unwrap_err().contains("magic"));
        assert!(SnapshotOf { reads: 0x5eee, ..of }.open(&bytes).unwrap_err().contains("other kinds of record"));
        // Saved before the header named the kinds read (0 there), checksums and all whole.
        let mut unnamed = bytes.clone();
        unnamed[64..68].copy_from_slice(&[0; 4]);
        set_checksums(&mut unnamed);
        assert!(of.open(&unnamed).unwrap_err().contains("does not name the record kinds"), "{:?}", of.open(&unnamed));
        // A snapshot of the header before it named its last record (64 bytes).
        let mut old = Vec::new();
        old.extend_from_slice(b"ORGNTEST");
        old.extend_from_slice(&4u16.to_le_bytes());
        old.extend_from_slice(&[0, 0]);
        old.extend_from_slice(&64u32.to_le_bytes());
        old.extend_from_slice(&[9; 16]);
        old.extend_from_slice(&2u64.to_le_bytes());
        old.extend_from_slice(&77u64.to_le_bytes());
        old.extend_from_slice(&10u64.to_le_bytes());
        old.extend_from_slice(&crc32fast::hash(b"body bytes").to_le_bytes());
        let crc = crc32fast::hash(&old);
        old.extend_from_slice(&crc.to_le_bytes());
        old.extend_from_slice(b"body bytes");
        assert!(of.open(&old).unwrap_err().contains("older version of Origin"), "{:?}", of.open(&old));
    }

    /// The fingerprint of a journal's last record as a projection saw it: 0 for none, the same
    /// for the same record, another for another journal of the same store, epoch and length.
    #[test]
    fn the_last_record_tells_journals_of_one_store_apart() {
        use crate::journal::{NewRecord, Options};
        let dir = tempfile::tempdir().unwrap();
        let a = Journal::open(dir.path().join("a"), Options::default()).unwrap();
        a.append(vec![NewRecord::scratch(b"one".to_vec()), NewRecord::scratch(b"two".to_vec())]).unwrap();
        assert_eq!(last_record(&a, 0).unwrap(), 0);
        let two = last_record(&a, 2).unwrap();
        assert_eq!(last_record(&a, 2).unwrap(), two);
        assert_ne!(last_record(&a, 1).unwrap(), two);
        assert!(last_record(&a, 3).is_err(), "no third record");
        let b = Journal::open(dir.path().join("b"), Options { new_store_identity: Some((a.store_id(), a.epoch())), ..Options::default() }).unwrap();
        b.append(vec![NewRecord::scratch(b"one".to_vec()), NewRecord::scratch(b"TWO".to_vec())]).unwrap();
        assert_eq!((b.store_id(), b.epoch()), (a.store_id(), a.epoch()));
        assert_ne!(last_record(&b, 2).unwrap(), two);
    }
}
