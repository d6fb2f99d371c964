//! Little-endian, fixed-width primitives of the snapshot body: a writer and a reader that
//! checks every length against the bytes that remain before allocating.

use crate::state::limits::SNAPSHOT_STRING_SIZE_BYTES_MAX;

/// Appends values to a buffer.
#[derive(Default)]
pub(crate) struct Writer {
    pub(crate) buf: Vec<u8>,
}

impl Writer {
    pub(crate) fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }
    pub(crate) fn bool(&mut self, v: bool) {
        self.u8(u8::from(v));
    }
    /// A count of items that follow.
    pub(crate) fn count(&mut self, n: usize) {
        self.u64(n as u64);
    }
    /// A text of any length, given in pieces (valid UTF-8 together): its byte length as a
    /// `u64`, then its bytes.
    pub(crate) fn text_of(&mut self, pieces: &[&[u8]]) {
        self.u64(pieces.iter().map(|p| p.len() as u64).sum());
        pieces.iter().for_each(|p| self.buf.extend_from_slice(p));
    }
    pub(crate) fn str(&mut self, s: &str) {
        // Every string came out of one record, whose payload is far below 4 GiB.
        assert!(s.len() as u64 <= SNAPSHOT_STRING_SIZE_BYTES_MAX, "string of {} bytes in the state", s.len());
        self.u32(s.len() as u32);
        self.buf.extend_from_slice(s.as_bytes());
    }
    pub(crate) fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.u8(0),
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
        }
    }
    pub(crate) fn opt_i64(&mut self, v: Option<i64>) {
        match v {
            None => self.u8(0),
            Some(v) => {
                self.u8(1);
                self.i64(v);
            }
        }
    }
}

/// Reads values back, refusing anything that does not fit.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

/// Why bytes were refused.
pub(crate) type Refusal = String;

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }
    /// Bytes read so far.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }
    /// The next `n` bytes, skipped.
    pub(crate) fn skip(&mut self, n: usize) -> Result<&'a [u8], Refusal> {
        self.take(n)
    }
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], Refusal> {
        if n > self.remaining() {
            return Err(format!("{n} bytes wanted at body byte {}, {} left", self.pos, self.remaining()));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], Refusal> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, Refusal> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u32(&mut self) -> Result<u32, Refusal> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, Refusal> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    pub(crate) fn i64(&mut self) -> Result<i64, Refusal> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    pub(crate) fn f64(&mut self) -> Result<f64, Refusal> {
        Ok(f64::from_bits(self.u64()?))
    }
    pub(crate) fn bool(&mut self) -> Result<bool, Refusal> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(format!("boolean byte {b} at body byte {}", self.pos - 1)),
        }
    }
    /// A count of items of at least `item_size_min` bytes each: refused if they cannot fit in
    /// what remains, so a damaged count never makes a large allocation.
    pub(crate) fn count(&mut self, item_size_min: usize) -> Result<usize, Refusal> {
        let n = self.u64()?;
        let fits = (self.remaining() / item_size_min.max(1)) as u64;
        if n > fits {
            return Err(format!("count {n} at body byte {} cannot fit in the {} bytes left", self.pos - 8, self.remaining()));
        }
        Ok(n as usize)
    }
    pub(crate) fn str(&mut self) -> Result<String, Refusal> {
        let n = self.u32()?;
        if u64::from(n) > SNAPSHOT_STRING_SIZE_BYTES_MAX {
            return Err(format!("string of {n} bytes at body byte {}", self.pos - 4));
        }
        let at = self.pos;
        let b = self.take(n as usize)?;
        String::from_utf8(b.to_vec()).map_err(|_| format!("string at body byte {at} is not UTF-8"))
    }
    /// A text of a `u64` byte length (no limit but the bytes left, which [`Reader::take`]
    /// checks), borrowed from the bytes read: checked as UTF-8 in one pass, however many
    /// strings it holds.
    pub(crate) fn text(&mut self) -> Result<&'a str, Refusal> {
        let n = self.u64()?;
        let b = self.take(usize::try_from(n).unwrap_or(usize::MAX))?;
        let at = self.pos - b.len();
        std::str::from_utf8(b).map_err(|e| format!("text at body byte {at} is not UTF-8 (at byte {} of it)", e.valid_up_to()))
    }
    pub(crate) fn opt_str(&mut self) -> Result<Option<String>, Refusal> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(self.str()?)),
            t => Err(format!("option tag {t} at body byte {}", self.pos - 1)),
        }
    }
    pub(crate) fn opt_i64(&mut self) -> Result<Option<i64>, Refusal> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(self.i64()?)),
            t => Err(format!("option tag {t} at body byte {}", self.pos - 1)),
        }
    }
}
