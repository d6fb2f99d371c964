//! Reading the journal for the projections with the decoding and tokenizing done a record
//! ahead, on a thread of its own ([`read_records`]).
//!
//! A long catch-up (a start after many records were ingested, a rebuild, the benchmark's
//! build) spends its time in three places: reading and decoding each record, tokenizing its
//! events, and adding the tokens to the in-memory segment and the record to the state. Only
//! the last touches the projections; the first two read nothing of them. So a helper thread
//! reads, decodes and tokenizes while the caller's thread applies what the helper sent, and
//! the two cores of a small machine stay busy across records, not only within a large one
//! ([`crate::Index::add_all`] alone waits for the first documents of every record to be
//! tokenized, and leaves its helper idle while it adds the last).
//!
//! The caller sees the records in order, exactly as [`Journal::read_from`] gives them, each
//! decoded when its `decode` says a projection reads it, and stops when it likes: what the
//! helper read beyond is dropped (at most [`AHEAD`] items). A failure to read the journal
//! comes after every record before it; a record that does not decode comes as that record's
//! error, in its place.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

use origin_engine::record::{Body, Event};
use origin_engine::{Error as JournalError, Journal};

use crate::index::{TOKEN_RUN_DOCS, TextForm, TokenRun};

/// Items (records, runs of tokenized documents) the helper may have sent and the caller not
/// yet taken.
pub const AHEAD: usize = 2;

/// Records [`read_records`] must have to read before it starts a helper: below this, starting
/// the thread (tens of microseconds) costs about what it saves, and a tool call that reads
/// the one record written since the last would pay it.
pub const AHEAD_RECORDS_MIN: u64 = 4;

/// A record as [`read_records`] gives it.
pub struct ReadRecord {
    /// Its offset.
    pub offset: u64,
    /// Its kind byte ([`origin_engine::record::RecordKind`]).
    pub kind: u8,
    /// The record decoded, if `decode` asked for it; `Err` if it does not decode.
    pub body: Option<Result<Arc<Body>, JournalError>>,
    /// True if its searchable events were tokenized ahead: [`Runs::next_run`] gives them, in
    /// runs of [`TOKEN_RUN_DOCS`], before the next record.
    pub tokenized: bool,
}

/// The events of a record the text index adds, in the order it adds them: the searchable
/// events of an `ingested` record ([`crate::is_searchable`]) that the index can hold
/// ([`crate::catalog::index_refuses`]), with their places in it.
pub fn searchable_texts(body: &Body) -> impl Iterator<Item = (usize, &Event)> {
    let (source, events) = match body {
        Body::Ingested(b) => (b.source.as_str(), &b.events[..]),
        _ => ("", &[][..]),
    };
    events.iter().enumerate().filter(move |(_, e)| crate::is_searchable(e.kind) && crate::catalog::index_refuses(source, e).is_none())
}

/// What the helper sends: a record or the end of its read, or a run of the last record's
/// tokenized documents.
enum Item {
    Next(Next),
    Run(TokenRun),
}

/// A record, or the end of the helper's read (at the journal's end, or failing).
enum Next {
    Record(ReadRecord),
    End(Result<u64, JournalError>),
}

/// The runs of tokenized documents of the record [`read_records`] gave last (none when it
/// reads in place).
pub struct Runs {
    ahead: Option<Ahead>,
}

struct Ahead {
    items: Receiver<Item>,
    spare: Sender<TokenRun>,
    /// Taken while looking for a run: the next record, or the end.
    held: Option<Next>,
}

impl Runs {
    /// The next run of the last record's tokenized documents; `None` when it has no more (or
    /// was not tokenized ahead).
    pub fn next_run(&mut self) -> Option<TokenRun> {
        let ahead = self.ahead.as_mut()?;
        if ahead.held.is_some() {
            return None;
        }
        match ahead.items.recv() {
            Ok(Item::Run(run)) => Some(run),
            Ok(Item::Next(next)) => {
                ahead.held = Some(next);
                None
            }
            Err(_) => None,
        }
    }

    /// Hands back a run once its documents are added, for the helper to tokenize into again.
    pub fn give_back(&mut self, run: TokenRun) {
        if let Some(ahead) = &self.ahead {
            // The helper gone, the run is simply dropped.
            let _ = ahead.spare.send(run);
        }
    }

    /// The next record or end, passing over the runs of the last record not taken.
    fn next(&mut self) -> Option<Next> {
        let ahead = self.ahead.as_mut()?;
        if let Some(next) = ahead.held.take() {
            return Some(next);
        }
        loop {
            match ahead.items.recv() {
                Ok(Item::Run(run)) => {
                    let _ = ahead.spare.send(run);
                }
                Ok(Item::Next(next)) => return Some(next),
                Err(_) => return None,
            }
        }
    }
}

/// Calls `each` with every record from offset `from` on, in order, until it returns `Break`
/// or fails, as [`Journal::read_from`] does; each record is decoded first if `decode` says so
/// (given its offset and kind). With at least [`AHEAD_RECORDS_MIN`] records to read, a helper
/// thread reads and decodes them ahead, and tokenizes the searchable events
/// ([`searchable_texts`]) of every `ingested` record at `tokenize_from` or after it that it
/// decodes: `each` takes them from its [`Runs`] to add them ([`crate::Catalog::apply_read`]).
/// Otherwise (or if no thread can be had) the records are read and decoded in place, and
/// none is tokenized ahead.
///
/// A failure to read the journal is returned after `each` saw every record before it.
pub fn read_records<E>(
    journal: &Journal,
    from: u64,
    tokenize_from: u64,
    decode: impl Fn(u64, u8) -> bool + Sync,
    mut each: impl FnMut(ReadRecord, &mut Runs) -> Result<ControlFlow<()>, E>,
) -> Result<(), E>
where
    E: From<JournalError>,
{
    if journal.next_offset().saturating_sub(from) < AHEAD_RECORDS_MIN {
        return read_in_place(journal, from, &decode, &mut each);
    }
    std::thread::scope(|s| {
        let (items_tx, items_rx) = sync_channel::<Item>(AHEAD);
        let (spare_tx, spare_rx) = channel::<TokenRun>();
        for _ in 0..AHEAD + 2 {
            // The receiver is alive here; a send cannot fail.
            let _ = spare_tx.send(TokenRun::default());
        }
        let decode = &decode;
        let helper = std::thread::Builder::new()
            .name("origin-read-ahead".into())
            .spawn_scoped(s, move || read_ahead(journal, from, tokenize_from, decode, &items_tx, &spare_rx));
        if helper.is_err() {
            return read_in_place(journal, from, decode, &mut each);
        }
        let mut runs = Runs { ahead: Some(Ahead { items: items_rx, spare: spare_tx, held: None }) };
        loop {
            match runs.next() {
                Some(Next::Record(r)) => {
                    if each(r, &mut runs)?.is_break() {
                        return Ok(());
                    }
                }
                Some(Next::End(result)) => return result.map(|_| ()).map_err(E::from),
                // The helper panicked: the scope passes its panic on once this returns.
                None => return Ok(()),
            }
        }
        // Leaving the scope drops the receiver: the helper stops at its next send.
    })
}

fn read_in_place<E: From<JournalError>>(
    journal: &Journal,
    from: u64,
    decode: &(impl Fn(u64, u8) -> bool + Sync),
    each: &mut impl FnMut(ReadRecord, &mut Runs) -> Result<ControlFlow<()>, E>,
) -> Result<(), E> {
    let mut failed = None;
    let mut runs = Runs { ahead: None };
    journal.read_from(from, |r| {
        let body = decode(r.offset, r.kind).then(|| r.decode().map(|(_, b)| Arc::new(b)));
        match each(ReadRecord { offset: r.offset, kind: r.kind, body, tokenized: false }, &mut runs) {
            Ok(flow) => Ok(flow),
            Err(e) => {
                failed = Some(e);
                Ok(ControlFlow::Break(()))
            }
        }
    })?;
    match failed {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The helper: reads, decodes and tokenizes, and sends each record, then its runs; stops when
/// the caller is gone.
fn read_ahead(
    journal: &Journal,
    from: u64,
    tokenize_from: u64,
    decode: &(impl Fn(u64, u8) -> bool + Sync),
    items: &SyncSender<Item>,
    spare: &Receiver<TokenRun>,
) {
    let read = journal.read_from(from, |r| {
        let body = decode(r.offset, r.kind).then(|| r.decode().map(|(_, b)| Arc::new(b)));
        let texts = match &body {
            Some(Ok(b)) if r.offset >= tokenize_from && matches!(**b, Body::Ingested(_)) => Some(b.clone()),
            _ => None,
        };
        let tokenized = texts.is_some();
        if items.send(Item::Next(Next::Record(ReadRecord { offset: r.offset, kind: r.kind, body, tokenized }))).is_err() {
            return Ok(ControlFlow::Break(()));
        }
        if let Some(body) = texts {
            let mut texts = searchable_texts(&body).peekable();
            while texts.peek().is_some() {
                let Ok(mut run) = spare.recv() else { return Ok(ControlFlow::Break(())) };
                // What a large document made a buffer hold is given back before the next run,
                // as `add_all` does after each record: a long catch-up keeps no more.
                run.trim();
                run.clear();
                texts.by_ref().take(TOKEN_RUN_DOCS).for_each(|(_, e)| run.push(&e.text, TextForm::of(e.kind, &e.text)));
                if items.send(Item::Run(run)).is_err() {
                    return Ok(ControlFlow::Break(()));
                }
            }
        }
        Ok(ControlFlow::Continue(()))
    });
    // The caller may be gone: then nobody waits for the end.
    let _ = items.send(Item::Next(Next::End(read)));
}
