//! What the command line says to a person: errors once and with what to do next, readable
//! answers, and nothing made where nothing was asked for; on the real binary.

use std::path::Path;
use std::process::{Command, Output};

use origin_tests::origin_bin;

fn origin(home: &Path, args: &[&str]) -> Output {
    Command::new(origin_bin())
        .arg("--home")
        .arg(home)
        .args(args)
        .env("ORIGIN_WATCH_INTERVAL_MS", "0")
        .env("HOME", "/nonexistent-origin-test-home")
        .env("TZ", "UTC")
        .output()
        .expect("run origin")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Commands that read no agents' logs, and compaction, on a store that is not there (a
/// mistyped `--home`): no journal there, said once, and nothing made (`get` said the id was
/// unknown and `tombstones` listed none, each from an empty store it had just made).
#[test]
fn a_store_that_is_not_there_is_said_and_not_made() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("mistyped");
    for args in [
        &["get", "ent_0123456789ab"][..],
        &["sources", "ent_0123456789ab"],
        &["tombstones"],
        &["forget", "ent_0123456789ab", "--reason", "a test"],
        &["restore", "tmb_0123456789ab"],
        &["journal", "compact"],
        &["status"],
    ] {
        let out = origin(&home, args);
        let said = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {said}");
        assert!(said.contains("no Origin journal in"), "{args:?}: {said}");
        assert!(!said.contains("LOCK") && !said.contains("Unknown"), "{args:?}: {said}");
        assert!(!home.exists(), "{args:?} made {}", home.display());
    }
}

/// An error's cause is said once: the system's words that end the failure's message are not
/// said again on a line of their own.
#[test]
fn an_errors_cause_is_said_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("a-file");
    std::fs::write(&home, b"not a folder").expect("write");
    let out = origin(&home, &["status"]);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert_eq!(said.matches("Not a directory").count(), 1, "{said}");
}
