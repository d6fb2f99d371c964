//! Several `origin ingest` processes on one store at once: each event exactly once.

use std::path::PathBuf;
use std::process::Command;

use origin_tests::origin_bin;

use crate::ingest_incremental::{event_counts, line, World};

#[test]
fn three_processes_ingesting_the_same_home_at_once_record_each_event_once() {
    let w = World::new();
    for f in 0..6 {
        let lines: String = (0..200).map(|i| line(&format!("p{f}-{i}"), &format!("message {i} of file {f}")) + "\n").collect();
        std::fs::write(w.log(&format!("f{f}.jsonl")), lines).expect("write");
    }
    let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/agent-home");
    let spawn = |agents: &PathBuf| {
        Command::new(origin_bin())
            .arg("--home")
            .arg(w.store())
            .args(["ingest", "--json", "--agents-home"])
            .arg(agents)
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("ZCODE_HOME")
            .env_remove("GROK_HOME")
            .spawn()
            .expect("spawn origin ingest")
    };
    let mut children: Vec<_> = (0..3).map(|_| spawn(&w.home())).collect();
    children.push(spawn(&sample));
    children.push(spawn(&sample));
    for c in &mut children {
        assert!(c.wait().expect("wait").success());
    }
    let counts = event_counts(&w.store());
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "events ingested more than once: {twice:?}");
    for f in 0..6 {
        for i in 0..200 {
            assert_eq!(counts.get(&format!("claude-code:p{f}-{i}")), Some(&1));
        }
    }
    // The same sample home ingested by one process into a fresh store gives the same events.
    let fresh = World::new();
    let out = Command::new(origin_bin())
        .arg("--home")
        .arg(fresh.store())
        .args(["ingest", "--agents-home"])
        .arg(&sample)
        .output()
        .expect("run");
    assert!(out.status.success());
    let sample_ids: Vec<_> = event_counts(&fresh.store()).into_keys().collect();
    assert!(!sample_ids.is_empty());
    for id in sample_ids {
        assert_eq!(counts.get(&id), Some(&1), "{id}");
    }
}
