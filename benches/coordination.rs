//! The crate's coordination primitives against the peers a user would pick, side by side
//! on one redis-server this bench starts: acquire → release operations per second with
//! 1, 8 and 32 contenders, the server's CPU per operation, the wake-up latency from a
//! release to the next holder, and what one read release costs from 1 to 1,000 readers.
//!
//! ```sh
//! sh benches/peers/fetch-coordination.sh   # once: the peers, into ignored folders
//! cargo bench --bench coordination         # 3 rounds of 2,000 operations per cell
//! ROUNDS=5 OPS=5000 cargo bench --bench coordination
//! ```
//!
//! Also: MAX_SECS (20, the longest one side of one cell may run: a slow peer stops there
//! and its operations so far count), CONTENDERS (`1,8,32`), CELLS (`mutex,semaphore,read`),
//! PEERS (`redis-semaphore,redlock,pottery,rslock`), SAMPLES (400, read releases measured
//! per reader count), NODE (the node binary), REDIS_SERVER_BIN.
//!
//! **The peers** (`benches/peers/fetch-coordination.sh` installs them under
//! `benches/peers/coordination/`, which git ignores but for the programs and the pins):
//! npm `redis-semaphore` (its `Mutex` and `Semaphore`) and `redlock` (v4, the `latest` tag)
//! run by `bench.mjs` on ioredis; PyPI `pottery` (its `Redlock`) run by `bench.py` in a
//! venv; the crate `rslock` in a program of its own (`rslock/`, outside this workspace).
//! A peer that is not installed is skipped, with a line saying how to install it.
//! Each program runs one cell per process, prints `ready` after one untimed hold per
//! contender, starts on a line on stdin, and prints one JSON line: the operations done,
//! the seconds, its CPU time, and every hold's three timestamps (start of acquire, acquire
//! returned, release returned), in µs on one monotonic clock of its process.
//!
//! **The cells.** *mutex*: the crate's [`FairLock`], waiting with
//! [`FairLock::acquire_within`], barging ([`Order::Any`], the first row) and first come,
//! first served ([`Order::Fifo`], the second), against redis-semaphore's `Mutex` (polls `SET NX`
//! every 10 ms), redlock's `lock` (a script, retried every 200 ± 100 ms), pottery's
//! `Redlock.acquire` (`SET NX`, a random sleep of 0–200 ms between tries) and rslock's
//! `acquire` (`SET NX`, 3 tries 0–200 ms apart, then again). *semaphore*: the crate's
//! [`Semaphore`] with capacity 4, each contender taking 1 permit
//! ([`Semaphore::acquire_within`], without a place ([`Order::Any`]) and, as a second row,
//! in line ([`Order::Fifo`])), against redis-semaphore's `Semaphore` with limit 4 (its
//! script, polled every 10 ms). redlock, pottery and rslock have no semaphore. Every side
//! has one connection per contender and holds for a 10 s lease; each contender loops
//! acquire → release (nothing in between) until OPS acquisitions were claimed between
//! them. The peers' settings are their defaults but where they would give up: see the
//! head of `bench.mjs`, `bench.py` and `rslock/src/main.rs`. The crate's side runs in this
//! process, a thread per contender.
//!
//! **Measured**, around the timed holds only: operations per second; the server's CPU
//! (`INFO cpu`, used_cpu_sys + used_cpu_user) per operation; the commands per operation
//! (`INFO commandstats` after a `CONFIG RESETSTAT`, printed for the first round); the
//! client's CPU per operation (its process's getrusage, `process.cpuUsage()` in node).
//! *Wake-up latency* counts the holds that had to wait: with capacity C (1 for a mutex),
//! the i-th grant (in the order the acquires returned) could happen once the (i − C)-th
//! release had returned and the (i − 1)-th grant had; when its acquire started before that
//! moment, the sample is from that moment to its acquire returning (0 when the acquire
//! returned first). A library that lets the releaser take the lock again at once
//! (barging) has few such samples, all of them long. Percentiles over every sample of
//! every round.
//!
//! **Read release**: an [`RwLock`] with R = 1, 10, 100 and 1,000 read holds (R tokens),
//! the server's time of one `release_read` (`SLOWLOG` with slowlog-log-slower-than 0: the
//! command's execution alone, no network), each released hold taken again at once so that
//! R stays R (one release, then its slow-log entry read, then the hold taken again). SAMPLES releases per R; the mean and the median, and the ratio to R = 1.
//!
//! Rounds take turns (crate first, then the peers; the reverse next round) so that a noisy
//! moment hits every side alike. Medians of the rounds; ratios crate ÷ peer (ops/s: above
//! 1 is faster; µs/op: below 1 costs the server less). Read the ratios, not the digits.
//!
//! **A run on a 2-core machine** (ROUNDS=2 OPS=1000 CELLS=mutex,semaphore; redis-semaphore
//! 5.8.0, redlock 4.2.0, pottery 3.0.1, rslock 0.10.0; wake-ups in ms over the holds that
//! waited; ratios crate ÷ peer, ops/s then server µs/op, and the crate's second row
//! against its first):
//!
//! ```text
//! cell, side                         ops/s server µs wake p50 wake p99  waited client µs       ops    crate ÷ peer
//! mutex ×1
//!   crate FairLock (Any)             26222      25.9        -        -       0      12.1 1000/1000
//!   crate FairLock (Fifo)            25592      26.2        -        -       0      12.5 1000/1000   0.98× ops/s, 1.01× µs of the first row
//!   redis-semaphore                   6280      20.4        -        -       0     138.8 1000/1000   4.18× ops/s, 1.27× µs
//!   redlock                           5246      26.0        -        -       0     163.9 1000/1000   5.00× ops/s, 1.00× µs
//!   pottery Redlock                   2315      40.7        -        -       0     356.2 1000/1000   11.33× ops/s, 0.64× µs
//!   rslock                           42616      11.6        -        -       0      11.9 1000/1000   0.62× ops/s, 2.24× µs
//! mutex ×8
//!   crate FairLock (Any)              9357      72.9     0.00     0.16    1503      40.7 1000/1000
//!   crate FairLock (Fifo)            10128      71.9     0.05     0.14    1998      26.0 1000/1000   1.08× ops/s, 0.99× µs of the first row
//!   redis-semaphore                   4352      21.8     0.00    10.42     136     159.8 1000/1000   2.15× ops/s, 3.34× µs
//!   redlock                           2753      27.7    12.34   102.98      16     177.4 1000/1000   3.40× ops/s, 2.63× µs
//!   pottery Redlock                   1544      41.5     0.28    89.55      61     398.6 1000/1000   6.06× ops/s, 1.76× µs
//!   rslock                            5649      12.7    16.10    77.86      14      14.1 1000/1000   1.66× ops/s, 5.75× µs
//! mutex ×32
//!   crate FairLock (Any)              8151      79.7     0.00     0.22    1659      45.5 1000/1000
//!   crate FairLock (Fifo)             8672      78.9     0.06     0.16    1997      31.8 1000/1000   1.06× ops/s, 0.99× µs of the first row
//!   redis-semaphore                   2820      34.5     0.00    10.33     247     203.8 1000/1000   2.89× ops/s, 2.31× µs
//!   redlock                           1679      49.7     3.56    60.78      86     229.4 1000/1000   4.85× ops/s, 1.60× µs
//!   pottery Redlock                    655      88.4     0.54    20.04     431    1004.3 1000/1000   12.45× ops/s, 0.90× µs
//!   rslock                            4089      15.1     3.82   117.06      73      17.0 1000/1000   1.99× ops/s, 5.26× µs
//! semaphore ×1
//!   crate Semaphore (Any)            18059      39.8        -        -       0      13.3 1000/1000
//!   crate Semaphore (Fifo)           18922      39.3        -        -       0      13.3 1000/1000   1.05× ops/s, 0.99× µs of the first row
//!   redis-semaphore                   5907      26.6        -        -       0     145.1 1000/1000   3.06× ops/s, 1.50× µs
//! semaphore ×8
//!   crate Semaphore (Any)            14090      52.4     0.02     0.27    1968      22.5 1000/1000
//!   crate Semaphore (Fifo)            8034      88.9     0.11     0.27    1991      36.4 1000/1000   0.57× ops/s, 1.70× µs of the first row
//!   redis-semaphore                   5578      23.3     0.03     1.77    1765     159.7 1000/1000   2.53× ops/s, 2.25× µs
//! semaphore ×32
//!   crate Semaphore (Any)             6995      99.0     0.00     0.25    1991      48.3 1000/1000
//!   crate Semaphore (Fifo)            6697     106.4     0.13     0.31    1992      43.6 1000/1000   0.96× ops/s, 1.07× µs of the first row
//!   redis-semaphore                   3827      29.0     0.03     2.85    1836     189.1 1000/1000   1.83× ops/s, 3.41× µs
//! ```
//!
//! Read it so: a release wakes one waiter. Waiters in line block (`BLPOP`) on the turn
//! key of the one ahead of them, which it rings when it leaves the line, and the barging
//! waiters on a bell that a release rings once; Redis hands a ring to one blocked client,
//! so the others send nothing. Three scripts per hold whatever the contenders (the
//! releaser's release and its next try, the woken waiter's try), so server CPU per
//! operation is flat from 8 to 32 contenders in both modes, and the fair modes keep up
//! with the barging ones. Before the bells (every waiter on one wake stream, woken by
//! every release), the same run gave FairLock 157 and 488 server µs per operation at 8
//! and 32 contenders and the FIFO semaphore 204 and 759. Uncontended, and against the
//! peers that barge with `SET NX` under contention, the crate's two scripts per hold (an
//! acquire and a release, each checking its keys and arguments) cost the server more than
//! a `SET NX` and a release script: about 2.2× rslock's, which sends the fewest commands.
//! Read release, with CELLS=read, does not grow with R.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use redis_patterns::fair_lock::FairLock;
use redis_patterns::rw_lock::RwLock;
use redis_patterns::semaphore::{Order, Semaphore};
use redis_patterns::wait::Attempt;

#[path = "../tests/it/server.rs"]
mod server;

/// Where `benches/peers/fetch-coordination.sh` installs the peers.
const PEER_DIR: &str = "benches/peers/coordination";
/// Every hold's lease, on every side.
const LEASE: Duration = Duration::from_secs(10);
/// The semaphore's capacity; each contender takes one permit.
const CAPACITY: u64 = 4;
/// How long the crate's contenders wait at most for one acquire.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(60);
/// The read holds of the read-release cell.
const READERS: [usize; 4] = [1, 10, 100, 1000];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Mutex,
    Semaphore,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Mutex => "mutex",
            Kind::Semaphore => "semaphore",
        }
    }

    /// How many may hold at once.
    fn capacity(self) -> usize {
        match self {
            Kind::Mutex => 1,
            Kind::Semaphore => CAPACITY as usize,
        }
    }
}

/// One side of a cell: the crate's primitive, or a peer's program.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    FairLock,
    FairLockBarging,
    SemaphoreFifo,
    SemaphoreAny,
    Peer(PeerLib),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum PeerLib {
    RedisSemaphore,
    Redlock,
    Pottery,
    Rslock,
}

impl PeerLib {
    const ALL: [PeerLib; 4] = [
        PeerLib::RedisSemaphore,
        PeerLib::Redlock,
        PeerLib::Pottery,
        PeerLib::Rslock,
    ];

    fn name(self) -> &'static str {
        match self {
            PeerLib::RedisSemaphore => "redis-semaphore",
            PeerLib::Redlock => "redlock",
            PeerLib::Pottery => "pottery",
            PeerLib::Rslock => "rslock",
        }
    }

    fn supports(self, kind: Kind) -> bool {
        kind == Kind::Mutex || self == PeerLib::RedisSemaphore
    }

    /// The command that runs one cell, once installed; `Err` says how to install it.
    fn program(self, dir: &Path) -> Result<(String, Vec<String>), String> {
        let how = "sh benches/peers/fetch-coordination.sh";
        match self {
            PeerLib::RedisSemaphore | PeerLib::Redlock => {
                let package = dir
                    .join("node_modules")
                    .join(self.name())
                    .join("package.json");
                if !package.exists() {
                    return Err(format!(
                        "not installed ({} is missing): run `{how} npm` (needs node 20+ and npm)",
                        package.display()
                    ));
                }
                let node = std::env::var("NODE").unwrap_or_else(|_| "node".into());
                match Command::new(&node).arg("--version").output() {
                    Ok(out) if out.status.success() => {}
                    _ => return Err(format!("cannot run {node}: install node 20+, or set NODE")),
                }
                let script = dir.join("bench.mjs").display().to_string();
                Ok((node, vec![script, self.name().into()]))
            }
            PeerLib::Pottery => {
                let python = dir.join("venv/bin/python");
                let ok = Command::new(&python)
                    .args(["-c", "import pottery"])
                    .output()
                    .is_ok_and(|out| out.status.success());
                if !ok {
                    return Err(format!(
                        "not installed (no venv with pottery in {}): run `{how} pypi`",
                        dir.join("venv").display()
                    ));
                }
                let script = dir.join("bench.py").display().to_string();
                Ok((python.display().to_string(), vec![script]))
            }
            PeerLib::Rslock => {
                let bin = dir.join("rslock/target/release/coordination-rslock");
                if !bin.exists() {
                    return Err(format!(
                        "not built ({} is missing): run `{how} rslock`",
                        bin.display()
                    ));
                }
                Ok((bin.display().to_string(), vec![]))
            }
        }
    }
}

impl Side {
    fn label(self) -> String {
        match self {
            Side::FairLock => "crate FairLock (Fifo)".into(),
            Side::FairLockBarging => "crate FairLock (Any)".into(),
            Side::SemaphoreFifo => "crate Semaphore (Fifo)".into(),
            Side::SemaphoreAny => "crate Semaphore (Any)".into(),
            Side::Peer(PeerLib::RedisSemaphore) => "redis-semaphore".into(),
            Side::Peer(PeerLib::Redlock) => "redlock".into(),
            Side::Peer(PeerLib::Pottery) => "pottery Redlock".into(),
            Side::Peer(PeerLib::Rslock) => "rslock".into(),
        }
    }

    fn is_crate(self) -> bool {
        !matches!(self, Side::Peer(_))
    }
}

/// What one side of one cell measured.
struct Run {
    ops: usize,
    secs: f64,
    server_us: u64,
    client_us: u64,
    /// Every hold: start of acquire, acquire returned, release returned (µs).
    holds: Vec<[u64; 3]>,
    /// `INFO commandstats` after the run: (command, calls).
    commands: Vec<(String, u64)>,
}

// ---------------------------------------------------------------------------------------
// The crate's side: a thread per contender, a connection each.

/// One cell of the crate's side: `contenders` threads looping acquire → release until
/// `ops` acquisitions were claimed or `max` passed.
fn crate_run(
    server: &server::RedisProcess,
    side: Side,
    name: &str,
    contenders: usize,
    ops: usize,
    max: Duration,
) -> Run {
    let mut probe = server.connection();
    let cons: Vec<_> = (0..contenders).map(|_| server.connection()).collect();
    let lock = FairLock::new(name)
        .unwrap()
        .with_order(if side == Side::FairLockBarging {
            Order::Any
        } else {
            Order::Fifo
        });
    let semaphore = Semaphore::new(name).unwrap();
    if !matches!(side, Side::FairLock | Side::FairLockBarging) {
        semaphore.set_capacity(CAPACITY).run(&mut probe).unwrap();
    }
    // One hold per contender, untimed: as the peers' warm-up.
    let mut cons: Vec<_> = cons
        .into_iter()
        .map(|mut con| {
            acquire_release(side, &lock, &semaphore, &mut con);
            con
        })
        .collect();
    let claimed = AtomicUsize::new(0);
    let go = Barrier::new(contenders + 1);
    let (before, client_before, base) =
        (reset_and_read_cpu(&mut probe), client_us(), Instant::now());
    let holds: Vec<[u64; 3]> = std::thread::scope(|scope| {
        let handles: Vec<_> = cons
            .iter_mut()
            .map(|con| {
                let (claimed, go, lock, semaphore) = (&claimed, &go, &lock, &semaphore);
                scope.spawn(move || {
                    let mut mine = Vec::new();
                    go.wait();
                    let at = || base.elapsed().as_micros() as u64;
                    while base.elapsed() < max && claimed.fetch_add(1, Ordering::SeqCst) < ops {
                        let start = at();
                        let acquired = acquire_release(side, lock, semaphore, con);
                        mine.push([start, (acquired - base).as_micros() as u64, at()]);
                    }
                    mine
                })
            })
            .collect();
        go.wait();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let secs = base.elapsed().as_secs_f64();
    let client_us = client_us() - client_before;
    let server_us = server_cpu_us(&mut probe) - before;
    Run {
        ops: holds.len(),
        secs,
        server_us,
        client_us,
        holds,
        commands: commandstats(&mut probe),
    }
}

/// One acquire → release of the crate's side: when the acquire returned.
fn acquire_release(
    side: Side,
    lock: &FairLock,
    semaphore: &Semaphore,
    con: &mut redis::Connection,
) -> Instant {
    let acquired;
    match side {
        Side::FairLock | Side::FairLockBarging => {
            let token = FairLock::random_token();
            let fence = lock
                .acquire_within(con, &token, LEASE, ACQUIRE_TIMEOUT)
                .unwrap();
            acquired = Instant::now();
            assert!(
                fence.is_some(),
                "the FairLock was not granted within a minute"
            );
            assert!(lock.release(&token).run(con).unwrap());
        }
        Side::SemaphoreFifo | Side::SemaphoreAny => {
            let order = if side == Side::SemaphoreFifo {
                Order::Fifo
            } else {
                Order::Any
            };
            let holding = semaphore
                .acquire_within(con, 1, LEASE, order, ACQUIRE_TIMEOUT)
                .unwrap();
            acquired = Instant::now();
            let holding = holding.expect("the Semaphore granted a permit within a minute");
            assert_eq!(semaphore.release(&holding.token).run(con).unwrap(), 1);
        }
        Side::Peer(_) => unreachable!(),
    }
    acquired
}

// ---------------------------------------------------------------------------------------
// The peers' side: one process per cell.

fn peer_run(
    server: &server::RedisProcess,
    program: &(String, Vec<String>),
    kind: Kind,
    key: &str,
    contenders: usize,
    ops: usize,
    max: Duration,
) -> Run {
    let mut probe = server.connection();
    let mut child = Command::new(&program.0)
        .args(&program.1)
        .args([
            kind.name().to_string(),
            contenders.to_string(),
            ops.to_string(),
            server.url(0),
            key.to_string(),
            max.as_millis().to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot run {}: {err}", program.0));
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    if line.trim() != "ready" {
        let out = child.wait_with_output().unwrap();
        panic!(
            "{} {:?} did not get ready ({}): {line}{}",
            program.0,
            program.1,
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
            "{} {:?} printed no JSON ({err}, {}): {line}{}",
            program.0,
            program.1,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let holds = reply["holds"]
        .as_array()
        .map(|holds| {
            holds
                .iter()
                .filter_map(|h| {
                    let h = h.as_array()?;
                    Some([h[0].as_u64()?, h[1].as_u64()?, h[2].as_u64()?])
                })
                .collect()
        })
        .unwrap_or_default();
    Run {
        ops: reply["ops"].as_u64().unwrap_or(0) as usize,
        secs: reply["secs"].as_f64().unwrap_or(f64::NAN),
        server_us,
        client_us: reply["client_cpu_us"].as_u64().unwrap_or(0),
        holds,
        commands,
    }
}

/// The peer's version, from what it installed.
fn peer_version(lib: PeerLib, dir: &Path) -> String {
    let read = |path: PathBuf, field: &str| -> Option<String> {
        let text = std::fs::read_to_string(path).ok()?;
        text.lines().find_map(|line| {
            let rest = line.trim().strip_prefix(field)?;
            Some(
                rest.trim_matches(|c: char| {
                    c == '"' || c == ',' || c == ':' || c == ' ' || c == '='
                })
                .to_owned(),
            )
        })
    };
    match lib {
        PeerLib::RedisSemaphore | PeerLib::Redlock => read(
            dir.join("node_modules")
                .join(lib.name())
                .join("package.json"),
            "\"version\"",
        ),
        PeerLib::Pottery => read(dir.join("requirements.txt"), "pottery=="),
        PeerLib::Rslock => read(dir.join("rslock/Cargo.toml"), "rslock = { version = \"="),
    }
    .map(|v| v.split('"').next().unwrap_or("").to_owned())
    .unwrap_or_else(|| "?".into())
}

// ---------------------------------------------------------------------------------------
// The read-release cell.

/// The server's time of one `release_read` with `readers` read holds: every sample, µs.
fn read_release(
    server: &server::RedisProcess,
    name: &str,
    readers: usize,
    samples: usize,
) -> Vec<u64> {
    let mut con = server.connection();
    let lock = RwLock::new(name).unwrap();
    let lease = Duration::from_secs(600);
    let tokens: Vec<String> = (0..readers).map(|_| RwLock::random_token()).collect();
    let take = |con: &mut redis::Connection, token: &str| {
        let held = lock.try_read(token, lease).run(con).unwrap();
        assert_eq!(held, Attempt::Done(1), "a read hold is granted at once");
    };
    for token in &tokens {
        take(&mut con, token);
    }
    // One release at a time, read back from the slow log, then taken again: the same
    // steps between two releases whatever R (batches of R would run warmer as R grows).
    let batch = 1;
    let mut times = Vec::with_capacity(samples);
    let mut next = 0;
    while times.len() < samples {
        let chosen: Vec<&String> = (0..batch).map(|i| &tokens[(next + i) % readers]).collect();
        next += batch;
        redis::cmd("SLOWLOG").arg("RESET").exec(&mut con).unwrap();
        for token in &chosen {
            assert_eq!(lock.release_read(token).run(&mut con).unwrap(), Some(0));
        }
        let log: Vec<redis::Value> = redis::cmd("SLOWLOG")
            .arg("GET")
            .arg(1024)
            .query(&mut con)
            .unwrap();
        let mut got = 0;
        for entry in &log {
            let redis::Value::Array(fields) = entry else {
                continue;
            };
            let (Some(redis::Value::Int(us)), Some(redis::Value::Array(args))) =
                (fields.get(2), fields.get(3))
            else {
                continue;
            };
            let is_evalsha = matches!(args.first(), Some(redis::Value::BulkString(cmd)) if cmd.eq_ignore_ascii_case(b"evalsha"));
            if is_evalsha {
                times.push(*us as u64);
                got += 1;
            }
        }
        assert_eq!(got, batch, "every release is in the slow log");
        for token in chosen {
            take(&mut con, token);
        }
    }
    times
}

// ---------------------------------------------------------------------------------------
// Server and client readings.

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

/// The commands the server ran since the last `CONFIG RESETSTAT`, with their calls; the
/// bench's own INFO and CONFIG left out.
fn commandstats(con: &mut redis::Connection) -> Vec<(String, u64)> {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    let mut rows: Vec<(String, u64)> = info
        .lines()
        .filter_map(|line| {
            let (name, fields) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = fields
                .split(',')
                .find_map(|f| f.strip_prefix("calls=")?.parse::<u64>().ok())?;
            (!matches!(name, "info" | "config")).then(|| (name.to_owned(), calls))
        })
        .collect();
    rows.sort_by_key(|row| std::cmp::Reverse(row.1));
    rows
}

/// This process's CPU time so far (user and system, every thread), in µs.
fn client_us() -> u64 {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    us(usage.ru_utime) + us(usage.ru_stime)
}

// ---------------------------------------------------------------------------------------
// Wake-ups and summaries.

/// The wake-ups of one run (µs): for each grant that had to wait, from the moment it could
/// happen (the (i − C)-th release returned and the (i − 1)-th grant returned) to its
/// acquire returning.
fn wake_ups(holds: &[[u64; 3]], capacity: usize) -> Vec<u64> {
    let mut grants: Vec<[u64; 3]> = holds.to_vec();
    grants.sort_by_key(|h| h[1]);
    let mut releases: Vec<u64> = holds.iter().map(|h| h[2]).collect();
    releases.sort_unstable();
    let mut samples = Vec::new();
    for i in capacity..grants.len() {
        let free = releases[i - capacity].max(grants[i - 1][1]);
        let [start, acquired, _] = grants[i];
        if start < free {
            samples.push(acquired.saturating_sub(free));
        }
    }
    samples
}

/// One cell of the table: the primitive, the contenders, and each side with its results.
type Cell = (Kind, usize, Vec<(Side, Tally)>);

/// Every round's results of one side of one cell.
#[derive(Default)]
struct Tally {
    rate: Vec<f64>,
    server: Vec<f64>,
    client: Vec<f64>,
    wake_us: Vec<u64>,
    ops: Vec<usize>,
    commands: Option<Vec<(String, f64)>>,
}

impl Tally {
    fn push(&mut self, run: Run, capacity: usize) {
        let ops = run.ops.max(1) as f64;
        self.rate.push(run.ops as f64 / run.secs);
        self.server.push(run.server_us as f64 / ops);
        self.client.push(run.client_us as f64 / ops);
        self.wake_us.extend(wake_ups(&run.holds, capacity));
        self.ops.push(run.ops);
        if self.commands.is_none() {
            self.commands = Some(
                run.commands
                    .into_iter()
                    .map(|(name, calls)| (name, calls as f64 / ops))
                    .collect(),
            );
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

/// The `q`-quantile (nearest rank) of `samples` (µs), in ms.
fn quantile_ms(samples: &[u64], q: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64 / 1000.0
}

fn shown(value: f64, decimals: usize) -> String {
    if value.is_finite() {
        format!("{value:.decimals$}")
    } else {
        "-".into()
    }
}

fn times(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{ratio:.2}×")
    } else {
        "-".into()
    }
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A comma-separated list from the environment, or `default`.
fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn main() {
    let (rounds, ops) = (env("ROUNDS", 3), env("OPS", 2000));
    let max = Duration::from_secs(env("MAX_SECS", 20) as u64);
    let samples = env("SAMPLES", 400);
    let contenders: Vec<usize> = env_list("CONTENDERS", "1,8,32")
        .iter()
        .filter_map(|c| c.parse().ok())
        .collect();
    let cells = env_list("CELLS", "mutex,semaphore,read");
    let wanted = env_list("PEERS", "redis-semaphore,redlock,pottery,rslock");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(PEER_DIR);

    let mut peers = Vec::new();
    let mut skipped = Vec::new();
    for lib in PeerLib::ALL {
        if !wanted.iter().any(|w| w == lib.name()) {
            continue;
        }
        match lib.program(&dir) {
            Ok(program) => peers.push((lib, program)),
            Err(why) => skipped.push(format!("{}: skipped, {why}", lib.name())),
        }
    }

    let server = server::RedisProcess::start(&[]);
    let mut con = server.connection();
    redis_patterns::load_all(&mut con).unwrap();

    let kinds: Vec<Kind> = [Kind::Mutex, Kind::Semaphore]
        .into_iter()
        .filter(|k| cells.iter().any(|c| c == k.name()))
        .collect();
    let mut table: Vec<Cell> = Vec::new();
    for &kind in &kinds {
        for &c in &contenders {
            let mut sides: Vec<Side> = match kind {
                Kind::Mutex => vec![Side::FairLockBarging, Side::FairLock],
                Kind::Semaphore => vec![Side::SemaphoreAny, Side::SemaphoreFifo],
            };
            sides.extend(
                peers
                    .iter()
                    .filter(|(lib, _)| lib.supports(kind))
                    .map(|(lib, _)| Side::Peer(*lib)),
            );
            table.push((
                kind,
                c,
                sides.into_iter().map(|s| (s, Tally::default())).collect(),
            ));
        }
    }

    for round in 0..rounds {
        for (cell, (kind, c, sides)) in table.iter_mut().enumerate() {
            let order: Vec<usize> = if round % 2 == 0 {
                (0..sides.len()).collect()
            } else {
                (0..sides.len()).rev().collect()
            };
            for i in order {
                let side = sides[i].0;
                let key = format!("r{round}-c{cell}-{}", side.label().replace(' ', "-"));
                let run = match side {
                    Side::Peer(lib) => {
                        let program = &peers.iter().find(|(l, _)| *l == lib).unwrap().1;
                        peer_run(&server, program, *kind, &key, *c, ops, max)
                    }
                    _ => crate_run(&server, side, &key, *c, ops, max),
                };
                eprintln!(
                    "round {} {} ×{c} {}: {} ops in {:.2} s",
                    round + 1,
                    kind.name(),
                    side.label(),
                    run.ops,
                    run.secs
                );
                sides[i].1.push(run, kind.capacity());
            }
        }
    }

    let versions: Vec<String> = peers
        .iter()
        .map(|(lib, _)| format!("{} {}", lib.name(), peer_version(*lib, &dir)))
        .collect();
    println!(
        "acquire → release, one redis-server; {rounds} rounds of up to {ops} operations per cell (at most {} s), medians; {}",
        max.as_secs(),
        if versions.is_empty() {
            "no peer installed".into()
        } else {
            versions.join(", ")
        }
    );
    println!(
        "{:<30} {:>9} {:>9} {:>8} {:>8} {:>7} {:>9} {:>9}   {:>13}",
        "cell, side",
        "ops/s",
        "server µs",
        "wake p50",
        "wake p99",
        "waited",
        "client µs",
        "ops",
        "crate ÷ peer"
    );
    let mut rate_ratios = Vec::new();
    let mut cpu_ratios = Vec::new();
    let mut crate_wake: Vec<(String, f64)> = Vec::new();
    for (kind, c, sides) in &table {
        println!("{} ×{c}", kind.name());
        // The crate's first row of the cell (its barging mode) is what the peers and its
        // other rows are compared with.
        let (crate_rate, crate_cpu) = (
            median(sides[0].1.rate.clone()),
            median(sides[0].1.server.clone()),
        );
        for (i, (side, t)) in sides.iter().enumerate() {
            let (rate, cpu) = (median(t.rate.clone()), median(t.server.clone()));
            let ratios = if side.is_crate() && i == 0 {
                String::new()
            } else if side.is_crate() {
                format!(
                    "{} ops/s, {} µs of the first row",
                    times(rate / crate_rate),
                    times(cpu / crate_cpu)
                )
            } else {
                rate_ratios.push((
                    format!("{} ×{c} {}", kind.name(), side.label()),
                    crate_rate / rate,
                ));
                cpu_ratios.push((
                    format!("{} ×{c} {}", kind.name(), side.label()),
                    crate_cpu / cpu,
                ));
                format!(
                    "{} ops/s, {} µs",
                    times(crate_rate / rate),
                    times(crate_cpu / cpu)
                )
            };
            if side.is_crate() && *c > 1 {
                crate_wake.push((
                    format!("{} ×{c} {}", kind.name(), side.label()),
                    quantile_ms(&t.wake_us, 0.5),
                ));
            }
            println!(
                "  {:<28} {:>9} {:>9} {:>8} {:>8} {:>7} {:>9} {:>9}   {}",
                side.label(),
                shown(rate, 0),
                shown(cpu, 1),
                shown(quantile_ms(&t.wake_us, 0.5), 2),
                shown(quantile_ms(&t.wake_us, 0.99), 2),
                t.wake_us.len(),
                shown(median(t.client.clone()), 1),
                t.ops
                    .iter()
                    .map(|o| o.to_string())
                    .collect::<Vec<_>>()
                    .join("/"),
                ratios
            );
        }
    }
    println!(
        "(server µs: INFO cpu per operation; wake p50/p99 in ms over the holds that waited (`waited`: how many, every round); client µs: the side's process CPU per operation; ops: done per round; ratios against the cell's first crate row)"
    );

    println!();
    println!("commands per operation, round 1 (INFO commandstats)");
    for (kind, c, sides) in &table {
        for (side, t) in sides {
            let list = t
                .commands
                .as_deref()
                .unwrap_or_default()
                .iter()
                .filter(|(_, per)| *per >= 0.005)
                .map(|(name, per)| format!("{name} {per:.2}"))
                .collect::<Vec<_>>()
                .join(", ");
            println!(
                "  {:<16} {:<24} {list}",
                format!("{} ×{c}", kind.name()),
                side.label()
            );
        }
    }

    let mut flat = None;
    if cells.iter().any(|c| c == "read") {
        println!();
        println!(
            "read release (RwLock::release_read), server time per call from SLOWLOG, {samples} releases per R"
        );
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-log-slower-than")
            .arg(0)
            .arg("slowlog-max-len")
            .arg(1024)
            .exec(&mut con)
            .unwrap();
        println!(
            "{:<12} {:>9} {:>9} {:>9}",
            "readers", "mean µs", "p50 µs", "÷ R=1"
        );
        let mut base_mean = f64::NAN;
        let mut means = Vec::new();
        for (i, &r) in READERS.iter().enumerate() {
            let released = read_release(&server, &format!("read-{i}"), r, samples);
            let mean = released.iter().sum::<u64>() as f64 / released.len() as f64;
            if r == 1 {
                base_mean = mean;
            }
            means.push(mean);
            println!(
                "{:<12} {:>9} {:>9} {:>9}",
                r,
                shown(mean, 2),
                shown(quantile_ms(&released, 0.5) * 1000.0, 0),
                times(mean / base_mean)
            );
        }
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-log-slower-than")
            .arg(10000)
            .exec(&mut con)
            .unwrap();
        println!(
            "(at R = 1 the release is the last reader's: it frees the lock and appends to the wake stream; at R > 1 one reader of R leaves)"
        );
        let lo = means.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = means.iter().copied().fold(0.0, f64::max);
        flat = Some((
            hi / lo,
            means.last().copied().unwrap_or(f64::NAN) / means.get(1).copied().unwrap_or(f64::NAN),
        ));
    }

    println!();
    for line in &skipped {
        println!("{line}");
    }
    let verdict = |ok: bool| if ok { "met" } else { "not met" };
    let list = |v: &[(String, f64)]| {
        v.iter()
            .map(|(name, r)| format!("{name} {r:.2}"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    if !rate_ratios.is_empty() {
        println!(
            "goal ops/s ahead of every peer in every cell: {} ({})",
            verdict(rate_ratios.iter().all(|(_, r)| *r > 1.0)),
            list(&rate_ratios)
        );
        println!(
            "goal server CPU per operation below every peer's in every cell: {} ({})",
            verdict(cpu_ratios.iter().all(|(_, r)| *r < 1.0)),
            list(&cpu_ratios)
        );
    }
    if !crate_wake.is_empty() {
        println!(
            "goal wake-up p50 ≤ 2 ms: {} ({} ms)",
            verdict(crate_wake.iter().all(|(_, p)| *p <= 2.0)),
            list(&crate_wake)
        );
    }
    if let Some((spread, grown)) = flat {
        println!(
            "goal read release flat (within 10 %) from 1 to 1,000 readers: {} (the costliest R at {spread:.2}× the cheapest; R = 1,000 at {grown:.2}× R = 10)",
            verdict(spread <= 1.10)
        );
    }
}
