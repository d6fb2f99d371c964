//! Real processes against one store: `kill -9` at random moments, and several writers at once.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use origin_engine::{Access, Journal, NewRecord, Options};
use origin_tests::{origin_bin, scale, seed};
use rand::{Rng, SeedableRng};

/// An acknowledgement printed by `origin journal stress`.
#[derive(Clone, Copy, Debug)]
struct Ack {
    offset: u64,
    thread: u64,
    seq: u64,
    crc: u32,
}

fn parse_ack(line: &str) -> Option<Ack> {
    let mut w = line.split_whitespace();
    if w.next()? != "ack" {
        return None;
    }
    let offset = w.next()?.parse().ok()?;
    let thread = w.next()?.parse().ok()?;
    let seq = w.next()?.parse().ok()?;
    let crc = u32::from_str_radix(w.next()?, 16).ok()?;
    Some(Ack { offset, thread, seq, crc })
}

fn stress(home: &Path, records: u64, threads: u64, size: usize, segment_size: u64) -> Child {
    Command::new(origin_bin())
        .arg("--home")
        .arg(home)
        .args(["journal", "stress", "--records", &records.to_string(), "--threads", &threads.to_string()])
        .args(["--size", &size.to_string(), "--segment-size", &segment_size.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn origin journal stress")
}

/// Reads every complete ack line until the child's stdout closes.
fn collect_acks(child: &mut Child) -> std::thread::JoinHandle<Vec<Ack>> {
    let out = child.stdout.take().expect("piped stdout");
    std::thread::spawn(move || {
        let mut acks = Vec::new();
        let mut reader = BufReader::new(out);
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                // A line cut by the kill has no newline: it was never fully acknowledged to us.
                Ok(_) if line.ends_with('\n') => {
                    if let Some(a) = parse_ack(&line) {
                        acks.push(a);
                    }
                }
                Ok(_) => break,
            }
        }
        acks
    })
}

/// Every acknowledged record is present at its offset with the payload that was acknowledged.
fn check_acks(journal: &Journal, acks: &[Ack], context: &str) {
    let records = journal.read_vec(0, usize::MAX).unwrap_or_else(|e| panic!("{context}: read failed: {e}"));
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.offset, i as u64, "{context}: offsets must be dense");
    }
    for a in acks {
        let r = records
            .get(a.offset as usize)
            .unwrap_or_else(|| panic!("{context}: acknowledged offset {} missing (journal has {})", a.offset, records.len()));
        assert_eq!(crc32fast::hash(&r.payload), a.crc, "{context}: payload at offset {} differs from the ack", a.offset);
        assert_eq!(&r.payload[0..8], &a.thread.to_le_bytes(), "{context}: thread id at offset {}", a.offset);
        assert_eq!(&r.payload[8..16], &a.seq.to_le_bytes(), "{context}: seq at offset {}", a.offset);
    }
}

#[test]
fn kill_9_at_random_moments_never_loses_an_acknowledged_record() {
    let seed = seed(0x0519_2026);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let cycles = 200 * scale();
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    let journal_dir = home.join("journal");
    let mut all_acks: Vec<Ack> = Vec::new();
    let mut killed_mid_run = 0;
    let mut torn_tails_cut = 0;
    for cycle in 0..cycles {
        let mut child = stress(home, 1_000_000, 4, rng.random_range(16..600), 64 * 1024);
        let reader = collect_acks(&mut child);
        std::thread::sleep(Duration::from_micros(rng.random_range(2_000..60_000)));
        child.kill().expect("kill -9");
        let status = child.wait().expect("wait");
        if !status.success() {
            killed_mid_run += 1;
        }
        let mut acks = reader.join().expect("ack reader");
        // Seqs restart in every run; offsets tell the runs apart.
        all_acks.append(&mut acks);
        let context = format!("seed {seed}, cycle {cycle}");
        let j = Journal::open(&journal_dir, Options::default()).unwrap_or_else(|e| panic!("{context}: reopen failed: {e}"));
        torn_tails_cut += j.open_report().torn_tails.len();
        check_acks(&j, &all_acks, &context);
        drop(j);
        if cycle % 50 == 49 {
            let out = Command::new(origin_bin()).arg("--home").arg(home).args(["journal", "verify"]).output().expect("verify");
            assert!(out.status.success(), "{context}: verify failed: {}", String::from_utf8_lossy(&out.stdout));
        }
    }
    eprintln!(
        "kill -9 loop: {cycles} cycles, {killed_mid_run} killed mid-run, {} acknowledged records checked, {torn_tails_cut} torn tails cut, seed {seed}",
        all_acks.len()
    );
    assert_eq!(killed_mid_run, cycles, "every child must have been killed while appending");
    assert!(all_acks.len() as u64 > cycles, "children must acknowledge records before the kill");
}

#[test]
fn four_processes_appending_at_once_leave_every_record_exactly_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    let journal_dir = home.join("journal");
    // A handle opened before the writers start must see their records without reopening.
    let watcher = Journal::open(&journal_dir, Options::default()).expect("open watcher");
    let per_process = 600u64;
    let mut children: Vec<Child> = (0..4).map(|_| stress(home, per_process, 3, 200, 32 * 1024)).collect();
    let readers: Vec<_> = children.iter_mut().map(collect_acks).collect();
    // Follow the store while they write.
    let start = Instant::now();
    let mut seen_while_running = 0;
    while start.elapsed() < Duration::from_secs(60) {
        watcher.refresh().expect("refresh while others append");
        seen_while_running = seen_while_running.max(watcher.next_offset());
        if children.iter_mut().all(|c| c.try_wait().ok().flatten().is_some()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    for c in &mut children {
        let status = c.wait().expect("wait");
        assert!(status.success(), "a writer failed: {status}");
    }
    let acks: Vec<Ack> = readers.into_iter().flat_map(|r| r.join().expect("reader")).collect();
    assert_eq!(acks.len() as u64, 4 * per_process, "every append acknowledged");
    let mut by_offset: HashMap<u64, Ack> = HashMap::new();
    for a in &acks {
        assert!(by_offset.insert(a.offset, *a).is_none(), "offset {} acknowledged twice", a.offset);
    }
    watcher.refresh().expect("refresh");
    assert_eq!(watcher.next_offset(), 4 * per_process, "no record written twice, none missing");
    check_acks(&watcher, &acks, "watcher without reopening");
    let fresh = Journal::open(&journal_dir, Options { access: Access::ReadOnly, ..Options::default() }).expect("open");
    check_acks(&fresh, &acks, "fresh read-only open");
    assert!(seen_while_running > 0, "the watcher saw records while the writers ran");
    let out = Command::new(origin_bin()).arg("--home").arg(home).args(["journal", "verify"]).output().expect("verify");
    assert!(out.status.success(), "verify failed: {}", String::from_utf8_lossy(&out.stdout));
}

/// `origin journal compact` and `origin journal verify` over and over while two processes
/// append and roll small segments, and this process follows the journal and appends between
/// them, its view often behind a compaction: every compaction and every verify succeeds, and
/// every acknowledged record is there once, at its offset, for the handle that followed as for
/// a new open. (A handle behind a compaction created a merged segment's file again and wrote
/// offsets it held; a verify beside a compaction failed on a file it removed.)
#[test]
fn compactions_beside_writers_readers_and_verifies_lose_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    let journal_dir = home.join("journal");
    let follower = Journal::open(&journal_dir, Options::default()).expect("open follower");
    let mut children: Vec<Child> = (0..2).map(|_| stress(home, 1_000_000, 2, 200, 16 * 1024)).collect();
    let readers: Vec<_> = children.iter_mut().map(collect_acks).collect();
    let origin = |args: &[&str]| Command::new(origin_bin()).arg("--home").arg(home).args(args).output().expect("run origin");
    let (mut compactions, mut merged, mut verifies) = (0, 0, 0);
    let mut own: Vec<(u64, Vec<u8>)> = Vec::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(4 * scale()) {
        let out = origin(&["journal", "compact"]);
        assert!(out.status.success(), "compaction {compactions} failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        compactions += 1;
        if String::from_utf8_lossy(&out.stdout).contains("merged") {
            merged += 1;
        }
        let out = origin(&["journal", "verify"]);
        assert!(out.status.success(), "verify {verifies} failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        verifies += 1;
        let seen = follower.next_offset();
        follower.refresh().expect("refresh behind a compaction");
        assert!(follower.next_offset() >= seen);
        let payload = format!("follower {compactions}").into_bytes();
        let at = follower.append(vec![NewRecord::scratch(payload.clone())]).expect("append behind a compaction");
        own.push((at.start, payload));
    }
    for c in &mut children {
        c.kill().expect("kill -9");
        c.wait().expect("wait");
    }
    let acks: Vec<Ack> = readers.into_iter().flat_map(|r| r.join().expect("reader")).collect();
    let fresh = Journal::open(&journal_dir, Options::default()).expect("open after");
    follower.refresh().expect("refresh");
    check_acks(&fresh, &acks, "a new open");
    check_acks(&follower, &acks, "the follower");
    let records = fresh.read_vec(0, usize::MAX).expect("read");
    for (offset, payload) in &own {
        assert_eq!(&records[*offset as usize].payload, payload, "the follower's record at {offset}");
    }
    assert_eq!(follower.read_vec(0, usize::MAX).expect("read").len(), records.len());
    let out = origin(&["journal", "verify"]);
    assert!(out.status.success(), "verify after: {}", String::from_utf8_lossy(&out.stdout));
    eprintln!("{compactions} compactions ({merged} merging), {verifies} verifies, {} acknowledged records, {} appended by the follower", acks.len(), own.len());
    assert!(merged >= 2 && !acks.is_empty(), "{merged} compactions merged segments");
}

/// Several `origin journal salvage --to DIR` started at once into one new folder: one of them
/// writes it, the others refuse, and a salvage that says it copied the records leaves them
/// there, whole and unmarked. (A salvage that could not mark the folder removed the folder it
/// had found absent: with another salvage's journal in it, told that it had succeeded, or
/// still writing it.)
#[test]
fn salvages_started_at_once_into_one_folder_leave_it_whole_or_refuse() {
    at_once_into_one_folder(&["journal", "salvage", "--to"], "salvage", |to| to.to_path_buf());
}

/// Several `origin journal replay --to DIR` started at once into one new folder: as salvages,
/// one writes the store there and the others refuse; a replay that says it is done leaves a
/// store whose journal holds the records, unmarked, and whose `replay.json` is its summary.
#[test]
fn replays_started_at_once_into_one_folder_leave_it_whole_or_refuse() {
    at_once_into_one_folder(&["journal", "replay", "--to"], "replay", |to| {
        let summary = std::fs::read_to_string(to.join("replay.json")).expect("replay.json");
        assert!(!summary.contains("unfinished"), "{summary}");
        to.join("journal")
    });
}

/// Three `origin <args> DIR` at once into a new folder, `60 * scale()` rounds, on a store of
/// 300 records: at least one succeeds, the others refuse in words a person can act on, and
/// the journal `journal_in(DIR)` names opens (unmarked) holding every record.
fn at_once_into_one_folder(args: &[&str], what: &str, journal_in: impl Fn(&Path) -> std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("store");
    let made = Command::new(origin_bin()).arg("--home").arg(&home).args(["journal", "stress", "--records", "300", "--threads", "1"]).output().expect("stress");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let rounds = 60 * scale();
    let mut wins = 0;
    for round in 0..rounds {
        let to = dir.path().join(format!("salvaged-{round}"));
        let children: Vec<Child> = (0..3)
            .map(|_| {
                Command::new(origin_bin())
                    .arg("--home")
                    .arg(&home)
                    .args(args)
                    .arg(&to)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        let outs: Vec<_> = children.into_iter().map(|c| c.wait_with_output().expect("wait")).collect();
        let said = |o: &std::process::Output| format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        let ok: Vec<_> = outs.iter().filter(|o| o.status.success()).collect();
        for o in outs.iter().filter(|o| !o.status.success()) {
            // A refusal, in words a person can act on; never a failure of the salvage's own writes.
            let s = said(o);
            assert!(
                s.contains("being written") || s.contains("is not empty") || s.contains("has finished"),
                "round {round}: a {what} failed otherwise than refused: {s}"
            );
        }
        assert!(!ok.is_empty(), "round {round}: no {what} succeeded: {:?}", outs.iter().map(said).collect::<Vec<_>>());
        wins += ok.len();
        let journal = journal_in(&to);
        assert!(!journal.join(origin_engine::journal::UNFINISHED_FILE_NAME).exists(), "round {round}: left marked after {} said it was done", ok.len());
        let j = Journal::open(&journal, Options { access: Access::ReadOnly, ..Options::default() })
            .unwrap_or_else(|e| panic!("round {round}: the {what}'s journal does not open after {:?}: {e}", ok.iter().map(|o| said(o)).collect::<Vec<_>>()));
        assert_eq!(j.read_vec(0, usize::MAX).expect("read").len(), 300, "round {round}: {:?}", outs.iter().map(said).collect::<Vec<_>>());
    }
    eprintln!("{rounds} rounds of 3 at once ({what}), {wins} succeeded");
}
