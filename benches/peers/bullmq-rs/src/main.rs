//! bullmq-official's side of benches/bullmq.rs: one cell per run, its results as one JSON
//! line on stdout, the protocol and the flows of BullMQ's side (bench.mjs). The Rust
//! bench spawns it with the cell's JSON; by hand:
//!
//! ```sh
//! B=benches/peers/bullmq-rs/target/release/bench-bullmq-official
//! $B '{"port":6379,"mode":"throughput","queue":"q1","workers":1,"per":1,"jobs":1000}'
//! $B '{"port":6379,"mode":"throughput","queue":"q2","workers":8,"per":1,"jobs":1000,"paused":true}'
//! $B '{"port":6379,"mode":"throughput","queue":"q4","workers":8,"per":1,"jobs":1000,"metrics":true}'
//! $B '{"port":6379,"mode":"pickup","queue":"q3","pickups":20,"gapMs":250}'
//! ```
//!
//! Modes (see benches/bullmq.rs for the flows):
//! - throughput: `workers` producers (a `Queue` each, so a connection each) add `jobs`
//!   jobs between them while `workers` `Worker`s (a connection each, plus the blocking
//!   one) handle them, each with `concurrency: per`; producers add one job per call when
//!   `per` is 1, else `add_bulk` of `per` (sent at once on the producer's multiplexed
//!   connection). Timed from the start of the adds to the last `Completed` event; the
//!   server's CPU (INFO cpu) and this process's CPU (getrusage) around the same span. An
//!   untimed warm-up of the same cell on another queue runs first (`warm` jobs, 500 by
//!   default). With `paused`, the queue is paused first, the workers run and the
//!   producers add every job, then the clock starts and the queue is resumed: timed from
//!   the resume to the last `Completed`. With `limits`, limits that are on but do not
//!   bind at the bench's pace, as on BullMQ's side: the queue's global concurrency 64
//!   (`set_global_concurrency(64)`, untimed) and each Worker's `limiter` of 1,000 jobs
//!   per 10 ms (no groups: BullMQ's open-source design has none). With `metrics`, each
//!   Worker keeps per-minute metrics (`MetricsOptions`, 1,440 data points). With
//!   `dedup`, job n is added under the deduplication id `d-<n>` with a window of a
//!   minute (`DeduplicationOptions { id, ttl }`): every add opens a window and adds.
//!   With `retain`, each job keeps the newest 1,000 completed jobs
//!   (`remove_on_complete(RemoveOnFinish::Count(1000))`).
//! - pickup: one Worker (concurrency 1), one job at a time on an idle queue: a random
//!   pause in [0, gapMs), add, wait until the job is completed, again.
//!
//! Pickup latency is from `add` returning to the processor starting, both read from one
//! `Instant` clock in this process (in the paused cells, from the later of the add and
//! the resume). A processor that starts before its add returned counts as 0.
//!
//! bullmq-official's settings, as BullMQ's on the JS side: `remove_on_complete` and
//! `remove_on_fail` per job, a custom `job_id` per job, every other option at its default
//! (lock 30 s, stalled check every 30 s, drain delay 5 s, no limiter, no global
//! concurrency, no metrics) but in the `limits` and `metrics` cells. The runtime is
//! tokio's multi-threaded one with its default threads (one per core).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bullmq::options::{DeduplicationOptions, RedisConnectionOptions};
use bullmq::types::RemoveOnFinish;
use bullmq::worker::{CancellationToken, WorkerEvent};
use bullmq::{
    BulkJob, Job, JobOptions, MetricsOptions, Queue, QueueOptions, RateLimiterOptions, Worker,
    WorkerOptions,
};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Notify};

/// One cell, from the JSON argument.
struct Cell {
    url: String,
    queue: String,
    workers: usize,
    per: usize,
    jobs: usize,
    warm: usize,
    paused: bool,
    /// A global concurrency of 64 and a limiter of 1,000 jobs per 10 ms.
    limits: bool,
    /// Per-minute metrics, 1,440 data points.
    metrics: bool,
    /// Each job added under a deduplication id of its own, with a window of a minute.
    dedup: bool,
    /// The newest 1,000 completed jobs kept.
    retain: bool,
    pickups: usize,
    gap_ms: u64,
}

/// 100 bytes of job data as BullMQ stores it: JSON of a 98-character string.
fn data() -> Value {
    Value::String("x".repeat(98))
}

/// Every job's options: kept by nobody once finished (or, with `retain`, among the newest
/// 1,000 completed), and the bench's own id.
fn job_opts(n: usize, dedup: bool, retain: bool) -> JobOptions {
    let on_complete = if retain {
        RemoveOnFinish::Count(1000)
    } else {
        RemoveOnFinish::Bool(true)
    };
    let opts = JobOptions::new()
        .remove_on_complete(on_complete)
        .remove_on_fail(RemoveOnFinish::Bool(true))
        .job_id(format!("j-{n}"));
    if !dedup {
        return opts;
    }
    opts.deduplication(DeduplicationOptions {
        id: format!("d-{n}"),
        ttl: Some(60_000),
        ..DeduplicationOptions::default()
    })
}

/// The job's number, from its id `j-<n>`.
fn number_of(id: &str) -> usize {
    id.rsplit('-')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a bench job id")
}

fn connection(cell: &Cell) -> RedisConnectionOptions {
    RedisConnectionOptions::new().url(cell.url.clone())
}

async fn queue(cell: &Cell, name: &str) -> Queue {
    Queue::with_options(name, QueueOptions::new().connection(connection(cell)))
        .await
        .expect("bullmq-official's Queue connects")
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

/// The server's CPU time so far (INFO cpu: used_cpu_sys + used_cpu_user), in µs.
async fn server_us(probe: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(probe)
        .await
        .expect("INFO cpu");
    let seconds: f64 = info
        .lines()
        .filter(|line| line.starts_with("used_cpu_sys:") || line.starts_with("used_cpu_user:"))
        .filter_map(|line| line.split(':').nth(1)?.trim().parse::<f64>().ok())
        .sum();
    (seconds * 1e6).round() as u64
}

async fn probe(cell: &Cell) -> redis::aio::MultiplexedConnection {
    redis::Client::open(cell.url.as_str())
        .expect("a redis url")
        .get_multiplexed_async_connection()
        .await
        .expect("the probe connects")
}

/// Closes workers (at once: each waits for its own main loop) and queues, untimed. A
/// worker blocked on its marker is cut short after 200 ms.
async fn close(workers: Vec<Arc<Worker>>, queues: Vec<Queue>) {
    let closing: Vec<_> = workers
        .into_iter()
        .map(|worker| tokio::spawn(async move { worker.close(200).await }))
        .collect();
    for closed in closing {
        let _ = closed.await;
    }
    for queue in &queues {
        queue.close().await;
    }
}

// A fresh process runs cold code: before the timed cell, the same cell runs untimed on its
// own queue (`warm` jobs, 500 by default), as bench.mjs does for BullMQ.
async fn throughput(cell: &Cell) -> Value {
    if cell.warm > 0 {
        throughput_on(cell, &format!("{}-warm", cell.queue), cell.warm).await;
    }
    throughput_on(cell, &cell.queue, cell.jobs).await
}

async fn throughput_on(cell: &Cell, name: &str, jobs: usize) -> Value {
    let (workers, per) = (cell.workers, cell.per);
    let base = Instant::now();
    let ns = move || base.elapsed().as_nanos() as u64 + 1; // 0 stays "not yet"
    let added: Arc<Vec<AtomicU64>> = Arc::new((0..jobs).map(|_| AtomicU64::new(0)).collect());
    let started: Arc<Vec<AtomicU64>> = Arc::new((0..jobs).map(|_| AtomicU64::new(0)).collect());
    let mut producers = Vec::with_capacity(workers);
    for _ in 0..workers {
        producers.push(queue(cell, name).await);
    }
    let completed = Arc::new(AtomicUsize::new(0));
    let all_done = Arc::new(Notify::new());
    let mut consumers = Vec::with_capacity(workers);
    let mut listeners = Vec::with_capacity(workers);
    for _ in 0..workers {
        let started = started.clone();
        let processor = move |job: Job, _: CancellationToken| {
            started[number_of(job.id())].store(ns(), Ordering::SeqCst);
            std::future::ready(Ok::<Value, bullmq::Error>(Value::Null))
        };
        let mut opts = WorkerOptions::new()
            .connection(connection(cell))
            .concurrency(per)
            .manual_start();
        if cell.limits {
            opts = opts.limiter(RateLimiterOptions::new(1000, Duration::from_millis(10)));
        }
        if cell.metrics {
            opts = opts.metrics(MetricsOptions {
                max_data_points: 1440,
            });
        }
        let worker = Arc::new(
            Worker::with_options(name, processor, opts)
                .await
                .expect("bullmq-official's Worker connects"),
        );
        let (events, completed, all_done) = (worker.clone(), completed.clone(), all_done.clone());
        listeners.push(tokio::spawn(async move {
            while let Some(event) = events.next_event().await {
                match event {
                    WorkerEvent::Completed { .. } => {
                        let so_far = completed.fetch_add(1, Ordering::SeqCst) + 1;
                        if so_far == jobs {
                            all_done.notify_one();
                        }
                    }
                    WorkerEvent::Error(err) | WorkerEvent::Failed { error: err, .. } => {
                        eprintln!("bullmq-official worker: {err}");
                        std::process::exit(1);
                    }
                    _ => {}
                }
            }
        }));
        consumers.push(worker);
    }
    if cell.limits {
        producers[0]
            .set_global_concurrency(64)
            .await
            .expect("set_global_concurrency");
    }
    let mut probe = probe(cell).await;
    // Producer p adds jobs p, p + workers, … one call at a time (`per` at a time with
    // add_bulk).
    let (dedup, retain) = (cell.dedup, cell.retain);
    let produce = |p: usize, queue: Queue| {
        let added = added.clone();
        async move {
            let mine: Vec<usize> = (p..jobs).step_by(workers).collect();
            for chunk in mine.chunks(per) {
                if let [n] = chunk {
                    queue
                        .add("j", data())
                        .options(job_opts(*n, dedup, retain))
                        .await
                        .expect("add");
                } else {
                    let bulk = chunk
                        .iter()
                        .map(|&n| BulkJob::with_options("j", data(), job_opts(n, dedup, retain)))
                        .collect();
                    queue.add_bulk(bulk).await.expect("add_bulk");
                }
                let now = ns();
                for &n in chunk {
                    added[n].store(now, Ordering::SeqCst);
                }
            }
        }
    };
    let spawn_producers = || {
        producers
            .iter()
            .enumerate()
            .map(|(p, queue)| tokio::spawn(produce(p, queue.clone())))
            .collect::<Vec<_>>()
    };
    let (cpu_before, client_before, start, adds_secs);
    if cell.paused {
        producers[0].pause().await.expect("pause");
        for worker in &consumers {
            worker.run().await.expect("the worker runs");
        }
        for producer in spawn_producers() {
            producer.await.expect("a producer");
        }
        cpu_before = server_us(&mut probe).await;
        client_before = client_us();
        start = Instant::now();
        producers[0].resume().await.expect("resume");
        adds_secs = 0.0;
    } else {
        cpu_before = server_us(&mut probe).await;
        client_before = client_us();
        start = Instant::now();
        for worker in &consumers {
            worker.run().await.expect("the worker runs");
        }
        for producer in spawn_producers() {
            producer.await.expect("a producer");
        }
        adds_secs = start.elapsed().as_secs_f64();
    }
    all_done.notified().await;
    let secs = start.elapsed().as_secs_f64();
    let client_cpu_us = client_us() - client_before;
    let cpu_us = server_us(&mut probe).await - cpu_before;
    let from = start.duration_since(base).as_nanos() as u64 + 1;
    let pickup_us: Vec<u64> = (0..jobs)
        .map(|n| {
            let a = added[n].load(Ordering::SeqCst).max(from);
            started[n].load(Ordering::SeqCst).saturating_sub(a) / 1000
        })
        .collect();
    for listener in listeners {
        listener.abort();
    }
    close(consumers, producers).await;
    json!({
        "jobs": completed.load(Ordering::SeqCst),
        "secs": secs,
        "adds_secs": adds_secs,
        "cpu_us": cpu_us,
        "client_cpu_us": client_cpu_us,
        "pickup_us": pickup_us,
    })
}

async fn pickup(cell: &Cell) -> Value {
    let name = cell.queue.as_str();
    let queue = queue(cell, name).await;
    let (began_tx, mut began) = mpsc::unbounded_channel::<Instant>();
    let processor = move |_: Job, _: CancellationToken| {
        let _ = began_tx.send(Instant::now());
        std::future::ready(Ok::<Value, bullmq::Error>(Value::Null))
    };
    let opts = WorkerOptions::new()
        .connection(connection(cell))
        .concurrency(1);
    let worker = Arc::new(
        Worker::with_options(name, processor, opts)
            .await
            .expect("bullmq-official's Worker connects"),
    );
    let (done_tx, mut done) = mpsc::unbounded_channel::<()>();
    let events = worker.clone();
    let listener = tokio::spawn(async move {
        while let Some(event) = events.next_event().await {
            match event {
                WorkerEvent::Completed { .. } => {
                    let _ = done_tx.send(());
                }
                WorkerEvent::Error(err) | WorkerEvent::Failed { error: err, .. } => {
                    eprintln!("bullmq-official worker: {err}");
                    std::process::exit(1);
                }
                _ => {}
            }
        }
    });
    let mut probe = probe(cell).await;
    let mut rng = Rng::seeded();
    let cpu_before = server_us(&mut probe).await;
    let start = Instant::now();
    let mut pickup_us = Vec::with_capacity(cell.pickups);
    for n in 0..cell.pickups {
        let pause = Duration::from_millis(cell.gap_ms).mul_f64(rng.unit());
        tokio::time::sleep(pause).await;
        queue
            .add("j", data())
            .options(job_opts(n, false, false))
            .await
            .expect("add");
        let added = Instant::now();
        let at = began.recv().await.expect("the worker runs");
        pickup_us.push(at.saturating_duration_since(added).as_micros() as u64);
        done.recv().await.expect("the job completes");
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu_us = server_us(&mut probe).await - cpu_before;
    listener.abort();
    close(vec![worker], vec![queue]).await;
    json!({ "jobs": cell.pickups, "secs": secs, "cpu_us": cpu_us, "pickup_us": pickup_us })
}

/// A small xorshift generator for the idle pauses.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Rng(nanos | 1)
    }

    /// A number in [0, 1).
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[tokio::main]
async fn main() {
    let Some(arg) = std::env::args().nth(1) else {
        eprintln!("usage: bench-bullmq-official '<cell as JSON>' (see the file's docs)");
        std::process::exit(2);
    };
    let v: Value = serde_json::from_str(&arg).expect("the cell is JSON");
    let num = |key: &str, default: u64| v[key].as_u64().unwrap_or(default);
    let cell = Cell {
        url: format!("redis://127.0.0.1:{}/", num("port", 6379)),
        queue: v["queue"].as_str().expect("a queue name").to_owned(),
        workers: num("workers", 1) as usize,
        per: num("per", 1) as usize,
        jobs: num("jobs", 1000) as usize,
        warm: num("warm", 500) as usize,
        paused: v["paused"].as_bool().unwrap_or(false),
        limits: v["limits"].as_bool().unwrap_or(false),
        metrics: v["metrics"].as_bool().unwrap_or(false),
        dedup: v["dedup"].as_bool().unwrap_or(false),
        retain: v["retain"].as_bool().unwrap_or(false),
        pickups: num("pickups", 20) as usize,
        gap_ms: num("gapMs", 250),
    };
    let result = match v["mode"].as_str() {
        Some("throughput") => throughput(&cell).await,
        Some("pickup") => pickup(&cell).await,
        other => {
            eprintln!("unknown mode {other:?} (throughput or pickup)");
            std::process::exit(2);
        }
    };
    println!("{result}");
    std::process::exit(0);
}
