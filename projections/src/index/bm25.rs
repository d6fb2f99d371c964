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

/// Lengths below this are their own code ([`length_code`]).
const EXACT_LENGTHS: u32 = 64;

/// A document length as one byte, for scoring: lengths below 64 exactly, longer ones by
/// their leading bit and the three bits after it (at most 1/8 below the length, up to the
/// 2^20 positions a document can hold; codes saturate at 255 past 2^29). Rising
/// with the length, so a bound at a block's shortest length still bounds every document.
/// Search reads a byte per candidate instead of four (a segment's lengths were most of its
/// cache misses); BM25 of the quantized length is what every score and bound uses.
pub(crate) fn length_code(length: u32) -> u8 {
    if length < EXACT_LENGTHS {
        return length as u8;
    }
    let e = 31 - length.leading_zeros(); // 6..=31
    let m = (length >> (e - 3)) & 7;
    // At most 64 + 25 * 8 + 7 = 271 for a u32; lengths are at most 2^20 (code 176).
    (EXACT_LENGTHS + (e - 6) * 8 + m).min(255) as u8
}

/// The length a code stands for: the least length with that code.
pub(crate) fn code_length(code: u8) -> u32 {
    let c = u32::from(code);
    if c < EXACT_LENGTHS {
        return c;
    }
    let (e, m) = ((c - EXACT_LENGTHS) / 8 + 6, (c - EXACT_LENGTHS) % 8);
    (8 + m) << (e - 3)
}

/// `k1 (1 - b + b len / avg)` for the length of every code: the part of BM25's denominator
/// that depends on the document, for one collection average.
pub(crate) fn length_norms(avg: f64) -> [f64; 256] {
    let mut t = [0.0; 256];
    for (code, n) in t.iter_mut().enumerate() {
        *n = length_norm(code as u8, avg);
    }
    t
}

/// `k1 (1 - b + b len / avg)` of the length `code` stands for.
fn length_norm(code: u8, avg: f64) -> f64 {
    K1 * (1.0 - B + B * f64::from(code_length(code)) / avg)
}

/// BM25 without the idf, of the quantized length ([`length_code`]):
/// `tf (k1 + 1) / (tf + k1 (1 - b + b len / avg))`. It grows with `avg`, so one computed with
/// a collection's average bounds the same under a larger average, times the ratio of the
/// averages; it shrinks as the length grows.
pub(crate) fn tf_part(tf: u32, length: u32, avg: f64) -> f64 {
    let tf = f64::from(tf);
    tf * (K1 + 1.0) / (tf + length_norm(length_code(length), avg))
}

/// `x` as an `f32` not below it.
pub(crate) fn f32_up(x: f64) -> f32 {
    let f = x as f32;
    if f64::from(f) >= x { f } else { f.next_up() }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn index_bm25_length_codes_rise_and_never_exceed_the_length() {
        let mut last = 0u8;
        let mut lengths: Vec<u32> = (0..5000).collect();
        lengths.extend((12..=20).flat_map(|e| [(1u32 << e) - 1, 1 << e, (1 << e) + 1]));
        lengths.push(u32::MAX);
        lengths.sort_unstable();
        for len in lengths {
            let c = length_code(len);
            assert!(c >= last, "code of {len} falls");
            last = c;
            let back = code_length(c);
            assert!(back <= len, "{len} -> {c} -> {back}");
            if len < 64 {
                assert_eq!(back, len);
            }
            // Up to the most positions a document holds; past it codes saturate.
            if len <= 1 << 20 {
                assert!(f64::from(len - back) <= f64::from(len) / 8.0, "{len} -> {back}: more than 1/8 off");
                assert_eq!(length_code(back), c, "{back} has another code than {len}");
            }
        }
        assert_eq!(length_code(1 << 20), 176);
    }
}
