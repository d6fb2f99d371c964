//! The spec's conventions shared by every tool and CLI command: time arguments, times in
//! results, id shapes, and cutting text with a note of how much was cut.

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};
use origin_projections::index::cluster_start;

/// Sources an event id may name.
pub const SOURCES: [&str; 5] = ["claude-code", "codex", "cursor", "zcode", "grok"];

/// A time in results: ISO 8601 in the server's local time zone (`TZ` honoured), with
/// milliseconds and offset, e.g. `2026-10-20T09:12:30.000+08:00`. Where the zone's offset then
/// was not of whole minutes (local mean time, before about 1900), which ISO 8601 cannot write,
/// the time is given in UTC (`+00:00`).
pub fn format_time(unix_ms: i64, tz: &TimeZone) -> String {
    match Timestamp::from_millisecond(unix_ms) {
        Ok(t) => {
            let zoned = t.to_zoned(tz.clone());
            let zoned = if zoned.offset().seconds() % 60 == 0 { zoned } else { t.to_zoned(TimeZone::UTC) };
            zoned.strftime("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string()
        }
        Err(_) => "1970-01-01T00:00:00.000+00:00".to_owned(),
    }
}

/// The server's local time zone: `TZ` when set and known, else the system's.
pub fn local_tz() -> TimeZone {
    TimeZone::system()
}

/// `t` in whole milliseconds: the first at or after it (`up`), else the last at or before it.
fn whole_millisecond(t: Timestamp, up: bool) -> i64 {
    let ns = t.as_nanosecond();
    let ms = ns.div_euclid(1_000_000) + i128::from(up && ns.rem_euclid(1_000_000) != 0);
    // Timestamps stay within about ±10^4 years: far inside i64 milliseconds.
    i64::try_from(ms).unwrap_or(if ms < 0 { i64::MIN } else { i64::MAX })
}

/// Parses a time argument: relative (`30m`, `24h`, `7d`, `2w`, counted back from `now`), or
/// absolute (a date, `2026-10-20`, meaning its start in the local time zone; or ISO 8601 with
/// or without an offset, local when without). Returns Unix milliseconds or the reason. Times
/// are kept in milliseconds and compared as `since <= time < until`: a finer time rounds up,
/// which keeps both comparisons as they are for every millisecond (rounding down let `since`
/// take in the millisecond before it, and `until` leave out the one it falls in).
pub fn parse_time_arg(value: &str, now: &Zoned) -> Result<i64, String> {
    parse_time(value, now, true)
}

/// [`parse_time_arg`] for a bound that takes in the time given (`time <= bound`): a time finer
/// than a millisecond rounds down, to the last whole millisecond at or before it.
pub fn parse_time_arg_inclusive(value: &str, now: &Zoned) -> Result<i64, String> {
    parse_time(value, now, false)
}

/// [`parse_time_arg`], an absolute time finer than a millisecond rounded up (`up`) or down.
fn parse_time(value: &str, now: &Zoned, up: bool) -> Result<i64, String> {
    parse_time_probing(value, now, up, true)
}

/// [`parse_time`]; with `probe_range`, a value of a time's shape that is none is looked at once
/// more in another year, to tell a year out of reach from a text that is no time.
fn parse_time_probing(value: &str, now: &Zoned, up: bool, probe_range: bool) -> Result<i64, String> {
    let v = value.trim();
    if v.is_empty() {
        return Err("is empty; use 30m, 24h, 7d, 2w, a date like 2026-10-20, or ISO 8601".into());
    }
    if let Some(unit) = v.chars().last().filter(|c| matches!(c, 'm' | 'h' | 'd' | 'w')) {
        let digits = &v[..v.len() - 1];
        // `-3d` (or `+3d`): a duration already counts back from now; its sign is said, not
        // taken for a time that is none.
        if let Some(unsigned) = digits.strip_prefix(['-', '+']).filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())) {
            return Err(format!("{v:?}: a duration counts back from now, unsigned; write {:?} (a time after now is a date or ISO 8601)", format!("{unsigned}{unit}")));
        }
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            let n: i64 = digits.parse().map_err(|_| format!("{v:?} is too large"))?;
            let ms_per = match unit {
                'm' => 60_000,
                'h' => 3_600_000,
                'd' => 86_400_000,
                _ => 7 * 86_400_000,
            };
            let back = n.checked_mul(ms_per).filter(|b| *b <= 100 * 365 * 86_400_000).ok_or_else(|| format!("{v:?} reaches back more than 100 years"))?;
            return Ok(now.timestamp().as_millisecond() - back);
        }
    }
    if let Ok(t) = v.parse::<Timestamp>() {
        return Ok(whole_millisecond(t, up));
    }
    if let Ok(dt) = v.parse::<jiff::civil::DateTime>() {
        if v.contains('T') || v.contains(' ') {
            return dt.to_zoned(now.time_zone().clone()).map(|z| whole_millisecond(z.timestamp(), up)).map_err(|_| out_of_range(v));
        }
    }
    let local = |d: Date| d.to_zoned(now.time_zone().clone()).map(|z| z.timestamp().as_millisecond()).map_err(|_| out_of_range(v));
    if let Ok(d) = v.parse::<Date>() {
        return local(d);
    }
    // ISO 8601's other dates: a week date (`2026-W43-3`, its week's Wednesday) and an ordinal
    // date (`2026-294`, the year's 294th day).
    if let Ok(w) = v.parse::<jiff::civil::ISOWeekDate>() {
        return local(w.date());
    }
    if let Some((y, d)) = v.split_once('-').filter(|(y, d)| y.len() == 4 && d.len() == 3 && y.bytes().chain(d.bytes()).all(|b| b.is_ascii_digit())) {
        if let (Ok(y), Ok(d)) = (y.parse::<i16>(), d.parse::<i16>()) {
            if let Ok(date) = Date::new(y, 1, 1).and_then(|first| first.with().day_of_year(d).build()) {
                return local(date);
            }
        }
    }
    // A month (`2026-10`): its first day.
    if let Some((y, m)) = v.split_once('-').filter(|(y, m)| y.len() == 4 && m.len() == 2 && y.bytes().chain(m.bytes()).all(|b| b.is_ascii_digit())) {
        if let (Ok(y), Ok(m)) = (y.parse::<i16>(), m.parse::<i8>()) {
            if let Ok(d) = Date::new(y, m, 1) {
                return local(d);
            }
        }
    }
    // A date or time whose year Origin's times cannot reach: the same text in the year 2001 (a
    // year without a 29th of February, so that no invalid date passes) is a time.
    let signed = usize::from(v.starts_with(['-', '+']));
    let year_digits = v[signed..].bytes().take_while(u8::is_ascii_digit).count();
    let after_year = &v[signed + year_digits..];
    // (A signed year is written with six digits in ISO 8601, as jiff reads it.)
    let year_shape = if signed == 1 { year_digits == 6 } else { year_digits >= 4 };
    if probe_range && year_shape && after_year.starts_with('-') && parse_time_probing(&format!("2001{after_year}"), now, up, false).is_ok() {
        return Err(out_of_range(v));
    }
    Err(format!("{v:?} is not a time; use 30m, 24h, 7d, 2w, a date like 2026-10-20 (or a month, 2026-10), or ISO 8601"))
}

fn out_of_range(v: &str) -> String {
    // jiff's bounds, which keep every time zone's offset within range: about a day short of
    // each end of the years -9999 and 9999 (so `9999-12-31` in UTC is out of reach).
    // Written as a time argument is (a year before 0 with six digits), to the second.
    let second = |t: Timestamp| Timestamp::from_second(t.as_second()).map_or_else(|_| t.to_string(), |t| t.to_string());
    format!("{v:?} is outside the times Origin can hold ({} to {})", second(Timestamp::MIN), second(Timestamp::MAX))
}

/// True for an entry id: `ent_` and 12 to 32 hex characters.
pub fn is_entry_id(id: &str) -> bool {
    id.strip_prefix("ent_").is_some_and(|h| (12..=32).contains(&h.len()) && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// True for a tombstone id: `tmb_` and 12 to 32 hex characters.
pub fn is_tombstone_id(id: &str) -> bool {
    id.strip_prefix("tmb_").is_some_and(|h| (12..=32).contains(&h.len()) && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// True for an event id: `<source>:<id in the source>` with a known source.
pub fn is_event_id(id: &str) -> bool {
    id.split_once(':').is_some_and(|(s, rest)| SOURCES.contains(&s) && !rest.is_empty())
}

/// Cuts `text` to at most `max` characters (not bytes); when anything is cut, notes how many
/// characters at the end. The cut falls between grapheme clusters: a letter keeps its accents,
/// an emoji its modifier and the rest of its sequence (so fewer than `max` may be kept).
pub fn cut(text: &str, max: usize) -> String {
    cut_noting(text, max, 0)
}

/// [`cut`] of an event's text, `cut_at_ingest` characters of which were cut when it was stored
/// (its text then holds ingest's marker, [`origin_ingest::limits::cut_marker`], at its end or
/// before the end it kept): what is shown is taken from before the marker, and the note
/// counts every character of the event not shown (the kept end and those cut at ingest too),
/// and not the marker's own.
pub fn cut_event(text: &str, cut_at_ingest: u64, max: usize) -> String {
    if cut_at_ingest == 0 {
        return cut(text, max);
    }
    // Without the marker (an adapter wrote another), the text is cut as it is, and the
    // characters cut at ingest are still counted.
    // Ingest's marker: at the end (events stored before the end was kept), or the last one
    // within the beginning ingest keeps (the same words in the text itself come before it, or
    // in the end, past that beginning).
    let marker = origin_ingest::limits::cut_marker(cut_at_ingest);
    let head_max = origin_ingest::limits::EVENT_TEXT_CHARS_MAX - origin_ingest::limits::EVENT_TEXT_TAIL_CHARS;
    let head_end = text.char_indices().nth(head_max).map_or(text.len(), |(b, _)| b);
    let at = if text.ends_with(marker.as_str()) {
        Some(text.len() - marker.len())
    } else {
        text.match_indices(marker.as_str()).map(|(at, _)| at).take_while(|&at| at <= head_end).last()
    };
    let (kept, end) = match at {
        Some(at) => (&text[..at], text[at + marker.len()..].strip_prefix(' ').unwrap_or(&text[at + marker.len()..])),
        None => (text, ""),
    };
    cut_noting(kept, max, cut_at_ingest + end.chars().count() as u64)
}

/// `text` cut to at most `max` characters at a grapheme cluster's boundary, with a note of the
/// characters cut there plus `cut_before` when that is not 0.
pub(crate) fn cut_noting(text: &str, max: usize, cut_before: u64) -> String {
    let byte = match text.char_indices().nth(max) {
        None if cut_before == 0 => return text.to_owned(),
        None => text.len(),
        Some((byte, _)) => cluster_start(text, byte),
    };
    let rest = text[byte..].chars().count() as u64 + cut_before;
    format!("{}…[{rest} characters cut]", &text[..byte])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now_in(tz: &str) -> Zoned {
        let tz = TimeZone::get(tz).expect("zone");
        "2026-10-20T09:12:30.123Z".parse::<Timestamp>().expect("ts").to_zoned(tz)
    }

    #[test]
    fn times_are_local_with_milliseconds_and_offset() {
        let shanghai = TimeZone::get("Asia/Shanghai").expect("zone");
        assert_eq!(format_time(1_792_487_550_000, &shanghai), "2026-10-20T17:12:30.000+08:00");
        let berlin = TimeZone::get("Europe/Berlin").expect("zone");
        assert_eq!(format_time(1_792_487_550_123, &berlin), "2026-10-20T11:12:30.123+02:00");
        assert_eq!(format_time(1_792_487_550_123, &TimeZone::UTC), "2026-10-20T09:12:30.123+00:00");
        let kolkata = TimeZone::get("Asia/Kolkata").expect("zone");
        assert_eq!(format_time(1_792_487_550_123, &kolkata), "2026-10-20T14:42:30.123+05:30");
        // Shanghai's local mean time in 1900 was +08:05:43, which ISO 8601 cannot write: UTC.
        assert_eq!(format_time(-2_208_988_800_000, &shanghai), "1900-01-01T00:00:00.000+00:00");
    }

    #[test]
    fn relative_and_absolute_time_arguments_parse() {
        let now = now_in("Asia/Shanghai");
        let ms = now.timestamp().as_millisecond();
        assert_eq!(parse_time_arg("30m", &now), Ok(ms - 30 * 60_000));
        assert_eq!(parse_time_arg("24h", &now), Ok(ms - 86_400_000));
        assert_eq!(parse_time_arg("7d", &now), Ok(ms - 7 * 86_400_000));
        assert_eq!(parse_time_arg("2w", &now), Ok(ms - 14 * 86_400_000));
        // A date is its local midnight: 2026-10-20T00:00+08:00 = 2026-10-19T16:00Z.
        assert_eq!(parse_time_arg("2026-10-20", &now), Ok("2026-10-19T16:00:00Z".parse::<Timestamp>().expect("ts").as_millisecond()));
        assert_eq!(parse_time_arg("2026-10-20T09:00:00Z", &now), Ok("2026-10-20T09:00:00Z".parse::<Timestamp>().expect("ts").as_millisecond()));
        assert_eq!(parse_time_arg("2026-10-20T09:00:00+02:00", &now), Ok("2026-10-20T07:00:00Z".parse::<Timestamp>().expect("ts").as_millisecond()));
        assert_eq!(parse_time_arg("2026-10-20T09:00:00", &now), Ok("2026-10-20T01:00:00Z".parse::<Timestamp>().expect("ts").as_millisecond()));
        assert!(parse_time_arg("", &now).is_err_and(|e| e.starts_with("is empty")));
        assert!(parse_time_arg("99999999999999w", &now).is_err_and(|e| e.contains("reaches back more than 100 years")));
        for (signed, unsigned) in [("-3d", "3d"), ("+30m", "30m"), (" -2w ", "2w")] {
            assert_eq!(
                parse_time_arg(signed, &now),
                Err(format!("{:?}: a duration counts back from now, unsigned; write {unsigned:?} (a time after now is a date or ISO 8601)", signed.trim())),
                "{signed:?}"
            );
        }
        for bad in ["yesterday", "7x", "m", "-d", "--3d", "-3x", "2026-13-01", "2026-13", "2026-1", "2026-02-30", "2026-02-29", "2026-10-20T25:00:00Z", "2026-00", "1792487550", "+2026-10-20", "-2026-10-20T09:00:00Z"] {
            assert_eq!(parse_time_arg(bad, &now), Err(format!("{bad:?} is not a time; use 30m, 24h, 7d, 2w, a date like 2026-10-20 (or a month, 2026-10), or ISO 8601")), "{bad:?}");
        }
        // A month is its first day's local midnight; so are a week date and an ordinal date.
        assert_eq!(parse_time_arg("2026-10", &now), parse_time_arg("2026-10-01", &now));
        assert_eq!(parse_time_arg("2026-W43-2", &now), parse_time_arg("2026-10-20", &now));
        assert_eq!(parse_time_arg("2026-293", &now), parse_time_arg("2026-10-20", &now));
        assert_eq!(parse_time_arg("2024-366", &now), parse_time_arg("2024-12-31", &now), "a leap year's last day");
        for bad in ["2026-366", "2026-000", "2026-W54-1", "2026-W43-8"] {
            assert!(parse_time_arg(bad, &now).is_err(), "{bad:?}");
        }
        // Times of the right shape out of reach are said to be, not "not a time".
        for far in ["9999-12-31T23:59:59.999Z", "10000-01-01", "-009999-01-01T00:00:00", "99999-01", "9999-12-30T22:00:01Z", "-009999-01-02T01:59:58Z"] {
            assert_eq!(parse_time_arg(far, &now), Err(format!("{far:?} is outside the times Origin can hold (-009999-01-02T01:59:59Z to 9999-12-30T22:00:00Z)")), "{far}");
        }
        // The bounds the message names are within reach, written as it writes them.
        for near in ["9999-12-30T22:00:00Z", "-009999-01-02T01:59:59Z"] {
            assert!(parse_time_arg(near, &now).is_ok(), "{near}");
        }
    }

    /// A time finer than a millisecond rounds up: an event at `.000` is before a `since` or
    /// an `until` of `.0005`, so `since` leaves it out and `until` takes it in.
    #[test]
    fn times_finer_than_a_millisecond_round_up() {
        let now = now_in("UTC");
        let at = parse_time_arg("2026-10-20T10:00:00Z", &now).unwrap();
        assert_eq!(parse_time_arg("2026-10-20T10:00:00.0005Z", &now), Ok(at + 1));
        assert_eq!(parse_time_arg("2026-10-20T10:00:00.001Z", &now), Ok(at + 1));
        assert_eq!(parse_time_arg("2026-10-20T10:00:00.000000001", &now), Ok(at + 1), "a civil time too");
        assert_eq!(parse_time_arg("1969-12-31T23:59:59.9995Z", &now), Ok(0), "before 1970 too");
        // A bound that takes in its time (`journal replay --until`) rounds down instead.
        assert_eq!(parse_time_arg_inclusive("2026-10-20T10:00:00.0005Z", &now), Ok(at));
        assert_eq!(parse_time_arg_inclusive("2026-10-20T10:00:00Z", &now), Ok(at));
        assert_eq!(parse_time_arg_inclusive("1969-12-31T23:59:59.9995Z", &now), Ok(-1));
    }

    #[test]
    fn ids_have_their_shapes() {
        assert!(is_entry_id("ent_3f9a1c2b7d4e"));
        assert!(is_entry_id("ent_0123456789abcdef0123456789abcdef"));
        assert!(!is_entry_id("ent_3f9a1c2b7d4"));
        assert!(!is_entry_id("ent_3f9a1c2b7d4g"));
        assert!(!is_entry_id("ent_0123456789abcdef0123456789abcdef0"));
        assert!(is_tombstone_id("tmb_6c1d0e9a2b3f"));
        assert!(is_event_id("claude-code:7d0c4a1e-0000-4000-8000-000000000001"));
        assert!(is_event_id("zcode:prt_1:use"));
        assert!(!is_event_id("claude:7d0c"));
        assert!(!is_event_id("codex:"));
    }

    #[test]
    fn cutting_counts_characters_and_notes_the_rest() {
        assert_eq!(cut("发布流程🚀", 10), "发布流程🚀");
        assert_eq!(cut("发布流程🚀abc", 4), "发布流程…[4 characters cut]");
        assert_eq!(cut("abc", 0), "…[3 characters cut]");
    }

    #[test]
    fn cutting_keeps_grapheme_clusters_whole() {
        // An accent, a skin tone and a family joined by zero width joiners stay with what
        // they belong to: the cut moves back to the cluster's start, and counts what it leaves.
        assert_eq!(cut("cafe\u{301} noir", 4), "caf…[7 characters cut]");
        assert_eq!(cut("cafe\u{301} noir", 5), "cafe\u{301}…[5 characters cut]");
        assert_eq!(cut("ok 👍🏽 yes", 4), "ok …[6 characters cut]");
        let family = "👨\u{200D}👩\u{200D}👧";
        assert_eq!(cut(&format!("{family}{family}"), 7), format!("{family}…[5 characters cut]"));
        assert_eq!(cut(&format!("{family}{family}"), 4), "…[10 characters cut]");
        assert_eq!(cluster_start("e\u{301}", 1), 0);
        assert_eq!(cut(&format!("x{}", "\u{301}".repeat(100)), 50), format!("x{}…[51 characters cut]", "\u{301}".repeat(49)), "a cluster of 101 cut by its characters");
        assert_eq!(cluster_start("ab", 1), 1);
        assert_eq!(cluster_start("ab", 2), 2);
    }

    #[test]
    fn an_event_cut_at_ingest_counts_what_ingest_cut_and_not_its_marker() {
        let marker = origin_ingest::limits::cut_marker(9_000);
        let stored = format!("{}{marker}", "x".repeat(1_000));
        assert_eq!(cut_event(&stored, 9_000, 400), format!("{}…[9600 characters cut]", "x".repeat(400)));
        // Shorter than the tool's limit: the text whole, and what ingest cut.
        assert_eq!(cut_event(&stored, 9_000, 5_000), format!("{}…[9000 characters cut]", "x".repeat(1_000)));
        // Without ingest's marker (an adapter wrote another): cut as it is, ingest's count added.
        let odd = format!("{}[cut]tail", "x".repeat(1_000));
        assert_eq!(cut_event(&odd, 9_000, 400), format!("{}…[{} characters cut]", "x".repeat(400), 600 + 9 + 9_000));
        assert_eq!(cut_event("short", 0, 400), "short");
        // The marker before the end ingest kept: shown from before it, the end counted.
        let middle = format!("{}{marker} {}", "x".repeat(1_000), "y".repeat(300));
        assert_eq!(cut_event(&middle, 9_000, 400), format!("{}…[9900 characters cut]", "x".repeat(400)));
        assert_eq!(cut_event(&middle, 9_000, 5_000), format!("{}…[9300 characters cut]", "x".repeat(1_000)));
        // The marker's words inside the text (in the beginning, and in the end it kept) are text.
        let quoted = format!("{}{marker}{}{marker} {}{marker}y", "x".repeat(100), "x".repeat(39_000), "y".repeat(9_000));
        let m = marker.chars().count();
        let end = 9_000 + m + 1;
        assert_eq!(cut_event(&quoted, 9_000, 50_000), format!("{}{marker}{}…[{} characters cut]", "x".repeat(100), "x".repeat(39_000), 9_000 + end));
        let first: String = quoted.chars().take(400).collect();
        assert_eq!(cut_event(&quoted, 9_000, 400), format!("{first}…[{} characters cut]", (100 + m + 39_000 - 400) + 9_000 + end));
    }
}
