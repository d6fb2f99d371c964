//! The `origin` binary: a thin shell over the library crates. One error printer at the edge,
//! documented exit codes (see `exit`).

mod cli;
mod exit;
mod ingest_cmd;
mod journal_cmd;
mod out;
mod show;
mod tools_cmd;

use origin::tools;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc rather than the system allocator: ingest and indexing allocate many small strings,
/// and the ingest benchmark measured about 9% less CPU with it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code.into(),
        Err(e) => {
            // The one error printer: the error and its causes, then a code the caller can act on.
            for line in exit::error_lines(&e) {
                origin::say_err!("{line}");
            }
            exit::for_error(&e).into()
        }
    }
}
