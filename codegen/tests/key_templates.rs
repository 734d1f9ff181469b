//! Key name templates on `@key` lines (`{<name>}:waiting`): what good ones parse to and
//! generate, and the exact diagnostics of bad ones, within a template, a script (one hash
//! tag for every key of a call) and a family (one template per key name).

use std::path::{Path, PathBuf};

use redis_patterns_codegen::model::{KeyForm, KeyPart, KeyTemplate};
use redis_patterns_codegen::{Config, Error};

/// A script whose keys are `keys` (each an `@key` line without the tag), all used, with no
/// arguments; `arity` is its `BAD_ARGS` doc.
fn script(keys: &[&str], arity: &str) -> String {
    let mut source = String::from("--- Counts which of its keys exist.\n");
    for key in keys {
        source += &format!("--- @key {key}\n");
    }
    source += &format!(
        "--- @return uint             how many of the keys exist\n\
         --- @error BAD_ARGS          {arity}\n\
         --- @complexity O(N), N = the keys\n"
    );
    let locals: Vec<&str> = keys
        .iter()
        .filter(|k| !k.split_whitespace().next().unwrap().ends_with("..."))
        .map(|k| k.split_whitespace().next().unwrap())
        .collect();
    let variadic = keys.len() - locals.len();
    let mut used = locals.join(", ");
    if variadic == 1 {
        used += &format!(", unpack(KEYS, {})", locals.len() + 1);
    }
    source += &format!("return redis.call('EXISTS', {used})\n");
    source
}

/// A fresh folder under the test's temporary one holding `scripts` (`family/op` and
/// source), their input checks written by `fix`; and what `fix` reported.
fn folder(name: &str, scripts: &[(&str, String)]) -> (PathBuf, Vec<String>) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    for (script, source) in scripts {
        let path = dir.join(format!("{script}.lua"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, source).unwrap();
    }
    let fixed = Config::new().fix(&dir).unwrap();
    let problems = fixed
        .problems
        .iter()
        .map(|d| shown(&d.to_string(), &dir))
        .collect();
    (dir, problems)
}

/// A diagnostic with the temporary folder's path cut off.
fn shown(text: &str, dir: &Path) -> String {
    text.replace(
        &format!("{}/", dir.to_string_lossy().replace('\\', "/")),
        "",
    )
}

/// Every problem `check` finds in `dir`, as the build prints them.
fn check_problems(dir: &Path) -> String {
    match Config::new().check(dir) {
        Ok(scripts) => panic!("{} scripts should have problems", scripts.len()),
        Err(Error::Scripts(problems)) => problems
            .iter()
            .map(|d| shown(&d.to_string(), dir))
            .collect::<Vec<_>>()
            .join("\n"),
        Err(other) => panic!("{other}"),
    }
}

fn text(s: &str) -> KeyPart {
    KeyPart::Text(s.to_string())
}

fn param(s: &str) -> KeyPart {
    KeyPart::Param(s.to_string())
}

/// Templates with literal text around and inside the hash tag, several placeholders in
/// the tag, a key without a tag beside the tag's content, and a variadic key whose items
/// take two forms: each parses to its parts, and generates a key function per form.
#[test]
fn good_templates_parse_and_generate_key_functions() {
    let board = script(
        &[
            "board zset <key>                   the board",
            "levels zset {<key>}:levels         its distinct scores",
            "cache zset {<key>}:near:<member>   a member's neighbours",
        ],
        "not 3 keys and 0 arguments",
    );
    let log = script(
        &[
            "recent list recent:{<name>:<severity>}        the newest messages",
            "start string common:{<name>:<severity>}:start  when the hour began",
        ],
        "not 2 keys and 0 arguments",
    );
    let standing = script(
        &["boards... zset 2..=20 <key>|{<key>}:levels  each board, then its levels"],
        "not from 2 to 20 keys and 0 arguments",
    );
    let (dir, problems) = folder(
        "key-templates-good",
        &[
            ("demo/board", board),
            ("demo/log", log),
            ("demo/standing", standing),
        ],
    );
    assert_eq!(problems, Vec::<String>::new());
    let config = Config::new();
    let scripts = config.check(&dir).unwrap_or_else(|e| panic!("{e}"));
    let templates: Vec<(&str, Option<&KeyTemplate>)> = scripts
        .iter()
        .flat_map(|s| s.header.keys.iter())
        .map(|k| (k.name.as_str(), k.template.as_ref()))
        .collect();
    let form = |text: &str, parts: Vec<KeyPart>| KeyForm {
        text: text.to_string(),
        parts,
    };
    let one = |text: &str, parts: Vec<KeyPart>| KeyTemplate {
        text: text.to_string(),
        forms: vec![form(text, parts)],
    };
    let severity_tag = || KeyPart::HashTag(vec![param("name"), text(":"), param("severity")]);
    assert_eq!(
        templates,
        [
            ("board", Some(&one("<key>", vec![param("key")]))),
            (
                "levels",
                Some(&one(
                    "{<key>}:levels",
                    vec![KeyPart::HashTag(vec![param("key")]), text(":levels")]
                ))
            ),
            (
                "cache",
                Some(&one(
                    "{<key>}:near:<member>",
                    vec![
                        KeyPart::HashTag(vec![param("key")]),
                        text(":near:"),
                        param("member")
                    ]
                ))
            ),
            (
                "recent",
                Some(&one(
                    "recent:{<name>:<severity>}",
                    vec![text("recent:"), severity_tag()]
                ))
            ),
            (
                "start",
                Some(&one(
                    "common:{<name>:<severity>}:start",
                    vec![text("common:"), severity_tag(), text(":start")]
                ))
            ),
            (
                "boards",
                Some(&KeyTemplate {
                    text: "<key>|{<key>}:levels".to_string(),
                    forms: vec![
                        form("<key>", vec![param("key")]),
                        form(
                            "{<key>}:levels",
                            vec![KeyPart::HashTag(vec![param("key")]), text(":levels")]
                        ),
                    ],
                })
            ),
        ]
    );
    let cache = scripts[0].header.keys[2].template.as_ref().unwrap();
    assert_eq!(cache.params(), ["key", "member"]);

    // One function per key name of the family, whose parameters are the placeholders in
    // order; one per form for a key of several forms. A key's metadata points at its
    // template.
    let code = config.generate(&scripts).unwrap();
    for function in [
        "pub fn board(key: &str) -> ::redis_patterns::Result<String> {",
        "pub fn levels(key: &str) -> ::redis_patterns::Result<String> {",
        "pub fn cache(key: &str, member: &str) -> ::redis_patterns::Result<String> {",
        "pub fn recent(name: &str, severity: &str) -> ::redis_patterns::Result<String> {",
        "pub fn boards_1(key: &str) -> ::redis_patterns::Result<String> {",
        "pub fn boards_2(key: &str) -> ::redis_patterns::Result<String> {",
        "BOARDS.forms[1].build(&[key])",
        "template: Some(&keys::LEVELS) }",
    ] {
        assert!(code.contains(function), "no `{function}` in:\n{code}");
    }
    assert_eq!(code.matches("pub static LEVELS:").count(), 1);

    // The manifest gives each key's template: its text, parameters and parts.
    let manifest: serde_json::Value =
        serde_json::from_str(&config.manifest(&scripts, "demo", "1.0.0")).unwrap();
    assert!(manifest["key_names"].as_str().unwrap().contains("hash tag"));
    assert_eq!(
        manifest["scripts"][1]["keys"][0]["template"],
        serde_json::json!({
            "text": "recent:{<name>:<severity>}",
            "params": ["name", "severity"],
            "forms": [{
                "text": "recent:{<name>:<severity>}",
                "params": ["name", "severity"],
                "parts": [
                    { "kind": "text", "text": "recent:" },
                    { "kind": "hash_tag", "parts": [
                        { "kind": "param", "name": "name" },
                        { "kind": "text", "text": ":" },
                        { "kind": "param", "name": "severity" },
                    ] },
                ],
            }],
        })
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A template is optional, and a doc that begins like one stays a doc: a template starts
/// with `<`, `{`, a letter or a digit, and ends with `>`, `}`, a letter, a digit or `_`.
#[test]
fn docs_that_look_like_templates_stay_docs() {
    let source = script(
        &[
            "jobs hash                <x>:<id>: d payload, s state",
            "records hash             `t:<id>` -> the session's ttl (ms)",
            "lock string              the lock key",
        ],
        "not 3 keys and 0 arguments",
    );
    let (dir, problems) = folder("key-templates-docs", &[("demo/read", source)]);
    assert_eq!(problems, Vec::<String>::new());
    let scripts = Config::new().check(&dir).unwrap_or_else(|e| panic!("{e}"));
    let keys: Vec<(&str, bool)> = scripts[0]
        .header
        .keys
        .iter()
        .map(|k| (k.doc.as_str(), k.template.is_some()))
        .collect();
    assert_eq!(
        keys,
        [
            ("<x>:<id>: d payload, s state", false),
            ("`t:<id>` -> the session's ttl (ms)", false),
            ("the lock key", false),
        ]
    );
    let code = Config::new().generate(&scripts).unwrap();
    assert!(
        !code.contains("pub mod keys"),
        "no template, no keys module"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every malformed template of a header is reported, at its column, with a hint.
#[test]
fn bad_template_syntax() {
    let source = script(
        &[
            "a string <a                 unclosed placeholder",
            "b string x>:<b>             stray `>`",
            "c string {<c>:x             unclosed hash tag",
            "d string <d>}:x             `}` outside a hash tag",
            "e string {<e>}:{<f>}        two hash tags",
            "g string {}:<g>             empty hash tag",
            "h string <ns>:{<h>}         a placeholder before the hash tag",
            "i string {<Id>}:<type>      bad placeholder names",
            "j string <j>|{<j>}:x        forms on a key that is not variadic",
            "k string cache:{<k>}||<k>   an empty form",
            "l string cache:<>           an empty placeholder",
            "m... string 1..=2 {<m>}:x|fixed   a form with no placeholder",
        ],
        "not from 12 to 13 keys and 0 arguments",
    );
    let (dir, problems) = folder("key-templates-bad", &[("demo/bad", source)]);
    let expected = "\
demo/bad.lua:2:19: error: `<` without its `>` in the template `<a`
  = hint: a placeholder is a parameter's name between `<` and `>`, as in `{<name>}:waiting`
demo/bad.lua:3:20: error: `>` without its `<` in the template `x>:<b>`
  = hint: a placeholder is a parameter's name between `<` and `>`, as in `{<name>}:waiting`
demo/bad.lua:4:19: error: the template `{<c>:x` opens a hash tag it does not close
  = hint: the hash tag is one `{…}` group around the parameters that pick the cluster slot, as in `{<name>}:waiting`
demo/bad.lua:5:22: error: `}` outside a hash tag in the template `<d>}:x`
  = hint: the hash tag is one `{…}` group around the parameters that pick the cluster slot, as in `{<name>}:waiting`
demo/bad.lua:6:25: error: the template `{<e>}:{<f>}` has a second hash tag
  = hint: a key has one hash tag, the `{…}` group: Redis Cluster hashes only the first, and every key of a call takes the same one
demo/bad.lua:7:19: error: the hash tag of the template `{}:<g>` is empty
  = hint: put the parameters that pick the slot between the braces, as in `{<name>}:waiting`: Redis Cluster ignores an empty `{}`
demo/bad.lua:8:19: error: `<ns>` comes before the hash tag in `<ns>:{<h>}`
  = hint: a value before the `{…}` group could hold a `{` of its own and move the key to another slot: put it inside the group, or after it
demo/bad.lua:9:10: error: `i` is the name of a loop's local in the generated input checks
  = hint: pick another name: the checks' loops would hide the script's local of that name
demo/bad.lua:9:20: error: `<Id>` is not a valid placeholder
  = hint: a placeholder names a parameter in snake_case (a lower-case letter, then lower-case letters, digits and `_`), of at most 32 characters and not a Rust keyword: the key's generated function takes it as a parameter
demo/bad.lua:9:26: error: `<type>` is not a valid placeholder
  = hint: a placeholder names a parameter in snake_case (a lower-case letter, then lower-case letters, digits and `_`), of at most 32 characters and not a Rust keyword: the key's generated function takes it as a parameter
demo/bad.lua:10:19: error: the template `<j>|{<j>}:x` gives several forms to a key that is not variadic
  = hint: forms `a|b` are for the items of a variadic key (`<name>...`), each item taking one of them as the key's doc says; a single key has one form
demo/bad.lua:11:19: error: the template `cache:{<k>}||<k>` gives several forms to a key that is not variadic
  = hint: forms `a|b` are for the items of a variadic key (`<name>...`), each item taking one of them as the key's doc says; a single key has one form
demo/bad.lua:11:31: error: the template `cache:{<k>}||<k>` has an empty form
  = hint: separate the forms of a variadic key's items with single `|`, as in `<key>|{<key>}:levels`
demo/bad.lua:12:25: error: `<>` is not a valid placeholder
  = hint: a placeholder names a parameter in snake_case (a lower-case letter, then lower-case letters, digits and `_`), of at most 32 characters and not a Rust keyword: the key's generated function takes it as a parameter
demo/bad.lua:13:36: error: the form `fixed` of the template `{<m>}:x|fixed` has no placeholder
  = hint: a template names the key from parameters, as `<key>` or `{<name>}:waiting`; a key of one fixed name needs none";
    assert_eq!(problems.join("\n"), expected);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The keys of one call share a slot: one hash tag in a script, and a key without one is
/// that tag's content alone.
#[test]
fn one_hash_tag_per_script() {
    let source = script(
        &[
            "board zset <key>                 the board: the tag's content alone",
            "levels zset {<key>}:levels       its levels",
            "other zset {<name>}:other        another tag",
            "loose zset boards:<key>          no tag, and not the tag's content",
        ],
        "not 4 keys and 0 arguments",
    );
    let (dir, problems) = folder("key-templates-slots", &[("demo/slots", source)]);
    let expected = "\
demo/slots.lua:4:21: error: `{<name>}` is another hash tag than `{<key>}` of `levels`
  = hint: the keys of one call share a cluster slot through one hash tag: give every key of the script the group `{<key>}`
demo/slots.lua:5:21: error: `boards:<key>` of `loose` has no hash tag, so it need not share the slot of `{<key>}` of `levels`
  = hint: beside keys with the group `{<key>}`, a key is either `<key>` alone (which hashes the same) or takes the same group";
    assert_eq!(problems.join("\n"), expected);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Within a family, a key name is one key of the pattern: one template in every script
/// that gives it one (a script may give none); and a key of several forms must leave the
/// names of its form functions to it.
#[test]
fn one_template_per_key_name_in_a_family() {
    let add = script(
        &[
            "waiting zset {<name>}:waiting   the jobs ready",
            "boards_2 zset {<name>}:boards   a key named as a form function",
        ],
        "not 2 keys and 0 arguments",
    );
    let take = script(
        &["waiting zset {<name>}:ready     the same key, named otherwise"],
        "not 1 key and 0 arguments",
    );
    let list = script(
        &["waiting zset                    the same key, no template"],
        "not 1 key and 0 arguments",
    );
    let read = script(
        &["boards... zset 1..=2 <name>|{<name>}:levels  boards and levels"],
        "not from 1 to 2 keys and 0 arguments",
    );
    let (dir, problems) = folder(
        "key-templates-family",
        &[
            ("queue/add", add),
            ("queue/list", list),
            ("queue/read", read),
            ("queue/take", take),
        ],
    );
    assert_eq!(problems, Vec::<String>::new());
    let expected = "\
queue/read.lua:2:31: error: the key function `boards_2` of form 2 of `boards` is also a key of `queue`
  = hint: rename `boards` or the key `boards_2`: the family's `keys` module names each form of `boards` `boards_<n>`
queue/take.lua:2:23: error: `waiting` is named `{<name>}:ready` here but `{<name>}:waiting` in queue/add.lua:2
  = hint: a key name is one key of the family's pattern: give it the same template in every script of the family, or another name";
    assert_eq!(check_problems(&dir), expected);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The input checks of `source` (a script whose body answers `'ok'`), run by Lua 5.1 (the
/// language of Redis scripts) with `keys` and no arguments, a `redis` of `error_reply`
/// alone: `ok`, or the error reply's code. `None` where no `lua5.1` is installed, which
/// CI (`CI=true`) does not accept.
fn run_checks(source: &str, keys: &[&str]) -> Option<String> {
    let lua_string = |s: &str| {
        let escaped: String = s.bytes().map(|b| format!("\\{b}")).collect();
        format!("'{escaped}'")
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("run-checks");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("script.lua");
    std::fs::write(&path, source).unwrap();
    let keys: Vec<String> = keys.iter().map(|k| lua_string(k)).collect();
    let run = format!(
        "KEYS = {{ {} }} ARGV = {{}} \
         redis = {{ error_reply = function(m) return {{ err = m }} end }} \
         local reply = dofile({}) \
         io.write(type(reply) == 'table' and string.match(reply.err, '^%S+') or reply)",
        keys.join(", "),
        lua_string(&path.to_string_lossy())
    );
    match std::process::Command::new("lua5.1")
        .args(["-e", &run])
        .output()
    {
        Ok(output) => {
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            Some(String::from_utf8(output.stdout).unwrap())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI runs this test with lua5.1 installed"
            );
            None
        }
        Err(e) => panic!("lua5.1: {e}"),
    }
}

/// A group of two placeholders: each value is at least one byte, and a hash tag that the
/// group's content holds lies inside one value. `{:peter}` (an empty `<namespace>`, or
/// the values `{` and `peter}` whose tag spans both) and `{sessions:}` are refused, as a
/// one-placeholder group refuses an empty value; a value that holds a tag of its own, in
/// either place, passes.
#[test]
fn a_group_of_two_values_refuses_an_empty_value_and_a_tag_across_values() {
    let source = script(
        &[
            "sessions zset {<namespace>:<uid>}:sessions  a user's sessions",
            "records hash {<namespace>:<uid>}:records  their records",
        ],
        "not 2 keys",
    )
    .replace(
        "--- @error BAD_ARGS",
        "--- @error BAD_KEYS          a key not named as its template says\n--- @error BAD_ARGS",
    )
    .replace(
        "return redis.call('EXISTS', sessions, records)",
        "return 'ok'",
    );
    let (dir, problems) = folder("two-values", &[("session/probe", source)]);
    assert_eq!(problems, Vec::<String>::new());
    let fixed = std::fs::read_to_string(dir.join("session/probe.lua")).unwrap();
    let cases: [(&str, &str); 10] = [
        ("{app:peter}", "ok"),
        ("{app}:peter", "ok"),
        ("{app:x}:peter", "ok"),
        ("app:{peter}", "ok"),
        ("{a}:{b}", "ok"),
        ("{:peter}", "BAD_KEYS"),
        ("{sessions:}", "BAD_KEYS"),
        ("{app:}", "BAD_KEYS"),
        ("a{b:{c}", "BAD_KEYS"),
        ("{app:pe}ter", "BAD_KEYS"),
    ];
    for (group, want) in cases {
        let keys = [format!("{group}:sessions"), format!("{group}:records")];
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let Some(got) = run_checks(&fixed, &keys) else {
            eprintln!("lua5.1 is not installed; skipped");
            return;
        };
        assert_eq!(got, want, "keys {keys:?}");
    }
}
