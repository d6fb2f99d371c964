//! Every bound the state projection enforces, in one place.

/// Characters of a session's first prompt that are kept (the spec's 80).
pub const FIRST_PROMPT_CHARS_MAX: usize = 80;

/// Largest snapshot file read back; a larger one is refused (and the state rebuilt) before
/// anything is allocated for it.
pub const SNAPSHOT_SIZE_BYTES_MAX: u64 = 8 * 1024 * 1024 * 1024;

/// Largest string a snapshot may hold: the largest decoded record payload, since every string
/// in the state came out of one record.
pub const SNAPSHOT_STRING_SIZE_BYTES_MAX: u64 = origin_engine::limits::RECORD_PAYLOAD_DECODED_SIZE_MAX as u64;

/// Decoded records kept while looking for a quote (events of one record are usually close in
/// time, so a few records avoid decoding the same one again and again).
pub const QUOTE_RECORDS_CACHED_MAX: usize = 32;

/// Most items one listing returns, whatever the caller asks for.
pub const LISTING_COUNT_MAX: usize = 10_000;
