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
use std::ops::Range;

use crate::header::MAX_EXACT;
use crate::key_check::{self, BAD_KEYS};
use crate::model::{Arg, ArgType, Count, Header, Rule};

/// The first line of the block.
pub const BEGIN: &str = "-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run";
/// The block's last line.
pub const END: &str = "-- End of the generated input checks.";

/// luacheck's limit, which the generated lines keep to.
const MAX_LINE: usize = 120;

/// The names the block's helper functions (and its loop's local) take; no key or argument
/// may be called so.
pub const HELPERS: &[&str] = &[
    "decimal_less",
    "integer",
    "safe_integer",
    "float",
    "shown",
    "each",
    "key_group",
    "key_cut",
    "key_split",
    "key_content_fits",
    "key_group_fits",
];

/// The error code of a bad key or argument count.
pub const BAD_ARGS: &str = "BAD_ARGS";

/// The error code a bad value of `arg` gets: `BAD_` and its name in upper case.
pub fn error_code(arg: &str) -> String {
    format!("BAD_{}", arg.to_ascii_uppercase())
}

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
/// 1 to 10`; of all the values of a variadic one (`single` false), `must be integers …`.
fn value_words(arg: &Arg, single: bool) -> String {
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
        (ArgType::Float, _) if single => format!("must be a finite decimal number ({FLOAT_FORMS})"),
        (ArgType::Float, _) => format!("must be finite decimal numbers ({FLOAT_FORMS})"),
        (ArgType::Int | ArgType::Uint | ArgType::Ms, _) => {
            let (min, max) = range_of(arg);
            let words = range_words(arg.ty, min, max);
            if single {
                format!("must be {words}")
            } else {
                format!("must be {}", words.replace("an integer", "integers"))
            }
        }
    }
}

/// Whether the block accepts `text` as a value of `arg` (for a `@default`, checked at build
/// time): the same rules, in Rust.
pub(crate) fn accepts(arg: &Arg, text: &str) -> bool {
    if arg.optional && text.is_empty() {
        return true;
    }
    match (&arg.ty, &arg.rule) {
        (_, Rule::NonEmpty) => !text.is_empty(),
        (_, Rule::OneOf(options)) => options.iter().any(|o| o == text),
        (_, Rule::Length { min, max }) => {
            text.len() >= *min as usize && max.is_none_or(|max| text.len() <= max as usize)
        }
        (_, Rule::Hex { digits }) => {
            text.len() == *digits as usize && text.bytes().all(|b| b.is_ascii_hexdigit())
        }
        (ArgType::String | ArgType::Bytes | ArgType::Json, _) => true,
        (ArgType::Bool, _) => text == "1" || text == "0",
        // Decimal text of a finite number (the block's rule has more to it; a default is
        // written as a plain number).
        (ArgType::Float, _) => {
            text.bytes()
                .all(|b| b.is_ascii_digit() || b"-.eE+".contains(&b))
                && text.parse::<f64>().is_ok_and(f64::is_finite)
        }
        (ArgType::Int | ArgType::Uint | ArgType::Ms, _) => {
            let (min, max) = range_of(arg);
            let digits = text.strip_prefix('-').unwrap_or(text);
            let canonical = text == "0"
                || (!digits.is_empty()
                    && !digits.starts_with('0')
                    && digits.bytes().all(|b| b.is_ascii_digit()));
            canonical && text.parse::<i64>().is_ok_and(|n| (min..=max).contains(&n))
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

/// The range a numeric argument accepts: the declared one, or its type's.
fn range_of(arg: &Arg) -> (i64, i64) {
    match arg.rule {
        Rule::Range { min, max } => (min, max),
        _ => crate::header::full_range(arg.ty),
    }
}

/// Whether the block binds integer argument `arg` as a Lua number (its range is within
/// ±(2^53 - 1)) rather than as its canonical decimal text.
pub fn binds_number(arg: &Arg) -> bool {
    let (min, max) = range_of(arg);
    is_exact(min, max)
}

/// Whether a range binds a Lua number (exact) rather than the canonical decimal text.
fn is_exact(min: i64, max: i64) -> bool {
    (-MAX_EXACT..=MAX_EXACT).contains(&min) && (-MAX_EXACT..=MAX_EXACT).contains(&max)
}

/// The block for `header`, lines ending in `\n`. `body_uses` names the helpers the rest
/// of the script calls too (such as `integer` to check a stored value), which the block
/// then defines even when no argument needs them.
pub fn render(header: &Header, body_uses: &[&str]) -> String {
    // The key check comes last, but decides which helpers come first.
    let mut keys = Lines::default();
    let key_helpers = match key_check::analyze(header) {
        Ok(Some(plan)) => Some(key_check::render(&plan, &mut keys)),
        _ => None,
    };
    let mut out = Lines::default();
    out.line(BEGIN);
    out.line("-- `redis-patterns fix <folder>`). A bad call changes nothing.");
    helpers(header, body_uses, key_helpers.as_ref(), &mut out);
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
    out.text.push_str(&keys.text);
    out.line(END);
    out.text
}

/// Lines of Lua being written.
#[derive(Default)]
pub(crate) struct Lines {
    text: String,
}

impl Lines {
    pub(crate) fn line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    /// `<indent>if <a> <joiner> <b> ... then`, wrapped to fit, continuations indented by
    /// four more.
    pub(crate) fn condition(&mut self, indent: &str, parts: &[String], joiner: &str) {
        let mut line = format!("{indent}if ");
        let last = parts.len().saturating_sub(1);
        for (i, part) in parts.iter().enumerate() {
            let piece = if i < last {
                format!("{part}{joiner}")
            } else {
                format!("{part} then")
            };
            if line.trim_end().len() + piece.len() > MAX_LINE && line.trim().len() > 2 {
                self.line(line.trim_end());
                line = format!("{indent}    ");
            }
            line.push_str(&piece);
        }
        self.line(&line);
    }

    /// `<indent>return redis.error_reply('<message>' .. <tail>)`, wrapped to fit.
    pub(crate) fn error(&mut self, indent: &str, message: &str, tail: Option<&str>) {
        let tail = tail.map(|t| format!(" .. {t}")).unwrap_or_default();
        let one = format!("{indent}return redis.error_reply('{message}'{tail})");
        if one.len() <= MAX_LINE {
            self.line(&one);
            return;
        }
        // One literal per line, split at spaces, each continuation indented by four more.
        self.line(&format!("{indent}return redis.error_reply("));
        let cont = format!("{indent}    ");
        let words: Vec<&str> = message.split_inclusive(' ').collect();
        let mut pieces: Vec<String> = Vec::new();
        let mut piece = String::new();
        for word in words {
            // Room for the quotes and the ` ..` that ends every line but the last.
            if !piece.is_empty() && cont.len() + piece.len() + word.len() + 5 > MAX_LINE {
                pieces.push(std::mem::take(&mut piece));
            }
            piece.push_str(word);
        }
        pieces.push(piece);
        let last = pieces.len() - 1;
        for (i, piece) in pieces.iter().enumerate() {
            if i < last {
                self.line(&format!("{cont}'{piece}' .."));
            } else if cont.len() + piece.len() + tail.len() + 3 <= MAX_LINE {
                self.line(&format!("{cont}'{piece}'{tail})"));
            } else {
                // The tail does not fit after the last words: it gets a line of its own.
                self.line(&format!("{cont}'{piece}'"));
                self.line(&format!("{cont}{})", tail.trim_start()));
            }
        }
    }
}

/// The helper functions the checks and the body need, and only those (luacheck refuses
/// unused ones): `keys`, those of the key check, if it is made.
fn helpers(
    header: &Header,
    body_uses: &[&str],
    keys: Option<&std::collections::BTreeSet<&'static str>>,
    out: &mut Lines,
) {
    let integer_args = || {
        header
            .args
            .iter()
            .filter(|a| matches!(a.ty, ArgType::Int | ArgType::Uint | ArgType::Ms))
    };
    let integers = integer_args().any(|a| !binds_number(a)) || body_uses.contains(&"integer");
    // Arguments read it inline; the script's own code may call it for stored values.
    let safe_integers = body_uses.contains(&"safe_integer");
    let decimals = integers || body_uses.contains(&"decimal_less");
    let floats = header.args.iter().any(|a| a.ty == ArgType::Float) || body_uses.contains(&"float");
    let shows = body_uses.contains(&"shown")
        || keys.is_some()
        || header.args.iter().any(|a| match a.ty {
            ArgType::String | ArgType::Bytes if a.variadic => {
                matches!(
                    a.rule,
                    Rule::OneOf(_) | Rule::Length { .. } | Rule::Hex { .. }
                )
            }
            ArgType::String | ArgType::Bytes => matches!(a.rule, Rule::OneOf(_) | Rule::Hex { .. }),
            ArgType::Json => false,
            _ => true,
        });
    if decimals {
        out.text.push_str(DECIMAL_LESS);
    }
    if integers {
        out.text.push_str(INTEGER);
    }
    if safe_integers {
        out.text.push_str(SAFE_INTEGER);
    }
    if floats {
        out.text.push_str(FLOAT);
    }
    if shows {
        out.text.push_str(SHOWN);
    }
    for (name, source) in key_check::HELPER_NAMES
        .iter()
        .zip(key_check::HELPER_SOURCES)
    {
        if keys.is_some_and(|k| k.contains(name)) || body_uses.contains(name) {
            out.text.push_str(source);
        }
    }
}

/// The helpers the input checks define, in an order where each comes after those it
/// calls: the Functions library defines each once for all its functions.
pub(crate) const HELPER_SOURCES: [&str; 10] = [
    DECIMAL_LESS,
    INTEGER,
    SAFE_INTEGER,
    FLOAT,
    SHOWN,
    key_check::KEY_GROUP,
    key_check::KEY_CUT,
    key_check::KEY_SPLIT,
    key_check::KEY_CONTENT_FITS,
    key_check::KEY_GROUP_FITS,
];

const DECIMAL_LESS: &str = "\
-- Whether decimal integer a is less than b, both in the one canonical form below: by sign,
-- then length, then in two parts of at most 10 digits, each exact in Lua's numbers, so that
-- 64-bit values compare exactly (and no locale's collation is involved).
local function decimal_less(a, b)
  local a_negative, b_negative = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if a_negative ~= b_negative then
    return a_negative
  end
  if a_negative then
    a, b = string.sub(b, 2), string.sub(a, 2)
  end
  if #a ~= #b then
    return #a < #b
  end
  local a_high, b_high = tonumber(string.sub(a, 1, 10)), tonumber(string.sub(b, 1, 10))
  if a_high ~= b_high then
    return a_high < b_high
  end
  return (tonumber(string.sub(a, 11)) or 0) < (tonumber(string.sub(b, 11)) or 0)
end
";

const INTEGER: &str = "\
-- The one rule for integers: decimal digits, an optional leading '-', no leading zero, and
-- no '+', space, fraction, exponent or hex; within min and max. Returns the text itself.
local function integer(s, min, max)
  if s ~= '0' and not string.match(s, '^%-?[1-9]%d*$') then
    return nil
  end
  -- Up to 15 characters a value is exact in a Lua number, and a bound rounded to one
  -- still falls on the same side of it.
  if #s <= 15 then
    local n = tonumber(s)
    return n >= tonumber(min) and n <= tonumber(max) and s or nil
  end
  if decimal_less(s, min) or decimal_less(max, s) then
    return nil
  end
  return s
end
";

const SAFE_INTEGER: &str = "\
-- The same rule where min and max are within 2^53 - 1 of 0, on a fast path: there every
-- integer is exact in Lua's numbers, and a longer one rounds to a number out of range.
-- Returns the number.
local function safe_integer(s, min, max)
  local n = (s == '0' or string.match(s, '^%-?[1-9]%d*$')) and tonumber(s)
  if n and n >= min and n <= max then
    return n
  end
end
";

/// What the float rule accepts, as the messages say it: the forms every language prints
/// floats in by default.
pub const FLOAT_FORMS: &str = "such as 1.5, -2, 1e+20, 1e-07 or 1.0E16";

const FLOAT: &str = "\
-- The one rule for floats: decimal digits with an optional leading '-', then an optional
-- fraction and an optional exponent (`e` or `E`, an optional sign, digits), as Python,
-- JavaScript, Java, Go and C print floats (1e+16, 1e-07, 1.0E16); no leading zero, '+'
-- before the number, space, hex, inf or nan.
local function float(s)
  local whole, fraction, exponent = string.match(s, '^%-?(%d+)(%.?%d*)(.*)$')
  if not whole or (#whole > 1 and string.sub(whole, 1, 1) == '0') or fraction == '.' then
    return nil
  end
  if exponent ~= '' and not string.match(exponent, '^[eE][%+%-]?%d+$') then
    return nil
  end
  local n = tonumber(s)
  if n ~= n or n == math.huge or n == -math.huge then
    return nil
  end
  return n
end
";

const SHOWN: &str = "\
-- A bad argument as an error shows it: its first 32 bytes, other than printable ASCII
-- escaped, and its length when it is longer.
local function shown(s)
  local head = string.gsub(string.sub(s, 1, 32), '[^%w%p ]', function(c)
    return string.format('\\\\%03d', string.byte(c))
  end)
  if #s > 32 then
    return '\"' .. head .. '\"... (' .. #s .. ' bytes)'
  end
  return '\"' .. head .. '\"'
end
";

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
    let words = format!("{code} {name} {}", value_words(arg, true));
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
                        .map(|o| format!("{name} ~= '{}'", lua_escape(o)))
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
            out.line(&format!("local {name} = {raw}"));
            out.line(&format!("if {name} ~= '1' and {name} ~= '0' then"));
            out.error(
                "  ",
                &format!("{words}, got "),
                Some(&format!("shown({name})")),
            );
            out.line("end");
            out.line(&format!("{name} = {name} == '1'"));
        }
        ArgType::Float => {
            number(out, arg, &raw, (format!("float({raw})"), vec![]), &words);
        }
        ArgType::Int | ArgType::Uint | ArgType::Ms => {
            let (min, max) = range_of(arg);
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
        0 => (
            format!("tonumber(string.match({raw}, '^[1-9]%d*$') or string.match({raw}, '^0$'))"),
            0,
        ),
        _ => (
            format!("tonumber(string.match({raw}, '^%-?[1-9]%d*$') or string.match({raw}, '^0$'))"),
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
/// is empty.
fn number(out: &mut Lines, arg: &Arg, raw: &str, read: (String, Vec<String>), words: &str) {
    let name = &arg.name;
    let shown = format!("shown({raw})");
    let (expr, out_of_range) = read;
    let mut refused = vec![format!("not {name}")];
    refused.extend(out_of_range);
    if arg.optional {
        out.line(&format!("local {name} = nil"));
        out.line(&format!("if {raw} ~= '' then"));
        out.line(&format!("  {name} = {expr}"));
        out.condition("  ", &refused, " or ");
        out.error("    ", &format!("{words}, or empty, got "), Some(&shown));
        out.line("  end");
        out.line("end");
    } else {
        out.line(&format!("local {name} = {expr}"));
        out.condition("", &refused, " or ");
        out.error("  ", &format!("{words}, got "), Some(&shown));
        out.line("end");
    }
}

/// The check of each value of the variadic argument that starts at `ARGV[first]`; the
/// values stay in `ARGV`.
fn values(arg: &Arg, first: usize, out: &mut Lines) {
    let name = &arg.name;
    let code = error_code(name);
    // The conditions that refuse a value, how they join, and whether the message shows it.
    let test: Option<(Vec<String>, &str, bool)> = match (&arg.ty, &arg.rule) {
        (ArgType::String | ArgType::Bytes | ArgType::Json, Rule::NonEmpty) => {
            Some((vec!["ARGV[i] == ''".to_string()], " and ", false))
        }
        (ArgType::String, Rule::OneOf(options)) => Some((
            options
                .iter()
                .map(|o| format!("ARGV[i] ~= '{}'", lua_escape(o)))
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
    let words = value_words(arg, false);
    let shows = if matches!(arg.ty, ArgType::Int | ArgType::Uint | ArgType::Ms) {
        let (min, max) = range_of(arg);
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
    let (message, tail) = if shows {
        (
            format!("{code} {name} {words}; ARGV["),
            "i .. '] is ' .. shown(ARGV[i])",
        )
    } else {
        (format!("{code} {name} {words}, but ARGV["), "i .. '] is'")
    };
    out.error("    ", &message, Some(tail));
    out.line("  end");
    out.line("end");
}

/// `s` inside a single-quoted Lua string.
fn lua_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\'', "\\'")
}

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
        .position(|l| is(l, BEGIN))
        .map(|n| start + n);
    let end = begin.and_then(|b| {
        lines[b..]
            .iter()
            .position(|l| is(l, END))
            .map(|n| b + n + 1)
    });
    let unopened = lines[start.min(lines.len())..begin.unwrap_or(lines.len())]
        .iter()
        .position(|l| is(l, END))
        .map(|n| start + n);
    let stray = end.and_then(|e| {
        lines[e..]
            .iter()
            .position(|l| is(l, BEGIN) || is(l, END))
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

/// The helpers of the block that `text` (the script outside its block, the shared helpers
/// it gets included) calls.
fn body_uses(text: &str) -> Vec<&'static str> {
    let (tokens, _) = crate::lua::tokenize(text);
    HELPERS
        .iter()
        .copied()
        .filter(|helper| {
            tokens.iter().enumerate().any(|(i, t)| {
                t.is_name(helper)
                    && !(i > 0 && (tokens[i - 1].is_op(".") || tokens[i - 1].is_op(":")))
            })
        })
        .collect()
}

/// The lines of the pasted shared helpers that start at `from`, if any start there.
fn shared_range(lines: &[&str], from: usize) -> Option<Range<usize>> {
    if lines.get(from).map(|l| l.trim_end()) != Some(crate::shared::BEGIN) {
        return None;
    }
    let len = lines[from..]
        .iter()
        .position(|l| l.trim_end() == crate::shared::END)?;
    Some(from..from + len + 1)
}

/// The script's own lines: neither the header, nor the block, nor the pasted helpers.
fn own_lines<'a>(lines: &[&'a str], place: &Placement) -> Vec<&'a str> {
    let block = place.block.clone().unwrap_or(place.start..place.start);
    let after = shared_range(lines, block.end).map_or(block.end, |r| r.end);
    lines[place.start.min(lines.len())..block.start]
        .iter()
        .chain(&lines[after.min(lines.len())..])
        .copied()
        .collect()
}

/// The helpers of the block a script needs, given its own lines and the pasted `shared`.
fn uses_of(own: &[&str], shared: &str) -> Vec<&'static str> {
    body_uses(&format!("{}\n{shared}", own.join("\n")))
}

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

/// The difference between the block in `source` and the one `header` declares, if any.
pub(crate) fn mismatch(source: &str, header: &Header, shared: &str) -> Option<Mismatch> {
    let lines: Vec<&str> = source.lines().collect();
    let place = locate(&lines);
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
            line: place.start + 1,
        });
    };
    if block.start != place.start {
        return Some(Mismatch::Misplaced {
            line: block.start + 1,
        });
    }
    let expected = render(header, &uses_of(&own_lines(&lines, &place), shared));
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
    let pasted = shared_range(&lines, block.end).map_or(&[][..], |r| &lines[r]);
    let wanted: Vec<&str> = shared.lines().collect();
    let at = (0..wanted.len().max(pasted.len()))
        .find(|&i| wanted.get(i).copied() != pasted.get(i).map(|l| l.trim_end_matches('\r')))?;
    Some(Mismatch::Shared {
        line: block.end + at + 1,
        expected: wanted.get(at).copied().unwrap_or_default().to_string(),
        found: pasted
            .get(at)
            .or(lines.get(block.end + at))
            .map(|l| l.trim_end_matches('\r').to_string())
            .unwrap_or_default(),
    })
}

/// `source` with its block replaced by the one `header` declares, right after the header
/// (a block elsewhere is moved there; a script without one gets one). Line ends follow the
/// file's own (`\r\n` when it uses them). Fails when a block has no last marker, since
/// where it ends cannot be known.
pub fn fix(source: &str, header: &Header) -> Result<String, String> {
    fix_with(source, header, "")
}

/// [`fix`], with `shared` (the helpers the header names, as [`crate::shared::render`]
/// gives them) pasted right after the block in place of any pasted before.
pub fn fix_with(source: &str, header: &Header, shared: &str) -> Result<String, String> {
    let crlf = source.contains("\r\n");
    let lines: Vec<&str> = source.lines().collect();
    let place = locate(&lines);
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
    let kept_after = own_lines(&lines, &place);
    let uses = uses_of(&kept_after, shared);
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
        .chain(render(header, &uses).lines())
        .chain(shared.lines())
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
