//! Jobs per second through `WorkQueue` (add → take → ack, one script each) against the
//! bare commands a stream consumer group needs for the same flow (`XADD` →
//! `XREADGROUP` → `XACK` + `XDEL`), side by side in one run: one job per round trip, and
//! batches of [`MAX_TAKE`] (adds and acks pipelined, one take or read of a batch), on one
//! connection and on 8.
//!
//! ```sh
//! cargo bench --bench work_queue            # 3 rounds of 2,000 jobs per connection and way
//! ROUNDS=5 JOBS=5000 cargo bench --bench work_queue
//! PART=failover FAILOVERS=20 cargo bench --bench work_queue
//! PART=schedulers RUNS=10000 cargo bench --bench work_queue
//! PART=calls BASE=4c56169 cargo bench --bench work_queue   # add, take and ack against another revision's
//! ```
//!
//! `PART=calls` compares the server time of one `add`, one `take` (acking the job the
//! previous take handed out) and one `ack` of this checkout's scripts, as they are,
//! keeping 1,000 completed jobs, and adding each job with a 55-byte trace context (with
//! the bytes that context adds to each job), with those of revision `BASE`
//! (4c56169, before schedulers, events, flows and turns, unless set), features off, best
//! of `ROUNDS` (5) rounds of `JOBS` (3,000) jobs: see `benches/support/call_cost.rs`.
//!
//! `PART=schedulers` checks the job schedulers under crashes: 100 schedules every 100 ms
//! (catch-up 100), 8 scheduler processes (this bench run again, told by
//! `WORK_QUEUE_SCHEDULER_URL`), one `SIGKILL`ed and restarted every 2 s, until `RUNS`
//! runs were added. Then, from the server's keys alone: each schedule's job ids
//! (`<schedule>:<run ms>`) must be every run time from its first to its last, once (0
//! missed), the arrival counter `#seq` must equal the jobs (0 added twice: a second add
//! would bump it), and the lateness of each run (its `a:` stamp, the server's clock when
//! it was added, minus its run time) is printed as p50/p99/max.
//!
//! `PART=failover` measures instead how soon a [`Worker`] resumes after a failover: a
//! primary and its replica, three sync workers (a `Connect` that asks each server's
//! `ROLE`, as one that asks Sentinel would), idle in `BZPOPMIN`. Each of `FAILOVERS`
//! rounds demotes the primary with `REPLICAOF` (the blocked workers get `UNBLOCKED`),
//! promotes the replica with `REPLICAOF NO ONE`, and, once that answered (the failover
//! completed), adds a job on the new primary: the time to its handler starting is the
//! resume time. The roles swap each round. The workers' retry pause doubles from 10 ms
//! to at most 1 s, so no worker should take much longer than a second.
//!
//! Single jobs are sent as single calls. The stream flow has none of what the queue adds
//! (leases that come back, retries, delays, priorities, deduplication, group limits); the
//! ratio is what those cost. The ways take turns round by round, so that a noisy moment
//! on the machine hits them alike; read the ratios, not the digits.

use std::time::{Duration, Instant};

use std::collections::HashMap;
use std::sync::Mutex;

use redis_patterns::Batch;
use redis_patterns::work_queue::{Connect, MAX_TAKE, Stop, WorkQueue};

#[path = "../tests/it/server.rs"]
mod server;

#[path = "support/call_cost.rs"]
mod call_cost;

const STREAM: &str = "bench:stream";
/// The jobs of a batch: as many as one take hands out.
const BATCH: usize = MAX_TAKE as usize;

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

/// Connects to whichever server is the primary now; none is a refused connection, which
/// the worker loop retries after a pause.
struct ThePrimary(Vec<redis::Client>);

impl Connect for ThePrimary {
    fn connect(&self) -> redis::RedisResult<Box<dyn redis::ConnectionLike + Send>> {
        for client in &self.0 {
            let Ok(mut con) = client.get_connection() else {
                continue;
            };
            let role: redis::RedisResult<Vec<redis::Value>> = redis::cmd("ROLE").query(&mut con);
            if matches!(role.as_deref(), Ok([redis::Value::BulkString(r), ..]) if r == b"master") {
                return Ok(Box::new(con));
            }
        }
        Err(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "no primary now").into())
    }
}

/// Waits until `check` holds, polling; panics after 30 s.
fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The clients blocked in `BZPOPMIN` on a server.
fn blocked(con: &mut redis::Connection) -> usize {
    let list: String = redis::cmd("CLIENT").arg("LIST").query(con).unwrap();
    list.lines().filter(|l| l.contains("cmd=bzpopmin")).count()
}

/// `PART=failover`: the resume time after each of `failovers` failovers.
fn failover(failovers: usize) {
    let first = server::RedisProcess::start(&[]);
    let second = server::RedisProcess::start_replica_of(&first, &[]);
    let servers = [&first, &second];
    let connect = ThePrimary(
        servers
            .iter()
            .map(|s| redis::Client::open(s.url(0)).unwrap())
            .collect(),
    );
    let queue = WorkQueue::new("bench:failover").unwrap();
    let stop = Stop::new();
    let started = Mutex::new(HashMap::<String, Instant>::new());
    let mut resumed = Vec::new();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let (connect, queue, stop, started) = (&connect, &queue, &stop, &started);
                scope.spawn(move || {
                    let worker = queue.worker().poll(Duration::from_secs(3600));
                    worker.run(connect, stop, |job| {
                        started
                            .lock()
                            .unwrap()
                            .insert(job.id.clone(), Instant::now());
                        Ok::<(), String>(())
                    })
                })
            })
            .collect();
        for round in 0..failovers {
            let (old, new) = (servers[round % 2], servers[(round + 1) % 2]);
            let (mut old_con, mut new_con) = (old.connection(), new.connection());
            wait_until("the workers idle on the primary", || {
                blocked(&mut old_con) == 3
            });
            wait_until("the replica in sync", || {
                new.info("replication").contains("master_link_status:up")
            });
            redis::cmd("REPLICAOF")
                .arg("127.0.0.1")
                .arg(new.port())
                .exec(&mut old_con)
                .unwrap();
            redis::cmd("REPLICAOF")
                .arg("NO")
                .arg("ONE")
                .exec(&mut new_con)
                .unwrap();
            let completed = Instant::now();
            let id = format!("after-{round}");
            queue.add(&id, "x").run(&mut new_con).unwrap();
            wait_until("the job to start", || {
                started.lock().unwrap().contains_key(&id)
            });
            resumed.push(started.lock().unwrap()[&id] - completed);
        }
        stop.stop();
        // The workers wait an hour for work: wake them one by one (the signal holds one
        // member) until each has seen the flag.
        let mut last = servers[failovers % 2].connection();
        while !workers.iter().all(|w| w.is_finished()) {
            if blocked(&mut last) > 0 {
                redis::cmd("ZADD")
                    .arg(queue.keys()[9])
                    .arg(0)
                    .arg("ready")
                    .exec(&mut last)
                    .unwrap();
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        for worker in workers {
            let report = worker.join().unwrap().unwrap();
            println!(
                "worker: {} acked, {} server retries, {} reconnects",
                report.acked, report.server_retries, report.reconnects
            );
        }
    });
    resumed.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{failovers} failovers: a job added once the promotion answered started after p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms",
        ms(resumed[resumed.len() / 2]),
        ms(resumed[resumed.len() * 9 / 10]),
        ms(*resumed.last().unwrap())
    );
}

/// The scheduler processes' role: run the loop on the queue at this URL until killed.
const SCHEDULER_URL: &str = "WORK_QUEUE_SCHEDULER_URL";
const SCHEDULED: &str = "bench:scheduled";

fn spawn_scheduler(url: &str) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.env(SCHEDULER_URL, url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null());
    // SAFETY: prctl is async-signal-safe and the closure allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd.spawn().expect("cannot start a scheduler process")
}

/// `PART=schedulers`: see the module docs.
fn schedulers(runs: usize) {
    use redis_patterns::work_queue::{Missed, Schedule, Settings};
    let (schedules, every) = (100u64, 100u64);
    let server = server::RedisProcess::start(&[]);
    let url = server.url(0);
    let mut con = server.connection();
    redis_patterns::load_all(&mut con).unwrap();
    let queue = WorkQueue::new(SCHEDULED).unwrap();
    // Metrics on: each job is stamped `a:` with the server's clock when it was added.
    queue
        .configure(&Settings::new().metrics_minutes(60).unwrap())
        .run(&mut con)
        .unwrap();
    let now = queue.due_schedules(1).run(&mut con).unwrap().now_ms;
    let first = (now / 1000 + 2) * 1000;
    for i in 0..schedules {
        let schedule = Schedule::every(Duration::from_millis(every))
            .missed(Missed::CatchUp(100))
            .first_run_at(first);
        queue
            .set_schedule(&format!("s{i}"), &schedule)
            .run(&mut con)
            .unwrap();
    }
    let mut children: Vec<_> = (0..8).map(|_| spawn_scheduler(&url)).collect();
    let (mut kills, mut next_kill) = (0usize, Instant::now() + Duration::from_secs(2));
    let started = Instant::now();
    loop {
        let added: usize = redis::cmd("ZCARD")
            .arg(queue.keys()[0])
            .query(&mut con)
            .unwrap();
        if added >= runs {
            break;
        }
        if Instant::now() >= next_kill {
            let at = kills % children.len();
            children[at].kill().unwrap();
            children[at].wait().unwrap();
            children[at] = spawn_scheduler(&url);
            kills += 1;
            next_kill += Duration::from_secs(2);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for child in &mut children {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let elapsed = started.elapsed();
    // From the server's keys alone.
    let ids: Vec<String> = redis::cmd("ZRANGE")
        .arg(queue.keys()[0])
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    let seq: u64 = redis::cmd("HGET")
        .arg(queue.keys()[5])
        .arg("#seq")
        .query(&mut con)
        .unwrap();
    let mut by_schedule: HashMap<String, Vec<u64>> = HashMap::new();
    for id in &ids {
        let (name, run) = id.split_once(':').unwrap();
        by_schedule
            .entry(name.to_owned())
            .or_default()
            .push(run.parse().unwrap());
    }
    let mut missed = 0u64;
    for (name, times) in &mut by_schedule {
        times.sort();
        let (lo, hi) = (times[0], *times.last().unwrap());
        missed += (hi - lo) / every + 1 - times.len() as u64;
        assert!(lo == first, "{name}: the first run {lo} is not {first}");
    }
    let twice = seq - ids.len() as u64;
    let mut late = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(1000) {
        let fields: Vec<String> = chunk.iter().map(|id| format!("a:{id}")).collect();
        let stamps: Vec<u64> = redis::cmd("HMGET")
            .arg(queue.keys()[5])
            .arg(&fields)
            .query(&mut con)
            .unwrap();
        for (id, at) in chunk.iter().zip(stamps) {
            let run: u64 = id.split_once(':').unwrap().1.parse().unwrap();
            late.push(at.saturating_sub(run));
        }
    }
    late.sort_unstable();
    println!(
        "schedulers: {schedules} schedules every {every} ms, 8 scheduler processes, {kills} SIGKILLs (one every 2 s, \
         restarted), {:.1} s: {} runs added, {twice} added twice, {missed} missed; lateness (added per server clock \
         - run time) p50 {} ms, p99 {} ms, max {} ms",
        elapsed.as_secs_f64(),
        ids.len(),
        late[late.len() / 2],
        late[late.len() * 99 / 100],
        late.last().unwrap()
    );
    assert_eq!((twice, missed), (0, 0), "runs added twice or missed");
}

fn main() {
    if let Ok(url) = std::env::var(SCHEDULER_URL) {
        let client = redis::Client::open(url).unwrap();
        let queue = WorkQueue::new(SCHEDULED).unwrap();
        let _ = queue.scheduler().run(&client, &Stop::new());
        return;
    }
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    if std::env::var("PART").as_deref() == Ok("failover") {
        failover(env("FAILOVERS", 20));
        return;
    }
    if std::env::var("PART").as_deref() == Ok("schedulers") {
        schedulers(env("RUNS", 10_000));
        return;
    }
    if std::env::var("PART").as_deref() == Ok("calls") {
        let server = server::RedisProcess::start(&[]);
        let base = std::env::var("BASE").unwrap_or_else(|_| "4c56169".into());
        let (rounds, jobs) = (env("ROUNDS", 5), env("JOBS", 3000));
        call_cost::compare(&mut server.connection(), &base, rounds, jobs);
        return;
    }
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
