//! Native memory files become entries; a later version of a file gives new versions of changed
//! items (superseding corrections made in Origin), ends removed items and adds new ones.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use origin_engine::record::{Body, EntryVersion, Imported};
use origin_engine::{Journal, NewRecord, Options};
use origin_ingest::{Homes, Ingester};

/// Copies the tree at `from` into `to`.
pub fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The shipped fixtures.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn imported(journal: &Journal) -> Vec<Imported> {
    journal.refresh().expect("refresh");
    let mut out = Vec::new();
    journal
        .read_from(0, |r| {
            if let Ok((_, Body::Imported(b))) = r.decode() {
                out.push(b);
            }
            Ok(ControlFlow::Continue(()))
        })
        .expect("read");
    out
}

#[test]
fn a_later_memory_file_supersedes_changed_items_and_corrections_made_in_origin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("mkdir");
    copy_tree(&fixtures().join("agent-home"), &home);
    let store = dir.path().join("store");
    let journal = Arc::new(Journal::open(store.join("journal"), Options::default()).expect("open"));
    let ing = Ingester::new(journal.clone(), &store, Homes::under(&home)).with_recorded_home("/home/dev");
    ing.run(None, &mut |_| {}).expect("first ingest");

    let first = imported(&journal);
    let claude_md = |v: &[Imported]| -> Vec<Imported> { v.iter().filter(|i| i.path.ends_with("demo-app/CLAUDE.md")).cloned().collect() };
    let v1 = claude_md(&first);
    assert_eq!(v1.len(), 1, "the project CLAUDE.md is imported once");
    assert!(v1[0].entries.iter().all(|e| e.imported && e.supersedes.is_none() && e.root == e.id));
    assert_eq!(v1[0].entries.len(), v1[0].keys.len());
    assert!(v1[0].event.id.starts_with("claude-code:memory:"), "{}", v1[0].event.id);
    assert!(v1[0].entries.iter().all(|e| e.sources[0].event_id == v1[0].event.id), "entries cite the file version");
    let by_text: HashMap<&str, &EntryVersion> = v1[0].entries.iter().map(|e| (e.text.as_str(), e)).collect();
    let tests_item = by_text.iter().find(|(t, _)| t.contains("pnpm vitest run src/server")).map(|(_, e)| *e).expect("test command item");
    let health_item = by_text.iter().find(|(t, _)| t.contains("src/server/index.ts")).map(|(_, e)| *e).expect("health item");

    // Nothing changed: a second run records nothing new.
    ing.run(None, &mut |_| {}).expect("second ingest");
    assert_eq!(imported(&journal).len(), first.len());

    // A person corrects one imported entry in Origin.
    let correction = EntryVersion {
        id: "ent_00000000c0ffee01".into(),
        supersedes: Some(health_item.id.clone()),
        text: "Health routes: see src/server/index.ts (checked by hand).".into(),
        imported: false,
        author: "user@laptop".into(),
        created_unix_ms: health_item.created_unix_ms + 1,
        ..health_item.clone()
    };
    journal.append(vec![NewRecord::new(&Body::Corrected(correction.clone())).expect("encode")]).expect("append correction");

    // The agent's file changes: both items are rewritten.
    copy_tree(&fixtures().join("agent-home-later"), &home);
    ing.run(None, &mut |_| {}).expect("third ingest");
    let all = imported(&journal);
    let v2 = claude_md(&all);
    assert_eq!(v2.len(), 2, "a second version of the file is imported");
    let later = &v2[1];
    assert_eq!(later.entries.len(), 2, "only the two changed items get new versions: {:?}", later.entries);
    let new_tests = later.entries.iter().find(|e| e.text.contains("pnpm test:server")).expect("new test item");
    assert_eq!(new_tests.root, tests_item.root);
    assert_eq!(new_tests.supersedes.as_deref(), Some(tests_item.id.as_str()));
    let new_health = later.entries.iter().find(|e| e.text.contains("health.ts")).expect("new health item");
    assert_eq!(new_health.root, health_item.root);
    assert_eq!(new_health.supersedes.as_deref(), Some(correction.id.as_str()), "the file's new version supersedes the correction");
    assert!(new_health.created_unix_ms > correction.created_unix_ms, "a new version is dated after what it supersedes");
    assert!(later.ended.is_empty());

    // An item removed from the file is ended.
    let path = home.join("demo-app/CLAUDE.md");
    let text = std::fs::read_to_string(&path).expect("read");
    let without: String = text.lines().filter(|l| !l.contains("pnpm test:server")).map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, without).expect("write");
    ing.run(None, &mut |_| {}).expect("fourth ingest");
    let v3 = claude_md(&imported(&journal));
    assert_eq!(v3.len(), 3);
    assert!(v3[2].ended.contains(&tests_item.root), "removed item ended: {:?}", v3[2].ended);
}

/// Logs recorded under another home (`--recorded-home`, as the shipped samples are): the memory
/// an agent keeps by project in its own folder is found by the project's path as the logs
/// write it, with or without the project's folder here. Claude's auto memory lives under the
/// escaped recorded path; Grok's repository memory is matched to the project by name, though
/// the project's folder is not in this home.
#[test]
fn memory_kept_by_project_is_found_for_logs_recorded_under_another_home() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("mkdir");
    copy_tree(&fixtures().join("agent-home"), &home);
    assert!(!home.join("work/weather-api").exists(), "the Grok project's folder is not in the sample home");
    let store = dir.path().join("store");
    let journal = Arc::new(Journal::open(store.join("journal"), Options::default()).expect("open"));
    let ing = Ingester::new(journal.clone(), &store, Homes::under(&home)).with_recorded_home("/home/dev");
    let summary = ing.run(None, &mut |_| {}).expect("ingest");
    assert!(summary.sources.values().all(|r| r.problems.is_empty()), "{summary:?}");
    let all = imported(&journal);
    let auto: Vec<&Imported> = all.iter().filter(|i| i.path.contains("/.claude/projects/-home-dev-demo-app/memory/")).collect();
    assert!(auto.iter().any(|i| i.path.ends_with("project_healthz.md")), "Claude's auto memory: {:?}", all.iter().map(|i| &i.path).collect::<Vec<_>>());
    assert!(auto.iter().flat_map(|i| &i.entries).all(|e| e.project.as_deref() == Some("demo-app")), "{auto:?}");
    let grok: Vec<&Imported> = all.iter().filter(|i| i.path.contains("/.grok/memory/weather-api-7d2f0c1e/")).collect();
    assert!(!grok.is_empty());
    assert!(grok.iter().flat_map(|i| &i.entries).all(|e| e.project.as_deref() == Some("weather-api")), "{grok:?}");
}
