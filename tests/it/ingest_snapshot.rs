//! Ingest's cursors saved with the offset they reflect: a process that starts from the snapshot
//! reads only the records after it and holds the same cursors as one that read the whole
//! journal; a snapshot that does not check out (damaged, cut, of another store, ahead of the
//! journal) is never used; and lines are still ingested exactly once.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use origin_engine::record::{Body, EntryKind, EntryVersion};
use origin_engine::{Access, Journal, NewRecord, Options};
use origin_ingest::cursor::Cursors;
use origin_ingest::snapshot::{self, SnapshotUse, CURSORS_FILE_NAME};
use origin_ingest::{Homes, Ingester};

use crate::ingest_incremental::{event_counts, line, World};
use crate::ingest_memory::{copy_tree, fixtures};

fn snapshot_path(store: &Path) -> PathBuf {
    store.join("projections").join(CURSORS_FILE_NAME)
}

/// An ingester over `store` reading `home` (the shipped sample home), with the cursor snapshot.
fn ingester(store: &Path, home: &Path) -> Ingester {
    let journal = Journal::open(store.join("journal"), Options::default()).expect("open journal");
    Ingester::new(Arc::new(journal), store, Homes::under(home)).with_recorded_home("/home/dev").with_snapshot(snapshot_path(store))
}

/// An entry version written in Origin (not imported).
fn version(id: &str, root: &str, supersedes: Option<&str>, created_unix_ms: i64) -> EntryVersion {
    EntryVersion {
        id: id.into(),
        root: root.into(),
        supersedes: supersedes.map(str::to_owned),
        kind: EntryKind::Memory,
        text: "corrected in Origin".into(),
        confidence: 1.0,
        project: None,
        author: "user@laptop".into(),
        created_unix_ms,
        valid_from_unix_ms: None,
        valid_to_unix_ms: None,
        sources: Vec::new(),
        imported: false,
    }
}

/// The cursors of the journal at `store`, read from its start.
fn rebuilt(store: &Path) -> Cursors {
    let j = Journal::open(store.join("journal"), Options { access: Access::ReadOnly, ..Options::default() }).expect("open");
    let mut c = Cursors::default();
    c.catch_up(&j).expect("catch up");
    c
}

/// A store with the sample home ingested and its cursors saved: (dir, store, home).
fn sample_store() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("mkdir");
    copy_tree(&fixtures().join("agent-home"), &home);
    let store = dir.path().join("store");
    let ing = ingester(&store, &home);
    ing.run(None, &mut |_| {}).expect("ingest");
    ing.save_snapshot().expect("save");
    (dir, store, home)
}

#[test]
fn cursors_started_from_the_snapshot_equal_cursors_read_from_the_whole_journal() {
    let (_dir, store, home) = sample_store();
    let saved_to = rebuilt(&store).read_to;
    assert!(saved_to > 0);
    // Nothing new: the snapshot is loaded and nothing follows it.
    let ing = ingester(&store, &home);
    let cursors = ing.cursors().expect("cursors");
    assert_eq!(ing.snapshot_use(), Some(SnapshotUse::Loaded { read_to: saved_to }));
    assert!(!cursors.files.is_empty() && !cursors.memory.is_empty() && !cursors.cwds.is_empty(), "the sample home fills every part");
    assert_eq!(cursors, rebuilt(&store));

    // Records written after the snapshot (by another handle: a correction of an imported
    // entry, then a later version of the memory files and new log lines) are read from it.
    let journal = Journal::open(store.join("journal"), Options::default()).expect("open");
    let imported = cursors.memory.values().flat_map(|m| m.items.values()).next().expect("an imported item").clone();
    let correction = version("ent_00000000c0ffee02", &imported.root, Some(&imported.current), imported.current_created_unix_ms + 1);
    journal.append(vec![NewRecord::new(&Body::Corrected(correction)).expect("encode")]).expect("append correction");
    drop(journal);
    copy_tree(&fixtures().join("agent-home-later"), &home);
    let next = ingester(&store, &home);
    next.run(None, &mut |_| {}).expect("ingest the later home");
    assert_eq!(next.snapshot_use(), Some(SnapshotUse::Loaded { read_to: saved_to }));
    let after = next.cursors().expect("cursors");
    assert!(after.read_to > saved_to);
    assert_eq!(after, rebuilt(&store), "started from the snapshot, then caught up: the same cursors as a full read");
    assert!(
        after.memory.values().flat_map(|m| m.items.values()).any(|i| i.root == imported.root && i.current != imported.current),
        "the correction after the snapshot reached the cursors"
    );

    // Saved again, the next process starts where this one ended.
    next.save_snapshot().expect("save");
    let third = ingester(&store, &home);
    assert_eq!(third.cursors().expect("cursors"), after);
    assert_eq!(third.snapshot_use(), Some(SnapshotUse::Loaded { read_to: after.read_to }));
}

#[test]
fn a_restart_from_the_snapshot_reads_only_new_lines_and_each_once() {
    let w = World::new();
    let snap = snapshot_path(&w.store());
    let with_snapshot = || w.ingester().with_snapshot(snap.clone());
    std::fs::write(w.log("a.jsonl"), format!("{}\n{}\n", line("u1", "one"), line("u2", "two"))).expect("write");
    let first = with_snapshot();
    first.run(None, &mut |_| {}).expect("ingest");
    assert_eq!(first.snapshot_use(), Some(SnapshotUse::Missing));
    first.save_snapshot().expect("save");
    drop(first);

    let mut text = std::fs::read_to_string(w.log("a.jsonl")).expect("read");
    text.push_str(&format!("{}\n", line("u3", "three")));
    std::fs::write(w.log("a.jsonl"), text).expect("write");
    let second = with_snapshot();
    let summary = second.run(None, &mut |_| {}).expect("ingest");
    assert!(matches!(second.snapshot_use(), Some(SnapshotUse::Loaded { .. })));
    let run = &summary.sources["claude-code"];
    assert_eq!((run.lines, run.events), (1, 1), "only the new line is read: {run:?}");
    let counts = event_counts(&w.store());
    assert_eq!(counts.len(), 3, "{counts:?}");
    assert!(counts.values().all(|&n| n == 1), "every event once: {counts:?}");
    // And a third process, started from a snapshot saved before the second ran, reads the
    // second's record from the journal instead of reading the line again.
    let third = with_snapshot();
    let summary = third.run(None, &mut |_| {}).expect("ingest");
    assert_eq!(summary.sources["claude-code"].lines, 0);
    assert_eq!(event_counts(&w.store()).values().sum::<usize>(), 3);
}

#[test]
fn a_snapshot_that_does_not_check_out_is_rebuilt_from_the_journal() {
    let (dir, store, home) = sample_store();
    let path = snapshot_path(&store);
    let good = std::fs::read(&path).expect("read snapshot");
    let full = rebuilt(&store);
    let check = |bytes: &[u8], why: &str| {
        std::fs::write(&path, bytes).expect("write");
        let ing = ingester(&store, &home);
        assert_eq!(ing.cursors().expect("cursors"), full, "{why}");
        match ing.snapshot_use() {
            Some(SnapshotUse::Rejected { reason }) => reason,
            other => panic!("{why}: {other:?}"),
        }
    };
    // Damaged: in the header, in the body.
    for at in [3, 20, 45, 70, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x10;
        check(&bad, &format!("byte {at} flipped"));
    }
    // Cut short, or longer than written.
    check(&good[..good.len() - 1], "cut by a byte");
    check(&good[..40], "cut in the header");
    check(&[good.clone(), vec![0]].concat(), "a byte more");
    // Of another store.
    let (_other_dir, other_store, _) = sample_store();
    let foreign = std::fs::read(snapshot_path(&other_store)).expect("read");
    let reason = check(&foreign, "of another store");
    assert!(reason.contains("another store"), "{reason}");
    // Ahead of the journal: saved from a copy that went on, given to the store as it was.
    let behind = dir.path().join("behind");
    std::fs::create_dir_all(&behind).expect("mkdir");
    copy_tree(&store, &behind);
    let on = ingester(&store, &home);
    let j = Journal::open(store.join("journal"), Options::default()).expect("open");
    let later = version("ent_00000000000000aa", "ent_00000000000000aa", None, 1);
    j.append(vec![NewRecord::new(&Body::Corrected(later)).expect("encode")]).expect("append");
    drop(j);
    on.save_snapshot().expect("save");
    let ahead = std::fs::read(&path).expect("read");
    std::fs::write(snapshot_path(&behind), &ahead).expect("write");
    let ing = ingester(&behind, &home);
    assert_eq!(ing.cursors().expect("cursors"), rebuilt(&behind));
    match ing.snapshot_use() {
        Some(SnapshotUse::Rejected { reason }) => assert!(reason.contains("journal ends"), "{reason}"),
        other => panic!("a snapshot ahead of the journal: {other:?}"),
    }
    // The good one is used again.
    std::fs::write(&path, &good).expect("write");
    let ing = ingester(&store, &home);
    ing.cursors().expect("cursors");
    assert!(matches!(ing.snapshot_use(), Some(SnapshotUse::Loaded { .. })));
}

#[test]
fn every_damaged_byte_and_every_cut_of_a_cursor_snapshot_is_refused() {
    let (_dir, store, _home) = sample_store();
    let j = Journal::open(store.join("journal"), Options { access: Access::ReadOnly, ..Options::default() }).expect("open");
    let good = std::fs::read(snapshot_path(&store)).expect("read");
    assert_eq!(snapshot::decode(&good, j.store_id(), j.epoch()).expect("the saved snapshot decodes").0, rebuilt(&store));
    for i in 0..good.len() {
        for bit in [0x01u8, 0x80] {
            let mut bad = good.clone();
            bad[i] ^= bit;
            assert!(snapshot::decode(&bad, j.store_id(), j.epoch()).is_err(), "bit {bit:#x} of byte {i} flipped was accepted");
        }
    }
    for len in 0..good.len() {
        assert!(snapshot::decode(&good[..len], j.store_id(), j.epoch()).is_err(), "cut to {len} bytes was accepted");
    }
    let mut other_epoch = j.epoch().wrapping_add(1);
    if other_epoch == j.epoch() {
        other_epoch = 0;
    }
    assert!(snapshot::decode(&good, j.store_id(), other_epoch).is_err(), "another epoch was accepted");
}
