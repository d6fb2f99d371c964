//! A seeded generator of fake Claude Code and Codex session logs, sized and shaped like real ones, for the ingest benchmark.
//!
//! It writes a home directory the way the agents lay theirs out:
//! `.claude/projects/<escaped cwd>/<session uuid>.jsonl` and
//! `.codex/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<uuid>.jsonl`, one JSON record per
//! line, with the fields the adapters read (see `/work/shared/docs/agent-log-formats.md`
//! sections 1 and 2).
//!
//! What the corpus looks like:
//! - Claude Code gets 60% of the bytes and Codex 40%. Each source's budget is filled by
//!   sessions of 150 to 4000 lines (log-uniform), so 1 GiB gives a few hundred files. The last
//!   session of each source is cut where the budget runs out.
//! - Most lines are under 2 KiB: prompts, assistant text, thinking and reasoning, tool calls
//!   with JSON input, session-state and bookkeeping lines. Tool results are log-normal
//!   (median 700 B, sigma 1.8), cut at 256 KiB, so a few percent are tens of KiB.
//! - About 10% of prompts, assistant texts and thinking blocks are Chinese or Japanese. Tool
//!   input and output carry code (Rust, TypeScript, Python), shell output and `cat -n` listings.
//! - Signatures and encrypted reasoning are random base64, which does not compress. The rest
//!   comes from small vocabularies. A whole corpus compresses about 4.6x with zstd level 3.
//!   Real logs, which repeat more, may compress better.
//!
//! The same seed and target size always give the same bytes.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::Rng;

/// Corpus size when `ORIGIN_BENCH_INGEST_BYTES` is not set: 1 GiB.
pub const CORPUS_SIZE_BYTES_DEFAULT: u64 = 1 << 30;
/// Largest tool output text in one record.
pub const TOOL_OUTPUT_SIZE_BYTES_MAX: usize = 256 * 1024;
/// Share of the corpus bytes that is Claude Code (the rest is Codex), in percent.
const CLAUDE_SHARE_PERCENT: u64 = 60;
/// Session length range, in lines.
const SESSION_LINES_MIN: u64 = 150;
const SESSION_LINES_MAX: u64 = 4000;
/// Claude keeps a second copy of a tool result in `toolUseResult`; this generator does so for
/// outputs up to this size (larger ones get a short summary there).
const TOOL_RESULT_COPY_SIZE_BYTES_MAX: usize = 32 * 1024;

/// The corpus size to generate: `ORIGIN_BENCH_INGEST_BYTES`, else 1 GiB.
pub fn corpus_size_bytes() -> u64 {
    std::env::var("ORIGIN_BENCH_INGEST_BYTES").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(CORPUS_SIZE_BYTES_DEFAULT)
}

/// Counts over every line written, to show the corpus's shape next to the results.
#[derive(Clone, Debug, Default)]
pub struct LineStats {
    /// Lines under 2 KiB (without the newline).
    pub lines_under_2k: u64,
    /// Lines of 64 KiB or more.
    pub lines_64k_or_more: u64,
    /// Longest line, in bytes.
    pub line_size_max: u64,
    /// Tool results (Claude `tool_result` blocks, Codex `*_output` items).
    pub tool_results: u64,
    /// Tool results whose output text is 16 KiB or more.
    pub tool_results_16k_or_more: u64,
    /// Prompts, assistant texts and thinking blocks.
    pub messages: u64,
    /// Of those, in Chinese or Japanese.
    pub messages_cjk: u64,
}

/// What was generated.
#[derive(Clone, Debug, Default)]
pub struct Corpus {
    /// The fake home directory (pass to `Homes::under`).
    pub home: PathBuf,
    /// Every log file written, in the order written.
    pub files: Vec<PathBuf>,
    /// Total bytes of all files.
    pub bytes: u64,
    /// Total lines (every line ends with a newline).
    pub lines: u64,
    /// Claude Code session files.
    pub claude_files: u64,
    /// Claude Code bytes.
    pub claude_bytes: u64,
    /// Codex rollout files.
    pub codex_files: u64,
    /// Codex bytes.
    pub codex_bytes: u64,
    /// The shape of the lines.
    pub stats: LineStats,
}

/// Writes a corpus of about `size_bytes` (it stops at the first line that reaches the size)
/// under `home`, which should be empty.
pub fn generate(home: &Path, size_bytes: u64, seed: u64) -> io::Result<Corpus> {
    let mut g = Gen { rng: Rng::new(seed) };
    let mut corpus = Corpus { home: home.to_path_buf(), ..Corpus::default() };
    let claude_budget = size_bytes * CLAUDE_SHARE_PERCENT / 100;
    // 2026-09-01T08:00:00Z; sessions move forward in time.
    let mut clock_ms: i64 = 1_788_249_600_000;
    let mut session = 0u64;
    while corpus.claude_bytes < claude_budget {
        let project = &PROJECTS[g.below(PROJECTS.len() as u64) as usize];
        let id = g.uuid();
        let dir = home.join(".claude/projects").join(escape_cwd(&project_cwd(project)));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{id}.jsonl"));
        let lines = g.session_lines();
        let mut w = LineWriter::create(&path)?;
        let budget = claude_budget - corpus.claude_bytes;
        clock_ms += 3_600_000 + g.below(20 * 3_600_000) as i64;
        claude_session(&mut g, &mut w, project, &id, clock_ms, lines, budget, session)?;
        corpus.claude_files += 1;
        corpus.claude_bytes += w.finish(&mut corpus)?;
        corpus.files.push(path);
        session += 1;
    }
    while corpus.codex_bytes < size_bytes - claude_budget {
        let project = &PROJECTS[g.below(PROJECTS.len() as u64) as usize];
        let id = g.uuid();
        clock_ms += 3_600_000 + g.below(20 * 3_600_000) as i64;
        let t = iso(clock_ms);
        let dir = home.join(".codex/sessions").join(&t[0..4]).join(&t[5..7]).join(&t[8..10]);
        std::fs::create_dir_all(&dir)?;
        let stamp = t[..19].replace(':', "-");
        let path = dir.join(format!("rollout-{stamp}-{id}.jsonl"));
        let lines = g.session_lines();
        let mut w = LineWriter::create(&path)?;
        let budget = size_bytes - claude_budget - corpus.codex_bytes;
        codex_session(&mut g, &mut w, project, &id, clock_ms, lines, budget)?;
        corpus.codex_files += 1;
        corpus.codex_bytes += w.finish(&mut corpus)?;
        corpus.files.push(path);
    }
    corpus.bytes = corpus.claude_bytes + corpus.codex_bytes;
    Ok(corpus)
}

/// Writes lines to one file and counts them; stops taking lines once its byte budget is used.
struct LineWriter {
    out: BufWriter<File>,
    bytes: u64,
    lines: u64,
    stats: LineStats,
    buf: Vec<u8>,
}

impl LineWriter {
    fn create(path: &Path) -> io::Result<LineWriter> {
        Ok(LineWriter { out: BufWriter::with_capacity(1 << 20, File::create(path)?), bytes: 0, lines: 0, stats: LineStats::default(), buf: Vec::new() })
    }

    fn line(&mut self, v: &Value) -> io::Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, v).map_err(io::Error::other)?;
        let n = self.buf.len() as u64;
        self.stats.lines_under_2k += u64::from(n < 2048);
        self.stats.lines_64k_or_more += u64::from(n >= 64 * 1024);
        self.stats.line_size_max = self.stats.line_size_max.max(n);
        self.buf.push(b'\n');
        self.out.write_all(&self.buf)?;
        self.bytes += n + 1;
        self.lines += 1;
        Ok(())
    }

    /// Flushes, adds this file's counts to the corpus; returns its bytes.
    fn finish(mut self, corpus: &mut Corpus) -> io::Result<u64> {
        self.out.flush()?;
        corpus.lines += self.lines;
        let (s, t) = (&mut corpus.stats, &self.stats);
        s.lines_under_2k += t.lines_under_2k;
        s.lines_64k_or_more += t.lines_64k_or_more;
        s.line_size_max = s.line_size_max.max(t.line_size_max);
        s.tool_results += t.tool_results;
        s.tool_results_16k_or_more += t.tool_results_16k_or_more;
        s.messages += t.messages;
        s.messages_cjk += t.messages_cjk;
        Ok(self.bytes)
    }
}

struct Project {
    name: &'static str,
    lang: Lang,
    branch: &'static str,
}

#[derive(Clone, Copy)]
enum Lang {
    Rust,
    Ts,
    Py,
}

static PROJECTS: [Project; 10] = [
    Project { name: "demo-app", lang: Lang::Ts, branch: "feat/rate-limit" },
    Project { name: "ledger_sync", lang: Lang::Rust, branch: "main" },
    Project { name: "origin", lang: Lang::Rust, branch: "ingest-bench" },
    Project { name: "payments-api", lang: Lang::Ts, branch: "fix/refund-rounding" },
    Project { name: "data-pipeline", lang: Lang::Py, branch: "main" },
    Project { name: "ml-experiments", lang: Lang::Py, branch: "exp/lr-sweep" },
    Project { name: "mobile-app", lang: Lang::Ts, branch: "release/4.2" },
    Project { name: "infra", lang: Lang::Py, branch: "chore/terraform-1.9" },
    Project { name: "search-engine", lang: Lang::Rust, branch: "feat/cjk-tokenizer" },
    Project { name: "docs-site", lang: Lang::Ts, branch: "main" },
];

fn project_cwd(p: &Project) -> String {
    format!("/home/dev/src/{}", p.name)
}

/// Claude Code's folder name for a working directory: every non-alphanumeric becomes `-`.
pub fn escape_cwd(cwd: &str) -> String {
    cwd.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// `YYYY-MM-DDThh:mm:ss.mmmZ` for Unix milliseconds.
pub fn iso(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days to civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z", sod / 3600, sod / 60 % 60, sod % 60, ms.rem_euclid(1000))
}

/// Random text of the kinds agent logs hold.
struct Gen {
    rng: Rng,
}

impl Gen {
    fn below(&mut self, n: u64) -> u64 {
        self.rng.below(n)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.rng.below(100) < percent
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.rng.below(hi - lo + 1)
    }

    fn unit(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.rng.below(xs.len() as u64) as usize]
    }

    /// A log-normal size: `median * e^(sigma * N(0,1))`, clamped.
    fn lognormal(&mut self, median: f64, sigma: f64, min: usize, max: usize) -> usize {
        let u1 = self.unit().max(1e-12);
        let u2 = self.unit();
        let n = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        ((median * (sigma * n).exp()) as usize).clamp(min, max)
    }

    fn session_lines(&mut self) -> u64 {
        let (lo, hi) = ((SESSION_LINES_MIN as f64).ln(), (SESSION_LINES_MAX as f64).ln());
        (lo + (hi - lo) * self.unit()).exp() as u64
    }

    fn hex(&mut self, n: usize) -> String {
        const H: &[u8] = b"0123456789abcdef";
        (0..n).map(|_| H[self.rng.below(16) as usize] as char).collect()
    }

    fn alnum(&mut self, n: usize) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..n).map(|_| A[self.rng.below(A.len() as u64) as usize] as char).collect()
    }

    fn base64(&mut self, n: usize) -> String {
        const B: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        (0..n).map(|_| B[self.rng.below(64) as usize] as char).collect()
    }

    fn uuid(&mut self) -> String {
        format!("{}-{}-{}-{}-{}", self.hex(8), self.hex(4), self.hex(4), self.hex(4), self.hex(12))
    }

    /// An identifier: from the project's words half the time, else made of vocabulary words
    /// (so identifiers are as many and as skewed as words).
    fn ident(&mut self) -> String {
        if self.chance(50) {
            let a = self.pick(IDENTS);
            return if self.chance(50) { format!("{a}_{}", self.pick(IDENTS)) } else { a.to_owned() };
        }
        let v = &crate::vocab::vocab().english;
        let a = v.draw(&mut self.rng).replace('-', "_");
        if self.chance(50) { format!("{a}_{}", v.draw(&mut self.rng).replace('-', "_")) } else { a }
    }

    fn type_name(&mut self) -> String {
        let cap = |s: &str| s.get(..1).map_or(String::new(), |c| c.to_uppercase() + &s[1..]);
        format!("{}{}", cap(self.pick(IDENTS)), cap(self.pick(TYPE_SUFFIXES)))
    }

    fn path(&mut self, p: &Project) -> String {
        let ext = match p.lang {
            Lang::Rust => "rs",
            Lang::Ts => "ts",
            Lang::Py => "py",
        };
        format!("{}/{}/{}/{}.{ext}", project_cwd(p), self.pick(DIRS), self.pick(IDENTS), self.pick(IDENTS))
    }

    /// English prose of about `bytes`, with inline code now and then: words drawn from the
    /// Zipfian vocabulary of [`crate::vocab`].
    fn prose(&mut self, bytes: usize) -> String {
        let v = &crate::vocab::vocab().english;
        let mut s = String::with_capacity(bytes + 64);
        while s.len() < bytes {
            let n = self.range(6, 20);
            for i in 0..n {
                let w = v.draw(&mut self.rng);
                if i == 0 {
                    s.push_str(&w[..1].to_uppercase());
                    s.push_str(&w[1..]);
                } else if self.chance(6) {
                    s.push_str(" `");
                    s.push_str(&self.ident());
                    s.push('`');
                } else {
                    s.push(' ');
                    s.push_str(w);
                }
            }
            s.push_str(if self.chance(10) { ":\n- " } else if self.chance(15) { ".\n\n" } else { ". " });
        }
        s
    }

    /// Chinese, Japanese or Korean text of about `bytes`, with identifiers as people write
    /// them: a fifth from hand-written sentences, the rest drawn from the vocabularies of
    /// [`crate::vocab`].
    fn cjk(&mut self, bytes: usize) -> String {
        let which = self.below(10);
        let mut s = String::with_capacity(bytes + 64);
        while s.len() < bytes {
            match which {
                0..=5 if self.chance(20) => s.push_str(self.pick(ZH)),
                0..=5 => self.chinese_sentence(&mut s),
                6..=8 if self.chance(20) => s.push_str(self.pick(JA)),
                6..=8 => self.japanese_sentence(&mut s),
                _ => self.korean_sentence(&mut s),
            }
            if self.chance(25) {
                s.push_str(" `");
                s.push_str(&self.ident());
                s.push_str("` ");
            }
            if self.chance(10) {
                s.push('\n');
            }
        }
        s
    }

    fn chinese_sentence(&mut self, s: &mut String) {
        let v = &crate::vocab::vocab().chinese;
        let n = self.range(4, 14);
        for i in 0..n {
            s.push_str(v.draw(&mut self.rng));
            if i + 1 < n && self.chance(12) {
                s.push('，');
            }
        }
        s.push('。');
    }

    fn japanese_sentence(&mut self, s: &mut String) {
        let v = &crate::vocab::vocab().japanese;
        let n = self.range(3, 9);
        for _ in 0..n {
            s.push_str(v.draw(&mut self.rng));
            s.push_str(self.pick(crate::vocab::JA_PARTICLES));
        }
        s.push('。');
    }

    fn korean_sentence(&mut self, s: &mut String) {
        let v = &crate::vocab::vocab().korean;
        let n = self.range(3, 10);
        for i in 0..n {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(v.draw(&mut self.rng));
        }
        s.push_str(". ");
    }

    /// A message text: 10% Chinese, Japanese or Korean, else English; counted in `stats`.
    fn message(&mut self, bytes: usize, stats: &mut LineStats) -> String {
        stats.messages += 1;
        if self.chance(10) {
            stats.messages_cjk += 1;
            self.cjk(bytes)
        } else {
            self.prose(bytes)
        }
    }

    fn code_line(&mut self, lang: Lang, out: &mut String) {
        let (a, b, t) = (self.ident(), self.ident(), self.type_name());
        let n = self.below(1000);
        let line = match (lang, self.below(12)) {
            (_, 0) if self.chance(20) => format!("// {}", self.cjk(30)),
            (Lang::Rust, 0) => format!("    // {}", self.prose(40).trim_end()),
            (Lang::Rust, 1) => format!("pub fn {a}(&self, {b}: &{t}) -> Result<Vec<{t}>> {{"),
            (Lang::Rust, 2) => format!("    let {a} = self.{b}.get(&key).ok_or(Error::NotFound({n}))?;"),
            (Lang::Rust, 3) => format!("    if {a}.len() > {n} {{"),
            (Lang::Rust, 4) => format!("        return Err(Error::Invalid(format!(\"{a} over {{}}\", {b})));"),
            (Lang::Rust, 5) => "    }".to_owned(),
            (Lang::Rust, 6) => format!("    Ok({a}.into_iter().map({t}::from).collect())"),
            (Lang::Rust, 7) => "}".to_owned(),
            (Lang::Rust, 8) => format!("#[derive(Debug, Clone, PartialEq)]\npub struct {t} {{"),
            (Lang::Rust, 9) => format!("    pub {a}: Option<{t}>,"),
            (Lang::Rust, 10) => format!("use crate::{a}::{{{t}, {b}}};"),
            (Lang::Rust, _) => format!("        {a}.push_str(&{b}[..{n}.min({b}.len())]);"),
            (Lang::Ts, 0) => format!("  // {}", self.prose(40).trim_end()),
            (Lang::Ts, 1) => format!("export async function {a}({b}: {t}): Promise<{t}[]> {{"),
            (Lang::Ts, 2) => format!("  const {a} = await db.selectFrom(\"{b}\").selectAll().limit({n}).execute();"),
            (Lang::Ts, 3) => format!("  if (!{a}) return res.status(400).json({{ error: \"missing {b}\" }});"),
            (Lang::Ts, 4) => format!("  for (const {a} of {b}) {{"),
            (Lang::Ts, 5) => "  }".to_owned(),
            (Lang::Ts, 6) => format!("  return {a}.map((x) => ({{ ...x, {b}: x.{b} ?? {n} }}));"),
            (Lang::Ts, 7) => "}".to_owned(),
            (Lang::Ts, 8) => format!("import {{ {t} }} from \"../{a}/{b}\";"),
            (Lang::Ts, 9) => format!("export interface {t} {{\n  {a}: string;\n  {b}?: number;\n}}"),
            (Lang::Ts, 10) => format!("    expect({a}({b})).toEqual({n});"),
            (Lang::Ts, _) => format!("    logger.info(`{a} ${{{b}.length}} rows`);"),
            (Lang::Py, 0) => format!("    # {}", self.prose(40).trim_end()),
            (Lang::Py, 1) => format!("def {a}({b}, limit={n}):"),
            (Lang::Py, 2) => format!("    \"\"\"{}\"\"\"", self.prose(50).trim_end()),
            (Lang::Py, 3) => format!("    for {a} in {b}:"),
            (Lang::Py, 4) => format!("        if {a}.{b} is None:\n            continue"),
            (Lang::Py, 5) => format!("    return [{a} for {a} in {b} if {a}]"),
            (Lang::Py, 6) => format!("class {t}:"),
            (Lang::Py, 7) => format!("    {a}: Optional[{t}] = None"),
            (Lang::Py, 8) => format!("from .{a} import {t}"),
            (Lang::Py, 9) => format!("        df[\"{a}\"] = df[\"{b}\"].rolling({n}).mean()"),
            (Lang::Py, 10) => format!("    assert {a}({b}) == {n}"),
            (Lang::Py, _) => format!("        log.info(\"%s rows in {a}\", len({b}))"),
        };
        out.push_str(&line);
        out.push('\n');
    }

    /// Source code of about `bytes`.
    fn code(&mut self, lang: Lang, bytes: usize) -> String {
        let mut s = String::with_capacity(bytes + 128);
        while s.len() < bytes {
            self.code_line(lang, &mut s);
        }
        s
    }

    /// A `cat -n` listing of about `bytes`, as the Read tool returns it.
    fn listing(&mut self, lang: Lang, bytes: usize) -> String {
        let code = self.code(lang, bytes.saturating_sub(bytes / 8).max(16));
        let mut s = String::with_capacity(bytes + 64);
        for (i, l) in code.lines().enumerate() {
            s.push_str(&format!("{:>6}\t{l}\n", i + 1));
        }
        s
    }

    /// Command output of about `bytes`: test runs, compiler output, search hits, git log.
    fn shell_output(&mut self, p: &Project, bytes: usize) -> String {
        let mut s = String::with_capacity(bytes + 128);
        let kind = self.below(5);
        while s.len() < bytes {
            let (a, b) = (self.ident(), self.ident());
            match kind {
                0 => s.push_str(&format!("test {a}::tests::{b}_{} ... {}\n", self.pick(IDENTS), if self.chance(97) { "ok" } else { "FAILED" })),
                1 => s.push_str(&format!("{}:{}:{}\n", self.path(p), self.range(1, 900), {
                    let mut l = String::new();
                    self.code_line(p.lang, &mut l);
                    l.trim_end().to_owned()
                })),
                2 => {
                    s.push_str(&format!("commit {}\nAuthor: {} <{}@acme.test>\nDate:   Mon Oct 19 10:00:00 2026 +0000\n\n    ", self.hex(40), self.pick(NAMES), self.pick(IDENTS)));
                    let msg = self.prose(60);
                    s.push_str(msg.trim_end());
                    s.push_str("\n\n");
                }
                3 => s.push_str(&format!("   Compiling {a} v0.{}.{} ({}/{b})\n", self.below(30), self.below(10), project_cwd(p))),
                _ => s.push_str(&format!(
                    "{} | {:>4} {}\n",
                    self.path(p),
                    self.below(200),
                    "+".repeat(self.range(1, 30) as usize) + &"-".repeat(self.below(20) as usize)
                )),
            }
        }
        s
    }

    /// A tool output size.
    fn tool_output_size(&mut self) -> usize {
        self.lognormal(700.0, 1.8, 20, TOOL_OUTPUT_SIZE_BYTES_MAX)
    }

    /// A unified patch of about `bytes`, as `apply_patch` takes it.
    fn patch(&mut self, p: &Project, bytes: usize) -> String {
        let mut s = format!("*** Begin Patch\n*** Update File: {}\n@@\n", self.path(p));
        let code = self.code(p.lang, bytes);
        for l in code.lines() {
            s.push(self.pick(&['+', '+', '-', ' ']));
            s.push_str(l);
            s.push('\n');
        }
        s.push_str("*** End Patch");
        s
    }
}

/// One Claude Code session (at most `lines` lines and `budget` bytes).
#[allow(clippy::too_many_arguments)]
fn claude_session(g: &mut Gen, w: &mut LineWriter, p: &Project, session: &str, start_ms: i64, lines: u64, budget: u64, n: u64) -> io::Result<()> {
    let cwd = project_cwd(p);
    let version = format!("2.1.{}", 200 + n % 90);
    let slug = format!("{}-{}-{}", g.pick(WORDS), g.pick(WORDS), g.pick(IDENTS));
    let mut clock = start_ms;
    let mut parent: Option<String> = None;
    let done = |w: &LineWriter| w.lines >= lines || w.bytes >= budget;
    w.line(&json!({"type": "mode", "mode": "default", "sessionId": session}))?;
    let mut turn = 0u64;
    while !done(w) {
        turn += 1;
        clock += 20_000 + g.below(600_000) as i64;
        let uuid = g.uuid();
        w.line(&json!({"type": "file-history-snapshot", "messageId": uuid, "snapshot": {"messageId": uuid, "trackedFileBackups": {}, "timestamp": iso(clock)}, "isSnapshotUpdate": false}))?;
        let envelope = |parent: &Option<String>, uuid: &str, ty: &str, clock: i64, message: Value| {
            json!({
                "parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": cwd, "sessionId": session,
                "version": version, "gitBranch": p.branch, "slug": slug, "type": ty, "message": message, "uuid": uuid,
                "timestamp": iso(clock),
            })
        };
        // The prompt: a string, now and then a slash-command wrapper first.
        if g.chance(8) {
            let u = g.uuid();
            let text = format!("<command-name>/{}</command-name>\n<command-message>{}</command-message>\n<command-args></command-args>", g.pick(IDENTS), g.pick(IDENTS));
            w.line(&envelope(&parent, &u, "user", clock, json!({"role": "user", "content": text})))?;
            parent = Some(u);
        }
        let size = g.lognormal(250.0, 1.0, 12, 6000);
        let text = g.message(size, &mut w.stats);
        let mut v = envelope(&parent, &uuid, "user", clock, json!({"role": "user", "content": text}));
        v["permissionMode"] = json!("default");
        v["promptId"] = json!(g.uuid());
        w.line(&v)?;
        parent = Some(uuid);
        if turn == 1 {
            w.line(&json!({"type": "ai-title", "aiTitle": g.prose(40).trim_end(), "sessionId": session}))?;
        }
        let steps = g.range(1, 14);
        for _ in 0..steps {
            if done(w) {
                break;
            }
            let msg_id = format!("msg_01{}", g.alnum(22));
            let req = format!("req_011C{}", g.alnum(18));
            let usage = json!({"input_tokens": g.range(1, 20), "cache_creation_input_tokens": g.below(9000), "cache_read_input_tokens": g.range(10_000, 180_000), "output_tokens": g.range(20, 3000), "service_tier": "standard"});
            let assistant = |g: &mut Gen, w: &mut LineWriter, parent: &mut Option<String>, clock: &mut i64, block: Value| -> io::Result<()> {
                *clock += 300 + g.below(8000) as i64;
                let u = g.uuid();
                let msg = json!({"id": msg_id, "type": "message", "role": "assistant", "model": "claude-sonnet-5", "content": [block], "stop_reason": null, "stop_sequence": null, "usage": usage});
                let mut v = envelope(parent, &u, "assistant", *clock, msg);
                v["requestId"] = json!(req);
                w.line(&v)?;
                *parent = Some(u);
                Ok(())
            };
            if g.chance(45) {
                let size = g.lognormal(400.0, 0.9, 20, 8000);
                let t = g.message(size, &mut w.stats);
                let sig = { let n = g.range(150, 700) as usize; g.base64(n) };
                assistant(g, w, &mut parent, &mut clock, json!({"type": "thinking", "thinking": t, "signature": sig}))?;
            }
            if g.chance(35) {
                let size = g.lognormal(200.0, 0.8, 10, 3000);
                let t = g.message(size, &mut w.stats);
                assistant(g, w, &mut parent, &mut clock, json!({"type": "text", "text": t}))?;
            }
            let tool_id = format!("toolu_01{}", g.alnum(22));
            let out_size = g.tool_output_size();
            let (name, input, output, copy) = match g.below(10) {
                0..=2 => {
                    let file = g.path(p);
                    let out = g.listing(p.lang, out_size);
                    let lines = out.lines().count();
                    let copy = json!({"type": "text", "file": {"filePath": file, "content": out, "numLines": lines, "startLine": 1, "totalLines": lines}});
                    ("Read", json!({"file_path": file}), out, copy)
                }
                3..=5 => {
                    let cmd = format!("{} {} {}", g.pick(COMMANDS), g.ident(), g.pick(&["", "--release", "-n 40", "| head -100", "2>&1"]));
                    let out = g.shell_output(p, out_size);
                    let copy = json!({"stdout": out, "stderr": "", "interrupted": false, "isImage": false});
                    ("Bash", json!({"command": cmd, "description": g.prose(30).trim_end()}), out, copy)
                }
                6 | 7 => {
                    let file = g.path(p);
                    let old = { let n = g.lognormal(300.0, 0.9, 20, 6000); g.code(p.lang, n) };
                    let new = { let n = g.lognormal(400.0, 0.9, 20, 8000); g.code(p.lang, n) };
                    let out = format!("The file {file} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n{}", g.listing(p.lang, out_size.min(4000)));
                    let copy = json!({"filePath": file, "oldString": old, "newString": new, "replaceAll": false});
                    ("Edit", json!({"file_path": file, "old_string": old, "new_string": new}), out, copy)
                }
                8 => {
                    let pat = g.ident();
                    let out = g.shell_output(p, out_size);
                    let copy = json!({"mode": "content", "numFiles": g.range(1, 40), "content": out});
                    ("Grep", json!({"pattern": pat, "path": cwd, "output_mode": "content", "-n": true}), out, copy)
                }
                _ => {
                    let file = g.path(p);
                    let content = { let n = g.lognormal(1500.0, 1.0, 40, 24_000); g.code(p.lang, n) };
                    let out = format!("File created successfully at: {file}");
                    ("Write", json!({"file_path": file, "content": content}), out, json!({"type": "create", "filePath": file}))
                }
            };
            assistant(g, w, &mut parent, &mut clock, json!({"type": "tool_use", "id": tool_id, "name": name, "input": input}))?;
            clock += 100 + g.below(20_000) as i64;
            let u = g.uuid();
            w.stats.tool_results += 1;
            w.stats.tool_results_16k_or_more += u64::from(output.len() >= 16 * 1024);
            let copy = if output.len() <= TOOL_RESULT_COPY_SIZE_BYTES_MAX { copy } else { json!({"type": "text", "truncated": true, "bytes": output.len()}) };
            let mut v = envelope(&parent, &u, "user", clock, json!({"role": "user", "content": [{"tool_use_id": tool_id, "type": "tool_result", "content": output}]}));
            v["toolUseResult"] = copy;
            v["sourceToolAssistantUUID"] = json!(parent);
            w.line(&v)?;
            parent = Some(u);
        }
        if done(w) {
            break;
        }
        let size = g.lognormal(500.0, 0.9, 40, 8000);
        let mut t = g.message(size, &mut w.stats);
        if g.chance(25) {
            let lang = match p.lang {
                Lang::Rust => "rust",
                Lang::Ts => "ts",
                Lang::Py => "python",
            };
            t.push_str(&format!("\n\n```{lang}\n{}```\n", { let n = g.lognormal(400.0, 0.8, 40, 4000); g.code(p.lang, n) }));
        }
        clock += 500 + g.below(8000) as i64;
        let u = g.uuid();
        let msg = json!({"id": format!("msg_01{}", g.alnum(22)), "type": "message", "role": "assistant", "model": "claude-sonnet-5", "content": [{"type": "text", "text": t}], "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 4, "cache_creation_input_tokens": g.below(4000), "cache_read_input_tokens": g.range(10_000, 180_000), "output_tokens": g.range(20, 2000), "service_tier": "standard"}});
        let mut v = envelope(&parent, &u, "assistant", clock, msg);
        v["requestId"] = json!(format!("req_011C{}", g.alnum(18)));
        w.line(&v)?;
        parent = Some(u.clone());
        if g.chance(50) {
            let su = g.uuid();
            w.line(&json!({
                "parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": cwd, "sessionId": session,
                "version": version, "gitBranch": p.branch, "slug": slug, "type": "system", "subtype": "turn_duration",
                "durationMs": g.range(2000, 900_000), "isMeta": false, "uuid": su, "timestamp": iso(clock + 50),
            }))?;
        }
        w.line(&json!({"type": "last-prompt", "lastPrompt": text.chars().take(200).collect::<String>(), "leafUuid": u, "sessionId": session}))?;
    }
    Ok(())
}

/// One Codex rollout (at most `lines` lines and `budget` bytes).
fn codex_session(g: &mut Gen, w: &mut LineWriter, p: &Project, thread: &str, start_ms: i64, lines: u64, budget: u64) -> io::Result<()> {
    let cwd = project_cwd(p);
    let mut clock = start_ms;
    let done = |w: &LineWriter| w.lines >= lines || w.bytes >= budget;
    let ts = |ms: i64| iso(ms);
    let base = { let n = g.range(4000, 12_000) as usize; g.prose(n) };
    w.line(&json!({"timestamp": ts(clock), "type": "session_meta", "payload": {
        "id": thread, "timestamp": ts(clock), "cwd": cwd, "originator": "codex_cli_rs", "cli_version": format!("0.16{}.{}", g.below(10), g.below(5)),
        "source": "cli", "model_provider": "openai", "base_instructions": {"text": base},
        "git": {"commit_hash": g.hex(40), "branch": p.branch, "repository_url": format!("git@github.com:acme/{}.git", p.name)}}}))?;
    let perms = format!("<permissions instructions>\n{}\n</permissions instructions>", g.prose(500));
    w.line(&json!({"timestamp": ts(clock), "type": "response_item", "payload": {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": perms}]}}))?;
    let agents = format!("# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\n{}</INSTRUCTIONS>", { let n = g.range(300, 3000) as usize; g.prose(n) });
    let env = format!("<environment_context>\n  <cwd>{cwd}</cwd>\n  <approval_policy>on-request</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n  <shell>bash</shell>\n</environment_context>");
    w.line(&json!({"timestamp": ts(clock), "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": agents}, {"type": "input_text", "text": env}]}}))?;
    let mut named = false;
    let mut tokens = 0u64;
    while !done(w) {
        clock += 20_000 + g.below(600_000) as i64;
        let turn = g.uuid();
        w.line(&json!({"timestamp": ts(clock), "type": "turn_context", "payload": {"turn_id": turn, "cwd": cwd, "current_date": &ts(clock)[..10], "timezone": "Europe/Berlin", "approval_policy": "on-request", "sandbox_policy": {"type": "workspace-write", "writable_roots": [], "network_access": false, "exclude_tmpdir_env_var": false, "exclude_slash_tmp": false}, "model": "gpt-5.3-codex", "effort": "medium", "summary": "auto", "truncation_policy": {"mode": "tokens", "limit": 10000}}}))?;
        w.line(&json!({"timestamp": ts(clock), "type": "event_msg", "payload": {"type": "task_started", "turn_id": turn, "model_context_window": 258_400}}))?;
        let size = g.lognormal(250.0, 1.0, 12, 6000);
        let prompt = g.message(size, &mut w.stats);
        w.line(&json!({"timestamp": ts(clock), "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}}))?;
        w.line(&json!({"timestamp": ts(clock), "type": "event_msg", "payload": {"type": "user_message", "message": prompt, "images": [], "local_images": [], "text_elements": []}}))?;
        let steps = g.range(1, 14);
        for _ in 0..steps {
            if done(w) {
                break;
            }
            clock += 500 + g.below(9000) as i64;
            if g.chance(60) {
                let size = g.lognormal(250.0, 0.9, 20, 4000);
                let summary = format!("**{}**\n\n{}", g.prose(30).trim_end(), g.message(size, &mut w.stats));
                let enc = format!("gAAAAAB{}", { let n = g.range(400, 3000) as usize; g.base64(n) });
                w.line(&json!({"timestamp": ts(clock), "type": "response_item", "payload": {"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}], "content": null, "encrypted_content": enc}}))?;
                w.line(&json!({"timestamp": ts(clock), "type": "event_msg", "payload": {"type": "agent_reasoning", "text": summary}}))?;
            }
            let call_id = format!("call_{}", g.alnum(24));
            clock += 300 + g.below(5000) as i64;
            let out_size = g.tool_output_size();
            w.stats.tool_results += 1;
            w.stats.tool_results_16k_or_more += u64::from(out_size >= 16 * 1024);
            if g.chance(75) {
                let cmd = format!("{} {} {}", g.pick(COMMANDS), g.ident(), g.pick(&["", "-n 40", "| head -200", "2>&1"]));
                let args = json!({"cmd": cmd, "workdir": cwd, "yield_time_ms": 10_000, "max_output_tokens": 10_000}).to_string();
                w.line(&json!({"timestamp": ts(clock), "type": "response_item", "payload": {"type": "function_call", "name": "exec_command", "arguments": args, "call_id": call_id}}))?;
                let body = if g.chance(40) { g.listing(p.lang, out_size) } else { g.shell_output(p, out_size) };
                let out = format!("Chunk ID: {}\nWall time: {}.{:04} seconds\nProcess exited with code {}\nOriginal token count: {}\nOutput:\n{body}", g.hex(6), g.below(30), g.below(10_000), if g.chance(90) { 0 } else { 1 }, body.len() / 4);
                clock += 100 + g.below(30_000) as i64;
                w.line(&json!({"timestamp": ts(clock), "type": "response_item", "payload": {"type": "function_call_output", "call_id": call_id, "output": out}}))?;
            } else {
                let patch = { let n = g.lognormal(900.0, 0.9, 60, 20_000); g.patch(p, n) };
                w.line(&json!({"timestamp": ts(clock), "type": "response_item", "payload": {"type": "custom_tool_call", "status": "completed", "call_id": call_id, "name": "apply_patch", "input": patch}}))?;
                let file = g.path(p);
                w.line(&json!({"timestamp": ts(clock), "type": "event_msg", "payload": {"type": "patch_apply_end", "call_id": call_id, "turn_id": turn, "stdout": format!("Success. Updated the following files:\nM {file}\n"), "stderr": "", "success": true}}))?;
                let out = json!({"output": format!("Success. Updated the following files:\nM {file}\n"), "metadata": {"exit_code": 0, "duration_seconds": 0.0}}).to_string();
                w.line(&json!({"timestamp": ts(clock), "type": "response_item", "payload": {"type": "custom_tool_call_output", "call_id": call_id, "output": out}}))?;
            }
            tokens += g.range(500, 20_000);
            let usage = json!({"input_tokens": tokens, "cached_input_tokens": tokens * 8 / 10, "output_tokens": tokens / 20, "reasoning_output_tokens": tokens / 60, "total_tokens": tokens + tokens / 20});
            w.line(&json!({"timestamp": ts(clock), "type": "event_msg", "payload": {"type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage, "model_context_window": 258_400}, "rate_limits": {"primary": {"used_percent": g.below(100), "window_minutes": 300, "resets_at": 1_792_514_400}, "secondary": {"used_percent": g.below(100), "window_minutes": 10_080, "resets_at": 1_792_960_000}}}}))?;
        }
        if done(w) {
            break;
        }
        clock += 500 + g.below(8000) as i64;
        let size = g.lognormal(500.0, 0.9, 40, 8000);
        let answer = g.message(size, &mut w.stats);
        w.line(&json!({"timestamp": ts(clock), "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}], "phase": "final_answer"}}))?;
        w.line(&json!({"timestamp": ts(clock), "type": "event_msg", "payload": {"type": "agent_message", "message": answer}}))?;
        w.line(&json!({"timestamp": ts(clock), "type": "event_msg", "payload": {"type": "task_complete", "turn_id": turn, "last_agent_message": answer}}))?;
        if !named {
            named = true;
            w.line(&json!({"timestamp": ts(clock), "type": "event_msg", "payload": {"type": "thread_name_updated", "thread_id": thread, "thread_name": g.prose(30).trim_end()}}))?;
        }
    }
    Ok(())
}

const WORDS: &[&str] = &[
    "the", "a", "to", "of", "and", "in", "is", "it", "that", "for", "on", "this", "with", "we", "should", "can", "not", "be", "so", "if",
    "now", "then", "first", "next", "let", "me", "check", "look", "at", "file", "function", "test", "tests", "fails", "passes", "error",
    "because", "returns", "value", "type", "handler", "route", "query", "index", "cache", "request", "response", "client", "server",
    "config", "update", "change", "fix", "bug", "issue", "add", "remove", "rename", "refactor", "module", "crate", "package", "build",
    "run", "command", "output", "line", "lines", "field", "struct", "method", "call", "caller", "async", "await", "lock", "thread",
    "journal", "record", "segment", "offset", "limit", "size", "bytes", "timeout", "retry", "migration", "schema", "column", "table",
    "row", "rows", "user", "session", "token", "key", "path", "directory", "branch", "commit", "diff", "patch", "review", "looks",
    "good", "wrong", "missing", "instead", "still", "already", "every", "each", "only", "also", "which", "where", "when", "why", "how",
    "seems", "probably", "likely", "confirmed", "expected", "actual", "behaviour", "performance", "slow", "fast", "memory", "allocation",
    "benchmark", "profile", "counter", "metric", "log", "logs", "warning", "panic", "unwrap", "result", "option", "none", "some",
    "edge", "case", "input", "parser", "json", "utf-8", "encoding", "string", "slice", "vector", "map", "set", "loop", "iterator",
];

const IDENTS: &[&str] = &[
    "orders", "order", "user", "users", "session", "token", "cache", "index", "journal", "record", "segment", "offset", "batch",
    "cursor", "mirror", "ingest", "parse", "line", "event", "entry", "query", "search", "rate", "limit", "client", "redis", "db",
    "config", "handler", "router", "export", "import", "sync", "hub", "device", "payload", "frame", "header", "state", "store",
    "reader", "writer", "buffer", "chunk", "window", "price", "cents", "refund", "invoice", "account", "ledger", "balance", "tx",
    "metrics", "span", "trace", "retry", "backoff", "queue", "worker", "task", "job", "schedule", "model", "tensor", "loss", "epoch",
    "dataset", "loader", "tokenizer", "vocab", "embed", "score", "rank", "doc", "term", "posting",
];

const TYPE_SUFFIXES: &[&str] = &["", "error", "config", "builder", "handle", "state", "report", "summary", "options", "kind", "id"];

const DIRS: &[&str] = &["src", "src/server", "src/lib", "src/server/routes", "tests", "crates/core/src", "pkg", "scripts", "app/models"];

const COMMANDS: &[&str] = &["cargo test -p", "pnpm vitest run", "rg -n", "git log --stat -n 30 --", "pytest -x -k", "cargo clippy --all-targets -p", "git diff", "ls -la", "fd -e rs", "python -m mypy"];

const NAMES: &[&str] = &["Dev Kumar", "Mei Chen", "Yuki Tanaka", "Sam Okafor", "Lena Fischer", "Ana Souza"];

const ZH: &[&str] = &[
    "我先看一下这个函数的实现，然后再决定怎么改。",
    "这个测试在并发的情况下会偶尔失败，需要加锁。",
    "请帮我把金额统一改成以分为单位的整数，不要用浮点数。",
    "日志里显示请求超时了，可能是连接池太小。",
    "为 sync_batch 加上幂等键，避免重复写入。",
    "好的，我已经修改了路由，并补充了对应的单元测试。",
    "这里的错误信息应该更清楚一些，告诉用户下一步该做什么。",
    "先跑一遍基准测试，看看吞吐量有没有下降。",
    "中文分词需要支持两个字的查询，比如“发布”。",
    "数据库迁移脚本已经写好了，但是还没有在预发布环境验证。",
    "把这个模块拆成读取、写入和恢复三个部分。",
    "缓存失效的时机不对，导致读到了旧数据。",
    "我们需要在提交之前确认所有测试都通过。",
    "这个接口返回的字段名和文档不一致。",
];

const JA: &[&str] = &[
    "まずこの関数の実装を確認してから修正方針を決めます。",
    "テストが並行実行のときだけ失敗するので、ロックを追加しました。",
    "レート制限は IP ごとに一分あたり六十リクエストにしてください。",
    "ログを見るとタイムアウトが発生しているようです。",
    "この変更でベンチマークのスループットが改善されました。",
    "エラーメッセージをもう少し分かりやすくしましょう。",
    "マイグレーションはステージング環境でまだ検証していません。",
    "キャッシュの無効化のタイミングが間違っていて、古いデータが返ります。",
    "日本語の検索で二文字のクエリがヒットしない問題を直しました。",
    "コミットする前にすべてのテストが通ることを確認します。",
    "このモジュールを読み込み、書き込み、復旧の三つに分けます。",
];

/// The technical words prose starts from (the most common words of the vocabulary).
pub fn common_words() -> &'static [&'static str] {
    WORDS
}

/// The hand-written Chinese sentences.
pub fn chinese_sentences() -> &'static [&'static str] {
    ZH
}

/// The hand-written Japanese sentences.
pub fn japanese_sentences() -> &'static [&'static str] {
    JA
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use origin_engine::{Journal, Options};
    use origin_ingest::{Homes, Ingester};

    use super::*;

    #[test]
    fn iso_formats_unix_milliseconds() {
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(1_792_487_524_118), "2026-10-20T09:12:04.118Z");
        assert_eq!(iso(951_782_400_001), "2000-02-29T00:00:00.001Z");
    }

    #[test]
    fn generator_is_deterministic_and_sized() {
        let a = tempfile::tempdir().expect("tempdir");
        let b = tempfile::tempdir().expect("tempdir");
        let ca = generate(a.path(), 300_000, 7).expect("generate");
        let cb = generate(b.path(), 300_000, 7).expect("generate");
        assert_eq!((ca.bytes, ca.lines, ca.files.len()), (cb.bytes, cb.lines, cb.files.len()));
        for (x, y) in ca.files.iter().zip(&cb.files) {
            assert_eq!(std::fs::read(x).expect("read"), std::fs::read(y).expect("read"));
        }
        // It stops at the first line that reaches each source's budget.
        assert!(ca.bytes >= 300_000 && ca.bytes < 300_000 + 2 * (TOOL_OUTPUT_SIZE_BYTES_MAX as u64 * 2 + 64 * 1024), "{}", ca.bytes);
        let on_disk: u64 = ca.files.iter().map(|f| std::fs::metadata(f).expect("stat").len()).sum();
        assert_eq!(on_disk, ca.bytes);
    }

    #[test]
    fn generated_logs_parse_into_events_without_malformed_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let corpus = generate(&home, 200_000, 42).expect("generate");
        assert!(corpus.claude_files > 0 && corpus.codex_files > 0, "{corpus:?}");
        let store = dir.path().join("store");
        let journal = Journal::open(store.join("journal"), Options::default()).expect("open journal");
        let ing = Ingester::new(Arc::new(journal), &store, Homes::under(&home));
        let summary = ing.run(None, &mut |_| {}).expect("ingest");
        let claude = &summary.sources["claude-code"];
        let codex = &summary.sources["codex"];
        for (name, r) in [("claude-code", claude), ("codex", codex)] {
            assert!(r.events > 0, "{name}: {r:?}");
            assert_eq!(r.malformed, 0, "{name}: {r:?}");
            assert_eq!(r.cut, 0, "{name}: {r:?}");
            assert!(r.problems.is_empty(), "{name}: {r:?}");
        }
        assert_eq!(claude.files_found, corpus.claude_files);
        assert_eq!(codex.files_found, corpus.codex_files);
        assert_eq!(claude.bytes + codex.bytes, corpus.bytes);
        let lines: u64 = summary.sources.values().map(|r| r.lines).sum();
        assert_eq!(lines, corpus.lines);
    }
}
