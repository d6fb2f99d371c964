//! Writes seed inputs for every fuzz target into `fuzz/corpus/<target>/` (gitignored), from
//! the test fixtures (`tests/fixtures/`: agent logs, memory files, a version-1 journal) and
//! from journals written here on the simulated file system.
//!
//! Seeds matter most where the fuzzer is blind: zstd is C code without coverage feedback, so
//! it never finds a zstd frame by itself, and agent log lines are deep JSON.
//!
//! Run (stable, no fuzzing flags needed), from the repository root:
//! `cargo run --manifest-path fuzz/Cargo.toml --example make_seeds`

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use origin_engine::frame::{check_frame, encode_frame, Check, FLAG_ZSTD, KIND_SEAL};
use origin_engine::index::encode_index;
use origin_engine::journal::{Journal, NewRecord, Options};
use origin_engine::segment::SEGMENT_HEADER_SIZE;
use origin_engine::sim::SimFs;
use origin_ingest::adapter::zcode::Zcode;
use origin_ingest::adapter::Adapter;
use origin_ingest::source::Homes;

/// Seeds stay small: libFuzzer's default input size limit grows to the largest seed.
const CHUNK_BYTES_MAX: usize = 6000;

struct Out {
    root: PathBuf,
    count: usize,
}

impl Out {
    fn put(&mut self, target: &str, name: &str, bytes: &[u8]) {
        let dir = self.root.join(target);
        fs::create_dir_all(&dir).expect("create corpus dir");
        fs::write(dir.join(format!("seed-{name}")), bytes).expect("write seed");
        self.count += 1;
    }

    /// `mode` followed by `text`, cut at line ends into pieces of at most `CHUNK_BYTES_MAX`.
    fn put_lines(&mut self, target: &str, name: &str, mode: u8, text: &[u8]) {
        let mut start = 0;
        let mut n = 0;
        while start < text.len() {
            let mut end = (start + CHUNK_BYTES_MAX).min(text.len());
            if end < text.len() {
                if let Some(nl) = text[start..end].iter().rposition(|&b| b == b'\n') {
                    end = start + nl + 1;
                }
            }
            let mut seed = vec![mode];
            seed.extend_from_slice(&text[start..end]);
            self.put(target, &format!("{name}-{n}"), &seed);
            start = end;
            n += 1;
        }
    }
}

fn read(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every frame of a segment after its header: (kind, version, flags, stored payload).
fn frames(seg: &[u8]) -> Vec<(u8, u8, u16, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pos = SEGMENT_HEADER_SIZE as usize;
    while pos < seg.len() {
        let Check::Valid(f) = check_frame(&seg[pos..]) else { break };
        out.push((f.kind, f.kind_version, f.flags, f.payload.to_vec()));
        pos += f.frame_len;
    }
    out
}

/// A journal written on the simulated file system: its segment files' bytes, oldest first.
fn sim_journal(segment_size: u64, records: Vec<Vec<NewRecord>>) -> Vec<Vec<u8>> {
    let fs = SimFs::new(7);
    let dir = Path::new("/seed/journal");
    let opts = Options { segment_size_bytes_max: segment_size, new_store_identity: Some(([7; 16], 0)), ..Options::default() };
    let j = Journal::open_with(Arc::new(fs.clone()), dir, opts).expect("open");
    for batch in records {
        j.append(batch).expect("append");
    }
    j.segment_paths().iter().map(|p| fs.read_file(p).expect("read segment")).collect()
}

fn main() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixtures = fuzz.join("../tests/fixtures");
    let home = fixtures.join("agent-home");
    let mut out = Out { root: fuzz.join("corpus"), count: 0 };

    // Journals: the version-1 fixture, and ones written here (compressed records, a roll).
    let mut segments: Vec<(String, Vec<u8>)> = Vec::new();
    for name in ["00000000000000000000.seg", "00000000000000000010.seg"] {
        segments.push((format!("fixture-{name}"), read(&fixtures.join("journal-v1/journal").join(name))));
    }
    let big = "a line of tool output that repeats\n".repeat(400).into_bytes();
    let written = sim_journal(
        1 << 20,
        vec![
            vec![NewRecord::scratch(b"first".to_vec()), NewRecord::scratch(big.clone())],
            vec![NewRecord::scratch(vec![0x5a; 100])],
        ],
    );
    segments.extend(written.into_iter().enumerate().map(|(i, s)| (format!("sim-{i}"), s)));
    let rolled = sim_journal(4096, (0..12u8).map(|i| vec![NewRecord::scratch(vec![i; 700])]).collect());
    segments.extend(rolled.into_iter().take(2).enumerate().map(|(i, s)| (format!("sim-rolled-{i}"), s)));

    for (name, seg) in &segments {
        // journal_open: read-write, read-only, and named after the header's base offset.
        for mode in [0u8, 4, 8, 12] {
            let mut seed = vec![mode];
            seed.extend_from_slice(seg);
            out.put("journal_open", &format!("{name}-m{mode}"), &seed);
        }
        out.put("segment_header", name, &[&[0u8][..], &seg[..SEGMENT_HEADER_SIZE as usize]].concat());
        // frame: the frames after the header, expecting the first frame's offset (mode 2).
        let body = &seg[SEGMENT_HEADER_SIZE as usize..];
        out.put("frame", name, &[&[2u8, 0, 0, 0][..], body].concat());
        for (i, (kind, version, flags, payload)) in frames(seg).into_iter().enumerate() {
            if kind == KIND_SEAL {
                continue;
            }
            if flags & FLAG_ZSTD != 0 {
                // The stored zstd frame for decompress_into, and the payload it holds.
                out.put("codec_decode", &format!("{name}-{i}-zstd"), &[&[kind, version][..], &payload].concat());
                let mut plain = Vec::new();
                origin_engine::codec::decompress_into(&payload, &mut plain, 0).expect("fixture decompresses");
                out.put("codec_decode", &format!("{name}-{i}"), &[&[kind, version][..], &plain].concat());
            } else {
                out.put("codec_decode", &format!("{name}-{i}"), &[&[kind, version][..], &payload].concat());
            }
        }
    }
    // A frame sequence ending in a seal, and a compressed frame.
    let mut seq = vec![0u8, 0, 0, 0];
    for i in 0..3u64 {
        encode_frame(&mut seq, i, 1_760_000_000_000, 250, 1, 0, format!("record {i}").as_bytes());
    }
    encode_frame(&mut seq, 3, 1_760_000_000_000, KIND_SEAL, 1, 0, &[]);
    out.put("frame", "sealed", &seq);

    // Sparse index: the fixture's (mode 2: checked against its own base and length) and one
    // built for mode 0's base 0 and length 1 MiB.
    let idx = read(&fixtures.join("journal-v1/journal/00000000000000000000.idx"));
    out.put("sparse_index", "fixture", &[&[2u8][..], &10u64.to_le_bytes(), &idx].concat());
    let entries = [(0u64, 64u64), (40, 70_000), (90, 140_000), (200, 900_000)];
    out.put("sparse_index", "built", &[&[0u8][..], &90u64.to_le_bytes(), &encode_index(0, 1 << 20, &entries)].concat());

    // Adapters: the fixture logs, with the mode byte that picks the matching kind of file.
    let walk = |dir: &Path, pred: &dyn Fn(&Path) -> bool| -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if pred(&p) {
                    found.push(p);
                }
            }
        }
        found.sort();
        found
    };
    let stem = |p: &Path| p.file_name().and_then(|n| n.to_str()).unwrap_or("x").chars().take(24).collect::<String>();
    for p in walk(&home.join(".claude/projects"), &|p| p.extension().is_some_and(|e| e == "jsonl")) {
        out.put_lines("adapter_claude", &stem(&p), 0x80, &read(&p));
    }
    for p in walk(&home.join(".codex"), &|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("rollout-"))) {
        let bytes = read(&p);
        if p.extension().is_some_and(|e| e == "zst") {
            let mut plain = Vec::new();
            if origin_engine::codec::decompress_into(&bytes, &mut plain, 0).is_ok() {
                out.put_lines("adapter_codex", &stem(&p), 0x81, &plain);
            }
        } else {
            out.put_lines("adapter_codex", &stem(&p), 0x80, &bytes);
        }
    }
    out.put_lines("adapter_codex", "session_index", 0x83, &read(&home.join(".codex/session_index.jsonl")));
    for p in walk(&home.join(".cursor/projects"), &|p| p.extension().is_some_and(|e| e == "jsonl" || e == "txt")) {
        let mode = match (p.extension().is_some_and(|e| e == "txt"), p.to_string_lossy().contains("/subagents/")) {
            (true, _) => 0x93,
            (false, true) => 0x81,
            (false, false) => 0x80,
        };
        out.put_lines("adapter_cursor", &stem(&p), mode, &read(&p));
    }
    for p in walk(&home.join(".grok/sessions"), &|p| p.file_name().is_some_and(|n| n == "chat_history.jsonl")) {
        out.put_lines("adapter_grok", &format!("{}-{}", p.parent().map(|d| stem(d)).unwrap_or_default(), 0), 0x90, &read(&p));
    }
    let (files, problems) = Zcode.discover(&Homes::under(&home));
    assert!(problems.is_empty(), "{problems:?}");
    for f in files {
        let lines = Zcode.export(&f).expect("export");
        out.put_lines("adapter_zcode", &f.mirror.rsplit('/').next().unwrap_or("s").replace('.', "_"), 0x80, &lines);
    }

    // Memory files: each alone (as a new file) and with its later version.
    for p in walk(&home, &|p| p.extension().is_some_and(|e| e == "md" || e == "mdc") || p.ends_with(".cursorrules")) {
        let mut seed = vec![0u8];
        seed.extend_from_slice(&read(&p));
        out.put("memory_items", &stem(&p), &seed[..seed.len().min(CHUNK_BYTES_MAX)]);
    }
    let later = fixtures.join("agent-home-later");
    for rel in ["demo-app/CLAUDE.md", ".claude/projects/-home-dev-demo-app/memory/project_healthz.md"] {
        let seed = [read(&home.join(rel)), vec![0], read(&later.join(rel))].concat();
        out.put("memory_items", &format!("later-{}", stem(Path::new(rel))), &seed);
    }

    // Snapshot: the state of the fixture journal with `ingested` version 2 records, saved as
    // the projections save it (mode 1: the harness keeps its checksums right under mutation).
    // A copy: opening a journal, even read-only, creates its lock file, and the fixture stays
    // as committed.
    let copy = std::env::temp_dir().join(format!("origin-seed-journal-{}", std::process::id()));
    fs::create_dir_all(&copy).expect("mkdir");
    for e in fs::read_dir(fixtures.join("journal-v1-ingested-v2/journal")).expect("fixture journal") {
        let e = e.expect("entry");
        fs::copy(e.path(), copy.join(e.file_name())).expect("copy");
    }
    let journal = Journal::open(&copy, Options { access: origin_engine::journal::Access::ReadOnly, ..Options::default() }).expect("fixture journal");
    let state = origin_projections::State::replay(&journal, origin_projections::Until::End).expect("replay");
    let tmp = std::env::temp_dir().join(format!("origin-seed-snapshot-{}", std::process::id()));
    state.save_snapshot(&journal, &origin_engine::vfs::OsFs, &tmp).expect("save snapshot");
    out.put("snapshot", "fixture-ingested-v2", &[&[1u8][..], &read(&tmp)].concat());
    let _ = fs::remove_file(&tmp);
    drop(journal);
    let _ = fs::remove_dir_all(&copy);

    // An index segment, as a commit writes it: as it is, and in each of the target's modes.
    let idx = std::env::temp_dir().join(format!("origin-seed-index-{}", std::process::id()));
    let _ = fs::remove_dir_all(&idx);
    {
        use origin_projections::index::{DocMeta, Index, Scope};
        let mut index = Index::open(&idx).expect("index");
        let texts = ["release workflow 中文 🚀", "tag from master", "releases released", "数据库迁移失败，需要回滚", "ログの形式を確認しました"];
        for (i, t) in texts.iter().enumerate() {
            let meta = DocMeta {
                scope: if i % 4 == 3 { Scope::Entry } else { Scope::Event },
                kind: (i % 3) as u8,
                tool: i % 2 == 1,
                time_unix_ms: 1_700_000_000_000 + i as i64,
                source: Some("codex".into()),
                project: (i % 2 == 0).then(|| "demo".into()),
                key: format!("codex:{i}"),
                record: i as u64,
                position: 0,
            };
            index.add(i as u32, &meta, t).expect("add");
        }
        index.commit(1).expect("commit");
    }
    let segment = read(&idx.join("00000000000000000000.segment"));
    for mode in [0u8, 1, 3, 7] {
        out.put("index_segment", &format!("commit-m{mode}"), &[&[mode][..], &segment[..]].concat());
    }
    let _ = fs::remove_dir_all(&idx);

    // Queries, each with documents to search: words, phrases, CJK, partial matches.
    let docs = "the build failed on CI because the cache was cold\n\
                we decided to keep the journal append-only\n\
                数据库迁移失败，需要回滚\n\
                ログの形式を確認しました\n\
                테스트가 통과했습니다\n\
                fixed the flaky test in journal_crash 🎉\n\
                ＦＵＬＬ－ＷＩＤＴＨ letters and the phrase across a\nline break\n\
                call parseQuery on the HTTPServer, then getUserById and XMLHttpRequest";
    for (i, q) in ["build failed", "\"build failed\"", "数据库", "迁移失败", "ログ 形式", "테스트", "why did the builds fail", "\"phrase across a line\"", "ｆｕｌｌ", "🎉", "journal -append", "query", "parseQuery", "http server", "\"user by\""].iter().enumerate() {
        for mode in [0u8, 1 | 2 | (19 << 2)] {
            out.put("query", &format!("{i}-m{mode}"), &[&[mode][..], q.as_bytes(), &[0], docs.as_bytes()].concat());
        }
    }

    println!("wrote {} seeds under {}", out.count, out.root.display());
}
