//! What ingest has read, rebuilt from the journal: per file version, where reading stopped;
//! per source, the counters `origin status` shows; per native memory file, its items.
//!
//! Cursors come from the journal, so every process that reads the journal agrees on them, and
//! two processes never ingest the same lines twice. A snapshot of them ([`crate::snapshot`])
//! only says what a prefix of the journal held: the records after it are read as ever.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::ControlFlow;

use origin_engine::codec::IngestedView;
use origin_engine::record::{Body, EntryVersion, IngestedHead, RecordKind};
use origin_engine::Journal;
use serde::{Deserialize, Serialize};

/// Where reading of one log file stopped.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileCursor {
    /// File version (1 for the first; a shrink or a changed beginning starts the next, but an
    /// export, read as growth of what was recorded: see `Ingester::export_as_growth`).
    pub version: u32,
    /// Bytes of the version read so far.
    pub byte_end: u64,
    /// Number the next complete line will have (1-based).
    pub line_end: u64,
    /// CRC32 of the version's first `min(byte_end, 4096)` bytes, to see a rewritten beginning.
    pub prefix_hash: u64,
    /// The adapter's state after the last batch (JSON).
    pub state: Vec<u8>,
    /// The version's mirror path below `raw/` (`<source>/<path>[.v<N>]`).
    pub mirror: String,
    /// Bytes the version's `.zst` mirror holds when it is complete.
    pub mirror_size: u64,
    /// Journal offsets of the version's records, in order (to rebuild the mirror).
    pub offsets: Vec<u64>,
}

/// Counters per source, over everything in the journal.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Distinct log files.
    pub files: u64,
    /// Complete lines read.
    pub lines: u64,
    /// Events.
    pub events: u64,
    /// Lines skipped as malformed.
    pub malformed: u64,
    /// Lines over the length limit (kept raw, not parsed).
    pub cut: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Native memory file versions imported.
    pub memory_versions: u64,
}

/// One item of a native memory file, as last imported.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryItem {
    /// The entry's root.
    pub root: String,
    /// The entry's current version (an Origin correction of it, if one is newer).
    pub current: String,
    /// When the current version was created.
    pub current_created_unix_ms: i64,
    /// The item's text in the file.
    pub text: String,
}

/// One native memory file, as last imported.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryCursor {
    /// Hash of the content last imported.
    pub hash: u64,
    /// Versions imported.
    pub version: u32,
    /// Item key -> item.
    pub items: BTreeMap<String, MemoryItem>,
}

/// The ingest state of a store.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cursors {
    /// The journal offset up to which records have been applied.
    pub read_to: u64,
    /// (source id, file key) -> cursor of its latest version.
    pub files: HashMap<(String, String), FileCursor>,
    /// Source id -> counters.
    pub totals: BTreeMap<String, Totals>,
    /// Memory file path -> its items.
    pub memory: HashMap<String, MemoryCursor>,
    /// Every working directory seen in events (to find project memory files).
    pub cwds: BTreeSet<String>,
    /// Entry root -> memory file path, for imported entries (so corrections update them).
    imported_roots: HashMap<String, (String, String)>,
}

/// True for the record kinds cursors read: `ingested` (where each log file was read to),
/// `imported` and `corrected` (native memory files' items). Their snapshot names this set.
pub fn reads_kind(kind: u8) -> bool {
    matches!(RecordKind::from_u8(kind), Some(RecordKind::Ingested | RecordKind::Imported | RecordKind::Corrected))
}

impl Cursors {
    /// Applies every record after `read_to`.
    pub fn catch_up(&mut self, journal: &Journal) -> origin_engine::Result<()> {
        let from = self.read_to;
        let mut err = None;
        let next = journal.read_from(from, |r| {
            let result = if !reads_kind(r.kind) {
                Ok(())
            } else if r.kind == RecordKind::Ingested as u8 {
                // The head is all cursors need: nothing is decompressed.
                IngestedView::open(r.kind_version, r.payload, r.offset).map(|v| self.ingested(r.offset, v.head()))
            } else {
                r.decode().map(|(_, body)| self.apply(r.offset, &body))
            };
            if let Err(e) = result {
                err = Some(e);
                return Ok(ControlFlow::Break(()));
            }
            Ok(ControlFlow::Continue(()))
        })?;
        if let Some(e) = err {
            return Err(e);
        }
        self.read_to = self.read_to.max(next);
        Ok(())
    }

    /// Applies one record (at `offset`).
    pub fn apply(&mut self, offset: u64, body: &Body) {
        self.read_to = self.read_to.max(offset + 1);
        match body {
            Body::Ingested(b) => self.ingested(offset, &b.head()),
            Body::Imported(b) => {
                let totals = self.totals.entry(b.source.clone()).or_default();
                totals.memory_versions += 1;
                let m = self.memory.entry(b.path.clone()).or_default();
                m.version += 1;
                m.hash = memory_hash(b.event.text.as_bytes());
                // Split the version the same way the importer did and match it against the
                // items before, so unchanged items keep their entries wherever they moved.
                let old_items = std::mem::take(&mut m.items);
                let old: Vec<(String, String)> = old_items.iter().map(|(k, i)| (k.clone(), i.text.clone())).collect();
                let new_items = crate::memory::items(&b.event.text);
                let (matches, _) = crate::memory::match_items(&old, &new_items);
                for (item, mt) in new_items.iter().zip(matches) {
                    let kept = match mt {
                        crate::memory::Match::Unchanged(old_key) => old_items.get(&old_key).cloned(),
                        _ => b.keys.iter().position(|k| *k == item.key).and_then(|i| b.entries.get(i)).map(|e| MemoryItem {
                            root: e.root.clone(),
                            current: e.id.clone(),
                            current_created_unix_ms: e.created_unix_ms,
                            text: e.text.clone(),
                        }),
                    };
                    if let Some(kept) = kept {
                        self.imported_roots.insert(kept.root.clone(), (b.path.clone(), item.key.clone()));
                        m.items.insert(item.key.clone(), kept);
                    }
                }
            }
            Body::Corrected(v) => self.corrected(v),
            _ => {}
        }
    }

    fn ingested(&mut self, offset: u64, b: &IngestedHead) {
        self.read_to = self.read_to.max(offset + 1);
        let key = (b.source.clone(), b.path.clone());
        let totals = self.totals.entry(b.source.clone()).or_default();
        let cur = self.files.entry(key).or_insert_with(|| {
            totals.files += 1;
            FileCursor::default()
        });
        if b.file_version != cur.version {
            *cur = FileCursor { version: b.file_version, ..FileCursor::default() };
        }
        cur.byte_end = b.byte_end;
        cur.line_end = b.line_end;
        cur.prefix_hash = b.prefix_hash;
        cur.state = b.state.clone();
        cur.mirror = b.mirror.clone();
        cur.mirror_size += b.raw_zstd_size;
        cur.offsets.push(offset);
        totals.lines += b.line_end - b.line_start;
        totals.events += b.event_count;
        totals.malformed += b.malformed_lines;
        totals.cut += b.cut_lines;
        totals.bytes += b.byte_end - b.byte_start;
        for cwd in &b.cwds {
            if !self.cwds.contains(cwd) {
                self.cwds.insert(cwd.clone());
            }
        }
    }

    /// A correction made in Origin to an imported entry becomes what the file's next version
    /// supersedes (the winner of a fork: later `created`, then larger id).
    fn corrected(&mut self, v: &EntryVersion) {
        let Some((path, key)) = self.imported_roots.get(&v.root) else { return };
        let Some(item) = self.memory.get_mut(path).and_then(|m| m.items.get_mut(key)) else { return };
        if (v.created_unix_ms, &v.id) > (item.current_created_unix_ms, &item.current) {
            item.current = v.id.clone();
            item.current_created_unix_ms = v.created_unix_ms;
        }
    }
}

/// The hash a memory file's content is compared by.
pub fn memory_hash(content: &[u8]) -> u64 {
    (u64::from(crc32fast::hash(content)) << 32) | (content.len() as u64 & 0xffff_ffff)
}
