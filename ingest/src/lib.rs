//! Reads coding agents' session logs into Origin's journal.
//!
//! What this crate does: finds each agent's logs (adapters, one per source), reads only new
//! complete lines (cursors come from the journal), turns them into events, appends them with
//! their raw lines, keeps verbatim mirrors, imports native memory files as entries, and keeps
//! up with agents that are still writing (freshness).
//!
//! What it does not do: answer queries (projections), or talk MCP (server).
//!
//! Invariants: every line of a log file is ingested exactly once per file version, by any
//! number of processes (ingest holds `$ORIGIN_HOME/ingest.lock` while it reads and appends);
//! a line is read only once it ends with a newline; bad input is skipped and counted, never a
//! panic, never a reason to stop other files.

pub mod adapter;
pub mod bytes;
pub mod cursor;
pub mod freshness;
pub mod ingest;
pub mod json;
pub mod memory;
pub mod mirror;
pub mod limits;
pub mod snapshot;
pub mod source;
pub mod text;
pub mod walk;

pub use freshness::Freshness;
pub use ingest::{Ingester, Progress, RunSummary, SourceRun};
pub use source::{Homes, Source};
