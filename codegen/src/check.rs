//! The last stage: checks a script's body against its header (`KEYS`/`ARGV` use, binding
//! names, globals, writes under `no-writes`, keys built in Lua, error codes and the clock),
//! and the input checks and pasted helpers it holds against what [`render`](crate::render)
//! makes of the header.
//!
//! These are token-level approximations of what a Lua parser would see; they are tuned to
//! flag what breaks the header rules (see the `redis-patterns` README) without flagging
//! idiomatic scripts.

use std::collections::HashSet;
use std::ops::Range;

mod block;
mod family;

pub(crate) use block::shared_section;
pub(crate) use family::check_family;

use crate::diagnostic::{Diagnostic, Pos, Report};
use crate::layout;
use crate::lua::{self, Kind, Token};
use crate::model::{ArgType, Clock, Header, Script, ScriptFile, is_upper_snake};
use crate::parse::{self, Parsed};
use crate::render::{contract, key_check};

/// Commands a `no-writes` script may not run: Redis marks them `write` (or `may-replicate`,
/// like `PUBLISH`) and rejects them from read-only scripts.
const WRITE_COMMANDS: &str = "\
    SET SETNX SETEX PSETEX GETSET GETDEL GETEX APPEND INCR INCRBY INCRBYFLOAT DECR DECRBY \
    DEL UNLINK EXPIRE PEXPIRE EXPIREAT PEXPIREAT PERSIST RENAME RENAMENX MSET MSETNX \
    SETRANGE SETBIT BITFIELD BITOP HSET HSETNX HMSET HDEL HINCRBY HINCRBYFLOAT HEXPIRE \
    HPEXPIRE HEXPIREAT HPEXPIREAT HPERSIST HGETDEL HGETEX HSETEX LPUSH RPUSH LPUSHX RPUSHX \
    LPOP RPOP LSET LREM LTRIM LINSERT LMOVE LMPOP RPOPLPUSH BLPOP BRPOP BLMOVE BLMPOP \
    BRPOPLPUSH SADD SREM SPOP SMOVE SINTERSTORE SUNIONSTORE SDIFFSTORE ZADD ZREM ZINCRBY \
    ZPOPMIN ZPOPMAX BZPOPMIN BZPOPMAX ZMPOP BZMPOP ZREMRANGEBYSCORE ZREMRANGEBYRANK \
    ZREMRANGEBYLEX ZUNIONSTORE ZINTERSTORE ZDIFFSTORE ZRANGESTORE XADD XDEL XTRIM XACK \
    XCLAIM XAUTOCLAIM XGROUP XREADGROUP XSETID PFADD PFMERGE PFCOUNT GEOADD GEOSEARCHSTORE \
    GEORADIUS GEORADIUSBYMEMBER COPY RESTORE MOVE SORT FLUSHDB FLUSHALL SWAPDB PUBLISH \
    SPUBLISH";

/// Commands whose first argument is not a key (a subcommand, a number of keys, a channel, or
/// nothing); the key-built-in-Lua check skips them.
const KEYLESS_FIRST: &str = "\
    TIME PING ECHO INFO DBSIZE SCRIPT CLIENT CONFIG COMMAND EVAL EVALSHA EVAL_RO \
    EVALSHA_RO FCALL FCALL_RO FUNCTION PUBLISH SPUBLISH PUBSUB LASTSAVE ROLE LOLWUT MEMORY \
    OBJECT XINFO XGROUP XREAD XREADGROUP CLUSTER SELECT SWAPDB FLUSHDB FLUSHALL RANDOMKEY \
    KEYS SCAN WAIT WAITAOF BITOP ZUNION ZINTER ZDIFF ZINTERCARD SINTERCARD LMPOP ZMPOP \
    BLMPOP BZMPOP MIGRATE ACL DEBUG SLOWLOG LATENCY MODULE READONLY READWRITE HELLO AUTH \
    RESET SAVE BGSAVE BGREWRITEAOF SHUTDOWN MONITOR REPLICAOF SLAVEOF SYNC PSYNC";

/// Globals that load code from elsewhere or at run time.
const LOADERS: &[&str] = &["require", "dofile", "loadfile", "loadstring", "load"];

/// Parses the header of `file`, checks it against the body, and returns the script, or every
/// problem found in the file, sorted by position.
pub fn analyze(file: &ScriptFile) -> Result<Script, Vec<Diagnostic>> {
    let mut report = Report::new(&file.path);
    let parsed = parse::parse(&file.source, &mut report);
    let (tokens, lex_errors) = lua::tokenize(&file.source);
    for e in lex_errors {
        report.error(e.line, e.col, e.message, e.hint);
    }
    let body = Body::new(&tokens);
    body.check_globals(&mut report);
    let calls = body.check_calls(&parsed, &mut report);
    if parsed.found {
        let header = parsed.clone().into_header();
        if let Some(Err(problems)) = header.as_ref().map(key_check::analyze) {
            for problem in problems {
                let at = match problem.at {
                    key_check::Tag::Key(i) => {
                        parsed.keys[i].template_at.unwrap_or(parsed.keys[i].at)
                    }
                    key_check::Tag::Arg(i) => parsed.args[i].at,
                };
                report.error(at.line, at.col, problem.message, problem.hint);
            }
        }
        let shared = shared_section(file, &parsed, header.as_ref(), &mut report);
        let mismatch = header
            .as_ref()
            .and_then(|header| block::mismatch(&file.source, header, &shared));
        if mismatch
            .as_ref()
            .is_some_and(|m| !matches!(m, block::Mismatch::Differs { .. }))
        {
            // Without a whole block in its place, what the body binds, uses and raises
            // cannot be checked: the one error says so, not its consequences.
            block::report_contract(mismatch, &mut report);
        } else {
            let lines: Vec<&str> = file.source.lines().collect();
            let block = layout::locate(&lines).block.unwrap_or_default();
            body.check_indexes(&parsed, &block, &mut report);
            body.check_bindings(&parsed, &mut report);
            check_errors_and_clock(&parsed, &calls, &mut report);
            if let Some(header) = &header {
                check_error_docs(&file.source, &parsed, header, &mut report);
                // A header with problems of its own may declare a type it did not mean.
                if report.diagnostics.is_empty() {
                    check_wide_integers(&file.source, &tokens, header, &mut report);
                    check_bool_replies(&tokens, header, &mut report);
                }
            }
            block::report_contract(mismatch, &mut report);
        }
    }
    let mut diagnostics = report.diagnostics;
    if diagnostics.is_empty() {
        match parsed.into_header() {
            Some(header) => {
                return Ok(Script {
                    file: file.clone(),
                    header,
                });
            }
            // Unreachable when the parser reports what it drops; kept so no input panics.
            None => diagnostics.push(Diagnostic {
                path: file.path.clone(),
                line: 1,
                col: 1,
                message: "the header is incomplete".to_string(),
                hint: "this is a bug in the generator; please report it with the script"
                    .to_string(),
            }),
        }
    }
    diagnostics.sort_by_key(|d| (d.line, d.col));
    Err(diagnostics)
}

/// What the call checks found that the header checks need.
#[derive(Default)]
struct Calls {
    /// Where each `redis.call('TIME')` names its command.
    time: Vec<Pos>,
    /// Error codes raised by literal `redis.error_reply`s.
    raised: HashSet<String>,
}

/// A `local a, b = x, y` statement: the names and the initializer expressions.
struct LocalStmt {
    names: Vec<usize>,
    exprs: Vec<Range<usize>>,
}

struct Body<'t> {
    tokens: &'t [Token],
    /// `local` initializers: (token index of the name, whether it has a top-level `..`).
    locals: Vec<(usize, bool)>,
}

impl<'t> Body<'t> {
    fn new(tokens: &'t [Token]) -> Self {
        let mut body = Body {
            tokens,
            locals: Vec::new(),
        };
        for i in 0..tokens.len() {
            if let Some(stmt) = body.local_stmt(i) {
                for (k, &name) in stmt.names.iter().enumerate() {
                    let concat = stmt
                        .exprs
                        .get(k)
                        .is_some_and(|e| body.has_concat(e.clone()));
                    body.locals.push((name, concat));
                }
            }
        }
        body
    }

    fn tok(&self, i: usize) -> Option<&'t Token> {
        self.tokens.get(i)
    }

    fn op(&self, i: usize, op: &str) -> bool {
        self.tok(i).is_some_and(|t| t.is_op(op))
    }

    /// Whether the token at `i` follows a `.` or `:` (a field, not a variable).
    fn is_field(&self, i: usize) -> bool {
        i > 0 && (self.op(i - 1, ".") || self.op(i - 1, ":"))
    }

    /// Whether token `i` is the variable `name`, not a field of that name.
    fn is_global_ref(&self, i: usize, name: &str) -> bool {
        self.tok(i).is_some_and(|t| t.is_name(name)) && !self.is_field(i)
    }

    /// `KEYS[<integer>]` at `i`: the integer's text.
    fn literal_index(&self, i: usize) -> Option<&'t str> {
        let n = self.tok(i + 2)?;
        let literal = self.op(i + 1, "[")
            && n.kind == Kind::Number
            && n.text.chars().all(|c| c.is_ascii_digit())
            && self.op(i + 3, "]");
        literal.then_some(n.text.as_str())
    }

    /// The index just past the group opened at `i` (a bracket or a block keyword), or the end.
    fn skip_group(&self, i: usize) -> usize {
        let mut depth = 0i64;
        for (j, t) in self.tokens.iter().enumerate().skip(i) {
            depth += depth_delta(t);
            if depth <= 0 {
                return j + 1;
            }
        }
        self.tokens.len()
    }

    /// The end of the expression starting at `start`.
    fn expr_end(&self, start: usize) -> usize {
        let mut i = start;
        let mut want_operand = true;
        while let Some(t) = self.tok(i) {
            if want_operand {
                if t.is_kw("not") || t.is_op("-") || t.is_op("#") {
                    i += 1;
                } else if t.is_op("(") || t.is_op("{") || t.is_kw("function") {
                    i = self.skip_group(i);
                    want_operand = false;
                } else if matches!(t.kind, Kind::Name | Kind::Number | Kind::Str)
                    || t.is_kw("nil")
                    || t.is_kw("true")
                    || t.is_kw("false")
                    || t.is_op("...")
                {
                    i += 1;
                    want_operand = false;
                } else {
                    break;
                }
            } else if is_binary(t) {
                i += 1;
                want_operand = true;
            } else if t.is_op(".") || t.is_op(":") {
                i += 2;
            } else if t.is_op("[") || t.is_op("(") || t.is_op("{") {
                i = self.skip_group(i);
            } else if t.kind == Kind::Str {
                i += 1;
            } else {
                break;
            }
        }
        i.min(self.tokens.len())
    }

    /// Whether `range` has a `..` outside any brackets.
    fn has_concat(&self, range: Range<usize>) -> bool {
        let mut depth = 0i64;
        for t in self.tokens.get(range).unwrap_or_default() {
            if depth == 0 && t.is_op("..") {
                return true;
            }
            depth += depth_delta(t);
        }
        false
    }

    /// `local a, b = x, y` (or `local a`) at `i`; `local function` is not one.
    fn local_stmt(&self, i: usize) -> Option<LocalStmt> {
        if !self.tok(i)?.is_kw("local") {
            return None;
        }
        let mut names = Vec::new();
        let mut j = i + 1;
        while self.tok(j).is_some_and(|t| t.kind == Kind::Name) {
            names.push(j);
            j += 1;
            if !self.op(j, ",") {
                break;
            }
            j += 1;
        }
        let mut exprs = Vec::new();
        if self.op(j, "=") {
            let mut start = j + 1;
            while exprs.len() < names.len() {
                let end = self.expr_end(start);
                if end == start {
                    break;
                }
                exprs.push(start..end);
                if !self.op(end, ",") {
                    break;
                }
                start = end + 1;
            }
        }
        Some(LocalStmt { names, exprs })
    }

    /// Reports assignments to globals, global functions and code loaders.
    fn check_globals(&self, report: &mut Report) {
        let mut locals: HashSet<&str> = HashSet::new();
        // Open brackets and blocks; an `=` is a statement only outside brackets.
        let mut stack: Vec<&str> = Vec::new();
        for (i, t) in self.tokens.iter().enumerate() {
            match (t.kind, t.text.as_str()) {
                (Kind::Op, open @ ("(" | "[" | "{")) => stack.push(open),
                (Kind::Op, ")" | "]" | "}")
                    if stack.last().is_some_and(|s| matches!(*s, "(" | "[" | "{")) =>
                {
                    stack.pop();
                }
                (Kind::Keyword, "do" | "if" | "repeat") => stack.push("block"),
                (Kind::Keyword, "end" | "until") if stack.last().is_some_and(|s| *s == "block") => {
                    stack.pop();
                }
                (Kind::Keyword, "local") => {
                    if let Some(stmt) = self.local_stmt(i) {
                        for n in stmt.names {
                            locals.insert(&self.tokens[n].text);
                        }
                    }
                    if self.tok(i + 1).is_some_and(|t| t.is_kw("function"))
                        && let Some(name) = self.tok(i + 2).filter(|t| t.kind == Kind::Name)
                    {
                        locals.insert(&name.text);
                    }
                }
                (Kind::Keyword, "function") => {
                    stack.push("block");
                    self.function(i, &mut locals, report);
                }
                (Kind::Keyword, "for") => {
                    let mut j = i + 1;
                    while let Some(n) = self.tok(j).filter(|t| t.kind == Kind::Name) {
                        locals.insert(&n.text);
                        j += 1;
                        if !self.op(j, ",") {
                            break;
                        }
                        j += 1;
                    }
                }
                (Kind::Op, "=") if stack.last().is_none_or(|s| *s == "block") => {
                    self.assignment(i, &locals, report);
                }
                (Kind::Name, name)
                    if LOADERS.contains(&name) && !self.is_field(i) && !locals.contains(name) =>
                {
                    let (message, hint) = if name.starts_with("load") && name != "loadfile" {
                        (
                            format!("`{name}` compiles code at run time"),
                            "write the code out in the script, where it can be read and \
                             checked",
                        )
                    } else {
                        (
                            format!("`{name}` loads code from outside the script"),
                            "scripts are self-contained so they can be copied and run \
                             alone; inline the code",
                        )
                    };
                    report.error(t.line, t.col, message, hint);
                }
                _ => {}
            }
        }
    }

    /// A `function` keyword at `i`: registers parameters and reports `function name()` that
    /// defines a global.
    fn function<'a>(&'a self, i: usize, locals: &mut HashSet<&'a str>, report: &mut Report) {
        let is_local = i > 0 && self.tok(i - 1).is_some_and(|t| t.is_kw("local"));
        let mut j = i + 1;
        let mut path = Vec::new();
        let mut method = false;
        while let Some(n) = self.tok(j).filter(|t| t.kind == Kind::Name) {
            path.push(n);
            j += 1;
            if self.op(j, ":") {
                method = true;
            } else if !self.op(j, ".") {
                break;
            }
            j += 1;
        }
        if let [name] = path.as_slice()
            && !is_local
            && !locals.contains(name.text.as_str())
        {
            report.error(
                name.line,
                name.col,
                format!("`function {}` defines a global", name.text),
                format!(
                    "write `local function {}(…)`; Redis rejects scripts that set globals",
                    name.text
                ),
            );
        }
        if method {
            locals.insert("self");
        }
        if self.op(j, "(") {
            let mut k = j + 1;
            while let Some(t) = self.tok(k).filter(|t| !t.is_op(")")) {
                if t.kind == Kind::Name {
                    locals.insert(&t.text);
                }
                k += 1;
            }
        }
    }

    /// A statement-level `=` at `eq`: reports plain-name targets that are not locals.
    fn assignment(&self, eq: usize, locals: &HashSet<&str>, report: &mut Report) {
        let mut simple = Vec::new();
        let mut end = eq;
        let first = loop {
            let Some(last) = end.checked_sub(1) else {
                return;
            };
            let Some(start) = self.var_start(last) else {
                return;
            };
            if start == last {
                simple.push(last);
            }
            if start >= 2 && self.op(start - 1, ",") {
                end = start - 1;
            } else {
                break start;
            }
        };
        let declares = first > 0
            && self
                .tok(first - 1)
                .is_some_and(|t| t.is_kw("local") || t.is_kw("for"));
        if declares {
            return;
        }
        for &n in simple.iter().rev() {
            let t = &self.tokens[n];
            if !locals.contains(t.text.as_str()) {
                report.error(
                    t.line,
                    t.col,
                    format!("assignment to global `{}`", t.text),
                    format!(
                        "declare it with `local {}`; Redis rejects scripts that set globals",
                        t.text
                    ),
                );
            }
        }
    }

    /// The first token of the assignable expression ending at `end`; equal to `end` only for
    /// a plain name. `None` when it is not assignable.
    fn var_start(&self, end: usize) -> Option<usize> {
        let mut k = end;
        loop {
            let t = self.tok(k)?;
            if t.kind == Kind::Name {
                if k >= 2 && self.is_field(k) {
                    k -= 2;
                    continue;
                }
                return Some(k);
            }
            if t.is_op("]") || t.is_op(")") || t.is_op("}") {
                let open = self.matching_open(k)?;
                let before = open.checked_sub(1).and_then(|b| self.tok(b));
                let suffix = before.is_some_and(|b| {
                    b.kind == Kind::Name || b.kind == Kind::Str || b.is_op(")") || b.is_op("]")
                });
                if suffix {
                    k = open - 1;
                    continue;
                }
                // `(expr).x = …` has a parenthesised root; a bare table is not assignable.
                return (t.is_op(")") && k != end).then_some(open);
            }
            if t.kind == Kind::Str && k != end && k > 0 {
                // `f"x".y`: a call with a string argument.
                k -= 1;
                continue;
            }
            return None;
        }
    }

    /// The opening bracket matching the closing one at `close`.
    fn matching_open(&self, close: usize) -> Option<usize> {
        let mut depth = 0i64;
        for j in (0..=close).rev() {
            let t = self.tok(j)?;
            if t.kind == Kind::Op {
                match t.text.as_str() {
                    ")" | "]" | "}" => depth += 1,
                    "(" | "[" | "{" => depth -= 1,
                    _ => {}
                }
            }
            if depth == 0 {
                return Some(j);
            }
        }
        None
    }

    /// The arguments of a call whose `(` is at `open`, split at top-level commas.
    fn call_args(&self, open: usize) -> Vec<Range<usize>> {
        let mut args = Vec::new();
        let mut depth = 0i64;
        let mut start = open + 1;
        for (j, t) in self.tokens.iter().enumerate().skip(open) {
            if depth == 1 && t.is_op(",") {
                args.push(start..j);
                start = j + 1;
            }
            depth += depth_delta(t);
            if depth <= 0 {
                if start < j || !args.is_empty() {
                    args.push(start..j);
                }
                return args;
            }
        }
        // Unclosed call: the tokenizer or Lua reports it; check what there is.
        if start < self.tokens.len() {
            args.push(start..self.tokens.len());
        }
        args
    }

    /// `redis.<method>(…)` or `redis.<method> 'x'` at `i`: the method and its arguments.
    fn redis_call(&self, i: usize) -> Option<(&'t str, Vec<Range<usize>>)> {
        if !self.is_global_ref(i, "redis") || !self.op(i + 1, ".") {
            return None;
        }
        let method = self.tok(i + 2).filter(|t| t.kind == Kind::Name)?;
        let next = self.tok(i + 3)?;
        let args = if next.is_op("(") {
            self.call_args(i + 3)
        } else if next.kind == Kind::Str {
            vec![Range {
                start: i + 3,
                end: i + 4,
            }]
        } else {
            return None;
        };
        Some((method.text.as_str(), args))
    }

    /// The string literal that is the whole of `range`, if it is one.
    fn literal(&self, range: &Range<usize>) -> Option<&'t Token> {
        (range.len() == 1)
            .then(|| self.tok(range.start))
            .flatten()
            .filter(|t| t.kind == Kind::Str)
    }

    /// The string literal that begins `range`, alone or as the left of a `..`: the reply
    /// `'BAD_TTL got ' .. ttl` starts with a known code.
    fn leading_literal(&self, range: &Range<usize>) -> Option<&'t Token> {
        let first = self.tok(range.start).filter(|t| t.kind == Kind::Str)?;
        (range.len() == 1 || self.op(range.start + 1, "..")).then_some(first)
    }

    /// Checks every `redis.call`, `redis.pcall` and `redis.error_reply`.
    fn check_calls(&self, parsed: &Parsed, report: &mut Report) -> Calls {
        let no_writes = parsed.flags.iter().any(|f| f == "no-writes");
        let mut calls = Calls::default();
        for i in 0..self.tokens.len() {
            let Some((method, args)) = self.redis_call(i) else {
                continue;
            };
            let at = &self.tokens[i];
            match method {
                "call" | "pcall" => {
                    let Some(first) = args.first() else {
                        continue;
                    };
                    let Some(lit) = self.literal(first) else {
                        if no_writes {
                            let t = self.tok(first.start).unwrap_or(at);
                            report.error(
                                t.line,
                                t.col,
                                "the command name is not a string literal, so `no-writes` \
                                 cannot be checked",
                                "name the command with a string literal: \
                                 `redis.call('GET', key)`",
                            );
                        }
                        continue;
                    };
                    let command = lit.text.to_ascii_uppercase();
                    if no_writes && is_listed(WRITE_COMMANDS, &command) {
                        report.error(
                            lit.line,
                            lit.col,
                            format!("`{command}` writes, but the script is flagged `no-writes`"),
                            "remove `no-writes` from the `#!lua flags=` line, or move the \
                             write to another script",
                        );
                    }
                    match command.as_str() {
                        "TIME" => calls.time.push(Pos {
                            line: lit.line,
                            col: lit.col,
                        }),
                        "KEYS" | "SCAN" => report.error(
                            lit.line,
                            lit.col,
                            format!("`{command}` walks the keyspace inside a script"),
                            "pass the keys the script needs in `KEYS`; iterate the keyspace \
                             in the caller, a bounded batch at a time",
                        ),
                        _ => {}
                    }
                    if !is_listed(KEYLESS_FIRST, &command)
                        && let Some(key) = args.get(1)
                    {
                        self.check_key(&command, key.clone(), i, report);
                    }
                }
                "error_reply" => {
                    let Some(lit) = args.first().and_then(|a| self.leading_literal(a)) else {
                        continue;
                    };
                    let code = lit.text.split_whitespace().next().unwrap_or("");
                    if !is_upper_snake(code) {
                        report.error(
                            lit.line,
                            lit.col,
                            "the error reply does not start with a code",
                            "begin it with an UPPER_SNAKE code declared with `@error`: \
                             `redis.error_reply('BAD_INPUT <message>')`",
                        );
                    } else if parsed.found && !parsed.errors.iter().any(|e| e.error.code == code) {
                        report.error(
                            lit.line,
                            lit.col,
                            format!("`{code}` is raised but not declared"),
                            format!("declare it with `--- @error {code} <when it is raised>`"),
                        );
                    }
                    calls.raised.insert(code.to_string());
                }
                _ => {}
            }
        }
        calls
    }

    /// The key argument of a `redis.call` at `call` must come from `KEYS`, not be built here.
    fn check_key(&self, command: &str, key: Range<usize>, call: usize, report: &mut Report) {
        let Some(t) = self.tok(key.start) else {
            return;
        };
        let what = if self.literal(&key).is_some() {
            "a string literal".to_string()
        } else if self.has_concat(key.clone()) {
            "a `..` concatenation".to_string()
        } else if key.len() == 1
            && t.kind == Kind::Name
            && self
                .locals
                .iter()
                .rev()
                .find(|(n, _)| *n < call && self.tokens[*n].text == t.text)
                .is_some_and(|(_, concat)| *concat)
        {
            format!("`{}`, built with `..`", t.text)
        } else {
            return;
        };
        report.error(
            t.line,
            t.col,
            format!("key built inside Lua: the key of `{command}` is {what}"),
            "pass every key in `KEYS`; derive it in the caller",
        );
    }

    /// `KEYS[n]`/`ARGV[n]` against the declared keys and arguments, both ways.
    /// `block`: the lines (0-based) of the input checks, whose loops index `KEYS` and `ARGV`
    /// within the counts they checked.
    fn check_indexes(&self, parsed: &Parsed, block: &Range<usize>, report: &mut Report) {
        let keys: Vec<Entry> = parsed
            .keys
            .iter()
            .map(|k| Entry {
                name: &k.key.name,
                variadic: k.key.variadic,
                at: k.at,
                name_ok: k.name_ok,
            })
            .collect();
        let args: Vec<Entry> = parsed
            .args
            .iter()
            .map(|a| Entry {
                name: &a.name,
                variadic: a.variadic,
                at: a.at,
                name_ok: a.name_ok,
            })
            .collect();
        self.check_table("KEYS", &keys, block, report);
        self.check_table("ARGV", &args, block, report);
    }

    fn check_table(
        &self,
        table: &str,
        entries: &[Entry],
        block: &Range<usize>,
        report: &mut Report,
    ) {
        let is_keys = table == "KEYS";
        let variadic = entries.last().is_some_and(|e| e.variadic);
        let mut used = vec![false; entries.len()];
        for (i, t) in self.tokens.iter().enumerate() {
            if !self.is_global_ref(i, table) {
                continue;
            }
            // `#KEYS`, `#ARGV`: their counts, which the input checks test.
            if i > 0 && self.op(i - 1, "#") && !self.op(i + 1, "[") {
                continue;
            }
            let Some(text) = self.literal_index(i) else {
                if variadic {
                    if let Some(u) = used.last_mut() {
                        *u = true;
                    }
                } else if !block.contains(&(t.line - 1)) {
                    let hint = if is_keys {
                        "index it with a literal (`KEYS[1]`), or make the last key variadic: \
                         `--- @key <name>... <type> <doc>`"
                    } else {
                        "index it with a literal (`ARGV[1]`), or make the last argument \
                         variadic: `--- @arg <name> <type>... <doc>`"
                    };
                    report.error(
                        t.line,
                        t.col,
                        format!(
                            "`{table}` is used without a literal index, but nothing is variadic"
                        ),
                        hint,
                    );
                }
                continue;
            };
            let n: usize = text.parse().unwrap_or(usize::MAX);
            if n == 0 {
                report.error(
                    t.line,
                    t.col,
                    format!("`{table}[{text}]` is always nil"),
                    format!("Lua arrays start at 1: the first is `{table}[1]`"),
                );
            } else if n <= entries.len() {
                used[n - 1] = true;
            } else if variadic {
                if let Some(u) = used.last_mut() {
                    *u = true;
                }
            } else {
                let count = entries.len();
                let (noun, hint) = if is_keys {
                    (
                        "key",
                        "declare it with `--- @key <name> <type> <doc>`, in `KEYS` order",
                    )
                } else {
                    (
                        "argument",
                        "declare it with `--- @arg <name> <type> <doc>`, in `ARGV` order",
                    )
                };
                let declared = match count {
                    0 => format!("no {noun}s"),
                    1 => format!("1 {noun}"),
                    _ => format!("{count} {noun}s"),
                };
                report.error(
                    t.line,
                    t.col,
                    format!("`{table}[{text}]` is used but the header declares {declared}"),
                    hint,
                );
            }
        }
        for (i, (entry, used)) in entries.iter().zip(used).enumerate() {
            if used || !entry.name_ok {
                continue;
            }
            let n = i + 1;
            let (what, tag) = if is_keys {
                ("key", "@key")
            } else {
                ("argument", "@arg")
            };
            let (message, hint) = if entry.variadic {
                (
                    format!(
                        "{what} `{}` (`{table}[{n}]` onwards) is declared but never used",
                        entry.name
                    ),
                    format!(
                        "remove the `{tag}` tag, or read it: `{table}[{n}]` or \
                         `unpack({table}, {n})`"
                    ),
                )
            } else {
                (
                    format!(
                        "{what} `{}` (`{table}[{n}]`) is declared but never used",
                        entry.name
                    ),
                    format!(
                        "remove the `{tag}` tag, or bind it: `local {} = {table}[{n}]`",
                        entry.name
                    ),
                )
            };
            report.error(entry.at.line, entry.at.col, message, hint);
        }
    }

    /// `local x = KEYS[n]`, `local x = ARGV[n]`, `local x = tonumber(ARGV[n])` must use the
    /// header's name for that index.
    fn check_bindings(&self, parsed: &Parsed, report: &mut Report) {
        for i in 0..self.tokens.len() {
            let Some(stmt) = self.local_stmt(i) else {
                continue;
            };
            for (&name, expr) in stmt.names.iter().zip(&stmt.exprs) {
                let Some((table, text, n)) = self.bound_index(expr.clone()) else {
                    continue;
                };
                let declared = if table == "KEYS" {
                    parsed
                        .keys
                        .get(n.wrapping_sub(1))
                        .filter(|k| k.name_ok && !k.key.variadic)
                        .map(|k| k.key.name.as_str())
                } else {
                    parsed
                        .args
                        .get(n.wrapping_sub(1))
                        .filter(|a| a.name_ok && !a.variadic)
                        .map(|a| a.name.as_str())
                };
                let local = &self.tokens[name];
                if let Some(declared) = declared.filter(|d| *d != local.text) {
                    report.error(
                        local.line,
                        local.col,
                        format!(
                            "binds `{table}[{text}]` to `{}`, but the header names it `{declared}`",
                            local.text
                        ),
                        format!("rename the local to `{declared}`, or rename it in the header"),
                    );
                }
            }
        }
    }

    /// `KEYS[n]`, `ARGV[n]` or `tonumber(ARGV[n])` as the whole of `expr`.
    fn bound_index(&self, expr: Range<usize>) -> Option<(&'static str, &'t str, usize)> {
        let (at, len) = if self.tok(expr.start)?.is_name("tonumber") && self.op(expr.start + 1, "(")
        {
            (expr.start + 2, 7)
        } else {
            (expr.start, 4)
        };
        if expr.len() != len || (len == 7 && !self.op(expr.start + 6, ")")) {
            return None;
        }
        let table = match self.tok(at)?.text.as_str() {
            "KEYS" if len == 4 => "KEYS",
            "ARGV" => "ARGV",
            _ => return None,
        };
        if self.is_field(at) {
            return None;
        }
        let text = self.literal_index(at)?;
        Some((table, text, text.parse().unwrap_or(usize::MAX)))
    }
}

/// A declared key or argument, for the index checks.
struct Entry<'p> {
    name: &'p str,
    variadic: bool,
    at: Pos,
    /// False when the tag's name is already reported; it is not reported again as unused.
    name_ok: bool,
}

/// Header checks that need what the calls found: error codes and the clock.
fn check_errors_and_clock(parsed: &Parsed, calls: &Calls, report: &mut Report) {
    for e in &parsed.errors {
        // An invalid code is already reported; no reply could raise it as written.
        if is_upper_snake(&e.error.code) && !calls.raised.contains(&e.error.code) {
            report.error(
                e.at.line,
                e.at.col,
                format!("error `{}` is declared but never raised", e.error.code),
                format!(
                    "raise it with `redis.error_reply('{} <message>')`, or remove the tag",
                    e.error.code
                ),
            );
        }
    }
    let clock = parsed.clock.map(|(_, c)| c);
    if let Some((at, Clock::Server)) = parsed.clock
        && calls.time.is_empty()
    {
        report.error(
            at.line,
            at.col,
            "`@clock server` is declared but the script never calls `TIME`",
            "read the clock with `redis.call('TIME')`, or remove the tag",
        );
    }
    if clock != Some(Clock::Server) {
        let (message, hint) = if clock == Some(Clock::Caller) {
            (
                "`TIME` is called, but the header declares `@clock caller`",
                "use the `now` argument, or declare `--- @clock server` instead",
            )
        } else {
            (
                "`TIME` is called, but the header does not declare `@clock server`",
                "add `--- @clock server` to the header",
            )
        };
        for at in &calls.time {
            report.error(at.line, at.col, message, hint);
        }
    }
}

/// The doc of each code the input checks raise must say what their message says, and a
/// code the script's own code raises too must go on to say when.
fn check_error_docs(source: &str, parsed: &Parsed, header: &Header, report: &mut Report) {
    let body = layout::code_outside_block(source);
    for e in &parsed.errors {
        let code = &e.error.code;
        let Some(expected) = contract::error_doc(header, code) else {
            continue;
        };
        let raised_by_body =
            body.contains(&format!("'{code} ")) || body.contains(&format!("\"{code} "));
        if raised_by_body && e.error.doc == expected {
            report.error(
                e.at.line,
                e.at.col,
                format!(
                    "`{code}` is raised by the script's own code too, but its doc says only \
                     what the input checks raise it for"
                ),
                format!(
                    "after the generated words, say when the script raises it: {expected}, \
                     or <when>"
                ),
            );
        } else if !contract::doc_agrees(&e.error.doc, &expected) {
            report.error(
                e.at.line,
                e.at.col,
                format!(
                    "the doc of `{}` differs from what the input checks raise it for",
                    e.error.code
                ),
                format!(
                    "write `{expected}` (the script's own reasons may follow after `, ` or \
                     `; `); `redis-patterns fix <scripts folder>` writes it"
                ),
            );
        }
    }
}

/// An integer argument whose range goes beyond ±(2^53 - 1) reaches the body as its
/// decimal text, since no Lua number holds every such value; arithmetic or an order
/// comparison on it would fail at run time ("attempt to compare string with number").
fn check_wide_integers(source: &str, tokens: &[Token], header: &Header, report: &mut Report) {
    const NUMERIC: [&str; 10] = ["<", ">", "<=", ">=", "+", "-", "*", "/", "%", "^"];
    // Lines are 1-based in tokens: the block ends on line `first`.
    let (first, _) = layout::own_code(source);
    for arg in &header.args {
        if arg.variadic
            || !matches!(arg.ty, ArgType::Int | ArgType::Uint | ArgType::Ms)
            || arg.binds_number()
        {
            continue;
        }
        let numeric = |t: Option<&Token>| t.is_some_and(|t| NUMERIC.iter().any(|op| t.is_op(op)));
        for (i, t) in tokens.iter().enumerate() {
            let field = i > 0 && (tokens[i - 1].is_op(".") || tokens[i - 1].is_op(":"));
            if t.line <= first || !t.is_name(&arg.name) || field {
                continue;
            }
            if numeric(i.checked_sub(1).and_then(|p| tokens.get(p))) || numeric(tokens.get(i + 1)) {
                report.error(
                    t.line,
                    t.col,
                    format!(
                        "`{}` is used as a number, but it is bound as its decimal text: its range \
                         goes beyond ±(2^53 - 1), which Lua's numbers do not hold exactly",
                        arg.name
                    ),
                    "declare a range within ±(2^53 - 1) (`1..=2^53-1`) to get a Lua number, or \
                     compare the text with `decimal_less`",
                );
            }
        }
    }
}

/// A `bool` of the reply, alone or in a tuple, must be the integer 1 or 0: Lua's `false`
/// in a reply is nil (a hole in a table) and `true` is 1, so a client in another language
/// would read no bool. Reports a reply of the script's main chunk (not of a helper
/// function) that gives a `bool` as a Lua boolean: `true`, `false`, a comparison, `not …`.
fn check_bool_replies(tokens: &[Token], header: &Header, report: &mut Report) {
    use crate::model::ReturnType;
    let bools: Vec<bool> = match &header.returns.ty {
        ReturnType::Bool => vec![true],
        ReturnType::Tuple(items) | ReturnType::OptTuple(items) => {
            items.iter().map(|t| *t == ReturnType::Bool).collect()
        }
        _ => return,
    };
    if !bools.contains(&true) {
        return;
    }
    let tuple = bools.len() > 1 || header.returns.ty != ReturnType::Bool;
    // Blocks open: whether each is a function's body.
    let mut blocks: Vec<bool> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        match (t.kind, t.text.as_str()) {
            (Kind::Keyword, "function") => blocks.push(true),
            (Kind::Keyword, "do" | "if" | "repeat") => blocks.push(false),
            (Kind::Keyword, "end" | "until") => {
                blocks.pop();
            }
            (Kind::Keyword, "return") if !blocks.contains(&true) => {
                let items = if tuple {
                    match tokens.get(i + 1) {
                        Some(open) if open.is_op("{") => table_items(tokens, i + 2, true),
                        _ => Vec::new(),
                    }
                } else {
                    table_items(tokens, i + 1, false)
                        .into_iter()
                        .take(1)
                        .collect()
                };
                for (item, is_bool) in items.iter().zip(&bools) {
                    if *is_bool && is_lua_boolean(&tokens[item.clone()]) {
                        let at = &tokens[item.start];
                        report.error(
                            at.line,
                            at.col,
                            "a `bool` of the reply is given as a Lua boolean, which the reply \
                             carries as nil (false) or 1 (true)",
                            "give 1 or 0: `x and 1 or 0`",
                        );
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// The items of the list that starts at token `start`: ranges of tokens, split at the
/// commas of its own depth, up to the `}` that closes it (`table`: after a table's `{`),
/// or else to the end of the statement (a `return`'s list: its line, or an `end`).
fn table_items(tokens: &[Token], start: usize, table: bool) -> Vec<Range<usize>> {
    let Some(first) = tokens.get(start) else {
        return Vec::new();
    };
    let mut items = Vec::new();
    let (mut depth, mut from, mut at) = (0i64, start, start);
    while let Some(t) = tokens.get(at) {
        let closes = t.is_op(")") || t.is_op("]") || t.is_op("}");
        let statement_ends = !table
            && (t.is_kw("end") || t.is_kw("else") || t.is_kw("elseif") || t.line > first.line);
        if depth == 0 && (closes || statement_ends) {
            break;
        }
        if depth == 0 && t.is_op(",") {
            items.push(from..at);
            from = at + 1;
        } else if t.is_op("(") || t.is_op("[") || t.is_op("{") {
            depth += 1;
        } else if closes {
            depth -= 1;
        }
        at += 1;
    }
    if from < at {
        items.push(from..at);
    }
    items
}

/// Whether an expression's tokens give a Lua boolean: `true`, `false`, a comparison or a
/// `not` at its own depth, unless it ends as `… and 1 or 0`.
fn is_lua_boolean(expr: &[Token]) -> bool {
    let n = expr.len();
    if n >= 4
        && expr[n - 4].is_kw("and")
        && expr[n - 2].is_kw("or")
        && expr[n - 1].kind == Kind::Number
    {
        return false;
    }
    let mut depth = 0i64;
    expr.iter().any(|t| {
        depth += depth_delta(t);
        depth == 0
            && (t.is_kw("true")
                || t.is_kw("false")
                || t.is_kw("not")
                || ["==", "~=", "<", "<=", ">", ">="]
                    .iter()
                    .any(|op| t.is_op(op)))
    })
}

/// Whether `word` is one of the whitespace-separated `list`.
fn is_listed(list: &str, word: &str) -> bool {
    list.split_whitespace().any(|w| w == word)
}

/// How a token changes the nesting depth: brackets, and blocks (`while`/`for` open with their
/// `do`, `if` with itself, closed by one `end`).
fn depth_delta(t: &Token) -> i64 {
    match (t.kind, t.text.as_str()) {
        (Kind::Op, "(" | "[" | "{") | (Kind::Keyword, "function" | "do" | "if" | "repeat") => 1,
        (Kind::Op, ")" | "]" | "}") | (Kind::Keyword, "end" | "until") => -1,
        _ => 0,
    }
}

fn is_binary(t: &Token) -> bool {
    match t.kind {
        Kind::Op => matches!(
            t.text.as_str(),
            ".." | "+" | "-" | "*" | "/" | "%" | "^" | "==" | "~=" | "<" | "<=" | ">" | ">="
        ),
        Kind::Keyword => t.text == "and" || t.text == "or",
        _ => false,
    }
}
