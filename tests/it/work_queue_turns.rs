//! Groups that take turns (`Settings::group_turns`): round-robin between the groups
//! with jobs ready, one job per turn.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

use redis_patterns::work_queue::{Job, JobOptions, Limits, MAX_TAKE, Settings, WorkQueue};

use crate::harness::{self, Transcript, assert_code, assert_snapshot};

/// What a taken job reads as: its id, and its group in brackets.
fn shown(jobs: &[Job]) -> Vec<String> {
    jobs.iter()
        .map(|job| match &job.group {
            Some(group) => format!("{} [{group}]", job.id),
            None => job.id.clone(),
        })
        .collect()
}

fn take(
    t: &mut Transcript,
    con: &mut dyn redis::ConnectionLike,
    queue: &WorkQueue,
    limit: u64,
) -> Vec<Job> {
    let jobs = queue.take(limit).run(con);
    t.step(
        &format!("queue.take({limit})"),
        jobs.as_ref().map(|jobs| shown(jobs)).map_err(Clone::clone),
    )
    .unwrap();
    jobs.unwrap()
}

fn in_group(group: &str) -> JobOptions {
    JobOptions::new().group(group)
}

/// Three groups with backlogs of 6, 3 and 1 jobs and two jobs without a group (one
/// group of their own) are taken round-robin, priority ordering each group's jobs; with
/// turns off again, the jobs left are taken in priority then arrival order.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let queue = WorkQueue::new("work_queue:turns").unwrap();
    let on = Settings::new().group_turns(true);
    t.step(
        "queue.configure(group_turns(true))",
        queue.configure(&on).run(con),
    )
    .unwrap();
    t.step(
        "queue.settings().takes_turns()",
        queue.settings().run(con).map(|s| s.takes_turns()),
    )
    .unwrap();
    for i in 1..=6 {
        let id = format!("a{i}");
        t.step(
            &format!("queue.add_with({id}, group a)"),
            queue.add_with(&id, "", in_group("a")).run(con),
        )
        .unwrap();
    }
    for i in 1..=3 {
        let id = format!("b{i}");
        t.step(
            &format!("queue.add_with({id}, group b)"),
            queue.add_with(&id, "", in_group("b")).run(con),
        )
        .unwrap();
    }
    t.step(
        "queue.add_with(c1, group c)",
        queue.add_with("c1", "", in_group("c")).run(con),
    )
    .unwrap();
    t.step("queue.add(n1)", queue.add("n1", "").run(con))
        .unwrap();
    t.step("queue.add(n2)", queue.add("n2", "").run(con))
        .unwrap();
    let urgent = in_group("a").priority(9);
    t.step(
        "queue.add_with(a7, group a, priority 9)",
        queue.add_with("a7", "", urgent).run(con),
    )
    .unwrap();
    t.step("queue.counts()", queue.counts().run(con)).unwrap();
    let first = take(&mut t, con, &queue, 1);
    take(&mut t, con, &queue, 1);
    take(&mut t, con, &queue, 3);
    t.note(
        "a nack sends a7 back to waiting; the next take moves it to its group, which has a turn",
    );
    let again = queue
        .nack_after(&first[0], Duration::ZERO, "again")
        .run(con);
    t.step("queue.nack(a7)", again.map(|_| ())).unwrap();
    take(&mut t, con, &queue, 4);
    t.step("queue.counts()", queue.counts().run(con)).unwrap();
    let off = Settings::new().group_turns(false);
    t.step(
        "queue.configure(group_turns(false))",
        queue.configure(&off).run(con),
    )
    .unwrap();
    t.note(
        "turns off: each take hands back the jobs of groups with a turn, then takes in rank order",
    );
    let d1 = in_group("d").priority(5);
    t.step(
        "queue.add_with(d1, group d, priority 5)",
        queue.add_with("d1", "", d1).run(con),
    )
    .unwrap();
    take(&mut t, con, &queue, 2);
    take(&mut t, con, &queue, MAX_TAKE);
    take(&mut t, con, &queue, MAX_TAKE);
    t.step("queue.counts()", queue.counts().run(con)).unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("work_queue_turns");
    let mut con = db.con();
    // delete_queue needs the queue paused.
    let queue = WorkQueue::new("work_queue:turns").unwrap();
    let transcript = scenario_paused_delete(&mut recorder.con(&mut con), &queue);
    assert_snapshot("work_queue_turns__scenario", &transcript);
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    let mut con = harness::cluster_con();
    let queue = WorkQueue::new("work_queue:turns").unwrap();
    assert_snapshot(
        "work_queue_turns__scenario",
        &scenario_paused_delete(&mut con, &queue),
    );
}

fn scenario_paused_delete(con: &mut dyn redis::ConnectionLike, queue: &WorkQueue) -> Transcript {
    let t = scenario(&mut *con);
    queue.pause().run(con).unwrap();
    while queue.delete(100, true).run(con).unwrap() > 0 {}
    t
}

/// A group at its concurrency limit loses its turn, keeps its jobs parked, and gets a
/// turn again when its job ends; the other groups go on meanwhile.
#[test]
fn a_group_at_its_limit_loses_its_turn_and_gets_it_back() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("limited").unwrap();
    let one = Limits::new().concurrency(1).unwrap();
    queue
        .configure(&Settings::new().group_turns(true).group_limits(one))
        .run(&mut con)
        .unwrap();
    for id in ["a1", "a2", "a3"] {
        queue.add_with(id, "", in_group("a")).run(&mut con).unwrap();
    }
    for id in ["b1", "b2"] {
        queue.add_with(id, "", in_group("b")).run(&mut con).unwrap();
    }
    let first = queue.take(MAX_TAKE).run(&mut con).unwrap();
    assert_eq!(shown(&first), ["a1 [a]", "b1 [b]"]);
    assert!(queue.take(MAX_TAKE).run(&mut con).unwrap().is_empty());
    let next = queue
        .ack_and_take(&first[..1], MAX_TAKE)
        .run(&mut con)
        .unwrap();
    assert_eq!(shown(&next), ["a2 [a]"]);
    let next = queue
        .ack_and_take(&first[1..], MAX_TAKE)
        .run(&mut con)
        .unwrap();
    assert_eq!(shown(&next), ["b2 [b]"]);
    let counts = queue.counts().run(&mut con).unwrap();
    assert_eq!((counts.parked, counts.leased), (1, 2));
}

/// Four threads take (one or two jobs a call) and ack 150 jobs of three groups with
/// backlogs of 80, 50 and 20 and ten without a group: every job is taken exactly once,
/// and after every take, while every group still has jobs to take, the groups' taken
/// counts differ by at most one (takes are recorded in the server's order: each take is
/// made and recorded under one lock; the acks run freely).
#[test]
fn concurrent_takers_take_turns_and_take_each_job_once() {
    let db = harness::fresh_db();
    let queue = WorkQueue::new("fair").unwrap();
    let mut con = db.con();
    queue
        .configure(&Settings::new().group_turns(true))
        .run(&mut con)
        .unwrap();
    let sizes = [("a", 80), ("b", 50), ("c", 20), ("", 10)];
    let mut all = BTreeSet::new();
    for (group, n) in sizes {
        for i in 0..n {
            let id = format!("{group}{i}");
            let options = if group.is_empty() {
                JobOptions::new()
            } else {
                in_group(group)
            };
            queue.add_with(&id, "", options).run(&mut con).unwrap();
            all.insert(id);
        }
    }
    let log: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
    thread::scope(|s| {
        for w in 0..4u64 {
            let (queue, log, db) = (&queue, &log, &db);
            s.spawn(move || {
                let mut con = db.con();
                loop {
                    let jobs = {
                        let mut log = log.lock().unwrap();
                        let jobs = queue.take(1 + w % 2).run(&mut con).unwrap();
                        for job in &jobs {
                            log.push((job.id.clone(), job.group.clone().unwrap_or_default()));
                        }
                        jobs
                    };
                    if jobs.is_empty() {
                        break;
                    }
                    for job in &jobs {
                        queue.ack(job).run(&mut con).unwrap();
                    }
                }
            });
        }
    });
    let log = log.into_inner().unwrap();
    let taken: BTreeSet<String> = log.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(log.len(), all.len(), "a job was taken twice");
    assert_eq!(taken, all);
    let total: BTreeMap<&str, usize> = sizes.iter().copied().collect();
    let mut counts: BTreeMap<&str, usize> = sizes.iter().map(|(g, _)| (*g, 0)).collect();
    for (i, (_, group)) in log.iter().enumerate() {
        *counts.get_mut(group.as_str()).unwrap() += 1;
        if counts.iter().all(|(g, n)| *n < total[g]) {
            let most = counts.values().max().unwrap();
            let least = counts.values().min().unwrap();
            assert!(most - least <= 1, "after take {i}: {counts:?}");
        }
    }
    let counts = queue.counts().run(&mut con).unwrap();
    assert_eq!(counts, Default::default());
}

/// Turns switched on and off with jobs in every state (waiting, parked, delayed, leased)
/// lose nothing: every job is taken exactly once, and nothing is left.
#[test]
fn switching_turns_on_and_off_with_jobs_queued_loses_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("switch").unwrap();
    let limit_b = Limits::new().concurrency(2).unwrap();
    let mut all = BTreeSet::new();
    let mut taken: Vec<String> = Vec::new();
    let mut add = |con: &mut redis::Connection, from: usize, to: usize| {
        for i in from..to {
            let id = format!("j{i}");
            let options = match i % 4 {
                0 => JobOptions::new(),
                1 => in_group("a"),
                2 => in_group("b").priority((i % 7) as u8),
                _ => in_group(&format!("g{}", i % 9)).delay(if i % 5 == 0 {
                    Duration::from_millis(30)
                } else {
                    Duration::ZERO
                }),
            };
            queue.add_with(&id, "", options).run(con).unwrap();
            all.insert(id);
        }
    };
    add(&mut con, 0, 120);
    let mut on = false;
    for round in 0..12 {
        on = !on;
        let settings = Settings::new().group_turns(on).group_limits(limit_b);
        queue.configure(&settings).run(&mut con).unwrap();
        let jobs = queue.take(3 + round % 5).run(&mut con).unwrap();
        // Some go back (a nack with no delay), the others are acked.
        for (i, job) in jobs.iter().enumerate() {
            if i == 0 && round % 3 == 0 {
                queue
                    .nack_after(job, Duration::ZERO, "again")
                    .run(&mut con)
                    .unwrap();
            } else {
                queue.ack(job).run(&mut con).unwrap();
                taken.push(job.id.clone());
            }
        }
        if round == 5 {
            add(&mut con, 120, 160);
        }
    }
    // Drain with turns off or on (the last setting), waiting out delays.
    harness::wait_until("every job taken", 5, || {
        let jobs = queue.take(MAX_TAKE).run(&mut con).unwrap();
        for job in &jobs {
            queue.ack(job).run(&mut con).unwrap();
            taken.push(job.id.clone());
        }
        queue.counts().run(&mut con).unwrap() == Default::default()
    });
    let unique: BTreeSet<String> = taken.iter().cloned().collect();
    assert_eq!(unique.len(), taken.len(), "a job was acked twice");
    assert_eq!(unique, all);
    let left = harness::dump(&mut con);
    assert!(
        !left
            .keys()
            .any(|k| k.ends_with(b":turns") || k.ends_with(b":parked") || k.ends_with(b":waiting")),
        "{:?}",
        left.keys()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect::<Vec<_>>()
    );
}

/// Data these scripts did not write is refused before any write, the keyspace left
/// byte-identical: a turn that is no turn number (take and add), and a parked member of
/// a group with a turn that take.lua did not write.
#[test]
fn damaged_turns_and_parked_members_are_refused_with_nothing_written() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("damaged").unwrap();
    queue
        .configure(&Settings::new().group_turns(true))
        .run(&mut con)
        .unwrap();
    queue
        .add_with("a1", "", in_group("a"))
        .run(&mut con)
        .unwrap();
    queue.add("n1", "").run(&mut con).unwrap();

    harness::cmd(&mut con, &["ZADD", "{damaged}:turns", "0.5", "a"]);
    let before = harness::dump(&mut con);
    assert_code(queue.take(5).run(&mut con), "BAD_TURNS");
    assert_code(
        queue.add_with("a2", "", in_group("a")).run(&mut con),
        "BAD_TURNS",
    );
    assert_eq!(harness::dump(&mut con), before);

    harness::cmd(&mut con, &["ZADD", "{damaged}:turns", "1", "a"]);
    // Group a's range of parked: 8 hex digits of its length, the group, a 16-digit rank.
    harness::cmd(
        &mut con,
        &[
            "ZADD",
            "{damaged}:parked",
            "0",
            "00000001a000000000000000x-foreign",
        ],
    );
    let before = harness::dump(&mut con);
    assert_code(queue.take(5).run(&mut con), "BAD_PARKED");
    assert_eq!(harness::dump(&mut con), before);
}
