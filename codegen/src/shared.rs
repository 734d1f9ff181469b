//! Helpers shared between scripts, with one source each.
//!
//! A scripts folder may hold `_shared.lua` files: `<folder>/_shared.lua` for every family
//! and `<folder>/<family>/_shared.lua` for one family. Each is a list of `local function`s,
//! each with the comment above it. A script names the ones it calls in its header
//! (`--- @uses release_slot`); [`fix`](crate::Config::fix) pastes them (and the helpers
//! they call) into the script between two marker lines right after the input checks, so
//! the file stays self-contained, and the build refuses a copy that differs from its
//! source by a byte, as it does for the input checks. The Functions library defines each
//! helper once.
//!
//! A helper reaches only its parameters, the other shared helpers, the helpers of the
//! input checks (`shown`, `integer`, …) and Redis's globals: never a script's own locals,
//! since the Functions library defines it outside every script.

use std::fmt::Write as _;

use crate::diagnostic::Diagnostic;
use crate::lua;

pub use crate::layout::{SHARED_BEGIN as BEGIN, SHARED_END as END};
pub use crate::model::{SHARED_FILE_NAME as FILE_NAME, SharedFile};

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
/// named and every helper they call, in the order of the files (the folder's, then the
/// family's) and of each file. A name found in no file is returned in the error.
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
    let mut wanted: Vec<String> = Vec::new();
    let mut queue: Vec<String> = uses.to_vec();
    while let Some(name) = queue.pop() {
        if wanted.contains(&name) {
            continue;
        }
        let (_, helper) = find(&name).ok_or_else(|| name.clone())?;
        queue.extend(helper.calls.iter().cloned());
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
    let mut sources: Vec<String> = Vec::new();
    for (file, _) in helpers {
        if !sources.contains(&file.name()) {
            sources.push(file.name());
        }
    }
    let mut out = String::new();
    let _ = writeln!(out, "{BEGIN}");
    let _ = writeln!(out, "-- {} of the scripts folder).", sources.join(" and "));
    for (_, helper) in helpers {
        out.push_str(&helper.text);
    }
    let _ = writeln!(out, "{END}");
    out
}
