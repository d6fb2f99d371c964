//! Helpers shared by Origin's integration tests.

/// A seed for randomised tests: `ORIGIN_TEST_SEED` if set, else `default`. Tests print it on
/// failure so a run can be replayed.
pub fn seed(default: u64) -> u64 {
    std::env::var("ORIGIN_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// A scale factor for long runs: `ORIGIN_TEST_SCALE` (default 1). CI runs at 1.
pub fn scale() -> u64 {
    std::env::var("ORIGIN_TEST_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1).max(1)
}

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The `origin` binary of this build, built first if needed (once per test process).
pub fn origin_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        // target/<profile>/deps/<test binary> -> target/<profile>/origin
        let exe = std::env::current_exe().expect("test binary path");
        let profile_dir = exe.parent().and_then(|d| d.parent()).expect("target/<profile>").to_path_buf();
        let bin = profile_dir.join("origin");
        let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let profile = profile_dir.file_name().and_then(|n| n.to_str()).unwrap_or("debug").to_owned();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-q", "-p", "origin", "--bin", "origin", "--manifest-path"]).arg(&manifest);
        if profile == "release" {
            cmd.arg("--release");
        }
        if let Some(target_dir) = profile_dir.parent() {
            cmd.arg("--target-dir").arg(target_dir);
        }
        let status = cmd.status().expect("run cargo build for the origin binary");
        assert!(status.success(), "building the origin binary failed");
        assert!(bin.exists(), "no origin binary at {}", bin.display());
        bin
    })
    .clone()
}

/// Appends to the journal of the store at `home` one ingested record of `per` user messages
/// for each record number in `records` (of a made-up Claude Code log `-bulk/<r>.jsonl`): event
/// `n = r * per + i` is `claude-code:bulk-<n>`, says `text(n)`, and is dated `n` ms after a
/// fixed time.
pub fn append_message_records(home: &std::path::Path, records: std::ops::Range<usize>, per: usize, text: impl Fn(usize) -> String) {
    use origin_engine::record::{Body, Event, EventKind, Ingested, Role};
    use origin_engine::{Journal, NewRecord, Options};
    let journal = Journal::open(home.join("journal"), Options::default()).expect("journal");
    for r in records {
        let events = (0..per)
            .map(|i| {
                let n = r * per + i;
                Event {
                    id: format!("claude-code:bulk-{n}"),
                    time_unix_ms: 1_760_000_000_000 + n as i64,
                    session: format!("bulk-session-{}", n / 1000),
                    project: Some("bulk".into()),
                    role: Role::User,
                    kind: EventKind::Message,
                    text: text(n),
                    text_cut_chars: 0,
                    cwd: None,
                    git_branch: None,
                    agent_version: None,
                    line: i as u64 + 1,
                }
            })
            .collect();
        let body = Body::Ingested(Ingested {
            source: "claude-code".into(),
            path: format!("/home/dev/.claude/projects/-bulk/{r}.jsonl"),
            mirror: format!("claude-code/-bulk/{r}.jsonl"),
            file_version: 1,
            byte_start: 0,
            byte_end: 1,
            line_start: 1,
            line_end: per as u64 + 1,
            prefix_hash: 0,
            raw_zstd: Vec::new(),
            events,
            sessions: Vec::new(),
            malformed_lines: 0,
            cut_lines: 0,
            state: Vec::new(),
            superseded: Vec::new(),
        });
        journal.append(vec![NewRecord::new(&body).expect("record")]).expect("append");
    }
}
