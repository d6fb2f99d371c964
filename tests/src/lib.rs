//! Helpers shared by Origin's integration tests.

/// A seed for randomised tests: `ORIGIN_TEST_SEED` if set, else `default`. Tests print it on
/// failure so a run can be replayed.
pub fn seed(default: u64) -> u64 {
    std::env::var("ORIGIN_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// A scale factor for long runs: `ORIGIN_TEST_SCALE` (default 1). CI runs at 1.
pub fn scale() -> u64 {
    std::env::var("ORIGIN_TEST_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1).max(1)
}
