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
    bad.extend_from_slice(line("g2", "good after").as_bytes());
    bad.push(b'\n');
    std::fs::write(w.log("bad.jsonl"), &bad).expect("write");
    std::fs::write(w.log("fine.jsonl"), format!("{}\n", line("f1", "other file"))).expect("write");
    let summary = w.ingester().run(None, &mut |_| {}).expect("ingest");
    let s = &summary.sources["claude-code"];
    assert_eq!(s.malformed, 4, "truncated JSON, garbage, invalid UTF-8, a JSON array: {s:?}");
    let counts = event_counts(&w.store());
    for id in ["claude-code:g1", "claude-code:g2", "claude-code:f1"] {
        assert_eq!(counts.get(id), Some(&1), "{id}");
    }
    let recs = ingested(&w.store());
    let r = recs.iter().find(|r| r.path.ends_with("bad.jsonl")).expect("record");
    assert_eq!(r.line_end - r.line_start, 7, "every line is read and kept, good or bad");
    let ing = w.ingester();
    assert_eq!(ing.mirrors().read(&r.mirror).expect("mirror"), bad, "bad lines are mirrored verbatim");
}

#[test]
fn a_fifty_megabyte_line_is_kept_whole_counted_as_cut_and_the_rest_is_read() {
    let w = World::new();
    let path = w.log("huge.jsonl");
    let mut f = std::fs::File::create(&path).expect("create");
    writeln!(f, "{}", line("h1", "before the giant")).expect("write");
    // 50 MB of text that compresses poorly enough to need several records.
    let mut x = 0x1234_5678_9abc_def0u64;
    let giant: Vec<u8> = (0..50 * 1024 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b'a' + (x % 26) as u8
        })
        .collect();
    f.write_all(b"{\"type\":\"user\",\"blob\":\"").expect("write");
    f.write_all(&giant).expect("write");
    f.write_all(b"\"}\n").expect("write");
    writeln!(f, "{}", line("h2", "after the giant")).expect("write");
    drop(f);
    let summary = w.ingester().run(None, &mut |_| {}).expect("ingest");
    let s = &summary.sources["claude-code"];
    assert_eq!(s.cut, 1, "{s:?}");
    assert_eq!(s.lines, 3);
    let counts = event_counts(&w.store());
    assert_eq!(counts.get("claude-code:h1"), Some(&1));
    assert_eq!(counts.get("claude-code:h2"), Some(&1));
    let recs = ingested(&w.store());
    assert!(recs.len() >= 3, "a giant line spreads over several records: {}", recs.len());
    let h2 = recs.iter().flat_map(|r| &r.events).find(|e| e.id == "claude-code:h2").expect("h2");
    assert_eq!(h2.line, 3, "line numbers stay right after a giant line");
    let ing = w.ingester();
    let mirror = &recs[0].mirror;
    let back = ing.mirrors().read(mirror).expect("mirror");
    assert!(back == std::fs::read(&path).expect("read"), "the mirror gives back all bytes");
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
