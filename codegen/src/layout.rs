//! Where the generated input checks and the pasted shared helpers sit in a script's text,
//! between their marker lines.

use std::ops::Range;

/// The first line of the block.
pub const CHECKS_BEGIN: &str = "-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run";
/// The block's last line.
pub const CHECKS_END: &str = "-- End of the generated input checks.";

/// The first line of the pasted shared helpers; the file they come from follows on the next line.
pub const SHARED_BEGIN: &str =
    "-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in";
/// The last line of the pasted helpers.
pub const SHARED_END: &str = "-- End of the shared helpers.";

/// Where the block is, or should be, in a script.
pub(crate) struct Placement {
    /// The first line after the header (0-based): where the block belongs.
    pub start: usize,
    /// The lines of a block found after the header (its first marker to one past its
    /// last), wherever it stands.
    pub block: Option<Range<usize>>,
    /// The line of a first marker with no last marker after it.
    pub unterminated: Option<usize>,
    /// The line of a last marker with no first marker before it.
    pub unopened: Option<usize>,
    /// The line of a marker after a whole block: what is left of another copy.
    pub stray: Option<usize>,
}

/// Finds the block in `lines` (the script's lines without their line ends).
pub(crate) fn locate(lines: &[&str]) -> Placement {
    let is = |line: &str, marker: &str| line.trim_end() == marker;
    let mut start = usize::from(lines.first().is_some_and(|l| l.starts_with("#!")));
    while lines.get(start).is_some_and(|l| l.starts_with("---")) {
        start += 1;
    }
    let begin = lines[start.min(lines.len())..]
        .iter()
        .position(|l| is(l, CHECKS_BEGIN))
        .map(|n| start + n);
    let end = begin.and_then(|b| {
        lines[b..]
            .iter()
            .position(|l| is(l, CHECKS_END))
            .map(|n| b + n + 1)
    });
    let unopened = lines[start.min(lines.len())..begin.unwrap_or(lines.len())]
        .iter()
        .position(|l| is(l, CHECKS_END))
        .map(|n| start + n);
    let stray = end.and_then(|e| {
        lines[e..]
            .iter()
            .position(|l| is(l, CHECKS_BEGIN) || is(l, CHECKS_END))
            .map(|n| e + n)
    });
    match (begin, end) {
        (Some(b), Some(e)) => Placement {
            start,
            block: Some(b..e),
            unterminated: None,
            unopened,
            stray,
        },
        (Some(b), None) => Placement {
            start,
            block: None,
            unterminated: Some(b),
            unopened,
            stray,
        },
        _ => Placement {
            start,
            block: None,
            unterminated: None,
            unopened,
            stray,
        },
    }
}

/// The script's code after its block (after the header when it has none), from the
/// pasted shared helpers on, or past them when `past_shared`: its first line (0-based)
/// and its text.
pub(crate) fn code_after_block(source: &str, past_shared: bool) -> (usize, String) {
    let lines: Vec<&str> = source.lines().collect();
    let place = locate(&lines);
    let mut from = place.block.map_or(place.start, |b| b.end);
    if past_shared {
        from = shared_range(&lines, from).map_or(from, |r| r.end);
    }
    let from = from.min(lines.len());
    (from, lines[from..].join("\n"))
}

/// The lines of the pasted shared helpers that start at `from`, if any start there.
pub(crate) fn shared_range(lines: &[&str], from: usize) -> Option<Range<usize>> {
    if lines.get(from).map(|l| l.trim_end()) != Some(SHARED_BEGIN) {
        return None;
    }
    let len = lines[from..]
        .iter()
        .position(|l| l.trim_end() == SHARED_END)?;
    Some(from..from + len + 1)
}

/// The script's own lines: neither the header, nor the block, nor the pasted helpers.
pub(crate) fn own_lines<'a>(lines: &[&'a str], place: &Placement) -> Vec<&'a str> {
    let block = place.block.clone().unwrap_or(place.start..place.start);
    let after = shared_range(lines, block.end).map_or(block.end, |r| r.end);
    lines[place.start.min(lines.len())..block.start]
        .iter()
        .chain(&lines[after.min(lines.len())..])
        .copied()
        .collect()
}
