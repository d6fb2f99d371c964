//! Read models rebuilt from the journal: entries, tombstones, sessions and event locators
//! ([`state`]), and the multilingual text index over events and entries ([`index`], fed and
//! kept on disk by [`catalog`]).
//!
//! What it does not do: write to the journal, read agents' logs, or speak MCP. Every
//! projection can be deleted and rebuilt from the journal with the same answers.

pub mod ahead;
pub mod catalog;
mod open;
pub use open::{OpenError, OpenedProjections, StateRead, Verify, open_projections};
pub mod state;
pub use state::{Entry, EntryFilter, EntryStatus, EventMeta, Hides, HistoryItem, Lookup, Opened, Session, SessionFilter, SnapshotUse, State, Until};
pub mod index;
pub use catalog::{Catalog, CatalogError, CatalogOpened, CommitInFlight, CommitPlan, Committed, LeftOut, PlannedCommit, PlannedMerge, is_searchable};
pub use index::{Candidate, CommitJob, WrittenCommit, write_commit, DocId, DocMeta, Filters, Hit, Index, IndexError, Match, Query, QueryError, Scope, TextForm, parse_query, snippet};
