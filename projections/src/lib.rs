//! placeholder

pub mod state;
pub use state::{Entry, EntryFilter, EntryStatus, EventMeta, Hides, HistoryItem, Lookup, Opened, Session, SessionFilter, SnapshotUse, State, Until};
pub mod index;
pub use index::{DocId, DocMeta, Filters, Hit, Index, IndexError, Match, Query, QueryError, Scope, parse_query, snippet};
