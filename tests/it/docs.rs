//! What the docs restate of a script's header is checked against the header, so that
//! the header stays the one source of truth: every reply type a page cites
//! (`` `work_queue/take` answers `[(…)]` ``), and every header it shows as an example.

use std::collections::HashMap;
use std::path::Path;

use redis_patterns::catalog;

/// The pages that cite scripts: the README, the guide pages, and the codegen crate's docs.
const PAGES: &[&str] = &[
    "README.md",
    "docs/script-header.md",
    "docs/servers.md",
    "codegen/src/lib.rs",
];

/// The folders of the scripts a page may show.
const SCRIPT_FOLDERS: &[&str] = &["scripts", "examples/own-scripts/lua"];

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// A page's text; a Rust file's `//!` docs, without the markers.
fn page(path: &str) -> String {
    let text = read(path);
    if !path.ends_with(".rs") {
        return text;
    }
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix("//!"))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A line with its runs of blanks as one space, as a header is read.
fn squeezed(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Each cited reply type: `` `<family>/<op>` answers `<type>` ``, wrapped anywhere
/// between the three.
fn cited_replies(text: &str) -> Vec<(String, String)> {
    let mut cited = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(" answers") {
        let before = rest[..at].trim_end();
        rest = &rest[at + " answers".len()..];
        let Some(name) = before
            .strip_suffix('`')
            .and_then(|b| b.rfind('`').map(|open| &b[open + 1..]))
        else {
            continue;
        };
        if !name.contains('/') || name.contains(char::is_whitespace) {
            continue;
        }
        let Some(ty) = rest
            .trim_start()
            .strip_prefix('`')
            .and_then(|t| t.split_once('`'))
            .map(|(ty, _)| ty)
        else {
            continue;
        };
        cited.push((name.to_owned(), ty.to_owned()));
    }
    cited
}

#[test]
fn every_cited_reply_type_is_the_headers() {
    let mut cited_in_guide = 0;
    for path in PAGES {
        for (name, ty) in cited_replies(&page(path)) {
            let script = catalog::find(&name)
                .unwrap_or_else(|| panic!("{path} cites {name}: no such script"));
            let spelled = |t: &str| t.split_whitespace().collect::<String>();
            assert_eq!(
                spelled(&ty),
                spelled(script.returns.ty),
                "{path} says {name} answers `{ty}`; its header says `{}`",
                script.returns.ty
            );
            cited_in_guide += usize::from(*path == "docs/script-header.md");
        }
    }
    // The guide's examples of the reply grammar are citations: rows, a tuple with a list,
    // a tuple or nil.
    assert!(
        cited_in_guide >= 3,
        "the guide cites {cited_in_guide} reply types"
    );
}

/// Every script's header lines (squeezed), by its summary.
fn headers() -> HashMap<String, (String, Vec<String>)> {
    let mut headers = HashMap::new();
    for folder in SCRIPT_FOLDERS {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
        for family in std::fs::read_dir(&root).unwrap() {
            let family = family.unwrap().path();
            if !family.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(&family).unwrap() {
                let file = file.unwrap().path();
                if file.extension().is_none_or(|e| e != "lua") {
                    continue;
                }
                let text = std::fs::read_to_string(&file).unwrap();
                let lines: Vec<String> = text
                    .lines()
                    .filter(|l| l.starts_with("---") || l.starts_with("#!lua"))
                    .map(squeezed)
                    .collect();
                let summary = lines
                    .iter()
                    .find(|l| l.starts_with("--- "))
                    .cloned()
                    .unwrap();
                headers.insert(summary, (file.display().to_string(), lines));
            }
        }
    }
    headers
}

/// The lines of each fenced `lua` block of a text.
fn lua_blocks(text: &str) -> Vec<Vec<&str>> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while lines.any(|l| l.trim() == "```lua") {
        blocks.push(lines.by_ref().take_while(|l| l.trim() != "```").collect());
    }
    blocks
}

/// A header shown as an example is a script's: each of its tags (and its flags line) is
/// a line of the header whose summary it shows. Its prose may stand for the script's
/// (`--- Longer description, …`).
#[test]
fn every_header_shown_is_a_scripts() {
    let headers = headers();
    let mut shown = 0;
    for path in PAGES {
        for block in lua_blocks(&page(path)) {
            let Some((file, lines)) = block
                .iter()
                .find(|l| l.starts_with("--- "))
                .and_then(|summary| headers.get(&squeezed(summary)))
            else {
                continue;
            };
            shown += 1;
            for line in block
                .iter()
                .filter(|l| squeezed(l).starts_with("--- @") || l.starts_with("#!lua"))
            {
                assert!(
                    lines.contains(&squeezed(line)),
                    "{path} shows {file}'s header with the line\n  {line}\nwhich it does not have"
                );
            }
        }
    }
    assert!(shown >= 3, "{shown} headers shown");
}
