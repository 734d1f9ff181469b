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

/// Where the block and the pasted shared helpers are, or should be, in a script.
pub(crate) struct Placement {
    /// The first line after the header (0-based): where the pasted helpers belong, and
    /// the block right after them.
    pub start: usize,
    /// The pasted helpers that start right after the header, if any.
    pub pasted: Option<Range<usize>>,
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

impl Placement {
    /// Where the block belongs: right after the pasted helpers, or the header.
    pub fn block_start(&self) -> usize {
        self.pasted.as_ref().map_or(self.start, |p| p.end)
    }
}

/// Finds the block and the pasted helpers in `lines` (the script's lines without their
/// line ends).
pub(crate) fn locate(lines: &[&str]) -> Placement {
    let is = |line: &str, marker: &str| line.trim_end() == marker;
    let mut start = usize::from(lines.first().is_some_and(|l| l.starts_with("#!")));
    while lines.get(start).is_some_and(|l| l.starts_with("---")) {
        start += 1;
    }
    let pasted = shared_range(lines, start);
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
    Placement {
        start,
        pasted,
        block: begin.zip(end).map(|(b, e)| b..e),
        unterminated: begin.filter(|_| end.is_none()),
        unopened,
        stray,
    }
}

/// Where the script's own code starts (0-based): after its block (after the pasted
/// helpers or the header when it has none), and past helpers pasted after the block, where
/// scripts once had them.
fn own_start(lines: &[&str], place: &Placement) -> usize {
    let from = place.block.as_ref().map_or(place.block_start(), |b| b.end);
    shared_range(lines, from).map_or(from, |r| r.end)
}

/// The script's own code, after its block: its first line (0-based) and its text.
pub(crate) fn own_code(source: &str) -> (usize, String) {
    let lines: Vec<&str> = source.lines().collect();
    let from = own_start(&lines, &locate(&lines)).min(lines.len());
    (from, lines[from..].join("\n"))
}

/// The script's code outside its header and its block: the pasted helpers and its own.
pub(crate) fn code_outside_block(source: &str) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let place = locate(&lines);
    let block = place.block.clone().unwrap_or(place.start..place.start);
    lines[place.start.min(lines.len())..block.start]
        .iter()
        .chain(&lines[block.end.min(lines.len())..])
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
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

/// The script's own lines: neither the header, nor the pasted helpers, nor the block.
pub(crate) fn own_lines<'a>(lines: &[&'a str], place: &Placement) -> Vec<&'a str> {
    let before = place.block_start().min(lines.len());
    let block = place.block.clone().unwrap_or(before..before);
    lines[before..block.start.max(before)]
        .iter()
        .chain(&lines[own_start(lines, place).min(lines.len())..])
        .copied()
        .collect()
}
