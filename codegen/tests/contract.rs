//! The input checks generated from a header (`contract`): where `fix` writes them, that
//! fixing twice changes nothing more, and what the generated Lua holds.

use std::path::Path;

use redis_patterns_codegen::contract;
use redis_patterns_codegen::model::{
    Arg, ArgType, Count, ErrorCode, Header, Key, KeyType, Return, ReturnType, Rule, ScriptFile,
};
use redis_patterns_codegen::{Config, Fixed, analyze};

fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"))
}

fn read(relative: &str) -> String {
    let path = fixtures().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn script_file(family: &str, op: &str, source: &str) -> ScriptFile {
    ScriptFile {
        family: family.to_string(),
        op: op.to_string(),
        path: format!("scripts/{family}/{op}.lua"),
        source: source.to_string(),
        shared: vec![],
    }
}

const GOOD: &[(&str, &str)] = &[
    ("counter", "incr_capped"),
    ("identity_lock", "lease"),
    ("identity_lock", "release"),
    ("rate_limiter", "take"),
    ("set_ops", "union_store"),
    ("timeline", "post"),
];

/// A good fixture's source and its header.
fn good(family: &str, op: &str) -> (String, Header) {
    let source = read(&format!("good/{family}/{op}.lua"));
    let script = analyze(&script_file(family, op, &source))
        .unwrap_or_else(|d| panic!("{family}/{op} should pass: {d:#?}"));
    (source, script.header)
}

/// `source` without its input checks (their lines, line ends included).
fn without_block(source: &str) -> String {
    let mut inside = false;
    let mut out = String::new();
    for line in source.split_inclusive('\n') {
        let text = line.trim_end_matches(['\r', '\n']);
        if text == contract::BEGIN {
            inside = true;
        }
        if !inside {
            out.push_str(line);
        }
        if text == contract::END {
            inside = false;
        }
    }
    assert_ne!(out, source, "no input checks to remove");
    out
}

/// `contract::fix`, which must succeed.
fn fix(source: &str, header: &Header) -> String {
    contract::fix(source, header).unwrap_or_else(|e| panic!("fix refused: {e}"))
}

/// A header with these keys and arguments, and nothing else of note.
fn header(keys: Vec<Key>, args: Vec<Arg>) -> Header {
    Header {
        flags: vec![],
        summary: "Probes the input checks.".to_string(),
        description: vec![],
        keys,
        args,
        returns: Return {
            ty: ReturnType::Nil,
            doc: "nothing".to_string(),
        },
        errors: vec![],
        clock: None,
        complexity: "O(1)".to_string(),
        uses: vec![],
        defaults: vec![],
    }
}

fn key(name: &str) -> Key {
    Key {
        name: name.to_string(),
        ty: KeyType::String,
        doc: "a key".to_string(),
        variadic: false,
        count: Count::ONE,
        template: None,
    }
}

fn keys(name: &str, count: Count) -> Key {
    Key {
        variadic: true,
        count,
        ..key(name)
    }
}

fn arg(name: &str, ty: ArgType, rule: Rule) -> Arg {
    Arg {
        name: name.to_string(),
        ty,
        optional: false,
        rule,
        doc: "an argument".to_string(),
        variadic: false,
        count: Count::ONE,
    }
}

fn optional(name: &str, ty: ArgType, rule: Rule) -> Arg {
    Arg {
        optional: true,
        ..arg(name, ty, rule)
    }
}

fn values(name: &str, ty: ArgType, rule: Rule, count: Count) -> Arg {
    Arg {
        variadic: true,
        count,
        ..arg(name, ty, rule)
    }
}

fn range(min: i64, max: i64) -> Rule {
    Rule::Range { min, max }
}

fn one_of(options: &[&str]) -> Rule {
    Rule::OneOf(options.iter().map(|o| o.to_string()).collect())
}

/// Every good fixture already holds the block its header declares, `fix` writes it back
/// when it is gone, and fixing what `fix` wrote changes nothing.
#[test]
fn fix_restores_a_removed_block_and_is_idempotent() {
    for (family, op) in GOOD {
        let (source, header) = good(family, op);
        assert_eq!(fix(&source, &header), source, "{family}/{op}");
        let bare = without_block(&source);
        let once = fix(&bare, &header);
        assert_eq!(once, source, "{family}/{op}");
        assert_eq!(fix(&once, &header), once, "{family}/{op}");
    }
}

/// The block goes right after the header: after the last `---` line, before the body.
#[test]
fn fix_inserts_a_missing_block_right_after_the_header() {
    let (source, header) = good("identity_lock", "release");
    let fixed = fix(&without_block(&source), &header);
    let lines: Vec<&str> = fixed.lines().collect();
    // release.lua's header is its first 10 lines.
    let first_body_line = lines.iter().position(|l| !l.starts_with("---"));
    assert_eq!(first_body_line, Some(10));
    assert_eq!(lines[10], contract::BEGIN);
    let end = lines.iter().position(|l| *l == contract::END).expect("END");
    assert_eq!(lines[end + 1], "if redis.call('GET', lock) == token then");
}

/// A `#!lua` line comes before the header, and the block after both.
#[test]
fn fix_inserts_the_block_after_the_shebang_and_the_header() {
    let (source, header) = good("identity_lock", "lease");
    let fixed = fix(&without_block(&source), &header);
    assert_eq!(fixed, source);
    let lines: Vec<&str> = fixed.lines().collect();
    // The `#!lua` line, then 10 header lines.
    assert_eq!(lines[0], "#!lua flags=no-writes,allow-stale");
    assert_eq!(lines[11], contract::BEGIN);
    assert!(lines[1..11].iter().all(|l| l.starts_with("---")));
}

/// A file with Windows line ends keeps them, in the lines `fix` writes too.
#[test]
fn fix_keeps_crlf_line_endings() {
    let (source, header) = good("set_ops", "union_store");
    let crlf = source.replace('\n', "\r\n");
    let fixed = fix(&without_block(&crlf), &header);
    assert_eq!(fixed, crlf);
    assert!(!fixed.replace("\r\n", "").contains('\n'));
    assert_eq!(fix(&fixed, &header), fixed);
}

/// A file without a final line end gets none.
#[test]
fn fix_keeps_a_missing_final_line_end() {
    let (source, header) = good("identity_lock", "release");
    let source = source.strip_suffix('\n').expect("a final line end");
    assert_eq!(fix(&without_block(source), &header), source);
    assert_eq!(fix(source, &header), source);
}

/// After a header change, `fix` rewrites the block and leaves the body alone; the old
/// header's block comes back with the old header.
#[test]
fn fix_replaces_an_outdated_block() {
    let (source, header) = good("identity_lock", "release");
    let mut loose = header.clone();
    loose.args[0].rule = Rule::Any;
    let check = "if token == '' then\n  \
                 return redis.error_reply('BAD_TOKEN must not be empty')\nend\n";
    assert_eq!(source.matches(check).count(), 1);
    let fixed = fix(&source, &loose);
    assert_eq!(fixed, source.replace(check, ""));
    assert_eq!(fix(&fixed, &header), source);
}

/// A body that calls a helper of the input checks names it in `@uses`, and gets it pasted
/// before the block, even when no argument needs it; a field of the same name is not a
/// call of it. The block defines no function.
#[test]
fn fix_pastes_the_helpers_the_body_names() {
    let (source, mut header) = good("identity_lock", "release");
    let calls = source.replace("return 0\n", "return shown(token) .. cjson.integer\n");
    let found = diagnostics(&calls);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains("error: the script calls the shared helper `shown` without naming it"),
        "{found:#?}"
    );
    header.uses = vec!["shown".to_string()];
    let named = calls.replace("--- @complexity", "--- @uses shown\n--- @complexity");
    let fixed = fix(&without_block(&named), &header);
    assert_eq!(helpers_in(&fixed), ["shown"]);
    let lines: Vec<&str> = fixed.lines().collect();
    let pasted = lines
        .iter()
        .position(|l| l.starts_with("-- Helpers shared"))
        .unwrap();
    let block = lines.iter().position(|l| *l == contract::BEGIN).unwrap();
    assert_eq!(lines[pasted - 1], "--- @complexity O(1)");
    assert!(pasted < block, "the helpers come before the block");
    assert_eq!(helpers_in(&lines[block..].join("\n")), Vec::<&str>::new());
    let script = analyze(&script_file("identity_lock", "release", &fixed)).map(|s| s.header);
    assert_eq!(script, Ok(header));
}

/// The names of the `local function`s in `lua`.
fn helpers_in(lua: &str) -> Vec<&str> {
    lua.lines()
        .filter_map(|l| l.strip_prefix("local function "))
        .map(|l| l.split('(').next().unwrap_or(l))
        .collect()
}

/// The block calls a helper only when a check needs it: `integer` for int, uint and ms
/// arguments beyond ±(2^53 - 1), `float` for float ones, `shown` when a message shows the
/// value. `fix` pastes those, with those they call (`decimal_less` for `integer`) and
/// those the header names in `@uses`, and only those (luacheck refuses unused ones).
#[test]
fn the_block_calls_only_the_helpers_it_needs() {
    let cases: Vec<(Vec<Arg>, &[&str], &[&str])> = vec![
        (vec![], &[], &[]),
        (
            vec![
                arg("name", ArgType::String, Rule::Any),
                arg("data", ArgType::Bytes, Rule::NonEmpty),
                arg("doc", ArgType::Json, Rule::NonEmpty),
                values("rest", ArgType::String, Rule::NonEmpty, Count::ANY),
            ],
            &[],
            &[],
        ),
        (
            vec![arg("mode", ArgType::String, one_of(&["a", "b"]))],
            &["shown"],
            &["shown"],
        ),
        (
            vec![arg("on", ArgType::Bool, Rule::Any)],
            &["shown"],
            &["shown"],
        ),
        (
            vec![arg("ratio", ArgType::Float, Rule::Any)],
            &["float", "shown"],
            &["float", "shown"],
        ),
        (
            vec![optional("ratio", ArgType::Float, Rule::Any)],
            &["float", "shown"],
            &["float", "shown"],
        ),
        (
            vec![arg("n", ArgType::Int, Rule::Any)],
            &["integer", "shown"],
            &["decimal_less", "integer", "shown"],
        ),
        (
            vec![values("ids", ArgType::Uint, Rule::Any, Count::ANY)],
            &["integer", "shown"],
            &["decimal_less", "integer", "shown"],
        ),
        (
            vec![optional("wait", ArgType::Ms, range(1, 1000))],
            &["shown"],
            &["shown"],
        ),
        (
            vec![
                arg("n", ArgType::Int, range(-(1 << 53) + 1, (1 << 53) - 1)),
                arg("m", ArgType::Int, range(0, 1 << 53)),
            ],
            &["integer", "shown"],
            &["decimal_less", "integer", "shown"],
        ),
    ];
    for (args, called, pasted) in cases {
        let names: Vec<String> = args.iter().map(|a| a.name.clone()).collect();
        let header = header(vec![key("k")], args);
        assert_eq!(contract::helpers_called(&header), called, "{names:?}");
        let block = contract::render(&header);
        assert_eq!(helpers_in(&block), Vec::<&str>::new(), "{names:?}");
        let body = "--- A script.\n--- @return nil\n--- @complexity O(1)\nreturn nil\n";
        assert_eq!(helpers_in(&fix(body, &header)), pasted, "{names:?}");
    }
    // What the body names comes too, with what it calls.
    for (uses, pasted) in [
        (&["safe_integer"][..], &["safe_integer"][..]),
        (&["integer"], &["decimal_less", "integer"]),
        (&["decimal_less"], &["decimal_less"]),
        (&["float"], &["float"]),
        (&["shown"], &["shown"]),
    ] {
        let mut header = header(
            vec![key("k")],
            vec![arg("name", ArgType::String, Rule::Any)],
        );
        header.uses = uses.iter().map(|u| u.to_string()).collect();
        let body = "--- A script.\n--- @return nil\n--- @complexity O(1)\nreturn nil\n";
        assert_eq!(helpers_in(&fix(body, &header)), pasted, "{uses:?}");
    }
}

/// The codes the block raises: `BAD_ARGS`, then `BAD_<NAME>` for each argument whose
/// values it checks (a string, bytes or json without a constraint has none to check),
/// then `BAD_KEYS` when a key has a template.
#[test]
fn raised_codes_follow_the_arguments() {
    let header = header(
        vec![key("k")],
        vec![
            arg("name", ArgType::String, Rule::Any),
            arg("token", ArgType::String, Rule::NonEmpty),
            arg("data", ArgType::Bytes, Rule::Any),
            arg("on", ArgType::Bool, Rule::Any),
            optional("wait", ArgType::Ms, range(1, 10)),
            values("doc", ArgType::Json, Rule::Any, Count::ANY),
        ],
    );
    assert_eq!(
        contract::raised_codes(&header),
        ["BAD_ARGS", "BAD_TOKEN", "BAD_ON", "BAD_WAIT"]
    );
    let (_, take) = good("rate_limiter", "take");
    assert_eq!(
        contract::raised_codes(&take),
        [
            "BAD_ARGS",
            "BAD_CAPACITY",
            "BAD_PER_SECOND",
            "BAD_COST",
            "BAD_KEYS"
        ]
    );
}

/// The lines of `block` longer than luacheck's limit of 120 characters.
fn too_long(block: &str) -> Vec<&str> {
    block.lines().filter(|l| l.len() > 120).collect()
}

/// The longest key or argument name the header accepts.
const LONGEST_NAME: usize = 32;

/// `stem`, padded with `_x…` to the longest name the header accepts.
fn longest(stem: &str) -> String {
    let name = format!("{stem}_{}", "x".repeat(LONGEST_NAME - 1 - stem.len()));
    assert_eq!(name.len(), LONGEST_NAME);
    name
}

/// The choices of the long lists below.
const CHOICES: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett",
    "kilo", "lima", "mike", "november", "oscar",
];

/// luacheck's limit holds for the longest names, the widest ranges, long lists of choices
/// and the largest counts: conditions wrap, and messages split into several literals.
#[test]
fn generated_lines_fit_in_120_columns() {
    let largest = Count {
        min: 1,
        max: Some(u32::MAX),
    };
    let header = header(
        vec![
            key(&longest("destination")),
            keys(&longest("sources"), largest),
        ],
        vec![
            arg(&longest("lower"), ArgType::Int, range(i64::MIN, i64::MAX)),
            arg(&longest("count"), ArgType::Uint, Rule::Any),
            optional(&longest("wait"), ArgType::Ms, range(1, (1 << 53) - 1)),
            optional(&longest("limit"), ArgType::Int, range(i64::MIN, i64::MAX)),
            arg(&longest("ratio"), ArgType::Float, Rule::Any),
            optional(&longest("share"), ArgType::Float, Rule::Any),
            arg(&longest("token"), ArgType::Bytes, Rule::NonEmpty),
            arg(&longest("flag"), ArgType::Bool, Rule::Any),
            arg(&longest("mode"), ArgType::String, one_of(CHOICES)),
            arg(&longest("step"), ArgType::Ms, range(1, 1000)),
            values(
                &longest("fields"),
                ArgType::String,
                one_of(CHOICES),
                largest,
            ),
        ],
    );
    let block = contract::render(&header);
    // The long parts are there, wrapped.
    assert!(
        block.contains(
            "if #KEYS < 2 or #KEYS > 4294967296 or #ARGV < 11 or #ARGV > 4294967305 then"
        )
    );
    assert!(block.contains("local lower_xxxxxxxxxxxxxxxxxxxxxxxxxx = integer(ARGV[1], '-9223372036854775808', '9223372036854775807')"));
    assert!(block.contains("local limit_xxxxxxxxxxxxxxxxxxxxxxxxxx = integer(ARGV[4], '-9223372036854775808', '9223372036854775807')"));
    assert!(block.contains("    mode_xxxxxxxxxxxxxxxxxxxxxxxxxxx ~= 'oscar' then"));
    assert!(block.contains("ARGV[i] ~= 'oscar' then"));
    assert_eq!(too_long(&block), Vec::<&str>::new());
}

/// The tail of a wrapped message (` .. shown(name))`, ` .. #KEYS .. ' and ' .. #ARGV)`)
/// counts toward the line's width, and goes on its own line when it does not fit after the
/// last words.
#[test]
fn wrapped_messages_fit_in_120_columns_with_their_tail() {
    let bool_arg = |name: &str| header(vec![], vec![arg(name, ArgType::Bool, Rule::Any)]);
    let choice = header(
        vec![],
        vec![arg(
            "mode",
            ArgType::String,
            one_of(&[
                "sum", "min", "max", "average", "median", "first", "last", "count", "product",
                "none",
            ]),
        )],
    );
    let counts = |min: u32, max: u32| {
        header(
            vec![keys(
                "sources",
                Count {
                    min,
                    max: Some(max),
                },
            )],
            vec![values(
                "members",
                ArgType::String,
                Rule::Any,
                Count {
                    min,
                    max: Some(max),
                },
            )],
        )
    };
    for header in [
        bool_arg("keep_the_existing_members"),
        bool_arg(&longest("keep")),
        choice,
        counts(1_000_000, 4_000_000),
        counts(u32::MAX - 1, u32::MAX),
    ] {
        assert_eq!(too_long(&contract::render(&header)), Vec::<&str>::new());
    }
}

/// The check of a choice named with the longest name: its message fits on one line, but
/// not with its tail, which gets a line of its own.
#[test]
fn a_tail_that_does_not_fit_gets_its_own_line() {
    let name = longest("mode");
    let choices = one_of(&["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]);
    let block = contract::render(&header(vec![], vec![arg(&name, ArgType::String, choices)]));
    let checks: Vec<&str> = block
        .lines()
        .skip_while(|l| !l.starts_with("local "))
        .collect();
    assert_eq!(
        checks,
        [
            "local mode_xxxxxxxxxxxxxxxxxxxxxxxxxxx = ARGV[1]",
            "if mode_xxxxxxxxxxxxxxxxxxxxxxxxxxx ~= 'alpha' and mode_xxxxxxxxxxxxxxxxxxxxxxxxxxx ~= 'bravo' and",
            "    mode_xxxxxxxxxxxxxxxxxxxxxxxxxxx ~= 'charlie' and mode_xxxxxxxxxxxxxxxxxxxxxxxxxxx ~= 'delta' and",
            "    mode_xxxxxxxxxxxxxxxxxxxxxxxxxxx ~= 'echo' and mode_xxxxxxxxxxxxxxxxxxxxxxxxxxx ~= 'foxtrot' then",
            "  return redis.error_reply(",
            "      'BAD_MODE_XXXXXXXXXXXXXXXXXXXXXXXXXXX must be one of alpha, bravo, charlie, delta, echo, foxtrot, got ' ..",
            "      shown(mode_xxxxxxxxxxxxxxxxxxxxxxxxxxx))",
            "end",
            contract::END,
        ]
    );
    assert_eq!(too_long(&block), Vec::<&str>::new());
}

/// A script whose every key and argument has the longest name the header accepts, with the
/// widest ranges, a long list of choices and the largest counts: `fix` writes its block, the
/// check passes, and luacheck (when installed) finds nothing, lines of at most 120
/// characters included.
#[test]
fn a_script_with_the_longest_names_passes_the_check_and_luacheck() {
    let names: Vec<String> = [
        "destination",
        "sources",
        "lower",
        "wait",
        "ratio",
        "token",
        "flag",
        "mode",
        "fields",
    ]
    .iter()
    .map(|stem| longest(stem))
    .collect();
    let [dest, sources, lower, wait, ratio, token, flag, mode, fields] = &names[..] else {
        unreachable!()
    };
    // As many choices as fit on the header's line.
    let choices = CHOICES[..9].join("|");
    // Templates, one of a placeholder shared with `token`: the key check's lines, with the
    // longest names, wrap too.
    let mut source = format!(
        "--- Probes the longest names.\n\
         --- @key {dest} string {{<namespace>}}:<{token}> where\n\
         --- @key {sources}... set 1..=4294967295 {{<namespace>}}:items:<item> the sources\n\
         --- @arg {lower} int -2^63..=2^63-1 a bound\n\
         --- @arg {wait} ms? 1..=2^53-1 a wait\n\
         --- @arg {ratio} float? a ratio\n\
         --- @arg {token} bytes non-empty a token\n\
         --- @arg {flag} bool a flag\n\
         --- @arg {mode} string {choices} a mode\n\
         --- @arg {fields} uint... 1..=4294967295 the fields\n\
         --- @return nil nothing\n\
         --- @error BAD_ARGS bad counts\n"
    );
    for name in [lower, wait, ratio, token, flag, mode, fields] {
        source += &format!("--- @error {} bad\n", contract::error_code(name));
    }
    source += "--- @complexity O(N)\nlocal parts = {}\n";
    for (i, value) in [
        lower.clone(),
        format!("tostring({wait})"),
        format!("tostring({ratio})"),
        token.clone(),
        format!("tostring({flag})"),
        mode.clone(),
    ]
    .iter()
    .enumerate()
    {
        source += &format!("parts[{}] = {value}\n", i + 1);
    }
    source += &format!(
        "for i = 7, #ARGV do\n  \
           parts[#parts + 1] = ARGV[i]\n\
         end\n\
         redis.call('SUNIONSTORE', {dest}, unpack(KEYS, 2))\n\
         redis.call('SADD', {dest}, unpack(parts))\n\
         return nil\n"
    );
    assert_eq!(too_long(&source), Vec::<&str>::new());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("codegen-longest-names");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("probe")).unwrap();
    let path = dir.join("probe/longest.lua");
    std::fs::write(&path, &source).unwrap();
    let shown = path.to_string_lossy().replace('\\', "/");
    assert_eq!(
        Config::new().fix(&dir).map_err(|e| e.to_string()),
        Ok(Fixed {
            changed: vec![shown],
            problems: vec![],
        })
    );
    let fixed = std::fs::read_to_string(&path).unwrap();
    assert_eq!(too_long(&fixed), Vec::<&str>::new());
    let script = analyze(&script_file("probe", "longest", &fixed));
    assert_eq!(
        script
            .map(|_| ())
            .map_err(|d| d.iter().map(ToString::to_string).collect::<Vec<_>>()),
        Ok(())
    );
    if let Some(output) = luacheck(&[&path]) {
        let report = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{report}");
    } else {
        eprintln!("luacheck is not installed; skipped");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The diagnostics of `source` analyzed as `scripts/identity_lock/release.lua`.
fn diagnostics(source: &str) -> Vec<String> {
    match analyze(&script_file("identity_lock", "release", source)) {
        Ok(_) => vec![],
        Err(found) => found.iter().map(ToString::to_string).collect(),
    }
}

const FIX_HINT: &str = "run `redis-patterns fix <scripts folder>` to write them from the header";

/// The block must start right after the header: one further down is reported where it
/// starts.
#[test]
fn a_block_after_a_blank_line_is_misplaced() {
    let (source, _) = good("identity_lock", "release");
    let moved = source.replacen(contract::BEGIN, &format!("\n{}", contract::BEGIN), 1);
    assert_eq!(
        diagnostics(&moved),
        [format!(
            "scripts/identity_lock/release.lua:12:1: error: the input checks do not start right \
             after the header\n  = hint: nothing may run before them; {FIX_HINT}"
        )]
    );
}

/// `fix` moves a block found further down to right after the header, rather than adding a
/// second one; what stood between the header and the block stays, after the block.
#[test]
fn fix_moves_a_block_found_after_a_blank_line() {
    let (source, header) = good("identity_lock", "release");
    let moved = source.replacen(contract::BEGIN, &format!("\n{}", contract::BEGIN), 1);
    let fixed = fix(&moved, &header);
    let end = format!("{}\n", contract::END);
    assert_eq!(fixed, source.replacen(&end, &format!("{end}\n"), 1));
    assert_eq!(fixed.matches(contract::BEGIN).count(), 1);
    assert_eq!(fix(&fixed, &header), fixed);
    assert_eq!(diagnostics(&fixed), Vec::<String>::new());
}

/// An outdated block further down is moved and rewritten at once.
#[test]
fn fix_moves_and_rewrites_an_outdated_block() {
    let (source, header) = good("identity_lock", "release");
    let edited = source.replacen(
        "  return redis.error_reply('BAD_TOKEN must not be empty')",
        "  return redis.error_reply('BAD_TOKEN is required')",
        1,
    );
    assert_ne!(edited, source);
    let moved = edited.replacen(
        contract::BEGIN,
        &format!("-- A comment.\n{}", contract::BEGIN),
        1,
    );
    let end = format!("{}\n", contract::END);
    assert_eq!(
        fix(&moved, &header),
        source.replacen(&end, &format!("{end}-- A comment.\n"), 1)
    );
}

/// A block whose last marker is gone cannot be told from the body after it: `fix` refuses
/// it, and the check reports it where it starts.
#[test]
fn fix_refuses_an_unterminated_block() {
    let (source, header) = good("identity_lock", "release");
    let cut = source.replacen(&format!("{}\n", contract::END), "", 1);
    assert_ne!(cut, source);
    assert_eq!(
        contract::fix(&cut, &header),
        Err(format!(
            "line 11: the input checks start here but never end; delete them up to the \
             script's own code, or end them with `{}`",
            contract::END
        ))
    );
    assert_eq!(
        diagnostics(&cut),
        [format!(
            "scripts/identity_lock/release.lua:11:1: error: the input checks start here but \
             never end\n  = hint: end them with `{}`, or delete them and {FIX_HINT}",
            contract::END
        )]
    );
    // Found further down, it is refused all the same, and reported where it starts.
    let moved = cut.replacen(contract::BEGIN, &format!("\n{}", contract::BEGIN), 1);
    assert_eq!(
        contract::fix(&moved, &header),
        Err(format!(
            "line 12: the input checks start here but never end; delete them up to the \
             script's own code, or end them with `{}`",
            contract::END
        ))
    );
    assert_eq!(
        diagnostics(&moved),
        [format!(
            "scripts/identity_lock/release.lua:12:1: error: the input checks start here but \
             never end\n  = hint: end them with `{}`, or delete them and {FIX_HINT}",
            contract::END
        )]
    );
}

/// A block whose first marker is gone (what is left of it stands between the header and its
/// last marker) cannot be rewritten: a block written after the header would leave the rest
/// of the old one below it. `fix` refuses it, and the check reports it where it ends. A last
/// marker left above a whole block is refused the same way.
#[test]
fn fix_refuses_a_block_without_its_first_marker() {
    let (source, header) = good("identity_lock", "release");
    let unopened = source.replacen(&format!("{}\n", contract::BEGIN), "", 1);
    assert_ne!(unopened, source);
    let end = unopened
        .lines()
        .position(|l| l == contract::END)
        .expect("END")
        + 1;
    assert_eq!(end, 20);
    assert_eq!(
        contract::fix(&unopened, &header),
        Err(
            "line 20: the input checks end here but never start; delete them from the header \
             down to this line, or start them with the first line of the block"
                .to_string()
        )
    );
    assert_eq!(
        diagnostics(&unopened),
        [format!(
            "scripts/identity_lock/release.lua:20:1: error: the input checks end here but never \
             start\n  = hint: delete what is left of them above this line, or start them with \
             their first line; {FIX_HINT}"
        )]
    );

    let stray = source.replacen(
        contract::BEGIN,
        &format!("{}\n{}", contract::END, contract::BEGIN),
        1,
    );
    assert_eq!(
        contract::fix(&stray, &header),
        Err(
            "line 11: the input checks end here but never start; delete them from the header \
             down to this line, or start them with the first line of the block"
                .to_string()
        )
    );
    assert_eq!(
        diagnostics(&stray),
        [format!(
            "scripts/identity_lock/release.lua:11:1: error: the input checks end here but never \
             start\n  = hint: delete what is left of them above this line, or start them with \
             their first line; {FIX_HINT}"
        )]
    );
}

/// A trailing space on the first marker is a difference in the block, not a missing block;
/// `fix` removes it.
#[test]
fn a_trailing_space_on_the_first_marker_is_a_difference() {
    let (source, header) = good("identity_lock", "release");
    let spaced = source.replacen(contract::BEGIN, &format!("{} ", contract::BEGIN), 1);
    assert_eq!(
        diagnostics(&spaced),
        [format!(
            "scripts/identity_lock/release.lua:11:1: error: the input checks differ from what \
             the header declares\n  = hint: expected `{0}` here, found `{0} `; {FIX_HINT}",
            contract::BEGIN
        )]
    );
    assert_eq!(fix(&spaced, &header), source);
}

/// A line added at the end of the block is reported where the block should have ended.
#[test]
fn a_line_added_to_the_block_is_reported() {
    let (source, _) = good("identity_lock", "release");
    let added = source.replacen(
        contract::END,
        &format!("local extra = 1\n{}", contract::END),
        1,
    );
    let line = added
        .lines()
        .position(|l| l == "local extra = 1")
        .expect("added")
        + 1;
    assert_eq!(
        diagnostics(&added),
        [format!(
            "scripts/identity_lock/release.lua:{line}:1: error: the input checks differ from what \
             the header declares\n  = hint: expected `{}` here, found `local extra = 1`; {FIX_HINT}",
            contract::END
        )]
    );
}

/// luacheck, configured as for the scripts, or `None` when it is not installed.
fn luacheck(paths: &[&Path]) -> Option<std::process::Output> {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.luacheckrc");
    match std::process::Command::new("luacheck")
        .arg("--config")
        .arg(config)
        .args(["--no-color", "--codes"])
        .args(paths)
        .output()
    {
        Ok(output) => Some(output),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("luacheck: {e}"),
    }
}

/// The good fixtures, input checks included, pass luacheck as the scripts are held to: no
/// globals, no unused helpers or locals, lines of at most 120 characters.
#[test]
fn good_fixtures_pass_luacheck() {
    let paths: Vec<_> = GOOD
        .iter()
        .map(|(family, op)| fixtures().join(format!("good/{family}/{op}.lua")))
        .collect();
    let paths: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();
    let Some(output) = luacheck(&paths) else {
        eprintln!("luacheck is not installed; skipped");
        return;
    };
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{report}");
    assert!(
        report.contains("Total: 0 warnings / 0 errors in 6 files"),
        "{report}"
    );
}

/// A script of `header` with `body`, as `fix` writes it: the header's lines, the helpers
/// its block calls, the block, then `body`.
fn script_of(header: &Header, body: &str) -> String {
    fix(
        &format!("--- Probes the input checks.\n--- @return nil\n--- @complexity O(1)\n{body}"),
        header,
    )
}

/// Runs `script` under a stand-alone Lua 5.1 (Redis's Lua) once per call of `calls`, each a
/// `KEYS` and an `ARGV`; returns one line per call: the error reply, or what the script
/// returned. `None` when no Lua 5.1 is installed.
fn run_lua(script: &str, calls: &[(&[&str], &[&str])]) -> Option<Vec<String>> {
    let quote = |s: &str| {
        let bytes: String = s.bytes().map(|b| format!("\\{b:03}")).collect();
        format!("\"{bytes}\"")
    };
    let table = |items: &[&str]| {
        let quoted: Vec<String> = items.iter().map(|s| quote(s)).collect();
        format!("{{ {} }}", quoted.join(", "))
    };
    let mut program = format!(
        "redis = {{ error_reply = function(message) return {{ err = message }} end }}\n\
         local script = assert(loadstring({}))\n",
        quote(script)
    );
    for (keys, argv) in calls {
        program.push_str(&format!(
            "KEYS, ARGV = {}, {}\nlocal reply = script()\n\
             print(type(reply) == 'table' and reply.err or reply)\n",
            table(keys),
            table(argv)
        ));
    }
    let lua = ["lua5.1", "lua"].into_iter().find_map(|lua| {
        let output = std::process::Command::new(lua)
            .args(["-e", &program])
            .output()
            .ok()?;
        let version = std::process::Command::new(lua).arg("-v").output().ok()?;
        let version = String::from_utf8_lossy(&version.stdout).into_owned()
            + &String::from_utf8_lossy(&version.stderr);
        version.contains("Lua 5.1").then_some(output)
    });
    let Some(output) = lua else {
        eprintln!("no Lua 5.1 is installed; skipped");
        return None;
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    Some(
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::to_string)
            .collect(),
    )
}

/// What the generated checks accept and refuse, and what they bind, as Redis would run
/// them: one canonical form for integers and floats, bounds exact to 64 bits, an empty
/// optional as nil, and every refusal a declared code with the offending value shown.
#[test]
fn generated_checks_run_in_lua() {
    let header = header(
        vec![key("k")],
        vec![
            arg("n", ArgType::Int, range(1, 10)),
            arg("big", ArgType::Int, range(i64::MIN, i64::MAX)),
            optional("wait", ArgType::Ms, range(1, 1000)),
            arg("mode", ArgType::String, one_of(&["a", "b"])),
            arg("on", ArgType::Bool, Rule::Any),
            arg("ratio", ArgType::Float, Rule::Any),
            values(
                "rest",
                ArgType::Uint,
                Rule::Any,
                Count {
                    min: 0,
                    max: Some(2),
                },
            ),
        ],
    );
    let body = "return table.concat({ type(n), n, type(big), big, tostring(wait), mode, \
                tostring(on), ratio, #ARGV }, ' ')\n";
    let good = ["5", "-9223372036854775808", "", "a", "1", "1.5"];
    // `good` with the value at `i` replaced.
    let with = |i: usize, value: &'static str| -> Vec<&'static str> {
        let mut argv = good.to_vec();
        argv[i] = value;
        argv
    };
    let long = "0123456789012345678901234567890123456789";
    let argvs: Vec<Vec<&str>> = vec![
        good.to_vec(),
        [&good[..], &["0", "9223372036854775807"]].concat(),
        with(2, "1000"),
        with(5, "-2.5e-3"),
        with(0, "05"),
        with(0, "11"),
        with(0, "+5"),
        with(1, "9223372036854775808"),
        with(1, "-0"),
        with(2, "0"),
        with(3, "c"),
        with(3, "\u{0}\n"),
        with(3, long),
        with(4, "true"),
        with(5, "inf"),
        with(5, "nan"),
        with(5, "1e999"),
        with(5, ".5"),
        with(5, "01.5"),
        with(5, "1."),
        with(5, "1e+20"),
        with(5, "1.0E16"),
        with(5, "-1e-07"),
        with(5, "+1.5"),
        with(5, "1e+"),
        [&good[..], &["7", "-1"]].concat(),
        [&good[..], &["1", "2", "3"]].concat(),
        good[..5].to_vec(),
    ];
    let mut calls: Vec<(&[&str], &[&str])> = argvs.iter().map(|a| (&["k"][..], &a[..])).collect();
    calls.push((&[], &good[..]));
    let Some(replies) = run_lua(&script_of(&header, body), &calls) else {
        return;
    };
    const FLOAT: &str = "a finite decimal number (such as 1.5, -2, 1e+20, 1e-07 or 1.0E16)";
    let expected: Vec<String> = vec![
        "number 5 string -9223372036854775808 nil a true 1.5 6".into(),
        "number 5 string -9223372036854775808 nil a true 1.5 8".into(),
        "number 5 string -9223372036854775808 1000 a true 1.5 6".into(),
        "number 5 string -9223372036854775808 nil a true -0.0025 6".into(),
        "BAD_N must be an integer from 1 to 10, got \"05\"".into(),
        "BAD_N must be an integer from 1 to 10, got \"11\"".into(),
        "BAD_N must be an integer from 1 to 10, got \"+5\"".into(),
        "BAD_BIG must be an integer from -2^63 to 2^63-1, got \"9223372036854775808\"".into(),
        "BAD_BIG must be an integer from -2^63 to 2^63-1, got \"-0\"".into(),
        "BAD_WAIT must be whole milliseconds from 1 to 1000, or empty, got \"0\"".into(),
        "BAD_MODE must be one of a, b, got \"c\"".into(),
        "BAD_MODE must be one of a, b, got \"\\000\\010\"".into(),
        "BAD_MODE must be one of a, b, got \"01234567890123456789012345678901\"... (40 bytes)"
            .into(),
        "BAD_ON must be 1 or 0, got \"true\"".into(),
        format!("BAD_RATIO must be {FLOAT}, got \"inf\""),
        format!("BAD_RATIO must be {FLOAT}, got \"nan\""),
        format!("BAD_RATIO must be {FLOAT}, got \"1e999\""),
        format!("BAD_RATIO must be {FLOAT}, got \".5\""),
        format!("BAD_RATIO must be {FLOAT}, got \"01.5\""),
        format!("BAD_RATIO must be {FLOAT}, got \"1.\""),
        "number 5 string -9223372036854775808 nil a true 1e+20 6".into(),
        "number 5 string -9223372036854775808 nil a true 1e+16 6".into(),
        "number 5 string -9223372036854775808 nil a true -1e-07 6".into(),
        format!("BAD_RATIO must be {FLOAT}, got \"+1.5\""),
        format!("BAD_RATIO must be {FLOAT}, got \"1e+\""),
        "BAD_REST ARGV[8] must be an integer from 0 to 2^63-1, got \"-1\"".into(),
        "BAD_ARGS expected 1 key and from 6 to 8 arguments, got 1 and 9".into(),
        "BAD_ARGS expected 1 key and from 6 to 8 arguments, got 1 and 5".into(),
        "BAD_ARGS expected 1 key and from 6 to 8 arguments, got 0 and 6".into(),
    ];
    assert_eq!(replies, expected);
}

/// `hex:N` and `len:A..=B`, for one value and for each value of a variadic one.
#[test]
fn hex_and_length_checks_run_in_lua() {
    let header = header(
        vec![key("k")],
        vec![
            arg("token", ArgType::String, Rule::Hex { digits: 4 }),
            arg(
                "secret",
                ArgType::Bytes,
                Rule::Length {
                    min: 3,
                    max: Some(5),
                },
            ),
            values(
                "ids",
                ArgType::String,
                Rule::Length { min: 2, max: None },
                Count::ANY,
            ),
        ],
    );
    let body = "return table.concat({ token, secret, #ARGV }, ' ')\n";
    let argvs: [&[&str]; 9] = [
        &["0aF9", "abc"],
        &["0aF9", "abcde", "xy", "long enough"],
        &["0aF", "abc"],
        &["0aF9a", "abc"],
        &["0aG9", "abc"],
        &["0aF9", "ab"],
        &["0aF9", "abcdef"],
        &["0aF9", "abc", "xy", "x"],
        &[" aF9", "abc"],
    ];
    let calls: Vec<(&[&str], &[&str])> = argvs.iter().map(|a| (&["k"][..], *a)).collect();
    let Some(replies) = run_lua(&script_of(&header, body), &calls) else {
        return;
    };
    assert_eq!(
        replies,
        [
            "0aF9 abc 2",
            "0aF9 abcde 4",
            "BAD_TOKEN must be 4 hex digits, got \"0aF\"",
            "BAD_TOKEN must be 4 hex digits, got \"0aF9a\"",
            "BAD_TOKEN must be 4 hex digits, got \"0aG9\"",
            "BAD_SECRET must be from 3 to 5 bytes long, got 2 bytes",
            "BAD_SECRET must be from 3 to 5 bytes long, got 6 bytes",
            "BAD_IDS ARGV[4] must be 2 bytes long at least, got \"x\"",
            "BAD_TOKEN must be 4 hex digits, got \" aF9\"",
        ]
    );
}

/// The header accepts counts up to 2^32 - 1, and the block adds the fixed keys (or
/// arguments) to them without overflowing.
#[test]
fn a_count_near_u32_max_does_not_overflow() {
    let source = "--- Probes the input checks.\n\
                  --- @key first string a key\n\
                  --- @key rest... string 4294967295.. a key\n\
                  --- @arg id string an argument\n\
                  --- @arg ids string... 4294967295..=4294967295 an argument\n\
                  --- @return nil nothing\n\
                  --- @error BAD_ARGS bad counts\n\
                  --- @complexity O(1)\n\
                  return redis.call('EXISTS', first, unpack(KEYS, 2), id, unpack(ARGV, 2))\n";
    let mut expected = header(
        vec![
            key("first"),
            keys(
                "rest",
                Count {
                    min: u32::MAX,
                    max: None,
                },
            ),
        ],
        vec![
            arg("id", ArgType::String, Rule::Any),
            values(
                "ids",
                ArgType::String,
                Rule::Any,
                Count {
                    min: u32::MAX,
                    max: Some(u32::MAX),
                },
            ),
        ],
    );
    expected.errors = vec![ErrorCode {
        code: "BAD_ARGS".to_string(),
        doc: "not at least 4294967296 keys and 4294967296 arguments".to_string(),
    }];
    let fixed = fix(source, &expected);
    let arity: Vec<&str> = fixed
        .lines()
        .skip_while(|l| !l.starts_with("if #KEYS"))
        .take(6)
        .collect();
    assert_eq!(
        arity,
        [
            "if #KEYS < 4294967296 or #ARGV < 4294967296 or #ARGV > 4294967296 then",
            "  return redis.error_reply(",
            "      'BAD_ARGS expected at least 4294967296 keys and 4294967296 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)",
            "end",
            "local first = KEYS[1]",
            "local id = ARGV[1]",
        ]
    );
    let script = analyze(&script_file("probe", "counts", &fixed)).map(|s| s.header);
    assert_eq!(script, Ok(expected));
}

/// `identity_lock/release` with a body that calls `decimal_less` and no other helper,
/// named in its header, its input checks generated afresh; and its header.
fn release_calling_decimal_less() -> (String, Header) {
    let (source, mut header) = good("identity_lock", "release");
    header.uses = vec!["decimal_less".to_string()];
    let calls = source
        .replace("return 0\n", "return decimal_less(token, '5')\n")
        .replace("--- @complexity", "--- @uses decimal_less\n--- @complexity");
    (fix(&without_block(&calls), &header), header)
}

/// A body that calls `decimal_less` alone gets it pasted, with its own comment, and not
/// `integer`, which nothing would call.
#[test]
fn a_body_calling_decimal_less_gets_it_pasted() {
    let (fixed, header) = release_calling_decimal_less();
    assert_eq!(helpers_in(&fixed), ["decimal_less"]);
    let helper: Vec<&str> = fixed
        .lines()
        .skip_while(|l| !l.starts_with("-- Helpers shared"))
        .take(6)
        .collect();
    assert_eq!(
        helper,
        [
            "-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in",
            "-- redis-patterns-codegen).",
            "-- Whether decimal integer a is less than b, both in the one canonical form below: by sign,",
            "-- then length, then in two parts of at most 10 digits, each exact in Lua's numbers, so that",
            "-- 64-bit values compare exactly (and no locale's collation is involved).",
            "local function decimal_less(a, b)",
        ]
    );
    let script = analyze(&script_file("identity_lock", "release", &fixed)).map(|s| s.header);
    assert_eq!(script, Ok(header));
}

/// luacheck refuses a helper that nothing calls: a body that calls only `decimal_less` gets
/// no `integer` to leave uncalled.
#[test]
fn a_body_calling_decimal_less_alone_passes_luacheck() {
    let (fixed, _) = release_calling_decimal_less();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("codegen-decimal-less");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("release.lua");
    std::fs::write(&path, fixed).unwrap();
    let Some(output) = luacheck(&[&path]) else {
        eprintln!("luacheck is not installed; skipped");
        return;
    };
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{report}");
    assert!(
        report.contains("Total: 0 warnings / 0 errors in 1 file"),
        "{report}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The diagnostics of `source` analyzed as `scripts/probe/choices.lua`.
fn probe_diagnostics(source: &str) -> Vec<String> {
    match analyze(&script_file("probe", "choices", source)) {
        Ok(_) => vec![],
        Err(found) => found.iter().map(ToString::to_string).collect(),
    }
}

/// A script whose one argument, `name`, takes `choices`; it has no input checks yet.
fn choice_script(name: &str, choices: &str) -> String {
    format!(
        "--- Takes a mode.\n\
         --- @arg {name} string {choices} a mode\n\
         --- @return string the mode\n\
         --- @error BAD_ARGS not 0 keys and 1 argument\n\
         --- @error {} `{name}` is not one of the choices\n\
         --- @complexity O(1)\n\
         return {name}\n",
        contract::error_code(name)
    )
}

/// The diagnostics of the script whose one argument, `name`, takes `choices` that the
/// header refuses: refused, they leave `name` a string without constraint, whose input
/// checks (written here) raise no `BAD_<NAME>`, so only the refusal is left to report.
fn refused_choices(name: &str, choices: &str) -> Vec<String> {
    let code_line = format!(
        "--- @error {} `{name}` is not one of the choices\n",
        contract::error_code(name)
    );
    let source = choice_script(name, choices).replace(&code_line, "");
    let unconstrained = header(vec![], vec![arg(name, ArgType::String, Rule::Any)]);
    probe_diagnostics(&fix(&source, &unconstrained))
}

const CHOICE_HINT: &str = "a choice is at most 32 letters, digits, `_`, `.`, `:` or `-`; check other values in the script's own code";

/// A choice with a quote or a backslash would have to be escaped in the generated Lua and
/// its messages: the header refuses it instead, at the list, naming the first such choice.
#[test]
fn a_choice_with_a_quote_is_refused() {
    for (choices, odd) in [
        ("it's|its", "it's"),
        ("ab|a\\b", "a\\b"),
        ("it's|a\\b", "it's"),
    ] {
        assert_eq!(
            refused_choices("mode", choices),
            [format!(
                "scripts/probe/choices.lua:2:22: error: the choice `{odd}` is not a plain word\n  \
                 = hint: {CHOICE_HINT}"
            )],
            "{choices}"
        );
    }
}

/// A choice of 33 characters is refused; with 32 (and the longest name), `fix` writes checks
/// whose lines keep to 120 characters, the check passes, luacheck finds nothing, and the
/// checks accept the long choice and refuse others.
#[test]
fn a_choice_of_32_characters_fits_in_120_columns_and_33_is_refused() {
    let name = longest("mode");
    let choice_33 = "c".repeat(33);
    assert_eq!(
        refused_choices(&name, &format!("a|{choice_33}")),
        [format!(
            "scripts/probe/choices.lua:2:50: error: the choice `{choice_33}` is not a plain \
             word\n  = hint: {CHOICE_HINT}"
        )]
    );

    // As long a choice as is accepted, among short ones: two would not fit on the header's
    // line.
    let choice_32 = "c".repeat(32);
    let choices = format!("a|b|{choice_32}");
    let source = choice_script(&name, &choices);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("codegen-long-choice");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("probe")).unwrap();
    let path = dir.join("probe/choices.lua");
    std::fs::write(&path, &source).unwrap();
    assert_eq!(
        Config::new().fix(&dir).map_err(|e| e.to_string()),
        Ok(Fixed {
            changed: vec![path.to_string_lossy().replace('\\', "/")],
            problems: vec![],
        })
    );
    let fixed = std::fs::read_to_string(&path).unwrap();
    assert_eq!(too_long(&fixed), Vec::<&str>::new());
    assert_eq!(probe_diagnostics(&fixed), Vec::<String>::new());
    if let Some(output) = luacheck(&[&path]) {
        let report = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{report}");
    } else {
        eprintln!("luacheck is not installed; skipped");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let long = [choice_32.as_str()];
    let calls: Vec<(&[&str], &[&str])> = vec![(&[], &long), (&[], &["c"])];
    let Some(replies) = run_lua(&fixed, &calls) else {
        return;
    };
    assert_eq!(
        replies,
        [
            choice_32.clone(),
            format!(
                "BAD_MODE_XXXXXXXXXXXXXXXXXXXXXXXXXXX must be one of a, b, {choice_32}, got \"c\""
            ),
        ]
    );
}

/// What is left of a second copy of the block after the first one (its lines, or a stray
/// marker) is reported where it stands, and `fix` refuses to guess which lines go with it.
#[test]
fn markers_after_a_whole_block_are_refused() {
    let (source, header) = good("identity_lock", "release");
    let block: String = source
        .lines()
        .skip_while(|l| *l != contract::BEGIN)
        .take_while(|l| *l != contract::END)
        .chain([contract::END])
        .map(|l| format!("{l}\n"))
        .collect();
    let end = format!("{}\n", contract::END);
    let twice = source.replacen(&end, &format!("{end}{block}"), 1);
    let stray = source.replacen(&end, &format!("{end}{end}"), 1);
    let first_after = source
        .lines()
        .position(|l| l == contract::END)
        .expect("the fixture has a block")
        + 2;
    for doubled in [&twice, &stray] {
        assert_eq!(
            diagnostics(doubled),
            [format!(
                "scripts/identity_lock/release.lua:{first_after}:1: error: a marker of the input \
                 checks after their end\n  = hint: another copy of the checks, or what is left \
                 of one: delete it, and the lines that belong to it"
            )]
        );
        assert_eq!(
            contract::fix(doubled, &header),
            Err(format!(
                "line {first_after}: a marker of the input checks after their end: another \
                 copy, or what is left of one; delete it, and the lines that belong to it"
            ))
        );
    }
}

/// A variadic `ms` with no range takes what `ms` holds: 0 to 2^53 - 1, whole milliseconds
/// that Lua's numbers hold exactly, so each is checked on the fast path.
#[test]
fn a_variadic_ms_without_a_range_takes_up_to_2_pow_53_minus_1() {
    let block = contract::render(&header(
        vec![key("k")],
        vec![values("steps", ArgType::Ms, Rule::Any, Count::ANY)],
    ));
    assert!(
        block.contains(
            "  local each = ARGV[i] == '0' and 0 or tonumber(string.match(ARGV[i], '^[1-9]%d*$'))\n  \
             if not each or each > 9007199254740991 then"
        ),
        "{block}"
    );
    assert!(
        block.contains("] must be whole milliseconds from 0 to 9007199254740991, got '"),
        "{block}"
    );
}

/// An integer argument whose range fits in ±(2^53 - 1) reaches the body as a Lua number; a
/// wider one as its decimal text, and the check refuses a body that uses that text as a
/// number (it would fail at run time with "attempt to compare string with number").
#[test]
fn an_integer_wider_than_2_pow_53_used_as_a_number_is_refused() {
    let source = |range: &str| {
        format!(
            "--- Probes the binding of an integer.\n\
             --- @key k string                a key\n\
             --- @arg cap int {range}          the cap\n\
             --- @return int                  the cap, or 0\n\
             --- @error BAD_ARGS              not 1 key and 1 argument\n\
             --- @error BAD_CAP               not an integer within its range\n\
             --- @complexity O(1)\n\
             if cap > 5 then\n  return redis.call('STRLEN', k)\nend\nreturn 0\n"
        )
    };
    let fixed = |range: &str| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("codegen-wide-{range}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("probe")).unwrap();
        let path = dir.join("probe/cap.lua");
        std::fs::write(&path, source(range)).unwrap();
        Config::new().fix(&dir).unwrap();
        let fixed = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        fixed
    };
    let narrow = fixed("1..=2^53-1");
    assert!(narrow.contains(
        "local cap = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))\nif not cap or cap > 9007199254740991 then"
    ));
    assert_eq!(
        analyze(&script_file("probe", "cap", &narrow)).map(|_| ()),
        Ok(())
    );
    let wide = fixed("1..");
    assert!(wide.contains("local cap = integer(ARGV[1], '1', '9223372036854775807')"));
    let found: Vec<String> = analyze(&script_file("probe", "cap", &wide))
        .err()
        .unwrap_or_default()
        .iter()
        .map(ToString::to_string)
        .collect();
    let line = wide.lines().position(|l| l == "if cap > 5 then").unwrap() + 1;
    assert_eq!(
        found,
        [format!(
            "scripts/probe/cap.lua:{line}:4: error: `cap` is used as a number, but it is bound \
             as its decimal text: its range goes beyond ±(2^53 - 1), which Lua's numbers do not \
             hold exactly\n  = hint: declare a range within ±(2^53 - 1) (`1..=2^53-1`) to get a \
             Lua number, or compare the text with `decimal_less`"
        )]
    );
}

/// A variadic's first range counts its values and a second bounds each of them, which the
/// block then checks on the fast path; a third is one too many.
#[test]
fn a_variadic_takes_a_count_and_a_range_for_each_value() {
    let source = |ranges: &str| {
        format!(
            "--- Probes a variadic with a range for its values.\n\
             --- @key k string                a key\n\
             --- @arg ids uint... {ranges}    the ids\n\
             --- @return int                  how many\n\
             --- @error BAD_ARGS              not 1 key and from 1 to 5 arguments\n\
             --- @error BAD_IDS               a value is not an integer within its range\n\
             --- @complexity O(1)\n\
             return redis.call('STRLEN', k) + #ARGV\n"
        )
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("codegen-variadic-range");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("probe")).unwrap();
    let path = dir.join("probe/ids.lua");
    std::fs::write(&path, source("1..=5 1..=10^9")).unwrap();
    assert_eq!(Config::new().fix(&dir).unwrap().problems, vec![]);
    let fixed = std::fs::read_to_string(&path).unwrap();
    assert!(
        fixed.contains(
            "  local each = tonumber(string.match(ARGV[i], '^[1-9]%d*$'))\n  \
             if not each or each > 1000000000 then"
        ),
        "{fixed}"
    );
    let header = analyze(&script_file("probe", "ids", &fixed))
        .unwrap()
        .header;
    assert_eq!(header.args[0].rule, range(1, 1_000_000_000));
    assert_eq!(
        header.args[0].count,
        Count {
            min: 1,
            max: Some(5)
        }
    );

    std::fs::write(&path, source("1..=5 1..=10^9 1..=3")).unwrap();
    let found: Vec<String> = Config::new()
        .fix(&dir)
        .unwrap()
        .problems
        .iter()
        .map(|d| d.message.clone())
        .collect();
    assert_eq!(found, ["`1..=3` constrains the argument a second time"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A `bool` of the reply is the integer 1 or 0: Lua's `false` in a reply table is a hole
/// (nil) and `true` is 1, so the check refuses a reply of the main chunk that gives one as
/// a Lua boolean (a literal, a comparison, `not`), alone or in a tuple, and accepts
/// `… and 1 or 0` and what a helper function returns to its caller.
#[test]
fn a_bool_of_the_reply_given_as_a_lua_boolean_is_refused() {
    let source = |ty: &str, body: &str| {
        format!(
            "--- Probes a reply with a bool.\n\
             --- @key k string                a key\n\
             --- @return {ty}                 whether k is long, and its length\n\
             --- @error BAD_ARGS              not 1 key and 0 arguments\n\
             --- @complexity O(1)\n\
             local function long(n)\n  return {{ n > 5, n }}\nend\n\
             local n = redis.call('STRLEN', k)\n\
             {body}\n"
        )
    };
    let found = |ty: &str, body: &str| -> Vec<String> {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("codegen-bool-reply");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("probe")).unwrap();
        let path = dir.join("probe/long.lua");
        std::fs::write(&path, source(ty, body)).unwrap();
        Config::new().fix(&dir).unwrap();
        let fixed = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let last = fixed.lines().count();
        analyze(&script_file("probe", "long", &fixed))
            .err()
            .unwrap_or_default()
            .iter()
            .map(|d| d.to_string().replace(&format!(":{last}:"), ":LAST:"))
            .collect()
    };
    let refused = |col: usize| {
        vec![format!(
            "scripts/probe/long.lua:LAST:{col}: error: a `bool` of the reply is given as a Lua \
             boolean, which the reply carries as nil (false) or 1 (true)\n  = hint: give 1 or 0: \
             `x and 1 or 0`"
        )]
    };
    assert_eq!(found("(bool, uint)", "return { n > 5, n }"), refused(10));
    assert_eq!(found("(bool, uint)", "return { false, n }"), refused(10));
    assert_eq!(
        found("(uint, bool)?", "return { n, not (n > 5) }"),
        refused(13)
    );
    assert_eq!(found("bool", "return n == 5"), refused(8));
    assert_eq!(
        found("(bool, uint)", "return { n > 5 and 1 or 0, n }"),
        Vec::<String>::new()
    );
    assert_eq!(
        found("(bool, uint)", "return { (n > 5) and 1 or 0, n }"),
        Vec::<String>::new()
    );
    assert_eq!(
        found("bool", "return n > 5 and 1 or 0"),
        Vec::<String>::new()
    );
    // The table that the helper returns is its caller's, not the reply.
    assert_eq!(
        found("(bool, uint)", "return { long(n)[1] and 1 or 0, n }"),
        Vec::<String>::new()
    );
}

/// The `@error` tags `fix` adds go below the whole `@return` doc, its indented lines
/// included: a tag between the doc and its continuation would leave that continuation as
/// prose after the tags, a header the check refuses.
#[test]
fn fix_adds_error_tags_below_a_multi_line_return_doc() {
    let source = "--- Probes a reply documented over three lines.\n\
                  --- @key k string            a key\n\
                  --- @arg name string non-empty  the name\n\
                  --- @return [(string, uint)]  a row per name:\n\
                  ---                           its name and count\n\
                  ---                           (0 for none)\n\
                  --- @complexity O(1)\n\
                  return {{name, redis.call('STRLEN', k)}}\n";
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("codegen-return-doc");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("probe")).unwrap();
    let path = dir.join("probe/rows.lua");
    std::fs::write(&path, source).unwrap();
    assert_eq!(Config::new().fix(&dir).unwrap().problems, vec![]);
    let fixed = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let header: Vec<&str> = fixed.lines().take(9).collect();
    assert_eq!(
        header[3..],
        [
            "--- @return [(string, uint)]  a row per name:",
            "---                           its name and count",
            "---                           (0 for none)",
            "--- @error BAD_ARGS not 1 key and 1 argument",
            "--- @error BAD_NAME empty",
            "--- @complexity O(1)",
        ],
        "{fixed}"
    );
    let script = analyze(&script_file("probe", "rows", &fixed))
        .unwrap_or_else(|d| panic!("the fixed script should pass: {d:#?}\n{fixed}"));
    assert_eq!(
        script.header.returns.doc,
        "a row per name: its name and count (0 for none)"
    );
}

/// Keys in a row that differ only in their last text are checked in one loop over those
/// texts: it accepts the keys of one instance, and refuses each key that is not, naming
/// it, with the value it got shown; a key out of the row is checked on its own.
#[test]
fn folded_key_checks_run_in_lua() {
    let source = "--- Probes the key check.\n\
                  --- @key head zset {<name>}:head      the first\n\
                  --- @key left zset {<name>}:left      the second\n\
                  --- @key middle zset {<name>}:middle  the third\n\
                  --- @key right zset {<name>}:right    the fourth\n\
                  --- @key odd string <name>            the fifth\n\
                  --- @return int the keys\n\
                  --- @error BAD_ARGS not 5 keys and 0 arguments\n\
                  --- @complexity O(1)\n\
                  return #KEYS + #head + #left + #middle + #right + #odd\n";
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("codegen-folded-keys");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("probe")).unwrap();
    let path = dir.join("probe/keys.lua");
    std::fs::write(&path, source).unwrap();
    let fixed = Config::new()
        .fix(&dir)
        .map(|_| std::fs::read_to_string(&path).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    let fixed = fixed.unwrap();
    assert!(
        fixed.contains("  for i, each in ipairs({ ':left', ':middle', ':right' }) do\n"),
        "{fixed}"
    );
    assert_eq!(too_long(&fixed), Vec::<&str>::new());
    let good = ["{q}:head", "{q}:left", "{q}:middle", "{q}:right", "q"];
    let with = |i: usize, key: &'static str| -> Vec<&'static str> {
        let mut keys = good.to_vec();
        keys[i] = key;
        keys
    };
    let cases = [
        good.to_vec(),
        with(1, "{p}:left"),
        with(2, "{q}:midle"),
        with(3, "{q}:right\n"),
        with(4, "p"),
    ];
    let calls: Vec<(&[&str], &[&str])> = cases.iter().map(|k| (&k[..], &[][..])).collect();
    let Some(replies) = run_lua(&fixed, &calls) else {
        return;
    };
    assert_eq!(
        replies,
        [
            "41",
            "BAD_KEYS KEYS[2] must be {<name>}:left with <name> as in head, got \"{p}:left\"",
            "BAD_KEYS KEYS[3] must be {<name>}:middle with <name> as in head, got \"{q}:midle\"",
            "BAD_KEYS KEYS[4] must be {<name>}:right with <name> as in head, got \"{q}:right\\010\"",
            "BAD_KEYS KEYS[5] must be <name> with <name> as in head, got \"p\"",
        ]
    );
}
