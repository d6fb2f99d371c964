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

/// Every tombstone, and for every hidden id the tombstones in force that hide it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tombstones {
    pub(crate) all: BTreeMap<String, StoredTombstone>,
    pub(crate) hidden_by: BTreeMap<String, BTreeSet<String>>,
}

impl Tombstones {
    /// Adds a tombstone (a tombstone id seen before is ignored). Returns the ids that were
    /// visible and are hidden now.
    pub(crate) fn insert(&mut self, t: StoredTombstone) -> Vec<String> {
        if self.all.contains_key(&t.forgotten.tombstone) {
            return Vec::new();
        }
        let mut newly = Vec::new();
        if t.restored.is_none() {
            let f = &t.forgotten;
            for id in f.hidden_entries.iter().chain(&f.hidden_events) {
                let set = self.hidden_by.entry(id.clone()).or_default();
                if set.is_empty() {
                    newly.push(id.clone());
                }
                set.insert(f.tombstone.clone());
            }
        }
        self.all.insert(t.forgotten.tombstone.clone(), t);
        newly
    }

    /// Lifts a tombstone (an unknown or already lifted one changes nothing). Returns the ids
    /// that no other tombstone hides, visible again.
    pub(crate) fn restore(&mut self, r: &Restored) -> Vec<String> {
        let Some(t) = self.all.get_mut(&r.tombstone) else { return Vec::new() };
        if t.restored.is_some() {
            return Vec::new();
        }
        t.restored = Some(r.clone());
        let mut visible = Vec::new();
        let f = &t.forgotten;
        for id in f.hidden_entries.iter().chain(&f.hidden_events) {
            if let Some(set) = self.hidden_by.get_mut(id) {
                if set.remove(&f.tombstone) && set.is_empty() {
                    self.hidden_by.remove(id);
                    visible.push(id.clone());
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
