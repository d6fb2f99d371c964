//! Listing files below an agent's folder: bounded depth and count, sorted, never following
//! symbolic links out of the tree, and reporting what could not be read.

use std::path::{Path, PathBuf};

use crate::limits::{FILES_PER_SOURCE_MAX, WALK_DEPTH_MAX};

/// Files below `root` (not `root` itself) for which `keep` is true, sorted by path.
/// A missing `root` gives nothing and no problem (the agent is not installed).
pub fn files(root: &Path, keep: &dyn Fn(&Path) -> bool, problems: &mut Vec<String>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if !root.is_dir() {
        return out;
    }
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) => {
                problems.push(format!("cannot list {}: {e}", dir.display()));
                continue;
            }
        };
        for entry in entries {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    problems.push(format!("cannot list {}: {e}", dir.display()));
                    continue;
                }
            };
            let path = entry.path();
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_dir() {
                if depth + 1 < WALK_DEPTH_MAX {
                    stack.push((path, depth + 1));
                }
            } else if ft.is_file() && keep(&path) {
                if out.len() >= FILES_PER_SOURCE_MAX {
                    problems.push(format!("more than {FILES_PER_SOURCE_MAX} files under {}: the rest were left out", root.display()));
                    out.sort();
                    return out;
                }
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `path` relative to `root`, as a string with `/` separators (for mirror paths).
pub fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().into_owned()
}
