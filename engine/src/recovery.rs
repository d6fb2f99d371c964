//! Scanning segment bytes, and telling a torn tail (a crash cut the last write) from
//! corruption (bytes changed after they were written). The rules are in FORMAT.md, "Recovery".

use crate::frame::{check_frame, is_whole_frame_by_trailer, Check, FrameView, FRAME_HEADER_SIZE, FRAME_OVERHEAD, KIND_SEAL};
use crate::limits::SPARSE_INDEX_INTERVAL_BYTES;
use crate::segment::u32_at;

/// Why a scan stopped before the end of the bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The bytes ended exactly after a frame.
    End,
    /// A seal frame ends the segment; the next segment starts at this offset.
    Sealed {
        /// Base offset of the next segment.
        next_offset: u64,
        /// Position of the seal frame.
        seal_pos: u64,
    },
    /// The bytes at `pos` are not a whole valid frame.
    Bad {
        /// Where.
        pos: u64,
        /// What the frame check said.
        reason: &'static str,
    },
}

/// What a scan found.
#[derive(Clone, Debug)]
pub struct Scan {
    /// Position after the last valid record frame (the seal, if any, starts here).
    pub end_pos: u64,
    /// Offset the next record would have.
    pub next_offset: u64,
    /// Record frames seen (seals not counted).
    pub records: u64,
    /// Sparse index entries (offset, position) added during the scan.
    pub sparse: Vec<(u64, u64)>,
    /// Why it stopped.
    pub stop: Stop,
}

fn stopped(end_pos: u64, next_offset: u64, records: u64, sparse: Vec<(u64, u64)>, stop: Stop) -> Scan {
    Scan { end_pos, next_offset, records, sparse, stop }
}

/// Scans frames in `bytes` (a whole segment file, or a window of it starting at file position
/// `base_pos`) from file position `pos`, expecting offsets to continue from `next_offset`.
/// `last_sparse_pos` is the position of the last sparse entry already kept.
/// `visit` sees every valid record frame with its file position.
pub fn scan_frames(
    bytes: &[u8],
    base_pos: u64,
    mut pos: u64,
    mut next_offset: u64,
    mut last_sparse_pos: Option<u64>,
    mut visit: impl FnMut(&FrameView<'_>, u64),
) -> Scan {
    let mut records = 0;
    let mut sparse = Vec::new();
    let end = base_pos + bytes.len() as u64;
    loop {
        if pos == end {
            return stopped(pos, next_offset, records, sparse, Stop::End);
        }
        let at = &bytes[(pos - base_pos) as usize..];
        match check_frame(at) {
            Check::Valid(f) => {
                if f.kind == KIND_SEAL {
                    if f.offset != next_offset {
                        return stopped(pos, next_offset, records, sparse, Stop::Bad { pos, reason: "seal names the wrong next offset" });
                    }
                    if pos + f.frame_len as u64 != end {
                        return stopped(pos, next_offset, records, sparse, Stop::Bad { pos: pos + f.frame_len as u64, reason: "bytes after the seal" });
                    }
                    return stopped(pos, next_offset, records, sparse, Stop::Sealed { next_offset, seal_pos: pos });
                }
                if f.offset != next_offset {
                    return stopped(pos, next_offset, records, sparse, Stop::Bad { pos, reason: "record offset out of sequence" });
                }
                // Offsets never reach the end of u64 in a real journal; a frame claiming the last
                // one (a crafted or damaged header, or verify resuming at such a frame) is damage,
                // not something to count past.
                let Some(after) = next_offset.checked_add(1) else {
                    return stopped(pos, next_offset, records, sparse, Stop::Bad { pos, reason: "record offset at the end of the offset space" });
                };
                if last_sparse_pos.is_none_or(|l| pos >= l + SPARSE_INDEX_INTERVAL_BYTES) {
                    sparse.push((next_offset, pos));
                    last_sparse_pos = Some(pos);
                }
                visit(&f, pos);
                records += 1;
                next_offset = after;
                pos += f.frame_len as u64;
            }
            Check::Incomplete => {
                return stopped(pos, next_offset, records, sparse, Stop::Bad { pos, reason: "frame cut short" });
            }
            Check::Invalid(reason) => {
                return stopped(pos, next_offset, records, sparse, Stop::Bad { pos, reason });
            }
        }
    }
}

/// The verdict on bytes that stop a scan of the last segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tail {
    /// What a crash leaves: a prefix of a frame, maybe followed by zeros. Safe to cut.
    Torn,
    /// Anything else: the bytes changed after they were written. Never cut.
    Corrupt(String),
}

/// Classifies the bytes `bytes[p..]` (p relative to `bytes`, which start at file position
/// `base_pos`), which a scan could not read. Positions in the verdict are file positions.
///
/// Torn iff no valid frame starts anywhere after `p`, and the non-zero bytes from `p` are
/// shorter than the frame they begin (its header is cut, or the length it declares runs past
/// them), and they are not a whole frame by its trailer (a damaged length field).
/// Only frames whose offset is at least `expected_offset` count as following frames, so a
/// frame image carried inside some payload is not mistaken for one.
pub fn classify_tail(bytes: &[u8], base_pos: u64, p: usize, expected_offset: u64, reason: &str) -> Tail {
    let z = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1).max(p);
    if let Some(q) = find_next_valid(bytes, p + 1, expected_offset) {
        return Tail::Corrupt(format!("{reason}; a valid frame follows at byte {}", base_pos + q as u64));
    }
    let nonzero = &bytes[p..z];
    if nonzero.len() < FRAME_HEADER_SIZE {
        return Tail::Torn;
    }
    if is_whole_frame_by_trailer(nonzero) {
        return Tail::Corrupt(format!("{reason}; the frame is whole but its length field is damaged"));
    }
    let declared = u32_at(nonzero, 0) as usize;
    if declared >= FRAME_OVERHEAD && declared > nonzero.len() {
        return Tail::Torn;
    }
    Tail::Corrupt(reason.to_owned())
}

/// The position of the first valid frame starting at or after `from` whose offset is at least
/// `min_offset`, if any.
pub fn find_next_valid(bytes: &[u8], from: usize, min_offset: u64) -> Option<usize> {
    (from..bytes.len().saturating_sub(FRAME_OVERHEAD - 1))
        .find(|&q| matches!(check_frame(&bytes[q..]), Check::Valid(f) if f.offset >= min_offset))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::encode_frame;

    fn frames(n: u64, size: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for i in 0..n {
            encode_frame(&mut out, i, 0, 1, 1, 0, &vec![(i as u8) | 1; size]);
        }
        out
    }

    #[test]
    fn cut_frames_are_torn_and_flipped_frames_are_corrupt() {
        let whole = frames(3, 700);
        let last_start = whole.len() - (700 + FRAME_OVERHEAD);
        for cut in last_start..whole.len() {
            assert_eq!(classify_tail(&whole[..cut], 0, last_start, 2, "x"), Tail::Torn, "cut at {cut}");
            let mut zeroed = whole.clone();
            zeroed[cut..].fill(0);
            assert_eq!(classify_tail(&zeroed, 0, last_start, 2, "x"), Tail::Torn, "zeroed from {cut}");
        }
        for bit in 0..(700 + FRAME_OVERHEAD) * 8 {
            let mut b = whole.clone();
            b[last_start + bit / 8] ^= 1 << (bit % 8);
            assert!(matches!(classify_tail(&b, 0, last_start, 2, "x"), Tail::Corrupt(_)), "flip of bit {bit} called torn");
        }
    }

    /// Found by `cargo fuzz run frame` (fuzz/regressions/frame/): a valid record frame whose
    /// offset is u64::MAX, expected there, made the scan's `next_offset += 1` overflow (a
    /// panic with overflow checks, a wrap to 0 without).
    #[test]
    fn a_record_at_the_last_offset_is_damage_not_an_overflow() {
        let bytes: [u8; 38] = [
            0x26, 0x00, 0x00, 0x00, 0xa6, 0x1c, 0x48, 0xe5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0xff, 0x00, 0x00, 0x00, 0x7c, 0x0f, 0xc3, 0xa5,
        ];
        assert!(matches!(check_frame(&bytes), Check::Valid(f) if f.offset == u64::MAX));
        let scan = scan_frames(&bytes, 64, 64, u64::MAX, None, |_, _| panic!("no record is visited"));
        assert_eq!(scan.stop, Stop::Bad { pos: 64, reason: "record offset at the end of the offset space" });
        assert_eq!((scan.records, scan.next_offset, scan.end_pos), (0, u64::MAX, 64));
        // Never a torn tail: the frame is whole, so it is never cut.
        assert!(matches!(classify_tail(&bytes, 0, 0, u64::MAX, "x"), Tail::Corrupt(_)));
    }

    #[test]
    fn damage_followed_by_valid_frames_is_corrupt() {
        let mut b = frames(4, 100);
        b[40] ^= 0xff;
        let scan = scan_frames(&b, 0, 0, 0, None, |_, _| {});
        let Stop::Bad { pos, .. } = scan.stop else { panic!("scan passed damage") };
        assert_eq!(pos, 0);
        assert!(matches!(classify_tail(&b, 0, 0, 0, "x"), Tail::Corrupt(_)));
    }
}
