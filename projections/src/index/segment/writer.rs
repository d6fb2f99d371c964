//! Puts a segment in place: encode under a temporary name, fsync, rename, fsync the
//! directory, then open it again, verifying every checksum (the bytes are checked twice:
//! before they are written and after they are read back).

use super::encoder::Encoder;
use super::reader::Segment;
use super::{SegmentId, file_name};
use crate::index::IndexError;
use crate::index::folder::Folder;
use crate::index::doc::DocTable;
use crate::index::postings::Postings;

/// Where a new segment goes: a directory, or memory (an in-memory index).
#[derive(Clone, Debug)]
pub(crate) enum Target<'a> {
    Dir(&'a Folder),
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
        Target::Dir(folder) => {
            let name = file_name(id);
            folder.put(&name, |w, tmp| {
                let io = |e| IndexError::io("write", tmp, e);
                let mut enc = Encoder::new(w, id, docs).map_err(io)?;
                terms(&mut |t, p| enc.add_term(t, p).map_err(io))?;
                enc.finish().map(drop).map_err(io)
            })?;
            // Read back: the body as written must match the checksum it was written with.
            let segment = Segment::open(folder, &folder.join(&name), id)?;
            segment.verify()?;
            Ok(segment)
        }
    }
}
