//! Listing files below an agent's folder: bounded depth and count, sorted, and reporting what
//! could not be read. A symbolic link below the folder to a file outside it (a log kept
//! elsewhere) is read; one to a file inside it is not (the file is read under its own path);
//! one to a folder is not followed, and said (a link to `/` would walk the whole disk at every
//! run), as is a folder that cannot be read, and a pipe, socket or device where a log the agent
//! writes would be (it is not read: a pipe would hold up every run).

use std::path::{Path, PathBuf};

use crate::limits::{FILES_PER_SOURCE_MAX, WALK_DEPTH_MAX};

/// Files below `root` (not `root` itself) for which `keep` is true, sorted by path.
/// A missing `root` gives nothing and no problem (the agent is not installed); one that cannot
/// be looked at (a folder above it or itself without permission) is said.
pub fn files(root: &Path, keep: &dyn Fn(&Path) -> bool, problems: &mut Vec<String>) -> Vec<PathBuf> {
    files_beside(root, keep, &|_| false, problems)
}

/// [`files`], saying also the files for which `beside` is true (a log's side files, read with
/// it) whose name is given to a pipe, socket or device; they are not returned.
pub fn files_beside(root: &Path, keep: &dyn Fn(&Path) -> bool, beside: &dyn Fn(&Path) -> bool, problems: &mut Vec<String>) -> Vec<PathBuf> {
    let said = |p: &Path| keep(p) || beside(p);
    let mut out = Vec::new();
    match std::fs::metadata(root) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return out,
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => return out,
        Err(e) => {
            problems.push(format!("cannot read {}: {e}", root.display()));
            return out;
        }
    }
    let inside = std::fs::canonicalize(root).ok();
    let mut linked_folders = Tally { what: "symbolic links to folders", verdict: "not followed", count: 0 };
    let mut not_files = Tally { what: "pipes, sockets or devices", verdict: "not read", count: 0 };
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
            let ft = if ft.is_symlink() {
                match std::fs::metadata(&path) {
                    Ok(m) if m.is_dir() => {
                        linked_folders.say(problems, || format!("{} is a symbolic link to a folder: not followed (what it holds is not read)", path.display()));
                        continue;
                    }
                    // A log kept elsewhere; one of this tree's own is read under its own path.
                    Ok(m) if m.is_file() && !inside.as_ref().is_some_and(|r| std::fs::canonicalize(&path).is_ok_and(|t| t.starts_with(r))) => m.file_type(),
                    Ok(m) if !m.is_file() && said(&path) => {
                        not_files.say(problems, || not_a_file(&path));
                        continue;
                    }
                    // Dangling, or a file of this tree.
                    _ => continue,
                }
            } else {
                ft
            };
            if ft.is_dir() {
                if depth + 1 < WALK_DEPTH_MAX {
                    stack.push((path, depth + 1));
                }
            } else if ft.is_file() && keep(&path) {
                if out.len() >= FILES_PER_SOURCE_MAX {
                    problems.push(format!("more than {FILES_PER_SOURCE_MAX} files under {}: the rest were left out", root.display()));
                    linked_folders.said_the_rest(root, problems);
                    not_files.said_the_rest(root, problems);
                    out.sort();
                    return out;
                }
                out.push(path);
            } else if !ft.is_file() && said(&path) {
                not_files.say(problems, || not_a_file(&path));
            }
        }
    }
    linked_folders.said_the_rest(root, problems);
    not_files.said_the_rest(root, problems);
    out.sort();
    out
}

/// Entries of one kind a walk passes over, said one by one up to `SAID_ONE_BY_ONE_MAX`
/// (eight), the rest counted in one line.
struct Tally {
    what: &'static str,
    verdict: &'static str,
    count: usize,
}

const SAID_ONE_BY_ONE_MAX: usize = 8;

impl Tally {
    fn say(&mut self, problems: &mut Vec<String>, line: impl FnOnce() -> String) {
        self.count += 1;
        if self.count <= SAID_ONE_BY_ONE_MAX {
            problems.push(line());
        }
    }

    /// The line that counts those below `root` not said one by one, if any.
    fn said_the_rest(&self, root: &Path, problems: &mut Vec<String>) {
        if self.count > SAID_ONE_BY_ONE_MAX {
            problems.push(format!("and {} more {} below {}: {}", self.count - SAID_ONE_BY_ONE_MAX, self.what, root.display(), self.verdict));
        }
    }
}

fn not_a_file(path: &Path) -> String {
    format!("{} is not a regular file (a pipe, socket or device): not read", path.display())
}

/// `path` relative to `root`, as a string with `/` separators (for mirror paths).
pub fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().into_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// Below an agent's folder, a symbolic link to a log kept elsewhere is read (under the
    /// link's path); one to a log of the folder itself is not (it is read under its own path);
    /// one to a folder is said and not followed; a dangling one is passed over.
    #[test]
    fn links_to_logs_elsewhere_are_read_and_links_to_folders_said() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, elsewhere) = (tmp.path().join("agent"), tmp.path().join("elsewhere"));
        std::fs::create_dir_all(root.join("p")).unwrap();
        std::fs::create_dir_all(elsewhere.join("more")).unwrap();
        std::fs::write(root.join("p/own.jsonl"), b"{}\n").unwrap();
        std::fs::write(elsewhere.join("kept.jsonl"), b"{}\n").unwrap();
        std::fs::write(elsewhere.join("more/deep.jsonl"), b"{}\n").unwrap();
        std::os::unix::fs::symlink(elsewhere.join("kept.jsonl"), root.join("p/kept.jsonl")).unwrap();
        std::os::unix::fs::symlink(root.join("p/own.jsonl"), root.join("p/again.jsonl")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("more"), root.join("more")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("gone.jsonl"), root.join("p/gone.jsonl")).unwrap();
        let mut problems = Vec::new();
        let found = files(&root, &|p| p.extension().is_some_and(|e| e == "jsonl"), &mut problems);
        assert_eq!(found, [root.join("p/kept.jsonl"), root.join("p/own.jsonl")]);
        assert_eq!(problems, [format!("{} is a symbolic link to a folder: not followed (what it holds is not read)", root.join("more").display())]);
        // Many linked folders: eight said, the rest counted in one line.
        for i in 0..20 {
            std::os::unix::fs::symlink(elsewhere.join("more"), root.join(format!("more{i}"))).unwrap();
        }
        let mut many = Vec::new();
        files(&root, &|p| p.extension().is_some_and(|e| e == "jsonl"), &mut many);
        assert_eq!(many.len(), 9, "{many:?}");
        assert_eq!(many[8], format!("and 13 more symbolic links to folders below {}: not followed", root.display()));
        // A root that is missing, or below a file, is no agent: nothing said.
        for missing in [tmp.path().join("none"), root.join("p/own.jsonl/x")] {
            assert!(files(&missing, &|_| true, &mut problems).is_empty());
            assert_eq!(problems.len(), 1, "{problems:?}");
        }
    }

    /// A pipe or a socket where a log would be (by its name), or a link to one, is said and not
    /// read (a pipe would hold up every run); one the agent would not read is passed over.
    #[test]
    fn pipes_and_sockets_where_logs_would_be_are_said() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("agent");
        std::fs::create_dir_all(root.join("p")).unwrap();
        std::fs::write(root.join("p/log.jsonl"), b"{}\n").unwrap();
        for fifo in [root.join("p/fifo.jsonl"), root.join("p/fifo.txt"), tmp.path().join("elsewhere.jsonl")] {
            assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        }
        let _socket = std::os::unix::net::UnixListener::bind(root.join("p/socket.jsonl")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("elsewhere.jsonl"), root.join("p/linked.jsonl")).unwrap();
        let mut problems = Vec::new();
        let found = files(&root, &|p| p.extension().is_some_and(|e| e == "jsonl"), &mut problems);
        assert_eq!(found, [root.join("p/log.jsonl")]);
        problems.sort();
        let said = |name: &str| format!("{} is not a regular file (a pipe, socket or device): not read", root.join("p").join(name).display());
        assert_eq!(problems, [said("fifo.jsonl"), said("linked.jsonl"), said("socket.jsonl")]);
        // Many: eight said, the rest counted in one line.
        for i in 0..10 {
            assert!(std::process::Command::new("mkfifo").arg(root.join(format!("p/more{i}.jsonl"))).status().unwrap().success());
        }
        let mut many = Vec::new();
        files(&root, &|p| p.extension().is_some_and(|e| e == "jsonl"), &mut many);
        assert_eq!(many.len(), 9, "{many:?}");
        assert_eq!(many[8], format!("and 5 more pipes, sockets or devices below {}: not read", root.display()));
    }
}
