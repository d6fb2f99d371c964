//! Profiling aid: tool calls in-process on a store (`<home>`, as the tools benchmark leaves it):
//! `LAB_TOOL` (search, timeline or get) with `LAB_ARG` (the query, session or id; `LAB_SCOPE` for
//! search), `LAB_PASSES`
//! times; prints each pass's time per call.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::Instant;

use origin::tools::archive::{Archive, SearchArgs, TimelineArgs};
use origin_ingest::Homes;
use origin_benches as _;

fn main() {
    let home = std::path::PathBuf::from(std::env::args().nth(1).expect("a store"));
    let agents = home.join("no-agents");
    let tool = std::env::var("LAB_TOOL").unwrap_or_else(|_| "search".into());
    let arg = std::env::var("LAB_ARG").unwrap_or_else(|_| "error".into());
    let passes: usize = std::env::var("LAB_PASSES").ok().and_then(|s| s.parse().ok()).unwrap_or(200);
    let a = Archive::open(&home, Some(Homes::under(&agents)), None, origin_projections::Verify::Ahead).expect("archive");
    for round in 0..3 {
        let t = Instant::now();
        let mut bytes = 0;
        for _ in 0..passes {
            let r = match tool.as_str() {
                "search" => a.search(&SearchArgs { query: Some(arg.clone()), scope: std::env::var("LAB_SCOPE").ok(), include_tools: true, ..SearchArgs::default() }),
                "timeline" => a.timeline(&TimelineArgs { session: Some(arg.clone()), ..TimelineArgs::default() }),
                _ => a.get(&arg),
            };
            bytes += r.map_err(|e| e.0).expect("tool").to_string().len();
        }
        println!("round {round}: {:.3} ms per call ({bytes} bytes)", t.elapsed().as_secs_f64() * 1e3 / passes as f64);
    }
}
