//! Tombstones: what each forget hides, and which of them a restore has lifted.

use std::collections::{BTreeMap, BTreeSet};

use origin_engine::record::{Forgotten, Restored};

/// A tombstone as recorded, and its restore if it was lifted.
#[derive(Clone, Copy, Debug)]
pub struct TombstoneRef<'a> {
    /// The forget.
    pub forgotten: &'a Forgotten,
    /// Its restore, if it was lifted.
    pub restored: Option<&'a Restored>,
}

/// What a forget of some id would hide now (ids not hidden already), for the one who writes
/// the `Forgotten` record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hides {
    /// Entry versions.
    pub entries: Vec<String>,
    /// Events.
    pub events: Vec<String>,
}

impl Hides {
    /// True if there is nothing left to hide (then nothing is recorded).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.events.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StoredTombstone {
    pub(crate) offset: u64,
    pub(crate) forgotten: Forgotten,
    pub(crate) restored: Option<Restored>,
}

/// Every tombstone; for every hidden id the tombstones in force that hide it; and for every
/// tombstone in force what it hides and its target.
///
/// A tombstone in force hides the ids its record lists and everything its target reaches among
/// the entries known ([`State::reach`](crate::state::State::reach)), which grows as versions
/// arrive: a version written after the forget (a correction or a new entry citing a forgotten
/// event, in another process, racing it) is hidden as one written before it would be.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tombstones {
    pub(crate) all: BTreeMap<String, StoredTombstone>,
    pub(crate) hidden_by: BTreeMap<String, BTreeSet<String>>,
    /// Tombstone in force -> every id it hides.
    pub(crate) hides: BTreeMap<String, BTreeSet<String>>,
    /// Target -> the tombstones in force aimed at it.
    pub(crate) by_target: BTreeMap<String, BTreeSet<String>>,
}

impl Tombstones {
    /// Adds a tombstone (a tombstone id seen before is ignored) hiding, while in force, what
    /// its record lists and `reach`. Returns the ids that were visible and are hidden now.
    pub(crate) fn insert(&mut self, t: StoredTombstone, reach: BTreeSet<String>) -> Vec<String> {
        if self.all.contains_key(&t.forgotten.tombstone) {
            return Vec::new();
        }
        let mut newly = Vec::new();
        if t.restored.is_none() {
            let f = &t.forgotten;
            self.by_target.entry(f.target.clone()).or_default().insert(f.tombstone.clone());
            let listed = f.hidden_entries.iter().chain(&f.hidden_events).cloned();
            newly = self.hide(&f.tombstone, listed.chain(reach));
        }
        self.all.insert(t.forgotten.tombstone.clone(), t);
        newly
    }

    /// Hides `ids` under the tombstone `tombstone` (in force). Returns those that were visible.
    pub(crate) fn hide(&mut self, tombstone: &str, ids: impl IntoIterator<Item = String>) -> Vec<String> {
        let mut newly = Vec::new();
        let hides = self.hides.entry(tombstone.to_owned()).or_default();
        for id in ids {
            if hides.contains(&id) {
                continue;
            }
            let set = self.hidden_by.entry(id.clone()).or_default();
            if set.is_empty() {
                newly.push(id.clone());
            }
            set.insert(tombstone.to_owned());
            hides.insert(id);
        }
        newly
    }

    /// The tombstones in force aimed at `target`.
    pub(crate) fn aimed_at(&self, target: &str) -> impl Iterator<Item = &str> {
        self.by_target.get(target).into_iter().flatten().map(String::as_str)
    }

    /// Lifts a tombstone (an unknown or already lifted one changes nothing). Returns the ids
    /// that no other tombstone hides, visible again.
    pub(crate) fn restore(&mut self, r: &Restored) -> Vec<String> {
        let Some(t) = self.all.get_mut(&r.tombstone) else { return Vec::new() };
        if t.restored.is_some() {
            return Vec::new();
        }
        t.restored = Some(r.clone());
        let target = &t.forgotten.target;
        if let Some(set) = self.by_target.get_mut(target) {
            set.remove(&r.tombstone);
            if set.is_empty() {
                self.by_target.remove(target);
            }
        }
        let mut visible = Vec::new();
        for id in self.hides.remove(&r.tombstone).unwrap_or_default() {
            if let Some(set) = self.hidden_by.get_mut(&id) {
                if set.remove(&r.tombstone) && set.is_empty() {
                    self.hidden_by.remove(&id);
                    visible.push(id);
                }
            }
        }
        visible
    }

    /// The tombstone in force that hides `id` (the smallest tombstone id, if several do).
    pub(crate) fn hidden_by(&self, id: &str) -> Option<&str> {
        self.hidden_by.get(id).and_then(|s| s.iter().next()).map(String::as_str)
    }

    pub(crate) fn get(&self, id: &str) -> Option<TombstoneRef<'_>> {
        self.all.get(id).map(|t| TombstoneRef { forgotten: &t.forgotten, restored: t.restored.as_ref() })
    }
}
