//! Frames: `check_frame`, `scan_frames` and `classify_tail` on arbitrary bytes.
//!
//! Input: `[mode, next_offset: 1 byte, tail_pos: 2 bytes, bytes...]`. Mode bit 0 fixes up
//! trailers and CRCs of the frames the length fields chain through (so valid frames are
//! common); bit 1 starts the expected offset at the first frame's own offset; bit 2 scans a
//! window at a non-zero file position (as a live writer's catch-up does).
//!
//! Checks: nothing panics; a `Valid` frame re-encodes to exactly its bytes; a scan visits
//! frames in order with dense offsets, stays inside the bytes, and stops `End` only at the end.
#![no_main]

use libfuzzer_sys::fuzz_target;
use origin_engine::frame::{check_frame, encode_frame, is_whole_frame_by_trailer, Check, FrameView};
use origin_engine::recovery::{classify_tail, find_next_valid, scan_frames, Stop};
use origin_fuzz::{fix_frames, u64_at};

fn reencode(f: &FrameView<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_frame(&mut out, f.offset, f.time_unix_ms, f.kind, f.kind_version, f.flags, f.payload);
    out
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (mode, small_next, tail_pos) = (data[0], data[1], u16::from_le_bytes([data[2], data[3]]));
    let mut bytes = data[4..].to_vec();
    if mode & 1 != 0 {
        fix_frames(&mut bytes, 0);
    }

    // One frame at every position.
    for start in 0..bytes.len() {
        let at = &bytes[start..];
        if let Check::Valid(f) = check_frame(at) {
            assert!(f.frame_len <= at.len());
            assert_eq!(reencode(&f), &at[..f.frame_len], "valid frame at {start} does not re-encode to its bytes");
            assert!(is_whole_frame_by_trailer(&at[..f.frame_len]));
        }
        let _ = is_whole_frame_by_trailer(at);
    }

    let next_offset = if mode & 2 != 0 && bytes.len() >= 16 { u64_at(&bytes, 8) } else { u64::from(small_next) };
    let base_pos: u64 = if mode & 4 != 0 { 64 + u64::from(tail_pos) } else { 0 };
    let end = base_pos + bytes.len() as u64;
    let mut expect_pos = base_pos;
    let mut expect_offset = next_offset;
    let mut visits = 0u64;
    let scan = scan_frames(&bytes, base_pos, base_pos, next_offset, None, |f, pos| {
        assert_eq!(pos, expect_pos, "frames visited out of order");
        assert_eq!(f.offset, expect_offset, "offsets not dense");
        assert_eq!(reencode(f), &bytes[(pos - base_pos) as usize..(pos - base_pos) as usize + f.frame_len]);
        expect_pos += f.frame_len as u64;
        expect_offset = expect_offset.wrapping_add(1);
        visits += 1;
    });
    assert_eq!(scan.records, visits);
    assert_eq!(scan.end_pos, expect_pos);
    assert!(scan.end_pos <= end);
    for w in scan.sparse.windows(2) {
        assert!(w[0].0 < w[1].0 && w[0].1 < w[1].1, "sparse entries do not rise");
    }
    let stop_pos = match scan.stop {
        Stop::End => {
            assert_eq!(scan.end_pos, end, "scan says End before the end");
            None
        }
        Stop::Sealed { seal_pos, .. } => {
            assert_eq!(seal_pos, scan.end_pos);
            None
        }
        Stop::Bad { pos, reason } => {
            assert!(pos <= end);
            Some((pos, reason))
        }
    };
    if let Some((pos, reason)) = stop_pos {
        let rel = (pos - base_pos) as usize;
        let _ = classify_tail(&bytes, base_pos, rel, scan.next_offset, reason);
        let _ = find_next_valid(&bytes, rel + 1, 0);
    }
    // The tail rules at an arbitrary position too.
    let p = (tail_pos as usize).min(bytes.len());
    let _ = classify_tail(&bytes, base_pos, p, next_offset, "fuzz");
});
