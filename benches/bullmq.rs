//! `WorkQueue` against BullMQ (the npm package `bullmq`), side by side on one
//! redis-server this bench starts, with the same 100-byte jobs: jobs per second, the
//! server's CPU time per job, and pickup latency.
//!
//! ```sh
//! sh benches/peers/fetch-bullmq.sh        # once: npm install into benches/peers/bullmq/ (ignored by git)
//! cargo bench --bench bullmq              # 5 rounds of 3,000 jobs per cell, 25 idle pickups per round
//! ROUNDS=9 JOBS=10000 PICKUPS=100 cargo bench --bench bullmq
//! POLL_MS=1000 cargo bench --bench bullmq # the longest wait of the crate's Worker for a wake-up
//! ```
//!
//! Also: IDLE_GAP_MS (250, the longest pause before an idle pickup's add), WARM (500,
//! BullMQ's untimed warm-up jobs per cell), NODE (the node binary), REDIS_SERVER_BIN,
//! and COMMANDSTATS=1 to print which commands each side's cells of the first round ran
//! per job (`INFO commandstats`; BullMQ's counts include its warm-up's jobs).
//!
//! Without BullMQ installed (or without `node`), the bench runs the crate's cells alone
//! and says how to install it. `NODE=<path>` picks the node binary (v20 or newer).
//!
//! **The flow.** Every job goes add → take → ack, and in every throughput cell the
//! producers add while the workers drain: W producers (a connection each) add JOBS jobs
//! between them, one per call (25 per call in the batch cells), while W workers (a
//! connection each) take and ack them, until all are acked. Timed from the start of the
//! adds to the last ack; the server's CPU (`INFO cpu`: used_cpu_sys + used_cpu_user)
//! read around the same span, and the client process's own CPU (getrusage here,
//! `process.cpuUsage()` in node), with when the last add returned: near 100% of the
//! cell, the producers set the pace (the workers kept up); well below, the workers did
//! (a backlog built up). The cells:
//!
//! - *W workers, one job per call*: the crate's worker runs the handler and acks the job
//!   in the call that takes the next, `ack_and_take` ([`crate_one_per_call`]), one round
//!   trip per job as BullMQ's. BullMQ: W `Worker`s with `concurrency: 1`,
//!   which ack a job and fetch the next in one script (`moveToFinished`).
//! - *W workers, batches of 25*: the crate's producers add 25 jobs per round trip (a
//!   [`Batch`]), its workers ack 25 jobs and take the next 25 in one call, `ack_and_take`
//!   ([`crate_batches`]). BullMQ has no batched take in its open-source package; its side
//!   is its batched add (`addBulk` of 25, one pipeline) and W `Worker`s with
//!   `concurrency: 25`, which hold as many jobs at once as a crate worker's take of 25.
//!
//! Both sides have the same number of connections (BullMQ adds a blocking one per
//! Worker). The crate's side runs in this process (a thread per producer and worker);
//! BullMQ's in one node process (`benches/peers/bullmq/bench.mjs`, spawned per cell),
//! which prints its results as one JSON line. Node runs JavaScript on one thread: where
//! BullMQ's client CPU per job times its jobs/s nears a whole core, its own client sets
//! its pace. A crate worker that finds the queue empty (at the start, or while others
//! hold the last jobs) waits for a wake-up (`wait_for_work`, up to 5 ms, then it looks
//! whether the cell is over), as BullMQ's blocks on its marker; the count of those empty takes is
//! printed.
//!
//! **Pickup latency** is from `add` returning to the handler starting, both timestamps
//! read from one clock in one process (`Instant` here, `performance.now()` in node),
//! never the server's. On an *idle queue*: one job at a time, each added after a random
//! pause of 0 to IDLE_GAP_MS (250) ms and handled before the next, with the crate's
//! [`Worker`] loop ([`crate_pickup`], set up in [`crate_worker`]) and one BullMQ Worker.
//! *Under load*: every job of the throughput cells; it includes the wait behind whatever
//! backlog the producers built. A handler that starts before its add returned (the
//! worker's reply can come first) counts as 0.
//!
//! **BullMQ's settings**: `removeOnComplete` (it keeps no finished job; the crate's ack
//! deletes the job), a custom `jobId` per job (the crate's add takes an id and
//! deduplicates by it; BullMQ checks a custom id too), everything else at its defaults:
//! a 30 s lock as the crate's 30 s lease, the stalled-job check every 30 s, `drainDelay`
//! 5 s, its events stream capped near 10,000 entries, no metrics. Its keys are deleted
//! after each cell (untimed), so no cell inherits another's stream.
//!
//! BullMQ runs in a fresh node process per cell, so each of its throughput cells is
//! preceded by an untimed warm-up of the same cell on another queue (WARM=500 jobs), as
//! a long-running worker would have warmed up its JIT.
//!
//! Rounds take turns (crate, BullMQ; then BullMQ, crate; …) so that a noisy moment on
//! the machine hits both alike. The table gives the median of the rounds, the ratios
//! crate ÷ BullMQ, and pickup percentiles over every sample of every round. Read the
//! ratios, not the digits.

use std::process::Command;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Barrier, mpsc};
use std::time::{Duration, Instant};

use redis_patterns::Batch;
use redis_patterns::work_queue::{Job, Stop, WorkQueue, Worker};

#[path = "../tests/it/server.rs"]
mod server;

/// Where `benches/peers/fetch-bullmq.sh` installs BullMQ, and BullMQ's side of the bench.
const PEER_DIR: &str = "benches/peers/bullmq";
/// The jobs a batch adds, takes and acks.
const BATCH: usize = 25;
/// Every job's payload: 100 bytes (BullMQ's side stores JSON of a 98-character string).
const PAYLOAD: &[u8; 100] = &[b'x'; 100];
/// The throughput cells: (workers, jobs per call).
const CELLS: [(usize, usize); 4] = [(1, 1), (8, 1), (1, BATCH), (8, BATCH)];

// ---------------------------------------------------------------------------------------
// The crate's side. The per-job flow lives in the four functions below, so that a
// combined ack-and-take call or a new Worker wake-up changes them alone.

/// The crate's worker for the idle pickups: the queue's `Worker` loop, with its default
/// poll unless POLL_MS is set.
fn crate_worker(queue: &WorkQueue) -> Worker<'_> {
    match env_ms("POLL_MS") {
        Some(poll) => queue.worker().poll(poll),
        None => queue.worker(),
    }
}

/// One worker of a throughput cell, one job per call: the handler (`started`) for each
/// job, which is acked in the call that takes the next (`ack_and_take`, or `take(1)`
/// with no job in hand), until `acked` reaches `jobs`; with nothing to take, a wait for
/// a wake-up (`wait_for_work`). Returns its empty takes.
fn crate_one_per_call(
    con: &mut redis::Connection,
    queue: &WorkQueue,
    jobs: usize,
    acked: &AtomicUsize,
    started: &dyn Fn(&Job),
) -> u64 {
    let mut empty = 0;
    let mut held: Option<Job> = None;
    loop {
        let next = match held.take() {
            Some(done) => {
                let next = queue.ack_and_take([&done], 1).run(con).unwrap();
                acked.fetch_add(1, Ordering::SeqCst);
                next
            }
            None => queue.take(1).run(con).unwrap(),
        };
        if let Some(job) = next.into_iter().next() {
            started(&job);
            held = Some(job);
            continue;
        }
        if acked.load(Ordering::SeqCst) >= jobs {
            return empty;
        }
        empty += 1;
        queue.wait_for_work(IDLE_WAIT).run(con).unwrap();
    }
}

/// How long a worker of a throughput cell waits for a wake-up before it looks whether
/// the cell is over.
const IDLE_WAIT: Duration = Duration::from_millis(5);

/// One worker of a throughput cell, in batches: the handler for each of up to 25 jobs,
/// then their acks and the take of the next 25 in one call (`ack_and_take`: one round
/// trip and one script per 25 jobs), until `acked` reaches `jobs`; with nothing to take,
/// a wait for a wake-up. Returns its empty takes.
fn crate_batches(
    con: &mut redis::Connection,
    queue: &WorkQueue,
    jobs: usize,
    acked: &AtomicUsize,
    started: &dyn Fn(&Job),
) -> u64 {
    let mut empty = 0;
    let mut held: Vec<Job> = Vec::new();
    loop {
        let next = queue.ack_and_take(&held, BATCH as u64).run(con).unwrap();
        acked.fetch_add(held.len(), Ordering::SeqCst);
        held = next;
        if !held.is_empty() {
            held.iter().for_each(started);
            continue;
        }
        if acked.load(Ordering::SeqCst) >= jobs {
            return empty;
        }
        empty += 1;
        queue.wait_for_work(IDLE_WAIT).run(con).unwrap();
    }
}

/// Idle pickups: `pickups` jobs one at a time, each after a random pause below `gap`,
/// handled by the crate's `Worker` before the next is added: each pickup (µs), and the
/// server's CPU and the time over the whole run.
fn crate_pickup(
    server: &server::RedisProcess,
    queue: &WorkQueue,
    pickups: usize,
    gap: Duration,
    rng: &mut Rng,
) -> Cell {
    let stop = Stop::new();
    let (began_tx, began) = mpsc::channel::<Instant>();
    let mut con = server.connection();
    let client = redis::Client::open(server.url(0)).unwrap();
    let cpu_before = server_us(&mut con);
    let start = Instant::now();
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            crate_worker(queue).run(&client, &stop, move |_job| {
                let _ = began_tx.send(Instant::now());
                Ok::<(), String>(())
            })
        });
        let mut pickup_us = Vec::with_capacity(pickups);
        for n in 0..pickups {
            std::thread::sleep(gap.mul_f64(rng.unit()));
            let id = format!("j-{n}");
            queue.add(&id, PAYLOAD).run(&mut con).unwrap();
            let added = Instant::now();
            let at = began.recv().expect("the worker runs");
            pickup_us.push(at.saturating_duration_since(added).as_micros() as u64);
            // Handled: acked, so gone from the queue.
            std::thread::sleep(Duration::from_micros(500));
            while queue.job(&id).run(&mut con).unwrap().is_some() {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        let secs = start.elapsed().as_secs_f64();
        let cpu_us = server_us(&mut con) - cpu_before;
        stop.stop();
        worker.join().unwrap().unwrap();
        Cell {
            jobs: pickups,
            secs,
            cpu_us,
            pickup_us,
            ..Cell::default()
        }
    })
}

/// One producer of a throughput cell: jobs `p`, `p + workers`, … one add per call when
/// `per` is 1, else `per` adds in one `Batch`; `added` gets when each add returned.
fn crate_produce(
    con: &mut redis::Connection,
    queue: &WorkQueue,
    (p, workers, jobs, per): (usize, usize, usize, usize),
    added: &dyn Fn(usize),
) {
    let mine: Vec<usize> = (p..jobs).step_by(workers).collect();
    for chunk in mine.chunks(per) {
        if let [n] = chunk {
            queue.add(&format!("j-{n}"), PAYLOAD).run(con).unwrap();
        } else {
            let mut adds = Batch::new();
            for n in chunk {
                let _ = adds.add(queue.add(&format!("j-{n}"), PAYLOAD));
            }
            adds.run(con).unwrap();
        }
        for &n in chunk {
            added(n);
        }
    }
}

/// What one cell of one side measured.
#[derive(Default)]
struct Cell {
    jobs: usize,
    secs: f64,
    cpu_us: u64,
    /// The client process's CPU time (all its threads), µs.
    client_cpu_us: u64,
    /// From the start to the last add's return, s.
    adds_secs: f64,
    pickup_us: Vec<u64>,
    empty_takes: u64,
}

/// One throughput cell of the crate: `workers` producers and `workers` workers on a
/// fresh queue.
fn crate_cell(
    server: &server::RedisProcess,
    name: &str,
    workers: usize,
    per: usize,
    jobs: usize,
) -> Cell {
    let queue = WorkQueue::new(name).unwrap();
    let base = Instant::now();
    let since_base = || base.elapsed().as_nanos() as u64 + 1; // 0 stays "not yet"
    let added: Vec<AtomicU64> = (0..jobs).map(|_| AtomicU64::new(0)).collect();
    let started: Vec<AtomicU64> = (0..jobs).map(|_| AtomicU64::new(0)).collect();
    let acked = AtomicUsize::new(0);
    let mut probe = server.connection();
    let producer_cons: Vec<_> = (0..workers).map(|_| server.connection()).collect();
    let worker_cons: Vec<_> = (0..workers).map(|_| server.connection()).collect();
    let go = Barrier::new(2 * workers + 1);
    let on_added = |n: usize| added[n].store(since_base(), Ordering::SeqCst);
    let on_started = |job: &Job| started[number_of(&job.id)].store(since_base(), Ordering::SeqCst);
    let (cpu_before, client_before, start, empty_takes) = std::thread::scope(|scope| {
        for (p, mut con) in producer_cons.into_iter().enumerate() {
            let (go, queue, on_added) = (&go, &queue, &on_added);
            scope.spawn(move || {
                go.wait();
                crate_produce(&mut con, queue, (p, workers, jobs, per), on_added);
            });
        }
        let handles: Vec<_> = worker_cons
            .into_iter()
            .map(|mut con| {
                let (go, queue, acked, on_started) = (&go, &queue, &acked, &on_started);
                scope.spawn(move || {
                    go.wait();
                    if per == 1 {
                        crate_one_per_call(&mut con, queue, jobs, acked, on_started)
                    } else {
                        crate_batches(&mut con, queue, jobs, acked, on_started)
                    }
                })
            })
            .collect();
        let cpu_before = server_us(&mut probe);
        let client_before = client_us();
        let start = Instant::now();
        go.wait();
        let empty: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
        (cpu_before, client_before, start, empty)
    });
    let secs = start.elapsed().as_secs_f64();
    let client_cpu_us = client_us() - client_before;
    let cpu_us = server_us(&mut probe) - cpu_before;
    let last_add = added
        .iter()
        .map(|a| a.load(Ordering::SeqCst))
        .max()
        .unwrap_or(0);
    let adds_secs =
        last_add.saturating_sub(start.duration_since(base).as_nanos() as u64) as f64 / 1e9;
    let counts = queue.counts().run(&mut probe).unwrap();
    assert_eq!(counts, Default::default(), "every job was acked");
    let pickup_us = added
        .iter()
        .zip(&started)
        .map(|(a, s)| {
            s.load(Ordering::SeqCst)
                .saturating_sub(a.load(Ordering::SeqCst))
                / 1000
        })
        .collect();
    Cell {
        jobs: acked.into_inner(),
        secs,
        cpu_us,
        client_cpu_us,
        adds_secs,
        pickup_us,
        empty_takes,
    }
}

/// The job's number, from its id `j-<n>`.
fn number_of(id: &str) -> usize {
    id.rsplit('-')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a bench job id")
}

// ---------------------------------------------------------------------------------------
// BullMQ's side: benches/peers/bullmq/bench.mjs, one node process per cell.

struct Peer {
    node: String,
    script: std::path::PathBuf,
    version: String,
}

/// BullMQ's side, when it is installed and node runs; `Err` says how to get it.
fn peer() -> Result<Peer, String> {
    let how = "to compare, run sh benches/peers/fetch-bullmq.sh (needs node 20+ and npm)";
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(PEER_DIR);
    let package = dir.join("node_modules/bullmq/package.json");
    let text = std::fs::read_to_string(&package).map_err(|_| {
        format!(
            "BullMQ is not installed ({} is missing): {how}",
            package.display()
        )
    })?;
    let version = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["version"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "?".into());
    let node = std::env::var("NODE").unwrap_or_else(|_| "node".into());
    let runs = Command::new(&node)
        .arg("--version")
        .output()
        .map_err(|err| format!("cannot run {node} ({err}): {how}, or set NODE=<path to node>"))?;
    if !runs.status.success() {
        return Err(format!("{node} --version failed: {how}"));
    }
    Ok(Peer {
        node,
        script: dir.join("bench.mjs"),
        version,
    })
}

/// Runs one cell of BullMQ's side; `cell` is bench.mjs's JSON argument.
fn bullmq_cell(peer: &Peer, server: &server::RedisProcess, cell: serde_json::Value) -> Cell {
    let mut cell = cell;
    cell["port"] = server.port().into();
    let name = cell["queue"].as_str().unwrap().to_owned();
    cell["warm"] = env("WARM", 500).into();
    let out = Command::new(&peer.node)
        .arg(&peer.script)
        .arg(cell.to_string())
        .output()
        .expect("run node");
    if !out.status.success() {
        panic!(
            "BullMQ's side failed ({}) on {cell}:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let reply: serde_json::Value = serde_json::from_str(line)
        .unwrap_or_else(|err| panic!("BullMQ's side printed no JSON ({err}): {stdout}"));
    // Its leftovers (events stream, meta, id counter), untimed.
    let mut con = server.connection();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("bull:{name}*")) // and its warm-up's, bull:{name}-warm:*
        .query(&mut con)
        .unwrap();
    if !keys.is_empty() {
        redis::cmd("UNLINK").arg(&keys).exec(&mut con).unwrap();
    }
    Cell {
        jobs: reply["jobs"].as_u64().unwrap_or(0) as usize,
        secs: reply["secs"].as_f64().unwrap_or(0.0),
        cpu_us: reply["cpu_us"].as_u64().unwrap_or(0),
        client_cpu_us: reply["client_cpu_us"].as_u64().unwrap_or(0),
        adds_secs: reply["adds_secs"].as_f64().unwrap_or(0.0),
        pickup_us: reply["pickup_us"]
            .as_array()
            .map(|v| v.iter().filter_map(|x| x.as_u64()).collect())
            .unwrap_or_default(),
        empty_takes: 0,
    }
}

// ---------------------------------------------------------------------------------------

/// The server process's CPU time so far (user and system, `INFO cpu`), in µs.
fn server_us(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("cpu").query(con).unwrap();
    let seconds: f64 = info
        .lines()
        .filter(|line| line.starts_with("used_cpu_sys:") || line.starts_with("used_cpu_user:"))
        .filter_map(|line| line.split(':').nth(1)?.trim().parse::<f64>().ok())
        .sum();
    (seconds * 1e6).round() as u64
}

/// The commands the server ran since the last `CONFIG RESETSTAT` (`INFO commandstats`),
/// per job: `evalsha 3.00 (41.2 µs)`, … The bench's own INFO and CONFIG calls left out.
fn per_job(con: &mut redis::Connection, jobs: usize) -> String {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    let mut rows: Vec<(String, f64, f64)> = info
        .lines()
        .filter_map(|line| {
            let (name, fields) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let field = |key: &str| {
                fields
                    .split(',')
                    .find_map(|f| f.strip_prefix(key)?.strip_prefix('=')?.parse::<f64>().ok())
            };
            let calls = field("calls")?;
            (!matches!(name, "info" | "config")).then(|| {
                (
                    name.to_owned(),
                    calls / jobs as f64,
                    field("usec_per_call").unwrap_or(0.0),
                )
            })
        })
        .collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    rows.iter()
        .filter(|(_, per, _)| *per >= 0.005)
        .map(|(name, per, us)| format!("{name} {per:.2} ({us:.1} µs)"))
        .collect::<Vec<_>>()
        .join(", ")
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

/// A small xorshift generator for the idle pauses (no dependency for so little).
struct Rng(u64);

impl Rng {
    /// A number in [0, 1).
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn env_ms(name: &str) -> Option<Duration> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
}

/// `value` with `decimals`, or "-" when there is none (a side that did not run).
fn shown(value: f64, decimals: usize) -> String {
    if value.is_finite() {
        format!("{value:.decimals$}")
    } else {
        "-".into()
    }
}

/// A ratio, as `1.23×`.
fn times(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{ratio:.2}×")
    } else {
        "-".into()
    }
}

/// The lowest and highest ratio `crate[r] / bullmq[r]` over the rounds, as `(lo–hi)`.
fn spread(crate_side: &[f64], bullmq: &[f64]) -> String {
    let ratios: Vec<f64> = crate_side.iter().zip(bullmq).map(|(c, b)| c / b).collect();
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if ratios.is_empty() {
        String::new()
    } else {
        format!("({lo:.2}–{hi:.2})")
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

/// The `q`-quantile (nearest rank) of `samples`, in ms.
fn quantile_ms(samples: &[u64], q: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64 / 1000.0
}

/// Every round's results of one cell, per side.
#[derive(Default)]
struct Tally {
    rate: Vec<f64>,
    cpu: Vec<f64>,
    client_cpu: Vec<f64>,
    adds_share: Vec<f64>,
    /// The server's CPU per second of the run, ms (read for the idle runs).
    idle_cpu: Vec<f64>,
    pickup_us: Vec<u64>,
    empty_takes: Vec<u64>,
}

impl Tally {
    fn push(&mut self, cell: Cell) {
        self.rate.push(cell.jobs as f64 / cell.secs);
        self.idle_cpu.push(cell.cpu_us as f64 / 1000.0 / cell.secs);
        self.cpu.push(cell.cpu_us as f64 / cell.jobs as f64);
        self.client_cpu
            .push(cell.client_cpu_us as f64 / cell.jobs as f64);
        self.adds_share.push(cell.adds_secs / cell.secs);
        self.pickup_us.extend(cell.pickup_us);
        self.empty_takes.push(cell.empty_takes);
    }
}

fn label(workers: usize, per: usize) -> String {
    format!(
        "{workers} worker{}, {}",
        if workers == 1 { "" } else { "s" },
        if per == 1 {
            "one job per call".to_string()
        } else {
            format!("batches of {per}")
        }
    )
}

fn main() {
    let (rounds, jobs) = (env("ROUNDS", 5), env("JOBS", 3000));
    let pickups = env("PICKUPS", 25);
    let gap = Duration::from_millis(env("IDLE_GAP_MS", 250) as u64);
    let peer = peer();
    let server = server::RedisProcess::start(&[]);
    let mut con = server.connection();
    redis_patterns::load_all(&mut con).unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);

    let mut crate_cells: Vec<Tally> = CELLS.iter().map(|_| Tally::default()).collect();
    let mut bull_cells: Vec<Tally> = CELLS.iter().map(|_| Tally::default()).collect();
    let (mut crate_idle, mut bull_idle) = (Tally::default(), Tally::default());
    let commandstats = std::env::var_os("COMMANDSTATS").is_some();
    let mut stats_lines = Vec::new();
    for round in 0..rounds {
        // Crate first in even rounds, BullMQ first in odd ones.
        let sides: &[bool] = if round % 2 == 0 {
            &[true, false]
        } else {
            &[false, true]
        };
        for (i, &(workers, per)) in CELLS.iter().enumerate() {
            for &crate_side in sides {
                let name = format!("r{round}-c{i}");
                let stats = commandstats && round == 0;
                if stats {
                    redis::cmd("CONFIG")
                        .arg("RESETSTAT")
                        .exec(&mut con)
                        .unwrap();
                }
                if crate_side {
                    crate_cells[i].push(crate_cell(
                        &server,
                        &format!("crate-{name}"),
                        workers,
                        per,
                        jobs,
                    ));
                } else if let Ok(peer) = &peer {
                    let cell = serde_json::json!({
                        "mode": "throughput", "queue": format!("bull-{name}"),
                        "workers": workers, "per": per, "jobs": jobs,
                    });
                    bull_cells[i].push(bullmq_cell(peer, &server, cell));
                }
                if stats && (crate_side || peer.is_ok()) {
                    // BullMQ's count includes its untimed warm-up's jobs.
                    let handled = jobs + if crate_side { 0 } else { env("WARM", 500) };
                    let side = if crate_side { "crate" } else { "BullMQ" };
                    stats_lines.push(format!(
                        "{:<42} {side:<7} {}",
                        label(workers, per),
                        per_job(&mut con, handled)
                    ));
                }
            }
        }
        for &crate_side in sides {
            if crate_side {
                let queue = WorkQueue::new(format!("crate-r{round}-idle")).unwrap();
                crate_idle.push(crate_pickup(&server, &queue, pickups, gap, &mut rng));
            } else if let Ok(peer) = &peer {
                let cell = serde_json::json!({
                    "mode": "pickup", "queue": format!("bull-r{round}-idle"),
                    "pickups": pickups, "gapMs": gap.as_millis() as u64,
                });
                bull_idle.push(bullmq_cell(peer, &server, cell));
            }
        }
    }

    let peer_name = match &peer {
        Ok(peer) => format!("BullMQ {}", peer.version),
        Err(_) => "BullMQ".into(),
    };
    println!(
        "add → take → ack, producers adding while workers drain; {rounds} rounds of {jobs} jobs per cell, medians; {peer_name}"
    );
    println!(
        "{:<42} {:>8} {:>8} {:>7} {:>13}   {:>8} {:>9} {:>7} {:>13}",
        "jobs/s and server CPU µs/job",
        "crate/s",
        "BullMQ/s",
        "ratio",
        "(rounds)",
        "crate µs",
        "BullMQ µs",
        "ratio",
        "(rounds)"
    );
    let mut goals_rate = Vec::new();
    let mut goals_cpu = Vec::new();
    for (i, &(workers, per)) in CELLS.iter().enumerate() {
        let (c, b) = (&crate_cells[i], &bull_cells[i]);
        let (cr, cc) = (median(c.rate.clone()), median(c.cpu.clone()));
        let (br, bc) = (median(b.rate.clone()), median(b.cpu.clone()));
        println!(
            "{:<42} {:>8} {:>8} {:>7} {:>13}   {:>8} {:>9} {:>7} {:>13}",
            label(workers, per),
            shown(cr, 0),
            shown(br, 0),
            times(cr / br),
            spread(&c.rate, &b.rate),
            shown(cc, 1),
            shown(bc, 1),
            times(cc / bc),
            spread(&c.cpu, &b.cpu)
        );
        goals_rate.push(cr / br);
        goals_cpu.push(cc / bc);
    }
    println!(
        "(ratios of the medians; (rounds): the lowest and highest ratio of one round's pair of cells. BullMQ's rows: W Workers with concurrency 1, or with concurrency 25 and addBulk of 25 in the batch rows)"
    );

    // Where the time went: the client's own CPU, and whether the producers or the
    // workers set the pace (the adds end near 100% of the cell when the workers keep up).
    println!();
    println!(
        "{:<42} {:>10} {:>10} {:>7}   {:>10} {:>10}",
        "client CPU µs/job, adds done at", "crate µs", "BullMQ µs", "ratio", "crate", "BullMQ"
    );
    for (i, &(workers, per)) in CELLS.iter().enumerate() {
        let (c, b) = (&crate_cells[i], &bull_cells[i]);
        let (cc, bc) = (median(c.client_cpu.clone()), median(b.client_cpu.clone()));
        let (ca, ba) = (median(c.adds_share.clone()), median(b.adds_share.clone()));
        println!(
            "{:<42} {:>10} {:>10} {:>7}   {:>9}% {:>9}%",
            label(workers, per),
            shown(cc, 1),
            shown(bc, 1),
            times(cc / bc),
            shown(ca * 100.0, 0),
            shown(ba * 100.0, 0)
        );
    }
    println!(
        "(client CPU: the process's user + system time, every thread, over the cell; adds done at: when the last add returned, as a share of the cell's time)"
    );

    println!();
    println!(
        "{:<42} {:>10} {:>10}   {:>10} {:>10}",
        "pickup latency, ms", "crate p50", "crate p99", "BullMQ p50", "BullMQ p99"
    );
    let poll = match env_ms("POLL_MS") {
        Some(poll) => format!("Worker poll {} ms", poll.as_millis()),
        None => "Worker's default poll".into(),
    };
    let idle_label = format!("idle queue ({} jobs)", crate_idle.pickup_us.len());
    let pick = |samples: &[u64]| (quantile_ms(samples, 0.5), quantile_ms(samples, 0.99));
    let ((ci50, ci99), (bi50, bi99)) = (pick(&crate_idle.pickup_us), pick(&bull_idle.pickup_us));
    println!(
        "{idle_label:<42} {:>10} {:>10}   {:>10} {:>10}",
        shown(ci50, 2),
        shown(ci99, 2),
        shown(bi50, 2),
        shown(bi99, 2)
    );
    for (i, &(workers, per)) in CELLS.iter().enumerate() {
        let ((c50, c99), (b50, b99)) = (
            pick(&crate_cells[i].pickup_us),
            pick(&bull_cells[i].pickup_us),
        );
        println!(
            "{:<42} {:>10} {:>10}   {:>10} {:>10}",
            format!("under load: {}", label(workers, per)),
            shown(c50, 2),
            shown(c99, 2),
            shown(b50, 2),
            shown(b99, 2)
        );
    }
    let empty: Vec<String> = crate_cells
        .iter()
        .map(|t| {
            format!(
                "{:.0}",
                median(t.empty_takes.iter().map(|&e| e as f64).collect())
            )
        })
        .collect();
    println!(
        "(idle: the crate's {poll}, a random pause of 0–{} ms before each add; under load: every job of the cells above, the wait behind the backlog included; crate's empty takes per cell, median: {})",
        gap.as_millis(),
        empty.join(", ")
    );
    println!(
        "server CPU while idle, ms per second (the idle runs, median): crate {}, BullMQ {}",
        shown(median(crate_idle.idle_cpu.clone()), 2),
        shown(median(bull_idle.idle_cpu.clone()), 2)
    );

    if !stats_lines.is_empty() {
        println!();
        println!("commands per job, round 1 (INFO commandstats: calls per job, and µs per call)");
        for line in &stats_lines {
            println!("{line}");
        }
    }

    println!();
    match &peer {
        Err(why) => println!("BullMQ: skipped, {why}"),
        Ok(_) => {
            let fmt = |v: &[f64]| {
                v.iter()
                    .map(|r| format!("{r:.2}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            println!(
                "ratios: crate ÷ BullMQ (jobs/s: above 1 is faster; µs/job: below 1 costs the server less)"
            );
            println!(
                "goals: idle pickup p50 ≤ 2 ms: crate {ci50:.2} ms ({}); jobs/s ≥ 2× in every cell: {} ({}); CPU/job ≤ 0.5× in every cell: {} ({})",
                if ci50 <= 2.0 { "met" } else { "not met" },
                fmt(&goals_rate),
                if goals_rate.iter().all(|&r| r >= 2.0) {
                    "met"
                } else {
                    "not met"
                },
                fmt(&goals_cpu),
                if goals_cpu.iter().all(|&r| r <= 0.5) {
                    "met"
                } else {
                    "not met"
                },
            );
        }
    }
}
