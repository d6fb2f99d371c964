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
    /// The command line was wrong (clap's own code).
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

/// The exit code for an error that reached the edge.
pub fn for_error(e: &anyhow::Error) -> Exit {
    let corrupt = e
        .chain()
        .any(|c| c.downcast_ref::<origin_engine::Error>().is_some_and(origin_engine::Error::is_corruption));
    if corrupt { Exit::Damaged } else { Exit::Failed }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corruption_maps_to_damaged_and_other_errors_to_failed() {
        let c = anyhow::Error::new(origin_engine::Error::Corrupt {
            segment: "s".into(),
            position: 1,
            reason: "x".into(),
        })
        .context("opening");
        assert_eq!(for_error(&c), Exit::Damaged);
        let io = anyhow::anyhow!("nope");
        assert_eq!(for_error(&io), Exit::Failed);
        assert_eq!(Exit::Usage as u8, 2);
    }
}
