//! Thai, written without spaces between words: an in-memory index of generated Thai texts,
//! its build and its searches for words, against a linear scan of the same texts in the same
//! process (`str::contains`), with the recall of full matches and what the partial matches
//! share with the query. `cargo run --release -p origin-benches --example spaceless_lab`
//! (LAB_DOCS, default 100000; LAB_QUERIES, default 300).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::Instant;

use origin_benches::Rng;
use origin_projections::{Candidate, DocMeta, Filters, Index, Match, Scope, parse_query};

/// Thai consonants, vowels written after (or around) them, and tone marks.
const CONSONANTS: &[&str] = &["ก", "ข", "ค", "ง", "จ", "ช", "ด", "ต", "ท", "น", "บ", "ป", "ผ", "พ", "ม", "ย", "ร", "ล", "ว", "ส", "ห", "อ"];
const VOWELS: &[&str] = &["", "า", "ิ", "ี", "ุ", "ู", "ั", "ำ", "ึ", "ื"];
const TONES: &[&str] = &["", "", "่", "้"];
const FINALS: &[&str] = &["", "", "น", "ง", "ม", "ก", "ด", "บ", "ย"];
const LEADING: &[&str] = &["", "", "", "เ", "แ", "โ", "ไ"];

fn pick<'a>(rng: &mut Rng, from: &[&'a str]) -> &'a str {
    from[rng.below(from.len() as u64) as usize]
}

fn syllable(rng: &mut Rng) -> String {
    let lead = pick(rng, LEADING);
    let vowel = if lead.is_empty() { pick(rng, VOWELS) } else { "" };
    format!("{lead}{}{vowel}{}{}", pick(rng, CONSONANTS), pick(rng, TONES), pick(rng, FINALS))
}

fn meta(i: u64) -> DocMeta {
    DocMeta { scope: Scope::Event, kind: 0, tool: false, time_unix_ms: i as i64, source: None, project: None, key: String::new(), record: i, position: 0 }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p) as usize]
}

fn main() {
    let docs_n: usize = std::env::var("LAB_DOCS").ok().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let queries_n: usize = std::env::var("LAB_QUERIES").ok().and_then(|s| s.parse().ok()).unwrap_or(300);
    let mut rng = Rng::new(0x7ea1_5a1d);
    // 3,000 words of one to three syllables; a text draws them by a skewed law (the square of a
    // uniform number), 10 to 60 words, a space between sentences of 4 to 12 words.
    let words: Vec<String> = (0..3000).map(|_| (0..1 + rng.below(3)).map(|_| syllable(&mut rng)).collect()).collect();
    let mut texts = Vec::with_capacity(docs_n);
    for _ in 0..docs_n {
        let n = 10 + rng.below(51);
        let mut t = String::new();
        let mut sentence = 4 + rng.below(9);
        for _ in 0..n {
            let u = rng.below(1 << 16) as f64 / 65536.0;
            t.push_str(&words[(u * u * words.len() as f64) as usize]);
            sentence -= 1;
            if sentence == 0 {
                t.push(' ');
                sentence = 4 + rng.below(9);
            }
        }
        texts.push(t);
    }
    let bytes: usize = texts.iter().map(String::len).sum();
    let start = Instant::now();
    let mut index = Index::in_memory();
    for (i, t) in texts.iter().enumerate() {
        index.add(i as u32, &meta(i as u64), t).expect("add");
    }
    let build = start.elapsed().as_secs_f64();
    // Queries: a word of two or three syllables found in a random text; and two words run
    // together (a question written without spaces), which few texts hold as written.
    let mut queries = Vec::new();
    while queries.len() < queries_n {
        let w = &words[rng.below(words.len() as u64) as usize];
        if w.chars().count() >= 4 && texts[rng.below(texts.len() as u64) as usize..].iter().take(2000).any(|t| t.contains(w.as_str())) {
            queries.push(w.clone());
        }
    }
    let mut pairs_of_words = Vec::new();
    while pairs_of_words.len() < queries_n {
        let (a, b) = (&words[rng.below(words.len() as u64) as usize], &words[rng.below(words.len() as u64) as usize]);
        if a.chars().count() >= 4 && b.chars().count() >= 4 {
            pairs_of_words.push(format!("{a}{b}"));
        }
    }
    let all = Filters { include_tools: true, ..Filters::default() };
    let (mut full_t, mut with_partial_t, mut scan_t) = (Vec::new(), Vec::new(), Vec::new());
    let (mut found, mut expected, mut wrong, mut cut, mut skipped) = (0usize, 0usize, 0usize, 0usize, 0usize);
    let (mut partial_hits, mut partial_sharing_nothing) = (0usize, 0usize);
    let (mut pairs_t, mut pairs_full) = (Vec::new(), 0usize);
    for w in queries.iter().chain(&pairs_of_words) {
        let is_pair = pairs_of_words.contains(w);
        let q = parse_query(w).expect("query");
        let t = Instant::now();
        let full = index.search(&q.every_word_only(), &all, &|_: &Candidate<'_>| true, 20).expect("search");
        let full_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let hits = index.search(&q, &all, &|_: &Candidate<'_>| true, 20).expect("search");
        let with_partial_ms = t.elapsed().as_secs_f64() * 1e3;
        if is_pair {
            pairs_t.push(with_partial_ms);
            pairs_full += hits.iter().filter(|h| h.matched == Match::All).count();
        } else {
            full_t.push(full_ms);
            with_partial_t.push(with_partial_ms);
        }
        // Partial matches that share no two adjacent characters with the query.
        let pairs: Vec<String> = {
            let c: Vec<char> = w.chars().collect();
            c.windows(2).map(|p| p.iter().collect()).collect()
        };
        for h in hits.iter().filter(|h| h.matched == Match::Partial) {
            partial_hits += 1;
            if !pairs.iter().any(|p| texts[h.doc as usize].contains(p.as_str())) {
                partial_sharing_nothing += 1;
            }
        }
        // The baseline: every text that holds the word, by a linear scan.
        let t = Instant::now();
        let holding: Vec<u32> = texts.iter().enumerate().filter(|(_, t)| t.contains(w.as_str())).map(|(i, _)| i as u32).collect();
        if !is_pair {
            scan_t.push(t.elapsed().as_secs_f64() * 1e3);
        }
        // Recall over every match, not the top 20 (of the words that fewer than 10,000 texts
        // hold: a search returns at most that many).
        if holding.len() >= 10_000 {
            skipped += 1;
            continue;
        }
        let mut every: Vec<u32> = index.search(&q.every_word_only(), &all, &|_: &Candidate<'_>| true, 10_000).expect("search").iter().map(|h| h.doc).collect();
        every.sort_unstable();
        expected += holding.len();
        found += every.iter().filter(|d| holding.binary_search(d).is_ok()).count();
        wrong += every.iter().filter(|d| holding.binary_search(d).is_err()).count();
        // A text the scan finds and the index does not: the word cut inside a grapheme
        // cluster at every place it occurs (the text goes on with a mark on the word's last
        // letter, or with SARA AM, whose normal form begins with one), so it is not the word.
        for &d in holding.iter().filter(|d| every.binary_search(d).is_err()) {
            let t = &texts[d as usize];
            let inside = t.match_indices(w.as_str()).all(|(at, _)| {
                t[at + w.len()..].chars().next().is_some_and(|c| matches!(c, '\u{E31}' | '\u{E33}'..='\u{E3A}' | '\u{E47}'..='\u{E4E}'))
            });
            cut += usize::from(inside);
        }
        std::hint::black_box(full);
    }
    for v in [&mut full_t, &mut with_partial_t, &mut scan_t] {
        v.sort_by(f64::total_cmp);
    }
    println!("{docs_n} Thai texts, {:.1} MB, indexed in memory in {build:.2} s ({:.0} texts/s)", bytes as f64 / 1e6, docs_n as f64 / build);
    println!("| search ({} words of 2-3 syllables, top 20) | p50 ms | p99 ms | p50 vs linear scan |", queries.len());
    println!("| --- | --- | --- | --- |");
    let s50 = percentile(&scan_t, 0.5);
    for (name, v) in [("every word only", &full_t), ("with partial matches", &with_partial_t), ("linear scan (str::contains)", &scan_t)] {
        println!("| {name} | {:.3} | {:.3} | {:.4}x |", percentile(v, 0.5), percentile(v, 0.99), percentile(v, 0.5) / s50);
    }
    pairs_t.sort_by(f64::total_cmp);
    println!("| two words run together, with partial matches | {:.3} | {:.3} | - |", percentile(&pairs_t, 0.5), percentile(&pairs_t, 0.99));
    println!(
        "full matches against the scan ({skipped} queries held by 10,000 texts or more left out): {found} of {expected} texts holding the word ({:.4}); of those missed, {cut} hold it only cut inside a grapheme cluster, {} otherwise; {wrong} found not holding it",
        found as f64 / expected.max(1) as f64,
        expected - found - cut
    );
    println!("two words run together: {pairs_full} full matches in the top 20s of {} queries", pairs_of_words.len());
    println!("partial hits: {partial_hits}, of which {partial_sharing_nothing} share no two adjacent characters with the query");
}
