//! Profiling aid: the cost of the protocol alone. Starts `origin mcp` on a store (`<home>`, as
//! the tools benchmark leaves it), finds an event by a search for `LAB_ARG` (default "release"),
//! then calls `get` on it `LAB_PASSES` times (default 2,000) and `search` for `LAB_ARG` as many,
//! through rmcp's client over stdio; prints the median and the fastest of each. `LAB_BIN`: the
//! `origin` binary to start (default: this workspace's, built if needed). Also prints the
//! server's CPU time per call (user + system, from /proc).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::Instant;

use origin_benches as _;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{Value, json};

fn main() {
    let home = std::path::PathBuf::from(std::env::args().nth(1).expect("a store"));
    let agents = home.join("no-agents");
    std::fs::create_dir_all(&agents).expect("agents home");
    let arg = std::env::var("LAB_ARG").unwrap_or_else(|_| "release".into());
    let passes: usize = std::env::var("LAB_PASSES").ok().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async move {
        // LAB_BIN: another build of `origin` to compare.
        let bin = std::env::var_os("LAB_BIN").map_or_else(origin_tests::origin_bin, std::path::PathBuf::from);
        let mut cmd = tokio::process::Command::new(bin);
        cmd.arg("--home").arg(&home).arg("mcp").arg("--agents-home").arg(&agents);
        let transport = TokioChildProcess::new(cmd).expect("spawn origin mcp");
        let pid = transport.id().expect("the server's pid");
        // The server's CPU (user + system, in clock ticks of 10 ms) so far.
        let cpu = move || {
            let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let f: Vec<u64> = s.rsplit_once(')').map_or("", |(_, r)| r).split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
            (f[11] + f[12]) as f64 * 10.0
        };
        let info = ClientConfig::new(ClientCapabilities::default(), Implementation::new("origin-lab", "1.0"));
        let c = info.serve(transport).await.expect("initialize");
        let call = |tool: &'static str, args: Value| {
            let c = &c;
            async move {
                let Value::Object(map) = args else { unreachable!() };
                let r = c.call_tool(CallToolRequestParams::new(tool).with_arguments(map)).await.expect("tools/call");
                r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<String>()
            }
        };
        let search = json!({"query": arg, "include_tools": true});
        let mut text = call("search", search.clone()).await;
        while text.starts_with("Origin is still opening") {
            text = call("search", search.clone()).await;
        }
        let v: Value = serde_json::from_str(&text).expect("search answer");
        let id = v["events"][0]["id"].as_str().expect("a hit").to_owned();
        for (tool, args) in [("get", json!({"id": id})), ("search", search)] {
            let mut times = Vec::with_capacity(passes);
            let mut bytes = 0;
            let cpu0 = cpu();
            for _ in 0..passes {
                let t = Instant::now();
                bytes = call(tool, args.clone()).await.len();
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
            times.sort_by(f64::total_cmp);
            let server_ms = (cpu() - cpu0) / passes as f64;
            println!("{tool}: {:.3} ms median, {:.3} min, server CPU {server_ms:.3} ms per call ({bytes} bytes)", times[times.len() / 2], times[0]);
        }
        c.cancel().await.expect("close");
    });
}
