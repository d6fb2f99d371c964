//! Every bound ingest enforces, in one place.

/// Ingest's read window: a line longer is a "giant", recorded in pieces as it is read and
/// parsed with each JSON string cut to its first 256 KiB (`json::ShortStrings`); when even so
/// it is longer than this it is not parsed, its bytes kept whole in the journal and the mirror,
/// and counted as cut (`origin status` shows it). (4 MiB until 2026-12-06: a prompt sent with
/// a screenshot, its base64 in the line, was never read; a giant was never parsed until
/// 2026-12-07.)
pub const LINE_SIZE_BYTES_MAX: usize = 32 * 1024 * 1024;
/// A line whose events take more than this many bytes in a record (their strings and a fixed
/// [`EVENT_FIXED_BYTES`] each: see [`crate::ingest`], `events_bytes`) gives none of them, and
/// is counted as cut: a record holds one line's events whole, and stores at most 16 MiB.
pub const LINE_EVENTS_BYTES_MAX: usize = 4 * 1024 * 1024;
/// A record's events after which its batch is closed (beside [`BATCH_RAW_BYTES_MAX`] of raw
/// lines): a record holds at most this, plus one line's events, plus its raw lines.
pub const BATCH_EVENTS_BYTES_MAX: usize = 2 * 1024 * 1024;
/// What an event takes in a record beside its strings (numbers, tags, lengths), counted high.
pub const EVENT_FIXED_BYTES: usize = 64;
/// Most bytes of abandoned events' ids a record names (each id and 8 more, counted high):
/// beyond them (a rewind to the beginning of a session of tens of thousands of events), the
/// rest stay current, said as a problem of the run, rather than the record grow past what
/// the journal stores and the file stop there.
pub const SUPERSEDED_BYTES_MAX: usize = 1024 * 1024;
/// An event's text longer than this many characters is cut at ingest, with a marker saying
/// how many characters were cut (the raw line keeps everything).
pub const EVENT_TEXT_CHARS_MAX: usize = 50_000;
/// Of an event's text cut at ingest, the characters kept from its end (the rest of the
/// [`EVENT_TEXT_CHARS_MAX`] from its beginning, the marker between them): what a long tool
/// output says last (a test run's result, a build's errors) stays searchable.
pub const EVENT_TEXT_TAIL_CHARS: usize = 10_000;
/// Raw bytes of lines after which a journal record is closed (or [`BATCH_EVENTS_BYTES_MAX`] of
/// their events). A record holds at most this plus one line (at most [`SPLIT_LINE_BYTES_MIN`]
/// raw, [`LINE_EVENTS_BYTES_MAX`] of events): raw and events together stay below 12 MiB, under
/// the journal's 16 MiB payload limit; a longer line is recorded in pieces of this size.
pub const BATCH_RAW_BYTES_MAX: usize = 2 * 1024 * 1024;
/// A complete line longer than this is recorded as a line longer than a read window is: its
/// bytes but its last [`BATCH_RAW_BYTES_MAX`] in records of that size that end no line, then
/// the rest, with the line's events, in the record that ends it (closed at once: it holds
/// [`BATCH_RAW_BYTES_MAX`] of raw bytes). Whole in one record, a line
/// of incompressible bytes (an image pasted into a prompt, base64 in the line) could be more
/// than a record may store (16 MiB), and every run failed at it.
pub const SPLIT_LINE_BYTES_MIN: usize = 4 * 1024 * 1024;
/// A compressed or exported log larger than this (decompressed) is skipped and reported.
pub const DECODED_LOG_SIZE_BYTES_MAX: u64 = 1024 * 1024 * 1024;
/// Native memory files larger than this are skipped and reported.
pub const MEMORY_FILE_SIZE_BYTES_MAX: u64 = 1024 * 1024;
/// Most log files one source may list (a runaway directory is cut here and reported).
pub const FILES_PER_SOURCE_MAX: usize = 200_000;
/// Deepest directory walk below an agent's folder.
pub const WALK_DEPTH_MAX: usize = 12;
/// The longest id a log line may give (a uuid, a session or thread id, an agent id), in bytes:
/// a line with a longer one is malformed. Real ids are tens of bytes; a longer one is kept (an
/// event whose id the text index cannot hold is stored and left out of search), up to this,
/// since adapters keep ids in the state every record of the file carries (a few of them).
pub const LINE_ID_BYTES_MAX: usize = 64 * 1024;
/// The largest adapter state a record carries, in bytes: a file whose state grows past it is
/// that file's problem, said at every run (ids are bounded, so only a hand-made log gets
/// there; beside the rest a record holds, more would come near what the journal stores).
pub const STATE_BYTES_MAX: usize = 8 * 1024 * 1024;
/// A session's title, project or parent kept by ingest, in characters (a title 20 MB long, in
/// a hand-edited log, made a record more than the journal stores at every run).
pub const SESSION_FIELD_CHARS_MAX: usize = 1_000;
/// The first prompt kept for a session, in characters.
pub const FIRST_PROMPT_CHARS_MAX: usize = 500;
/// A cursor snapshot larger than this is not read (the cursors are rebuilt from the journal),
/// and its body decodes to at most this many bytes.
pub const CURSORS_SNAPSHOT_SIZE_BYTES_MAX: u64 = 1024 * 1024 * 1024;
/// zstd level for raw lines in records and mirrors (level 1: the ingest benchmark showed
/// level 3 costing a third of ingest's CPU for 11% smaller mirrors).
pub const RAW_ZSTD_LEVEL: i32 = 1;

/// The marker appended to a cut text.
pub fn cut_marker(cut_chars: u64) -> String {
    format!(" …[{cut_chars} characters cut at ingest]")
}
