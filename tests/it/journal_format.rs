//! The committed journals still read, record for record: a format change that breaks old
//! stores fails here. `journal-v1` holds every kind at its first version (`ingested` 1);
//! `journal-v1-ingested-v2` the same bodies as this build writes them (`ingested` 2).
//! `ORIGIN_WRITE_FIXTURES=1` rewrites only the newest fixture (when a kind's version changes,
//! add a new fixture beside the old ones, together with FORMAT.md); old ones never change.

use std::path::{Path, PathBuf};

use origin_engine::record::*;
use origin_engine::{Access, Journal, NewRecord, Options};

fn fixture_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(name).join("journal")
}

/// The newest fixture: what `ORIGIN_WRITE_FIXTURES=1` writes.
const NEWEST: &str = "journal-v1-ingested-v2";

fn sample_bodies() -> Vec<Body> {
    let ev = Event {
        id: "claude-code:7d0c4a1e-0000-4000-8000-000000000001".into(),
        time_unix_ms: 1_760_944_865_120,
        session: "2f1e8c47-0000-4000-8000-000000000001".into(),
        project: Some("demo-app".into()),
        role: Role::User,
        kind: EventKind::Message,
        text: "Set up the release workflow: 发布流程, リリース 🚀".into(),
        text_cut_chars: 0,
        cwd: Some("/home/dev/demo-app".into()),
        git_branch: Some("main".into()),
        agent_version: Some("2.1.281".into()),
        line: 3,
    };
    let v1 = EntryVersion {
        id: "ent_3f9a1c2b7d4e".into(),
        root: "ent_3f9a1c2b7d4e".into(),
        supersedes: None,
        kind: EntryKind::Memory,
        text: "Releases are tagged from master once CI passes.".into(),
        confidence: 0.9,
        project: Some("demo-app".into()),
        author: "claude-code@laptop".into(),
        created_unix_ms: 1_760_945_550_000,
        valid_from_unix_ms: None,
        valid_to_unix_ms: None,
        sources: vec![Citation { event_id: ev.id.clone(), quote: Some("tag from master".into()) }],
        imported: false,
    };
    let v2 = EntryVersion {
        id: "ent_8b1e0c9d2a3f".into(),
        supersedes: Some(v1.id.clone()),
        text: "Releases are tagged from master once CI passes on every OS.".into(),
        created_unix_ms: 1_760_945_560_000,
        ..v1.clone()
    };
    vec![
        Body::Ingested(Ingested {
            source: "claude-code".into(),
            path: "/home/dev/.claude/projects/-home-dev-demo-app/2f1e8c47.jsonl".into(),
            mirror: "claude-code/-home-dev-demo-app/2f1e8c47.jsonl".into(),
            file_version: 1,
            byte_start: 0,
            byte_end: 512,
            line_start: 1,
            line_end: 4,
            prefix_hash: 0x1234_5678_9abc_def0,
            raw_zstd: vec![0x28, 0xb5, 0x2f, 0xfd],
            events: vec![ev.clone()],
            sessions: vec![SessionChange {
                session: ev.session.clone(),
                project: Some("demo-app".into()),
                title: Some("Release workflow".into()),
                first_prompt: Some("Set up the release workflow".into()),
                parent: None,
            }],
            malformed_lines: 1,
            cut_lines: 0,
            state: br#"{"cwd":"/home/dev/demo-app"}"#.to_vec(),
            superseded: Vec::new(),
        }),
        Body::Remembered(v1.clone()),
        Body::Corrected(v2),
        Body::Forgotten(Forgotten {
            tombstone: "tmb_6c1d0e9a2b3f".into(),
            target: ev.id.clone(),
            reason: "I pasted an API key in this prompt".into(),
            author: "user@laptop".into(),
            time_unix_ms: 1_760_945_570_000,
            hidden_entries: vec![v1.id.clone()],
            hidden_events: vec![ev.id.clone()],
        }),
        Body::Restored(Restored { tombstone: "tmb_6c1d0e9a2b3f".into(), author: "user@laptop".into(), time_unix_ms: 1_760_945_580_000 }),
        Body::Imported(Imported {
            source: "claude-code".into(),
            path: "/home/dev/demo-app/CLAUDE.md".into(),
            scope: MemoryScope::Project,
            event: Event { kind: EventKind::Memory, id: "claude-code:memory:/home/dev/demo-app/CLAUDE.md@1".into(), ..ev },
            entries: vec![EntryVersion { imported: true, ..v1 }],
            keys: vec!["# demo-app/Commands/0".into()],
            ended: vec![],
        }),
        Body::TokenCreated(TokenCreated { name: "laptop".into(), hash: [0xab; 32], time_unix_ms: 1_760_945_590_000 }),
        Body::TokenRevoked(TokenRevoked { name: "laptop".into(), time_unix_ms: 1_760_945_600_000 }),
        Body::DeviceSeen(DeviceSeen { name: "laptop".into(), store_id: [7; 16], epoch: 0, time_unix_ms: 1_760_945_610_000 }),
        Body::Scratch(b"scratch bytes".repeat(500)),
        Body::Scratch(noise(3500)),
    ]
}

/// Bytes zstd cannot shrink, so the fixture's records fill more than one 4 KiB segment.
fn noise(n: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read fixture dir") {
        let e = e.expect("entry");
        if e.file_type().expect("type").is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).expect("copy");
        }
    }
}

/// Reads the fixture `name` and checks every record decodes to the sample bodies, with the
/// `ingested` record at `ingested_version`.
fn check_fixture(name: &str, ingested_version: u8) {
    let bodies = sample_bodies();
    if name == NEWEST && std::env::var_os("ORIGIN_WRITE_FIXTURES").is_some() {
        let dir = fixture_dir(name);
        let _ = std::fs::remove_dir_all(&dir);
        let opts = Options { segment_size_bytes_max: 4096, new_store_identity: Some(([0x0f; 16], 0)), ..Options::default() };
        let j = Journal::open(&dir, opts).expect("create fixture");
        for b in &bodies {
            j.append(vec![NewRecord::new(b).expect("encode")]).expect("append");
        }
        drop(j);
        let _ = std::fs::remove_file(dir.join("LOCK"));
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    copy_dir(&fixture_dir(name), tmp.path());
    let report = origin_engine::verify::verify_dir(tmp.path()).expect("verify fixture");
    assert!(report.is_clean(), "{report:?}");
    assert!(report.segments.len() >= 2, "the fixture spans a sealed segment");
    let j = Journal::open(tmp.path(), Options { access: Access::ReadOnly, ..Options::default() }).expect("open fixture");
    assert_eq!(j.store_id(), [0x0f; 16]);
    let records = j.read_vec(0, usize::MAX).expect("read");
    assert_eq!(records.len(), bodies.len());
    for (r, want) in records.iter().zip(&bodies) {
        assert_eq!(r.kind, want.kind() as u8);
        let version = if want.kind() == RecordKind::Ingested { ingested_version } else { 1 };
        assert_eq!(r.kind_version, version, "record {} ({})", r.offset, want.kind().name());
        let (origin, got) = origin_engine::codec::decode(r.kind, r.kind_version, &r.payload, r.offset).expect("decode");
        assert_eq!(origin, None);
        assert_eq!(&got, want, "record {} ({})", r.offset, want.kind().name());
    }
}

#[test]
fn format_1_journal_fixture_still_reads_record_for_record() {
    check_fixture("journal-v1", 1);
}

#[test]
fn journal_fixture_with_ingested_version_2_reads_record_for_record() {
    check_fixture(NEWEST, 2);
}
