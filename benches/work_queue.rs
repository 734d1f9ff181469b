//! Jobs per second through `WorkQueue` (add → take → ack, one script each) against the
//! bare commands a stream consumer group needs for the same flow (`XADD` →
//! `XREADGROUP` → `XACK` + `XDEL`), side by side in one run: one job per round trip, and
//! batches of 25 (adds and acks pipelined, one take or read of 25), on one connection
//! and on 8.
//!
//! ```sh
//! cargo bench --bench work_queue            # 3 rounds of 2,000 jobs per connection and way
//! ROUNDS=5 JOBS=5000 cargo bench --bench work_queue
//! ```
//!
//! Single jobs are sent as single calls. The stream flow has none of what the queue adds
//! (leases that come back, retries, delays, priorities, deduplication, group limits); the
//! ratio is what those cost. The ways take turns round by round, so that a noisy moment
//! on the machine hits them alike; read the ratios, not the digits.

use std::time::{Duration, Instant};

use redis_patterns::Batch;
use redis_patterns::work_queue::WorkQueue;

#[path = "../tests/it/server.rs"]
mod server;

const STREAM: &str = "bench:stream";
const BATCH: usize = 25;

#[derive(Clone, Copy)]
enum Way {
    Queue,
    Stream,
}

/// Moves `jobs` jobs through the queue, `per` at a time; returns how many were acked.
fn through_queue(
    con: &mut redis::Connection,
    queue: &WorkQueue,
    worker: usize,
    jobs: usize,
    per: usize,
) -> usize {
    let mut acked = 0;
    let mut n = 0;
    while n < jobs || acked < jobs {
        if n < jobs {
            if per == 1 {
                queue
                    .add(&format!("w{worker}:{n}"), "payload of a job")
                    .run(con)
                    .unwrap();
                n += 1;
            } else {
                let mut adds = Batch::new();
                for _ in 0..per {
                    let _ = adds.add(queue.add(&format!("w{worker}:{n}"), "payload of a job"));
                    n += 1;
                }
                adds.run(con).unwrap();
            }
        }
        let taken = queue.take(per as u64).run(con).unwrap();
        if let [job] = taken.as_slice() {
            queue.ack(job).run(con).unwrap();
        } else if !taken.is_empty() {
            let mut acks = Batch::new();
            for job in &taken {
                let _ = acks.add(queue.ack(job));
            }
            acks.run(con).unwrap();
        }
        acked += taken.len();
    }
    acked
}

/// The same flow on a stream with a consumer group.
fn through_stream(con: &mut redis::Connection, worker: usize, jobs: usize, per: usize) -> usize {
    let consumer = format!("w{worker}");
    let mut acked = 0;
    let mut n = 0;
    while n < jobs || acked < jobs {
        if n < jobs {
            let mut adds = redis::pipe();
            for _ in 0..per {
                adds.cmd("XADD")
                    .arg(STREAM)
                    .arg("*")
                    .arg("job")
                    .arg("payload of a job")
                    .ignore();
                n += 1;
            }
            adds.exec(con).unwrap();
        }
        let read: redis::streams::StreamReadReply = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg("workers")
            .arg(&consumer)
            .arg("COUNT")
            .arg(per)
            .arg("STREAMS")
            .arg(STREAM)
            .arg(">")
            .query(con)
            .unwrap();
        let ids: Vec<String> = read
            .keys
            .into_iter()
            .flat_map(|k| k.ids)
            .map(|e| e.id)
            .collect();
        if ids.is_empty() {
            continue;
        }
        redis::pipe()
            .cmd("XACK")
            .arg(STREAM)
            .arg("workers")
            .arg(&ids)
            .ignore()
            .cmd("XDEL")
            .arg(STREAM)
            .arg(&ids)
            .ignore()
            .exec(con)
            .unwrap();
        acked += ids.len();
    }
    acked
}

/// The server process's CPU time so far (user and system, `INFO cpu`), in µs: what the
/// flow cost Redis, its network handling included.
fn server_us(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("cpu").query(con).unwrap();
    let seconds: f64 = info
        .lines()
        .filter(|line| line.starts_with("used_cpu_sys:") || line.starts_with("used_cpu_user:"))
        .filter_map(|line| line.split(':').nth(1)?.trim().parse::<f64>().ok())
        .sum();
    (seconds * 1e6) as u64
}

/// How many jobs `threads` connections moved (each `jobs`, `per` at a time), how long it
/// took, and the server's CPU time for it.
fn rate(
    server: &server::RedisProcess,
    queue: &WorkQueue,
    way: Way,
    threads: usize,
    jobs: usize,
    per: usize,
) -> (usize, Duration, u64) {
    let mut con = server.connection();
    let cpu_before = server_us(&mut con);
    let start = Instant::now();
    let moved: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|worker| {
                scope.spawn(move || {
                    let mut con = server.connection();
                    match way {
                        Way::Queue => through_queue(&mut con, queue, worker, jobs, per),
                        Way::Stream => through_stream(&mut con, worker, jobs, per),
                    }
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    let took = start.elapsed();
    (moved, took, server_us(&mut con) - cpu_before)
}

fn main() {
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (rounds, jobs) = (env("ROUNDS", 3), env("JOBS", 2000));
    let server = server::RedisProcess::start(&[]);
    let mut con = server.connection();
    redis_patterns::load_all(&mut con).unwrap();
    let queue = WorkQueue::new("bench:queue").unwrap();
    redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(STREAM)
        .arg("workers")
        .arg("$")
        .arg("MKSTREAM")
        .exec(&mut con)
        .unwrap();

    println!("add → take → ack, {rounds} rounds of {jobs} jobs per connection and way:");
    println!("jobs per second, and the server's CPU time per job (INFO cpu)");
    println!(
        "{:<34} {:>11} {:>11} {:>7}   {:>11} {:>11} {:>7}",
        "flow", "queue/s", "stream/s", "ratio", "queue µs", "stream µs", "ratio"
    );
    for (threads, per) in [(1, 1), (8, 1), (1, BATCH), (8, BATCH)] {
        let mut totals = [(0usize, Duration::ZERO, 0u64); 2];
        for _ in 0..rounds {
            for (total, way) in totals.iter_mut().zip([Way::Queue, Way::Stream]) {
                let (moved, took, cpu) = rate(&server, &queue, way, threads, jobs, per);
                total.0 += moved;
                total.1 += took;
                total.2 += cpu;
            }
        }
        let [q, s] = totals.map(|(moved, took, _)| moved as f64 / took.as_secs_f64());
        let [qc, sc] = totals.map(|(moved, _, cpu)| cpu as f64 / moved as f64);
        let flow = format!(
            "{threads} connection{}, {}",
            if threads == 1 { "" } else { "s" },
            if per == 1 {
                "one job per call".to_string()
            } else {
                format!("batches of {per}")
            }
        );
        println!(
            "{flow:<34} {q:>11.0} {s:>11.0} {:>6.2}×   {qc:>11.1} {sc:>11.1} {:>6.2}×",
            q / s,
            qc / sc
        );
    }
    let counts = queue.counts().run(&mut con).unwrap();
    assert_eq!(counts, Default::default(), "every job was acked");
    println!("\nratios: work_queue ÷ stream (jobs/s: above 1 is faster; µs: above 1 costs more)");
}
