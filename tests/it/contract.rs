//! The input contract of every script, tried as a caller in another language would: raw
//! `EVAL` with too few and too many keys and arguments, numbers in every odd spelling, a
//! 1 MiB argument, empty strings, and keys of every wrong type. Each bad call must answer
//! a code the script declares (or `WRONGTYPE`) and leave the keyspace byte for byte as it
//! was. Driven by the catalogue, so a new script is covered the day it lands.

use std::time::Duration;

use redis_patterns::{Param, Rule, Script, catalog, scripts};

use crate::harness::{self, assert_code};

/// What every bad call is tried with in a numeric position.
const ODD_NUMBERS: &[&str] = &[
    "007",
    "+5",
    " 5",
    "5 ",
    "1e3",
    "0x10",
    "1.5",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "-0",
    "abc",
    "99999999999999999999999",
    "-99999999999999999999999",
];

/// The Redis types, each with a command that creates a key of it.
const TYPES: &[(&str, &[&str])] = &[
    ("string", &["SET", "{k}", "v"]),
    ("hash", &["HSET", "{k}", "f", "v"]),
    ("list", &["RPUSH", "{k}", "v"]),
    ("set", &["SADD", "{k}", "v"]),
    ("zset", &["ZADD", "{k}", "1", "v"]),
    ("stream", &["XADD", "{k}", "*", "f", "v"]),
];

/// A value the parameter accepts. Durations are an hour where the header allows it, so
/// that nothing a valid call writes expires while a test compares two runs of it.
fn valid(param: &Param) -> String {
    const HOUR: i64 = 3_600_000;
    match (param.ty, param.rule) {
        (_, Rule::OneOf(options)) => options[0].to_string(),
        ("ms", Rule::Range { min, max }) => HOUR.min(max).max(min).to_string(),
        (_, Rule::Range { min, .. }) => min.max(1).to_string(),
        ("ms", _) => HOUR.to_string(),
        ("int" | "uint", _) => "1".to_string(),
        ("float", _) => "1.5".to_string(),
        ("bool", _) => "1".to_string(),
        _ => "x".to_string(),
    }
}

/// How many values a variadic parameter gets in the valid call: the fewest it takes, at
/// least one when it takes one.
fn fewest(param: &Param) -> usize {
    if param.variadic {
        (param.count.min as usize).max(usize::from(param.count.max != Some(0)))
    } else {
        1
    }
}

/// A call every check of the script's own arguments accepts: keys in one slot.
pub(crate) fn valid_call(script: &Script) -> (Vec<String>, Vec<String>) {
    let keys = script
        .keys
        .iter()
        .flat_map(|k| (0..fewest(k)).map(move |i| format!("{{t}}:{}:{i}", k.name)))
        .collect();
    let args = script
        .args
        .iter()
        .flat_map(|a| std::iter::repeat_n(valid(a), fewest(a)))
        .collect();
    (keys, args)
}

fn eval(
    con: &mut redis::Connection,
    script: &Script,
    keys: &[String],
    args: &[String],
) -> Result<redis::Value, redis_patterns::Error> {
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    harness::eval(con, script, &keys, &args)
}

/// Runs a bad call and checks that it fails with `code` (or, for `None`, with a code
/// the script declares or `WRONGTYPE`), with a short message, and writes nothing.
fn refused(
    con: &mut redis::Connection,
    script: &Script,
    keys: &[String],
    args: &[String],
    code: Option<&str>,
    case: &str,
) {
    let before = harness::dump(con);
    let reply = eval(con, script, keys, args);
    let err = match reply {
        Err(err) => err,
        Ok(value) => panic!("{}: {case}: accepted, answered {value:?}", script.name),
    };
    let got = err.code().unwrap_or("").to_owned();
    match code {
        Some(code) => assert_eq!(got, code, "{}: {case}: {err}", script.name),
        None => assert!(
            got == "WRONGTYPE" || script.declares_error(&got),
            "{}: {case}: undeclared error {err}",
            script.name
        ),
    }
    // An error reply shows at most a short prefix of a bad argument.
    assert!(
        err.to_string().len() < 400,
        "{}: {case}: a {}-byte error",
        script.name,
        err.to_string().len()
    );
    assert_eq!(
        harness::dump(con),
        before,
        "{}: {case}: the keyspace changed",
        script.name
    );
}

#[test]
fn every_script_refuses_bad_calls_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let huge_number = "9".repeat(1 << 20);
    for script in catalog::scripts() {
        harness::cmd(&mut con, &["FLUSHDB"]);
        // Something else in the database, which no bad call may touch.
        harness::cmd(&mut con, &["SET", "{t}:bystander", "here"]);
        let (keys, args) = valid_call(script);

        // Counts: one key or argument too few or too many, where the header bounds it.
        let total = |params: &[Param]| {
            let min: u64 = params.iter().map(|p| u64::from(p.count.min)).sum();
            let max: Option<u64> = params.iter().map(|p| p.count.max.map(u64::from)).sum();
            (min, max)
        };
        let (key_min, key_max) = total(script.keys);
        let (arg_min, arg_max) = total(script.args);
        if keys.len() as u64 == key_min && key_min > 0 {
            refused(
                &mut con,
                script,
                &keys[1..],
                &args,
                Some("BAD_ARGS"),
                "a key too few",
            );
        }
        if key_max == Some(keys.len() as u64) {
            let mut more = keys.clone();
            more.push("{t}:extra".into());
            refused(
                &mut con,
                script,
                &more,
                &args,
                Some("BAD_ARGS"),
                "a key too many",
            );
        }
        if args.len() as u64 == arg_min && arg_min > 0 {
            refused(
                &mut con,
                script,
                &keys,
                &args[1..],
                Some("BAD_ARGS"),
                "an argument too few",
            );
        }
        if arg_max == Some(args.len() as u64) {
            let mut more = args.clone();
            more.push("1".into());
            refused(
                &mut con,
                script,
                &keys,
                &more,
                Some("BAD_ARGS"),
                "an argument too many",
            );
        }

        // Each argument in turn, the others valid.
        let mut at = 0;
        for param in script.args {
            let code = format!("BAD_{}", param.name.to_ascii_uppercase());
            let n = fewest(param);
            if n == 0 {
                continue;
            }
            let mut bad_values: Vec<String> = Vec::new();
            match (param.ty, param.rule) {
                ("int" | "uint" | "ms", rule) => {
                    bad_values.extend(ODD_NUMBERS.iter().map(|s| s.to_string()));
                    bad_values.push(huge_number.clone());
                    if !param.optional {
                        bad_values.push(String::new());
                    }
                    if let Rule::Range { min, max } = rule {
                        if min > i64::MIN {
                            bad_values.push((i128::from(min) - 1).to_string());
                        }
                        if max < i64::MAX {
                            bad_values.push((i128::from(max) + 1).to_string());
                        }
                    }
                    if param.ty != "int" {
                        bad_values.push("-1".into());
                    }
                }
                ("float", _) => {
                    bad_values.extend(
                        [
                            "NaN", "inf", "-inf", "1e999", "0x10", "+1", " 1", "007", "1.", "",
                        ]
                        .map(String::from),
                    );
                }
                ("bool", _) => bad_values.extend(["2", "true", "", "01"].map(String::from)),
                (_, Rule::NonEmpty) => bad_values.push(String::new()),
                (_, Rule::OneOf(_)) => {
                    bad_values.push("no such choice".into());
                    bad_values.push("x".repeat(1 << 20));
                }
                _ => {}
            }
            for bad in bad_values {
                let mut mutated = args.clone();
                mutated[at] = bad.clone();
                let shown: String = bad.chars().take(24).collect();
                refused(
                    &mut con,
                    script,
                    &keys,
                    &mutated,
                    Some(&code),
                    &format!("`{}` = {shown:?}", param.name),
                );
            }
            at += n;
        }

        // Each key in turn holding every type but its own (a key of type `any` is only
        // deleted, whatever it holds).
        let mut at = 0;
        for param in script.keys {
            let n = fewest(param);
            if n == 0 || param.ty == "any" {
                at += n;
                continue;
            }
            for (ty, create) in TYPES {
                if *ty == param.ty {
                    continue;
                }
                harness::cmd(&mut con, &["FLUSHDB"]);
                harness::cmd(&mut con, &["SET", "{t}:bystander", "here"]);
                let create: Vec<&str> = create
                    .iter()
                    .map(|a| if *a == "{k}" { keys[at].as_str() } else { a })
                    .collect();
                harness::cmd(&mut con, &create);
                refused(
                    &mut con,
                    script,
                    &keys,
                    &args,
                    None,
                    &format!("`{}` holds a {ty}", param.name),
                );
            }
            at += n;
        }
    }
}

/// The defects the contract fixed, each as it was found.
mod regressions {
    use super::*;

    fn dump_unchanged(con: &mut redis::Connection, run: impl FnOnce(&mut redis::Connection)) {
        let before = harness::dump(con);
        run(con);
        assert_eq!(harness::dump(con), before);
    }

    /// `007` passed `hash_set`'s own check, then Redis refused it after the old entry was
    /// deleted: the entry was lost and the new one had no TTL.
    #[test]
    fn leading_zeros_are_refused_before_any_write() {
        let db = harness::fresh_db();
        let mut con = db.con();
        harness::cmd(&mut con, &["HSET", "entry", "old", "1"]);
        harness::cmd(&mut con, &["PEXPIRE", "entry", "100000"]);
        harness::cmd(&mut con, &["SET", "{lock}:fence", "41"]);
        harness::cmd(&mut con, &["SET", "held", "secret"]);
        dump_unchanged(&mut con, |con| {
            assert_code(
                harness::eval(
                    con,
                    &scripts::cache::HASH_SET,
                    &["entry"],
                    &["007", "f", "v"],
                ),
                "BAD_TTL",
            );
            assert_code(
                harness::eval(
                    con,
                    &scripts::fenced_lock::ACQUIRE,
                    &["lock", "{lock}:fence"],
                    &["007"],
                ),
                "BAD_TTL",
            );
            assert_code(
                harness::eval(
                    con,
                    &scripts::cache::CLAIM,
                    &["v", "{v}:computing"],
                    &["t", "007"],
                ),
                "BAD_LEASE",
            );
            assert_code(
                harness::eval(
                    con,
                    &scripts::cache::FILL,
                    &["v", "{v}:computing"],
                    &["t", "c", "007"],
                ),
                "BAD_TTL",
            );
            assert_code(
                harness::eval(
                    con,
                    &scripts::identity_lock::EXTEND,
                    &["held"],
                    &["secret", "007"],
                ),
                "BAD_TTL",
            );
        });
    }

    /// Values written by other clients with leading zeros gave a raw `ERR` after a
    /// check that took them for numbers.
    #[test]
    fn stored_values_with_leading_zeros_get_the_declared_code() {
        let db = harness::fresh_db();
        let mut con = db.con();
        harness::cmd(&mut con, &["SET", "{lock}:fence", "007"]);
        harness::cmd(&mut con, &["SET", "counter", "007"]);
        harness::cmd(&mut con, &["HSET", "counters", "f", "007"]);
        dump_unchanged(&mut con, |con| {
            assert_code(
                harness::eval(
                    con,
                    &scripts::fenced_lock::ACQUIRE,
                    &["lock", "{lock}:fence"],
                    &["1000"],
                ),
                "BAD_FENCE",
            );
            assert_code(
                harness::eval(
                    con,
                    &scripts::rate_limiter::IS_PERMITTED,
                    &["counter"],
                    &["10", "1000", "1"],
                ),
                "BAD_COUNTER",
            );
            assert_code(
                harness::eval(con, &scripts::rate_limiter::DURATION, &["counter"], &["10"]),
                "BAD_COUNTER",
            );
            assert_code(
                harness::eval(
                    con,
                    &scripts::counter::HASH_RESET,
                    &["counters"],
                    &["f", "5"],
                ),
                "NOT_INTEGER",
            );
        });
    }

    /// `fill` wrote the value before it looked at the marker, and overwrote a key of
    /// another type where `claim` refuses it.
    #[test]
    fn fill_checks_both_keys_before_writing() {
        let db = harness::fresh_db();
        let mut con = db.con();
        harness::cmd(&mut con, &["HSET", "{a}:computing", "f", "v"]);
        harness::cmd(&mut con, &["RPUSH", "b", "item"]);
        dump_unchanged(&mut con, |con| {
            assert_code(
                harness::eval(
                    con,
                    &scripts::cache::FILL,
                    &["a", "{a}:computing"],
                    &["t", "value", ""],
                ),
                "WRONGTYPE",
            );
            assert_code(
                harness::eval(
                    con,
                    &scripts::cache::FILL,
                    &["b", "{b}:computing"],
                    &["t", "value", ""],
                ),
                "WRONGTYPE",
            );
        });
    }

    /// A 1 MiB argument came back whole in the error reply.
    #[test]
    fn errors_show_a_short_prefix_of_a_bad_argument() {
        let db = harness::fresh_db();
        let mut con = db.con();
        let huge = format!("1{}", "\n".repeat(1 << 20));
        let err = harness::eval(
            &mut con,
            &scripts::identity_lock::EXTEND,
            &["l"],
            &["t", &huge],
        )
        .unwrap_err();
        assert_eq!(err.code(), Some("BAD_TTL"));
        let shown = err.to_string();
        assert!(shown.contains(r#""1\010\010\010"#), "{shown}");
        assert!(shown.contains("(1048577 bytes)"), "{shown}");
        assert!(shown.len() < 300, "{shown}");
    }

    /// The header said `int` while the script answered a bulk string; now it says
    /// `decimal`, and values beyond 2^53 come back exact.
    #[test]
    fn hash_reset_answers_the_exact_decimal() {
        assert_eq!(scripts::counter::HASH_RESET.returns.ty, "decimal");
        let db = harness::fresh_db();
        let mut con = db.con();
        harness::cmd(&mut con, &["HSET", "h", "f", "9007199254740993"]);
        let old = scripts::counter::hash_reset("h", "f", i64::MIN)
            .run(&mut con)
            .unwrap();
        assert_eq!(old, 9_007_199_254_740_993);
        let old = scripts::counter::hash_reset("h", "f", 0)
            .run(&mut con)
            .unwrap();
        assert_eq!(old, i64::MIN);
    }

    /// `list_get_all` dropped missing rows from a flat reply, so a caller could not tell
    /// which row was missing; now each key has its array, empty when missing.
    #[test]
    fn list_get_all_keeps_row_positions() {
        let db = harness::fresh_db();
        let mut con = db.con();
        harness::cmd(&mut con, &["RPUSH", "{m}:row:1", "1", "2"]);
        let rows = scripts::matrix::list_get_all(&["{m}:row:0", "{m}:row:1", "{m}:row:2"])
            .run(&mut con)
            .unwrap();
        assert_eq!(rows, [vec![], vec![1, 2], vec![]]);
    }

    /// `gcra` says what it stores: microseconds with a fraction, refused when another
    /// client wrote something else.
    #[test]
    fn gcra_stores_what_its_header_says() {
        let db = harness::fresh_db();
        let mut con = db.con();
        scripts::rate_limiter::gcra("tat", 10, 3, Duration::from_secs(1), 1)
            .run(&mut con)
            .unwrap();
        let stored: String = redis::cmd("GET").arg("tat").query(&mut con).unwrap();
        let (whole, fraction) = stored.split_once('.').unwrap_or((&stored, ""));
        assert!(
            whole.len() >= 16 && whole.bytes().all(|b| b.is_ascii_digit()),
            "{stored}"
        );
        assert!(fraction.bytes().all(|b| b.is_ascii_digit()), "{stored}");
        assert!(
            scripts::rate_limiter::GCRA.keys[0]
                .doc
                .contains("microseconds")
        );
    }

    /// The fence counter may hold 0 (the header said "positive" and accepted it).
    #[test]
    fn a_fence_at_zero_gives_token_one() {
        let db = harness::fresh_db();
        let mut con = db.con();
        harness::cmd(&mut con, &["SET", "{l}:fence", "0"]);
        let token = scripts::fenced_lock::acquire("l", "{l}:fence", Duration::from_secs(1))
            .run(&mut con)
            .unwrap();
        assert_eq!(token, Some(1));
    }
}
