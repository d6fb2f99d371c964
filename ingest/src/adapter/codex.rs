//! Codex: being written.

use std::path::PathBuf;

use super::{Adapter, Line, LogFile, MemoryFile, State};
use crate::source::{Homes, Source};

/// The Codex adapter.
pub struct Codex;

impl Adapter for Codex {
    fn source(&self) -> Source {
        Source::Codex
    }
    fn discover(&self, _homes: &Homes) -> (Vec<LogFile>, Vec<String>) {
        (Vec::new(), Vec::new())
    }
    fn parse_line(&self, _file: &LogFile, _state: &mut State, _line: &[u8], _line_no: u64) -> Line {
        Line::Malformed("not implemented yet".into())
    }
    fn memory_files(&self, _homes: &Homes, _projects: &[PathBuf]) -> Vec<MemoryFile> {
        Vec::new()
    }
}
