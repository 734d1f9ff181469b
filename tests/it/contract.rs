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
        (_, Rule::Length { min, .. }) => "x".repeat((min as usize).max(1)),
        (_, Rule::Hex { digits }) => "0".repeat(digits as usize),
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

/// A call every check of the script accepts: the simplest values of its arguments, and
/// keys named for them as its templates say, all in one slot.
pub(crate) fn valid_call(script: &Script) -> (Vec<String>, Vec<String>) {
    let args: Vec<String> = script
        .args
        .iter()
        .flat_map(|a| std::iter::repeat_n(valid(a), fewest(a)))
        .collect();
    (keys_for(script, &args), args)
}

/// The keys of a valid call of `script` with `args`.
pub(crate) fn keys_for(script: &Script, args: &[String]) -> Vec<String> {
    let items = script.keys.last().filter(|k| k.variadic).map_or(0, fewest);
    crate::key_templates::template_keys(script, args, items)
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

/// Every script's reply has the type its header's `@return` states ([`harness::eval`]
/// checks each reply), on the valid call and on the same call again, which often takes
/// another branch (a slug already claimed, a job already queued, a window already open).
/// A valid call may still be refused by a rule between arguments (`user` = `target`):
/// then with a declared code.
#[test]
fn every_script_answers_the_type_its_header_states() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let mut refused = Vec::new();
    for script in catalog::scripts() {
        harness::cmd(&mut con, &["FLUSHDB"]);
        let (mut keys, mut args) = valid_call(script);
        prepare(&mut con, script, &mut keys, &mut args);
        for call in ["first", "second"] {
            if let Err(err) = eval(&mut con, script, &keys, &args) {
                let code = err.code().unwrap_or("").to_owned();
                assert!(
                    script.declares_error(&code),
                    "{}: the valid call failed with {err}",
                    script.name
                );
                refused.push(format!("{} {call}: {code}", script.name));
            }
        }
    }
    // Only second calls that must be refused: a matrix made twice, a session token used
    // again, a lease already acked or given up.
    assert_eq!(
        refused,
        [
            "logical_matrix/init second: EXISTS",
            "matrix/bitfield_init second: EXISTS",
            "matrix/list_init second: EXISTS",
            "session/create second: TOKEN_TAKEN",
            "work_queue/ack second: LEASE_LOST",
            "work_queue/nack second: LEASE_LOST",
            "work_queue/rate_limit_group second: LEASE_LOST",
            "work_queue/take second: LEASE_LOST",
        ]
    );
}

/// For the scripts whose valid call needs more than the header's simplest values: the
/// arguments (and so the keys) or the state that make it answer (a pinned member, a
/// leased job, a cursor).
pub(crate) fn prepare(
    con: &mut redis::Connection,
    script: &Script,
    keys: &mut Vec<String>,
    args: &mut Vec<String>,
) {
    let name = script.name;
    match name {
        // Partition 0 of 1: the simplest valid value of each, 1, is past the last.
        "bloom/add" | "bloom/check" => args[3] = "0".into(),
        // Eight bits: the one packed byte, `x`, has no unused bits to leave clear.
        "logical_matrix/init" => args[0] = "8".into(),
        "relation/follow" => args[1] = "y".into(),
        "time_series/clean" => args[4] = "0".into(),
        "timeline/add" => args[1] = "1".into(),
        // The token its keys name (`<token>` is one per round of `sessions`).
        "web_session/clean" => {
            args[1] = "1".into();
            args[2] = "token0".into();
            args[3] = "1".into();
        }
        // Waiting jobs have no end time: no grace.
        "work_queue/clean" => args[2] = "0".into(),
        "work_queue/take" => {
            // Job x, held under the token 1, below: take acks it first (`done`).
            args[3] = "0123456789abcdef0123456789abcdef".into();
            args.truncate(4);
            args.extend(["x".into(), "1".into(), "r".into()]);
        }
        "work_queue/ack"
        | "work_queue/extend"
        | "work_queue/nack"
        | "work_queue/progress"
        | "work_queue/log"
        | "work_queue/rate_limit_group" => args[1] = "1".into(),
        // From the oldest event kept.
        "work_queue/events" => args[0] = "0-0".into(),
        // A child y, whose failure fails the parent x.
        "work_queue/add_flow" => {
            args[5] = "y".into();
            args[7] = "fail".into();
        }
        // Message 1, which the stream prepared below holds.
        "reliable_topic/ack" => args[2] = "1-0".into(),
        // An `every` schedule (a cron one needs its first run from the caller).
        "work_queue/set_schedule" => {
            args[1] = "1000".into();
            args[2] = "0".into();
            args[3] = String::new();
            args[4] = String::new();
        }
        // Schedule x, prepared below: run 0, revision 1, an `every` one (no times).
        "work_queue/fire" => {
            args[1] = "0".into();
            args[2] = "1".into();
            args.truncate(4);
        }
        // A party that arrives (no generation yet) at a barrier of two, and waits.
        "barrier/arrive" => {
            args[1] = "2".into();
            args[3] = String::new();
        }
        _ => {}
    }
    *keys = keys_for(script, args);
    let key = |name: &str| {
        let at = script.keys.iter().position(|k| k.name == name).unwrap();
        keys[at].clone()
    };
    match name {
        "geo/neighbours" | "geo/search" => {
            harness::cmd(
                con,
                &[
                    "GEOADD", &keys[0], "13.36", "38.11", "x", "13.37", "38.12", "y",
                ],
            );
        }
        "work_queue/fire" => {
            let schedule = &args[0];
            harness::cmd(
                con,
                &[
                    "HSET",
                    &key("schedules"),
                    &format!("t:{schedule}"),
                    "every 1000 0",
                    &format!("o:{schedule}"),
                    "1 0 0",
                    &format!("d:{schedule}"),
                    "p",
                ],
            );
            harness::cmd(con, &["ZADD", &key("due"), "0", schedule]);
        }
        "work_queue/ack"
        | "work_queue/extend"
        | "work_queue/nack"
        | "work_queue/take"
        | "work_queue/progress"
        | "work_queue/log"
        | "work_queue/rate_limit_group" => {
            harness::cmd(
                con,
                &[
                    "HSET",
                    &key("jobs"),
                    "s:x",
                    "leased",
                    "t:x",
                    "1",
                    "r:x",
                    "2550000000000001",
                    "n:x",
                    "1",
                    "d:x",
                    "p",
                ],
            );
            if !["work_queue/progress", "work_queue/log"].contains(&name) {
                harness::cmd(con, &["ZADD", &key("leased"), "99999999999999", "x"]);
            }
            if name == "work_queue/rate_limit_group" {
                harness::cmd(con, &["HSET", &key("jobs"), "g:x", "g"]);
            }
        }
        // Subscription x, at the start of a stream that holds message 1.
        "reliable_topic/ack" | "reliable_topic/poll" => {
            harness::cmd(con, &["ZADD", &key("subs"), "99999999999999", "x"]);
            harness::cmd(con, &["ZADD", &key("cursors"), "0", "x"]);
            harness::cmd(con, &["HSET", &key("positions"), "x", "0-0 0"]);
            harness::cmd(con, &["SET", &key("seq"), "1"]);
            harness::cmd(con, &["XADD", &key("stream"), "1-0", "n", "1", "m", "p"]);
        }
        // The first step, of a board another app wrote.
        "leaderboard/adopt" => {
            args[0] = String::new();
            harness::cmd(con, &["ZADD", &keys[0], "2", "x", "1.5", "y", "inf", "z"]);
        }
        // Replies of rows with something in them: each element's type is checked.
        "leaderboard/around" | "leaderboard/standing" => {
            for (item, score) in [("x", "1.5"), ("y", "2")] {
                harness::cmd(con, &["ZADD", &keys[0], score, item]);
                harness::cmd(con, &["ZADD", &keys[1], score, score]);
            }
        }
        // A closed latch, one of two count-downs done by `y`.
        "latch/arm" | "latch/count_down" | "latch/state" | "latch/wait" => {
            harness::cmd(
                con,
                &[
                    "HSET", &keys[0], "gen", "1", "count", "2", "left", "1", "opened", "0",
                ],
            );
            if name == "latch/count_down" {
                harness::cmd(con, &["SADD", &keys[1], "y"]);
            }
        }
        // A barrier of two, one party waiting.
        "barrier/arrive" | "barrier/leave" | "barrier/reset" | "barrier/state" => {
            harness::cmd(con, &["HSET", &keys[0], "parties", "2", "gen", "1"]);
            harness::cmd(con, &["ZADD", &keys[1], "99999999999999", "y"]);
        }
        "pagination/page" => harness::cmd(con, &["RPUSH", &keys[0], "a"]),
        // A semaphore answers NO_CAPACITY until its capacity is set.
        "semaphore/acquire" => harness::cmd(con, &["HSET", &key("state"), "capacity", "5"]),
        "row_cache/claim" => {
            // A due row with a delay, claimed; one without, dropped.
            harness::cmd(con, &["ZADD", &keys[1], "1", "r", "1", "d"]);
            harness::cmd(con, &["ZADD", &keys[0], "1000", "r"]);
        }
        "session/validate" => {
            // A live session of the token `x`, with data.
            harness::cmd(
                con,
                &[
                    "EVAL",
                    "local id = redis.sha1hex(ARGV[1])
                     redis.call('ZADD', KEYS[1], '99999999999999', id)
                     redis.call('HSET', KEYS[2], 't:' .. id, '3600000',
                       'd:' .. id, cmsgpack.pack({ name = 'ann' }))",
                    "2",
                    &keys[0],
                    &keys[1],
                    &args[0],
                ],
            );
        }
        "work_queue/job" | "work_queue/list" => {
            // A delayed job with an error and a waiting one with a group; `list` reads
            // the waiting ones from the first.
            let jobs = key("jobs");
            let fields = [
                "s:x",
                "delayed",
                "r:x",
                "2550000000000001",
                "n:x",
                "1",
                "e:x",
                "boom",
                "d:x",
                "p",
                "s:w",
                "waiting",
                "r:w",
                "2550000000000002",
                "g:w",
                "g",
                "d:w",
                "q",
            ];
            harness::cmd(con, &[&["HSET", jobs.as_str()][..], &fields[..]].concat());
            harness::cmd(con, &["ZADD", &keys[0], "2550000000000002", "w"]);
            if name == "work_queue/job" {
                harness::cmd(con, &["ZADD", &keys[0], "1700000000000", "x"]);
            } else {
                args[1] = "0".into();
            }
        }
        _ => {}
    }
}

/// Numbers as other languages send them: every finite float as Python, JavaScript, Java,
/// Go and C print it by default is read, and the scripts and the Rust API
/// ([`redis_patterns::float_from_text`], [`redis_patterns::integer_from_text`], which the
/// `redis-patterns call` command reads numbers with) agree on every text below.
#[test]
fn numbers_as_every_language_prints_them() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let printed = [
        "1e+16",  // Python's repr of 1e16, Go's and C's %g
        "1e+21",  // JavaScript's String(1e21)
        "1.0E16", // Java's Double.toString
        "1e+06",  // C's and Go's %g
        "1e-07",  // Python's repr of 1e-7
        "1.0E-5", // Java
        "1e-7",   // JavaScript, Rust
        "1E+20",
        "-0.0",
        "0.1",
        "123.456",
        "5e-324",
        "1.7976931348623157e+308",
        "-2",
        "0",
    ];
    let refused = [
        "NaN", "nan", "inf", "-inf", "Infinity", "0x10", " 5", "5 ", "", "+5", ".5", "5.", "007",
        "00.5", "1e", "1e+", "1e+-5", "1e400", "-1e400", "1,5", "1_000", "--1",
    ];
    let keys = ["{board}", "{board}:levels"];
    for text in printed.iter().chain(&refused) {
        let script_reads = harness::eval(&mut con, &scripts::leaderboard::SET, &keys, &["x", text])
            .map_err(|err| err.code().unwrap_or("").to_owned());
        let rust_reads = redis_patterns::float_from_text(text);
        match (&script_reads, rust_reads) {
            (Ok(_), Some(_)) => assert!(printed.contains(text), "{text:?} is read"),
            (Err(code), None) => {
                assert_eq!(code, "BAD_WEIGHT", "{text:?}");
                assert!(refused.contains(text), "{text:?} is refused");
            }
            _ => panic!("{text:?}: the script answers {script_reads:?}, Rust {rust_reads:?}"),
        }
    }
    // Integers: the one rule, the same in both.
    let keys = ["{c}:counters"];
    for text in [
        "0",
        "-1",
        "42",
        "9223372036854775807",
        "-9223372036854775808",
        "007",
        "+5",
        "-0",
        "1e3",
        "1.0",
        " 1",
        "9223372036854775808",
        "",
    ] {
        let script_reads =
            harness::eval(&mut con, &scripts::counter::HASH_RESET, &keys, &["f", text]).is_ok();
        let rust_reads = redis_patterns::integer_from_text(text).is_some();
        assert_eq!(script_reads, rust_reads, "{text:?}");
    }
}

/// The type check itself: what a client in another language could not read as the
/// header says is refused.
#[test]
fn the_reply_check_refuses_what_a_header_does_not_state() {
    use redis::Value;
    let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
    for (ty, reply) in [
        ("bool", Value::Nil),
        ("bool", Value::Int(2)),
        ("int", bulk("1")),
        ("uint", Value::Int(-1)),
        ("float", Value::Int(1)),
        ("float", bulk("nan")),
        ("decimal", bulk("007")),
        ("decimal", Value::Int(7)),
        ("string", Value::Nil),
        ("[bytes]", Value::Array(vec![Value::Nil])),
        ("(bool,int)", Value::Array(vec![Value::Int(1)])),
        ("(bool,string?)", Value::Array(vec![Value::Nil, Value::Nil])),
        ("nil", Value::Int(0)),
        ("uint?", Value::Int(-1)),
        (
            "(uint,[bytes])",
            Value::Array(vec![Value::Int(0), bulk("a")]),
        ),
        (
            "(uint,[bytes])",
            Value::Array(vec![Value::Int(0), Value::Array(vec![Value::Nil])]),
        ),
        (
            "([(string,uint)],[string])",
            Value::Array(vec![
                Value::Array(vec![Value::Array(vec![bulk("r")])]),
                Value::Array(vec![]),
            ]),
        ),
        ("(string,uint)?", Value::Array(vec![])),
        (
            "(string,uint)?",
            Value::Array(vec![bulk("a"), Value::Int(-1)]),
        ),
    ] {
        assert!(
            harness::reply_matches(ty, &reply).is_err(),
            "{reply:?} passed as a `{ty}`"
        );
    }
    for (ty, reply) in [
        ("bool", Value::Int(0)),
        ("int?", Value::Nil),
        ("float", bulk("-1.5e3")),
        ("decimal", bulk("-9223372036854775808")),
        (
            "(string,bytes?)",
            Value::Array(vec![bulk("wait"), Value::Nil]),
        ),
        (
            "[(string,float)]",
            Value::Array(vec![Value::Array(vec![bulk("a"), bulk("1")])]),
        ),
        ("uint?", Value::Nil),
        (
            "(uint,[bytes])",
            Value::Array(vec![
                Value::Int(7),
                Value::Array(vec![bulk("a"), bulk("b")]),
            ]),
        ),
        (
            "([(string,uint)],[string])",
            Value::Array(vec![
                Value::Array(vec![Value::Array(vec![bulk("r"), Value::Int(5)])]),
                Value::Array(vec![bulk("d")]),
            ]),
        ),
        ("(string,uint)?", Value::Nil),
        (
            "(string,uint)?",
            Value::Array(vec![bulk("a"), Value::Int(1)]),
        ),
    ] {
        assert_eq!(
            harness::reply_matches(ty, &reply),
            Ok(()),
            "{reply:?} as `{ty}`"
        );
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
        harness::cmd(&mut con, &["SET", "rl:u:counter", "007"]);
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
                    &["rl:u:counter"],
                    &["10", "1000", "1"],
                ),
                "BAD_COUNTER",
            );
            assert_code(
                harness::eval(
                    con,
                    &scripts::rate_limiter::DURATION,
                    &["rl:u:counter"],
                    &["10"],
                ),
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
        scripts::rate_limiter::gcra("rl:u:tat", 10, 3, Duration::from_secs(1), 1)
            .run(&mut con)
            .unwrap();
        let stored: String = redis::cmd("GET").arg("rl:u:tat").query(&mut con).unwrap();
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

/// What calling every script as a client in another language found: each test failed
/// before its fix.
mod outside_client {
    use redis::Value;

    use super::*;

    fn dump_unchanged(con: &mut redis::Connection, run: impl FnOnce(&mut redis::Connection)) {
        let before = harness::dump(con);
        run(con);
        assert_eq!(harness::dump(con), before);
    }

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    /// A `none` from a user who had not voted answered 0 but posted and ranked the
    /// subject, and the next real vote kept the time of that `none` as its posting time.
    #[test]
    fn a_vote_that_changes_nothing_writes_nothing() {
        let db = harness::fresh_db();
        let mut con = db.con();
        let keys = [
            "{v}:up:s",
            "{v}:down:s",
            "{v}:posted",
            "{v}:hot",
            "{v}:best",
        ];
        let cast = |con: &mut redis::Connection, user: &str, direction: &str| {
            harness::eval(con, &scripts::vote::CAST, &keys, &["s", user, direction]).unwrap()
        };
        dump_unchanged(&mut con, |con| {
            assert_eq!(cast(con, "u", "none"), Value::Int(0))
        });
        assert!(harness::dump(&mut con).is_empty());
        assert_eq!(cast(&mut con, "u", "up"), Value::Int(1));
        dump_unchanged(&mut con, |con| {
            assert_eq!(cast(con, "u", "up"), Value::Int(0));
            assert_eq!(cast(con, "other", "none"), Value::Int(0));
        });
        assert_eq!(cast(&mut con, "u", "none"), Value::Int(1));
    }

    /// Numbers another client stored in a form the one integer rule refuses (`007`)
    /// were read as numbers and written back; each script now answers its declared code
    /// and writes nothing.
    #[test]
    fn stored_numbers_follow_the_one_rule_in_every_script() {
        let db = harness::fresh_db();
        let mut con = db.con();
        let refused = |con: &mut redis::Connection,
                       setup: &[&[&str]],
                       script: &Script,
                       keys: &[&str],
                       args: &[&str],
                       code: &str| {
            harness::cmd(con, &["FLUSHDB"]);
            for command in setup {
                harness::cmd(con, command);
            }
            dump_unchanged(con, |con| {
                assert_code(harness::eval(con, script, keys, args), code);
            });
        };
        let url = [
            "{u}:id_counter",
            "{u}:mapping_hash",
            "{u}:expiries",
            "{u}:limits",
        ];
        for counter in ["007", "00", "-1", "9007199254740992"] {
            let set: &[&[&str]] = &[&["SET", "{u}:id_counter", counter]];
            refused(
                &mut con,
                set,
                &scripts::short_url::SHORTEN,
                &url,
                &["https://a", "", ""],
                "BAD_COUNTER",
            );
            refused(
                &mut con,
                set,
                &scripts::short_url::SHORTEN_CACHED,
                &["{u}:id_counter", "{u}:mapping_hash", "{u}:mapping_cache"],
                &["https://a"],
                "BAD_COUNTER",
            );
        }
        let link = [
            "{u}:mapping_hash",
            "{u}:expiries",
            "{u}:limits",
            "{u}:visits",
        ];
        for (script, args) in [
            (&scripts::short_url::VISIT, &["s"][..]),
            (&scripts::short_url::RESTORE, &["s"][..]),
            (&scripts::short_url::CLAIM, &["s", "https://b", "", ""][..]),
        ] {
            let linked: &[&str] = &["HSET", "{u}:mapping_hash", "s", "https://a"];
            refused(
                &mut con,
                &[linked, &["HSET", "{u}:limits", "s", "007"]],
                script,
                &link,
                args,
                "BAD_LIMITS",
            );
            refused(
                &mut con,
                &[linked, &["HSET", "{u}:visits", "s", "01"]],
                script,
                &link,
                args,
                "BAD_VISITS",
            );
        }
        refused(
            &mut con,
            &[&["HSET", "{v}:posted", "s", "007"]],
            &scripts::vote::CAST,
            &[
                "{v}:up:s",
                "{v}:down:s",
                "{v}:posted",
                "{v}:hot",
                "{v}:best",
            ],
            &["s", "u", "up"],
            "BAD_POSTED",
        );
        let id = redis_patterns::session::session_id("token");
        refused(
            &mut con,
            &[
                &["ZADD", "{s:u}:sessions", "99999999999999", &id],
                &["HSET", "{s:u}:records", &format!("t:{id}"), "03600000"],
            ],
            &scripts::session::VALIDATE,
            &["{s:u}:sessions", "{s:u}:records"],
            &["token", "1", "0"],
            "BAD_RECORD",
        );
        for start in ["03600", "3601", "-3600"] {
            let set: &[&[&str]] = &[&["SET", "common:{l:info}:start", start]];
            refused(
                &mut con,
                set,
                &scripts::app_log::COMMON,
                &[
                    "common:{l:info}",
                    "common:{l:info}:start",
                    "common:{l:info}:last",
                    "common:{l:info}:pstart",
                    "recent:{l:info}",
                ],
                &["m", "100"],
                "BAD_START",
            );
            let set: &[&[&str]] = &[&["SET", "{t:c:k}:start", start]];
            refused(
                &mut con,
                set,
                &scripts::stats::UPDATE,
                &["{t:c:k}", "{t:c:k}:start", "{t:c:k}:last", "{t:c:k}:pstart"],
                &["1.5", "7200000"],
                "BAD_START",
            );
        }
        for tat in ["007", "01.5", "-1", "1e999", "nan"] {
            refused(
                &mut con,
                &[&["SET", "rl:u:tat", tat]],
                &scripts::rate_limiter::GCRA,
                &["rl:u:tat"],
                &["10", "3", "1000", "1"],
                "BAD_TAT",
            );
        }
        refused(
            &mut con,
            &[&["HSET", "{c}:count:1:x", "1", "007"]],
            &scripts::time_series::UPDATE,
            &["{c}:known", "{c}:count:1:x"],
            &["x", "1", "1000", "1"],
            "BAD_SAMPLE",
        );
        let paged = ["{p}", "{p}:added"];
        refused(
            &mut con,
            &[&["SET", "{p}:added", "007"]],
            &scripts::pagination::ADD,
            &paged,
            &["a"],
            "BAD_ADDED",
        );
        refused(
            &mut con,
            &[&["SET", "{p}:added", "007"]],
            &scripts::pagination::PAGE,
            &paged,
            &["", "10"],
            "BAD_ADDED",
        );
        refused(
            &mut con,
            &[&["HSET", "{q}:jobs", "#seq", "007"]],
            &scripts::work_queue::ADD,
            &[
                "{q}:waiting",
                "{q}:delayed",
                "{q}:parked",
                "{q}:jobs",
                "{q}:signal",
                "{q}:events",
                "{q}:turns",
            ],
            &[
                "j", "payload", "0", "0", "", "0", "worker", "0", "0", "0", "0", "0", "",
            ],
            "BAD_JOBS",
        );
        let queue = redis_patterns::work_queue::WorkQueue::new("q").unwrap();
        let nack_keys = crate::work_queue::keys_of(&queue, &scripts::work_queue::NACK);
        let ack_keys = crate::work_queue::keys_of(&queue, &scripts::work_queue::ACK);
        // Retry options stored as `007` attempts are not 7 attempts.
        refused(
            &mut con,
            &[&[
                "HSET",
                "{q}:jobs",
                "s:j",
                "leased",
                "t:j",
                "7",
                "r:j",
                "1",
                "n:j",
                "1",
                "o:j",
                "007 w 0 0",
            ]],
            &scripts::work_queue::NACK,
            &nack_keys,
            &["j", "7", "0", "5", "why"],
            "BAD_JOBS",
        );
        // A token stored as `007` is not the token 7.
        refused(
            &mut con,
            &[&[
                "HSET", "{q}:jobs", "s:j", "leased", "t:j", "007", "r:j", "1", "n:j", "1",
            ]],
            &scripts::work_queue::ACK,
            &ack_keys,
            &["j", "7", ""],
            "LEASE_LOST",
        );
        refused(
            &mut con,
            &[&[
                "HSET", "{q}:jobs", "s:j", "leased", "t:j", "7", "r:j", "1", "n:j", "01",
            ]],
            &scripts::work_queue::NACK,
            &nack_keys,
            &["j", "7", "0", "5", "failed"],
            "BAD_JOBS",
        );
        refused(
            &mut con,
            &[&["HSET", "{q}:jobs", "s:j", "dead", "r:j", "0010000000000001"]],
            &scripts::work_queue::REQUEUE,
            &[
                "{q}:waiting",
                "{q}:dead",
                "{q}:jobs",
                "{q}:signal",
                "{q}:events",
            ],
            &["j"],
            "BAD_JOBS",
        );
        refused(
            &mut con,
            &[&["ZADD", "{i}:ip2cityid", "5", "c_005"]],
            &scripts::ip_city::FIND,
            &["{i}:ip2cityid", "{i}:cityid2city"],
            &["5"],
            "BAD_BLOCK",
        );
        refused(
            &mut con,
            &[&["ZADD", "rl:u:log", "1", "0000000000000000:007"]],
            &scripts::rate_limiter::SLIDING_WINDOW,
            &["rl:u:log"],
            &["10", "1000", "1"],
            "BAD_LOG",
        );
    }

    /// A group's running count that is no count: `ack` refuses before it writes, and
    /// `take` refuses with the job it popped back in its place.
    #[test]
    fn a_damaged_group_count_changes_no_job() {
        let db = harness::fresh_db();
        let mut con = db.con();
        let queue = redis_patterns::work_queue::WorkQueue::new("q").unwrap();
        let keys: Vec<String> = queue.keys().iter().map(|k| k.to_string()).collect();
        let key = |name: &str| keys.iter().find(|k| k.ends_with(name)).unwrap().as_str();
        harness::cmd(&mut con, &["ZADD", key("waiting"), "2550000000000001", "j"]);
        harness::cmd(
            &mut con,
            &[
                "HSET",
                key("jobs"),
                "d:j",
                "p",
                "s:j",
                "waiting",
                "r:j",
                "2550000000000001",
                "n:j",
                "0",
                "g:j",
                "g",
            ],
        );
        harness::cmd(&mut con, &["HSET", key("groups"), "r:g", "007"]);
        let all: Vec<&str> = keys.iter().map(String::as_str).collect();
        dump_unchanged(&mut con, |con| {
            assert_code(
                harness::eval(
                    con,
                    &scripts::work_queue::TAKE,
                    &all,
                    &["60000", "1", "3", "0123456789abcdef0123456789abcdef"],
                ),
                "BAD_GROUPS",
            );
        });
        harness::cmd(
            &mut con,
            &["HSET", key("jobs"), "s:j", "leased", "t:j", "1"],
        );
        harness::cmd(&mut con, &["ZREM", key("waiting"), "j"]);
        harness::cmd(&mut con, &["ZADD", key("leased"), "99999999999999", "j"]);
        let ack = crate::work_queue::keys_of(&queue, &scripts::work_queue::ACK);
        dump_unchanged(&mut con, |con| {
            assert_code(
                harness::eval(con, &scripts::work_queue::ACK, &ack, &["j", "1", ""]),
                "BAD_GROUPS",
            );
        });
    }

    /// `false` from Lua reaches a client as nil: `claim` and `requeue` answered nil
    /// where their headers say 0.
    #[test]
    fn a_false_bool_is_the_integer_zero() {
        let db = harness::fresh_db();
        let mut con = db.con();
        let link = [
            "{u}:mapping_hash",
            "{u}:expiries",
            "{u}:limits",
            "{u}:visits",
        ];
        let claim = |con: &mut redis::Connection| {
            harness::eval(
                con,
                &scripts::short_url::CLAIM,
                &link,
                &["s", "https://a", "", ""],
            )
            .unwrap()
        };
        assert_eq!(claim(&mut con), Value::Int(1));
        assert_eq!(claim(&mut con), Value::Int(0));
        let requeue = harness::eval(
            &mut con,
            &scripts::work_queue::REQUEUE,
            &[
                "{q}:waiting",
                "{q}:dead",
                "{q}:jobs",
                "{q}:signal",
                "{q}:events",
            ],
            &["j"],
        );
        assert_eq!(requeue.unwrap(), Value::Int(0));
    }

    /// OVERFLOW was decided with a float bound (`>= 9e18`), refusing counts that fit
    /// in 64 bits, and the reply lost digits past 2^53.
    #[test]
    fn time_series_counts_are_exact_to_64_bits() {
        let db = harness::fresh_db();
        let mut con = db.con();
        let keys = ["{c}:known", "{c}:count:1:x"];
        for (held, count, after) in [
            ("9000000000000000000", "1", "9000000000000000001"),
            ("9223372036854775807", "-1", "9223372036854775806"),
            ("9223372036854775000", "807", "9223372036854775807"),
            ("-9223372036854775807", "-1", "-9223372036854775808"),
            (
                "-9223372036854775808",
                "999999999999999",
                "-9222372036854775809",
            ),
            ("-5", "3", "-2"),
            ("-10000000000", "10000000000", "0"),
            ("-10000000001", "1", "-10000000000"),
        ] {
            harness::cmd(&mut con, &["HSET", keys[1], "1", held]);
            let reply = harness::eval(
                &mut con,
                &scripts::time_series::UPDATE,
                &keys,
                &["x", count, "1000", "1"],
            );
            assert_eq!(reply.unwrap(), bulk(after), "{held} + {count}");
            let stored: String = redis::cmd("HGET")
                .arg(keys[1])
                .arg("1")
                .query(&mut con)
                .unwrap();
            assert_eq!(stored, after);
        }
        // The Rust API reads the exact count too.
        let series = redis_patterns::time_series::TimeSeries::new("c")
            .unwrap()
            .with_precisions(&[1])
            .unwrap();
        let hash = series.count_key("y", 1).unwrap();
        harness::cmd(&mut con, &["HSET", &hash, "1", "9007199254740993"]);
        let count = series.update_counter("y", 2, 1000).run(&mut con).unwrap();
        assert_eq!(count, 9_007_199_254_740_995);
    }

    /// `shorten` refused when the counter held 2^53 - 2 while its header said every id
    /// up to 2^53 is handed out; now the largest id is 2^53 - 1, as the header says.
    #[test]
    fn shorten_hands_out_every_id_up_to_2_pow_53_minus_1() {
        let db = harness::fresh_db();
        let mut con = db.con();
        let keys = [
            "{u}:id_counter",
            "{u}:mapping_hash",
            "{u}:expiries",
            "{u}:limits",
        ];
        harness::cmd(&mut con, &["SET", keys[0], "9007199254740990"]);
        let id = harness::eval(
            &mut con,
            &scripts::short_url::SHORTEN,
            &keys,
            &["https://a", "", ""],
        );
        assert_eq!(id.unwrap(), bulk("FfGNdXsE7"));
        assert_eq!(
            redis_patterns::short_url::base62((1 << 53) - 1),
            "FfGNdXsE7"
        );
        dump_unchanged(&mut con, |con| {
            assert_code(
                harness::eval(
                    con,
                    &scripts::short_url::SHORTEN,
                    &keys,
                    &["https://b", "", ""],
                ),
                "BAD_COUNTER",
            );
        });
    }
}
