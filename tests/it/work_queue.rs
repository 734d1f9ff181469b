use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use redis_patterns::Error;
use redis_patterns::scripts::work_queue as script;
use redis_patterns::work_queue::{
    Added, Backoff, GroupLimits, Job, JobOptions, LEASE_LOST, Nacked, Removed, State, Stop,
    WorkQueue,
};

use crate::harness::{self, Rng, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// What a taken job reads as in a transcript: its id, delivery and group (its token and
/// deadline change from run to run).
fn shown(jobs: &[Job]) -> Vec<String> {
    jobs.iter()
        .map(|job| match &job.group {
            Some(group) => format!("{} #{} [{group}]", job.id, job.delivery),
            None => format!("{} #{}", job.id, job.delivery),
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
/// the dead-letter queue, group limits, and the operator's reads.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let queue = WorkQueue::new("work_queue:mail")
        .unwrap()
        .with_lease(Duration::from_millis(300))
        .unwrap()
        .with_max_deliveries(2)
        .unwrap()
        .with_backoff(Backoff::Fixed(Duration::from_millis(50)));
    t.step("queue.keys()", Ok::<_, Error>(queue.keys()))
        .unwrap();
    let _ = step!(t, con, queue.add("a", "first"));
    let _ = step!(t, con, queue.add("a", "again"));
    let _ = step!(
        t,
        con,
        queue.add_with("b", "urgent", JobOptions::new().priority(9))
    );
    let later = JobOptions::new().delay(Duration::from_millis(200));
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
        nacked(queue.nack(a, "smtp timeout").run(con)),
    )
    .unwrap();
    take(&mut t, con, &queue, 10);
    harness::wait_server(con, Duration::from_millis(200));
    t.note("wait 200 ms: c is due, a's backoff has passed");
    let jobs = take(&mut t, con, &queue, 10);
    let (a, c) = (&jobs[0], &jobs[1]);
    let _ = step!(t, con, queue.ack(c).map(|_| Ok("acked")));
    harness::wait_server(con, Duration::from_millis(300));
    t.note("a's worker died: its lease ran out on its last delivery");
    take(&mut t, con, &queue, 10);
    let _ = step!(t, con, queue.ack(a).map(|_| Ok("acked")));
    let _ = step!(t, con, queue.counts());
    let dead = queue.list(State::Dead, 0, 10).run(con).map(|page| {
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
        .run(con);
    t.step("queue.nack_after(a, 0 ms, \"bad address\")", nacked(retry))
        .unwrap();
    let jobs = take(&mut t, con, &queue, 10);
    t.step(
        "queue.nack(a, \"bad address\")",
        nacked(queue.nack(&jobs[0], "bad address").run(con)),
    )
    .unwrap();
    let _ = step!(t, con, queue.remove("a"));
    let _ = step!(t, con, queue.remove("a"));
    let _ = step!(t, con, queue.counts());

    t.note("groups: at most 2 running per tenant, at most 3 started per 400 ms");
    let limits = GroupLimits::new().concurrency(2).unwrap();
    let queue = queue.with_group_limits(limits.rate(3, Duration::from_millis(400)).unwrap());
    for id in ["t1-1", "t1-2", "t1-3", "t1-4"] {
        queue
            .add_with(id, "report", JobOptions::new().group("t1"))
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
    let parked = queue.list(State::Parked, 0, 10).run(con);
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
    harness::wait_server(con, Duration::from_millis(400));
    t.note("wait 400 ms: the window has passed, and the first batch's leases ran out");
    let last = take(&mut t, con, &queue, 10);
    for job in &last {
        queue.ack(job).run(con).unwrap();
    }
    t.note("acked all four");
    let _ = step!(t, con, queue.counts());
    let left: redis::RedisResult<Vec<String>> = redis::cmd("HKEYS").arg(queue.keys()[5]).query(con);
    t.step(
        "HKEYS {work_queue:mail}:jobs (no job leaves a field behind)",
        left.map_err(Error::Redis),
    )
    .unwrap();
    redis::cmd("DEL").arg(&queue.keys()).exec(con).unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let mut con = db.con();
    assert_snapshot("work_queue__scenario", &scenario(&mut con));
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "work_queue__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// The nine keys are derived once from the name, in its cluster hash slot.
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
        ]
    );
    assert_eq!(WorkQueue::new("mail").unwrap().keys()[0], "{mail}:waiting");
}
