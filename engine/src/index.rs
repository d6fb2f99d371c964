//! The sparse offset index of a sealed segment: `<base>.idx`, rebuildable from the segment.
//!
//! ```text
//! 0  [8] magic "ORGNSIDX"
//! 8  u16 version (1)
//! 10 u16 zero
//! 12 u32 entry_count
//! 16 u64 segment base offset
//! 24 u64 segment length in bytes the index was built from
//! 32 entry_count x (u64 offset, u64 position)
//! .. u32 CRC32 of every byte before it
//! ```

use crate::limits::SPARSE_INDEX_ENTRIES_MAX;
use crate::segment::{u32_at, u64_at};

/// Magic of index files.
pub const INDEX_MAGIC: [u8; 8] = *b"ORGNSIDX";
/// File name suffix of index files.
pub const INDEX_SUFFIX: &str = ".idx";

/// Encodes an index.
pub fn encode_index(base_offset: u64, segment_len: u64, entries: &[(u64, u64)]) -> Vec<u8> {
    let mut b = Vec::with_capacity(36 + entries.len() * 16);
    b.extend_from_slice(&INDEX_MAGIC);
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    b.extend_from_slice(&base_offset.to_le_bytes());
    b.extend_from_slice(&segment_len.to_le_bytes());
    for (o, p) in entries {
        b.extend_from_slice(&o.to_le_bytes());
        b.extend_from_slice(&p.to_le_bytes());
    }
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

/// Decodes an index if it is intact and built for this segment (`None` means: rebuild it).
pub fn decode_index(b: &[u8], base_offset: u64, segment_len: u64) -> Option<Vec<(u64, u64)>> {
    if b.len() < 36 || b[0..8] != INDEX_MAGIC || u16::from_le_bytes([b[8], b[9]]) != 1 {
        return None;
    }
    let count = u32_at(b, 12);
    if count > SPARSE_INDEX_ENTRIES_MAX || b.len() != 36 + count as usize * 16 {
        return None;
    }
    if crc32fast::hash(&b[..b.len() - 4]) != u32_at(b, b.len() - 4) {
        return None;
    }
    if u64_at(b, 16) != base_offset || u64_at(b, 24) != segment_len {
        return None;
    }
    let entries: Vec<(u64, u64)> = (0..count as usize).map(|i| (u64_at(b, 32 + i * 16), u64_at(b, 40 + i * 16))).collect();
    // Entries must rise in both fields and stay inside the segment.
    let ordered = entries.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1);
    let inside = entries.iter().all(|&(o, p)| o >= base_offset && p < segment_len);
    (ordered && inside).then_some(entries)
}

/// The entry to start a scan from to reach `offset`: the last entry at or before it.
pub fn seek(entries: &[(u64, u64)], offset: u64) -> Option<(u64, u64)> {
    let i = entries.partition_point(|&(o, _)| o <= offset);
    (i > 0).then(|| entries[i - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_round_trips_and_rejects_damage() {
        let e = vec![(10, 64), (20, 70_000), (31, 140_000)];
        let b = encode_index(10, 200_000, &e);
        assert_eq!(decode_index(&b, 10, 200_000), Some(e.clone()));
        assert_eq!(decode_index(&b, 11, 200_000), None);
        assert_eq!(decode_index(&b, 10, 200_001), None);
        for bit in 0..b.len() * 8 {
            let mut d = b.clone();
            d[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(decode_index(&d, 10, 200_000), None, "flip {bit}");
        }
        assert_eq!(seek(&e, 9), None);
        assert_eq!(seek(&e, 10), Some((10, 64)));
        assert_eq!(seek(&e, 25), Some((20, 70_000)));
        assert_eq!(seek(&e, 99), Some((31, 140_000)));
    }
}
