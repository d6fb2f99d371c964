//! Sessions: per source and session, what the agent called it, how it began, and its events.

use std::cmp::Ordering;

use rustc_hash::FxHashMap;

use crate::state::event::Events;

/// The session number of an event that belongs to none (a memory file version).
pub(crate) const NO_SESSION: u32 = u32::MAX;

/// A session as the tools list it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// Source id.
    pub source: String,
    /// Session id.
    pub session: String,
    /// Project, if known.
    pub project: Option<String>,
    /// The latest title the agent gave it.
    pub title: Option<String>,
    /// For a session without a title: its first prompt (80 characters), unless the event it
    /// came from is hidden.
    pub prompt: Option<String>,
    /// Time of its first visible event.
    pub started_unix_ms: i64,
    /// Time of its last visible event.
    pub ended_unix_ms: i64,
    /// Number of its visible events.
    pub event_count: u64,
}

/// Which sessions a listing returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionFilter {
    /// Active at or after this time (last visible event at or after it).
    pub since_unix_ms: Option<i64>,
    /// Started before this time.
    pub until_unix_ms: Option<i64>,
    /// This source only.
    pub source: Option<String>,
    /// This project only.
    pub project: Option<String>,
}

/// What is kept per session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SessionState {
    /// Its source's number.
    pub(crate) source: u16,
    /// Its id.
    pub(crate) session: Box<str>,
    /// Latest project a session change named, else the first an event named.
    pub(crate) project: Option<String>,
    /// Latest title.
    pub(crate) title: Option<String>,
    /// First prompt, cut to 80 characters.
    pub(crate) first_prompt: Option<String>,
    /// The event the first prompt came from, if it could be told.
    pub(crate) prompt_event: Option<String>,
    /// Its events, in order.
    pub(crate) events: SessionEvents,
    /// Events not hidden.
    pub(crate) visible_count: u64,
}

/// A session's events: their numbers, ordered by their records' order keys (time, then
/// journal position), then number. Four bytes an event: a set of (time, offset, index,
/// number) keys held 24 bytes an event and a B-tree's nodes (about 30 MB and more for a
/// million events, in every process that has the store open).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SessionEvents(Vec<u32>);

/// The place of event `n` (whose key is `key`) among events ordered by key, then number.
fn order(recs: &Events, m: u32, n: u32, key: (i64, u64, u32)) -> Ordering {
    (recs.order_key(m), m).cmp(&(key, n))
}

impl SessionEvents {
    /// Numbers in order: the numbers of events of `recs`, sorted.
    pub(crate) fn from_numbers(mut numbers: Vec<u32>, recs: &Events) -> SessionEvents {
        numbers.sort_unstable_by_key(|&n| (recs.order_key(n), n));
        numbers.shrink_to_fit();
        SessionEvents(numbers)
    }

    /// Adds event `n`, whose record in `recs` is current.
    pub(crate) fn insert(&mut self, n: u32, recs: &Events) {
        let key = recs.order_key(n);
        // Events come mostly in order: the end first.
        if self.0.last().is_none_or(|&m| order(recs, m, n, key) == Ordering::Less) {
            self.0.push(n);
        } else if let Err(at) = self.0.binary_search_by(|&m| order(recs, m, n, key)) {
            self.0.insert(at, n);
        }
    }

    /// Removes event `n`, placed by `key` (its key when it was added: its record in `recs` may
    /// have been replaced since); true if it was there.
    pub(crate) fn remove(&mut self, n: u32, key: (i64, u64, u32), recs: &Events) -> bool {
        let found = self.0.binary_search_by(|&m| if m == n { Ordering::Equal } else { order(recs, m, n, key) });
        found.map(|at| self.0.remove(at)).is_ok()
    }

    /// The numbers, in order.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = u32> + '_ {
        self.0.iter().copied()
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    fn heap_bytes(&self) -> usize {
        self.0.capacity() * std::mem::size_of::<u32>()
    }
}

/// Sessions by number (first seen first), found by id and source.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sessions {
    pub(crate) slots: Vec<SessionState>,
    /// Session id -> (source number, session number) of each source that has it.
    by_id: FxHashMap<Box<str>, Vec<(u16, u32)>>,
}

impl Sessions {
    /// Heap bytes held by the sessions' ordered event lists and the rest of their slots, from
    /// their capacities.
    pub(crate) fn heap_bytes(&self) -> [(&'static str, usize); 2] {
        let lists: usize = self.slots.iter().map(|s| s.events.heap_bytes()).sum();
        let cap = |o: &Option<String>| o.as_ref().map_or(0, String::capacity);
        let rest: usize = self.slots.capacity() * std::mem::size_of::<SessionState>()
            + self
                .slots
                .iter()
                .map(|s| s.session.len() + cap(&s.project) + cap(&s.title) + cap(&s.first_prompt) + cap(&s.prompt_event))
                .sum::<usize>();
        [("session event lists", lists), ("sessions", rest)]
    }

    /// The number of the session `session` of source `source`.
    pub(crate) fn find(&self, source: u16, session: &str) -> Option<u32> {
        self.by_id.get(session)?.iter().find(|(s, _)| *s == source).map(|&(_, n)| n)
    }

    /// The numbers of the sessions with this id, in every source.
    pub(crate) fn with_id(&self, session: &str) -> &[(u16, u32)] {
        self.by_id.get(session).map_or(&[], Vec::as_slice)
    }

    /// The number of the session, added if new.
    pub(crate) fn get_or_insert(&mut self, source: u16, session: &str) -> u32 {
        if let Some(n) = self.find(source, session) {
            return n;
        }
        let n = u32::try_from(self.slots.len()).unwrap_or_else(|_| panic!("more than 2^32 sessions in one state"));
        self.slots.push(SessionState { source, session: session.into(), ..SessionState::default() });
        self.by_id.entry(session.into()).or_default().push((source, n));
        n
    }
}
