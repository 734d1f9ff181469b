//! 1,000 flows with random child failures while worker processes are SIGKILLed: does every
//! parent run exactly once its children have ended, with the right outcome?
//!
//! ```text
//! cargo bench --bench work_queue_flow
//! FLOWS=1000 WORKERS=4 KILL_EVERY_MS=100 WORK_MS=2 cargo bench --bench work_queue_flow
//! ```
//!
//! The bench adds `FLOWS` flows of 1 to 5 children, each child with a failure policy
//! drawn at random (fail the parent, ignore, continue), and about a quarter of the
//! children failing for good. It then runs `WORKERS` worker processes (this bench run
//! again, told by `WORK_QUEUE_FLOW_ROLE`), each job's work taking `WORK_MS` ms, and
//! SIGKILLs one every `KILL_EVERY_MS` ms,
//! starting another in its place, until every flow has ended. A worker takes jobs, fails
//! or acks each child as planned, and for a parent first checks on the server that each
//! of its children has ended (acked: its record is gone; or dead), then acks it with the
//! failed children it was given as its result. A killed worker's jobs come back when
//! their leases (500 ms) run out, and a child that runs out on its third delivery dies:
//! the bench reads each child's end from the server afterwards.
//!
//! Checked from the server's keys when all is done: each parent that a child's failure
//! should kill is dead and never completed; each other parent completed exactly once
//! (one `completed` event in the queue's events), never before its children ended, and
//! its kept result lists exactly its children that died under `continue`. The run exits
//! with code 1 on any broken check. A parent's handler may run more than once when a
//! kill lands between its run and its ack (the queue delivers at least once); the count
//! is printed.

use std::collections::BTreeMap;
use std::process::{Child as Process, Command};
use std::time::{Duration, Instant};

use redis_patterns::work_queue::{
    Child, EventKind, JobOptions, OnChildFailure, Settings, State, WorkQueue,
};

#[path = "../tests/it/server.rs"]
mod server;

const ROLE: &str = "WORK_QUEUE_FLOW_ROLE";

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn queue() -> WorkQueue {
    WorkQueue::new("flows")
        .unwrap()
        .with_lease(Duration::from_millis(500))
        .unwrap()
        .with_max_deliveries(3)
        .unwrap()
}

/// Whether child `id` fails for good when it runs: a quarter of them, by a hash of its id
/// that every process computes alike.
fn fails(id: &str) -> bool {
    let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    hash % 4 == 0
}

/// A worker process: runs jobs until it is killed.
fn worker(url: &str) {
    let queue = queue();
    let work = Duration::from_millis(env("WORK_MS", 2));
    let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
    loop {
        let jobs = queue.take(3).run(&mut con).unwrap();
        if jobs.is_empty() {
            queue
                .wait_for_work(Duration::from_millis(100))
                .run(&mut con)
                .unwrap();
            continue;
        }
        for job in jobs {
            // The job's work.
            std::thread::sleep(work);
            if job.id.contains('c') {
                let _ = if fails(&job.id) {
                    queue.fail(&job, "boom").run(&mut con).map(|_| ())
                } else {
                    queue.ack(&job).run(&mut con).map(|_| ())
                };
                continue;
            }
            let _: u64 = redis::cmd("HINCRBY")
                .arg("bench:runs")
                .arg(&job.id)
                .arg(1)
                .query(&mut con)
                .unwrap();
            let info = queue.job(&job.id).run(&mut con).unwrap();
            let Some(info) = info else { continue };
            let children: u64 = job.payload_as().unwrap();
            for c in 0..children {
                let child = queue.job(&format!("{}c{c}", job.id)).run(&mut con).unwrap();
                if !matches!(child.map(|c| c.state), None | Some(State::Dead)) {
                    let _: u64 = redis::cmd("RPUSH")
                        .arg("bench:early")
                        .arg(&job.id)
                        .query(&mut con)
                        .unwrap();
                }
            }
            let _ = queue
                .ack_with(&job, info.failed_children.join(","))
                .run(&mut con);
        }
    }
}

fn spawn(url: &str) -> Process {
    Command::new(std::env::current_exe().unwrap())
        .env(ROLE, "worker")
        .env("WORK_QUEUE_FLOW_URL", url)
        .spawn()
        .unwrap()
}

fn main() {
    if std::env::var(ROLE).as_deref() == Ok("worker") {
        worker(&std::env::var("WORK_QUEUE_FLOW_URL").unwrap());
        return;
    }
    let (flows, workers, kill_every) = (
        env("FLOWS", 1_000),
        env("WORKERS", 4),
        env("KILL_EVERY_MS", 100),
    );
    let server = server::RedisProcess::start(&[]);
    let url = server.url(0);
    let mut con = server.connection();
    let queue = queue();
    let settings = Settings::new().events(100_000).unwrap();
    queue.configure(&settings).run(&mut con).unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut draw = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let policies = [
        OnChildFailure::FailParent,
        OnChildFailure::Ignore,
        OnChildFailure::Continue,
    ];
    let mut plan: BTreeMap<String, Vec<(String, OnChildFailure)>> = BTreeMap::new();
    for f in 0..flows {
        let parent = format!("p{f}");
        let n = 1 + draw(5);
        let children: Vec<(String, OnChildFailure)> = (0..n)
            .map(|c| (format!("{parent}c{c}"), policies[draw(3) as usize]))
            .collect();
        let jobs: Vec<Child> = children
            .iter()
            .map(|(id, policy)| Child::new(id.clone(), "c").unwrap().on_failure(*policy))
            .collect();
        queue
            .add_flow(&parent, n, JobOptions::new(), &jobs)
            .run(&mut con)
            .unwrap();
        plan.insert(parent, children);
    }
    let started = Instant::now();
    let mut running: Vec<Process> = (0..workers).map(|_| spawn(&url)).collect();
    let mut kills = 0;
    let mut next_kill = Instant::now() + Duration::from_millis(kill_every);
    loop {
        let counts = queue.counts().run(&mut con).unwrap();
        if counts.waiting + counts.delayed + counts.leased + counts.parked == 0 {
            break;
        }
        if Instant::now() >= next_kill {
            let at = (kills % workers) as usize;
            running[at].kill().unwrap();
            running[at].wait().unwrap();
            running[at] = spawn(&url);
            kills += 1;
            next_kill = Instant::now() + Duration::from_millis(kill_every);
        }
        // Pacing of the kills and of this check only.
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = started.elapsed();
    for mut process in running {
        process.kill().unwrap();
        process.wait().unwrap();
    }

    // Every parent's end, from the server's keys.
    let mut completed: BTreeMap<String, u64> = BTreeMap::new();
    let mut after = "0-0".to_owned();
    loop {
        let page = queue.events_after(&after, 1000).run(&mut con).unwrap();
        assert!(!page.lost, "the events cap held every event of the run");
        let Some(last) = page.events.last() else {
            break;
        };
        after = last.id.clone();
        for event in page.events {
            if event.kind == EventKind::Completed {
                *completed.entry(event.job).or_default() += 1;
            }
        }
    }
    let runs: BTreeMap<String, u64> = redis::cmd("HGETALL")
        .arg("bench:runs")
        .query(&mut con)
        .unwrap();
    let early: Vec<String> = redis::cmd("LRANGE")
        .arg("bench:early")
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    let (mut broken, mut died, mut ran, mut child_deaths) = (0, 0, 0, 0);
    for (parent, children) in &plan {
        let mut should_die = false;
        let mut listed = Vec::new();
        for (id, policy) in children {
            let dead = queue.job(id).run(&mut con).unwrap().map(|c| c.state) == Some(State::Dead);
            let done = completed.get(id).copied().unwrap_or(0);
            if dead == (done == 1) {
                eprintln!("{id}: dead {dead}, completed {done} times");
                broken += 1;
            }
            if dead {
                child_deaths += 1;
                match policy {
                    OnChildFailure::FailParent => should_die = true,
                    OnChildFailure::Continue => listed.push(id.clone()),
                    OnChildFailure::Ignore => {}
                }
            }
        }
        let info = queue.job(parent).run(&mut con).unwrap();
        let times = completed.get(parent).copied().unwrap_or(0);
        if should_die {
            died += 1;
            if info.map(|i| i.state) != Some(State::Dead) || times != 0 {
                eprintln!("{parent}: a child failed it, but it completed {times} times");
                broken += 1;
            }
        } else {
            ran += 1;
            let result = queue
                .result(parent)
                .run(&mut con)
                .unwrap()
                .unwrap_or_default();
            let mut got: Vec<String> = String::from_utf8(result)
                .unwrap()
                .split(',')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            got.sort();
            listed.sort();
            if times != 1 || got != listed {
                eprintln!("{parent}: completed {times} times, listed {got:?}, expected {listed:?}");
                broken += 1;
            }
        }
    }
    let reruns: u64 = runs.values().map(|n| n - 1).sum();
    println!(
        "{flows} flows ({} children, {child_deaths} of them dead), {workers} worker processes, \
         {kills} SIGKILLs every {kill_every} ms: done in {:.1} s",
        plan.values().map(Vec::len).sum::<usize>(),
        took.as_secs_f64()
    );
    println!(
        "parents: {ran} completed exactly once with the right failed children, {died} dead with a child; \
         {} ran before a child ended; {reruns} handler runs repeated by a kill before the ack; {broken} broken",
        early.len()
    );
    if broken > 0 || !early.is_empty() {
        std::process::exit(1);
    }
}
