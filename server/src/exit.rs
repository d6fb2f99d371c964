//! Exit codes of the `origin` binary (also listed in README.md and `origin --help`).

use std::process::ExitCode;

/// What a command's exit code says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// It worked; for `journal verify`, the journal is clean.
    Ok = 0,
    /// The journal is damaged (corruption found); the message names segment and byte.
    Damaged = 1,
    /// The command line was wrong: clap's own code, and a value a command refused
    /// ([`BadValue`], a tool's invalid input).
    Usage = 2,
    /// The store could not be read or written (I/O error, no journal, refused writes).
    Failed = 3,
    /// `journal verify`: no corruption, but a torn tail that the next write will cut.
    TornTail = 4,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}

/// A value on the command line that clap took and the command refused (a time that is none,
/// an offset past the journal's end): exit 2, as for clap's own refusals.
#[derive(Debug)]
pub struct BadValue(pub String);

impl std::fmt::Display for BadValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadValue {}

/// The exit code for an error that reached the edge: 1 for the journal's damage wherever it
/// was found ([`is_journal_damage`](origin::tools::archive::is_journal_damage)), 2 for a
/// [`BadValue`], else 3.
pub fn for_error(e: &anyhow::Error) -> Exit {
    if e.chain().any(origin::tools::archive::is_journal_damage) {
        Exit::Damaged
    } else if e.chain().any(|c| c.is::<BadValue>()) {
        Exit::Usage
    } else {
        Exit::Failed
    }
}

/// What is said of an error that reached the edge: the error, each cause its message does not
/// already hold (an I/O error's words end the message of the failure it caused, and were said
/// twice), and, for the journal's damage, what to run next.
pub fn error_lines(e: &anyhow::Error) -> Vec<String> {
    let mut lines = vec![format!("origin: {e}")];
    let mut said = e.to_string();
    for cause in e.chain().skip(1) {
        let text = cause.to_string();
        if !said.contains(&text) {
            lines.push(format!("  caused by: {text}"));
        }
        said = text;
    }
    if for_error(e) == Exit::Damaged {
        lines.push(
            "  `origin journal verify` lists the damage; `origin journal salvage --to DIR` copies every readable record into a new journal"
                .to_owned(),
        );
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cause whose words the message before it already holds is not said again; one it does
    /// not hold is; the journal's damage says what to run next.
    #[test]
    fn causes_are_said_once_and_damage_says_what_to_run() {
        let io = std::io::Error::other("Not a directory");
        let e = anyhow::Error::new(origin_engine::Error::Io { op: "stat", path: "s/journal".into(), source: io }).context("opening the journal in s/journal");
        assert_eq!(
            error_lines(&e),
            ["origin: opening the journal in s/journal", "  caused by: stat s/journal: Not a directory"]
        );
        let damaged = anyhow::Error::new(origin_engine::Error::Corrupt { segment: "s".into(), position: 7, reason: "bad crc".into() }).context("opening");
        let lines = error_lines(&damaged);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[1].starts_with("  caused by: ") && lines[2].contains("origin journal salvage --to DIR"), "{lines:?}");
    }

    #[test]
    fn corruption_maps_to_damaged_and_other_errors_to_failed() {
        let c = anyhow::Error::new(origin_engine::Error::Corrupt {
            segment: "s".into(),
            position: 1,
            reason: "x".into(),
        })
        .context("opening");
        assert_eq!(for_error(&c), Exit::Damaged);
        let corrupt = || origin_engine::Error::Corrupt { segment: "s".into(), position: 7, reason: "x".into() };
        let wrapped: Vec<anyhow::Error> = vec![
            anyhow::Error::new(origin_ingest::ingest::IngestError::Journal(corrupt())).context("ingesting"),
            anyhow::Error::new(origin_projections::state::Error::Journal(corrupt())),
            anyhow::Error::new(origin_projections::CatalogError::Journal(corrupt())),
            anyhow::Error::new(origin_projections::OpenError::State(origin_projections::state::Error::Journal(corrupt()))).context("opening"),
            anyhow::Error::new(origin_projections::OpenError::Catalog(origin_projections::CatalogError::Journal(corrupt()))),
        ];
        for w in &wrapped {
            assert_eq!(for_error(w), Exit::Damaged, "{w:#}");
        }
        let not_damage = origin_engine::Error::Io { op: "read", path: "p".into(), source: std::io::Error::other("x") };
        assert_eq!(for_error(&anyhow::Error::new(origin_ingest::ingest::IngestError::Journal(not_damage))), Exit::Failed);
        let io = anyhow::anyhow!("nope");
        assert_eq!(for_error(&io), Exit::Failed);
        assert_eq!(Exit::Usage as u8, 2);
    }
}
