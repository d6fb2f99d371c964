//! `journal/TIP`: the newest segment a journal has started, so that a last segment whose file
//! was removed is told from one a writer has not created yet.
//!
//! A segment that ends with a seal names the next segment's base. Its file is missing while
//! the writer that sealed it has not created it yet (or died first), and a writer then creates
//! it; that looks the same as a last segment whose file was removed (a user's `rm`, a backup
//! restored without its newest file), whose records would be lost without a word and their
//! offsets given again. `TIP` is written after a segment is created and synced, so under the
//! disk model the segment it names was on disk before it: an open that finds the last segment
//! present starting before `TIP`'s base has lost files, and says so as damage.

use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::segment::{segment_file_name, StoreId};
use crate::vfs::Vfs;

/// The file's name, in the journal directory.
pub const TIP_FILE_NAME: &str = "TIP";
const TIP_MAGIC: [u8; 8] = *b"ORGNTIP1";
/// Its size: magic 8, store id 16, epoch 8, base 8, CRC-32 of the 40 bytes before it 4.
pub const TIP_SIZE: usize = 44;

/// What `TIP` says: the base offset of the newest segment this store and epoch started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tip {
    /// The store it was written for.
    pub store_id: StoreId,
    /// Its epoch.
    pub epoch: u64,
    /// The newest segment's base offset.
    pub base: u64,
}

impl Tip {
    /// Its bytes.
    pub fn encode(&self) -> [u8; TIP_SIZE] {
        let mut b = [0u8; TIP_SIZE];
        b[..8].copy_from_slice(&TIP_MAGIC);
        b[8..24].copy_from_slice(&self.store_id);
        b[24..32].copy_from_slice(&self.epoch.to_le_bytes());
        b[32..40].copy_from_slice(&self.base.to_le_bytes());
        let crc = crc32fast::hash(&b[..40]);
        b[40..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Reads `bytes`, or says why they are not a `TIP`.
    pub fn decode(bytes: &[u8]) -> std::result::Result<Tip, String> {
        if bytes.len() != TIP_SIZE {
            return Err(format!("{} bytes, not {TIP_SIZE}", bytes.len()));
        }
        if bytes[..8] != TIP_MAGIC {
            return Err("not a TIP file (its first 8 bytes)".into());
        }
        let crc = u32::from_le_bytes(bytes[40..44].try_into().expect("4 bytes"));
        if crc != crc32fast::hash(&bytes[..40]) {
            return Err("its checksum does not match".into());
        }
        Ok(Tip {
            store_id: bytes[8..24].try_into().expect("16 bytes"),
            epoch: u64::from_le_bytes(bytes[24..32].try_into().expect("8 bytes")),
            base: u64::from_le_bytes(bytes[32..40].try_into().expect("8 bytes")),
        })
    }

    /// True when it was written for this store and epoch.
    pub fn is_of(&self, store_id: StoreId, epoch: u64) -> bool {
        self.store_id == store_id && self.epoch == epoch
    }
}

/// What the journal directory holds of `TIP`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TipFile {
    /// No `TIP` (a journal written before it was, or a new one).
    Absent,
    /// One that does not read as a `TIP` (why): not used, and written again.
    Unreadable(String),
    /// One that reads.
    Read(Tip),
}

/// The path of `dir`'s `TIP`.
pub fn tip_path(dir: &Path) -> PathBuf {
    dir.join(TIP_FILE_NAME)
}

/// Reads `dir`'s `TIP`. One that cannot be read (an I/O error other than its absence) is
/// [`TipFile::Unreadable`], as one that does not decode: it only guards, so it stops no open
/// and no walk (salvage included); a read-write open tries to write it again.
pub fn read_tip(vfs: &dyn Vfs, dir: &Path) -> TipFile {
    let path = tip_path(dir);
    let file = match vfs.open_read(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return TipFile::Absent,
        Err(e) => return TipFile::Unreadable(format!("it cannot be opened: {e}")),
    };
    // One byte more than a `TIP`, to tell a longer file.
    let mut b = [0u8; TIP_SIZE + 1];
    let mut got = 0;
    while got < b.len() {
        match file.read_at(&mut b[got..], got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return TipFile::Unreadable(format!("it cannot be read: {e}")),
        }
    }
    if got > TIP_SIZE {
        return TipFile::Unreadable(format!("more than {TIP_SIZE} bytes"));
    }
    match Tip::decode(&b[..got]) {
        Ok(t) => TipFile::Read(t),
        Err(why) => TipFile::Unreadable(why),
    }
}

/// Writes `tip` unless `dir`'s `TIP` already names this store and epoch at `tip.base` or
/// further on: a file beside it, synced, renamed over it, the directory synced. Errors name
/// the call that failed (`fdatasync` and `fsync directory` as the journal's own do, since a
/// failed sync leaves what is on disk unknown).
pub fn advance_tip(vfs: &dyn Vfs, dir: &Path, tip: Tip) -> Result<()> {
    let path = tip_path(dir);
    if let TipFile::Read(t) = read_tip(vfs, dir)
        && t.is_of(tip.store_id, tip.epoch)
        && t.base >= tip.base
    {
        return Ok(());
    }
    let tmp = dir.join(format!("{TIP_FILE_NAME}.tmp"));
    if vfs.exists(&tmp).map_err(|e| Error::io("stat", &tmp, e))? {
        vfs.remove_file(&tmp).map_err(|e| Error::io("remove", &tmp, e))?;
    }
    let f = vfs.create_new(&tmp).map_err(|e| Error::io("create", &tmp, e))?;
    f.write_all_at(&tip.encode(), 0).map_err(|e| Error::io("write", &tmp, e))?;
    f.sync_data().map_err(|e| Error::io("fdatasync", &tmp, e))?;
    vfs.rename(&tmp, &path).map_err(|e| Error::io("rename", &path, e))?;
    vfs.sync_dir(dir).map_err(|e| Error::io("fsync directory", dir, e))
}

/// Why a journal of `store` (its id and epoch) whose last segment present starts at
/// `last_base` has lost files, when `TIP` names a later segment of that store and epoch;
/// `reached` is the offset after its last record, where known.
pub fn segments_gone(dir: &Path, tip: &TipFile, store: (StoreId, u64), last_base: u64, reached: Option<u64>) -> Option<Error> {
    let TipFile::Read(t) = tip else { return None };
    if !t.is_of(store.0, store.1) || t.base <= last_base {
        return None;
    }
    let from = reached.map_or_else(String::new, |r| format!(" from offset {r} on"));
    Some(Error::corrupt(
        dir.join(segment_file_name(t.base)),
        0,
        format!(
            "the segment file is gone: {} says this journal started it, and the last segment left starts at offset {last_base}; \
             the records{from} are lost with the files removed (restore them; or, if this journal was itself restored from a \
             backup or copied while Origin ran, or the files are lost, run `origin journal salvage --to DIR` to go on from what it holds)",
            tip_path(dir).display()
        ),
    ))
}

/// Why a journal directory that holds no segment is not a journal to start afresh, when it
/// holds a `TIP` that reads: its segments were removed.
pub fn all_segments_gone(dir: &Path, tip: &TipFile) -> Option<Error> {
    let TipFile::Read(t) = tip else { return None };
    Some(Error::corrupt(
        dir.join(segment_file_name(t.base)),
        0,
        format!(
            "no segment file is left: {} says this journal started this segment; every record is lost with the files removed \
             (restore them, or remove {} to start an empty journal here)",
            tip_path(dir).display(),
            tip_path(dir).display()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tip_reads_back_and_a_changed_byte_does_not_read() {
        let t = Tip { store_id: [7; 16], epoch: 3, base: 131_072 };
        let b = t.encode();
        assert_eq!(Tip::decode(&b), Ok(t));
        for i in 0..TIP_SIZE {
            let mut c = b;
            c[i] ^= 0x10;
            assert!(Tip::decode(&c).is_err(), "byte {i} changed and still read");
        }
        assert!(Tip::decode(&b[..43]).is_err());
    }
}
