//! Origin's journal: every write Origin makes is a record in one segmented, CRC-checked,
//! append-only journal, and everything else is rebuilt from it.
//!
//! What this crate does: segment files and their headers, record frames, the payload codec,
//! group-committed durable appends shared by many processes, readers from any offset, recovery
//! of torn tails, detection of corruption, verification, salvage and compaction.
//!
//! What it deliberately does not do: interpret records (projections do), talk to a network
//! (sync does), or log (callers decide what to tell people).
//!
//! Invariants callers may rely on:
//! - An append returns only after every byte of its records is written and, with
//!   [`Durability::Sync`], `fdatasync`ed. Offsets are dense and unique per store.
//! - No frame is ever returned unless its CRC and its offset check out; damage is an error
//!   naming the segment and byte position, never skipped.
//! - Bytes at or below a validated frame end are never modified or truncated.

pub mod codec;
pub mod compact;
pub mod error;
pub mod frame;
pub mod index;
pub mod journal;
pub mod limits;
pub mod record;
pub mod recovery;
pub mod salvage;
pub mod segment;
pub mod sim;
pub mod snapshot;
pub mod tip;
pub mod verify;
pub mod vfs;

pub use error::{Error, Result};
pub use journal::{Access, Durability, Journal, NewRecord, OpenReport, Options, OwnedRecord, Record, Status, TornTail};
pub use record::{Body, RecordKind};
pub use segment::StoreId;
