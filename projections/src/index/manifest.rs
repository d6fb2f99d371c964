//! The manifest: which segments make up the index, the caller's mark, the next segment id.
//! Replaced atomically (temporary file, fsync, rename, fsync of the directory), so a crash
//! leaves the old list or the new one, never a mix; segment files it does not list are
//! leftovers and are deleted on open.

use super::IndexError;
use super::folder::Folder;
use super::limits::SEGMENTS_MAX;
use super::segment::SegmentId;

/// File name of the manifest in the index directory.
pub(crate) const FILE_NAME: &str = "manifest";
const MAGIC: &[u8; 8] = b"ORGNIMAN";
const VERSION: u16 = 1;
const FIXED_SIZE_BYTES: usize = 32;
/// `mark` value meaning "no mark".
const NO_MARK: u64 = u64::MAX;

/// The manifest's content.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Manifest {
    pub segments: Vec<SegmentId>,
    pub mark: Option<u64>,
    pub next_segment_id: SegmentId,
}

impl Manifest {
    pub(crate) fn encode(&self) -> Vec<u8> {
        assert!(self.segments.len() <= SEGMENTS_MAX as usize);
        assert!(self.mark != Some(NO_MARK));
        let mut b = Vec::with_capacity(FIXED_SIZE_BYTES + 8 * self.segments.len() + 4);
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&VERSION.to_le_bytes());
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&(self.segments.len() as u32).to_le_bytes());
        b.extend_from_slice(&self.mark.unwrap_or(NO_MARK).to_le_bytes());
        b.extend_from_slice(&self.next_segment_id.to_le_bytes());
        for id in &self.segments {
            b.extend_from_slice(&id.to_le_bytes());
        }
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a manifest; `Err` is `(byte, reason)`.
    pub(crate) fn decode(b: &[u8]) -> Result<Manifest, (u64, String)> {
        if b.len() < FIXED_SIZE_BYTES + 4 {
            return Err((b.len() as u64, "too short (truncated)".into()));
        }
        if &b[0..8] != MAGIC {
            return Err((0, "not an index manifest (bad magic)".into()));
        }
        let crc_at = b.len() - 4;
        let crc = u32::from_le_bytes([b[crc_at], b[crc_at + 1], b[crc_at + 2], b[crc_at + 3]]);
        if crc32fast::hash(&b[..crc_at]) != crc {
            return Err((crc_at as u64, "CRC mismatch".into()));
        }
        let version = u16::from_le_bytes([b[8], b[9]]);
        if version != VERSION {
            return Err((8, format!("version {version}; this build reads {VERSION}")));
        }
        let u64_at = |o: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[o..o + 8]);
            u64::from_le_bytes(x)
        };
        let count = u32::from_le_bytes([b[12], b[13], b[14], b[15]]);
        if count > SEGMENTS_MAX || b.len() != FIXED_SIZE_BYTES + 8 * count as usize + 4 {
            return Err((12, format!("{count} segments do not fit the file")));
        }
        let mark = u64_at(16);
        let next_segment_id = u64_at(24);
        let segments: Vec<SegmentId> = (0..count as usize).map(|i| u64_at(FIXED_SIZE_BYTES + 8 * i)).collect();
        if segments.windows(2).any(|w| w[0] >= w[1]) || segments.last().is_some_and(|&l| l >= next_segment_id) {
            return Err((FIXED_SIZE_BYTES as u64, "segment ids out of order".into()));
        }
        Ok(Manifest { segments, mark: (mark != NO_MARK).then_some(mark), next_segment_id })
    }

    /// Reads the manifest of `folder`; none if the index is new.
    pub(crate) fn read(folder: &Folder) -> Result<Option<Manifest>, IndexError> {
        match folder.read(FILE_NAME, (FIXED_SIZE_BYTES + 8 * SEGMENTS_MAX as usize + 4) as u64)? {
            Some(b) => Manifest::decode(&b).map(Some).map_err(|(at, r)| IndexError::corrupt(folder.join(FILE_NAME), at, r)),
            None => Ok(None),
        }
    }

    /// Replaces the manifest of `folder` atomically and durably.
    pub(crate) fn write(&self, folder: &Folder) -> Result<(), IndexError> {
        folder.replace(FILE_NAME, &self.encode())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn index_manifest_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = Manifest::decode(&bytes);
        }
    }

    #[test]
    fn index_manifest_round_trip_and_damage() {
        let m = Manifest { segments: vec![1, 4, 9], mark: Some(77), next_segment_id: 10 };
        let b = m.encode();
        assert_eq!(Manifest::decode(&b), Ok(m));
        for i in 0..b.len() {
            let mut d = b.clone();
            d[i] ^= 0x10;
            assert!(Manifest::decode(&d).is_err(), "flip at {i}");
            assert!(Manifest::decode(&b[..i]).is_err(), "cut at {i}");
        }
    }
}
