//! The Bloom filter ([`BloomFilter`]) measured: its false-positive rate at its expected
//! item count against the formula, and the server's time per item against pottery's
//! `BloomFilter` (PyPI `pottery`) on the same redis-server, which this bench starts.
//!
//! ```sh
//! sh benches/peers/fetch-pottery.sh   # once: pottery and redis-py into an ignored venv
//! cargo bench --bench bloom           # about a minute
//! CAPACITY=1000000 CHECKS=2000000 ROUNDS=5 cargo bench --bench bloom
//! ```
//!
//! The knobs (environment): CAPACITY (100,000: the items each filter is made for and
//! gets), CHECKS (1,000,000: the items never added that part 1 checks per rate), RATES
//! (`10,100,1000`: the one_in of part 1), CALLS (20: the calls of [`MAX_ITEMS_PER_CALL`]
//! items part 1 sends per round trip), ONE_IN (100: the rate of part 2), ITEMS (20,000:
//! the items part 2 adds and then checks per side and round), PER_CALL (`1,100`, 100 the
//! most a call takes: the items per call of part 2's cells), ROUNDS (3), PARTS
//! (`rate,cost`: which parts run), POTTERY_PYTHON (a python with pottery, instead of the
//! venv), REDIS_SERVER_BIN.
//!
//! **Part 1, the false-positive rate.** For each one_in, a fresh filter
//! (`BloomFilter::new(name, CAPACITY, one_in)`) gets CAPACITY distinct items (`in:0`,
//! `in:1`, …), then CHECKS items never added (`out:0`, …) are checked,
//! [`MAX_ITEMS_PER_CALL`] per call and CALLS calls per round trip (a [`Batch`] pipeline).
//! Printed per rate:
//!
//! - *m, k*: each partition's bits and hashes, as [`BloomFilter::bits`] computes them (and
//!   checked against what the script stored, `bloom/info`);
//! - *observed*: the share of the checked items the filter answered "maybe added" for;
//! - *formula*: (1 − e^(−kn/m))^k, with n the items added to the partition (all of them
//!   when there is one; else the mean over partitions of each one's rate, since an
//!   item checks the one its SHA-1 names);
//! - *99 % interval*: the central 99 % of Binomial(CHECKS, formula) (its 0.5 % and
//!   99.5 % quantiles, exact), as a rate; *inside* says whether the observed count lies
//!   in it;
//! - *target* 1/one_in, and whether the formula's rate is at or below it (the scripts
//!   size m as the fewest bits that give it, so it is just below). The observed rate,
//!   a sample around the formula's, can land a little above the target by chance: the
//!   *obs ≤ target* column says whether it did.
//!
//! **Part 2, the server's time per item.** The crate's filter and pottery's, both made
//! for CAPACITY items at 1 in ONE_IN, each on a key of its own per round: ITEMS items
//! added, PER_CALL per call, then ITEMS other items checked, PER_CALL per call; each call
//! one round trip on one connection, on both sides. The crate: `add_all` / `contains_all`
//! (one `EVALSHA` of `bloom/add` or `bloom/check` per call, the script hashing each item
//! and setting its k bits with a `SETBIT` each, or reading them with a `GETBIT` each up to
//! the first 0). pottery 3.0.1: `update(chunk)`
//! (`WATCH`, `MULTI`, a `SETBIT` per distinct bit, `EXEC`) and `contains_many(*chunk)`
//! (`WATCH`, `MULTI`, a `GETBIT` per item and hash, `EXEC`), run by
//! `benches/peers/pottery/bench.py` in a process per run, which hashes on the client
//! (mmh3), gets ready, waits for the bench's go and prints its results as one JSON line.
//! Around each side's run the bench resets the server's stats (`CONFIG RESETSTAT`) and
//! reads:
//!
//! - *server CPU µs/item*: the server process's CPU time (`INFO cpu`, used_cpu_sys +
//!   used_cpu_user) over the run, divided by the items: everything the server did for
//!   them, reading and parsing requests included;
//! - *command µs/item*: from `INFO commandstats`, the time Redis counts inside the
//!   commands the client sent (`EVALSHA`/`EVALSHA_RO` for the crate; `WATCH`, `MULTI`,
//!   `EXEC` for pottery), without reading, parsing and replying: per item. Redis also
//!   counts a script's inner commands (`BITFIELD`, `HMGET`, …) and a transaction's
//!   queued ones (`SETBIT`, `GETBIT`) in rows of their own, inside the time of the
//!   `EVALSHA` or `EXEC` that ran them, so those are left out of the sum; every row, as
//!   calls and µs per item, is printed below the table (from the first round);
//!   Redis counts that time on the wall clock: on a busy machine it includes the moments
//!   the server was not scheduled, and can exceed the server's CPU time;
//! - *wall µs/item*: the client's elapsed time per item (the client's own speed: Rust
//!   here, Python there), for reference;
//! - *crate ÷ pottery*: the ratio of the server CPU per item.
//!
//! Sides take turns (crate first in odd rounds, pottery first in even ones) so that a
//! noisy moment hits both alike; the table gives the median over ROUNDS. Without
//! pottery installed, the bench says how to install it and runs the crate's side alone.
//!
//! **A run on a 2-core machine** (shared with other builds; the defaults; redis-server
//! 7.0.15, pottery 3.0.1). Part 1: observed 0.099757, 0.009885, 0.001010 at 1 in 10, 100,
//! 1,000, each inside its 99 % interval. Part 2, server CPU µs/item, crate ÷ pottery:
//!
//! ```text
//! op     items/call   crate  pottery  crate ÷ pottery
//! add             1   56.07    34.09  1.64×
//! add           100    5.95     4.17  1.43×
//! check           1   18.64    21.80  0.85×
//! check         100    2.47     3.67  0.67×
//! ```
//!
//! The scripts before (one `BITFIELD` per item for all its k bits, offsets sent as Lua
//! numbers, at most 50 items per call so 100 took two calls), in the same session: add
//! 8.08 against 3.86 (2.09×), check 6.74 against 3.41 (1.98×) at 100 items.
//!
//! Read it so: a check reads an item's bits up to the first 0, 1.16 `GETBIT`s per item
//! never added against pottery's 7. An add sets all k bits either way, and per bit a
//! `SETBIT` from the script costs the server about what pottery's pipelined one does
//! (≈ 0.55 µs, its offset formatted as text included); on top of that the script hashes
//! each item (`redis.sha1hex` and two hex numbers, ≈ 1 µs), which pottery does on the
//! client. An add costs the server about 1.75 + 0.55 × k µs per item (measured at k = 4,
//! 5 and 7), pottery's about 0.55 × k: only fewer hashes would close the gap, and k = 4
//! at 1 in 100 would about match pottery with 9.7 % more bits than k = 7 needs.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use redis_patterns::Batch;
use redis_patterns::bloom::{BloomFilter, MAX_ITEMS_PER_CALL};

#[path = "../tests/it/server.rs"]
mod server;

/// Where `benches/peers/fetch-pottery.sh` installs pottery, and pottery's side.
const PEER_DIR: &str = "benches/peers/pottery";
/// The venv `benches/peers/fetch-coordination.sh` makes, with the same pins: used when
/// the bench's own is not there.
const COORDINATION_VENV: &str = "benches/peers/coordination/venv";

// ---------------------------------------------------------------------------------------
// Part 1: the false-positive rate.

/// One rate's results.
struct RateRow {
    one_in: u64,
    partitions: usize,
    m: u64,
    k: u64,
    checks: u64,
    maybe: u64,
    formula: f64,
    interval: (u64, u64),
    secs: f64,
}

/// The items `prefix` + 0 .. `prefix` + count − 1, in blocks sent as one pipeline each:
/// grouped by partition, [`MAX_ITEMS_PER_CALL`] per call, `calls` calls per round trip. Returns the count of
/// "true" answers and the items per partition.
fn send_all(
    con: &mut redis::Connection,
    filter: &BloomFilter,
    prefix: &str,
    count: u64,
    calls: usize,
    add: bool,
) -> (u64, Vec<u64>) {
    let partitions = (0..).take_while(|&i| filter.keys(i).is_some()).count();
    let mut per_partition = vec![0u64; partitions];
    let mut trues = 0;
    let block = (calls * MAX_ITEMS_PER_CALL) as u64;
    let mut start = 0;
    while start < count {
        let end = (start + block).min(count);
        let mut groups: Vec<Vec<Vec<u8>>> = vec![Vec::new(); partitions];
        for i in start..end {
            let item = format!("{prefix}{i}").into_bytes();
            let at = filter.partition_of(&item);
            per_partition[at] += 1;
            groups[at].push(item);
        }
        let mut batch = Batch::new();
        let mut slots = Vec::new();
        for group in &groups {
            for chunk in group.chunks(MAX_ITEMS_PER_CALL) {
                slots.push(batch.add(if add {
                    filter.add(chunk)
                } else {
                    filter.contains(chunk)
                }));
            }
        }
        let mut replies = batch.run(con).unwrap();
        for slot in slots {
            trues += slot
                .take(&mut replies)
                .unwrap()
                .into_iter()
                .filter(|&b| b)
                .count() as u64;
        }
        start = end;
    }
    (trues, per_partition)
}

fn rate_row(
    con: &mut redis::Connection,
    one_in: u64,
    capacity: u64,
    checks: u64,
    calls: usize,
) -> RateRow {
    let started = Instant::now();
    let filter = BloomFilter::new(format!("fp-{one_in}"), capacity, one_in).unwrap();
    let (m, k) = filter.bits();
    let (_, per_partition) = send_all(con, &filter, "in:", capacity, calls, true);
    let info = filter.info(0).run(con).unwrap().expect("the filter exists");
    assert_eq!(
        (info.m, info.k),
        (m, k),
        "BloomFilter::bits and bloom/add disagree"
    );
    let (maybe, _) = send_all(con, &filter, "out:", checks, calls, false);
    // An item never added checks the partition its SHA-1 names, each alike likely.
    let formula = per_partition
        .iter()
        .map(|&n| (1.0 - (-(k as f64) * n as f64 / m as f64).exp()).powi(k as i32))
        .sum::<f64>()
        / per_partition.len() as f64;
    RateRow {
        one_in,
        partitions: per_partition.len(),
        m,
        k,
        checks,
        maybe,
        formula,
        interval: binomial_interval(checks, formula, 0.005),
        secs: started.elapsed().as_secs_f64(),
    }
}

/// The `tail` and 1 − `tail` quantiles of Binomial(n, p): the least x whose cumulative
/// probability reaches each. The probabilities are summed exactly, each from the one
/// beside it (P(x + 1) / P(x) = (n − x) / (x + 1) × p / (1 − p)), over the mode ± 12
/// standard deviations (the mass beyond is below 10^-30).
fn binomial_interval(n: u64, p: f64, tail: f64) -> (u64, u64) {
    if p <= 0.0 {
        return (0, 0);
    }
    if p >= 1.0 {
        return (n, n);
    }
    let mode = (((n + 1) as f64 * p).floor() as u64).min(n);
    let span = (12.0 * (n as f64 * p * (1.0 - p)).sqrt()) as u64 + 20;
    let (low, high) = (mode.saturating_sub(span), (mode + span).min(n));
    let odds = p / (1.0 - p);
    let mut weight = vec![0.0f64; (high - low + 1) as usize];
    weight[(mode - low) as usize] = 1.0;
    for x in mode..high {
        let i = (x - low) as usize;
        weight[i + 1] = weight[i] * (n - x) as f64 / (x + 1) as f64 * odds;
    }
    for x in (low..mode).rev() {
        let i = (x - low) as usize;
        weight[i] = weight[i + 1] * (x + 1) as f64 / (n - x) as f64 / odds;
    }
    let total: f64 = weight.iter().sum();
    let quantile = |q: f64| {
        let mut sum = 0.0;
        for (i, w) in weight.iter().enumerate() {
            sum += w / total;
            if sum >= q {
                return low + i as u64;
            }
        }
        high
    };
    (quantile(tail), quantile(1.0 - tail))
}

fn print_rates(rows: &[RateRow], capacity: u64) {
    println!(
        "\nfalse positives at the expected item count: {capacity} items added, then items never added checked\n"
    );
    println!(
        "| 1 in | partitions | m bits | k | checked | maybe | observed | formula | 99 % interval | inside | target | formula ≤ target | obs ≤ target | s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let observed = r.maybe as f64 / r.checks as f64;
        let target = 1.0 / r.one_in as f64;
        let (lo, hi) = r.interval;
        println!(
            "| {} | {} | {} | {} | {} | {} | {:.6} | {:.6} | {:.6} – {:.6} | {} | {:.6} | {} | {} | {:.1} |",
            r.one_in,
            r.partitions,
            r.m,
            r.k,
            r.checks,
            r.maybe,
            observed,
            r.formula,
            lo as f64 / r.checks as f64,
            hi as f64 / r.checks as f64,
            yes(lo <= r.maybe && r.maybe <= hi),
            target,
            yes(r.formula <= target),
            yes(observed <= target),
            r.secs
        );
    }
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "NO" }
}

// ---------------------------------------------------------------------------------------
// Part 2: the server's time per item.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Add,
    Check,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Check => "check",
        }
    }
}

/// One side's run of one op.
struct Run {
    items: u64,
    server_us: u64,
    secs: f64,
    commands: Vec<Stat>,
    /// The filter's bits and hashes.
    shape: (u64, u64),
}

/// One row of `INFO commandstats`: name, calls, µs.
#[derive(Clone)]
struct Stat {
    name: String,
    calls: u64,
    usec: u64,
}

/// The crate's side: `items` items, `per_call` per call, one call per round trip.
fn crate_run(
    server: &server::RedisProcess,
    filter: &BloomFilter,
    op: Op,
    prefix: &str,
    items: u64,
    per_call: usize,
) -> Run {
    let mut con = server.connection();
    let mut probe = server.connection();
    let values: Vec<Vec<u8>> = (0..items)
        .map(|i| format!("{prefix}{i}").into_bytes())
        .collect();
    let before = reset_and_read_cpu(&mut probe);
    let started = Instant::now();
    for chunk in values.chunks(per_call) {
        match op {
            Op::Add => filter.add_all(&mut con, chunk).unwrap(),
            Op::Check => filter.contains_all(&mut con, chunk).unwrap(),
        };
    }
    let secs = started.elapsed().as_secs_f64();
    let server_us = server_cpu_us(&mut probe) - before;
    Run {
        items,
        server_us,
        secs,
        commands: commandstats(&mut probe),
        shape: filter.bits(),
    }
}

/// pottery's side: `bench.py` in a process of its own.
#[allow(clippy::too_many_arguments)]
fn pottery_run(
    server: &server::RedisProcess,
    python: &Path,
    op: Op,
    key: &str,
    prefix: &str,
    items: u64,
    per_call: usize,
    capacity: u64,
    one_in: u64,
) -> Run {
    let mut probe = server.connection();
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(PEER_DIR)
        .join("bench.py");
    let mut child = Command::new(python)
        .arg(&script)
        .args([
            op.name().to_string(),
            items.to_string(),
            per_call.to_string(),
            capacity.to_string(),
            one_in.to_string(),
            server.url(0),
            key.to_string(),
            prefix.to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot run {}: {err}", python.display()));
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    if line.trim() != "ready" {
        let out = child.wait_with_output().unwrap();
        panic!(
            "bench.py did not get ready ({}): {line}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let before = reset_and_read_cpu(&mut probe);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    drop(stdin);
    line.clear();
    stdout.read_line(&mut line).unwrap();
    let server_us = server_cpu_us(&mut probe) - before;
    let commands = commandstats(&mut probe);
    let out = child.wait_with_output().unwrap();
    let reply: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|err| {
        panic!(
            "bench.py printed no JSON ({err}, {}): {line}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    Run {
        items: reply["items"].as_u64().unwrap_or(0),
        server_us,
        secs: reply["secs"].as_f64().unwrap_or(f64::NAN),
        commands,
        shape: (
            reply["m"].as_u64().unwrap_or(0),
            reply["k"].as_u64().unwrap_or(0),
        ),
    }
}

/// The python to run pottery with: POTTERY_PYTHON, the bench's venv, or the coordination
/// bench's (same pins); `Err` says how to install it.
fn pottery_python(root: &Path) -> Result<(PathBuf, String), String> {
    let candidates: Vec<PathBuf> = match std::env::var_os("POTTERY_PYTHON") {
        Some(python) => vec![PathBuf::from(python)],
        None => vec![
            root.join(PEER_DIR).join("venv/bin/python"),
            root.join(COORDINATION_VENV).join("bin/python"),
        ],
    };
    for python in candidates {
        let out = Command::new(&python)
            .args([
                "-c",
                "from importlib.metadata import version; import pottery; print(version('pottery'))",
            ])
            .output();
        if let Ok(out) = out
            && out.status.success()
        {
            let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            return Ok((python, version));
        }
    }
    Err(format!(
        "pottery is not installed (no venv with it in {}): run `sh benches/peers/fetch-pottery.sh` \
         (needs python 3.9+ with venv, and PyPI), or set POTTERY_PYTHON",
        root.join(PEER_DIR).join("venv").display()
    ))
}

// ---------------------------------------------------------------------------------------
// Server readings.

/// `CONFIG RESETSTAT`, then the server's CPU time so far (µs).
fn reset_and_read_cpu(con: &mut redis::Connection) -> u64 {
    redis::cmd("CONFIG").arg("RESETSTAT").exec(con).unwrap();
    server_cpu_us(con)
}

/// The server process's CPU time so far (user and system, `INFO cpu`), in µs.
fn server_cpu_us(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("cpu").query(con).unwrap();
    let seconds: f64 = info
        .lines()
        .filter(|line| line.starts_with("used_cpu_sys:") || line.starts_with("used_cpu_user:"))
        .filter_map(|line| line.split(':').nth(1)?.trim().parse::<f64>().ok())
        .sum();
    (seconds * 1e6).round() as u64
}

/// The commands the server ran since the last `CONFIG RESETSTAT`, with their calls and
/// µs; the bench's own INFO and CONFIG left out.
fn commandstats(con: &mut redis::Connection) -> Vec<Stat> {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    let mut rows: Vec<Stat> = info
        .lines()
        .filter_map(|line| {
            let (name, fields) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let field = |key: &str| {
                fields
                    .split(',')
                    .find_map(|f| f.strip_prefix(key)?.parse::<u64>().ok())
            };
            (name != "info" && !name.starts_with("config")).then(|| Stat {
                name: name.to_owned(),
                calls: field("calls=").unwrap_or(0),
                usec: field("usec=").unwrap_or(0),
            })
        })
        .collect();
    rows.sort_by_key(|row| std::cmp::Reverse(row.calls));
    rows
}

/// The µs of the commands a client sent (the top-level ones): `EVALSHA` (or `EVALSHA_RO`)
/// for the crate, `WATCH`, `MULTI` and `EXEC` for pottery. Redis counts a script's inner
/// commands and a transaction's queued commands in their own rows and also inside the
/// time of the `EVALSHA` or `EXEC` that ran them, so those rows are left out of the sum.
fn sent_usec(commands: &[Stat]) -> u64 {
    commands
        .iter()
        .filter(|c| {
            matches!(
                c.name.as_str(),
                "evalsha" | "evalsha_ro" | "eval" | "eval_ro" | "watch" | "multi" | "exec"
            )
        })
        .map(|c| c.usec)
        .sum()
}

// ---------------------------------------------------------------------------------------
// Summaries.

/// One side's rounds of one cell.
#[derive(Default)]
struct Tally {
    server: Vec<f64>,
    command: Vec<f64>,
    wall: Vec<f64>,
    first: Option<Run>,
}

impl Tally {
    fn push(&mut self, run: Run) {
        let items = run.items.max(1) as f64;
        self.server.push(run.server_us as f64 / items);
        self.command.push(sent_usec(&run.commands) as f64 / items);
        self.wall.push(run.secs * 1e6 / items);
        if self.first.is_none() {
            self.first = Some(run);
        }
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn shown(value: f64, decimals: usize) -> String {
    if value.is_finite() {
        format!("{value:.decimals$}")
    } else {
        "-".into()
    }
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn main() {
    let capacity = env("CAPACITY", 100_000);
    let checks = env("CHECKS", 1_000_000);
    let calls = env("CALLS", 20).max(1) as usize;
    let one_in = env("ONE_IN", 100);
    let items = env("ITEMS", 20_000);
    let rounds = env("ROUNDS", 3).max(1);
    let rates: Vec<u64> = env_list("RATES", "10,100,1000")
        .iter()
        .filter_map(|r| r.parse().ok())
        .collect();
    let per_calls: Vec<usize> = env_list("PER_CALL", &format!("1,{MAX_ITEMS_PER_CALL}"))
        .iter()
        .filter_map(|r| r.parse().ok())
        .filter(|&n| n >= 1)
        .collect();
    let parts = env_list("PARTS", "rate,cost");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));

    let server = server::RedisProcess::start(&[]);
    let mut con = server.connection();
    redis_patterns::load_all(&mut con).unwrap();
    let version: String = {
        let info: String = redis::cmd("INFO").arg("server").query(&mut con).unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .unwrap_or("?")
            .trim()
            .to_owned()
    };
    println!("redis-server {version}, port {}", server.port());

    if parts.iter().any(|p| p == "rate") {
        let rows: Vec<RateRow> = rates
            .iter()
            .map(|&one_in| rate_row(&mut con, one_in, capacity, checks, calls))
            .collect();
        print_rates(&rows, capacity);
    }

    if !parts.iter().any(|p| p == "cost") {
        return;
    }
    let pottery = match pottery_python(root) {
        Ok(found) => Some(found),
        Err(why) => {
            println!("\npottery: skipped, {why}");
            None
        }
    };
    let sides: Vec<bool> = if pottery.is_some() {
        vec![true, false]
    } else {
        vec![true]
    };
    // (op, per call) → (crate, pottery)
    let mut cells: Vec<(Op, usize, Tally, Tally)> = Vec::new();
    for &op in &[Op::Add, Op::Check] {
        for &per_call in &per_calls {
            cells.push((op, per_call, Tally::default(), Tally::default()));
        }
    }
    for round in 0..rounds {
        for &per_call in &per_calls {
            let name = format!("cost-{round}-{per_call}");
            let filter = BloomFilter::new(name.clone(), capacity, one_in).unwrap();
            let key = format!("pottery-{name}");
            let mut order = sides.clone();
            if round % 2 == 1 {
                order.reverse();
            }
            for op in [Op::Add, Op::Check] {
                let prefix = match op {
                    Op::Add => format!("in:{round}:"),
                    Op::Check => format!("out:{round}:"),
                };
                let cell = cells
                    .iter_mut()
                    .find(|c| c.0 == op && c.1 == per_call)
                    .unwrap();
                for &is_crate in &order {
                    if is_crate {
                        let run = crate_run(&server, &filter, op, &prefix, items, per_call);
                        cell.2.push(run);
                    } else {
                        let (python, _) = pottery.as_ref().unwrap();
                        let run = pottery_run(
                            &server, python, op, &key, &prefix, items, per_call, capacity, one_in,
                        );
                        cell.3.push(run);
                    }
                }
            }
            // Free the round's filters: the next round makes its own.
            let mut keys: Vec<String> = vec![key];
            keys.extend(
                (0..)
                    .map_while(|i| filter.keys(i))
                    .flat_map(|(a, b)| [a.to_owned(), b.to_owned()]),
            );
            redis::cmd("DEL").arg(&keys).exec(&mut con).unwrap();
        }
    }

    let peer = pottery
        .as_ref()
        .map_or("pottery (not run)".to_owned(), |(_, v)| {
            format!("pottery {v}")
        });
    println!(
        "\nserver time per item: {items} items per side and round, {capacity} items at 1 in {one_in}, \
         median of {rounds} rounds; crate vs {peer}\n"
    );
    println!(
        "| op | items/call | side | m bits | k | server CPU µs/item | command µs/item | wall µs/item | crate ÷ pottery (CPU) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (op, per_call, ours, theirs) in &cells {
        let ratio = median(ours.server.clone()) / median(theirs.server.clone());
        for (label, tally) in [("crate", ours), ("pottery", theirs)] {
            let Some(first) = &tally.first else { continue };
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                op.name(),
                per_call,
                label,
                first.shape.0,
                first.shape.1,
                shown(median(tally.server.clone()), 2),
                shown(median(tally.command.clone()), 2),
                shown(median(tally.wall.clone()), 2),
                if label == "crate" && ratio.is_finite() {
                    format!("{ratio:.2}×")
                } else {
                    String::new()
                }
            );
        }
    }
    println!("\ncommands per item, round 1 (INFO commandstats: calls/item, µs/item)");
    for (op, per_call, ours, theirs) in &cells {
        for (label, tally) in [("crate", ours), ("pottery", theirs)] {
            let Some(first) = &tally.first else { continue };
            let n = first.items.max(1) as f64;
            let rows: Vec<String> = first
                .commands
                .iter()
                .map(|c| {
                    format!(
                        "{} {} ({} µs)",
                        c.name,
                        shown(c.calls as f64 / n, 3),
                        shown(c.usec as f64 / n, 2)
                    )
                })
                .collect();
            println!(
                "  {} {}/call {label}: {}",
                op.name(),
                per_call,
                rows.join(", ")
            );
        }
    }
}
