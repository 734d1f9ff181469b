//! What the scripted `IdentityLock::release` costs, side by side in one run:
//!
//! - the crate's wrapper (`EVALSHA` through an `Op`);
//! - a raw `EVALSHA` through redis-rs's `Script` (the wrapper's overhead);
//! - the book's WATCH, GET, MULTI, DEL, EXEC (three round trips);
//! - pipelined: a `Batch` of releases against `redis-benchmark` sending the same `EVALSHA`
//!   on one connection;
//! - batched: a `Batch` of 16 and of 100 releases against a raw `redis::pipe()` of the same
//!   `EVALSHA`s, taking turns round by round, as plain pipelines and as MULTI/EXEC
//!   transactions (medians of the rounds). A plain `Batch` whose operations all call one
//!   script sends the calls alone, as the raw pipe does; a transaction (and a pipeline of
//!   several scripts or with native commands) also sends the script's `SCRIPT LOAD` in
//!   band, so that it never needs a second round trip and keeps its order: the
//!   transaction's ratio shows what that costs.
//!
//! - native: on a server that has them, `DELIFEQ` against the release script and
//!   `SET … IFEQ … PX` against the extend script (`IdentityLock::with_server`), with the
//!   server's own time per call from `INFO commandstats`.
//!
//! ```sh
//! cargo bench --bench identity_lock            # 20,000 releases per way
//! ROUNDS=100000 cargo bench --bench identity_lock
//! REDIS_SERVER_BIN=$(bash .ci/server valkey-9) cargo bench --bench identity_lock
//! ```
//!
//! Each release is preceded by an untimed `SET NX` that takes the lock. Timings are noisy
//! on a shared machine; the ratios are what to read.

use std::process::Command;
use std::time::{Duration, Instant};

use redis_patterns::identity_lock::IdentityLock;
use redis_patterns::server::{Capability, Server};
use redis_patterns::{Batch, scripts};

#[path = "../tests/it/server.rs"]
mod server;

const KEY: &str = "bench:lock";
const TOKEN: &str = "bench-token";

fn take(con: &mut redis::Connection) {
    let _: Option<String> = redis::cmd("SET")
        .arg(KEY)
        .arg(TOKEN)
        .arg("NX")
        .query(con)
        .unwrap();
}

type Release<'a> = Box<dyn FnMut(&mut redis::Connection) -> bool + 'a>;

/// Mean time of each way's call over `rounds`, each after an untimed `before` (taking the
/// lock, for releases). The ways take turns round by round, so that a noisy moment on the
/// machine hits them alike.
fn measure(
    con: &mut redis::Connection,
    rounds: u32,
    before: fn(&mut redis::Connection),
    ways: &mut [Release<'_>],
) -> Vec<Duration> {
    let mut totals = vec![Duration::ZERO; ways.len()];
    for _ in 0..rounds {
        for (way, total) in ways.iter_mut().zip(&mut totals) {
            before(con);
            let start = Instant::now();
            let done = way(con);
            *total += start.elapsed();
            assert!(done, "a call failed");
        }
    }
    totals.into_iter().map(|t| t / rounds).collect()
}

fn book_release(con: &mut redis::Connection) -> bool {
    let _: () = redis::cmd("WATCH").arg(KEY).query(con).unwrap();
    let value: Option<String> = redis::cmd("GET").arg(KEY).query(con).unwrap();
    if value.as_deref() != Some(TOKEN) {
        let _: () = redis::cmd("UNWATCH").query(con).unwrap();
        return false;
    }
    let deleted: Option<(i64,)> = redis::pipe()
        .atomic()
        .cmd("DEL")
        .arg(KEY)
        .query(con)
        .unwrap();
    deleted == Some((1,))
}

/// The median of `times`.
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

/// Median time of a `Batch` of `size` releases and of a raw pipeline of the same
/// `EVALSHA`s (both MULTI/EXEC transactions when `atomic`), taking turns round by round,
/// each after an untimed pipeline that takes the locks.
fn batch_vs_pipe(
    con: &mut redis::Connection,
    size: usize,
    rounds: u32,
    atomic: bool,
) -> (Duration, Duration) {
    let keys: Vec<String> = (0..size).map(|i| format!("bench:batch:{i}")).collect();
    let take_all = |con: &mut redis::Connection| {
        let mut pipe = redis::pipe();
        for key in &keys {
            pipe.cmd("SET").arg(key).arg(TOKEN).ignore();
        }
        let _: () = pipe.query(con).unwrap();
    };
    let (mut ours, mut raw) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        take_all(con);
        let mut batch = if atomic {
            Batch::transaction()
        } else {
            Batch::new()
        };
        let slots: Vec<_> = keys
            .iter()
            .map(|key| batch.add(IdentityLock::new(key.as_str()).unwrap().release(TOKEN)))
            .collect();
        let start = Instant::now();
        let mut replies = batch.run(con).unwrap();
        ours.push(start.elapsed());
        for slot in slots {
            assert!(slot.take(&mut replies).unwrap());
        }

        take_all(con);
        let mut pipe = redis::pipe();
        if atomic {
            pipe.atomic();
        }
        for key in &keys {
            pipe.cmd("EVALSHA")
                .arg(scripts::identity_lock::RELEASE.sha1)
                .arg(1)
                .arg(key)
                .arg(TOKEN);
        }
        let start = Instant::now();
        let released: Vec<i64> = pipe.query(con).unwrap();
        raw.push(start.elapsed());
        assert!(released.iter().all(|&r| r == 1));
    }
    (median(ours), median(raw))
}

fn main() {
    let rounds: u32 = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20_000);
    let server = server::RedisProcess::start(&[]);
    let mut con = server.connection();
    redis_patterns::load_all(&mut con).unwrap();

    let lock = IdentityLock::new(KEY).unwrap();
    let raw = redis::Script::new(scripts::identity_lock::RELEASE.source);
    let mut ways: [Release<'_>; 3] = [
        Box::new(|con| lock.release(TOKEN).run(con).unwrap()),
        Box::new(|con| raw.key(KEY).arg(TOKEN).invoke(con).unwrap()),
        Box::new(book_release),
    ];
    // Warm up the connection, the server and the caches.
    measure(&mut con, 1000, take, &mut ways);
    let [crate_op, raw_script, book] = measure(&mut con, rounds, take, &mut ways)[..] else {
        unreachable!("one mean per way")
    };

    println!("IdentityLock::release, mean of {rounds} each (one connection, loopback):");
    let row = |name: &str, t: Duration| {
        println!(
            "  {name:<44} {:>8.1} µs  {:>5.2}× the crate's",
            t.as_secs_f64() * 1e6,
            t.as_secs_f64() / crate_op.as_secs_f64()
        );
    };
    row("crate: lock.release(token).run(&mut con)", crate_op);
    row("redis-rs Script::invoke (raw EVALSHA)", raw_script);
    row("book: WATCH GET MULTI DEL EXEC", book);

    // Pipelined: the releases go 100 to a batch; redis-benchmark sends the same EVALSHA
    // with -P 100. Its releases find the lock free (nothing re-takes it), ours find it
    // held: the script's work differs by one DEL.
    let batches = (rounds / 100).max(1);
    let mut total = Duration::ZERO;
    for _ in 0..batches {
        let mut take_all = redis::pipe();
        let mut batch = Batch::new();
        let mut slots = Vec::new();
        for i in 0..100 {
            let key = format!("bench:lock:{i}");
            take_all.cmd("SET").arg(&key).arg(TOKEN).ignore();
            slots.push(batch.add(IdentityLock::new(key).unwrap().release(TOKEN)));
        }
        let _: () = take_all.query(&mut con).unwrap();
        let start = Instant::now();
        let mut replies = batch.run(&mut con).unwrap();
        total += start.elapsed();
        for slot in slots {
            assert!(slot.take(&mut replies).unwrap());
        }
    }
    println!("\nBatch against a raw redis::pipe() of the same EVALSHAs, median per round trip:");
    for atomic in [false, true] {
        for size in [16, 100] {
            let rounds = (rounds / 10).max(100);
            batch_vs_pipe(&mut con, size, rounds / 10, atomic);
            let (ours, raw) = batch_vs_pipe(&mut con, size, rounds, atomic);
            println!(
                "  {:<11} {size:>3} releases: Batch {:>7.1} µs, raw pipe {:>7.1} µs: Batch at {:.2} of the raw pipe's speed",
                if atomic { "transaction" } else { "pipeline" },
                ours.as_secs_f64() * 1e6,
                raw.as_secs_f64() * 1e6,
                raw.as_secs_f64() / ours.as_secs_f64()
            );
        }
    }

    let ours = f64::from(batches * 100) / total.as_secs_f64();
    println!("\nPipelined, 100 releases per round trip:");
    println!("  crate: Batch of 100                           {ours:>10.0} releases/s");
    let output = Command::new("redis-benchmark")
        .args([
            "-p",
            &server.port().to_string(),
            "-c",
            "1",
            "-n",
            &(batches * 100).to_string(),
            "-P",
            "100",
            "-q",
        ])
        .args([
            "EVALSHA",
            scripts::identity_lock::RELEASE.sha1,
            "1",
            KEY,
            TOKEN,
        ])
        .output();
    match output {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            // `-q` prints `<command>: <n> requests per second, p50=...`.
            let words: Vec<&str> = text.split_whitespace().collect();
            let rps = words
                .windows(2)
                .find(|w| w[1] == "requests")
                .and_then(|w| w[0].parse::<f64>().ok())
                .unwrap_or(f64::NAN);
            println!("  redis-benchmark -c 1 -P 100, same EVALSHA     {rps:>10.0} releases/s");
            println!(
                "  ratio (redis-benchmark / crate)               {:>10.2}",
                rps / ours
            );
        }
        _ => println!("  redis-benchmark not found: install redis-tools to compare"),
    }

    native_vs_scripts(&mut con, rounds);
}

/// The server's own mean time per call of `command`, in µs, since the last `CONFIG
/// RESETSTAT`.
fn usec_per_call(con: &mut redis::Connection, command: &str) -> f64 {
    let stats: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    stats
        .lines()
        .find_map(|line| line.strip_prefix(&format!("cmdstat_{command}:")))
        .and_then(|fields| {
            fields
                .split(',')
                .find_map(|f| f.strip_prefix("usec_per_call="))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

fn reset_stats(con: &mut redis::Connection) {
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(con).unwrap();
}

/// The native compare-and-delete and compare-and-set against the scripts they replace,
/// where the server has them.
fn native_vs_scripts(con: &mut redis::Connection, rounds: u32) {
    let server = Server::probe(con).unwrap();
    let scripted = IdentityLock::new(KEY).unwrap();
    let native = IdentityLock::new(KEY).unwrap().with_server(&server);
    println!("\nNative commands against the scripts on {server}, mean of {rounds} each:");

    if server.supports(Capability::DeleteIfEqual) {
        let mut ways: [Release<'_>; 2] = [
            Box::new(|con| scripted.release(TOKEN).run(con).unwrap()),
            Box::new(|con| native.release(TOKEN).run(con).unwrap()),
        ];
        script_vs_native(
            con,
            rounds,
            "release",
            ("DELIFEQ", "delifeq"),
            take,
            &mut ways,
        );
    } else {
        println!("  release: {server} has no DELIFEQ; the script is the only way");
    }

    if server.supports(Capability::SetIfEqual) {
        // Taken once: each extend finds it held with the token. Nothing runs between the
        // calls, so that `cmdstat_set` counts the extends alone.
        take(con);
        let ttl = Duration::from_secs(60);
        let mut ways: [Release<'_>; 2] = [
            Box::new(|con| scripted.extend(TOKEN, ttl).run(con).unwrap()),
            Box::new(|con| native.extend(TOKEN, ttl).run(con).unwrap()),
        ];
        let nothing: fn(&mut redis::Connection) = |_| {};
        script_vs_native(
            con,
            rounds,
            "extend",
            ("SET … IFEQ … PX", "set"),
            nothing,
            &mut ways,
        );
    } else {
        println!("  extend: {server} has no SET … IFEQ; the script is the only way");
    }
}

/// Times `call` by its script and by its native command (`native`: how it is shown, and
/// its `cmdstat_` name), taking turns, and prints both with the server's own time per call.
fn script_vs_native(
    con: &mut redis::Connection,
    rounds: u32,
    call: &str,
    (native_name, native_stat): (&str, &str),
    before: fn(&mut redis::Connection),
    ways: &mut [Release<'_>; 2],
) {
    measure(con, 1000, before, ways);
    reset_stats(con);
    let [script, native] = measure(con, rounds, before, ways)[..] else {
        unreachable!("one mean per way")
    };
    let script_us = usec_per_call(con, "evalsha");
    for (name, client, server_us) in [
        ("script (EVALSHA)", script, script_us),
        (native_name, native, usec_per_call(con, native_stat)),
    ] {
        println!(
            "  {:<34} {:>7.1} µs ({:.2}× the script's), server {server_us:>5.2} µs per call ({:.2}×)",
            format!("{call}: {name}"),
            client.as_secs_f64() * 1e6,
            client.as_secs_f64() / script.as_secs_f64(),
            server_us / script_us,
        );
    }
}
