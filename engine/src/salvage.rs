//! `origin journal salvage`: copy every readable record of a damaged journal into a new one,
//! and list what was lost.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::frame::FLAG_ZSTD;
use crate::journal::{Access, Durability, Journal, NewRecord, Options};
use crate::verify::{walk, Damage, Walked};
use crate::vfs::{OsFs, Vfs};

/// What salvage did.
#[derive(Clone, Debug)]
pub struct SalvageReport {
    /// The new journal.
    pub to: PathBuf,
    /// Records copied.
    pub records_copied: u64,
    /// Records skipped because an earlier copy of the same offset was already taken.
    pub duplicates_skipped: u64,
    /// Damaged regions, with the offsets lost where they are known.
    pub lost: Vec<Damage>,
    /// The torn tail left out, if any (never acknowledged, so nothing durable was lost).
    pub torn_tail: Option<Damage>,
    /// The new journal's epoch (the old one plus one): a salvaged store is a new lineage.
    pub epoch: u64,
}

const BATCH_RECORDS: usize = 4096;

/// Salvages the journal in `from` into a new journal directory `to`, on the real file system.
pub fn salvage_dir(from: &Path, to: &Path) -> Result<SalvageReport> {
    salvage(Arc::new(OsFs), from, to)
}

/// Salvages through `vfs`. `to` must not hold a journal. Records keep their order and payload
/// and are renumbered densely from 0; the store id stays, the epoch goes up by one.
pub fn salvage(vfs: Arc<dyn Vfs>, from: &Path, to: &Path) -> Result<SalvageReport> {
    if vfs.exists(to).map_err(|e| Error::io("stat", to, e))?
        && !vfs.list_dir(to).map_err(|e| Error::io("list", to, e))?.is_empty()
    {
        return Err(Error::Invalid(format!("{} is not empty: salvage writes a new journal", to.display())));
    }
    // First pass: identity (from the first readable header).
    let first = crate::verify::verify(&*vfs, from)?;
    let store_id = first.store_id.ok_or_else(|| Error::corrupt(from, 0, "no readable segment header to take the store id from"))?;
    let epoch = first.epoch.unwrap_or(0) + 1;
    let opts = Options {
        durability: Durability::Sync,
        access: Access::ReadWrite,
        new_store_identity: Some((store_id, epoch)),
        ..Options::default()
    };
    let out = Journal::open_with(vfs.clone(), to, opts)?;
    let mut batch = Vec::with_capacity(BATCH_RECORDS);
    let mut last: Option<u64> = None;
    let mut copied = 0u64;
    let mut duplicates = 0u64;
    let mut decode_buf = Vec::new();
    let flush = |batch: &mut Vec<NewRecord>| -> Result<()> {
        if !batch.is_empty() {
            out.append(std::mem::take(batch))?;
        }
        Ok(())
    };
    let report = walk(&*vfs, from, |w| {
        if let Walked::Record(f) = w {
            if last.is_some_and(|l| f.offset <= l) {
                duplicates += 1;
                return Ok(());
            }
            last = Some(f.offset);
            let payload = if f.flags & FLAG_ZSTD != 0 {
                crate::codec::decompress_into(f.payload, &mut decode_buf, f.offset)?;
                decode_buf.clone()
            } else {
                f.payload.to_vec()
            };
            batch.push(NewRecord::raw(f.kind, f.kind_version, payload));
            copied += 1;
            if batch.len() >= BATCH_RECORDS {
                flush(&mut batch)?;
            }
        }
        Ok(())
    })?;
    flush(&mut batch)?;
    Ok(SalvageReport {
        to: to.to_path_buf(),
        records_copied: copied,
        duplicates_skipped: duplicates,
        lost: report.damage,
        torn_tail: report.torn_tail,
        epoch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimFs;

    #[test]
    fn salvage_copies_every_readable_record_and_names_what_was_lost() {
        let fs = SimFs::new(9);
        let dir = Path::new("/a/journal");
        let j = Journal::open_with(Arc::new(fs.clone()), dir, Options { segment_size_bytes_max: 4096, ..Options::default() })
            .expect("open");
        for i in 0..60u8 {
            j.append(vec![NewRecord::scratch(vec![i; 200])]).expect("append");
        }
        let paths = j.segment_paths();
        drop(j);
        // Damage one record in the middle of the second segment.
        let seg = &paths[1];
        fs.flip_bit(seg, (64 + 40) * 8).expect("flip");
        let r = salvage(Arc::new(fs.clone()), dir, Path::new("/b/journal")).expect("salvage");
        assert_eq!(r.lost.len(), 1, "{:?}", r.lost);
        assert_eq!(r.lost[0].segment, *seg);
        assert_eq!(r.records_copied, 59);
        let (a, b) = r.lost[0].offsets_lost.expect("offsets known");
        assert_eq!(a, b, "one record lost");
        let out = Journal::open_with(Arc::new(fs.clone()), Path::new("/b/journal"), Options::default()).expect("open salvaged");
        let recs = out.read_vec(0, usize::MAX).expect("read");
        let firsts: Vec<u8> = recs.iter().map(|r| r.payload[0]).collect();
        let want: Vec<u8> = (0..60u8).filter(|&i| u64::from(i) != a).collect();
        assert_eq!(firsts, want);
        assert_eq!(out.epoch(), 1);
    }
}
