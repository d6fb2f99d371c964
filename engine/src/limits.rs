//! Every bound the journal enforces, in one place.
//!
//! Lengths read from disk are checked against these before anything is allocated.

/// Default size at which the active segment is sealed and a new one started.
pub const SEGMENT_SIZE_BYTES_DEFAULT: u64 = 64 * 1024 * 1024;
/// Smallest configurable segment size (tests use small segments to force rolls).
pub const SEGMENT_SIZE_BYTES_MIN: u64 = 4 * 1024;
/// Largest configurable segment size.
pub const SEGMENT_SIZE_BYTES_MAX: u64 = 1024 * 1024 * 1024;

/// Largest payload of one record as stored (after optional compression).
pub const RECORD_PAYLOAD_SIZE_MAX: usize = 16 * 1024 * 1024;
/// Largest payload of one record once decompressed; a stored frame claiming more is corrupt.
pub const RECORD_PAYLOAD_DECODED_SIZE_MAX: usize = 64 * 1024 * 1024;
/// Payloads at least this large are offered to zstd; smaller ones are stored as they are.
pub const COMPRESS_SIZE_BYTES_MIN: usize = 4 * 1024;
/// zstd level used for record payloads (fast; the journal is write-heavy).
pub const COMPRESS_LEVEL: i32 = 1;

/// An `ingested` record's events are compressed in chunks closed once they reach this many
/// encoded bytes, so reading one event decompresses about this much. (64 KiB, then 16 KiB,
/// until 2026-12-04: a search decompresses a chunk per hit for its snippet, and 64 KiB chunks
/// were the largest part of a search's time in process; at 16 KiB still a quarter of its
/// instructions. Each halving cost the journal 1.3-2.4% of its size. Chunks already written keep
/// their size: the chunk table says where each ends.)
pub const EVENT_CHUNK_SIZE_BYTES: usize = 8192;
/// Most event chunks one `ingested` record may hold (a payload of at most 16 MiB stored
/// holds far fewer).
pub const EVENT_CHUNKS_MAX: usize = 1 << 16;

/// Most records one append call may carry.
pub const APPEND_RECORDS_MAX: usize = 65_536;
/// A group commit stops taking queued requests once its batch holds this many bytes;
/// the rest wait for the next round.
pub const GROUP_COMMIT_SIZE_BYTES_MAX: usize = 8 * 1024 * 1024;

/// A sparse index entry is kept at least every this many bytes of segment.
pub const SPARSE_INDEX_INTERVAL_BYTES: u64 = 64 * 1024;
/// Most entries an index file may claim (a 1 GiB segment at the interval above, with room).
pub const SPARSE_INDEX_ENTRIES_MAX: u32 = 1 << 20;

/// Most segments a journal directory may hold (64 TiB at the default size).
pub const SEGMENTS_MAX: usize = 1 << 20;

/// Bytes of a damaged tail kept aside per repair (the rest is counted, not copied).
pub const TORN_TAIL_COPY_SIZE_MAX: u64 = 64 * 1024 * 1024;
