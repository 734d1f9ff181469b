//! The input checks and the pasted shared helpers a script holds, against those its
//! header gives.

use crate::diagnostic::Report;
use crate::layout;
use crate::lua;
use crate::model::{Header, ScriptFile};
use crate::parse::Parsed;
use crate::render::contract;
use crate::shared;

/// How a script's block differs from the one its header declares; lines are 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Mismatch {
    /// No block at all; it belongs at `line`.
    Missing { line: usize },
    /// A block starts at `line`, not right after the header.
    Misplaced { line: usize },
    /// The block's first marker, at `line`, has no last marker after it.
    Unterminated { line: usize },
    /// A last marker, at `line`, has no first marker before it.
    Unopened { line: usize },
    /// A marker, at `line`, after a whole block: what is left of another copy.
    Stray { line: usize },
    /// The pasted shared helpers at `line` are not those the header names, as their
    /// files hold them (`expected` or `found` is empty where one has no line).
    Shared {
        line: usize,
        expected: String,
        found: String,
    },
    /// The block's `line` is not what the header gives.
    Differs {
        line: usize,
        expected: String,
        found: String,
    },
}

/// The difference between the pasted helpers and the block in `source` and those
/// `header` declares with the pasted helpers `shared`, if any.
pub(crate) fn mismatch(source: &str, header: &Header, shared: &str) -> Option<Mismatch> {
    let lines: Vec<&str> = source.lines().collect();
    let place = layout::locate(&lines);
    if let Some(line) = place.unopened {
        return Some(Mismatch::Unopened { line: line + 1 });
    }
    if let Some(line) = place.stray {
        return Some(Mismatch::Stray { line: line + 1 });
    }
    if let Some(line) = place.unterminated {
        return Some(Mismatch::Unterminated { line: line + 1 });
    }
    let Some(block) = place.block.clone() else {
        return Some(Mismatch::Missing {
            line: place.block_start() + 1,
        });
    };
    if block.start != place.block_start() {
        return Some(Mismatch::Misplaced {
            line: block.start + 1,
        });
    }
    let expected = contract::render(header);
    let wanted: Vec<&str> = expected.lines().collect();
    let found = &lines[block.clone()];
    // Both end with the last marker, so the first difference is within both.
    if let Some(i) = wanted
        .iter()
        .zip(found)
        .position(|(want, got)| *want != got.trim_end_matches('\r'))
    {
        return Some(Mismatch::Differs {
            line: block.start + i + 1,
            expected: wanted[i].to_string(),
            found: found[i].trim_end_matches('\r').to_string(),
        });
    }
    let pasted = &lines[place.start..block.start];
    let wanted: Vec<&str> = shared.lines().collect();
    let at = (0..wanted.len().max(pasted.len()))
        .find(|&i| wanted.get(i).copied() != pasted.get(i).map(|l| l.trim_end_matches('\r')))?;
    Some(Mismatch::Shared {
        line: place.start + at + 1,
        expected: wanted.get(at).copied().unwrap_or_default().to_string(),
        found: lines
            .get(place.start + at)
            .map(|l| l.trim_end_matches('\r').to_string())
            .unwrap_or_default(),
    })
}

/// The helpers pasted into `file`: those its header names (and those they call), and
/// those its block calls, as they are pasted. Reports a name no source defines, a name
/// the script never calls, a helper its own code calls without naming it, and a shared
/// file that is not a list of helpers.
pub(crate) fn shared_section(
    file: &ScriptFile,
    parsed: &Parsed,
    header: Option<&Header>,
    report: &mut Report,
) -> String {
    let mut files = Vec::new();
    for source in std::iter::once(shared::generator_file()).chain(file.shared.iter().cloned()) {
        match shared::helpers(&source) {
            Ok(helpers) => files.push((source, helpers)),
            Err(problems) => report.diagnostics.extend(problems),
        }
    }
    let named: Vec<String> = parsed.uses.iter().map(|(_, n)| n.clone()).collect();
    let all: Vec<String> = files
        .iter()
        .flat_map(|(_, helpers)| helpers.iter().map(|h| h.name.clone()))
        .collect();
    let (first, own) = layout::own_code(&file.source);
    let called = shared::called(&own, &all);
    for (at, name) in &parsed.uses {
        if !all.contains(name) {
            let places: Vec<&str> = file.shared.iter().map(|f| f.path.as_str()).collect();
            report.error(
                at.line,
                at.col,
                format!("no shared helper is called `{name}`"),
                if places.is_empty() {
                    format!(
                        "define it as a `local function` in `{}` of the script's family folder \
                         (or of the scripts folder)",
                        shared::FILE_NAME
                    )
                } else {
                    format!("define it in {}, or remove it", places.join(" or "))
                },
            );
        } else if !called.contains(name) {
            report.error(
                at.line,
                at.col,
                format!("`{name}` is named in `@uses` but the script never calls it"),
                "remove it from `@uses`: a helper that only another helper calls comes along \
                 with it",
            );
        }
    }
    let (tokens, _) = lua::tokenize(&own);
    for name in called.iter().filter(|name| !named.contains(name)) {
        let at = tokens.iter().find(|t| t.is_name(name));
        let (line, col) = at.map_or((first + 1, 1), |t| (first + t.line, t.col));
        report.error(
            line,
            col,
            format!("the script calls the shared helper `{name}` without naming it in `@uses`"),
            format!(
                "add it to the header: `--- @uses {name}`; the header names every helper the \
                 script's own code calls"
            ),
        );
    }
    let names = header.map_or(named, contract::pasted_names);
    match shared::resolve(&names, &files) {
        Ok(helpers) => shared::render(&helpers),
        // Reported above.
        Err(_) => String::new(),
    }
}
/// The input checks at the top of the body must be the ones the header declares.
pub(crate) fn report_contract(mismatch: Option<Mismatch>, report: &mut Report) {
    let fix = "run `redis-patterns fix <scripts folder>` to write them from the header";
    match mismatch {
        None => {}
        Some(Mismatch::Missing { line }) => report.error(
            line,
            1,
            "the script does not start with the input checks its header declares",
            format!(
                "every script checks its key and argument counts and every argument right \
                 after the header, with code generated from it; {fix}"
            ),
        ),
        Some(Mismatch::Misplaced { line }) => report.error(
            line,
            1,
            "the input checks do not start right after the header",
            format!("nothing may run before them; {fix}"),
        ),
        Some(Mismatch::Unterminated { line }) => report.error(
            line,
            1,
            "the input checks start here but never end",
            format!(
                "end them with `{}`, or delete them and {fix}",
                contract::END
            ),
        ),
        Some(Mismatch::Unopened { line }) => report.error(
            line,
            1,
            "the input checks end here but never start",
            format!(
                "delete what is left of them above this line, or start them with their first \
                 line; {fix}"
            ),
        ),
        Some(Mismatch::Stray { line }) => report.error(
            line,
            1,
            "a marker of the input checks after their end",
            "another copy of the checks, or what is left of one: delete it, and the lines that \
             belong to it",
        ),
        Some(Mismatch::Shared {
            line,
            expected,
            found,
        }) => report.error(
            line,
            1,
            "the pasted shared helpers differ from those the header names, as their files \
             hold them",
            format!(
                "expected `{expected}` here, found `{found}`; run `redis-patterns fix <scripts \
                 folder>` to paste them from their files"
            ),
        ),
        Some(Mismatch::Differs {
            line,
            expected,
            found,
        }) => report.error(
            line,
            1,
            "the input checks differ from what the header declares",
            format!("expected `{expected}` here, found `{found}`; {fix}"),
        ),
    }
}
