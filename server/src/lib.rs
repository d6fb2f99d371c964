//! The tools half of the `origin` binary as a library: the seven tools (their conventions, the
//! archive they read and write, the MCP server). The binary (`main.rs`) is the CLI around it;
//! the tools benchmark calls the same archive in-process to measure what stdio adds.

pub mod tools;

/// Writes a line to standard error (format arguments as `eprintln!`'s). A diagnostic that
/// cannot be written (standard error's reader has gone: `origin … 2>&1 | head`) is dropped:
/// there is no one left to tell, and `eprintln!` would panic, ending a command before its work
/// or a server's thread while it holds the store.
#[macro_export]
macro_rules! say_err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}
