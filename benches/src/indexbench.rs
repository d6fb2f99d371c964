//! What the index and tools benchmarks share: Origin's durable build of a store from the
//! corpus's records, and queries made from the corpus's events.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use origin_engine::{Journal, NewRecord, Options};
use origin_projections::catalog::{CommitInFlight, Committed};
use origin_projections::index::{MergePolicy, merge};
use origin_projections::Catalog;
use origin_projections::ahead::read_records;

use rusqlite::Connection;
use tantivy::schema::{FAST, STORED, STRING, Schema, TEXT};
use tantivy::{IndexWriter, doc};

use crate::corpus::Located;
use crate::Rng;

/// A SQLite FTS5 database at `path` (WAL, `synchronous=FULL`: durable) with the benchmark's
/// table, tokenized by `tokenizer`.
pub fn fts5_open(path: &Path, tokenizer: &str) -> Connection {
    let conn = Connection::open(path).expect("sqlite");
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)).expect("wal");
    assert_eq!(mode, "wal");
    conn.execute_batch("PRAGMA synchronous=FULL").expect("sync");
    let sync: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0)).expect("sync");
    assert_eq!(sync, 2, "synchronous=FULL");
    conn.execute_batch(&format!(
        "CREATE VIRTUAL TABLE IF NOT EXISTS ev USING fts5(text, id UNINDEXED, source UNINDEXED, project UNINDEXED, kind UNINDEXED, time UNINDEXED, tokenize = '{tokenizer}')"
    ))
    .expect("create");
    conn
}

/// SQLite FTS5 (default `unicode61` tokenizer), one transaction per record's events.
pub fn fts5_build(batches: &[Vec<Located>], path: &Path) -> Build {
    let start = Instant::now();
    let mut conn = fts5_open(path, "unicode61");
    let mut n = 0i64;
    for b in batches {
        let tx = conn.transaction().expect("tx");
        {
            let mut st = tx.prepare_cached("INSERT INTO ev(rowid, text, id, source, project, kind, time) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)").expect("prepare");
            for e in b {
                st.execute(rusqlite::params![n, e.event.text, e.event.id, e.source, e.event.project, e.event.kind as u8, e.event.time_unix_ms])
                    .expect("insert");
                n += 1;
            }
        }
        tx.commit().expect("commit");
    }
    let secs = start.elapsed().as_secs_f64();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").expect("checkpoint");
    drop(conn);
    Build { secs, index_bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0), other_bytes: 0, note: "text stored in the table".into() }
}

/// Bytes of all files below `dir`.
pub fn tree_size(dir: &Path) -> u64 {
    let mut total = 0;
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    for e in entries.flatten() {
        let ft = e.file_type().expect("type");
        total += if ft.is_dir() { tree_size(&e.path()) } else { e.metadata().map(|m| m.len()).unwrap_or(0) };
    }
    total
}

/// Copies the files below `from` to `to` (created), or hard-links them if `link`.
pub fn copy_tree(from: &Path, to: &Path, link: bool) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type().expect("type").is_dir() {
            copy_tree(&src, &dst, link);
        } else if link {
            std::fs::hard_link(&src, &dst).expect("link");
        } else {
            std::fs::copy(&src, &dst).expect("copy");
        }
    }
}

/// What `origin mcp` does once the store is idle: the merges the policy calls for an idle
/// index (its segments settle into one), on the store in `dir`. The time is the merges'.
pub fn settle(dir: &Path) -> Build {
    // Opened to write, as a server's store is: a catalog over a journal opened to read only
    // is one of a store that cannot be written, which merges nothing.
    let journal = Journal::open(dir.join("journal"), Options::default()).expect("journal");
    let (mut catalog, _) = Catalog::open(&dir.join("index"), &journal).expect("catalog");
    catalog.catch_up(&journal).expect("catch up");
    let before = catalog.index().segments().len();
    let policy = MergePolicy { idle: true, ..MergePolicy::default() };
    let start = Instant::now();
    let mut merges = 0;
    while let Some(planned) = catalog.plan_merge(&policy).expect("plan") {
        let merged = merge(&planned.job).expect("merge");
        catalog.install_merge(merged, planned).expect("install");
        merges += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    let after = catalog.index().segments().len();
    Build {
        secs,
        index_bytes: tree_size(&dir.join("index")),
        other_bytes: 0,
        note: format!("{before} segments into {after} by {merges} merge(s)"),
    }
}

/// For the labs: the benchmark corpus of `ORIGIN_BENCH_EVENTS` searchable events, as the
/// records the build appends, and the number of searchable events they hold.
pub fn corpus_records() -> (usize, Vec<(u8, u8, Vec<u8>)>) {
    let n = crate::corpus::events_target();
    let c = crate::corpus::store(n, 0x1a7e_57a9_e10c_0002).expect("corpus");
    let src = Journal::open(c.store.join("journal"), Options { access: origin_engine::Access::ReadOnly, ..Options::default() }).expect("journal");
    let batches = crate::corpus::searchable_batches(&src, n).expect("events");
    (batches.iter().map(Vec::len).sum(), records(&src, &batches))
}

/// The raw records holding the benchmark's events, as the journal has them.
pub fn records(journal: &Journal, batches: &[Vec<Located>]) -> Vec<(u8, u8, Vec<u8>)> {
    let mut out = Vec::with_capacity(batches.len());
    for b in batches {
        let r = journal.read_vec(b[0].record, 1).expect("read record");
        out.push((r[0].kind, r[0].kind_version, r[0].payload.clone()));
    }
    out
}

/// What a build took.
pub struct Build {
    /// Wall time.
    pub secs: f64,
    /// Bytes of the index.
    pub index_bytes: u64,
    /// Bytes of anything else it keeps (Origin: the journal).
    pub other_bytes: u64,
    /// What else to say.
    pub note: String,
}

/// How the build hands records from the journal's writer to the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feed {
    /// No writer thread: append a record (durably), then feed it, then the next (the index
    /// still tokenizes a large record's events on its helper thread, `Index::add_all`).
    Sequential,
    /// As `origin mcp` runs (the watch thread ingests while the tools' catch-up feeds the
    /// index) and as `origin ingest` beside a running server does: one thread appends every
    /// record durably, another feeds the index from the journal as records become durable.
    Pipelined,
}

/// Origin: every record appended to a fresh durable journal (one fdatasync per record, as
/// ingest does), the catalog fed from the journal as the tools do (decode, tokenize; a
/// segment written on a thread of its own whenever the in-memory documents reach the commit
/// budget, while feeding goes on; `LAB_COMMIT_DOCS` sets a count instead, for labs), merges
/// on a second thread as `origin mcp` runs them, a last commit and the merges the policy still
/// calls for. Sequential: see [`Feed`].
pub fn origin_build(records: &[(u8, u8, Vec<u8>)], dir: &Path) -> Build {
    origin_build_with(records, dir, Feed::Sequential)
}

/// [`origin_build`], with the records handed over as `feed` says.
pub fn origin_build_with(records: &[(u8, u8, Vec<u8>)], dir: &Path, feed: Feed) -> Build {
    let start = Instant::now();
    let journal = Arc::new(Journal::open(dir.join("journal"), Options::default()).expect("journal"));
    let (mut catalog, _) = Catalog::open(&dir.join("index"), &journal).expect("catalog");
    if let Some(n) = std::env::var("LAB_COMMIT_DOCS").ok().and_then(|s| s.parse().ok()) {
        catalog.set_commit_docs(n);
    }
    let catalog = Arc::new(Mutex::new(catalog));
    let done = Arc::new(AtomicBool::new(false));
    let merges = {
        let (catalog, done) = (catalog.clone(), done.clone());
        std::thread::spawn(move || {
            let policy = MergePolicy::default();
            let mut count = 0;
            loop {
                let planned = catalog.lock().unwrap().plan_merge(&policy).expect("plan");
                match planned {
                    Some(p) => {
                        let merged = merge(&p.job).expect("merge");
                        catalog.lock().unwrap().install_merge(merged, p).expect("install");
                        count += 1;
                    }
                    None if done.load(Ordering::SeqCst) => return count,
                    None => std::thread::sleep(Duration::from_millis(50)),
                }
            }
        })
    };
    let mut in_flight: Option<CommitInFlight> = None;
    // As `origin mcp` does: a commit written on a thread of its own while feeding goes on,
    // installed once written.
    let commit_step = |c: &mut Catalog, in_flight: &mut Option<CommitInFlight>| {
        if in_flight.as_ref().is_some_and(CommitInFlight::is_finished) {
            c.finish_commit(in_flight.take().unwrap()).expect("install commit");
        }
        if c.wants_commit() {
            // Busy while the merge thread holds the index's lock: the documents stay in memory
            // and the next record tries again.
            match c.start_commit().expect("commit") {
                Ok(f) => *in_flight = Some(f),
                Err(r) => assert!(matches!(r, Committed::Written | Committed::Busy), "{r:?}"),
            }
        }
    };
    match feed {
        Feed::Sequential => {
            for (kind, version, payload) in records {
                journal.append(vec![NewRecord::raw(*kind, *version, payload.clone())]).expect("append");
                let mut c = catalog.lock().unwrap();
                c.catch_up(&journal).expect("feed");
                commit_step(&mut c, &mut in_flight);
            }
        }
        Feed::Pipelined => std::thread::scope(|s| {
            let writer = s.spawn(|| {
                for (kind, version, payload) in records {
                    journal.append(vec![NewRecord::raw(*kind, *version, payload.clone())]).expect("append");
                }
            });
            loop {
                let finished = writer.is_finished();
                let mut c = catalog.lock().unwrap();
                // A step of the durable records, as `origin mcp`'s catch-up takes them (read,
                // decoded and tokenized a record ahead on a helper): it ends to start a commit
                // or install one, or after 256 records; the lock is let go between steps, so
                // that the merge thread can plan and install merges.
                let mut fed = 0usize;
                let cursors = c.cursors();
                read_records(&journal, c.read_to(), cursors.events, |o, k| cursors.wants(o, k), |mut r, runs| {
                    fed += 1;
                    match r.body.take() {
                        Some(body) if c.wants(r.offset, r.kind) => c.apply_read(&r, &body.expect("decode"), runs).expect("feed"),
                        _ => c.pass(r.offset),
                    }
                    let step_ends = fed >= 256 || c.wants_commit() || in_flight.as_ref().is_some_and(CommitInFlight::is_finished);
                    Ok::<_, origin_engine::Error>(if step_ends { std::ops::ControlFlow::Break(()) } else { std::ops::ControlFlow::Continue(()) })
                })
                .expect("read");
                commit_step(&mut c, &mut in_flight);
                drop(c);
                if fed == 0 {
                    if finished {
                        break;
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            writer.join().expect("writer");
        }),
    }
    let fed = start.elapsed().as_secs_f64();
    if let Some(f) = in_flight.take() {
        catalog.lock().unwrap().finish_commit(f).expect("install commit");
    }
    // The last commit, once a running merge lets go of the lock; then the merges it calls for.
    loop {
        match catalog.lock().unwrap().commit().expect("commit") {
            Committed::Written | Committed::Nothing => break,
            Committed::Busy => std::thread::sleep(Duration::from_millis(20)),
            Committed::Superseded => unreachable!("one process"),
        }
    }
    done.store(true, Ordering::SeqCst);
    let merge_count = merges.join().expect("merges");
    let secs = start.elapsed().as_secs_f64();
    let c = catalog.lock().unwrap();
    assert_eq!(c.read_to(), journal.next_offset(), "every record fed");
    let segments = c.index().segments().len();
    Build {
        secs,
        index_bytes: tree_size(&dir.join("index")),
        other_bytes: tree_size(&dir.join("journal")),
        note: format!("{segments} segments after {merge_count} merges; fed in {fed:.1} s"),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
/// A class of queries.
pub enum Class {
    /// One word.
    Word,
    /// Two to four words.
    Words,
    /// Two or three adjacent words, quoted.
    Phrase,
    /// Two Chinese characters.
    Zh2,
    /// Four Chinese characters.
    Zh4,
}

/// Every class.
pub const CLASSES: [Class; 5] = [Class::Word, Class::Words, Class::Phrase, Class::Zh2, Class::Zh4];

impl Class {
    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Class::Word => "one word",
            Class::Words => "2-4 words",
            Class::Phrase => "phrase (2-3 words)",
            Class::Zh2 => "Chinese, 2 characters",
            Class::Zh4 => "Chinese, 4 characters",
        }
    }
}

/// A query in each system's syntax.
#[derive(Clone, Debug)]
pub struct Q {
    /// Origin's query.
    pub origin: String,
    /// FTS5's MATCH expression.
    pub fts5: String,
    /// tantivy's query.
    pub tantivy: String,
}

const STOP: &[&str] = &["the", "and", "for", "that", "this", "with", "not", "can", "should", "then", "now", "let", "from", "are", "was"];

fn words_of(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| w.len() >= 3 && w.chars().all(|c| c.is_ascii_alphabetic())).collect()
}

/// True for a Han character.
pub fn is_han(c: char) -> bool {
    ('\u{4e00}'..='\u{9fff}').contains(&c)
}

/// Runs of at least 4 Han characters in a text.
fn han_runs(text: &str) -> Vec<Vec<char>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for c in text.chars() {
        if is_han(c) {
            cur.push(c);
        } else {
            if cur.len() >= 4 {
                out.push(std::mem::take(&mut cur));
            }
            cur.clear();
        }
    }
    if cur.len() >= 4 {
        out.push(cur);
    }
    out
}

fn quote_fts(w: &str) -> String {
    format!("\"{}\"", w.replace('"', "\"\""))
}

/// `count` queries of a class, each made from a random event (so that every query finds
/// something): words that are not stop words, adjacent words for phrases, a slice of a run
/// of Han characters.
pub fn make_queries(events: &[&Located], han_events: &[usize], class: Class, count: usize, rng: &mut Rng) -> Vec<Q> {
    let mut out = Vec::with_capacity(count);
    let mut tries = 0;
    while out.len() < count && tries < count * 200 {
        tries += 1;
        let q = match class {
            Class::Word | Class::Words => {
                let e = events[rng.below(events.len() as u64) as usize];
                let words: Vec<String> = words_of(&e.event.text).into_iter().map(str::to_ascii_lowercase).filter(|w| !STOP.contains(&w.as_str())).collect();
                let k = if class == Class::Word { 1 } else { 2 + rng.below(3) as usize };
                let mut picked: Vec<String> = Vec::new();
                for _ in 0..k * 4 {
                    if words.is_empty() || picked.len() == k {
                        break;
                    }
                    let w = &words[rng.below(words.len() as u64) as usize];
                    if !picked.contains(w) {
                        picked.push(w.clone());
                    }
                }
                if picked.len() < k {
                    continue;
                }
                Q { origin: picked.join(" "), fts5: picked.iter().map(|w| quote_fts(w)).collect::<Vec<_>>().join(" "), tantivy: picked.join(" ") }
            }
            Class::Phrase => {
                let e = events[rng.below(events.len() as u64) as usize];
                // Words separated by exactly one space in the text, so that every system sees
                // the same adjacent words.
                let parts: Vec<&str> = e.event.text.split(' ').collect();
                if parts.len() < 3 {
                    continue;
                }
                let k = 2 + rng.below(2) as usize;
                let at = rng.below((parts.len() - k + 1) as u64) as usize;
                let ws: Vec<String> = parts[at..at + k].iter().map(|w| w.to_ascii_lowercase()).collect();
                if !ws.iter().all(|w| w.len() >= 2 && w.chars().all(|c| c.is_ascii_alphabetic())) {
                    continue;
                }
                let p = ws.join(" ");
                Q { origin: format!("\"{p}\""), fts5: quote_fts(&p), tantivy: format!("\"{p}\"") }
            }
            Class::Zh2 | Class::Zh4 => {
                if han_events.is_empty() {
                    break;
                }
                let e = events[han_events[rng.below(han_events.len() as u64) as usize]];
                let runs = han_runs(&e.event.text);
                if runs.is_empty() {
                    continue;
                }
                let run = &runs[rng.below(runs.len() as u64) as usize];
                let k = if class == Class::Zh2 { 2 } else { 4 };
                let at = rng.below((run.len() - k + 1) as u64) as usize;
                let s: String = run[at..at + k].iter().collect();
                Q { origin: s.clone(), fts5: quote_fts(&s), tantivy: s }
            }
        };
        out.push(q);
    }
    out
}

/// A tantivy index of the benchmark's events.
pub struct Tantivy {
    /// The index.
    pub index: tantivy::Index,
    /// The events' text.
    pub text: tantivy::schema::Field,
    /// The event's rank in the corpus.
    pub n: tantivy::schema::Field,
}

/// tantivy: one indexing thread, the text stored, one commit at the end (durable: it syncs),
/// then waiting for its merges.
pub fn tantivy_build(batches: &[Vec<Located>], dir: &Path) -> (Build, Tantivy) {
    tantivy_build_with(batches, dir, 1)
}

/// [`tantivy_build`] with `threads` indexing threads (the index benchmark's peer has one).
pub fn tantivy_build_with(batches: &[Vec<Located>], dir: &Path, threads: usize) -> (Build, Tantivy) {
    let start = Instant::now();
    let mut sb = Schema::builder();
    let id = sb.add_text_field("id", STRING | STORED);
    let text = sb.add_text_field("text", TEXT | STORED);
    let n_field = sb.add_u64_field("n", FAST | STORED);
    let time = sb.add_i64_field("time", FAST);
    let schema = sb.build();
    std::fs::create_dir_all(dir).expect("dir");
    let index = tantivy::Index::create_in_dir(dir, schema).expect("create");
    let writer: IndexWriter = index.writer_with_num_threads(threads, 256_000_000 * threads).expect("writer");
    let mut n = 0u64;
    for b in batches {
        for e in b {
            writer.add_document(doc!(id => e.event.id.as_str(), text => e.event.text.as_str(), n_field => n, time => e.event.time_unix_ms)).expect("add");
            n += 1;
        }
    }
    (tantivy_commit(writer, start, dir, "text stored"), Tantivy { index, text, n: n_field })
}

/// Commits a tantivy build started at `start` into `dir` (durable: it syncs), waits for its
/// merges, and measures it.
fn tantivy_commit(mut writer: IndexWriter, start: Instant, dir: &Path, note: &str) -> Build {
    writer.commit().expect("commit");
    writer.wait_merging_threads().expect("merges");
    Build { secs: start.elapsed().as_secs_f64(), index_bytes: tree_size(dir), other_bytes: 0, note: note.into() }
}

/// A tokenizer with which tantivy finds every Chinese match, for a like-for-like peer of
/// Origin's CJK search: a run of Han characters ([`is_han`]) as its overlapping bigrams (a run
/// of one character as itself), other letters and digits as lower-cased words; positions
/// count tokens, so that a query of several bigrams is a phrase. (tantivy's n-gram tokenizer
/// gives every token position 0, so its phrases do not hold.)
#[derive(Clone, Copy, Default)]
pub struct HanBigrams;

/// [`HanBigrams`]' tokens of one text.
pub struct HanBigramStream<'a> {
    text: &'a str,
    at: usize,
    /// The previous Han character of the run being read, and whether the run gave a token.
    run: Option<usize>,
    run_gave: bool,
    position: usize,
    token: tantivy::tokenizer::Token,
}

impl tantivy::tokenizer::Tokenizer for HanBigrams {
    type TokenStream<'a> = HanBigramStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> HanBigramStream<'a> {
        HanBigramStream { text, at: 0, run: None, run_gave: false, position: 0, token: tantivy::tokenizer::Token::default() }
    }
}

impl HanBigramStream<'_> {
    fn emit(&mut self, from: usize, to: usize, lower: bool) -> bool {
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.position = self.position;
        self.position += 1;
        self.token.text.clear();
        if lower {
            self.token.text.extend(self.text[from..to].chars().flat_map(char::to_lowercase));
        } else {
            self.token.text.push_str(&self.text[from..to]);
        }
        true
    }
}

impl tantivy::tokenizer::TokenStream for HanBigramStream<'_> {
    fn advance(&mut self) -> bool {
        loop {
            let at = self.at;
            let Some(c) = self.text[at..].chars().next() else {
                // The end: a run of one character is its own token.
                return match self.run.take() {
                    Some(p) if !self.run_gave => self.emit(p, at, false),
                    _ => false,
                };
            };
            if is_han(c) {
                self.at += c.len_utf8();
                if let Some(p) = self.run.replace(at) {
                    self.run_gave = true;
                    return self.emit(p, at + c.len_utf8(), false);
                }
                self.run_gave = false;
                continue;
            }
            if let Some(p) = self.run.take()
                && !self.run_gave
            {
                return self.emit(p, at, false);
            }
            if c.is_alphanumeric() {
                let rest = &self.text[at..];
                let end = at + rest.find(|ch: char| !ch.is_alphanumeric() || is_han(ch)).unwrap_or(rest.len());
                self.at = end;
                return self.emit(at, end, true);
            }
            self.at += c.len_utf8();
        }
    }

    fn token(&self) -> &tantivy::tokenizer::Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut tantivy::tokenizer::Token {
        &mut self.token
    }
}

/// tantivy with [`HanBigrams`] over `docs` (the corpus rank and text of each event that holds
/// Han characters: only those can hold a Chinese query), built as [`tantivy_build`] builds.
pub fn tantivy_han_build(docs: &[(u64, &str)], dir: &Path) -> (Build, Tantivy) {
    use tantivy::schema::{IndexRecordOption, TextFieldIndexing, TextOptions};
    let start = Instant::now();
    let mut sb = Schema::builder();
    let indexing = TextFieldIndexing::default().set_tokenizer("han_bigrams").set_index_option(IndexRecordOption::WithFreqsAndPositions);
    let text = sb.add_text_field("text", TextOptions::default().set_indexing_options(indexing).set_stored());
    let n_field = sb.add_u64_field("n", FAST | STORED);
    let schema = sb.build();
    std::fs::create_dir_all(dir).expect("dir");
    let index = tantivy::Index::create_in_dir(dir, schema).expect("create");
    index.tokenizers().register("han_bigrams", HanBigrams);
    let writer: IndexWriter = index.writer_with_num_threads(1, 256_000_000).expect("writer");
    for &(n, t) in docs {
        writer.add_document(doc!(text => t, n_field => n)).expect("add");
    }
    (tantivy_commit(writer, start, dir, "Han bigrams; events with Han characters only"), Tantivy { index, text, n: n_field })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::tokenizer::{TokenStream, Tokenizer};

    fn tokens(text: &str) -> Vec<(String, usize)> {
        let mut t = HanBigrams;
        let mut s = t.token_stream(text);
        let mut out = Vec::new();
        while s.advance() {
            out.push((s.token().text.clone(), s.token().position));
        }
        out
    }

    #[test]
    fn han_bigrams_overlap_and_count_positions() {
        let got = tokens("数据库 Build 失败了, 好 ok中");
        let want = [("数据", 0), ("据库", 1), ("build", 2), ("失败", 3), ("败了", 4), ("好", 5), ("ok", 6), ("中", 7)];
        assert_eq!(got, want.iter().map(|&(t, p)| (t.to_string(), p)).collect::<Vec<_>>());
        assert!(tokens(" ,. ").is_empty());
    }
}
