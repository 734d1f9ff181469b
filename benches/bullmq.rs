//! `WorkQueue` against BullMQ (the npm package `bullmq`, on node) and against
//! bullmq-official (BullMQ's Rust port, the crate `bullmq-official`), side by side on one
//! redis-server this bench starts, with the same 100-byte jobs: jobs per second, the
//! server's CPU time per job, and pickup latency.
//!
//! ```sh
//! sh benches/peers/fetch-bullmq.sh        # once: npm install into benches/peers/bullmq/ (ignored by git)
//! sh benches/peers/fetch-bullmq-rs.sh     # once: builds benches/peers/bullmq-rs/ (its target/ ignored by git)
//! cargo bench --bench bullmq              # 5 rounds of 3,000 jobs per cell, 25 idle pickups per round
//! ROUNDS=9 JOBS=10000 PICKUPS=100 cargo bench --bench bullmq
//! POLL_MS=1000 cargo bench --bench bullmq # the longest wait of the crate's Worker for a wake-up
//! ```
//!
//! Also: CELLS (the cells to run, by their numbers in the table from 1, for example
//! `CELLS=5,6`; all unless set), IDLE_GAP_MS (250, the longest pause before an idle pickup's add), WARM (500,
//! the peers' untimed warm-up jobs per cell), NODE (the node binary), REDIS_SERVER_BIN,
//! and COMMANDSTATS=1 to print which commands each side's cells of the first round ran
//! per job (`INFO commandstats`; the peers' counts include their warm-up's jobs, the
//! crate's paused cell its empty takes while paused).
//!
//! Without BullMQ installed (or without `node`), or without bullmq-official's program
//! built, the bench runs without that side (its columns show `-`) and says how to get
//! it. `NODE=<path>` picks the node binary (v20 or newer).
//!
//! **The flow.** Every job goes add → take → ack. W producers (a connection each) add
//! JOBS jobs between them, one per call (a batch per call in the batch cells), while W workers
//! (a connection each) take and ack them, until all are acked. Timed from the start of
//! the adds to the last ack; the server's CPU (`INFO cpu`: used_cpu_sys + used_cpu_user)
//! read around the same span, and the client process's own CPU (getrusage here and in
//! bullmq-official's program, `process.cpuUsage()` in node), with when the last add
//! returned: near 100% of the cell, the producers set the pace (the workers kept up);
//! well below, the workers did (a backlog built up). The cells ([`CELLS`]; a cell is a
//! [`Spec`], so another one is a line there):
//!
//! - *W workers, one job per call*: the crate's worker runs the handler and acks the job
//!   in the call that takes the next, `ack_and_take` ([`crate_one_per_call`]), one round
//!   trip per job as BullMQ's. BullMQ: W `Worker`s with `concurrency: 1`,
//!   which ack a job and fetch the next in one script (`moveToFinished`).
//! - *W workers, batches of [`BATCH`]* (10: [`MAX_TAKE`], the most one take hands out):
//!   the crate's producers add a batch of jobs per round trip (a [`Batch`]), its workers
//!   ack a batch and take the next in one call, `ack_and_take` ([`crate_batches`]).
//!   BullMQ has no batched take in its open-source package; its side is its batched add
//!   (`addBulk` of a batch, one pipeline) and W `Worker`s with `concurrency` of a batch,
//!   which hold as many jobs at once as a crate worker's take.
//! - *Paused then resumed* (8 workers, one job per call): the queue is paused (the
//!   crate's [`WorkQueue::pause`], BullMQ's and bullmq-official's `pause`), the W
//!   workers are started and idle, the W producers add the JOBS jobs, then the clock
//!   starts and the queue is resumed ([`WorkQueue::resume`], `resume`): timed from the
//!   resume to the last ack, the server's and the client's CPU over that span. It
//!   measures how the workers wake and drain a backlog that is all there at once. The
//!   crate's empty takes are counted from the resume; its workers wait for a wake-up
//!   while the queue is paused, as the peers' block on their marker.
//! - *8 workers, one job per call, limits on*: the flow of *8 workers, one job per
//!   call* with limits that are on but do not bind at the bench's pace, so the cell
//!   measures what checking them costs ([`Extra::Limits`]). The crate: job n in group
//!   `g{n % 16}` ([`JobOptions::group`]), and [`WorkQueue::configure`] (untimed) with
//!   each group at most 4 jobs held and 1,000 started per 100 ms, the whole queue at most
//!   64 held and 1,000 started per 10 ms ([`crate_settings`]). BullMQ: the queue's
//!   `setGlobalConcurrency(64)` (untimed) and the Worker option `limiter: { max: 1000,
//!   duration: 10 }`; its open-source package has no groups (they are BullMQ Pro's), so
//!   its side checks the queue's limits only. bullmq-official: `set_global_concurrency(64)`
//!   and its Worker's `limiter(RateLimiterOptions::new(1000, 10 ms))`, no groups either.
//! - *8 workers, one job per call, metrics on*: the same flow with per-minute metrics on
//!   every side ([`Extra::Metrics`]): the crate's queue configured to keep 1,440 minutes
//!   (metrics are off by default), BullMQ's Workers with `metrics: { maxDataPoints: 1440 }`, bullmq-official's
//!   with `metrics(MetricsOptions { max_data_points: 1440 })`. Beside *8 workers, one
//!   job per call*, it shows what metrics cost each side.
//! - *8 workers, one job per call, deduplication windows*: the same flow with each job
//!   added under a deduplication id of its own (`d-<n>`) with a window of a minute
//!   ([`Extra::Dedup`]), so every add opens a window and adds: the crate's
//!   [`WorkQueue::add_deduplicated`], BullMQ's and bullmq-official's `deduplication: {
//!   id, ttl: 60000 }`. Beside *8 workers, one job per call*, it shows what a window costs.
//! - *8 workers, one job per call, 1,000 completed kept*: the same flow keeping the
//!   newest 1,000 completed jobs on every side ([`Extra::Retain`]): the crate's queue
//!   configured with [`Settings::keep_completed`], BullMQ's jobs with `removeOnComplete:
//!   1000`, bullmq-official's with `RemoveOnFinish::Count(1000)`. Beside *8 workers, one
//!   job per call*, it shows what a history costs.
//!
//! **Metrics off elsewhere.** The crate's queue keeps no metrics unless configured to,
//! as the peers' defaults; every other cell (and the idle pickups) runs it so
//! ([`crate_settings`], configured untimed), comparable with runs from before the crate
//! kept metrics.
//!
//! bullmq-official's side mirrors BullMQ's on each cell: W `Queue`s and W `Worker`s with
//! `concurrency` 1 or a batch, `add` one job per call or `add_bulk` of a batch, the same
//! warm-up. Its `add_bulk` sends its scripts at once on the producer's multiplexed connection
//! (not in one ioredis pipeline object, but one round trip all the same); both share
//! BullMQ's Lua scripts and keys.
//!
//! Every side has the same number of connections (the peers add a blocking one per
//! Worker). The crate's side runs in this process, on the crate's async API: a task per
//! producer and worker on tokio's multi-threaded runtime with a thread per core, as
//! bullmq-official's, so that the two Rust sides differ in their queues only; BullMQ's in
//! one node process (`benches/peers/bullmq/bench.mjs`, spawned per cell),
//! bullmq-official's in one process of its own (`benches/peers/bullmq-rs/`, spawned per
//! cell, tokio's multi-threaded runtime with a thread per core); each takes the cell as a
//! JSON argument and prints its results as one JSON line. Node runs JavaScript on one
//! thread: where BullMQ's client CPU per job times its jobs/s nears a whole core, its own
//! client sets its pace. A crate worker that finds the queue empty (at the start, or
//! while others hold the last jobs) waits for a wake-up (`wait_for_work`, up to 5 ms,
//! then it looks whether the cell is over), as BullMQ's blocks on its marker; the count
//! of those empty takes is printed.
//!
//! **Pickup latency** is from `add` returning to the handler starting, both timestamps
//! read from one clock in one process (`Instant` here and in bullmq-official's program,
//! `performance.now()` in node), never the server's. On an *idle queue*: one job at a
//! time, each added after a random pause of 0 to IDLE_GAP_MS (250) ms and handled before
//! the next, with the crate's [`Worker`] loop ([`crate_pickup`], set up in
//! [`crate_worker`]) and one peer Worker. *Under load*: every job of the throughput cells
//! but the paused one; it includes the wait behind whatever backlog the producers built.
//! A handler that starts before its add returned (the worker's reply can come first)
//! counts as 0.
//!
//! **The peers' settings**, BullMQ's and bullmq-official's alike: `removeOnComplete`
//! (`remove_on_complete`; it keeps no finished job, the crate's ack deletes the job), a
//! custom `jobId` (`job_id`) per job (the crate's add takes an id and deduplicates by it;
//! BullMQ checks a custom id too), everything else at its defaults: a 30 s lock as the
//! crate's 30 s lease, the stalled-job check every 30 s, `drainDelay` 5 s, its events
//! stream capped near 10,000 entries, no limiter, no global concurrency, no metrics (but
//! in the limits and metrics cells, above). Their keys (`bull:<queue>:…` on both)
//! are deleted after each cell (untimed), so no cell inherits another's stream.
//!
//! The peers run in a fresh process per cell, so each of their throughput cells is
//! preceded by an untimed warm-up of the same cell on another queue (WARM=500 jobs), as
//! a long-running worker would have warmed up its JIT (node) and its connections and
//! caches (both).
//!
//! Rounds take turns (crate, BullMQ, bullmq-official; then BullMQ, bullmq-official,
//! crate; …) so that a noisy moment on the machine hits every side alike. The tables give
//! the median of the rounds, the ratios crate ÷ BullMQ and crate ÷ bullmq-official
//! (column `official`), and pickup percentiles over every sample of every round. Read
//! the ratios, not the digits.

use std::process::Command;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis_patterns::work_queue::{
    Counts, Deduplication, Job, JobOptions, Limits, MAX_TAKE, Settings, Stop, WorkQueue, Worker,
};
use redis_patterns::{Batch, Op};

#[path = "../tests/it/server.rs"]
mod server;

/// Where `benches/peers/fetch-bullmq.sh` installs BullMQ, and BullMQ's side of the bench.
const PEER_DIR: &str = "benches/peers/bullmq";
/// bullmq-official's side: a program of its own, which `benches/peers/fetch-bullmq-rs.sh`
/// builds into `target/release/` there.
const OFFICIAL_DIR: &str = "benches/peers/bullmq-rs";
/// The program's name (its Cargo.toml's package).
const OFFICIAL_BIN: &str = "bench-bullmq-official";
/// The jobs a batch adds, takes and acks: as many as one take hands out.
const BATCH: usize = MAX_TAKE as usize;
/// Every job's payload: 100 bytes (BullMQ's side stores JSON of a 98-character string).
const PAYLOAD: &[u8; 100] = &[b'x'; 100];
/// The throughput cells, in the table's order. A new cell is a line here (and, for a new
/// flow, a field of [`Spec`] that [`crate_cell`], bench.mjs and the bullmq-official
/// program read).
const CELLS: [Spec; 9] = [
    Spec::concurrent(1, 1),
    Spec::concurrent(8, 1),
    Spec::concurrent(1, BATCH),
    Spec::concurrent(8, BATCH),
    Spec::paused(8, 1),
    Spec::concurrent(8, 1).with(Extra::Limits),
    Spec::concurrent(8, 1).with(Extra::Metrics),
    Spec::concurrent(8, 1).with(Extra::Dedup),
    Spec::concurrent(8, 1).with(Extra::Retain),
];

/// One throughput cell: W producers and W workers (a connection each), `per` jobs per
/// call (the crate's takes and adds; the peers' `concurrency` and bulk adds).
#[derive(Clone, Copy)]
struct Spec {
    workers: usize,
    per: usize,
    /// Paused then resumed: the queue is paused while the producers add every job, then
    /// resumed, and timed from the resume to the last ack. Else the producers add while
    /// the workers drain, timed from the first add.
    paused: bool,
    /// What the queue keeps or checks beyond the plain flow: nothing, metrics, or limits.
    extra: Extra,
}

/// What a cell's queue keeps or checks besides adding, taking and acking.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Extra {
    /// Neither limits nor metrics (the crate's metrics turned off, as the peers keep none).
    None,
    /// Per-minute metrics on every side, 1,440 minutes (data points) kept.
    Metrics,
    /// Limits on every side that do not bind at the bench's pace ([`crate_settings`]).
    Limits,
    /// Every job added under a deduplication id of its own, with a window of a minute.
    Dedup,
    /// The newest 1,000 completed jobs kept on every side (BullMQ's
    /// `removeOnComplete: 1000`; the crate's [`Settings::keep_completed`]).
    Retain,
}

/// The groups the crate's jobs are spread over in the limits cell: job n in `g{n % 16}`.
const GROUPS: usize = 16;

impl Spec {
    const fn concurrent(workers: usize, per: usize) -> Spec {
        Spec {
            workers,
            per,
            paused: false,
            extra: Extra::None,
        }
    }

    const fn paused(workers: usize, per: usize) -> Spec {
        Spec {
            workers,
            per,
            paused: true,
            extra: Extra::None,
        }
    }

    const fn with(self, extra: Extra) -> Spec {
        Spec { extra, ..self }
    }

    /// The cell's JSON argument for a peer's program (bench.mjs, bench-bullmq-official).
    fn peer_json(self, queue: String, jobs: usize) -> serde_json::Value {
        serde_json::json!({
            "mode": "throughput", "queue": queue, "workers": self.workers,
            "per": self.per, "jobs": jobs, "paused": self.paused,
            "metrics": self.extra == Extra::Metrics, "limits": self.extra == Extra::Limits,
            "dedup": self.extra == Extra::Dedup,
            "retain": self.extra == Extra::Retain,
        })
    }

    fn label(self) -> String {
        let workers = format!(
            "{} worker{}",
            self.workers,
            if self.workers == 1 { "" } else { "s" }
        );
        let flow = match (self.paused, self.per) {
            (true, per) => format!("paused then resumed, {workers}, {per} per call"),
            (false, 1) => format!("{workers}, one job per call"),
            (false, per) => format!("{workers}, batches of {per}"),
        };
        match self.extra {
            Extra::None => flow,
            Extra::Metrics => format!("{flow}, metrics on"),
            Extra::Limits => format!("{flow}, limits on"),
            Extra::Dedup => format!("{flow}, deduplication windows"),
            Extra::Retain => format!("{flow}, 1,000 completed kept"),
        }
    }
}

/// The three sides of every cell.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Crate,
    BullMQ,
    Official,
}

const SIDES: [Side; 3] = [Side::Crate, Side::BullMQ, Side::Official];

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Crate => "crate",
            Side::BullMQ => "BullMQ",
            Side::Official => "bullmq-official",
        }
    }

    /// The prefix of its queues' names.
    fn prefix(self) -> &'static str {
        match self {
            Side::Crate => "crate",
            Side::BullMQ => "bull",
            Side::Official => "official",
        }
    }
}

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

/// One worker of a throughput cell, one job per call: the handler ([`Flow::started`])
/// for each job, which is acked in the call that takes the next (`ack_and_take`, or
/// `take(1)` with no job in hand), until every job is acked; with nothing to take, a wait
/// for a wake-up (`wait_for_work`), counted as an empty take.
async fn crate_one_per_call(con: &mut MultiplexedConnection, flow: &Flow) {
    let queue = &flow.queue;
    let mut held: Option<Job> = None;
    loop {
        let next = match held.take() {
            Some(done) => {
                let next = queue.ack_and_take([&done], 1).run_async(con).await.unwrap();
                flow.acked(1);
                next
            }
            None => queue.take(1).run_async(con).await.unwrap(),
        };
        if let Some(job) = next.into_iter().next() {
            flow.started(&job);
            held = Some(job);
            continue;
        }
        if flow.all_acked() {
            return;
        }
        flow.empty.fetch_add(1, Ordering::SeqCst);
        queue.wait_for_work(IDLE_WAIT).run_async(con).await.unwrap();
    }
}

/// How long a worker of a throughput cell waits for a wake-up before it looks whether
/// the cell is over.
const IDLE_WAIT: Duration = Duration::from_millis(5);

/// One worker of a throughput cell, in batches: the handler for each of up to [`BATCH`]
/// jobs, then their acks and the take of the next batch in one call (`ack_and_take`: one
/// round trip and one script per batch), until every job is acked; with nothing to take, a
/// wait for a wake-up, counted as an empty take.
async fn crate_batches(con: &mut MultiplexedConnection, flow: &Flow) {
    let queue = &flow.queue;
    let mut held: Vec<Job> = Vec::new();
    loop {
        let next = queue
            .ack_and_take(&held, BATCH as u64)
            .run_async(con)
            .await
            .unwrap();
        flow.acked(held.len());
        held = next;
        if !held.is_empty() {
            held.iter().for_each(|job| flow.started(job));
            continue;
        }
        if flow.all_acked() {
            return;
        }
        flow.empty.fetch_add(1, Ordering::SeqCst);
        queue.wait_for_work(IDLE_WAIT).run_async(con).await.unwrap();
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
/// `per` is 1, else `per` adds in one `Batch`; with limits, job n in group `g{n % 16}`;
/// with deduplication, job n under the deduplication id `d-<n>` with a window of a
/// minute; notes when each add returned ([`Flow::added`]).
async fn crate_produce(
    con: &mut MultiplexedConnection,
    flow: &Flow,
    (p, workers, per, extra): (usize, usize, usize, Extra),
) {
    let queue = &flow.queue;
    let add = |n: usize| -> Op<()> {
        let id = format!("j-{n}");
        match extra {
            Extra::Limits => {
                let options = JobOptions::new().group(format!("g{}", n % GROUPS));
                queue.add_with(&id, PAYLOAD, options).map(|_| Ok(()))
            }
            Extra::Dedup => {
                let window = Deduplication::new(format!("d-{n}"), Duration::from_secs(60));
                queue
                    .add_deduplicated(&id, PAYLOAD, JobOptions::new(), &window.unwrap())
                    .map(|_| Ok(()))
            }
            Extra::None | Extra::Metrics | Extra::Retain => queue.add(&id, PAYLOAD).map(|_| Ok(())),
        }
    };
    let mine: Vec<usize> = (p..flow.jobs).step_by(workers).collect();
    for chunk in mine.chunks(per) {
        if let [n] = chunk {
            add(*n).run_async(con).await.unwrap();
        } else {
            let mut adds = Batch::new();
            for &n in chunk {
                let _ = adds.add(add(n));
            }
            adds.run_async(con).await.unwrap();
        }
        for &n in chunk {
            flow.added[n].store(flow.since_base(), Ordering::SeqCst);
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

/// The crate's queue settings for a cell: metrics off (the default; the peers keep none)
/// but in the metrics cell, which keeps 1,440 minutes; in the limits cell, limits that
/// are on but do not bind at the bench's pace: each group (of [`GROUPS`]) at most 4 jobs
/// held and 1,000 started per 100 ms, the queue at most 64 held and 1,000 started per
/// 10 ms.
fn crate_settings(extra: Extra) -> Settings {
    let ms = Duration::from_millis;
    match extra {
        Extra::None | Extra::Dedup => Settings::new(),
        Extra::Retain => Settings::new()
            .keep_completed(1_000, Duration::from_secs(86_400))
            .unwrap(),
        Extra::Metrics => Settings::new().metrics_minutes(1440).unwrap(),
        Extra::Limits => {
            let group = Limits::new().concurrency(4).unwrap();
            let queue = Limits::new().concurrency(64).unwrap();
            Settings::new()
                .group_limits(group.rate(1000, ms(100)).unwrap())
                .queue_limits(queue.rate(1000, ms(10)).unwrap())
        }
    }
}

/// One throughput cell of the crate: `workers` producers and `workers` workers on a
/// fresh queue configured for the cell ([`crate_settings`]), each a task with a
/// connection of its own on tokio's multi-threaded runtime with a thread per core (as
/// bullmq-official's program runs); with `spec.paused`, the queue paused while the
/// producers add, then resumed (the workers run throughout; their empty takes are counted
/// from the resume). Timed to the last ack, as the peers' cells: the workers that wait for
/// work then stop after it.
fn crate_cell(server: &server::RedisProcess, name: &str, spec: Spec, jobs: usize) -> Cell {
    let Spec {
        workers,
        per,
        paused,
        extra,
    } = spec;
    let base = Instant::now();
    let flow = Arc::new(Flow {
        queue: WorkQueue::new(name).unwrap(),
        jobs,
        base,
        added: (0..jobs).map(|_| AtomicU64::new(0)).collect(),
        started: (0..jobs).map(|_| AtomicU64::new(0)).collect(),
        acked: AtomicUsize::new(0),
        last_acked: tokio::sync::Notify::new(),
        empty: AtomicU64::new(0),
        go: tokio::sync::Barrier::new(2 * workers + 1),
    });
    let mut probe = server.connection();
    let queue = &flow.queue;
    queue
        .configure(&crate_settings(extra))
        .run(&mut probe)
        .unwrap();
    if paused {
        queue.pause().run(&mut probe).unwrap();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = redis::Client::open(server.url(0)).unwrap();
    let connect = || {
        runtime
            .block_on(client.get_multiplexed_async_connection())
            .unwrap()
    };
    let producers: Vec<_> = (0..workers)
        .map(|p| {
            let (flow, mut con) = (flow.clone(), connect());
            runtime.spawn(async move {
                flow.go.wait().await;
                crate_produce(&mut con, &flow, (p, workers, per, extra)).await;
            })
        })
        .collect();
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            let (flow, mut con) = (flow.clone(), connect());
            runtime.spawn(async move {
                flow.go.wait().await;
                if per == 1 {
                    crate_one_per_call(&mut con, &flow).await
                } else {
                    crate_batches(&mut con, &flow).await
                }
            })
        })
        .collect();
    let start_producers = async {
        flow.go.wait().await;
        for producer in producers {
            producer.await.unwrap();
        }
    };
    let (cpu_before, client_before, start, empty_before) = if paused {
        runtime.block_on(start_producers);
        let measured = (
            server_us(&mut probe),
            client_us(),
            Instant::now(),
            flow.empty.load(Ordering::SeqCst),
        );
        queue.resume().run(&mut probe).unwrap();
        measured
    } else {
        let measured = (server_us(&mut probe), client_us(), Instant::now(), 0);
        runtime.block_on(start_producers);
        measured
    };
    runtime.block_on(flow.last_acked.notified());
    let secs = start.elapsed().as_secs_f64();
    let client_cpu_us = client_us() - client_before;
    let cpu_us = server_us(&mut probe) - cpu_before;
    runtime.block_on(async {
        for handle in handles {
            handle.await.unwrap();
        }
    });
    let from = start.duration_since(base).as_nanos() as u64;
    let last_add = flow
        .added
        .iter()
        .map(|a| a.load(Ordering::SeqCst))
        .max()
        .unwrap_or(0);
    let adds_secs = last_add.saturating_sub(from) as f64 / 1e9;
    let counts = queue.counts().run(&mut probe).unwrap();
    let kept = if extra == Extra::Retain { 1_000 } else { 0 };
    let acked = Counts {
        completed: kept.min(jobs as u64),
        ..Counts::default()
    };
    assert_eq!(
        counts, acked,
        "every job was acked (and the newest 1,000 kept)"
    );
    // From the add, or from the resume in a paused cell.
    let pickup_us = flow
        .added
        .iter()
        .zip(&flow.started)
        .map(|(a, s)| {
            s.load(Ordering::SeqCst)
                .saturating_sub(a.load(Ordering::SeqCst).max(from))
                / 1000
        })
        .collect();
    Cell {
        jobs: flow.acked.load(Ordering::SeqCst),
        secs,
        cpu_us,
        client_cpu_us,
        adds_secs,
        pickup_us,
        empty_takes: flow.empty.load(Ordering::SeqCst) - empty_before,
    }
}

/// What the producers and workers of one crate cell share.
struct Flow {
    queue: WorkQueue,
    jobs: usize,
    base: Instant,
    /// When each job's add returned, and when its handler started (ns since `base`).
    added: Vec<AtomicU64>,
    started: Vec<AtomicU64>,
    acked: AtomicUsize,
    /// Notified by the ack of the last job: the end of the cell.
    last_acked: tokio::sync::Notify,
    /// The workers' empty takes.
    empty: AtomicU64,
    /// Every producer and worker, and the cell's clock, start together.
    go: tokio::sync::Barrier,
}

impl Flow {
    /// Now, in ns since `base`; 0 stays "not yet".
    fn since_base(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64 + 1
    }

    /// The handler of a job: notes when it started.
    fn started(&self, job: &Job) {
        self.started[number_of(&job.id)].store(self.since_base(), Ordering::SeqCst);
    }

    /// `n` more jobs acked; the last one ends the cell.
    fn acked(&self, n: usize) {
        if n > 0 && self.acked.fetch_add(n, Ordering::SeqCst) + n == self.jobs {
            self.last_acked.notify_one();
        }
    }

    fn all_acked(&self) -> bool {
        self.acked.load(Ordering::SeqCst) >= self.jobs
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
// The peers' sides: BullMQ in benches/peers/bullmq/bench.mjs (one node process per
// cell), bullmq-official in the program of benches/peers/bullmq-rs/ (one process per
// cell). Both take the cell as a JSON argument and print their results as one JSON line.

/// A peer's program, ready to run a cell.
struct Peer {
    side: Side,
    program: String,
    args: Vec<String>,
    version: String,
}

/// The peer of `side` (BullMQ or bullmq-official), when it is installed and runs; `Err`
/// says how to get it.
fn peer(side: Side) -> Result<Peer, String> {
    match side {
        Side::Crate => Err("the crate is no peer".into()),
        Side::BullMQ => bullmq_peer(),
        Side::Official => official_peer(),
    }
}

/// BullMQ's side, when it is installed and node runs.
fn bullmq_peer() -> Result<Peer, String> {
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
        side: Side::BullMQ,
        program: node,
        args: vec![dir.join("bench.mjs").display().to_string()],
        version,
    })
}

/// bullmq-official's side, when its program is built; its version from the program's
/// Cargo.lock.
fn official_peer() -> Result<Peer, String> {
    let how = "to compare, run sh benches/peers/fetch-bullmq-rs.sh (needs cargo and crates.io)";
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(OFFICIAL_DIR);
    let bin = dir.join("target/release").join(OFFICIAL_BIN);
    if !bin.exists() {
        return Err(format!("not built ({} is missing): {how}", bin.display()));
    }
    let lock = std::fs::read_to_string(dir.join("Cargo.lock")).unwrap_or_default();
    let version = lock
        .split("[[package]]")
        .find(|package| package.contains("name = \"bullmq-official\""))
        .and_then(|package| {
            let line = package.lines().find(|l| l.starts_with("version = "))?;
            Some(
                line.trim_start_matches("version = ")
                    .trim_matches('"')
                    .to_owned(),
            )
        })
        .unwrap_or_else(|| "?".into());
    Ok(Peer {
        side: Side::Official,
        program: bin.display().to_string(),
        args: Vec::new(),
        version,
    })
}

/// Runs one cell of a peer's side; `cell` is its program's JSON argument.
fn peer_cell(peer: &Peer, server: &server::RedisProcess, cell: serde_json::Value) -> Cell {
    let mut cell = cell;
    cell["port"] = server.port().into();
    let name = cell["queue"].as_str().unwrap().to_owned();
    cell["warm"] = env("WARM", 500).into();
    let side = peer.side.name();
    let out = Command::new(&peer.program)
        .args(&peer.args)
        .arg(cell.to_string())
        .output()
        .unwrap_or_else(|err| panic!("run {}: {err}", peer.program));
    if !out.status.success() {
        panic!(
            "{side}'s side failed ({}) on {cell}:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let reply: serde_json::Value = serde_json::from_str(line)
        .unwrap_or_else(|err| panic!("{side}'s side printed no JSON ({err}): {stdout}"));
    // Its leftovers (events stream, meta, id counter), untimed; both keep BullMQ's layout
    // under the prefix `bull`.
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

/// The lowest and highest ratio `crate[r] / peer[r]` over the rounds, as `(lo–hi)`.
fn spread(crate_side: &[f64], peer: &[f64]) -> String {
    let ratios: Vec<f64> = crate_side.iter().zip(peer).map(|(c, p)| c / p).collect();
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

/// One row of a comparison: the three sides' medians of one measure, then the ratios
/// crate ÷ BullMQ and crate ÷ bullmq-official with their spreads over the rounds.
fn compare_row(label: &str, [c, b, o]: [&[f64]; 3], decimals: usize) -> String {
    let [mc, mb, mo] = [c, b, o].map(|v| median(v.to_vec()));
    format!(
        "{label:<44} {:>8} {:>8} {:>9}   {:>8} {:>13}  {:>9} {:>13}",
        shown(mc, decimals),
        shown(mb, decimals),
        shown(mo, decimals),
        times(mc / mb),
        spread(c, b),
        times(mc / mo),
        spread(c, o)
    )
}

fn compare_header(title: &str) -> String {
    format!(
        "{title:<44} {:>8} {:>8} {:>9}   {:>8} {:>13}  {:>9} {:>13}",
        "crate", "BullMQ", "official", "÷ BullMQ", "(rounds)", "÷ official", "(rounds)"
    )
}

fn main() {
    let (rounds, jobs) = (env("ROUNDS", 5), env("JOBS", 3000));
    let pickups = env("PICKUPS", 25);
    let gap = Duration::from_millis(env("IDLE_GAP_MS", 250) as u64);
    let peers: Vec<(Side, Result<Peer, String>)> = [Side::BullMQ, Side::Official]
        .into_iter()
        .map(|side| (side, peer(side)))
        .collect();
    let ready = |side: Side| {
        peers
            .iter()
            .find(|(s, _)| *s == side)
            .and_then(|(_, peer)| peer.as_ref().ok())
    };
    let server = server::RedisProcess::start(&[]);
    let mut con = server.connection();
    redis_patterns::load_all(&mut con).unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);

    // Per side (indexed by `Side as usize`): per cell, and the idle pickups.
    let mut cells: [Vec<Tally>; 3] =
        std::array::from_fn(|_| CELLS.iter().map(|_| Tally::default()).collect());
    let mut idle: [Tally; 3] = Default::default();
    let commandstats = std::env::var_os("COMMANDSTATS").is_some();
    let chosen: Vec<usize> = match std::env::var("CELLS") {
        Ok(list) => list
            .split(',')
            .map(|n| {
                n.trim()
                    .parse()
                    .expect("CELLS: cell numbers from 1, comma-separated")
            })
            .collect(),
        Err(_) => (1..=CELLS.len()).collect(),
    };
    let mut stats_lines = Vec::new();
    for round in 0..rounds {
        // The sides take turns: the order rotates by one each round.
        let order: Vec<Side> = (0..SIDES.len())
            .map(|k| SIDES[(round + k) % SIDES.len()])
            .collect();
        for (i, &spec) in CELLS.iter().enumerate() {
            if !chosen.contains(&(i + 1)) {
                continue;
            }
            for &side in &order {
                let peer = ready(side);
                if side != Side::Crate && peer.is_none() {
                    continue;
                }
                let name = format!("{}-r{round}-c{i}", side.prefix());
                let stats = commandstats && round == 0;
                if stats {
                    redis::cmd("CONFIG")
                        .arg("RESETSTAT")
                        .exec(&mut con)
                        .unwrap();
                }
                let cell = match peer {
                    None => crate_cell(&server, &name, spec, jobs),
                    Some(peer) => peer_cell(peer, &server, spec.peer_json(name, jobs)),
                };
                cells[side as usize][i].push(cell);
                if stats {
                    // A peer's count includes its untimed warm-up's jobs.
                    let warm = if side == Side::Crate {
                        0
                    } else {
                        env("WARM", 500)
                    };
                    stats_lines.push(format!(
                        "{:<44} {:<15} {}",
                        spec.label(),
                        side.name(),
                        per_job(&mut con, jobs + warm)
                    ));
                }
            }
        }
        for &side in &order {
            let name = format!("{}-r{round}-idle", side.prefix());
            match ready(side) {
                None if side == Side::Crate => {
                    let queue = WorkQueue::new(name).unwrap();
                    let settings = crate_settings(Extra::None);
                    queue.configure(&settings).run(&mut con).unwrap();
                    idle[side as usize].push(crate_pickup(&server, &queue, pickups, gap, &mut rng));
                }
                None => {}
                Some(peer) => {
                    let cell = serde_json::json!({
                        "mode": "pickup", "queue": name,
                        "pickups": pickups, "gapMs": gap.as_millis() as u64,
                    });
                    idle[side as usize].push(peer_cell(peer, &server, cell));
                }
            }
        }
    }

    let versions: Vec<String> = peers
        .iter()
        .map(|(side, peer)| match peer {
            Ok(peer) => format!("{} {}", side.name(), peer.version),
            Err(_) => format!("{} (not run)", side.name()),
        })
        .collect();
    println!(
        "add → take → ack; {rounds} rounds of {jobs} jobs per cell, medians; {}",
        versions.join(", ")
    );
    let [c, b, o] = &cells;
    let measure = |pick: fn(&Tally) -> &[f64], i: usize| [&c[i], &b[i], &o[i]].map(pick);
    println!("{}", compare_header("jobs/s"));
    for (i, spec) in CELLS.iter().enumerate() {
        let row = measure(|t| &t.rate, i);
        println!("{}", compare_row(&spec.label(), row, 0));
    }
    println!();
    println!("{}", compare_header("server CPU µs/job"));
    for (i, spec) in CELLS.iter().enumerate() {
        let row = measure(|t| &t.cpu, i);
        println!("{}", compare_row(&spec.label(), row, 1));
    }
    println!(
        "(official: bullmq-official. Ratios of the medians; (rounds): the lowest and highest ratio of one round's pair of cells. The peers' rows: W Workers with concurrency 1, or with concurrency of a batch (10) and a bulk add of a batch in the batch rows; paused then resumed: the producers add while the queue is paused, timed from the resume to the last ack; limits on: limits that do not bind (the crate: 16 groups of at most 4 held and 1,000 started per 100 ms, the queue at most 64 held and 1,000 started per 10 ms; the peers: global concurrency 64 and a limiter of 1,000 per 10 ms, no groups); metrics on: 1,440 minutes kept on every side, which the crate's other rows turn off; deduplication windows: each job added under a deduplication id of its own with a window of a minute, on every side; 1,000 completed kept: the newest 1,000 completed jobs kept, on every side)"
    );

    // Where the time went: the client's own CPU, and whether the producers or the
    // workers set the pace (the adds end near 100% of the cell when the workers keep up).
    println!();
    println!("{}", compare_header("client CPU µs/job"));
    for (i, spec) in CELLS.iter().enumerate() {
        let row = measure(|t| &t.client_cpu, i);
        println!("{}", compare_row(&spec.label(), row, 1));
    }
    println!();
    println!(
        "{:<44} {:>8} {:>8} {:>9}",
        "adds done at", "crate", "BullMQ", "official"
    );
    for (i, spec) in CELLS.iter().enumerate().filter(|(_, s)| !s.paused) {
        let [mc, mb, mo] = measure(|t| &t.adds_share, i).map(|v| median(v.to_vec()) * 100.0);
        let percent = |share: f64| shown(share, 0) + if share.is_finite() { "%" } else { "" };
        println!(
            "{:<44} {:>8} {:>8} {:>9}",
            spec.label(),
            percent(mc),
            percent(mb),
            percent(mo)
        );
    }
    println!(
        "(client CPU: the process's user + system time, every thread, over the cell; adds done at: when the last add returned, as a share of the cell's time; the paused cells add before the clock starts)"
    );

    println!();
    println!(
        "{:<52} {:>10} {:>8}   {:>10} {:>8}   {:>12} {:>8}",
        "pickup latency, ms", "crate p50", "p99", "BullMQ p50", "p99", "official p50", "p99"
    );
    let poll = match env_ms("POLL_MS") {
        Some(poll) => format!("Worker poll {} ms", poll.as_millis()),
        None => "Worker's default poll".into(),
    };
    let pick = |samples: &[u64]| (quantile_ms(samples, 0.5), quantile_ms(samples, 0.99));
    let pickup_row = |label: &str, [c, b, o]: [&Tally; 3]| {
        let [(c50, c99), (b50, b99), (o50, o99)] = [c, b, o].map(|t| pick(&t.pickup_us));
        println!(
            "{label:<52} {:>10} {:>8}   {:>10} {:>8}   {:>12} {:>8}",
            shown(c50, 2),
            shown(c99, 2),
            shown(b50, 2),
            shown(b99, 2),
            shown(o50, 2),
            shown(o99, 2)
        );
    };
    let idle_label = format!("idle queue ({} jobs)", idle[0].pickup_us.len());
    pickup_row(&idle_label, [&idle[0], &idle[1], &idle[2]]);
    for (i, spec) in CELLS.iter().enumerate().filter(|(_, s)| !s.paused) {
        let label = format!("under load: {}", spec.label());
        pickup_row(&label, [&c[i], &b[i], &o[i]]);
    }
    let empty: Vec<String> = c
        .iter()
        .map(|t| {
            format!(
                "{:.0}",
                median(t.empty_takes.iter().map(|&e| e as f64).collect())
            )
        })
        .collect();
    println!(
        "(idle: the crate's {poll}, a random pause of 0–{} ms before each add; under load: every job of the cells above, the wait behind the backlog included; crate's empty takes per cell, median, in the order of the cells (the paused cell's from the resume): {})",
        gap.as_millis(),
        empty.join(", ")
    );
    let ci50 = quantile_ms(&idle[0].pickup_us, 0.5);
    let [ic, ib, io] = idle
        .each_ref()
        .map(|t| shown(median(t.idle_cpu.clone()), 2));
    println!(
        "server CPU while idle, ms per second (the idle runs, median): crate {ic}, BullMQ {ib}, bullmq-official {io}"
    );

    if !stats_lines.is_empty() {
        println!();
        println!("commands per job, round 1 (INFO commandstats: calls per job, and µs per call)");
        for line in &stats_lines {
            println!("{line}");
        }
    }

    println!();
    let fmt = |v: &[f64]| {
        v.iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let ratios = |peer: &[Tally], pick: fn(&Tally) -> &[f64]| -> Vec<f64> {
        c.iter()
            .zip(peer)
            .map(|(c, p)| median(pick(c).to_vec()) / median(pick(p).to_vec()))
            .collect()
    };
    for (side, peer) in &peers {
        let name = side.name();
        if let Err(why) = peer {
            println!("{name}: skipped, {why}");
            continue;
        }
        let tallies = &cells[*side as usize];
        let (rate, cpu) = (ratios(tallies, |t| &t.rate), ratios(tallies, |t| &t.cpu));
        if *side == Side::BullMQ {
            println!(
                "ratios: crate ÷ peer (jobs/s: above 1 is faster; µs/job: below 1 costs the server less)"
            );
            println!(
                "goals against BullMQ: idle pickup p50 ≤ 2 ms: crate {ci50:.2} ms ({}); jobs/s ≥ 2× in every cell: {} ({}); CPU/job ≤ 0.5× in every cell: {} ({})",
                if ci50 <= 2.0 { "met" } else { "not met" },
                fmt(&rate),
                if rate.iter().all(|&r| r >= 2.0) {
                    "met"
                } else {
                    "not met"
                },
                fmt(&cpu),
                if cpu.iter().all(|&r| r <= 0.5) {
                    "met"
                } else {
                    "not met"
                },
            );
        } else {
            println!(
                "crate ÷ {name}, in the order of the cells: jobs/s {}; CPU/job {}",
                fmt(&rate),
                fmt(&cpu)
            );
        }
    }
}
