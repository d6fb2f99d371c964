//! Vocabularies for generated text, with word frequencies like natural language's: a few
//! words very common, most rare (Zipf's law), so that a search index meets lists of every
//! length, as it does on real logs.
//!
//! - English: the 200 technical words of [`crate::agentlogs`] first, then 40,000 made-up
//!   words (syllables), drawn with a Zipf exponent of 1.05.
//! - Chinese: 15,000 words of one to four characters over 2,500 Han characters (the
//!   characters of the hand-written sentences first), Zipf 1.0.
//! - Japanese: content words (kanji compounds, katakana loan words) and particles.
//! - Korean: 5,000 words of two to four Hangul syllables.
//!
//! The vocabularies are fixed (their own seed); the text drawn from them follows the
//! generator's seed.

use std::sync::OnceLock;

use crate::Rng;

/// A vocabulary and the cumulative weights of its words, for Zipf draws.
pub struct Zipf {
    /// Words, most frequent first.
    pub words: Vec<String>,
    cdf: Vec<f64>,
}

impl Zipf {
    fn new(words: Vec<String>, exponent: f64) -> Zipf {
        let mut cdf = Vec::with_capacity(words.len());
        let mut total = 0.0;
        for rank in 1..=words.len() {
            total += 1.0 / (rank as f64).powf(exponent);
            cdf.push(total);
        }
        for c in &mut cdf {
            *c /= total;
        }
        Zipf { words, cdf }
    }

    /// A word, by its frequency.
    pub fn draw<'a>(&'a self, rng: &mut Rng) -> &'a str {
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let i = self.cdf.partition_point(|&c| c < u).min(self.words.len() - 1);
        &self.words[i]
    }
}

/// Every vocabulary.
pub struct Vocab {
    /// English words.
    pub english: Zipf,
    /// Chinese words.
    pub chinese: Zipf,
    /// Japanese content words.
    pub japanese: Zipf,
    /// Korean words.
    pub korean: Zipf,
}

/// Japanese particles and endings, placed between content words.
pub const JA_PARTICLES: &[&str] = &["の", "は", "を", "に", "が", "で", "と", "も", "へ", "から", "まで", "です", "ます", "ました", "して", "する", "した", "ない", "について", "として"];

const ONSETS: &[&str] = &[
    "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br", "cr", "dr", "fl", "gr", "pl", "pr", "sh", "st",
    "th", "tr", "ch", "sk", "qu",
];
const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ai", "ea", "ou", "io", "y"];
const CODAS: &[&str] = &["", "", "n", "r", "s", "t", "l", "m", "x", "nd", "st", "ck"];

fn english(rng: &mut Rng) -> Vec<String> {
    let mut words: Vec<String> = crate::agentlogs::common_words().iter().map(|w| w.to_string()).collect();
    let mut seen: std::collections::HashSet<String> = words.iter().cloned().collect();
    while words.len() < 40_200 {
        let syllables = 1 + rng.below(4) as usize;
        let mut w = String::new();
        for _ in 0..syllables {
            w.push_str(ONSETS[rng.below(ONSETS.len() as u64) as usize]);
            w.push_str(VOWELS[rng.below(VOWELS.len() as u64) as usize]);
        }
        w.push_str(CODAS[rng.below(CODAS.len() as u64) as usize]);
        if w.len() >= 3 && seen.insert(w.clone()) {
            words.push(w);
        }
    }
    words
}

fn han_chars(rng: &mut Rng) -> Vec<char> {
    let mut chars: Vec<char> = Vec::new();
    for s in crate::agentlogs::chinese_sentences().iter().chain(crate::agentlogs::japanese_sentences()) {
        for c in s.chars() {
            if ('\u{4e00}'..='\u{9fa5}').contains(&c) && !chars.contains(&c) {
                chars.push(c);
            }
        }
    }
    while chars.len() < 2_500 {
        let c = char::from_u32(0x4e00 + rng.below(0x9fa5 - 0x4e00) as u32).unwrap_or('中');
        if !chars.contains(&c) {
            chars.push(c);
        }
    }
    chars
}

fn chinese(rng: &mut Rng, han: &[char]) -> Vec<String> {
    let mut words = Vec::with_capacity(15_000);
    let mut seen = std::collections::HashSet::new();
    // Frequent characters are drawn more often (the first of the list are the common ones).
    let pick = |rng: &mut Rng| {
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        han[((u * u) * han.len() as f64) as usize % han.len()]
    };
    while words.len() < 15_000 {
        let n = match rng.below(10) {
            0 => 1,
            1..=7 => 2,
            8 => 3,
            _ => 4,
        };
        let w: String = (0..n).map(|_| pick(rng)).collect();
        if seen.insert(w.clone()) {
            words.push(w);
        }
    }
    words
}

fn japanese(rng: &mut Rng, han: &[char]) -> Vec<String> {
    let mut words = Vec::with_capacity(8_000);
    let mut seen = std::collections::HashSet::new();
    while words.len() < 8_000 {
        let w: String = if rng.below(2) == 0 {
            (0..2).map(|_| han[rng.below(han.len() as u64) as usize]).collect()
        } else {
            let n = 2 + rng.below(5);
            (0..n).map(|_| char::from_u32(0x30a2 + rng.below(0x30f3 - 0x30a2) as u32).unwrap_or('ア')).collect::<String>()
                + if rng.below(3) == 0 { "ー" } else { "" }
        };
        if seen.insert(w.clone()) {
            words.push(w);
        }
    }
    words
}

fn korean(rng: &mut Rng) -> Vec<String> {
    let mut words = Vec::with_capacity(5_000);
    let mut seen = std::collections::HashSet::new();
    while words.len() < 5_000 {
        let n = 2 + rng.below(3);
        let w: String = (0..n).map(|_| char::from_u32(0xac00 + rng.below(0xd7a3 - 0xac00) as u32).unwrap_or('가')).collect();
        if seen.insert(w.clone()) {
            words.push(w);
        }
    }
    words
}

/// The vocabularies (built once).
pub fn vocab() -> &'static Vocab {
    static V: OnceLock<Vocab> = OnceLock::new();
    V.get_or_init(|| {
        let mut rng = Rng::new(0x5eed_0f0c_ab01_a7e5);
        let han = han_chars(&mut rng);
        Vocab {
            english: Zipf::new(english(&mut rng), 1.05),
            chinese: Zipf::new(chinese(&mut rng, &han), 1.0),
            japanese: Zipf::new(japanese(&mut rng, &han), 1.0),
            korean: Zipf::new(korean(&mut rng), 1.0),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabularies_are_fixed_sized_and_skewed() {
        let v = vocab();
        assert_eq!(v.english.words.len(), 40_200);
        assert_eq!(v.chinese.words.len(), 15_000);
        let mut rng = Rng::new(1);
        let draws: Vec<&str> = (0..20_000).map(|_| v.english.draw(&mut rng)).collect();
        let the = draws.iter().filter(|w| **w == v.english.words[0]).count();
        let distinct: std::collections::HashSet<&&str> = draws.iter().collect();
        assert!(the > 1000, "the most common word is common: {the}");
        assert!(distinct.len() > 5000, "and many words are rare: {}", distinct.len());
        let mut a = Rng::new(9);
        let mut b = Rng::new(9);
        assert_eq!(v.chinese.draw(&mut a), v.chinese.draw(&mut b));
    }
}
