//! `kill -9` of `origin mcp` while it writes and merges text-index segments: every restart
//! opens a sound index, and in the end it holds every event of the journal exactly once.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use origin_projections::{Filters, Index, Match, parse_query};
use origin_tests::{append_message_records, origin_bin, scale, seed};
use rand::{Rng, SeedableRng};

/// Events per journal record, and records appended before each run.
const PER: usize = 400;
const RECORDS_PER_CYCLE: usize = 6;
/// In-memory documents that call for a segment: small, so that each run writes several and
/// the background thread merges them.
const COMMIT_DOCS: &str = "300";

/// The words of event `n` of record `n / PER`: its record's marker, and its own.
fn text(n: usize) -> String {
    format!("bulk note {n} for recmark{} and evmark{n}", n / PER)
}

fn server(home: &Path, agents: &Path) -> Child {
    server_merging_every(home, agents, "50")
}

/// `origin mcp` on `home`, its background thread looking for merges every `merge_ms` ms.
fn server_merging_every(home: &Path, agents: &Path, merge_ms: &str) -> Child {
    Command::new(origin_bin())
        .arg("--home")
        .arg(home)
        .arg("mcp")
        .arg("--agents-home")
        .arg(agents)
        .env("ORIGIN_WATCH_INTERVAL_MS", "0")
        .env("ORIGIN_INDEX_COMMIT_DOCS", COMMIT_DOCS)
        .env("ORIGIN_MERGE_INTERVAL_MS", merge_ms)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("GROK_HOME")
        .env_remove("ZCODE_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn origin mcp")
}

fn index_dir(home: &Path) -> std::path::PathBuf {
    home.join("projections").join("index")
}

#[test]
fn kill_9_while_the_server_writes_and_merges_index_segments_never_loses_or_doubles_an_event() {
    let seed = seed(0x6b11_1dec);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let agents = tempfile::tempdir().expect("agents home");
    let home = dir.path();
    let cycles = 8 * scale() as usize;
    let (mut records, mut killed_behind, mut leftovers_seen, mut most_segments) = (0usize, 0usize, 0usize, 0usize);
    // The kill comes at a random moment below `window` ms. How long a run takes to index its
    // records depends on the machine, so the window follows it: a kill that found everything
    // indexed halves it, one that landed mid-way widens it again. Runs continue past `cycles`
    // (up to three times as many) until most kills have landed while the server indexed.
    let mut window = 600u64;
    // Kills after this run wrote some segments and before it wrote them all.
    let (mut ran, mut mid_way, mut before) = (0usize, 0usize, 0usize);
    while ran < cycles || ((killed_behind * 2 < cycles || mid_way == 0) && ran < 3 * cycles) {
        let cycle = ran;
        ran += 1;
        append_message_records(home, records..records + RECORDS_PER_CYCLE, PER, text);
        records += RECORDS_PER_CYCLE;
        let mut child = server(home, agents.path());
        std::thread::sleep(Duration::from_millis(rng.random_range(window / 20..window)));
        child.kill().expect("kill -9");
        child.wait().expect("reap");
        // Another process opens what the killed one left: every listed segment whole.
        let index = Index::open_shared(&index_dir(home))
            .unwrap_or_else(|e| panic!("cycle {cycle} (seed {seed}): the index does not open after kill -9: {e}"));
        let docs = index.doc_count();
        assert!(docs <= records * PER, "cycle {cycle} (seed {seed}): {docs} documents for {} events", records * PER);
        if docs < records * PER {
            killed_behind += 1;
            mid_way += usize::from(docs > before);
            window = (window + window / 4).min(600);
        } else {
            window = (window / 2).max(20);
        }
        before = docs;
        leftovers_seen += index.leftovers().expect("list the index directory").len();
        most_segments = most_segments.max(index.segments().len());
    }
    // A last run, left to finish: it catches up, and on the end of its input writes the rest.
    let total = records * PER;
    let mut child = server(home, agents.path());
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let docs = Index::open_shared(&index_dir(home)).map(|i| i.doc_count()).unwrap_or(0);
        // Fewer than a segment's worth may wait in memory until the end.
        if docs + 300 >= total {
            break;
        }
        if Instant::now() > deadline {
            child.kill().expect("kill");
            let out = child.wait_with_output().expect("reap");
            panic!("seed {seed}: the last run indexed only {docs} of {total} events in 300 s: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // A client's handshake, then the end of its input: the server's way out writes the rest.
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("piped stdin");
        let hello = concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"kill-loop","version":"1"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n"
        );
        stdin.write_all(hello.as_bytes()).expect("write the handshake");
    }
    let out = child.wait_with_output().expect("wait for origin mcp");
    assert!(out.status.success(), "seed {seed}: origin mcp failed: {}", String::from_utf8_lossy(&out.stderr));
    let index = Index::open_shared(&index_dir(home)).expect("index");
    assert_eq!(index.doc_count(), total, "seed {seed}: every event once");
    // Each record's events, each once, by its marker.
    let all = Filters::default();
    for r in 0..records {
        let query = parse_query(&format!("recmark{r}")).expect("query");
        let hits = index.search(&query, &all, &|_| true, 2 * PER).expect("search");
        let keys: HashSet<&str> = hits.iter().filter(|h| h.matched == Match::All).map(|h| h.key.as_str()).collect();
        assert_eq!(keys.len(), PER, "seed {seed}: record {r} has {} of its {PER} events", keys.len());
        assert_eq!(hits.iter().filter(|h| h.matched == Match::All).count(), PER, "seed {seed}: record {r}'s events doubled");
    }
    for n in [0, total / 2, total - 1] {
        let hits = index.search(&parse_query(&format!("evmark{n}")).expect("query"), &all, &|_| true, 10).expect("search");
        assert_eq!(hits.iter().filter(|h| h.matched == Match::All).count(), 1, "seed {seed}: event {n}");
    }
    eprintln!(
        "index kill -9 loop: {ran} cycles, {killed_behind} killed with events not yet in segments ({mid_way} after writing some), {leftovers_seen} unlisted files left by kills, at most {most_segments} segments, {total} events checked, seed {seed}"
    );
    assert!(killed_behind * 2 >= cycles, "most kills must land while the server is still indexing ({killed_behind} of {ran} runs)");
    assert!(mid_way > 0, "some kill must land after a run wrote segments and before it wrote them all ({ran} runs)");
}

#[test]
fn an_idle_server_settles_the_index_into_one_segment_holding_every_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let agents = tempfile::tempdir().expect("agents home");
    let home = dir.path();
    // 2,000 events: six segments of 300 documents (200 wait in memory), and no tier holds the
    // eight in a row a tiered merge needs, so only settling makes them one.
    let records = 5;
    append_message_records(home, 0..records, PER, text);
    let total = records * PER;
    // Settling waits for an interval without writes: 250 ms, so that the segments it settles
    // stay in view of the 50 ms looks below for that long, however fast the machine writes them.
    let mut child = server_merging_every(home, agents.path(), "250");
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut most_segments, mut settled) = (0usize, None);
    while Instant::now() < deadline {
        if let Ok(index) = Index::open_shared(&index_dir(home)) {
            most_segments = most_segments.max(index.segments().len());
            // Fewer than a segment's worth waits in memory until the server ends.
            if index.doc_count() + 300 > total && index.segments().len() == 1 {
                settled = Some(index.doc_count());
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("kill");
    let out = child.wait_with_output().expect("reap");
    let docs = settled.unwrap_or_else(|| {
        panic!("the idle server left {most_segments} segments unsettled in 60 s: {}", String::from_utf8_lossy(&out.stderr))
    });
    assert!(most_segments >= 2, "the server wrote {most_segments} segment(s): nothing to settle");
    let index = Index::open_shared(&index_dir(home)).expect("index");
    assert_eq!(index.segments().len(), 1);
    let all = Filters::default();
    for r in 0..records {
        let hits = index.search(&parse_query(&format!("recmark{r}")).expect("query"), &all, &|_| true, 2 * PER).expect("search");
        let held = hits.iter().filter(|h| h.matched == Match::All).count();
        // Every record's events are in the settled segment, each once, but the last few that
        // wait in memory.
        assert!(held <= PER && (held == PER || r == records - 1), "record {r}: {held} of its {PER} events after settling");
    }
    assert_eq!(index.doc_count(), docs);
}
