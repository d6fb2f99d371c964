//! Sessions: per source and session, what the agent called it, how it began, and its events.

use std::collections::BTreeMap;

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
    /// Latest project a session change named, else the first an event named.
    pub(crate) project: Option<String>,
    /// Latest title.
    pub(crate) title: Option<String>,
    /// First prompt, cut to 80 characters.
    pub(crate) first_prompt: Option<String>,
    /// The event the first prompt came from, if it could be told.
    pub(crate) prompt_event: Option<String>,
    /// (time, offset, index) -> event id, in order.
    pub(crate) events: BTreeMap<(i64, u64, u32), String>,
    /// Events not hidden.
    pub(crate) visible_count: u64,
}

/// (source, session) -> session.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sessions {
    pub(crate) by_key: BTreeMap<(String, String), SessionState>,
}
