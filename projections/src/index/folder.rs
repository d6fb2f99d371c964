//! The folder an index is kept in, and the file system it is on: every file the index and the
//! catalog write or read goes through the store's [`Vfs`], as the journal's do, so that the
//! fault tests can cut the power or fail a call anywhere in a commit, a merge or a rebuild.

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use origin_engine::vfs::{OsFs, Vfs, VfsFile};

use super::IndexError;

/// A folder on a file system.
#[derive(Clone)]
pub struct Folder {
    vfs: Arc<dyn Vfs>,
    path: PathBuf,
}

impl fmt::Debug for Folder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} on {:?}", self.path, self.vfs)
    }
}

impl Folder {
    /// `path` on `vfs`.
    pub fn new(vfs: Arc<dyn Vfs>, path: &Path) -> Folder {
        Folder { vfs, path: path.to_path_buf() }
    }

    /// `path` on the real file system.
    pub fn os(path: &Path) -> Folder {
        Folder::new(Arc::new(OsFs), path)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file system it is on.
    pub fn vfs(&self) -> &dyn Vfs {
        &*self.vfs
    }

    /// The path of `name` in it.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Creates it (and its parents) if missing.
    pub fn create(&self) -> Result<(), IndexError> {
        self.vfs.create_dir_all(&self.path).map_err(|e| IndexError::io("create", &self.path, e))
    }

    /// The names of what it holds.
    pub fn list(&self) -> Result<Vec<String>, IndexError> {
        self.vfs.list_dir(&self.path).map_err(|e| IndexError::io("list", &self.path, e))
    }

    /// The bytes of file `name`, or `None` if there is none. A file of more than `max_bytes`
    /// is not read: it is corruption (none the index writes is larger), never a reason to
    /// take all the memory there is.
    pub fn read(&self, name: &str, max_bytes: u64) -> Result<Option<Vec<u8>>, IndexError> {
        let path = self.join(name);
        let file = match self.vfs.open_read(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(IndexError::io("open", &path, e)),
        };
        let len = file.len().map_err(|e| IndexError::io("stat", &path, e))?;
        if len > max_bytes {
            return Err(IndexError::corrupt(&path, max_bytes, format!("{len} bytes, over the {max_bytes}-byte limit of such a file")));
        }
        let mut bytes = vec![0u8; len as usize];
        file.read_exact_at(&mut bytes, 0).map_err(|e| IndexError::io("read", &path, e))?;
        Ok(Some(bytes))
    }

    /// Replaces file `name` with `bytes` atomically and durably ([`Folder::put`]).
    pub fn replace(&self, name: &str, bytes: &[u8]) -> Result<(), IndexError> {
        self.put(name, |w, tmp| w.write_all(bytes).map_err(|e| IndexError::io("write", tmp, e)))
    }

    /// Puts file `name` in place atomically and durably, its bytes written by `write` (given
    /// a buffered writer and the temporary file's path, for its errors): written beside it
    /// under a temporary name (one a crash left is replaced), synced, renamed into place, the
    /// folder synced. A write that fails removes its temporary file; `write`'s own error is
    /// returned as it is.
    pub(crate) fn put(&self, name: &str, write: impl FnOnce(&mut dyn Write, &Path) -> Result<(), IndexError>) -> Result<(), IndexError> {
        let tmp = self.join(&format!("{name}.tmp"));
        let written = self.write_synced(&tmp, write).and_then(|()| {
            self.vfs.rename(&tmp, &self.join(name)).map_err(|e| IndexError::io("rename", &tmp, e))?;
            self.sync()
        });
        if written.is_err() {
            // Best effort: the write's own error is the one returned.
            let _ = self.vfs.remove_file(&tmp);
        }
        written
    }

    /// Writes a new file at `tmp` (one already there is replaced) through `write`, buffered,
    /// and syncs it.
    fn write_synced(&self, tmp: &Path, write: impl FnOnce(&mut dyn Write, &Path) -> Result<(), IndexError>) -> Result<(), IndexError> {
        self.remove_path(tmp)?;
        let file = self.vfs.create_new(tmp).map_err(|e| IndexError::io("create", tmp, e))?;
        let mut w = io::BufWriter::with_capacity(1 << 16, FileWriter { file: &*file, at: 0 });
        write(&mut w, tmp)?;
        w.flush().map_err(|e| IndexError::io("write", tmp, e))?;
        drop(w);
        file.sync_data().map_err(|e| IndexError::io("fsync", tmp, e))
    }

    /// Syncs the folder: the files created, renamed and removed in it survive a power cut.
    pub fn sync(&self) -> Result<(), IndexError> {
        self.vfs.sync_dir(&self.path).map_err(|e| IndexError::io("fsync", &self.path, e))
    }

    /// Removes file `name`; one that is not there is no error.
    pub fn remove(&self, name: &str) -> Result<(), IndexError> {
        self.remove_path(&self.join(name))
    }

    fn remove_path(&self, path: &Path) -> Result<(), IndexError> {
        match self.vfs.remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(IndexError::io("remove", path, e)),
        }
    }
}

/// Appends to a file through positioned writes.
struct FileWriter<'f> {
    file: &'f dyn VfsFile,
    at: u64,
}

impl Write for FileWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write_all_at(buf, self.at)?;
        self.at += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
