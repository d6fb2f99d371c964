//! Puts a segment in place: encode under a temporary name, fsync, rename, fsync the
//! directory, then open it again, verifying every checksum (the bytes are checked twice:
//! before they are written and after they are read back).

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::Path;

use super::encoder::Encoder;
use super::reader::Segment;
use super::{SegmentId, file_name};
use crate::index::IndexError;
use crate::index::doc::DocTable;
use crate::index::postings::Postings;

/// Where a new segment goes: a directory, or memory (an in-memory index).
#[derive(Clone, Debug)]
pub(crate) enum Target<'a> {
    Dir(&'a Path),
    Memory,
}

/// Encodes a segment from its documents and a callback that feeds the encoder its terms in
/// byte order, and opens the result.
pub(crate) fn write_segment<F>(
    target: Target<'_>,
    id: SegmentId,
    docs: &DocTable,
    terms: F,
) -> Result<Segment, IndexError>
where
    F: FnOnce(&mut dyn FnMut(&str, &Postings) -> Result<(), IndexError>) -> Result<(), IndexError>,
{
    match target {
        Target::Memory => {
            let mut enc = Encoder::new(Vec::new(), id, docs).map_err(|e| IndexError::io("encode", "<memory>", e))?;
            terms(&mut |t, p| enc.add_term(t, p).map_err(|e| IndexError::io("encode", "<memory>", e)))?;
            let bytes = enc.finish().map_err(|e| IndexError::io("encode", "<memory>", e))?;
            Segment::from_bytes(bytes, id)
        }
        Target::Dir(dir) => {
            let path = dir.join(file_name(id));
            let tmp = dir.join(format!("{}.tmp", file_name(id)));
            let file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&tmp)
                .map_err(|e| IndexError::io("create", &tmp, e))?;
            let result = (|| {
                let w = BufWriter::with_capacity(1 << 16, file);
                let mut enc = Encoder::new(w, id, docs).map_err(|e| IndexError::io("write", &tmp, e))?;
                terms(&mut |t, p| enc.add_term(t, p).map_err(|e| IndexError::io("write", &tmp, e)))?;
                let mut w = enc.finish().map_err(|e| IndexError::io("write", &tmp, e))?;
                w.flush().map_err(|e| IndexError::io("write", &tmp, e))?;
                let file = w.into_inner().map_err(|e| IndexError::io("write", &tmp, e.into_error()))?;
                file.sync_all().map_err(|e| IndexError::io("fsync", &tmp, e))?;
                fs::rename(&tmp, &path).map_err(|e| IndexError::io("rename", &tmp, e))?;
                sync_dir(dir)
            })();
            if let Err(e) = result {
                let _ = fs::remove_file(&tmp);
                return Err(e);
            }
            // Read back: the body as written must match the checksum it was written with.
            let segment = Segment::open(&path, id)?;
            segment.verify()?;
            Ok(segment)
        }
    }
}

/// Fsyncs a directory, so a rename in it survives a power cut.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), IndexError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| IndexError::io("fsync", dir, e))
}
