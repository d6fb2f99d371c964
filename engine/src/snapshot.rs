//! The header every snapshot file of a projection carries (FORMAT.md, "State snapshot" and
//! "Cursor snapshot"): a cache of what a prefix of the journal holds is saved with the store
//! id, epoch and offset it reflects, and checksums of itself and of its body, so that a
//! reader can tell a snapshot of this journal that reached the disk whole from anything else.
//! What the body holds is the projection's own business.

use crate::segment::StoreId;

/// Size of the header.
pub const SNAPSHOT_HEADER_SIZE: usize = 64;

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

/// What a snapshot is of: its kind's magic and format version, and the journal (store id and
/// epoch) it was written for.
#[derive(Clone, Copy, Debug)]
pub struct SnapshotOf {
    /// The kind's magic bytes.
    pub magic: [u8; 8],
    /// The kind's format version.
    pub version: u16,
    /// The journal's store id.
    pub store_id: StoreId,
    /// The journal's epoch.
    pub epoch: u64,
}

impl SnapshotOf {
    /// A whole snapshot file: the header (reflecting the journal up to `read_to`), then `body`.
    pub fn seal(&self, read_to: u64, body: &[u8]) -> Vec<u8> {
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
        let header_crc = crc32fast::hash(&out[..60]);
        out.extend_from_slice(&header_crc.to_le_bytes());
        debug_assert_eq!(out.len(), SNAPSHOT_HEADER_SIZE);
        out.extend_from_slice(body);
        out
    }

    /// Checks a snapshot file's header and its body's size and checksum: the offset it
    /// reflects and its body, or why it is refused.
    pub fn open<'a>(&self, bytes: &'a [u8]) -> Result<(u64, &'a [u8]), String> {
        if bytes.len() < SNAPSHOT_HEADER_SIZE {
            return Err(format!("{} bytes, shorter than the {SNAPSHOT_HEADER_SIZE}-byte header", bytes.len()));
        }
        let h = &bytes[..SNAPSHOT_HEADER_SIZE];
        if h[..8] != self.magic {
            return Err(format!("not a {} snapshot (magic)", String::from_utf8_lossy(&self.magic)));
        }
        if crc32fast::hash(&h[..60]) != le_u32(h, 60) {
            return Err("header checksum does not match".into());
        }
        let version = le_u16(h, 8);
        if version != self.version {
            return Err(format!("format {version}; this build reads format {} only", self.version));
        }
        if h[10..12] != [0, 0] || le_u32(h, 12) != SNAPSHOT_HEADER_SIZE as u32 {
            return Err("reserved bytes or header length not as written".into());
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
        Ok((read_to, body))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_header_seals_and_opens_and_refuses_every_damaged_byte() {
        let of = SnapshotOf { magic: *b"ORGNTEST", version: 4, store_id: [9; 16], epoch: 2 };
        let bytes = of.seal(77, b"body bytes");
        assert_eq!(of.open(&bytes).unwrap(), (77, &b"body bytes"[..]));
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
    }
}
