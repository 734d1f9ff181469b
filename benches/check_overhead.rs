//! What the generated input checks cost in server time, and `rate_limiter/gcra` beside
//! go-redis/redis_rate's `allowN`.
//!
//! ```sh
//! cargo bench --bench check_overhead                  # 10 rounds of 1,000 calls per variant
//! ROUNDS=10 CALLS=2000 cargo bench --bench check_overhead
//! REDIS_RATE_LUA=/path/to/lua.go cargo bench --bench check_overhead
//! SHOW_BARE=1 cargo bench --bench check_overhead      # print what replaces each block
//! ```
//!
//! 1. Each script runs as shipped and as a bare variant built here at run time from the
//!    script's source and metadata: the block between `-- Input checks, generated …` and
//!    `-- End of the generated input checks.` is replaced by plain bindings (`KEYS[i]`,
//!    `ARGV[i]`, `tonumber(ARGV[i])` where the block binds a Lua number, `== '1'` for a
//!    bool; variadic keys and arguments stay in KEYS/ARGV), and only those of the block's
//!    `local function` helpers that the body calls (and what they call). No count check,
//!    no argument check. The output lists what each variant keeps; "checks µs" is the
//!    difference per call. The bare variant must answer as the shipped one does: both
//!    take the same jobs in the same order, count alike, admit as many.
//!    The same scripts run again as shipped and without their key check (the block's last
//!    part, from `-- The keys, as their templates name them` on, and the `key_*` helpers
//!    it calls): "key check µs" is what checking the keys against their templates costs.
//! 2. `rate_limiter/gcra` and redis_rate's `allowN` (v10, `lua.go`) decide the same limit
//!    (burst 10, 100 per second, cost 1) on the same mix of admitted and refused calls.
//!    redis_rate's Lua is not part of this repository: `benches/peers/fetch-redis-rate.sh`
//!    downloads the module into `benches/peers/redis_rate/` (ignored by git), or
//!    `REDIS_RATE_LUA` names a `lua.go` or a `.lua` file; without either this part is
//!    skipped.
//!
//! Server time is what Redis itself counts, `INFO commandstats`
//! (`cmdstat_evalsha:calls=…,usec=…`), reset with `CONFIG RESETSTAT` before each phase:
//! network and client excluded. The two variants of a row take turns round by round, in
//! alternating order, each on its own keys in the same state, so that a noisy moment
//! hits both. Nothing here asserts on timing.

use std::path::PathBuf;
use std::time::Duration;

use redis::{Cmd, Value};
use redis_patterns::rate_limiter::{GcraLimiter, Limiter};
use redis_patterns::time_series::TimeSeries;
use redis_patterns::work_queue::{Job, WorkQueue};
use redis_patterns::{Op, Param, Rule, Script, catalog, scripts};

#[path = "../tests/it/server.rs"]
mod server;

/// The first line of the generated block (the rest of that line varies).
const BEGIN: &str = "-- Input checks, generated from the header by redis-patterns-codegen";
/// Its last line.
const END: &str = "-- End of the generated input checks.";
/// The block binds an integer as a Lua number when its whole range is exact in a double.
const MAX_EXACT: i64 = (1 << 53) - 1;
/// Calls sent in one pipeline: the server's time per call does not depend on it.
const PIPELINE: usize = 100;
/// Where `benches/peers/fetch-redis-rate.sh` puts redis_rate's `lua.go`.
const REDIS_RATE_DIR: &str = "benches/peers/redis_rate";

/// A script with its input checks replaced by plain bindings.
struct Bare {
    source: String,
    /// What stands for the block in `source`: the helpers kept and the bindings.
    replacement: String,
    /// The helpers of the block it keeps, in the block's order.
    kept: Vec<String>,
    /// The helpers the script's body calls itself.
    called: Vec<String>,
}

/// Lua text with comments dropped and string literals emptied: what is left can be
/// searched for names.
fn code_only(lua: &str) -> String {
    let bytes = lua.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                let long = lua[i + 2..].starts_with("[[");
                let stop = if long { "]]" } else { "\n" };
                i = lua[i..]
                    .find(stop)
                    .map_or(bytes.len(), |at| i + at + stop.len());
                out.push(b'\n');
            }
            quote @ (b'\'' | b'"') => {
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.extend_from_slice(&[quote, quote]);
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `code` uses `name` as a name of its own (not a field such as `string.name`).
fn mentions(code: &str, name: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    code.match_indices(name).any(|(at, _)| {
        let before = code.as_bytes()[..at].last().copied();
        let after = code.as_bytes().get(at + name.len()).copied();
        !before.is_some_and(|b| word(b) || b == b'.' || b == b':') && !after.is_some_and(word)
    })
}

/// Whether the block binds the (non-variadic) integer argument `arg` as a Lua number:
/// when its declared range, or its type's whole range, fits within ±(2^53 − 1).
fn binds_number(arg: &Param) -> bool {
    let (min, max) = match arg.rule {
        Rule::Range { min, max } => (min, max),
        _ => match arg.ty {
            "uint" => (0, i64::MAX),
            "ms" => (0, MAX_EXACT),
            _ => (i64::MIN, i64::MAX),
        },
    };
    (-MAX_EXACT..=MAX_EXACT).contains(&min) && (-MAX_EXACT..=MAX_EXACT).contains(&max)
}

/// The plain bindings that stand for the block: each declared key and argument bound to
/// a local of its name, as the block binds it, with nothing checked.
fn bindings(script: &Script) -> String {
    let mut out = String::new();
    for (i, key) in script.keys.iter().enumerate() {
        if !key.variadic {
            out += &format!("local {} = KEYS[{}]\n", key.name, i + 1);
        }
    }
    for (i, arg) in script.args.iter().enumerate() {
        if arg.variadic {
            continue;
        }
        let raw = format!("ARGV[{}]", i + 1);
        let value = match arg.ty {
            "string" | "bytes" | "json" => raw.clone(),
            "bool" => format!("{raw} == '1'"),
            "float" => format!("tonumber({raw})"),
            "int" | "uint" | "ms" if binds_number(arg) => format!("tonumber({raw})"),
            "int" | "uint" | "ms" => raw.clone(),
            other => panic!(
                "{}: argument `{}` has type `{other}`, which check_overhead.rs cannot bind yet",
                script.name, arg.name
            ),
        };
        let name = arg.name;
        if arg.optional {
            out += &format!("local {name} = nil\nif {raw} ~= '' then\n  {name} = {value}\nend\n");
        } else {
            out += &format!("local {name} = {value}\n");
        }
    }
    out
}

/// `script` with its generated block replaced by [`bindings`] and the helpers the rest
/// of the script needs.
fn bare(script: &Script) -> Bare {
    let lines: Vec<&str> = script.source.split_inclusive('\n').collect();
    let begin = lines
        .iter()
        .position(|l| l.starts_with(BEGIN))
        .unwrap_or_else(|| panic!("{}: no line starting with {BEGIN:?}", script.name));
    let end = begin
        + lines[begin..]
            .iter()
            .position(|l| l.trim_end() == END)
            .unwrap_or_else(|| panic!("{}: no line {END:?} after the block", script.name));
    // The block's helpers: from `local function <name>(` to the first `end` at column 0.
    let mut helpers: Vec<(String, String)> = Vec::new();
    let mut i = begin;
    while i < end {
        if let Some(rest) = lines[i].strip_prefix("local function ") {
            let name = rest
                .split('(')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            let stop = i + lines[i..end]
                .iter()
                .position(|l| l.trim_end() == "end")
                .unwrap_or_else(|| panic!("{}: helper `{name}` has no end", script.name));
            helpers.push((name, lines[i..=stop].concat()));
            i = stop;
        }
        i += 1;
    }
    let body = lines[end + 1..].concat();
    let body_code = code_only(&body);
    let called: Vec<String> = helpers
        .iter()
        .filter(|(name, _)| mentions(&body_code, name))
        .map(|(name, _)| name.clone())
        .collect();
    // What the body calls, and what those call in turn.
    let mut needed: Vec<bool> = helpers.iter().map(|(n, _)| called.contains(n)).collect();
    loop {
        let mut more = false;
        for i in 0..helpers.len() {
            if !needed[i] {
                continue;
            }
            let code = code_only(&helpers[i].1);
            for j in 0..helpers.len() {
                if !needed[j] && mentions(&code, &helpers[j].0) {
                    needed[j] = true;
                    more = true;
                }
            }
        }
        if !more {
            break;
        }
    }
    let mut replacement =
        "-- The generated input checks, replaced by plain bindings for check_overhead.rs.\n"
            .to_string();
    let mut kept = Vec::new();
    for ((name, text), needed) in helpers.iter().zip(needed) {
        if needed {
            replacement += text;
            kept.push(name.clone());
        }
    }
    replacement += &bindings(script);
    replacement += END;
    replacement += "\n";
    Bare {
        source: lines[..begin].concat() + &replacement + &body,
        replacement,
        kept,
        called,
    }
}

/// The first line of the key check, the last part of the block.
const KEY_CHECK: &str = "-- The keys, as their templates name them";

/// `script` without its key check: the block's lines from [`KEY_CHECK`] to its end, and
/// the block's `key_*` helpers, which only the key check calls.
fn without_key_check(script: &Script) -> String {
    let lines: Vec<&str> = script.source.split_inclusive('\n').collect();
    let end = lines
        .iter()
        .position(|l| l.trim_end() == END)
        .unwrap_or_else(|| panic!("{}: no line {END:?}", script.name));
    let check = lines[..end]
        .iter()
        .position(|l| l.starts_with(KEY_CHECK))
        .unwrap_or_else(|| panic!("{}: no key check", script.name));
    let mut out = String::new();
    let mut helper = false;
    for line in &lines[..check] {
        if line.starts_with("local function key_") {
            helper = true;
            // Its comment, the lines above it, goes too.
            while out.ends_with("\n") && out.lines().last().is_some_and(|l| l.starts_with("--")) {
                let cut = out[..out.len() - 1].rfind('\n').map_or(0, |at| at + 1);
                out.truncate(cut);
            }
        }
        if !helper {
            out.push_str(line);
        }
        if helper && line.trim_end() == "end" {
            helper = false;
        }
    }
    out + &lines[end..].concat()
}

fn script_load(con: &mut redis::Connection, source: &str) -> String {
    redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(source)
        .query(con)
        .unwrap_or_else(|err| panic!("SCRIPT LOAD refused a script: {err}\n{source}"))
}

/// `op`'s call (keys and arguments as the crate's API builds them), sent to `sha`.
fn evalsha<T: 'static>(op: &Op<T>, sha: &str) -> Cmd {
    let built = op.cmd().expect("the bench's input is valid");
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(sha);
    // EVALSHA's arguments after the command and the SHA1: the key count, keys, args.
    for arg in built.args_iter().skip(2) {
        if let redis::Arg::Simple(bytes) = arg {
            cmd.arg(bytes);
        }
    }
    cmd
}

/// Runs `cmds`, pipelined, with nothing else on the server.
fn pipelined(con: &mut redis::Connection, cmds: &[Cmd]) -> Vec<Value> {
    let mut replies = Vec::with_capacity(cmds.len());
    for chunk in cmds.chunks(PIPELINE) {
        let mut pipe = redis::pipe();
        for cmd in chunk {
            pipe.add_command(cmd.clone());
        }
        let batch: Vec<Value> = pipe.query(con).expect("every call succeeds");
        replies.extend(batch);
    }
    replies
}

/// EVALSHA's calls and microseconds since the last `CONFIG RESETSTAT`.
fn evalsha_stats(con: &mut redis::Connection) -> (u64, u64) {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    let line = info
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:"))
        .expect("INFO commandstats counts EVALSHA");
    let field = |name: &str| -> u64 {
        line.split(',')
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {line}"))
    };
    (field("calls"), field("usec"))
}

/// The server time of one phase: `cmds` alone, counted from a reset.
fn phase(con: &mut redis::Connection, cmds: &[Cmd]) -> (Vec<Value>, u64) {
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(con).unwrap();
    let replies = pipelined(con, cmds);
    let (calls, usec) = evalsha_stats(con);
    assert_eq!(
        calls,
        cmds.len() as u64,
        "only the phase's calls were counted"
    );
    (replies, usec)
}

/// The settings of a run.
#[derive(Clone, Copy)]
struct Run {
    rounds: u32,
    calls: usize,
}

/// What one variant cost over the timed rounds.
#[derive(Default)]
struct Totals {
    calls: u64,
    usec: u64,
    /// µs per call of each round.
    per_round: Vec<f64>,
}

impl Totals {
    fn per_call(&self) -> f64 {
        self.usec as f64 / self.calls as f64
    }
}

/// Two variants taking turns: per round, `prepare(con, variant, round)` sets up the
/// keyspace (untimed) and answers the calls; they run as one phase; `finish(con,
/// variant, round, replies)` checks the replies and tidies up (untimed). Round 0 warms
/// up and is not counted; the order of the two alternates from round to round.
fn compare(
    con: &mut redis::Connection,
    run: Run,
    mut prepare: impl FnMut(&mut redis::Connection, usize, u32) -> Vec<Cmd>,
    mut finish: impl FnMut(&mut redis::Connection, usize, u32, &[Value]),
) -> [Totals; 2] {
    let mut totals = [Totals::default(), Totals::default()];
    for round in 0..=run.rounds {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for variant in order {
            let cmds = prepare(con, variant, round);
            let (replies, usec) = phase(con, &cmds);
            finish(con, variant, round, &replies);
            if round > 0 {
                let t = &mut totals[variant];
                t.calls += cmds.len() as u64;
                t.usec += usec;
                t.per_round.push(usec as f64 / cmds.len() as f64);
            }
        }
    }
    totals
}

fn int(value: &Value) -> i64 {
    match value {
        Value::Int(n) => *n,
        other => panic!("expected an integer, got {other:?}"),
    }
}

fn items(value: &Value) -> &[Value] {
    match value {
        Value::Array(items) => items,
        other => panic!("expected an array, got {other:?}"),
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::Int(n) => n.to_string(),
        other => panic!("expected a string, got {other:?}"),
    }
}

/// One row of part 1: a script as shipped and bare.
struct Row {
    label: String,
    totals: [Totals; 2],
    note: String,
}

/// The median, smallest and largest of the per-round ratios a/b.
fn spread(a: &Totals, b: &Totals) -> (f64, f64, f64) {
    let mut ratios: Vec<f64> = a
        .per_round
        .iter()
        .zip(&b.per_round)
        .map(|(a, b)| a / b)
        .collect();
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    let median = (ratios[(n - 1) / 2] + ratios[n / 2]) / 2.0;
    (median, ratios[0], ratios[n - 1])
}

/// `work_queue/take`, one job per call, from a queue refilled to `calls` waiting jobs
/// before each phase and emptied (every job acked) after it.
fn take_row(con: &mut redis::Connection, run: Run, shas: [&str; 2]) -> Row {
    let queues = ["{bench-take-shipped}", "{bench-take-bare}"]
        .map(|name| WorkQueue::new(name).expect("a queue name"));
    let payload = r#"{"kind":"email","to":"user@example.com","template":"welcome","attempt":1}"#;
    let mut taken: [Vec<String>; 2] = Default::default();
    let totals = compare(
        con,
        run,
        |con, v, round| {
            let adds: Vec<Cmd> = (0..run.calls)
                .map(|i| {
                    let op = queues[v].add(&format!("job:{round}:{i}"), payload);
                    op.cmd().expect("a valid job").clone()
                })
                .collect();
            pipelined(con, &adds);
            let take = queues[v].take(1);
            vec![evalsha(&take, shas[v]); run.calls]
        },
        |con, v, _, replies| {
            let acks: Vec<Cmd> = replies
                .iter()
                .map(|reply| {
                    // A row per job taken: id, token, delivery, deadline, group, payload.
                    let rows = items(reply);
                    assert_eq!(rows.len(), 1, "every take gets one job");
                    let job = items(&rows[0]);
                    taken[v].push(text(&job[0]));
                    let job = Job {
                        id: text(&job[0]),
                        token: text(&job[1]),
                        delivery: 1,
                        deadline_ms: 0,
                        group: None,
                        payload: Vec::new(),
                        trace_context: None,
                    };
                    queues[v].ack(&job).cmd().expect("a valid ack").clone()
                })
                .collect();
            for reply in pipelined(con, &acks) {
                assert!(int(&reply) > 0, "every job taken is acked");
            }
        },
    );
    assert_eq!(
        taken[0], taken[1],
        "both variants take the same jobs in the same order"
    );
    Row {
        label: format!("work_queue/take (1 job a call, {} queued)", run.calls),
        totals,
        note: String::new(),
    }
}

/// `time_series/update` with `precisions`, one event per call, each call 250 ms after
/// the one before, on a namespace per variant (the two see the same sequence).
fn update_row(con: &mut redis::Connection, run: Run, shas: [&str; 2], precisions: &[u64]) -> Row {
    let series = ["shipped", "bare"].map(|v| {
        TimeSeries::new(&format!("bench-ts-{}-{v}", precisions.len()))
            .and_then(|ts| ts.with_precisions(precisions))
            .expect("valid precisions")
    });
    let start: u64 = 1_700_000_000_000;
    let mut counts: [Vec<String>; 2] = Default::default();
    let totals = compare(
        con,
        run,
        |_, v, round| {
            (0..run.calls)
                .map(|i| {
                    let now = start + (u64::from(round) * run.calls as u64 + i as u64) * 250;
                    evalsha(&series[v].update_counter("page:home", 1, now), shas[v])
                })
                .collect()
        },
        |_, v, _, replies| counts[v].extend(replies.iter().map(text)),
    );
    assert_eq!(counts[0], counts[1], "both variants count alike");
    Row {
        label: format!(
            "time_series/update ({} precision{})",
            precisions.len(),
            if precisions.len() == 1 { "" } else { "s" }
        ),
        totals,
        note: String::new(),
    }
}

/// The calls of one gcra phase: 20 calls per client, burst 10, 100 per second: about
/// half admitted. `call(uid)` builds one.
fn gcra_calls(run: Run, round: u32, mut call: impl FnMut(&str) -> Cmd) -> Vec<Cmd> {
    (0..run.calls)
        .map(|i| call(&format!("r{round}c{}", i / 20)))
        .collect()
}

/// Admitted and refused calls of each variant, counted by `finish`.
type Mix = [[u64; 2]; 2];

fn mix_note(mix: &Mix, names: [&str; 2]) -> String {
    format!(
        "admitted/refused: {} {}/{}, {} {}/{}",
        names[0], mix[0][0], mix[0][1], names[1], mix[1][0], mix[1][1]
    )
}

fn gcra_limiter(prefix: &str) -> GcraLimiter {
    GcraLimiter::new("api", 100, Duration::from_secs(1))
        .and_then(|l| l.with_burst(10))
        .and_then(|l| l.with_prefix(prefix))
        .expect("a valid limit")
}

/// `rate_limiter/gcra`, burst 10, 100 per second, cost 1, admitted and refused.
fn gcra_row(con: &mut redis::Connection, run: Run, shas: [&str; 2]) -> Row {
    let limiters = ["bench-gcra-shipped", "bench-gcra-bare"].map(gcra_limiter);
    let mut mix: Mix = [[0; 2]; 2];
    let totals = compare(
        con,
        run,
        |_, v, round| {
            gcra_calls(run, round, |uid| {
                evalsha(&limiters[v].attempt(uid, 1), shas[v])
            })
        },
        |_, v, round, replies| {
            for reply in replies.iter().filter(|_| round > 0) {
                let admitted = int(&items(reply)[0]) == 1;
                mix[v][usize::from(!admitted)] += 1;
            }
        },
    );
    Row {
        label: "rate_limiter/gcra (burst 10, 100/s)".into(),
        totals,
        note: mix_note(&mix, ["shipped", "bare"]),
    }
}

/// redis_rate's `allowN` script: the text between the backquotes of
/// `var allowN = redis.NewScript(` in a `lua.go`, or a whole `.lua` file. `Err` says how
/// to provide it.
fn allow_n_source() -> Result<(String, PathBuf), String> {
    let how = "to compare, run benches/peers/fetch-redis-rate.sh (needs proxy.golang.org), or set REDIS_RATE_LUA=<path to redis_rate v10's lua.go or its allowN script as a .lua file>";
    let path = match std::env::var_os("REDIS_RATE_LUA") {
        Some(path) => PathBuf::from(path),
        None => {
            let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join(REDIS_RATE_DIR)
                .join("lua.go");
            if !path.exists() {
                return Err(format!("no {}: {how}", path.display()));
            }
            path
        }
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|err| format!("cannot read {}: {err}; {how}", path.display()))?;
    if path.extension().is_some_and(|e| e == "lua") {
        return Ok((text, path));
    }
    let start = "var allowN = redis.NewScript(`";
    let script = text
        .find(start)
        .map(|at| &text[at + start.len()..])
        .and_then(|rest| rest.find('`').map(|end| &rest[..end]))
        .ok_or_else(|| format!("{} has no {start}…`: {how}", path.display()))?;
    Ok((script.to_string(), path))
}

fn main() {
    let env = |name: &str, default: u64| -> u64 {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let run = Run {
        rounds: env("ROUNDS", 10).max(1) as u32,
        calls: env("CALLS", 1000).max(20) as usize,
    };
    let server = server::RedisProcess::start(&[]);
    let mut con = server.connection();
    catalog::load_all(&mut con).unwrap();

    println!(
        "Server time of the generated input checks: INFO commandstats (EVALSHA usec / calls), {} rounds × {} calls per variant, taking turns",
        run.rounds, run.calls
    );
    let cases: [&Script; 3] = [
        &scripts::work_queue::TAKE,
        &scripts::time_series::UPDATE,
        &scripts::rate_limiter::GCRA,
    ];
    let mut rows = Vec::new();
    let mut key_rows = Vec::new();
    for script in cases {
        let variant = bare(script);
        let shipped = script_load(&mut con, script.source);
        assert_eq!(shipped, script.sha1, "the catalogue's SHA1");
        let bare_sha = script_load(&mut con, &variant.source);
        let unchecked = without_key_check(script);
        assert!(
            !unchecked.contains("local function key_") && !unchecked.contains("reply('BAD_KEYS"),
            "{}: the key check is left in:\n{unchecked}",
            script.name
        );
        let unchecked_sha = script_load(&mut con, &unchecked);
        println!(
            "  {}: bare keeps {} (the body calls {}); drops the count check and every argument check",
            script.name,
            if variant.kept.is_empty() {
                "no helper".into()
            } else {
                variant.kept.join(", ")
            },
            if variant.called.is_empty() {
                "none".into()
            } else {
                variant.called.join(", ")
            },
        );
        if std::env::var_os("SHOW_BARE").is_some() {
            println!("{}", variant.replacement);
        }
        for (second, into) in [
            (bare_sha.as_str(), &mut rows),
            (&unchecked_sha, &mut key_rows),
        ] {
            let shas = [shipped.as_str(), second];
            match script.name {
                "work_queue/take" => into.push(take_row(&mut con, run, shas)),
                "time_series/update" => {
                    for precisions in [&[60][..], &[1, 5, 60, 300, 3600], &PRECISIONS_16] {
                        into.push(update_row(&mut con, run, shas, precisions));
                    }
                }
                "rate_limiter/gcra" => into.push(gcra_row(&mut con, run, shas)),
                other => unreachable!("{other}"),
            }
        }
    }
    table(&rows, ["bare µs", "checks µs", "shipped/bare"]);
    table(
        &key_rows,
        ["unchecked µs", "key check µs", "shipped/unchecked"],
    );
    gcra_against_allow_n(&mut con, run);
}

/// The rows of one comparison: the shipped script against `second` (its columns' names:
/// its time, the difference, the ratio).
fn table(rows: &[Row], second: [&str; 3]) {
    println!();
    println!(
        "  {:<42} {:>11} {:>12} {:>12} {:>17} {:>24}",
        "script", "shipped µs", second[0], second[1], second[2], "per round: median (range)"
    );
    for row in rows {
        let [shipped, bare] = &row.totals;
        let (median, lo, hi) = spread(shipped, bare);
        println!(
            "  {:<42} {:>11.2} {:>12.2} {:>12.2} {:>16.2}× {:>11.2}× ({:.2}–{:.2}){}",
            row.label,
            shipped.per_call(),
            bare.per_call(),
            shipped.per_call() - bare.per_call(),
            shipped.per_call() / bare.per_call(),
            median,
            lo,
            hi,
            if row.note.is_empty() {
                String::new()
            } else {
                format!("  ({})", row.note)
            }
        );
    }
}

/// Part 2: `rate_limiter/gcra` against redis_rate's `allowN`, when its Lua is provided.
fn gcra_against_allow_n(con: &mut redis::Connection, run: Run) {
    println!();
    match allow_n_source() {
        Err(why) => println!("rate_limiter/gcra against redis_rate's allowN: skipped, {why}"),
        Ok((source, path)) => {
            let allow_n = script_load(con, &source);
            let gcra = gcra_limiter("bench-cmp-gcra");
            let gcra_sha = scripts::rate_limiter::GCRA.sha1;
            let mut mix: Mix = [[0; 2]; 2];
            let totals = compare(
                con,
                run,
                |_, v, round| {
                    gcra_calls(run, round, |uid| {
                        if v == 0 {
                            evalsha(&gcra.attempt(uid, 1), gcra_sha)
                        } else {
                            // redis_rate's key and arguments for redis_rate.PerSecond(100)
                            // with Burst 10: burst, rate, period in seconds, cost.
                            let mut cmd = redis::cmd("EVALSHA");
                            cmd.arg(&allow_n).arg(1).arg(format!("rate:{uid}"));
                            cmd.arg(10).arg(100).arg(1).arg(1);
                            cmd
                        }
                    })
                },
                |_, v, round, replies| {
                    for reply in replies.iter().filter(|_| round > 0) {
                        // gcra answers 1 or 0; allowN the cost admitted, or 0.
                        let admitted = int(&items(reply)[0]) > 0;
                        mix[v][usize::from(!admitted)] += 1;
                    }
                },
            );
            let [gcra_t, allow_t] = &totals;
            let (median, lo, hi) = spread(gcra_t, allow_t);
            println!(
                "rate_limiter/gcra against redis_rate's allowN ({}), burst 10, 100 per second, cost 1:",
                path.display()
            );
            println!(
                "  {:<42} {:>11} {:>9} {:>13} {:>24}",
                "", "gcra µs", "allowN µs", "gcra/allowN", "per round: median (range)"
            );
            println!(
                "  {:<42} {:>11.2} {:>9.2} {:>12.2}× {:>11.2}× ({:.2}–{:.2})  ({})",
                "one decision",
                gcra_t.per_call(),
                allow_t.per_call(),
                gcra_t.per_call() / allow_t.per_call(),
                median,
                lo,
                hi,
                mix_note(&mix, ["gcra", "allowN"])
            );
        }
    }
}

/// Sixteen precisions, the most `time_series/update` takes.
const PRECISIONS_16: [u64; 16] = [
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 18_000, 86_400,
];
