//! Shared helpers for Origin's benchmarks: scratch dirs on a real disk, random bytes, medians, markdown tables.

use std::path::{Path, PathBuf};

pub mod agentlogs;
pub mod vocab;
pub mod corpus;
pub mod indexbench;

/// The allocator the `origin` binary uses (server/src/main.rs), so that what the benchmarks
/// measure is what the product runs; baselines in the same process get it too.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A fresh temporary directory on a real disk: under `ORIGIN_BENCH_DIR` if set, else
/// `/work/scratch` if it exists, else the system temp dir. Removed when dropped.
pub fn scratch_dir() -> std::io::Result<tempfile::TempDir> {
    let base = std::env::var_os("ORIGIN_BENCH_DIR")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from("/work/scratch")).filter(|p| p.is_dir()))
        .unwrap_or_else(std::env::temp_dir);
    tempfile::Builder::new().prefix("origin-bench-").tempdir_in(base)
}

/// The file system type holding `path`, from `/proc/mounts` (longest matching mount point).
pub fn fs_type(path: &Path) -> String {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 2 && path.starts_with(f[1])).then(|| (f[1].len(), f[2].to_owned()))
        })
        .max()
        .map_or_else(|| "unknown".to_owned(), |(_, t)| t)
}

/// The 1, 5 and 15 minute load averages, to show what else the machine was doing.
pub fn loadavg() -> String {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// SplitMix64: fast, seeded, good enough that zstd finds nothing to compress.
pub struct Rng(u64);

impl Rng {
    /// A generator with this seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len + 8);
        while v.len() < len {
            v.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        v.truncate(len);
        v
    }
}

/// The median of some measurements (the mean of the middle two for an even count).
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// Index of the measurement that is the median (the lower middle one for an even count).
pub fn median_index(xs: &[f64]) -> usize {
    let mut idx: Vec<usize> = (0..xs.len()).collect();
    idx.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    idx[(idx.len().saturating_sub(1)) / 2]
}

/// A markdown table.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|{}\n", headers.join(" | "), " --- |".repeat(headers.len()));
    for r in rows {
        out.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    out
}
