//! The header parser and body checks, on fixture scripts: good ones parse to the exact
//! model value, bad ones give the exact diagnostics (every problem at once, in order).

use std::path::Path;

use redis_patterns_codegen::analyze;
use redis_patterns_codegen::model::{
    Arg, ArgType, Clock, ErrorCode, Header, Key, Return, ReturnType, Script, ScriptFile,
};

fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"))
}

/// A `ScriptFile` named by the `scripts/<family>/<op>.lua` convention.
fn script_file(family: &str, op: &str, source: &str) -> ScriptFile {
    ScriptFile {
        family: family.to_string(),
        op: op.to_string(),
        path: format!("scripts/{family}/{op}.lua"),
        source: source.to_string(),
    }
}

fn read(relative: &str) -> String {
    let path = fixtures().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn render(diagnostics: &[redis_patterns_codegen::Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Analyzes `good/<family>/<op>.lua`, which must pass.
fn good(family: &str, op: &str) -> Script {
    let file = script_file(family, op, &read(&format!("good/{family}/{op}.lua")));
    analyze(&file).unwrap_or_else(|d| panic!("{family}/{op} should pass:\n{}", render(&d)))
}

/// Analyzes `bad/<name>.lua` as `scripts/bad/<name>.lua`, which must fail; its diagnostics.
fn bad(name: &str) -> String {
    let file = script_file("bad", name, &read(&format!("bad/{name}.lua")));
    match analyze(&file) {
        Ok(script) => panic!("{name} should fail, got {:#?}", script.header),
        Err(d) => render(&d),
    }
}

fn strings(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|s| s.to_string()).collect()
}

#[test]
fn good_plain_script() {
    let script = good("identity_lock", "release");
    assert_eq!(
        script,
        Script {
            file: script_file(
                "identity_lock",
                "release",
                &read("good/identity_lock/release.lua")
            ),
            header: Header {
                flags: vec![],
                summary: "Deletes the lock if, and only if, it is held with `token`.".to_string(),
                description: strings(&[
                    "The compare-and-delete of chapter 4 in one atomic step. The book's",
                    "WATCH/GET/MULTI/DEL takes three round trips; this takes one.",
                ]),
                keys: vec![Key {
                    name: "lock".to_string(),
                    doc: "the lock key".to_string(),
                    variadic: false,
                }],
                args: vec![Arg {
                    name: "token".to_string(),
                    ty: ArgType::String,
                    doc: "the secret the lock was acquired with".to_string(),
                    variadic: false,
                }],
                returns: Return {
                    ty: ReturnType::Bool,
                    doc: "1 when the lock was held with `token` and is now free; 0 otherwise"
                        .to_string(),
                },
                errors: vec![ErrorCode {
                    code: "BAD_TOKEN".to_string(),
                    doc: "`token` is empty".to_string(),
                }],
                clock: None,
                complexity: "O(1)".to_string(),
            },
        }
    );
}

#[test]
fn good_read_only_script_keeps_its_flags_in_order() {
    let header = good("identity_lock", "lease").header;
    assert_eq!(header.flags, strings(&["no-writes", "allow-stale"]));
    assert_eq!(
        header.description,
        strings(&[
            "GET and PTTL in one step, so the answer is about one holder. It writes nothing, so it",
            "runs with EVALSHA_RO, also on replicas.",
        ])
    );
    assert_eq!(
        header.returns,
        Return {
            ty: ReturnType::OptInt,
            doc: "milliseconds left; -1 without a lease; nil when free or held by another token"
                .to_string(),
        }
    );
}

#[test]
fn good_variadic_keys_and_args() {
    assert_eq!(
        good("set_ops", "union_store").header,
        Header {
            flags: vec![],
            summary:
                "Stores the union of the source sets and `extra` in `dest`, and returns its size."
                    .to_string(),
            description: strings(&[
                "All keys must share one hash slot: derive them from one `{namespace}`.",
                "The result expires after `ttl`, so abandoned unions do not pile up.",
            ]),
            keys: vec![
                Key {
                    name: "dest".to_string(),
                    doc: "where the union is stored; replaced if it exists".to_string(),
                    variadic: false,
                },
                Key {
                    name: "sources".to_string(),
                    doc: "the sets to unite; at least one".to_string(),
                    variadic: true,
                },
            ],
            args: vec![
                Arg {
                    name: "ttl".to_string(),
                    ty: ArgType::Ms,
                    doc: "how long the result lives".to_string(),
                    variadic: false,
                },
                Arg {
                    name: "extra".to_string(),
                    ty: ArgType::String,
                    doc: "members added to the union as well".to_string(),
                    variadic: true,
                },
            ],
            returns: Return {
                ty: ReturnType::Int,
                doc: "the number of members in `dest`".to_string(),
            },
            errors: vec![
                ErrorCode {
                    code: "NO_SOURCES".to_string(),
                    doc: "no source set was passed".to_string(),
                },
                ErrorCode {
                    code: "BAD_TTL".to_string(),
                    doc: "`ttl` is not a positive whole number of milliseconds".to_string(),
                },
            ],
            clock: None,
            complexity: "O(N), N = the members of the sources plus `extra`".to_string(),
        }
    );
}

#[test]
fn good_tuple_return_and_server_clock() {
    assert_eq!(
        good("rate_limiter", "take").header,
        Header {
            flags: vec![],
            summary: "Takes `cost` tokens from the bucket if it holds enough, refilling it first."
                .to_string(),
            description: strings(&[
                "A token bucket on the server's clock, so every client sees the same rate."
            ]),
            keys: vec![Key {
                name: "bucket".to_string(),
                doc: "a hash with the fields `tokens` and `at` (milliseconds)".to_string(),
                variadic: false,
            }],
            args: vec![
                Arg {
                    name: "capacity".to_string(),
                    ty: ArgType::Uint,
                    doc: "the most tokens the bucket holds".to_string(),
                    variadic: false,
                },
                Arg {
                    name: "per_second".to_string(),
                    ty: ArgType::Float,
                    doc: "how many tokens flow in each second".to_string(),
                    variadic: false,
                },
                Arg {
                    name: "cost".to_string(),
                    ty: ArgType::Uint,
                    doc: "how many tokens this call takes".to_string(),
                    variadic: false,
                },
            ],
            returns: Return {
                ty: ReturnType::Tuple(vec![ReturnType::Bool, ReturnType::OptInt]),
                doc: "whether the tokens were taken; if not, milliseconds until they would be"
                    .to_string(),
            },
            errors: vec![ErrorCode {
                code: "BAD_RATE".to_string(),
                doc: "`per_second` is not a positive number".to_string(),
            }],
            clock: Some(Clock::Server),
            complexity: "O(1)".to_string(),
        }
    );
}

#[test]
fn good_tuple_without_spaces_and_no_description() {
    let header = good("counter", "incr_capped").header;
    assert_eq!(
        header.returns.ty,
        ReturnType::Tuple(vec![ReturnType::Int, ReturnType::Bool])
    );
    // The blank `---` line between summary and tags is not a description.
    assert_eq!(header.description, Vec::<String>::new());
}

#[test]
fn good_caller_clock() {
    let header = good("timeline", "post").header;
    assert_eq!(header.clock, Some(Clock::Caller));
    let args: Vec<(&str, ArgType)> = header
        .args
        .iter()
        .map(|a| (a.name.as_str(), a.ty))
        .collect();
    assert_eq!(
        args,
        [
            ("item", ArgType::String),
            ("now", ArgType::Int),
            ("keep", ArgType::Ms),
            ("limit", ArgType::Uint),
        ]
    );
    assert_eq!(header.complexity, "O(log N + M), M = `limit`");
}

/// Every good fixture passes, and this test knows them all.
#[test]
fn all_good_fixtures_pass() {
    let mut seen = Vec::new();
    for family in std::fs::read_dir(fixtures().join("good")).expect("good/") {
        let family = family.expect("entry").path();
        for script in std::fs::read_dir(&family).expect("family dir") {
            let script = script.expect("entry").path();
            let family = family.file_name().and_then(|n| n.to_str()).expect("utf-8");
            let op = script.file_stem().and_then(|n| n.to_str()).expect("utf-8");
            good(family, op);
            seen.push(format!("{family}/{op}"));
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "counter/incr_capped",
            "identity_lock/lease",
            "identity_lock/release",
            "rate_limiter/take",
            "set_ops/union_store",
            "timeline/post",
        ]
    );
}

/// Windows line endings change nothing: same header, same positions.
#[test]
fn crlf_line_endings() {
    let source = read("good/identity_lock/release.lua").replace('\n', "\r\n");
    let script = analyze(&script_file("identity_lock", "release", &source)).map(|s| s.header);
    assert_eq!(script, Ok(good("identity_lock", "release").header));

    let source = read("bad/binding_names.lua").replace('\n', "\r\n");
    let diagnostics = analyze(&script_file("bad", "binding_names", &source)).map(|s| s.header);
    assert_eq!(
        diagnostics.map_err(|d| render(&d)),
        Err(bad("binding_names"))
    );
}

/// Idiomatic Lua (table fields, methods, loops, long strings, comments) raises nothing.
#[test]
fn shebang_without_flags_and_idioms_that_are_not_globals() {
    let source = r#"#!lua
--- Exercises Lua that must not be mistaken for globals or built keys.
--- @key data            a hash
--- @arg fields string... fields to read
--- @return [string]     their values
--- @complexity O(N), N = the number of fields
local data = KEYS[1]
local out, n = {}, 0
local t = { a = 1, ['b'] = 2, nested = { c = 3, f = function(x) x = 1; return x end } }
local obj = {}
function obj.method(a) a = 2; return a end
function obj:other(b) self.b = b end
for _, field in ipairs(ARGV) do
  n = n + 1
  out[n] = redis.call('HGET', data, field)
end
local s = [==[ KEYS[9] and x = 1 ]==] -- KEYS[8] in a comment
t.a, out[1] = 1, out[1]
while n > 100 do n = n - 1 end
repeat n = n + 1 until n > 0
if n == 0 then n = 1 elseif n == 1 then n = 2 else n = 3 end
return out
"#;
    let result = analyze(&script_file("misc", "idioms", source)).map(|s| s.header.flags);
    assert_eq!(result.map_err(|d| render(&d)), Ok(vec![]));
}

/// No input panics: every prefix of every fixture (cut strings, comments, brackets and
/// tags) and some odd inputs are analyzed to a result.
#[test]
fn truncated_and_odd_inputs_do_not_panic() {
    let mut sources = vec![
        String::new(),
        "#!".to_string(),
        "#!lua flags=".to_string(),
        "---".to_string(),
        "--- @".to_string(),
        "--- x\n--- @return (".to_string(),
        "--- x\n--- @return [(".to_string(),
        "--- x\n--- @return )]".to_string(),
        "--- x\n--- @arg a b...c...".to_string(),
        "--- é\n--- @é é é".to_string(),
        "redis.call(".to_string(),
        "redis.call('GET',".to_string(),
        "redis.error_reply(".to_string(),
        "KEYS[".to_string(),
        "KEYS[99999999999999999999999]".to_string(),
        "local function".to_string(),
        "function".to_string(),
        "= = =".to_string(),
        ", = x".to_string(),
        ") = 1".to_string(),
        "a.b.c = 1 ]".to_string(),
        "'\\".to_string(),
        "\u{0}\u{1}\u{feff}".to_string(),
    ];
    for dir in ["good/identity_lock", "good/rate_limiter", "bad"] {
        for entry in std::fs::read_dir(fixtures().join(dir)).expect("fixture dir") {
            let path = entry.expect("entry").path();
            sources.push(std::fs::read_to_string(path).expect("fixture"));
        }
    }
    let mut runs = 0;
    for source in &sources {
        for (cut, _) in source.char_indices().chain([(source.len(), ' ')]) {
            let _ = analyze(&script_file("fuzz", "prefix", &source[..cut]));
            runs += 1;
        }
    }
    assert!(runs > 1000, "only {runs} inputs");
}

/// Every bad fixture has a test below, and each test has a fixture.
#[test]
fn every_bad_fixture_is_tested() {
    let mut names: Vec<String> = std::fs::read_dir(fixtures().join("bad"))
        .expect("bad/")
        .map(|e| {
            let path = e.expect("entry").path();
            let stem = path.file_stem().and_then(|n| n.to_str()).expect("utf-8");
            stem.to_string()
        })
        .collect();
    names.sort();
    assert_eq!(names, BAD);
}

const BAD: &[&str] = &[
    "binding_names",
    "clock_caller",
    "clock_missing",
    "clock_server_unused",
    "duplicates",
    "error_codes",
    "flags",
    "globals",
    "key_built_in_lua",
    "keyspace_scan",
    "loaders",
    "many",
    "missing_tags",
    "no_header",
    "non_literal_index",
    "prose_after_tags",
    "return_types",
    "shebang",
    "summary_empty",
    "summary_missing",
    "summary_wraps",
    "tag_syntax",
    "undeclared_index",
    "unknown_tag",
    "unknown_types",
    "unterminated",
    "unused_declaration",
    "writes_in_no_writes",
];

#[test]
fn bad_binding_names() {
    assert_eq!(
        bad("binding_names"),
        r#"scripts/bad/binding_names.lua:7:7: error: binds `KEYS[1]` to `key`, but the header names it `target`
  = hint: rename the local to `target`, or rename it in the header
scripts/bad/binding_names.lua:8:14: error: binds `ARGV[2]` to `ttl_ms`, but the header names it `ttl`
  = hint: rename the local to `ttl`, or rename it in the header"#
    );
}

#[test]
fn bad_clock_caller() {
    assert_eq!(
        bad("clock_caller"),
        r#"scripts/bad/clock_caller.lua:4:5: error: `@clock caller` needs an argument named `now`
  = hint: declare the caller's time with `--- @arg now <type> <unit and epoch>`
scripts/bad/clock_caller.lua:7:28: error: `TIME` is called, but the header declares `@clock caller`
  = hint: use the `now` argument, or declare `--- @clock server` instead"#
    );
}

#[test]
fn bad_clock_missing() {
    assert_eq!(
        bad("clock_missing"),
        r#"scripts/bad/clock_missing.lua:4:28: error: `TIME` is called, but the header does not declare `@clock server`
  = hint: add `--- @clock server` to the header"#
    );
}

#[test]
fn bad_clock_server_unused() {
    assert_eq!(
        bad("clock_server_unused"),
        r#"scripts/bad/clock_server_unused.lua:3:5: error: `@clock server` is declared but the script never calls `TIME`
  = hint: read the clock with `redis.call('TIME')`, or remove the tag"#
    );
}

#[test]
fn bad_duplicates() {
    assert_eq!(
        bad("duplicates"),
        r#"scripts/bad/duplicates.lua:3:5: error: `source` is declared twice
  = hint: each key and argument needs its own name; the first `source` is on line 2
scripts/bad/duplicates.lua:4:5: error: `source` is declared twice
  = hint: each key and argument needs its own name; the first `source` is on line 2
scripts/bad/duplicates.lua:6:5: error: `@return` is declared twice
  = hint: a script has one `@return`; the first is on line 5
scripts/bad/duplicates.lua:8:5: error: error `BAD_INPUT` is declared twice
  = hint: declare each code once; the first is on line 7
scripts/bad/duplicates.lua:10:5: error: `@clock` is declared twice
  = hint: a script has one `@clock`; the first is on line 9
scripts/bad/duplicates.lua:10:19: error: unexpected `now` after `@clock`
  = hint: `@clock` takes `server` or `caller` and nothing else
scripts/bad/duplicates.lua:12:5: error: `@complexity` is declared twice
  = hint: a script has one `@complexity`; the first is on line 11"#
    );
}

#[test]
fn bad_error_codes() {
    assert_eq!(
        bad("error_codes"),
        r#"scripts/bad/error_codes.lua:5:5: error: error `NEVER` is declared but never raised
  = hint: raise it with `redis.error_reply('NEVER <message>')`, or remove the tag
scripts/bad/error_codes.lua:12:28: error: `TOO_LONG` is raised but not declared
  = hint: declare it with `--- @error TOO_LONG <when it is raised>`
scripts/bad/error_codes.lua:15:28: error: the error reply does not start with a code
  = hint: begin it with an UPPER_SNAKE code declared with `@error`: `redis.error_reply('BAD_INPUT <message>')`"#
    );
}

#[test]
fn bad_flags() {
    assert_eq!(
        bad("flags"),
        r#"scripts/bad/flags.lua:1:13: error: unknown flag `no-write`
  = hint: did you mean `no-writes`? the flags are `no-writes`, `allow-oom`, `allow-stale`, `no-cluster` and `allow-cross-slot-keys`
scripts/bad/flags.lua:1:34: error: empty flag in `flags=`
  = hint: separate flags with single commas: `#!lua flags=no-writes,allow-stale`; write `#!lua` alone for none
scripts/bad/flags.lua:1:35: error: flag `allow-stale` is listed twice
  = hint: list each flag once
scripts/bad/flags.lua:1:47: error: unknown shebang option `name=x`
  = hint: the only option is `flags=`, its flags separated by commas without spaces: `#!lua flags=no-writes,allow-stale`"#
    );
}

#[test]
fn bad_globals() {
    assert_eq!(
        bad("globals"),
        r#"scripts/bad/globals.lua:8:1: error: assignment to global `count`
  = hint: declare it with `local count`; Redis rejects scripts that set globals
scripts/bad/globals.lua:9:1: error: assignment to global `a`
  = hint: declare it with `local a`; Redis rejects scripts that set globals
scripts/bad/globals.lua:9:13: error: assignment to global `b`
  = hint: declare it with `local b`; Redis rejects scripts that set globals
scripts/bad/globals.lua:11:10: error: `function bump` defines a global
  = hint: write `local function bump(…)`; Redis rejects scripts that set globals"#
    );
}

#[test]
fn bad_key_built_in_lua() {
    assert_eq!(
        bad("key_built_in_lua"),
        r#"scripts/bad/key_built_in_lua.lua:9:19: error: key built inside Lua: the key of `GET` is a string literal
  = hint: pass every key in `KEYS`; derive it in the caller
scripts/bad/key_built_in_lua.lua:10:20: error: key built inside Lua: the key of `HGET` is a `..` concatenation
  = hint: pass every key in `KEYS`; derive it in the caller
scripts/bad/key_built_in_lua.lua:11:20: error: key built inside Lua: the key of `HGET` is `meta`, built with `..`
  = hint: pass every key in `KEYS`; derive it in the caller
scripts/bad/key_built_in_lua.lua:14:20: error: key built inside Lua: the key of `TYPE` is `safe`, built with `..`
  = hint: pass every key in `KEYS`; derive it in the caller"#
    );
}

#[test]
fn bad_keyspace_scan() {
    assert_eq!(
        bad("keyspace_scan"),
        r#"scripts/bad/keyspace_scan.lua:6:25: error: `KEYS` walks the keyspace inside a script
  = hint: pass the keys the script needs in `KEYS`; iterate the keyspace in the caller, a bounded batch at a time
scripts/bad/keyspace_scan.lua:7:12: error: `SCAN` walks the keyspace inside a script
  = hint: pass the keys the script needs in `KEYS`; iterate the keyspace in the caller, a bounded batch at a time"#
    );
}

#[test]
fn bad_loaders() {
    assert_eq!(
        bad("loaders"),
        r#"scripts/bad/loaders.lua:4:14: error: `require` loads code from outside the script
  = hint: scripts are self-contained so they can be copied and run alone; inline the code
scripts/bad/loaders.lua:5:1: error: `dofile` loads code from outside the script
  = hint: scripts are self-contained so they can be copied and run alone; inline the code
scripts/bad/loaders.lua:6:11: error: `loadstring` compiles code at run time
  = hint: write the code out in the script, where it can be read and checked"#
    );
}

#[test]
fn bad_many() {
    assert_eq!(
        bad("many"),
        r#"scripts/bad/many.lua:4:16: error: unknown type `strng`
  = hint: did you mean `string`? the argument types are `string`, `bytes`, `int`, `uint`, `float`, `bool`, `ms` and `json`; `...` after the last argument's type makes it variadic
scripts/bad/many.lua:5:5: error: argument `ttl` (`ARGV[2]`) is declared but never used
  = hint: remove the `@arg` tag, or bind it: `local ttl = ARGV[2]`
scripts/bad/many.lua:6:13: error: unknown return type `boo`
  = hint: did you mean `bool`? the return types are `nil`, `bool`, `int`, `int?`, `float`, `float?`, `string`, `string?`, `bytes?`, `[string]`, `[bytes]`, `[int]` and `[(string, float)]`, and tuples of scalars such as `(int, string?)`
scripts/bad/many.lua:7:5: error: error `BAD_TTL` is declared but never raised
  = hint: raise it with `redis.error_reply('BAD_TTL <message>')`, or remove the tag
scripts/bad/many.lua:9:7: error: binds `KEYS[1]` to `lock_key`, but the header names it `lock`
  = hint: rename the local to `lock`, or rename it in the header
scripts/bad/many.lua:11:15: error: `KEYS[2]` is used but the header declares 1 key
  = hint: declare it with `--- @key <name> <doc>`, in `KEYS` order
scripts/bad/many.lua:12:4: error: `ARGV[3]` is used but the header declares 2 arguments
  = hint: declare it with `--- @arg <name> <type> <doc>`, in `ARGV` order
scripts/bad/many.lua:13:3: error: assignment to global `result`
  = hint: declare it with `local result`; Redis rejects scripts that set globals
scripts/bad/many.lua:13:23: error: `SET` writes, but the script is flagged `no-writes`
  = hint: remove `no-writes` from the `#!lua flags=` line, or move the write to another script
scripts/bad/many.lua:13:30: error: key built inside Lua: the key of `SET` is a `..` concatenation
  = hint: pass every key in `KEYS`; derive it in the caller
scripts/bad/many.lua:13:67: error: `ARGV[3]` is used but the header declares 2 arguments
  = hint: declare it with `--- @arg <name> <type> <doc>`, in `ARGV` order
scripts/bad/many.lua:15:12: error: `SET` writes, but the script is flagged `no-writes`
  = hint: remove `no-writes` from the `#!lua flags=` line, or move the write to another script
scripts/bad/many.lua:15:19: error: key built inside Lua: the key of `SET` is `owner`, built with `..`
  = hint: pass every key in `KEYS`; derive it in the caller
scripts/bad/many.lua:16:26: error: `NOT_DECLARED` is raised but not declared
  = hint: declare it with `--- @error NOT_DECLARED <when it is raised>`"#
    );
}

#[test]
fn bad_missing_tags() {
    assert_eq!(
        bad("missing_tags"),
        r#"scripts/bad/missing_tags.lua:1:1: error: the header has no `@return`
  = hint: declare the reply with `--- @return <type> <doc>`; the header ends at the first line that does not start with `---`
scripts/bad/missing_tags.lua:1:1: error: the header has no `@complexity`
  = hint: state the cost with `--- @complexity <text>`; the header ends at the first line that does not start with `---`"#
    );
}

#[test]
fn bad_no_header() {
    assert_eq!(
        bad("no_header"),
        r#"scripts/bad/no_header.lua:1:1: error: the script has no header
  = hint: begin the file (after any `#!lua` line) with `---` comment lines: a one-sentence summary, then the `@key`, `@arg`, `@return`, `@error`, `@clock` and `@complexity` tags"#
    );
}

#[test]
fn bad_non_literal_index() {
    assert_eq!(
        bad("non_literal_index"),
        r#"scripts/bad/non_literal_index.lua:9:13: error: `KEYS` is used without a literal index, but nothing is variadic
  = hint: index it with a literal (`KEYS[1]`), or make the last key variadic: `--- @key <name>... <doc>`
scripts/bad/non_literal_index.lua:10:29: error: `KEYS` is used without a literal index, but nothing is variadic
  = hint: index it with a literal (`KEYS[1]`), or make the last key variadic: `--- @key <name>... <doc>`
scripts/bad/non_literal_index.lua:12:13: error: `ARGV` is used without a literal index, but nothing is variadic
  = hint: index it with a literal (`ARGV[1]`), or make the last argument variadic: `--- @arg <name> <type>... <doc>`"#
    );
}

#[test]
fn bad_prose_after_tags() {
    assert_eq!(
        bad("prose_after_tags"),
        r#"scripts/bad/prose_after_tags.lua:4:5: error: prose after the tags
  = hint: move it above the first tag, into the description"#
    );
}

#[test]
fn bad_return_types() {
    assert_eq!(
        bad("return_types"),
        r#"scripts/bad/return_types.lua:2:13: error: the tuple `(int)` has fewer than two elements
  = hint: return a plain type instead, or list two or more elements: `(int, string?)`
scripts/bad/return_types.lua:3:5: error: `@return` is declared twice
  = hint: a script has one `@return`; the first is on line 2
scripts/bad/return_types.lua:3:13: error: unknown return type `[float]`
  = hint: did you mean `float`? the return types are `nil`, `bool`, `int`, `int?`, `float`, `float?`, `string`, `string?`, `bytes?`, `[string]`, `[bytes]`, `[int]` and `[(string, float)]`, and tuples of scalars such as `(int, string?)`"#
    );
}

#[test]
fn bad_shebang() {
    assert_eq!(
        bad("shebang"),
        r#"scripts/bad/shebang.lua:1:1: error: unknown shebang `#!/usr/bin/env lua`
  = hint: a script may begin with `#!lua` or `#!lua flags=<flag>,<flag>`"#
    );
}

#[test]
fn bad_summary_empty() {
    assert_eq!(
        bad("summary_empty"),
        r#"scripts/bad/summary_empty.lua:1:1: error: the header's first line is empty
  = hint: begin the header with a one-sentence summary: `--- Does this and that.`"#
    );
}

#[test]
fn bad_summary_missing() {
    assert_eq!(
        bad("summary_missing"),
        r#"scripts/bad/summary_missing.lua:1:1: error: the header has no summary
  = hint: begin the header with a one-sentence summary, above the tags"#
    );
}

#[test]
fn bad_summary_wraps() {
    assert_eq!(
        bad("summary_wraps"),
        r#"scripts/bad/summary_wraps.lua:2:5: error: the summary runs onto a second line
  = hint: fit the one-sentence summary on the first line, then a blank `---` line and the description"#
    );
}

#[test]
fn bad_tag_syntax() {
    assert_eq!(
        bad("tag_syntax"),
        r#"scripts/bad/tag_syntax.lua:2:5: error: `@key` needs a name and a doc
  = hint: write `--- @key <name> <what the key holds>`
scripts/bad/tag_syntax.lua:3:10: error: `Src` is not a valid name
  = hint: names are snake_case: a lower-case letter, then lower-case letters, digits and `_`
scripts/bad/tag_syntax.lua:4:5: error: only the last `@key` may be variadic, not `members`
  = hint: remove the `...`, or move this key to the end
scripts/bad/tag_syntax.lua:5:5: error: `@key dest` has no doc
  = hint: say what the key holds: `--- @key dest <doc>`
scripts/bad/tag_syntax.lua:6:10: error: `type` is a Rust keyword
  = hint: pick another name: the generated wrapper takes a parameter of the same name
scripts/bad/tag_syntax.lua:7:5: error: `@arg` needs a name, a type and a doc
  = hint: write `--- @arg <name> <type> <what it means>`
scripts/bad/tag_syntax.lua:8:5: error: `@arg count` has no type
  = hint: write `--- @arg count <type> <doc>`; the argument types are `string`, `bytes`, `int`, `uint`, `float`, `bool`, `ms` and `json`; `...` after the last argument's type makes it variadic
scripts/bad/tag_syntax.lua:9:10: error: `ids...` is not a valid name
  = hint: a variadic argument marks its type, not its name: `--- @arg ids <type>... <doc>`
scripts/bad/tag_syntax.lua:10:10: error: `end` is a Lua keyword
  = hint: pick another name: the script binds it to a local of the same name
scripts/bad/tag_syntax.lua:11:10: error: `self` is a Rust keyword
  = hint: pick another name: the generated wrapper takes a parameter of the same name
scripts/bad/tag_syntax.lua:12:5: error: only the last `@arg` may be variadic, not `rest`
  = hint: remove the `...`, or move this argument to the end
scripts/bad/tag_syntax.lua:14:5: error: `@return` needs a type and a doc
  = hint: write `--- @return <type> <what the reply means>`
scripts/bad/tag_syntax.lua:15:12: error: `bad_input` is not a valid error code
  = hint: codes are UPPER_SNAKE: an upper-case letter, then upper-case letters, digits and `_`
scripts/bad/tag_syntax.lua:16:5: error: `@error NO_DOC` has no doc
  = hint: say when the script raises it: `--- @error NO_DOC <doc>`
scripts/bad/tag_syntax.lua:17:5: error: `@error` needs a code and a doc
  = hint: write `--- @error <CODE> <when the script raises it>`
scripts/bad/tag_syntax.lua:18:5: error: `@clock` needs `server` or `caller`
  = hint: `@clock server` when the script reads `redis.call('TIME')`, `@clock caller` when the caller passes the time as the `now` argument
scripts/bad/tag_syntax.lua:19:12: error: unknown clock `sever`
  = hint: `@clock server` when the script reads `redis.call('TIME')`, `@clock caller` when the caller passes the time as the `now` argument
scripts/bad/tag_syntax.lua:20:5: error: `@complexity` is empty
  = hint: state the cost in terms the caller controls: `--- @complexity O(log N + M), M = limit`"#
    );
}

#[test]
fn bad_undeclared_index() {
    assert_eq!(
        bad("undeclared_index"),
        r#"scripts/bad/undeclared_index.lua:6:14: error: `KEYS[2]` is used but the header declares 1 key
  = hint: declare it with `--- @key <name> <doc>`, in `KEYS` order
scripts/bad/undeclared_index.lua:7:13: error: `ARGV[1]` is used but the header declares no arguments
  = hint: declare it with `--- @arg <name> <type> <doc>`, in `ARGV` order
scripts/bad/undeclared_index.lua:8:17: error: `KEYS[0]` is always nil
  = hint: Lua arrays start at 1: the first is `KEYS[1]`"#
    );
}

#[test]
fn bad_unknown_tag() {
    assert_eq!(
        bad("unknown_tag"),
        r#"scripts/bad/unknown_tag.lua:2:5: error: unknown tag `@retrun`
  = hint: did you mean `@return`? the tags are `@key`, `@arg`, `@return`, `@error`, `@clock` and `@complexity`
scripts/bad/unknown_tag.lua:3:5: error: unknown tag `@params`
  = hint: the tags are `@key`, `@arg`, `@return`, `@error`, `@clock` and `@complexity`
scripts/bad/unknown_tag.lua:4:1: error: the header has no `@return`
  = hint: declare the reply with `--- @return <type> <doc>`; the header ends at the first line that does not start with `---`"#
    );
}

#[test]
fn bad_unknown_types() {
    assert_eq!(
        bad("unknown_types"),
        r#"scripts/bad/unknown_types.lua:3:16: error: unknown type `str`
  = hint: did you mean `string`? the argument types are `string`, `bytes`, `int`, `uint`, `float`, `bool`, `ms` and `json`; `...` after the last argument's type makes it variadic
scripts/bad/unknown_types.lua:4:16: error: unknown type `integer...`
  = hint: did you mean `int`? the argument types are `string`, `bytes`, `int`, `uint`, `float`, `bool`, `ms` and `json`; `...` after the last argument's type makes it variadic
scripts/bad/unknown_types.lua:5:13: error: unknown type `strin` in the tuple `(int, strin)`
  = hint: did you mean `string`? tuple elements are `bool`, `int`, `int?`, `float`, `float?`, `string`, `string?` and `bytes?`"#
    );
}

#[test]
fn bad_unterminated() {
    assert_eq!(
        bad("unterminated"),
        r#"scripts/bad/unterminated.lua:4:11: error: unterminated string
  = hint: close it with `'` on the same line; write a line break as `\n`
scripts/bad/unterminated.lua:5:13: error: escape sequence `\300` is too large
  = hint: decimal escapes go up to `\255`
scripts/bad/unterminated.lua:5:22: error: malformed number `1.2.3`
  = hint: write a decimal (`42`, `1.5`, `1e3`) or hexadecimal (`0xff`) number
scripts/bad/unterminated.lua:6:13: error: unexpected character `!`
  = hint: Lua writes not-equal as `~=` and negation as `not`
scripts/bad/unterminated.lua:7:1: error: unterminated long comment
  = hint: close it with `]==]`"#
    );
}

#[test]
fn bad_unused_declaration() {
    assert_eq!(
        bad("unused_declaration"),
        r#"scripts/bad/unused_declaration.lua:2:5: error: key `lock` (`KEYS[1]`) is declared but never used
  = hint: remove the `@key` tag, or bind it: `local lock = KEYS[1]`
scripts/bad/unused_declaration.lua:3:5: error: key `extra` (`KEYS[2]` onwards) is declared but never used
  = hint: remove the `@key` tag, or read it: `KEYS[2]`, `#KEYS` or `unpack(KEYS, 2)`
scripts/bad/unused_declaration.lua:5:5: error: argument `ttl` (`ARGV[2]`) is declared but never used
  = hint: remove the `@arg` tag, or bind it: `local ttl = ARGV[2]`"#
    );
}

#[test]
fn bad_writes_in_no_writes() {
    assert_eq!(
        bad("writes_in_no_writes"),
        r#"scripts/bad/writes_in_no_writes.lua:9:12: error: `SET` writes, but the script is flagged `no-writes`
  = hint: remove `no-writes` from the `#!lua flags=` line, or move the write to another script
scripts/bad/writes_in_no_writes.lua:10:13: error: `PEXPIRE` writes, but the script is flagged `no-writes`
  = hint: remove `no-writes` from the `#!lua flags=` line, or move the write to another script
scripts/bad/writes_in_no_writes.lua:11:12: error: the command name is not a string literal, so `no-writes` cannot be checked
  = hint: name the command with a string literal: `redis.call('GET', key)`"#
    );
}
