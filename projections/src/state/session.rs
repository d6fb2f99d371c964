//! Sessions: per source and session, what the agent called it, how it began, and its events.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;

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
    /// (time, offset, index, event number) of its events, in order.
    pub(crate) events: BTreeSet<(i64, u64, u32, u32)>,
    /// Events not hidden.
    pub(crate) visible_count: u64,
}

/// Sessions by number (first seen first), found by id and source.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sessions {
    pub(crate) slots: Vec<SessionState>,
    /// Session id -> (source number, session number) of each source that has it.
    by_id: FxHashMap<Box<str>, Vec<(u16, u32)>>,
}

impl Sessions {
    /// Heap bytes held by the sessions' ordered event lists and the rest of their slots,
    /// estimated: a B-tree element is counted at its size, its nodes' overhead not at all (a
    /// lower bound), ids and texts at their capacities.
    pub(crate) fn heap_bytes(&self) -> [(&'static str, usize); 2] {
        let element = std::mem::size_of::<(i64, u64, u32, u32)>();
        let lists: usize = self.slots.iter().map(|s| s.events.len() * element).sum();
        let cap = |o: &Option<String>| o.as_ref().map_or(0, String::capacity);
        let rest: usize = self.slots.capacity() * std::mem::size_of::<SessionState>()
            + self
                .slots
                .iter()
                .map(|s| s.session.len() + cap(&s.project) + cap(&s.title) + cap(&s.first_prompt) + cap(&s.prompt_event))
                .sum::<usize>();
        [("session event lists (elements only)", lists), ("sessions", rest)]
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
