//! The header parser and body checks, on fixture scripts: good ones parse to the exact
//! model value, bad ones give the exact diagnostics (every problem at once, in order).

use std::path::Path;

use redis_patterns_codegen::model::{
    Arg, ArgType, Clock, Count, ErrorCode, Header, Key, KeyForm, KeyPart, KeyTemplate, KeyType,
    Preset, PresetValue, Return, ReturnType, Rule, Script, ScriptFile,
};
use redis_patterns_codegen::{analyze, contract};

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
        shared: vec![],
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

fn preset(name: &str, value: PresetValue, doc: &str) -> Preset {
    Preset {
        name: name.to_string(),
        value,
        doc: doc.to_string(),
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
                    ty: KeyType::String,
                    doc: "the lock key".to_string(),
                    variadic: false,
                    count: Count::ONE,
                    template: None,
                }],
                args: vec![Arg {
                    name: "token".to_string(),
                    ty: ArgType::String,
                    optional: false,
                    rule: Rule::NonEmpty,
                    doc: "the secret the lock was acquired with".to_string(),
                    variadic: false,
                    count: Count::ONE,
                }],
                returns: Return {
                    ty: ReturnType::Bool,
                    doc: "1 when the lock was held with `token` and is now free; 0 otherwise"
                        .to_string(),
                },
                errors: vec![
                    ErrorCode {
                        code: "BAD_ARGS".to_string(),
                        doc: "not 1 key and 1 argument".to_string(),
                    },
                    ErrorCode {
                        code: "BAD_TOKEN".to_string(),
                        doc: "empty".to_string(),
                    },
                ],
                clock: None,
                complexity: "O(1)".to_string(),
                uses: vec![],
                defaults: vec![],
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
                    ty: KeyType::Set,
                    doc: "where the union is stored; replaced if it exists".to_string(),
                    variadic: false,
                    count: Count::ONE,
                    template: Some(KeyTemplate {
                        text: "{<namespace>}:<dest>".to_string(),
                        forms: vec![KeyForm {
                            text: "{<namespace>}:<dest>".to_string(),
                            parts: vec![
                                KeyPart::HashTag(vec![KeyPart::Param("namespace".to_string())]),
                                KeyPart::Text(":".to_string()),
                                KeyPart::Param("dest".to_string()),
                            ],
                        }],
                    }),
                },
                Key {
                    name: "sources".to_string(),
                    ty: KeyType::Set,
                    doc: "the sets to unite".to_string(),
                    variadic: true,
                    count: Count {
                        min: 1,
                        max: Some(1000),
                    },
                    template: Some(KeyTemplate {
                        text: "{<namespace>}:<source>".to_string(),
                        forms: vec![KeyForm {
                            text: "{<namespace>}:<source>".to_string(),
                            parts: vec![
                                KeyPart::HashTag(vec![KeyPart::Param("namespace".to_string())]),
                                KeyPart::Text(":".to_string()),
                                KeyPart::Param("source".to_string()),
                            ],
                        }],
                    }),
                },
            ],
            args: vec![
                Arg {
                    name: "ttl".to_string(),
                    ty: ArgType::Ms,
                    optional: false,
                    rule: Rule::Range {
                        min: 1,
                        max: 10_000_000_000,
                    },
                    doc: "how long the result lives".to_string(),
                    variadic: false,
                    count: Count::ONE,
                },
                // On a variadic, the range counts the values and `non-empty` applies to each.
                Arg {
                    name: "extra".to_string(),
                    ty: ArgType::String,
                    optional: false,
                    rule: Rule::NonEmpty,
                    doc: "members added to the union as well".to_string(),
                    variadic: true,
                    count: Count {
                        min: 0,
                        max: Some(10_000),
                    },
                },
            ],
            returns: Return {
                ty: ReturnType::Uint,
                doc: "the number of members in `dest`".to_string(),
            },
            errors: vec![
                ErrorCode {
                    code: "BAD_ARGS".to_string(),
                    doc: "not from 2 to 1001 keys and from 1 to 10001 arguments".to_string(),
                },
                ErrorCode {
                    code: "BAD_TTL".to_string(),
                    doc: "not whole milliseconds within its range".to_string(),
                },
                ErrorCode {
                    code: "BAD_EXTRA".to_string(),
                    doc: "a value is empty".to_string(),
                },
                ErrorCode {
                    code: "BAD_KEYS".to_string(),
                    doc: "a key not named as its template says".to_string(),
                },
            ],
            clock: None,
            complexity: "O(N), N = the members of the sources plus `extra`".to_string(),
            uses: vec![],
            defaults: vec![],
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
                ty: KeyType::Hash,
                doc: "a hash with the fields `tokens` and `at` (milliseconds)".to_string(),
                variadic: false,
                count: Count::ONE,
                // Literal text before the hash tag, a placeholder after it.
                template: Some(KeyTemplate {
                    text: "rate:{<user>}:<action>".to_string(),
                    forms: vec![KeyForm {
                        text: "rate:{<user>}:<action>".to_string(),
                        parts: vec![
                            KeyPart::Text("rate:".to_string()),
                            KeyPart::HashTag(vec![KeyPart::Param("user".to_string())]),
                            KeyPart::Text(":".to_string()),
                            KeyPart::Param("action".to_string()),
                        ],
                    }],
                }),
            }],
            args: vec![
                Arg {
                    name: "capacity".to_string(),
                    ty: ArgType::Uint,
                    optional: false,
                    rule: Rule::Range {
                        min: 1,
                        max: 999_999_999_999_999,
                    },
                    doc: "the most tokens the bucket holds".to_string(),
                    variadic: false,
                    count: Count::ONE,
                },
                Arg {
                    name: "per_second".to_string(),
                    ty: ArgType::Float,
                    optional: false,
                    rule: Rule::Any,
                    doc: "how many tokens flow in each second; positive".to_string(),
                    variadic: false,
                    count: Count::ONE,
                },
                Arg {
                    name: "cost".to_string(),
                    ty: ArgType::Uint,
                    optional: false,
                    rule: Rule::Range {
                        min: 1,
                        max: 999_999_999_999_999,
                    },
                    doc: "how many tokens this call takes".to_string(),
                    variadic: false,
                    count: Count::ONE,
                },
            ],
            returns: Return {
                ty: ReturnType::Tuple(vec![ReturnType::Bool, ReturnType::OptInt]),
                doc: "whether the tokens were taken; if not, milliseconds until they would be"
                    .to_string(),
            },
            errors: vec![
                ErrorCode {
                    code: "BAD_ARGS".to_string(),
                    doc: "not 1 key and 3 arguments".to_string(),
                },
                ErrorCode {
                    code: "BAD_CAPACITY".to_string(),
                    doc: "not an integer within its range".to_string(),
                },
                ErrorCode {
                    code: "BAD_PER_SECOND".to_string(),
                    doc: "not a finite decimal number, or not above 0".to_string(),
                },
                ErrorCode {
                    code: "BAD_COST".to_string(),
                    doc: "not an integer within its range".to_string(),
                },
                ErrorCode {
                    code: "BAD_KEYS".to_string(),
                    doc: "a key not named as its template says".to_string(),
                },
            ],
            clock: Some(Clock::Server),
            complexity: "O(1)".to_string(),
            uses: strings(&["shown"]),
            defaults: vec![
                preset(
                    "action",
                    PresetValue::Text("api".into()),
                    "the key of TokenBucket::new"
                ),
                preset(
                    "capacity",
                    PresetValue::Text("100".into()),
                    "TokenBucket::new: a bucket of 100",
                ),
                preset("cost", PresetValue::Text("1".into()), "TokenBucket::take"),
            ],
        }
    );
}

#[test]
fn good_tuple_without_spaces_and_no_description() {
    let header = good("counter", "incr_capped").header;
    assert_eq!(
        header.returns.ty,
        ReturnType::Tuple(vec![ReturnType::Decimal, ReturnType::Bool])
    );
    // The blank `---` line between summary and tags is not a description.
    assert_eq!(header.description, Vec::<String>::new());
}

/// `-2^63..=2^63-1` evaluates to the whole of `i64`, and `a|b|c` keeps its order.
#[test]
fn good_wide_range_and_choices() {
    let args = good("counter", "incr_capped").header.args;
    let rules: Vec<(&str, ArgType, &Rule)> = args
        .iter()
        .map(|a| (a.name.as_str(), a.ty, &a.rule))
        .collect();
    let wide = Rule::Range {
        min: i64::MIN,
        max: i64::MAX,
    };
    let choices = Rule::OneOf(strings(&["refuse", "clamp", "add"]));
    assert_eq!(
        rules,
        [
            ("step", ArgType::Int, &wide),
            ("cap", ArgType::Int, &wide),
            ("over", ArgType::String, &choices),
        ]
    );
}

#[test]
fn good_caller_clock() {
    let header = good("timeline", "post").header;
    assert_eq!(header.clock, Some(Clock::Caller));
    let args: Vec<(&str, ArgType, bool, Rule)> = header
        .args
        .iter()
        .map(|a| (a.name.as_str(), a.ty, a.optional, a.rule.clone()))
        .collect();
    assert_eq!(
        args,
        [
            ("item", ArgType::String, false, Rule::Any),
            (
                "now",
                ArgType::Int,
                false,
                Rule::Range {
                    min: 0,
                    max: (1 << 53) - 1
                }
            ),
            (
                "keep",
                ArgType::Ms,
                true,
                Rule::Range {
                    min: 1,
                    max: 1_000_000_000_000
                }
            ),
            (
                "limit",
                ArgType::Uint,
                false,
                Rule::Range { min: 1, max: 1000 }
            ),
        ]
    );
    assert_eq!(header.keys[0].ty, KeyType::Zset);
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
            "profile/save",
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

    // A block further down, or without its first or last marker, is found as well.
    for name in [
        "misplaced_input_checks",
        "unopened_input_checks",
        "unterminated_input_checks",
    ] {
        let source = read(&format!("bad/{name}.lua")).replace('\n', "\r\n");
        let diagnostics = analyze(&script_file("bad", name, &source)).map(|s| s.header);
        assert_eq!(
            diagnostics.map_err(|d| render(&d)),
            Err(bad(name)),
            "{name}"
        );
    }

    // The line shown from an edited block carries no `\r`.
    let source = read("bad/edited_input_checks.lua").replace('\n', "\r\n");
    let diagnostics = analyze(&script_file("bad", "edited_input_checks", &source));
    assert_eq!(
        diagnostics.map(|s| s.header).map_err(|d| render(&d)),
        Err(bad("edited_input_checks"))
    );
}

/// Idiomatic Lua (table fields, methods, loops, long strings, comments) raises nothing.
#[test]
fn shebang_without_flags_and_idioms_that_are_not_globals() {
    let source = r#"#!lua
--- Exercises Lua that must not be mistaken for globals or built keys.
--- @key data hash          a hash
--- @arg fields string...   fields to read
--- @return [string]        their values
--- @error BAD_ARGS         not 1 key and any number of arguments
--- @complexity O(N), N = the number of fields
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 1 then
  return redis.error_reply('BAD_ARGS expected 1 key and any number of arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local data = KEYS[1]
-- End of the generated input checks.
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
        "--- x\n--- @key a... string 1..=".to_string(),
        "--- x\n--- @key a string 1..=2 d".to_string(),
        "--- x\n--- @key a string d\n--- @key b... string 4294967295.. d\n\
         --- @arg c string d\n--- @arg e string... 4294967295..=4294967295 d"
            .to_string(),
        "--- x\n--- @arg a int -".to_string(),
        "--- x\n--- @arg a int 1..=2^99999999999 d".to_string(),
        "--- x\n--- @arg a int 9^99..=-9^99 d".to_string(),
        "--- x\n--- @arg a ms? 1..=^ d".to_string(),
        "--- x\n--- @arg a uint... -5.. d".to_string(),
        "--- x\n--- @arg a string | d".to_string(),
        "--- x\n--- @arg a string?... a|b non-empty 1..=2 d".to_string(),
        "--- x\n--- @return [[decimal]".to_string(),
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
    // The generated input checks repeat in most fixtures: every cut inside them is tried in
    // one script that has every helper, and only line by line in the others.
    let every_helper = read("good/rate_limiter/take.lua");
    let mut prefixes: Vec<&str> = Vec::new();
    for source in &sources {
        let block = block_span(source).filter(|_| *source != every_helper);
        for (cut, _) in source.char_indices().chain([(source.len(), ' ')]) {
            let inside = block.as_ref().is_some_and(|b| b.contains(&cut));
            if !inside || source[..cut].ends_with('\n') {
                prefixes.push(&source[..cut]);
            }
        }
    }
    // Tens of thousands of runs: spread over the cores.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for chunk in prefixes.chunks(prefixes.len().div_ceil(threads)) {
            scope.spawn(move || {
                for prefix in chunk {
                    let _ = analyze(&script_file("fuzz", "prefix", prefix));
                }
            });
        }
    });
    let runs = prefixes.len();
    assert!(runs > 1000, "only {runs} inputs");
}

/// The byte range of the generated input checks in `source`, from the start of their first
/// line to the end of their last.
fn block_span(source: &str) -> Option<std::ops::Range<usize>> {
    let start = source.find(contract::BEGIN)?;
    let end = source[start..].find(contract::END)? + start + contract::END.len();
    Some(start..end)
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
    "choice_not_plain",
    "choice_on_int",
    "clock_caller",
    "clock_missing",
    "clock_server_unused",
    "defaults",
    "duplicates",
    "edited_input_checks",
    "error_codes",
    "flags",
    "globals",
    "helper_names",
    "key_built_in_lua",
    "key_check",
    "key_check_variadic",
    "key_count_not_variadic",
    "key_types",
    "keyspace_scan",
    "length_and_hex",
    "loaders",
    "long_names",
    "many",
    "misplaced_input_checks",
    "missing_tags",
    "ms_range_refused",
    "ms_without_range",
    "no_header",
    "no_input_checks",
    "non_empty_on_int",
    "non_literal_index",
    "optional_misuse",
    "prose_after_tags",
    "range_beyond_type",
    "range_empty",
    "range_on_string",
    "reply_in_prose",
    "return_types",
    "shebang",
    "summary_empty",
    "summary_missing",
    "summary_wraps",
    "tag_syntax",
    "undeclared_index",
    "unknown_tag",
    "unknown_types",
    "unopened_input_checks",
    "unterminated",
    "unterminated_input_checks",
    "unused_declaration",
    "writes_in_no_writes",
];

#[test]
fn bad_binding_names() {
    assert_eq!(
        bad("binding_names"),
        r#"scripts/bad/binding_names.lua:35:7: error: binds `KEYS[1]` to `key`, but the header names it `target`
  = hint: rename the local to `target`, or rename it in the header
scripts/bad/binding_names.lua:36:14: error: binds `ARGV[2]` to `ttl_ms`, but the header names it `ttl`
  = hint: rename the local to `ttl`, or rename it in the header"#
    );
}

/// A choice is a plain word: at most 32 ASCII letters, digits, `_`, `.`, `:` or `-`, so
/// that it goes into the generated Lua and its messages as it is. The first choice of a list
/// that is not one is reported; the plain list on the last line passes.
#[test]
fn bad_choice_not_plain() {
    let hint = "a choice is at most 32 letters, digits, `_`, `.`, `:` or `-`; check other values \
                in the script's own code";
    assert_eq!(
        bad("choice_not_plain"),
        format!(
            r#"scripts/bad/choice_not_plain.lua:2:24: error: the choice `it's` is not a plain word
  = hint: {hint}
scripts/bad/choice_not_plain.lua:3:25: error: the choice `a\b` is not a plain word
  = hint: {hint}
scripts/bad/choice_not_plain.lua:4:26: error: the choice `café` is not a plain word
  = hint: {hint}
scripts/bad/choice_not_plain.lua:5:23: error: the choice `50%` is not a plain word
  = hint: {hint}
scripts/bad/choice_not_plain.lua:6:22: error: the choice `abcdefghijklmnopqrstuvwxyz0123456` is not a plain word
  = hint: {hint}
scripts/bad/choice_not_plain.lua:10:1: error: the script does not start with the input checks its header declares
  = hint: every script checks its key and argument counts and every argument right after the header, with code generated from it; run `redis-patterns fix <scripts folder>` to write them from the header"#
        )
    );
}

#[test]
fn bad_choice_on_int() {
    assert_eq!(
        bad("choice_on_int"),
        r#"scripts/bad/choice_on_int.lua:2:16: error: a list of choices on a `int` argument
  = hint: a list of choices (`a|b|c`) goes with `string`
scripts/bad/choice_on_int.lua:3:21: error: a list of choices on a `bytes` argument
  = hint: a list of choices (`a|b|c`) goes with `string`
scripts/bad/choice_on_int.lua:4:22: error: `fast||slow` has an empty choice
  = hint: separate the accepted strings with single `|`: `sum|min|max`"#
    );
}

#[test]
fn bad_clock_caller() {
    assert_eq!(
        bad("clock_caller"),
        r#"scripts/bad/clock_caller.lua:6:5: error: `@clock caller` needs an argument named `now`
  = hint: declare the caller's time with `--- @arg now <type> <unit and epoch>`
scripts/bad/clock_caller.lua:69:28: error: `TIME` is called, but the header declares `@clock caller`
  = hint: use the `now` argument, or declare `--- @clock server` instead"#
    );
}

#[test]
fn bad_clock_missing() {
    assert_eq!(
        bad("clock_missing"),
        r#"scripts/bad/clock_missing.lua:11:28: error: `TIME` is called, but the header does not declare `@clock server`
  = hint: add `--- @clock server` to the header"#
    );
}

#[test]
fn bad_clock_server_unused() {
    assert_eq!(
        bad("clock_server_unused"),
        r#"scripts/bad/clock_server_unused.lua:4:5: error: `@clock server` is declared but the script never calls `TIME`
  = hint: read the clock with `redis.call('TIME')`, or remove the tag"#
    );
}

/// The duplicated names make no sensible input checks, so the fixture has none; the header
/// still yields a model, so their absence is reported too.
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
  = hint: a script has one `@complexity`; the first is on line 11
scripts/bad/duplicates.lua:13:1: error: the script does not start with the input checks its header declares
  = hint: every script checks its key and argument counts and every argument right after the header, with code generated from it; run `redis-patterns fix <scripts folder>` to write them from the header"#
    );
}

/// Only the first line that differs is reported, with what was expected there.
#[test]
fn bad_edited_input_checks() {
    assert_eq!(
        bad("edited_input_checks"),
        r#"scripts/bad/edited_input_checks.lua:16:1: error: the input checks differ from what the header declares
  = hint: expected `  return redis.error_reply('BAD_TOKEN must not be empty')` here, found `  return redis.error_reply('BAD_TOKEN is required')`; run `redis-patterns fix <scripts folder>` to write them from the header"#
    );
}

#[test]
fn bad_error_codes() {
    assert_eq!(
        bad("error_codes"),
        r#"scripts/bad/error_codes.lua:6:5: error: error `NEVER` is declared but never raised
  = hint: raise it with `redis.error_reply('NEVER <message>')`, or remove the tag
scripts/bad/error_codes.lua:19:28: error: `TOO_LONG` is raised but not declared
  = hint: declare it with `--- @error TOO_LONG <when it is raised>`
scripts/bad/error_codes.lua:22:28: error: the error reply does not start with a code
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
        r#"scripts/bad/globals.lua:15:1: error: assignment to global `count`
  = hint: declare it with `local count`; Redis rejects scripts that set globals
scripts/bad/globals.lua:16:1: error: assignment to global `a`
  = hint: declare it with `local a`; Redis rejects scripts that set globals
scripts/bad/globals.lua:16:13: error: assignment to global `b`
  = hint: declare it with `local b`; Redis rejects scripts that set globals
scripts/bad/globals.lua:18:10: error: `function bump` defines a global
  = hint: write `local function bump(…)`; Redis rejects scripts that set globals"#
    );
}

/// No input checks can be written for these names, so the fixture has none; the names are
/// kept in the model, so their absence is reported too.
#[test]
fn bad_helper_names() {
    assert_eq!(
        bad("helper_names"),
        r#"scripts/bad/helper_names.lua:2:10: error: `shown` is the name of a helper of the generated input checks
  = hint: pick another name: the script binds it to a local of the same name
scripts/bad/helper_names.lua:3:10: error: `integer` is the name of a helper of the generated input checks
  = hint: pick another name: the script binds it to a local of the same name
scripts/bad/helper_names.lua:4:10: error: `decimal_less` is the name of a helper of the generated input checks
  = hint: pick another name: the script binds it to a local of the same name
scripts/bad/helper_names.lua:5:10: error: `float` is the name of a helper of the generated input checks
  = hint: pick another name: the script binds it to a local of the same name
scripts/bad/helper_names.lua:8:1: error: the script does not start with the input checks its header declares
  = hint: every script checks its key and argument counts and every argument right after the header, with code generated from it; run `redis-patterns fix <scripts folder>` to write them from the header"#
    );
}

/// What the key check cannot read as the call means: a value of a hash tag of several
/// values standing elsewhere, an argument named as one, a name the check's own locals take.
#[test]
fn bad_key_check() {
    assert_eq!(
        bad("key_check"),
        r#"scripts/bad/key_check.lua:3:31: error: `<user>` stands outside the hash tag `{<ns>:<user>}` in `{<ns>:<user>}:items:<user>`
  = hint: a value of a hash tag of several values stands in that hash tag only: give it another name outside it
scripts/bad/key_check.lua:4:5: error: the argument `ns` is named as a value of the hash tag `{<ns>:<user>}`
  = hint: a hash tag of several values is checked whole: rename the argument, or the placeholder
scripts/bad/key_check.lua:5:5: error: `tag_of_keys` is the name of a local of the generated key check
  = hint: rename it: the key check reads the keys' values into locals named `<placeholder>_of_keys`, `<placeholder>_of_item` and `<key>_parts`
scripts/bad/key_check.lua:8:1: error: the script does not start with the input checks its header declares
  = hint: every script checks its key and argument counts and every argument right after the header, with code generated from it; run `redis-patterns fix <scripts folder>` to write them from the header"#
    );
}

/// A variadic argument gives a value per item: not one of a value of the whole call.
#[test]
fn bad_key_check_variadic() {
    assert_eq!(
        bad("key_check_variadic"),
        r#"scripts/bad/key_check_variadic.lua:4:5: error: the variadic argument `ns` is named as a value of the whole call
  = hint: a variadic argument gives a value per item of the variadic key: name it as a placeholder that only the variadic key names, or rename it
scripts/bad/key_check_variadic.lua:7:1: error: the script does not start with the input checks its header declares
  = hint: every script checks its key and argument counts and every argument right after the header, with code generated from it; run `redis-patterns fix <scripts folder>` to write them from the header"#
    );
}

/// `len:` and `hex:` go with strings and bytes, and take a length or a number of digits.
#[test]
fn bad_length_and_hex() {
    let twice = "give one constraint on the values (a range, `non-empty`, `a|b|c`, `len:A..` or \
                 `hex:N`) and, on a variadic argument, one range for how many values it takes";
    let digits = "write how many hexadecimal digits the value holds, from 1 to 1024: `hex:32` for \
                  128 bits";
    assert_eq!(
        bad("length_and_hex"),
        format!(
            r#"scripts/bad/length_and_hex.lua:2:20: error: `len:1..` on a `int` argument
  = hint: `len:` and `hex:` go with `string` and `bytes`
scripts/bad/length_and_hex.lua:3:23: error: `hex:0` is not a number of hex digits
  = hint: {digits}
scripts/bad/length_and_hex.lua:4:22: error: `hex:abc` is not a number of hex digits
  = hint: {digits}
scripts/bad/length_and_hex.lua:5:23: error: `len:5..=2` is not a length in bytes
  = hint: bound the length from 0 to 2^32 - 1 bytes, smaller bound first: `len:16..` or `len:1..=64`
scripts/bad/length_and_hex.lua:6:32: error: `hex:4` constrains the argument a second time
  = hint: {twice}
scripts/bad/length_and_hex.lua:9:1: error: the script does not start with the input checks its header declares
  = hint: every script checks its key and argument counts and every argument right after the header, with code generated from it; run `redis-patterns fix <scripts folder>` to write them from the header"#
        )
    );
}

/// A `@default` names an argument or a placeholder, once, with a value its rule takes or
/// another argument's.
#[test]
fn bad_defaults() {
    assert_eq!(
        bad("defaults"),
        r#"scripts/bad/defaults.lua:6:5: error: the default `0` of `capacity` breaks its argument's rule
  = hint: give the value as the argument is sent: an integer in the one rule, milliseconds for `ms`, 1 or 0 for `bool`
scripts/bad/defaults.lua:7:5: error: `@default size` names no argument or placeholder
  = hint: give a default to an argument of the script, or to a placeholder of a key's template
scripts/bad/defaults.lua:8:5: error: `=price` names no other argument of the script
  = hint: `=<argument>` gives the default the value of another argument
scripts/bad/defaults.lua:10:5: error: `user` has two `@default`s
  = hint: give each argument or placeholder one default
scripts/bad/defaults.lua:11:5: error: the default `''` of `action` breaks a placeholder's value, which is never empty
  = hint: give the value as the argument is sent: an integer in the one rule, milliseconds for `ms`, 1 or 0 for `bool`
scripts/bad/defaults.lua:13:1: error: the script does not start with the input checks its header declares
  = hint: every script checks its key and argument counts and every argument right after the header, with code generated from it; run `redis-patterns fix <scripts folder>` to write them from the header"#
    );
}

#[test]
fn bad_key_built_in_lua() {
    assert_eq!(
        bad("key_built_in_lua"),
        r#"scripts/bad/key_built_in_lua.lua:16:19: error: key built inside Lua: the key of `GET` is a string literal
  = hint: pass every key in `KEYS`; derive it in the caller
scripts/bad/key_built_in_lua.lua:17:20: error: key built inside Lua: the key of `HGET` is a `..` concatenation
  = hint: pass every key in `KEYS`; derive it in the caller
scripts/bad/key_built_in_lua.lua:18:20: error: key built inside Lua: the key of `HGET` is `meta`, built with `..`
  = hint: pass every key in `KEYS`; derive it in the caller
scripts/bad/key_built_in_lua.lua:21:20: error: key built inside Lua: the key of `TYPE` is `safe`, built with `..`
  = hint: pass every key in `KEYS`; derive it in the caller"#
    );
}

#[test]
fn bad_key_count_not_variadic() {
    assert_eq!(
        bad("key_count_not_variadic"),
        r#"scripts/bad/key_count_not_variadic.lua:2:22: error: `1..=10` on a key that is not variadic
  = hint: a range after the type counts the keys of a variadic key: `--- @key lock... <type> 1..=10 <doc>`"#
    );
}

/// A key's type is required: in the old grammar the doc's first word is taken for it.
#[test]
fn bad_key_types() {
    assert_eq!(
        bad("key_types"),
        r#"scripts/bad/key_types.lua:2:15: error: unknown key type `the`
  = hint: the key types are `string`, `hash`, `list`, `set`, `zset`, `stream` and `any`: what `TYPE` answers for the key (`any` for a key the script only deletes, whatever it holds)
scripts/bad/key_types.lua:3:15: error: unknown key type `lists`
  = hint: did you mean `list`? the key types are `string`, `hash`, `list`, `set`, `zset`, `stream` and `any`: what `TYPE` answers for the key (`any` for a key the script only deletes, whatever it holds)
scripts/bad/key_types.lua:4:5: error: `@key bare` has no type
  = hint: write `--- @key bare <type> <doc>`; the key types are `string`, `hash`, `list`, `set`, `zset`, `stream` and `any`: what `TYPE` answers for the key (`any` for a key the script only deletes, whatever it holds)
scripts/bad/key_types.lua:4:5: error: `@key bare` has no doc
  = hint: say what the key holds: `--- @key bare <type> <doc>`"#
    );
}

#[test]
fn bad_keyspace_scan() {
    assert_eq!(
        bad("keyspace_scan"),
        r#"scripts/bad/keyspace_scan.lua:13:25: error: `KEYS` walks the keyspace inside a script
  = hint: pass the keys the script needs in `KEYS`; iterate the keyspace in the caller, a bounded batch at a time
scripts/bad/keyspace_scan.lua:14:12: error: `SCAN` walks the keyspace inside a script
  = hint: pass the keys the script needs in `KEYS`; iterate the keyspace in the caller, a bounded batch at a time"#
    );
}

#[test]
fn bad_loaders() {
    assert_eq!(
        bad("loaders"),
        r#"scripts/bad/loaders.lua:11:14: error: `require` loads code from outside the script
  = hint: scripts are self-contained so they can be copied and run alone; inline the code
scripts/bad/loaders.lua:12:1: error: `dofile` loads code from outside the script
  = hint: scripts are self-contained so they can be copied and run alone; inline the code
scripts/bad/loaders.lua:13:11: error: `loadstring` compiles code at run time
  = hint: write the code out in the script, where it can be read and checked"#
    );
}

/// A name longer than 32 characters is refused, so that the generated checks keep their
/// lines to 120 characters; 32 is accepted. A name that is not snake_case is refused as
/// such, whatever its length (17 characters of two bytes each are not "longer than 32").
/// The names are kept in the model, so the missing input checks are reported too.
#[test]
fn bad_long_names() {
    assert_eq!(
        bad("long_names"),
        r#"scripts/bad/long_names.lua:2:10: error: `lock_that_guards_the_shared_state` is longer than 32 characters
  = hint: pick a shorter name: the generated checks keep their lines to 120 characters
scripts/bad/long_names.lua:3:10: error: `sources_that_are_merged_into_dest` is longer than 32 characters
  = hint: pick a shorter name: the generated checks keep their lines to 120 characters
scripts/bad/long_names.lua:4:10: error: `token_that_the_lock_was_taken_by_` is longer than 32 characters
  = hint: pick a shorter name: the generated checks keep their lines to 120 characters
scripts/bad/long_names.lua:6:10: error: `ééééééééééééééééé` is not a valid name
  = hint: names are snake_case: a lower-case letter, then lower-case letters, digits and `_`
scripts/bad/long_names.lua:7:10: error: `Token_that_the_lock_was_taken_by_x` is not a valid name
  = hint: names are snake_case: a lower-case letter, then lower-case letters, digits and `_`
scripts/bad/long_names.lua:10:1: error: the script does not start with the input checks its header declares
  = hint: every script checks its key and argument counts and every argument right after the header, with code generated from it; run `redis-patterns fix <scripts folder>` to write them from the header"#
    );
}

#[test]
fn bad_many() {
    assert_eq!(
        bad("many"),
        r#"scripts/bad/many.lua:4:16: error: unknown type `strng`
  = hint: did you mean `string`? the argument types are `string`, `bytes`, `int`, `uint`, `float`, `bool`, `ms` and `json`; `?` after `int`, `uint`, `float` or `ms` makes an empty string mean none; `...` after the last argument's type makes it variadic
scripts/bad/many.lua:5:5: error: argument `ttl` (`ARGV[2]`) is declared but never used
  = hint: remove the `@arg` tag, or bind it: `local ttl = ARGV[2]`
scripts/bad/many.lua:6:13: error: unknown return type `boo`
  = hint: did you mean `bool`? the return types are `nil`, `bool`, `int`, `int?`, `uint`, `uint?`, `decimal`, `decimal?`, `float`, `float?`, `string`, `string?`, `bytes`, `bytes?`, `[string]`, `[bytes]`, `[int]`, `[decimal]` and `[[decimal]]`, tuples such as `(int, string?)` (of scalars, lists of them, and rows of them: `(uint, [bytes])`), a tuple or nil such as `(string, uint)?`, and rows of scalars such as `[(string, float)]`
scripts/bad/many.lua:7:5: error: error `BAD_TTL` is declared but never raised
  = hint: raise it with `redis.error_reply('BAD_TTL <message>')`, or remove the tag
scripts/bad/many.lua:9:7: error: binds `KEYS[1]` to `lock_key`, but the header names it `lock`
  = hint: rename the local to `lock`, or rename it in the header
scripts/bad/many.lua:11:15: error: `KEYS[2]` is used but the header declares 1 key
  = hint: declare it with `--- @key <name> <type> <doc>`, in `KEYS` order
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

/// Input checks further down than right after the header are reported where they start.
#[test]
fn bad_misplaced_input_checks() {
    assert_eq!(
        bad("misplaced_input_checks"),
        r#"scripts/bad/misplaced_input_checks.lua:10:1: error: the input checks do not start right after the header
  = hint: nothing may run before them; run `redis-patterns fix <scripts folder>` to write them from the header"#
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

/// An `ms` argument whose range is written after another constraint has a range: whether
/// the range is refused (empty, beyond what `ms` holds) or kept, it does not also "need a
/// range"; one with no range word anywhere does. The model keeps the arguments, so the
/// missing input checks are reported too.
#[test]
fn bad_ms_range_refused() {
    let ms_hint = "`ms` holds 0 to 2^53 - 1: a duration stays below 2^53 ms, where Lua's numbers \
                   are exact (Redis refuses expiries long before that)";
    assert_eq!(
        bad("ms_range_refused"),
        format!(
            r#"scripts/bad/ms_range_refused.lua:2:18: error: `non-empty` on a `ms` argument
  = hint: `non-empty` goes with `string`, `bytes` and `json`
scripts/bad/ms_range_refused.lua:2:28: error: the range `10..=1` is empty
  = hint: write the smaller bound first: `1..=1000`
scripts/bad/ms_range_refused.lua:3:18: error: a list of choices on a `ms` argument
  = hint: a list of choices (`a|b|c`) goes with `string`
scripts/bad/ms_range_refused.lua:3:22: error: the range `1..=2^53` goes beyond what `ms` holds
  = hint: {ms_hint}
scripts/bad/ms_range_refused.lua:4:19: error: `non-empty` on a `ms` argument
  = hint: `non-empty` goes with `string`, `bytes` and `json`
scripts/bad/ms_range_refused.lua:5:16: error: `@arg grace ms?` needs a range
  = hint: say which durations are accepted, in milliseconds: `--- @arg grace ms? 1..=10^15-1 <doc>`
scripts/bad/ms_range_refused.lua:5:20: error: `non-empty` on a `ms` argument
  = hint: `non-empty` goes with `string`, `bytes` and `json`
scripts/bad/ms_range_refused.lua:8:1: error: the script does not start with the input checks its header declares
  = hint: every script checks its key and argument counts and every argument right after the header, with code generated from it; run `redis-patterns fix <scripts folder>` to write them from the header"#
        )
    );
}

/// A variadic `ms` needs no range. The model keeps `ttl` and `grace` without one, so the
/// input checks are compared too, and the fixture has none.
#[test]
fn bad_ms_without_range() {
    assert_eq!(
        bad("ms_without_range"),
        r#"scripts/bad/ms_without_range.lua:3:14: error: `@arg ttl ms` needs a range
  = hint: say which durations are accepted, in milliseconds: `--- @arg ttl ms 1..=10^15-1 <doc>`
scripts/bad/ms_without_range.lua:4:16: error: `@arg grace ms?` needs a range
  = hint: say which durations are accepted, in milliseconds: `--- @arg grace ms? 1..=10^15-1 <doc>`
scripts/bad/ms_without_range.lua:8:1: error: the script does not start with the input checks its header declares
  = hint: every script checks its key and argument counts and every argument right after the header, with code generated from it; run `redis-patterns fix <scripts folder>` to write them from the header"#
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

/// Checks written by hand, in the old style, are not the generated ones.
#[test]
fn bad_no_input_checks() {
    assert_eq!(
        bad("no_input_checks"),
        r#"scripts/bad/no_input_checks.lua:7:1: error: the script does not start with the input checks its header declares
  = hint: every script checks its key and argument counts and every argument right after the header, with code generated from it; run `redis-patterns fix <scripts folder>` to write them from the header"#
    );
}

#[test]
fn bad_non_empty_on_int() {
    assert_eq!(
        bad("non_empty_on_int"),
        r#"scripts/bad/non_empty_on_int.lua:2:16: error: `non-empty` on a `int` argument
  = hint: `non-empty` goes with `string`, `bytes` and `json`
scripts/bad/non_empty_on_int.lua:3:18: error: `non-empty` on a `bool` argument
  = hint: `non-empty` goes with `string`, `bytes` and `json`
scripts/bad/non_empty_on_int.lua:4:33: error: `non-empty` constrains the argument a second time
  = hint: give one constraint on the values (a range, `non-empty`, `a|b|c`, `len:A..` or `hex:N`) and, on a variadic argument, one range for how many values it takes"#
    );
}

/// `#KEYS` and `#ARGV` are counts, which the input checks test; the rest still needs a
/// literal index.
#[test]
fn bad_non_literal_index() {
    assert_eq!(
        bad("non_literal_index"),
        r#"scripts/bad/non_literal_index.lua:18:29: error: `KEYS` is used without a literal index, but nothing is variadic
  = hint: index it with a literal (`KEYS[1]`), or make the last key variadic: `--- @key <name>... <type> <doc>`
scripts/bad/non_literal_index.lua:20:22: error: `KEYS` is used without a literal index, but nothing is variadic
  = hint: index it with a literal (`KEYS[1]`), or make the last key variadic: `--- @key <name>... <type> <doc>`
scripts/bad/non_literal_index.lua:21:20: error: `ARGV` is used without a literal index, but nothing is variadic
  = hint: index it with a literal (`ARGV[1]`), or make the last argument variadic: `--- @arg <name> <type>... <doc>`"#
    );
}

#[test]
fn bad_optional_misuse() {
    assert_eq!(
        bad("optional_misuse"),
        r#"scripts/bad/optional_misuse.lua:2:15: error: `string?` cannot be optional
  = hint: `?` (an empty string for none) goes with `int`, `uint`, `float` and `ms`; write `string` and accept an empty `string` instead
scripts/bad/optional_misuse.lua:3:13: error: `bool?` cannot be optional
  = hint: `?` (an empty string for none) goes with `int`, `uint`, `float` and `ms`; write `bool` and accept an empty `bool` instead
scripts/bad/optional_misuse.lua:4:14: error: `int?...` cannot be optional
  = hint: a variadic argument takes no `?`: pass no values for none"#
    );
}

#[test]
fn bad_prose_after_tags() {
    assert_eq!(
        bad("prose_after_tags"),
        r#"scripts/bad/prose_after_tags.lua:4:5: error: prose after the tags
  = hint: move it above the first tag, into the description; only the `@return` doc goes on below its tag, over indented lines"#
    );
}

/// A refused range is reported once, where it stands: an `ms` argument whose range is
/// refused (beyond the 0 to 2^53 - 1 that `ms` holds, or empty) does not also "need a
/// range". The model keeps the arguments without their ranges, so the missing input checks
/// are reported too.
#[test]
fn bad_range_beyond_type() {
    assert_eq!(
        bad("range_beyond_type"),
        r#"scripts/bad/range_beyond_type.lua:2:17: error: the range `-1..=5` goes beyond what `uint` holds
  = hint: `uint` holds 0 to 9223372036854775807
scripts/bad/range_beyond_type.lua:3:18: error: `0..=2^63` is not a range of 64-bit integers
  = hint: write a range as `A..=B` (or `A..` for no upper bound), with bounds such as `1000`, `10_000`, `2^32` or `10^15-1`
scripts/bad/range_beyond_type.lua:4:18: error: the range `1..=2^53` goes beyond what `ms` holds
  = hint: `ms` holds 0 to 2^53 - 1: a duration stays below 2^53 ms, where Lua's numbers are exact (Redis refuses expiries long before that)
scripts/bad/range_beyond_type.lua:6:18: error: the range `-1..=5` goes beyond what `ms` holds
  = hint: `ms` holds 0 to 2^53 - 1: a duration stays below 2^53 ms, where Lua's numbers are exact (Redis refuses expiries long before that)
scripts/bad/range_beyond_type.lua:7:19: error: the range `10..=1` is empty
  = hint: write the smaller bound first: `1..=1000`
scripts/bad/range_beyond_type.lua:10:1: error: the script does not start with the input checks its header declares
  = hint: every script checks its key and argument counts and every argument right after the header, with code generated from it; run `redis-patterns fix <scripts folder>` to write them from the header"#
    );
}

#[test]
fn bad_range_empty() {
    assert_eq!(
        bad("range_empty"),
        r#"scripts/bad/range_empty.lua:3:25: error: `5..=1` is not a count
  = hint: count the values of a variadic from 0 to 2^32 - 1, smaller bound first: `1..=1000`
scripts/bad/range_empty.lua:4:16: error: the range `10..=1` is empty
  = hint: write the smaller bound first: `1..=1000`
scripts/bad/range_empty.lua:5:17: error: `1..10` is not a range
  = hint: write a range as `A..=B` (or `A..` for no upper bound), with bounds such as `1000`, `10_000`, `2^32` or `10^15-1`
scripts/bad/range_empty.lua:6:22: error: `0..=2^32` is not a count
  = hint: count the values of a variadic from 0 to 2^32 - 1, smaller bound first: `1..=1000`"#
    );
}

#[test]
fn bad_range_on_string() {
    assert_eq!(
        bad("range_on_string"),
        r#"scripts/bad/range_on_string.lua:2:22: error: a range on a `string` argument
  = hint: ranges go with `int`, `uint` and `ms`
scripts/bad/range_on_string.lua:3:22: error: a range on a `float` argument
  = hint: ranges go with `int`, `uint` and `ms`
scripts/bad/range_on_string.lua:4:18: error: a range on a `bool` argument
  = hint: ranges go with `int`, `uint` and `ms`
scripts/bad/range_on_string.lua:5:19: error: a range on a `json` argument
  = hint: ranges go with `int`, `uint` and `ms`"#
    );
}

/// The reply is described once, by `@return`: a prose line that opens with `Reply` (and
/// so restates it) is refused, whatever follows the word; a line of other words is prose.
#[test]
fn bad_reply_in_prose() {
    let hint = "the `@return` doc is the one description of the reply: move what this line \
                says there, and keep in the prose what the script does";
    assert_eq!(
        bad("reply_in_prose"),
        format!(
            r#"scripts/bad/reply_in_prose.lua:4:5: error: the prose describes the reply in a `Reply` line
  = hint: {hint}
scripts/bad/reply_in_prose.lua:5:5: error: the prose describes the reply in a `Reply` line
  = hint: {hint}"#
        )
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
  = hint: did you mean `float`? the return types are `nil`, `bool`, `int`, `int?`, `uint`, `uint?`, `decimal`, `decimal?`, `float`, `float?`, `string`, `string?`, `bytes`, `bytes?`, `[string]`, `[bytes]`, `[int]`, `[decimal]` and `[[decimal]]`, tuples such as `(int, string?)` (of scalars, lists of them, and rows of them: `(uint, [bytes])`), a tuple or nil such as `(string, uint)?`, and rows of scalars such as `[(string, float)]`
scripts/bad/return_types.lua:4:5: error: `@return` is declared twice
  = hint: a script has one `@return`; the first is on line 2
scripts/bad/return_types.lua:4:13: error: the tuple `(int, int, int, int, int, int, int, int, int, int, int, int, int)` has 13 elements, more than the 12 a Rust client reads as one tuple
  = hint: group values of one kind in a list: `([int], uint, …)`"#
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
        r#"scripts/bad/tag_syntax.lua:2:5: error: `@key` needs a name, a type and a doc
  = hint: write `--- @key <name> <type> <what the key holds>`
scripts/bad/tag_syntax.lua:3:10: error: `Src` is not a valid name
  = hint: names are snake_case: a lower-case letter, then lower-case letters, digits and `_`
scripts/bad/tag_syntax.lua:4:5: error: only the last `@key` may be variadic, not `members`
  = hint: remove the `...`, or move this key to the end
scripts/bad/tag_syntax.lua:5:5: error: `@key dest` has no doc
  = hint: say what the key holds: `--- @key dest <type> <doc>`
scripts/bad/tag_syntax.lua:6:10: error: `type` is a Rust keyword
  = hint: pick another name: the generated wrapper takes a parameter of the same name
scripts/bad/tag_syntax.lua:7:5: error: `@arg` needs a name, a type and a doc
  = hint: write `--- @arg <name> <type> <what it means>`
scripts/bad/tag_syntax.lua:8:5: error: `@arg count` has no type
  = hint: write `--- @arg count <type> <doc>`; the argument types are `string`, `bytes`, `int`, `uint`, `float`, `bool`, `ms` and `json`; `?` after `int`, `uint`, `float` or `ms` makes an empty string mean none; `...` after the last argument's type makes it variadic
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
        r#"scripts/bad/undeclared_index.lua:13:14: error: `KEYS[2]` is used but the header declares 1 key
  = hint: declare it with `--- @key <name> <type> <doc>`, in `KEYS` order
scripts/bad/undeclared_index.lua:14:13: error: `ARGV[1]` is used but the header declares no arguments
  = hint: declare it with `--- @arg <name> <type> <doc>`, in `ARGV` order
scripts/bad/undeclared_index.lua:15:17: error: `KEYS[0]` is always nil
  = hint: Lua arrays start at 1: the first is `KEYS[1]`"#
    );
}

#[test]
fn bad_unknown_tag() {
    assert_eq!(
        bad("unknown_tag"),
        r#"scripts/bad/unknown_tag.lua:2:5: error: unknown tag `@retrun`
  = hint: did you mean `@return`? the tags are `@key`, `@arg`, `@return`, `@error`, `@uses`, `@default`, `@clock` and `@complexity`
scripts/bad/unknown_tag.lua:3:5: error: unknown tag `@params`
  = hint: the tags are `@key`, `@arg`, `@return`, `@error`, `@uses`, `@default`, `@clock` and `@complexity`
scripts/bad/unknown_tag.lua:4:1: error: the header has no `@return`
  = hint: declare the reply with `--- @return <type> <doc>`; the header ends at the first line that does not start with `---`"#
    );
}

#[test]
fn bad_unknown_types() {
    assert_eq!(
        bad("unknown_types"),
        r#"scripts/bad/unknown_types.lua:3:16: error: unknown type `str`
  = hint: did you mean `string`? the argument types are `string`, `bytes`, `int`, `uint`, `float`, `bool`, `ms` and `json`; `?` after `int`, `uint`, `float` or `ms` makes an empty string mean none; `...` after the last argument's type makes it variadic
scripts/bad/unknown_types.lua:4:16: error: unknown type `integer...`
  = hint: did you mean `int`? the argument types are `string`, `bytes`, `int`, `uint`, `float`, `bool`, `ms` and `json`; `?` after `int`, `uint`, `float` or `ms` makes an empty string mean none; `...` after the last argument's type makes it variadic
scripts/bad/unknown_types.lua:5:13: error: unknown type `strin` in the tuple `(int, strin)`
  = hint: did you mean `string`? tuple elements are `bool`, `int`, `int?`, `uint`, `uint?`, `decimal`, `decimal?`, `float`, `float?`, `string`, `string?`, `bytes` and `bytes?`, lists of them (`[string]`, `[bytes]`, `[int]` and `[decimal]`), and rows of them such as `[(string, bytes)]`"#
    );
}

#[test]
fn bad_unterminated() {
    assert_eq!(
        bad("unterminated"),
        r#"scripts/bad/unterminated.lua:11:11: error: unterminated string
  = hint: close it with `'` on the same line; write a line break as `\n`
scripts/bad/unterminated.lua:12:13: error: escape sequence `\300` is too large
  = hint: decimal escapes go up to `\255`
scripts/bad/unterminated.lua:12:22: error: malformed number `1.2.3`
  = hint: write a decimal (`42`, `1.5`, `1e3`) or hexadecimal (`0xff`) number
scripts/bad/unterminated.lua:13:13: error: unexpected character `!`
  = hint: Lua writes not-equal as `~=` and negation as `not`
scripts/bad/unterminated.lua:14:1: error: unterminated long comment
  = hint: close it with `]==]`"#
    );
}

/// Input checks without their first marker (its line deleted) are reported where they end,
/// rather than as missing, which `fix` would answer with a second block; the body is checked
/// all the same.
#[test]
fn bad_unopened_input_checks() {
    assert_eq!(
        bad("unopened_input_checks"),
        r#"scripts/bad/unopened_input_checks.lua:17:1: error: the input checks end here but never start
  = hint: delete what is left of them above this line, or start them with their first line; run `redis-patterns fix <scripts folder>` to write them from the header"#
    );
}

/// Input checks without their last marker are reported where they start; the body is
/// checked all the same.
#[test]
fn bad_unterminated_input_checks() {
    assert_eq!(
        bad("unterminated_input_checks"),
        r#"scripts/bad/unterminated_input_checks.lua:8:1: error: the input checks start here but never end
  = hint: end them with `-- End of the generated input checks.`, or delete them and run `redis-patterns fix <scripts folder>` to write them from the header"#
    );
}

/// Without the input checks, which would bind `lock` and `ttl`, the one error says that
/// they are missing: not the unused declarations that follow from it.
#[test]
fn bad_unused_declaration() {
    assert_eq!(
        bad("unused_declaration"),
        r#"scripts/bad/unused_declaration.lua:8:1: error: the script does not start with the input checks its header declares
  = hint: every script checks its key and argument counts and every argument right after the header, with code generated from it; run `redis-patterns fix <scripts folder>` to write them from the header"#
    );
}

#[test]
fn bad_writes_in_no_writes() {
    assert_eq!(
        bad("writes_in_no_writes"),
        r#"scripts/bad/writes_in_no_writes.lua:16:12: error: `SET` writes, but the script is flagged `no-writes`
  = hint: remove `no-writes` from the `#!lua flags=` line, or move the write to another script
scripts/bad/writes_in_no_writes.lua:17:13: error: `PEXPIRE` writes, but the script is flagged `no-writes`
  = hint: remove `no-writes` from the `#!lua flags=` line, or move the write to another script
scripts/bad/writes_in_no_writes.lua:18:12: error: the command name is not a string literal, so `no-writes` cannot be checked
  = hint: name the command with a string literal: `redis.call('GET', key)`"#
    );
}
