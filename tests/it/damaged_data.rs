//! Data that the scripts did not write, of the type each key holds: a foreign member,
//! field or value, chosen to look like what the script reads (a zset member named like
//! its arguments at score 0, a hash field named like its own fields holding no number, a
//! string that is no number). For every script of the catalogue and each of its keys,
//! the script's valid call must then either succeed, or answer a code the script
//! declares with the keyspace byte for byte as it was: never a raw Lua error, never an
//! error after a write (a half-done call, or an item lost on the way), and never a reply
//! of another type than its header states (an infinity where a float or a count goes).
//! Driven by the catalogue, so a new script is covered the day it lands.

use std::collections::BTreeSet;

use redis_patterns::{Script, catalog};

use crate::contract::{prepare, valid_call};
use crate::harness;

/// What a foreign string, hash value or list item holds: no number, an empty string,
/// numbers in forms the scripts never write, and numbers beyond what a double holds
/// exactly or what 64 bits hold.
const VALUES: &[&str] = &[
    "abc",
    "",
    "007",
    "-1",
    "1.5",
    "0",
    "9007199254740993",
    "9223372036854775807",
    "99999999999999999999",
];

/// The scores a foreign zset member gets.
const SCORES: &[&str] = &["0", "-1", "1.5", "inf"];

/// Names the script may look up: the values of its valid call's arguments (and `x`) and
/// their SHA1s (some scripts name a record by its token's hash), the composite members
/// the scripts build from such values, the short string literals of its body (field
/// names and prefixes such as `s:` or `#seq`), and each literal that ends with a
/// separator followed by each value.
fn plausible_names(con: &mut redis::Connection, script: &Script, args: &[String]) -> Vec<String> {
    // `x`, the valid call's string, also for a script with no arguments.
    let mut values: BTreeSet<String> = args.iter().cloned().chain(["x".to_string()]).collect();
    for arg in args {
        let sha1: String = redis::cmd("EVAL")
            .arg("return redis.sha1hex(ARGV[1])")
            .arg(0)
            .arg(arg)
            .query(con)
            .unwrap();
        values.insert(sha1);
    }
    // The script without its input checks: its own code and the helpers pasted before them.
    let (before, after) = script
        .source
        .split_once("-- Input checks, generated")
        .unwrap_or((script.source, ""));
    let after = after
        .split_once("-- End of the generated input checks.")
        .map_or(after, |(_, rest)| rest);
    let body = format!("{before}{after}");
    let mut literals = BTreeSet::new();
    // Line by line, comments left out (their apostrophes are no quotes).
    let code = body
        .lines()
        .filter(|line| !line.trim_start().starts_with("--"));
    for (line, quote) in code.flat_map(|line| [(line, '\''), (line, '"')]) {
        for (i, piece) in line.split(quote).enumerate() {
            let name_like = (1..=24).contains(&piece.len())
                && piece
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"#:_.-".contains(&b))
                // Commands and their options (`ZADD`, `LIMIT`) name nothing stored.
                && !piece.bytes().all(|b| b.is_ascii_uppercase());
            if i % 2 == 1 && name_like {
                literals.insert(piece.to_owned());
            }
        }
    }
    let mut names: BTreeSet<String> = values.clone();
    // Around each value: a parked job of that group (the group's length in 8 hex digits,
    // the group, a 16-digit rank, the job), the same with `123`, no rank, where the rank
    // goes, and a rate log's entry (16 digits, `:`, a count).
    for value in &values {
        let length = format!("{:08x}{value}", value.len());
        names.insert(format!("{length}123"));
        names.insert(format!("{length}{:016}{value}", 1));
        names.insert(format!("{:016}:{value}", 0));
    }
    for literal in &literals {
        names.insert(literal.clone());
        if literal.ends_with([':', '#', '.', '_', '-']) {
            for value in &values {
                names.insert(format!("{literal}{value}"));
            }
        }
    }
    names.into_iter().collect()
}

/// Each way of putting foreign data of type `ty` in a key: the command, with `{k}` for the
/// key, described.
fn fills(ty: &str, names: &[String]) -> Vec<(String, Vec<String>)> {
    let cmd = |parts: &[&str]| parts.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    let mut out = Vec::new();
    match ty {
        "string" => {
            for value in VALUES
                .iter()
                .copied()
                .chain(names.iter().map(String::as_str))
            {
                out.push((format!("the value {value:?}"), cmd(&["SET", "{k}", value])));
            }
        }
        "hash" => {
            for name in names {
                for value in VALUES {
                    out.push((
                        format!("the field {name:?} = {value:?}"),
                        cmd(&["HSET", "{k}", name, value]),
                    ));
                }
            }
        }
        "list" => {
            for item in VALUES
                .iter()
                .copied()
                .chain(names.iter().map(String::as_str))
            {
                out.push((format!("the item {item:?}"), cmd(&["RPUSH", "{k}", item])));
            }
        }
        "set" => {
            for member in names {
                out.push((
                    format!("the member {member:?}"),
                    cmd(&["SADD", "{k}", member]),
                ));
            }
        }
        "zset" => {
            for member in names {
                for score in SCORES {
                    out.push((
                        format!("the member {member:?} at {score}"),
                        cmd(&["ZADD", "{k}", score, member]),
                    ));
                }
            }
        }
        "stream" => {
            for name in names {
                out.push((
                    format!("an entry with the field {name:?}"),
                    cmd(&["XADD", "{k}", "*", name, "abc"]),
                ));
            }
        }
        "any" => {
            for ty in ["string", "hash", "list", "set", "zset", "stream"] {
                for (what, command) in fills(ty, names) {
                    out.push((format!("a {ty}: {what}"), command));
                }
            }
        }
        other => panic!("no foreign data for a key of type {other}"),
    }
    out
}

/// State that takes a script's body past its early answers, so that foreign data meets
/// the code that reads it: a job of a group with a lapsed lease, a due delayed job and a
/// group due to wake beside `take`'s acked job; a live session; a link; an item on a
/// board; pins; the current hour's statistics; a held resource; a posted subject; a
/// registered user. Each is written as the family's scripts write it, under the names
/// of the valid call.
fn deepen(con: &mut redis::Connection, script: &Script, keys: &[String]) {
    let key = |name: &str| -> String {
        let at = script.keys.iter().position(|k| k.name == name);
        keys[at.unwrap_or_else(|| panic!("{}: no key {name}", script.name))].clone()
    };
    let has = |name: &str| script.keys.iter().any(|k| k.name == name);
    let now = harness::server_ms(con);
    let later = (now + 3_600_000).to_string();
    let (family, op) = script.name.split_once('/').unwrap();
    let mut commands: Vec<Vec<String>> = Vec::new();
    let owned = |parts: &[&str]| -> Vec<String> { parts.iter().map(|p| p.to_string()).collect() };
    let job = |id: &str, state: &str, rank: &str, group: Option<&str>| -> Vec<String> {
        let mut fields = vec!["HSET".to_string(), key("jobs")];
        for (field, value) in [("d", "payload"), ("s", state), ("r", rank), ("n", "1")] {
            fields.extend([format!("{field}:{id}"), value.to_string()]);
        }
        if let Some(group) = group {
            fields.extend([format!("g:{id}"), group.to_string()]);
        }
        fields
    };
    match (family, op) {
        ("work_queue", "ack" | "extend" | "nack") => {
            // The leased job x of `prepare` runs in group x.
            commands.push(owned(&["HSET", &key("jobs"), "g:x", "x"]));
            if has("groups") {
                commands.push(owned(&["HSET", &key("groups"), "r:x", "1"]));
            }
        }
        ("work_queue", "take") => {
            // Beside job x of `prepare`, which `take` acks first: job 1 of group x,
            // whose lease ran out; job 3600000 of group x, due; and group x, due to wake.
            commands.push(job("1", "leased", "2550000000000002", Some("x")));
            commands.push(owned(&["HSET", &key("jobs"), "t:1", "zz"]));
            commands.push(owned(&["ZADD", &key("leased"), "1", "1"]));
            commands.push(owned(&["HSET", &key("groups"), "r:x", "1"]));
            commands.push(job("3600000", "delayed", "2550000000000003", Some("x")));
            commands.push(owned(&["ZADD", &key("delayed"), "1", "3600000"]));
            commands.push(owned(&["ZADD", &key("wake"), "1", "x"]));
        }
        ("work_queue", "remove") => {
            commands.push(job("x", "parked", "2550000000000001", Some("x")));
            commands.push(owned(&[
                "ZADD",
                &key("parked"),
                "0",
                "00000001x2550000000000001x",
            ]));
        }
        ("work_queue", "requeue") => {
            commands.push(job("x", "dead", "2550000000000001", None));
            commands.push(owned(&["ZADD", &key("dead"), "1", "x"]));
        }
        ("work_queue", "job") => {
            commands.push(job("x", "leased", "2550000000000001", Some("x")));
            commands.push(owned(&["ZADD", &key("leased"), &later, "x"]));
        }
        ("work_queue", "list") => {
            commands.push(job("x", "waiting", "2550000000000001", Some("x")));
            commands.push(owned(&["ZADD", &key("waiting"), "2550000000000001", "x"]));
        }
        ("session", _) => {
            // The session of token x (its id is the token's SHA1), and for `end`, which
            // takes ids, one named x.
            let id: String = redis::cmd("EVAL")
                .arg("return redis.sha1hex(ARGV[1])")
                .arg(0)
                .arg("x")
                .query(con)
                .unwrap();
            commands.push(owned(&["ZADD", &key("sessions"), &later, &id]));
            if has("records") {
                commands.push(owned(&[
                    "HSET",
                    &key("records"),
                    &format!("t:{id}"),
                    "3600000",
                ]));
            }
            if op == "end" {
                commands.push(owned(&["ZADD", &key("sessions"), &later, "x"]));
            }
        }
        ("short_url", _) if has("links") => {
            commands.push(owned(&["HSET", &key("links"), "x", "https://a"]));
            if op == "purge" {
                commands.push(owned(&["ZADD", &key("expiries"), "1", "x"]));
            }
        }
        ("leaderboard", _) => {
            commands.push(owned(&["ZADD", &keys[0], "5", "x"]));
            commands.push(owned(&["ZADD", &keys[1], "5", "5"]));
        }
        ("geo", _) => {
            commands.push(owned(&[
                "GEOADD",
                &key("places"),
                "13.36",
                "38.11",
                "x",
                "13.37",
                "38.12",
                "y",
            ]));
        }
        // The hour of the valid call's `now`, 1 ms.
        ("stats", "update") => commands.push(owned(&["SET", &key("start"), "0"])),
        ("app_log", "common") => {
            let hour = (now / 3_600_000 * 3600).to_string();
            commands.push(owned(&["SET", &key("start"), &hour]));
        }
        ("resource_pool", _) => {
            if has("occupied") {
                commands.push(owned(&["SADD", &key("occupied"), "x"]));
            }
            if has("leases") {
                commands.push(owned(&["ZADD", &key("leases"), &later, "x"]));
            }
            if has("holders") {
                commands.push(owned(&["HSET", &key("holders"), "x", "x"]));
            }
        }
        ("vote", _) if has("posted") => {
            commands.push(owned(&["HSET", &key("posted"), "x", &now.to_string()]));
            commands.push(owned(&["SADD", &key("up"), "y"]));
        }
        ("semaphore", _) => {
            // Holder x's lease ran out (1 permit), and y waits in line.
            if has("held") {
                commands.push(owned(&["HSET", &key("held"), "x", "1"]));
                commands.push(owned(&["ZADD", &key("leases"), "1", "x"]));
                commands.push(owned(&["HSET", &key("state"), "used", "1"]));
            }
            if has("places") {
                commands.push(owned(&["ZADD", &key("places"), &later, "y"]));
            }
            if has("queue") {
                commands.push(owned(&["ZADD", &key("queue"), "1", "y"]));
            }
        }
        // User x registered, with the id x.
        ("user_login", "login") => commands.push(owned(&["HSET", &key("ids"), "x", "x"])),
        // The valid call's token (32 zeros) holds what each op acts on; y is a live
        // holder or waiter, z a lapsed one.
        ("rw_lock", _) => {
            let token = "0".repeat(32);
            if matches!(op, "release_write" | "downgrade" | "extend") {
                commands.push(owned(&[
                    "HSET",
                    &key("writer"),
                    "t",
                    &token,
                    "n",
                    "2",
                    "f",
                    "1",
                ]));
                commands.push(owned(&["PEXPIRE", &key("writer"), "3600000"]));
            }
            if matches!(op, "release_read" | "acquire_read" | "extend") {
                commands.push(owned(&["ZADD", &key("readers"), &later, &token]));
                commands.push(owned(&["HSET", &key("read_holds"), &token, "2"]));
            }
            if op == "acquire_write" {
                commands.push(owned(&["ZADD", &key("readers"), &later, "y"]));
                commands.push(owned(&["HSET", &key("read_holds"), "y", "1"]));
            }
            if matches!(op, "acquire_read" | "acquire_write") {
                commands.push(owned(&["ZADD", &key("readers"), "1", "z"]));
                commands.push(owned(&["HSET", &key("read_holds"), "z", "1"]));
                commands.push(owned(&["ZADD", &key("intents"), "1", "z"]));
            }
            if op == "withdraw" {
                commands.push(owned(&["ZADD", &key("intents"), &later, &token]));
            }
        }
        ("fair_lock", _) => {
            let token = "0".repeat(32);
            if matches!(op, "release" | "extend") {
                commands.push(owned(&["HSET", &key("owner"), "t", &token, "f", "1"]));
                commands.push(owned(&["PEXPIRE", &key("owner"), "3600000"]));
            }
            if op == "acquire" {
                commands.push(owned(&["ZADD", &key("queue"), "1", "y", "2", "z"]));
                commands.push(owned(&["ZADD", &key("places"), &later, "y", "1", "z"]));
            }
            if op == "cancel" {
                commands.push(owned(&["ZADD", &key("queue"), "1", &token]));
                commands.push(owned(&["ZADD", &key("places"), &later, &token]));
            }
        }
        ("rate_limiter", "sliding_window") => {
            let micros = (now * 1000).to_string();
            commands.push(owned(&["ZADD", &key("log"), &micros, "0000000000000000:1"]));
        }
        _ => {}
    }
    for command in commands {
        let parts: Vec<&str> = command.iter().map(String::as_str).collect();
        harness::cmd(con, &parts);
    }
}

/// The reply of `script` run with `keys` and `args`, as it came (no type check).
fn run(
    con: &mut redis::Connection,
    script: &Script,
    keys: &[String],
    args: &[String],
) -> redis::RedisResult<redis::Value> {
    redis::cmd("EVAL")
        .arg(script.source)
        .arg(keys.len())
        .arg(keys)
        .arg(args)
        .query(con)
}

/// A hash field that no script writes or names.
const UNKNOWN_FIELD: &str = "bogus";

/// The code that `script` declares for a field of hash `key` that these scripts never
/// write (`` `state` holds a field these scripts never write ``): the hash is a record
/// of known fields, and a call that meets another one must be refused.
fn field_refusal(script: &Script, key: &str) -> Option<&'static str> {
    let says = format!("`{key}` holds a field these scripts never write");
    script
        .errors
        .iter()
        .find(|error| error.doc.starts_with(&says))
        .map(|error| error.code)
}

/// What is wrong with a run of `script` that must answer `code` and change nothing.
fn refuses_with(
    con: &mut redis::Connection,
    script: &Script,
    keys: &[String],
    args: &[String],
    code: &str,
) -> Option<String> {
    let before = harness::dump(con);
    let reply = run(con, script, keys, args);
    match reply {
        Err(err) if err.code() == Some(code) && harness::dump(con) == before => None,
        Err(err) if err.code() == Some(code) => Some(format!("wrote, then answered {err}")),
        other => Some(format!(
            "answered {other:?}, where its header declares {code}"
        )),
    }
}

/// Read-only scripts whose header says they answer what they read as it is stored, so
/// that a foreign item may come back in the reply: checking each of 8,192 cells would
/// cost more than the read itself (the Rust API refuses such a cell as it decodes).
const ANSWERED_AS_STORED: &[&str] = &["matrix/list_get_all"];

/// What is wrong with a run of `script` on foreign data, if anything: an undeclared error
/// (a raw Lua error), an error after a write, or a reply of another type than its header
/// states.
fn judge(
    con: &mut redis::Connection,
    script: &Script,
    keys: &[String],
    args: &[String],
) -> Option<String> {
    let before = harness::dump(con);
    let reply = run(con, script, keys, args);
    match reply {
        Ok(value) => {
            let ty: String = script.returns.ty.split_whitespace().collect();
            if let Err(why) = harness::reply_matches(&ty, &value) {
                if ANSWERED_AS_STORED.contains(&script.name) {
                    return None;
                }
                return Some(format!(
                    "answered {value:?}, not a `{}`: {why}",
                    script.returns.ty
                ));
            }
            // What a Lua number that is no integer (an infinity, NaN) becomes as an
            // integer reply: the answer is no count or time the script computed.
            fn holds_min(value: &redis::Value) -> bool {
                match value {
                    redis::Value::Int(n) => *n == i64::MIN,
                    redis::Value::Array(items) => items.iter().any(holds_min),
                    _ => false,
                }
            }
            holds_min(&value)
                .then(|| format!("answered {value:?}: -2^63 is an infinity turned integer"))
        }
        Err(err) => {
            let code = err.code().unwrap_or("");
            if !script.declares_error(code) {
                Some(format!("an undeclared error: {err}"))
            } else if harness::dump(con) != before {
                Some(format!("wrote, then answered {err}"))
            } else {
                None
            }
        }
    }
}

#[test]
fn every_script_refuses_foreign_data_before_it_writes() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let mut failures = Vec::new();
    let mut runs = 0;
    for script in catalog::scripts() {
        // The call, and so the keys, that reach the script's body, and the state it is
        // run on, kept to be put back before each run.
        harness::cmd(&mut con, &["FLUSHDB"]);
        let (mut keys, mut args) = valid_call(script);
        prepare(&mut con, script, &mut keys, &mut args);
        deepen(&mut con, script, &keys);
        let names = plausible_names(&mut con, script, &args);
        let base = snapshot(&mut con);
        // The state alone, with no foreign data, is one the script answers.
        runs += 1;
        if let Some(wrong) = judge(&mut con, script, &keys, &args) {
            failures.push(format!("{}: with no foreign data: {wrong}", script.name));
        }
        let mut at = 0;
        for param in script.keys {
            let count = if param.variadic { keys.len() - at } else { 1 };
            for key in &keys[at..at + count] {
                for (what, command) in fills(param.ty, &names) {
                    let mut pipe = base.clone();
                    let mut fill = redis::cmd(&command[0]);
                    for part in &command[1..] {
                        fill.arg(if part == "{k}" { key } else { part });
                    }
                    pipe.add_command(fill).ignore();
                    pipe.exec(&mut con)
                        .unwrap_or_else(|err| panic!("{what}: {err}"));
                    runs += 1;
                    if let Some(wrong) = judge(&mut con, script, &keys, &args) {
                        failures.push(format!(
                            "{}: `{}` holds {what}: {wrong}",
                            script.name, param.name
                        ));
                    }
                }
                if param.ty == "hash" {
                    // A field no script writes or looks up: refused where the header says
                    // so, else no harm.
                    let mut pipe = base.clone();
                    pipe.cmd("HSET")
                        .arg(key)
                        .arg(UNKNOWN_FIELD)
                        .arg("1")
                        .ignore();
                    pipe.exec(&mut con).unwrap();
                    runs += 1;
                    let wrong = match field_refusal(script, param.name) {
                        Some(code) => refuses_with(&mut con, script, &keys, &args, code),
                        None => judge(&mut con, script, &keys, &args),
                    };
                    if let Some(wrong) = wrong {
                        failures.push(format!(
                            "{}: `{}` holds the field {UNKNOWN_FIELD:?}: {wrong}",
                            script.name, param.name
                        ));
                    }
                }
            }
            at += count;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {runs} runs on foreign data went wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The commands that put the database back as it is now (FLUSHDB, then each key restored
/// with its time to live), in one round trip.
fn snapshot(con: &mut redis::Connection) -> redis::Pipeline {
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(con).unwrap();
    let mut pipe = redis::pipe();
    pipe.cmd("FLUSHDB").ignore();
    for key in keys {
        let (value, pttl): (Vec<u8>, i64) = redis::pipe()
            .cmd("DUMP")
            .arg(&key)
            .cmd("PTTL")
            .arg(&key)
            .query(con)
            .unwrap();
        pipe.cmd("RESTORE")
            .arg(&key)
            .arg(pttl.max(0))
            .arg(value)
            .ignore();
    }
    pipe
}

/// What the sweep and a reading of every script found: each test failed before its fix.
mod found {
    use std::time::Duration;

    use redis_patterns::catalog;
    use redis_patterns::work_queue::{Job, JobOptions, Limits, Settings, State, WorkQueue};

    /// Sets `limits` for each group of `queue`, in Redis.
    fn limit_groups(con: &mut redis::Connection, queue: &WorkQueue, limits: Limits) {
        queue
            .configure(&Settings::new().group_limits(limits))
            .run(con)
            .unwrap();
    }

    use crate::contract::{keys_for, valid_call};
    use crate::harness::{self, assert_code};

    /// The valid call of script `name`, with the arguments `changed` (position, value; one
    /// more at the end), on
    /// the state the `setup` commands write (`@<key>` stands for the script's key of that
    /// name): it answers `code`, and the keyspace is byte for byte as it was.
    fn refused(name: &str, changed: &[(usize, &str)], setup: &[&[&str]], code: &str) {
        let script = catalog::find(name).unwrap();
        let (_, mut args) = valid_call(script);
        for (at, value) in changed {
            if *at == args.len() {
                args.push(value.to_string());
            } else {
                args[*at] = value.to_string();
            }
        }
        let keys = keys_for(script, &args);
        let db = harness::fresh_db();
        let mut con = db.con();
        for command in setup {
            let parts: Vec<&str> = command
                .iter()
                .map(|part| match part.strip_prefix('@') {
                    Some(key) => {
                        let at = script.keys.iter().position(|k| k.name == key).unwrap();
                        keys[at].as_str()
                    }
                    None => part,
                })
                .collect();
            harness::cmd(&mut con, &parts);
        }
        let before = harness::dump(&mut con);
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_code(harness::eval(&mut con, script, &keys, &args), code);
        assert_eq!(
            harness::dump(&mut con),
            before,
            "{name}: the keyspace changed"
        );
    }

    /// The SHA1 of token `x`: the id of its session.
    const SESSION_X: &str = "11f6ad8ec52a2984abaafd7c3b516503785c2072";

    /// A session whose deadline another client set to an infinity: `validate` (sliding),
    /// `end` and `create` wrote, then failed with a raw error when they gave the keys that
    /// deadline as their expiry; `list` answered -2^63 ms left.
    #[test]
    fn a_deadline_that_is_no_time_is_refused_before_any_write() {
        let live = ["ZADD", "@sessions", "9999999999999", SESSION_X];
        let ttl = format!("t:{SESSION_X}");
        let record = ["HSET", "@records", ttl.as_str(), "3600000"];
        let other = ["ZADD", "@sessions", "inf", "other"];
        refused(
            "session/validate",
            &[],
            &[&live, &record, &other],
            "BAD_SESSIONS",
        );
        refused(
            "session/end",
            &[],
            &[&["ZADD", "@sessions", "9999999999999", "x"], &other],
            "BAD_SESSIONS",
        );
        refused("session/create", &[], &[&other], "BAD_SESSIONS");
        refused("session/list", &[], &[&other], "BAD_SESSIONS");
        // The token's own session, at a deadline that is no whole ms.
        let odd = ["ZADD", "@sessions", "9999999999999.5", SESSION_X];
        refused("session/validate", &[], &[&odd, &record], "BAD_SESSIONS");
    }

    /// A link's visit count at 2^63 - 1, which its check accepts: `visit` failed with
    /// HINCRBY's raw overflow error.
    #[test]
    fn a_visit_count_at_its_limit_is_a_declared_error() {
        refused(
            "short_url/visit",
            &[],
            &[
                &["HSET", "@links", "x", "https://a"],
                &["HSET", "@visits", "x", "9223372036854775807"],
            ],
            "BAD_VISITS",
        );
    }

    /// An item at an infinite score, or a change that overflows: `update` stored it and
    /// answered `inf`, which is no float a client can read.
    #[test]
    fn a_score_that_is_no_finite_number_is_refused() {
        refused(
            "leaderboard/update",
            &[],
            &[&["ZADD", "@board", "inf", "x"]],
            "BAD_BOARD",
        );
        refused(
            "leaderboard/update",
            &[(1, "1.7e308")],
            &[&["ZADD", "@board", "1.7e308", "x"]],
            "OVERFLOW",
        );
    }

    /// An hour's total, or a message's or user's count, that another client set to an
    /// infinity: the scripts added to it and answered `inf` (a float no client reads) or
    /// -2^63 (an infinity turned integer).
    #[test]
    fn totals_and_counts_that_are_no_numbers_are_refused() {
        refused(
            "stats/update",
            &[],
            &[&["SET", "@start", "0"], &["ZADD", "@stats", "inf", "sum"]],
            "BAD_STATS",
        );
        let db = harness::fresh_db();
        let hour = (harness::server_ms(&mut db.con()) / 3_600_000 * 3600).to_string();
        // (Unless the hour turns between here and the call, which rotates the counts away.)
        refused(
            "app_log/common",
            &[],
            &[&["SET", "@start", &hour], &["ZADD", "@common", "inf", "x"]],
            "BAD_COMMON",
        );
        refused(
            "user_login/login",
            &[],
            &[
                &["HSET", "@ids", "x", "7"],
                &["ZADD", "@counts", "1.5", "7"],
            ],
            "BAD_COUNTS",
        );
        refused(
            "web_session/update",
            &[],
            &[&["ZADD", "@recent", "inf", "x"]],
            "BAD_RECENT",
        );
    }

    /// Deadlines of members that are not pinned: `size` answered a negative count.
    #[test]
    fn more_expired_pins_than_pins_is_refused() {
        refused(
            "geo/size",
            &[],
            &[&["ZADD", "@deadlines", "1", "ghost", "2", "other"]],
            "BAD_DEADLINES",
        );
    }

    /// A log entry scored with an infinity: `sliding_window` took it for the current
    /// time, so every other entry was stale and was dropped.
    #[test]
    fn a_log_entry_at_no_time_is_refused() {
        let db = harness::fresh_db();
        let micros = (harness::server_ms(&mut db.con()) * 1000).to_string();
        refused(
            "rate_limiter/sliding_window",
            &[],
            &[
                &["ZADD", "@log", &micros, "0000000000000000:1"],
                &["ZADD", "@log", "inf", "0000000000000001:1"],
            ],
            "BAD_LOG",
        );
    }

    fn ids(jobs: &[Job]) -> Vec<(&str, u32)> {
        jobs.iter()
            .map(|job| (job.id.as_str(), job.delivery))
            .collect()
    }

    fn state(con: &mut redis::Connection, queue: &WorkQueue, id: &str) -> State {
        queue.job(id).run(con).unwrap().unwrap().state
    }

    /// A lapsed lease whose group had a member in `parked` that the scripts did not write:
    /// `take` took the job out of `leased` and dropped its token, then answered
    /// BAD_PARKED. The job was in no set, its group's running count stayed held (a group
    /// limited to one job was blocked for good), and adding the id again was refused as a
    /// duplicate. Now the call refuses before it writes, and the job comes back once the
    /// member is gone.
    #[test]
    fn a_foreign_parked_member_loses_no_lapsed_job() {
        let db = harness::fresh_db();
        let mut con = db.con();
        let queue = WorkQueue::new("q")
            .unwrap()
            .with_lease(Duration::from_millis(50))
            .unwrap();
        limit_groups(&mut con, &queue, Limits::new().concurrency(1).unwrap());
        queue
            .add_with("j", "payload", JobOptions::new().group("g"))
            .run(&mut con)
            .unwrap();
        let held = queue.take(1).run(&mut con).unwrap();
        assert_eq!(ids(&held), [("j", 1)]);
        let parked = queue.keys()[4];
        harness::cmd(&mut con, &["ZADD", parked, "0", "00000001g123"]);
        harness::wait_until_server_ms(&mut con, held[0].deadline_ms + 1);
        let before = harness::dump(&mut con);
        assert_code(queue.take(1).run(&mut con), "BAD_PARKED");
        assert_eq!(harness::dump(&mut con), before);
        assert_eq!(state(&mut con, &queue, "j"), State::Leased);
        harness::cmd(&mut con, &["ZREM", parked, "00000001g123"]);
        assert_eq!(ids(&queue.take(1).run(&mut con).unwrap()), [("j", 2)]);
    }

    /// The same member met by a group whose rate window had passed: `take` removed the
    /// group's wake entry, then answered BAD_PARKED, so its parked job waited until
    /// another job of the group ended, which might never happen.
    #[test]
    fn a_foreign_parked_member_keeps_a_groups_wake_entry() {
        let db = harness::fresh_db();
        let mut con = db.con();
        let queue = WorkQueue::new("q").unwrap();
        limit_groups(
            &mut con,
            &queue,
            Limits::new().rate(1, Duration::from_millis(50)).unwrap(),
        );
        for id in ["a", "b"] {
            queue
                .add_with(id, id, JobOptions::new().group("g"))
                .run(&mut con)
                .unwrap();
        }
        assert_eq!(ids(&queue.take(2).run(&mut con).unwrap()), [("a", 1)]);
        assert_eq!(state(&mut con, &queue, "b"), State::Parked);
        let (parked, wake) = (queue.keys()[4], queue.keys()[7]);
        harness::cmd(&mut con, &["ZADD", parked, "0", "00000001g123"]);
        let due: f64 = redis::cmd("ZSCORE")
            .arg(wake)
            .arg("g")
            .query(&mut con)
            .unwrap();
        harness::wait_until_server_ms(&mut con, due as u64 + 1);
        let before = harness::dump(&mut con);
        assert_code(queue.take(2).run(&mut con), "BAD_PARKED");
        assert_eq!(harness::dump(&mut con), before);
        harness::cmd(&mut con, &["ZREM", parked, "00000001g123"]);
        assert_eq!(ids(&queue.take(2).run(&mut con).unwrap()), [("b", 1)]);
    }

    /// A waiting job's record damaged behind jobs that were fine: `take` leased the jobs
    /// before it, then answered BAD_JOBS, so they were held under a token no worker had
    /// and used up a delivery (with one delivery allowed, they went to the dead letters
    /// without ever running).
    #[test]
    fn a_damaged_record_takes_no_job_before_it() {
        let db = harness::fresh_db();
        let mut con = db.con();
        let queue = WorkQueue::new("q").unwrap();
        for id in ["a", "b", "c"] {
            queue.add(id, id).run(&mut con).unwrap();
        }
        harness::cmd(&mut con, &["HSET", queue.keys()[5], "n:b", "abc"]);
        let before = harness::dump(&mut con);
        assert_code(queue.take(3).run(&mut con), "BAD_JOBS");
        assert_eq!(harness::dump(&mut con), before);
        harness::cmd(&mut con, &["HSET", queue.keys()[5], "n:b", "0"]);
        assert_eq!(
            ids(&queue.take(3).run(&mut con).unwrap()),
            [("a", 1), ("b", 1), ("c", 1)]
        );
    }

    /// A group's running count at an end of the 64-bit integers, which the check took for
    /// a count: `ack` deleted the job, then failed with HINCRBY's raw overflow error, and
    /// so did `take` after it had leased the job.
    #[test]
    fn a_running_count_at_the_64_bit_edge_is_refused_before_any_write() {
        let held = [
            "HSET", "@jobs", "d:x", "p", "s:x", "leased", "t:x", "x", "r:x", "1", "n:x", "1",
            "g:x", "g",
        ];
        let lease = ["ZADD", "@leased", "99999999999999", "x"];
        let running = ["HSET", "@groups", "r:g", "-9223372036854775808"];
        refused(
            "work_queue/ack",
            &[],
            &[&held, &lease, &running],
            "BAD_GROUPS",
        );
        // `take` acks job x (in no group), then takes job w of group g.
        let held = [
            "HSET", "@jobs", "d:x", "p", "s:x", "leased", "t:x", "x", "r:x", "1", "n:x", "1",
        ];
        let waiting = [
            "HSET", "@jobs", "d:w", "p", "s:w", "waiting", "r:w", "2", "n:w", "0", "g:w", "g",
        ];
        let rank = ["ZADD", "@waiting", "2", "w"];
        let running = ["HSET", "@groups", "r:g", "9223372036854775807"];
        let token = (3, "0123456789abcdef0123456789abcdef");
        refused(
            "work_queue/take",
            &[token, (5, "x"), (6, "")],
            &[&held, &lease, &waiting, &rank, &running],
            "BAD_GROUPS",
        );
    }

    /// A start time of a group's rate ring that is no time, read after this call took
    /// another job: the taken job was leased under a token no worker got.
    #[test]
    fn a_damaged_start_time_takes_no_job_before_it() {
        let db = harness::fresh_db();
        let mut con = db.con();
        let queue = WorkQueue::new("q").unwrap();
        limit_groups(
            &mut con,
            &queue,
            Limits::new().rate(1, Duration::from_secs(3600)).unwrap(),
        );
        queue.add("a", "a").run(&mut con).unwrap();
        queue
            .add_with("b", "b", JobOptions::new().group("g"))
            .run(&mut con)
            .unwrap();
        // A ring of one start time, as take.lua writes it, but that time is no time.
        harness::cmd(
            &mut con,
            &[
                "HSET",
                queue.keys()[6],
                "p:g",
                "1",
                "z:g",
                "1",
                "s:g:0",
                "abc",
            ],
        );
        let before = harness::dump(&mut con);
        assert_code(queue.take(2).run(&mut con), "BAD_GROUPS");
        assert_eq!(harness::dump(&mut con), before);
    }
}
