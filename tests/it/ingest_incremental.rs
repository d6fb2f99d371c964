//! Ingest reads only complete new lines, exactly once, keeps byte-exact mirrors, and treats a
//! shrunk or rewritten file as a new version.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use origin_engine::record::{Body, Ingested};
use origin_engine::{Journal, Options};
use origin_ingest::{Homes, Ingester};

/// A store and a fake home with one Claude Code project folder.
pub struct World {
    pub dir: tempfile::TempDir,
}

impl World {
    pub fn new() -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("home/.claude/projects/-p")).expect("mkdir");
        World { dir }
    }
    pub fn store(&self) -> PathBuf {
        self.dir.path().join("store")
    }
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    pub fn log(&self, name: &str) -> PathBuf {
        self.home().join(".claude/projects/-p").join(name)
    }
    pub fn ingester(&self) -> Ingester {
        let j = Journal::open(self.store().join("journal"), Options::default()).expect("open journal");
        Ingester::new(Arc::new(j), &self.store(), Homes::under(&self.home()))
    }
}

/// One Claude Code user line.
pub fn line(uuid: &str, text: &str) -> String {
    format!(
        r#"{{"type":"user","uuid":"{uuid}","sessionId":"s1","cwd":"/home/dev/p","timestamp":"2026-10-20T09:00:00.000Z","message":{{"role":"user","content":{}}}}}"#,
        serde_json::to_string(text).expect("json")
    )
}

/// Every Ingested record in the store, in order.
pub fn ingested(store: &Path) -> Vec<Ingested> {
    records_of(&Journal::open(store.join("journal"), Options { access: origin_engine::Access::ReadOnly, ..Options::default() }).expect("open"))
}

/// Every Ingested record of journal `j`, in order.
fn records_of(j: &Journal) -> Vec<Ingested> {
    let mut out = Vec::new();
    j.read_from(0, |r| {
        if let Ok((_, Body::Ingested(b))) = r.decode() {
            out.push(b);
        }
        Ok(ControlFlow::Continue(()))
    })
    .expect("read");
    out
}

/// Event ids in the store, with how often each occurs.
pub fn event_counts(store: &Path) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for b in ingested(store) {
        for e in b.events {
            *m.entry(e.id).or_insert(0) += 1;
        }
    }
    m
}

fn run(w: &World) -> origin_ingest::RunSummary {
    w.ingester().run(None, &mut |_| {}).expect("ingest")
}

#[test]
fn half_a_line_waits_until_its_newline_arrives_then_is_read_once() {
    let w = World::new();
    let full = line("u1", "first");
    let second = line("u2", "second, in two writes");
    let (a, b) = second.split_at(40);
    std::fs::write(w.log("x.jsonl"), format!("{full}\n{a}")).expect("write");
    run(&w);
    let counts = event_counts(&w.store());
    assert_eq!(counts.get("claude-code:u1"), Some(&1));
    assert_eq!(counts.get("claude-code:u2"), None, "a line without its newline must wait");
    let ing = w.ingester();
    let mirror = ing.cursors().expect("cursors").files.values().next().expect("a cursor").mirror.clone();
    assert_eq!(ing.mirrors().read(&mirror).expect("mirror"), format!("{full}\n{a}").into_bytes(), ".zst + .tail give back the file");
    drop(ing);
    let mut f = std::fs::OpenOptions::new().append(true).open(w.log("x.jsonl")).expect("open");
    std::io::Write::write_all(&mut f, format!("{b}\n").as_bytes()).expect("append");
    run(&w);
    run(&w);
    let counts = event_counts(&w.store());
    assert_eq!(counts.get("claude-code:u1"), Some(&1));
    assert_eq!(counts.get("claude-code:u2"), Some(&1));
    let recs = ingested(&w.store());
    let second_rec = recs.iter().find(|r| r.events.iter().any(|e| e.id == "claude-code:u2")).expect("record");
    assert_eq!(second_rec.events[0].line, 2, "line numbers count from the top of the file");
    assert_eq!(second_rec.events[0].text, "second, in two writes");
    let ing = w.ingester();
    assert_eq!(ing.mirrors().read(&mirror).expect("mirror"), std::fs::read(w.log("x.jsonl")).expect("read"));
}

/// JavaScript writes a string cut between the halves of a surrogate pair (an emoji in an
/// output cut at a length) with a lone surrogate's escape, which `serde_json` refuses: such a
/// line is read with U+FFFD in its place, not dropped as malformed; the mirror keeps its bytes.
#[test]
fn a_line_with_a_lone_surrogate_escape_is_read() {
    let w = World::new();
    let cut = line("u1", "the build said \u{1f600}").replace('\u{1f600}', "\\ud83d");
    let low = line("u2", "and then X the end").replace(" X ", " \\ude00 ");
    let text = format!("{cut}\n{low}\n{}\n", line("u3", "a plain line"));
    assert!(text.contains(r"said \ud83d") && text.contains(r"then \ude00 the"), "{text}");
    std::fs::write(w.log("x.jsonl"), &text).expect("write");
    let summary = run(&w);
    assert_eq!(summary.sources["claude-code"].malformed, 0, "{summary:?}");
    let recs = ingested(&w.store());
    let texts: Vec<&str> = recs.iter().flat_map(|r| &r.events).map(|e| e.text.as_str()).collect();
    assert_eq!(texts, vec!["the build said \u{fffd}", "and then \u{fffd} the end", "a plain line"]);
    let ing = w.ingester();
    let mirror = ing.cursors().expect("cursors").files.values().next().expect("a cursor").mirror.clone();
    assert_eq!(ing.mirrors().read(&mirror).expect("mirror"), text.as_bytes(), "the mirror keeps the line's bytes");
}

/// Bytes no compressor shrinks, as base64 (an image pasted into a prompt): `n` characters.
pub fn incompressible_base64(n: usize) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ALPHABET[(x >> 58) as usize] as char
        })
        .collect()
}

/// A Claude Code prompt with a screenshot pasted into it: the image's base64 in the line.
pub fn prompt_with_image(uuid: &str, base64_chars: usize, text: &str) -> String {
    serde_json::json!({
        "type": "user", "uuid": uuid, "sessionId": "s1", "cwd": "/home/dev/p", "timestamp": "2026-10-20T09:00:00.000Z",
        "message": { "role": "user", "content": [
            { "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": incompressible_base64(base64_chars) } },
            { "type": "text", "text": text }
        ] }
    })
    .to_string()
}

/// A prompt of 24 MB that does not compress (a large screenshot pasted into it) fits a read
/// window; whole in one record it was more than a record may store, and every run failed at
/// it. It is recorded in pieces, the record that ends it holding its events and where it
/// began; the lines around it are read, each record stays within what the journal stores, the
/// mirror gives back the file, and the next run reads only what follows. The words typed
/// beside the image are read (a line over 4 MiB was not parsed until now); a line whose
/// events' texts are more than a record holds is counted as cut.
#[test]
fn a_long_line_that_does_not_compress_is_recorded_in_pieces_and_read() {
    let w = World::new();
    let long = prompt_with_image("big", 24_000_000, "why is the okapi chart in this screenshot upside down");
    let first_line = line("before", "the line before");
    let text = format!("{first_line}\n{long}\n{}\n", line("after", "the line after"));
    std::fs::write(w.log("big.jsonl"), &text).expect("write");
    let first = run(&w);
    let claude = &first.sources["claude-code"];
    assert_eq!((claude.lines, claude.events, claude.cut, claude.malformed), (3, 4, 0, 0), "{claude:?}");
    let records = ingested(&w.store());
    assert!(records.len() >= 12, "the long line in pieces: {} records", records.len());
    for r in &records {
        assert!(r.raw_zstd.len() <= 4 * 1024 * 1024, "a record stores {} bytes of raw lines", r.raw_zstd.len());
    }
    let typed = records.iter().find(|r| r.events.iter().any(|e| e.id == "claude-code:big:1")).expect("the words typed beside the image");
    let e = typed.events.iter().find(|e| e.id == "claude-code:big:1").expect("event");
    assert_eq!((e.line, e.text.as_str()), (2, "why is the okapi chart in this screenshot upside down"));
    let said: serde_json::Value = serde_json::from_slice(&typed.state).expect("state");
    assert_eq!(said[origin_ingest::ingest::FIRST_LINE_START_KEY].as_u64(), Some(first_line.len() as u64 + 1), "where the line began");
    assert!(records.iter().filter(|r| r.state != typed.state).all(|r| !String::from_utf8_lossy(&r.state).contains(origin_ingest::ingest::FIRST_LINE_START_KEY)));
    let image = records.iter().flat_map(|r| &r.events).find(|e| e.id == "claude-code:big").expect("the image");
    assert_eq!(image.text, "[image]");
    let after = records.iter().flat_map(|r| &r.events).find(|e| e.id == "claude-code:after").expect("the line after");
    assert_eq!((after.line, after.text.as_str()), (3, "the line after"));
    let ing = w.ingester();
    let mirror = ing.cursors().expect("cursors").files.values().next().expect("a cursor").mirror.clone();
    assert_eq!(ing.mirrors().read(&mirror).expect("mirror"), text.as_bytes(), "the mirror gives back the file");
    drop(ing);
    // A line of 5 MB whose texts add up to more than a record holds: cut, the run goes on.
    let blocks: Vec<serde_json::Value> = (0..120).map(|i| serde_json::json!({ "type": "text", "text": format!("{i} {}", incompressible_base64(45_000)) })).collect();
    let wordy = serde_json::json!({ "type": "assistant", "uuid": "wordy", "sessionId": "s1", "cwd": "/home/dev/p", "timestamp": "2026-10-20T09:01:00.000Z", "message": { "role": "assistant", "content": blocks } });
    let mut f = std::fs::OpenOptions::new().append(true).open(w.log("big.jsonl")).expect("open");
    std::io::Write::write_all(&mut f, format!("{wordy}\n{}\n", line("later", "a later line")).as_bytes()).expect("append");
    let second = run(&w);
    let claude = &second.sources["claude-code"];
    assert_eq!((claude.lines, claude.events, claude.cut), (2, 1, 1), "{claude:?}");
    assert!(event_counts(&w.store()).values().all(|&n| n == 1));
}

/// `origin ingest` killed (SIGKILL) later and later while it reads a file with a long line it
/// records in chunks, then let finish: each run goes on from the record last written (from a
/// chunk of the line, when a kill fell between them: how often is printed), every event is
/// stored once, and the mirror gives back the file.
#[test]
fn an_ingest_killed_while_it_reads_a_long_line_goes_on_at_the_next_run() {
    let w = World::new();
    let long = prompt_with_image("big", 24_000_000, "why is the okapi chart in this screenshot upside down");
    let text = format!("{}\n{long}\n{}\n", line("before", "the line before"), line("after", "the line after"));
    std::fs::write(w.log("big.jsonl"), &text).expect("write");
    let ingest = || {
        let mut c = std::process::Command::new(origin_tests::origin_bin());
        c.arg("--home").arg(w.store()).args(["ingest", "--agents-home"]).arg(w.home());
        c.env("HOME", "/nonexistent-origin-test-home").stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
        c
    };
    let records = || if w.store().join("journal").exists() { ingested(&w.store()) } else { Vec::new() };
    // Killed later and later, until a run got to the end of the file.
    let (mut killed, mut killed_inside) = (0, 0);
    for ms in (15u64..1500).step_by(15) {
        let mut child = ingest().spawn().expect("spawn origin");
        std::thread::sleep(std::time::Duration::from_millis(ms));
        let _ = child.kill();
        let _ = child.wait();
        killed += 1;
        let recs = records();
        // Killed with the line's chunks begun and not ended.
        if recs.last().is_some_and(|r| r.line_end == r.line_start && r.byte_end > r.byte_start) {
            killed_inside += 1;
        }
        if recs.iter().any(|r| r.events.iter().any(|e| e.id == "claude-code:after")) {
            break;
        }
    }
    let status = ingest().status().expect("run origin");
    assert!(status.success());
    let counts = event_counts(&w.store());
    assert_eq!((counts.get("claude-code:before"), counts.get("claude-code:after")), (Some(&1), Some(&1)), "{counts:?}");
    let records = ingested(&w.store());
    assert_eq!(records.iter().map(|r| r.line_end - r.line_start).sum::<u64>(), 3, "every line recorded once");
    assert_eq!(event_counts(&w.store()).get("claude-code:big:1"), Some(&1), "the words typed beside the image");
    let ing = w.ingester();
    let mirror = ing.cursors().expect("cursors").files.values().next().expect("a cursor").mirror.clone();
    assert_eq!(ing.mirrors().read(&mirror).expect("mirror"), text.as_bytes(), "the mirror gives back the file");
    eprintln!("killed {killed} times, {killed_inside} of them with the line's chunks begun and not ended");
}

/// A run that stops inside a long line (the journal refusing its fourth record: the line's
/// third piece) leaves pieces of it recorded. Unchanged, the file is read on from there: the
/// line read whole and parsed, every line once, the mirror the file. Rewritten in between with
/// the same beginning and length but other bytes inside the line, it is a new version of the
/// file (the bytes recorded of the line are not the file's any more), not the rest of the line.
#[test]
fn a_run_stopped_inside_a_long_line_reads_on_only_while_its_recorded_bytes_are_the_files() {
    use origin_engine::sim::{Fault, SimFs};
    let long = prompt_with_image("big", 12_000_000, "the words typed beside it");
    let text = format!("{}\n{long}\n{}\n", line("before", "the line before"), line("after", "the line after"));
    let ingester = sim_ingester;
    // A dry run on a machine of its own finds the journal's call that writes the fourth record.
    let (from, writes, _) = dry_run("big.jsonl", &text);
    let write = |n: usize| writes[n];
    // The fourth record refused (the line's third piece), or the third (its second: the run
    // stops right after its first piece).
    for (refused, rewrite) in [(3, false), (3, true), (2, false)] {
        let w = World::new();
        std::fs::write(w.log("big.jsonl"), &text).expect("write");
        let fs = SimFs::new(7);
        let ing = ingester(&fs, &w);
        assert_eq!(fs.ops() as usize, from, "the same calls as the dry run");
        fs.inject(write(refused) as u64, Fault::Denied);
        assert!(ing.run(None, &mut |_| {}).is_err(), "a record refused");
        drop(ing);
        let stopped = ingested_in(&fs);
        let last = stopped.last().expect("records");
        assert!(last.line_end == last.line_start && last.byte_end > last.byte_start, "stopped inside the line: {:?}", stopped.iter().map(|r| (r.line_start, r.line_end, r.byte_start, r.byte_end)).collect::<Vec<_>>());
        let now = if rewrite {
            // The same length and beginning (its first 4 KiB), another byte in a piece recorded.
            let at = text.find('\n').expect("a first line") + 1_000_000;
            assert!(at < last.byte_end as usize);
            let mut b = text.clone().into_bytes();
            b[at] = if b[at] == b'A' { b'B' } else { b'A' };
            String::from_utf8(b).expect("utf-8")
        } else {
            text.clone()
        };
        std::fs::write(w.log("big.jsonl"), &now).expect("write");
        let summary = ingester(&fs, &w).run(None, &mut |_| {}).expect("the next run");
        let records = ingested_in(&fs);
        let versions: std::collections::BTreeSet<u32> = records.iter().map(|r| r.file_version).collect();
        let typed = records.iter().flat_map(|r| &r.events).filter(|e| e.id == "claude-code:big:1").count();
        if rewrite {
            assert_eq!(versions, [1, 2].into(), "a new version: {summary:?}");
            assert_eq!(summary.sources["claude-code"].lines, 3, "the new version read whole");
        } else {
            assert_eq!(versions, [1].into(), "read on: {summary:?}");
            assert_eq!(records.iter().map(|r| r.line_end - r.line_start).sum::<u64>(), 3, "every line once");
            assert_eq!(typed, 1, "the long line parsed once, whole");
            // The record that ends the line names the one that holds its first piece.
            let j = Journal::open_with(Arc::new(fs.clone()), Path::new("/store/journal"), Options { access: origin_engine::Access::ReadOnly, ..Options::default() }).expect("open");
            let mut at = Vec::new();
            j.read_from(0, |r| {
                if let Ok((_, Body::Ingested(b))) = r.decode() {
                    at.push((r.offset, b));
                }
                Ok(ControlFlow::Continue(()))
            })
            .expect("read");
            let line_began = text.find('\n').expect("a first line") as u64 + 1;
            let first_piece = at.iter().find(|(_, b)| b.byte_start == line_began).expect("the first piece").0;
            let ends: Vec<serde_json::Value> = at.iter().filter(|(_, b)| b.line_end > b.line_start && b.byte_start > line_began).map(|(_, b)| serde_json::from_slice(&b.state).expect("state")).collect();
            let end = ends.iter().find(|s| s.get(origin_ingest::ingest::FIRST_LINE_START_KEY).is_some()).expect("the record ending the line");
            assert_eq!(
                (end[origin_ingest::ingest::FIRST_LINE_START_KEY].as_u64(), end[origin_ingest::ingest::FIRST_LINE_RECORD_KEY].as_u64()),
                (Some(line_began), Some(first_piece)),
                "stopped before record {refused}: {end}"
            );
        }
        let ing = ingester(&fs, &w);
        let cursors = ing.cursors().expect("cursors");
        let (_, cur) = cursors.files.iter().next().expect("a cursor");
        assert_eq!(ing.mirrors().read(&cur.mirror).expect("mirror"), now.as_bytes(), "the mirror is the file");
    }
}

/// A run stopped inside a line longer than a read window, after more than a window of it was
/// recorded: the next run reads what was recorded of it again from the file (to parse it with
/// its long strings shortened), records the rest, and its words are read once.
#[test]
fn a_run_stopped_inside_a_line_longer_than_a_window_parses_it_when_it_reads_on() {
    use origin_engine::sim::{Fault, SimFs};
    let long = prompt_with_image("giant", 40_000_000, "the words typed beside it");
    let text = format!("{}\n{long}\n{}\n", line("before", "the line before"), line("after", "the line after"));
    let ingester = sim_ingester;
    let (_, writes, dry_records) = dry_run("giant.jsonl", &text);
    // The record after the line before and a window of pieces (16 of 2 MiB) refused.
    assert!(dry_records.len() >= 18 && dry_records[..17].iter().all(|r| r.events.iter().all(|e| e.id != "claude-code:giant:1")), "{}", dry_records.len());
    let w = World::new();
    std::fs::write(w.log("giant.jsonl"), &text).expect("write");
    let fs = SimFs::new(7);
    let ing = ingester(&fs, &w);
    fs.inject(writes[17] as u64, Fault::Denied);
    assert!(ing.run(None, &mut |_| {}).is_err(), "a record refused");
    drop(ing);
    let stopped = ingested_in(&fs);
    let recorded: u64 = stopped.iter().filter(|r| r.line_end == r.line_start).map(|r| r.byte_end - r.byte_start).sum();
    assert!(recorded >= 32 * 1024 * 1024, "more than a window of the line recorded: {recorded}");
    let summary = ingester(&fs, &w).run(None, &mut |_| {}).expect("the next run");
    let claude = &summary.sources["claude-code"];
    assert_eq!((claude.cut, claude.malformed), (0, 0), "{claude:?}");
    let records = ingested_in(&fs);
    assert_eq!(records.iter().map(|r| r.line_end - r.line_start).sum::<u64>(), 3, "every line once");
    let typed: Vec<_> = records.iter().flat_map(|r| &r.events).filter(|e| e.id == "claude-code:giant:1").collect();
    assert_eq!(typed.iter().map(|e| (e.line, e.text.as_str())).collect::<Vec<_>>(), vec![(2, "the words typed beside it")]);
    let ing = ingester(&fs, &w);
    let cursors = ing.cursors().expect("cursors");
    let (_, cur) = cursors.files.iter().next().expect("a cursor");
    assert_eq!(ing.mirrors().read(&cur.mirror).expect("mirror"), text.as_bytes(), "the mirror is the file");
}

/// An ingester of `w`'s logs into a journal on the simulated machine `fs`.
fn sim_ingester(fs: &origin_engine::sim::SimFs, w: &World) -> Ingester {
    std::fs::create_dir_all(w.store()).expect("the store's folder");
    let j = Journal::open_with(Arc::new(fs.clone()), Path::new("/store/journal"), Options::default()).expect("journal");
    Ingester::new(Arc::new(j), &w.store(), Homes::under(&w.home()))
}

/// A run over one log `name` holding `text`, on a simulated machine of its own: the count of
/// the machine's calls before the run, the calls of the run that write (in order: the
/// journal's records), and the records written.
fn dry_run(name: &str, text: &str) -> (usize, Vec<usize>, Vec<Ingested>) {
    let dry = World::new();
    std::fs::write(dry.log(name), text).expect("write");
    let fs = origin_engine::sim::SimFs::new(7);
    let ing = sim_ingester(&fs, &dry);
    let from = fs.ops() as usize;
    ing.run(None, &mut |_| {}).expect("the dry run");
    let writes = fs.kinds()[from..].iter().enumerate().filter(|(_, k)| **k == "write").map(|(i, _)| from + i).collect();
    (from, writes, ingested_in(&fs))
}

/// The ingest lock is taken through the store's file system (which opens a lock file it may
/// not write for reading, as one another user owns after a run under `sudo`): on a simulated
/// machine, the real one holds no lock file after a run.
#[test]
fn the_ingest_lock_is_taken_through_the_stores_file_system() {
    let w = World::new();
    std::fs::write(w.log("l.jsonl"), format!("{}\n", line("l1", "one"))).expect("write");
    let fs = origin_engine::sim::SimFs::new(7);
    sim_ingester(&fs, &w).run(None, &mut |_| {}).expect("run");
    assert_eq!(ingested_in(&fs).len(), 1);
    assert!(!w.store().join("ingest.lock").exists(), "a lock file made outside the store's file system");
}

/// Every Ingested record of a journal on a simulated machine, in order.
fn ingested_in(fs: &origin_engine::sim::SimFs) -> Vec<Ingested> {
    records_of(&Journal::open_with(Arc::new(fs.clone()), Path::new("/store/journal"), Options { access: origin_engine::Access::ReadOnly, ..Options::default() }).expect("open"))
}

#[test]
fn a_file_that_shrinks_starts_a_new_version_and_keeps_the_old_mirror() {
    let w = World::new();
    let v1 = format!("{}\n{}\n", line("a1", "one"), line("a2", "two"));
    std::fs::write(w.log("y.jsonl"), &v1).expect("write");
    run(&w);
    let v2 = format!("{}\n", line("b1", "new"));
    std::fs::write(w.log("y.jsonl"), &v2).expect("rewrite shorter");
    run(&w);
    let recs = ingested(&w.store());
    let versions: Vec<u32> = recs.iter().map(|r| r.file_version).collect();
    assert_eq!(versions, vec![1, 2]);
    assert_ne!(recs[0].mirror, recs[1].mirror);
    assert!(recs[1].mirror.ends_with(".v2"), "{}", recs[1].mirror);
    let ing = w.ingester();
    assert_eq!(ing.mirrors().read(&recs[0].mirror).expect("old mirror"), v1.into_bytes());
    assert_eq!(ing.mirrors().read(&recs[1].mirror).expect("new mirror"), v2.into_bytes());
    assert_eq!(recs[1].events[0].line, 1);
}

/// A log its agent only appends to, caught shorter than what was read with its bytes the
/// start of what was read (a copy over it or a restore part way, emptied included), is not a
/// new version: the cut is recorded (no line), and once the log grows past the old end with
/// the bytes read before, only what is new is read, in the same version (a new version gave
/// the lines written back ids of their own: a Codex or Cursor session listed them twice).
/// Written back with other bytes past its first 4 KiB (which a grown log is checked by), or
/// cut and written over, it is a new version.
#[test]
fn a_log_cut_short_and_written_back_is_read_on_not_again() {
    let w = World::new();
    let text = |i: usize, word: &str| format!("line {i} {}", word.repeat(300));
    let lines: Vec<String> = (1..=5).map(|i| format!("{}\n", line(&format!("k{i}"), &text(i, "abcd ")))).collect();
    std::fs::write(w.log("k.jsonl"), lines[..4].concat()).expect("write");
    run(&w);
    let versions = |w: &World| ingested(&w.store()).iter().map(|r| r.file_version).collect::<Vec<u32>>();
    for cut in [lines[..3].concat(), String::new()] {
        assert!(cut.is_empty() || cut.len() > 4096, "the kept bytes pass the first 4 KiB");
        std::fs::write(w.log("k.jsonl"), &cut).expect("cut short");
        run(&w);
        let recs = ingested(&w.store());
        assert_eq!(versions(&w), [1, 1], "the cut recorded once, in the same version");
        assert!(recs[1].events.is_empty(), "no line read of a log cut short");
    }
    std::fs::write(w.log("k.jsonl"), lines.concat()).expect("written back, and one line more");
    run(&w);
    let recs = ingested(&w.store());
    assert_eq!(versions(&w), [1, 1, 1]);
    assert_eq!(recs[2].events.iter().map(|e| e.line).collect::<Vec<u64>>(), [5]);
    // Cut again, then written back with the fourth line's text changed (the same length):
    // past the first 4 KiB, so only the cut's record tells it apart; a new version.
    std::fs::write(w.log("k.jsonl"), lines[..3].concat()).expect("cut short again");
    run(&w);
    let changed = format!("{}\n", line("k4", &text(4, "wxyz ")));
    assert_eq!(changed.len(), lines[3].len());
    std::fs::write(w.log("k.jsonl"), [lines[..3].concat(), changed, lines[4].clone()].concat()).expect("written back otherwise");
    run(&w);
    assert_eq!(versions(&w).last(), Some(&2), "{:?}", versions(&w));
    std::fs::write(w.log("k.jsonl"), format!("{}\n", line("other", "other bytes"))).expect("cut and written over");
    run(&w);
    assert_eq!(versions(&w).last(), Some(&3));
}

#[test]
fn a_file_whose_beginning_changes_is_a_new_version_even_when_longer() {
    let w = World::new();
    std::fs::write(w.log("z.jsonl"), format!("{}\n", line("c1", "one"))).expect("write");
    run(&w);
    // Rotated: the old file moved away, a new one with a different beginning in its place.
    std::fs::rename(w.log("z.jsonl"), w.log("z.jsonl.1")).expect("rotate");
    std::fs::write(w.log("z.jsonl"), format!("{}\n{}\n", line("d1", "rotated in"), line("d2", "more"))).expect("write");
    run(&w);
    let recs = ingested(&w.store());
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[1].file_version, 2);
    assert_eq!(recs[1].line_start, 1);
    assert_eq!(recs[1].events.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), vec!["claude-code:d1", "claude-code:d2"]);
}

/// The agents' folder given relative to the current folder, then absolute: the same files,
/// each line ingested once (a log file is known by its path; the relative one was another).
#[test]
fn an_agents_home_given_relative_then_absolute_is_read_once() {
    let w = World::new();
    std::fs::write(w.log("a.jsonl"), format!("{}\n{}\n", line("u1", "first"), line("u2", "second"))).expect("write");
    for agents in [Path::new("home"), &w.home()] {
        let out = std::process::Command::new(origin_tests::origin_bin())
            .current_dir(w.dir.path())
            .arg("--home")
            .arg(w.store())
            .arg("ingest")
            .arg("--agents-home")
            .arg(agents)
            .output()
            .expect("origin ingest");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let counts = event_counts(&w.store());
    assert_eq!(counts.len(), 2, "{counts:?}");
    assert!(counts.values().all(|&n| n == 1), "each event once: {counts:?}");
}

/// The agents' folder reached through a symbolic link (another spelling of the same files'
/// paths): its logs and memory files are the ones already read, not new ones read again whole
/// (five spellings of one home gave five copies of every memory item as current entries).
#[test]
fn an_agents_home_reached_through_a_link_is_not_read_again() {
    let w = World::new();
    std::fs::write(w.log("a.jsonl"), format!("{}\n{}\n", line("l1", "first"), line("l2", "second"))).expect("write");
    std::fs::write(w.home().join(".claude/CLAUDE.md"), "# Rules\n\n- Run the tests before a commit.\n").expect("write memory");
    let first = run(&w);
    assert_eq!((first.sources["claude-code"].events, first.sources["claude-code"].memory_versions), (2, 1), "{first:?}");
    let link = w.dir.path().join("link");
    std::os::unix::fs::symlink(w.home(), &link).expect("symlink");
    let j = Journal::open(w.store().join("journal"), Options::default()).expect("open journal");
    let through_link = Ingester::new(Arc::new(j), &w.store(), Homes::under(&link));
    let again = through_link.run(None, &mut |_| {}).expect("ingest");
    let r = &again.sources["claude-code"];
    assert_eq!((r.events, r.memory_versions), (0, 0), "nothing read again: {again:?}");
    // What is new is read, under the name the file was first read by.
    let mut f = std::fs::OpenOptions::new().append(true).open(w.log("a.jsonl")).expect("open");
    std::io::Write::write_all(&mut f, format!("{}\n", line("l3", "third")).as_bytes()).expect("append");
    let more = through_link.run(None, &mut |_| {}).expect("ingest");
    assert_eq!(more.sources["claude-code"].events, 1);
    let counts = event_counts(&w.store());
    assert_eq!(counts.len(), 3, "{counts:?}");
    assert!(counts.values().all(|&n| n == 1), "{counts:?}");
    let keys: std::collections::BTreeSet<String> = ingested(&w.store()).iter().map(|r| r.path.clone()).collect();
    assert_eq!(keys.len(), 1, "one name for the log: {keys:?}");
}

#[test]
fn a_log_the_agent_deletes_keeps_its_mirror() {
    let w = World::new();
    let content = format!("{}\n", line("e1", "keep me"));
    std::fs::write(w.log("gone.jsonl"), &content).expect("write");
    run(&w);
    std::fs::remove_file(w.log("gone.jsonl")).expect("delete");
    let summary = run(&w);
    assert!(summary.sources["claude-code"].problems.is_empty(), "{:?}", summary.sources["claude-code"].problems);
    let recs = ingested(&w.store());
    assert_eq!(w.ingester().mirrors().read(&recs[0].mirror).expect("mirror"), content.into_bytes());
}

#[test]
fn the_sample_home_mirrors_byte_for_byte_and_cites_the_right_lines() {
    let w = World::new();
    let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/agent-home");
    let j = Journal::open(w.store().join("journal"), Options::default()).expect("open");
    let ing = Ingester::new(Arc::new(j), &w.store(), Homes::under(&sample)).with_recorded_home("/home/dev");
    let summary = ing.run(None, &mut |_| {}).expect("ingest");
    let claude = &summary.sources["claude-code"];
    assert!(claude.events > 0 && claude.files_found >= 3, "{claude:?}");
    let cursors = ing.cursors().expect("cursors");
    let mut checked_lines = 0;
    for ((source, key), cur) in &cursors.files {
        let path = Path::new(key);
        if !path.is_file() || key.ends_with(".zst") {
            continue; // exported or compressed logs: their mirrors hold the exported / decompressed lines
        }
        let original = std::fs::read(path).expect("read original");
        let mirror = ing.mirrors().read(&cur.mirror).expect("read mirror");
        assert_eq!(mirror, original, "{source} {key}: mirror must give back the original bytes");
        if source == "claude-code" {
            let lines: Vec<&[u8]> = original.split(|&b| b == b'\n').collect();
            for r in ingested(&w.store()).iter().filter(|r| &r.path == key) {
                for e in &r.events {
                    let uuid = e.id.trim_start_matches("claude-code:").split(':').next().expect("uuid");
                    let l = lines[(e.line - 1) as usize];
                    assert!(l.windows(uuid.len()).any(|x| x == uuid.as_bytes()), "{} is not on line {} of {key}", e.id, e.line);
                    checked_lines += 1;
                }
            }
        }
    }
    assert!(checked_lines > 10, "checked {checked_lines} event lines");
}

/// A mirror that cannot be written (here its file's place is taken by a folder; a full disk
/// fails the same way) leaves that log out of the run, as a problem that names the mirror, not
/// the log; the other logs are read, and the next run that can write it reads it.
#[test]
fn a_log_whose_mirror_cannot_be_written_is_a_problem_naming_the_mirror_until_it_can() {
    let w = World::new();
    std::fs::write(w.log("first.jsonl"), format!("{}\n", line("p1", "first"))).expect("write");
    run(&w);
    let first = ingested(&w.store()).remove(0).mirror;
    let blocked_key = first.replace("first.jsonl", "blocked.jsonl");
    let mut zst = w.ingester().mirrors().base(&blocked_key).into_os_string();
    zst.push(".zst");
    std::fs::create_dir_all(&zst).expect("a folder in the mirror's place");
    std::fs::write(w.log("blocked.jsonl"), format!("{}\n", line("p2", "blocked"))).expect("write");
    std::fs::write(w.log("other.jsonl"), format!("{}\n", line("p3", "other"))).expect("write");
    let summary = run(&w);
    let problems = &summary.sources["claude-code"].problems;
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("blocked.jsonl: its mirror ") && problems[0].contains(".zst"), "{problems:?}");
    let ids = || ingested(&w.store()).iter().flat_map(|r| r.events.iter().map(|e| e.id.clone())).collect::<Vec<_>>();
    assert_eq!(ids(), ["claude-code:p1", "claude-code:p3"]);
    std::fs::remove_dir(&zst).expect("folder gone");
    let summary = run(&w);
    assert!(summary.sources["claude-code"].problems.is_empty(), "{:?}", summary.sources["claude-code"].problems);
    assert_eq!(ids(), ["claude-code:p1", "claude-code:p3", "claude-code:p2"]);
    let recs = ingested(&w.store());
    assert_eq!(w.ingester().mirrors().read(&recs[2].mirror).expect("mirror"), format!("{}\n", line("p2", "blocked")).into_bytes());
}

/// A mirror lost or cut short after its lines were stored (a write that failed once, a file
/// removed) is made whole from the journal at the next run, though the log has not changed
/// since (it was made whole only when the log next grew).
#[test]
fn the_mirror_of_a_log_that_has_not_changed_is_made_whole_at_the_next_run() {
    let w = World::new();
    let text = format!("{}\n{}\n", line("m1", "first"), line("m2", "second"));
    std::fs::write(w.log("a.jsonl"), &text).expect("write");
    run(&w);
    let mirror = ingested(&w.store()).remove(0).mirror;
    let mut zst = w.ingester().mirrors().base(&mirror).into_os_string();
    zst.push(".zst");
    let whole = std::fs::read(&zst).expect("mirror");
    for damage in [0, whole.len() / 2] {
        std::fs::write(&zst, &whole[..damage]).expect("cut the mirror");
        let summary = run(&w);
        assert!(summary.sources["claude-code"].problems.is_empty(), "{:?}", summary.sources["claude-code"].problems);
        assert_eq!(std::fs::read(&zst).expect("mirror"), whole, "made whole from {damage} bytes");
        assert_eq!(w.ingester().mirrors().read(&mirror).expect("mirror"), text.as_bytes());
    }
    assert_eq!(event_counts(&w.store()).len(), 2, "nothing read again");
}

/// A compressed Codex log that has not changed since this process read it (the same size and
/// time of change) is not decoded again at the next run: a server ingests before its reads,
/// and decoded every archived rollout whole each time. One whose time of change moved is
/// decoded again (here its bytes, replaced, no longer decode: said as a problem).
#[test]
fn a_compressed_log_unchanged_since_this_process_read_it_is_not_decoded_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let name = "rollout-2026-10-02T13-20-09-0199a6b1-3f2c-7e18-b4a5-6d0c91e8f273.jsonl.zst";
    let day = dir.path().join("home/.codex/sessions/2026/10/02");
    std::fs::create_dir_all(&day).expect("mkdir");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/agent-home/.codex/sessions/2026/10/02").join(name);
    let zst = day.join(name);
    std::fs::copy(&fixture, &zst).expect("copy");
    let store = dir.path().join("store");
    let j = Journal::open(store.join("journal"), Options::default()).expect("open journal");
    let ing = Ingester::new(Arc::new(j), &store, Homes::under(&dir.path().join("home")));
    let problems = |s: &origin_ingest::RunSummary| s.sources.get("codex").map(|r| r.problems.clone()).unwrap_or_default();
    let first = ing.run(None, &mut |_| {}).expect("ingest");
    assert!(first.sources["codex"].events > 0 && problems(&first).is_empty(), "{first:?}");
    let events = event_counts(&store);
    let modified = std::fs::metadata(&zst).expect("stat").modified().expect("time of change");
    let len = std::fs::metadata(&zst).expect("stat").len() as usize;
    std::fs::write(&zst, vec![0x5a; len]).expect("replace its bytes");
    let set_modified = |t: std::time::SystemTime| std::fs::File::options().write(true).open(&zst).expect("open").set_modified(t).expect("set time");
    set_modified(modified);
    let again = ing.run(None, &mut |_| {}).expect("ingest");
    assert!(problems(&again).is_empty(), "not decoded again: {:?}", problems(&again));
    assert_eq!(event_counts(&store), events);
    set_modified(modified + std::time::Duration::from_secs(1));
    let changed = ing.run(None, &mut |_| {}).expect("ingest");
    assert_eq!(problems(&changed).len(), 1, "decoded again: {:?}", problems(&changed));
    assert!(problems(&changed)[0].contains(name), "{:?}", problems(&changed));
    assert_eq!(event_counts(&store), events);
}

/// A Grok transcript's path in `w`'s home, its folder made.
fn grok_chat(w: &World, session: &str) -> PathBuf {
    let chat = w.home().join(".grok/sessions/%2Fw%2Fp").join(session).join("chat_history.jsonl");
    std::fs::create_dir_all(chat.parent().expect("folder")).expect("mkdir");
    chat
}

/// A Grok transcript's user line.
fn grok_user(text: &str, prompt_index: u32) -> String {
    format!(r#"{{"type":"user","content":[{{"type":"text","text":"{text}"}}],"prompt_index":{prompt_index}}}"#)
}

/// A Grok transcript's assistant line.
fn grok_assistant(text: &str) -> String {
    format!(r#"{{"type":"assistant","content":"{text}"}}"#)
}

/// Replaces `path` with `lines`, each ending with a newline.
fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("write");
}

/// The text of event `id` as the store's state finds it.
fn event_text(w: &World, id: &str) -> String {
    let (j, state) = state_of(&w);
    state.event_body(&j, id).expect("read").found().unwrap_or_else(|| panic!("no event {id}")).text
}

/// Grok replaces its transcript wholesale on compaction and rewind: the new file numbers other
/// lines than before. Its events get ids of their own (`v2:<line>`), and the first version's
/// events keep theirs and what they said (an entry citing one still cites what was said).
#[test]
fn a_rewritten_grok_transcript_keeps_the_first_versions_events_and_their_ids() {
    let w = World::new();
    let chat = grok_chat(&w, "sess-1");
    write_lines(&chat, &[grok_user("why does the formatter print twice", 0), grok_assistant("it is called from both hooks"), grok_user("fix it", 1), grok_assistant("done")]);
    run(&w);
    let texts = |w: &World| -> Vec<(String, String)> {
        let mut all: Vec<(String, String)> = ingested(&w.store()).into_iter().flat_map(|r| r.events).map(|e| (e.id, e.text)).collect();
        all.sort();
        all
    };
    let before = texts(&w);
    assert_eq!(before.len(), 4, "{before:?}");
    assert!(before.iter().any(|(id, t)| id == "grok:sess-1:1" && t.contains("formatter")), "{before:?}");
    // Compacted: a summary and the next prompt, in a new file at the same path.
    write_lines(&chat, &[grok_assistant("summary: the double print came from two hooks; fixed"), grok_user("now add a test", 2)]);
    run(&w);
    let after = texts(&w);
    for old in &before {
        assert!(after.contains(old), "the first version's {old:?} is kept as it was: {after:?}");
    }
    let new: Vec<&(String, String)> = after.iter().filter(|e| !before.contains(e)).collect();
    assert_eq!(new.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["grok:sess-1:v2:1", "grok:sess-1:v2:2"]);
    assert!(new[1].1.contains("add a test"));
    // The store keeps one event per id: the first version's line 1 still says what it said.
    assert!(event_text(&w, "grok:sess-1:1").contains("formatter"));
}

/// A rewind keeps the turns before the one rewound, byte for byte: those lines keep the ids
/// they had (no event twice), the lines after them take the new version's, and a rewind of
/// the rewound file keeps the ids of each line's first version.
#[test]
fn a_rewound_grok_transcript_keeps_the_ids_of_the_lines_it_kept() {
    let w = World::new();
    let chat = grok_chat(&w, "sess-2");
    let ids = |w: &World| -> Vec<String> {
        let mut all: Vec<String> = ingested(&w.store()).into_iter().flat_map(|r| r.events).map(|e| e.id).collect();
        all.sort();
        all
    };
    write_lines(&chat, &[grok_user("first question", 0), grok_assistant("first answer"), grok_user("second question", 1), grok_assistant("second answer")]);
    run(&w);
    // Rewound to before the second question, then asked another.
    write_lines(&chat, &[grok_user("first question", 0), grok_assistant("first answer"), grok_user("another question", 1), grok_assistant("another answer")]);
    run(&w);
    let p = "grok:sess-2";
    let want = |list: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = list.iter().map(|l| format!("{p}:{l}")).collect();
        v.sort();
        v
    };
    let after_rewind = ids(&w);
    // Lines 1 and 2 were read again with the same ids (the same words: one event each).
    assert_eq!(after_rewind.iter().filter(|i| *i == &format!("{p}:1")).count(), 2, "read again, same id");
    let mut distinct = after_rewind.clone();
    distinct.dedup();
    assert_eq!(distinct, want(&["1", "2", "3", "4", "v2:3", "v2:4"]));
    // Rewound again, keeping three lines of the second version.
    write_lines(&chat, &[grok_user("first question", 0), grok_assistant("first answer"), grok_user("another question", 1), grok_user("and one more", 2)]);
    run(&w);
    let mut distinct = ids(&w);
    distinct.dedup();
    assert_eq!(distinct, want(&["1", "2", "3", "4", "v2:3", "v2:4", "v3:4"]));
    // Each id still says what its line said when it was first read.
    for (line, text) in [("1", "first question"), ("3", "second question"), ("4", "second answer"), ("v2:3", "another question"), ("v2:4", "another answer"), ("v3:4", "and one more")] {
        assert_eq!(event_text(&w, &format!("{p}:{line}")), text, "{line}");
    }
}

/// A Claude Code conversation line of `session` (its `uuid`, its `parentUuid` or null, `role`
/// and message `content`), at 2026-10-20T09:00:00Z in `/home/dev/p`, as a JSON object to add
/// to.
fn claude_entry(session: &str, uuid: &str, parent: Option<&str>, role: &str, content: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": session, "cwd": "/home/dev/p", "timestamp": "2026-10-20T09:00:00.000Z", "message": {"role": role, "content": content}})
}

/// The store's journal and its state, caught up.
fn state_of(w: &World) -> (Journal, origin_projections::State) {
    let j = Journal::open(w.store().join("journal"), Options::default()).expect("journal");
    let mut state = origin_projections::State::new();
    state.catch_up(&j).expect("state");
    (j, state)
}

/// [`claude_entry`] with the text `text` as its content, as the log's line.
fn claude_line(session: &str, uuid: &str, parent: Option<&str>, role: &str, text: &str) -> String {
    claude_entry(session, uuid, parent, role, serde_json::json!(text)).to_string()
}

/// Two turns of a Claude conversation of `session` (`u1`, `a1`, `u2`, `a2`), its last answer
/// `reply`.
fn claude_two_turns(session: &str, reply: &str) -> Vec<String> {
    vec![
        claude_line(session, "u1", None, "user", "first question"),
        claude_line(session, "a1", Some("u1"), "assistant", "first answer"),
        claude_line(session, "u2", Some("a1"), "user", "second question"),
        claude_line(session, "a2", Some("u2"), "assistant", reply),
    ]
}

/// The events a Grok session lists, as their ids without `grok:<session>:` (the line they name).
fn grok_listed(w: &World, session: &str) -> Vec<String> {
    let (_, s) = state_of(w);
    let prefix = format!("grok:{session}:");
    s.session_events(Some("grok"), session, true, 100).into_iter().map(|m| m.id.strip_prefix(&prefix).expect("grok id").to_owned()).collect()
}

/// Where Codex writes the rollout of thread `id` (its folder made), started 2026-10-20.
fn codex_rollout(w: &World, id: &str) -> PathBuf {
    let folder = w.home().join(".codex/sessions/2026/10/20");
    std::fs::create_dir_all(&folder).expect("mkdir");
    folder.join(format!("rollout-2026-10-20T16-03-11-{id}.jsonl"))
}

/// Every record of the store that names abandoned events, as (file version, their ids).
fn superseded_records(store: &Path) -> Vec<(u32, Vec<String>)> {
    ingested(store).into_iter().filter(|b| !b.superseded.is_empty()).map(|b| (b.file_version, b.superseded)).collect()
}

/// A rewind abandons the turns after the one it rewound to: their events are recorded as
/// superseded, so that they leave the session's timeline, counts and search but are still
/// found by id; a compaction (its summary a `compaction_meta` item) drops turns it sums up,
/// which stay current, and a run that finds nothing new records nothing.
#[test]
fn a_rewound_grok_transcripts_abandoned_turns_are_kept_but_no_longer_current() {
    let w = World::new();
    let chat = grok_chat(&w, "sess-5");
    let p = "grok:sess-5";
    let listed = |w: &World| grok_listed(w, "sess-5");
    write_lines(&chat, &[grok_user("first question", 0), grok_assistant("first answer"), grok_user("second question", 1), grok_assistant("second answer")]);
    run(&w);
    assert_eq!(listed(&w), ["1", "2", "3", "4"]);
    // Rewound to before the second question, then asked another.
    write_lines(&chat, &[grok_user("first question", 0), grok_assistant("first answer"), grok_user("another question", 1), grok_assistant("another answer")]);
    run(&w);
    assert_eq!(superseded_records(&w.store()), [(2, vec![format!("{p}:3"), format!("{p}:4")])]);
    assert_eq!(listed(&w), ["1", "2", "v2:3", "v2:4"]);
    let (j, s) = state_of(&w);
    assert_eq!(s.session("grok", "sess-5").expect("listed").event_count, 4);
    assert!(s.is_superseded(&format!("{p}:3")) && !s.is_superseded(&format!("{p}:2")));
    assert_eq!(s.event_body(&j, &format!("{p}:3")).expect("read").found().expect("found by id").text, "second question");
    // Nothing new: nothing recorded.
    run(&w);
    assert_eq!(superseded_records(&w.store()).len(), 1);
    // Compacted: the first turn summed up, the latest kept, then a new question; the turns it
    // dropped stay current.
    let summary = r#"{"type":"user","content":[{"type":"text","text":"summary: the first question was answered"}],"synthetic_reason":"compaction_meta"}"#.to_owned();
    write_lines(&chat, &[grok_user("first question", 0), summary.clone(), grok_user("another question", 1), grok_user("a third question", 2)]);
    run(&w);
    assert_eq!(superseded_records(&w.store()).len(), 1, "a compaction abandons nothing");
    assert!(listed(&w).contains(&"v2:4".to_owned()), "{:?}", listed(&w));
    // Rewound again, to before the third question: the version's own line after it goes.
    write_lines(&chat, &[grok_user("first question", 0), summary, grok_user("another question", 1), grok_user("a fourth question", 3)]);
    run(&w);
    assert_eq!(superseded_records(&w.store())[1], (4, vec![format!("{p}:v3:4")]));
    let mut now = listed(&w);
    now.sort();
    assert_eq!(now, ["1", "2", "v2:3", "v2:4", "v3:2", "v4:4"], "the compacted turns and the latest are current");
    assert_eq!(event_text(&w, &format!("{p}:v3:4")), "a third question");
}

/// A rewind read together with the turn that followed it (the usual case: ingest runs a
/// minute apart), whose prompt is word for word one the abandoned turns held: the abandoned
/// turns are those after the lines kept in place, and the prompt sent again keeps its id and
/// stays current. The same session's ids brought again by another file are current again.
#[test]
fn a_rewind_read_with_the_next_turn_abandons_what_came_after_the_lines_kept_in_place() {
    let w = World::new();
    let chat = grok_chat(&w, "sess-6");
    let p = "grok:sess-6";
    let listed = |w: &World| {
        let mut v = grok_listed(w, "sess-6");
        v.sort();
        v
    };
    write_lines(&chat, &[grok_user("first question", 0), grok_assistant("first answer"), grok_user("try approach A", 1), grok_assistant("approach A applied"), grok_user("run the tests", 2), grok_assistant("the tests pass")]);
    run(&w);
    write_lines(&chat, &[grok_user("first question", 0), grok_assistant("first answer"), grok_user("try approach B", 1), grok_assistant("approach B applied"), grok_user("run the tests", 2), grok_assistant("two tests fail")]);
    run(&w);
    assert_eq!(superseded_records(&w.store()), [(2, vec![format!("{p}:3"), format!("{p}:4"), format!("{p}:6")])]);
    assert_eq!(listed(&w), ["1", "2", "5", "v2:3", "v2:4", "v2:6"]);
    // The same session read from another folder (moved, or `-s` reused): its lines take the
    // same ids, and what they say now is current.
    let moved = w.home().join(".grok/sessions/%2Fw%2Fq/sess-6/chat_history.jsonl");
    std::fs::create_dir_all(moved.parent().expect("folder")).expect("mkdir");
    write_lines(&moved, &[grok_user("first question", 0), grok_assistant("first answer"), grok_user("new question kiwi", 1), grok_assistant("new answer mango")]);
    run(&w);
    let (_, s) = state_of(&w);
    assert!(!s.is_superseded(&format!("{p}:3")) && !s.is_superseded(&format!("{p}:4")) && s.is_superseded(&format!("{p}:6")));
    assert_eq!(event_text(&w, &format!("{p}:4")), "new answer mango");
}

/// Codex's rollback (`thread_rolled_back`, `num_turns`) drops the newest user turns from the
/// thread; they stay in the rollout. Their events, from the line where the earliest of them
/// began to the rollback, are recorded as superseded, whether they were read at an earlier run
/// or in the same batch; a turn rolled back before is not counted again, and the turns before
/// and after stay current.
#[test]
fn a_codex_rollback_abandons_the_turns_it_drops() {
    let w = World::new();
    let id = "019a0f3e-7c21-7d40-9b8e-2f61a4c0d5e9";
    let rollout = codex_rollout(&w, id);
    let at = |s: u32| format!("2026-10-20T14:03:{s:02}.000Z");
    let item = |s: u32, payload: serde_json::Value| serde_json::json!({"timestamp": at(s), "type": "response_item", "payload": payload}).to_string();
    let user = |s: u32, text: &str| item(s, serde_json::json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}));
    let assistant = |s: u32, text: &str| item(s, serde_json::json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}));
    let rollback = |s: u32, n: u32| serde_json::json!({"timestamp": at(s), "type": "event_msg", "payload": {"type": "thread_rolled_back", "num_turns": n}}).to_string();
    let mut lines = vec![
        serde_json::json!({"timestamp": at(0), "type": "session_meta", "payload": {"id": id, "timestamp": at(0), "cwd": "/home/dev/demo-app", "cli_version": "0.158.1"}}).to_string(),
        user(1, "first question"),
        assistant(2, "first answer"),
        user(3, "second question"),
        item(4, serde_json::json!({"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}", "call_id": "c1"})),
        item(5, serde_json::json!({"type": "function_call_output", "call_id": "c1", "output": "src"})),
        assistant(6, "second answer"),
    ];
    write_lines(&rollout, &lines);
    run(&w);
    let at_lines = |ls: &[u32]| -> Vec<String> { ls.iter().map(|l| format!("codex:{id}:{l}")).collect() };
    // As a record names them: ascending, as text.
    let sorted = |mut v: Vec<String>| -> Vec<String> {
        v.sort();
        v
    };
    // Rolled back one turn, at the next run (its events read at the first), then asked again.
    lines.extend([rollback(7, 1), user(8, "another question"), assistant(9, "another answer")]);
    write_lines(&rollout, &lines);
    run(&w);
    assert_eq!(superseded_records(&w.store()), [(1, at_lines(&[4, 5, 6, 7]))]);
    // A third question, then two turns rolled back in the same batch: the one before it,
    // not the one rolled back already.
    lines.extend([user(10, "third question"), rollback(11, 2), user(12, "last question")]);
    write_lines(&rollout, &lines);
    run(&w);
    assert_eq!(superseded_records(&w.store())[1..], [(1, sorted(at_lines(&[9, 10, 11])))]);
    let (j, state) = state_of(&w);
    let listed: Vec<String> = state.session_events(Some("codex"), id, true, 100).into_iter().map(|m| m.id).collect();
    assert_eq!(listed, at_lines(&[2, 3, 13]));
    assert_eq!(state.session("codex", id).expect("listed").event_count, 3);
    assert_eq!(state.session("codex", id).expect("listed").prompt.as_deref(), Some("first question"));
    // Nothing new: nothing recorded.
    run(&w);
    assert_eq!(superseded_records(&w.store()).len(), 2);
    // Every turn rolled back, then a new one: the session's first prompt is the new one.
    lines.extend([rollback(14, 2), user(15, "a new start")]);
    write_lines(&rollout, &lines);
    run(&w);
    let mut state = origin_projections::State::new();
    state.catch_up(&j).expect("state");
    let listed: Vec<String> = state.session_events(Some("codex"), id, true, 100).into_iter().map(|m| m.id).collect();
    assert_eq!(listed, at_lines(&[15]));
    assert_eq!(state.session("codex", id).expect("listed").prompt.as_deref(), Some("a new start"));
}

/// What a step of a Grok session does to its transcript, for
/// [`grok_rewinds_leave_current_what_the_transcript_says`].
#[derive(Clone, Debug)]
enum GrokStep {
    /// The person's prompt, appended.
    Prompt,
    /// The agent's answer, appended.
    Answer,
    /// A rewind to one of the transcript's prompts (the `n`th from the latest, modulo their
    /// count): the transcript replaced (a new file renamed over it) by its lines before it.
    Rewind(usize),
    /// The prompt rewound to, sent again as it was (its line the same, byte for byte).
    Again,
    /// The transcript read so far (a run of ingest).
    Read,
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
    /// A Grok session rewound at any turn, its first too, as often as it likes, read in one run
    /// or several (a rewind and the turns after it read together, or apart), the prompt rewound
    /// to sent again or not: the events listed say what the transcript now says, each line once.
    #[test]
    fn grok_rewinds_leave_current_what_the_transcript_says(steps in proptest::collection::vec(proptest::prop_oneof![
        3 => proptest::strategy::Just(GrokStep::Prompt),
        3 => proptest::strategy::Just(GrokStep::Answer),
        2 => proptest::strategy::Strategy::prop_map(0usize..6, GrokStep::Rewind),
        1 => proptest::strategy::Just(GrokStep::Again),
        2 => proptest::strategy::Just(GrokStep::Read),
    ], 1..30)) {
        use proptest::prop_assert_eq;
        let w = World::new();
        let chat = grok_chat(&w, "sess-m");
        // The transcript: (text, is a prompt); it begins with the system prompt, as Grok's do
        // (a rewind to the first prompt keeps it).
        let system = "You are Grok, a coding agent.";
        let mut file: Vec<(String, bool)> = vec![(system.to_owned(), false)];
        let render = |file: &[(String, bool)]| -> Vec<String> {
            let mut prompts = 0;
            file.iter()
                .map(|(text, prompt)| {
                    if text == system {
                        format!(r#"{{"type":"system","content":"{text}"}}"#)
                    } else if *prompt {
                        prompts += 1;
                        grok_user(text, prompts - 1)
                    } else {
                        grok_assistant(text)
                    }
                })
                .collect()
        };
        let mut n = 0;
        let mut read_last: Option<Vec<(String, bool)>> = None;
        let mut rewound: Option<String> = None;
        for step in &steps {
            n += 1;
            match step {
                GrokStep::Prompt => file.push((format!("question {n}"), true)),
                GrokStep::Answer => file.push((format!("answer {n}"), false)),
                GrokStep::Rewind(k) => {
                    let prompts: Vec<usize> = file.iter().enumerate().filter(|(_, l)| l.1).map(|(i, _)| i).collect();
                    if let Some(&at) = prompts.get(prompts.len().saturating_sub(1 + k % prompts.len().max(1))) {
                        rewound = Some(file[at].0.clone());
                        file.truncate(at);
                        // As Grok rewrites it: a new file renamed over the old.
                        let tmp = chat.with_extension("tmp");
                        write_lines(&tmp, &render(&file));
                        std::fs::rename(&tmp, &chat).expect("rename");
                    }
                }
                GrokStep::Again => {
                    if let Some(text) = rewound.take() {
                        file.push((text, true));
                    }
                }
                GrokStep::Read => {
                    write_lines(&chat, &render(&file));
                    run(&w);
                    read_last = Some(file.clone());
                }
            }
        }
        if read_last.as_ref() != Some(&file) {
            write_lines(&chat, &render(&file));
            run(&w);
        }
        let (j, state) = state_of(&w);
        let mut listed: Vec<String> = state
            .session_events(Some("grok"), "sess-m", true, 1000)
            .into_iter()
            .map(|m| state.event_body(&j, &m.id).expect("read").found().expect("found").text)
            .collect();
        listed.sort();
        let mut want: Vec<String> = file.iter().map(|l| l.0.clone()).collect();
        want.sort();
        prop_assert_eq!(&listed, &want, "steps {:?}", steps);
    }
}

/// What a step of a Codex thread writes, for [`codex_rollbacks_leave_current_the_turns_codex_keeps`].
#[derive(Clone, Debug)]
enum CodexStep {
    /// The person's prompt: a turn begins.
    Prompt,
    /// The agent's answer.
    Answer,
    /// A tool call and its output.
    Tool,
    /// `thread_rolled_back` of this many turns.
    Rollback(u32),
    /// The rollout read so far (a run of ingest).
    Read,
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// A Codex thread with rollbacks, read in one run or several: the events listed are those
    /// of the turns Codex keeps (a rollback drops the latest turns still kept, at most as many
    /// as there are; what came before the first prompt is no turn's), and the session's first
    /// prompt is the first kept turn's.
    #[test]
    fn codex_rollbacks_leave_current_the_turns_codex_keeps(steps in proptest::collection::vec(proptest::prop_oneof![
        3 => proptest::strategy::Just(CodexStep::Prompt),
        3 => proptest::strategy::Just(CodexStep::Answer),
        2 => proptest::strategy::Just(CodexStep::Tool),
        2 => proptest::strategy::Strategy::prop_map(1u32..4, CodexStep::Rollback),
        1 => proptest::strategy::Just(CodexStep::Read),
    ], 1..40)) {
        use proptest::prop_assert_eq;
        let w = World::new();
        let id = "019a0f3e-7c21-7d40-9b8e-2f61a4c0d5e9";
        let rollout = codex_rollout(&w, id);
        let at = |s: usize| format!("2026-10-20T14:{:02}:{:02}.000Z", s / 60, s % 60);
        let item = |s: usize, payload: serde_json::Value| serde_json::json!({"timestamp": at(s), "type": "response_item", "payload": payload}).to_string();
        let mut lines = vec![serde_json::json!({"timestamp": at(0), "type": "session_meta", "payload": {"id": id, "timestamp": at(0), "cwd": "/home/dev/demo-app", "cli_version": "0.158.1"}}).to_string()];
        // The kept turns, each as its lines (1-based) and its prompt; the lines before the first.
        let mut turns: Vec<(Vec<usize>, String)> = Vec::new();
        let mut before: Vec<usize> = Vec::new();
        let mut written = 0;
        let add = |lines: &mut Vec<String>, turns: &mut Vec<(Vec<usize>, String)>, before: &mut Vec<usize>, line: String| {
            lines.push(line);
            match turns.last_mut() {
                Some(t) => t.0.push(lines.len()),
                None => before.push(lines.len()),
            }
        };
        for step in &steps {
            let s = lines.len();
            match step {
                CodexStep::Prompt => {
                    let text = format!("question {s}");
                    lines.push(item(s, serde_json::json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})));
                    turns.push((vec![lines.len()], text));
                }
                CodexStep::Answer => add(&mut lines, &mut turns, &mut before, item(s, serde_json::json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": format!("answer {s}")}]}))),
                CodexStep::Tool => {
                    add(&mut lines, &mut turns, &mut before, item(s, serde_json::json!({"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}", "call_id": format!("c{s}")})));
                    add(&mut lines, &mut turns, &mut before, item(s + 1, serde_json::json!({"type": "function_call_output", "call_id": format!("c{s}"), "output": "src"})));
                }
                CodexStep::Rollback(n) => {
                    lines.push(serde_json::json!({"timestamp": at(s), "type": "event_msg", "payload": {"type": "thread_rolled_back", "num_turns": n}}).to_string());
                    let keep = turns.len().saturating_sub(*n as usize);
                    turns.truncate(keep);
                }
                CodexStep::Read => {
                    write_lines(&rollout, &lines);
                    run(&w);
                    written = lines.len();
                }
            }
        }
        if written != lines.len() {
            write_lines(&rollout, &lines);
            run(&w);
        }
        let (_, state) = state_of(&w);
        let listed: Vec<String> = state.session_events(Some("codex"), id, true, 1000).into_iter().map(|m| m.id).collect();
        let mut want: Vec<usize> = before.clone();
        want.extend(turns.iter().flat_map(|t| t.0.iter().copied()));
        want.sort_unstable();
        let want: Vec<String> = want.iter().map(|l| format!("codex:{id}:{l}")).collect();
        prop_assert_eq!(&listed, &want, "steps {:?}", steps);
        let first = turns.first().map(|t| t.1.clone());
        prop_assert_eq!(state.session("codex", id).and_then(|s| s.prompt.clone()), first, "steps {:?}", steps);
    }
}

/// A Codex thread's first turn rolled back with the next prompt in the same run: that prompt
/// is the session's first. Another agent's message begins a turn too (Codex counts it so when
/// it rolls back): a rollback of one turn after it leaves the person's prompt before it.
#[test]
fn a_codex_rollback_counts_another_agents_message_as_a_turn_and_gives_the_next_first_prompt() {
    for multi_agent in [false, true] {
        let w = World::new();
        let id = "019a0f3e-7c21-7d40-9b8e-2f61a4c0d5ea";
        let rollout = codex_rollout(&w, id);
        let at = |s: u32| format!("2026-10-20T14:03:{s:02}.000Z");
        let message = |s: u32, role: &str, text: &str| {
            let kind = if role == "user" { "input_text" } else { "output_text" };
            serde_json::json!({"timestamp": at(s), "type": "response_item", "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}}).to_string()
        };
        let rollback = |s: u32| serde_json::json!({"timestamp": at(s), "type": "event_msg", "payload": {"type": "thread_rolled_back", "num_turns": 1}}).to_string();
        let mut lines = vec![
            serde_json::json!({"timestamp": at(0), "type": "session_meta", "payload": {"id": id, "timestamp": at(0), "cwd": "/home/dev/demo-app"}}).to_string(),
            message(1, "user", "prompt 1 apple"),
            message(2, "assistant", "answer 1"),
        ];
        if multi_agent {
            let note = serde_json::json!({"author": "/root/worker", "recipient": "/root", "other_recipients": [], "content": "the worker is done", "trigger_turn": true});
            lines.extend([message(3, "assistant", &note.to_string()), message(4, "assistant", "reading the worker's result"), rollback(5)]);
        } else {
            lines.extend([rollback(3), message(4, "user", "prompt 2 banana"), message(5, "assistant", "answer 2")]);
        }
        write_lines(&rollout, &lines);
        run(&w);
        let (_, state) = state_of(&w);
        let listed: Vec<String> = state.session_events(Some("codex"), id, true, 100).into_iter().map(|m| m.id).collect();
        let at_lines = |ls: &[u32]| -> Vec<String> { ls.iter().map(|l| format!("codex:{id}:{l}")).collect() };
        let session = state.session("codex", id).expect("listed");
        if multi_agent {
            assert_eq!(superseded_records(&w.store()), [(1, at_lines(&[4, 5]))]);
            assert_eq!(listed, at_lines(&[2, 3]));
            assert_eq!(session.prompt.as_deref(), Some("prompt 1 apple"));
        } else {
            assert_eq!(superseded_records(&w.store()), [(1, at_lines(&[2, 3]))]);
            assert_eq!(listed, at_lines(&[5, 6]));
            assert_eq!(session.prompt.as_deref(), Some("prompt 2 banana"));
        }
    }
}

/// Claude Code's rewind sends a prompt in the place of an earlier one (the same `parentUuid`)
/// and leaves the branch it left in the file: that prompt and every line after it are
/// abandoned, recorded at the next run or in the same batch. Assistant lines that share a
/// parent (one per content block), a sub-agent's lines and a prompt after the rewind's own are
/// no rewind.
#[test]
fn a_claude_rewind_abandons_the_prompt_it_replaced_and_what_followed() {
    let w = World::new();
    let log = w.log("s1.jsonl");
    let at = |n: u32| format!("2026-10-20T09:00:{n:02}.000Z");
    let entry = |uuid: &str, parent: Option<&str>, n: u32, role: &str, content: serde_json::Value, extra: serde_json::Value| {
        let mut v = claude_entry("s1", uuid, parent, role, content);
        v["timestamp"] = serde_json::json!(at(n));
        if let (Some(o), Some(x)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(x.clone());
        }
        v.to_string()
    };
    let none = serde_json::json!({});
    let prompt = |uuid: &str, parent: Option<&str>, n: u32, text: &str| entry(uuid, parent, n, "user", serde_json::json!(text), serde_json::json!({}));
    let says = |uuid: &str, parent: &str, n: u32, text: &str| entry(uuid, Some(parent), n, "assistant", serde_json::json!([{"type": "text", "text": text}]), serde_json::json!({}));
    let mut lines = vec![
        prompt("u1", None, 1, "first question"),
        says("a1", "u1", 2, "first answer"),
        prompt("u2", Some("a1"), 3, "second question"),
        // The same line written twice (Claude Code does at times): no rewind.
        prompt("u2", Some("a1"), 3, "second question"),
        says("a2", "u2", 4, "second answer"),
        entry("a3", Some("u2"), 5, "assistant", serde_json::json!([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]), none.clone()),
        entry("r1", Some("a3"), 6, "user", serde_json::json!([{"type": "tool_result", "tool_use_id": "t1", "content": "src"}]), none.clone()),
        // A sub-agent's prompt with the same parent as the second: no rewind (but a line of
        // the turn the rewind below abandons).
        entry("x1", Some("a1"), 7, "user", serde_json::json!("a sub-agent's task"), serde_json::json!({"isSidechain": true})),
    ];
    write_lines(&log, &lines);
    run(&w);
    assert!(superseded_records(&w.store()).is_empty());
    // Rewound to the second question, asked in other words.
    lines.extend([prompt("u3", Some("a1"), 8, "second question, in other words"), says("a4", "u3", 9, "another answer")]);
    write_lines(&log, &lines);
    run(&w);
    let ids = |list: &[&str]| -> Vec<String> { list.iter().map(|u| format!("claude-code:{u}")).collect() };
    assert_eq!(superseded_records(&w.store()), [(1, ids(&["a2", "a3", "r1", "u2", "x1"]))]);
    // A prompt after the rewind's answer, then the rewind's prompt rewound in the same batch.
    lines.extend([prompt("u4", Some("a4"), 10, "third question"), says("a5", "u4", 11, "third answer"), prompt("u5", Some("a1"), 12, "second question, once more")]);
    write_lines(&log, &lines);
    run(&w);
    assert_eq!(superseded_records(&w.store())[1..], [(1, ids(&["a4", "a5", "u3", "u4"]))]);
    let (j, state) = state_of(&w);
    let listed: Vec<String> = state.session_events(Some("claude-code"), "s1", true, 100).into_iter().map(|m| m.id).collect();
    assert_eq!(listed, ids(&["u1", "a1", "u5"]));
    assert_eq!(state.session("claude-code", "s1").expect("listed").prompt.as_deref(), Some("first question"));
    // A prompt without a parent, as the first's, in this log that names parents: a rewind to
    // the conversation's start, which abandons every line from the first prompt on.
    lines.extend([says("a6", "u5", 13, "an answer"), prompt("u6", None, 14, "the first question, rephrased"), says("a7", "u6", 15, "a new answer")]);
    write_lines(&log, &lines);
    run(&w);
    assert_eq!(superseded_records(&w.store())[2..], [(1, ids(&["a1", "a2", "a3", "a4", "a5", "a6", "r1", "u1", "u2", "u3", "u4", "u5", "x1"]))]);
    let mut state = origin_projections::State::new();
    state.catch_up(&j).expect("state");
    let listed: Vec<String> = state.session_events(Some("claude-code"), "s1", true, 100).into_iter().map(|m| m.id).collect();
    assert_eq!(listed, ids(&["u6", "a7"]));
    assert_eq!(state.session("claude-code", "s1").expect("listed").prompt.as_deref(), Some("the first question, rephrased"));
}

/// A prompt without a parent is sent in the place of the first (a rewind to the conversation's
/// start) only in a log that names parents: a log whose lines all have none (another tool's)
/// asks two questions, a compaction's boundary (no parent, no prompt) starts the conversation
/// again, a tool's result or a compaction's summary without a parent is sent in no prompt's
/// place, and the first prompt written twice is no rewind; a rewind to the start read at a
/// later run than the first prompt's answer is told as well.
#[test]
fn a_prompt_without_a_parent_rewinds_to_the_start_only_in_a_log_that_names_parents() {
    let w = World::new();
    let line = claude_line;
    let ids = |list: &[&str]| -> Vec<String> { list.iter().map(|u| format!("claude-code:{u}")).collect() };
    // Another tool's log: no line has a parent.
    write_lines(&w.log("flat.jsonl"), &[
        line("flat", "f1", None, "user", "first question"),
        line("flat", "f2", None, "assistant", "first answer"),
        line("flat", "f3", None, "user", "second question"),
        line("flat", "f4", None, "assistant", "second answer"),
    ]);
    // A compaction: its boundary has no parent and starts the conversation again.
    let mut boundary: serde_json::Value = serde_json::from_str(&line("compacted", "c2", None, "system", "")).expect("json");
    boundary["subtype"] = serde_json::json!("compact_boundary");
    boundary["content"] = serde_json::json!("Conversation compacted");
    boundary.as_object_mut().expect("object").remove("message");
    write_lines(&w.log("compacted.jsonl"), &[
        line("compacted", "c0", None, "user", "before the compaction"),
        line("compacted", "c1", Some("c0"), "assistant", "an answer"),
        boundary.to_string(),
        line("compacted", "c3", None, "user", "after the compaction"),
        line("compacted", "c4", Some("c3"), "assistant", "another answer"),
    ]);
    // A prompt without a parent abandoned by a rewind to a prompt before it: no longer the
    // start a later prompt without a parent would rewind to.
    write_lines(&w.log("mixed.jsonl"), &[
        line("mixed", "m0", None, "system", "a hook ran"),
        line("mixed", "m1", Some("m0"), "user", "a question"),
        line("mixed", "m2", Some("m1"), "assistant", "an answer"),
        line("mixed", "m3", None, "user", "a question without a parent"),
        line("mixed", "m4", Some("m3"), "assistant", "its answer"),
        line("mixed", "m5", Some("m0"), "user", "a question, rewound"),
        line("mixed", "m6", Some("m5"), "assistant", "the answer kept"),
        line("mixed", "m7", None, "user", "another question without a parent"),
    ]);
    // A conversation that starts with a command's lines (no prompt), a hook's line without a
    // parent after it (no start of its own), then a prompt without a parent: a rewind to the
    // start.
    let mut hook: serde_json::Value = serde_json::from_str(&line("command", "h1", None, "user", "")).expect("json");
    hook["type"] = serde_json::json!("attachment");
    hook["attachment"] = serde_json::json!({"type": "hook_success", "hookName": "SessionStart:resume"});
    write_lines(&w.log("command.jsonl"), &[
        line("command", "d1", None, "user", "<command-message>review is running…</command-message>\n<command-name>/review</command-name>"),
        line("command", "d2", Some("d1"), "assistant", "the review"),
        hook.to_string(),
        line("command", "d3", None, "user", "actually just explain the diff"),
    ]);
    // A tool's result and a compaction's summary without a parent: no rewind.
    let mut summary: serde_json::Value = serde_json::from_str(&line("summed", "s4", None, "user", "This session is being continued from a previous conversation.")).expect("json");
    summary["isCompactSummary"] = serde_json::json!(true);
    write_lines(&w.log("summed.jsonl"), &[
        line("summed", "s1", None, "user", "run the tests"),
        claude_entry("summed", "s2", Some("s1"), "assistant", serde_json::json!([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make test"}}])).to_string(),
        claude_entry("summed", "s3", None, "user", serde_json::json!([{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}])).to_string(),
        summary.to_string(),
    ]);
    // The first prompt written again after its answer, then (at the next run) a rewind to the
    // start.
    let chained = w.log("chained.jsonl");
    let mut lines = vec![
        line("chained", "k1", None, "user", "the first question"),
        line("chained", "k2", Some("k1"), "assistant", "the first answer"),
        line("chained", "k1", None, "user", "the first question"),
    ];
    write_lines(&chained, &lines);
    run(&w);
    let first = [(1, ids(&["d1", "d2", "h1"])), (1, ids(&["m1", "m2", "m3", "m4"]))];
    let mut found = superseded_records(&w.store());
    found.sort();
    assert_eq!(found, first);
    lines.extend([line("chained", "k3", None, "user", "the first question, in other words"), line("chained", "k4", Some("k3"), "assistant", "a better answer")]);
    write_lines(&chained, &lines);
    run(&w);
    assert_eq!(superseded_records(&w.store())[2..], [(1, ids(&["k1", "k2"]))]);
    let (_, state) = state_of(&w);
    let listed = |s: &str| -> Vec<String> { state.session_events(Some("claude-code"), s, true, 100).into_iter().map(|m| m.id).collect() };
    assert_eq!(listed("flat"), ids(&["f1", "f2", "f3", "f4"]));
    assert_eq!(listed("compacted"), ids(&["c0", "c1", "c2", "c3", "c4"]));
    assert_eq!(listed("chained"), ids(&["k3", "k4"]));
    assert_eq!(listed("mixed"), ids(&["m0", "m5", "m6", "m7"]));
    assert_eq!(listed("summed").len(), 4);
    assert_eq!(state.session("claude-code", "command").expect("listed").prompt.as_deref(), Some("actually just explain the diff"));
    assert_eq!(state.session("claude-code", "chained").expect("listed").prompt.as_deref(), Some("the first question, in other words"));
}

/// What a step of a Claude Code session writes, for [`claude_rewinds_leave_current_the_chain_claude_code_resumes`].
#[derive(Clone, Debug)]
enum ClaudeStep {
    /// The person's prompt.
    Prompt,
    /// The agent's answer.
    Answer,
    /// A tool call and its result.
    Tool,
    /// A rewind to one of the prompts of the conversation (the `n`th from the latest, modulo
    /// their count; at the first, a prompt without a parent) and a prompt sent in its place.
    Rewind(usize),
    /// A compaction: its boundary (no parent) and its summary.
    Compact,
    /// The log read so far (a run of ingest).
    Read,
}

fn claude_step() -> impl proptest::strategy::Strategy<Value = ClaudeStep> {
    use proptest::prelude::*;
    prop_oneof![
        3 => Just(ClaudeStep::Prompt),
        3 => Just(ClaudeStep::Answer),
        2 => Just(ClaudeStep::Tool),
        2 => (0usize..8).prop_map(ClaudeStep::Rewind),
        1 => Just(ClaudeStep::Compact),
        1 => Just(ClaudeStep::Read),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// A Claude Code session written as Claude Code writes it (each line's parent the line
    /// before it on the conversation; a rewind sends a prompt with the parent of the prompt it
    /// replaces, none for the first; a compaction's boundary has none and names the line before
    /// it as its logical parent), read in one run or several: the events listed are the lines
    /// of the conversation Claude Code resumes, the chain of parents from the last line (through
    /// a boundary's logical parent: a compaction's turns stay current), and the session's first
    /// prompt is that chain's first. (A rewind to the first prompt after a compaction, or
    /// before any line answered it, is not told, by choice, and not written here.)
    #[test]
    fn claude_rewinds_leave_current_the_chain_claude_code_resumes(steps in proptest::collection::vec(claude_step(), 1..40)) {
        use proptest::prop_assert_eq;
        let w = World::new();
        let log = w.log("s.jsonl");
        // (uuid, parent, logical parent, line, is a prompt, its text).
        let mut lines: Vec<(String, Option<String>, Option<String>, String, bool, String)> = Vec::new();
        let mut leaf: Option<String> = None;
        let mut n = 0;
        let mut written: Vec<String> = Vec::new();
        // The chain of parents from `leaf`, through boundaries' logical parents.
        let chain = |lines: &[(String, Option<String>, Option<String>, String, bool, String)], leaf: &Option<String>| -> Vec<String> {
            let mut out = Vec::new();
            let mut at = leaf.clone();
            while let Some(u) = at {
                let l = lines.iter().find(|l| l.0 == u).expect("a line of the log");
                out.push(u.clone());
                at = l.1.clone().or_else(|| l.2.clone());
            }
            out.reverse();
            out
        };
        let mut push = |lines: &mut Vec<_>, leaf: &mut Option<String>, parent: Option<String>, logical: Option<String>, kind: &str| {
            n += 1;
            let uuid = format!("l{n}");
            let text = format!("text {n}");
            let (line, prompt) = match kind {
                "prompt" => (claude_entry("s", &uuid, parent.as_deref(), "user", serde_json::json!(text)), true),
                "answer" => (claude_entry("s", &uuid, parent.as_deref(), "assistant", serde_json::json!([{"type": "text", "text": text}])), false),
                "call" => (claude_entry("s", &uuid, parent.as_deref(), "assistant", serde_json::json!([{"type": "tool_use", "id": format!("t{n}"), "name": "Bash", "input": {"command": "ls"}}])), false),
                "result" => (claude_entry("s", &uuid, parent.as_deref(), "user", serde_json::json!([{"type": "tool_result", "tool_use_id": format!("t{}", n - 1), "content": text}])), false),
                "summary" => {
                    let mut v = claude_entry("s", &uuid, parent.as_deref(), "user", serde_json::json!("This session is being continued from a previous conversation."));
                    v["isCompactSummary"] = serde_json::json!(true);
                    (v, false)
                }
                _ => {
                    let mut v = claude_entry("s", &uuid, None, "system", serde_json::json!(""));
                    v.as_object_mut().expect("object").remove("message");
                    v["subtype"] = serde_json::json!("compact_boundary");
                    v["content"] = serde_json::json!("Conversation compacted");
                    v["logicalParentUuid"] = serde_json::json!(logical);
                    (v, false)
                }
            };
            lines.push((uuid.clone(), parent, logical, line.to_string(), prompt, text));
            *leaf = Some(uuid);
        };
        for step in &steps {
            match step {
                ClaudeStep::Prompt => { let p = leaf.clone(); push(&mut lines, &mut leaf, p, None, "prompt"); }
                ClaudeStep::Answer => { let p = leaf.clone(); push(&mut lines, &mut leaf, p, None, "answer"); }
                ClaudeStep::Tool => {
                    let p = leaf.clone();
                    push(&mut lines, &mut leaf, p, None, "call");
                    let p = leaf.clone();
                    push(&mut lines, &mut leaf, p, None, "result");
                }
                ClaudeStep::Rewind(k) => {
                    // The prompts of the conversation after its last compaction (or all).
                    let current = chain(&lines, &leaf);
                    let since = current.iter().rposition(|u| lines.iter().any(|l| &l.0 == u && l.1.is_none() && !l.4)).map_or(0, |b| b + 1);
                    let prompts: Vec<&String> = current[since..].iter().filter(|u| lines.iter().any(|l| &l.0 == *u && l.4)).collect();
                    if prompts.is_empty() {
                        continue;
                    }
                    let target = prompts[prompts.len() - 1 - k % prompts.len()].clone();
                    let parent = lines.iter().find(|l| l.0 == target).expect("its line").1.clone();
                    // Not told, by choice: a rewind to the first prompt after a compaction, or
                    // before any line answered it (no line names it as its parent yet).
                    if parent.is_none() && (since > 0 || leaf.as_ref() == Some(&target)) {
                        continue;
                    }
                    push(&mut lines, &mut leaf, parent, None, "prompt");
                }
                ClaudeStep::Compact => {
                    if leaf.is_none() {
                        continue;
                    }
                    let logical = leaf.clone();
                    push(&mut lines, &mut leaf, None, logical, "boundary");
                    let p = leaf.clone();
                    push(&mut lines, &mut leaf, p, None, "summary");
                }
                ClaudeStep::Read => {
                    written = lines.iter().map(|l| l.3.clone()).collect();
                    write_lines(&log, &written);
                    run(&w);
                }
            }
        }
        let all: Vec<String> = lines.iter().map(|l| l.3.clone()).collect();
        if all.is_empty() {
            return Ok(());
        }
        if all != written {
            write_lines(&log, &all);
            run(&w);
        }
        let current = chain(&lines, &leaf);
        let (_, state) = state_of(&w);
        let listed: Vec<String> = state.session_events(Some("claude-code"), "s", true, 1000).into_iter().map(|m| m.id).collect();
        let want: Vec<String> = lines.iter().filter(|l| current.contains(&l.0)).map(|l| format!("claude-code:{}", l.0)).collect();
        prop_assert_eq!(&listed, &want, "steps {:?}", steps);
        let first = lines.iter().find(|l| l.4 && current.contains(&l.0)).map(|l| l.5.clone());
        prop_assert_eq!(state.session("claude-code", "s").and_then(|s| s.prompt.clone()), first, "steps {:?}", steps);
    }
}

/// A resumed session's log (its copies of the original's lines written with its own session
/// id) rewound to the start: the copies stay the original's, current there, and the resumed
/// session's first prompt is the one sent in the start's place, not the copied one.
#[test]
fn a_resumed_session_rewound_to_the_start_takes_the_new_prompt_as_its_first() {
    let w = World::new();
    let line = claude_line;
    let original = |session: &str| vec![line(session, "z1", None, "user", "zebra question"), line(session, "z2", Some("z1"), "assistant", "zebra answer")];
    write_lines(&w.log("z.jsonl"), &original("z"));
    run(&w);
    let mut resumed = original("b");
    resumed.extend([line("b", "b1", Some("z2"), "user", "a question in b"), line("b", "r1", None, "user", "rewound start in b"), line("b", "r2", Some("r1"), "assistant", "an answer in b")]);
    write_lines(&w.log("b.jsonl"), &resumed);
    run(&w);
    let (_, state) = state_of(&w);
    let listed = |s: &str| -> Vec<String> { state.session_events(Some("claude-code"), s, true, 100).into_iter().map(|m| m.id).collect() };
    let ids = |list: &[&str]| -> Vec<String> { list.iter().map(|u| format!("claude-code:{u}")).collect() };
    assert_eq!(listed("z"), ids(&["z1", "z2"]));
    assert_eq!(listed("b"), ids(&["r1", "r2"]));
    assert_eq!(state.session("claude-code", "z").expect("listed").prompt.as_deref(), Some("zebra question"));
    assert_eq!(state.session("claude-code", "b").expect("listed").prompt.as_deref(), Some("rewound start in b"));
}

/// A session's first prompt rewound (it has a parent: a line before it): the prompt sent in its
/// place is the session's first, whether the first was read at an earlier run or in the same
/// record.
#[test]
fn a_claude_rewind_of_the_first_prompt_gives_the_session_the_new_one() {
    for one_run in [false, true] {
        let w = World::new();
        let log = w.log("s1.jsonl");
        let line = |uuid: &str, parent: Option<&str>, role: &str, text: &str, meta: bool| {
            let mut v = claude_entry("s1", uuid, parent, role, serde_json::json!(text));
            v["isMeta"] = serde_json::json!(meta);
            v.to_string()
        };
        let mut lines = vec![
            line("m0", None, "user", "<local-command-caveat>Caveat: the messages below were generated by the user</local-command-caveat>", true),
            line("u1", Some("m0"), "user", "alpha prompt", false),
            line("a1", Some("u1"), "assistant", "alpha answer", false),
        ];
        if !one_run {
            write_lines(&log, &lines);
            run(&w);
        }
        lines.extend([line("u2", Some("m0"), "user", "alpha prime prompt", false), line("a2", Some("u2"), "assistant", "alpha prime answer", false)]);
        write_lines(&log, &lines);
        run(&w);
        assert_eq!(superseded_records(&w.store()), [(1, vec!["claude-code:a1".to_owned(), "claude-code:u1".to_owned()])], "one run: {one_run}");
        let (_, state) = state_of(&w);
        assert_eq!(state.session("claude-code", "s1").expect("listed").prompt.as_deref(), Some("alpha prime prompt"), "one run: {one_run}");
    }
}

/// A resumed Claude session's log begins with copies of the lines of the one it resumes (uuids
/// and times kept, its session id written as the copy's or as the original's): a rewind in
/// it to a copied prompt abandons the resumed session's lines after it, never the original
/// session's own events.
#[test]
fn a_rewind_in_a_resumed_claude_session_leaves_the_original_sessions_events() {
    for (copies_keep_their_session, resumed_read_first) in [(false, false), (true, false), (false, true), (true, true)] {
        let w = World::new();
        let line = claude_line;
        let original = |session: &str| claude_two_turns(session, "reply two banana");
        let mut resumed = original(if copies_keep_their_session { "s1" } else { "s2" });
        resumed.extend([line("s2", "r1", Some("a1"), "user", "second question, asked again"), line("s2", "r2", Some("r1"), "assistant", "reply two cherry")]);
        let (first, second) = if resumed_read_first { (("s2.jsonl", &resumed), ("s1.jsonl", &original("s1"))) } else { (("s1.jsonl", &original("s1")), ("s2.jsonl", &resumed)) };
        write_lines(&w.log(first.0), first.1);
        run(&w);
        write_lines(&w.log(second.0), second.1);
        run(&w);
        let (_, state) = state_of(&w);
        let ids = |s: &str| -> Vec<String> { state.session_events(Some("claude-code"), s, true, 100).into_iter().map(|m| m.id).collect() };
        let want = |list: &[&str]| -> Vec<String> { list.iter().map(|u| format!("claude-code:{u}")).collect() };
        let case = format!("copies keep their session: {copies_keep_their_session}, the resumed log read first: {resumed_read_first}");
        // The original's conversation is current wherever it is held.
        for e in ["u1", "a1", "u2", "a2"] {
            assert!(!state.is_superseded(&format!("claude-code:{e}")), "{e}: {case}");
        }
        if resumed_read_first && !copies_keep_their_session {
            // The resumed log's copies came first and hold the events (as before this change).
            assert_eq!(ids("s2"), want(&["u1", "a1", "u2", "a2", "r1", "r2"]), "{case}");
        } else {
            assert_eq!(ids("s1"), want(&["u1", "a1", "u2", "a2"]), "{case}");
            assert_eq!(ids("s2"), want(&["r1", "r2"]), "{case}");
        }
    }
}

/// A log copied from another with a branch its rewind left (a resumed or forked session's log
/// begins with the lines of the one it copies): the copy does not bring the branch back.
#[test]
fn a_log_copied_with_a_branch_its_rewind_left_does_not_bring_it_back() {
    for copies_keep_their_session in [false, true] {
        let w = World::new();
        let line = claude_line;
        let rewound = |session: &str| {
            let mut lines = claude_two_turns(session, "reply grape");
            lines.extend([line(session, "r1", Some("a1"), "user", "second question, asked again"), line(session, "r2", Some("r1"), "assistant", "reply cherry")]);
            lines
        };
        write_lines(&w.log("s2.jsonl"), &rewound("s2"));
        run(&w);
        let mut copied = rewound(if copies_keep_their_session { "s2" } else { "s3" });
        copied.extend([line("s3", "c1", Some("r2"), "user", "and then?"), line("s3", "c2", Some("c1"), "assistant", "then this")]);
        write_lines(&w.log("s3.jsonl"), &copied);
        run(&w);
        let (_, state) = state_of(&w);
        for e in ["u2", "a2"] {
            assert!(state.is_superseded(&format!("claude-code:{e}")), "{e}, copies keep their session: {copies_keep_their_session}");
        }
        let ids: Vec<String> = state.session_events(Some("claude-code"), "s2", true, 100).into_iter().map(|m| m.id).collect();
        assert_eq!(ids, ["u1", "a1", "r1", "r2"].map(|u| format!("claude-code:{u}")), "copies keep their session: {copies_keep_their_session}");
    }
}

/// A rewind to the beginning of a long session abandons more events than a record names: the
/// record names what it holds (1 MiB of ids), says how many stay current, and the log reads on.
#[test]
fn a_rewind_of_more_events_than_a_record_names_is_bounded_and_the_log_reads_on() {
    let w = World::new();
    let log = w.log("s1.jsonl");
    let entry = |uuid: &str, parent: &str, role: &str, text: &str| claude_line("s1", uuid, Some(parent), role, text);
    let mut lines = vec![entry("u0", "", "user", "the first question"), entry("a0", "u0", "assistant", "the first answer")];
    // Forty turns of 600 steps each (ids as long as Claude Code's, a UUID).
    let id = |k: &str, i: u32| format!("{k}{i:07}-0000-4000-8000-000000000000");
    let mut prev = "a0".to_owned();
    for t in 1..=40 {
        lines.push(entry(&id("u", t), &prev, "user", &format!("question {t}")));
        prev = id("u", t);
        for k in 0..600 {
            let a = id("a", t * 1000 + k);
            lines.push(entry(&a, &prev, "assistant", &format!("step {k} of turn {t}")));
            prev = a;
        }
    }
    write_lines(&log, &lines);
    run(&w);
    // Rewound to the second question.
    lines.push(entry("r1", "a0", "user", "the second question, again"));
    write_lines(&log, &lines);
    let summary = run(&w);
    let problems = &summary.sources["claude-code"].problems;
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("of the events its agent abandoned stay current"), "{problems:?}");
    let named = superseded_records(&w.store());
    assert_eq!(named.len(), 1);
    let bytes: usize = named[0].1.iter().map(|id| id.len() + 8).sum();
    assert!(bytes <= 1024 * 1024 && bytes > 1000 * 1024, "{bytes} bytes of ids");
    // Those of the latest lines, one run of them up to the rewind: the last turn whole, the
    // first not at all.
    let named_ids: std::collections::HashSet<&str> = named[0].1.iter().map(String::as_str).collect();
    let cc = |k: &str, i: u32| format!("claude-code:{}", id(k, i));
    assert!(named_ids.contains(cc("u", 40).as_str()) && named_ids.contains(cc("a", 40_599).as_str()));
    assert!(!named_ids.contains(cc("u", 1).as_str()) && !named_ids.contains(cc("a", 1_000).as_str()));
    // The log reads on.
    lines.push(entry("r2", "r1", "assistant", "a later answer"));
    write_lines(&log, &lines);
    run(&w);
    assert_eq!(event_counts(&w.store()).get("claude-code:r2"), Some(&1));
}

/// Grok's repair (a line it cannot load dropped) and compaction (a summary, then the latest
/// turns) rewrite the transcript with lines it had, moved up: they keep the ids they had, so
/// no event is there twice (every line after a dropped one was stored again under a new id);
/// through two rewrites, each line keeps the id of its first version.
#[test]
fn a_repaired_or_compacted_grok_transcript_keeps_the_ids_of_the_lines_it_moved() {
    let w = World::new();
    let chat = grok_chat(&w, "sess-3");
    let ids_of = |w: &World| -> std::collections::BTreeMap<String, String> { ingested(&w.store()).into_iter().flat_map(|r| r.events).map(|e| (e.id, e.text)).collect() };
    let torn = r#"{"type":"user","content":[{"type":"te"#.to_owned();
    write_lines(&chat, &[grok_user("first question", 0), grok_assistant("first answer"), torn, grok_user("second question", 1), grok_assistant("second answer")]);
    run(&w);
    // Repaired: the line it could not load dropped; then a third question.
    write_lines(&chat, &[grok_user("first question", 0), grok_assistant("first answer"), grok_user("second question", 1), grok_assistant("second answer"), grok_user("third question", 2)]);
    run(&w);
    let p = "grok:sess-3";
    let expect = |pairs: &[(&str, &str)]| -> std::collections::BTreeMap<String, String> { pairs.iter().map(|(l, t)| (format!("{p}:{l}"), (*t).to_owned())).collect() };
    assert_eq!(
        ids_of(&w),
        expect(&[("1", "first question"), ("2", "first answer"), ("4", "second question"), ("5", "second answer"), ("v2:5", "third question")])
    );
    // Compacted: a summary, then the latest turns as they were.
    write_lines(&chat, &[grok_assistant("summary: two questions answered"), grok_user("second question", 1), grok_assistant("second answer"), grok_user("third question", 2), grok_assistant("third answer")]);
    run(&w);
    assert_eq!(
        ids_of(&w),
        expect(&[
            ("1", "first question"),
            ("2", "first answer"),
            ("4", "second question"),
            ("5", "second answer"),
            ("v2:5", "third question"),
            ("v3:1", "summary: two questions answered"),
            ("v3:5", "third answer"),
        ])
    );
}

/// A Codex home in a temporary folder, its store, and the lines of a fixture rollout.
struct CodexWorld {
    dir: tempfile::TempDir,
    lines: Vec<String>,
}

const ROLLOUT: &str = "rollout-2026-10-20T16-05-40-019a0f40-1b55-7a32-8c07-93d2e6f1b4a8.jsonl";

impl CodexWorld {
    fn new() -> CodexWorld {
        let dir = tempfile::tempdir().expect("tempdir");
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/agent-home/.codex/sessions/2026/10/20").join(ROLLOUT);
        let text = std::fs::read_to_string(fixture).expect("fixture");
        let lines = text.lines().map(str::to_owned).collect();
        CodexWorld { dir, lines }
    }
    /// `folder` below `.codex`, made.
    fn folder(&self, folder: &str) -> PathBuf {
        let path = self.dir.path().join("home/.codex").join(folder);
        std::fs::create_dir_all(&path).expect("mkdir");
        path
    }
    /// The rollout's first `n` lines, each with its newline.
    fn first(&self, n: usize) -> String {
        self.lines[..n].iter().map(|l| format!("{l}\n")).collect()
    }
    fn store(&self) -> PathBuf {
        self.dir.path().join("store")
    }
    fn run(&self) -> origin_ingest::SourceRun {
        let j = Journal::open(self.store().join("journal"), Options::default()).expect("open journal");
        let summary = Ingester::new(Arc::new(j), &self.store(), Homes::under(&self.dir.path().join("home"))).run(None, &mut |_| {}).expect("ingest");
        let codex = summary.sources["codex"].clone();
        assert!(codex.problems.is_empty(), "{:?}", codex.problems);
        codex
    }
    /// The log keys the store's records name, and every event's count.
    fn keys_and_counts(&self) -> (std::collections::BTreeSet<String>, HashMap<String, usize>) {
        (ingested(&self.store()).iter().map(|r| r.path.clone()).collect(), event_counts(&self.store()))
    }
    /// The path the log known by `key` was last read at, where not at `key`.
    fn read_at(&self, key: &str) -> Option<String> {
        let j = Journal::open(self.store().join("journal"), Options::default()).expect("open journal");
        Ingester::new(Arc::new(j), &self.store(), Homes::under(&self.dir.path().join("home"))).read_at("codex", key).expect("cursors")
    }
    /// The bytes of the mirror the store's cursors name for the rollout (one key).
    fn mirror(&self) -> Vec<u8> {
        let j = Journal::open(self.store().join("journal"), Options::default()).expect("open journal");
        let ing = Ingester::new(Arc::new(j), &self.store(), Homes::under(&self.dir.path().join("home")));
        let cursors = ing.cursors().expect("cursors");
        let mut rollouts = cursors.files.iter().filter(|((_, key), _)| key.contains("rollout-"));
        let (_, cur) = rollouts.next().expect("a rollout's cursor");
        assert!(rollouts.next().is_none(), "one cursor for the rollout");
        ing.mirrors().read(&cur.mirror).expect("mirror")
    }
}

fn zstd_of(text: &str) -> Vec<u8> {
    zstd::encode_all(text.as_bytes(), 3).expect("compress")
}

/// Codex moves its rollouts: compresses a cold one to `….jsonl.zst` and deletes the plain file,
/// archives one into `archived_sessions/`, and writes it plain again when the thread resumes.
/// Each time the log is read under the name it was first read by: only new lines are read, the
/// records name one file, every event is stored once, and the one mirror holds every line.
#[test]
fn a_log_its_agent_moves_or_compresses_is_read_under_its_first_name() {
    let w = CodexWorld::new();
    let day = w.folder("sessions/2026/10/20");
    let plain = day.join(ROLLOUT);
    std::fs::write(&plain, w.first(8)).expect("write");
    let first = w.run();
    assert!(first.events > 0, "{first:?}");
    let (keys, counts) = w.keys_and_counts();
    assert_eq!(keys.len(), 1, "{keys:?}");

    // Compressed when cold, the plain file deleted.
    let zst = day.join(format!("{ROLLOUT}.zst"));
    std::fs::write(&zst, zstd_of(&w.first(8))).expect("write zst");
    std::fs::remove_file(&plain).expect("delete plain");
    let compressed = w.run();
    assert_eq!((compressed.events, compressed.lines), (0, 0), "nothing read again: {compressed:?}");
    assert_eq!(w.keys_and_counts(), (keys.clone(), counts.clone()));

    // Archived, still compressed.
    let archived = w.folder("archived_sessions").join(format!("{ROLLOUT}.zst"));
    std::fs::rename(&zst, &archived).expect("archive");
    let moved = w.run();
    assert_eq!((moved.events, moved.lines), (0, 0), "nothing read again: {moved:?}");
    assert_eq!(w.keys_and_counts(), (keys.clone(), counts.clone()));
    // Where it is read now is recorded (without lines), for `sources` to name the file.
    let key = keys.iter().next().expect("a key").clone();
    assert_eq!(w.read_at(&key), Some(archived.to_str().expect("utf-8").to_owned()));

    // Resumed: written plain again with the thread's new lines, where the archive keeps it.
    std::fs::remove_file(&archived).expect("delete zst");
    std::fs::write(w.folder("archived_sessions").join(ROLLOUT), w.first(11)).expect("write resumed");
    let resumed = w.run();
    assert_eq!(resumed.lines, 3, "only the new lines: {resumed:?}");
    let (keys_after, counts_after) = w.keys_and_counts();
    assert_eq!(keys_after, keys, "the records name the file first read");
    assert!(counts_after.len() > counts.len(), "the new lines' events: {counts_after:?}");
    assert!(counts_after.values().all(|&n| n == 1), "every event once: {counts_after:?}");
    assert_eq!(String::from_utf8(w.mirror()).expect("utf-8"), w.first(11), "one mirror holds every line");
    // `sources` names the file where the log is now, for a line read before it moved and for
    // one read after; the records still name the file first read (above).
    let now = w.folder("archived_sessions").join(ROLLOUT);
    assert_eq!(w.read_at(&key), Some(now.to_str().expect("utf-8").to_owned()));
    let new_id = counts_after.keys().find(|id| !counts.contains_key(*id)).expect("a new event");
    let old_id = counts.keys().next().expect("an old event");
    for id in [old_id, new_id] {
        let out = crate::cli_forget_restore::origin(&w.store(), &["sources", id, "--json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let shown: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(shown[0]["original_file"], now.to_str().expect("utf-8"), "{id}: {shown}");
    }
    // Back where it was first read: named by that path again.
    std::fs::rename(&now, &plain).expect("move back");
    w.run();
    assert_eq!(w.read_at(&key), None);
}

/// A rollout first read compressed, then written plain beside its `.zst` when its thread
/// resumed: read on under its first name, and `sources` names the plain file, which holds every
/// line (the `.zst`, still there, holds only the first); where the plain file is gone again,
/// the `.zst`.
#[test]
fn sources_names_the_plain_rollout_written_beside_the_zst_first_read() {
    let w = CodexWorld::new();
    let day = w.folder("sessions/2026/10/20");
    let zst = day.join(format!("{ROLLOUT}.zst"));
    std::fs::write(&zst, zstd_of(&w.first(8))).expect("write zst");
    w.run();
    let (keys, counts) = w.keys_and_counts();
    assert_eq!(keys.iter().collect::<Vec<_>>(), [zst.to_str().expect("utf-8")], "first read compressed");
    let plain = day.join(ROLLOUT);
    std::fs::write(&plain, w.first(11)).expect("write resumed");
    let resumed = w.run();
    assert_eq!(resumed.lines, 3, "only the new lines: {resumed:?}");
    let (_, counts_after) = w.keys_and_counts();
    let new_id = counts_after.keys().find(|id| !counts.contains_key(*id)).expect("a new event");
    let old_id = counts.keys().next().expect("an old event");
    let named = |id: &str| {
        let out = crate::cli_forget_restore::origin(&w.store(), &["sources", id, "--json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let shown: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        shown[0]["original_file"].as_str().expect("original_file").to_owned()
    };
    for id in [old_id, new_id] {
        assert_eq!(named(id), plain.to_str().expect("utf-8"), "{id}");
    }
    std::fs::remove_file(&plain).expect("delete plain");
    assert_eq!(named(new_id), zst.to_str().expect("utf-8"), "the last read gone: the first");
}

/// What is not a moved log is read as its own: a file of the same name whose beginning is
/// another's, and a copy whose first path still names a file.
#[test]
fn a_log_of_a_known_name_is_read_as_its_own_unless_it_is_the_known_one_moved() {
    let w = CodexWorld::new();
    let day = w.folder("sessions/2026/10/20");
    std::fs::write(day.join(ROLLOUT), w.first(8)).expect("write");
    let first = w.run();
    // A copy in the archive, the first still there: its own.
    std::fs::write(w.folder("archived_sessions").join(ROLLOUT), w.first(8)).expect("copy");
    let copy = w.run();
    assert_eq!(copy.lines, 8, "a copy is read: {copy:?}");
    assert_eq!(w.keys_and_counts().0.len(), 2);

    let w = CodexWorld::new();
    let day = w.folder("sessions/2026/10/20");
    std::fs::write(day.join(ROLLOUT), w.first(8)).expect("write");
    w.run();
    // The first gone; a file of its name in another folder beginning otherwise: its own.
    std::fs::remove_file(day.join(ROLLOUT)).expect("delete");
    let other: String = w.first(11).replacen("Find every place", "Find each place", 1);
    assert_ne!(other, w.first(11));
    std::fs::write(w.folder("sessions/2026/10/21").join(ROLLOUT), &other).expect("write other");
    let read = w.run();
    assert_eq!(read.lines, 11, "another log of that name is read whole: {read:?}");
    assert_eq!(w.keys_and_counts().0.len(), 2);
    assert_eq!(first.lines, 8);
}

/// A Codex user message line saying `text`.
fn codex_user(text: &str) -> String {
    format!(
        r#"{{"timestamp":"2026-10-20T14:05:40.016Z","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":{}}}]}}}}"#,
        serde_json::to_string(text).expect("json")
    )
}

/// A Codex tool output line of about `n` bytes.
fn codex_output(n: usize) -> String {
    let output: String = (0..n).map(|i| if i % 97 == 96 { '\n' } else { (b'a' + (i % 23) as u8) as char }).collect();
    format!(
        r#"{{"timestamp":"2026-10-20T14:05:42.316Z","type":"response_item","payload":{{"type":"function_call_output","call_id":"c1","output":{}}}}}"#,
        serde_json::to_string(&output).expect("json")
    )
}

/// A compressed log larger than ingest's read window, decoded as it is read: its lines of a
/// megabyte or more cross the windows' edges, one line longer than a window is kept raw and
/// parsed with its output cut to its first 256 KiB, and the mirror gives back every decoded byte. Written again with more lines
/// (as Codex does when a thread resumes and goes cold again), only those are read.
#[test]
fn a_compressed_log_larger_than_a_read_window_is_read_whole_and_then_only_its_new_lines() {
    let w = CodexWorld::new();
    let day = w.folder("sessions/2026/10/20");
    let mut lines = vec![w.lines[0].clone(), codex_user("before the long outputs")];
    lines.extend((0..20).map(|i| codex_output(1_000_000 + i * 7_919)));
    lines.push(codex_output(33 * 1024 * 1024));
    lines.push(codex_user("after the longest output"));
    let text = |lines: &[String]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    let zst = day.join(format!("{ROLLOUT}.zst"));
    std::fs::write(&zst, zstd_of(&text(&lines))).expect("write");
    let first = w.run();
    assert_eq!((first.lines, first.cut), (lines.len() as u64, 0), "{first:?}");
    assert_eq!(first.events, 23, "the two messages and the twenty-one outputs: {first:?}");
    let longest = ingested(&w.store()).into_iter().flat_map(|r| r.events).find(|e| e.line == lines.len() as u64 - 1).expect("the longest output");
    let left_out = format!(" [… {} bytes left out of a line over 32 MiB …]", 33 * 1024 * 1024 + 33 * 1024 * 1024 / 97 - 256 * 1024);
    assert!(longest.text.starts_with("abcdefghijklmnopqrstuvw") && longest.text.ends_with(&left_out), "{}", &longest.text[longest.text.len() - 80..]);
    assert_eq!(w.mirror(), text(&lines).into_bytes(), "the mirror holds every decoded byte");
    let after = ingested(&w.store()).into_iter().flat_map(|r| r.events).find(|e| e.text == "after the longest output").expect("the last message");
    assert_eq!(after.line, lines.len() as u64, "its line number counts every line before it");

    lines.push(codex_user("resumed, then cold again"));
    lines.push(codex_output(2_000_000));
    std::fs::write(&zst, zstd_of(&text(&lines))).expect("write again");
    let again = w.run();
    assert_eq!((again.lines, again.events), (2, 2), "only the new lines: {again:?}");
    assert_eq!(w.mirror(), text(&lines).into_bytes());
}

/// A Codex fork begins with its own header, then its parent's lines copied, each stamped
/// again: the copies are not indexed again, so every event of the parent is stored once, under
/// the parent's session, and the fork's own lines under the fork's. A copied line too long to
/// parse (kept raw, never given to the adapter) keeps the places of the copies after it; the
/// fork read over two runs, and compressed between them, leaves out the same lines.
#[test]
fn a_codex_fork_stores_only_what_it_adds_to_the_history_it_copied() {
    const FORK: &str = "019a1400-0c2d-7e5f-8a9b-0c1d2e3f4a5b";
    let w = CodexWorld::new();
    let mut parent: Vec<String> = w.lines[..11].to_vec();
    parent.insert(4, codex_output(5 * 1024 * 1024));
    let text = |lines: &[String]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    std::fs::write(w.folder("sessions/2026/10/20").join(ROLLOUT), text(&parent)).expect("write parent");
    let parent_id = &ROLLOUT[ROLLOUT.len() - 42..ROLLOUT.len() - 6];
    let header = format!(
        r#"{{"timestamp":"2026-10-21T08:00:00.000Z","type":"session_meta","payload":{{"id":"{FORK}","timestamp":"2026-10-21T08:00:00.000Z","cwd":"/home/dev/demo-app","forked_from_id":"{parent_id}","cli_version":"0.160.0","source":"cli"}}}}"#
    );
    let mut fork = vec![header];
    for (i, l) in parent.iter().enumerate() {
        let rest = &l[l.find(r#"","type":""#).expect("a rollout line")..];
        fork.push(format!(r#"{{"timestamp":"2026-10-21T08:00:00.{:03}Z{rest}"#, i + 1));
    }
    let own = [codex_user("the fork's own first question"), codex_user("the fork's own second question")];
    let fork_path = w.folder("sessions/2026/10/21").join(format!("rollout-2026-10-21T10-00-00-{FORK}.jsonl"));
    // The first run sees the fork halfway through its copy and one line of its own.
    std::fs::write(&fork_path, text(&fork[..7])).expect("write fork");
    w.run();
    std::fs::write(&fork_path, text(&[&fork[..], &own[..1]].concat())).expect("write fork");
    w.run();
    // Then compressed when cold, with its second line of its own.
    std::fs::remove_file(&fork_path).expect("delete plain");
    std::fs::write(fork_path.with_extension("jsonl.zst"), zstd_of(&text(&[&fork[..], &own[..]].concat()))).expect("write zst");
    w.run();

    let events: Vec<origin_engine::record::Event> = ingested(&w.store()).into_iter().flat_map(|r| r.events).collect();
    let mut by_text: HashMap<&str, Vec<&str>> = HashMap::new();
    for e in &events {
        by_text.entry(e.text.as_str()).or_default().push(e.session.as_str());
    }
    let in_fork: Vec<&str> = events.iter().filter(|e| e.session == FORK).map(|e| e.text.as_str()).collect();
    assert_eq!(in_fork, vec!["the fork's own first question", "the fork's own second question"]);
    assert!(events.iter().filter(|e| e.session != FORK).count() >= 5, "the parent's events: {by_text:?}");
    assert!(by_text.values().all(|s| s.len() == 1), "every event once: {by_text:?}");
}

/// Grok names every transcript `chat_history.jsonl`, and each begins with the same system
/// prompt (often longer than the 4 KiB a cursor hashes): a new session's transcript is not a
/// deleted session's moved, and is read as its own, whole.
#[test]
fn a_new_grok_session_is_not_taken_for_a_deleted_one_of_the_same_file_name() {
    let w = World::new();
    let system = format!(r#"{{"type":"system","content":"{}"}}"#, "You are Grok. ".repeat(400));
    let a = grok_chat(&w, "sess-a");
    write_lines(&a, &[system.clone(), grok_user("apples", 0), grok_assistant("pears")]);
    run(&w);
    std::fs::remove_dir_all(a.parent().expect("folder")).expect("delete session a");
    let b = grok_chat(&w, "sess-b");
    write_lines(&b, &[system, grok_user("bananas", 0), grok_assistant("plums")]);
    let read = run(&w);
    assert_eq!(read.sources["grok"].lines, 3, "session b read whole: {read:?}");
    let records = ingested(&w.store());
    let b_key = b.to_string_lossy().into_owned();
    assert!(records.iter().any(|r| r.path == b_key), "b's lines are recorded under b's path");
    assert!(records.iter().filter(|r| r.path != b_key).all(|r| r.events.iter().all(|e| !e.text.contains("bananas"))), "none under a's");
}

/// A rollout first read compressed (cold when Origin first saw it) that Codex writes plain
/// again beside its `.zst` when the thread resumes (discovery then reads the plain file and
/// passes over the `.zst`): read on under the `.zst`'s name, only its new lines.
#[test]
fn a_rollout_first_read_compressed_then_written_plain_beside_it_is_read_on() {
    let w = CodexWorld::new();
    let day = w.folder("sessions/2026/10/20");
    std::fs::write(day.join(format!("{ROLLOUT}.zst")), zstd_of(&w.first(8))).expect("write zst");
    let first = w.run();
    assert_eq!(first.lines, 8, "{first:?}");
    let (keys, counts) = w.keys_and_counts();
    std::fs::write(day.join(ROLLOUT), w.first(11)).expect("write plain beside it");
    let resumed = w.run();
    assert_eq!(resumed.lines, 3, "only the new lines: {resumed:?}");
    let (keys_after, counts_after) = w.keys_and_counts();
    assert_eq!(keys_after, keys, "one name for the rollout");
    assert!(counts_after.len() > counts.len() && counts_after.values().all(|&n| n == 1), "{counts_after:?}");
    assert_eq!(String::from_utf8(w.mirror()).expect("utf-8"), w.first(11));
    // Compressed again, the plain file deleted: its own name again, nothing new.
    std::fs::write(day.join(format!("{ROLLOUT}.zst")), zstd_of(&w.first(11))).expect("write zst again");
    std::fs::remove_file(day.join(ROLLOUT)).expect("delete plain");
    let cold = w.run();
    assert_eq!(cold.lines, 0, "{cold:?}");
    assert_eq!(w.keys_and_counts(), (keys_after, counts_after));
}

/// Grok writes a session's title into `summary.json`, often after the transcript's last line:
/// it is recorded at the next run (a record of no lines, carrying the session's change), and a
/// run with nothing changed records nothing.
#[test]
fn a_grok_title_written_after_the_last_line_is_recorded() {
    let w = World::new();
    let chat = grok_chat(&w, "sess-t");
    write_lines(&chat, &[grok_user("why does the cache miss", 0), grok_assistant("the key has the port")]);
    let summary = chat.with_file_name("summary.json");
    std::fs::write(&summary, r#"{"info":{"id":"sess-t","cwd":"/w/p"}}"#).expect("write summary");
    run(&w);
    let title = |w: &World| {
        let (_, state) = state_of(&w);
        state.session("grok", "sess-t").expect("the session").title
    };
    assert_eq!(title(&w), None);
    let records = ingested(&w.store()).len();
    std::fs::write(&summary, r#"{"info":{"id":"sess-t","cwd":"/w/p"},"generated_title":"Cache key without the port"}"#).expect("write title");
    let again = run(&w);
    assert_eq!((again.sources["grok"].lines, again.sources["grok"].events), (0, 0), "{again:?}");
    assert_eq!(title(&w).as_deref(), Some("Cache key without the port"));
    let all = ingested(&w.store());
    assert_eq!(all.len(), records + 1);
    let last = all.last().expect("a record");
    assert_eq!((last.line_start, last.line_end, last.byte_start == last.byte_end), (3, 3, true));
    run(&w);
    assert_eq!(ingested(&w.store()).len(), records + 1, "nothing new, nothing recorded");
    // The log and its mirror are as they were: the next line is read as ever.
    let mut f = std::fs::OpenOptions::new().append(true).open(&chat).expect("open");
    std::io::Write::write_all(&mut f, format!("{}\n", grok_user("and the host?", 1)).as_bytes()).expect("append");
    let more = run(&w);
    assert_eq!(more.sources["grok"].lines, 1);
    let mirror = w.ingester().mirrors().read(&ingested(&w.store())[0].mirror).expect("mirror");
    assert_eq!(mirror, std::fs::read(&chat).expect("read log"), "the mirror gives back the log");
    assert_eq!(title(&w).as_deref(), Some("Cache key without the port"));
    // A new title read before a batch whose lines said nothing (one malformed line): said at
    // the next run, though `summary.json` has not changed since it was read.
    std::fs::write(&summary, r#"{"info":{"id":"sess-t","cwd":"/w/p"},"generated_title":"Host and port"}"#).expect("write title");
    let mut f = std::fs::OpenOptions::new().append(true).open(&chat).expect("open");
    std::io::Write::write_all(&mut f, b"{not json\n").expect("append");
    let malformed = run(&w);
    assert_eq!(malformed.sources["grok"].malformed, 1, "{malformed:?}");
    run(&w);
    assert_eq!(title(&w).as_deref(), Some("Host and port"));
}
