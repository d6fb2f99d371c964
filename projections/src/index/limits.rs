//! Every bound the text index enforces, in one place.
//!
//! Lengths read from a segment file are checked against these before anything is allocated.

/// Largest term kept, in bytes; a longer word is cut at a character boundary below this, the
/// same way in documents and queries, so it still matches itself.
pub const TERM_SIZE_BYTES_MAX: usize = 128;
/// Positions indexed per document; tokens after this many are not indexed.
pub const DOC_TOKENS_MAX: u32 = 1 << 20;
/// Largest `source` or `project` string a document's metadata may carry.
pub const META_STRING_SIZE_BYTES_MAX: usize = 4096;
/// Most documents in one segment (the in-memory one and each on-disk one).
pub const SEGMENT_DOCS_MAX: u32 = 1 << 26;
/// Largest segment file accepted (a sanity bound on lengths read from a footer).
pub const SEGMENT_SIZE_BYTES_MAX: u64 = 1 << 36;
/// Most segments an index may list in its manifest.
pub const SEGMENTS_MAX: u32 = 4096;

/// Longest query accepted, in bytes: 2,000 characters (the tools' limit) of four bytes each.
pub const QUERY_SIZE_BYTES_MAX: usize = 8000;
/// Most terms one query may look up (a CJK run of n characters is n - 1 bigrams).
pub const QUERY_TERMS_MAX: usize = 128;
/// Most hits one search may return.
pub const SEARCH_LIMIT_MAX: usize = 10_000;

/// Longest snippet, in characters, brackets and ellipses included.
pub const SNIPPET_CHARS_MAX: usize = 200;
/// Characters of context a snippet keeps before its first match, at most.
pub const SNIPPET_CONTEXT_BEFORE_CHARS: usize = 60;
