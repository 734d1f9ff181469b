//! A waiter per job over 10,000 jobs, with the waiters' connections killed at random:
//! does every waiter learn its job's end, and does the events stream keep to its cap?
//!
//! ```text
//! cargo bench --bench work_queue_events
//! JOBS=10000 CALLERS=32 CAP=1000 cargo bench --bench work_queue_events
//! ```
//!
//! `CALLERS` threads each add a job and wait for its end ([`WorkQueue::wait_for_job`]),
//! one job after another, while 4 workers run them: every seventh fails for good, the
//! others are acked with a result. Another thread kills a random caller's connection
//! every 10 ms (`CLIENT KILL ID`); a killed caller opens a new connection and waits
//! again. The run fails (exit code 1) when a caller learns a wrong end, or none, or the
//! stream ever held more than `CAP` entries. It prints the wait times (from the add to
//! the end learned) and how many waits a kill cut.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use redis_patterns::work_queue::{Done, JobEnd, Settings, WorkQueue};

#[path = "../tests/it/server.rs"]
mod server;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn expected_end(n: u64) -> JobEnd {
    if n.is_multiple_of(7) {
        JobEnd::Dead(b"boom".to_vec())
    } else {
        JobEnd::Completed(Some(format!("r{n}").into_bytes()))
    }
}

fn main() {
    let (jobs, callers, cap) = (env("JOBS", 10_000), env("CALLERS", 32), env("CAP", 1_000));
    let server = server::RedisProcess::start(&[]);
    let queue = WorkQueue::new("events")
        .unwrap()
        .with_max_deliveries(1)
        .unwrap();
    let settings = Settings::new().events(cap).unwrap();
    queue
        .configure(&settings)
        .run(&mut server.connection())
        .unwrap();
    let per_caller = jobs.div_ceil(callers);
    let (finished, callers_done) = (AtomicBool::new(false), AtomicU64::new(0));
    let (kills, cut, wrong, longest) = (
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
    );
    let waits = Mutex::new(Vec::new());
    let started = Instant::now();
    thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let mut con = server.connection();
                let mut held: Vec<redis_patterns::work_queue::Job> = Vec::new();
                while !finished.load(Ordering::SeqCst) {
                    let (failing, done): (Vec<_>, Vec<_>) = held
                        .iter()
                        .partition(|job| job.id.parse::<u64>().unwrap().is_multiple_of(7));
                    for job in failing {
                        queue.fail(job, "boom").run(&mut con).unwrap();
                    }
                    let done: Vec<Done> = done
                        .into_iter()
                        .map(|job| Done::with_result(job, format!("r{}", job.id)).unwrap())
                        .collect();
                    held = queue.ack_and_take(done, 5).run(&mut con).unwrap();
                    if held.is_empty() {
                        let wait = queue.wait_for_work(Duration::from_millis(50));
                        wait.run(&mut con).unwrap();
                    }
                }
            });
        }
        for caller in 0..callers {
            let (queue, server, waits) = (&queue, &server, &waits);
            let (callers_done, cut, wrong) = (&callers_done, &cut, &wrong);
            s.spawn(move || {
                let connect = || {
                    let mut con = server.connection();
                    let _: () = redis::cmd("CLIENT")
                        .arg("SETNAME")
                        .arg("caller")
                        .query(&mut con)
                        .unwrap();
                    con
                };
                let mut con = connect();
                let mut mine = Vec::new();
                for n in (caller * per_caller..(caller + 1) * per_caller).filter(|n| *n < jobs) {
                    let id = n.to_string();
                    let at = Instant::now();
                    let end = loop {
                        let waited = queue.add(&id, "x").run(&mut con).and_then(|_| {
                            queue.wait_for_job(&mut con, &id, Duration::from_secs(60))
                        });
                        match waited {
                            Ok(end) => break end,
                            Err(_) => {
                                cut.fetch_add(1, Ordering::SeqCst);
                                con = connect();
                            }
                        }
                    };
                    mine.push(at.elapsed());
                    if end != Some(expected_end(n)) {
                        eprintln!("job {n}: learned {end:?}");
                        wrong.fetch_add(1, Ordering::SeqCst);
                    }
                }
                waits.lock().unwrap().extend(mine);
                callers_done.fetch_add(1, Ordering::SeqCst);
            });
        }
        s.spawn(|| {
            let mut con = server.connection();
            let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
            while callers_done.load(Ordering::SeqCst) < callers {
                let len: u64 = redis::cmd("XLEN")
                    .arg(queue.keys()[10])
                    .query(&mut con)
                    .unwrap();
                longest.fetch_max(len, Ordering::SeqCst);
                let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
                let ids: Vec<&str> = list
                    .lines()
                    .filter(|line| line.contains(" name=caller "))
                    .filter_map(|line| line.split(' ').next()?.strip_prefix("id="))
                    .collect();
                if !ids.is_empty() {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let id = ids[(seed % ids.len() as u64) as usize];
                    let _: redis::RedisResult<()> = redis::cmd("CLIENT")
                        .arg("KILL")
                        .arg("ID")
                        .arg(id)
                        .query(&mut con);
                    kills.fetch_add(1, Ordering::SeqCst);
                }
                // Pacing of the kills only.
                thread::sleep(Duration::from_millis(10));
            }
            finished.store(true, Ordering::SeqCst);
        });
    });
    let took = started.elapsed();
    let mut waits = waits.into_inner().unwrap();
    waits.sort();
    let at = |q: f64| waits[((waits.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3;
    println!(
        "{} jobs, {callers} callers, 4 workers, events cap {cap}: {:.1} s; {} connections killed, {} waits cut and resumed",
        waits.len(),
        took.as_secs_f64(),
        kills.load(Ordering::SeqCst),
        cut.load(Ordering::SeqCst),
    );
    println!(
        "wait from add to the end learned: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        at(0.5),
        at(0.99),
        at(1.0)
    );
    let (wrong, longest) = (wrong.load(Ordering::SeqCst), longest.load(Ordering::SeqCst));
    println!("wrong or missing ends: {wrong}; longest the stream was seen: {longest} (cap {cap})");
    if wrong > 0 || longest > cap || waits.len() as u64 != jobs {
        std::process::exit(1);
    }
}
