//! `SegmentHeader::decode` on arbitrary bytes.
//!
//! Input: `[mode, bytes...]`; mode bit 0 fixes up the header CRC, so the checks behind it
//! (magic, version, header length) are reached.
//!
//! Checks: never panics; a header that decodes re-encodes to the same 64 bytes, except the
//! reserved bytes (11 and 56..60), which a reader ignores.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use origin_engine::segment::{SegmentHeader, SEGMENT_HEADER_SIZE};
use origin_fuzz::fix_header_crc;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut bytes = rest.to_vec();
    if mode & 1 != 0 {
        fix_header_crc(&mut bytes);
    }
    if let Ok(h) = SegmentHeader::decode(&bytes, Path::new("fuzz.seg")) {
        let n = SEGMENT_HEADER_SIZE as usize;
        let mut want = bytes[..n].to_vec();
        want[11] = 0;
        want[56..60].fill(0);
        let crc = crc32fast::hash(&want[..60]);
        want[60..64].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(&h.encode()[..], &want[..], "decoded header does not re-encode");
        assert_eq!(SegmentHeader::decode(&h.encode(), Path::new("fuzz.seg")).ok(), Some(h));
    }
});
