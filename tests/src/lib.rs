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

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The `origin` binary of this build, built first if needed (once per test process).
pub fn origin_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        // target/<profile>/deps/<test binary> -> target/<profile>/origin
        let exe = std::env::current_exe().expect("test binary path");
        let profile_dir = exe.parent().and_then(|d| d.parent()).expect("target/<profile>").to_path_buf();
        let bin = profile_dir.join("origin");
        let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let profile = profile_dir.file_name().and_then(|n| n.to_str()).unwrap_or("debug").to_owned();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-q", "-p", "origin", "--bin", "origin", "--manifest-path"]).arg(&manifest);
        if profile == "release" {
            cmd.arg("--release");
        }
        if let Some(target_dir) = profile_dir.parent() {
            cmd.arg("--target-dir").arg(target_dir);
        }
        let status = cmd.status().expect("run cargo build for the origin binary");
        assert!(status.success(), "building the origin binary failed");
        assert!(bin.exists(), "no origin binary at {}", bin.display());
        bin
    })
    .clone()
}
