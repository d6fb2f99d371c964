//! `decode_index` (and `seek` over what it returns) on arbitrary bytes.
//!
//! Input: `[mode, probe: 8 bytes, bytes...]`. Mode bit 0 fixes up the trailing CRC; bit 1
//! passes the base offset and segment length the index itself claims (so those checks pass
//! and the entry checks are reached), otherwise a small base/length from the mode byte.
//!
//! Checks: never panics; an accepted index re-encodes to its bytes (except the reserved bytes
//! 10..12), its entries rise and lie inside the segment; `seek` returns the last entry at or
//! before the probed offset.
#![no_main]

use libfuzzer_sys::fuzz_target;
use origin_engine::index::{decode_index, encode_index, seek};
use origin_fuzz::u64_at;

fuzz_target!(|data: &[u8]| {
    if data.len() < 9 {
        return;
    }
    let mode = data[0];
    let probe = u64_at(data, 1);
    let mut bytes = data[9..].to_vec();
    if mode & 1 != 0 && bytes.len() >= 4 {
        let n = bytes.len();
        let crc = crc32fast::hash(&bytes[..n - 4]);
        bytes[n - 4..].copy_from_slice(&crc.to_le_bytes());
    }
    let (base, seg_len) = if mode & 2 != 0 && bytes.len() >= 32 {
        (u64_at(&bytes, 16), u64_at(&bytes, 24))
    } else {
        (u64::from(mode >> 2), 1 << 20)
    };
    let Some(entries) = decode_index(&bytes, base, seg_len) else { return };
    let mut want = bytes.clone();
    want[10..12].fill(0);
    let n = want.len();
    let crc = crc32fast::hash(&want[..n - 4]);
    want[n - 4..].copy_from_slice(&crc.to_le_bytes());
    assert_eq!(encode_index(base, seg_len, &entries), want, "accepted index does not re-encode");
    for w in entries.windows(2) {
        assert!(w[0].0 < w[1].0 && w[0].1 < w[1].1);
    }
    for &(o, p) in &entries {
        assert!(o >= base && p < seg_len);
    }
    let expect = entries.iter().rev().find(|&&(o, _)| o <= probe).copied();
    assert_eq!(seek(&entries, probe), expect);
    for &(o, _) in &entries {
        assert_eq!(seek(&entries, o).map(|e| e.0), Some(o));
    }
});
