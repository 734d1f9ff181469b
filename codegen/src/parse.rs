//! The first stage: parses the optional `#!lua flags=` line and the `---` header block at
//! the top of a script into the [`model`](crate::model).
//!
//! Parsing never stops at the first problem: every malformed line is reported, and tags are
//! kept (with what could be read) so that the body checks still line up with `KEYS`/`ARGV`.

mod template;

use crate::diagnostic::{Pos, Report};
use crate::model::{
    Arg, ArgType, Clock, Count, ErrorCode, Header, Key, KeyType, MAX_NAME, Preset, PresetValue,
    Return, ReturnType, Rule, full_range, is_rust_keyword, is_snake, is_upper_snake,
};

/// The flags Redis 7 accepts on the `#!lua flags=` line.
pub(crate) const FLAGS: &[&str] = &[
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

const TAGS: &[&str] = &[
    "key",
    "arg",
    "return",
    "error",
    "uses",
    "default",
    "clock",
    "complexity",
];

const ARG_TYPES: &[(&str, ArgType)] = &[
    ("string", ArgType::String),
    ("bytes", ArgType::Bytes),
    ("int", ArgType::Int),
    ("uint", ArgType::Uint),
    ("float", ArgType::Float),
    ("bool", ArgType::Bool),
    ("ms", ArgType::Ms),
    ("json", ArgType::Json),
];

const KEY_TYPES: &[(&str, KeyType)] = &[
    ("string", KeyType::String),
    ("hash", KeyType::Hash),
    ("list", KeyType::List),
    ("set", KeyType::Set),
    ("zset", KeyType::Zset),
    ("stream", KeyType::Stream),
    ("any", KeyType::Any),
];

/// The types that may take `?`: an empty string stands for none.
const OPTIONAL_TYPES: &[ArgType] = &[ArgType::Int, ArgType::Uint, ArgType::Float, ArgType::Ms];

/// Scalars: the types a row holds, and (with `nil`) plain return types.
const SCALARS: &[(&str, ReturnType)] = &[
    ("bool", ReturnType::Bool),
    ("int", ReturnType::Int),
    ("int?", ReturnType::OptInt),
    ("uint", ReturnType::Uint),
    ("uint?", ReturnType::OptUint),
    ("decimal", ReturnType::Decimal),
    ("decimal?", ReturnType::OptDecimal),
    ("float", ReturnType::Float),
    ("float?", ReturnType::OptFloat),
    ("string", ReturnType::String),
    ("string?", ReturnType::OptString),
    ("bytes", ReturnType::Bytes),
    ("bytes?", ReturnType::OptBytes),
];

/// Non-scalar return types, written without spaces.
const LISTS: &[(&str, ReturnType)] = &[
    ("[string]", ReturnType::Strings),
    ("[bytes]", ReturnType::BytesList),
    ("[int]", ReturnType::Ints),
    ("[decimal]", ReturnType::Decimals),
    ("[[decimal]]", ReturnType::DecimalRows),
];

/// An `@key` tag as read; `name_ok` is false when the name is unusable.
#[derive(Debug, Clone)]
pub(crate) struct KeyTag {
    pub key: Key,
    pub at: Pos,
    pub name_ok: bool,
    /// Where its template starts, when it has one (parsed or not).
    pub template_at: Option<Pos>,
}

/// An `@arg` tag as read; `ty` is `None` when the type is unknown.
#[derive(Debug, Clone)]
pub(crate) struct ArgTag {
    pub name: String,
    pub ty: Option<ArgType>,
    pub optional: bool,
    pub rule: Rule,
    pub doc: String,
    pub variadic: bool,
    pub count: Count,
    pub at: Pos,
    pub name_ok: bool,
}

/// An `@error` tag as read.
#[derive(Debug, Clone)]
pub(crate) struct ErrorTag {
    pub error: ErrorCode,
    pub at: Pos,
}

/// The header as far as it could be read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Parsed {
    /// Whether there is a `---` block at all; without one the body is not checked against it.
    pub found: bool,
    pub flags: Vec<String>,
    pub summary: Option<String>,
    pub description: Vec<String>,
    pub keys: Vec<KeyTag>,
    pub args: Vec<ArgTag>,
    /// `None` inside when the tag is present but its type did not parse.
    pub returns: Option<(Pos, Option<Return>)>,
    pub errors: Vec<ErrorTag>,
    pub clock: Option<(Pos, Clock)>,
    pub complexity: Option<(Pos, String)>,
    /// `@uses` names, where each is written.
    pub uses: Vec<(Pos, String)>,
    /// `@default` entries, where each is written.
    pub defaults: Vec<(Pos, Preset)>,
}

impl Parsed {
    /// The model value; `None` if something required is missing (which has been reported).
    pub(crate) fn into_header(self) -> Option<Header> {
        let returns = self.returns.and_then(|(_, r)| r)?;
        let args = self
            .args
            .into_iter()
            .map(|a| {
                Some(Arg {
                    name: a.name,
                    ty: a.ty?,
                    optional: a.optional,
                    rule: a.rule,
                    doc: a.doc,
                    variadic: a.variadic,
                    count: a.count,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Header {
            flags: self.flags,
            summary: self.summary?,
            description: self.description,
            keys: self.keys.into_iter().map(|k| k.key).collect(),
            args,
            returns,
            errors: self.errors.into_iter().map(|e| e.error).collect(),
            clock: self.clock.map(|(_, c)| c),
            complexity: self.complexity?.1,
            uses: self.uses.into_iter().map(|(_, name)| name).collect(),
            defaults: self.defaults.into_iter().map(|(_, d)| d).collect(),
        })
    }
}

/// Reads the shebang line and the header block of `source`, reporting every problem.
pub(crate) fn parse(source: &str, report: &mut Report) -> Parsed {
    let lines: Vec<&str> = source.lines().collect();
    let mut parsed = Parsed::default();
    let mut next = 0;
    if let Some(first) = lines.first().filter(|l| l.starts_with("#!")) {
        parsed.flags = shebang(first.trim_end(), report);
        next = 1;
    }
    let start = next;
    while lines.get(next).is_some_and(|l| l.starts_with("---")) {
        next += 1;
    }
    if start == next {
        report.error(
            1,
            1,
            "the script has no header",
            "begin the file (after any `#!lua` line) with `---` comment lines: a one-sentence \
             summary, then the `@key`, `@arg`, `@return`, `@error`, `@clock` and \
             `@complexity` tags",
        );
        return parsed;
    }
    parsed.found = true;
    let mut block = Block::default();
    for (i, line) in lines.iter().enumerate().take(next).skip(start) {
        block.line(&mut parsed, i + 1, line, report);
    }
    let last = next; // 1-based number of the last header line
    if parsed.returns.is_none() {
        report.error(
            last,
            1,
            "the header has no `@return`",
            "declare the reply with `--- @return <type> <doc>`; the header ends at the first \
             line that does not start with `---`",
        );
    }
    if parsed.complexity.is_none() {
        report.error(
            last,
            1,
            "the header has no `@complexity`",
            "state the cost with `--- @complexity <text>`; the header ends at the first line \
             that does not start with `---`",
        );
    }
    parsed.description = trim_blank(std::mem::take(&mut block.prose));
    check_variadic_and_names(&parsed, report);
    check_defaults(&parsed, report);
    let templated: Vec<(&Key, Pos)> = parsed
        .keys
        .iter()
        .filter_map(|k| Some((&k.key, k.template_at?)))
        .collect();
    template::check_script(&templated, report);
    if let Some((at, Clock::Caller)) = parsed.clock
        && !parsed.args.iter().any(|a| a.name == "now")
    {
        report.error(
            at.line,
            at.col,
            "`@clock caller` needs an argument named `now`",
            "declare the caller's time with `--- @arg now <type> <unit and epoch>`",
        );
    }
    parsed
}

/// `#!lua` or `#!lua flags=a,b`; returns the known flags.
fn shebang(line: &str, report: &mut Report) -> Vec<String> {
    let mut flags = Vec::new();
    let Some(rest) = line
        .strip_prefix("#!lua")
        .filter(|r| r.is_empty() || r.starts_with(' '))
    else {
        report.error(
            1,
            1,
            format!("unknown shebang `{line}`"),
            "a script may begin with `#!lua` or `#!lua flags=<flag>,<flag>`",
        );
        return flags;
    };
    let mut col = "#!lua".len() + 1;
    for (i, option) in rest.split(' ').enumerate() {
        if i > 0 {
            col += 1;
        }
        let option_col = col;
        col += option.chars().count();
        if option.is_empty() {
            continue;
        }
        let Some(list) = option.strip_prefix("flags=") else {
            report.error(
                1,
                option_col,
                format!("unknown shebang option `{option}`"),
                "the only option is `flags=`, its flags separated by commas without spaces: \
                 `#!lua flags=no-writes,allow-stale`",
            );
            continue;
        };
        let mut flag_col = option_col + "flags=".len();
        for flag in list.split(',') {
            if flag.is_empty() {
                report.error(
                    1,
                    flag_col,
                    "empty flag in `flags=`",
                    "separate flags with single commas: `#!lua flags=no-writes,allow-stale`; \
                     write `#!lua` alone for none",
                );
            } else if !FLAGS.contains(&flag) {
                report.error(
                    1,
                    flag_col,
                    format!("unknown flag `{flag}`"),
                    format!(
                        "{}the flags are {}",
                        did_you_mean(flag, FLAGS, ""),
                        list_of(FLAGS)
                    ),
                );
            } else if flags.iter().any(|f| f == flag) {
                report.error(
                    1,
                    flag_col,
                    format!("flag `{flag}` is listed twice"),
                    "list each flag once",
                );
            } else {
                flags.push(flag.to_string());
            }
            flag_col += flag.chars().count() + 1;
        }
    }
    flags
}

/// State while reading the `---` lines.
#[derive(Default)]
struct Block {
    seen_summary: bool,
    /// Set while the previous line was a summary that does not end a sentence.
    open_summary: bool,
    in_tags: bool,
    /// Set while the lines since the `@return` tag continue its doc: an indented line
    /// goes on with it.
    in_return_doc: bool,
    prose: Vec<String>,
}

impl Block {
    fn line(&mut self, parsed: &mut Parsed, line_no: usize, line: &str, report: &mut Report) {
        // `---` then one optional space; the rest is the content.
        let after = &line[3..];
        let (content, base) = match after.strip_prefix(' ') {
            Some(c) => (c, 4),
            None => (after, 3),
        };
        let content = content.trim_end();
        let mut cur = Cursor::new(content, base);
        cur.skip_ws();
        let is_tag = cur.peek() == Some('@');
        if !self.seen_summary {
            self.seen_summary = true;
            if content.trim().is_empty() {
                report.error(
                    line_no,
                    1,
                    "the header's first line is empty",
                    "begin the header with a one-sentence summary: `--- Does this and that.`",
                );
                return;
            }
            if !is_tag {
                let summary = content.trim();
                self.open_summary = !summary.ends_with(['.', '!', '?']);
                parsed.summary = Some(summary.to_string());
                return;
            }
            report.error(
                line_no,
                1,
                "the header has no summary",
                "begin the header with a one-sentence summary, above the tags",
            );
        }
        if std::mem::take(&mut self.open_summary) && !is_tag && !content.trim().is_empty() {
            // The model keeps one summary line; a wrapped one would be cut mid-sentence.
            report.error(
                line_no,
                cur.col(),
                "the summary runs onto a second line",
                "fit the one-sentence summary on the first line, then a blank `---` line and \
                 the description",
            );
        }
        if !is_tag {
            if !self.in_tags {
                if starts_a_reply_line(content) {
                    report.error(
                        line_no,
                        cur.col(),
                        "the prose describes the reply in a `Reply` line",
                        "the `@return` doc is the one description of the reply: move what this \
                         line says there, and keep in the prose what the script does",
                    );
                }
                self.prose.push(content.to_string());
            } else if content.trim().is_empty() {
                // Blank `---` lines between tag groups are harmless and kept out of the docs.
                self.in_return_doc = false;
            } else if self.in_return_doc && content.starts_with(char::is_whitespace) {
                // The `@return` doc goes on, indented, over as many lines as it needs.
                if let Some((_, Some(returns))) = &mut parsed.returns {
                    returns.doc.push(' ');
                    returns.doc.push_str(content.trim());
                }
            } else {
                report.error(
                    line_no,
                    cur.col(),
                    "prose after the tags",
                    "move it above the first tag, into the description; only the `@return` doc \
                     goes on below its tag, over indented lines",
                );
            }
            return;
        }
        self.in_tags = true;
        let returns_before = parsed.returns.as_ref().map(|(at, _)| *at);
        tag(parsed, line_no, &mut cur, report);
        // Only a `@return` tag read here (not one declared twice) opens a doc that goes on.
        self.in_return_doc = parsed
            .returns
            .as_ref()
            .is_some_and(|(at, _)| at.line == line_no && returns_before.is_none());
    }
}

/// Whether a prose line opens with the word `Reply` (`Reply:`, `Reply, per board:`):
/// prose that restates what `@return` declares, and could come to contradict it.
fn starts_a_reply_line(content: &str) -> bool {
    content
        .trim_start()
        .strip_prefix("Reply")
        .is_some_and(|rest| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
}

/// A cursor over the characters of one header line's content, for columns.
struct Cursor {
    chars: Vec<char>,
    pos: usize,
    /// Characters before the content on the line (`--- `).
    base: usize,
}

impl Cursor {
    fn new(content: &str, base: usize) -> Self {
        Cursor {
            chars: content.chars().collect(),
            pos: 0,
            base,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn col(&self) -> usize {
        self.base + self.pos + 1
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    /// The next whitespace-delimited word and its column. Inside `(…)` and `[…]` whitespace
    /// does not end the word, so `[(string, float)]` is one word.
    fn word(&mut self) -> Option<(usize, String)> {
        self.skip_ws();
        let col = self.col();
        let mut depth = 0usize;
        let mut word = String::new();
        while let Some(c) = self.peek() {
            match c {
                '(' | '[' => depth += 1,
                ')' | ']' => depth = depth.saturating_sub(1),
                c if c.is_whitespace() && depth == 0 => break,
                _ => {}
            }
            word.push(c);
            self.pos += 1;
        }
        (!word.is_empty()).then_some((col, word))
    }

    /// The next word and its column, without moving past it.
    fn peek_word(&mut self) -> Option<(usize, String)> {
        let pos = self.pos;
        let word = self.word();
        self.pos = pos;
        word
    }

    /// The rest of the line, trimmed.
    fn rest(&mut self) -> String {
        self.skip_ws();
        let rest: String = self.chars[self.pos.min(self.chars.len())..]
            .iter()
            .collect();
        self.pos = self.chars.len();
        rest.trim().to_string()
    }
}

fn tag(parsed: &mut Parsed, line: usize, cur: &mut Cursor, report: &mut Report) {
    let Some((col, word)) = cur.word() else {
        return;
    };
    let at = Pos { line, col };
    let name = &word[1..];
    match name {
        "key" => key_tag(parsed, at, cur, report),
        "arg" => arg_tag(parsed, at, cur, report),
        "return" => return_tag(parsed, at, cur, report),
        "error" => error_tag(parsed, at, cur, report),
        "clock" => clock_tag(parsed, at, cur, report),
        "uses" => uses_tag(parsed, at, cur, report),
        "default" => default_tag(parsed, at, cur, report),
        "complexity" => {
            let text = cur.rest();
            if text.is_empty() {
                report.error(
                    line,
                    col,
                    "`@complexity` is empty",
                    "state the cost in terms the caller controls: \
                     `--- @complexity O(log N + M), M = limit`",
                );
            }
            if let Some((first, _)) = &parsed.complexity {
                twice(report, at, "@complexity", *first);
            } else {
                parsed.complexity = Some((at, text));
            }
        }
        _ => report.error(
            line,
            col,
            format!("unknown tag `{word}`"),
            format!(
                "{}the tags are {}",
                did_you_mean(name, TAGS, "@"),
                list_of(&TAGS.iter().map(|t| format!("@{t}")).collect::<Vec<_>>())
            ),
        ),
    }
}

fn twice(report: &mut Report, at: Pos, tag: &str, first: Pos) {
    report.error(
        at.line,
        at.col,
        format!("`{tag}` is declared twice"),
        format!(
            "a script has one `{tag}`; the first is on line {}",
            first.line
        ),
    );
}

fn key_tag(parsed: &mut Parsed, at: Pos, cur: &mut Cursor, report: &mut Report) {
    let Some((name_col, raw)) = cur.word() else {
        report.error(
            at.line,
            at.col,
            "`@key` needs a name, a type and a doc",
            "write `--- @key <name> <type> <what the key holds>`",
        );
        // Kept as a placeholder so later keys keep their `KEYS` index.
        parsed.keys.push(KeyTag {
            key: Key {
                name: String::new(),
                ty: KeyType::String,
                doc: String::new(),
                variadic: false,
                count: Count::ONE,
                template: None,
            },
            at,
            name_ok: false,
            template_at: None,
        });
        return;
    };
    let (name, variadic) = match raw.strip_suffix("...") {
        Some(n) => (n.to_string(), true),
        None => (raw.clone(), false),
    };
    let name_ok = check_name(&name, &raw, name_col, at.line, report, false);
    let mut ty = None;
    match cur.word() {
        None => report.error(
            at.line,
            at.col,
            format!("`@key {name}` has no type"),
            format!("write `--- @key {raw} <type> <doc>`; {}", key_types()),
        ),
        Some((ty_col, word)) => {
            ty = KEY_TYPES.iter().find(|(n, _)| *n == word).map(|(_, t)| *t);
            if ty.is_none() {
                let names: Vec<&str> = KEY_TYPES.iter().map(|(n, _)| *n).collect();
                report.error(
                    at.line,
                    ty_col,
                    format!("unknown key type `{word}`"),
                    format!("{}{}", did_you_mean(&word, &names, ""), key_types()),
                );
            }
        }
    }
    let mut count = if variadic { Count::ANY } else { Count::ONE };
    if let Some((col, word)) = cur.peek_word()
        && looks_like_range(&word)
    {
        cur.word();
        if !variadic {
            report.error(
                at.line,
                col,
                format!("`{word}` on a key that is not variadic"),
                format!(
                    "a range after the type counts the keys of a variadic key: \
                     `--- @key {name}... <type> {word} <doc>`"
                ),
            );
        } else if let Some(c) = parse_count(&word, at.line, col, report) {
            count = c;
        }
    }
    let mut template = None;
    let mut template_at = None;
    if let Some((col, word)) = cur.peek_word()
        && template::is_template(&word)
    {
        cur.word();
        template_at = Some(Pos { line: at.line, col });
        template = template::parse(&word, at.line, col, variadic, report);
    }
    let doc = cur.rest();
    if doc.is_empty() {
        report.error(
            at.line,
            at.col,
            format!("`@key {name}` has no doc"),
            format!("say what the key holds: `--- @key {raw} <type> <doc>`"),
        );
    }
    parsed.keys.push(KeyTag {
        key: Key {
            name,
            ty: ty.unwrap_or(KeyType::String),
            doc,
            variadic,
            count,
            template,
        },
        at,
        name_ok: name_ok && ty.is_some(),
        template_at,
    });
}

fn key_types() -> String {
    let names: Vec<&str> = KEY_TYPES.iter().map(|(n, _)| *n).collect();
    format!(
        "the key types are {}: what `TYPE` answers for the key (`any` for a key the script \
         only deletes, whatever it holds)",
        list_of(&names)
    )
}

fn arg_tag(parsed: &mut Parsed, at: Pos, cur: &mut Cursor, report: &mut Report) {
    let Some((name_col, name)) = cur.word() else {
        report.error(
            at.line,
            at.col,
            "`@arg` needs a name, a type and a doc",
            "write `--- @arg <name> <type> <what it means>`",
        );
        // Kept as a placeholder so later arguments keep their `ARGV` index.
        parsed.args.push(ArgTag {
            name: String::new(),
            ty: None,
            optional: false,
            rule: Rule::Any,
            doc: String::new(),
            variadic: false,
            count: Count::ONE,
            at,
            name_ok: false,
        });
        return;
    };
    let name_ok = check_name(&name, &name, name_col, at.line, report, true);
    let mut tag = ArgTag {
        name: name.clone(),
        ty: None,
        optional: false,
        rule: Rule::Any,
        doc: String::new(),
        variadic: false,
        count: Count::ONE,
        at,
        name_ok,
    };
    let Some((ty_col, raw)) = cur.word() else {
        report.error(
            at.line,
            at.col,
            format!("`@arg {name}` has no type"),
            format!("write `--- @arg {name} <type> <doc>`; {}", arg_types()),
        );
        parsed.args.push(tag);
        return;
    };
    let (ty, variadic) = match raw.strip_suffix("...") {
        Some(t) => (t, true),
        None => (raw.as_str(), false),
    };
    let (ty, optional) = match ty.strip_suffix('?') {
        Some(t) => (t, true),
        None => (ty, false),
    };
    tag.variadic = variadic;
    tag.optional = optional;
    if variadic {
        tag.count = Count::ANY;
    }
    tag.ty = ARG_TYPES.iter().find(|(n, _)| *n == ty).map(|(_, t)| *t);
    match tag.ty {
        None => {
            let names: Vec<&str> = ARG_TYPES.iter().map(|(n, _)| *n).collect();
            report.error(
                at.line,
                ty_col,
                format!("unknown type `{raw}`"),
                format!("{}{}", did_you_mean(ty, &names, ""), arg_types()),
            );
        }
        Some(t) if optional && (variadic || !OPTIONAL_TYPES.contains(&t)) => {
            let hint = if variadic {
                "a variadic argument takes no `?`: pass no values for none".to_string()
            } else {
                format!(
                    "`?` (an empty string for none) goes with `int`, `uint`, `float` and `ms`; \
                     write `{ty}` and accept an empty `{ty}` instead"
                )
            };
            report.error(at.line, ty_col, format!("`{raw}` cannot be optional"), hint);
        }
        Some(_) => {}
    }
    let ranged = constraints(&mut tag, cur, report);
    // A range that was written but refused is reported once, where it stands.
    if let Some(ty) = tag.ty
        && tag.rule == Rule::Any
        && !variadic
        && !ranged
        && ty == ArgType::Ms
    {
        report.error(
            at.line,
            ty_col,
            format!("`@arg {name} {raw}` needs a range"),
            format!(
                "say which durations are accepted, in milliseconds: \
                 `--- @arg {name} {raw} 1..=10^15-1 <doc>`"
            ),
        );
    }
    tag.doc = cur.rest();
    if tag.doc.is_empty() {
        report.error(
            at.line,
            at.col,
            format!("`@arg {name}` has no doc"),
            format!("say what the argument means: `--- @arg {name} {raw} <doc>`"),
        );
    }
    parsed.args.push(tag);
}

/// The words between an argument's type and its doc: a range (the value's, or the count
/// of a variadic's values), `non-empty`, or `a|b|c`.
fn constraints(tag: &mut ArgTag, cur: &mut Cursor, report: &mut Report) -> bool {
    let line = tag.at.line;
    let mut ranged = false;
    let mut counted = false;
    while let Some((col, word)) = cur.peek_word() {
        if looks_like_range(&word) {
            ranged = true;
            cur.word();
            // A variadic's first range counts its values; a second one bounds each.
            if tag.variadic && !counted {
                counted = true;
                if let Some(count) = parse_count(&word, line, col, report) {
                    tag.count = count;
                }
                continue;
            }
            if tag.rule != Rule::Any {
                twice_constraint(report, line, col, &word);
                continue;
            }
            let Some(ty) = tag.ty else { continue };
            let Some((min, max)) = parse_range(&word, line, col, report) else {
                continue;
            };
            let (lo, hi) = full_range(ty);
            let what = match ty {
                ArgType::Int | ArgType::Uint | ArgType::Ms => None,
                _ => Some("ranges go with `int`, `uint` and `ms`"),
            };
            if let Some(hint) = what {
                report.error(
                    line,
                    col,
                    format!("a range on a `{}` argument", type_name(ty)),
                    hint,
                );
            } else if min > max {
                report.error(
                    line,
                    col,
                    format!("the range `{word}` is empty"),
                    "write the smaller bound first: `1..=1000`",
                );
            } else if min < lo || max > hi {
                report.error(
                    line,
                    col,
                    format!(
                        "the range `{word}` goes beyond what `{}` holds",
                        type_name(ty)
                    ),
                    if ty == ArgType::Ms {
                        "`ms` holds 0 to 2^53 - 1: a duration stays below 2^53 ms, where Lua's \
                         numbers are exact (Redis refuses expiries long before that)"
                            .to_string()
                    } else {
                        format!("`{}` holds {lo} to {hi}", type_name(ty))
                    },
                );
            } else {
                tag.rule = Rule::Range { min, max };
            }
        } else if let Some(spec) = word
            .strip_prefix("len:")
            .or_else(|| word.strip_prefix("hex:"))
        {
            cur.word();
            let hex = word.starts_with("hex:");
            let rule = if hex {
                match spec.parse::<u32>() {
                    Ok(digits) if (1..=1024).contains(&digits) && !spec.starts_with('0') => {
                        Some(Rule::Hex { digits })
                    }
                    _ => {
                        report.error(
                            line,
                            col,
                            format!("`{word}` is not a number of hex digits"),
                            "write how many hexadecimal digits the value holds, from 1 to 1024: \
                             `hex:32` for 128 bits",
                        );
                        None
                    }
                }
            } else {
                let bytes = |n: i64| u32::try_from(n).ok();
                match parse_range(spec, line, col + 4, report) {
                    Some((min, i64::MAX)) if bytes(min).is_some() => Some(Rule::Length {
                        min: min as u32,
                        max: None,
                    }),
                    Some((min, max))
                        if min <= max && bytes(min).is_some() && bytes(max).is_some() =>
                    {
                        Some(Rule::Length {
                            min: min as u32,
                            max: Some(max as u32),
                        })
                    }
                    Some(_) => {
                        report.error(
                            line,
                            col,
                            format!("`{word}` is not a length in bytes"),
                            "bound the length from 0 to 2^32 - 1 bytes, smaller bound first: \
                             `len:16..` or `len:1..=64`",
                        );
                        None
                    }
                    None => None,
                }
            };
            match tag.ty {
                Some(ArgType::String | ArgType::Bytes) if tag.rule == Rule::Any => {
                    if let Some(rule) = rule {
                        tag.rule = rule;
                    }
                }
                Some(ArgType::String | ArgType::Bytes) => {
                    twice_constraint(report, line, col, &word);
                }
                Some(ty) => report.error(
                    line,
                    col,
                    format!("`{word}` on a `{}` argument", type_name(ty)),
                    "`len:` and `hex:` go with `string` and `bytes`",
                ),
                None => {}
            }
        } else if word == "non-empty" {
            cur.word();
            match tag.ty {
                Some(ArgType::String | ArgType::Bytes | ArgType::Json) if tag.rule == Rule::Any => {
                    tag.rule = Rule::NonEmpty;
                }
                Some(ArgType::String | ArgType::Bytes | ArgType::Json) => {
                    twice_constraint(report, line, col, &word);
                }
                Some(ty) => report.error(
                    line,
                    col,
                    format!("`non-empty` on a `{}` argument", type_name(ty)),
                    "`non-empty` goes with `string`, `bytes` and `json`",
                ),
                None => {}
            }
        } else if word.contains('|') {
            cur.word();
            let options: Vec<String> = word.split('|').map(str::to_string).collect();
            let plain = |o: &String| {
                o.len() <= MAX_NAME
                    && o.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b))
            };
            if options.iter().any(|o| o.is_empty()) {
                report.error(
                    line,
                    col,
                    format!("`{word}` has an empty choice"),
                    "separate the accepted strings with single `|`: `sum|min|max`",
                );
            } else if let Some(odd) = options.iter().find(|o| !plain(o)) {
                report.error(
                    line,
                    col,
                    format!("the choice `{odd}` is not a plain word"),
                    format!(
                        "a choice is at most {MAX_NAME} letters, digits, `_`, `.`, `:` or `-`; \
                         check other values in the script's own code"
                    ),
                );
            } else if tag.ty != Some(ArgType::String) {
                if let Some(ty) = tag.ty {
                    report.error(
                        line,
                        col,
                        format!("a list of choices on a `{}` argument", type_name(ty)),
                        "a list of choices (`a|b|c`) goes with `string`",
                    );
                }
            } else if tag.rule != Rule::Any {
                twice_constraint(report, line, col, &word);
            } else {
                tag.rule = Rule::OneOf(options);
            }
        } else {
            break;
        }
    }
    ranged
}

fn twice_constraint(report: &mut Report, line: usize, col: usize, word: &str) {
    report.error(
        line,
        col,
        format!("`{word}` constrains the argument a second time"),
        "give one constraint on the values (a range, `non-empty`, `a|b|c`, `len:A..` or \
         `hex:N`) and, on a variadic argument, one range for how many values it takes",
    );
}

/// `A..=B` or `A..`, a first look: digits, `^`, `_`, `+`, `-` around `..`.
fn looks_like_range(word: &str) -> bool {
    word.contains("..")
        && word
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '-')
        && word
            .chars()
            .all(|c| c.is_ascii_digit() || "^_+-.=".contains(c))
}

/// `A..=B` or `A..` (no upper bound) into its bounds, `i64::MAX` standing for none.
fn parse_range(word: &str, line: usize, col: usize, report: &mut Report) -> Option<(i64, i64)> {
    let hint = "write a range as `A..=B` (or `A..` for no upper bound), with bounds such as \
                `1000`, `10_000`, `2^32` or `10^15-1`";
    let (a, b) = match word.split_once("..=") {
        Some((a, b)) => (a, Some(b)),
        None => match word.strip_suffix("..") {
            Some(a) => (a, None),
            None => {
                report.error(line, col, format!("`{word}` is not a range"), hint);
                return None;
            }
        },
    };
    let bound = |text: &str| eval_bound(text).filter(|v| i64::try_from(*v).is_ok());
    let min = bound(a);
    let max = match b {
        Some(b) => bound(b),
        None => Some(i128::from(i64::MAX)),
    };
    match (min, max) {
        (Some(min), Some(max)) => Some((min as i64, max as i64)),
        _ => {
            report.error(
                line,
                col,
                format!("`{word}` is not a range of 64-bit integers"),
                hint,
            );
            None
        }
    }
}

/// A count range: both ends from 0 to 2^32 - 1.
fn parse_count(word: &str, line: usize, col: usize, report: &mut Report) -> Option<Count> {
    let (min, max) = parse_range(word, line, col, report)?;
    let max = (max != i64::MAX).then_some(max);
    let fits = |n: i64| u32::try_from(n).ok();
    match (fits(min), max.map(fits)) {
        (Some(min), None) => Some(Count { min, max: None }),
        (Some(min), Some(Some(max))) if min <= max => Some(Count {
            min,
            max: Some(max),
        }),
        _ => {
            report.error(
                line,
                col,
                format!("`{word}` is not a count"),
                "count the values of a variadic from 0 to 2^32 - 1, smaller bound first: \
                 `1..=1000`",
            );
            None
        }
    }
}

/// `-`? then terms joined by `+`/`-`; a term is `N` or `N^E`; `_` separates digits.
fn eval_bound(text: &str) -> Option<i128> {
    let text = text.replace('_', "");
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.as_str()),
    };
    let mut total: i128 = 0;
    let mut sign: i128 = if negative { -1 } else { 1 };
    let mut term = String::new();
    let mut chars = rest.chars().peekable();
    loop {
        match chars.next() {
            Some(c @ ('+' | '-')) => {
                total = total.checked_add(sign.checked_mul(eval_term(&term)?)?)?;
                term.clear();
                sign = if c == '+' { 1 } else { -1 };
            }
            Some(c) => term.push(c),
            None => {
                return total.checked_add(sign.checked_mul(eval_term(&term)?)?);
            }
        }
    }
}

fn eval_term(term: &str) -> Option<i128> {
    let digits = |s: &str| {
        (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit()))
            .then(|| s.parse::<i128>().ok())
            .flatten()
    };
    match term.split_once('^') {
        None => digits(term),
        Some((base, exp)) => digits(base)?.checked_pow(u32::try_from(digits(exp)?).ok()?),
    }
}

fn type_name(ty: ArgType) -> &'static str {
    ARG_TYPES
        .iter()
        .find(|(_, t)| *t == ty)
        .map(|(n, _)| *n)
        .unwrap_or("?")
}

fn arg_types() -> String {
    let names: Vec<&str> = ARG_TYPES.iter().map(|(n, _)| *n).collect();
    format!(
        "the argument types are {}; `?` after `int`, `uint`, `float` or `ms` makes an empty \
         string mean none; `...` after the last argument's type makes it variadic",
        list_of(&names)
    )
}

/// Checks a key or argument name; `raw` is the name as written (with any `...`).
fn check_name(
    name: &str,
    raw: &str,
    col: usize,
    line: usize,
    report: &mut Report,
    is_arg: bool,
) -> bool {
    if is_arg && let Some(stem) = raw.strip_suffix("...") {
        report.error(
            line,
            col,
            format!("`{raw}` is not a valid name"),
            format!(
                "a variadic argument marks its type, not its name: \
                 `--- @arg {stem} <type>... <doc>`"
            ),
        );
        return false;
    }
    if !is_snake(name) {
        report.error(
            line,
            col,
            format!("`{raw}` is not a valid name"),
            "names are snake_case: a lower-case letter, then lower-case letters, digits and `_`",
        );
        return false;
    }
    if name.len() > MAX_NAME {
        report.error(
            line,
            col,
            format!("`{name}` is longer than {MAX_NAME} characters"),
            "pick a shorter name: the generated checks keep their lines to 120 characters",
        );
        return false;
    }
    if crate::helpers::HELPERS
        .iter()
        .any(|(helper, _)| *helper == name)
    {
        report.error(
            line,
            col,
            format!("`{name}` is the name of a helper of the generated input checks"),
            "pick another name: the script binds it to a local of the same name",
        );
        return false;
    }
    if crate::helpers::LOOP_LOCALS.contains(&name) {
        report.error(
            line,
            col,
            format!("`{name}` is the name of a loop's local in the generated input checks"),
            "pick another name: the checks' loops would hide the script's local of that name",
        );
        return false;
    }
    if crate::lua::is_keyword(name) {
        report.error(
            line,
            col,
            format!("`{name}` is a Lua keyword"),
            "pick another name: the script binds it to a local of the same name",
        );
        return false;
    }
    if is_rust_keyword(name) {
        report.error(
            line,
            col,
            format!("`{name}` is a Rust keyword"),
            "pick another name: the generated wrapper takes a parameter of the same name",
        );
        return false;
    }
    true
}

fn return_tag(parsed: &mut Parsed, at: Pos, cur: &mut Cursor, report: &mut Report) {
    let Some((ty_col, raw)) = cur.word() else {
        report.error(
            at.line,
            at.col,
            "`@return` needs a type and a doc",
            "write `--- @return <type> <what the reply means>`",
        );
        if parsed.returns.is_none() {
            parsed.returns = Some((at, None));
        }
        return;
    };
    let ty = return_type(&raw, at.line, ty_col, report);
    let doc = cur.rest();
    if doc.is_empty() {
        report.error(
            at.line,
            at.col,
            format!("`@return {raw}` has no doc"),
            format!("say what the reply means: `--- @return {raw} <doc>`"),
        );
    }
    if let Some((first, _)) = &parsed.returns {
        twice(report, at, "@return", *first);
    } else {
        parsed.returns = Some((at, ty.map(|ty| Return { ty, doc })));
    }
}

fn return_type(raw: &str, line: usize, col: usize, report: &mut Report) -> Option<ReturnType> {
    let compact: String = raw.chars().filter(|c| !c.is_whitespace()).collect();
    let known = std::iter::once(("nil", ReturnType::Nil))
        .chain(SCALARS.iter().cloned())
        .chain(LISTS.iter().cloned())
        .find(|(n, _)| *n == compact)
        .map(|(_, t)| t);
    if known.is_some() {
        return known;
    }
    let scalars: Vec<&str> = SCALARS.iter().map(|(n, _)| *n).collect();
    // `(…)?`: a tuple or nil; `[(…)]`: rows, each a tuple of scalars; `(…)`: a tuple.
    let shape = if let Some(inner) = compact.strip_prefix('(').and_then(|s| s.strip_suffix(")?")) {
        Some((Shape::OptTuple, inner))
    } else if let Some(inner) = compact
        .strip_prefix("[(")
        .and_then(|s| s.strip_suffix(")]"))
    {
        Some((Shape::Rows, inner))
    } else {
        compact
            .strip_prefix('(')
            .and_then(|s| s.strip_suffix(')'))
            .map(|inner| (Shape::Tuple, inner))
    };
    if let Some((shape, inner)) = shape {
        let mut elems = Vec::new();
        for part in split_elements(inner) {
            let elem = match shape {
                Shape::Rows => scalar(part),
                Shape::Tuple | Shape::OptTuple => tuple_element(part),
            };
            match elem {
                Some(t) => elems.push(t),
                None => {
                    let (candidates, hint) = match shape {
                        Shape::Rows => (
                            scalars.clone(),
                            format!("a row's elements are {}", list_of(&scalars)),
                        ),
                        Shape::Tuple | Shape::OptTuple => {
                            let mut all = scalars.clone();
                            all.extend(TUPLE_LISTS);
                            (
                                all,
                                format!(
                                    "tuple elements are {}, lists of them ({}), and rows of them \
                                     such as `[(string, bytes)]`",
                                    list_of(&scalars),
                                    list_of(TUPLE_LISTS)
                                ),
                            )
                        }
                    };
                    report.error(
                        line,
                        col,
                        format!("unknown type `{part}` in the tuple `{raw}`"),
                        format!("{}{hint}", did_you_mean(part, &candidates, "")),
                    );
                    return None;
                }
            }
        }
        if elems.len() < 2 {
            report.error(
                line,
                col,
                format!("the tuple `{raw}` has fewer than two elements"),
                "return a plain type instead, or list two or more elements: `(int, string?)`",
            );
            return None;
        }
        if elems.len() > MAX_TUPLE {
            report.error(
                line,
                col,
                format!(
                    "the tuple `{raw}` has {} elements, more than the {MAX_TUPLE} a Rust client \
                     reads as one tuple",
                    elems.len()
                ),
                "group values of one kind in a list: `([int], uint, …)`",
            );
            return None;
        }
        return Some(match shape {
            Shape::Rows => ReturnType::Rows(elems),
            Shape::Tuple => ReturnType::Tuple(elems),
            Shape::OptTuple => ReturnType::OptTuple(elems),
        });
    }
    let mut all = vec!["nil"];
    all.extend(&scalars);
    all.extend(LISTS.iter().map(|(n, _)| *n));
    report.error(
        line,
        col,
        format!("unknown return type `{raw}`"),
        format!(
            "{}the return types are {}, tuples such as `(int, string?)` (of scalars, lists of \
             them, and rows of them: `(uint, [bytes])`), a tuple or nil such as \
             `(string, uint)?`, and rows of scalars such as `[(string, float)]`",
            did_you_mean(&compact, &all, ""),
            list_of(&all)
        ),
    );
    None
}

/// The bracketed forms of a return type.
#[derive(Clone, Copy)]
enum Shape {
    /// `(…)`
    Tuple,
    /// `(…)?`
    OptTuple,
    /// `[(…)]`
    Rows,
}

/// The lists a tuple may hold besides scalars and rows.
const TUPLE_LISTS: &[&str] = &["[string]", "[bytes]", "[int]", "[decimal]"];

/// The most elements of a tuple or a row: redis-rs reads a reply as a Rust tuple of at most
/// twelve, which the generated Rust wrappers return.
const MAX_TUPLE: usize = 12;

fn scalar(part: &str) -> Option<ReturnType> {
    SCALARS
        .iter()
        .find(|(n, _)| *n == part)
        .map(|(_, t)| t.clone())
}

/// A tuple's element: a scalar, a list of scalars, or rows of two or more scalars.
fn tuple_element(part: &str) -> Option<ReturnType> {
    if let Some(t) = scalar(part) {
        return Some(t);
    }
    if TUPLE_LISTS.contains(&part) {
        return LISTS
            .iter()
            .find(|(n, _)| *n == part)
            .map(|(_, t)| t.clone());
    }
    let inner = part.strip_prefix("[(")?.strip_suffix(")]")?;
    let row = split_elements(inner)
        .into_iter()
        .map(scalar)
        .collect::<Option<Vec<_>>>()?;
    (row.len() >= 2).then_some(ReturnType::Rows(row))
}

/// The comma-separated elements of a tuple written without spaces, split at the commas
/// outside brackets: `uint,[(string,bytes)]` is `uint` and `[(string,bytes)]`.
fn split_elements(inner: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
}

fn error_tag(parsed: &mut Parsed, at: Pos, cur: &mut Cursor, report: &mut Report) {
    let Some((code_col, code)) = cur.word() else {
        report.error(
            at.line,
            at.col,
            "`@error` needs a code and a doc",
            "write `--- @error <CODE> <when the script raises it>`",
        );
        return;
    };
    let doc = cur.rest();
    if !is_upper_snake(&code) {
        report.error(
            at.line,
            code_col,
            format!("`{code}` is not a valid error code"),
            "codes are UPPER_SNAKE: an upper-case letter, then upper-case letters, digits and `_`",
        );
    }
    if doc.is_empty() {
        report.error(
            at.line,
            at.col,
            format!("`@error {code}` has no doc"),
            format!("say when the script raises it: `--- @error {code} <doc>`"),
        );
    }
    if let Some(first) = parsed.errors.iter().find(|e| e.error.code == code) {
        report.error(
            at.line,
            at.col,
            format!("error `{code}` is declared twice"),
            format!(
                "declare each code once; the first is on line {}",
                first.at.line
            ),
        );
        return;
    }
    parsed.errors.push(ErrorTag {
        error: ErrorCode { code, doc },
        at,
    });
}

/// `@uses <helper>...`: the shared helpers the script calls.
fn uses_tag(parsed: &mut Parsed, at: Pos, cur: &mut Cursor, report: &mut Report) {
    let mut any = false;
    while let Some((col, name)) = cur.word() {
        any = true;
        let pos = Pos { line: at.line, col };
        if !is_snake(&name) {
            report.error(
                at.line,
                col,
                format!("`{name}` is not a helper's name"),
                "name each shared helper the script calls, separated by spaces: \
                 `--- @uses release_slot first_parked`",
            );
        } else if parsed.uses.iter().any(|(_, n)| *n == name) {
            report.error(
                at.line,
                col,
                format!("`{name}` is named twice in `@uses`"),
                "name each helper once",
            );
        } else {
            parsed.uses.push((pos, name));
        }
    }
    if !any {
        report.error(
            at.line,
            at.col,
            "`@uses` names no helper",
            "name the shared helpers the script calls: `--- @uses release_slot`",
        );
    }
}

fn default_tag(parsed: &mut Parsed, at: Pos, cur: &mut Cursor, report: &mut Report) {
    let hint = "write `--- @default <argument or placeholder> <value> <where the Rust API \
                fills it in>`, the value as the argument is sent (`''` for the empty \
                string), or `=<argument>` for the value of another argument";
    let (Some((_, name)), Some((_, value))) = (cur.word(), cur.word()) else {
        report.error(
            at.line,
            at.col,
            "`@default` needs a name, a value and a doc",
            hint,
        );
        return;
    };
    let doc = cur.rest();
    if doc.is_empty() {
        report.error(at.line, at.col, "`@default` needs a doc", hint);
    }
    // A header's words are split at spaces: `''` stands for the empty string.
    let value = match value.strip_prefix('=') {
        Some(arg) => PresetValue::SameAs(arg.to_string()),
        None if value == "''" => PresetValue::Text(String::new()),
        None => PresetValue::Text(value),
    };
    if parsed.defaults.iter().any(|(_, d)| d.name == name) {
        report.error(
            at.line,
            at.col,
            format!("`{name}` has two `@default`s"),
            "give each argument or placeholder one default",
        );
        return;
    }
    parsed.defaults.push((at, Preset { name, value, doc }));
}

/// Each `@default` names an argument or a key template's placeholder, and gives it a
/// value its rule accepts, or the value of another argument.
fn check_defaults(parsed: &Parsed, report: &mut Report) {
    for (at, preset) in &parsed.defaults {
        let arg = parsed.args.iter().find(|a| a.name == preset.name);
        let placeholder = parsed.keys.iter().any(|k| {
            k.key
                .template
                .as_ref()
                .is_some_and(|t| t.params().contains(&preset.name.as_str()))
        });
        if arg.is_none() && !placeholder {
            report.error(
                at.line,
                at.col,
                format!(
                    "`@default {}` names no argument or placeholder",
                    preset.name
                ),
                "give a default to an argument of the script, or to a placeholder of a key's \
                 template",
            );
            continue;
        }
        match &preset.value {
            PresetValue::SameAs(other) => {
                if !parsed
                    .args
                    .iter()
                    .any(|a| a.name == *other && a.name != preset.name)
                {
                    report.error(
                        at.line,
                        at.col,
                        format!("`={other}` names no other argument of the script"),
                        "`=<argument>` gives the default the value of another argument",
                    );
                }
            }
            PresetValue::Text(text) => {
                let refused = match arg {
                    Some(arg) => arg.ty.and_then(|ty| {
                        let model = Arg {
                            name: arg.name.clone(),
                            ty,
                            optional: arg.optional,
                            rule: arg.rule.clone(),
                            doc: String::new(),
                            variadic: false,
                            count: Count::ONE,
                        };
                        (!model.accepts(text)).then_some("its argument's rule")
                    }),
                    None => text
                        .is_empty()
                        .then_some("a placeholder's value, which is never empty"),
                };
                if let Some(what) = refused {
                    report.error(
                        at.line,
                        at.col,
                        format!(
                            "the default `{}` of `{}` breaks {what}",
                            if text.is_empty() { "''" } else { text },
                            preset.name
                        ),
                        "give the value as the argument is sent: an integer in the one rule, \
                         milliseconds for `ms`, 1 or 0 for `bool`",
                    );
                }
            }
        }
    }
}

fn clock_tag(parsed: &mut Parsed, at: Pos, cur: &mut Cursor, report: &mut Report) {
    let hint = "`@clock server` when the script reads `redis.call('TIME')`, `@clock caller` \
                when the caller passes the time as the `now` argument";
    let clock = match cur.word() {
        None => {
            report.error(at.line, at.col, "`@clock` needs `server` or `caller`", hint);
            return;
        }
        Some((_, w)) if w == "server" => Clock::Server,
        Some((_, w)) if w == "caller" => Clock::Caller,
        Some((col, w)) => {
            report.error(at.line, col, format!("unknown clock `{w}`"), hint);
            return;
        }
    };
    if let Some((col, extra)) = cur.word() {
        report.error(
            at.line,
            col,
            format!("unexpected `{extra}` after `@clock`"),
            "`@clock` takes `server` or `caller` and nothing else",
        );
    }
    if let Some((first, _)) = &parsed.clock {
        twice(report, at, "@clock", *first);
    } else {
        parsed.clock = Some((at, clock));
    }
}

/// Variadic entries must be last; key and argument names must be distinct (the wrapper takes
/// them all as parameters).
fn check_variadic_and_names(parsed: &Parsed, report: &mut Report) {
    let key_count = parsed.keys.len();
    for (i, key) in parsed.keys.iter().enumerate() {
        if key.key.variadic && i + 1 != key_count {
            report.error(
                key.at.line,
                key.at.col,
                format!(
                    "only the last `@key` may be variadic, not `{}`",
                    key.key.name
                ),
                "remove the `...`, or move this key to the end",
            );
        }
    }
    let arg_count = parsed.args.len();
    for (i, arg) in parsed.args.iter().enumerate() {
        if arg.variadic && i + 1 != arg_count {
            report.error(
                arg.at.line,
                arg.at.col,
                format!("only the last `@arg` may be variadic, not `{}`", arg.name),
                "remove the `...`, or move this argument to the end",
            );
        }
    }
    let names = parsed
        .keys
        .iter()
        .filter(|k| k.name_ok)
        .map(|k| (k.key.name.as_str(), k.at))
        .chain(
            parsed
                .args
                .iter()
                .filter(|a| a.name_ok)
                .map(|a| (a.name.as_str(), a.at)),
        )
        .collect::<Vec<_>>();
    for (i, (name, at)) in names.iter().enumerate() {
        if let Some((_, first)) = names[..i].iter().find(|(n, _)| n == name) {
            report.error(
                at.line,
                at.col,
                format!("`{name}` is declared twice"),
                format!(
                    "each key and argument needs its own name; the first `{name}` is on line {}",
                    first.line
                ),
            );
        }
    }
}

fn trim_blank(mut lines: Vec<String>) -> Vec<String> {
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let lead = lines.iter().take_while(|l| l.trim().is_empty()).count();
    lines.drain(..lead);
    // Blank lines are kept as `""`, not as whatever spaces they held.
    lines
        .into_iter()
        .map(|l| {
            if l.trim().is_empty() {
                String::new()
            } else {
                l
            }
        })
        .collect()
}

/// "`a`, `b` and `c`"
fn list_of<S: AsRef<str>>(items: &[S]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("`{}`", s.as_ref())).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// "did you mean `x`? " when a candidate is close to `word` (a typo, or an abbreviation or
/// extension such as `str` or `integer`), else "".
fn did_you_mean(word: &str, candidates: &[&str], prefix: &str) -> String {
    let lower = word.to_lowercase();
    let typo = candidates
        .iter()
        .map(|c| (distance(&lower, c), *c))
        .filter(|(d, c)| *d <= 2 && *d < c.chars().count())
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c);
    let stem = || {
        candidates.iter().copied().find(|c| {
            let (short, long) = if c.len() < lower.len() {
                (*c, lower.as_str())
            } else {
                (lower.as_str(), *c)
            };
            short.len() >= 3 && long.starts_with(short)
        })
    };
    typo.or_else(stem)
        .map(|c| format!("did you mean `{prefix}{c}`? "))
        .unwrap_or_default()
}

/// Edit distance counting a swap of two neighbours as one edit (`retrun` is one from `return`).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance() {
        assert_eq!(distance("retrun", "return"), 1);
        assert_eq!(distance("ky", "key"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(
            did_you_mean("retrun", TAGS, "@"),
            "did you mean `@return`? "
        );
        assert_eq!(did_you_mean("zzz", TAGS, "@"), "");
    }

    #[test]
    fn lists() {
        assert_eq!(list_of(&["a"]), "`a`");
        assert_eq!(list_of(&["a", "b", "c"]), "`a`, `b` and `c`");
    }

    #[test]
    fn return_types_ignore_spaces_inside_brackets() {
        let mut report = Report::new("x.lua");
        assert_eq!(
            return_type("[(string, float)]", 1, 1, &mut report),
            Some(ReturnType::Rows(vec![
                ReturnType::String,
                ReturnType::Float
            ]))
        );
        assert_eq!(
            return_type("(int,string?)", 1, 1, &mut report),
            Some(ReturnType::Tuple(vec![
                ReturnType::Int,
                ReturnType::OptString
            ]))
        );
        assert_eq!(report.diagnostics, []);
    }

    /// The `@return` doc goes on over the indented lines right below its tag; a blank line
    /// ends it, and an indented line below another tag is prose after the tags.
    #[test]
    fn return_docs_go_on_over_indented_lines() {
        let source = "--- Reads.\n\
                      --- @return [(string, uint)]  a row per item:\n\
                      ---                           its name and count\n\
                      ---    (0 for none)\n\
                      --- @complexity O(1)\n\
                      ---    not the complexity's\n\
                      return {}\n";
        let mut report = Report::new("x.lua");
        let parsed = parse(source, &mut report);
        let returns = parsed.returns.and_then(|(_, r)| r).unwrap();
        assert_eq!(
            returns.doc,
            "a row per item: its name and count (0 for none)"
        );
        let errors: Vec<(usize, &str)> = report
            .diagnostics
            .iter()
            .map(|d| (d.line, d.message.as_str()))
            .collect();
        assert_eq!(errors, [(6, "prose after the tags")]);

        let mut report = Report::new("x.lua");
        let parsed = parse(
            "--- Reads.\n--- @return int  a count\n---\n---    after a blank line\n\
             --- @complexity O(1)\n",
            &mut report,
        );
        assert_eq!(parsed.returns.and_then(|(_, r)| r).unwrap().doc, "a count");
        assert_eq!(report.diagnostics.len(), 1);
        assert_eq!(report.diagnostics[0].line, 4);
    }

    /// A tuple may hold lists and rows of scalars (a cursor and a page, an answer and
    /// its fields), and be nil as a whole; a row holds scalars only.
    #[test]
    fn tuples_hold_lists_and_rows_and_may_be_nil() {
        let mut report = Report::new("x.lua");
        assert_eq!(
            return_type("(uint, [bytes])", 1, 1, &mut report),
            Some(ReturnType::Tuple(vec![
                ReturnType::Uint,
                ReturnType::BytesList
            ]))
        );
        assert_eq!(
            return_type("(string, uint, [(string, bytes)])", 1, 1, &mut report),
            Some(ReturnType::Tuple(vec![
                ReturnType::String,
                ReturnType::Uint,
                ReturnType::Rows(vec![ReturnType::String, ReturnType::Bytes])
            ]))
        );
        assert_eq!(
            return_type("(string, uint?)?", 1, 1, &mut report),
            Some(ReturnType::OptTuple(vec![
                ReturnType::String,
                ReturnType::OptUint
            ]))
        );
        assert_eq!(report.diagnostics, []);
        for refused in [
            "[(string, [bytes])]",
            "(uint, [(string)])",
            "(uint, [[decimal]])",
            "[(string, uint)]?",
            "(uint, (int, int))",
        ] {
            let mut report = Report::new("x.lua");
            assert_eq!(return_type(refused, 1, 1, &mut report), None, "{refused}");
            assert_eq!(report.diagnostics.len(), 1, "{refused}");
        }
    }
}
