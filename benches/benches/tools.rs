//! The seven tools through a real MCP client over stdio, on the benchmark corpus (a million
//! searchable events by default): tools/call latency of search (by query class), timeline and
//! get, next to the same calls made in-process on the same store (the archive the server
//! wraps, and for search the text index alone), so the protocol's cost is a ratio; and the
//! time from starting `origin mcp` to its first answered search, without projections (a first
//! start: state replayed, text index built) and with them (every later start). See
//! BENCHMARKS.md.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use origin::tools::archive::{Archive, SearchArgs, TimelineArgs};
use origin_benches::agentlogs::iso;
use origin_benches::corpus::{self, Located};
use origin_benches::indexbench::{CLASSES, copy_tree, is_han, make_queries};
use origin_benches::{Rng, loadavg, median, table};
use origin_engine::{Access, Journal, Options};
use origin_ingest::Homes;
use origin_projections::{Catalog, Filters, parse_query};
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

const SEED: u64 = 0x1a7e_57a9_e10c_0002;

/// Calls per kind of call (each timed once, after one untimed pass over the same calls).
fn calls_per_kind() -> usize {
    std::env::var("ORIGIN_BENCH_QUERIES").ok().and_then(|s| s.parse().ok()).filter(|&n| n > 0).unwrap_or(300)
}

/// Starts measured with projections in place.
const WARM_STARTS: usize = 5;

/// The store the server works on: the corpus's journal copied (the server may append to it) and
/// its mirrors linked (nothing here writes them), without projections.
fn fresh_home(corpus_store: &Path, home: &Path) {
    let _ = std::fs::remove_dir_all(home);
    copy_tree(&corpus_store.join("journal"), &home.join("journal"), false);
    copy_tree(&corpus_store.join("raw"), &home.join("raw"), true);
}

/// One kind of call, with its arguments.
struct Kind {
    name: String,
    tool: &'static str,
    calls: Vec<Value>,
}

fn kinds(events: &[&Located], n: usize) -> Vec<Kind> {
    let han: Vec<usize> = events.iter().enumerate().filter(|(_, e)| e.event.text.chars().any(is_han)).map(|(i, _)| i).collect();
    let mut rng = Rng::new(SEED ^ 0x7001);
    let mut out = Vec::new();
    for class in CLASSES {
        let calls = make_queries(events, &han, class, n, &mut rng).into_iter().map(|q| json!({"query": q.origin, "include_tools": true})).collect();
        out.push(Kind { name: format!("search: {}", class.name()), tool: "search", calls });
    }
    let pick = |rng: &mut Rng| events[rng.below(events.len() as u64) as usize];
    let sessions = (0..n).map(|_| json!({"session": pick(&mut rng).event.session})).collect();
    out.push(Kind { name: "timeline: a session (50)".into(), tool: "timeline", calls: sessions });
    let windows = (0..n)
        .map(|_| {
            let t = pick(&mut rng).event.time_unix_ms;
            json!({"since": iso(t - 6 * 3_600_000), "until": iso(t + 6 * 3_600_000)})
        })
        .collect();
    out.push(Kind { name: "timeline: 12 hours (50)".into(), tool: "timeline", calls: windows });
    let gets = (0..n)
        .map(|_| {
            let e = pick(&mut rng);
            json!({"id": e.event.id})
        })
        .collect();
    out.push(Kind { name: "get: an event".into(), tool: "get", calls: gets });
    out
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[derive(Clone, Copy, Default)]
struct Lat {
    p50: f64,
    p99: f64,
}

fn lat(mut ms: Vec<f64>) -> Lat {
    ms.sort_by(f64::total_cmp);
    Lat { p50: pct(&ms, 0.5), p99: pct(&ms, 0.99) }
}

fn s(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_owned)
}

fn b(v: &Value, k: &str) -> bool {
    v.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn search_args(v: &Value) -> SearchArgs {
    SearchArgs { query: s(v, "query"), include_tools: b(v, "include_tools"), ..SearchArgs::default() }
}

fn timeline_args(v: &Value) -> TimelineArgs {
    TimelineArgs { since: s(v, "since"), until: s(v, "until"), session: s(v, "session"), ..TimelineArgs::default() }
}

/// The same call on the archive in-process, serialized as the server serializes it.
fn call_in_process(a: &Archive, tool: &str, v: &Value) -> usize {
    let r = match tool {
        "search" => a.search(&search_args(v)),
        "timeline" => a.timeline(&timeline_args(v)),
        "get" => a.get(&s(v, "id").unwrap()),
        _ => unreachable!(),
    };
    let v = r.unwrap_or_else(|e| panic!("{tool} {v}: {}", e.0));
    v.to_string().len()
}

fn server_command(home: &Path, agents: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(origin_tests::origin_bin());
    cmd.arg("--home").arg(home).arg("mcp").arg("--agents-home").arg(agents);
    cmd
}

type Client = RunningService<RoleClient, ClientConfig>;

async fn connect(home: &Path, agents: &Path) -> Client {
    connect_with_pid(home, agents).await.0
}

/// [`connect`], with the server's process id.
async fn connect_with_pid(home: &Path, agents: &Path) -> (Client, Option<u32>) {
    let transport = TokioChildProcess::new(server_command(home, agents)).expect("spawn origin mcp");
    let pid = transport.id();
    let info = ClientConfig::new(ClientCapabilities::default(), Implementation::new("origin-bench", "1.0"));
    (info.serve(transport).await.expect("initialize"), pid)
}

/// A process's resident memory in bytes, (anonymous, file-backed), from `/proc` (Linux only).
fn resident(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = |key: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(key))?;
        Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? << 10)
    };
    Some((kb("RssAnon:")?, kb("RssFile:")?))
}

/// Bytes of the files under `dir`, recursively.
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

async fn call(c: &Client, tool: &str, args: &Value) -> usize {
    let Value::Object(map) = args.clone() else { unreachable!() };
    let r = c.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(map)).await.expect("tools/call");
    assert_ne!(r.is_error, Some(true), "{tool} {args}: {:?}", r.content);
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.len())).sum()
}

/// Starts a server, answers one call of `tool` (a search, or a get), closes it (the server saves
/// its projections on the way out). A call made while the store is still opening is answered,
/// after a wait, with a tool error saying so; it is made again, as an agent would. Returns
/// (seconds to the initialize answer, seconds to the first call answered with results, calls
/// answered "still opening", and the server's resident memory then, [`resident`]).
async fn start_once(home: &Path, agents: &Path, tool: &'static str, query: &Value) -> (f64, f64, usize, Option<(u64, u64)>) {
    let t = Instant::now();
    let (c, pid) = connect_with_pid(home, agents).await;
    let init = t.elapsed().as_secs_f64();
    let Value::Object(map) = query.clone() else { unreachable!() };
    let mut waits = 0;
    loop {
        let r = c.call_tool(CallToolRequestParams::new(tool).with_arguments(map.clone())).await.expect("tools/call");
        if r.is_error != Some(true) {
            break;
        }
        let text: String = r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
        assert!(text.starts_with("Origin is still opening its store"), "{tool} {query}: {text}");
        waits += 1;
    }
    let first = t.elapsed().as_secs_f64();
    let memory = pid.and_then(resident);
    c.cancel().await.expect("close");
    (init, first, waits, memory)
}

fn main() {
    let n_calls = calls_per_kind();
    let n = corpus::events_target();
    let c = corpus::store(n, SEED).expect("corpus");
    let base = c.store.parent().unwrap().to_path_buf();
    let home: PathBuf = base.join("tools-home");
    let agents = base.join("tools-agents");
    std::fs::create_dir_all(&agents).expect("agents home");
    println!("# tools over stdio: {} searchable events ({} in all) from {} MB of logs; load {}", c.searchable_events, c.events, c.log_bytes >> 20, loadavg());

    let src = Journal::open(c.store.join("journal"), Options { access: Access::ReadOnly, ..Options::default() }).expect("journal");
    let batches = corpus::searchable_batches(&src, u64::MAX).expect("events");
    let events: Vec<&Located> = batches.iter().flatten().collect();
    let kinds = kinds(&events, n_calls);
    let first_query = kinds[0].calls[0].clone();
    drop(src);

    // Built (by cargo, if it is not up to date) before anything is timed.
    let bin = origin_tests::origin_bin();
    println!("server: {}", bin.display());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");

    // A first start: no projections, so the server replays the state and builds the index.
    fresh_home(&c.store, &home);
    let (cold_init, cold_first, cold_waits, _) = rt.block_on(start_once(&home, &agents, "search", &first_query));
    println!("first start (no projections): initialize {cold_init:.2} s, first search {cold_first:.2} s ({cold_waits} answered \"still opening\")");

    // Let the index settle as a long-running store's would (every merge the policy calls
    // for an idle store, which makes its segments one), then time the calls in-process.
    let t = Instant::now();
    let archive = Archive::open(&home, Some(Homes::under(&agents)), None, origin_projections::Verify::Ahead).expect("archive");
    let open_secs = t.elapsed().as_secs_f64();
    let mut merges = 0;
    while archive.merge_step(true).expect("merge") {
        merges += 1;
    }
    archive.save_snapshot().expect("snapshot");
    println!("in-process open {open_secs:.2} s; {merges} merges to settle the index");
    let mut inproc = Vec::new();
    for k in &kinds {
        for v in &k.calls {
            call_in_process(&archive, k.tool, v);
        }
        let ms = k
            .calls
            .iter()
            .map(|v| {
                let t = Instant::now();
                call_in_process(&archive, k.tool, v);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        inproc.push(lat(ms));
    }
    drop(archive);

    // The text index alone, as the index benchmark queries it (top 20).
    let journal = Journal::open(home.join("journal"), Options { access: Access::ReadOnly, ..Options::default() }).expect("journal");
    let (catalog, _) = Catalog::open(&home.join("projections").join("index"), &journal).expect("catalog");
    let all = Filters { include_tools: true, ..Filters::default() };
    let mut index_only = Vec::new();
    for k in kinds.iter().filter(|k| k.tool == "search") {
        let run = || -> Vec<f64> {
            k.calls
                .iter()
                .map(|v| {
                    let t = Instant::now();
                    let q = parse_query(v["query"].as_str().unwrap()).expect("query");
                    catalog.search(&q, &all, &|_| true, 20).expect("search");
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect()
        };
        run();
        index_only.push(lat(run()));
    }
    drop((catalog, journal));

    // Later starts: projections in place.
    let mut starts = Vec::new();
    for _ in 0..WARM_STARTS {
        starts.push(rt.block_on(start_once(&home, &agents, "search", &first_query)));
    }
    // And a get first: the state alone answers it (a search waits for the text index's
    // segments to be verified, in the background from the start).
    let first_get = kinds.iter().find(|k| k.tool == "get").expect("gets").calls[0].clone();
    let mut get_starts = Vec::new();
    for _ in 0..WARM_STARTS {
        get_starts.push(rt.block_on(start_once(&home, &agents, "get", &first_get)));
    }
    let get_firsts: Vec<f64> = get_starts.iter().map(|s| s.1).collect();
    assert!(get_starts.iter().all(|s| s.2 == 0), "a later start answered \"still opening\": {get_starts:?}");
    let inits: Vec<f64> = starts.iter().map(|s| s.0).collect();
    let firsts: Vec<f64> = starts.iter().map(|s| s.1).collect();
    assert!(starts.iter().all(|s| s.2 == 0), "a later start answered \"still opening\": {starts:?}");
    println!(
        "later starts ({WARM_STARTS}): initialize median {:.3} s, first search median {:.3} s (max {:.3} s); first get instead, median {:.3} s (max {:.3} s)",
        median(&inits),
        median(&firsts),
        firsts.iter().copied().fold(0.0, f64::max),
        median(&get_firsts),
        get_firsts.iter().copied().fold(0.0, f64::max)
    );
    // What a running server holds, against what the store holds on disk.
    let memories: Vec<(u64, u64)> = starts.iter().filter_map(|s| s.3).collect();
    if memories.len() == starts.len() {
        let mb = |b: f64| b / (1u64 << 20) as f64;
        let anon = median(&memories.iter().map(|m| m.0 as f64).collect::<Vec<_>>());
        let file = median(&memories.iter().map(|m| m.1 as f64).collect::<Vec<_>>());
        let index = dir_bytes(&home.join("projections").join("index")) as f64;
        let store = dir_bytes(&home) as f64;
        println!(
            "server resident after its first search (median of {}): anonymous {:.0} MB, file-backed {:.0} MB; on disk the store is {:.0} MB, its text index {:.0} MB: file-backed {:.3}x the index, anonymous {:.3}x the store",
            memories.len(),
            mb(anon),
            mb(file),
            mb(store),
            mb(index),
            file / index,
            anon / store
        );
    } else {
        println!("server resident memory: not measured (no /proc)");
    }

    // Over stdio.
    let stdio: Vec<Lat> = rt.block_on(async {
        let client = connect(&home, &agents).await;
        let mut out = Vec::new();
        for k in &kinds {
            for v in &k.calls {
                call(&client, k.tool, v).await;
            }
            let mut ms = Vec::new();
            for v in &k.calls {
                let t = Instant::now();
                call(&client, k.tool, v).await;
                ms.push(t.elapsed().as_secs_f64() * 1e3);
            }
            out.push(lat(ms));
        }
        client.cancel().await.expect("close");
        out
    });

    let mut rows = Vec::new();
    for (i, k) in kinds.iter().enumerate() {
        let idx = if k.tool == "search" { index_only.get(i).copied() } else { None };
        let (io, st) = (inproc[i], stdio[i]);
        rows.push(vec![
            k.name.clone(),
            idx.map_or("-".into(), |l| format!("{:.2} / {:.2}", l.p50, l.p99)),
            format!("{:.2} / {:.2}", io.p50, io.p99),
            format!("{:.2} / {:.2}", st.p50, st.p99),
            format!("{:.2}x", st.p50 / io.p50),
            idx.map_or("-".into(), |l| format!("{:.2}x", st.p50 / l.p50)),
        ]);
    }
    println!(
        "\n{}",
        table(&["call", "index alone p50 / p99 ms", "in-process p50 / p99 ms", "stdio p50 / p99 ms", "stdio / in-process (p50)", "stdio / index (p50)"], &rows)
    );
    println!(
        "\n{}",
        table(
            &["start", "initialize answered", "first search answered", "first get answered (other starts)"],
            &[
                vec!["first (no projections: replay + index build)".into(), format!("{cold_init:.2} s"), format!("{cold_first:.2} s"), "-".into()],
                vec![format!("later (median of {WARM_STARTS})"), format!("{:.3} s", median(&inits)), format!("{:.3} s", median(&firsts)), format!("{:.3} s", median(&get_firsts))],
            ]
        )
    );
}
