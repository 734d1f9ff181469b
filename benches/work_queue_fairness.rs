//! How long a small tenant waits behind a big tenant's backlog, with groups taking turns
//! off and on (`Settings::group_turns`), side by side.
//!
//! ```sh
//! cargo bench --bench work_queue_fairness
//! BACKLOG=10000 SMALL=30 EVERY_MS=100 WORK_MS=2 WORKERS=4 cargo bench --bench work_queue_fairness
//! ```
//!
//! Tenant A (group `a`) has `BACKLOG` jobs waiting (10,000) when the run starts; tenant B
//! (group `b`) adds one job every `EVERY_MS` ms (100 ms, to keep the run short; a second
//! in the brief's wording would only stretch it), `SMALL` of them (30). `WORKERS` threads
//! (4) each take one job at a time, work `WORK_MS` ms (2 ms) and ack it in the call that
//! takes the next (`ack_and_take`). The run ends when every job of B was taken. Printed:
//! B's pickup latency (from just before its `add` to its `take` answering, on the
//! client's clock) as p50/p99/max, turns off and on. With turns off B's jobs wait until A's
//! backlog before them is done; with turns on each waits for about one job of A.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use redis_patterns::Batch;
use redis_patterns::work_queue::{Job, JobOptions, Settings, WorkQueue};

#[path = "../tests/it/server.rs"]
mod server;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Run {
    /// B's pickup latencies, sorted.
    latencies: Vec<Duration>,
    /// A's jobs taken by the end of the run.
    a_taken: usize,
    took: Duration,
}

fn run(server: &server::RedisProcess, turns: bool) -> Run {
    let (backlog, small) = (env("BACKLOG", 10_000), env("SMALL", 30) as usize);
    let every = Duration::from_millis(env("EVERY_MS", 100));
    let work = Duration::from_millis(env("WORK_MS", 2));
    let workers = env("WORKERS", 4);
    let queue = WorkQueue::new(if turns { "fair:on" } else { "fair:off" }).unwrap();
    let mut con = server.connection();
    queue
        .configure(&Settings::new().group_turns(turns))
        .run(&mut con)
        .unwrap();
    for chunk in 0..backlog.div_ceil(1000) {
        let mut adds = Batch::new();
        for n in chunk * 1000..((chunk + 1) * 1000).min(backlog) {
            let _ = adds.add(queue.add_with(
                &format!("a:{n}"),
                "work of tenant a",
                JobOptions::new().group("a"),
            ));
        }
        adds.run(&mut con).unwrap();
    }
    let added: Mutex<HashMap<String, Instant>> = Mutex::new(HashMap::new());
    let latencies: Mutex<Vec<Duration>> = Mutex::new(Vec::new());
    let (b_taken, a_taken) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let done = AtomicBool::new(false);
    let start = Instant::now();
    thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let mut con = server.connection();
                let mut held: Option<Job> = None;
                loop {
                    if done.load(Ordering::SeqCst) {
                        if let Some(job) = held.take() {
                            queue.ack(&job).run(&mut con).unwrap();
                        }
                        break;
                    }
                    let jobs = queue.ack_and_take(held.iter(), 1).run(&mut con).unwrap();
                    held = None;
                    match jobs.into_iter().next() {
                        Some(job) => {
                            if job.group.as_deref() == Some("b") {
                                let at = added.lock().unwrap()[&job.id];
                                latencies.lock().unwrap().push(at.elapsed());
                                if b_taken.fetch_add(1, Ordering::SeqCst) + 1 == small {
                                    done.store(true, Ordering::SeqCst);
                                }
                            } else {
                                a_taken.fetch_add(1, Ordering::SeqCst);
                            }
                            thread::sleep(work);
                            held = Some(job);
                        }
                        None => {
                            let _ = queue.wait_for_work(Duration::from_millis(20)).run(&mut con);
                        }
                    }
                }
            });
        }
        s.spawn(|| {
            let mut con = server.connection();
            for n in 0..small {
                let id = format!("b:{n}");
                added.lock().unwrap().insert(id.clone(), Instant::now());
                queue
                    .add_with(&id, "work of tenant b", JobOptions::new().group("b"))
                    .run(&mut con)
                    .unwrap();
                thread::sleep(every);
            }
        });
    });
    let mut latencies = latencies.into_inner().unwrap();
    latencies.sort();
    Run {
        latencies,
        a_taken: a_taken.into_inner(),
        took: start.elapsed(),
    }
}

fn at(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn main() {
    let server = server::RedisProcess::start(&[]);
    let mut con = server.connection();
    redis_patterns::load_all(&mut con).unwrap();
    println!(
        "tenant a: {} jobs waiting; tenant b: one job every {} ms, {} of them; {} workers, {} ms of work per job",
        env("BACKLOG", 10_000),
        env("EVERY_MS", 100),
        env("SMALL", 30),
        env("WORKERS", 4),
        env("WORK_MS", 2)
    );
    println!("tenant b's pickup latency (add → take), ms:");
    println!(
        "{:<10} {:>10} {:>10} {:>10} {:>14} {:>9}",
        "turns", "p50", "p99", "max", "a's jobs taken", "run s"
    );
    for turns in [false, true] {
        let r = run(&server, turns);
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "{:<10} {:>10.1} {:>10.1} {:>10.1} {:>14} {:>9.1}",
            if turns { "on" } else { "off" },
            ms(at(&r.latencies, 0.5)),
            ms(at(&r.latencies, 0.99)),
            ms(*r.latencies.last().unwrap()),
            r.a_taken,
            r.took.as_secs_f64()
        );
    }
}
