//! Record kinds and their payloads: every write Origin makes (see DESIGN.md, "Records").
//!
//! Each kind has a schema version stored in its frame. A payload change is a new version of
//! its kind; readers keep decoding every version they ever wrote (FORMAT.md, "Records").

use serde::{Deserialize, Serialize};

use crate::segment::StoreId;

/// The kind byte of a record frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RecordKind {
    /// A batch of lines read from one agent log file, with the events parsed from them.
    Ingested = 1,
    /// A new entry (remember).
    Remembered = 2,
    /// A new version of an entry (correct).
    Corrected = 3,
    /// A tombstone (forget).
    Forgotten = 4,
    /// A tombstone lifted (restore).
    Restored = 5,
    /// A version of an agent's native memory file and the entries derived from it.
    Imported = 6,
    /// A hub token created (its hash only).
    TokenCreated = 7,
    /// A hub token revoked.
    TokenRevoked = 8,
    /// A device seen by a hub.
    DeviceSeen = 9,
    /// Opaque bytes written by the journal's own tests, stress command and benchmarks;
    /// projections ignore it.
    Scratch = 250,
}

impl RecordKind {
    /// Every kind, for tables and tests.
    pub const ALL: [RecordKind; 10] = [
        RecordKind::Ingested,
        RecordKind::Remembered,
        RecordKind::Corrected,
        RecordKind::Forgotten,
        RecordKind::Restored,
        RecordKind::Imported,
        RecordKind::TokenCreated,
        RecordKind::TokenRevoked,
        RecordKind::DeviceSeen,
        RecordKind::Scratch,
    ];

    /// The kind for a frame's kind byte.
    pub fn from_u8(b: u8) -> Option<RecordKind> {
        RecordKind::ALL.into_iter().find(|k| *k as u8 == b)
    }

    /// The payload schema version this build writes. Readers decode every version listed in
    /// FORMAT.md ("Records"): `ingested` 1 to 3, every other kind 1.
    pub fn current_version(self) -> u8 {
        match self {
            RecordKind::Ingested => 3,
            _ => 1,
        }
    }

    /// True if this build decodes payloads of this kind at `version`.
    pub fn reads_version(self, version: u8) -> bool {
        match self {
            RecordKind::Ingested => (1..=3).contains(&version),
            _ => version == 1,
        }
    }

    /// Lower-case name, for dumps.
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Ingested => "ingested",
            RecordKind::Remembered => "remembered",
            RecordKind::Corrected => "corrected",
            RecordKind::Forgotten => "forgotten",
            RecordKind::Restored => "restored",
            RecordKind::Imported => "imported",
            RecordKind::TokenCreated => "token_created",
            RecordKind::TokenRevoked => "token_revoked",
            RecordKind::DeviceSeen => "device_seen",
            RecordKind::Scratch => "scratch",
        }
    }
}

/// The fingerprint of the set of record kinds a projection reads (`reads` true for a kind
/// byte): CRC-32 of a 32-byte bitmap, bit `k % 8` of byte `k / 8` set for each kind byte `k`
/// read, and never 0 (a CRC of 0 is written as 1), so that 0 can mean "not named". A
/// projection saved with one set and loaded by a build that reads another (a later build that
/// reads a kind an earlier one passed over) would miss records below its offset: the saved
/// copy names its set, and a copy naming another is rebuilt.
pub fn kinds_read_fingerprint(reads: impl Fn(u8) -> bool) -> u32 {
    let mut bitmap = [0u8; 32];
    for k in 0..=255u8 {
        if reads(k) {
            bitmap[k as usize / 8] |= 1 << (k % 8);
        }
    }
    crc32fast::hash(&bitmap).max(1)
}

/// Where a record received from another store was first written; receiving it twice changes
/// nothing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordOrigin {
    /// The store that wrote it.
    pub store_id: StoreId,
    /// That store's epoch.
    pub epoch: u64,
    /// Its offset there.
    pub offset: u64,
}

/// Who said it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// The person.
    User,
    /// The agent.
    Assistant,
    /// The agent's harness.
    System,
}

/// What an event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventKind {
    /// A message.
    Message,
    /// A tool call.
    ToolUse,
    /// A tool's result.
    ToolResult,
    /// Injected context, reasoning, wrappers.
    Meta,
    /// Harness events.
    System,
    /// A version of a native memory file.
    Memory,
}

/// One event parsed from an agent's log. (`codec::EventSkipped` mirrors its fields, in order,
/// to read past an event without copying it: a field changed here is changed there too, and a
/// test fails until it is.)
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// `<source>:<id in the source>`.
    pub id: String,
    /// When it happened (Unix milliseconds).
    pub time_unix_ms: i64,
    /// Session id.
    pub session: String,
    /// Project (from the record's working directory), if known.
    pub project: Option<String>,
    /// Who said it.
    pub role: Role,
    /// What it is.
    pub kind: EventKind,
    /// Its text, possibly cut to the ingest limit.
    pub text: String,
    /// Characters cut from `text` at ingest (0 if whole).
    pub text_cut_chars: u64,
    /// Working directory.
    pub cwd: Option<String>,
    /// Git branch.
    pub git_branch: Option<String>,
    /// Agent version.
    pub agent_version: Option<String>,
    /// 1-based line in the mirrored file version (or record number for non-line sources).
    pub line: u64,
}

/// A change to a session's properties seen in a batch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionChange {
    /// Session id.
    pub session: String,
    /// Project, if known.
    pub project: Option<String>,
    /// The agent's own title, if it gave one.
    pub title: Option<String>,
    /// The first prompt, if this batch holds it.
    pub first_prompt: Option<String>,
    /// Parent session, for sub-agents.
    pub parent: Option<String>,
}

/// A batch of complete lines read from one agent log file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ingested {
    /// Source id (`claude-code`, `codex`, ...).
    pub source: String,
    /// The original file's path on the device that read it.
    pub path: String,
    /// The mirror's path, relative to the store's `raw/` folder.
    pub mirror: String,
    /// Which version of the file (a rewrite or shrink starts a new one).
    pub file_version: u32,
    /// Byte range of the original file version covered by this batch.
    pub byte_start: u64,
    /// End of that range (exclusive); the file's cursor after this batch.
    pub byte_end: u64,
    /// First line number of the batch (1-based).
    pub line_start: u64,
    /// Line number after the batch's last line.
    pub line_end: u64,
    /// Hash of the file's bytes `[0, byte_end)`, to detect a rewritten beginning.
    pub prefix_hash: u64,
    /// The raw lines, one zstd frame.
    pub raw_zstd: Vec<u8>,
    /// Events parsed from the lines.
    pub events: Vec<Event>,
    /// Session changes seen in the lines.
    pub sessions: Vec<SessionChange>,
    /// Lines that could not be parsed (skipped and counted).
    pub malformed_lines: u64,
    /// Lines not parsed for their length (over the 32 MiB line limit even with their long
    /// strings cut; kept whole in the raw bytes), or whose events are more than a record
    /// holds; counted.
    pub cut_lines: u64,
    /// The adapter's state for this file after the batch (JSON), so the next batch of this
    /// file, in any process, parses on from where this one stopped.
    pub state: Vec<u8>,
    /// Events its agent abandoned, as the batch's file says (a turn rewound or rolled back):
    /// kept and found by id, no longer current; applied after this record's own events, and
    /// lifted for an event a later record brings again. Written from `ingested` version 3
    /// (outside the struct's serde form, which version 1 records are); empty before.
    #[serde(skip)]
    pub superseded: Vec<String>,
}

impl Ingested {
    /// What the record says besides its raw lines and events: what a reader that needs
    /// neither (ingest cursors) decodes, without decompressing anything.
    pub fn head(&self) -> IngestedHead {
        let mut cwds: Vec<String> = Vec::new();
        for e in &self.events {
            if let Some(c) = &e.cwd
                && !cwds.contains(c)
            {
                cwds.push(c.clone());
            }
        }
        IngestedHead {
            source: self.source.clone(),
            path: self.path.clone(),
            mirror: self.mirror.clone(),
            file_version: self.file_version,
            byte_start: self.byte_start,
            byte_end: self.byte_end,
            line_start: self.line_start,
            line_end: self.line_end,
            prefix_hash: self.prefix_hash,
            sessions: self.sessions.clone(),
            malformed_lines: self.malformed_lines,
            cut_lines: self.cut_lines,
            state: self.state.clone(),
            event_count: self.events.len() as u64,
            cwds,
            raw_zstd_size: self.raw_zstd.len() as u64,
        }
    }
}

/// The fields of an [`Ingested`] record other than its raw lines and events, and two
/// summaries of those: how many events, and their distinct working directories.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IngestedHead {
    /// See [`Ingested::source`].
    pub source: String,
    /// See [`Ingested::path`].
    pub path: String,
    /// See [`Ingested::mirror`].
    pub mirror: String,
    /// See [`Ingested::file_version`].
    pub file_version: u32,
    /// See [`Ingested::byte_start`].
    pub byte_start: u64,
    /// See [`Ingested::byte_end`].
    pub byte_end: u64,
    /// See [`Ingested::line_start`].
    pub line_start: u64,
    /// See [`Ingested::line_end`].
    pub line_end: u64,
    /// See [`Ingested::prefix_hash`].
    pub prefix_hash: u64,
    /// See [`Ingested::sessions`].
    pub sessions: Vec<SessionChange>,
    /// See [`Ingested::malformed_lines`].
    pub malformed_lines: u64,
    /// See [`Ingested::cut_lines`].
    pub cut_lines: u64,
    /// See [`Ingested::state`].
    pub state: Vec<u8>,
    /// Number of events.
    pub event_count: u64,
    /// The distinct working directories of the events, in order of first appearance.
    pub cwds: Vec<String>,
    /// Size of the raw lines' zstd frame (what the record adds to its mirror).
    pub raw_zstd_size: u64,
}

/// The three kinds of entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EntryKind {
    /// What happened: a decision and why.
    Memory,
    /// A stable fact.
    Knowledge,
    /// The user's preferences, methods, goals, or boundaries.
    Cognition,
}

/// An event an entry cites, with the quote it cites from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Citation {
    /// The event id.
    pub event_id: String,
    /// The quote, if one was given.
    pub quote: Option<String>,
}

/// One version of an entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EntryVersion {
    /// This version's id (`ent_...`).
    pub id: String,
    /// The entry's first version.
    pub root: String,
    /// The version this one corrects.
    pub supersedes: Option<String>,
    /// Kind.
    pub kind: EntryKind,
    /// The statement.
    pub text: String,
    /// 0 to 1.
    pub confidence: f64,
    /// Project, if any.
    pub project: Option<String>,
    /// `<agent>@<device>` or `user@<device>`.
    pub author: String,
    /// When this version was written (Unix milliseconds).
    pub created_unix_ms: i64,
    /// When it starts to hold, if known.
    pub valid_from_unix_ms: Option<i64>,
    /// When it stops holding, if known.
    pub valid_to_unix_ms: Option<i64>,
    /// The events it cites.
    pub sources: Vec<Citation>,
    /// Derived from an agent's own memory file.
    pub imported: bool,
}

/// A forget: what it hides is computed when it is written, so replay never depends on later
/// state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forgotten {
    /// `tmb_...`.
    pub tombstone: String,
    /// The entry or event id the user asked to forget.
    pub target: String,
    /// The user's reason.
    pub reason: String,
    /// Who wrote it.
    pub author: String,
    /// When (Unix milliseconds).
    pub time_unix_ms: i64,
    /// Entry versions hidden.
    pub hidden_entries: Vec<String>,
    /// Events hidden.
    pub hidden_events: Vec<String>,
}

/// A tombstone lifted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restored {
    /// The tombstone.
    pub tombstone: String,
    /// Who lifted it.
    pub author: String,
    /// When (Unix milliseconds).
    pub time_unix_ms: i64,
}

/// Whose memory file it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemoryScope {
    /// The user's own, for every project.
    User,
    /// One project's.
    Project,
}

/// A version of an agent's native memory file and the entries derived from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Imported {
    /// Source id.
    pub source: String,
    /// The file's path.
    pub path: String,
    /// User or project memory.
    pub scope: MemoryScope,
    /// The file version as an event of kind memory.
    pub event: Event,
    /// Entries derived from it (new versions of changed items, new items).
    pub entries: Vec<EntryVersion>,
    /// The item key of each entry in `entries` (same order): where the item sits in the file
    /// (heading path and position), so the next version can tell changed items from new ones.
    pub keys: Vec<String>,
    /// Roots of entries whose item the file no longer has.
    pub ended: Vec<String>,
}

/// A hub token created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCreated {
    /// The token's name (the device or agent it is for).
    pub name: String,
    /// SHA-256 of the token; the token itself is never stored.
    pub hash: [u8; 32],
    /// When (Unix milliseconds).
    pub time_unix_ms: i64,
}

/// A hub token revoked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRevoked {
    /// The token's name.
    pub name: String,
    /// When (Unix milliseconds).
    pub time_unix_ms: i64,
}

/// A device seen by a hub.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceSeen {
    /// The device's name.
    pub name: String,
    /// Its store.
    pub store_id: StoreId,
    /// Its epoch.
    pub epoch: u64,
    /// When (Unix milliseconds).
    pub time_unix_ms: i64,
}

/// A decoded record payload.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// See [`Ingested`].
    Ingested(Ingested),
    /// See [`EntryVersion`].
    Remembered(EntryVersion),
    /// See [`EntryVersion`].
    Corrected(EntryVersion),
    /// See [`Forgotten`].
    Forgotten(Forgotten),
    /// See [`Restored`].
    Restored(Restored),
    /// See [`Imported`].
    Imported(Imported),
    /// See [`TokenCreated`].
    TokenCreated(TokenCreated),
    /// See [`TokenRevoked`].
    TokenRevoked(TokenRevoked),
    /// See [`DeviceSeen`].
    DeviceSeen(DeviceSeen),
    /// Opaque bytes.
    Scratch(Vec<u8>),
}

impl Body {
    /// The record kind of this body.
    pub fn kind(&self) -> RecordKind {
        match self {
            Body::Ingested(_) => RecordKind::Ingested,
            Body::Remembered(_) => RecordKind::Remembered,
            Body::Corrected(_) => RecordKind::Corrected,
            Body::Forgotten(_) => RecordKind::Forgotten,
            Body::Restored(_) => RecordKind::Restored,
            Body::Imported(_) => RecordKind::Imported,
            Body::TokenCreated(_) => RecordKind::TokenCreated,
            Body::TokenRevoked(_) => RecordKind::TokenRevoked,
            Body::DeviceSeen(_) => RecordKind::DeviceSeen,
            Body::Scratch(_) => RecordKind::Scratch,
        }
    }
}
