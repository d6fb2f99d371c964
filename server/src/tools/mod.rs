//! The seven tools: conventions, the archive they read and write, and the MCP server.

pub mod archive;
pub mod conventions;
pub mod mcp;
