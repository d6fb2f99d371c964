//! The tools half of the `origin` binary as a library: the seven tools (their conventions, the
//! archive they read and write, the MCP server). The binary (`main.rs`) is the CLI around it;
//! the tools benchmark calls the same archive in-process to measure what stdio adds.

pub mod tools;
