use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use redis_patterns::Error;
use redis_patterns::scripts::work_queue as script;
use redis_patterns::work_queue::{
    Added, Backoff, Job, JobOptions, LEASE_LOST, Limits, MAX_CONCURRENCY, MAX_TAKE, Nacked,
    Removed, Settings, State, Stop, WorkQueue,
};

use crate::harness::{self, InMode, Rng, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// What a taken job reads as in a transcript: its id, delivery and group (its token and
/// deadline change from run to run).
fn shown(jobs: &[Job]) -> Vec<String> {
    jobs.iter()
        .map(|job| {
            let shown = match &job.group {
                Some(group) => format!("{} #{} [{group}]", job.id, job.delivery),
                None => format!("{} #{}", job.id, job.delivery),
            };
            match &job.trace_context {
                Some(context) => format!("{shown} traced {context}"),
                None => shown,
            }
        })
        .collect()
}

/// Takes and records what was taken.
fn take(
    t: &mut Transcript,
    con: &mut dyn redis::ConnectionLike,
    queue: &WorkQueue,
    limit: u64,
) -> Vec<Job> {
    let jobs = queue.take(limit).run(con);
    let call = format!("queue.take({limit})");
    t.step(
        &call,
        jobs.as_ref().map(|jobs| shown(jobs)).map_err(Clone::clone),
    )
    .unwrap();
    jobs.unwrap()
}

fn nacked(result: redis_patterns::Result<Nacked>) -> redis_patterns::Result<&'static str> {
    result.map(|nacked| match nacked {
        Nacked::Retry {
            state: State::Waiting,
            ..
        } => "retry at once (waiting)",
        Nacked::Retry { .. } => "retry after the backoff (delayed)",
        Nacked::Dead { .. } => "dead",
    })
}

/// A queue's life: dedup, priorities, a delay, leases that lapse, retries with a backoff,
/// the dead-letter queue, group limits, and the operator's reads. Its times (a lease of
/// 1 s, a backoff of 250 ms, a delay of 500 ms, a rate window of 1.5 s) leave a busy
/// machine a second or so between the steps that must fall within one of them.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let queue = WorkQueue::new("work_queue:mail")
        .unwrap()
        .with_lease(Duration::from_millis(1000))
        .unwrap()
        .with_max_deliveries(2)
        .unwrap()
        .with_backoff(Backoff::Fixed(Duration::from_millis(250)));
    t.step("queue.keys()", Ok::<_, Error>(queue.keys()))
        .unwrap();
    let _ = step!(t, con, queue.add("a", "first"));
    let _ = step!(t, con, queue.add("a", "again"));
    // A producer's W3C context (traceparent and tracestate), handed to its worker.
    let traced = JobOptions::new()
        .priority(9)
        .trace_context("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 vendor=opaque");
    let _ = step!(t, con, queue.add_with("b", "urgent", traced.clone()));
    let later = JobOptions::new().delay(Duration::from_millis(500));
    let _ = step!(t, con, queue.add_with("c", "later", later.clone()));
    let _ = step!(t, con, queue.add("c", "again"));
    let _ = step!(t, con, queue.counts());
    let jobs = take(&mut t, con, &queue, 10);
    let (b, a) = (&jobs[0], &jobs[1]);
    let _ = step!(t, con, queue.add("a", "while it runs"));
    let _ = step!(t, con, queue.ack(b).map(|_| Ok("acked")));
    let _ = step!(t, con, queue.ack(b).map(|_| Ok("acked")));
    let _ = step!(t, con, queue.extend(a).map(|_| Ok("extended")));
    let _ = step!(
        t,
        con,
        queue
            .job("a")
            .map(|i| Ok(i.map(|i| (i.state, i.deliveries))))
    );
    t.step(
        "queue.nack(a, \"smtp timeout\")",
        nacked(queue.nack(a, "smtp timeout").in_mode().run(con)),
    )
    .unwrap();
    take(&mut t, con, &queue, 10);
    harness::wait_server(con, Duration::from_millis(500));
    t.note("wait 500 ms: c is due, a's backoff has passed");
    let jobs = take(&mut t, con, &queue, 10);
    let (a, c) = (&jobs[0], &jobs[1]);
    let _ = step!(t, con, queue.ack(c).map(|_| Ok("acked")));
    harness::wait_server(con, Duration::from_millis(1000));
    t.note("a's worker died: its lease ran out on its last delivery");
    take(&mut t, con, &queue, 10);
    let _ = step!(t, con, queue.ack(a).map(|_| Ok("acked")));
    let _ = step!(t, con, queue.counts());
    let dead = queue
        .list(State::Dead, 0, 10)
        .in_mode()
        .run(con)
        .map(|page| {
            page.into_iter()
                .map(|i| {
                    (
                        i.id,
                        i.deliveries,
                        String::from_utf8(i.last_error.unwrap()).unwrap(),
                    )
                })
                .collect::<Vec<_>>()
        });
    t.step(
        "queue.list(State::Dead, 0, 10) → (id, deliveries, last error)",
        dead,
    )
    .unwrap();
    let _ = step!(t, con, queue.requeue("a"));
    let _ = step!(t, con, queue.requeue("a"));
    let jobs = take(&mut t, con, &queue, 10);
    let retry = queue
        .nack_after(&jobs[0], Duration::ZERO, "bad address")
        .in_mode()
        .run(con);
    t.step("queue.nack_after(a, 0 ms, \"bad address\")", nacked(retry))
        .unwrap();
    let jobs = take(&mut t, con, &queue, 10);
    t.step(
        "queue.nack(a, \"bad address\")",
        nacked(queue.nack(&jobs[0], "bad address").in_mode().run(con)),
    )
    .unwrap();
    let _ = step!(t, con, queue.remove("a"));
    let _ = step!(t, con, queue.remove("a"));
    let _ = step!(t, con, queue.counts());

    t.note("groups: at most 2 running per tenant, at most 3 started per 1.5 s");
    let limits = Limits::new().concurrency(2).unwrap();
    let limits = limits.rate(3, Duration::from_millis(1500)).unwrap();
    let _ = step!(
        t,
        con,
        queue.configure(
            &Settings::new()
                .group_limits(limits)
                .metrics_minutes(60)
                .unwrap()
        )
    );
    for id in ["t1-1", "t1-2", "t1-3", "t1-4"] {
        queue
            .add_with(id, "report", JobOptions::new().group("t1"))
            .in_mode()
            .run(con)
            .unwrap();
    }
    t.note("added t1-1 to t1-4 in group t1");
    let _ = step!(
        t,
        con,
        queue.add_with("t2-1", "report", JobOptions::new().group("t2"))
    );
    let _ = step!(t, con, queue.add("free", "report"));
    let first = take(&mut t, con, &queue, 10);
    let _ = step!(t, con, queue.counts());
    let parked = queue.list(State::Parked, 0, 10).in_mode().run(con);
    t.step(
        "queue.list(State::Parked, 0, 10) → ids",
        parked.map(|page| page.into_iter().map(|i| i.id).collect::<Vec<_>>()),
    )
    .unwrap();
    let _ = step!(t, con, queue.remove("t1-4"));
    let _ = step!(t, con, queue.remove("t1-2"));
    let _ = step!(
        t,
        con,
        queue
            .ack(&first[0])
            .map(|_| Ok("acked t1-1: t1-3 unparked"))
    );
    let third = take(&mut t, con, &queue, 10);
    let _ = step!(t, con, queue.ack(&third[0]).map(|_| Ok("acked t1-3")));
    let _ = step!(
        t,
        con,
        queue.add_with("t1-5", "report", JobOptions::new().group("t1"))
    );
    t.note("t1 started 3 jobs in this window: t1-5 waits for it to pass");
    take(&mut t, con, &queue, 10);
    let _ = step!(t, con, queue.job("t1-5").map(|i| Ok(i.map(|i| i.state))));
    harness::wait_server(con, Duration::from_millis(1500));
    t.note("wait 1.5 s: the window has passed, and the first batch's leases ran out");
    let last = take(&mut t, con, &queue, 10);
    for job in &last {
        queue.ack(job).in_mode().run(con).unwrap();
    }
    t.note("acked all four");
    let _ = step!(t, con, queue.counts());

    t.note("pause: adds are accepted, nothing is handed out");
    let _ = step!(t, con, queue.pause());
    let _ = step!(t, con, queue.pause());
    let _ = step!(t, con, queue.is_paused());
    let _ = step!(t, con, queue.add("p1", "while paused"));
    take(&mut t, con, &queue, 10);
    let _ = step!(t, con, queue.counts());
    let _ = step!(t, con, queue.resume());
    let _ = step!(t, con, queue.resume());
    let _ = step!(t, con, queue.is_paused());
    let resumed = take(&mut t, con, &queue, 10);
    let _ = step!(t, con, queue.ack(&resumed[0]).map(|_| Ok("acked p1")));
    let left: redis::RedisResult<Vec<String>> = redis::cmd("HKEYS").arg(queue.keys()[5]).query(con);
    let left = left.map(|fields| {
        let mut fields: Vec<String> = fields
            .into_iter()
            .filter(|f| !f.starts_with("#m:"))
            .collect();
        fields.sort();
        fields
    });
    t.step(
        "HKEYS {work_queue:mail}:jobs (no job leaves a field behind; the per-minute slot, named by the clock, left out)",
        left.map_err(Error::Redis),
    )
    .unwrap();

    t.note("operators: the queue's settings and metrics, per-job and bulk changes");
    let _ = step!(t, con, queue.settings());
    let summary = |m: redis_patterns::work_queue::Metrics| {
        let done: u64 = m.minutes.iter().map(|r| r.completed).sum();
        let failed: u64 = m.minutes.iter().map(|r| r.failed_deliveries).sum();
        Ok(format!(
            "{:?}; in all {} completed, {} failed, {} dead; last {} minutes: {done} completed, {failed} failed",
            m.counts,
            m.completed,
            m.failed_deliveries,
            m.dead,
            m.minutes.len()
        ))
    };
    let _ = step!(t, con, queue.metrics(60).map(summary));
    for id in ["x1", "x2", "x3"] {
        queue.add(id, id).in_mode().run(con).unwrap();
    }
    t.note("added x1, x2, x3");
    let _ = step!(t, con, queue.set_priority("x3", 9));
    let _ = step!(t, con, queue.set_priority("none", 9));
    let first = take(&mut t, con, &queue, 1);
    let _ = step!(
        t,
        con,
        queue
            .fail(&first[0], "malformed address")
            .map(|nacked| Ok(matches!(nacked, Nacked::Dead { .. })))
    );
    let _ = step!(t, con, queue.set_delay("x1", Duration::from_secs(3600)));
    let _ = step!(t, con, queue.set_delay("x3", Duration::from_secs(3600)));
    let _ = step!(t, con, queue.promote("x1"));
    let _ = step!(t, con, queue.retry_dead(10));
    let _ = step!(t, con, queue.clean(State::Waiting, 2));
    let _ = step!(t, con, queue.clean(State::Waiting, 2));
    let _ = step!(t, con, queue.counts());
    let _ = step!(t, con, queue.metrics(60).map(summary));
    queue
        .add_with("g1", "call", JobOptions::new().group("t9"))
        .in_mode()
        .run(con)
        .unwrap();
    t.note("added g1 in group t9");
    let held = take(&mut t, con, &queue, 10);
    let _ = step!(
        t,
        con,
        queue
            .rate_limit_group(&held[0], Duration::from_secs(3600))
            .map(|_| Ok("t9 held back for an hour"))
    );
    let _ = step!(
        t,
        con,
        queue
            .job("g1")
            .map(|j| Ok(j.map(|j| (j.state, j.deliveries))))
    );
    queue.add("r1", "run").in_mode().run(con).unwrap();
    t.note("added r1");
    take(&mut t, con, &queue, 10);
    events_results_and_progress(&mut t, con, &queue);
    let _ = step!(t, con, queue.delete(10, false));
    let _ = step!(t, con, queue.pause());
    let _ = step!(t, con, queue.delete(10, false));
    let _ = step!(t, con, queue.delete(1, true));
    let _ = step!(t, con, queue.delete(10, true));
    let _ = step!(t, con, queue.delete(10, true));
    let exists: redis::RedisResult<u64> = redis::cmd("EXISTS").arg(&queue.keys()).query(con);
    t.step("EXISTS <the thirteen keys>", exists.map_err(Error::Redis))
        .unwrap();
    t
}

/// Events on with a cap of 3, results up to 8 bytes: a job reports progress, fails its
/// first delivery, reports again on its second and is acked with a result; a reader from
/// the start learns that the cap trimmed an event.
fn events_results_and_progress(
    t: &mut Transcript,
    con: &mut dyn redis::ConnectionLike,
    queue: &WorkQueue,
) {
    let settings = Settings::new()
        .events(3)
        .unwrap()
        .results(Duration::from_secs(3600), 8)
        .unwrap();
    let _ = step!(t, con, queue.configure(&settings));
    queue.add("p1", "print").in_mode().run(con).unwrap();
    t.note("added p1");
    let first = take(t, con, queue, 1);
    let _ = step!(
        t,
        con,
        queue.progress(&first[0], "50%").map(|id| Ok(id.is_some()))
    );
    let _ = step!(
        t,
        con,
        queue
            .nack_after(&first[0], Duration::ZERO, "flaky")
            .map(|nacked| Ok(matches!(nacked, Nacked::Retry { .. })))
    );
    let second = take(t, con, queue, 1);
    let p1 = &second[0];
    let _ = step!(
        t,
        con,
        queue.progress(p1, "100%").map(|id| Ok(id.is_some()))
    );
    let _ = step!(
        t,
        con,
        queue.job("p1").map(|j| Ok(j.and_then(|j| j.progress)))
    );
    let _ = step!(t, con, queue.ack_with(p1, "nine byte"));
    let _ = step!(t, con, queue.ack_with(p1, "pdf").map(|_| Ok("acked")));
    let _ = step!(t, con, queue.result("p1"));
    let _ = step!(t, con, queue.result("nobody"));
    let _ = step!(
        t,
        con,
        queue.events_after("0-0", 10).map(|page| {
            let events: Vec<_> = page
                .events
                .into_iter()
                .map(|e| {
                    (
                        e.kind,
                        e.job,
                        String::from_utf8_lossy(&e.detail).into_owned(),
                    )
                })
                .collect();
            Ok((page.lost, events))
        })
    );
    let end = queue.wait_for_job(con, "p1", Duration::from_secs(5));
    t.step("wait_for_job(p1)", end).unwrap();
    let end = queue.wait_for_job(con, "nobody", Duration::from_secs(5));
    t.step("wait_for_job(nobody)", end).unwrap();
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let recorder = crate::recorder::Recorder::new("work_queue").within_one_minute(&mut con);
    assert_snapshot(
        "work_queue__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "work_queue__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// The ten keys are derived once from the name, in its cluster hash slot.
#[test]
fn keys_share_the_names_slot() {
    let queue = WorkQueue::new("{app}:jobs").unwrap();
    assert_eq!(queue.name(), "{app}:jobs");
    assert_eq!(
        queue.keys(),
        [
            "{app}:jobs:waiting",
            "{app}:jobs:delayed",
            "{app}:jobs:leased",
            "{app}:jobs:dead",
            "{app}:jobs:parked",
            "{app}:jobs:jobs",
            "{app}:jobs:groups",
            "{app}:jobs:wake",
            "{app}:jobs:idle",
            "{app}:jobs:signal",
            "{app}:jobs:events",
            "{app}:jobs:results",
            "{app}:jobs:kept",
            "{app}:jobs:turns",
            "{app}:jobs:completed",
            "{app}:jobs:blocked",
        ]
    );
    assert_eq!(WorkQueue::new("mail").unwrap().keys()[0], "{mail}:waiting");
}

/// How a delivery ended, as its worker saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Acked at this time (server clock).
    Acked(u64),
    /// Nacked: handed back at `ended`, available again from `available`; dead or not.
    Nacked {
        ended: u64,
        available: u64,
        dead: bool,
    },
    /// The worker died (or was too slow): the lease ran out at its last deadline.
    Lapsed,
}

#[derive(Debug, Clone)]
struct Delivery {
    job: Job,
    start: u64,
    deadline: u64,
    outcome: Outcome,
}

impl Delivery {
    /// When the job stopped counting against its group (the lease's deadline when the
    /// worker died: the slot is freed no earlier than that).
    fn end(&self) -> u64 {
        match self.outcome {
            Outcome::Acked(at) => at,
            Outcome::Nacked { ended, .. } => ended,
            Outcome::Lapsed => self.deadline,
        }
    }
}

const LEASE: Duration = Duration::from_millis(300);
const BACKOFF: Duration = Duration::from_millis(20);
const MAX_DELIVERIES: u32 = 3;
const CONCURRENCY: usize = 2;
const RATE: usize = 20;
const PERIOD_MS: u64 = 200;

/// One worker: takes up to 3 jobs at a time; for each, dies (6 %), or works 0–3 ms
/// (renewing the lease now and then) and then fails (30 %) or succeeds.
fn consume(
    con: &mut dyn redis::ConnectionLike,
    queue: &WorkQueue,
    seed: u64,
    produced: &AtomicBool,
    done: &AtomicBool,
) -> Vec<Delivery> {
    let mut rng = Rng::new(seed);
    let mut seen = Vec::new();
    let give_up = std::time::Instant::now() + Duration::from_secs(60);
    while !done.load(Ordering::SeqCst) {
        let jobs = queue.take(1 + rng.below(3)).run(con).unwrap();
        if jobs.is_empty() {
            let c = queue.counts().run(con).unwrap();
            if produced.load(Ordering::SeqCst) && c.waiting + c.parked + c.delayed + c.leased == 0 {
                done.store(true, Ordering::SeqCst);
            }
            assert!(std::time::Instant::now() < give_up, "jobs are stuck: {c:?}");
            thread::sleep(Duration::from_millis(2));
            continue;
        }
        for job in jobs {
            let mut deadline = job.deadline_ms;
            let start = deadline - LEASE.as_millis() as u64;
            let roll = rng.below(100);
            let outcome = if roll < 6 {
                Outcome::Lapsed
            } else {
                if roll < 25 {
                    deadline = queue.extend(&job).run(con).unwrap();
                }
                thread::sleep(Duration::from_micros(rng.below(3000)));
                let ended = if roll < 36 {
                    queue
                        .nack(&job, "handler failed")
                        .run(con)
                        .map(|nacked| match nacked {
                            Nacked::Retry {
                                state: State::Waiting,
                                at_ms,
                            } => Outcome::Nacked {
                                ended: at_ms,
                                available: at_ms,
                                dead: false,
                            },
                            Nacked::Retry { at_ms, .. } => Outcome::Nacked {
                                ended: at_ms - BACKOFF.as_millis() as u64,
                                available: at_ms,
                                dead: false,
                            },
                            Nacked::Dead { at_ms } => Outcome::Nacked {
                                ended: at_ms,
                                available: u64::MAX,
                                dead: true,
                            },
                        })
                } else {
                    queue.ack(&job).run(con).map(Outcome::Acked)
                };
                match ended {
                    Ok(outcome) => outcome,
                    // Slower than the lease (a loaded machine): the job was handed on.
                    Err(err) if err.code() == Some(LEASE_LOST) => Outcome::Lapsed,
                    Err(err) => panic!("{err}"),
                }
            };
            seen.push(Delivery {
                job,
                start,
                deadline,
                outcome,
            });
        }
    }
    seen
}

/// 8 producers add 40 jobs each (three groups and no group, some delayed, priorities
/// 0–2) while 8 workers take, die, fail and succeed at random. Then, from the server's
/// clock: each job was acked exactly once or sits in the dead-letter queue after 3
/// deliveries; none is lost; its deliveries never overlap; a delayed job never started
/// early; no group ever ran more than 2 jobs at once, or started more than 20 in any
/// 200 ms.
fn invariants<C: redis::ConnectionLike + Send>(connect: impl Fn() -> C + Sync, name: &str) {
    let queue = WorkQueue::new(name)
        .unwrap()
        .with_lease(LEASE)
        .unwrap()
        .with_max_deliveries(MAX_DELIVERIES)
        .unwrap()
        .with_backoff(Backoff::Fixed(BACKOFF));
    limit_groups(
        &mut connect(),
        &queue,
        Limits::new()
            .concurrency(CONCURRENCY as u64)
            .unwrap()
            .rate(RATE as u64, Duration::from_millis(PERIOD_MS))
            .unwrap(),
    );
    let produced = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let (added, deliveries) = thread::scope(|scope| {
        let workers: Vec<_> = (0..8)
            .map(|w| {
                let (queue, produced, done, connect) = (&queue, &produced, &done, &connect);
                scope.spawn(move || consume(&mut connect(), queue, w + 100, produced, done))
            })
            .collect();
        let producers: Vec<_> = (0..8u64)
            .map(|p| {
                let (queue, connect) = (&queue, &connect);
                scope.spawn(move || {
                    let mut con = connect();
                    let mut rng = Rng::new(p + 1);
                    (0..40)
                        .map(|i| {
                            let id = format!("p{p}-{i}");
                            let mut options = JobOptions::new().priority(rng.below(3) as u8);
                            if i % 4 != 3 {
                                options = options.group(format!("g{}", i % 4));
                            }
                            let delay = if i % 5 == 0 { 30 + rng.below(100) } else { 0 };
                            options = options.delay(Duration::from_millis(delay));
                            let before = harness::server_ms(&mut con);
                            let added = queue
                                .add_with(&id, id.as_bytes(), options)
                                .run(&mut con)
                                .unwrap();
                            assert!(added.is_new(), "{id}: {added:?}");
                            (id, before + delay)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let added: BTreeMap<String, u64> = producers
            .into_iter()
            .flat_map(|p| p.join().unwrap())
            .collect();
        produced.store(true, Ordering::SeqCst);
        let deliveries: Vec<Delivery> = workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        (added, deliveries)
    });
    assert_eq!(added.len(), 320);

    let mut by_job: HashMap<&str, Vec<&Delivery>> = HashMap::new();
    for d in &deliveries {
        by_job.entry(d.job.id.as_str()).or_default().push(d);
    }
    let mut con = connect();
    let mut dead: BTreeMap<String, u32> = BTreeMap::new();
    loop {
        let page = queue
            .list(State::Dead, dead.len() as u64, 100)
            .run(&mut con)
            .unwrap();
        if page.is_empty() {
            break;
        }
        dead.extend(page.into_iter().map(|info| (info.id, info.deliveries)));
    }
    let counts = queue.counts().run(&mut con).unwrap();
    assert_eq!(
        (counts.waiting, counts.parked, counts.delayed, counts.leased),
        (0, 0, 0, 0)
    );
    assert_eq!(counts.dead as usize, dead.len());
    for (id, earliest) in &added {
        let mut seen = by_job
            .remove(id.as_str())
            .unwrap_or_else(|| panic!("{id} was never delivered"));
        seen.sort_by_key(|d| d.job.delivery);
        let numbers: Vec<u32> = seen.iter().map(|d| d.job.delivery).collect();
        assert_eq!(
            numbers,
            (1..=seen.len() as u32).collect::<Vec<_>>(),
            "{id}'s deliveries"
        );
        assert!(
            seen[0].start >= *earliest,
            "{id} started before its delay: {seen:?}"
        );
        for pair in seen.windows(2) {
            let bound = match pair[0].outcome {
                Outcome::Acked(_) => panic!("{id} delivered again after its ack: {seen:?}"),
                Outcome::Nacked { available, .. } => available,
                Outcome::Lapsed => pair[0].deadline,
            };
            assert!(
                pair[1].start >= bound,
                "{id} was held twice at once: {seen:?}"
            );
        }
        let last = seen.last().unwrap();
        match last.outcome {
            Outcome::Acked(_) => assert!(!dead.contains_key(id), "{id} acked and dead"),
            _ => {
                assert_eq!(
                    dead.get(id),
                    Some(&MAX_DELIVERIES),
                    "{id} is neither acked nor dead: {seen:?}"
                );
                assert_eq!(last.job.delivery, MAX_DELIVERIES);
            }
        }
        if let Outcome::Nacked { dead: true, .. } = last.outcome {
            assert_eq!(last.job.delivery, MAX_DELIVERIES);
        }
    }
    assert!(by_job.is_empty(), "jobs nobody added: {:?}", by_job.keys());

    // Group limits, swept over each group's deliveries in server time.
    let mut groups: HashMap<&str, Vec<&Delivery>> = HashMap::new();
    for d in &deliveries {
        if let Some(group) = &d.job.group {
            groups.entry(group.as_str()).or_default().push(d);
        }
    }
    assert_eq!(groups.len(), 3);
    for (group, runs) in groups {
        // (time, +1 start / -1 end): ends sort first at one instant, as a slot freed at t
        // may be taken at t.
        let mut events: Vec<(u64, i32)> = runs
            .iter()
            .flat_map(|d| [(d.start, 1), (d.end(), -1)])
            .collect();
        events.sort();
        let mut running = 0;
        for (at, change) in events {
            running += change;
            assert!(
                running <= CONCURRENCY as i32,
                "{group} ran {running} jobs at {at}"
            );
        }
        let mut starts: Vec<u64> = runs.iter().map(|d| d.start).collect();
        starts.sort_unstable();
        for window in starts.windows(RATE + 1) {
            assert!(
                window[RATE] - window[0] >= PERIOD_MS,
                "{group} started {} jobs within {} ms",
                RATE + 1,
                window[RATE] - window[0]
            );
        }
    }
    let retried = deliveries
        .iter()
        .filter(|d| matches!(d.outcome, Outcome::Nacked { dead: false, .. }))
        .count();
    let lapsed = deliveries
        .iter()
        .filter(|d| d.outcome == Outcome::Lapsed)
        .count();
    assert!(
        retried > 0 && lapsed > 0 && !dead.is_empty(),
        "retried {retried}, lapsed {lapsed}, dead {}",
        dead.len()
    );
    redis::cmd("DEL").arg(&queue.keys()).exec(&mut con).unwrap();
}

#[test]
fn invariants_standalone() {
    let db = harness::fresh_db();
    invariants(|| db.con(), "work_queue:invariants");
}

#[test]
fn invariants_cluster() {
    invariants(harness::cluster_con, "work_queue:invariants");
}

/// Eight producers add the same 100 ids at once: each id is added exactly once, and every
/// other add answers where that job is.
#[test]
fn an_id_is_added_once_under_contention() {
    let db = harness::fresh_db();
    let queue = WorkQueue::new("dedup").unwrap();
    let new: Vec<String> = thread::scope(|scope| {
        let producers: Vec<_> = (0..8)
            .map(|p| {
                let (db, queue) = (&db, &queue);
                scope.spawn(move || {
                    let mut con = db.con();
                    (0..100)
                        .map(|i| format!("job-{}", (i * 7 + p * 13) % 100))
                        .filter(|id| match queue.add(id, "x").run(&mut con).unwrap() {
                            Added::New(state) => state == State::Waiting,
                            Added::Duplicate(state) => {
                                assert_eq!(state, State::Waiting);
                                false
                            }
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        producers
            .into_iter()
            .flat_map(|p| p.join().unwrap())
            .collect()
    });
    let mut sorted = new.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!((new.len(), sorted.len()), (100, 100));
    assert_eq!(queue.counts().run(&mut db.con()).unwrap().waiting, 100);
}

/// A worker queue for the loop tests: a 300 ms lease, two deliveries, a 10 ms backoff;
/// "slow" takes 800 ms (its lease must be renewed twice), "fail" always fails, "ok-*" work.
/// The loop tests' lease: renewed every 500 ms, so a renewal thread kept from running for
/// up to a second on a loaded machine still renews in time.
const LOOP_LEASE: Duration = Duration::from_millis(1500);

/// How long the "slow" job runs: past its first lease, which only renewals let it outlive.
const SLOW: Duration = Duration::from_millis(1600);

fn loop_queue(con: &mut dyn redis::ConnectionLike, name: &str) -> WorkQueue {
    let queue = WorkQueue::new(name)
        .unwrap()
        .with_lease(LOOP_LEASE)
        .unwrap()
        .with_max_deliveries(2)
        .unwrap()
        .with_backoff(Backoff::Fixed(Duration::from_millis(10)));
    for id in ["slow", "fail", "ok-1", "ok-2", "ok-3", "ok-4", "ok-5"] {
        queue.add(id, id).run(con).unwrap();
    }
    queue
}

fn handle(job: &Job, seen: &Mutex<Vec<(String, u32)>>) -> Result<(), String> {
    seen.lock().unwrap().push((job.id.clone(), job.delivery));
    match job.id.as_str() {
        "slow" => thread::sleep(SLOW),
        "fail" => return Err("boom".into()),
        _ => {}
    }
    Ok(())
}

/// What both loop tests check: "slow" ran once (its lease was renewed while it ran, so
/// the other worker never got it), "fail" ran twice and is dead with its error, the rest
/// were acked, and nothing is left but the dead letter.
fn assert_loop_outcome(
    con: &mut dyn redis::ConnectionLike,
    queue: &WorkQueue,
    reports: [redis_patterns::work_queue::WorkReport; 2],
    seen: &Mutex<Vec<(String, u32)>>,
) {
    let total = reports.iter().fold((0, 0, 0, 0), |t, r| {
        (t.0 + r.acked, t.1 + r.retried, t.2 + r.dead, t.3 + r.lost)
    });
    assert_eq!(
        total,
        (6, 1, 1, 0),
        "acked, retried, dead, lost: {reports:?}"
    );
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    assert_eq!(
        seen.iter().filter(|(id, _)| id == "slow").count(),
        1,
        "{seen:?}"
    );
    assert_eq!(
        seen.iter()
            .filter(|(id, _)| id == "fail")
            .map(|(_, n)| *n)
            .collect::<Vec<_>>(),
        [1, 2]
    );
    let dead = queue.job("fail").run(con).unwrap().unwrap();
    assert_eq!(
        (dead.state, dead.last_error.as_deref()),
        (State::Dead, Some(&b"boom"[..]))
    );
    let counts = queue.counts().run(con).unwrap();
    assert_eq!(
        (counts.waiting, counts.delayed, counts.leased, counts.dead),
        (0, 0, 0, 1)
    );
}

/// Raises `stop` once only dead letters are left.
fn stop_when_drained(con: &mut dyn redis::ConnectionLike, queue: &WorkQueue, stop: &Stop) {
    let give_up = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let c = queue.counts().run(con).unwrap();
        if c.waiting + c.parked + c.delayed + c.leased == 0 {
            stop.stop();
            return;
        }
        assert!(
            std::time::Instant::now() < give_up,
            "the workers did not drain the queue: {c:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// Two sync workers drain the queue; the loop renews a long job's lease and stops when
/// asked.
#[test]
fn worker_loop_renews_acks_nacks_and_stops() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = loop_queue(&mut con, "loop");
    let stop = Stop::new();
    let seen = Mutex::new(Vec::new());
    let reports = thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (db, queue, stop, seen) = (&db, &queue, &stop, &seen);
                scope.spawn(move || {
                    queue
                        .worker()
                        .poll(Duration::from_millis(10))
                        .run(&db.client, stop, |job| handle(job, seen))
                        .unwrap()
                })
            })
            .collect();
        stop_when_drained(&mut db.con(), &queue, &stop);
        let reports: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        [reports[0], reports[1]]
    });
    assert_loop_outcome(&mut con, &queue, reports, &seen);
}

/// The same with the async loop, two workers on clones of one multiplexed connection
/// (its default 500 ms response timeout is no obstacle: no call blocks).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_worker_loop_renews_acks_nacks_and_stops() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = loop_queue(&mut con, "loop");
    let stop = Stop::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let multiplexed = db.multiplexed().await;
    let worker = |mut con: redis::aio::MultiplexedConnection| {
        let (queue, stop, seen) = (queue.clone(), stop.clone(), seen.clone());
        tokio::spawn(async move {
            let work = |job: Job| {
                let seen = seen.clone();
                async move {
                    seen.lock().unwrap().push((job.id.clone(), job.delivery));
                    match job.id.as_str() {
                        "slow" => tokio::time::sleep(SLOW).await,
                        "fail" => return Err("boom"),
                        _ => {}
                    }
                    Ok(())
                }
            };
            queue
                .worker()
                .poll(Duration::from_millis(10))
                .run_async(&mut con, &stop, work)
                .await
                .unwrap()
        })
    };
    let (a, b) = (worker(multiplexed.clone()), worker(multiplexed));
    let (queue2, stop2) = (queue.clone(), stop.clone());
    let db_con = db.con();
    tokio::task::spawn_blocking(move || stop_when_drained(&mut { db_con }, &queue2, &stop2))
        .await
        .unwrap();
    let reports = [a.await.unwrap(), b.await.unwrap()];
    assert_loop_outcome(&mut con, &queue, reports, &seen);
}

/// Bad settings and arguments are refused before any I/O; a caller that lost its lease
/// is refused by the script; neither changes anything.
#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("bad").unwrap();
    queue.add("a", "x").run(&mut con).unwrap();
    queue
        .add_with("d", "x", JobOptions::new().delay(Duration::from_secs(60)))
        .run(&mut con)
        .unwrap();
    let job = queue.take(1).run(&mut con).unwrap().pop().unwrap();
    let before = harness::dump(&mut con);

    for bad in ["", "a}b"] {
        assert_invalid(WorkQueue::new(bad), "name");
    }
    assert_invalid(
        WorkQueue::new("q").unwrap().with_lease(Duration::ZERO),
        "lease",
    );
    assert_invalid(
        WorkQueue::new("q")
            .unwrap()
            .with_lease(Duration::from_millis(1_000_000_000_000_000)),
        "lease",
    );
    assert_invalid(
        WorkQueue::new("q").unwrap().with_max_deliveries(0),
        "max_deliveries",
    );
    assert_invalid(
        WorkQueue::new("q").unwrap().with_max_deliveries(1001),
        "max_deliveries",
    );
    assert_invalid(Limits::new().concurrency(0), "concurrency");
    assert_invalid(Limits::new().concurrency(1_000_001), "concurrency");
    assert_invalid(Limits::new().rate(0, Duration::from_secs(1)), "rate");
    assert_invalid(Limits::new().rate(1001, Duration::from_secs(1)), "rate");
    assert_invalid(Limits::new().rate(1, Duration::ZERO), "period");
    assert_invalid(
        Settings::new().dead_letters(0, Duration::from_secs(1)),
        "dead_max",
    );
    assert_invalid(Settings::new().metrics_minutes(10_081), "metrics_minutes");
    assert_invalid(queue.clean(State::Leased, 10).run(&mut con), "state");
    assert_invalid(queue.add("", "x").run(&mut con), "id");
    assert_invalid(
        queue.add("e", vec!["two", "values"]).run(&mut con),
        "payload",
    );
    assert_invalid(
        queue
            .add_with("e", "x", JobOptions::new().group(""))
            .run(&mut con),
        "group",
    );
    let far = Duration::from_millis(1_000_000_000_001);
    assert_invalid(
        queue
            .add_with("e", "x", JobOptions::new().delay(far))
            .run(&mut con),
        "delay",
    );
    for limit in [0, 26] {
        assert_invalid(queue.take(limit).run(&mut con), "limit");
    }
    assert_invalid(queue.list(State::Waiting, 0, 0).run(&mut con), "count");
    assert_invalid(queue.list(State::Waiting, 0, 101).run(&mut con), "count");
    assert_invalid(
        queue.list(State::Waiting, 1_000_000_001, 1).run(&mut con),
        "offset",
    );
    assert_code(
        queue.ack_and_take([&job, &job], 1).run(&mut con),
        LEASE_LOST,
    );
    assert_invalid(queue.ack_and_take(vec![&job; 26], 1).run(&mut con), "done");
    for op in [queue.requeue(""), queue.remove("").map(|_| Ok(true))] {
        assert_invalid(op.run(&mut con), "id");
    }
    assert_invalid(queue.job("").run(&mut con), "id");
    let stale = Job {
        token: format!("{}0", job.token),
        ..job.clone()
    };
    let nobody = Job {
        id: "nobody".into(),
        ..job.clone()
    };
    for held in [&stale, &nobody] {
        assert_code(queue.ack(held).run(&mut con), LEASE_LOST);
        assert_code(queue.extend(held).run(&mut con), LEASE_LOST);
        assert_code(queue.nack(held, "x").run(&mut con), LEASE_LOST);
        assert_code(queue.ack_and_take([held], 1).run(&mut con), LEASE_LOST);
    }
    assert_eq!(queue.remove("a").run(&mut con).unwrap(), Removed::Running);
    assert_eq!(harness::dump(&mut con), before);

    // Raw calls as another language makes them: the declared codes, nothing written.
    let random = "0123456789abcdef0123456789ABCDEF";
    // take.lua's settings, then the random part of the tokens and the jobs to ack first.
    let token = job.token.as_str();
    let takes: [(&[&str], &str); 8] = [
        (&[&random[1..]], "BAD_TOKEN"),
        (&["g123456789abcdef0123456789abcdef"], "BAD_TOKEN"),
        (&[random, "a", "999", ""], "LEASE_LOST"),
        (&[random, "nobody", "999", ""], "LEASE_LOST"),
        (&[random, "a", token, "", "a", token, ""], "LEASE_LOST"),
        (&[random, "a", token], "BAD_DONE"),
        (&[random, "a"], "BAD_DONE"),
        (&[random, "", token, ""], "BAD_DONE"),
    ];
    for (rest, code) in takes {
        let mut args = vec!["1000", "1", "1"];
        args.extend_from_slice(rest);
        let keys = keys_of(&queue, &script::TAKE);
        assert_code(harness::eval(&mut con, &script::TAKE, &keys, &args), code);
    }
    // A trace context one byte past the header's bound.
    let long_trace: &'static str = Box::leak("0".repeat(1025).into_boxed_str());
    let add = |changed: &[(usize, &'static str)]| {
        let mut args = [
            "e", "x", "0", "0", "", "0", "worker", "0", "0", "0", "0", "0", "",
        ];
        for (at, value) in changed {
            args[*at] = value;
        }
        args
    };
    let adds = [
        (add(&[(2, "256")]), "BAD_PRIORITY"),
        (add(&[(3, "-1")]), "BAD_DELAY"),
        (add(&[(5, "1001")]), "BAD_ATTEMPTS"),
        (add(&[(5, "-1")]), "BAD_ATTEMPTS"),
        (add(&[(6, "linear")]), "BAD_BACKOFF"),
        (add(&[(6, "")]), "BAD_BACKOFF"),
        (
            add(&[(6, "fixed"), (7, "1000000000001")]),
            "BAD_BACKOFF_DELAY",
        ),
        (add(&[(6, "exponential"), (8, "1.5")]), "BAD_BACKOFF_MAX"),
        (add(&[(9, "true")]), "BAD_LIFO"),
        (add(&[(10, "yes")]), "BAD_REMOVE_ON_COMPLETE"),
        (add(&[(11, "")]), "BAD_REMOVE_ON_FAIL"),
        (add(&[(12, long_trace)]), "BAD_TRACE"),
    ];
    for (args, code) in &adds {
        let keys = keys_of(&queue, &script::ADD);
        assert_code(harness::eval(&mut con, &script::ADD, &keys, args), code);
    }
    let cases: [(&redis_patterns::Script, &[&str], &str); 7] = [
        (
            &script::TAKE,
            &["0", "1", "1", "0", "0", "1", random],
            "BAD_LEASE",
        ),
        (
            &script::CONFIGURE,
            &[
                "0", "0", "1", "0", "1001", "1", "1", "1", "0", "0", "1", "1", "0", "", "",
            ],
            "BAD_QUEUE_RATE",
        ),
        (&script::ACK, &["a", "", ""], "BAD_TOKEN"),
        (&script::ACK, &["a", "999", ""], "LEASE_LOST"),
        (&script::ACK, &["a", &job.token[1..], ""], "LEASE_LOST"),
        (
            &script::NACK,
            &["a", "1", "0", "0", "x"],
            "BAD_MAX_DELIVERIES",
        ),
        (&script::LIST, &["running", "0", "1"], "BAD_STATE"),
    ];
    for (script, args, code) in cases {
        let keys = keys_of(&queue, script);
        assert_code(harness::eval(&mut con, script, &keys, args), code);
    }
    assert_eq!(harness::dump(&mut con), before);
}

/// The keys `script` takes, by the names in its header: a subset of the queue's sixteen
/// (the schedules' three, `schedules`, `due` and `schedules_wake`, and a deduplication
/// `window`, left out).
pub(crate) fn keys_of<'q>(queue: &'q WorkQueue, script: &redis_patterns::Script) -> Vec<&'q str> {
    const NAMES: [&str; 16] = [
        "waiting",
        "delayed",
        "leased",
        "dead",
        "parked",
        "jobs",
        "groups",
        "wake",
        "idle",
        "signal",
        "events",
        "results",
        "kept",
        "turns",
        "completed",
        "blocked",
    ];
    script
        .keys
        .iter()
        .filter(|key| !["schedules", "due", "schedules_wake", "window"].contains(&key.name))
        .map(|key| queue.keys()[NAMES.iter().position(|n| *n == key.name).unwrap()])
        .collect()
}

/// Each script's keys are named as the queue names them, in the queue's order.
#[test]
fn every_script_takes_the_queues_keys_in_order() {
    let queue = WorkQueue::new("order").unwrap();
    for script in redis_patterns::catalog::scripts()
        .iter()
        .filter(|s| s.name.starts_with("work_queue/"))
    {
        let keys = keys_of(&queue, script);
        let mut positions: Vec<usize> = keys
            .iter()
            .map(|k| queue.keys().iter().position(|q| q == k).unwrap())
            .collect();
        let sorted = {
            let mut p = positions.clone();
            p.sort_unstable();
            p
        };
        assert_eq!(positions, sorted, "{}", script.name);
        positions.dedup();
        assert_eq!(positions.len(), keys.len(), "{}", script.name);
    }
}

/// Jobs parked under one setting are not stranded when the settings change: with the
/// rate limit lifted, the parked job still comes back when its window passes.
#[test]
fn parked_jobs_come_back_after_the_limits_change() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let limited = WorkQueue::new("changing").unwrap();
    limit_groups(
        &mut con,
        &limited,
        Limits::new().rate(1, Duration::from_millis(200)).unwrap(),
    );
    for id in ["a", "b"] {
        limited
            .add_with(id, id, JobOptions::new().group("g"))
            .run(&mut con)
            .unwrap();
    }
    let first = limited.take(10).run(&mut con).unwrap();
    assert_eq!(shown(&first), ["a #1 [g]"]);
    assert_eq!(
        limited.job("b").run(&mut con).unwrap().unwrap().state,
        State::Parked
    );
    let unlimited = limited.clone();
    limit_groups(&mut con, &unlimited, Limits::new());
    harness::wait_server(&mut con, Duration::from_millis(200));
    assert_eq!(
        shown(&unlimited.take(10).run(&mut con).unwrap()),
        ["b #1 [g]"]
    );
}

/// A job whose record was deleted by hand (its id left in a set) is dropped by the next
/// take, which hands out the others as usual.
#[test]
fn a_job_without_its_record_is_dropped() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("orphans")
        .unwrap()
        .with_lease(Duration::from_millis(50))
        .unwrap();
    for id in ["a", "b", "c", "d"] {
        queue.add(id, id).run(&mut con).unwrap();
    }
    let held = queue.take(1).run(&mut con).unwrap();
    assert_eq!(shown(&held), ["a #1"]);
    let jobs = queue.keys()[5];
    harness::cmd(
        &mut con,
        &[
            "HDEL", jobs, "d:a", "s:a", "r:a", "n:a", "t:a", "d:b", "s:b", "r:b", "n:b",
        ],
    );
    harness::wait_server(&mut con, Duration::from_millis(50));
    assert_eq!(
        shown(&queue.take(10).run(&mut con).unwrap()),
        ["c #1", "d #1"]
    );
    let counts = queue.counts().run(&mut con).unwrap();
    assert_eq!((counts.waiting, counts.leased), (0, 2));
    assert_eq!(queue.job("a").run(&mut con).unwrap(), None);
}

/// `take`'s path for the common call (a queue without groups, limits, events, kept
/// results, flows or dead jobs) and its general path agree: two queues get the same jobs
/// and the same calls, one of them with a dead job, which sends its later calls down the
/// general path; each call takes the same jobs at the same deliveries, and the queues end
/// with the same records, states and waiting and leased jobs.
#[test]
fn the_common_call_and_the_general_path_agree() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let lean = WorkQueue::new("common").unwrap();
    let general = WorkQueue::new("general")
        .unwrap()
        .with_max_deliveries(1)
        .unwrap();
    general.add("x", "x").run(&mut con).unwrap();
    let x = general.take(1).run(&mut con).unwrap().remove(0);
    assert_eq!(
        nacked(general.nack(&x, "gone").run(&mut con)).unwrap(),
        "dead"
    );
    let mut held = [Vec::new(), Vec::new()];
    for (queue, held) in [&lean, &general].into_iter().zip(&mut held) {
        for n in 0..8 {
            let options = JobOptions::new().priority(if n % 3 == 0 { 5 } else { 0 });
            queue
                .add_with(&format!("j{n}"), format!("payload {n}"), options)
                .run(&mut con)
                .unwrap();
        }
        *held = queue.take(2).run(&mut con).unwrap();
    }
    assert_eq!(shown(&held[0]), shown(&held[1]));
    for limit in [3, 1, 10, 10] {
        let taken: Vec<Vec<Job>> = [&lean, &general]
            .into_iter()
            .zip(&held)
            .map(|(queue, done)| queue.ack_and_take(done, limit).run(&mut con).unwrap())
            .collect();
        assert_eq!(
            shown(&taken[0]),
            shown(&taken[1]),
            "ack_and_take(…, {limit})"
        );
        let payloads = |jobs: &[Job]| jobs.iter().map(|j| j.payload.clone()).collect::<Vec<_>>();
        assert_eq!(payloads(&taken[0]), payloads(&taken[1]));
        held = [taken[0].clone(), taken[1].clone()];
    }
    // What each queue holds, but for the dead job and what differs by design: tokens
    // (random per call), deadlines and ready times (the server's clock).
    let holds = |con: &mut redis::Connection, queue: &WorkQueue| {
        let keys = queue.keys();
        let fields: BTreeMap<String, String> =
            redis::cmd("HGETALL").arg(keys[5]).query(con).unwrap();
        let fields: BTreeMap<String, String> = fields
            .into_iter()
            .filter(|(field, _)| !field.ends_with(":x") && !field.starts_with('#'))
            .map(|(field, value)| match &field[..2] {
                "t:" | "a:" => (field, String::new()),
                _ => (field, value),
            })
            .collect();
        let mut members = |key: &str| -> Vec<String> {
            redis::cmd("ZRANGE")
                .arg(key)
                .arg(0)
                .arg(-1)
                .query(con)
                .unwrap()
        };
        let (waiting, leased) = (members(keys[0]), members(keys[2]));
        (fields, waiting, leased)
    };
    let lean_holds = holds(&mut con, &lean);
    assert_eq!(lean_holds, holds(&mut con, &general));
    assert_eq!(lean_holds.1.len(), 0, "every job was taken");
    assert_eq!(lean_holds.2.len(), held[0].len());
}

/// 100 dead jobs requeued by 8 clients at once are each requeued once. Then 4 workers
/// take and ack while 4 clients remove every id: each job is acked or removed, never both,
/// and none is left.
#[test]
fn requeue_and_remove_act_once_per_job_under_contention() {
    let db = harness::fresh_db();
    let queue = WorkQueue::new("contended")
        .unwrap()
        .with_max_deliveries(1)
        .unwrap();
    let mut con = db.con();
    let ids: Vec<String> = (0..100).map(|i| format!("j{i}")).collect();
    for id in &ids {
        queue.add(id, "x").run(&mut con).unwrap();
    }
    while let Some(job) = queue.take(1).run(&mut con).unwrap().pop() {
        assert!(matches!(
            queue.nack(&job, "no").run(&mut con).unwrap(),
            Nacked::Dead { .. }
        ));
    }
    assert_eq!(queue.counts().run(&mut con).unwrap().dead, 100);
    let requeued: usize = thread::scope(|scope| {
        let clients: Vec<_> = (0..8)
            .map(|_| {
                let (db, queue, ids) = (&db, &queue, &ids);
                scope.spawn(move || {
                    let mut con = db.con();
                    ids.iter()
                        .filter(|id| queue.requeue(id).run(&mut con).unwrap())
                        .count()
                })
            })
            .collect();
        clients.into_iter().map(|c| c.join().unwrap()).sum()
    });
    assert_eq!(requeued, 100);
    let counts = queue.counts().run(&mut con).unwrap();
    assert_eq!((counts.waiting, counts.dead), (100, 0));

    let done = AtomicBool::new(false);
    let (acked, removed): (Vec<String>, Vec<String>) = thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let (db, queue, done) = (&db, &queue, &done);
                scope.spawn(move || {
                    let mut con = db.con();
                    let mut acked = Vec::new();
                    while !done.load(Ordering::SeqCst) {
                        for job in queue.take(5).run(&mut con).unwrap() {
                            queue.ack(&job).run(&mut con).unwrap();
                            acked.push(job.id);
                        }
                    }
                    acked
                })
            })
            .collect();
        let removers: Vec<_> = (0..4)
            .map(|r| {
                let (db, queue, ids) = (&db, &queue, &ids);
                scope.spawn(move || {
                    let mut con = db.con();
                    let mut removed = Vec::new();
                    for id in ids.iter().skip(r * 25).chain(ids.iter().take(r * 25)) {
                        if let Removed::From(state) = queue.remove(id).run(&mut con).unwrap() {
                            assert_eq!(state, State::Waiting, "{id}");
                            removed.push(id.clone());
                        }
                    }
                    removed
                })
            })
            .collect();
        let removed: Vec<String> = removers
            .into_iter()
            .flat_map(|r| r.join().unwrap())
            .collect();
        let mut con = db.con();
        while queue.counts().run(&mut con).unwrap() != Default::default() {
            thread::sleep(Duration::from_millis(5));
        }
        done.store(true, Ordering::SeqCst);
        let acked = workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        (acked, removed)
    });
    let mut all: Vec<&String> = acked.iter().chain(&removed).collect();
    all.sort();
    assert_eq!(
        all,
        ids.iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
    );
}

/// Acking a batch in the call that takes the next: each ended job frees its group's slot
/// once (its parked jobs start in rank order), and a job whose lease ran out before its
/// ack is acked, not handed back.
#[test]
fn ack_and_take_frees_each_groups_slots_once() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("ack_and_take").unwrap();
    limit_groups(&mut con, &queue, Limits::new().concurrency(2).unwrap());
    for n in 1..=5 {
        queue
            .add_with(&format!("g{n}"), "x", JobOptions::new().group("g"))
            .run(&mut con)
            .unwrap();
    }
    let running = |con: &mut redis::Connection| -> Option<String> {
        redis::cmd("HGET")
            .arg(queue.keys()[6])
            .arg("r:g")
            .query(con)
            .unwrap()
    };
    let ids = |jobs: &[Job]| jobs.iter().map(|j| j.id.clone()).collect::<Vec<_>>();
    let first = queue.take(MAX_TAKE).run(&mut con).unwrap();
    assert_eq!(ids(&first), ["g1", "g2"]);
    let second = queue.ack_and_take(&first, MAX_TAKE).run(&mut con).unwrap();
    assert_eq!(ids(&second), ["g3", "g4"]);
    assert_eq!(running(&mut con).as_deref(), Some("2"));
    let c = queue.counts().run(&mut con).unwrap();
    assert_eq!((c.waiting, c.parked, c.leased), (0, 1, 2));
    // g5 under a lease that runs out before its ack, which still counts, as nobody took
    // the job meanwhile: it is acked, not handed back.
    let short = queue.clone().with_lease(Duration::from_millis(1)).unwrap();
    let third = short.ack_and_take(&second, MAX_TAKE).run(&mut con).unwrap();
    assert_eq!(ids(&third), ["g5"]);
    assert_eq!(running(&mut con).as_deref(), Some("1"));
    queue.add("late", "x").run(&mut con).unwrap();
    harness::wait_server(&mut con, Duration::from_millis(2));
    let last = queue.ack_and_take(&third, MAX_TAKE).run(&mut con).unwrap();
    assert_eq!(ids(&last), ["late"]);
    assert_eq!(queue.job("g5").run(&mut con).unwrap(), None);
    assert_eq!(running(&mut con), None);
    let c = queue.counts().run(&mut con).unwrap();
    assert_eq!((c.waiting, c.parked, c.leased, c.dead), (0, 0, 1, 0));
}

/// How many old start times one `take` drops at most: take.lua's RING_BUDGET, read from
/// the script, so that these tests follow it.
fn ring_budget() -> usize {
    let line = script::TAKE
        .source
        .lines()
        .find_map(|line| line.strip_prefix("local RING_BUDGET = "))
        .expect("take.lua sets RING_BUDGET");
    line.trim().parse().unwrap()
}

/// A change of `group_rate` starts each group's ring of start times anew: one `take`
/// dropped every old ring it met whole (25 rings of 1000 took 17 to 31 ms). Now one call
/// drops at most [`ring_budget`] old start times, later calls drop the rest, and the new
/// rate holds from the first call on; the rings of idle groups go the same way.
#[test]
fn a_change_of_group_rate_drops_old_start_times_a_budget_at_a_time() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("rings").unwrap();
    let hourly = Limits::new().rate(1, Duration::from_secs(3600)).unwrap();
    limit_groups(&mut con, &queue, hourly);
    let groups = queue.keys()[6].to_owned();
    // Three groups with full rings written under a rate of 1000, long ago.
    for group in ["A", "B", "C"] {
        let mut fields = vec!["HSET", &groups];
        let (p, z) = (format!("p:{group}"), format!("z:{group}"));
        fields.extend([p.as_str(), "1000", z.as_str(), "1000"]);
        let slots: Vec<String> = (0..1000).map(|i| format!("s:{group}:{i}")).collect();
        for slot in &slots {
            fields.extend([slot.as_str(), "1"]);
        }
        harness::cmd(&mut con, &fields);
    }
    let start_times = |con: &mut redis::Connection| -> usize {
        let fields: Vec<String> = redis::cmd("HKEYS").arg(&groups).query(con).unwrap();
        fields.iter().filter(|f| f.starts_with("s:")).count()
    };
    let add = |con: &mut redis::Connection, id: &str, group: &str| {
        queue
            .add_with(id, "x", JobOptions::new().group(group))
            .run(con)
            .unwrap();
    };
    for (id, group) in [("a1", "A"), ("b1", "B"), ("c1", "C")] {
        add(&mut con, id, group);
    }
    assert_eq!(start_times(&mut con), 3000);
    let taken = queue.take(MAX_TAKE).run(&mut con).unwrap();
    assert_eq!(shown(&taken), ["a1 #1 [A]", "b1 #1 [B]", "c1 #1 [C]"]);
    let left = start_times(&mut con);
    assert!(
        (3000 - ring_budget()..3000).contains(&left),
        "{left} start times left"
    );
    // The new rate holds at once: one start per hour.
    let mut calls = 0;
    let mut before = left;
    for (id, group) in [("a2", "A"), ("b2", "B"), ("c2", "C")] {
        add(&mut con, id, group);
    }
    while before > 3 {
        assert!(queue.take(MAX_TAKE).run(&mut con).unwrap().is_empty());
        let now = start_times(&mut con);
        assert!(
            before - now <= ring_budget(),
            "{} dropped in one call",
            before - now
        );
        (before, calls) = (now, calls + 1);
        assert!(
            calls <= 3000 / ring_budget() + 1,
            "{now} start times left after {calls} calls"
        );
    }
    // One start time per group (the new ring's), and no note of old ones.
    let fields: BTreeSet<String> = redis::cmd("HKEYS")
        .arg(&groups)
        .query::<Vec<String>>(&mut con)
        .unwrap()
        .into_iter()
        .filter(|f| !f.starts_with("r:"))
        .collect();
    let expected: BTreeSet<String> = ["A", "B", "C"]
        .iter()
        .flat_map(|g| [format!("p:{g}"), format!("z:{g}"), format!("s:{g}:0")])
        .collect();
    assert_eq!(fields, expected);
    // Each group is due in `idle` again when its new ring stops counting, an hour on.
    let now = harness::server_ms(&mut con);
    let due: Vec<String> = redis::cmd("ZRANGE")
        .arg(queue.keys()[8])
        .arg("-inf")
        .arg(now + 3_000_000)
        .arg("BYSCORE")
        .query(&mut con)
        .unwrap();
    assert!(due.is_empty(), "{due:?} due within the hour");
    let c = queue.counts().run(&mut con).unwrap();
    assert_eq!((c.parked, c.leased), (3, 3));
}

/// Idle groups' rings go a budget at a time too: 3 groups idle with rings of 1000 take
/// a call per [`ring_budget`] start times, and one more at most.
#[test]
fn idle_rings_are_dropped_a_budget_at_a_time() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("idle_rings").unwrap();
    limit_groups(
        &mut con,
        &queue,
        Limits::new().rate(1000, Duration::from_millis(1)).unwrap(),
    );
    let (groups, idle) = (queue.keys()[6].to_owned(), queue.keys()[8].to_owned());
    for group in ["A", "B", "C"] {
        let mut fields = vec!["HSET".to_owned(), groups.clone()];
        fields.extend([
            format!("p:{group}"),
            "1000".into(),
            format!("z:{group}"),
            "1000".into(),
        ]);
        for i in 0..1000 {
            fields.extend([format!("s:{group}:{i}"), "1".into()]);
        }
        let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
        harness::cmd(&mut con, &fields);
        harness::cmd(&mut con, &["ZADD", &idle, "1", group]);
    }
    let size = |con: &mut redis::Connection| -> usize {
        redis::cmd("HLEN").arg(&groups).query(con).unwrap()
    };
    let mut before = size(&mut con);
    let mut calls = 0;
    while before > 0 {
        assert!(queue.take(MAX_TAKE).run(&mut con).unwrap().is_empty());
        let now = size(&mut con);
        assert!(
            before - now <= ring_budget() + 6,
            "{} fields dropped in one call",
            before - now
        );
        (before, calls) = (now, calls + 1);
        assert!(
            calls <= 3000 / ring_budget() + 2,
            "{now} fields left after {calls} calls"
        );
    }
    let idle_left: usize = redis::cmd("ZCARD").arg(&idle).query(&mut con).unwrap();
    assert_eq!(idle_left, 0);
}

/// Sets `limits` for each group of `queue`, in Redis, as an operator does.
fn limit_groups(con: &mut impl redis::ConnectionLike, queue: &WorkQueue, limits: Limits) {
    queue
        .configure(&Settings::new().group_limits(limits))
        .run(con)
        .unwrap();
}

/// The clients of `con`'s database blocked in `BZPOPMIN`.
fn blocked_workers(con: &mut redis::Connection) -> usize {
    harness::blocked_in(con, "bzpopmin")
}

/// A paused queue accepts adds and hands out nothing: the idle workers, which the adds
/// wake, take nothing and wait again (with an hour's poll, so nothing else wakes them);
/// `resume` wakes them, and they run every job.
#[test]
fn a_paused_queue_takes_nothing_and_resume_wakes_the_workers() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("pause").unwrap();
    let stop = Stop::new();
    let ran = Mutex::new(Vec::new());
    thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|n| {
                let (db, queue, stop, ran) = (&db, &queue, &stop, &ran);
                scope.spawn(move || {
                    let worker = queue.worker().poll(Duration::from_secs(3600));
                    let handler = |job: &Job| {
                        ran.lock().unwrap().push(job.id.clone());
                        Ok::<(), String>(())
                    };
                    if n == 0 {
                        worker.run(&db.client, stop, handler).unwrap()
                    } else {
                        let worker = worker.concurrency(3).unwrap();
                        worker.run_concurrent(&db.client, stop, handler).unwrap()
                    }
                })
            })
            .collect();
        harness::wait_until("two idle workers", 5, || blocked_workers(&mut con) == 2);
        assert!(queue.pause().run(&mut con).unwrap());
        for n in 0..5 {
            let added = queue.add(&format!("job-{n}"), "x").run(&mut con).unwrap();
            assert_eq!(added, Added::New(State::Waiting));
        }
        // Each add woke a worker; once both wait again with the wake-up consumed, no one
        // looks before the hour is up.
        harness::wait_until("the woken workers to wait again", 5, || {
            let signals: u64 = redis::cmd("ZCARD")
                .arg(queue.keys()[9])
                .query(&mut con)
                .unwrap();
            signals == 0 && blocked_workers(&mut con) == 2
        });
        let counts = queue.counts().run(&mut con).unwrap();
        assert_eq!((counts.waiting, counts.leased), (5, 0));
        assert!(ran.lock().unwrap().is_empty());
        assert!(queue.is_paused().run(&mut con).unwrap());

        assert!(queue.resume().run(&mut con).unwrap());
        harness::wait_until("every job to run after resume", 5, || {
            ran.lock().unwrap().len() == 5
        });
        harness::wait_until("the queue to drain", 5, || {
            let c = queue.counts().run(&mut con).unwrap();
            c.waiting + c.leased == 0
        });
        stop.stop();
        // A member each: a second add of one member while the first is not yet popped
        // would change nothing and leave a worker waiting out its poll.
        for n in 0..2 {
            redis::cmd("ZADD")
                .arg(queue.keys()[9])
                .arg(0)
                .arg(format!("stop-{n}"))
                .exec(&mut con)
                .unwrap();
            harness::wait_until("a worker to wake", 1, || {
                blocked_workers(&mut con) < 2 || workers.iter().all(|w| w.is_finished())
            });
        }
        let acked: u64 = workers.into_iter().map(|w| w.join().unwrap().acked).sum();
        assert_eq!(acked, 5);
    });
    let mut ran = ran.into_inner().unwrap();
    ran.sort();
    ran.dedup();
    assert_eq!(ran.len(), 5, "a job ran twice or not at all: {ran:?}");
}

/// A paused queue's take still acks the jobs it is given and hands back lapsed leases,
/// but takes nothing and leaves `signal` empty; a `#paused` another client wrote is
/// refused by every script that reads it, with nothing written.
#[test]
fn a_paused_take_acks_and_a_foreign_pause_flag_is_refused() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("pause:take").unwrap();
    for id in ["a", "b"] {
        queue.add(id, "x").run(&mut con).unwrap();
    }
    let taken = queue.take(1).run(&mut con).unwrap();
    queue.pause().run(&mut con).unwrap();
    redis::cmd("DEL")
        .arg(queue.keys()[9])
        .exec(&mut con)
        .unwrap();
    assert_eq!(queue.ack_and_take(&taken, 5).run(&mut con).unwrap(), []);
    let counts = queue.counts().run(&mut con).unwrap();
    assert_eq!((counts.waiting, counts.leased), (1, 0));
    let signals: u64 = redis::cmd("ZCARD")
        .arg(queue.keys()[9])
        .query(&mut con)
        .unwrap();
    assert_eq!(signals, 0, "a paused take woke a worker");

    redis::cmd("HSET")
        .arg(queue.keys()[5])
        .arg("#paused")
        .arg("yes")
        .exec(&mut con)
        .unwrap();
    let before = harness::dump(&mut con);
    assert_code(queue.take(5).run(&mut con), "BAD_JOBS");
    assert_code(queue.pause().run(&mut con), "BAD_JOBS");
    assert_code(queue.resume().run(&mut con), "BAD_JOBS");
    assert_code(queue.is_paused().run(&mut con), "BAD_JOBS");
    assert_eq!(harness::dump(&mut con), before, "a refused call wrote");
}

/// Two workers of concurrency 4 each drain 200 jobs: every job runs once and is acked,
/// and a worker runs 4 jobs at once, each under its own lease.
#[test]
fn concurrent_workers_run_each_job_once() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("concurrent")
        .unwrap()
        .with_lease(LOOP_LEASE)
        .unwrap();
    const JOBS: usize = 200;
    for n in 0..JOBS {
        queue.add(&format!("job-{n}"), "x").run(&mut con).unwrap();
    }
    let stop = Stop::new();
    let runs = Mutex::new(HashMap::<String, u32>::new());
    let most_leased = std::sync::atomic::AtomicU64::new(0);
    let reports = thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (db, queue, stop, runs) = (&db, &queue, &stop, &runs);
                let most_leased = &most_leased;
                scope.spawn(move || {
                    let running = std::sync::atomic::AtomicU64::new(0);
                    let started = std::sync::atomic::AtomicU64::new(0);
                    let peak = std::sync::atomic::AtomicU64::new(0);
                    let check = Mutex::new(db.con());
                    queue
                        .worker()
                        .poll(Duration::from_millis(20))
                        .concurrency(4)
                        .unwrap()
                        .run_concurrent(&db.client, stop, |job| {
                            *runs.lock().unwrap().entry(job.id.clone()).or_default() += 1;
                            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                            peak.fetch_max(now, Ordering::SeqCst);
                            if started.fetch_add(1, Ordering::SeqCst) < 4 {
                                // A worker's first four jobs wait until it runs four at once.
                                harness::wait_until("four jobs at once", 1, || {
                                    peak.load(Ordering::SeqCst) >= 4
                                });
                                let leased =
                                    queue.counts().run(&mut *check.lock().unwrap()).unwrap();
                                most_leased.fetch_max(leased.leased, Ordering::SeqCst);
                            }
                            assert!(now <= 4, "{now} handlers at once");
                            running.fetch_sub(1, Ordering::SeqCst);
                            Ok::<(), String>(())
                        })
                        .unwrap()
                })
            })
            .collect();
        harness::wait_until("the queue to drain", 20, || {
            let c = queue.counts().run(&mut con).unwrap();
            c.waiting + c.leased == 0
        });
        stop.stop();
        workers
            .into_iter()
            .map(|w| w.join().unwrap())
            .collect::<Vec<_>>()
    });
    let runs = runs.into_inner().unwrap();
    let twice: Vec<_> = runs.iter().filter(|(_, n)| **n > 1).collect();
    assert_eq!(twice, Vec::<(&String, &u32)>::new(), "jobs run twice");
    assert_eq!(runs.len(), JOBS);
    let acked: u64 = reports.iter().map(|r| r.acked).sum();
    let lost: u64 = reports.iter().map(|r| r.lost).sum();
    assert_eq!((acked, lost), (JOBS as u64, 0), "{reports:?}");
    assert!(
        most_leased.load(Ordering::SeqCst) >= 4,
        "four leases held at once"
    );
}

/// A worker runs more jobs at once than one `take` hands out ([`MAX_CONCURRENCY`] jobs,
/// [`MAX_TAKE`] a call): it takes them over several calls, and every job runs at once.
#[test]
fn a_worker_runs_more_jobs_at_once_than_one_take_hands_out() {
    const JOBS: u64 = MAX_CONCURRENCY;
    const { assert!(JOBS > MAX_TAKE) };
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("widest:sync")
        .unwrap()
        .with_lease(LOOP_LEASE)
        .unwrap();
    for n in 0..JOBS {
        queue.add(&format!("job-{n}"), "x").run(&mut con).unwrap();
    }
    let stop = Stop::new();
    let (running, peak) = (
        std::sync::atomic::AtomicU64::new(0),
        std::sync::atomic::AtomicU64::new(0),
    );
    let report = thread::scope(|scope| {
        let worker = scope.spawn(|| {
            queue
                .worker()
                .poll(Duration::from_millis(20))
                .concurrency(JOBS)
                .unwrap()
                .run_concurrent(&db.client, &stop, |_job| {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    // Every job waits until all of them run at once.
                    harness::wait_until("every job at once", 10, || {
                        peak.load(Ordering::SeqCst) == JOBS
                    });
                    Ok::<(), String>(())
                })
                .unwrap()
        });
        harness::wait_until("the queue to drain", 20, || {
            let c = queue.counts().run(&mut con).unwrap();
            c.waiting + c.leased == 0
        });
        stop.stop();
        worker.join().unwrap()
    });
    assert_eq!((report.acked, report.lost), (JOBS, 0), "{report:?}");
    assert_eq!(peak.into_inner(), JOBS);
    assert_invalid(queue.worker().concurrency(JOBS + 1), "concurrency");
}

/// The async loop too takes [`MAX_CONCURRENCY`] jobs over several calls of [`MAX_TAKE`]
/// and runs them all at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_worker_runs_more_jobs_at_once_than_one_take_hands_out() {
    use std::sync::atomic::AtomicU64;

    const JOBS: u64 = MAX_CONCURRENCY;
    let db = harness::fresh_db();
    let queue = WorkQueue::new("widest:async")
        .unwrap()
        .with_lease(LOOP_LEASE)
        .unwrap();
    let mut con = db.con();
    for n in 0..JOBS {
        queue.add(&format!("job-{n}"), "x").run(&mut con).unwrap();
    }
    let stop = Stop::new();
    let peak = Arc::new(AtomicU64::new(0));
    let worker = {
        let (queue, stop, client, peak) =
            (queue.clone(), stop.clone(), db.client.clone(), peak.clone());
        tokio::spawn(async move {
            let mut con = client.get_multiplexed_async_connection().await.unwrap();
            let running = Arc::new(AtomicU64::new(0));
            queue
                .worker()
                .poll(Duration::from_millis(20))
                .concurrency(JOBS)
                .unwrap()
                .run_async(&mut con, &stop, |_job: Job| {
                    let (running, peak) = (running.clone(), peak.clone());
                    async move {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        // Every job waits until all of them run at once.
                        while peak.load(Ordering::SeqCst) < JOBS {
                            tokio::time::sleep(Duration::from_millis(1)).await;
                        }
                        Ok::<(), String>(())
                    }
                })
                .await
                .unwrap()
        })
    };
    stop_once_drained(&queue, &stop, con).await;
    let report = worker.await.unwrap();
    assert_eq!((report.acked, report.lost), (JOBS, 0), "{report:?}");
    assert_eq!(peak.load(Ordering::SeqCst), JOBS);
}

/// Waits, off the runtime's threads, until `queue` has no job waiting or held, then
/// raises `stop`.
async fn stop_once_drained(queue: &WorkQueue, stop: &Stop, mut con: redis::Connection) {
    let (queue, stop) = (queue.clone(), stop.clone());
    tokio::task::spawn_blocking(move || {
        harness::wait_until("the queue to drain", 20, || {
            let c = queue.counts().run(&mut con).unwrap();
            c.waiting + c.leased == 0
        });
        stop.stop();
    })
    .await
    .unwrap();
}

/// Two async workers of concurrency 4 (one renewing in its task, one from a thread of
/// its own) drain 200 jobs: each job runs once and is acked, and each worker runs four
/// handler futures at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_async_workers_run_each_job_once() {
    use std::sync::atomic::AtomicU64;

    let db = harness::fresh_db();
    let queue = WorkQueue::new("concurrent:async")
        .unwrap()
        .with_lease(LOOP_LEASE)
        .unwrap();
    const JOBS: usize = 200;
    let mut con = db.con();
    for n in 0..JOBS {
        queue.add(&format!("job-{n}"), "x").run(&mut con).unwrap();
    }
    let stop = Stop::new();
    let runs = Arc::new(Mutex::new(HashMap::<String, u32>::new()));
    let work = |own_thread: bool| {
        let (queue, stop, runs, client) =
            (queue.clone(), stop.clone(), runs.clone(), db.client.clone());
        async move {
            let mut con = client.get_multiplexed_async_connection().await.unwrap();
            let (running, started, peak) = (
                Arc::new(AtomicU64::new(0)),
                Arc::new(AtomicU64::new(0)),
                Arc::new(AtomicU64::new(0)),
            );
            let mut worker = queue
                .worker()
                .poll(Duration::from_millis(20))
                .concurrency(4)
                .unwrap();
            if own_thread {
                worker = worker.renew_from(client.clone());
            }
            let report = worker
                .run_async(&mut con, &stop, |job: Job| {
                    let (runs, running, started, peak) =
                        (runs.clone(), running.clone(), started.clone(), peak.clone());
                    async move {
                        *runs.lock().unwrap().entry(job.id.clone()).or_default() += 1;
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        assert!(now <= 4, "{now} handlers at once");
                        if started.fetch_add(1, Ordering::SeqCst) < 4 {
                            // A worker's first four jobs wait until it runs four at once.
                            while peak.load(Ordering::SeqCst) < 4 {
                                tokio::time::sleep(Duration::from_millis(1)).await;
                            }
                        }
                        running.fetch_sub(1, Ordering::SeqCst);
                        Ok::<(), String>(())
                    }
                })
                .await
                .unwrap();
            (report, peak.load(Ordering::SeqCst))
        }
    };
    let workers = [tokio::spawn(work(false)), tokio::spawn(work(true))];
    stop_once_drained(&queue, &stop, con).await;
    let mut acked = 0;
    for worker in workers {
        let (report, peak) = worker.await.unwrap();
        assert_eq!((report.lost, peak), (0, 4), "{report:?}");
        acked += report.acked;
    }
    let runs = runs.lock().unwrap();
    let twice: Vec<_> = runs.iter().filter(|(_, n)| **n > 1).collect();
    assert_eq!(twice, Vec::<(&String, &u32)>::new(), "jobs run twice");
    assert_eq!((runs.len(), acked), (JOBS, JOBS as u64));
}

/// The bounds the Rust API states as constants are the scripts' own: each is its header's
/// bound (so a header that changes a bound fails here until the constant follows).
#[test]
fn the_api_bounds_are_the_headers() {
    use redis_patterns::Rule;
    use redis_patterns::work_queue as wq;

    fn arg(script: &redis_patterns::Script, name: &str) -> &'static redis_patterns::Param {
        script.args.iter().find(|a| a.name == name).unwrap()
    }
    let most = |script: &redis_patterns::Script, name: &str| match arg(script, name).rule {
        Rule::Range { max, .. } => max as u64,
        Rule::Length { max, .. } => u64::from(max.unwrap()),
        other => panic!("{}: {name} has no upper bound: {other:?}", script.name),
    };
    assert_eq!(wq::MAX_TAKE, most(&script::TAKE, "limit"));
    assert_eq!(
        Some(3 * wq::MAX_TAKE as u32),
        arg(&script::TAKE, "done").count.max
    );
    assert_eq!(wq::MAX_PAGE, most(&script::LIST, "count"));
    assert_eq!(wq::MAX_BULK, most(&script::RETRY_DEAD, "count"));
    assert_eq!(
        wq::MAX_METRICS_MINUTES,
        most(&script::CONFIGURE, "metrics_minutes")
    );
    assert_eq!(wq::MAX_EVENTS, most(&script::CONFIGURE, "events_max"));
    assert_eq!(
        wq::MAX_RESULT_TTL.as_millis() as u64,
        most(&script::CONFIGURE, "result_ttl")
    );
    assert_eq!(wq::MAX_RESULT_BYTES, most(&script::CONFIGURE, "result_max"));
    assert_eq!(
        wq::MAX_PROGRESS_BYTES as u64,
        most(&script::PROGRESS, "progress")
    );
    assert_eq!(wq::MAX_EVENTS_READ, most(&script::EVENTS, "count"));
    assert_eq!(
        Some(3 * wq::MAX_CHILDREN as u32),
        arg(&script::ADD_FLOW, "children").count.max
    );
    assert_eq!(
        u64::from(wq::MAX_CATCH_UP),
        most(&script::SET_SCHEDULE, "catch_up")
    );
    assert_eq!(wq::MAX_SCHEDULES_PAGE, most(&script::SCHEDULES, "count"));
    assert_eq!(wq::MAX_SCHEDULES_PAGE, most(&script::DUE, "limit"));
    assert_eq!(u64::from(wq::MAX_ATTEMPTS), most(&script::ADD, "attempts"));
    assert_eq!(
        u64::from(wq::MAX_ATTEMPTS),
        most(&script::ADD_DEDUPLICATED, "attempts")
    );
    assert_eq!(wq::MAX_LOG_LINES, most(&script::LOG, "keep"));
    assert_eq!(wq::MAX_LOG_LINES, most(&script::LOGS, "count"));
    assert_eq!(wq::MAX_LOG_LINE_BYTES as u64, most(&script::LOG, "line"));
    assert_eq!(
        wq::MAX_WINDOW.as_millis() as u64,
        most(&script::ADD_DEDUPLICATED, "ttl")
    );
}

/// A raw `work_queue/take` answers nil for the group of a job without one, as `list` and
/// `job` do (it answered `''`), and the group of a job with one; with groups taking turns
/// too, where jobs without a group are the group `''` inside the queue.
#[test]
fn a_raw_take_answers_nil_for_no_group() {
    use redis::Value;

    let db = harness::fresh_db();
    let mut con = db.con();
    for turns in [false, true] {
        let queue = WorkQueue::new(if turns { "raw-turns" } else { "raw" }).unwrap();
        queue
            .configure(&Settings::new().group_turns(turns))
            .run(&mut con)
            .unwrap();
        queue.add("1", "a").run(&mut con).unwrap();
        queue
            .add_with("2", "b", JobOptions::new().group("g"))
            .run(&mut con)
            .unwrap();
        let keys = queue.keys();
        let args = ["30000", "2", "5", "0123456789abcdef0123456789abcdef"];
        let reply = harness::eval(&mut con, &script::TAKE, &keys, &args).unwrap();
        let Value::Array(rows) = reply else {
            panic!("{reply:?}")
        };
        let groups: BTreeMap<Vec<u8>, Value> = rows
            .into_iter()
            .map(|row| match row {
                Value::Array(row) => match (&row[0], &row[4]) {
                    (Value::BulkString(id), group) => (id.clone(), group.clone()),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            groups,
            BTreeMap::from([
                (b"1".to_vec(), Value::Nil),
                (b"2".to_vec(), Value::BulkString(b"g".to_vec())),
            ]),
            "group turns {turns}"
        );
    }
}
