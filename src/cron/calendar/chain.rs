//! One field of a calendar expression as systemd keeps it: a list of components, each a
//! start, an optional end and a repetition (`8..18/2`, `0/15`, `*`), put in systemd's
//! normal form (a range cut to whole repetitions, a repetition that never repeats
//! dropped), checked against the field's range, and asked for its first value at or
//! after a given one. An empty list is `*`: any value.

/// A field's values: `start`, then every `repeat` up to `stop` (no end without `stop`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Component {
    pub start: i32,
    pub stop: Option<i32>,
    /// 0: `start` only.
    pub repeat: i32,
}

/// A field: empty means any value.
pub type Chain = Vec<Component>;

/// The range a field's values must fall in, for checking and for messages.
#[derive(Clone, Copy, Debug)]
pub struct Range {
    pub name: &'static str,
    pub low: i32,
    pub high: i32,
}

/// Years as systemd reads them: 1970 to 2199 (`26` is 2026, `89` 1989).
pub const YEAR: Range = range("year", 1970, 2199);
pub const MONTH: Range = range("month", 1, 12);
pub const DAY: Range = range("day", 1, 31);
pub const HOUR: Range = range("hour", 0, 23);
pub const MINUTE: Range = range("minute", 0, 59);
/// Seconds are kept in microseconds, as systemd keeps them.
pub const SECOND: Range = range("second", 0, 60 * MICROS - 1);

/// Microseconds in a second.
pub const MICROS: i32 = 1_000_000;

/// A field of one value.
pub fn single(value: i32) -> Chain {
    vec![Component {
        start: value,
        stop: None,
        repeat: 0,
    }]
}

const fn range(name: &'static str, low: i32, high: i32) -> Range {
    Range { name, low, high }
}

/// Two-digit years, as systemd reads them: 0-69 are 2000-2069, 70-99 are 1970-1999.
pub fn widen_years(chain: &mut Chain) {
    let widen = |y: i32| match y {
        0..=69 => y + 2000,
        70..=99 => y + 1900,
        _ => y,
    };
    for c in chain {
        c.start = widen(c.start);
        c.stop = c.stop.map(widen);
    }
}

/// systemd's normal form: a range ends on a whole repetition, and one that cannot
/// repeat, or ends where it starts, is its start alone; the components sorted, each
/// once.
pub fn normalize(chain: &mut Chain) {
    for c in chain.iter_mut() {
        if let Some(stop) = c.stop.filter(|stop| *stop > c.start && c.repeat > 0) {
            c.stop = Some(stop - (stop - c.start) % c.repeat);
        }
        let stop = c.stop.unwrap_or(-1);
        let never_repeats = stop > c.start && c.repeat > 0 && c.start + c.repeat > stop;
        if never_repeats || stop == c.start {
            c.repeat = 0;
            c.stop = None;
        }
    }
    chain.sort_by_key(|c| (c.start, c.stop, c.repeat));
    chain.dedup();
}

/// Whether every component (in normal form) fits `range`. Counted from the month's
/// end (`~`), a repetition must step towards the month's end, and a day is at most the
/// 28th last, three fewer for each component of the list before it, as systemd checks
/// it (`*-*~12,26` is refused: 26 is past the 25th).
pub fn check(chain: &Chain, range: Range, from_end: bool) -> Result<(), String> {
    let mut high = range.high;
    for c in chain {
        if from_end {
            high -= 3;
        }
        if let Some(why) = misfit(c, range.low, high, from_end) {
            let unit = if range.name == SECOND.name { MICROS } else { 1 };
            let (low, top) = (range.low / unit, high / unit);
            return Err(format!(
                "'{}' in the {} field: {why} ({low}-{top})",
                written(c, unit),
                range.name
            ));
        }
    }
    Ok(())
}

/// What keeps a component out of `low..=high`, as systemd checks it.
fn misfit(c: &Component, low: i32, high: i32, from_end: bool) -> Option<&'static str> {
    let inside = |v: i32| (low..=high).contains(&v);
    if !inside(c.start) || c.stop.is_some_and(|stop| !inside(stop)) {
        return Some("out of range");
    }
    if c.repeat > high - low {
        return Some("a repetition longer than the range");
    }
    let repeats = match c.stop {
        Some(stop) => c.start + c.repeat <= stop,
        None if from_end => c.start - c.repeat >= low,
        None => c.start + c.repeat <= high,
    };
    (!repeats).then_some(match c.stop {
        Some(_) => "a range runs forward, at least one repetition long",
        None => "the repetition never repeats inside the range",
    })
}

/// A component as written, in the units the user wrote (seconds, not microseconds).
fn written(c: &Component, unit: i32) -> String {
    match (c.stop, c.repeat) {
        (Some(stop), 0) => format!("{}..{}", show(c.start, unit), show(stop, unit)),
        (Some(stop), r) => format!(
            "{}..{}/{}",
            show(c.start, unit),
            show(stop, unit),
            show(r, unit)
        ),
        (None, 0) => show(c.start, unit),
        (None, r) => format!("{}/{}", show(c.start, unit), show(r, unit)),
    }
}

fn show(v: i32, unit: i32) -> String {
    if v % unit == 0 {
        (v / unit).to_string()
    } else {
        format!("{}", f64::from(v) / f64::from(unit))
    }
}

/// The first value at or after `value` that `chain` names (`resolve` turns a day
/// counted from the month's end into a day of the month), and whether it differs from
/// `value`; `None` when there is none.
pub fn first_from(
    chain: &Chain,
    value: i32,
    mut resolve: impl FnMut(i32) -> i32,
    from_end: bool,
) -> Option<(i32, bool)> {
    if chain.is_empty() {
        return Some((value, false));
    }
    let mut best: Option<i32> = None;
    for c in chain {
        let (start, stop) = ends(c, from_end, &mut resolve);
        let candidate = if start >= value {
            Some(start)
        } else if c.repeat > 0 {
            let steps = (i64::from(value) - i64::from(start) + i64::from(c.repeat) - 1)
                / i64::from(c.repeat);
            let k = i64::from(start) + steps * i64::from(c.repeat);
            i32::try_from(k).ok().filter(|k| stop < 0 || *k <= stop)
        } else {
            None
        };
        best = match (best, candidate) {
            (Some(b), Some(k)) => Some(b.min(k)),
            (b, k) => b.or(k),
        };
    }
    best.map(|found| (found, found != value))
}

/// A component's first and last value; counted from the month's end, the last day
/// named comes first (`~7..1` is the 7th last day to the last).
fn ends(c: &Component, from_end: bool, resolve: &mut impl FnMut(i32) -> i32) -> (i32, i32) {
    if !from_end {
        return (c.start, c.stop.unwrap_or(-1));
    }
    let start = resolve(c.start);
    let stop = resolve(c.stop.unwrap_or(-1));
    if stop > 0 {
        (stop, start)
    } else {
        (start, stop)
    }
}

/// The longest list a field may hold, as systemd limits it.
const MAX_COMPONENTS: usize = 241;

/// One field: `*` or a list of components (`1,15`, `8..18/2`, `0/15`). In seconds
/// (`micros`), values may have up to six decimals and `*` is every whole second.
pub fn read(t: &mut &str, micros: bool) -> Result<Chain, String> {
    if let Some(rest) = t.strip_prefix('*') {
        *t = rest;
        return Ok(if micros {
            vec![Component {
                start: 0,
                stop: None,
                repeat: MICROS,
            }]
        } else {
            Chain::new()
        });
    }
    let mut out = Chain::new();
    loop {
        if out.len() == MAX_COMPONENTS {
            return Err(format!("more than {MAX_COMPONENTS} values in one list"));
        }
        out.push(component(t, micros)?);
        match t.strip_prefix(',') {
            Some(rest) => *t = rest,
            None => return Ok(out),
        }
    }
}

/// `START[..STOP][/REPEAT]`, followed by the end or a separator.
fn component(t: &mut &str, micros: bool) -> Result<Component, String> {
    let whole = *t;
    let start = number(t, micros)?;
    let (mut stop, mut repeat) = (None, 0);
    if let Some(rest) = t.strip_prefix("..") {
        *t = rest;
        stop = Some(number(t, micros)?);
        repeat = if micros { MICROS } else { 1 };
    }
    if let Some(rest) = t.strip_prefix('/') {
        *t = rest;
        repeat = number(t, micros)?;
        if repeat == 0 {
            return Err(format!("'{whole}': a repetition is at least 1"));
        }
    } else if start > i32::MAX - repeat
        || (micros && stop.is_some_and(|stop| start + repeat > stop))
    {
        return Err(format!(
            "'{whole}': a range of seconds spans at least one second"
        ));
    }
    if !(t.is_empty() || t.starts_with([' ', ',', '-', '~', ':'])) {
        return Err(format!(
            "'{whole}': a value is a number, START..END or START/STEP (or * for any)"
        ));
    }
    Ok(Component {
        start,
        stop,
        repeat,
    })
}

/// A whole number; in seconds, with up to six decimals (a seventh rounds).
fn number(t: &mut &str, micros: bool) -> Result<i32, String> {
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(format!(
            "'{t}': a value is a number, START..END or START/STEP (or * for any)"
        ));
    }
    let too_big = || format!("'{}' is too large", &t[..digits]);
    let mut value: i64 = t[..digits].parse().map_err(|_| too_big())?;
    *t = &t[digits..];
    if micros {
        value = value.checked_mul(i64::from(MICROS)).ok_or_else(too_big)?;
        if t.starts_with('.') && !t.starts_with("..") {
            *t = &t[1..];
            value += fraction(t)?;
        }
    }
    i32::try_from(value).map_err(|_| too_big())
}

/// The decimals after a point, in microseconds.
fn fraction(t: &mut &str) -> Result<i64, String> {
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(format!("'.{t}': a decimal point needs digits after it"));
    }
    let kept = &t[..digits.min(6)];
    let mut micros: i64 = kept.parse().unwrap_or(0);
    micros *= 10_i64.pow(u32::try_from(6 - kept.len()).unwrap_or(0));
    if t.as_bytes()
        .get(6)
        .is_some_and(|d| (b'5'..=b'9').contains(d))
    {
        micros += 1;
    }
    *t = &t[digits..];
    Ok(micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(start: i32, stop: Option<i32>, repeat: i32) -> Component {
        Component {
            start,
            stop,
            repeat,
        }
    }

    fn first(chain: &Chain, value: i32) -> Option<(i32, bool)> {
        first_from(chain, value, |d| d, false)
    }

    #[test]
    fn a_range_ends_on_a_whole_repetition_and_one_that_never_repeats_is_its_start() {
        let mut chain = vec![
            c(8, Some(18), 3),
            c(5, Some(7), 3),
            c(4, Some(4), 1),
            c(5, None, 0),
        ];
        normalize(&mut chain);
        assert_eq!(chain, [c(4, None, 0), c(5, None, 0), c(8, Some(17), 3)]);
    }

    #[test]
    fn the_first_value_at_or_after_walks_each_component() {
        let quarter = vec![c(0, None, 15)];
        assert_eq!(first(&quarter, 0), Some((0, false)));
        assert_eq!(first(&quarter, 1), Some((15, true)));
        assert_eq!(
            first(&quarter, 46),
            Some((60, true)),
            "past 59: the caller carries"
        );
        let office = vec![c(8, Some(18), 2), c(21, None, 0)];
        assert_eq!(first(&office, 9), Some((10, true)));
        assert_eq!(first(&office, 19), Some((21, true)));
        assert_eq!(first(&office, 22), None);
        assert_eq!(
            first(&Vec::new(), 7),
            Some((7, false)),
            "empty is any value"
        );
    }

    #[test]
    fn days_from_the_month_s_end_resolve_through_the_month() {
        // A 30-day month: ~1 is the 30th, ~7 the 24th.
        let resolve = |d: i32| if d < 0 { -1 } else { 31 - d };
        let last_week = vec![c(7, None, 1)];
        assert_eq!(first_from(&last_week, 1, resolve, true), Some((24, true)));
        let range = vec![c(1, Some(3), 1)];
        assert_eq!(first_from(&range, 1, resolve, true), Some((28, true)));
        assert_eq!(first_from(&range, 29, resolve, true), Some((29, false)));
    }

    #[test]
    fn components_outside_their_field_are_refused_in_the_units_written() {
        assert!(check(&vec![c(0, None, 15)], MINUTE, false).is_ok());
        let err = check(&vec![c(61, None, 0)], MINUTE, false).unwrap_err();
        assert_eq!(err, "'61' in the minute field: out of range (0-59)");
        assert!(
            check(&vec![c(23, None, 1)], HOUR, false).is_err(),
            "23/1 never repeats"
        );
        assert!(
            check(&vec![c(29, None, 0)], DAY, true).is_err(),
            "~29 is too far back"
        );
        assert!(check(&vec![c(1, None, 2)], DAY, true).is_err());
        let err = check(&vec![c(60 * MICROS, None, 0)], SECOND, false).unwrap_err();
        assert_eq!(err, "'60' in the second field: out of range (0-59)");
        let err = check(&vec![c(MICROS / 2, None, 59_750_000)], SECOND, false).unwrap_err();
        assert_eq!(
            err,
            "'0.5/59.75' in the second field: the repetition never repeats inside the range (0-59)"
        );
        let err = check(&vec![c(10, Some(5), 1)], HOUR, false).unwrap_err();
        assert!(err.contains("a range runs forward"), "{err}");
        let mut years = vec![c(26, Some(89), 0)];
        widen_years(&mut years);
        assert_eq!(years, [c(2026, Some(1989), 0)]);
    }
}
