//! The official MCP Python SDK against `origin mcp`: the contract tests in tests/python, run
//! with pytest. The SDK is installed from tests/python/requirements.txt if it is missing.

use std::path::PathBuf;
use std::process::Command;

use origin_tests::origin_bin;

#[test]
fn the_official_python_sdk_contract_tests_pass() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = std::env::var("ORIGIN_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let ready = |p: &str| Command::new(p).args(["-c", "import mcp, pytest, anyio"]).output().is_ok_and(|o| o.status.success());
    if !ready(&python) {
        let out = Command::new(&python)
            .args(["-m", "pip", "install", "-q", "-r"])
            .arg(root.join("tests/python/requirements.txt"))
            .output()
            .unwrap_or_else(|e| panic!("{python} is needed for the MCP Python SDK tests: {e}"));
        assert!(out.status.success(), "installing the MCP Python SDK failed:\n{}", String::from_utf8_lossy(&out.stderr));
    }
    let out = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/python"])
        .env("ORIGIN_BIN", origin_bin())
        .current_dir(&root)
        .output()
        .expect("run pytest");
    let report = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the Python SDK contract tests failed:\n{report}");
    assert!(report.contains(" passed"), "pytest ran no test:\n{report}");
}
