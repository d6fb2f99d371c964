//! Reads coding agents session logs into the journal (being built).
