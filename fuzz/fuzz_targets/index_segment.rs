//! An index folder whose one segment file is the input: the index opens it (checking every
//! structure it reads, not yet the body's checksum), its body is verified, and a few searches
//! run. Nothing may panic: an open that fails, a verification that finds damage and a search
//! that refuses the index are all fine.
//! Input: `[mode, segment bytes…]`. Mode bit 0 writes segment id 0 into the header and
//! recomputes the header's and the footer's checksums (over the fuzzer's bytes), so that the
//! open goes on to the sections; bit 1 recomputes the body's checksum too, so that the
//! verification passes and the searches read the decoded postings.
//! Run with `-detect_leaks=0`: opening an index starts a detached thread that verifies its
//! segments' bodies, which may still be alive when the fuzzer exits, and LeakSanitizer counts
//! a live thread's handle as leaked.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use origin_projections::index::{Filters, Index};
use origin_projections::parse_query;

/// Bytes of the header (its CRC over bytes 0..28 at 28), and of the footer (its body CRC at
/// 64, its own CRC over footer bytes 0..68 at 68): FORMAT.md, "Segment file".
const HEADER: usize = 32;
const FOOTER: usize = 80;

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("origin-fuzz-index-segment-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("fuzz folder");
        // A manifest listing segment 0, at mark 1, next id 1.
        let mut m = Vec::new();
        m.extend_from_slice(b"ORGNIMAN");
        m.extend_from_slice(&1u16.to_le_bytes());
        m.extend_from_slice(&[0, 0]);
        m.extend_from_slice(&1u32.to_le_bytes());
        m.extend_from_slice(&1u64.to_le_bytes());
        m.extend_from_slice(&1u64.to_le_bytes());
        m.extend_from_slice(&0u64.to_le_bytes());
        let crc = crc32fast::hash(&m);
        m.extend_from_slice(&crc.to_le_bytes());
        std::fs::write(d.join("manifest"), m).expect("manifest");
        d
    })
}

fn reseal(b: &mut [u8], body: bool) {
    let n = b.len();
    if n < HEADER + FOOTER {
        return;
    }
    b[16..24].copy_from_slice(&0u64.to_le_bytes());
    let h = crc32fast::hash(&b[..28]);
    b[28..32].copy_from_slice(&h.to_le_bytes());
    let footer = n - FOOTER;
    if body {
        let c = crc32fast::hash(&b[..footer]);
        b[footer + 64..footer + 68].copy_from_slice(&c.to_le_bytes());
    }
    let f = crc32fast::hash(&b[footer..footer + 68]);
    b[footer + 68..footer + 72].copy_from_slice(&f.to_le_bytes());
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut bytes = rest.to_vec();
    if mode & 1 != 0 {
        reseal(&mut bytes, mode & 2 != 0);
    }
    let dir = dir();
    // Replaced by a rename, as the index's writer does: a background check still reading the
    // last input's file reads that file, not this one.
    let tmp = dir.join("segment.tmp");
    std::fs::write(&tmp, &bytes).expect("segment file");
    std::fs::rename(&tmp, dir.join("00000000000000000000.segment")).expect("rename");
    let Ok(index) = Index::open_shared(dir) else { return };
    let verified = index.verify();
    if let Err(e) = &verified {
        assert!(e.is_corruption(), "a failed verification of a readable file is damage: {e}");
        assert!(index.damage().is_some(), "damage found is kept");
    }
    for q in ["release", "中文", "\"tag from\"", "how do we release the build?"] {
        let q = parse_query(q).expect("a query");
        match index.search(&q, &Filters { include_tools: mode & 4 != 0, ..Filters::default() }, &|_| true, 10) {
            Ok(hits) => assert!(verified.is_ok() && hits.len() <= 10, "a search answered from a segment not found good"),
            Err(e) => assert!(verified.is_err() || e.is_corruption(), "{e}"),
        }
    }
});
