//! The input checks every script starts with, generated from its header.
//!
//! A script's header declares its keys and arguments with their types and constraints; this
//! module turns that into Lua that checks the `KEYS`/`ARGV` counts and every argument, binds
//! each to a local of the header's name, and answers a bad call with a declared error code
//! (`BAD_ARGS` for the counts, `BAD_<NAME>` for an argument, `BAD_KEYS` for keys not named
//! as their templates say: see `key_check`). The block is written into the
//! script file itself, between two marker lines, so each file stays self-contained and what
//! Redis runs is byte for byte what a reader sees; the build regenerates the block and
//! refuses a script whose copy differs, so the checks can never drift from the header.
//! [`fix`] rewrites the block after a header change.

use std::fmt::Write as _;

use crate::helpers::HELPERS;
use crate::layout;
pub use crate::layout::{CHECKS_BEGIN as BEGIN, CHECKS_END as END};
use crate::model::{Arg, ArgType, BAD_KEYS, Count, Header, Rule, is_exact};
pub use crate::model::{BAD_ARGS, error_code};
use crate::render::key_check;
use crate::render::lines::{Lines, MAX_LINE, Part, lua_text};
use crate::shared;

/// The codes the block can raise for `header`, in the order it checks them.
pub fn raised_codes(header: &Header) -> Vec<String> {
    let mut codes = vec![BAD_ARGS.to_string()];
    for arg in &header.args {
        if checks_values(arg) {
            codes.push(error_code(&arg.name));
        }
    }
    if matches!(key_check::analyze(header), Ok(Some(_))) {
        codes.push(BAD_KEYS.to_string());
    }
    codes
}

/// The doc an `@error` line of `header` must start with when the block raises `code`:
/// `not 1 key and 4 arguments` for `BAD_ARGS`, `not whole milliseconds within its range`
/// for `BAD_TTL` (the code names the argument, and its `@arg` line states the range or
/// choices, so a line with the longest names still fits in 120 columns). A header may go
/// on after `, ` or `; ` with what the script's own code raises it for too.
pub fn error_doc(header: &Header, code: &str) -> Option<String> {
    if code == BAD_ARGS {
        let (keys, args) = arity_words(header);
        let pairs = key_check::arity_words(header);
        return Some(format!("not {keys} and {args}{pairs}"));
    }
    if code == BAD_KEYS {
        return matches!(key_check::analyze(header), Ok(Some(_)))
            .then(|| "a key not named as its template says".to_string());
    }
    let arg = header
        .args
        .iter()
        .find(|a| checks_values(a) && error_code(&a.name) == code)?;
    let what = match (&arg.ty, &arg.rule) {
        (_, Rule::NonEmpty) => "empty",
        (_, Rule::OneOf(_)) => "not one of its choices",
        (_, Rule::Length { min, max: None }) => return Some(format!("shorter than {min} bytes")),
        (
            _,
            Rule::Length {
                min,
                max: Some(max),
            },
        ) => {
            return Some(format!("not from {min} to {max} bytes long"));
        }
        (_, Rule::Hex { digits }) => return Some(format!("not {digits} hex digits")),
        (ArgType::Bool, _) => "not 1 or 0",
        (ArgType::Float, _) => "not a finite decimal number",
        (ArgType::Ms, _) => "not whole milliseconds within its range",
        _ => "not an integer within its range",
    };
    let subject = if arg.variadic { "a value is " } else { "" };
    let empty = if arg.optional { " (or empty)" } else { "" };
    Some(format!("{subject}{what}{empty}"))
}

/// Whether `doc` is the generated `expected`, or starts with it and goes on after `, ` or
/// `; `.
pub fn doc_agrees(doc: &str, expected: &str) -> bool {
    doc.strip_prefix(expected)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(", ") || rest.starts_with("; "))
}

/// What a value of `arg` must be, as the block's message says it: `must be an integer from
/// 1 to 10`.
fn value_words(arg: &Arg) -> String {
    match (&arg.ty, &arg.rule) {
        (ArgType::String | ArgType::Bytes | ArgType::Json, Rule::NonEmpty) => {
            "must not be empty".to_string()
        }
        (_, Rule::OneOf(options)) => format!("must be one of {}", options.join(", ")),
        (_, Rule::Length { min, max: None }) => format!("must be {min} bytes long at least"),
        (
            _,
            Rule::Length {
                min,
                max: Some(max),
            },
        ) => {
            format!("must be from {min} to {max} bytes long")
        }
        (_, Rule::Hex { digits }) => format!("must be {digits} hex digits"),
        (ArgType::String | ArgType::Bytes | ArgType::Json, _) => String::new(),
        (ArgType::Bool, _) => "must be 1 or 0".to_string(),
        (ArgType::Float, _) => format!("must be a finite decimal number ({FLOAT_FORMS})"),
        (ArgType::Int | ArgType::Uint | ArgType::Ms, _) => {
            let (min, max) = arg.range();
            format!("must be {}", range_words(arg.ty, min, max))
        }
    }
}

/// Whether the block checks the values of `arg` (beyond their count).
fn checks_values(arg: &Arg) -> bool {
    match arg.ty {
        ArgType::String | ArgType::Bytes | ArgType::Json => arg.rule != Rule::Any,
        _ => true,
    }
}

/// How the header's bounds read in messages: `2^63-1` rather than nineteen digits.
pub fn bound(n: i64) -> String {
    match n {
        i64::MAX => "2^63-1".to_string(),
        i64::MIN => "-2^63".to_string(),
        n => n.to_string(),
    }
}

/// What a range accepts, in words: `an integer from 1 to 1000`.
pub fn range_words(ty: ArgType, min: i64, max: i64) -> String {
    let unit = if ty == ArgType::Ms {
        "whole milliseconds"
    } else {
        "an integer"
    };
    format!("{unit} from {} to {}", bound(min), bound(max))
}

/// The block for `header`, lines ending in `\n`. It defines no function: the helpers it
/// calls ([`helpers_called`]) are pasted before it, with the script's shared helpers.
pub fn render(header: &Header) -> String {
    let mut out = Lines::default();
    out.line(BEGIN);
    out.line("-- `redis-patterns fix <folder>`). A bad call changes nothing.");
    arity(header, &mut out);
    for (i, key) in header.keys.iter().enumerate() {
        if !key.variadic {
            out.line(&format!("local {} = KEYS[{}]", key.name, i + 1));
        }
    }
    for (i, arg) in header.args.iter().enumerate() {
        if arg.variadic {
            values(arg, i + 1, &mut out);
        } else {
            value(arg, i + 1, &mut out);
        }
    }
    if let Ok(Some(plan)) = key_check::analyze(header) {
        key_check::render(&plan, &mut out);
    }
    out.line(END);
    out.text
}

/// The generator's helpers that the block of `header` calls.
pub fn helpers_called(header: &Header) -> Vec<String> {
    let names: Vec<String> = HELPERS.iter().map(|(name, _)| name.to_string()).collect();
    shared::called(&render(header), &names)
}

/// The helpers pasted into a script with `header`: those it names in `@uses`, then those
/// its block calls (and, when pasted, those they call in turn).
pub(crate) fn pasted_names(header: &Header) -> Vec<String> {
    let mut names = header.uses.clone();
    for name in helpers_called(header) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// What the float rule accepts, as the messages say it: the forms every language prints
/// floats in by default.
pub const FLOAT_FORMS: &str = "such as 1.5, -2, 1e+20, 1e-07 or 1.0E16";

fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `1 key`, `from 1 to 1000 keys`, `at least 2 arguments`, `any number of arguments`.
fn count_words(fixed: u64, variadic: Option<Count>, noun: &str) -> String {
    match variadic {
        None => plural(fixed, noun),
        Some(Count { min, max: None }) if fixed + u64::from(min) == 0 => {
            format!("any number of {noun}s")
        }
        Some(Count { min, max: None }) => {
            format!("at least {}", plural(fixed + u64::from(min), noun))
        }
        Some(Count {
            min,
            max: Some(max),
        }) if min == max => plural(fixed + u64::from(min), noun),
        Some(Count {
            min,
            max: Some(max),
        }) => format!(
            "from {} to {} {noun}s",
            fixed + u64::from(min),
            fixed + u64::from(max)
        ),
    }
}

/// Lua conditions that are true when `#TABLE` is out of what the header declares.
fn count_conditions(table: &str, fixed: u64, variadic: Option<Count>) -> Vec<String> {
    match variadic {
        None => vec![format!("#{table} ~= {fixed}")],
        Some(Count { min, max }) => {
            let mut conditions = Vec::new();
            if fixed + u64::from(min) > 0 {
                conditions.push(format!("#{table} < {}", fixed + u64::from(min)));
            }
            if let Some(max) = max {
                conditions.push(format!("#{table} > {}", fixed + u64::from(max)));
            }
            conditions
        }
    }
}

/// The fixed count and the variadic part's count of `header`'s keys and arguments.
fn arity_of(header: &Header) -> ((u64, Option<Count>), (u64, Option<Count>)) {
    let fixed_keys = header.keys.iter().filter(|k| !k.variadic).count() as u64;
    let fixed_args = header.args.iter().filter(|a| !a.variadic).count() as u64;
    let variadic_keys = header.keys.last().filter(|k| k.variadic).map(|k| k.count);
    let variadic_args = header.args.last().filter(|a| a.variadic).map(|a| a.count);
    ((fixed_keys, variadic_keys), (fixed_args, variadic_args))
}

/// How many keys and arguments `header` takes, in words: `1 key`, `from 2 to 4 arguments`.
fn arity_words(header: &Header) -> (String, String) {
    let ((fixed_keys, variadic_keys), (fixed_args, variadic_args)) = arity_of(header);
    (
        count_words(fixed_keys, variadic_keys, "key"),
        count_words(fixed_args, variadic_args, "argument"),
    )
}

fn arity(header: &Header, out: &mut Lines) {
    let ((fixed_keys, variadic_keys), (fixed_args, variadic_args)) = arity_of(header);
    let mut conditions = count_conditions("KEYS", fixed_keys, variadic_keys);
    conditions.extend(count_conditions("ARGV", fixed_args, variadic_args));
    if conditions.is_empty() {
        return;
    }
    out.line(&format!("if {} then", conditions.join(" or ")));
    let (keys, args) = arity_words(header);
    let message = format!("{BAD_ARGS} expected {keys} and {args}, got ");
    out.error("  ", &message, Some("#KEYS .. ' and ' .. #ARGV"));
    out.line("end");
}

/// The check and binding of one argument that is not variadic.
fn value(arg: &Arg, index: usize, out: &mut Lines) {
    let name = &arg.name;
    let code = error_code(name);
    let raw = format!("ARGV[{index}]");
    let words = format!("{code} {}", value_words(arg));
    match arg.ty {
        ArgType::String | ArgType::Bytes | ArgType::Json => {
            out.line(&format!("local {name} = {raw}"));
            match &arg.rule {
                Rule::NonEmpty => {
                    out.line(&format!("if {name} == '' then"));
                    out.error("  ", &words, None);
                    out.line("end");
                }
                Rule::OneOf(options) => {
                    let test: Vec<String> = options
                        .iter()
                        .map(|o| format!("{name} ~= {}", lua_text(o)))
                        .collect();
                    out.condition("", &test, " and ");
                    out.error(
                        "  ",
                        &format!("{words}, got "),
                        Some(&format!("shown({name})")),
                    );
                    out.line("end");
                }
                Rule::Length { min, max } => {
                    let mut test = vec![format!("#{name} < {min}")];
                    test.extend(max.map(|max| format!("#{name} > {max}")));
                    out.condition("", &test, " or ");
                    out.error(
                        "  ",
                        &format!("{words}, got "),
                        Some(&format!("#{name} .. ' bytes'")),
                    );
                    out.line("end");
                }
                Rule::Hex { digits } => {
                    let test = [
                        format!("#{name} ~= {digits}"),
                        format!("string.find({name}, '%X')"),
                    ];
                    out.condition("", &test, " or ");
                    out.error(
                        "  ",
                        &format!("{words}, got "),
                        Some(&format!("shown({name})")),
                    );
                    out.line("end");
                }
                Rule::Any | Rule::Range { .. } => {}
            }
        }
        ArgType::Bool => {
            out.line(&format!("local {name} = {raw} == '1'"));
            out.line(&format!("if not {name} and {raw} ~= '0' then"));
            out.error(
                "  ",
                &format!("{words}, got "),
                Some(&format!("shown({raw})")),
            );
            out.line("end");
        }
        ArgType::Float => {
            number(out, arg, &raw, (format!("float({raw})"), vec![]), &words);
        }
        ArgType::Int | ArgType::Uint | ArgType::Ms => {
            let (min, max) = arg.range();
            number(out, arg, &raw, integer_read(&raw, name, min, max), &words);
        }
    }
}

/// How the block reads integer `raw` with bounds `min..=max`: an expression that answers
/// the value or nil, and what makes a value it answers out of range, as Lua conditions on
/// the local `value` that holds it. Within ±(2^53 - 1) the value is a Lua number, read
/// inline on a fast path (a pattern, then `tonumber`: a longer number rounds to one out of
/// range, so the plain compare is exact), with the compares the pattern does not already
/// make; beyond, it is the canonical decimal text that `integer` compares exactly.
fn integer_read(raw: &str, value: &str, min: i64, max: i64) -> (String, Vec<String>) {
    if !is_exact(min, max) {
        return (format!("integer({raw}, '{min}', '{max}')"), vec![]);
    }
    let (expr, least) = match min {
        1.. => (format!("tonumber(string.match({raw}, '^[1-9]%d*$'))"), 1),
        // `0`, the commonest value of these, by one compare rather than two patterns.
        0 => (
            format!("{raw} == '0' and 0 or tonumber(string.match({raw}, '^[1-9]%d*$'))"),
            0,
        ),
        _ => (
            format!("{raw} == '0' and 0 or tonumber(string.match({raw}, '^%-?[1-9]%d*$'))"),
            i64::MIN,
        ),
    };
    let mut out_of_range = Vec::new();
    if min > least {
        out_of_range.push(format!("{value} < {min}"));
    }
    out_of_range.push(format!("{value} > {max}"));
    (expr, out_of_range)
}

/// The check and binding of a number: `read` parses `raw` or answers nil, and a value
/// that makes one of its conditions true is refused too. An optional one is nil when `raw`
/// is empty (which `read` answers nil for).
fn number(out: &mut Lines, arg: &Arg, raw: &str, read: (String, Vec<String>), words: &str) {
    let name = &arg.name;
    let (expr, out_of_range) = read;
    let mut refused = vec![format!("not {name}")];
    refused.extend(out_of_range);
    let words = if arg.optional {
        // `ARGV[n] ~= '' and (not x or x > max)`, split where it may wrap.
        if refused.len() == 1 {
            refused[0] = format!("{raw} ~= '' and not {name}");
        } else {
            refused[0] = format!("{raw} ~= '' and (not {name}");
            let last = refused.len() - 1;
            refused[last].push(')');
        }
        format!("{words}, or empty, got ")
    } else {
        format!("{words}, got ")
    };
    out.line(&format!("local {name} = {expr}"));
    out.condition("", &refused, " or ");
    out.error("  ", &words, Some(&format!("shown({raw})")));
    out.line("end");
}

/// The check of each value of the variadic argument that starts at `ARGV[first]`; the
/// values stay in `ARGV`.
fn values(arg: &Arg, first: usize, out: &mut Lines) {
    let code = error_code(&arg.name);
    // The conditions that refuse a value, how they join, and whether the message shows it.
    let test: Option<(Vec<String>, &str, bool)> = match (&arg.ty, &arg.rule) {
        (ArgType::String | ArgType::Bytes | ArgType::Json, Rule::NonEmpty) => {
            Some((vec!["ARGV[i] == ''".to_string()], " and ", false))
        }
        (ArgType::String, Rule::OneOf(options)) => Some((
            options
                .iter()
                .map(|o| format!("ARGV[i] ~= {}", lua_text(o)))
                .collect(),
            " and ",
            true,
        )),
        (ArgType::String | ArgType::Bytes, Rule::Length { min, max }) => {
            let mut test = vec![format!("#ARGV[i] < {min}")];
            test.extend(max.map(|max| format!("#ARGV[i] > {max}")));
            Some((test, " or ", true))
        }
        (ArgType::String | ArgType::Bytes, Rule::Hex { digits }) => Some((
            vec![
                format!("#ARGV[i] ~= {digits}"),
                "string.find(ARGV[i], '%X')".to_string(),
            ],
            " or ",
            true,
        )),
        (ArgType::String | ArgType::Bytes | ArgType::Json, _) => None,
        (ArgType::Bool, _) => Some((
            vec!["ARGV[i] ~= '1'".to_string(), "ARGV[i] ~= '0'".to_string()],
            " and ",
            true,
        )),
        (ArgType::Float, _) => Some((vec!["not float(ARGV[i])".to_string()], " and ", true)),
        (ArgType::Int | ArgType::Uint | ArgType::Ms, _) => None,
    };
    let words = value_words(arg);
    let shows = if matches!(arg.ty, ArgType::Int | ArgType::Uint | ArgType::Ms) {
        let (min, max) = arg.range();
        let (expr, out_of_range) = integer_read("ARGV[i]", "each", min, max);
        out.line(&format!("for i = {first}, #ARGV do"));
        out.line(&format!("  local each = {expr}"));
        let mut refused = vec!["not each".to_string()];
        refused.extend(out_of_range);
        out.condition("  ", &refused, " or ");
        true
    } else if let Some((test, joiner, shows)) = test {
        out.line(&format!("for i = {first}, #ARGV do"));
        out.condition("  ", &test, joiner);
        shows
    } else {
        return;
    };
    let head = format!("{code} ARGV[");
    let words = if shows {
        format!("] {words}, got ")
    } else {
        format!("] {words}")
    };
    let mut parts = vec![Part::Text(&head), Part::Code("i"), Part::Text(&words)];
    if shows {
        parts.push(Part::Code("shown(ARGV[i])"));
    }
    out.error_parts("    ", &parts);
    out.line("  end");
    out.line("end");
}

/// `source` with the helpers its block calls (and the generator's that `header` names in
/// `@uses`) pasted right after the header, and its block, as `header` declares it, right
/// after them (a block elsewhere is moved there; a script without one gets one). Line ends
/// follow the file's own (`\r\n` when it uses them). Fails when a block has no last
/// marker, since where it ends cannot be known, or when `@uses` names a helper that the
/// generator does not have: [`crate::Config::fix`] pastes those of `_shared.lua` files.
pub fn fix(source: &str, header: &Header) -> Result<String, String> {
    let generator = shared::generator_file();
    let files = [(
        generator.clone(),
        shared::helpers(&generator).expect("the generator's helpers are a shared file"),
    )];
    let helpers = shared::resolve(&pasted_names(header), &files)
        .map_err(|name| format!("no helper of the input checks is called `{name}`"))?;
    fix_with(source, header, &shared::render(&helpers))
}

/// [`fix`], with `shared` (the helpers the script gets, as [`crate::shared::render`]
/// gives them) pasted in place of any pasted before.
pub fn fix_with(source: &str, header: &Header, shared: &str) -> Result<String, String> {
    let crlf = source.contains("\r\n");
    let lines: Vec<&str> = source.lines().collect();
    let place = layout::locate(&lines);
    if let Some(line) = place.unopened {
        return Err(format!(
            "line {}: the input checks end here but never start; delete them from the header \
             down to this line, or start them with the first line of the block",
            line + 1
        ));
    }
    if let Some(line) = place.stray {
        return Err(format!(
            "line {}: a marker of the input checks after their end: another copy, or what is \
             left of one; delete it, and the lines that belong to it",
            line + 1
        ));
    }
    if let Some(line) = place.unterminated {
        return Err(format!(
            "line {}: the input checks start here but never end; delete them up to the \
             script's own code, or end them with `{END}`",
            line + 1
        ));
    }
    let kept_after = layout::own_lines(&lines, &place);
    let newline = if crlf { "\r\n" } else { "\n" };
    let mut out = String::with_capacity(source.len() + 2048);
    let mut head: Vec<String> = lines[..place.start.min(lines.len())]
        .iter()
        .map(|line| fix_error_doc(line, header))
        .collect();
    add_error_tags(&mut head, header);
    for line in head
        .iter()
        .map(String::as_str)
        .chain(shared.lines())
        .chain(render(header).lines())
        .chain(kept_after.iter().copied())
    {
        let _ = write!(out, "{line}{newline}");
    }
    if !source.ends_with('\n') && !kept_after.is_empty() {
        out.truncate(out.len() - newline.len());
    }
    Ok(out)
}

/// Adds to the header lines `head` an `@error` tag for each code the block raises that it
/// does not declare yet, with the generated doc, right after the tags of the codes the
/// block raises before it (after `@return` when there are none), its doc where theirs
/// starts.
fn add_error_tags(head: &mut Vec<String>, header: &Header) {
    let code_of = |line: &str| -> Option<String> {
        let tag = line.strip_prefix("--- @error ")?;
        Some(tag.split_whitespace().next().unwrap_or("").to_string())
    };
    let raised = raised_codes(header);
    for (n, code) in raised.iter().enumerate() {
        if head.iter().any(|l| code_of(l).as_deref() == Some(code)) {
            continue;
        }
        let Some(doc) = error_doc(header, code) else {
            continue;
        };
        let earlier = &raised[..n];
        let at = head
            .iter()
            .rposition(|l| code_of(l).is_some_and(|c| earlier.contains(&c)))
            .or_else(|| head.iter().rposition(|l| l.starts_with("--- @return ")));
        let Some(at) = at else {
            continue;
        };
        // Below the whole doc of the tag above: a `@return` doc goes on over indented lines.
        let doc_lines = head[at + 1..].iter().take_while(|l| continues_doc(l));
        let below = at + 1 + doc_lines.count();
        // The doc where the tag above has its own, when it fits.
        let column = head[at]
            .strip_prefix("--- @error ")
            .map(|tag| {
                let code_len = tag.find(char::is_whitespace).unwrap_or(tag.len());
                let gap = tag[code_len..].len() - tag[code_len..].trim_start().len();
                "--- @error ".len() + code_len + gap
            })
            .unwrap_or(0);
        let bare = format!("--- @error {code} ");
        let line = if column > bare.len() && column + doc.len() <= MAX_LINE {
            format!("{bare:column$}{doc}")
        } else {
            format!("{bare}{doc}")
        };
        head.insert(below, line);
    }
}

/// Whether a header line goes on with the doc of the tag above it: after `---` and one
/// optional space, an indented line that is no tag (as the header parser reads a `@return`
/// doc).
fn continues_doc(line: &str) -> bool {
    let Some(after) = line.strip_prefix("---") else {
        return false;
    };
    let content = after.strip_prefix(' ').unwrap_or(after).trim_end();
    content.starts_with(char::is_whitespace) && !content.trim_start().starts_with('@')
}

/// `line` with the doc of its `@error` tag rewritten to the generated one, when the block
/// raises that code and the doc does not start with what the block says.
fn fix_error_doc(line: &str, header: &Header) -> String {
    let Some(tag) = line.strip_prefix("--- @error ") else {
        return line.to_string();
    };
    let code_len = tag.find(char::is_whitespace).unwrap_or(tag.len());
    let (code, rest) = tag.split_at(code_len);
    let doc = rest.trim_start();
    match error_doc(header, code) {
        Some(expected) if !doc_agrees(doc.trim_end(), &expected) => {
            // What the script's own code raises the code for follows the generated words.
            let own = [", or ", "; "]
                .iter()
                .filter_map(|sep| doc.find(sep))
                .min()
                .map_or("", |at| doc[at..].trim_end());
            let expected = format!("{expected}{own}");
            let gap = &rest[..rest.len() - doc.len()];
            let line = format!("--- @error {code}{gap}{expected}");
            if gap.is_empty() || line.chars().count() > MAX_LINE {
                format!("--- @error {code} {expected}")
            } else {
                line
            }
        }
        _ => line.to_string(),
    }
}
