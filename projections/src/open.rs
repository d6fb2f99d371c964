//! Opening a store's projections: the state and the text index, side by side.
//!
//! The two are independent until the index is seeded with the state's entries
//! ([`Catalog::seed_entries`]): the state reads its snapshot (checksummed) and, unless the
//! caller reads it for both ([`StateRead`]), the journal after it; the index reads its manifest and checks every segment's structures (their bodies'
//! checksums are verified as [`Verify`] says: ahead, by a thread of the index's own, which a
//! first search waits for, or when a search or merge first needs a segment).
//! Together they are most of the time a store takes to give a first answer, so they run on two
//! threads.

use std::path::Path;

use origin_engine::Journal;
use origin_engine::vfs::Vfs;

use crate::{Catalog, CatalogError, CatalogOpened, Opened, State};

/// How far [`open_projections`] reads the journal for the state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateRead {
    /// To its end, on the state's thread: the state is caught up when the open returns.
    ToEnd,
    /// Not at all: the state is as its snapshot left it (empty when none was used), and the
    /// caller reads the records after it, decoding each once for the state and the text index
    /// (a server's catch-up). A store with neither projection saved decodes its journal once,
    /// not once for each.
    ByCaller,
}

/// A store's projections, opened.
pub struct OpenedProjections {
    /// The state, loaded from its snapshot or rebuilt, and caught up with the journal (as
    /// [`StateRead`] says).
    pub state: State,
    /// How the state was opened.
    pub state_opened: Opened,
    /// The text index (not yet seeded with the state's entries, nor caught up).
    pub catalog: Catalog,
    /// How the index was opened.
    pub catalog_opened: CatalogOpened,
}

/// Why the projections could not be opened. When both fail, the state's error is the one
/// given.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Opening the state failed.
    #[error(transparent)]
    State(#[from] crate::state::Error),
    /// Opening the text index failed.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
}

/// Whether the text index's segment bodies are verified as soon as they are opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    /// On a thread of the index's own from the open (and while the state still opens): for a
    /// process that will search ([`Catalog::verify_ahead`]).
    Ahead,
    /// When a search or merge first needs a segment: for a process that may not search.
    WhenNeeded,
}

/// Opens the state (from the snapshot at `snapshot`, and the journal after it as `read` says)
/// and the text index in `index_dir`, both on the journal's file system ([`Journal::vfs`]),
/// at once: the state on a thread of its own, the index on the caller's, its segments' bodies
/// verified as `verify` says. When no thread can be started, one after the other. A panic on
/// the state's thread is raised again here, as it would have been had it run on the caller's.
pub fn open_projections(
    journal: &Journal,
    snapshot: &Path,
    index_dir: &Path,
    verify: Verify,
    read: StateRead,
) -> Result<OpenedProjections, OpenError> {
    let vfs: &dyn Vfs = &**journal.vfs();
    let open_catalog = || match Catalog::open(index_dir, journal) {
        Ok((mut c, opened)) => {
            if verify == Verify::Ahead {
                c.verify_ahead();
            }
            Ok((c, opened))
        }
        // The folder cannot be read or written (a full disk: a first open writes its manifest
        // and journal file): the index is built in memory instead of failing every read.
        Err(e) if e.is_io() => Ok((Catalog::in_memory(), CatalogOpened::InMemory { reason: e.to_string() })),
        Err(e) => Err(e),
    };
    let (state, catalog) = std::thread::scope(|s| {
        let open_state = || match read {
            StateRead::ToEnd => State::open(journal, vfs, snapshot),
            StateRead::ByCaller => {
                State::open_snapshot(journal, vfs, snapshot).map(|(state, snapshot)| (state, Opened { snapshot, records_read: 0 }))
            }
        };
        match std::thread::Builder::new().name("origin-open-state".into()).spawn_scoped(s, open_state) {
            Ok(thread) => {
                let catalog = open_catalog();
                let state = thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (state, catalog)
            }
            Err(_) => (open_state(), open_catalog()),
        }
    });
    let (state, state_opened) = state?;
    let (catalog, catalog_opened) = catalog?;
    Ok(OpenedProjections { state, state_opened, catalog, catalog_opened })
}
