//! Record frames: the bytes of one record in a segment (layout in FORMAT.md, "Record frame").
//!
//! ```text
//! 0   u32 frame_len    whole frame, header + payload + trailer (32 ..= FRAME_SIZE_MAX)
//! 4   u32 crc          CRC32 (IEEE) of bytes [8, frame_len)
//! 8   u64 offset       the record's offset (for a seal: the next segment's base offset)
//! 16  i64 time_unix_ms when the batch holding it was written
//! 24  u8  kind         record kind (0 = seal)
//! 25  u8  kind_version payload schema version of that kind
//! 26  u16 flags        bit 0: payload is zstd-compressed; other bits zero
//! 28  ..  payload
//! end-4 u32 trailer    frame_len XOR FRAME_TRAILER_MAGIC
//! ```

use crate::limits::RECORD_PAYLOAD_SIZE_MAX;
use crate::segment::{u32_at, u64_at};

/// Bytes before the payload.
pub const FRAME_HEADER_SIZE: usize = 28;
/// Bytes after the payload.
pub const FRAME_TRAILER_SIZE: usize = 4;
/// Header plus trailer.
pub const FRAME_OVERHEAD: usize = FRAME_HEADER_SIZE + FRAME_TRAILER_SIZE;
/// Largest frame.
pub const FRAME_SIZE_MAX: usize = RECORD_PAYLOAD_SIZE_MAX + FRAME_OVERHEAD;
/// XORed with the length to form the trailer. Its top byte makes the last byte of every frame
/// non-zero (frame lengths stay below 2^25), so a zero-filled tail can never look like the end
/// of a frame, and no single bit flip can make it zero.
pub const FRAME_TRAILER_MAGIC: u32 = 0xA5C3_0F5A;

/// Flag: the payload is one zstd frame.
pub const FLAG_ZSTD: u16 = 1;
/// Every flag this build understands.
pub const FLAGS_KNOWN: u16 = FLAG_ZSTD;

/// Kind of the seal frame that ends a sealed segment; not a record.
pub const KIND_SEAL: u8 = 0;

/// A frame that passed every check, borrowed from the bytes it was read from.
#[derive(Clone, Copy, Debug)]
pub struct FrameView<'a> {
    /// Whole frame length in bytes.
    pub frame_len: usize,
    /// The record's offset (or, for a seal, the next segment's base offset).
    pub offset: u64,
    /// Time the batch was written.
    pub time_unix_ms: i64,
    /// Record kind.
    pub kind: u8,
    /// Payload schema version.
    pub kind_version: u8,
    /// Flags.
    pub flags: u16,
    /// Stored payload (compressed if `flags & FLAG_ZSTD`).
    pub payload: &'a [u8],
}

/// The result of checking the bytes at a position.
#[derive(Debug)]
pub enum Check<'a> {
    /// A whole, intact frame.
    Valid(FrameView<'a>),
    /// The bytes end before the frame does (its length field, or the length it declares).
    Incomplete,
    /// The frame is there but wrong.
    Invalid(&'static str),
}

/// Appends one encoded frame to `out`. The payload must not exceed `RECORD_PAYLOAD_SIZE_MAX`.
pub fn encode_frame(
    out: &mut Vec<u8>,
    offset: u64,
    time_unix_ms: i64,
    kind: u8,
    kind_version: u8,
    flags: u16,
    payload: &[u8],
) {
    assert!(payload.len() <= RECORD_PAYLOAD_SIZE_MAX, "payload over the limit reached encode_frame");
    let frame_len = (payload.len() + FRAME_OVERHEAD) as u32;
    let start = out.len();
    out.extend_from_slice(&frame_len.to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&time_unix_ms.to_le_bytes());
    out.push(kind);
    out.push(kind_version);
    out.extend_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(payload);
    out.extend_from_slice(&(frame_len ^ FRAME_TRAILER_MAGIC).to_le_bytes());
    let crc = crc32fast::hash(&out[start + 8..]);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    debug_assert!(matches!(check_frame(&out[start..]), Check::Valid(_)));
}

/// Checks the frame that starts at `buf[0]`; `buf` may run past it.
pub fn check_frame(buf: &[u8]) -> Check<'_> {
    check(buf, true)
}

/// As [`check_frame`] for a frame whose checksum was already checked on these same immutable
/// bytes: its length, trailer and fields are checked, its checksum is not computed again.
pub fn check_frame_known(buf: &[u8]) -> Check<'_> {
    check(buf, false)
}

fn check(buf: &[u8], crc: bool) -> Check<'_> {
    if buf.len() < 4 {
        return Check::Incomplete;
    }
    let frame_len = u32_at(buf, 0) as usize;
    if !(FRAME_OVERHEAD..=FRAME_SIZE_MAX).contains(&frame_len) {
        return Check::Invalid("frame length out of range");
    }
    if buf.len() < frame_len {
        return Check::Incomplete;
    }
    let f = &buf[..frame_len];
    if u32_at(f, frame_len - 4) != (frame_len as u32) ^ FRAME_TRAILER_MAGIC {
        return Check::Invalid("frame trailer does not match its length");
    }
    if crc && crc32fast::hash(&f[8..]) != u32_at(f, 4) {
        return Check::Invalid("frame checksum mismatch");
    }
    Check::Valid(FrameView {
        frame_len,
        offset: u64_at(f, 8),
        time_unix_ms: u64_at(f, 16) as i64,
        kind: f[24],
        kind_version: f[25],
        flags: u16::from_le_bytes([f[26], f[27]]),
        payload: &f[FRAME_HEADER_SIZE..frame_len - FRAME_TRAILER_SIZE],
    })
}

/// True if the bytes at `buf[0]` are a whole frame according to the trailer that ends `buf`:
/// used to tell a damaged length field (corruption) from a frame cut by a crash (torn tail).
pub fn is_whole_frame_by_trailer(buf: &[u8]) -> bool {
    if buf.len() < FRAME_OVERHEAD || buf.len() > FRAME_SIZE_MAX {
        return false;
    }
    let n = buf.len();
    if u32_at(buf, n - 4) != (n as u32) ^ FRAME_TRAILER_MAGIC {
        return false;
    }
    crc32fast::hash(&buf[8..]) == u32_at(buf, 4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn frame_round_trips(offset: u64, time: i64, kind in 1u8.., ver: u8, payload in proptest::collection::vec(any::<u8>(), 0..3000)) {
            let mut out = vec![9u8; 3];
            encode_frame(&mut out, offset, time, kind, ver, 0, &payload);
            match check_frame(&out[3..]) {
                Check::Valid(f) => {
                    prop_assert_eq!(f.offset, offset);
                    prop_assert_eq!(f.time_unix_ms, time);
                    prop_assert_eq!(f.kind, kind);
                    prop_assert_eq!(f.kind_version, ver);
                    prop_assert_eq!(f.payload, &payload[..]);
                    prop_assert_eq!(f.frame_len, out.len() - 3);
                }
                other => prop_assert!(false, "not valid: {:?}", other),
            }
            prop_assert!(is_whole_frame_by_trailer(&out[3..]));
            // Every proper prefix is incomplete or invalid, never valid.
            for cut in 0..out.len() - 3 {
                prop_assert!(!matches!(check_frame(&out[3..3 + cut]), Check::Valid(_)));
            }
        }
    }

    #[test]
    fn every_single_bit_flip_is_rejected() {
        let mut out = Vec::new();
        encode_frame(&mut out, 77, 1234, 3, 1, 0, b"hello, journal");
        for bit in 0..out.len() * 8 {
            let mut b = out.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            assert!(!matches!(check_frame(&b), Check::Valid(_)), "flip of bit {bit} accepted");
        }
    }

    #[test]
    fn last_byte_of_a_frame_is_never_zero() {
        for len in [0usize, 1, 100, 65_536] {
            let mut out = Vec::new();
            encode_frame(&mut out, 0, 0, 1, 1, 0, &vec![0u8; len]);
            assert_ne!(*out.last().expect("non-empty"), 0);
        }
    }
}
