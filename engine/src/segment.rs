//! Segment files: naming and the 64-byte header (layout in FORMAT.md, "Segment header").

use crate::error::{Error, Result};
use std::path::Path;

/// Magic bytes that open every segment.
pub const SEGMENT_MAGIC: [u8; 8] = *b"ORGNJRNL";
/// Current journal format version.
pub const FORMAT_VERSION: u16 = 1;
/// Size of the segment header.
pub const SEGMENT_HEADER_SIZE: u64 = 64;
/// File name suffix of segments.
pub const SEGMENT_SUFFIX: &str = ".seg";

/// A 128-bit store identity, random at creation, shared by every segment of the store.
pub type StoreId = [u8; 16];

/// The decoded segment header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentHeader {
    /// Journal format version the segment was written with.
    pub format_version: u16,
    /// Payload codec of the records in this segment (see `codec::CODEC_ID`).
    pub codec: u8,
    /// The store this segment belongs to.
    pub store_id: StoreId,
    /// Lineage: bumped when a journal is rebuilt by salvage, so sync can tell histories apart.
    pub epoch: u64,
    /// Offset of the first record in the segment.
    pub base_offset: u64,
    /// When the segment was created (Unix milliseconds).
    pub created_unix_ms: i64,
}

impl SegmentHeader {
    /// Encodes the header, CRC included.
    pub fn encode(&self) -> [u8; SEGMENT_HEADER_SIZE as usize] {
        let mut b = [0u8; SEGMENT_HEADER_SIZE as usize];
        b[0..8].copy_from_slice(&SEGMENT_MAGIC);
        b[8..10].copy_from_slice(&self.format_version.to_le_bytes());
        b[10] = self.codec;
        b[12..16].copy_from_slice(&(SEGMENT_HEADER_SIZE as u32).to_le_bytes());
        b[16..32].copy_from_slice(&self.store_id);
        b[32..40].copy_from_slice(&self.epoch.to_le_bytes());
        b[40..48].copy_from_slice(&self.base_offset.to_le_bytes());
        b[48..56].copy_from_slice(&self.created_unix_ms.to_le_bytes());
        let crc = crc32fast::hash(&b[0..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and checks a header. `path` names the segment in errors.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<SegmentHeader> {
        if bytes.len() < SEGMENT_HEADER_SIZE as usize {
            return Err(Error::corrupt(path, 0, format!("segment header cut short ({} bytes)", bytes.len())));
        }
        let b = &bytes[..SEGMENT_HEADER_SIZE as usize];
        let stored = u32::from_le_bytes([b[60], b[61], b[62], b[63]]);
        if crc32fast::hash(&b[0..60]) != stored {
            return Err(Error::corrupt(path, 0, "segment header checksum mismatch"));
        }
        SegmentHeader::decode_unchecked(b, path)
    }

    /// [`SegmentHeader::decode`] without its checksum: the magic, format version and header
    /// length must hold (salvage's reading of headers whose checksum fails).
    pub fn decode_unchecked(bytes: &[u8], path: &Path) -> Result<SegmentHeader> {
        if bytes.len() < SEGMENT_HEADER_SIZE as usize {
            return Err(Error::corrupt(path, 0, format!("segment header cut short ({} bytes)", bytes.len())));
        }
        let b = &bytes[..SEGMENT_HEADER_SIZE as usize];
        if b[0..8] != SEGMENT_MAGIC {
            return Err(Error::corrupt(path, 0, "not an Origin segment (bad magic)"));
        }
        let format_version = u16::from_le_bytes([b[8], b[9]]);
        if format_version != FORMAT_VERSION {
            return Err(Error::corrupt(
                path,
                8,
                format!("segment format version {format_version}, this build reads {FORMAT_VERSION}"),
            ));
        }
        let header_len = u32::from_le_bytes([b[12], b[13], b[14], b[15]]);
        if u64::from(header_len) != SEGMENT_HEADER_SIZE {
            return Err(Error::corrupt(path, 12, format!("segment header length {header_len}")));
        }
        let mut store_id = [0u8; 16];
        store_id.copy_from_slice(&b[16..32]);
        Ok(SegmentHeader {
            format_version,
            codec: b[10],
            store_id,
            epoch: u64_at(b, 32),
            base_offset: u64_at(b, 40),
            created_unix_ms: u64_at(b, 48) as i64,
        })
    }
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

/// The file name of the segment whose first record has `base_offset`.
pub fn segment_file_name(base_offset: u64) -> String {
    format!("{base_offset:020}{SEGMENT_SUFFIX}")
}

/// The base offset named by a segment file name, if it is one.
pub fn parse_segment_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(SEGMENT_SUFFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Hex form of a store id, for people.
pub fn store_id_hex(id: &StoreId) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_rejects_any_flip() {
        let h = SegmentHeader {
            format_version: FORMAT_VERSION,
            codec: 1,
            store_id: [7; 16],
            epoch: 3,
            base_offset: 12345,
            created_unix_ms: 1_760_000_000_000,
        };
        let bytes = h.encode();
        assert_eq!(SegmentHeader::decode(&bytes, Path::new("x")).expect("decodes"), h);
        for bit in 0..(SEGMENT_HEADER_SIZE * 8) {
            let mut b = bytes;
            b[(bit / 8) as usize] ^= 1 << (bit % 8);
            assert!(SegmentHeader::decode(&b, Path::new("x")).is_err(), "flip of bit {bit} not detected");
        }
    }

    #[test]
    fn segment_names_sort_by_offset_and_parse_back() {
        assert_eq!(segment_file_name(42), "00000000000000000042.seg");
        assert_eq!(parse_segment_file_name("00000000000000000042.seg"), Some(42));
        assert_eq!(parse_segment_file_name("42.seg"), None);
        assert_eq!(parse_segment_file_name("00000000000000000042.seg.compact"), None);
        assert!(segment_file_name(9) < segment_file_name(10));
    }
}
