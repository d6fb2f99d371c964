//! Query execution: full matches (every clause) ranked by BM25, then, when fewer than
//! `limit` documents match fully, the best partial matches (BM25 over stems and CJK bigrams).
//!
//! Scores use statistics of the whole index (document count, average length, document
//! frequency summed over segments) and sum term contributions in query order, so a document
//! scores the same whichever segment holds it: flushing and merging never change results.

use std::borrow::Cow;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};

use super::doc::{DocRow, DocTable};
use super::memory::MemorySegment;
use super::postings::Postings;
use super::query::{Clause, Query};
use super::segment::Segment;
use super::{DocId, Filters, Hit, IndexError, Match, Scope};

/// BM25 term-frequency saturation.
const K1: f64 = 1.2;
/// BM25 length normalisation.
const B: f64 = 0.75;

/// A segment as search sees it.
pub(crate) enum View<'a> {
    Memory(&'a MemorySegment),
    Disk(&'a Segment),
}

impl View<'_> {
    fn docs(&self) -> &DocTable {
        match self {
            View::Memory(m) => &m.docs,
            View::Disk(s) => s.docs(),
        }
    }

    fn postings(&self, term: &str, positions: bool) -> Result<Option<Cow<'_, Postings>>, IndexError> {
        match self {
            View::Memory(m) => Ok(m.terms.get(term).map(Cow::Borrowed)),
            View::Disk(s) => Ok(s.postings(term, positions)?.map(Cow::Owned)),
        }
    }

    fn doc_freq(&self, term: &str) -> Result<u32, IndexError> {
        match self {
            View::Memory(m) => Ok(m.terms.get(term).map_or(0, |p| p.len() as u32)),
            View::Disk(s) => s.doc_freq(term),
        }
    }
}

/// Filters resolved against one segment's strings.
struct DocFilter {
    scope: Option<Scope>,
    kind: Option<u8>,
    since: Option<i64>,
    until: Option<i64>,
    source: Option<u32>,
    project: Option<u32>,
    tools: bool,
}

impl DocFilter {
    /// None when no document of the segment can pass (it lacks the source or project asked).
    fn compile(f: &Filters, docs: &DocTable) -> Option<DocFilter> {
        let resolve = |s: &Option<String>| match s {
            None => Some(None),
            Some(s) => docs.string_id(s).map(Some),
        };
        Some(DocFilter {
            scope: f.scope,
            kind: f.kind,
            since: f.since_unix_ms,
            until: f.until_unix_ms,
            source: resolve(&f.source)?,
            project: resolve(&f.project)?,
            tools: f.include_tools,
        })
    }

    fn pass(&self, row: &DocRow) -> bool {
        self.scope.is_none_or(|s| s == row.scope)
            && self.kind.is_none_or(|k| k == row.kind)
            && self.since.is_none_or(|t| row.time_unix_ms >= t)
            && self.until.is_none_or(|t| row.time_unix_ms < t)
            && self.source.is_none_or(|s| s == row.source)
            && self.project.is_none_or(|p| p == row.project)
            && (self.tools || !row.tool)
    }
}

/// A candidate's rank: higher score, then more recent, then smaller id first.
#[derive(Clone, Copy, Debug)]
struct Ranked {
    score: f32,
    time_unix_ms: i64,
    doc: DocId,
}

impl Ord for Ranked {
    /// `Greater` ranks first.
    fn cmp(&self, o: &Self) -> Ordering {
        self.score.total_cmp(&o.score).then(self.time_unix_ms.cmp(&o.time_unix_ms)).then(o.doc.cmp(&self.doc))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}

impl Eq for Ranked {}

/// The best `k` of what is offered, and how many were offered.
struct TopK {
    k: usize,
    heap: BinaryHeap<Reverse<Ranked>>,
    offered: usize,
}

impl TopK {
    fn new(k: usize) -> TopK {
        TopK { k, heap: BinaryHeap::with_capacity(k.min(1024) + 1), offered: 0 }
    }

    fn offer(&mut self, r: Ranked) {
        self.offered += 1;
        if self.heap.len() < self.k {
            self.heap.push(Reverse(r));
        } else if self.heap.peek().is_some_and(|w| r > w.0) {
            self.heap.pop();
            self.heap.push(Reverse(r));
        }
    }

    fn into_sorted(self) -> Vec<Ranked> {
        let mut v: Vec<Ranked> = self.heap.into_iter().map(|r| r.0).collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        v
    }
}

/// Collection statistics for BM25.
struct Stats {
    doc_count: f64,
    avg_length: f64,
}

impl Stats {
    fn idf(&self, df: u64) -> f64 {
        let df = df as f64;
        (1.0 + (self.doc_count - df + 0.5) / (df + 0.5)).ln()
    }

    fn term(&self, idf: f64, tf: u32, length: u32) -> f64 {
        let tf = f64::from(tf);
        let norm = 1.0 - B + B * f64::from(length) / self.avg_length;
        idf * tf * (K1 + 1.0) / (tf + K1 * norm)
    }
}

fn doc_freqs(views: &[View<'_>], terms: &[String]) -> Result<Vec<u64>, IndexError> {
    let mut dfs = vec![0u64; terms.len()];
    for view in views {
        for (df, term) in dfs.iter_mut().zip(terms) {
            *df += u64::from(view.doc_freq(term)?);
        }
    }
    Ok(dfs)
}

/// True if the document at index `at[j]` of each clause term's postings holds the clause.
fn clause_holds(clause: &Clause, postings: &[Cow<'_, Postings>], at: &[usize]) -> bool {
    if clause.terms.len() == 1 {
        return true;
    }
    let first = postings[0].positions_of(at[0]);
    first.iter().any(|&p0| {
        clause.terms.iter().enumerate().skip(1).all(|(j, (_, rel))| {
            p0.checked_add(*rel).is_some_and(|p| postings[j].positions_of(at[j]).binary_search(&p).is_ok())
        })
    })
}

/// Runs a query over `views`.
pub(crate) fn search(
    views: &[View<'_>],
    query: &Query,
    filters: &Filters,
    visible: &dyn Fn(DocId) -> bool,
    limit: usize,
) -> Result<Vec<Hit>, IndexError> {
    let doc_count: u64 = views.iter().map(|v| u64::from(v.docs().len())).sum();
    if limit == 0 || doc_count == 0 {
        return Ok(Vec::new());
    }
    let token_count: u64 = views.iter().map(|v| v.docs().token_count()).sum();
    let stats = Stats { doc_count: doc_count as f64, avg_length: (token_count as f64 / doc_count as f64).max(1.0) };

    // Full matches.
    let idfs: Vec<f64> = doc_freqs(views, &query.terms)?.into_iter().map(|df| stats.idf(df)).collect();
    let mut full = TopK::new(limit);
    // Per view, the ordinals that hold every clause (excluded from partial matches).
    let mut full_ordinals: Vec<Vec<u32>> = Vec::with_capacity(views.len());
    for view in views {
        let mut matched = Vec::new();
        full_view(view, query, filters, visible, &stats, &idfs, &mut full, &mut matched)?;
        full_ordinals.push(matched);
    }
    let full_count = full.offered;
    let mut hits: Vec<Hit> =
        full.into_sorted().into_iter().map(|r| Hit { doc: r.doc, score: r.score, matched: Match::All }).collect();
    if full_count >= limit || query.partial.is_empty() {
        return Ok(hits);
    }

    // Partial matches fill the rest.
    let idfs: Vec<f64> = doc_freqs(views, &query.partial)?.into_iter().map(|df| stats.idf(df)).collect();
    let mut partial = TopK::new(limit - hits.len());
    for (view, full_ordinals) in views.iter().zip(&full_ordinals) {
        let docs = view.docs();
        let Some(filter) = DocFilter::compile(filters, docs) else { continue };
        let mut scores: HashMap<u32, f64> = HashMap::new();
        for (term, &idf) in query.partial.iter().zip(&idfs) {
            let Some(p) = view.postings(term, false)? else { continue };
            let lengths = docs.lengths();
            for (&ord, &tf) in p.ordinals.iter().zip(&p.tfs) {
                *scores.entry(ord).or_insert(0.0) += stats.term(idf, tf, lengths[ord as usize]);
            }
        }
        for (ord, score) in scores {
            if full_ordinals.binary_search(&ord).is_ok() {
                continue;
            }
            let row = docs.row(ord);
            if filter.pass(row) && visible(row.doc) {
                partial.offer(Ranked { score: score as f32, time_unix_ms: row.time_unix_ms, doc: row.doc });
            }
        }
    }
    hits.extend(partial.into_sorted().into_iter().map(|r| Hit { doc: r.doc, score: r.score, matched: Match::Partial }));
    Ok(hits)
}

#[allow(clippy::too_many_arguments)]
fn full_view(
    view: &View<'_>,
    query: &Query,
    filters: &Filters,
    visible: &dyn Fn(DocId) -> bool,
    stats: &Stats,
    idfs: &[f64],
    top: &mut TopK,
    matched: &mut Vec<u32>,
) -> Result<(), IndexError> {
    let docs = view.docs();
    // Every clause's postings; a missing term means no document here holds every clause.
    let mut clauses: Vec<Vec<Cow<'_, Postings>>> = Vec::with_capacity(query.clauses.len());
    for clause in &query.clauses {
        let positions = clause.terms.len() > 1;
        let mut ps = Vec::with_capacity(clause.terms.len());
        for (term, _) in &clause.terms {
            match view.postings(term, positions)? {
                Some(p) => ps.push(p),
                None => return Ok(()),
            }
        }
        clauses.push(ps);
    }
    // Each distinct query term's postings, for its frequency.
    let by_term: Vec<&Postings> = query
        .terms
        .iter()
        .map(|t| {
            let (c, j) = query
                .clauses
                .iter()
                .enumerate()
                .find_map(|(c, cl)| cl.terms.iter().position(|(u, _)| u == t).map(|j| (c, j)))
                .unwrap_or((0, 0)); // every distinct term comes from a clause
            clauses[c][j].as_ref()
        })
        .collect();
    let filter = DocFilter::compile(filters, docs);
    // Drive from the shortest list.
    let Some(driver) = by_term.iter().min_by_key(|p| p.len()) else { return Ok(()) };
    let mut at: Vec<Vec<usize>> = clauses.iter().map(|c| vec![0; c.len()]).collect();
    'docs: for &ord in &driver.ordinals {
        for (c, clause) in query.clauses.iter().enumerate() {
            for (j, p) in clauses[c].iter().enumerate() {
                match p.find(ord) {
                    Some(i) => at[c][j] = i,
                    None => continue 'docs,
                }
            }
            if !clause_holds(clause, &clauses[c], &at[c]) {
                continue 'docs;
            }
        }
        matched.push(ord);
        let row = docs.row(ord);
        if !filter.as_ref().is_some_and(|f| f.pass(row)) || !visible(row.doc) {
            continue;
        }
        let length = docs.lengths()[ord as usize];
        let mut score = 0.0;
        for (p, &idf) in by_term.iter().zip(idfs) {
            if let Some(i) = p.find(ord) {
                score += stats.term(idf, p.tfs[i], length);
            }
        }
        top.offer(Ranked { score: score as f32, time_unix_ms: row.time_unix_ms, doc: row.doc });
    }
    Ok(())
}
