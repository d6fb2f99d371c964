//! Tokens: NFKC-folded, lower-cased words on Unicode word boundaries; runs of CJK and of the
//! scripts written without spaces (Thai, Lao, Khmer, Myanmar…) as bigrams.
//!
//! The same function tokenizes documents and queries, so whatever it does to a word it does
//! on both sides. Rules, in order:
//! 0. The escape sequences terminals read as colours and cursor moves (ECMA-48 control
//!    sequences: ESC `[`, parameter bytes, intermediate bytes, a final byte; what coloured
//!    compiler and test output carries) are white space: `ESC[31merror` is the word `error`.
//!    In a text of the JSON form ([`TextForm::Json`]: a tool call's input as the agent wrote
//!    it), so are the escapes of its strings (`\n`, `\t`, `\r`, `\b`, `\f`, `\/`, `\"` and
//!    `\uXXXX`, after an odd run of backslashes): `import os\ndef` is the words `import`, `os`,
//!    `def`. (In any other text a backslash is a break and the letter after it is text: a
//!    Windows path `C:\new\tools` keeps `new` and `tools`; rule 6 gives the other reading.)
//! 1. Each grapheme cluster of the text is folded on its own: NFKC, then lower case; variation
//!    selectors (U+FE00–U+FE0F, U+E0100–U+E01EF) are dropped, U+2019 (’) becomes `'`, the
//!    final sigma `ς` becomes `σ`, `ß` and `ẞ` become `ss` and `İ` becomes `i`; the zero width
//!    space, the word joiner, the zero width no-break space and the soft hyphen (U+200B,
//!    U+2060, U+FEFF, U+00AD), the zero width joiner (U+200D) in a cluster that begins with a
//!    letter or digit (not in an emoji's, whose sequence it makes), and the marks and controls of bidirectional text (U+200E,
//!    U+200F, U+061C, U+202A–U+202E, U+2066–U+2069) are dropped; the marks writers of Arabic and Hebrew mostly leave out (harakat, tatweel, vowel
//!    points, cantillation) are dropped, and Arabic and Persian letters that stand for one
//!    another are one (`أ إ آ` as `ا`, `ى ی` as `ي`, `ک` as `ك`). Folding per cluster keeps a
//!    map from folded bytes back to the original text, for snippets.
//! 2. Maximal runs of Han, Hiragana, Katakana and Hangul characters become overlapping
//!    bigrams plus unigrams: character `i` of a run at position `p + i` gives the unigram at
//!    `p + i` and the bigram of characters `i, i + 1` at `p + i`. A run of one character is a
//!    lone unigram. Runs of the letters, digits and marks of the scripts written without
//!    spaces between words that Unicode's word boundaries cannot split (Thai, Lao, Khmer,
//!    Myanmar, Tai Le, New Tai Lue, Tai Tham, Tai Viet, Ahom: the line-breaking class SA) are
//!    treated alike, with the grapheme clusters of the folded text (mostly a letter with its
//!    vowel and tone marks) in the place of characters, each cut to 64 bytes; a run of one
//!    script never continues into another. Han and kana, and the scripts of SA, are written
//!    without spaces, and hard-wrapped text breaks their words across lines: two runs of one
//!    of them parted by a single line break (and spaces or tabs beside it) also give the
//!    bigram of the first run's last unit and the second's first (unless that begins with a
//!    mark), at the first's position, so that a word or phrase matches across the break.
//!    (Hangul is written with spaces between words: a line break there parts words.)
//! 3. The rest is split on Unicode word boundaries (UAX #29), then each word is cut at
//!    characters that are neither letters, digits, marks nor pictographs, so `record.rs`,
//!    `parse_query` and `don't` are two words each (searching `record` finds `record.rs`; the
//!    query `record.rs` is a phrase of both). Emoji (and their ZWJ sequences) are words.
//! 4. Each word takes one position; positions skip nothing, so a phrase matches across
//!    punctuation and line breaks.
//! 5. An ASCII word of letters and digits written in camelCase or PascalCase (`parseQuery`,
//!    `HTTPServer`, `utf8Decode`) also gives its parts, lower-cased, as tokens of their own
//!    ([`TokenKind::Part`]) at the word's position, after the word: a part begins at an
//!    upper-case letter that follows a lower-case letter or a digit, and at the last of a run of
//!    upper-case letters followed by a lower-case one (`HTTP|Server`) unless that is an `s`
//!    no lower-case letter follows (`APIs`, `URLs|To|Fetch`: plurals); parts of one character
//!    are left out; then each two neighbouring parts joined (of one character too), unless
//!    that is the whole word (`OAuthToken` gives `auth`, `token`, `oauth`, `authtoken`); a
//!    part is given once per word, and at most [`PARTS_MAX`] are given, from the word's first
//!    [`TERM_SIZE_BYTES_MAX`] bytes. So `query` finds `parseQuery`, `http server` finds
//!    `HTTPServer` and `github` finds `GitHubClient`, where the whole word alone was one term;
//!    the word itself is still a term, so `parsequery` finds it too. A query's own parts are not clauses (its
//!    word is), but their stems count for partial matches. Parts keep the word's position,
//!    so a phrase of parts (`"parse query"`) does not match inside one word, the words around
//!    it keep their positions, and a phrase matches a part beside the next word (`"user
//!    name"` matches `getUser name`, and a part beside a part of the next word, `"get
//!    name"` matches `getUser setName`).
//! 6. In a text of any other form than JSON, an ASCII word of letters and digits that follows
//!    an odd run of backslashes and begins with the `n` of a line break's escape (`\n`) also
//!    gives, as a part at its position, the word without it, and the camelCase parts of that
//!    (rather than of the word): a tool's printed JSON or a source file's string
//!    (`"done\nExiting"`) holds the words it means whichever reading is right, where a Windows
//!    path (`C:\new`) keeps its word and gains a part (`ew`) no query is likely to ask for. The
//!    other escapes are left alone: their letters begin many words of paths and LaTeX
//!    (`\trace`, `\task`, `\rangle` would give `race`, `ask`, `angle`).

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;
use unicode_segmentation::UnicodeSegmentation;

use super::limits::{DOC_TOKENS_MAX, TERM_SIZE_BYTES_MAX};

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// A word outside the runs of rule 2 (letters, digits, emoji).
    Word,
    /// A run of rule 2 (CJK, Thai, …) of a single unit: a character of CJK, a grapheme cluster
    /// of the others.
    Lone,
    /// One unit of a run of two or more.
    Unigram,
    /// Two adjacent units of a run.
    Bigram,
    /// A part of an ASCII word written in camelCase or PascalCase (rule 5), at the word's
    /// position, after it.
    Part,
}

/// One token of a text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    /// The folded term.
    pub term: String,
    /// Word position in the text (0-based).
    pub position: u32,
    /// What it is.
    pub kind: TokenKind,
    /// Byte range in the original (unfolded) text.
    pub start: usize,
    /// End of that range (exclusive).
    pub end: usize,
}

/// A folded text with the way back to the original's bytes.
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Folded {
    text: String,
    /// Pieces of the folded text in order; empty when the text was ASCII (the map is then
    /// the identity).
    chunks: Vec<Chunk>,
}

/// A piece of folded text and the original bytes it came from.
#[derive(Clone, Copy)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Chunk {
    folded_start: usize,
    original_start: usize,
    original_end: usize,
    /// An ASCII run: folded byte `i` of the piece is original byte `i` (lower-cased).
    identity: bool,
}

/// True for the CJK Unified Ideographs (U+4E00 to U+9FFF): each is its own NFKC form and its
/// own lower case, and no character that may follow it in a stretch joins its grapheme
/// cluster unless it is a mark (test `index_token_unified_han_folds_to_itself`).
fn is_unified_han(c: char) -> bool {
    ('\u{4E00}'..='\u{9FFF}').contains(&c)
}

impl Folded {
    fn new(original: &str) -> Folded {
        Folded::fold(original, true)
    }

    /// `han_directly`: a stretch of Han ideographs (after at most one ASCII character) is
    /// folded character by character, without the tables (false in tests, to compare).
    fn fold(original: &str, han_directly: bool) -> Folded {
        if original.is_ascii() {
            return Folded { text: original.to_ascii_lowercase(), chunks: Vec::new() };
        }
        let bytes = original.as_bytes();
        let mut text = String::with_capacity(original.len());
        let mut chunks = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            // An ASCII run, less its last character when a non-ASCII one follows (it may take
            // combining marks: `e` + U+0301 is one cluster).
            let run_end = bytes[i..].iter().position(|b| !b.is_ascii()).map_or(bytes.len(), |p| i + p);
            let ascii_end = if run_end < bytes.len() && run_end > i { run_end - 1 } else { run_end };
            if ascii_end > i {
                chunks.push(Chunk {
                    folded_start: text.len(),
                    original_start: i,
                    original_end: ascii_end,
                    identity: true,
                });
                text.extend(original[i..ascii_end].chars().map(|c| c.to_ascii_lowercase()));
                i = ascii_end;
            }
            if i >= bytes.len() {
                break;
            }
            // Then clusters up to the next ASCII byte (never inside a UTF-8 sequence).
            let stretch_end = bytes[i + 1..].iter().position(|b| b.is_ascii()).map_or(bytes.len(), |p| i + 1 + p);
            let stretch = &original[i..stretch_end];
            // A stretch of Han ideographs (Chinese text; after at most one ASCII character,
            // which ends the ASCII run before it): each character is a cluster of its own
            // that folds to itself, so the cluster, normalization and case tables are not
            // read. (Read for a query of two Chinese characters once other work had emptied
            // the caches, they were an eighth of its cache misses for data.)
            if han_directly && stretch.chars().all(|c| c.is_ascii() || is_unified_han(c)) {
                for (offset, c) in stretch.char_indices() {
                    let folded_start = text.len();
                    text.push(c.to_ascii_lowercase());
                    let original_start = i + offset;
                    chunks.push(Chunk { folded_start, original_start, original_end: original_start + c.len_utf8(), identity: false });
                }
                i = stretch_end;
                continue;
            }
            for (offset, cluster) in stretch.grapheme_indices(true) {
                let folded_start = text.len();
                fold_cluster(&mut text, cluster);
                if text.len() > folded_start {
                    let original_start = i + offset;
                    let original_end = original_start + cluster.len();
                    chunks.push(Chunk { folded_start, original_start, original_end, identity: false });
                }
            }
            i = stretch_end;
        }
        Folded { text, chunks }
    }

    /// The original byte range of the folded range `[start, end)` (`start < end`).
    fn original(&self, start: usize, end: usize) -> (usize, usize) {
        if self.chunks.is_empty() {
            return (start, end);
        }
        let find = |b: usize| self.chunks[self.chunks.partition_point(|c| c.folded_start <= b).saturating_sub(1)];
        let first = find(start);
        let last = find(end - 1);
        let s = if first.identity { first.original_start + (start - first.folded_start) } else { first.original_start };
        let e = if last.identity { last.original_start + (end - last.folded_start) } else { last.original_end };
        (s, e)
    }
}

/// Appends the folded form of one grapheme cluster.
fn fold_cluster(text: &mut String, cluster: &str) {
    let mut chars = cluster.chars();
    if let (Some(c), None) = (chars.next(), chars.next())
        && unicode_normalization::is_nfkc_quick(std::iter::once(c)) == unicode_normalization::IsNormalized::Yes
    {
        fold_char(text, c);
        return;
    }
    // A zero width joiner in a letter's cluster (a Han character's, a word's, an Indic
    // conjunct's) joins nothing a search tells apart: dropped, as the word joiner is. In an
    // emoji's it makes the sequence (`👨‍👩‍👧`), and stays.
    // (Dropped before NFKC, which composes nothing across it: `e`, ZWJ, U+0301 is `é`.)
    let in_letters = cluster.chars().next().is_some_and(char::is_alphanumeric);
    for c in cluster.chars().filter(|&c| !(c == '\u{200D}' && in_letters)).nfkc() {
        fold_char(text, c);
    }
}

/// The invisible characters folding drops (rule 1): no break between words.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}' | '\u{2060}' | '\u{FEFF}' | '\u{00AD}' | '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn fold_char(text: &mut String, c: char) {
    match c {
        // Variation selectors (text or emoji style; ideographic variants of Han characters).
        '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}' => {}
        // Invisible characters that are no break between words: the zero width space (which
        // Thai, Khmer and Myanmar text carries between words or not, as the writer's tools
        // did), the word joiner, the zero width no-break space (a byte order mark), the soft
        // hyphen (a place a word may be hyphenated at a line's end: text from web pages and
        // PDFs), and the marks and controls of bidirectional text.
        c if is_invisible(c) => {}
        '\u{2019}' => text.push('\''),
        // Greek's final sigma is the same letter as σ (what full case folding gives).
        'ς' => text.push('σ'),
        // Letters whose lower case is not what a search without case should meet: German's
        // sharp s (and its capital) as `ss`, as full case folding gives, so that `STRASSE`
        // finds `Straße`; Turkish's capital dotted I as `i`, not `i` with a combining dot, so
        // that `İSTANBUL` finds `istanbul`.
        'ß' | 'ẞ' => text.push_str("ss"),
        'İ' => text.push('i'),
        c if c.is_ascii() => text.push(c.to_ascii_lowercase()),
        // Marks that writers of Arabic and Hebrew mostly leave out: Arabic's short vowels and
        // other harakat, its superscript alef and tatweel (a stretch of the line, not a
        // letter); Hebrew's vowel points and cantillation (not its punctuation: maqaf, paseq,
        // sof pasuq, nun hafukha).
        '\u{064B}'..='\u{065F}' | '\u{0670}' | '\u{0640}' => {}
        '\u{0591}'..='\u{05BD}' | '\u{05BF}' | '\u{05C1}' | '\u{05C2}' | '\u{05C4}' | '\u{05C5}' | '\u{05C7}' => {}
        // Letters that Arabic and Persian writing and keyboards use for one another: alef
        // with hamza or madda as alef, alef maksura and Farsi yeh as yeh, keheh as kaf.
        '\u{0622}' | '\u{0623}' | '\u{0625}' => text.push('\u{0627}'),
        '\u{0649}' | '\u{06CC}' => text.push('\u{064A}'),
        '\u{06A9}' => text.push('\u{0643}'),
        c => text.extend(c.to_lowercase()),
    }
}

/// True for characters that form CJK runs (after folding).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF            // Hangul Jamo
        | 0x3005 | 0x3007          // 々 〇
        | 0x3041..=0x309F          // Hiragana
        | 0x30A1..=0x30FA          // Katakana
        | 0x30FC..=0x30FF          // ー and Katakana iteration marks (not ・)
        | 0x3130..=0x318F          // Hangul compatibility Jamo
        | 0x31F0..=0x31FF          // Katakana phonetic extensions
        | 0x3400..=0x4DBF          // Han extension A
        | 0x4E00..=0x9FFF          // Han
        | 0xA960..=0xA97F          // Hangul Jamo extended A
        | 0xAC00..=0xD7AF          // Hangul syllables
        | 0xD7B0..=0xD7FF          // Hangul Jamo extended B
        | 0xF900..=0xFAFF          // Han compatibility
        | 0x20000..=0x323AF        // Han extensions B..H
    )
}

/// The runs of rule 2 a character belongs to (after folding): [`Run::Cjk`] for any CJK
/// character ([`is_cjk`]), a script written without spaces of the line-breaking class SA for
/// its letters, digits and marks, [`Run::None`] for the rest (their punctuation included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Run {
    /// Not in a run: words by rule 3.
    None,
    /// Han, kana and Hangul: runs of characters.
    Cjk,
    /// A script of SA, named by the first character of its block (its runs are of grapheme
    /// clusters, and never continue into another script's).
    Spaceless(u32),
}

/// [`Run`] of `c`: by the blocks of the scripts of Unicode's line-breaking class SA (the
/// block decides the script; the character's category whether it belongs in a run, so that
/// punctuation such as Thai's `๏` or Khmer's `។` parts runs).
pub(crate) fn run_of(c: char) -> Run {
    if is_cjk(c) {
        return Run::Cjk;
    }
    let block = match c as u32 {
        0x0E00..=0x0E7F => 0x0E00,   // Thai
        0x0E80..=0x0EFF => 0x0E80,   // Lao
        0x1000..=0x109F => 0x1000,   // Myanmar
        0xA9E0..=0xA9FF => 0x1000,   // Myanmar extended B
        0xAA60..=0xAA7F => 0x1000,   // Myanmar extended A
        0x1780..=0x17FF => 0x1780,   // Khmer
        0x19E0..=0x19FF => 0x1780,   // Khmer symbols
        0x1950..=0x197F => 0x1950,   // Tai Le
        0x1980..=0x19DF => 0x1980,   // New Tai Lue
        0x1A20..=0x1AAF => 0x1A20,   // Tai Tham
        0xAA80..=0xAADF => 0xAA80,   // Tai Viet
        0x11700..=0x1174F => 0x11700, // Ahom
        _ => return Run::None,
    };
    if c.is_alphanumeric() || is_combining_mark(c) { Run::Spaceless(block) } else { Run::None }
}

/// True for emoji and other pictographs, which are words of their own.
fn is_pictograph(c: char) -> bool {
    matches!(c as u32,
        0x00A9 | 0x00AE | 0x203C | 0x2049 | 0x2122 | 0x2139
        | 0x2190..=0x21FF
        | 0x2300..=0x23FF
        | 0x25A0..=0x27BF
        | 0x2900..=0x297F
        | 0x2B00..=0x2BFF
        | 0x1F000..=0x1FAFF
        | 0xE0020..=0xE007F        // tag characters (subdivision flags)
    )
}

/// Characters that belong inside a word.
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || is_combining_mark(c) || is_pictograph(c) || c == '\u{200D}'
}

/// True if the word holds something searchable (not only joiners or marks).
fn is_searchable(word: &str) -> bool {
    word.chars().any(|c| c.is_alphanumeric() || is_pictograph(c))
}

/// Cuts a term to at most [`TERM_SIZE_BYTES_MAX`] bytes at a character boundary.
fn cut(term: &str) -> &str {
    cut_to(term, TERM_SIZE_BYTES_MAX)
}

/// The longest unit of a run (rule 2) kept, in bytes: a grapheme cluster may be any length (a
/// letter under dozens of marks), and a bigram of two units must stay longer than either
/// unit once cut, or it would be the unit's own term again at the same position.
const UNIT_BYTES_MAX: usize = TERM_SIZE_BYTES_MAX / 2;

/// Cuts `term` to at most `max` bytes at a character boundary.
fn cut_to(term: &str, max: usize) -> &str {
    if term.len() <= max {
        return term;
    }
    let mut end = max;
    while !term.is_char_boundary(end) {
        end -= 1;
    }
    &term[..end]
}

/// The term of an ASCII word of letters and digits (`upper` if it holds an upper-case
/// letter): the word itself, cut, or its lower case in `lower`. Most words of logs and code
/// are lower case already: then nothing is copied.
fn ascii_term<'a>(word: &'a str, upper: bool, lower: &'a mut String) -> &'a str {
    if upper {
        lower.clear();
        lower.push_str(cut(word));
        lower.make_ascii_lowercase();
        lower.as_str()
    } else {
        cut(word)
    }
}

/// One token as [`for_each_token`] hands it over: borrowed, nothing allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TokenRef<'a> {
    /// The folded term.
    pub term: &'a str,
    /// Word position in the text (0-based).
    pub position: u32,
    /// What it is.
    pub kind: TokenKind,
    /// Byte range in the original text.
    pub start: usize,
    /// End of that range (exclusive).
    pub end: usize,
}

/// [`ASCII_CLASS`] of an upper-case ASCII letter; lower-case letters and digits are
/// [`LOWER_OR_DIGIT`], every other byte 0.
const UPPER: u8 = 2;
const LOWER_OR_DIGIT: u8 = 1;
static ASCII_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = if c.is_ascii_uppercase() {
            UPPER
        } else if c.is_ascii_lowercase() || c.is_ascii_digit() {
            LOWER_OR_DIGIT
        } else {
            0
        };
        b += 1;
    }
    t
};

/// True for the bytes that end a word in any text: ASCII bytes other than letters and digits.
fn is_ascii_break(b: u8) -> bool {
    b < 0x80 && !b.is_ascii_alphanumeric()
}

/// True if the text may be cut at byte `i`: an ASCII byte other than a letter or digit, not
/// followed by a non-ASCII character (which could be a mark or joiner that Unicode attaches
/// to it, changing the word boundaries around it).
fn is_cut(bytes: &[u8], i: usize) -> bool {
    is_ascii_break(bytes[i]) && bytes.get(i + 1).is_none_or(|&n| n < 0x80)
}

/// Parts of a word given at most (rule 5).
pub(crate) const PARTS_MAX: usize = 16;

/// The parts of `word` (the text of a word token) by rule 5, as byte ranges in it, into
/// `out`; none unless it is ASCII letters and digits and has two parts or more. The parts
/// come first, then each two neighbours joined (`TypeScriptCompiler`: `type`, `script`,
/// `compiler`, then `typescript`, `scriptcompiler`), so that a name written as one word
/// (`typescript`, `github`, `oauth`) finds the longer name it begins or ends.
fn camel_parts(word: &str, out: &mut Vec<(usize, usize)>) {
    out.clear();
    let b = cut(word).as_bytes();
    // A part begins at an upper-case letter after the first byte: most words with upper case
    // (`The`, `Error`) have none there.
    if b.len() < 3 || !b[1..].iter().any(u8::is_ascii_uppercase) || !b.iter().all(u8::is_ascii_alphanumeric) {
        return;
    }
    // An `s` after upper-case letters that no lower-case letter follows makes a plural of
    // them (`APIs`, `URLsToFetch`), not a part of its own.
    // Read in the whole word: parts are of its first bytes only (its term's), and a last
    // part the cut shortens is left out (`…Configuration` cut inside is no part `configurat`).
    let w = word.as_bytes();
    let plural_s = |j: usize| w[j] == b's' && w.get(j + 1).is_none_or(|c| !c.is_ascii_lowercase());
    let starts_part = |i: usize| {
        let (before, c) = (w[i - 1], w[i]);
        c.is_ascii_uppercase()
            && (!before.is_ascii_uppercase() || (w.get(i + 1).is_some_and(u8::is_ascii_lowercase) && !plural_s(i + 1)))
    };
    // Where each part begins, and the end (the cut word is at most 128 bytes: every bound
    // fits in a byte, and there are at most 129 of them).
    let mut bounds = [0u8; TERM_SIZE_BYTES_MAX + 1];
    let mut n = 1;
    for i in 1..b.len() {
        if starts_part(i) {
            bounds[n] = i as u8;
            n += 1;
        }
    }
    if n == 1 {
        return;
    }
    bounds[n] = b.len() as u8;
    let bounds = &bounds[..=n];
    // A range the cut shortens at its end is left out.
    let shortened = |e: usize| e == b.len() && e < w.len() && !starts_part(e);
    let keep = |from: usize, to: usize, out: &mut Vec<(usize, usize)>| {
        let part = &b[from..to];
        if out.len() < PARTS_MAX && !shortened(to) && !out.iter().any(|&(s, e)| b[s..e].eq_ignore_ascii_case(part)) {
            out.push((from, to));
        }
    };
    for k in 0..n {
        let (from, to) = (usize::from(bounds[k]), usize::from(bounds[k + 1]));
        if to - from >= 2 {
            keep(from, to, out);
        }
    }
    // Two neighbours joined, unless that is the whole word (a word of two parts).
    for k in 0..n.saturating_sub(1) {
        let (from, to) = (usize::from(bounds[k]), usize::from(bounds[k + 2]));
        if !(from == 0 && to == b.len()) {
            keep(from, to, out);
        }
    }
}

/// The bytes of a string escape's letters that begin the word at `start` of `text` (rule 6):
/// 1 for the `n` of `\n` after an odd run of backslashes (an even run is escaped
/// backslashes); 0 for any other word. Only the line break: the other escapes' letters begin
/// too many words of Windows paths and LaTeX (`\trace`, `\task`, `\rangle`), whose parts
/// (`race`, `ask`) would be false matches; `\n`'s (`\new`, `\notes`: `ew`, `otes`) rarely are.
fn escape_letters(text: &[u8], start: usize) -> usize {
    if start == 0 || text[start - 1] != b'\\' || text[start] != b'n' {
        return 0;
    }
    let run = text[..start].iter().rev().take_while(|&&b| b == b'\\').count();
    usize::from(run % 2 == 1)
}

/// Calls `emit` with the parts of the word token `t` of `text` (rules 5 and 6), `buf` holding
/// each part's term in turn.
fn emit_parts<F: FnMut(TokenRef<'_>)>(text: &str, t: &TokenRef<'_>, parts: &mut Vec<(usize, usize)>, buf: &mut String, emit: &mut F) {
    // A string escape's letter glued to the word (rule 6): checked first, by the byte before.
    let escaped = escape_letters(text.as_bytes(), t.start);
    // A word with no upper-case letter has no camelCase parts; the fast paths hand such an
    // ASCII word over as a slice of the text, a lower-cased one as a copy (compared before
    // slicing: this runs for every word).
    if escaped == 0 && std::ptr::eq(t.term.as_ptr(), text.as_ptr().wrapping_add(t.start)) {
        return;
    }
    // The word's letters and digits: its range may take in what its last cluster holds after
    // them (a joiner, a variation selector), which folding leaves out of its term.
    let range = &text[t.start..t.end];
    let word = &range[..range.bytes().take_while(u8::is_ascii_alphanumeric).count()];
    if word.len() < range.len() && !t.term.eq_ignore_ascii_case(cut(word)) {
        return;
    }
    // After an escape's letters, the word as the string meant it, then its camelCase parts
    // (not those of the word with the letters glued on).
    let from = if escaped > 0 && word.len() == range.len() && word.len() <= TERM_SIZE_BYTES_MAX { escaped } else { 0 };
    let rest = &word[from..];
    if from > 0 && rest.len() >= 2 {
        buf.clear();
        buf.push_str(rest);
        buf.make_ascii_lowercase();
        emit(TokenRef { term: buf, position: t.position, kind: TokenKind::Part, start: t.start + from, end: t.end });
    }
    camel_parts(rest, parts);
    for &(s, e) in parts.iter() {
        buf.clear();
        buf.push_str(&rest[s..e]);
        buf.make_ascii_lowercase();
        emit(TokenRef { term: buf, position: t.position, kind: TokenKind::Part, start: t.start + from + s, end: t.start + from + e });
    }
}

/// Calls `emit` for every token of `text`, in order: the tokens [`tokenize_whole`] gives,
/// without allocating for ASCII words. (Generic over `emit`, so that the memory segment's
/// handling of a token is compiled into the loop: called through `&mut dyn FnMut`, the feed of
/// 1M events took 5-8% longer.)
///
/// Why this is [`tokenize_whole`]: an ASCII byte other than a letter or digit ends a word
/// (rule 3 of the module docs cuts words at it, and it is never part of a CJK run); when an
/// ASCII byte follows it, no Unicode rule reaches across it either (word boundaries look at
/// the characters next to it, and only marks and joiners, which are not ASCII, attach to a
/// character before them). So the text is cut there into chunks, each tokenized on its own:
/// a chunk of ASCII letters and digits is one word, already in NFKC, lower-cased by byte; any
/// other chunk goes through the full rules. A property test compares both on mixed scripts.
pub(crate) fn for_each_token<F: FnMut(TokenRef<'_>)>(text: &str, emit: &mut F) {
    for_each_token_of(text, TextForm::Plain, emit);
}

/// [`for_each_token`] of a text of the form `form` (rule 0).
pub(crate) fn for_each_token_of<F: FnMut(TokenRef<'_>)>(text: &str, form: TextForm, emit: &mut F) {
    let blanked = blank_escapes(text, form);
    let text: &str = &blanked;
    let mut join = LineJoin::default();
    let (mut parts, mut buf) = (Vec::new(), String::new());
    for_each_token_unjoined(text, &mut |t: TokenRef<'_>| {
        if let Some(b) = join.before(text, &t) {
            emit(b);
        }
        emit(t);
        if t.kind == TokenKind::Word {
            emit_parts(text, &t, &mut parts, &mut buf, emit);
        }
    });
}

/// How a text writes what it says (rule 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TextForm {
    /// As it reads: messages, tool results, entries, queries.
    #[default]
    Plain,
    /// As the text of JSON, whose strings escape line breaks, tabs and quotes: a tool call's
    /// input as the agent wrote it.
    Json,
}

impl TextForm {
    /// The form of `text`, the text of an event of kind `kind`: JSON for a tool call whose
    /// text ends in a JSON value (from its first `{` or `[`: Claude Code's, ZCode's and Grok's
    /// `name {input}`, Codex's function calls' arguments), and for a tool result that is one
    /// whole (an MCP tool's structured answer); plain for any other text (Codex's patches and
    /// shell commands, a tool's printed output). A text without a backslash reads the same
    /// either way, so only one with a backslash is parsed.
    pub fn of(kind: origin_engine::record::EventKind, text: &str) -> TextForm {
        use origin_engine::record::EventKind;
        if !text.contains('\\') {
            return TextForm::Plain;
        }
        let value = match kind {
            EventKind::ToolUse => text.find(['{', '[']).map(|at| &text[at..]),
            EventKind::ToolResult => Some(text.trim_start()).filter(|t| t.starts_with(['{', '['])),
            _ => None,
        };
        match value.map(serde_json::from_str::<serde::de::IgnoredAny>) {
            Some(Ok(_)) => TextForm::Json,
            _ => TextForm::Plain,
        }
    }
}

/// `text` (of the form `form`) with its escapes (rule 0) as spaces, byte for byte: a byte
/// offset into it is one into `text`. Borrowed when it has none.
pub(crate) fn blank_escapes(text: &str, form: TextForm) -> std::borrow::Cow<'_, str> {
    let mut ranges = escape_ranges(text);
    if form == TextForm::Json {
        ranges.extend(json_escape_ranges(text));
    }
    if ranges.is_empty() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut bytes = text.as_bytes().to_vec();
    for (start, end) in ranges {
        let escaped = bytes[end - 1];
        bytes[start..end].fill(b' ');
        // A JSON line break or tab stays one, after a space, so that runs join across it
        // (rule 2) as across a line break written out.
        if end - start == 2 && text.as_bytes()[start] == b'\\' {
            match escaped {
                b'n' => bytes[start + 1] = b'\n',
                b't' => bytes[start + 1] = b'\t',
                b'r' => bytes[start + 1] = b'\r',
                _ => {}
            }
        }
    }
    // Only ASCII bytes were replaced, by ASCII bytes.
    std::borrow::Cow::Owned(String::from_utf8(bytes).unwrap_or_else(|_| text.to_owned()))
}

/// The byte ranges of the escapes of JSON strings in `text` (rule 0): a backslash after an
/// even run of backslashes (none, or escaped ones) and the letter it escapes, or `\u` and its
/// four hex digits.
fn json_escape_ranges(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut ranges = Vec::new();
    let mut i = 0;
    while let Some(at) = memchr::memchr(b'\\', &bytes[i..]) {
        let start = i + at;
        let mut run = 0;
        while bytes.get(start + run) == Some(&b'\\') {
            run += 1;
        }
        // An even run is escaped backslashes (text); an odd one's last escapes what follows.
        let last = start + run - 1;
        i = start + run;
        if run % 2 == 0 {
            continue;
        }
        match bytes.get(i) {
            Some(b'n' | b't' | b'r' | b'b' | b'f' | b'/' | b'"') => {
                ranges.push((last, i + 1));
                i += 1;
            }
            Some(b'u') if bytes.get(i + 1..i + 5).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) => {
                ranges.push((last, i + 5));
                i += 5;
            }
            _ => {}
        }
    }
    ranges
}

/// The byte ranges of `text`'s terminal control sequences (rule 0), in order: ESC `[`,
/// parameter bytes (0x30–0x3F), intermediate bytes (0x20–0x2F) and a final byte (0x40–0x7E);
/// without its final byte it is none.
pub(crate) fn escape_ranges(text: &str) -> Vec<(usize, usize)> {
    const ESC: u8 = 0x1B;
    let bytes = text.as_bytes();
    let mut ranges = Vec::new();
    // Every text passes here: most have no ESC, found out at memchr's speed.
    let Some(mut i) = memchr::memchr(ESC, bytes) else { return ranges };
    while i < bytes.len() {
        if bytes[i] != ESC || bytes.get(i + 1) != Some(&b'[') {
            i += 1;
            continue;
        }
        let mut j = i + 2;
        while bytes.get(j).is_some_and(|b| (0x30..=0x3F).contains(b)) {
            j += 1;
        }
        while bytes.get(j).is_some_and(|b| (0x20..=0x2F).contains(b)) {
            j += 1;
        }
        if bytes.get(j).is_some_and(|b| (0x40..=0x7E).contains(b)) {
            ranges.push((i, j + 1));
            i = j + 1;
        } else {
            i += 1;
        }
    }
    ranges
}

/// The run of a unit that begins with `c`, if runs of its kind join across a line break
/// (rule 2): Han and kana, and the scripts of SA; not Hangul.
fn joins_across_lines(c: char) -> Option<Run> {
    match run_of(c) {
        Run::Cjk if matches!(c as u32, 0x1100..=0x11FF | 0x3130..=0x318F | 0xA960..=0xA97F | 0xAC00..=0xD7FF) => None,
        Run::None => None,
        run => Some(run),
    }
}

/// True for the text between two runs that a hard wrap leaves: one line break (`\n`, `\r\n`,
/// a lone `\r`, U+0085 or U+2028), with other white space around it (spaces, tabs, a no-break
/// or an ideographic space: a wrapped line's indent) and the invisible characters folding
/// drops (a zero width space before the break is still no break between words). A page or
/// paragraph break (U+000B, U+000C, U+2029) parts the runs, as a blank line does.
fn is_one_line_break(gap: &str) -> bool {
    let mut breaks = 0;
    let mut after_cr = false;
    for c in gap.chars() {
        match c {
            '\n' if after_cr => {}
            '\n' | '\r' | '\u{85}' | '\u{2028}' => breaks += 1,
            '\u{0B}' | '\u{0C}' | '\u{2029}' => return false,
            c if c.is_whitespace() || is_invisible(c) => {}
            _ => return false,
        }
        after_cr = c == '\r';
    }
    breaks == 1
}

/// The bigrams across line breaks of rule 2, given tokens in order: the last unit of a run
/// that joins across lines, and whether the next token begins a run of the same kind parted
/// from it by one line break.
#[derive(Default)]
struct LineJoin {
    /// The last token, when it was a unit that joins across lines: its position, its byte
    /// range in the text and its run; its term is in `unit`.
    last: Option<(u32, usize, usize, Run)>,
    unit: String,
    buf: String,
}

impl LineJoin {
    /// The bigram across a line break that goes before `t` (in `text`), if any.
    fn before(&mut self, text: &str, t: &TokenRef<'_>) -> Option<TokenRef<'_>> {
        let run = match t.kind {
            TokenKind::Lone | TokenKind::Unigram => t.term.chars().next().and_then(joins_across_lines),
            TokenKind::Word | TokenKind::Bigram | TokenKind::Part => None,
        };
        let last = std::mem::replace(&mut self.last, run.map(|r| (t.position, t.start, t.end, r)));
        // (A unit that begins with a mark, a line beginning with a vowel sign, is not joined:
        // without the break the mark would be part of the unit before.)
        let joined = match last {
            Some((position, start, end, r))
                if Some(r) == run
                    && t.position == position + 1
                    && t.start > end
                    && is_one_line_break(&text[end..t.start])
                    && !t.term.chars().next().is_some_and(is_combining_mark) =>
            {
                self.buf.clear();
                self.buf.push_str(&self.unit);
                self.buf.push_str(t.term);
                Some((position, start))
            }
            _ => None,
        };
        if run.is_some() {
            self.unit.clear();
            self.unit.push_str(t.term);
        }
        let (position, start) = joined?;
        Some(TokenRef { term: cut(&self.buf), position, kind: TokenKind::Bigram, start, end: t.end })
    }
}

/// [`for_each_token`] but for the bigrams across line breaks.
fn for_each_token_unjoined<F: FnMut(TokenRef<'_>)>(text: &str, emit: &mut F) {
    let bytes = text.as_bytes();
    let mut position = 0u32;
    let mut lower = String::new();
    let mut i = 0;
    while i < bytes.len() {
        if is_cut(bytes, i) {
            i += 1;
            continue;
        }
        let start = i;
        // Letters and digits first, by table; what stops them may still be inside the chunk.
        let (mut plain, mut upper) = (true, false);
        while i < bytes.len() {
            let class = ASCII_CLASS[usize::from(bytes[i])];
            if class == 0 {
                break;
            }
            upper |= class == UPPER;
            i += 1;
        }
        while i < bytes.len() && !is_cut(bytes, i) {
            plain = false;
            i += 1;
        }
        if position >= DOC_TOKENS_MAX {
            return;
        }
        let chunk = &text[start..i];
        if plain {
            let term = ascii_term(chunk, upper, &mut lower);
            emit(TokenRef { term, position, kind: TokenKind::Word, start, end: i });
            position += 1;
            continue;
        }
        if chunk.chars().all(|c| c.is_ascii() || is_unified_han(c)) {
            // ASCII and Chinese only: each Han character folds to itself and is one cluster
            // ([`is_unified_han`]), and no Unicode rule joins it to an ASCII character or
            // splits a run of ASCII letters and digits, so the tokens are those runs (lower
            // cased) and the Han runs' unigrams and bigrams, slices of the text, in the order
            // the whole-text rules give them. (Through those rules, the seven allocations and
            // the cluster and folding code of a two-character query were half of its parse
            // once other work had emptied the caches.)
            let cb = chunk.as_bytes();
            let mut j = 0;
            while j < cb.len() {
                let from = j;
                if cb[j].is_ascii_alphanumeric() {
                    while j < cb.len() && cb[j].is_ascii_alphanumeric() {
                        j += 1;
                    }
                    if position >= DOC_TOKENS_MAX {
                        return;
                    }
                    let word = &chunk[from..j];
                    let term = ascii_term(word, word.bytes().any(|b| b.is_ascii_uppercase()), &mut lower);
                    emit(TokenRef { term, position, kind: TokenKind::Word, start: start + from, end: start + j });
                    position += 1;
                } else if cb[j] < 0x80 {
                    j += 1;
                } else {
                    while j < cb.len() && cb[j] >= 0x80 {
                        j += 1;
                    }
                    // Every character of the run is three bytes.
                    let n = (j - from) / 3;
                    let kind = if n == 1 { TokenKind::Lone } else { TokenKind::Unigram };
                    for k in 0..n {
                        let (p, b) = (position + k as u32, from + k * 3);
                        if p >= DOC_TOKENS_MAX {
                            return;
                        }
                        emit(TokenRef { term: &chunk[b..b + 3], position: p, kind, start: start + b, end: start + b + 3 });
                        if k + 1 < n {
                            emit(TokenRef { term: &chunk[b..b + 6], position: p, kind: TokenKind::Bigram, start: start + b, end: start + b + 6 });
                        }
                    }
                    position += n as u32;
                }
            }
            continue;
        }
        let mut next = position;
        for t in tokenize_whole_unjoined(chunk) {
            let p = position + t.position;
            if p >= DOC_TOKENS_MAX {
                return;
            }
            emit(TokenRef { term: &t.term, position: p, kind: t.kind, start: start + t.start, end: start + t.end });
            next = p + 1;
        }
        position = next;
    }
}

/// [`tokenize`] of a text of the form `form` (rule 0).
#[cfg(test)]
pub(crate) fn tokenize_of(text: &str, form: TextForm) -> Vec<Token> {
    let mut out = Vec::new();
    for_each_token_of(text, form, &mut |t| {
        out.push(Token { term: t.term.to_string(), position: t.position, kind: t.kind, start: t.start, end: t.end })
    });
    out
}

/// Tokenizes `text`: at most [`DOC_TOKENS_MAX`] positions; later tokens are dropped. (For
/// tests: the index and queries borrow tokens through [`for_each_token`].)
#[cfg(test)]
pub(crate) fn tokenize(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    for_each_token(text, &mut |t| {
        out.push(Token { term: t.term.to_string(), position: t.position, kind: t.kind, start: t.start, end: t.end })
    });
    out
}

/// Tokenizes `text` by the rules of the module docs applied to the whole text at once (what
/// [`for_each_token`] does chunk by chunk; tests compare the two).
#[cfg(test)]
pub(crate) fn tokenize_whole(text: &str) -> Vec<Token> {
    let blanked = blank_escapes(text, TextForm::Plain);
    let text: &str = &blanked;
    let tokens = tokenize_whole_unjoined(text);
    let mut join = LineJoin::default();
    let mut out = Vec::with_capacity(tokens.len());
    let (mut parts, mut buf) = (Vec::new(), String::new());
    let owned = |b: TokenRef<'_>| Token { term: b.term.to_owned(), position: b.position, kind: b.kind, start: b.start, end: b.end };
    for t in tokens {
        let r = TokenRef { term: &t.term, position: t.position, kind: t.kind, start: t.start, end: t.end };
        if let Some(b) = join.before(text, &r) {
            out.push(owned(b));
        }
        let mut word_parts = Vec::new();
        if t.kind == TokenKind::Word {
            emit_parts(text, &r, &mut parts, &mut buf, &mut |p| word_parts.push(owned(p)));
        }
        out.push(t);
        out.extend(word_parts);
    }
    out
}

/// [`tokenize_whole`] but for the bigrams across line breaks (the chunks of [`for_each_token`]
/// are joined by its own pass).
fn tokenize_whole_unjoined(text: &str) -> Vec<Token> {
    let folded = Folded::new(text);
    let s = folded.text.as_str();
    let mut out = Tokens { tokens: Vec::new(), position: 0, folded: &folded };
    let mut stretch_start = 0;
    let mut stretch_run = Run::None;
    for (i, c) in s.char_indices() {
        let run = run_of(c);
        if run != stretch_run {
            out.stretch(stretch_start, i, stretch_run);
            stretch_start = i;
            stretch_run = run;
        }
    }
    out.stretch(stretch_start, s.len(), stretch_run);
    out.tokens
}

struct Tokens<'a> {
    tokens: Vec<Token>,
    position: u32,
    folded: &'a Folded,
}

impl Tokens<'_> {
    fn stretch(&mut self, start: usize, end: usize, run: Run) {
        if start == end {
            return;
        }
        let s = &self.folded.text[start..end];
        if run != Run::None {
            // The run's units (byte ranges in the folded text): characters of a CJK run,
            // grapheme clusters of the others.
            let units: Vec<(usize, usize)> = match run {
                Run::Cjk => s.char_indices().map(|(i, c)| (start + i, start + i + c.len_utf8())).collect(),
                _ => s.grapheme_indices(true).map(|(i, g)| (start + i, start + i + g.len())).collect(),
            };
            let n = units.len();
            let text = &self.folded.text;
            for (k, &(b, e)) in units.iter().enumerate() {
                let kind = if n == 1 { TokenKind::Lone } else { TokenKind::Unigram };
                let unit = cut_to(&text[b..e], UNIT_BYTES_MAX);
                if !self.push(unit.to_string(), kind, b, e) {
                    return;
                }
                if let Some(&(b2, e2)) = units.get(k + 1) {
                    let bigram = [unit, cut_to(&text[b2..e2], UNIT_BYTES_MAX)].concat();
                    self.push_same_position(bigram, b, e2);
                }
                self.position += 1;
            }
        } else {
            for (off, segment) in s.split_word_bound_indices() {
                let mut word_start = None;
                for (i, c) in segment.char_indices().chain(std::iter::once((segment.len(), ' '))) {
                    let inside = i < segment.len() && is_word_char(c);
                    match (inside, word_start) {
                        (true, None) => word_start = Some(i),
                        (false, Some(ws)) => {
                            word_start = None;
                            let word = &segment[ws..i];
                            if is_searchable(word) {
                                let b = start + off + ws;
                                if !self.push(cut(word).to_string(), TokenKind::Word, b, b + word.len()) {
                                    return;
                                }
                                self.position += 1;
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// Pushes a token at the current position; false once the position limit is reached.
    fn push(&mut self, term: String, kind: TokenKind, start: usize, end: usize) -> bool {
        if self.position >= DOC_TOKENS_MAX {
            return false;
        }
        let (start, end) = self.folded.original(start, end);
        self.tokens.push(Token { term, position: self.position, kind, start, end });
        true
    }

    fn push_same_position(&mut self, term: String, start: usize, end: usize) {
        let (start, end) = self.folded.original(start, end);
        self.tokens.push(Token { term, position: self.position, kind: TokenKind::Bigram, start, end });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::index::stem::Stems;
    use proptest::prelude::*;

    fn terms(text: &str) -> Vec<(String, u32)> {
        tokenize(text).into_iter().map(|t| (t.term, t.position)).collect()
    }

    #[test]
    fn index_token_folds_case_and_full_width() {
        assert_eq!(terms("ＲＥＬＥＡＳＥ Release"), vec![("release".into(), 0), ("release".into(), 1)]);
        // Letters whose lower case alone would keep them apart from their case-insensitive
        // equals: the sharp s, the Turkish dotted capital I.
        assert_eq!(terms("Straße STRASSE straẞe"), vec![("strasse".into(), 0), ("strasse".into(), 1), ("strasse".into(), 2)]);
        assert_eq!(terms("İSTANBUL İstanbul"), terms("istanbul istanbul"));
    }

    /// Greek final sigma folds to σ; variation selectors, of emoji and of Han characters, are
    /// dropped (a Han run goes on across one).
    #[test]
    fn index_token_folds_final_sigma_and_drops_variation_selectors() {
        assert_eq!(terms("ΟΔΟΣ"), terms("οδος"));
        assert_eq!(terms("ΟΔΟΣ"), vec![("οδοσ".into(), 0)]);
        assert_eq!(terms("葛\u{E0100}城"), terms("葛城"));
        assert_eq!(terms("葛\u{FE00}城"), terms("葛城"));
        let t = tokenize("葛\u{E0100}城");
        assert_eq!((t[1].term.as_str(), t[1].start, t[1].end), ("葛城", 0, "葛\u{E0100}城".len()), "the bigram's range is the original's");
    }

    /// Arabic and Hebrew with and without their optional marks are one text; Arabic and
    /// Persian letter variants are one letter; ranges still cover the marks.
    #[test]
    fn index_token_folds_arabic_and_hebrew_optional_marks_and_letter_variants() {
        for (marked, plain) in [
            ("كَتَبَ", "كتب"),
            ("العـــربية", "العربية"),
            ("أحمد إلى آخر", "احمد الي اخر"),
            ("مصطفى", "مصطفي"),
            ("یک کتاب", "يك كتاب"),
            ("الْقُرْآن", "القران"),
            ("שָׁלוֹם עוֹלָם", "שלום עולם"),
        ] {
            assert_eq!(terms(marked), terms(plain), "{marked}");
            assert_eq!(tokenize(marked), tokenize_whole(marked), "{marked}");
        }
        // Hebrew punctuation stays punctuation: maqaf parts words.
        assert_eq!(terms("בית־ספר"), vec![("בית".into(), 0), ("ספר".into(), 1)]);
        let t = tokenize("قال كَتَبَ");
        assert_eq!((t[1].term.as_str(), t[1].start, t[1].end), ("كتب", "قال ".len(), "قال كَتَبَ".len()), "the range covers the marks");
    }

    /// Runs of Han and kana parted by one line break (a hard wrap) also give the bigram across
    /// it; a blank line, other characters or Hangul do not.
    #[test]
    fn index_token_cjk_runs_join_across_one_line_break() {
        let across = |text: &str| tokenize(text).into_iter().filter(|t| t.kind == TokenKind::Bigram).map(|t| (t.term, t.position, t.start, t.end)).collect::<Vec<_>>();
        assert_eq!(across("机器\n学习"), vec![("机器".into(), 0, 0, 6), ("器学".into(), 1, 3, 10), ("学习".into(), 2, 7, 13)]);
        assert_eq!(terms("机器 \r\n  学习"), [terms("机器学习"), vec![]].concat().into_iter().collect::<Vec<_>>());
        assert_eq!(terms("データ\nベース"), terms("データベース"));
        assert_eq!(terms("机\n器"), vec![("机".into(), 0), ("机器".into(), 0), ("器".into(), 1)]);
        // One break of every kind, with the white space of an indent (ideographic, no-break)
        // around it.
        for text in ["机器\r学习", "机器\r\n学习", "机器\u{2028}学习", "机器\u{85}学习", "机器\n\u{3000}\u{3000}学习", "机器\u{A0}\n学习", "机器\t\u{200B}\n 学习"] {
            assert!(across(text).iter().any(|t| t.0 == "器学"), "{text:?}: {:?}", across(text));
        }
        // Not joined: a blank line (of any breaks), a page or paragraph break, a character
        // between, a space alone, Hangul, a word between.
        for text in ["机器\n\n学习", "机器\r\r学习", "机器\r\n\r\n学习", "机器\n\r学习", "机器\u{2029}学习", "机器\u{0C}学习", "机器\u{3000}学习", "机器\n-学习", "机器 学习", "机器\nab学习"] {
            assert!(!across(text).iter().any(|t| t.0 == "器学"), "{text}: {:?}", across(text));
        }
        assert!(!across("분석\n기").iter().any(|t| t.0 == "석기"));
        // The same from the whole-text rules.
        for text in ["机器\n学习", "データ\nベース", "葛\u{E0100}\n城", "ｶﾀ\nｶﾅ", "机器\r学习", "机器\n\u{3000}学习", "机器\u{2029}学习"] {
            assert_eq!(tokenize(text), tokenize_whole(text), "{text}");
        }
    }

    #[test]
    fn index_token_splits_inner_punctuation() {
        let t: Vec<String> = tokenize("see record.rs, parse_query and don’t").into_iter().map(|t| t.term).collect();
        assert_eq!(t, ["see", "record", "rs", "parse", "query", "and", "don", "t"]);
    }

    /// Words in camelCase or PascalCase give their parts after them, at their position, with
    /// the parts' ranges (rule 5); other words do not.
    #[test]
    fn index_token_camel_case_words_give_their_parts() {
        let with_kinds = |text: &str| -> Vec<(String, u32, TokenKind, String)> {
            tokenize(text).into_iter().map(|t| (t.term, t.position, t.kind, text[t.start..t.end].to_string())).collect()
        };
        let part = |term: &str, position: u32, original: &str| (term.to_string(), position, TokenKind::Part, original.to_string());
        let word = |term: &str, position: u32, original: &str| (term.to_string(), position, TokenKind::Word, original.to_string());
        assert_eq!(
            with_kinds("a parseQuery b"),
            [
                word("a", 0, "a"),
                word("parsequery", 1, "parseQuery"),
                part("parse", 1, "parse"),
                part("query", 1, "Query"),
                word("b", 2, "b"),
            ]
        );
        let parts = |text: &str| -> Vec<String> {
            tokenize(text).into_iter().filter(|t| t.kind == TokenKind::Part).map(|t| t.term).collect()
        };
        assert_eq!(parts("HTTPServer"), ["http", "server"]);
        assert_eq!(parts("APIs IDs URLsToFetch PRsMerged"), ["urls", "to", "fetch", "urlsto", "tofetch", "prs", "merged"], "plurals of acronyms");
        assert_eq!(parts("XMLHttpRequest"), ["xml", "http", "request", "xmlhttp", "httprequest"]);
        // Two neighbouring parts joined (one of them a letter, too), not the whole word: a
        // name written as one word finds the longer name it begins or ends.
        assert_eq!(parts("TypeScriptCompiler"), ["type", "script", "compiler", "typescript", "scriptcompiler"]);
        assert_eq!(parts("OAuthToken newGitHubClient"), ["auth", "token", "oauth", "authtoken", "new", "git", "hub", "client", "newgit", "github", "hubclient"]);
        assert_eq!(parts("parseQuery"), ["parse", "query"], "two parts: joined, they are the word");
        assert_eq!(parts("utf8Decode base64URL"), ["utf8", "decode", "base64", "url"]);
        assert_eq!(parts("iPhone getX"), ["phone", "get"], "parts of one letter are left out");
        assert_eq!(parts("fooFoo"), ["foo"], "a part is given once per word");
        assert_eq!(parts("用parseQuery写"), ["parse", "query"], "the ASCII and Han path");
        assert_eq!(parts("ｐａｒｓｅＱｕｅｒｙ élanVital naïveParser"), Vec::<String>::new(), "ASCII words only");
        assert_eq!(parts("x1Y2 B2C"), ["x1", "y2", "b2"], "an upper-case letter after a digit begins a part");
        for plain in ["hello Hello HELLO snake_case CI aB A1", "x1y2", "tag's"] {
            assert_eq!(parts(plain), Vec::<String>::new(), "{plain}");
        }
        let long: String = (0..40).map(|i| if i % 2 == 0 { "Ab" } else { "Cd" }).collect::<Vec<_>>().join("");
        assert_eq!(parts(&long), ["ab", "cd", "abcd", "cdab"]);
        // A part the 128-byte cut shortens is left out; one that ends at the cut is kept.
        let cut_inside = format!("{}Configuration", "Ab".repeat(60));
        assert_eq!(cut_inside.len(), 133);
        assert_eq!(parts(&cut_inside), ["ab", "abab"]);
        let cut_after = format!("{}Configuration", "Ab".repeat(57));
        assert_eq!(cut_after.len(), 127);
        assert_eq!(parts(&cut_after), ["ab", "configuration", "abab", "abconfiguration"]);
        assert_eq!(parts(&format!("{}Configuration", "Ab".repeat(58))), ["ab", "abab"], "cut one byte short");
        // What the word's last cluster takes in after its letters (a non-joiner, a variation
        // selector) leaves its parts as they are.
        assert_eq!(parts("parseQuery\u{200C} is"), ["parse", "query"]);
        assert_eq!(parts("parseQuery\u{FE0F}"), ["parse", "query"]);
        let many: String = (b'a'..=b'z').map(|c| format!("{}x", c.to_ascii_uppercase() as char)).collect();
        assert_eq!(parts(&many).len(), PARTS_MAX);
        // Pairs and positions of the words around are the word's own.
        let positions: Vec<u32> = tokenize("the getUserById of it").into_iter().map(|t| t.position).collect();
        assert_eq!(positions, [0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3]);
    }

    /// The soft hyphen and the marks of bidirectional text fold away, as the zero width space
    /// does: the word goes on across them. Terminal colour sequences are white space (rule 0),
    /// byte for byte, so ranges still point into the original; an unfinished one is text.
    #[test]
    fn index_token_drops_invisible_characters_and_terminal_colours() {
        assert_eq!(terms("Donau\u{AD}dampf\u{AD}schiff"), [("donaudampfschiff".to_string(), 0)]);
        assert_eq!(terms("abc\u{200E}def \u{202B}xyz\u{202C}"), [("abcdef".to_string(), 0), ("xyz".to_string(), 1)]);
        assert_eq!(terms("\u{2067}מילה\u{2069}"), terms("מילה"));
        let coloured = "\x1b[1m\x1b[31merror\x1b[0m: build \x1b[38;5;208mfailed\x1b[K";
        let tokens = tokenize(coloured);
        let found: Vec<(&str, u32, &str)> = tokens.iter().map(|t| (t.term.as_str(), t.position, &coloured[t.start..t.end])).collect();
        assert_eq!(found, [("error", 0, "error"), ("build", 1, "build"), ("failed", 2, "failed")]);
        assert_eq!(terms("\x1b[31"), [("31".to_string(), 0)], "no final byte: not a sequence");
        assert_eq!(terms("\x1b[32mPASS\x1b[0m"), [("pass".to_string(), 0)]);
        // Han across a colour change and a line break still joins; a soft hyphen at a line's
        // end is no gap.
        assert!(terms("数\x1b[0m\n据").contains(&("数据".to_string(), 0)));
        assert!(terms("数\u{AD}\n据").contains(&("数据".to_string(), 0)));
    }

    /// In a text of the JSON form (a tool call's input), the escapes of its strings are white
    /// space: the letter after `\n` begins the next word; escaped backslashes are text (a break
    /// each), so a path's `\\new` keeps `new`. In plain text the same bytes are text.
    #[test]
    fn index_token_json_escapes_part_words_in_tool_calls_only() {
        let text = r#"Write {"path":"C:\\new\\tools","content":"import os\ndef main():\n\treturn \"x\u0041y\\\nz"}"#;
        let of = |form: TextForm| {
            let mut out = Vec::new();
            for_each_token_of(text, form, &mut |t| out.push((t.term.to_string(), text[t.start..t.end].to_string())));
            out
        };
        let json: Vec<String> = of(TextForm::Json).into_iter().map(|(term, original)| {
            assert_eq!(term, original.to_lowercase(), "ranges point into the original");
            term
        }).collect();
        assert_eq!(json, ["write", "path", "c", "new", "tools", "content", "import", "os", "def", "main", "return", "x", "y", "z"]);
        let plain: Vec<String> = of(TextForm::Plain).into_iter().map(|(term, _)| term).collect();
        // Plain, an escape's letter is text, and after a line break's the word without it a
        // part (rule 6; `z` is too short to be one).
        assert_eq!(
            plain,
            ["write", "path", "c", "new", "tools", "content", "import", "os", "ndef", "def", "main", "n", "treturn", "x", "u0041y", "nz"]
        );
    }

    /// Outside the JSON form, a word glued to a string escape's letters also gives the word
    /// without them, and its camelCase parts (rule 6); an escaped backslash, or a letter that
    /// escapes nothing, gives none.
    #[test]
    fn index_token_a_word_after_a_string_escape_gives_the_word_without_its_letters() {
        let parts = |text: &str| -> Vec<(String, u32, String)> {
            tokenize(text).into_iter().filter(|t| t.kind == TokenKind::Part).map(|t| (t.term, t.position, text[t.start..t.end].to_string())).collect()
        };
        let part = |term: &str, position: u32, original: &str| (term.to_string(), position, original.to_string());
        assert_eq!(parts(r#"print("Done\nExiting now")"#), [part("exiting", 2, "Exiting")]);
        assert_eq!(parts(r"\nparseQuery"), [part("parsequery", 0, "parseQuery"), part("parse", 0, "parse"), part("query", 0, "Query")]);
        assert_eq!(parts(r"\\\ndone"), [part("done", 0, "done")], "three backslashes: the last escapes");
        // No part: an escaped backslash, the other escapes (Windows paths and LaTeX begin with
        // their letters: `\trace`, `\task`, `\rangle`), a word not of ASCII letters and digits,
        // and the JSON form, which reads the escapes as white space.
        for text in [r"C:\\new", r"C:\Users\ana\trace\task.md", r"\langle x \rangle \bold \fx", r"\u00e9tude", r"\xtools", r"\d+", r"\nпривет"] {
            assert_eq!(parts(text), Vec::new(), "{text}");
        }
        let mut json = Vec::new();
        for_each_token_of(r#"{"a":"x\nError"}"#, TextForm::Json, &mut |t| json.push((t.term.to_string(), t.kind)));
        assert_eq!(json, [("a".to_string(), TokenKind::Word), ("x".into(), TokenKind::Word), ("error".into(), TokenKind::Word)]);
        // The same from the whole-text rules.
        for text in [r#"print("Done\nExiting")"#, r"\nparseQuery \u00e9tude", r"C:\new\tools\trace"] {
            assert_eq!(tokenize(text), tokenize_whole(text), "{text}");
        }
    }

    /// A tool call's text is read as JSON only when it ends in a JSON value (and holds a
    /// backslash, without which the forms read alike); Codex's patches and shell commands are
    /// their own bytes.
    #[test]
    fn index_token_a_tool_call_is_json_when_its_text_ends_in_a_json_value() {
        use origin_engine::record::EventKind;
        let json = r#"Write {"file_path":"/a.py","content":"import os\ndef main():"}"#;
        assert_eq!(TextForm::of(EventKind::ToolUse, json), TextForm::Json);
        assert_eq!(TextForm::of(EventKind::ToolUse, r#"shell ["cmd","/c","dir C:\\tools"]"#), TextForm::Json);
        assert_eq!(TextForm::of(EventKind::Message, json), TextForm::Plain, "a message is plain");
        // A tool result that is one JSON value whole; not one that only ends in one.
        assert_eq!(TextForm::of(EventKind::ToolResult, " {\"out\":\"a\\nb\"}\n"), TextForm::Json);
        assert_eq!(TextForm::of(EventKind::ToolResult, json), TextForm::Plain, "printed output ending in JSON");
        assert_eq!(TextForm::of(EventKind::ToolResult, "[1, \"C:\\tools\"] and more"), TextForm::Plain);
        for plain in [
            "apply_patch *** Begin Patch\n+\\begin{itemize}\n+\\item \\textbf{results}\n*** End Patch",
            "cmd /c dir C:\\tools\\nightly",
            r#"Write {"content":"cut at ingest \n"#,
            r#"Read {"file_path":"/a.py"}"#,
        ] {
            assert_eq!(TextForm::of(EventKind::ToolUse, plain), TextForm::Plain, "{plain}");
        }
        // A JSON line break is one still: Han joins across it as across a line written out.
        let mut terms = Vec::new();
        for_each_token_of(r#"Write {"c":"发布\n流程"}"#, TextForm::Json, &mut |t| terms.push(t.term.to_string()));
        assert!(terms.contains(&"布流".to_string()), "{terms:?}");
    }

    #[test]
    fn index_token_cjk_runs_are_bigrams_and_unigrams() {
        assert_eq!(
            terms("用中文说"),
            vec![
                ("用".into(), 0),
                ("用中".into(), 0),
                ("中".into(), 1),
                ("中文".into(), 1),
                ("文".into(), 2),
                ("文说".into(), 2),
                ("说".into(), 3)
            ]
        );
        let kinds: Vec<TokenKind> = tokenize("a中b").into_iter().map(|t| t.kind).collect();
        assert_eq!(kinds, [TokenKind::Word, TokenKind::Lone, TokenKind::Word]);
    }

    /// Thai, Lao, Khmer and Myanmar (written without spaces between words, which Unicode's
    /// word boundaries cannot find) are runs like CJK's, of grapheme clusters: a letter with
    /// its marks is one unit; punctuation and another script part runs; a hard wrap joins.
    #[test]
    fn index_token_spaceless_scripts_are_runs_of_grapheme_clusters() {
        let shape = |text: &str| tokenize(text).into_iter().map(|t| (t.term, t.position, t.kind)).collect::<Vec<_>>();
        let (u, b) = (TokenKind::Unigram, TokenKind::Bigram);
        assert_eq!(
            shape("ข้าวผัด"),
            vec![
                ("ข้".into(), 0, u),
                ("ข้า".into(), 0, b),
                ("า".into(), 1, u),
                ("าว".into(), 1, b),
                ("ว".into(), 2, u),
                ("วผั".into(), 2, b),
                ("ผั".into(), 3, u),
                ("ผัด".into(), 3, b),
                ("ด".into(), 4, u)
            ]
        );
        // A run of one cluster is lone; a word beside a run stays a word.
        assert_eq!(shape("go ที่ ok"), vec![("go".into(), 0, TokenKind::Word), ("ที่".into(), 1, TokenKind::Lone), ("ok".into(), 2, TokenKind::Word)]);
        // Khmer's full stop parts runs (a consonant, its subscript and its vowel signs are one
        // cluster); so does a change of script (Thai then Lao).
        let terms_of = |text: &str| tokenize(text).into_iter().map(|t| t.term).collect::<Vec<_>>();
        assert_eq!(terms_of("ខ្ញុំ។ស"), ["ខ្ញុំ", "ស"]);
        assert_eq!(terms_of("ខ្ញុំស"), ["ខ្ញុំ", "ខ្ញុំស", "ស"]);
        assert_eq!(terms_of("กขສະ"), ["ก", "กข", "ข", "ສ", "ສະ", "ະ"]);
        // Clusters are Unicode's: Myanmar's kinzi joins the consonant after it; its tall AA
        // (U+102C) stands alone.
        assert_eq!(terms_of("မင်္ဂလာ"), ["မ", "မင်္ဂ", "င်္ဂ", "င်္ဂလ", "လ", "လာ", "ာ"]);
        // A cluster is cut to 64 bytes, and a bigram of two is longer than either (else it
        // would be the unigram's term again, at the same position).
        let long = format!("ก{}", "\u{E49}".repeat(60));
        let t = tokenize(&format!("{long}ข"));
        assert_eq!(t.iter().map(|t| (t.term.len(), t.position, t.kind)).collect::<Vec<_>>(), [(63, 0, u), (66, 0, b), (3, 1, u)]);
        assert_eq!(t[0].end, long.len(), "the range is the whole cluster");
        // Hard-wrapped: the clusters either side of one line break make a bigram; not when the
        // next line begins with a mark (without the break, the mark would be in the unit before).
        assert!(!tokenize("ก\n\u{E31}").iter().any(|t| t.kind == TokenKind::Bigram));
        // The invisible space some writers put between words is no break, before a line
        // break either.
        assert_eq!(terms("ខ្ញុំ\u{200B}ស្រឡាញ់"), terms("ខ្ញុំស្រឡាញ់"));
        assert_eq!(terms("ข้าว\u{200B}\nผัด"), terms("ข้าว\nผัด"));
        // SARA AM folds to a mark and a letter: a line beginning with it is not joined either.
        assert!(!tokenize("ก\nำ").iter().any(|t| t.kind == TokenKind::Bigram && t.term.starts_with('ก')), "{:?}", tokenize("ก\nำ"));
        assert_eq!(terms("fo\u{200B}o\u{FEFF}bar\u{2060}"), terms("foobar"));
        // A zero width joiner after a letter joins nothing a search tells apart; in an emoji
        // it makes the sequence, one word. (The non-joiner parts words, as a space would.)
        assert_eq!(terms("数\u{200D}据库 pre\u{200D}fix"), terms("数据库 prefix"));
        assert_eq!(terms("क्\u{200D}ष"), terms("क्ष"));
        assert_eq!(terms("cafe\u{200D}\u{301}"), terms("caf\u{E9}"), "composed across it");
        let family = "👨\u{200D}👩\u{200D}👧";
        assert_eq!(terms(family), [(family.to_string(), 0)]);
        assert_eq!(terms("ko\u{200C}de"), [("ko".to_string(), 0), ("de".to_string(), 1)]);
        let across: Vec<String> = tokenize("ข้าว\nผัด").into_iter().filter(|t| t.kind == TokenKind::Bigram).map(|t| t.term).collect();
        assert!(across.contains(&"วผั".to_string()), "{across:?}");
        let apart: Vec<String> = tokenize("ข้าว\n\nผัด").into_iter().map(|t| t.term).collect();
        assert!(!apart.contains(&"วผั".to_string()), "{apart:?}");
        for text in ["ข้าว\nผัด", "ກິນເຂົ້າ", "ខ្ញុំស្រឡាញ់", "ข้าว ผัด", "a\u{E31}ข"] {
            assert_eq!(tokenize(text), tokenize_whole(text), "{text}");
        }
    }

    #[test]
    fn index_token_emoji_are_words() {
        let t: Vec<String> = tokenize("ship it 🚀🚀 ❤️ 👍🏽!").into_iter().map(|t| t.term).collect();
        assert_eq!(t, ["ship", "it", "🚀", "🚀", "❤", "👍🏽"]);
    }

    #[test]
    fn index_token_ranges_point_into_the_original() {
        let text = "Ｒｕｓｔ で書く";
        for t in tokenize(text) {
            assert!(text.is_char_boundary(t.start) && text.is_char_boundary(t.end), "{t:?}");
        }
        let first = &tokenize(text)[0];
        assert_eq!(&text[first.start..first.end], "Ｒｕｓｔ");
    }

    #[test]
    fn index_token_ranges_survive_mixed_ascii_and_combining_marks() {
        let text = "Cafe\u{301} ＲＵＳＴ e\u{301}te\u{301} don’t 東京 x\u{1F680}y Ａb";
        let shown: Vec<(String, &str)> = tokenize(text)
            .into_iter()
            .filter(|t| t.kind != TokenKind::Unigram)
            .map(|t| (t.term, &text[t.start..t.end]))
            .collect();
        let expected: Vec<(String, &str)> = [
            ("café", "Cafe\u{301}"),
            ("rust", "ＲＵＳＴ"),
            ("été", "e\u{301}te\u{301}"),
            ("don", "don"),
            ("t", "t"),
            ("東京", "東京"),
            ("x", "x"),
            ("\u{1F680}", "\u{1F680}"),
            ("y", "y"),
            ("ab", "Ａb"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b))
        .collect();
        assert_eq!(shown, expected);
    }

    #[test]
    fn index_token_long_words_are_cut_alike() {
        let long = "x".repeat(500);
        let t = tokenize(&long);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].term.len(), TERM_SIZE_BYTES_MAX);
    }

    /// Pieces of every kind the rules treat specially, for texts that mix them.
    const MIXED: &[&str] = &[
        "release", "Release", "ＲＥＬＥＡＳＥ", "e\u{301}", "café", "naïve", "don't", "don’t", "record.rs", "parse_query",
        "3,000", "3.14", "发布", "流程", "東京タワー", "ﾀﾜｰ", "한국어", "🚀", "👍🏽", "❤️", "#\u{FE0F}\u{20E3}", "ﬁle", "Ⅻ", "x\u{200D}y",
        "'\u{301}", "٣", "Ǆ", "ß", "İ", "\u{1F1EF}\u{1F1F5}", "a\u{30A2}b", "中a", "a中", "中", "机器学习",
        "ข้าวผัด", "ที่", "ກິນເຂົ້າ", "ខ្ញុំ។", "မင်္ဂလာ", "\u{E31}", "ำ", "๏", "كَتَبَ", "ـ", "\u{64E}", "آ", "ی", "שָׁלוֹם", "־",
        "\u{200B}", "\u{2060}", "\u{FEFF}", "ẞ", "İ", "\u{301}e",
        "parseQuery", "HTTPServer", "utf8Decode", "aB", "fooFoo", "Q",
    ];
    const GLUE: &[&str] = &["", " ", "\n", ".", ",", "'", "’", "-", "_", "/", "(", "）", "\u{3000}", "\t"];

    /// Every CJK Unified Ideograph is its own NFKC form and lower case, and a string of them
    /// (after an ASCII character) is one grapheme cluster per character: what folding them
    /// directly assumes.
    #[test]
    fn index_token_unified_han_folds_to_itself() {
        use unicode_normalization::UnicodeNormalization;
        let all: String = ('\u{4E00}'..='\u{9FFF}').collect();
        assert_eq!(all.nfkc().collect::<String>(), all);
        assert_eq!(all.to_lowercase(), all);
        for first in ["a", "Z", "\n", "\r", "'", " "] {
            let s = format!("{first}{all}");
            assert_eq!(s.graphemes(true).count(), s.chars().count(), "after {first:?}");
        }
        // The directly folded stretch, against the tables, on a text that mixes them.
        let text = "Build 失败了：数据库「连接」A中b東京タワー한국어e\u{301}中\u{301}文";
        assert_eq!(Folded::fold(text, true), Folded::fold(text, false));
    }

    /// At the position limit, the chunked tokenizer stops where the whole-text rules do,
    /// inside a Chinese run (its fast path), a kana run and a run of words alike.
    #[test]
    fn index_token_the_position_limit_cuts_alike_in_every_path() {
        let max = DOC_TOKENS_MAX as usize;
        for (before, tail) in [(max - 2, "机器学习 中文"), (max - 1, "中 文"), (max - 2, "A 中"), (max - 1, "中A 文"), (max - 3, "東京タワー w"), (max - 1, "w x y")] {
            let text = format!("{}{tail}", "w ".repeat(before));
            let (a, b) = (tokenize(&text), tokenize_whole(&text));
            let shape = |v: &[Token]| v.iter().skip(before.saturating_sub(2)).map(|x| (x.term.clone(), x.position, x.kind)).collect::<Vec<_>>();
            assert_eq!(shape(&a), shape(&b), "{tail}");
            assert_eq!(a.len(), b.len(), "{tail}");
            assert_eq!(a.last().map(|t| t.position), Some(DOC_TOKENS_MAX - 1), "{tail}");
        }
    }

    proptest! {
        /// Folding Han stretches directly gives the text and the map back to the original
        /// that the tables give, on texts of every script, Han-rich ones included.
        #[test]
        fn index_token_han_folded_directly_as_by_the_tables(parts in proptest::collection::vec((0..MIXED.len() + 4, 0..GLUE.len()), 0..24), han in "[\u{4E00}-\u{9FFF}a-zA-Z\u{301}\u{3099} ]{0,40}", text in "\\PC{0,60}") {
            let mut mixed = String::new();
            for (p, g) in parts {
                mixed.push_str(MIXED.get(p).copied().unwrap_or("中文数据"));
                mixed.push_str(GLUE[g]);
            }
            for t in [mixed, han, text] {
                prop_assert_eq!(Folded::fold(&t, true), Folded::fold(&t, false), "{:?}", t);
            }
        }

        /// The chunked tokenizer gives exactly the tokens (terms, positions, kinds) of the
        /// whole-text rules on texts that mix every script and special case. Ranges may be
        /// narrower: the whole-text rules map a token back to whole grapheme clusters, so a
        /// mark after a space brings the space along; a chunk starts after the space.
        #[test]
        fn index_token_chunked_equals_whole_text_rules(parts in proptest::collection::vec((0..MIXED.len(), 0..GLUE.len()), 0..24), text in "\\PC{0,60}") {
            let mut mixed = String::new();
            for (p, g) in parts {
                mixed.push_str(MIXED[p]);
                mixed.push_str(GLUE[g]);
            }
            for t in [mixed, text] {
                let (a, b) = (tokenize(&t), tokenize_whole(&t));
                let shape = |v: &[Token]| v.iter().map(|x| (x.term.clone(), x.position, x.kind)).collect::<Vec<_>>();
                prop_assert_eq!(shape(&a), shape(&b), "{:?}", t);
                for (x, y) in a.iter().zip(&b) {
                    prop_assert!(y.start <= x.start && x.end <= y.end && x.start < x.end, "{:?}: {:?} outside {:?}", t, x, y);
                }
            }
        }

        /// Any text tokenizes (and stems) without panicking, positions ascend, and every range
        /// is a non-empty slice of the original on character boundaries.
        #[test]
        fn index_token_never_panics(text in "\\PC{0,80}", bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let stems = Stems::new();
            for text in [text, String::from_utf8_lossy(&bytes).into_owned()] {
                let tokens = tokenize(&text);
                prop_assert!(tokens.windows(2).all(|w| w[0].position <= w[1].position));
                for t in &tokens {
                    prop_assert!(t.start < t.end && t.end <= text.len());
                    prop_assert!(text.is_char_boundary(t.start) && text.is_char_boundary(t.end));
                    let _ = stems.partial_term(t);
                }
            }
        }
    }
}
