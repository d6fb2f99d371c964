//! A store this process may not write (another user's, or made read-only), read through the
//! binary: the real file system's refusals (`EACCES`), not a simulated one's.

use origin_engine::sim::files_under;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Sets the permissions of `dir` and everything under it: `write` or not, for everyone.
fn set_writable(dir: &Path, write: bool) {
    let mut todo = vec![dir.to_path_buf()];
    while let Some(p) = todo.pop() {
        let meta = std::fs::symlink_metadata(&p).expect("stat");
        let mode = if meta.is_dir() { if write { 0o777 } else { 0o555 } } else if write { 0o666 } else { 0o444 };
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("chmod");
        if meta.is_dir() {
            todo.extend(std::fs::read_dir(&p).expect("read_dir").map(|e| e.expect("entry").path()));
        }
    }
}

/// Runs `origin --home store args` as a user who may read the store and not write it: as root
/// (who writes anything), as another user (nobody); else as this user, the store made
/// read-only for everyone.
fn origin_as_reader(store: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(origin_tests::origin_bin());
    cmd.arg("--home").arg(store).args(args).env("HOME", "/nonexistent-origin-test-home").env("ORIGIN_WATCH_INTERVAL_MS", "0");
    if rustix::process::geteuid().is_root() {
        cmd.uid(65534).gid(65534);
    }
    cmd.output().expect("run origin")
}

fn said(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// A store made with the fixtures' logs, its projections saved, in a folder another user
/// can reach.
fn store_of_fixtures(dir: &Path) -> PathBuf {
    // Another user must be able to reach it (a temporary folder is its owner's alone).
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let store = dir.join("store");
    let agents = crate::ingest_memory::fixtures().join("agent-home");
    let made = Command::new(origin_tests::origin_bin())
        .args(["--home", store.to_str().expect("utf-8"), "ingest", "--agents-home", agents.to_str().expect("utf-8"), "--recorded-home", "/home/dev"])
        .output()
        .expect("ingest");
    assert!(made.status.success(), "{}", said(&made));
    let searched = Command::new(origin_tests::origin_bin())
        .args(["--home", store.to_str().expect("utf-8"), "search", "URLSearchParams"])
        .env("HOME", "/nonexistent-origin-test-home")
        .output()
        .expect("search");
    assert!(searched.status.success(), "{}", said(&searched));
    store
}

/// A store its reader may not write answers searches, timelines and `status` from what it
/// holds, with its projections and text index as saved; says once why it is read only;
/// refuses remember and forget, saying why; and is left exactly as it was. (Every command
/// failed at the journal's lock file before.)
#[test]
fn a_store_its_reader_may_not_write_is_read_as_it_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_of_fixtures(dir.path());
    set_writable(&store, false);
    let before = files_under(&store);

    let out = origin_as_reader(&store, &["search", "URLSearchParams", "--json"]);
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("URLSearchParams"), "{text}");
    assert!(text.contains("cannot be written") && text.contains("Permission denied"), "{text}");
    assert!(!text.contains("rebuilding the text index") && !text.contains("cannot be kept on disk"), "the index on disk read: {text}");
    let out = origin_as_reader(&store, &["timeline", "--since", "2000-01-01"]);
    assert!(out.status.success(), "{}", said(&out));
    let out = origin_as_reader(&store, &["status"]);
    assert!(out.status.success() && said(&out).contains("writable    no"), "{}", said(&out));
    // The writes are refused, said once, with nothing of reading the store as it is.
    for write in [
        &["remember", "A fact.", "--quote", "URLSearchParams", "--confidence", "0.5"][..],
        &["correct", "ent_0123456789ab", "A fact.", "--quote", "URLSearchParams"],
        &["forget", "ent_0123456789ab", "--reason", "a test"],
        &["restore", "tmb_0123456789ab"],
    ] {
        let out = origin_as_reader(&store, write);
        assert_eq!(out.status.code(), Some(3), "{write:?}: {}", said(&out));
        assert_eq!(said(&out).matches("cannot be written").count(), 1, "{write:?}: {}", said(&out));
        assert!(said(&out).contains("nothing can be remembered") && !said(&out).contains("projections"), "{write:?}: {}", said(&out));
    }
    let out = origin_as_reader(&store, &["journal", "verify"]);
    assert!(out.status.success(), "{}", said(&out));
    let out = origin_as_reader(&store, &["ingest"]);
    assert_eq!(out.status.code(), Some(3), "{}", said(&out));
    assert!(said(&out).contains("cannot be written") && said(&out).contains("nothing can be ingested"), "{}", said(&out));
    // A replay into the store is refused before the journal is read; one into a folder of its
    // own is made, and answers as the store does.
    let out = origin_as_reader(&store, &["journal", "replay"]);
    assert_eq!(out.status.code(), Some(3), "{}", said(&out));
    assert!(said(&out).contains("projections cannot be written") && said(&out).contains("nothing was replayed"), "{}", said(&out));
    let elsewhere = dir.path().join("then");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let out = origin_as_reader(&store, &["journal", "replay", "--to", elsewhere.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", said(&out));
    let out = origin_as_reader(&elsewhere, &["search", "URLSearchParams"]);
    assert!(out.status.success() && said(&out).contains("URLSearchParams"), "{}", said(&out));

    set_writable(&store, true);
    assert_eq!(files_under(&store), before, "nothing written");
}

/// A store whose journal its user may write and whose projections folder it may not (a
/// read-only mount of it, or files left by another user): remember is recorded and found, the
/// text index on disk is read as it is (not built again in memory at every command), the
/// projections are left as they were, and why their snapshots are not saved is said.
#[test]
fn projections_their_user_may_not_write_are_read_as_they_are() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_of_fixtures(dir.path());
    set_writable(&store, true);
    let projections = store.join("projections");
    set_writable(&projections, false);
    let before = files_under(&projections);
    let out = origin_as_reader(&store, &["remember", "Query strings are built with URLSearchParams.", "--quote", "URLSearchParams", "--confidence", "0.5"]);
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("the projections folder cannot be written"), "{text}");
    assert!(!text.contains("rebuilding the text index") && !text.contains("cannot be kept on disk"), "the index on disk read: {text}");
    let out = origin_as_reader(&store, &["search", "built with URLSearchParams", "--scope", "entries"]);
    assert!(out.status.success() && said(&out).contains("Query strings are built with URLSearchParams."), "{}", said(&out));
    let out = origin_as_reader(&store, &["ingest"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("the projections folder cannot be written") && !said(&out).contains("rebuilds"), "{}", said(&out));
    let out = origin_as_reader(&store, &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        (status["writable"].as_bool(), status["projections_saved"].as_bool(), status["index_saved"].as_bool()),
        (Some(true), Some(false), Some(false)),
        "{status}"
    );
    // A replay, which writes the projections, is refused before the journal is read.
    let out = origin_as_reader(&store, &["journal", "replay"]);
    assert_eq!(out.status.code(), Some(3), "{}", said(&out));
    assert!(said(&out).contains("projections cannot be written") && said(&out).contains("nothing was replayed"), "{}", said(&out));
    set_writable(&store, true);
    assert_eq!(files_under(&projections), before, "nothing written in the projections folder");
}

/// A store whose text index's folder alone its user may not write (a run under `sudo` made
/// it): the state's snapshot is saved and the index is not, which `status` tells apart, with
/// what to look at; the index on disk is read as it is and left as it was.
#[test]
fn a_text_index_folder_its_user_may_not_write_is_said_apart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_of_fixtures(dir.path());
    set_writable(&store, true);
    let index = store.join("projections").join("index");
    set_writable(&index, false);
    let before = files_under(&index);
    let out = origin_as_reader(&store, &["remember", "Query strings are built with URLSearchParams.", "--quote", "URLSearchParams", "--confidence", "0.5"]);
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("the text index's folder") && text.contains("check who owns the store's files"), "{text}");
    let out = origin_as_reader(&store, &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        (status["writable"].as_bool(), status["projections_saved"].as_bool(), status["index_saved"].as_bool()),
        (Some(true), Some(true), Some(false)),
        "{status}"
    );
    let why = status["index_not_saved_because"].as_str().unwrap_or_default();
    assert!(why.contains("index") && why.contains("check who owns the store's files"), "{status}");
    let out = origin_as_reader(&store, &["status"]);
    assert!(said(&out).contains("text index  not saved") && !said(&out).contains("projections not saved"), "{}", said(&out));
    set_writable(&store, true);
    assert_eq!(files_under(&index), before, "nothing written in the index folder");
}

/// A store folder whose journal folder another user made and left empty: its reader is told
/// the folder cannot be written, or that no journal is there, not sent to a lock file that
/// never was.
#[test]
fn an_empty_journal_folder_its_reader_may_not_write_is_said_as_such() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let store = dir.path().join("store");
    std::fs::create_dir_all(store.join("journal")).expect("mkdir");
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    set_writable(&store.join("journal"), false);
    for args in [&["search", "URLSearchParams"][..], &["timeline"], &["status"], &["journal", "verify"]] {
        let out = origin_as_reader(&store, args);
        let text = said(&out);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {text}");
        assert!(!text.contains("LOCK"), "{args:?}: {text}");
        assert!(text.contains("write into") || text.contains("no Origin journal in"), "{args:?}: {text}");
    }
    set_writable(&store, true);
    assert!(files_under(&store).is_empty(), "nothing made");
}

/// A store with a torn tail pending whose `recovered/` folder its user may not write (a run
/// under `sudo` cut an earlier tail): the open that would cut it cannot keep its copy, so the
/// store is read as it is, and `status` says it cannot be written, as the commands find.
#[test]
fn a_torn_tail_whose_copy_cannot_be_kept_makes_the_store_read_only_in_status_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_of_fixtures(dir.path());
    set_writable(&store, true);
    let journal = store.join("journal");
    let last = std::fs::read_dir(&journal)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .max()
        .expect("a segment");
    std::fs::OpenOptions::new().append(true).open(&last).expect("open").write_all(b"torn-tail-bytes").expect("append");
    let recovered = journal.join("recovered");
    std::fs::create_dir_all(&recovered).expect("mkdir");
    set_writable(&recovered, false);
    let out = origin_as_reader(&store, &["search", "URLSearchParams"]);
    assert!(out.status.success() && said(&out).contains("cannot be written"), "{}", said(&out));
    let out = origin_as_reader(&store, &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!((status["writable"].as_bool(), status["torn_tails_pending"].as_u64()), (Some(false), Some(1)), "{status}");
    assert!(status["not_writable_because"].as_str().is_some_and(|w| w.contains("recovered")), "{status}");
    let out = origin_as_reader(&store, &["status"]);
    assert!(said(&out).contains("writable    no") && said(&out).contains("the first write once the store can be written cuts it"), "{}", said(&out));
    // A write is refused once, saying why, as status says it.
    let out = origin_as_reader(&store, &["remember", "A fact.", "--quote", "URLSearchParams", "--confidence", "0.5"]);
    assert_eq!(out.status.code(), Some(3), "{}", said(&out));
    assert_eq!(said(&out).matches("cannot be written").count(), 1, "{}", said(&out));
    assert!(said(&out).contains("a torn tail is pending"), "{}", said(&out));
    // So is ingest, with the same look.
    let out = origin_as_reader(&store, &["ingest"]);
    assert_eq!(out.status.code(), Some(3), "{}", said(&out));
    assert!(said(&out).contains("nothing can be ingested") && said(&out).contains("a torn tail is pending"), "{}", said(&out));
    set_writable(&store, true);
}

/// A store whose lock file and `TIP` its user may not write (left by a run under `sudo`, the
/// rest given back) is written as it was: a writer locks the lock file open to read, and
/// replaces `TIP` by a rename in the folder it may write. (A look for what refuses writes took
/// both for refusals, and the store was read only.)
#[test]
fn a_lock_file_and_tip_another_user_owns_do_not_make_a_store_read_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_of_fixtures(dir.path());
    set_writable(&store, true);
    for name in ["LOCK", "TIP"] {
        // Another user's (root's, read by nobody) or made read-only: not writable by the reader.
        std::fs::set_permissions(store.join("journal").join(name), std::fs::Permissions::from_mode(0o444)).expect("chmod");
    }
    let out = origin_as_reader(&store, &["remember", "Query strings are built with URLSearchParams.", "--quote", "URLSearchParams", "--confidence", "0.5"]);
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("cannot be written"), "{text}");
    let out = origin_as_reader(&store, &["status"]);
    assert!(out.status.success() && !said(&out).contains("writable    no"), "{}", said(&out));
    set_writable(&store, true);
}
