//! BM25's constants and its frequency part, shared by the search and by the segment writer
//! (which stores each block's best frequency part, for bounds).

/// BM25 term-frequency saturation.
pub(crate) const K1: f64 = 1.2;
/// BM25 length normalisation.
pub(crate) const B: f64 = 0.75;

/// The average document length of `docs` documents holding `tokens` positions (at least 1).
pub(crate) fn avg_length(tokens: u64, docs: u64) -> f64 {
    if docs == 0 { 1.0 } else { (tokens as f64 / docs as f64).max(1.0) }
}

/// BM25 without the idf: `tf (k1 + 1) / (tf + k1 (1 - b + b len / avg))`. It grows with `avg`,
/// so one computed with a collection's average bounds the same under a larger average, times
/// the ratio of the averages.
pub(crate) fn tf_part(tf: u32, length: u32, avg: f64) -> f64 {
    let tf = f64::from(tf);
    let norm = 1.0 - B + B * f64::from(length) / avg;
    tf * (K1 + 1.0) / (tf + K1 * norm)
}

/// `x` as an `f32` not below it.
pub(crate) fn f32_up(x: f64) -> f32 {
    let f = x as f32;
    if f64::from(f) >= x { f } else { f.next_up() }
}
