//! Helpers shared between scripts, with one source each.
//!
//! A scripts folder may hold `_shared.lua` files: `<folder>/_shared.lua` for every family
//! and `<folder>/<family>/_shared.lua` for one family. Each is a list of `local function`s,
//! each with the comment above it. The generator has its own, the helpers of the input
//! checks (`shown`, `safe_integer`, `integer`, …). A script names the ones its own code
//! calls in its header (`--- @uses release_slot shown`); [`fix`](crate::Config::fix)
//! pastes them, the helpers they call and those the input checks call, between two marker
//! lines right after the header, before the input checks; so the file stays
//! self-contained, the checks and the script's code call the same copies, and the script's
//! own code starts right after the checks. The build refuses a copy that differs from its
//! source by a byte, as it does for the input checks. The Functions library defines each
//! helper once.
//!
//! A helper reaches only its parameters, the other shared helpers (the generator's, the
//! folder's, and its family's) and Redis's globals: never a script's own locals, since
//! the Functions library defines it outside every script.

use std::fmt::Write as _;

use crate::diagnostic::Diagnostic;
use crate::helpers::HELPERS;
use crate::lua;

pub use crate::layout::{SHARED_BEGIN as BEGIN, SHARED_END as END};
pub use crate::model::{SHARED_FILE_NAME as FILE_NAME, SharedFile};

/// How the marker of the pasted helpers names the generator, where its own helpers come
/// from.
const GENERATOR: &str = "redis-patterns-codegen";

/// The generator's own helpers (those the input checks call), as a shared file of its
/// own: pasted before those of the folder and the family, which may call them.
pub(crate) fn generator_file() -> SharedFile {
    SharedFile {
        path: GENERATOR.to_string(),
        family: None,
        source: HELPERS.iter().map(|(_, source)| *source).collect(),
    }
}

fn is_generator(file: &SharedFile) -> bool {
    file.path == GENERATOR && file.family.is_none()
}

/// The order the sources of helpers are pasted in, and defined in the Functions library:
/// the generator's, the folder's, then the families'.
pub(crate) fn rank(file: &SharedFile) -> (u8, &str) {
    let rank = match (is_generator(file), &file.family) {
        (true, _) => 0,
        (false, None) => 1,
        (false, Some(_)) => 2,
    };
    (rank, &file.path)
}

/// One helper of a shared file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Helper {
    /// The function's name.
    pub name: String,
    /// Its text: the comment above it, then the function up to its `end`, each line ending
    /// in `\n`.
    pub text: String,
    /// The other shared helpers it calls, by name.
    pub calls: Vec<String>,
}

/// The helpers of `file`, in file order, or what is wrong with it.
pub fn helpers(file: &SharedFile) -> Result<Vec<Helper>, Vec<Diagnostic>> {
    let lines: Vec<&str> = file.source.lines().collect();
    let mut helpers: Vec<Helper> = Vec::new();
    let mut problems = Vec::new();
    let mut comment_start: Option<usize> = None;
    let mut i = 0;
    let problem = |line: usize, message: String, hint: &str| Diagnostic {
        path: file.path.clone(),
        line: line + 1,
        col: 1,
        message,
        hint: hint.to_string(),
    };
    while i < lines.len() {
        let line = lines[i].trim_end();
        if line.starts_with("---") || line.trim().is_empty() || line.starts_with("-- luacheck:") {
            // The file's own notes, blank lines and lint settings stay in the file.
            comment_start = None;
        } else if line.starts_with("--") {
            comment_start.get_or_insert(i);
        } else if let Some(name) = line
            .strip_prefix("local function ")
            .and_then(|rest| rest.split_once('('))
            .map(|(name, _)| name.trim())
        {
            let Some(end) = (i..lines.len()).find(|&j| lines[j].trim_end() == "end") else {
                problems.push(problem(
                    i,
                    format!("`{name}` has no `end` at the start of a line"),
                    "end each helper with `end` alone at the start of a line",
                ));
                break;
            };
            let Some(start) = comment_start.take() else {
                problems.push(problem(
                    i,
                    format!("`{name}` has no comment above it"),
                    "say what the helper does, and why, in `--` lines right above it",
                ));
                i = end + 1;
                continue;
            };
            if !is_generator(file) && HELPERS.iter().any(|(reserved, _)| *reserved == name) {
                problems.push(problem(
                    i,
                    format!("`{name}` is the name of a helper of the input checks"),
                    "name it otherwise: the input checks call the generator's own",
                ));
            }
            if helpers.iter().any(|h| h.name == name) {
                problems.push(problem(
                    i,
                    format!("`{name}` is defined twice"),
                    "define each helper once",
                ));
            }
            let mut text = String::new();
            for line in &lines[start..=end] {
                let _ = writeln!(text, "{}", line.trim_end());
            }
            helpers.push(Helper {
                name: name.to_string(),
                text,
                calls: Vec::new(),
            });
            i = end + 1;
            continue;
        } else {
            problems.push(problem(
                i,
                "a shared file holds only `local function`s, each with its comment".to_string(),
                "move other code into a helper, or into the scripts",
            ));
            comment_start = None;
        }
        i += 1;
    }
    let names: Vec<String> = helpers.iter().map(|h| h.name.clone()).collect();
    for (k, helper) in helpers.iter_mut().enumerate() {
        helper.calls = called(&helper.text, &names)
            .into_iter()
            .filter(|n| *n != helper.name)
            .collect();
        // A `local function` sees only the locals defined above it.
        if let Some(later) = helper
            .calls
            .iter()
            .find(|c| names.iter().position(|n| n == *c) > Some(k))
        {
            let line = lines
                .iter()
                .position(|l| l.starts_with(&format!("local function {}(", helper.name)))
                .unwrap_or(0);
            problems.push(problem(
                line,
                format!(
                    "`{}` calls `{later}`, which is defined below it",
                    helper.name
                ),
                "define each helper below the helpers it calls",
            ));
        }
    }
    if problems.is_empty() {
        Ok(helpers)
    } else {
        Err(problems)
    }
}

/// Which of `names` the Lua `text` calls (or refers to), in the order of `names`.
pub(crate) fn called(text: &str, names: &[String]) -> Vec<String> {
    let (tokens, _) = lua::tokenize(text);
    names
        .iter()
        .filter(|name| {
            tokens.iter().enumerate().any(|(i, t)| {
                t.is_name(name)
                    && !(i > 0 && (tokens[i - 1].is_op(".") || tokens[i - 1].is_op(":")))
                    && !(i > 0 && tokens[i - 1].is_kw("function"))
            })
        })
        .cloned()
        .collect()
}

/// The helpers a script that names `uses` gets, each with the file it comes from: those
/// named and every helper they call, in the order of the files (the generator's, the
/// folder's, then the family's) and of each file. A helper may call those of the files
/// before its own. A name found in no file is returned in the error.
pub fn resolve<'a>(
    uses: &[String],
    files: &'a [(SharedFile, Vec<Helper>)],
) -> Result<Vec<(&'a SharedFile, &'a Helper)>, String> {
    let find = |name: &str| {
        files
            .iter()
            .rev()
            .find_map(|(file, helpers)| helpers.iter().find(|h| h.name == name).map(|h| (file, h)))
    };
    let names: Vec<String> = files
        .iter()
        .flat_map(|(_, helpers)| helpers.iter().map(|h| h.name.clone()))
        .collect();
    let mut wanted: Vec<String> = Vec::new();
    let mut queue: Vec<String> = uses.to_vec();
    while let Some(name) = queue.pop() {
        if wanted.contains(&name) {
            continue;
        }
        let (_, helper) = find(&name).ok_or_else(|| name.clone())?;
        queue.extend(
            called(&helper.text, &names)
                .into_iter()
                .filter(|n| *n != name),
        );
        wanted.push(name);
    }
    let mut out = Vec::new();
    for (file, helpers) in files {
        for helper in helpers {
            if wanted.contains(&helper.name) && find(&helper.name).map(|(_, h)| h) == Some(helper) {
                out.push((file, helper));
            }
        }
    }
    Ok(out)
}

/// The pasted section for `helpers`, lines ending in `\n`; empty for none.
pub fn render(helpers: &[(&SharedFile, &Helper)]) -> String {
    if helpers.is_empty() {
        return String::new();
    }
    let mut generator = false;
    let mut files: Vec<String> = Vec::new();
    for (file, _) in helpers {
        if is_generator(file) {
            generator = true;
        } else if !files.contains(&file.name()) {
            files.push(file.name());
        }
    }
    let mut sources: Vec<String> = Vec::new();
    if generator {
        sources.push(GENERATOR.to_string());
    }
    if !files.is_empty() {
        sources.push(format!("{} of the scripts folder", files.join(" and ")));
    }
    let mut out = String::new();
    let _ = writeln!(out, "{BEGIN}");
    let _ = writeln!(out, "-- {}).", sources.join("; "));
    for (_, helper) in helpers {
        out.push_str(&helper.text);
    }
    let _ = writeln!(out, "{END}");
    out
}
