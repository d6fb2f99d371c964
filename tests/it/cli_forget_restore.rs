//! The CLI's forget, tombstone listing and restore, end to end on the real binary; and what a
//! command says of the journal's repairs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use origin_tests::origin_bin;
use serde_json::Value;

pub(crate) fn origin(home: &Path, args: &[&str]) -> Output {
    Command::new(origin_bin())
        .arg("--home")
        .arg(home)
        .args(args)
        .env("ORIGIN_WATCH_INTERVAL_MS", "0")
        .env("HOME", "/nonexistent-origin-test-home")
        .output()
        .expect("run origin")
}

/// The JSON a command printed, whatever its exit code (`journal verify` exits 1 on damage).
fn json_any(out: Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("json ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}

fn json(out: Output) -> Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

/// The journal's segment files in the store at `home`, in offset order.
fn segment_files(home: &Path) -> Vec<PathBuf> {
    let mut segments: Vec<PathBuf> = std::fs::read_dir(home.join("journal"))
        .expect("journal")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .collect();
    segments.sort();
    segments
}

/// Ingests the sample agents' logs the tests carry into the store at `home`.
fn ingest_sample(home: &Path) {
    let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/agent-home");
    let out = origin(home, &["ingest", "--agents-home", sample.to_str().expect("utf-8"), "--recorded-home", "/home/dev"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Runs `origin` on `home` with its standard output's reading end closed before anything is
/// written (as `origin … | head` whose `head` has finished).
fn origin_unread(home: &Path, args: &[&str]) -> Output {
    origin_readers_gone(home, args, false)
}

/// [`origin_unread`], standard error's reading end closed too when `stderr_too`.
fn origin_readers_gone(home: &Path, args: &[&str], stderr_too: bool) -> Output {
    let mut child = Command::new(origin_bin())
        .arg("--home")
        .arg(home)
        .args(args)
        .env("ORIGIN_WATCH_INTERVAL_MS", "0")
        .env("HOME", "/nonexistent-origin-test-home")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run origin");
    drop(child.stdout.take());
    if stderr_too {
        drop(child.stderr.take());
    }
    child.wait_with_output().expect("wait")
}

/// A reader that stops reading (`origin search … | head`, `origin status | head -1`) ends a
/// command quietly: its answer was given as far as it was read, nothing panics, and the
/// command still does the rest of its work and exits with its own code.
#[test]
fn a_command_whose_reader_has_gone_ends_quietly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    ingest_sample(home);
    let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/agent-home");
    let salvaged = home.join("salvaged");
    let commands: [&[&str]; 12] = [
        &["search", "the", "--limit", "100", "--json"],
        &["search", "the", "--limit", "100"],
        &["status"],
        &["status", "--json"],
        &["journal", "verify"],
        &["journal", "verify", "--json"],
        &["journal", "dump"],
        &["ingest", "--agents-home", sample.to_str().expect("utf-8"), "--recorded-home", "/home/dev"],
        &["journal", "salvage", "--to", salvaged.to_str().expect("utf-8")],
        &["journal", "compact"],
        &["journal", "replay"],
        &["journal", "stress", "--records", "50", "--size", "64"],
    ];
    let index = home.join("projections").join("index");
    for args in commands {
        if args == ["journal", "replay"] {
            // The replay's last step, after its first line: the index built again.
            std::fs::remove_dir_all(&index).expect("remove the index");
        }
        let out = origin_unread(home, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && !stderr.contains("panicked"), "{args:?}: {:?}: {stderr}", out.status);
    }
    assert!(std::fs::read_dir(&salvaged).is_ok_and(|d| d.flatten().any(|e| e.path().extension().is_some_and(|x| x == "seg"))), "salvaged");
    assert!(index.join("manifest").exists(), "the replay rebuilt the index after its reader had gone");
    // Standard error's reader gone too, for a command that has something to say there (no
    // agent logs on this machine: it reads the samples): it still does its work.
    let fresh = tempfile::tempdir().expect("tempdir");
    let out = origin_readers_gone(fresh.path(), &["ingest", "--samples-if-none", sample.to_str().expect("utf-8")], true);
    assert!(out.status.success(), "ingest with no reader of its stdout or stderr: {:?}", out.status);
    let status = json(origin(fresh.path(), &["status", "--json"]));
    assert!(status["records"].as_u64().is_some_and(|r| r > 0), "the samples were read: {status}");
    // A verdict still reaches its exit code: a damaged journal verified with no reader.
    let journal = home.join("journal");
    let mut segments: Vec<PathBuf> = std::fs::read_dir(&journal).expect("journal").map(|e| e.expect("entry").path()).collect();
    segments.sort();
    let first = segments.iter().find(|p| p.extension().is_some_and(|e| e == "seg")).expect("a segment").clone();
    let mut bytes = std::fs::read(&first).expect("read");
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&first, bytes).expect("write");
    let out = origin_unread(home, &["journal", "verify"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "the damage's exit code: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Whether the store's text index has a committed segment on disk.
fn index_committed(home: &Path) -> bool {
    std::fs::read_dir(home.join("projections").join("index"))
        .is_ok_and(|d| d.flatten().any(|e| e.path().extension().is_some_and(|x| x == "segment")))
}

/// A command saves what it rebuilt however few records the store holds (the sample's are
/// fewer than a checkpoint's count): the state's snapshot when there was none, the text index
/// when it had no commit (deleted, or rebuilt for a newer tokenizer), so that the next command
/// does not rebuild them again.
#[test]
fn a_command_saves_projections_it_rebuilt_however_few_records_the_store_holds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    ingest_sample(home);
    let snapshot = home.join("projections").join("state.snap");
    let _ = std::fs::remove_file(&snapshot);
    let _ = std::fs::remove_dir_all(home.join("projections").join("index"));
    json(origin(home, &["search", "库存", "--json"]));
    assert!(snapshot.exists(), "the state's snapshot saved");
    assert!(index_committed(home), "the index committed");
    let saved = std::fs::read(&snapshot).expect("snapshot");
    // The index alone gone: built again, and committed, while the snapshot stands.
    std::fs::remove_dir_all(home.join("projections").join("index")).expect("remove the index");
    json(origin(home, &["search", "库存", "--json"]));
    assert!(index_committed(home), "the index committed again");
    assert_eq!(std::fs::read(&snapshot).expect("snapshot"), saved, "the current snapshot is not written again");
    // A damaged snapshot is refused once, and replaced by the command that refused it.
    let mut damaged = saved.clone();
    let at = damaged.len() - 1;
    damaged[at] ^= 1;
    std::fs::write(&snapshot, &damaged).expect("damage");
    let refused = origin(home, &["search", "库存", "--json"]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not used"), "{}", String::from_utf8_lossy(&refused.stderr));
    let next = origin(home, &["search", "库存", "--json"]);
    assert!(!String::from_utf8_lossy(&next.stderr).contains("not used"), "{}", String::from_utf8_lossy(&next.stderr));
}

#[test]
fn forget_hides_an_event_and_restore_brings_it_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    ingest_sample(home);
    let found = json(origin(home, &["search", "库存", "--json", "--limit", "1"]));
    let id = found["events"][0]["id"].as_str().expect("an event").to_owned();
    let f = json(origin(home, &["forget", &id, "--reason", "pasted a secret", "--json"]));
    let tmb = f["tombstone"].as_str().expect("tombstone").to_owned();
    assert_eq!(f["excluded_events"], 1);
    let gone = origin(home, &["get", &id]);
    assert!(!gone.status.success());
    assert_eq!(String::from_utf8_lossy(&gone.stderr).trim(), format!("origin: {id} has been forgotten."));
    let list = json(origin(home, &["tombstones", "--json"]));
    assert_eq!(list[0]["tombstone"], tmb.as_str());
    assert_eq!(list[0]["reason"], "pasted a secret");
    assert_eq!(list[0]["author"].as_str().expect("author").split('@').next(), Some("user"));
    assert_eq!(list[0]["restored"], Value::Null);
    json(origin(home, &["restore", &tmb, "--json"]));
    let back = json(origin(home, &["get", &id, "--json"]));
    assert_eq!(back["id"], id.as_str());
    let list = json(origin(home, &["tombstones", "--json"]));
    assert!(list[0]["restored"].is_object(), "{list}");
    // Restored again: nothing is recorded, and the answer says who lifted it, and when.
    let records = json(origin(home, &["status", "--json"]))["records"].clone();
    let again = json(origin(home, &["restore", &tmb, "--json"]));
    assert_eq!(again["restored"], Value::Null, "{again}");
    assert_eq!(again["lifted_before"], list[0]["restored"], "{again}");
    assert_eq!(json(origin(home, &["status", "--json"]))["records"], records, "a second restore records nothing");
    let bad = origin(home, &["restore", "tmb_000000000000", "--json"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("Unknown tombstone tmb_000000000000."));
}

/// A session without a title lists its first prompt; once that prompt is forgotten, the next
/// visible prompt (as a timeline of the session and a listing of sessions both say), and the
/// first again once the forget is lifted. (A forget names no new first prompt, as an agent's
/// later record does after a rewind: the session listed neither title nor prompt.)
#[test]
fn a_session_whose_first_prompt_is_forgotten_lists_its_next() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    ingest_sample(home);
    let session = "8c3f1b6e-2d7a-4e90-b5c4-6a9d0e1f2b37";
    let prompts = || -> Vec<Value> {
        let listed = json(origin(home, &["timeline", "--since", "2000-01-01", "--json"]));
        let one = json(origin(home, &["timeline", "--session", session, "--json"]));
        let listed = listed["sessions"].as_array().expect("sessions").iter().find(|s| s["session"] == session).expect("listed")["prompt"].clone();
        vec![listed, one["session"]["prompt"].clone()]
    };
    let events = json(origin(home, &["timeline", "--session", session, "--json"]));
    let asked: Vec<(String, String)> = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["role"] == "user" && e["kind"] == "message")
        .map(|e| (e["id"].as_str().expect("id").to_owned(), e["text"].as_str().expect("text").chars().take(80).collect()))
        .collect();
    assert!(asked.len() >= 3, "{events}");
    assert_eq!(prompts(), vec![Value::from(asked[0].1.as_str()); 2], "the first prompt");
    let first = json(origin(home, &["forget", &asked[0].0, "--reason", "a secret", "--json"]));
    assert_eq!(prompts(), vec![Value::from(asked[1].1.as_str()); 2], "the next prompt once the first is forgotten");
    json(origin(home, &["forget", &asked[1].0, "--reason", "a secret too", "--json"]));
    assert_eq!(prompts(), vec![Value::from(asked[2].1.as_str()); 2], "the third once the second is forgotten too");
    json(origin(home, &["restore", first["tombstone"].as_str().expect("tombstone"), "--json"]));
    assert_eq!(prompts(), vec![Value::from(asked[0].1.as_str()); 2], "the first again once restored");
}

/// Salvages the journal of the store at `home` into a folder of its own and puts that in the
/// journal's place (the damaged one moved aside); returns what salvage printed.
fn salvage_in_place(home: &Path) -> String {
    let salvaged = home.join("salvaged");
    let out = origin(home, &["journal", "salvage", "--to", salvaged.to_str().expect("utf-8")]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    std::fs::rename(home.join("journal"), home.join("journal.damaged")).expect("move the journal aside");
    std::fs::rename(&salvaged, home.join("journal")).expect("the salvaged journal in its place");
    said
}

/// A record that passes its checksum but does not decode (here a `remembered` record of
/// bytes that are none: a faulty build's, or memory that flipped before the checksum was
/// taken): every read that reaches it stops, exit 1, saying its offset and what to run;
/// `journal verify` names its segment and byte (exit 1, where it said "clean"); `journal
/// salvage` leaves it out and copies every other record (it copied it), and the salvaged
/// store answers as before it was written.
#[test]
fn a_record_that_does_not_decode_is_found_by_verify_and_left_out_by_salvage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    ingest_sample(home);
    let before = json(origin(home, &["search", "库存", "--json"]));
    let j = origin_engine::Journal::open(home.join("journal"), origin_engine::Options::default()).expect("journal");
    let bad = j.next_offset();
    j.append(vec![origin_engine::NewRecord::raw(origin_engine::RecordKind::Remembered as u8, 1, vec![0xff; 64])]).expect("append");
    let records = j.next_offset();
    drop(j);
    let read = origin(home, &["search", "库存", "--json"]);
    let said = String::from_utf8_lossy(&read.stderr);
    assert_eq!(read.status.code(), Some(1), "{said}");
    assert!(said.contains(&format!("record at offset {bad} could not be decoded")) && said.contains("origin journal salvage --to DIR"), "{said}");
    let verify = origin(home, &["journal", "verify"]);
    let said = String::from_utf8_lossy(&verify.stdout).to_string() + &String::from_utf8_lossy(&verify.stderr);
    assert_eq!(verify.status.code(), Some(1), "{said}");
    let segment = segment_files(home).last().expect("a segment").display().to_string();
    assert!(said.contains(&segment) && said.contains(&format!("record at offset {bad} passes its checksum but does not decode")), "{said}");
    // Its frame, and those around it, check out: the journal takes writes after it, and
    // verify does not say otherwise.
    assert!(said.contains("1 record(s) that pass their checksums and do not decode") && !said.contains("writes are refused"), "{said}");
    let said = salvage_in_place(home);
    assert!(said.contains(&format!("copied {} records", records - 1)) && said.contains(&format!("offset {bad} lost")), "{said}");
    assert_eq!(json(origin(home, &["search", "库存", "--json"])), before);
}

/// The journal's last segment file removed (a user's `rm`, a backup restored without its
/// newest file) after an entry was remembered in it: every command exits 1 naming the file
/// gone and saying what to run (a write made the segment again, gave the lost records' offsets
/// to new ones, and search answered without the entry, saying nothing); verify names it; the
/// salvaged store answers as before the entry.
#[test]
fn a_journal_whose_last_segment_file_is_gone_is_damage_not_a_shorter_journal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    ingest_sample(home);
    let before = json(origin(home, &["search", "库存", "--json"]));
    // A second segment: the first sealed by a handle that writes small segments.
    let small = origin_engine::Options { segment_size_bytes_max: 4096, ..origin_engine::Options::default() };
    let j = origin_engine::Journal::open(home.join("journal"), small).expect("journal");
    j.append(vec![origin_engine::NewRecord::scratch(vec![0; 16])]).expect("append");
    drop(j);
    let segments = segment_files(home);
    assert_eq!(segments.len(), 2, "{segments:?}");
    let entry = json(origin(home, &["remember", "kiwi harvest plan", "--quote", "库存", "--json"]));
    assert!(entry["entry"]["id"].is_string(), "{entry}");
    std::fs::remove_file(&segments[1]).expect("remove the last segment");
    let gone = segments[1].display().to_string();
    for args in [&["search", "库存", "--json"][..], &["remember", "another fact", "--quote", "库存"][..]] {
        let out = origin(home, args);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {said}");
        assert!(said.contains(&gone) && said.contains("the segment file is gone") && said.contains("origin journal salvage"), "{args:?}: {said}");
    }
    assert!(!segments[1].exists(), "no segment made again in its place");
    let verify = origin(home, &["journal", "verify"]);
    let said = String::from_utf8_lossy(&verify.stdout).to_string() + &String::from_utf8_lossy(&verify.stderr);
    assert_eq!(verify.status.code(), Some(1), "{said}");
    assert!(said.contains(&gone) && said.contains("the segment file is gone"), "{said}");
    assert!(said.contains("the journal's newest segment file is gone: the store does not open"), "{said}");
    salvage_in_place(home);
    assert_eq!(json(origin(home, &["search", "库存", "--json"])), before);
}

/// One bit of the only segment's header flipped (its creation time: the records are whole):
/// verify reports the header with its 64 bytes, and salvage copies every record under the
/// store's id (it refused, "no readable segment header"), and the salvaged store answers as
/// before.
#[test]
fn a_journal_of_one_segment_whose_header_is_damaged_is_salvaged_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    ingest_sample(home);
    let before = json(origin(home, &["search", "库存", "--json"]));
    let segments = segment_files(home);
    assert_eq!(segments.len(), 1, "{segments:?}");
    let mut bytes = std::fs::read(&segments[0]).expect("read");
    bytes[50] ^= 0x10;
    std::fs::write(&segments[0], &bytes).expect("flip a bit of the header's creation time");
    let verify = json_any(origin(home, &["journal", "verify", "--json"]));
    assert_eq!(verify["damage"][0]["position"], 0, "{verify}");
    assert_eq!(verify["damage"][0]["size_bytes"], 64, "{verify}");
    let said = salvage_in_place(home);
    assert!(said.contains(&format!("copied {} records", verify["records"])) && said.contains("the store id was read from the damaged headers"), "{said}");
    assert_eq!(json(origin(home, &["search", "库存", "--json"])), before);
}

/// A value the command line holds and the command refuses (a limit out of range, a time that
/// is none, a kind that is none, a thread count or a segment size no journal takes, a folder
/// that is not empty or inside the store) exits 2, as clap's own refusals do (it exited 3, the
/// code of a store that failed); an id the store does not know still exits 3.
#[test]
fn values_a_command_refuses_exit_2_and_what_the_store_cannot_do_3() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    ingest_sample(home);
    let full = dir.path().join("full");
    std::fs::create_dir_all(&full).expect("mkdir");
    std::fs::write(full.join("x"), b"x").expect("a file in it");
    let full = full.to_str().expect("utf-8");
    let inside = home.join("projections").join("x");
    let refused: [&[&str]; 11] = [
        &["search", "库存", "--limit", "0"],
        &["search", "库存", "--since", "garbage"],
        &["remember", "a fact", "--kind", "rumour", "--quote", "库存"],
        &["timeline", "--limit", "501"],
        &["journal", "stress", "--threads", "0"],
        &["journal", "stress", "--segment-size", "1"],
        &["journal", "compact", "--segment-size", "1"],
        &["journal", "replay", "--until", "not a time", "--to", "/nonexistent-origin-replay"],
        &["journal", "replay", "--to", full],
        &["journal", "replay", "--to", inside.to_str().expect("utf-8")],
        &["journal", "salvage", "--to", full],
    ];
    for args in refused {
        let out = origin(home, args);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(!said.contains("panicked"), "{args:?}: {said}");
    }
    let unknown = origin(home, &["get", "ent_000000000000"]);
    assert_eq!(unknown.status.code(), Some(3), "{}", String::from_utf8_lossy(&unknown.stderr));
}

#[test]
fn journal_replay_rebuilds_the_state_snapshot_and_the_text_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    ingest_sample(home);
    let before = json(origin(home, &["search", "库存", "--json"]));
    let index = home.join("projections").join("index");
    // A segment of the index that does not check out, as if damaged.
    std::fs::create_dir_all(&index).expect("mkdir");
    std::fs::write(index.join("manifest"), b"not a manifest").expect("write");
    // And ingest's cursor snapshot damaged.
    let cursors = home.join("projections").join(origin_ingest::snapshot::CURSORS_FILE_NAME);
    assert!(cursors.exists(), "origin ingest saved its cursors");
    std::fs::write(&cursors, b"not a cursor snapshot").expect("write");
    let out = origin(home, &["journal", "replay"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("snapshot in") && said.contains("indexed "), "{said}");
    assert!(home.join("projections").join("state.snap").exists());
    let manifest = std::fs::read(index.join("manifest")).expect("manifest");
    assert!(manifest.starts_with(b"ORGNIMAN"), "the manifest was written again");
    assert!(std::fs::read_dir(&index).expect("list").any(|e| e.expect("entry").file_name().to_string_lossy().ends_with(".segment")));
    let after = json(origin(home, &["search", "库存", "--json"]));
    assert_eq!(after, before, "same answers from the rebuilt index");
    // The cursors were saved again, as a read of the whole journal finds them.
    let j = origin_engine::Journal::open(home.join("journal"), origin_engine::Options { access: origin_engine::Access::ReadOnly, ..Default::default() })
        .expect("journal");
    let mut full = origin_ingest::cursor::Cursors::default();
    full.catch_up(&j).expect("catch up");
    let (saved, _) = origin_ingest::snapshot::decode(&std::fs::read(&cursors).expect("read"), j.store_id(), j.epoch()).expect("the replay saved the cursors");
    assert_eq!(saved, full);
}

/// `journal replay --until` rebuilds the store as it was at an offset or a time into its own
/// folder, a store that answers as the store did then and takes no agents' logs; refuses an
/// offset past the journal's end, a missing `--to` (as a usage error), a folder that is not
/// empty or is inside the store; and a replay passes over records of kinds the projections do
/// not read, in versions this build cannot decode, as the projections do.
#[test]
fn journal_replay_until_an_offset_or_a_time_and_past_records_it_cannot_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    ingest_sample(home);
    let read_only = origin_engine::Options { access: origin_engine::Access::ReadOnly, ..Default::default() };
    let end = origin_engine::Journal::open(home.join("journal"), read_only.clone()).expect("journal").next_offset();
    assert!(end > 3, "{end} records");
    let summary = |to: &Path| -> Value { serde_json::from_slice(&std::fs::read(to.join("replay.json")).expect("summary")).expect("json") };
    let at_two = dir.path().join("at-two");
    let out = origin(home, &["journal", "replay", "--until", "2", "--to", at_two.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(summary(&at_two)["read_to"], 2);
    // The folder is a store as of then: its journal holds the two records, its sessions are
    // those of the summary, and reading it ingests nothing (the sample's logs are given).
    let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/agent-home");
    let sessions = json(origin(&at_two, &["timeline", "--since", "1971-01-01", "--limit", "500", "--json", "--agents-home", sample.to_str().expect("utf-8")]));
    let listed = sessions["sessions"].as_array().expect("sessions").len();
    assert!(listed > 0 && Some(listed as u64) == summary(&at_two)["sessions"].as_u64(), "{sessions}");
    let copy = origin_engine::Journal::open(at_two.join("journal"), read_only.clone()).expect("the copy's journal");
    assert_eq!(copy.next_offset(), 2, "nothing ingested into the replay");
    drop(copy);
    let ingest_copy = origin(&at_two, &["ingest", "--agents-home", sample.to_str().expect("utf-8")]);
    assert!(!ingest_copy.status.success() && String::from_utf8_lossy(&ingest_copy.stderr).contains("takes no agents' logs"));
    // Folders refused: one not empty, one inside the store.
    let again = origin(home, &["journal", "replay", "--until", "2", "--to", at_two.to_str().expect("utf-8")]);
    assert!(String::from_utf8_lossy(&again.stderr).contains("is not empty"), "{}", String::from_utf8_lossy(&again.stderr));
    let inside = home.join("projections").join("then");
    let out = origin(home, &["journal", "replay", "--until", "2", "--to", inside.to_str().expect("utf-8")]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("is inside the store"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!inside.exists());
    // Also through a folder that does not exist and `..`.
    let around = home.join("no-such-folder").join("..").join("raw").join("then");
    let out = origin(home, &["journal", "replay", "--until", "2", "--to", around.to_str().expect("utf-8")]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("is inside the store"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!home.join("raw").join("then").exists());
    // And through a symlink, whose `..` the system takes after following it.
    let outside = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(home.join("raw").join("claude-code"), outside.path().join("link")).expect("symlink");
    let through = outside.path().join("link").join("..").join("..").join("journal").join("x");
    let out = origin(home, &["journal", "replay", "--until", "2", "--to", through.to_str().expect("utf-8")]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("is inside the store"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!home.join("journal").join("x").exists());
    let before_all = dir.path().join("before-all");
    let out = origin(home, &["journal", "replay", "--until", "2000-01-01T00:00:00Z", "--to", before_all.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(summary(&before_all)["read_to"], 0);
    assert_eq!(summary(&before_all)["sessions"], 0);
    let past = origin(home, &["journal", "replay", "--until", &(end + 1).to_string(), "--to", dir.path().join("past").to_str().expect("utf-8")]);
    assert_eq!(past.status.code(), Some(2), "a value the command refused");
    let said = String::from_utf8_lossy(&past.stderr);
    assert!(said.contains(&format!("--until {} is past the journal's end: its records end before offset {end}", end + 1)), "{said}");
    assert!(!dir.path().join("past").exists(), "nothing written");
    let no_to = origin(home, &["journal", "replay", "--until", "2"]);
    assert_eq!(no_to.status.code(), Some(2), "a usage error");
    assert!(String::from_utf8_lossy(&no_to.stderr).contains("--to <DIR>"));
    // A record of a kind the projections pass over, in a version this build cannot decode.
    let j = origin_engine::Journal::open(home.join("journal"), origin_engine::Options::default()).expect("journal");
    j.append(vec![origin_engine::NewRecord::raw(origin_engine::RecordKind::TokenCreated as u8, 200, b"from a later version".to_vec())])
        .expect("append");
    drop(j);
    let whole = dir.path().join("whole");
    let out = origin(home, &["journal", "replay", "--until", &(end + 1).to_string(), "--to", whole.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(summary(&whole)["read_to"], end + 1);
    let out = origin(home, &["journal", "replay"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A segment of the text index whose structures check out but whose body does not match its
/// checksum (a bit flipped on disk): the store opens, the search finds the damage before it
/// reads the segment, says so, builds the index again from the journal and answers as before.
#[test]
fn a_search_finds_a_damaged_index_segment_and_answers_from_the_index_built_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    ingest_sample(home);
    // Written to segments, as a later start finds them.
    let out = origin(home, &["journal", "replay"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let before = json(origin(home, &["search", "库存", "--json"]));
    assert!(before["events"].as_array().is_some_and(|e| !e.is_empty()), "{before}");
    let index = home.join("projections").join("index");
    let segments: Vec<PathBuf> = std::fs::read_dir(&index)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "segment"))
        .collect();
    assert!(!segments.is_empty(), "the replay wrote segments");
    for s in &segments {
        // A byte of the first document's row: no structure read on open checks it.
        let mut bytes = std::fs::read(s).expect("read");
        bytes[40] ^= 0x04;
        std::fs::write(s, &bytes).expect("write");
    }
    let out = origin(home, &["search", "库存", "--json"]);
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(said.contains("rebuilding the text index from the journal") && said.contains("body CRC"), "{said}");
    assert_eq!(json(out), before, "the same answers from the index built again");
    // The index written again checks out: the next search says nothing of damage.
    let out = origin(home, &["search", "库存", "--json"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("rebuilding"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json(out), before);
}

/// A torn tail (the last write of a process that died before it was acknowledged) is cut by
/// the first command that opens the journal for writing, which says so, with where the bytes
/// were kept; the next says nothing; both answer.
#[test]
fn the_command_that_cuts_a_torn_tail_says_so_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    ingest_sample(home);
    let segments = segment_files(home);
    let last = segments.last().expect("a segment");
    let before = std::fs::metadata(last).expect("segment").len();
    let mut bytes = std::fs::read(last).expect("segment");
    bytes.extend_from_slice(b"a write cut short");
    std::fs::write(last, bytes).expect("torn");
    let first = origin(home, &["timeline", "--limit", "1"]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let said = String::from_utf8_lossy(&first.stderr);
    assert!(said.contains(&format!("17 bytes after byte {before} of {} were cut; they are kept in ", last.display())), "{said}");
    assert_eq!(std::fs::metadata(last).expect("segment").len(), before);
    let second = origin(home, &["timeline", "--limit", "1"]);
    assert!(second.status.success());
    assert!(!String::from_utf8_lossy(&second.stderr).contains("cut short"), "{}", String::from_utf8_lossy(&second.stderr));
}

/// A forgotten event cannot be cited: a correction does not carry over a source forgotten
/// since the corrected version was written (here by a forget of another entry citing it), and
/// one whose every source was forgotten must cite another. Restoring the forget later does not
/// add the source to the correction. (Then, on the same entries: a correction whose validity
/// would end before it starts is refused.)
#[test]
fn a_correction_does_not_carry_over_a_source_forgotten_since() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    ingest_sample(home);
    let found = json(origin(home, &["search", "库存", "--json", "--limit", "2"]));
    let ids: Vec<String> = found["events"].as_array().expect("events").iter().map(|e| e["id"].as_str().expect("id").to_owned()).collect();
    let [e, f] = [ids[0].as_str(), ids[1].as_str()];
    let entry = |text: &str, cites: &[&str]| -> String {
        let mut args = vec!["remember", text, "--json"];
        for c in cites {
            args.extend(["--cite", c]);
        }
        json(origin(home, &args))["entry"]["id"].as_str().expect("entry id").to_owned()
    };
    let x = entry("x cites both", &[e, f]);
    let w = entry("w cites the first only", &[e]);
    let z = entry("z cites the first too", &[e]);
    let t = json(origin(home, &["forget", &z, "--reason", "the user asked", "--json"]));
    let tmb = t["tombstone"].as_str().expect("tombstone").to_owned();
    assert_eq!(t["excluded_events"], 1, "{t}");
    let cited = |id: &str| -> Vec<String> {
        let got = json(origin(home, &["get", id, "--json"]));
        got["sources"].as_array().expect("sources").iter().map(|s| s["id"].as_str().expect("id").to_owned()).collect()
    };
    assert_eq!(cited(&x), [f], "the forgotten event leaves the entry's sources");
    let x2 = json(origin(home, &["correct", &x, "x corrected", "--json"]))["entry"]["id"].as_str().expect("id").to_owned();
    let bad = origin(home, &["correct", &w, "w corrected", "--json"]);
    assert!(!bad.status.success());
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(said.contains("`--cite` or `--quote` must be given") && said.contains(&format!("every event {w} cited has been forgotten")) && said.contains("cite at least one event"), "{said}");
    let w2 = json(origin(home, &["correct", &w, "w corrected", "--cite", f, "--json"]))["entry"]["id"].as_str().expect("id").to_owned();
    json(origin(home, &["restore", &tmb, "--json"]));
    assert_eq!(cited(&x), [e, f], "the old version cites both again");
    assert_eq!(cited(&x2), [f], "the correction never cited the forgotten event");
    assert_eq!(cited(&w2), [f]);
    // A correction's validity, with the old version's bounds where none is given, must end
    // after it starts.
    let w3 = json(origin(home, &["correct", &w2, "w until 2029", "--valid-to", "2029-01-01", "--json"]))["entry"]["id"].as_str().expect("id").to_owned();
    let late = origin(home, &["correct", &w3, "w from 2030", "--valid-from", "2030-01-01", "--json"]);
    assert!(!late.status.success());
    let said = String::from_utf8_lossy(&late.stderr);
    assert!(said.contains("`--valid-from` must be before the `--valid-to` the corrected version keeps (give `--valid-to` too"), "{said}");
    let late = origin(home, &["correct", &w3, "w from 2030", "--valid-from", "2030-01-01", "--valid-to", "2029-06-01", "--json"]);
    assert!(String::from_utf8_lossy(&late.stderr).contains("`--valid-to` must be after `--valid-from`"), "{}", String::from_utf8_lossy(&late.stderr));
}

/// A replay's store shows the store as it was: reading it takes in no agents' logs and no
/// memory files (a project's CLAUDE.md changed since is not imported), and it judges entries'
/// validity as of the replay's bound, not today.
#[test]
fn a_replays_store_takes_nothing_new_and_reads_as_of_its_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("store");
    let agents = dir.path().join("agents");
    std::fs::create_dir_all(&agents).expect("agents");
    crate::ingest_memory::copy_tree(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/agent-home"), &agents);
    // A session whose working folder exists as written (found without --recorded-home), with
    // its project's CLAUDE.md.
    let project = dir.path().join("kiwi-farm");
    std::fs::create_dir_all(&project).expect("project");
    std::fs::write(project.join("CLAUDE.md"), "# kiwi-farm\n\n- Harvest in May.\n").expect("CLAUDE.md");
    let session = agents.join(".claude").join("projects").join("-kiwi-farm");
    std::fs::create_dir_all(&session).expect("session folder");
    let line = crate::ingest_incremental::line("k1", "plan the kiwi harvest").replace("/home/dev/p", project.to_str().expect("utf-8"));
    std::fs::write(session.join("s1.jsonl"), line + "\n").expect("log");
    let agents_arg = agents.to_str().expect("utf-8").to_owned();
    let with_agents = |args: &[&str]| -> Vec<String> {
        args.iter().map(|a| (*a).to_owned()).chain(["--agents-home".into(), agents_arg.clone(), "--recorded-home".into(), "/home/dev".into()]).collect()
    };
    let run = |home: &Path, args: Vec<String>| origin(home, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let out = run(&home, with_agents(&["ingest"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // An entry valid for a few seconds more, then the replay, then its end passes.
    let until = jiff::Timestamp::now().checked_add(jiff::SignedDuration::from_secs(3)).expect("time").to_string();
    let e = json(run(&home, with_agents(&["remember", "kiwi harvest plan", "--quote", "库存", "--valid-to", &until, "--json"])));
    let id = e["entry"]["id"].as_str().expect("id").to_owned();
    let then = dir.path().join("then");
    let out = origin(&home, &["journal", "replay", "--to", then.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let records = || origin_engine::Journal::open(then.join("journal"), origin_engine::Options { access: origin_engine::Access::ReadOnly, ..Default::default() }).expect("journal").next_offset();
    let copied = records();
    std::fs::write(agents.join("demo-app").join("CLAUDE.md"), "# demo-app\n\nA rule written after the replay.\n").expect("change CLAUDE.md");
    std::fs::write(project.join("CLAUDE.md"), "# kiwi-farm\n\n- Harvest in June, written after the replay.\n").expect("change CLAUDE.md");
    std::thread::sleep(std::time::Duration::from_millis(3500));
    let found = json(run(&then, with_agents(&["search", "kiwi", "--json"])));
    assert_eq!(found["entries"][0]["id"], id.as_str(), "valid as of the replay's bound: {found}");
    assert_eq!(records(), copied, "nothing taken into the replay's store");
    // Its events' lines are traced to the mirrors of the store it shows.
    let event = json(run(&then, with_agents(&["search", "库存", "--json", "--limit", "1"])))["events"][0]["id"].as_str().expect("an event").to_owned();
    let traced = json(origin(&then, &["sources", &event, "--json"]));
    let mirror = traced[0]["mirror_file"].as_str().expect("mirror_file");
    assert!(PathBuf::from(format!("{mirror}.zst")).is_file(), "{traced}");
    // A replay of the replay shows the same store: the same mirrors.
    let again = dir.path().join("again");
    let out = origin(&then, &["journal", "replay", "--to", again.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let traced = json(origin(&again, &["sources", &event, "--json"]));
    assert_eq!(traced[0]["mirror_file"].as_str(), Some(mirror), "{traced}");
    // And as of the same time (its records' times are the first copy's, later than the bound).
    let summary = |d: &Path| -> Value { serde_json::from_slice(&std::fs::read(d.join("replay.json")).expect("replay.json")).expect("json") };
    assert_eq!(summary(&again)["as_of_unix_ms"], summary(&then)["as_of_unix_ms"]);
    let found = json(run(&again, with_agents(&["search", "kiwi", "--json"])));
    assert_eq!(found["entries"][0]["id"], id.as_str(), "valid as of the first replay's bound: {found}");
    let now = json(run(&home, with_agents(&["search", "kiwi", "--json"])));
    assert_eq!(now["entries"].as_array().map(Vec::len), Some(0), "the store itself: ended since: {now}");
}

/// An entry written before citations were made one per event, citing an event twice (once
/// without a quote, once with one): `get` and `sources` list the event once, with the quote,
/// and a correction carries it over once.
#[test]
fn an_entry_written_citing_an_event_twice_is_listed_with_it_once() {
    use origin_engine::record::{Body, Citation, EntryKind, EntryVersion};
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    ingest_sample(home);
    let found = json(origin(home, &["search", "库存", "--json", "--limit", "1"]));
    let event = found["events"][0]["id"].as_str().expect("an event").to_owned();
    let text = found["events"][0]["text"].as_str().expect("text");
    let quote: String = text.chars().take(4).collect();
    let id = "ent_0123456789abcdef".to_owned();
    let version = EntryVersion {
        id: id.clone(),
        root: id.clone(),
        supersedes: None,
        kind: EntryKind::Knowledge,
        text: "Stock is booked twice when imports overlap.".into(),
        confidence: 0.8,
        project: None,
        author: "claude-code@laptop".into(),
        created_unix_ms: 1_792_000_000_000,
        valid_from_unix_ms: None,
        valid_to_unix_ms: None,
        sources: vec![Citation { event_id: event.clone(), quote: None }, Citation { event_id: event.clone(), quote: Some(quote.clone()) }],
        imported: false,
    };
    let j = origin_engine::Journal::open(home.join("journal"), origin_engine::Options::default()).expect("journal");
    j.append(vec![origin_engine::NewRecord::new(&Body::Remembered(version)).expect("record")]).expect("append");
    drop(j);
    let got = json(origin(home, &["get", &id, "--json"]));
    let cited = got["sources"].as_array().expect("sources");
    assert_eq!(cited.len(), 1, "{got}");
    assert_eq!((cited[0]["id"].as_str(), cited[0]["quote"].as_str()), (Some(event.as_str()), Some(quote.as_str())), "{got}");
    let traced = json(origin(home, &["sources", &id, "--json"]));
    assert_eq!(traced.as_array().map(Vec::len), Some(1), "{traced}");
    let corrected = json(origin(home, &["correct", &id, "Stock is booked twice when two imports overlap.", "--json"]));
    let new_id = corrected["entry"]["id"].as_str().expect("new id").to_owned();
    let traced = json(origin(home, &["sources", &new_id, "--json"]));
    let items = traced.as_array().expect("list");
    assert_eq!(items.len(), 1, "{traced}");
    assert_eq!(items[0]["quote"].as_str(), Some(quote.as_str()), "{traced}");
}

/// An exported session (ZCode's, read from its database) is named by its database and session
/// in `sources`, as its records name it: its key is no file, and is no log that moved.
#[test]
fn sources_names_an_exported_session_by_its_database_and_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("store");
    ingest_sample(&home);
    let traced = json(origin(&home, &["sources", "zcode:prt_7e75aec1cea1JlkdzfeqO2yQSS", "--json"]));
    let db = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/agent-home/.zcode/cli/db/db.sqlite");
    let named = traced[0]["original_file"].as_str().unwrap_or_else(|| panic!("{traced}"));
    assert!(named.starts_with(&format!("{}#session/", db.display())), "{traced}");
}

/// The store's home given relative (`--home store`) is made absolute: `sources` names a mirror
/// file that can be opened from anywhere. An empty `HOME` is no home (its `.origin` was the
/// current folder's): without `--home` or `ORIGIN_HOME`, the command says so and makes nothing.
#[test]
fn a_relative_store_home_is_made_absolute_and_an_empty_home_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/agent-home");
    let run = |args: &[&str]| {
        Command::new(origin_bin())
            .current_dir(dir.path())
            .args(args)
            .env("ORIGIN_WATCH_INTERVAL_MS", "0")
            .env("HOME", "")
            .env_remove("ORIGIN_HOME")
            .output()
            .expect("run origin")
    };
    let out = run(&["--home", "store", "ingest", "--agents-home", sample.to_str().expect("utf-8"), "--recorded-home", "/home/dev"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let agents = sample.to_str().expect("utf-8");
    let event = json(run(&["--home", "store", "search", "库存", "--json", "--limit", "1", "--agents-home", agents]))["events"][0]["id"].as_str().expect("an event").to_owned();
    let traced = json(run(&["--home", "store", "sources", &event, "--json"]));
    let mirror = PathBuf::from(traced[0]["mirror_file"].as_str().expect("mirror_file"));
    assert!(mirror.is_absolute() && mirror.starts_with(dir.path().join("store")), "{traced}");
    let out = run(&["status"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("HOME is set (or it is empty)"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!dir.path().join(".origin").exists(), "no store made in the current folder");
    // An empty ORIGIN_HOME is named as such (the parser said `--home` lacked a value); with
    // `--home` given it does not matter.
    let empty = Command::new(origin_bin()).current_dir(dir.path()).args(["status"]).env("ORIGIN_HOME", "").output().expect("run origin");
    assert_eq!(empty.status.code(), Some(3), "{empty:?}");
    assert!(String::from_utf8_lossy(&empty.stderr).starts_with("origin: ORIGIN_HOME is set but empty"), "{}", String::from_utf8_lossy(&empty.stderr));
    let given = Command::new(origin_bin()).current_dir(dir.path()).args(["--home", "store", "status"]).env("ORIGIN_HOME", "").output().expect("run origin");
    assert!(given.status.success(), "{}", String::from_utf8_lossy(&given.stderr));
}

/// `origin journal verify`'s verdict says what damage does: in a sealed segment's records, a
/// read of one fails and writes go on (it said writes were refused); in the last segment,
/// writes are refused.
#[test]
fn verify_says_whether_the_damage_found_refuses_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    let stress = |records: &str| origin(home, &["journal", "stress", "--records", records, "--size", "300", "--segment-size", "16384", "--quiet"]);
    assert!(stress("200").status.success());
    let segments = segment_files(home);
    assert!(segments.len() >= 3, "{segments:?}");
    let flip = |segment: &Path| {
        let mut bytes = std::fs::read(segment).expect("read");
        bytes[64 + 28 + 100] ^= 0x10;
        std::fs::write(segment, bytes).expect("write");
    };
    flip(&segments[0]);
    let out = origin(home, &["journal", "verify"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("1 damaged region(s) in sealed segments: a read of a record there fails") && !said.contains("writes are refused"), "{said}");
    assert!(stress("1").status.success(), "writes go on");
    flip(segments.last().expect("last"));
    let out = origin(home, &["journal", "verify"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("2 damaged region(s), in the last segment: writes are refused"), "{said}");
    assert!(!stress("1").status.success(), "writes refused");
}

/// One Claude Code line of session `session`: a user's or the assistant's message.
fn claude_message(uuid: &str, parent: Option<&str>, session: &str, time: &str, role: &str, text: &str) -> String {
    let content = if role == "user" { serde_json::json!(text) } else { serde_json::json!([{ "type": "text", "text": text }]) };
    serde_json::json!({
        "type": role, "uuid": uuid, "parentUuid": parent, "sessionId": session, "cwd": "/home/dev/p",
        "timestamp": time, "message": { "role": role, "content": content }
    })
    .to_string()
}

/// Claude Code resumes a session in a new file that begins with the lines of the one it
/// resumes, uuids and times as they were: the conversation stays in the session where it was
/// said (with its count and title), found once by search; the resumed session lists what was
/// said in it. Read in two runs, or both new in one (a folder's logs are read oldest first, by
/// the times their lines say: a home copied without its files' times can make the resumed
/// file the older by time of change).
#[test]
fn a_resumed_claude_session_does_not_take_the_conversation_it_copies() {
    // The resumed session's file comes first by name.
    const S1: &str = "bbbbbbbb-0000-4000-8000-000000000001";
    const S2: &str = "aaaaaaaa-0000-4000-8000-000000000002";
    let first = [
        claude_message("u-1", None, S1, "2026-10-20T09:00:00.000Z", "user", "how do we rotate the signing keys"),
        claude_message("u-2", Some("u-1"), S1, "2026-10-20T09:00:05.000Z", "assistant", "Rotate them with the keyring tool, then redeploy."),
        serde_json::json!({"type": "custom-title", "customTitle": "Key rotation", "sessionId": S1}).to_string(),
    ];
    let resumed = [
        claude_message("u-1", None, S2, "2026-10-20T09:00:00.000Z", "user", "how do we rotate the signing keys"),
        claude_message("u-2", Some("u-1"), S2, "2026-10-20T09:00:05.000Z", "assistant", "Rotate them with the keyring tool, then redeploy."),
        claude_message("u-3", Some("u-2"), S2, "2026-10-21T10:00:00.000Z", "user", "and the staging environment too"),
    ];
    for (runs, resumed_changed_first) in [(1, false), (1, true), (2, false)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (home, agents) = (dir.path().join("store"), dir.path().join("agents"));
        let project = agents.join(".claude/projects/-home-dev-p");
        std::fs::create_dir_all(&project).expect("mkdir");
        let write = |session: &str, lines: &[String]| std::fs::write(project.join(format!("{session}.jsonl")), lines.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("write");
        let ingest = || {
            let out = origin(&home, &["ingest", "--agents-home", agents.to_str().expect("utf-8"), "--recorded-home", "/home/dev"]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        };
        if runs == 2 {
            write(S1, &first);
            ingest();
            write(S2, &resumed);
        } else {
            // Both new in one run, the resumed file written first on disk (and listed first by
            // name); older by its time of change, or the first session's.
            write(S2, &resumed);
            write(S1, &first);
            let older = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
            let changed_first = if resumed_changed_first { S2 } else { S1 };
            std::fs::File::options().write(true).open(project.join(format!("{changed_first}.jsonl"))).expect("open").set_modified(older).expect("set mtime");
        }
        ingest();
        let found = json(origin(&home, &["search", "signing keys", "--json"]));
        let sessions: Vec<&str> = found["events"].as_array().expect("events").iter().map(|e| e["session"].as_str().expect("session")).collect();
        assert_eq!(sessions, vec![S1], "found once, where it was said ({runs} runs, resumed changed first: {resumed_changed_first}): {found}");
        let listed = json(origin(&home, &["timeline", "--since", "2000-01-01", "--json"]));
        let by_id = |id: &str| listed["sessions"].as_array().expect("sessions").iter().find(|s| s["session"] == id).cloned();
        let s1 = by_id(S1).expect("the first session is listed");
        assert_eq!((s1["events"].as_u64(), s1["title"].as_str()), (Some(2), Some("Key rotation")), "{listed}");
        let s2 = by_id(S2).expect("the resumed session is listed");
        assert_eq!(s2["events"].as_u64(), Some(1), "{listed}");
        let own = json(origin(&home, &["timeline", "--session", S2, "--json"]));
        let texts: Vec<&str> = own["events"].as_array().expect("events").iter().map(|e| e["text"].as_str().expect("text")).collect();
        assert_eq!(texts, vec!["and the staging environment too"], "{own}");
    }
}

/// The words typed beside a screenshot pasted into a prompt (a line of 24 MB, recorded in
/// pieces) are found, and `sources` gives the line from its beginning, read from the records
/// of its pieces: the same with the mirrors gone (moved with a replay's original, say). The
/// same for a line longer than a read window (40 MB).
#[test]
fn sources_of_a_line_recorded_in_pieces_give_it_from_its_beginning() {
    // A line that fits a read window, and one longer (parsed with its long strings shortened).
    for image in [24_000_000, 40_000_000] {
        sources_of_a_long_line(image);
    }
}

/// See [`sources_of_a_line_recorded_in_pieces_give_it_from_its_beginning`]: a prompt with an
/// image of `image` base64 characters.
fn sources_of_a_long_line(image: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (home, agents) = (dir.path().join("store"), dir.path().join("agents"));
    let project = agents.join(".claude/projects/-home-dev-p");
    std::fs::create_dir_all(&project).expect("mkdir");
    let before = claude_message("u-0", None, "s1", "2026-10-20T08:59:00.000Z", "user", "a line before");
    let long = crate::ingest_incremental::prompt_with_image("big", image, "why is the okapi chart in this screenshot upside down");
    std::fs::write(project.join("s1.jsonl"), format!("{before}\n{long}\n")).expect("write");
    let out = origin(&home, &["ingest", "--agents-home", agents.to_str().expect("utf-8"), "--recorded-home", "/home/dev"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let found = json(origin(&home, &["search", "okapi chart", "--json"]));
    assert_eq!(found["events"][0]["id"], "claude-code:big:1", "{found}");
    let src = json(origin(&home, &["sources", "claude-code:big:1", "--json"]));
    let item = &src[0];
    assert_eq!(item["line"], 2, "{src}");
    let raw = item["raw"].as_str().expect("raw");
    let shown: String = long.chars().take(4000).collect();
    assert!(raw.starts_with(&shown), "the line from its beginning: {}", &raw[..raw.len().min(120)]);
    assert!(raw.len() < long.len(), "cut to 4,000 characters");
    std::fs::remove_dir_all(home.join("raw")).expect("the mirrors removed");
    let again = json(origin(&home, &["sources", "claude-code:big:1", "--json"]));
    assert_eq!(again, src, "the same from the journal alone");
}

/// A `journal replay --to` killed at random moments (`kill -9`) leaves either nothing, a store
/// as of then that answers, or one marked unfinished that no command opens (it took agents'
/// logs and answered from part of the records, and a replay again there was refused as not
/// empty); a replay run again there finishes it.
#[test]
fn a_replay_killed_part_way_leaves_a_store_that_is_whole_or_refused() {
    use rand::{Rng, SeedableRng};
    let seed = origin_tests::seed(0x5e_91a7);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("store");
    let sample = crate::ingest_memory::fixtures().join("agent-home");
    let agents = sample.to_str().expect("utf-8");
    assert!(origin(&home, &["ingest", "--agents-home", agents, "--recorded-home", "/home/dev"]).status.success());
    // Records enough that a replay takes a while (scratch records are copied too).
    assert!(origin(&home, &["journal", "stress", "--records", "10000", "--size", "1024"]).status.success());
    // Kills spread over a whole replay's time on this machine.
    let started = std::time::Instant::now();
    assert!(origin(&home, &["journal", "replay", "--to", dir.path().join("then-whole").to_str().expect("utf-8")]).status.success());
    let whole_ms = (started.elapsed().as_millis() as u64).max(10);
    let (mut refused, mut whole) = (0, 0);
    for round in 0..10 * origin_tests::scale() {
        let to = dir.path().join(format!("then-{round}"));
        let mut child = Command::new(origin_bin())
            .arg("--home")
            .arg(&home)
            .args(["journal", "replay", "--to"])
            .arg(&to)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(std::time::Duration::from_millis(rng.random_range(whole_ms / 3..whole_ms)));
        let _ = child.kill();
        child.wait().expect("wait");
        // Looked at before any command runs there (a search makes a store where there is none).
        // Unfinished: its replay.json says so (written first), or its journal is marked.
        let says = std::fs::read(to.join("replay.json")).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok()).is_some_and(|v| v["unfinished"].is_string());
        let marked = says || origin_engine::journal::unfinished(&origin_engine::vfs::OsFs, &to.join("journal")).is_some();
        let made = to.join("journal").exists();
        if marked {
            let search = origin(&to, &["search", "URLSearchParams", "--json", "--agents-home", agents]);
            refused += 1;
            assert_eq!(search.status.code(), Some(3), "seed {seed} round {round}");
            assert!(String::from_utf8_lossy(&search.stderr).contains("is unfinished"), "seed {seed} round {round}");
            let ingest = origin(&to, &["ingest", "--agents-home", agents]);
            assert!(!ingest.status.success(), "seed {seed} round {round}: an unfinished replay took agents' logs");
        } else if made {
            // Whole: every record, the state, and the file that keeps agents' logs out.
            let search = origin(&to, &["search", "URLSearchParams", "--json", "--agents-home", agents]);
            whole += 1;
            assert!(search.status.success(), "seed {seed} round {round}: {}", String::from_utf8_lossy(&search.stderr));
            let records = |h: &Path| json(origin(h, &["status", "--json"]))["records"].as_u64();
            assert_eq!(records(&to), records(&home), "seed {seed} round {round}");
            assert!(to.join("replay.json").exists(), "seed {seed} round {round}");
            continue;
        }
        let again = origin(&home, &["journal", "replay", "--to", to.to_str().expect("utf-8")]);
        assert!(again.status.success(), "seed {seed} round {round}: {}", String::from_utf8_lossy(&again.stderr));
        let found = json(origin(&to, &["search", "URLSearchParams", "--json", "--agents-home", agents]));
        assert!(!found["events"].as_array().expect("events").is_empty(), "seed {seed} round {round}");
    }
    eprintln!("seed {seed}: {refused} kills left an unfinished store, {whole} a whole one");
}
