//! A whole journal directory holding one segment file of arbitrary bytes, on the simulated
//! file system: `Journal::open_with`, `read_vec`/`read_from` (with payload decoding) and
//! `verify`.
//!
//! Input: `[mode, bytes...]`; the bytes are the segment file. Mode bit 0 fixes up the header
//! CRC and bit 1 the frames after it (trailers and CRCs), so the fuzzer reaches recovery and
//! reading rather than stopping at checksums; bit 2 opens read-only (no repair) instead of
//! read-write; bit 3 names the file after the base offset its header claims (when it has 64
//! bytes) instead of `00000000000000000000.seg`; bits 4 to 7, when not all zero, open a copy
//! of the directory too, reading the segment's tail `29 * (mode >> 4)` bytes at a time
//! (`Options::tail_read_bytes_max`).
//!
//! Checks: open returns Ok or Err, never panics; after an Ok open, reading every record
//! (decoding each payload) and `verify` never panic, and the records read are exactly the
//! offsets `first_offset..next_offset`; the copy read in pieces opens to the same records,
//! end, torn tails and segment bytes (unless the open created a new journal, whose store id
//! is random), or fails with the same error.
#![no_main]

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use origin_engine::segment::{segment_file_name, SEGMENT_HEADER_SIZE};
use origin_engine::sim::SimFs;
use origin_engine::vfs::Vfs;
use origin_engine::{verify, Access, Journal, Options};
use origin_fuzz::{fix_frames, fix_header_crc, u64_at};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut bytes = rest.to_vec();
    if mode & 1 != 0 {
        fix_header_crc(&mut bytes);
    }
    if mode & 2 != 0 {
        fix_frames(&mut bytes, SEGMENT_HEADER_SIZE as usize);
    }
    let base = if mode & 8 != 0 && bytes.len() >= SEGMENT_HEADER_SIZE as usize { u64_at(&bytes, 40) } else { 0 };

    let fs = SimFs::new(u64::from(mode));
    let dir = Path::new("/fuzz/journal");
    fs.create_dir_all(dir).expect("mkdir");
    let seg = dir.join(segment_file_name(base));
    drop(fs.create_new(&seg).expect("create segment"));
    fs.write_file(&seg, &bytes).expect("write segment");

    let access = if mode & 4 != 0 { Access::ReadOnly } else { Access::ReadWrite };
    let opts = Options { access, segment_size_bytes_max: 1 << 20, ..Options::default() };
    let copy = (mode >> 4 != 0).then(|| fs.snapshot());
    let opened = Journal::open_with(Arc::new(fs.clone()), dir, opts.clone());
    let found = summary(&opened);
    if let Some(copy) = copy {
        let pieces = Options { tail_read_bytes_max: 29 * u64::from(mode >> 4), ..opts };
        let in_pieces = Journal::open_with(Arc::new(copy.clone()), dir, pieces);
        assert_eq!(summary(&in_pieces), found, "the tail read in pieces");
        // (A journal created anew, its segment cut while being created, has a random id.)
        let created = in_pieces.as_ref().is_ok_and(|j| j.open_report().created);
        drop(in_pieces);
        if !created {
            assert_eq!(copy.read_file(&seg).ok(), fs.read_file(&seg).ok(), "the segment after the opens");
        }
    }
    if let Ok(j) = opened {
        let (first, next) = (j.first_offset(), j.next_offset());
        if let Ok(records) = j.read_vec(0, usize::MAX) {
            let offsets: Vec<u64> = records.iter().map(|r| r.offset).collect();
            assert!(offsets.iter().copied().eq(first..next), "read {offsets:?}, journal says {first}..{next}");
        }
        let _ = j.read_from(0, |r| {
            let _ = r.decode();
            Ok(ControlFlow::Continue(()))
        });
        let _ = j.status();
        drop(j);
    }
    let _ = verify::verify(&fs, dir);
});

/// What an open found: first and next offsets, the records' payloads and the torn tails'
/// positions and sizes, or the error's text.
#[allow(clippy::type_complexity)]
fn summary(opened: &origin_engine::Result<Journal>) -> Result<(u64, u64, Result<Vec<Vec<u8>>, String>, Vec<(u64, u64)>), String> {
    match opened {
        Ok(j) => Ok((
            j.first_offset(),
            j.next_offset(),
            j.read_vec(0, usize::MAX).map(|v| v.into_iter().map(|r| r.payload).collect()).map_err(|e| e.to_string()),
            j.open_report().torn_tails.iter().map(|t| (t.position, t.size_bytes)).collect(),
        )),
        Err(e) => Err(e.to_string()),
    }
}
