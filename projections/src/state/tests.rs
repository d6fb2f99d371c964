//! Tests of the state projection: each rule of the module docs, snapshots, and a property test
//! of an incremental projection against a full rebuild.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use origin_engine::record::{
    Body, Citation, EntryKind, EntryVersion, Event, EventKind, Forgotten, Imported, Ingested, MemoryScope, RecordKind, Restored, Role,
    SessionChange,
};
use origin_engine::sim::SimFs;
use origin_engine::{Journal, NewRecord, Options};
use proptest::prelude::*;

use super::snapshot::{SNAPSHOT_FORMAT_VERSION, SNAPSHOT_HEADER_SIZE};
use super::*;

const SOURCE: &str = "claude-code";

fn snap_path() -> PathBuf {
    PathBuf::from("/store/projections").join(SNAPSHOT_FILE_NAME)
}

fn sim_journal(fs: &SimFs) -> Journal {
    Journal::open_with(Arc::new(fs.clone()), Path::new("/store/journal"), Options::default()).expect("journal opens")
}

fn append(j: &Journal, bodies: &[Body]) -> Range<u64> {
    let recs = bodies.iter().map(|b| NewRecord::new(b).expect("encodes")).collect();
    j.append(recs).expect("appends")
}

fn ev(id: &str, session: &str, time: i64, kind: EventKind, role: Role, text: &str) -> Event {
    Event {
        id: format!("{SOURCE}:{id}"),
        time_unix_ms: time,
        session: session.into(),
        project: Some("demo-app".into()),
        role,
        kind,
        text: text.into(),
        text_cut_chars: 0,
        cwd: None,
        git_branch: None,
        agent_version: None,
        line: 1,
    }
}

fn msg(id: &str, session: &str, time: i64, text: &str) -> Event {
    ev(id, session, time, EventKind::Message, Role::User, text)
}

fn eid(id: &str) -> String {
    format!("{SOURCE}:{id}")
}

fn ingested(events: Vec<Event>, sessions: Vec<SessionChange>) -> Body {
    Body::Ingested(Ingested {
        source: SOURCE.into(),
        path: "/p.jsonl".into(),
        mirror: "claude-code/p.jsonl".into(),
        file_version: 1,
        byte_start: 0,
        byte_end: 1,
        line_start: 1,
        line_end: 2,
        prefix_hash: 0,
        raw_zstd: Vec::new(),
        events,
        sessions,
        malformed_lines: 0,
        cut_lines: 0,
        state: Vec::new(),
        superseded: Vec::new(),
    })
}

fn version(id: &str, supersedes: Option<&str>, root: &str, created: i64, cites: &[&str]) -> EntryVersion {
    EntryVersion {
        id: id.into(),
        root: root.into(),
        supersedes: supersedes.map(str::to_owned),
        kind: EntryKind::Knowledge,
        text: format!("statement {id}"),
        confidence: 0.9,
        project: Some("demo-app".into()),
        author: "claude-code@laptop".into(),
        created_unix_ms: created,
        valid_from_unix_ms: None,
        valid_to_unix_ms: None,
        sources: cites.iter().map(|e| Citation { event_id: eid(e), quote: None }).collect(),
        imported: false,
    }
}

fn remember(id: &str, created: i64, cites: &[&str]) -> Body {
    Body::Remembered(version(id, None, id, created, cites))
}

fn correct(id: &str, of: &str, root: &str, created: i64, cites: &[&str]) -> Body {
    Body::Corrected(version(id, Some(of), root, created, cites))
}

fn forget_with(tmb: &str, target: &str, hides: &Hides) -> Body {
    Body::Forgotten(Forgotten {
        tombstone: tmb.into(),
        target: target.into(),
        reason: "the user asked".into(),
        author: "user@laptop".into(),
        time_unix_ms: 1,
        hidden_entries: hides.entries.clone(),
        hidden_events: hides.events.clone(),
    })
}

fn restore(tmb: &str) -> Body {
    Body::Restored(Restored { tombstone: tmb.into(), author: "user@laptop".into(), time_unix_ms: 2 })
}

/// A record of `events` that says `abandoned` were abandoned.
fn abandoning(events: Vec<Event>, abandoned: &[&str]) -> Body {
    let Body::Ingested(mut b) = ingested(events, vec![]) else { unreachable!("ingested") };
    b.superseded = abandoned.iter().map(|e| eid(e)).collect();
    Body::Ingested(b)
}

fn supersede(events: &[&str]) -> Body {
    abandoning(vec![], events)
}

/// Applies bodies to a journal and returns it with the state caught up.
fn build(bodies: &[Body]) -> (SimFs, Journal, State) {
    let fs = SimFs::new(7);
    let j = sim_journal(&fs);
    if !bodies.is_empty() {
        append(&j, bodies);
    }
    let mut s = State::new();
    s.catch_up(&j).unwrap();
    (fs, j, s)
}

fn ids(entries: &[Entry]) -> Vec<&str> {
    entries.iter().map(|e| e.id()).collect()
}

fn forgotten_by<T>(l: Lookup<T>) -> Option<String> {
    match l {
        Lookup::Forgotten { tombstone } => Some(tombstone),
        _ => None,
    }
}

const NOW: i64 = 1_000_000;

#[test]
fn forget_of_entry_hides_its_versions_and_cited_events() {
    let (_fs, j, mut s) = build(&[
        ingested(vec![msg("e1", "s1", 10, "one"), msg("e2", "s1", 20, "two"), msg("e3", "s1", 30, "three")], vec![]),
        remember("ent_a", 100, &["e1"]),
        correct("ent_b", "ent_a", "ent_a", 200, &["e2"]),
        remember("ent_c", 300, &["e3"]),
    ]);
    let plan = s.forget_plan("ent_a").unwrap();
    assert_eq!(plan.entries, ["ent_a", "ent_b"]);
    assert_eq!(plan.events, [eid("e1"), eid("e2")]);
    append(&j, &[forget_with("tmb_1", "ent_a", &plan)]);
    s.catch_up(&j).unwrap();

    for v in ["ent_a", "ent_b"] {
        assert_eq!(forgotten_by(s.entry(v)).as_deref(), Some("tmb_1"), "{v}");
        assert_eq!(s.is_hidden(v), Some("tmb_1"));
    }
    assert!(s.history("ent_b").is_empty());
    assert_eq!(ids(&s.entries(&EntryFilter::default(), NOW, 20)), ["ent_c"]);
    for e in ["e1", "e2"] {
        assert_eq!(forgotten_by(s.event(&eid(e))).as_deref(), Some("tmb_1"));
        assert!(matches!(s.event_body(&j, &eid(e)).unwrap(), Lookup::Forgotten { .. }));
    }
    assert!(matches!(s.event(&eid("e3")), Lookup::Found(_)));
    let listed: Vec<String> = s.session_events(Some(SOURCE), "s1", true, 50).into_iter().map(|m| m.id).collect();
    assert_eq!(listed, [eid("e3")]);
    assert_eq!(s.session(SOURCE, "s1").unwrap().event_count, 1);
    // Everything is hidden already: a second forget has nothing to record.
    assert!(s.forget_plan("ent_b").unwrap().is_empty());
    assert!(s.forget_plan("ent_nope").is_none());
}

#[test]
fn forget_of_event_hides_citing_entries() {
    let (_fs, j, mut s) = build(&[
        ingested(vec![msg("e1", "s1", 10, "one"), msg("e2", "s1", 20, "two")], vec![]),
        remember("ent_a", 100, &["e2"]),
        correct("ent_b", "ent_a", "ent_a", 150, &["e1", "e2"]),
        remember("ent_c", 200, &["e2"]),
    ]);
    assert_eq!(s.citing_entries(&eid("e1")), ["ent_b"]);
    let plan = s.forget_plan(&eid("e1")).unwrap();
    // The whole entry citing it, older version included; not the other events it cites.
    assert_eq!(plan.entries, ["ent_a", "ent_b"]);
    assert_eq!(plan.events, [eid("e1")]);
    append(&j, &[forget_with("tmb_1", &eid("e1"), &plan)]);
    s.catch_up(&j).unwrap();

    assert!(matches!(s.entry("ent_a"), Lookup::Forgotten { .. }));
    assert!(matches!(s.entry("ent_b"), Lookup::Forgotten { .. }));
    assert!(matches!(s.entry("ent_c"), Lookup::Found(_)));
    assert!(matches!(s.event(&eid("e2")), Lookup::Found(_)));
    assert_eq!(ids(&s.entries(&EntryFilter::default(), NOW, 20)), ["ent_c"]);
    assert!(!s.entry_is_listed("ent_b", NOW));
    assert!(s.citing_entries(&eid("e1")).is_empty());
}

#[test]
fn restore_lifts_only_what_no_other_tombstone_hides() {
    let (_fs, j, mut s) = build(&[
        ingested(vec![msg("e1", "s1", 10, "one"), msg("e2", "s1", 20, "two")], vec![]),
        remember("ent_a", 100, &["e1"]),
        remember("ent_b", 110, &["e2"]),
    ]);
    let t1 = Hides { entries: vec!["ent_a".into()], events: vec![eid("e1")] };
    let t2 = Hides { entries: vec!["ent_b".into()], events: vec![eid("e1"), eid("e2")] };
    append(&j, &[forget_with("tmb_1", "ent_a", &t1), forget_with("tmb_2", &eid("e2"), &t2)]);
    s.catch_up(&j).unwrap();
    assert_eq!(s.session(SOURCE, "s1"), None, "every event hidden: the session is not listed");
    assert_eq!(s.is_hidden(&eid("e1")), Some("tmb_1"));

    append(&j, &[restore("tmb_1")]);
    s.catch_up(&j).unwrap();
    assert!(matches!(s.entry("ent_a"), Lookup::Found(_)));
    assert_eq!(s.is_hidden(&eid("e1")), Some("tmb_2"), "still hidden by the other tombstone");
    assert_eq!(s.is_hidden("ent_b"), Some("tmb_2"));
    assert!(s.tombstone("tmb_1").unwrap().restored.is_some());
    assert_eq!(ids(&s.entries(&EntryFilter::default(), NOW, 20)), ["ent_a"]);
    assert_eq!(s.session(SOURCE, "s1"), None);

    append(&j, &[restore("tmb_2"), restore("tmb_2"), restore("tmb_unknown")]);
    s.catch_up(&j).unwrap();
    assert_eq!(s.is_hidden(&eid("e1")), None);
    assert_eq!(ids(&s.entries(&EntryFilter::default(), NOW, 20)), ["ent_b", "ent_a"]);
    assert_eq!(s.session(SOURCE, "s1").unwrap().event_count, 2);
    assert_eq!(s.digest(), State::replay(&j, Until::End).unwrap().digest());
}

/// A forget hides what it was aimed at even when another tombstone hid it first: lifting that
/// other one does not show it (the second forget's record lists only what was still visible).
#[test]
fn a_forget_keeps_hiding_its_target_when_the_tombstone_that_hid_it_first_is_lifted() {
    let (fs, j, mut s) = build(&[
        ingested(vec![msg("e1", "s1", 10, "one"), msg("e2", "s1", 20, "two"), msg("e3", "s1", 30, "three")], vec![]),
        remember("ent_x", 100, &["e1", "e2"]),
    ]);
    let t1 = s.forget_plan(&eid("e1")).unwrap();
    assert_eq!(t1.entries, ["ent_x"]);
    append(&j, &[forget_with("tmb_1", &eid("e1"), &t1)]);
    s.catch_up(&j).unwrap();
    let t2 = s.forget_plan("ent_x").unwrap();
    assert_eq!((t2.entries.len(), t2.events.clone()), (0, vec![eid("e2")]), "only e2 was still visible");
    append(&j, &[forget_with("tmb_2", "ent_x", &t2), restore("tmb_1")]);
    s.catch_up(&j).unwrap();
    assert_eq!(forgotten_by(s.entry("ent_x")).as_deref(), Some("tmb_2"), "the entry forgotten by tmb_2 stays hidden");
    assert_eq!(s.is_hidden(&eid("e1")), Some("tmb_2"), "an event it cites too");
    assert_eq!(s.is_hidden(&eid("e2")), Some("tmb_2"));
    assert!(s.entries(&EntryFilter::default(), NOW, 20).is_empty());
    assert_eq!(s.session(SOURCE, "s1").unwrap().event_count, 1);
    assert_eq!(s.digest(), State::replay(&j, Until::End).unwrap().digest());
    s.save_snapshot(&j, &fs, &snap_path()).unwrap();
    let (loaded, _) = State::open(&j, &fs, &snap_path()).unwrap();
    assert_eq!(loaded.digest(), s.digest());
    append(&j, &[restore("tmb_2")]);
    s.catch_up(&j).unwrap();
    assert!(matches!(s.entry("ent_x"), Lookup::Found(_)));
    assert_eq!(s.session(SOURCE, "s1").unwrap().event_count, 3);
}

/// Versions written by a process that had not seen a forget yet, before or after it in the
/// journal (a correction of the forgotten entry, an entry citing the forgotten event), are
/// hidden by it as if they had been there when it was planned; lifting it shows them.
#[test]
fn versions_racing_a_forget_are_hidden_by_it_whichever_comes_first() {
    let (fs, j, mut s) = build(&[
        ingested(vec![msg("e1", "s1", 10, "one"), msg("e2", "s1", 20, "two"), msg("e3", "s1", 30, "three")], vec![]),
        remember("ent_x", 100, &["e1"]),
        remember("ent_y", 110, &["e3"]),
    ]);
    // Planned before the racing records were applied.
    let of_x = s.forget_plan("ent_x").unwrap();
    let of_e3 = s.forget_plan(&eid("e3")).unwrap();
    append(
        &j,
        &[
            // Before its forget in the journal: a correction citing e2 besides.
            correct("ent_x2", "ent_x", "ent_x", 150, &["e1", "e2"]),
            forget_with("tmb_x", "ent_x", &of_x),
            forget_with("tmb_e3", &eid("e3"), &of_e3),
            // After: another correction of the forgotten entry, and a new entry citing e3.
            correct("ent_x3", "ent_x2", "ent_x", 160, &["e1"]),
            remember("ent_z", 170, &["e2", "e3"]),
        ],
    );
    s.catch_up(&j).unwrap();
    for v in ["ent_x", "ent_x2", "ent_x3"] {
        assert_eq!(s.is_hidden(v), Some("tmb_x"), "{v}");
    }
    assert_eq!(s.is_hidden(&eid("e2")), Some("tmb_x"), "cited by a version of the forgotten entry");
    assert_eq!(s.is_hidden("ent_z"), Some("tmb_e3"), "cites the forgotten event");
    assert_eq!(s.is_hidden("ent_y"), Some("tmb_e3"));
    assert!(s.entries(&EntryFilter::default(), NOW, 20).is_empty());
    assert_eq!(s.session(SOURCE, "s1"), None, "every event hidden");
    let rebuilt = State::replay(&j, Until::End).unwrap();
    assert_eq!(s.digest(), rebuilt.digest());
    s.save_snapshot(&j, &fs, &snap_path()).unwrap();
    assert_eq!(State::open(&j, &fs, &snap_path()).unwrap().0.digest(), s.digest());
    append(&j, &[restore("tmb_x")]);
    s.catch_up(&j).unwrap();
    assert_eq!(s.current_of("ent_x"), Some("ent_x3"));
    assert!(s.entry_is_listed("ent_x3", NOW));
    assert_eq!(s.is_hidden(&eid("e2")), None, "a forget of e3 hides the entries citing it, not what else they cite");
    assert_eq!(s.is_hidden("ent_z"), Some("tmb_e3"));
    assert_eq!(s.session(SOURCE, "s1").unwrap().event_count, 2);
    assert_eq!(s.digest(), State::replay(&j, Until::End).unwrap().digest());
}

#[test]
fn expired_entries_leave_listings_but_are_found_by_id() {
    let mut a = version("ent_a", None, "ent_a", 100, &[]);
    a.valid_to_unix_ms = Some(5_000);
    let (_fs, _j, s) = build(&[Body::Remembered(a), remember("ent_b", 50, &[])]);
    assert_eq!(ids(&s.entries(&EntryFilter::default(), 4_999, 20)), ["ent_a", "ent_b"]);
    assert_eq!(ids(&s.entries(&EntryFilter::default(), 5_000, 20)), ["ent_b"]);
    assert!(!s.entry_is_listed("ent_a", 6_000));
    assert!(s.entry_is_listed("ent_a", 10));
    let found = s.entry("ent_a").found().expect("still there by id");
    assert_eq!(found.status, EntryStatus::Active);
    assert!(found.is_expired(6_000));
    assert_eq!(found.valid_to_unix_ms(), Some(5_000));
}

#[test]
fn listing_filters_by_kind_project_and_time() {
    let mut c = version("ent_c", None, "ent_c", 300, &[]);
    c.kind = EntryKind::Memory;
    c.project = None;
    let (_fs, _j, s) = build(&[remember("ent_a", 100, &[]), remember("ent_b", 200, &[]), Body::Remembered(c)]);
    let f = |kind, project: Option<&str>, since, until| EntryFilter { kind, project: project.map(str::to_owned), since_unix_ms: since, until_unix_ms: until };
    assert_eq!(ids(&s.entries(&f(Some(EntryKind::Memory), None, None, None), NOW, 20)), ["ent_c"]);
    assert_eq!(ids(&s.entries(&f(None, Some("demo-app"), None, None), NOW, 20)), ["ent_b", "ent_a"]);
    assert_eq!(ids(&s.entries(&f(None, None, Some(200), Some(300)), NOW, 20)), ["ent_b"]);
    assert_eq!(ids(&s.entries(&EntryFilter::default(), NOW, 1)), ["ent_c"]);
}

#[test]
fn session_counts_drop_when_events_are_forgotten() {
    let (_fs, j, mut s) = build(&[ingested(
        vec![msg("e1", "s1", 10, "first"), msg("e2", "s1", 20, "second"), msg("e3", "s1", 30, "third")],
        vec![SessionChange { session: "s1".into(), project: None, title: None, first_prompt: Some("first".into()), parent: None }],
    )]);
    let before = s.session(SOURCE, "s1").unwrap();
    assert_eq!((before.event_count, before.started_unix_ms, before.ended_unix_ms), (3, 10, 30));
    assert_eq!(before.prompt.as_deref(), Some("first"));
    let plan = s.forget_plan(&eid("e1")).unwrap();
    append(&j, &[forget_with("tmb_1", &eid("e1"), &plan)]);
    s.catch_up(&j).unwrap();
    let after = s.session(SOURCE, "s1").unwrap();
    assert_eq!((after.event_count, after.started_unix_ms, after.ended_unix_ms), (2, 20, 30));
    assert_eq!(after.prompt, None, "the prompt's event is hidden");
    assert_eq!(s.sessions(&SessionFilter::default(), 10)[0].event_count, 2);
    append(&j, &[restore("tmb_1")]);
    s.catch_up(&j).unwrap();
    assert_eq!(s.session(SOURCE, "s1").unwrap().event_count, 3);
}

#[test]
fn abandoned_events_leave_listings_and_counts_but_are_found_by_id() {
    let prompt = |text: &str| SessionChange { session: "s1".into(), project: None, title: None, first_prompt: Some(text.into()), parent: None };
    let (_fs, j, mut s) = build(&[ingested(
        vec![msg("e1", "s1", 10, "first"), msg("e2", "s1", 20, "second"), ev("e3", "s1", 30, EventKind::ToolUse, Role::Assistant, "tool")],
        vec![prompt("first")],
    )]);
    let listed = |s: &State| s.session_events(Some(SOURCE), "s1", true, 10).iter().map(|m| m.id.clone()).collect::<Vec<_>>();
    // Abandoned: e2 and e3 (e9 is not known yet).
    append(&j, &[supersede(&["e2", "e3", "e9"])]);
    s.catch_up(&j).unwrap();
    let after = s.session(SOURCE, "s1").unwrap();
    assert_eq!((after.event_count, after.started_unix_ms, after.ended_unix_ms), (1, 10, 10));
    assert_eq!(listed(&s), vec![eid("e1")]);
    assert!(s.is_superseded(&eid("e2")) && !s.is_superseded(&eid("e1")));
    assert!(matches!(s.event(&eid("e2")), Lookup::Found(_)), "found by id");
    assert!(matches!(s.event_body(&j, &eid("e3")).unwrap(), Lookup::Found(_)));
    let m = s.event(&eid("e2")).found().unwrap();
    assert!(!s.doc_is_listed(crate::index::Scope::Event, &eid("e2"), m.offset, m.index, NOW), "search leaves it out");
    let m1 = s.event(&eid("e1")).found().unwrap();
    assert!(s.doc_is_listed(crate::index::Scope::Event, &eid("e1"), m1.offset, m1.index, NOW));
    // Cited by a quote no current event says; a quote a current event says too cites that one,
    // the abandoned being more recent.
    assert_eq!(s.find_quote(&j, "second").unwrap().map(|m| m.id), Some(eid("e2")), "cited by a quote only it says");
    assert_eq!(s.find_quote(&j, "s").unwrap().map(|m| m.id), Some(eid("e1")), "a current event first");
    // A forget of an abandoned event, and its restore, change no count.
    let plan = s.forget_plan(&eid("e2")).unwrap();
    append(&j, &[forget_with("tmb_1", &eid("e2"), &plan)]);
    s.catch_up(&j).unwrap();
    assert_eq!(s.session(SOURCE, "s1").unwrap().event_count, 1);
    assert!(matches!(s.event(&eid("e2")), Lookup::Forgotten { .. }));
    assert_eq!(s.find_quote(&j, "second").unwrap(), None, "forgotten: not cited");
    append(&j, &[restore("tmb_1")]);
    s.catch_up(&j).unwrap();
    assert_eq!(s.session(SOURCE, "s1").unwrap().event_count, 1);
    // A record that brings an abandoned event again makes it current (e9, named before it
    // came, too); one that names its own events after them abandons them; abandoning twice
    // changes nothing.
    append(&j, &[ingested(vec![msg("e9", "s1", 40, "late"), msg("e3", "s1", 30, "tool, again")], vec![]), supersede(&["e2"])]);
    append(&j, &[abandoning(vec![msg("e4", "s1", 50, "fourth"), msg("e6", "s1", 55, "fifth")], &["e6"])]);
    s.catch_up(&j).unwrap();
    assert_eq!(listed(&s), vec![eid("e1"), eid("e3"), eid("e9"), eid("e4")]);
    assert!(!s.is_superseded(&eid("e3")) && s.is_superseded(&eid("e6")));
    assert_eq!(s.session(SOURCE, "s1").unwrap().event_count, 4);
    append(&j, &[supersede(&["e3", "e9"])]);
    s.catch_up(&j).unwrap();
    assert_eq!(listed(&s), vec![eid("e1"), eid("e4")]);
    // The first prompt abandoned: the session has none until a record names the one that stands.
    append(&j, &[supersede(&["e1"])]);
    s.catch_up(&j).unwrap();
    let s1 = s.session(SOURCE, "s1").unwrap();
    assert_eq!((s1.event_count, s1.prompt.as_deref()), (1, None));
    append(&j, &[ingested(vec![msg("e5", "s1", 60, "again")], vec![prompt("again")])]);
    s.catch_up(&j).unwrap();
    assert_eq!(s.session(SOURCE, "s1").unwrap().prompt.as_deref(), Some("again"));
    // Every event abandoned: the session is not listed.
    append(&j, &[supersede(&["e4", "e5"])]);
    s.catch_up(&j).unwrap();
    assert_eq!(s.session(SOURCE, "s1"), None);
    let full = State::replay(&j, Until::End).unwrap();
    assert_eq!(full.digest(), s.digest());
}

#[test]
fn sessions_list_newest_activity_first_with_title_and_filters() {
    let change = |session: &str, title: Option<&str>, prompt: Option<&str>| SessionChange {
        session: session.into(),
        project: None,
        title: title.map(str::to_owned),
        first_prompt: prompt.map(str::to_owned),
        parent: None,
    };
    let long = "x".repeat(200);
    let (_fs, _j, s) = build(&[
        ingested(
            vec![msg("a1", "sa", 10, &long), msg("a2", "sa", 50, "later"), msg("b1", "sb", 30, "b")],
            vec![change("sa", None, Some(&long)), change("sb", Some("Old title"), Some("b"))],
        ),
        ingested(vec![msg("b2", "sb", 40, "b again")], vec![change("sb", Some("New title"), None)]),
    ]);
    let all = s.sessions(&SessionFilter::default(), 10);
    let order: Vec<&str> = all.iter().map(|x| x.session.as_str()).collect();
    assert_eq!(order, ["sa", "sb"]);
    assert_eq!(all[0].prompt.as_deref().map(|p| p.chars().count()), Some(80));
    assert_eq!(all[1].title.as_deref(), Some("New title"));
    assert_eq!(all[1].prompt, None, "a titled session shows no prompt");
    assert_eq!(all[1].project.as_deref(), Some("demo-app"));
    let since = SessionFilter { since_unix_ms: Some(45), ..SessionFilter::default() };
    assert_eq!(s.sessions(&since, 10).len(), 1);
    let until = SessionFilter { until_unix_ms: Some(20), ..SessionFilter::default() };
    assert_eq!(s.sessions(&until, 10)[0].session, "sa");
    let other = SessionFilter { source: Some("codex".into()), ..SessionFilter::default() };
    assert!(s.sessions(&other, 10).is_empty());
}

#[test]
fn session_events_list_tools_only_when_asked() {
    let (_fs, _j, s) = build(&[ingested(
        vec![
            msg("e1", "s1", 10, "question"),
            ev("e2", "s1", 20, EventKind::ToolUse, Role::Assistant, "call"),
            ev("e3", "s1", 30, EventKind::ToolResult, Role::System, "result"),
            ev("e4", "s1", 5, EventKind::Meta, Role::System, "context"),
            msg("e5", "s1", 40, "answer"),
        ],
        vec![],
    )]);
    let listed = |tools, limit| s.session_events(None, "s1", tools, limit).into_iter().map(|m| m.id).collect::<Vec<_>>();
    assert_eq!(listed(false, 50), [eid("e1"), eid("e5")]);
    assert_eq!(listed(true, 50), [eid("e4"), eid("e1"), eid("e2"), eid("e3"), eid("e5")]);
    assert_eq!(listed(true, 2), [eid("e4"), eid("e1")]);
}

#[test]
fn fork_winner_is_later_created_then_larger_id_in_any_order() {
    let base = remember("ent_a", 100, &[]);
    let b = correct("ent_b", "ent_a", "ent_a", 200, &[]);
    let c = correct("ent_c", "ent_a", "ent_a", 300, &[]);
    let d = correct("ent_d", "ent_a", "ent_a", 300, &[]);
    let (_f1, _j1, s1) = build(&[base.clone(), b.clone(), c.clone(), d.clone()]);
    let (_f2, _j2, s2) = build(&[base, d, c, b]);
    // The records sit at other offsets, so the digests differ; the answers may not.
    let views = |s: &State| format!("{:?}", ["ent_a", "ent_b", "ent_c", "ent_d"].map(|v| s.entry(v)));
    assert_eq!(views(&s1), views(&s2));
    for s in [&s1, &s2] {
        assert_eq!(s.current_of("ent_b"), Some("ent_d"));
        let d = s.entry("ent_d").found().unwrap();
        assert_eq!((d.status, d.concurrent), (EntryStatus::Active, false));
        for loser in ["ent_b", "ent_c"] {
            let e = s.entry(loser).found().unwrap();
            assert_eq!((e.status, e.concurrent, e.superseded_by.as_deref()), (EntryStatus::Superseded, true, Some("ent_d")));
        }
        let a = s.entry("ent_a").found().unwrap();
        assert_eq!((a.status, a.concurrent), (EntryStatus::Superseded, false));
        let h: Vec<(String, bool)> = s.history("ent_a").into_iter().map(|h| (h.id, h.concurrent)).collect();
        let want = [("ent_a", false), ("ent_b", true), ("ent_c", true), ("ent_d", false)];
        assert_eq!(h, want.map(|(i, c)| (i.to_owned(), c)));
        assert_eq!(ids(&s.entries(&EntryFilter::default(), NOW, 20)), ["ent_d"]);
    }
}

#[test]
fn correcting_a_fork_loser_makes_its_correction_a_contender() {
    let (_fs, _j, s) = build(&[
        remember("ent_a", 100, &[]),
        correct("ent_b", "ent_a", "ent_a", 300, &[]),
        correct("ent_c", "ent_a", "ent_a", 200, &[]),
        correct("ent_d", "ent_c", "ent_a", 400, &[]),
    ]);
    assert_eq!(s.current_of("ent_a"), Some("ent_d"));
    let c = s.entry("ent_c").found().unwrap();
    assert!(!c.concurrent, "corrected, not a fork loser");
    assert!(s.entry("ent_b").found().unwrap().concurrent);
}

#[test]
fn two_journal_handles_correcting_at_once_make_one_fork_with_the_same_winner() {
    let dir = tempfile::tempdir().unwrap();
    let jdir = dir.path().join("journal");
    {
        let j = Journal::open(&jdir, Options::default()).unwrap();
        append(&j, &[remember("ent_a", 100, &[])]);
    }
    let ready = Arc::new(Barrier::new(2));
    let written = Arc::new(Barrier::new(2));
    let handles: Vec<_> = ["ent_p1", "ent_p2"]
        .into_iter()
        .map(|id| {
            let (jdir, ready, written) = (jdir.clone(), ready.clone(), written.clone());
            std::thread::spawn(move || {
                let j = Journal::open(&jdir, Options::default()).unwrap();
                let mut s = State::new();
                s.catch_up(&j).unwrap();
                // What the server checks before correcting: the version named is current.
                let current = s.current_of("ent_a").unwrap().to_owned();
                assert_eq!(current, "ent_a");
                ready.wait();
                append(&j, &[correct(id, &current, "ent_a", 200, &[])]);
                written.wait();
                s.catch_up(&j).unwrap();
                let concurrent: Vec<String> = s.history("ent_a").into_iter().filter(|h| h.concurrent).map(|h| h.id).collect();
                (s.current_of("ent_a").unwrap().to_owned(), concurrent, s.digest())
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    // Same `created`: the larger id wins, in both processes.
    for (current, concurrent, _) in &results {
        assert_eq!(current, "ent_p2");
        assert_eq!(concurrent, &["ent_p1"]);
    }
    assert_eq!(results[0].2, results[1].2);
}

/// Two journal handles (as two processes) on one store: one forgets an entry while the other
/// corrects it, each having checked against the state it had caught up. Whichever record lands
/// first, both handles end hiding every version, the correction included, with the same state.
#[test]
fn two_journal_handles_forgetting_and_correcting_at_once_both_hide_the_correction() {
    for forget_first in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let jdir = dir.path().join("journal");
        {
            let j = Journal::open(&jdir, Options::default()).unwrap();
            append(&j, &[ingested(vec![msg("e1", "s1", 10, "one")], vec![]), remember("ent_a", 100, &["e1"])]);
        }
        let (planned, corrected_first, written) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
        let spawn = |forgets: bool| {
            let (jdir, planned, corrected_first, written) = (jdir.clone(), planned.clone(), corrected_first.clone(), written.clone());
            std::thread::spawn(move || {
                let j = Journal::open(&jdir, Options::default()).unwrap();
                let mut s = State::new();
                s.catch_up(&j).unwrap();
                // What each tool checks first: the entry is known, current and not forgotten.
                let plan = s.forget_plan("ent_a").unwrap();
                assert_eq!(s.current_of("ent_a"), Some("ent_a"));
                planned.wait();
                // The record the test puts second waits for the first.
                let second = forgets != forget_first;
                if second {
                    corrected_first.wait();
                }
                if forgets {
                    append(&j, &[forget_with("tmb_race", "ent_a", &plan)]);
                } else {
                    append(&j, &[correct("ent_b", "ent_a", "ent_a", 200, &["e1"])]);
                }
                if !second {
                    corrected_first.wait();
                }
                written.wait();
                s.catch_up(&j).unwrap();
                (s.is_hidden("ent_a").map(str::to_owned), s.is_hidden("ent_b").map(str::to_owned), s.entries(&EntryFilter::default(), NOW, 20).len(), s.digest())
            })
        };
        let (forgetter, corrector) = (spawn(true), spawn(false));
        let results = [forgetter.join().unwrap(), corrector.join().unwrap()];
        for (a, b, listed, _) in &results {
            assert_eq!((a.as_deref(), b.as_deref(), *listed), (Some("tmb_race"), Some("tmb_race"), 0), "forget first: {forget_first}");
        }
        assert_eq!(results[0].3, results[1].3, "the same state in both");
    }
}

/// On the real file system, a state reads its events from the snapshot it mapped: another
/// handle saving snapshots over it (written aside and renamed, several times) and the file
/// then removed change nothing it answers, and it saves and reloads as before.
#[test]
fn a_state_keeps_reading_the_snapshot_it_loaded_while_others_replace_and_remove_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let j = Journal::open(dir.path().join("journal"), Options::default()).unwrap();
    let snap = dir.path().join("projections").join(SNAPSHOT_FILE_NAME);
    let events: Vec<Event> = (0..300).map(|i| msg(&format!("e{i}"), &format!("s{}", i % 7), i, &format!("text {i}"))).collect();
    append(&j, &[ingested(events, vec![])]);
    let mut a = State::new();
    a.catch_up(&j).unwrap();
    a.save_snapshot(&j, &origin_engine::vfs::OsFs, &snap).unwrap();
    let (mut loaded, opened) = State::open(&j, &origin_engine::vfs::OsFs, &snap).unwrap();
    assert!(matches!(opened.snapshot, SnapshotUse::Loaded { .. }), "{opened:?}");
    let answers = |s: &State| (s.digest(), answers_all(s), s.event(&eid("e123")));
    let before = answers(&loaded);
    // Another handle goes on: more events (one of them again), snapshots saved over the file.
    for round in 0..3 {
        append(&j, &[ingested(vec![msg(&format!("n{round}"), "s1", 1000 + round, "new"), msg("e5", "s2", 2000 + round, "again")], vec![])]);
        a.catch_up(&j).unwrap();
        a.save_snapshot(&j, &origin_engine::vfs::OsFs, &snap).unwrap();
    }
    assert_eq!(answers(&loaded), before);
    std::fs::remove_file(&snap).unwrap();
    assert_eq!(answers(&loaded), before);
    // The loaded state catches up on its own and agrees with the other handle.
    loaded.catch_up(&j).unwrap();
    assert_eq!(loaded.digest(), a.digest());
    assert_eq!(answers_all(&loaded), answers_all(&a));
    loaded.save_snapshot(&j, &origin_engine::vfs::OsFs, &snap).unwrap();
    let (again, _) = State::open(&j, &origin_engine::vfs::OsFs, &snap).unwrap();
    assert_eq!(again.digest(), a.digest());
}

#[test]
fn imported_ended_roots_end_validity_and_leave_listings() {
    let mem = |v: u32, time: i64, entries: Vec<EntryVersion>, ended: Vec<String>| {
        let mut e = ev(&format!("memory:/home/dev/CLAUDE.md#v{v}"), "", time, EventKind::Memory, Role::System, "- a fact");
        e.project = None;
        Body::Imported(Imported {
            source: SOURCE.into(),
            path: "/home/dev/CLAUDE.md".into(),
            scope: MemoryScope::User,
            event: e,
            keys: entries.iter().map(|x| format!("#{}", x.id)).collect(),
            entries,
            ended,
        })
    };
    let imp = |id: &str, of: Option<&str>, root: &str, created: i64| {
        let mut v = version(id, of, root, created, &[]);
        v.imported = true;
        v
    };
    let (_fs, j, mut s) = build(&[
        mem(1, 1_000, vec![imp("ent_x", None, "ent_x", 1_000), imp("ent_y", None, "ent_y", 1_000)], vec![]),
        mem(2, 2_000, vec![], vec!["ent_x".into()]),
    ]);
    let x = s.entry("ent_x").found().expect("found by id");
    assert!(x.version.imported);
    assert_eq!((x.ended_unix_ms, x.valid_to_unix_ms()), (Some(2_000), Some(2_000)));
    assert_eq!(ids(&s.entries(&EntryFilter::default(), NOW, 20)), ["ent_y"]);
    assert!(s.session_events(None, "", true, 10).is_empty(), "a memory file version belongs to no session");
    let body = s.event_body(&j, &eid("memory:/home/dev/CLAUDE.md#v1")).unwrap().found().unwrap();
    assert_eq!((body.kind, body.text.as_str()), (EventKind::Memory, "- a fact"));

    // A correction made in Origin after the end holds again.
    append(&j, &[correct("ent_x2", "ent_x", "ent_x", 3_000, &[])]);
    s.catch_up(&j).unwrap();
    assert_eq!(s.entry("ent_x2").found().unwrap().valid_to_unix_ms(), None);
    assert_eq!(ids(&s.entries(&EntryFilter::default(), NOW, 20)), ["ent_x2", "ent_y"]);
}

#[test]
fn reingested_event_replaces_the_earlier_with_the_same_id() {
    let (_fs, j, s) = build(&[
        ingested(vec![msg("e1", "s1", 10, "old text"), msg("e2", "s1", 11, "other")], vec![]),
        ingested(vec![msg("e1", "s1", 20, "new text")], vec![]),
    ]);
    assert_eq!(s.session(SOURCE, "s1").unwrap().event_count, 2);
    let e = s.event_body(&j, &eid("e1")).unwrap().found().unwrap();
    assert_eq!((e.text.as_str(), e.session.as_str(), e.time_unix_ms), ("new text", "s1", 20));
    assert!(matches!(s.event_body(&j, &eid("nope")).unwrap(), Lookup::Unknown));
}

/// A later event with the id of one held in another session is a copy (a resumed Claude Code
/// session repeats the lines of the one it resumes, ids and times as they were): the event
/// stays where it was first said, with its session's count, start and title; the session of
/// the copy counts only its own events. In whichever order later records come, and from a
/// loaded snapshot alike.
#[test]
fn an_event_copied_into_another_session_stays_in_the_first() {
    let resumed = ingested(
        vec![msg("e1", "s2", 10, "first question"), msg("e2", "s2", 11, "first answer"), msg("e3", "s2", 40, "a new question")],
        vec![SessionChange { session: "s2".into(), project: None, title: None, first_prompt: Some("first question".into()), parent: None }],
    );
    let (fs, j, s) = build(&[
        ingested(
            vec![msg("e1", "s1", 10, "first question"), msg("e2", "s1", 11, "first answer")],
            vec![SessionChange { session: "s1".into(), project: None, title: Some("The first session".into()), first_prompt: None, parent: None }],
        ),
        resumed.clone(),
    ]);
    let check = |s: &State| {
        let s1 = s.session(SOURCE, "s1").unwrap();
        assert_eq!((s1.event_count, s1.title.as_deref(), s1.started_unix_ms), (2, Some("The first session"), 10));
        let s2 = s.session(SOURCE, "s2").unwrap();
        assert_eq!((s2.event_count, s2.started_unix_ms), (1, 40));
        assert_eq!(s.event_body(&j, &eid("e1")).unwrap().found().unwrap().session, "s1");
        let listed = |session: &str| s.session_events(None, session, false, 50).into_iter().map(|m| m.id).collect::<Vec<_>>();
        assert_eq!((listed("s1"), listed("s2")), (vec![eid("e1"), eid("e2")], vec![eid("e3")]));
    };
    check(&s);
    // The copy read again (a second run, another process): still a copy.
    append(&j, &[resumed]);
    let (mut s, _) = State::open(&j, &fs, &snap_path()).unwrap();
    check(&s);
    // From a loaded snapshot: the events held in its file stay too.
    s.save_snapshot(&j, &fs, &snap_path()).unwrap();
    let (mut loaded, opened) = State::open(&j, &fs, &snap_path()).unwrap();
    assert!(matches!(opened.snapshot, SnapshotUse::Loaded { .. }), "{opened:?}");
    append(&j, &[ingested(vec![msg("e2", "s3", 60, "first answer")], vec![])]);
    loaded.catch_up(&j).unwrap();
    s.catch_up(&j).unwrap();
    check(&loaded);
    assert!(loaded.session(SOURCE, "s3").is_none(), "a session of copies only is not listed");
    assert_eq!(loaded.digest(), State::replay(&j, Until::End).unwrap().digest());
    assert_eq!(s.digest(), loaded.digest());
}

/// The events of a loaded snapshot are read from its file, not copied into memory; one
/// ingested again after it is replaced there (its number kept), new ones follow it, and a
/// snapshot saved from that state and loaded again holds the same answers.
#[test]
fn events_of_a_loaded_snapshot_stay_in_its_file_and_are_replaced_and_added_to_in_memory() {
    let (fs, j, s) = build(&[
        ingested(vec![msg("e1", "s1", 10, "one"), msg("e2", "s1", 11, "two"), msg("e3", "s2", 12, "three")], vec![]),
    ]);
    s.save_snapshot(&j, &fs, &snap_path()).unwrap();
    let (mut s, opened) = State::open(&j, &fs, &snap_path()).unwrap();
    assert!(matches!(opened.snapshot, SnapshotUse::Loaded { .. }), "{opened:?}");
    let heap = |s: &State, part: &str| s.heap_bytes().iter().filter(|(p, _)| *p == part).map(|(_, b)| b).sum::<usize>();
    assert_eq!((heap(&s, "event ids' text"), heap(&s, "event locators")), (0, 0));
    let before: Vec<String> = s.events.ids().map(str::to_owned).collect();
    // e2 again, later (a version of its file read again); e3 copied into another session,
    // where it does not move; e4 new.
    append(&j, &[ingested(vec![msg("e2", "s1", 30, "two again"), msg("e3", "s1", 32, "three"), msg("e4", "s1", 31, "four")], vec![])]);
    s.catch_up(&j).unwrap();
    assert_eq!(s.events.len(), 4);
    assert_eq!(s.events.ids().take(3).collect::<Vec<_>>(), before);
    assert_eq!(s.events.find(&eid("e2")), Some(1));
    assert_eq!((s.events.rec(1).time_unix_ms, s.events.rec(0).time_unix_ms), (30, 10));
    assert_eq!(s.events.id(3), eid("e4"));
    assert_eq!(s.event_body(&j, &eid("e2")).unwrap().found().unwrap().text, "two again");
    let listed = |s: &State, session: &str| s.session_events(None, session, false, 50).into_iter().map(|m| m.id).collect::<Vec<_>>();
    assert_eq!(listed(&s, "s1"), [eid("e1"), eid("e2"), eid("e4")]);
    assert_eq!(listed(&s, "s2"), [eid("e3")]);
    let full = State::replay(&j, Until::End).unwrap();
    assert_eq!(s.digest(), full.digest());
    // Saved with a snapshot's events and the later ones, and loaded again.
    s.save_snapshot(&j, &fs, &snap_path()).unwrap();
    let (again, _) = State::open(&j, &fs, &snap_path()).unwrap();
    assert_eq!(again.digest(), full.digest());
    assert_eq!((listed(&again, "s1"), listed(&again, "s2")), (listed(&s, "s1"), listed(&s, "s2")));
}

/// A session id that two sources use: without a source, its events from both are listed
/// together in order of time; with one, only that source's.
#[test]
fn session_events_of_an_id_in_two_sources_are_merged_in_time_order() {
    let mut other = ingested(vec![msg("c1", "s1", 15, "b"), msg("c2", "s1", 35, "d")], vec![]);
    if let Body::Ingested(b) = &mut other {
        b.source = "codex".into();
        for e in &mut b.events {
            e.id = e.id.replacen(SOURCE, "codex", 1);
        }
    }
    let (_fs, _j, s) = build(&[ingested(vec![msg("e1", "s1", 10, "a"), msg("e3", "s1", 30, "c"), msg("e5", "s1", 50, "e")], vec![]), other]);
    let listed = |source: Option<&str>| s.session_events(source, "s1", false, 50).into_iter().map(|m| m.id).collect::<Vec<_>>();
    assert_eq!(listed(None), [eid("e1"), "codex:c1".into(), eid("e3"), "codex:c2".into(), eid("e5")]);
    assert_eq!(listed(Some("codex")), ["codex:c1", "codex:c2"]);
    assert_eq!(listed(Some(SOURCE)), [eid("e1"), eid("e3"), eid("e5")]);
}

/// A session's events are kept in order of time, whatever order they come in, and moved when
/// a later version of their file gives them another time: its start and end are its first and
/// last visible events.
#[test]
fn session_start_and_end_follow_events_in_time_order_whatever_order_they_come_in() {
    let (_fs, j, mut s) = build(&[
        ingested(vec![msg("e3", "s1", 30, "c"), msg("e1", "s1", 10, "a"), msg("e5", "s1", 50, "e")], vec![]),
        ingested(vec![msg("e2", "s1", 20, "b"), msg("e4", "s1", 40, "d")], vec![]),
    ]);
    let span = |s: &State| s.session(SOURCE, "s1").map(|x| (x.started_unix_ms, x.ended_unix_ms, x.event_count));
    assert_eq!(span(&s), Some((10, 50, 5)));
    // e1 moves to the end, e5 to the start.
    append(&j, &[ingested(vec![msg("e1", "s1", 60, "a"), msg("e5", "s1", 5, "e")], vec![])]);
    s.catch_up(&j).unwrap();
    assert_eq!(span(&s), Some((5, 60, 5)));
    // The first and last hidden: the next ones in time start and end it.
    for (n, gone) in ["e5", "e1"].into_iter().enumerate() {
        let plan = s.forget_plan(&eid(gone)).unwrap();
        append(&j, &[forget_with(&format!("tmb_{n}"), &eid(gone), &plan)]);
        s.catch_up(&j).unwrap();
    }
    assert_eq!(span(&s), Some((20, 40, 3)));
    let listed: Vec<String> = s.session_events(None, "s1", false, 50).into_iter().map(|m| m.id).collect();
    assert_eq!(listed, [eid("e2"), eid("e3"), eid("e4")]);
}

#[test]
fn quote_finds_recent_message_else_tool_result_never_tool_call() {
    let q = "Keep each commit to ONE purpose";
    let (_fs, j, mut s) = build(&[ingested(
        vec![
            msg("old", "s1", 10, "please keep each commit to one purpose"),
            ev("new", "s1", 50, EventKind::Message, Role::Assistant, "OK: keep each\n  commit to one   purpose."),
            ev("result", "s1", 60, EventKind::ToolResult, Role::System, "grep: keep each commit to one purpose"),
            ev("call", "s1", 70, EventKind::ToolUse, Role::Assistant, "remember(\"keep each commit to one purpose\")"),
            ev("meta", "s1", 80, EventKind::Meta, Role::System, "keep each commit to one purpose"),
        ],
        vec![],
    )]);
    assert!(quote_matches("Keep\teach COMMIT to one purpose", q));
    assert!(!quote_matches("anything", "  "));
    assert_eq!(s.find_quote(&j, q).unwrap().map(|m| m.id), Some(eid("new")));
    let mut n = 0;
    for gone in ["new", "old"] {
        n += 1;
        let plan = s.forget_plan(&eid(gone)).unwrap();
        append(&j, &[forget_with(&format!("tmb_{n}"), &eid(gone), &plan)]);
        s.catch_up(&j).unwrap();
    }
    assert_eq!(s.find_quote(&j, q).unwrap().map(|m| m.id), Some(eid("result")));
    assert_eq!(s.find_quote(&j, "not said anywhere").unwrap(), None);
}

#[test]
fn replay_until_offset_or_time_stops_there() {
    let fs = SimFs::new(3);
    let j = sim_journal(&fs);
    let first = append(&j, &[remember("ent_a", 1, &[]), remember("ent_b", 2, &[])]);
    let later = append(&j, &[remember("ent_c", 3, &[])]);
    let s = State::replay(&j, Until::OffsetBelow(first.start + 1)).unwrap();
    assert_eq!((s.read_to(), ids(&s.entries(&EntryFilter::default(), NOW, 9))), (1, vec!["ent_a"]));
    let t = j.read_vec(later.start, 1).unwrap()[0].time_unix_ms;
    let before = State::replay(&j, Until::TimeAtOrBefore(t - 1)).unwrap();
    let all = State::replay(&j, Until::TimeAtOrBefore(t)).unwrap();
    assert_eq!(all.digest(), State::replay(&j, Until::End).unwrap().digest());
    assert_eq!(all.read_to(), 3);
    // Records of one commit share its time; an earlier commit may share it too.
    assert!(before.read_to() <= 2);
}

// ---- snapshots ----

/// A store with something of everything, its journal, and its state.
fn rich_store() -> (SimFs, Journal, State) {
    let (fs, j, mut s) = build(&[
        ingested(
            vec![msg("e1", "s1", 10, "one"), msg("e2", "s1", 20, "two"), ev("e3", "s2", 30, EventKind::ToolResult, Role::System, "out")],
            vec![SessionChange { session: "s1".into(), project: None, title: Some("T".into()), first_prompt: Some("one".into()), parent: None }],
        ),
        remember("ent_a", 100, &["e1"]),
        correct("ent_b", "ent_a", "ent_a", 200, &["e2"]),
        correct("ent_c", "ent_a", "ent_a", 250, &["e2"]),
        remember("ent_d", 300, &["e3"]),
    ]);
    let plan = s.forget_plan("ent_d").unwrap();
    append(&j, &[forget_with("tmb_1", "ent_d", &plan), forget_with("tmb_2", "x", &Hides { entries: vec![], events: vec![eid("e1")] })]);
    append(&j, &[restore("tmb_2")]);
    append(&j, &[ingested(vec![msg("e4", "s1", 40, "four")], vec![]), supersede(&["e4", "e7"])]);
    s.catch_up(&j).unwrap();
    (fs, j, s)
}

/// Answers a few queries, to compare states beyond their digests.
fn answers(s: &State, j: &Journal) -> String {
    format!(
        "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
        s.entries(&EntryFilter::default(), NOW, 50),
        s.sessions(&SessionFilter::default(), 50),
        s.history("ent_a"),
        s.event_body(j, &eid("e2")).unwrap(),
        s.is_hidden(&eid("e3")),
        (s.is_superseded(&eid("e4")), s.is_superseded(&eid("e7")), s.is_superseded(&eid("e1"))),
    )
}

fn reopen(fs: &SimFs, j: &Journal) -> (State, Opened) {
    State::open(j, fs, &snap_path()).unwrap()
}

#[test]
fn snapshot_loads_and_replays_only_what_follows() {
    let (fs, j, mut s) = rich_store();
    s.save_snapshot(&j, &fs, &snap_path()).unwrap();
    let (loaded, opened) = reopen(&fs, &j);
    assert_eq!(opened, Opened { snapshot: SnapshotUse::Loaded { read_to: s.read_to() }, records_read: 0 });
    assert_eq!(loaded.digest(), s.digest());
    append(&j, &[remember("ent_z", 900, &["e2"]), Body::Scratch(vec![1, 2])]);
    s.catch_up(&j).unwrap();
    let (loaded, opened) = reopen(&fs, &j);
    assert_eq!(opened.records_read, 2);
    assert_eq!(loaded.digest(), s.digest());
    assert_eq!(answers(&loaded, &j), answers(&s, &j));
}

#[test]
fn snapshot_deleted_is_rebuilt_with_the_same_answers() {
    let (fs, j, s) = rich_store();
    s.save_snapshot(&j, &fs, &snap_path()).unwrap();
    origin_engine::vfs::Vfs::remove_file(&fs, &snap_path()).unwrap();
    let (rebuilt, opened) = reopen(&fs, &j);
    assert_eq!(opened.snapshot, SnapshotUse::Missing);
    assert_eq!(opened.records_read, j.next_offset());
    assert_eq!(rebuilt.digest(), s.digest());
    assert_eq!(answers(&rebuilt, &j), answers(&s, &j));
}

#[test]
fn snapshot_truncated_anywhere_is_rebuilt_with_the_same_answers() {
    let (fs, j, s) = rich_store();
    s.save_snapshot(&j, &fs, &snap_path()).unwrap();
    let bytes = fs.read_file(&snap_path()).unwrap();
    let want = answers(&s, &j);
    let step = (bytes.len() / 97).max(1);
    for len in (0..bytes.len()).step_by(step).chain([bytes.len() - 1, SNAPSHOT_HEADER_SIZE]) {
        fs.write_file(&snap_path(), &bytes[..len]).unwrap();
        let (rebuilt, opened) = reopen(&fs, &j);
        assert!(matches!(opened.snapshot, SnapshotUse::Rejected { .. }), "cut at {len}: {:?}", opened.snapshot);
        assert_eq!(rebuilt.digest(), s.digest(), "cut at {len}");
        assert_eq!(answers(&rebuilt, &j), want);
    }
}

#[test]
fn snapshot_bit_flipped_is_rebuilt_with_the_same_answers() {
    let (fs, j, s) = rich_store();
    s.save_snapshot(&j, &fs, &snap_path()).unwrap();
    let bytes = fs.read_file(&snap_path()).unwrap();
    let bits = bytes.len() as u64 * 8;
    // Every bit of the header, then bits spread over the body.
    let header = 0..(SNAPSHOT_HEADER_SIZE as u64 * 8);
    let body = (SNAPSHOT_HEADER_SIZE as u64 * 8..bits).step_by(13);
    for bit in header.chain(body) {
        fs.write_file(&snap_path(), &bytes).unwrap();
        fs.flip_bit(&snap_path(), bit).unwrap();
        let (rebuilt, opened) = reopen(&fs, &j);
        assert!(matches!(opened.snapshot, SnapshotUse::Rejected { .. }), "bit {bit}: {:?}", opened.snapshot);
        assert_eq!(rebuilt.digest(), s.digest(), "bit {bit}");
    }
    fs.write_file(&snap_path(), &bytes).unwrap();
    assert!(matches!(reopen(&fs, &j).1.snapshot, SnapshotUse::Loaded { .. }));
}

/// A snapshot of another copy of the journal (the same store and epoch, at least as long, with
/// other records: a journal restored from a backup and written to since) is rebuilt, not
/// trusted; the journal it was saved from still loads it.
#[test]
fn snapshot_of_another_copy_of_the_journal_is_rebuilt() {
    let (fs, j, s) = rich_store();
    s.save_snapshot(&j, &fs, &snap_path()).unwrap();
    let other = Journal::open_with(
        Arc::new(fs.clone()),
        Path::new("/other/journal"),
        Options { new_store_identity: Some((j.store_id(), j.epoch())), ..Options::default() },
    )
    .unwrap();
    for i in 0..j.next_offset() {
        append(&other, &[Body::Scratch(vec![i as u8])]);
    }
    let (rebuilt, opened) = State::open(&other, &fs, &snap_path()).unwrap();
    let offset = s.read_to() - 1;
    assert_eq!(
        opened.snapshot,
        SnapshotUse::Rejected {
            reason: format!("the journal's record at offset {offset} is not the one it reflects: the journal is another copy of this store")
        }
    );
    assert_eq!(rebuilt.digest(), State::replay(&other, Until::End).unwrap().digest());
    assert!(matches!(reopen(&fs, &j).1.snapshot, SnapshotUse::Loaded { .. }));
}

#[test]
fn snapshot_of_an_older_format_is_rebuilt_with_the_same_answers() {
    let (fs, j, s) = rich_store();
    s.save_snapshot(&j, &fs, &snap_path()).unwrap();
    let mut bytes = fs.read_file(&snap_path()).unwrap();
    bytes[8..10].copy_from_slice(&(SNAPSHOT_FORMAT_VERSION - 1).to_le_bytes());
    origin_engine::snapshot::set_checksums(&mut bytes);
    fs.write_file(&snap_path(), &bytes).unwrap();
    let (rebuilt, opened) = reopen(&fs, &j);
    match &opened.snapshot {
        SnapshotUse::Rejected { reason } => {
            assert!(reason.contains(&format!("format {};", SNAPSHOT_FORMAT_VERSION - 1)), "{reason}")
        }
        other => panic!("older format used: {other:?}"),
    }
    assert_eq!(rebuilt.digest(), s.digest());
    assert_eq!(answers(&rebuilt, &j), answers(&s, &j));
}

/// A snapshot names the record kinds its state read: one saved by a build that passed over a
/// kind this one reads (here `restored`) missed such records below its offset, and one that
/// does not name them (saved before it did) cannot say: both are rebuilt.
#[test]
fn snapshot_of_a_build_reading_other_record_kinds_is_rebuilt_with_the_same_answers() {
    let (fs, j, s) = rich_store();
    s.save_snapshot(&j, &fs, &snap_path()).unwrap();
    let saved = fs.read_file(&snap_path()).unwrap();
    let ours = origin_engine::record::kinds_read_fingerprint(State::reads_kind);
    assert_eq!(saved[64..68], ours.to_le_bytes(), "the kinds this build reads");
    let fewer = origin_engine::record::kinds_read_fingerprint(|k| State::reads_kind(k) && k != RecordKind::Restored as u8);
    for (named, why) in [(fewer, "reads other kinds of record"), (0, "does not name the record kinds")] {
        let mut bytes = saved.clone();
        bytes[64..68].copy_from_slice(&named.to_le_bytes());
        origin_engine::snapshot::set_checksums(&mut bytes);
        fs.write_file(&snap_path(), &bytes).unwrap();
        let (rebuilt, opened) = reopen(&fs, &j);
        match &opened.snapshot {
            SnapshotUse::Rejected { reason } => assert!(reason.contains(why), "{reason}"),
            other => panic!("snapshot of other kinds used: {other:?}"),
        }
        assert_eq!(rebuilt.digest(), s.digest());
        assert_eq!(answers(&rebuilt, &j), answers(&s, &j));
    }
}

#[test]
fn snapshot_of_another_store_or_ahead_of_the_journal_is_rebuilt() {
    let (fs, j, s) = rich_store();
    // Another store: same path, state saved under a different identity.
    let other = SimFs::new(99);
    let oj = sim_journal(&other);
    // (Written as the save writes it; `save_snapshot` itself reads the last record from the
    // journal given, which this one does not hold.)
    snapshot::save(&fs, &snap_path(), &s, oj.store_id(), oj.epoch(), 0, None).unwrap();
    let (rebuilt, opened) = reopen(&fs, &j);
    assert!(matches!(opened.snapshot, SnapshotUse::Rejected { .. }));
    assert_eq!(rebuilt.digest(), s.digest());
    // Ahead of the journal (the journal was restored from an older copy).
    let mut ahead = s.clone();
    ahead.apply(j.next_offset() + 5, &remember("ent_future", 1, &[]));
    snapshot::save(&fs, &snap_path(), &ahead, j.store_id(), j.epoch(), 0, None).unwrap();
    let (rebuilt, opened) = reopen(&fs, &j);
    assert!(matches!(opened.snapshot, SnapshotUse::Rejected { .. }), "{:?}", opened.snapshot);
    assert_eq!(rebuilt.digest(), s.digest());
}

/// A snapshot saved over an older one, with a fault at each of the save's I/O calls in turn: a
/// power cut, a failing `fdatasync`, a full disk. A save that a fault reaches says so, and leaves
/// no temporary file; after the power cut, and after the failed save, the store opens (with the
/// old snapshot, the new one, or none) to the same state as the one saved, never another.
#[test]
fn snapshot_save_with_a_fault_at_any_io_call_fails_loudly_and_never_gives_another_state() {
    use origin_engine::sim::Fault;
    use origin_engine::vfs::Vfs;
    let (fs, j, mut s) = rich_store();
    s.save_snapshot(&j, &fs, &snap_path()).unwrap();
    append(&j, &[remember("ent_late", 400, &["e2"])]);
    s.catch_up(&j).unwrap();
    let want = (s.digest(), answers(&s, &j));
    let tmp = snap_path().with_file_name(format!("{SNAPSHOT_FILE_NAME}.tmp"));
    // How many mutating calls a save makes, on a copy of the machine.
    let calls = {
        let copy = fs.snapshot();
        s.save_snapshot(&sim_journal(&copy), &copy, &snap_path()).unwrap();
        copy.ops()
    };
    assert!(calls >= 3, "a save makes {calls} calls");
    let state_on = |machine: &SimFs| {
        let j = sim_journal(machine);
        let (state, opened) = State::open(&j, machine, &snap_path()).unwrap();
        ((state.digest(), answers(&state, &j)), opened.snapshot)
    };
    let mut failed = [0u32; 3];
    for (f, fault) in [Fault::PowerCut, Fault::SyncFails, Fault::DiskFull].into_iter().enumerate() {
        for call in 0..calls {
            let machine = fs.snapshot();
            let j2 = sim_journal(&machine);
            // Opening the journal made calls of its own: the fault is placed among the save's.
            machine.inject(machine.ops() + call, fault);
            let saved = s.save_snapshot(&j2, &machine, &snap_path());
            if saved.is_err() {
                failed[f] += 1;
            }
            match fault {
                Fault::PowerCut => assert!(saved.is_err(), "a save cut at call {call} said it saved"),
                _ => {
                    if saved.is_err() {
                        assert!(!machine.exists(&tmp).unwrap(), "{fault:?} at call {call} left {}", tmp.display());
                    }
                    let (got, how) = state_on(&machine);
                    assert!(got == want, "{fault:?} at call {call}: another state, opened with {how:?}");
                }
            }
            for seed in 0..4 {
                let after = machine.after_power_cut(call * 31 + seed);
                let (got, how) = state_on(&after);
                assert!(got == want, "{fault:?} at call {call}, power cut (seed {seed}): another state, opened with {how:?}");
            }
        }
    }
    // Every call is reached by a power cut; a sync and a write fail at least once each.
    assert_eq!(failed[0] as u64, calls);
    assert!(failed[1] >= 1 && failed[2] >= 1, "failed saves: {failed:?}");
}

/// The body and header checksums of a snapshot file, set to match its bytes.
fn fix_snapshot_crcs(bytes: &mut [u8]) {
    origin_engine::snapshot::set_checksums(bytes);
}

/// The events' ids are one text, each event giving where its id ends: ends that run past the
/// text, cut a character in two, go back or leave bytes over are refused, as is an id table
/// that does not find each id at its number (checksums made to match, so that the body
/// decoder sees them); the intact file loads.
#[test]
fn snapshot_with_event_ids_that_do_not_match_their_text_or_table_is_refused() {
    use crate::state::event::{BASE_REC_SIZE, EMPTY_SLOT, home_slot, slot_hash};
    let (_fs, j, s) = rich_store();
    let text = String::from_utf8(s.events.id_text().concat()).unwrap();
    assert!(s.events.len() >= 3 && text.is_ascii(), "{text}");
    let bytes = snapshot::encode(&s, j.store_id(), j.epoch(), origin_engine::snapshot::last_record(&j, s.read_to).unwrap());
    let mut framed = (text.len() as u64).to_le_bytes().to_vec();
    framed.extend_from_slice(text.as_bytes());
    let at = bytes.windows(framed.len()).position(|w| w == framed.as_slice()).expect("the ids' text in the file");
    // Where each id ends follows the text; then the records, the table's size and the table,
    // the last section.
    let (ends, n) = (at + framed.len(), s.events.len());
    let id0 = s.events.id(0).len() as u64;
    assert_eq!(bytes[ends..ends + 8], id0.to_le_bytes());
    let table = ends + n * 8 + n * BASE_REC_SIZE + 8;
    let slots = u64::from_le_bytes(bytes[table - 8..table].try_into().unwrap()) as usize;
    assert_eq!(bytes.len(), table + slots * 4);
    let slot = |b: &[u8], k: usize| u32::from_le_bytes(b[table + 4 * k..table + 4 * k + 4].try_into().unwrap());
    let decoded = |b: &[u8]| snapshot::decode_copy(b, j.store_id(), j.epoch()).map(|(d, _)| d.digest());
    assert_eq!(decoded(&bytes), Ok(s.digest()));
    let edited = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut b = bytes.clone();
        edit(&mut b);
        fix_snapshot_crcs(&mut b);
        decoded(&b)
    };
    let first_end = |end: u64, first_bytes: Option<[u8; 2]>| {
        edited(&|b| {
            b[ends..ends + 8].copy_from_slice(&end.to_le_bytes());
            if let Some(c) = first_bytes {
                b[at + 8..at + 10].copy_from_slice(&c);
            }
        })
    };
    let refused = |r: Result<u64, String>, why: &str| {
        let e = r.expect_err("refused");
        assert!(e.contains(why), "{e:?} does not say {why:?}");
    };
    // Past the end of the text.
    refused(first_end(text.len() as u64 + 1, None), "not on a character");
    // Into the middle of a character: the text's first two bytes made `é`, still UTF-8.
    refused(first_end(1, Some([0xC3, 0xA9])), "not on a character");
    // Before the end before it.
    refused(edited(&|b| b[ends + 8..ends + 16].copy_from_slice(&(id0 - 1).to_le_bytes())), "not on a character");
    // Shorter: the first two ids change, and the table does not find them.
    refused(first_end(id0 - 1, None), "id table");
    // The same two bytes made `é` with the ends untouched: another id, not where the table
    // looks for it.
    refused(first_end(id0, Some([0xC3, 0xA9])), "id table");
    // A text that is not UTF-8.
    refused(first_end(id0, Some([0xFF, 0xFE])), "not UTF-8");
    // The table: a size that is not a power of two; an event's slot emptied; an empty slot
    // naming no event, or an event a second time; an event moved to an empty slot.
    refused(edited(&|b| b[table - 8..table].copy_from_slice(&(slots as u64 - 1).to_le_bytes())), "an id table of");
    let used = (0..slots).find(|&k| slot(&bytes, k) != EMPTY_SLOT).unwrap();
    let empty = (0..slots).find(|&k| slot(&bytes, k) == EMPTY_SLOT).unwrap();
    let put = |b: &mut Vec<u8>, k: usize, v: u32| b[table + 4 * k..table + 4 * k + 4].copy_from_slice(&v.to_le_bytes());
    refused(edited(&|b| put(b, used, EMPTY_SLOT)), "holds");
    refused(edited(&|b| put(b, empty, n as u32)), "names event");
    refused(edited(&|b| put(b, empty, slot(&bytes, used))), "twice");
    refused(
        edited(&|b| {
            put(b, empty, slot(&bytes, used));
            put(b, used, EMPTY_SLOT);
        }),
        "not where the id table says",
    );
    // An id twice, in a table built for the ids as they then are (as the writer builds it:
    // the same table for the intact file, which loads).
    let rebuild_table = |b: &mut Vec<u8>| {
        let (mut start, mut t) = (0usize, vec![EMPTY_SLOT; slots]);
        for k in 0..n {
            let end = u64::from_le_bytes(b[ends + 8 * k..ends + 8 * k + 8].try_into().unwrap()) as usize;
            let mut at_slot = home_slot(slot_hash(&b[at + 8 + start..at + 8 + end]), slots);
            start = end;
            while t[at_slot] != EMPTY_SLOT {
                at_slot = (at_slot + 1) & (slots - 1);
            }
            t[at_slot] = k as u32;
        }
        t.iter().enumerate().for_each(|(k, &v)| put(b, k, v));
    };
    assert_eq!(edited(&|b| rebuild_table(b)), Ok(s.digest()));
    let twin = (1..n as u32).find(|&k| s.events.id(k).len() == s.events.id(0).len()).expect("two ids of one length");
    let twin_at = at + 8 + s.events.ids().take(twin as usize).map(str::len).sum::<usize>();
    refused(
        edited(&|b| {
            b.copy_within(at + 8..at + 8 + id0 as usize, twin_at);
            rebuild_table(b);
        }),
        "listed twice",
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn snapshot_decoder_refuses_garbage_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..300), fix_header in any::<bool>()) {
        let mut bytes = bytes;
        if fix_header && bytes.len() >= SNAPSHOT_HEADER_SIZE {
            // A header that checks out over a random body, to reach the body decoder.
            bytes[..8].copy_from_slice(b"ORGNSNAP");
            bytes[8..10].copy_from_slice(&SNAPSHOT_FORMAT_VERSION.to_le_bytes());
            bytes[10..16].copy_from_slice(&[0, 0, SNAPSHOT_HEADER_SIZE as u8, 0, 0, 0]);
            bytes[16..40].fill(0);
            bytes[64..68].fill(0);
            origin_engine::snapshot::set_checksums(&mut bytes);
        }
        let _ = snapshot::decode_copy(&bytes, [0; 16], 0);
    }
}

// ---- incremental == full rebuild ----

#[derive(Clone, Debug)]
enum Op {
    /// Events (id, session, time, kind) and a title / first prompt for the first session.
    Ingest { events: Vec<(u8, u8, i64, u8)>, title: Option<u8>, prompt: bool },
    Remember { cites: Vec<u8>, created: i64, valid_to: Option<i64> },
    /// Correct any version (often not the current one: a fork).
    Correct { target: u8, created: i64, cites: Vec<u8> },
    Forget { entry: bool, target: u8, overlap: bool },
    Restore { target: u8 },
    /// A record of events (some new, some brought again) that abandons others (known ones, its
    /// own, and one not known yet).
    Supersede { targets: Vec<u8>, events: Vec<(u8, u8, i64)> },
    Import { new_items: u8, correct_item: Option<u8>, end_item: Option<u8>, time: i64 },
    /// Save a snapshot and reopen from it.
    Reopen,
    /// Apply the last record directly before catching up.
    ApplyDirect,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (proptest::collection::vec((0u8..14, 0u8..4, 0i64..1000, 0u8..6), 1..5), proptest::option::of(0u8..3), any::<bool>())
            .prop_map(|(events, title, prompt)| Op::Ingest { events, title, prompt }),
        3 => (proptest::collection::vec(0u8..14, 0..3), 0i64..60, proptest::option::of(0i64..1200))
            .prop_map(|(cites, created, valid_to)| Op::Remember { cites, created, valid_to }),
        4 => (any::<u8>(), 0i64..60, proptest::collection::vec(0u8..14, 0..2))
            .prop_map(|(target, created, cites)| Op::Correct { target, created, cites }),
        2 => (any::<bool>(), any::<u8>(), any::<bool>()).prop_map(|(entry, target, overlap)| Op::Forget { entry, target, overlap }),
        2 => any::<u8>().prop_map(|target| Op::Restore { target }),
        2 => (proptest::collection::vec(any::<u8>(), 1..4), proptest::collection::vec((0u8..14, 0u8..4, 0i64..1000), 0..3))
            .prop_map(|(targets, events)| Op::Supersede { targets, events }),
        1 => (0u8..3, proptest::option::of(any::<u8>()), proptest::option::of(any::<u8>()), 0i64..1200)
            .prop_map(|(new_items, correct_item, end_item, time)| Op::Import { new_items, correct_item, end_item, time }),
        1 => Just(Op::Reopen),
        1 => Just(Op::ApplyDirect),
    ]
}

const KINDS: [EventKind; 6] =
    [EventKind::Message, EventKind::ToolUse, EventKind::ToolResult, EventKind::Meta, EventKind::System, EventKind::Message];

/// Turns ops into records, written one at a time, with the state caught up after each.
struct Run {
    fs: SimFs,
    j: Journal,
    state: State,
    versions: Vec<String>,
    imported_roots: Vec<String>,
    events: Vec<String>,
    tombstones: Vec<(String, Hides)>,
    memory_versions: u32,
    next_id: u64,
    reopens: u64,
}

impl Run {
    fn new_id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}_{:012x}", self.next_id)
    }

    fn pick<'a>(list: &'a [String], i: u8) -> Option<&'a String> {
        (!list.is_empty()).then(|| &list[i as usize % list.len()])
    }

    fn body(&mut self, op: &Op) -> Option<Body> {
        let cite = |c: &[u8]| c.iter().map(|i| Citation { event_id: eid(&format!("e{i}")), quote: None }).collect::<Vec<_>>();
        Some(match op {
            Op::Ingest { events, title, prompt } => {
                let evs: Vec<Event> = events
                    .iter()
                    .map(|(id, session, time, kind)| {
                        let k = KINDS[*kind as usize];
                        let role = if k == EventKind::Message { Role::User } else { Role::System };
                        ev(&format!("e{id}"), &format!("s{session}"), *time, k, role, &format!("text of e{id} at {time}"))
                    })
                    .collect();
                let first = evs[0].session.clone();
                let change = SessionChange {
                    session: first,
                    project: None,
                    title: title.map(|t| format!("title {t}")),
                    first_prompt: prompt.then(|| evs[0].text.clone()),
                    parent: None,
                };
                for e in &evs {
                    self.events.push(e.id.clone());
                }
                ingested(evs, vec![change])
            }
            Op::Remember { cites, created, valid_to } => {
                let id = self.new_id("ent");
                let mut v = version(&id, None, &id, *created, &[]);
                v.sources = cite(cites);
                v.valid_to_unix_ms = *valid_to;
                self.versions.push(id);
                Body::Remembered(v)
            }
            Op::Correct { target, created, cites } => {
                let of = Self::pick(&self.versions, *target)?.clone();
                // Hidden or not, the graph knows its root.
                let root = self.state.entries.get(&of)?.version.root.clone();
                let id = self.new_id("ent");
                let mut v = version(&id, Some(&of), &root, *created, &[]);
                v.sources = cite(cites);
                self.versions.push(id);
                Body::Corrected(v)
            }
            Op::Forget { entry, target, overlap } => {
                let list = if *entry { &self.versions } else { &self.events };
                let t = Self::pick(list, *target)?.clone();
                let mut plan = self.state.forget_plan(&t)?;
                if *overlap {
                    if let Some((_, h)) = self.tombstones.last() {
                        plan.entries.extend(h.entries.iter().cloned());
                        plan.events.extend(h.events.iter().cloned());
                    }
                }
                if plan.is_empty() {
                    return None;
                }
                let tmb = self.new_id("tmb");
                self.tombstones.push((tmb.clone(), plan.clone()));
                forget_with(&tmb, &t, &plan)
            }
            Op::Restore { target } => {
                let list: Vec<String> = self.tombstones.iter().map(|(t, _)| t.clone()).collect();
                restore(Self::pick(&list, *target)?)
            }
            Op::Supersede { targets, events } => {
                let evs: Vec<Event> = events.iter().map(|(id, session, time)| msg(&format!("e{id}"), &format!("s{session}"), *time, &format!("again e{id}"))).collect();
                for e in &evs {
                    self.events.push(e.id.clone());
                }
                let mut abandoned: Vec<String> = targets.iter().filter_map(|&t| Self::pick(&self.events, t).cloned()).collect();
                // An id whose event comes later (or never).
                abandoned.push(eid(&format!("e{}", targets[0] % 14)));
                let Body::Ingested(mut b) = ingested(evs, vec![]) else { unreachable!("ingested") };
                b.superseded = abandoned;
                Body::Ingested(b)
            }
            Op::Import { new_items, correct_item, end_item, time } => {
                self.memory_versions += 1;
                let mut e = ev(&format!("memory:/m#v{}", self.memory_versions), "", *time, EventKind::Memory, Role::System, "- item");
                e.project = None;
                let mut entries = Vec::new();
                for _ in 0..*new_items {
                    let id = self.new_id("ent");
                    let mut v = version(&id, None, &id, *time, &[]);
                    v.imported = true;
                    v.sources = vec![Citation { event_id: e.id.clone(), quote: None }];
                    self.imported_roots.push(id.clone());
                    self.versions.push(id);
                    entries.push(v);
                }
                if let Some(root) = correct_item.and_then(|i| Self::pick(&self.imported_roots, i)).cloned() {
                    if let Some(cur) = self.state.current_of(&root).map(str::to_owned) {
                        let id = self.new_id("ent");
                        let mut v = version(&id, Some(&cur), &root, *time, &[]);
                        v.imported = true;
                        self.versions.push(id);
                        entries.push(v);
                    }
                }
                let ended = end_item.and_then(|i| Self::pick(&self.imported_roots, i)).cloned().into_iter().collect();
                self.events.push(e.id.clone());
                Body::Imported(Imported {
                    source: SOURCE.into(),
                    path: "/m".into(),
                    scope: MemoryScope::Project,
                    event: e,
                    keys: entries.iter().map(|v| v.id.clone()).collect(),
                    entries,
                    ended,
                })
            }
            Op::Reopen | Op::ApplyDirect => return None,
        })
    }

    fn step(&mut self, op: &Op) {
        match op {
            Op::Reopen => {
                self.state.save_snapshot(&self.j, &self.fs, &snap_path()).unwrap();
                let (s, opened) = State::open(&self.j, &self.fs, &snap_path()).unwrap();
                assert_eq!(opened.snapshot, SnapshotUse::Loaded { read_to: self.state.read_to() });
                assert_eq!(s.digest(), self.state.digest(), "reopened from snapshot");
                self.state = s;
                self.reopens += 1;
            }
            Op::ApplyDirect => {
                // Applying a record again (as a process that appended it might) changes nothing.
                if let Some(r) = self.j.read_vec(self.j.next_offset().saturating_sub(1), 1).unwrap().first() {
                    let (_, body) = origin_engine::codec::decode(r.kind, r.kind_version, &r.payload, r.offset).unwrap();
                    let before = self.state.digest();
                    self.state.apply(r.offset, &body);
                    assert_eq!(self.state.digest(), before);
                }
            }
            _ => {
                if let Some(body) = self.body(op) {
                    append(&self.j, &[body]);
                    self.state.catch_up(&self.j).unwrap();
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
    #[test]
    fn incremental_with_snapshot_reopens_equals_full_rebuild(ops in proptest::collection::vec(op(), 1..60), seed in any::<u64>()) {
        let fs = SimFs::new(seed);
        let j = sim_journal(&fs);
        let mut run = Run {
            fs,
            j,
            state: State::new(),
            versions: Vec::new(),
            imported_roots: Vec::new(),
            events: Vec::new(),
            tombstones: Vec::new(),
            memory_versions: 0,
            next_id: 0,
            reopens: 0,
        };
        for op in &ops {
            run.step(op);
        }
        let full = State::replay(&run.j, Until::End).unwrap();
        prop_assert_eq!(full.read_to(), run.state.read_to());
        prop_assert_eq!(full.digest(), run.state.digest());
        prop_assert_eq!(answers_all(&full), answers_all(&run.state));
        // A session counts what it lists: its events neither hidden nor abandoned.
        for x in full.sessions(&SessionFilter::default(), 10_000) {
            let listed = full.session_events(Some(&x.source), &x.session, true, 10_000);
            prop_assert_eq!(x.event_count, listed.len() as u64);
            prop_assert!(listed.iter().all(|m| !full.is_superseded(&m.id) && full.is_hidden(&m.id).is_none()));
        }
        // Every root has exactly one current version, and only leaves lose forks.
        for root in full.entries.roots.values() {
            prop_assert!(root.versions.contains(&root.current));
            prop_assert!(!root.losers.contains(&root.current));
        }
    }
}

/// Every listing, for the property test.
fn answers_all(s: &State) -> String {
    let sessions = s.sessions(&SessionFilter::default(), 10_000);
    let events: Vec<Vec<EventMeta>> = sessions.iter().map(|x| s.session_events(Some(&x.source), &x.session, true, 10_000)).collect();
    let histories: Vec<Vec<HistoryItem>> = s.entries.versions.keys().map(|v| s.history(v)).collect();
    format!("{:?}|{sessions:?}|{events:?}|{histories:?}", s.entries(&EntryFilter::default(), 600, 10_000))
}
