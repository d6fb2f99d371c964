//! Entries: every version of every root, which version is current, and which lost a fork.

use std::collections::{BTreeMap, BTreeSet};

use origin_engine::record::{EntryKind, EntryVersion};

/// Whether a version is the current one of its entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryStatus {
    /// The current version: nothing supersedes it (and it won its fork, if there was one).
    Active,
    /// Corrected, or lost to a concurrent correction.
    Superseded,
}

impl EntryStatus {
    /// The spec's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryStatus::Active => "active",
            EntryStatus::Superseded => "superseded",
        }
    }
}

/// One version of an entry as the tools show it.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The version as it was written (its own `valid_to`, not the effective one).
    pub version: EntryVersion,
    /// Current or superseded.
    pub status: EntryStatus,
    /// For a superseded version: it lost to a concurrent correction rather than being corrected.
    pub concurrent: bool,
    /// The entry's current version, if this one is superseded.
    pub superseded_by: Option<String>,
    /// For an imported entry whose item its memory file no longer has: when the file version
    /// without it was imported. Applies to versions created at or before that time only (a
    /// correction made afterwards holds again).
    pub ended_unix_ms: Option<i64>,
}

impl Entry {
    /// The version's id.
    pub fn id(&self) -> &str {
        &self.version.id
    }

    /// When it stops holding: its own `valid_to`, or the time its memory file dropped it,
    /// whichever is earlier. This is the `valid_to` the tools report.
    pub fn valid_to_unix_ms(&self) -> Option<i64> {
        match (self.version.valid_to_unix_ms, self.ended_unix_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// True once its validity has ended (`valid_to <= now`): left out of search and listings,
    /// still returned by id.
    pub fn is_expired(&self, now_unix_ms: i64) -> bool {
        self.valid_to_unix_ms().is_some_and(|t| t <= now_unix_ms)
    }
}

/// One line of an entry's history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryItem {
    /// The version's id.
    pub id: String,
    /// The version it corrects.
    pub supersedes: Option<String>,
    /// Who wrote it.
    pub author: String,
    /// When it was written.
    pub created_unix_ms: i64,
    /// Current or superseded.
    pub status: EntryStatus,
    /// Lost to a concurrent correction.
    pub concurrent: bool,
}

/// Which current entries a listing returns. `since` is inclusive, `until` exclusive, both on
/// `created` of the current version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryFilter {
    /// Entries of this kind only.
    pub kind: Option<EntryKind>,
    /// Entries of this project only.
    pub project: Option<String>,
    /// Written at or after this time.
    pub since_unix_ms: Option<i64>,
    /// Written before this time.
    pub until_unix_ms: Option<i64>,
}

impl EntryFilter {
    pub(crate) fn accepts(&self, v: &EntryVersion) -> bool {
        self.kind.is_none_or(|k| k == v.kind)
            && self.project.as_deref().is_none_or(|p| v.project.as_deref() == Some(p))
            && self.since_unix_ms.is_none_or(|t| v.created_unix_ms >= t)
            && self.until_unix_ms.is_none_or(|t| v.created_unix_ms < t)
    }
}

/// A version with the offset of the record that brought it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Stored {
    pub(crate) offset: u64,
    pub(crate) version: EntryVersion,
}

/// The derived view of one root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Root {
    /// Every version id of the root.
    pub(crate) versions: BTreeSet<String>,
    /// The winner among the versions nothing supersedes.
    pub(crate) current: String,
    /// The other versions nothing supersedes: they lost a fork.
    pub(crate) losers: BTreeSet<String>,
}

/// Where a version stands in its root.
pub(crate) struct Standing<'a> {
    pub(crate) status: EntryStatus,
    pub(crate) concurrent: bool,
    pub(crate) superseded_by: Option<&'a str>,
}

/// Every entry version, by id, and the graph of each root.
#[derive(Clone, Debug, Default)]
pub(crate) struct Entries {
    pub(crate) versions: BTreeMap<String, Stored>,
    pub(crate) roots: BTreeMap<String, Root>,
    /// Root -> earliest time an imported memory file dropped its item.
    pub(crate) ended: BTreeMap<String, i64>,
    /// Event id -> versions citing it.
    pub(crate) cited_by: BTreeMap<String, BTreeSet<String>>,
}

impl Entries {
    /// Adds a version; a version id seen before is ignored (the first record wins, so receiving
    /// a record twice changes nothing). Returns true if it was new.
    pub(crate) fn insert(&mut self, offset: u64, v: &EntryVersion) -> bool {
        if self.versions.contains_key(&v.id) {
            return false;
        }
        for c in &v.sources {
            self.cited_by.entry(c.event_id.clone()).or_default().insert(v.id.clone());
        }
        self.roots.entry(v.root.clone()).or_default().versions.insert(v.id.clone());
        self.versions.insert(v.id.clone(), Stored { offset, version: v.clone() });
        self.recompute(&v.root);
        true
    }

    /// Records that a memory file no longer has the item of `root` since `at`. The earliest
    /// time wins, so the order records arrive in does not matter.
    pub(crate) fn end_root(&mut self, root: &str, at: i64) {
        let t = self.ended.entry(root.to_owned()).or_insert(at);
        *t = (*t).min(at);
    }

    /// Recomputes the current version and the fork losers of a root from its versions alone,
    /// so the result does not depend on the order versions arrived in.
    ///
    /// The leaves are the versions no other version of the root supersedes. The winner is the
    /// leaf with the later `created`, then the larger id; every other leaf lost a fork
    /// (`concurrent`). A cycle (only possible in damaged or forged records) leaves no leaf: the
    /// winner is then chosen the same way among all versions, and nothing is concurrent.
    fn recompute(&mut self, root_id: &str) {
        let Entries { versions, roots, .. } = self;
        let Some(root) = roots.get_mut(root_id) else { return };
        let rank = |id: &str| versions.get(id).map(|s| s.version.created_unix_ms);
        let mut superseded: BTreeSet<&str> = BTreeSet::new();
        for id in &root.versions {
            if let Some(s) = versions.get(id).and_then(|v| v.version.supersedes.as_deref()) {
                if s != id && root.versions.contains(s) {
                    superseded.insert(s);
                }
            }
        }
        let leaves: Vec<&String> = root.versions.iter().filter(|id| !superseded.contains(id.as_str())).collect();
        let cycle = leaves.is_empty();
        let pool: Vec<&String> = if cycle { root.versions.iter().collect() } else { leaves };
        // A root exists only once a version was added to it, so the pool is never empty.
        let winner = pool.iter().max_by_key(|id| (rank(id), id.as_str())).map(|s| (*s).clone()).unwrap_or_default();
        let losers: BTreeSet<String> =
            if cycle { BTreeSet::new() } else { pool.iter().filter(|id| ***id != winner).map(|s| (*s).clone()).collect() };
        root.current = winner;
        root.losers = losers;
    }

    pub(crate) fn get(&self, id: &str) -> Option<&Stored> {
        self.versions.get(id)
    }

    pub(crate) fn standing(&self, id: &str) -> Option<Standing<'_>> {
        let s = self.versions.get(id)?;
        let root = self.roots.get(&s.version.root)?;
        Some(if root.current == id {
            Standing { status: EntryStatus::Active, concurrent: false, superseded_by: None }
        } else {
            Standing {
                status: EntryStatus::Superseded,
                concurrent: root.losers.contains(id),
                superseded_by: Some(root.current.as_str()),
            }
        })
    }

    /// When the memory file dropped this version's item, if that applies to it.
    pub(crate) fn ended_for(&self, v: &EntryVersion) -> Option<i64> {
        self.ended.get(&v.root).copied().filter(|t| v.created_unix_ms <= *t)
    }

    /// The tool-facing view of a version.
    pub(crate) fn view(&self, id: &str) -> Option<Entry> {
        let s = self.versions.get(id)?;
        let st = self.standing(id)?;
        Some(Entry {
            version: s.version.clone(),
            status: st.status,
            concurrent: st.concurrent,
            superseded_by: st.superseded_by.map(str::to_owned),
            ended_unix_ms: self.ended_for(&s.version),
        })
    }

    /// Every version of the root of `id` (itself included).
    pub(crate) fn root_of(&self, id: &str) -> Option<&Root> {
        self.roots.get(&self.versions.get(id)?.version.root)
    }

    /// Versions citing an event.
    pub(crate) fn citing(&self, event_id: &str) -> impl Iterator<Item = &str> {
        self.cited_by.get(event_id).into_iter().flatten().map(String::as_str)
    }
}
