//! Helpers shared by the fuzz targets in `fuzz_targets/`.
//!
//! The engine's formats are guarded by CRCs, which a fuzzer practically never guesses. The
//! "fix-up" helpers below recompute those checksums (and frame trailers) over fuzzer-chosen
//! bytes, so a target can spend part of its inputs on structurally valid data and reach the
//! logic behind the checksums (offset sequencing, seals, torn-tail rules, payload decoding).
//! Which inputs are fixed up is chosen by a mode byte at the start of each input, so the
//! unmodified bytes are fuzzed too.

use std::path::PathBuf;

use origin_engine::frame::{FRAME_OVERHEAD, FRAME_SIZE_MAX, FRAME_TRAILER_MAGIC};
use origin_engine::segment::SEGMENT_HEADER_SIZE;
use origin_ingest::adapter::{Adapter, FileFormat, Line, LogFile, State};
use origin_ingest::source::Source;

/// Little-endian u32 at `at` (caller checks bounds).
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Little-endian u64 at `at` (caller checks bounds).
pub fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Makes every frame from `pos` on pass its trailer and CRC checks, for as long as the length
/// fields chain through `buf` (a length out of range or running past the end stops it).
pub fn fix_frames(buf: &mut [u8], mut pos: usize) {
    while pos + 4 <= buf.len() {
        let len = u32_at(buf, pos) as usize;
        if !(FRAME_OVERHEAD..=FRAME_SIZE_MAX).contains(&len) || pos + len > buf.len() {
            return;
        }
        let end = pos + len;
        buf[end - 4..end].copy_from_slice(&((len as u32) ^ FRAME_TRAILER_MAGIC).to_le_bytes());
        let crc = crc32fast::hash(&buf[pos + 8..end]);
        buf[pos + 4..pos + 8].copy_from_slice(&crc.to_le_bytes());
        pos = end;
    }
}

/// Makes a segment header's CRC match its other 60 bytes (no-op if `buf` is shorter).
pub fn fix_header_crc(buf: &mut [u8]) {
    let n = SEGMENT_HEADER_SIZE as usize;
    if buf.len() >= n {
        let crc = crc32fast::hash(&buf[..n - 4]);
        buf[n - 4..n].copy_from_slice(&crc.to_le_bytes());
    }
}

/// A `LogFile` for a fuzz target (nothing at `path` exists on disk).
pub fn log_file(source: Source, path: &str, format: FileFormat) -> LogFile {
    LogFile { source, path: PathBuf::from(path), key: path.to_owned(), mirror: String::new(), format }
}

/// Feeds `data` to `adapter` as ingest would: the first byte chooses one of `files` (its low
/// bits) and options (its high bits); the rest is split at `\n` into lines, each parsed with
/// one `State` carried from line to line, 1-based line numbers.
///
/// Options: bit 7 round-trips the state through JSON after every fourth line (as it is when
/// stored with a journal record at the end of a batch and read back by a later run); bit 6 calls `begin` first (as every
/// run does; the paths do not exist, so side files are missing); bit 5 numbers lines from a
/// later start (a later run going on in the same file version).
/// Returns the number of lines parsed and how many were malformed.
pub fn run_adapter(adapter: &dyn Adapter, files: &[LogFile], data: &[u8], prepare: impl FnOnce(&LogFile, &mut State, usize)) -> (u64, u64) {
    let Some((&mode, rest)) = data.split_first() else { return (0, 0) };
    let file = &files[(mode as usize & 0x0f) % files.len()];
    let mut state = State::new();
    if mode & 0x40 != 0 {
        adapter.begin(file, &mut state);
    }
    let lines: Vec<&[u8]> = rest.split(|&b| b == b'\n').collect();
    prepare(file, &mut state, lines.len());
    let first: u64 = if mode & 0x20 != 0 { 1000 } else { 1 };
    let (mut parsed, mut malformed) = (0, 0);
    for (i, line) in lines.iter().enumerate() {
        match adapter.parse_line(file, &mut state, line, first + i as u64) {
            Line::Parsed(p) => {
                parsed += 1;
                for e in &p.events {
                    // Every event names its source and the line it came from.
                    assert!(e.id.starts_with(adapter.source().id()), "event id {:?} lacks the source prefix", e.id);
                    assert!(e.line >= first, "event line {} before the first line {first}", e.line);
                }
            }
            Line::Malformed(_) => malformed += 1,
        }
        if mode & 0x80 != 0 && i % 4 == 3 {
            let bytes = serde_json::to_vec(&state).expect("state serializes");
            state = serde_json::from_slice(&bytes).expect("state reads back");
        }
    }
    (parsed, malformed)
}

/// A snapshot file input (`[mode, snapshot bytes…]`, as the `snapshot` and `cursor_snapshot`
/// targets take it): its bytes, with mode bit 0 fixing up the body length and both CRCs of the
/// header (`origin_engine::snapshot`) and, unless mode bit 1 is set, naming the record kinds
/// the target's projection reads (`reads`), so that the body decoder is reached; and the store
/// id and epoch the header names, to expect, so that inputs are not all refused as another
/// store's.
pub fn snapshot_input(data: &[u8], reads: u32) -> Option<(Vec<u8>, origin_engine::StoreId, u64)> {
    use origin_engine::snapshot::SNAPSHOT_HEADER_SIZE as HEADER;
    let (&mode, rest) = data.split_first()?;
    let mut bytes = rest.to_vec();
    if bytes.len() < HEADER {
        return Some((bytes, [0u8; 16], 0));
    }
    if mode & 1 != 0 {
        if mode & 2 == 0 {
            bytes[64..68].copy_from_slice(&reads.to_le_bytes());
        }
        origin_engine::snapshot::set_checksums(&mut bytes);
    }
    let mut store = [0u8; 16];
    store.copy_from_slice(&bytes[16..32]);
    let epoch = u64_at(&bytes, 32);
    Some((bytes, store, epoch))
}
