//! Origin's integration tests: one binary, a module per behaviour.

mod journal_crash;
mod journal_bitflip;
mod journal_model;
mod journal_faults;
mod journal_processes;
mod journal_format;
mod ingest_incremental;
mod ingest_bad_input;
mod ingest_processes;
mod ingest_memory;
mod ingest_freshness;
mod ingest_snapshot;
mod index_processes;
mod mcp_stdio;
mod mcp_python;
mod cli_forget_restore;
mod store_read_only;
mod cli_words;
