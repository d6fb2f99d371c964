//! Bad input never stops ingest of anything else, never panics, and is counted; nothing
//! already ingested is lost.

use std::io::Write;

use crate::ingest_incremental::{event_counts, ingested, line, World};

#[test]
fn malformed_garbage_invalid_utf8_and_unknown_types_are_skipped_and_counted() {
    let w = World::new();
    let mut bad = Vec::new();
    bad.extend_from_slice(line("g1", "good before").as_bytes());
    bad.extend_from_slice(b"\n{\"type\":\"user\",\"uuid\":\n"); // truncated JSON, ended by a newline
    bad.extend_from_slice(&[0xff, 0x00, 0xfe, 0x13, 0x37, b'\n']); // binary garbage
    bad.extend_from_slice(b"{\"type\":\"user\",\"text\":\"\xc3\x28 invalid utf-8\"}\n");
    bad.extend_from_slice(b"{\"type\":\"brand-new-record-type\",\"x\":1}\n"); // unknown type: no event, not malformed
    bad.extend_from_slice(b"[1,2,3]\n");
    bad.extend_from_slice(b"\n \t\r\n"); // blank lines: passed over, not malformed
    bad.extend_from_slice(line("g2", "good after").as_bytes());
    bad.push(b'\n');
    std::fs::write(w.log("bad.jsonl"), &bad).expect("write");
    std::fs::write(w.log("fine.jsonl"), format!("{}\n", line("f1", "other file"))).expect("write");
    let summary = w.ingester().run(None, &mut |_| {}).expect("ingest");
    let s = &summary.sources["claude-code"];
    assert_eq!(s.malformed, 4, "truncated JSON, garbage, invalid UTF-8, a JSON array (not the blank lines): {s:?}");
    // Where they are, and why, for the user to look at: the file and the line in it.
    let bad_log = w.log("bad.jsonl").display().to_string();
    let lines: Vec<String> = s.malformed_at.iter().map(|m| m.strip_prefix(&bad_log).unwrap_or(m).split(':').next().unwrap_or("").to_owned()).collect();
    assert_eq!(lines, [" line 2", " line 3", " line 4", " line 6"], "{:?}", s.malformed_at);
    let counts = event_counts(&w.store());
    for id in ["claude-code:g1", "claude-code:g2", "claude-code:f1"] {
        assert_eq!(counts.get(id), Some(&1), "{id}");
    }
    let recs = ingested(&w.store());
    let r = recs.iter().find(|r| r.path.ends_with("bad.jsonl")).expect("record");
    assert_eq!(r.line_end - r.line_start, 9, "every line is read and kept, good or bad");
    let ing = w.ingester();
    assert_eq!(ing.mirrors().read(&r.mirror).expect("mirror"), bad, "bad lines are mirrored verbatim");
}

/// Lines longer than a read window (32 MiB) are kept whole (recorded in pieces) and the lines
/// after them read. One of 94 MB holding long strings (screenshots pasted into a prompt) is
/// parsed with its strings cut to their first 256 KiB: the words typed beside them are found, and
/// `sources`' line starts where the line does; the same beside forty screenshots. One of 40 MB
/// of short values (no long string to shorten) is counted as cut. Before, all were cut: the
/// prompts' words were never found.
#[test]
fn lines_over_a_read_window_are_kept_whole_parsed_with_long_strings_shortened_or_cut() {
    let w = World::new();
    let path = w.log("huge.jsonl");
    let mut f = std::fs::File::create(&path).expect("create");
    writeln!(f, "{}", line("h1", "before the giant")).expect("write");
    // Over two read windows, the words between two images in the middle one, which holds no
    // newline; what is left after the second window (27 MB that do not compress) more than a
    // record stores.
    let image = |n: usize| serde_json::json!({ "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": crate::ingest_incremental::incompressible_base64(n) } });
    let giant = serde_json::json!({
        "type": "user", "uuid": "giant", "sessionId": "s1", "cwd": "/home/dev/p", "timestamp": "2026-10-20T09:00:00.000Z",
        "message": { "role": "user", "content": [image(40_000_000), { "type": "text", "text": "why is the ocelot chart upside down" }, image(54_000_000)] }
    })
    .to_string();
    writeln!(f, "{giant}").expect("write");
    // Forty screenshots of 1.3 MB (at 1 MiB kept of each, more than a parsed line may be).
    let mut shots: Vec<serde_json::Value> = (0..40).map(|_| image(1_300_000)).collect();
    shots.push(serde_json::json!({ "type": "text", "text": "platypus words beside forty screenshots" }));
    let many = serde_json::json!({ "type": "user", "uuid": "many", "sessionId": "s1", "timestamp": "2026-10-20T09:00:01.000Z", "message": { "role": "user", "content": shots } });
    writeln!(f, "{many}").expect("write");
    let numbers = format!("{{\"type\":\"user\",\"uuid\":\"numbers\",\"sessionId\":\"s1\",\"timestamp\":\"2026-10-20T09:00:00.000Z\",\"n\":[{}0]}}", "1,".repeat(20 * 1024 * 1024));
    writeln!(f, "{numbers}").expect("write");
    writeln!(f, "{}", line("h2", "after the giants")).expect("write");
    drop(f);
    let summary = w.ingester().run(None, &mut |_| {}).expect("ingest");
    let s = &summary.sources["claude-code"];
    assert_eq!((s.lines, s.cut, s.malformed), (5, 1, 0), "{s:?}");
    let counts = event_counts(&w.store());
    for id in ["claude-code:h1", "claude-code:h2", "claude-code:giant", "claude-code:giant:1", "claude-code:giant:2", "claude-code:many:40"] {
        assert_eq!(counts.get(id), Some(&1), "{id}: {counts:?}");
    }
    let recs = ingested(&w.store());
    assert!(recs.len() >= 3, "a giant line spreads over several records: {}", recs.len());
    let events: Vec<_> = recs.iter().flat_map(|r| &r.events).collect();
    let typed = events.iter().find(|e| e.id == "claude-code:giant:1").expect("the typed words");
    assert_eq!((typed.line, typed.text.as_str()), (2, "why is the ocelot chart upside down"));
    let image = events.iter().find(|e| e.id == "claude-code:giant").expect("the image");
    assert_eq!(image.text, "[image]");
    let h2 = events.iter().find(|e| e.id == "claude-code:h2").expect("h2");
    assert_eq!(h2.line, 5, "line numbers stay right after giant lines");
    // The record that ends the giant says where it began.
    let ends = recs.iter().find(|r| r.events.iter().any(|e| e.id == "claude-code:giant:1")).expect("the record ending it");
    let said: serde_json::Value = serde_json::from_slice(&ends.state).expect("state");
    assert_eq!(said[origin_ingest::ingest::FIRST_LINE_START_KEY].as_u64(), Some(line("h1", "before the giant").len() as u64 + 1), "where the line began");
    let ing = w.ingester();
    let mirror = &recs[0].mirror;
    let back = ing.mirrors().read(mirror).expect("mirror");
    assert!(back == std::fs::read(&path).expect("read"), "the mirror gives back all bytes");
}

/// A line longer than a read window still being written (no newline yet) waits, its bytes in
/// the mirror's tail (written a window at a time, never held whole); once finished it is read.
#[test]
fn a_line_longer_than_a_window_still_being_written_waits_then_is_read() {
    let w = World::new();
    let path = w.log("unfinished.jsonl");
    let giant = crate::ingest_incremental::prompt_with_image("late", 70 * 1024 * 1024, "words typed beside a screenshot still pasting");
    let before = format!("{}\n", line("u1", "a line before"));
    std::fs::write(&path, format!("{before}{}", &giant[..giant.len() - 10])).expect("write");
    let first = w.ingester().run(None, &mut |_| {}).expect("ingest");
    assert_eq!((first.sources["claude-code"].lines, first.sources["claude-code"].cut), (1, 0), "{:?}", first.sources["claude-code"]);
    let recs = ingested(&w.store());
    let ing = w.ingester();
    assert!(ing.mirrors().read(&recs[0].mirror).expect("mirror") == std::fs::read(&path).expect("read"), "the mirror's tail holds what is not a line yet");
    // A run with nothing new keeps the tail it wrote (it wrote its 70 MB again at every run).
    use std::os::unix::fs::MetadataExt;
    let tail = |p: &std::path::Path| std::fs::metadata(p.with_extension("jsonl.tail")).expect("the tail").ino();
    let mirror_base = w.store().join("raw").join(&recs[0].mirror);
    let written = tail(&mirror_base);
    w.ingester().run(None, &mut |_| {}).expect("ingest with nothing new");
    assert_eq!(tail(&mirror_base), written, "the tail not written again");
    // Changed in place, its length the same (the log changed after the tail was written): the
    // tail is written again, and the mirror is the log's bytes.
    let mut bytes = std::fs::read(&path).expect("read");
    let at = bytes.len() - 100;
    bytes[at] = if bytes[at] == b'x' { b'y' } else { b'x' };
    std::fs::write(&path, &bytes).expect("changed in place");
    w.ingester().run(None, &mut |_| {}).expect("ingest");
    assert!(ing.mirrors().read(&recs[0].mirror).expect("mirror") == bytes, "the tail written again");
    std::fs::write(&path, format!("{before}{giant}\n")).expect("finish");
    let second = w.ingester().run(None, &mut |_| {}).expect("ingest");
    assert_eq!((second.sources["claude-code"].lines, second.sources["claude-code"].cut), (1, 0), "{:?}", second.sources["claude-code"]);
    assert_eq!(event_counts(&w.store()).get("claude-code:late:1"), Some(&1));
}

/// Lines whose events take far more room than their bytes: one line of 200,000 tiny blocks
/// (an event each) is counted as cut; lines that each read a persisted output of 150 KB
/// twenty times give each record only what it can store (it closes on its events' size, not
/// only on its raw bytes). Every run used to fail at such a record, and the files after it.
#[test]
fn lines_whose_events_outgrow_a_record_are_cut_or_spread_over_records() {
    let w = World::new();
    let blocks: Vec<serde_json::Value> = (0..200_000).map(|_| serde_json::json!({"type": "x"})).collect();
    let tiny = serde_json::json!({"type": "assistant", "uuid": "tiny", "sessionId": "s1", "timestamp": "2026-10-20T09:00:00.000Z", "message": {"role": "assistant", "content": blocks}});
    let session = "5a1e0000-0000-4000-8000-000000000009";
    let folder = w.log(session);
    std::fs::create_dir_all(folder.join("tool-results")).expect("mkdir");
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let output: String = (0..150_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (b'a' + (x % 26) as u8) as char
        })
        .collect();
    std::fs::write(folder.join("tool-results/out.txt"), &output).expect("write");
    let preview = format!("<persisted-output>\nOutput too large. Full output saved to: /home/dev/.claude/projects/-p/{session}/tool-results/out.txt\n\nPreview:\nab");
    let results: Vec<serde_json::Value> = (0..20).map(|i| serde_json::json!({"type": "tool_result", "tool_use_id": format!("t{i}"), "content": preview})).collect();
    let mut text = format!("{tiny}\n");
    for n in 0..14 {
        let l = serde_json::json!({"type": "user", "uuid": format!("r{n}"), "sessionId": session, "timestamp": "2026-10-20T09:00:00.000Z", "message": {"role": "user", "content": results}});
        text.push_str(&format!("{l}\n"));
    }
    text.push_str(&format!("{}\n", line("last", "the line after them")));
    std::fs::write(w.log(&format!("{session}.jsonl")), &text).expect("write");
    let summary = w.ingester().run(None, &mut |_| {}).expect("ingest");
    let s = &summary.sources["claude-code"];
    assert_eq!((s.lines, s.cut, s.events), (16, 1, 14 * 20 + 1), "{s:?}");
    let counts = event_counts(&w.store());
    assert_eq!(counts.get("claude-code:last"), Some(&1));
    for r in ingested(&w.store()) {
        let bytes: usize = r.events.iter().map(|e| e.text.len() + e.id.len() + 64).sum();
        assert!(bytes < 12 * 1024 * 1024, "a record of {} lines holds {bytes} bytes of events", r.line_end - r.line_start);
    }
}

/// What no record could hold: a title of 15 MB (a hand-edited log) is kept cut to 1,000
/// characters; a line whose session id is 20 MB is malformed (no agent writes such an id, and
/// the reader keeps ids in the state every record carries); a reader's state grown past 8 MiB
/// (a Codex working directory of 9 MB) is that file's problem, said, while the other files are
/// read (a record the journal refused ended the worker's run: every file after it, at every
/// run).
#[test]
fn what_no_record_can_hold_stops_its_own_file_only() {
    let w = World::new();
    let noise = crate::ingest_incremental::incompressible_base64;
    let titled = format!(
        "{}\n{}\n",
        serde_json::json!({"type": "custom-title", "customTitle": noise(15_000_000), "sessionId": "s1"}),
        line("t1", "a line after the long title")
    );
    std::fs::write(w.log("titled.jsonl"), titled).expect("write");
    let huge_id = serde_json::json!({"type": "user", "uuid": "h1", "sessionId": noise(20_000_000), "timestamp": "2026-10-20T09:00:00.000Z", "message": {"role": "user", "content": "hello"}});
    std::fs::write(w.log("huge-id.jsonl"), format!("{huge_id}\n{}\n", line("h2", "the line after it"))).expect("write");
    std::fs::write(w.log("other.jsonl"), format!("{}\n", line("o1", "another file"))).expect("write");
    let thread = "019a1500-0000-7000-8000-000000000001";
    let rollouts = w.home().join(".codex/sessions/2026/10/20");
    std::fs::create_dir_all(&rollouts).expect("mkdir");
    let codex = [
        serde_json::json!({"timestamp": "2026-10-20T09:00:00Z", "type": "session_meta", "payload": {"id": thread, "cwd": "/home/dev/p"}}),
        serde_json::json!({"timestamp": "2026-10-20T09:00:01Z", "type": "turn_context", "payload": {"cwd": format!("/{}", noise(9_000_000))}}),
        serde_json::json!({"timestamp": "2026-10-20T09:00:02Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}}),
    ];
    std::fs::write(rollouts.join(format!("rollout-2026-10-20T11-00-00-{thread}.jsonl")), codex.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("write");
    for _ in 0..2 {
        let summary = w.ingester().run(None, &mut |_| {}).expect("ingest");
        let (claude, codex) = (&summary.sources["claude-code"], &summary.sources["codex"]);
        assert!(claude.problems.is_empty(), "{claude:?}");
        assert_eq!(codex.problems.len(), 1, "{codex:?}");
        assert!(codex.problems[0].contains("grew to") && codex.problems[0].contains(thread), "{:?}", codex.problems);
    }
    let counts = event_counts(&w.store());
    assert_eq!((counts.get("claude-code:t1"), counts.get("claude-code:h2"), counts.get("claude-code:o1")), (Some(&1), Some(&1), Some(&1)), "{counts:?}");
    let records = ingested(&w.store());
    assert_eq!(records.iter().filter(|r| r.path.ends_with("huge-id.jsonl")).map(|r| r.malformed_lines).sum::<u64>(), 1);
    let title = records.into_iter().flat_map(|r| r.sessions).find_map(|c| c.title).expect("the title");
    assert_eq!(title.chars().count(), 1_000);
}

/// A session id of 2,000 characters (longer than a title is kept to, within what a line may
/// give) names one session: its title's change names it whole, as its events do.
#[test]
fn a_long_session_id_names_one_session() {
    let w = World::new();
    let id = "s".repeat(2_000);
    let lines = [
        serde_json::json!({"type": "user", "uuid": "l1", "sessionId": id, "timestamp": "2026-10-20T09:00:00.000Z", "message": {"role": "user", "content": "hello"}}),
        serde_json::json!({"type": "custom-title", "customTitle": "A long id", "sessionId": id}),
    ];
    std::fs::write(w.log("long-id.jsonl"), lines.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("write");
    w.ingester().run(None, &mut |_| {}).expect("ingest");
    let records = ingested(&w.store());
    let event_session = records.iter().flat_map(|r| &r.events).map(|e| e.session.clone()).next().expect("the event");
    let titled = records.iter().flat_map(|r| &r.sessions).find(|c| c.title.is_some()).expect("the title");
    assert_eq!((titled.session.len(), event_session.len()), (2_000, 2_000));
    assert_eq!(titled.session, event_session);
}

/// A byte order mark before a file's first line (an editor's, or a tool's that wrote the log
/// again) does not make that line malformed; the mirror keeps it.
#[test]
fn a_byte_order_mark_before_the_first_line_is_passed_over() {
    let w = World::new();
    let text = format!("\u{FEFF}{}\n{}\n", line("m1", "the first line"), line("m2", "the second"));
    std::fs::write(w.log("bom.jsonl"), &text).expect("write");
    let summary = w.ingester().run(None, &mut |_| {}).expect("ingest");
    let s = &summary.sources["claude-code"];
    assert_eq!((s.lines, s.events, s.malformed), (2, 2, 0), "{s:?}");
    let counts = event_counts(&w.store());
    assert_eq!(counts.get("claude-code:m1"), Some(&1));
    let recs = ingested(&w.store());
    let ing = w.ingester();
    assert_eq!(ing.mirrors().read(&recs[0].mirror).expect("mirror"), text.as_bytes(), "the mirror keeps the mark");
}

#[test]
fn an_unreadable_entry_does_not_stop_the_other_files() {
    let w = World::new();
    // A dangling symbolic link and a directory that look like logs.
    std::os::unix::fs::symlink("/nonexistent/target.jsonl", w.log("dangling.jsonl")).expect("symlink");
    std::fs::create_dir_all(w.log("adir.jsonl")).expect("mkdir");
    std::fs::write(w.log("ok.jsonl"), format!("{}\n", line("k1", "readable"))).expect("write");
    w.ingester().run(None, &mut |_| {}).expect("ingest");
    assert_eq!(event_counts(&w.store()).get("claude-code:k1"), Some(&1));
}

/// A pipe (FIFO) where an agent's side file, database file or memory file should be (a Grok
/// session's `summary.json` and `updates.jsonl`, ZCode's `db.sqlite-shm` and `db.sqlite-journal`,
/// which SQLite opens itself, a `CLAUDE.md`, said) or a log (a Claude `*.jsonl`, said) is not
/// opened to wait for a writer: ingest finishes (it waited for good, holding the store's ingest
/// lock, and every command of the store after it) and reads the logs beside them. (The run is
/// given two minutes; a run past them is the fault.)
#[test]
fn a_pipe_where_a_side_file_should_be_does_not_stop_ingest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("mkdir");
    crate::ingest_memory::copy_tree(&crate::ingest_memory::fixtures().join("agent-home"), &home);
    let grok = home.join(".grok/sessions/%2Fhome%2Fdev%2Fwork%2Fweather-api/01a1a0af-e7c0-7226-b63c-5ab791b7584a");
    let db = home.join(".zcode/cli/db");
    let claude_log = home.join(".claude/projects/-home-dev-demo-app/piped.jsonl");
    let pipes = [grok.join("summary.json"), grok.join("updates.jsonl"), db.join("db.sqlite-shm"), db.join("db.sqlite-journal"), home.join("demo-app/CLAUDE.md"), claude_log.clone()];
    for p in &pipes {
        let _ = std::fs::remove_file(p);
        let made = std::process::Command::new("mkfifo").arg(p).status().expect("mkfifo");
        assert!(made.success(), "mkfifo {}", p.display());
    }
    let store = dir.path().join("store");
    let mut child = std::process::Command::new(origin_tests::origin_bin())
        .args(["--home", store.to_str().expect("utf-8"), "ingest", "--agents-home", home.to_str().expect("utf-8"), "--recorded-home", "/home/dev"])
        .env("ORIGIN_WATCH_INTERVAL_MS", "0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run origin");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("ingest still waits after two minutes (on a pipe)");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("output");
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    // SQLite opens a database's journal itself: said, as a pipe named as a log the walk lists is.
    assert!(said.contains("db.sqlite-journal is not a regular file"), "{said}");
    assert!(said.contains(&format!("{} is not a regular file (a pipe, socket or device): not read", claude_log.display())), "{said}");
    // A memory file's name given to a pipe is said too (it was passed over without a word).
    assert!(said.contains(&format!("{} is not a regular file (a pipe, socket, device or folder): not read as a memory file", home.join("demo-app/CLAUDE.md").display())), "{said}");
    let found = std::process::Command::new(origin_tests::origin_bin())
        .args(["--home", store.to_str().expect("utf-8"), "timeline", "--since", "2000-01-01", "--json"])
        .env("HOME", "/nonexistent-origin-test-home")
        .output()
        .expect("timeline");
    let listed: serde_json::Value = serde_json::from_slice(&found.stdout).expect("json");
    let sessions: Vec<&str> = listed["sessions"].as_array().expect("sessions").iter().filter_map(|s| s["session"].as_str()).collect();
    assert!(sessions.contains(&"01a1a0af-e7c0-7226-b63c-5ab791b7584a"), "the Grok transcript beside the pipes is read: {sessions:?}");
}
