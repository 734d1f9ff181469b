//! The queue's history: completed jobs kept by count and by age (BullMQ's
//! `removeOnComplete`), jobs that their own options drop when they end, and `clean` with a
//! grace time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use redis_patterns::scripts::work_queue as script;
use redis_patterns::work_queue::{
    Changes, Done, JobEnd, JobOptions, Nacked, Settings, State, Stop, WorkQueue,
};

use crate::harness::{self, InMode, Transcript, assert_code, assert_snapshot};
use crate::step;

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let queue = WorkQueue::new("work_queue:history")
        .unwrap()
        .with_max_deliveries(1)
        .unwrap();
    let _ = step!(
        t,
        con,
        queue.configure(&Changes::new().completed_max(2).unwrap())
    );
    for id in ["a", "b", "c"] {
        let _ = step!(t, con, queue.add(id, "x"));
    }
    let _ = step!(
        t,
        con,
        queue.add_with("quiet", "x", JobOptions::new().remove_on_complete())
    );
    let _ = step!(
        t,
        con,
        queue.add_with("doomed", "x", JobOptions::new().remove_on_fail())
    );
    let jobs = queue.take(10).in_mode().run(con).unwrap();
    t.note("take(10): a, b, c, quiet, doomed");
    let job = |id: &str| jobs.iter().find(|j| j.id == id).unwrap();
    let _ = step!(t, con, queue.ack_with(job("a"), "A").map(|_| Ok("acked")));
    let _ = step!(t, con, queue.ack(job("b")).map(|_| Ok("acked")));
    let _ = step!(t, con, queue.counts());
    let _ = step!(
        t,
        con,
        queue.job("a").map(|i| Ok(i.map(|i| (
            i.state,
            i.result.clone(),
            i.started_ms.is_some(),
            i.ran_for().is_some()
        ))))
    );
    // The third completed job drops the oldest: a queue that keeps 2 keeps 2.
    let done = [
        Done::with_result(job("c"), "C").unwrap(),
        job("quiet").into(),
    ];
    let _ = step!(t, con, queue.ack_and_take(done, 1).map(|j| Ok(j.len())));
    let _ = step!(t, con, queue.counts());
    let _ = step!(
        t,
        con,
        queue
            .list(State::Completed, 0, 10)
            .map(|rows| Ok(rows.into_iter().map(|r| r.id).collect::<Vec<_>>()))
    );
    let _ = step!(t, con, queue.job("a").map(|i| Ok(i.is_some())));
    let _ = step!(t, con, queue.job("quiet").map(|i| Ok(i.is_some())));
    // A kept id is a duplicate until its completed job is dropped.
    let _ = step!(t, con, queue.add("b", "again"));
    let dead = queue
        .nack_after(job("doomed"), Duration::ZERO, "boom")
        .in_mode()
        .run(con);
    t.step(
        "queue.nack(doomed)",
        dead.map(|n| matches!(n, Nacked::Dead { .. })),
    )
    .unwrap();
    let _ = step!(t, con, queue.job("doomed").map(|i| Ok(i.is_some())));
    // With events off, a wait learns a kept job's end from its record.
    let end = queue.wait_for_job(con, "c", Duration::from_secs(5));
    t.step("queue.wait_for_job(c)", end).unwrap();
    let _ = step!(
        t,
        con,
        queue.clean_ended_before(State::Completed, Duration::from_secs(3_600), 10)
    );
    let _ = step!(
        t,
        con,
        queue.clean_ended_before(State::Waiting, Duration::from_secs(1), 10)
    );
    let _ = step!(t, con, queue.clean(State::Completed, 10));
    let _ = step!(t, con, queue.counts());
    let _ = step!(t, con, queue.pause());
    let _ = step!(t, con, queue.delete(10, true));
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let recorder = crate::recorder::Recorder::new("work_queue_history").within_one_minute(&mut con);
    assert_snapshot(
        "work_queue_history__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "work_queue_history__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// A completed job keeps what an operator reads: its payload, deliveries, group and
/// priority, its last error from an earlier delivery, its progress and log lines, when
/// it started and finished, and its result; its lease token goes, so it is acked once.
#[test]
fn a_completed_job_keeps_its_record() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("history record").unwrap();
    queue
        .configure(&Changes::new().completed_max(10).unwrap())
        .run(&mut con)
        .unwrap();
    queue
        .add_with("r", "payload", JobOptions::new().priority(7).group("team"))
        .run(&mut con)
        .unwrap();
    let first = queue.take(1).run(&mut con).unwrap().remove(0);
    queue
        .nack_after(&first, Duration::ZERO, "flaky")
        .run(&mut con)
        .unwrap();
    let job = queue.take(1).run(&mut con).unwrap().remove(0);
    queue.progress(&job, "90%").run(&mut con).unwrap();
    queue.log(&job, "sent").run(&mut con).unwrap();
    let acked_at = queue.ack_with(&job, "done").run(&mut con).unwrap();
    let info = queue.job("r").run(&mut con).unwrap().unwrap();
    assert_eq!(info.state, State::Completed);
    assert_eq!(info.payload, b"payload");
    assert_eq!((info.deliveries, info.priority), (2, 7));
    assert_eq!(info.group.as_deref(), Some("team"));
    assert_eq!(info.last_error.as_deref(), Some(&b"flaky"[..]));
    assert_eq!(info.progress.as_deref(), Some(&b"90%"[..]));
    assert_eq!(info.result.as_deref(), Some(&b"done"[..]));
    assert_eq!(info.at_ms, Some(acked_at));
    let started = info.started_ms.expect("when its last delivery started");
    assert!(started <= acked_at && started + 60_000 > acked_at);
    assert_eq!(
        info.ran_for(),
        Some(Duration::from_millis(acked_at - started))
    );
    assert_eq!(
        queue.logs("r", 0, 10).run(&mut con).unwrap().lines,
        [b"sent".to_vec()]
    );
    assert_code(queue.ack(&job).run(&mut con), "LEASE_LOST");
    let listed = queue.list(State::Completed, 0, 10).run(&mut con).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].at_ms, listed[0].started_ms),
        (Some(acked_at), Some(started))
    );
    // Removed like any job that no worker holds, with all of its fields.
    assert_eq!(
        queue.remove("r").run(&mut con).unwrap(),
        redis_patterns::work_queue::Removed::From(State::Completed)
    );
    let jobs: Vec<String> = redis::cmd("HKEYS")
        .arg(queue.keys()[5])
        .query(&mut con)
        .unwrap();
    assert_eq!(jobs, ["#settings", "#seq"], "no field of the job is left");
}

/// Retention never keeps more than its count: 8 workers ack 400 jobs, one per call and
/// in batches, while a reader watches the set; a lowered count and age are met over the
/// next calls, and a queue that keeps none drains what it kept.
#[test]
fn retention_never_keeps_more_than_its_count() {
    let db = harness::fresh_db();
    let queue = WorkQueue::new("history count").unwrap();
    let mut con = db.con();
    let keep = 25;
    queue
        .configure(
            &Settings::new()
                .keep_completed(keep, Duration::from_secs(3_600))
                .unwrap(),
        )
        .run(&mut con)
        .unwrap();
    for i in 0..400 {
        queue.add(&format!("j{i}"), "x").run(&mut con).unwrap();
    }
    let completed = queue.keys()[14];
    let done = AtomicBool::new(false);
    let most = thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut con = db.con();
            let mut most = 0;
            while !done.load(Ordering::SeqCst) {
                let n: u64 = redis::cmd("ZCARD").arg(completed).query(&mut con).unwrap();
                most = most.max(n);
            }
            most
        });
        let workers: Vec<_> = (0..8)
            .map(|w| {
                let (db, queue) = (&db, &queue);
                s.spawn(move || {
                    let mut con = db.con();
                    let mut jobs = queue.take(1 + w % 3).run(&mut con).unwrap();
                    while !jobs.is_empty() {
                        jobs = if w % 2 == 0 {
                            queue.ack_and_take(&jobs, 1 + w % 3).run(&mut con).unwrap()
                        } else {
                            for job in &jobs {
                                queue.ack(job).run(&mut con).unwrap();
                            }
                            queue.take(1 + w % 3).run(&mut con).unwrap()
                        };
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        done.store(true, Ordering::SeqCst);
        watcher.join().unwrap()
    });
    assert!(most <= keep, "kept {most} completed jobs, more than {keep}");
    let counts = queue.counts().run(&mut con).unwrap();
    assert_eq!(
        (counts.completed, counts.waiting, counts.leased),
        (keep, 0, 0)
    );
    // The newest 25 are kept, each with its record.
    let kept = queue.list(State::Completed, 0, 100).run(&mut con).unwrap();
    assert_eq!(kept.len() as u64, keep);
    assert!(
        kept.iter()
            .all(|job| job.payload == b"x" && job.started_ms.is_some())
    );

    // A lowered count: each take drops up to its limit beyond it.
    queue
        .configure(&Changes::new().completed_max(5).unwrap())
        .run(&mut con)
        .unwrap();
    queue.take(10).run(&mut con).unwrap();
    assert_eq!(queue.counts().run(&mut con).unwrap().completed, 15);
    queue.take(10).run(&mut con).unwrap();
    assert_eq!(queue.counts().run(&mut con).unwrap().completed, 5);
    // An age that every kept job passed.
    queue
        .configure(
            &Changes::new()
                .completed_age(Duration::from_millis(1))
                .unwrap(),
        )
        .run(&mut con)
        .unwrap();
    harness::wait_until("every kept job past its age", 1, || {
        queue.take(10).run(&mut con).unwrap();
        queue.counts().run(&mut con).unwrap().completed == 0
    });
    // Keeping none: what was kept goes, `limit` per take, and nothing more is kept.
    queue
        .configure(
            &Changes::new()
                .completed_max(10)
                .unwrap()
                .completed_age(Duration::from_secs(60))
                .unwrap(),
        )
        .run(&mut con)
        .unwrap();
    for i in 0..4 {
        queue.add(&format!("k{i}"), "x").run(&mut con).unwrap();
    }
    let jobs = queue.take(4).run(&mut con).unwrap();
    queue.ack_and_take(&jobs, 1).run(&mut con).unwrap();
    assert_eq!(queue.counts().run(&mut con).unwrap().completed, 4);
    queue
        .configure(&Changes::new().completed_max(0).unwrap())
        .run(&mut con)
        .unwrap();
    queue.add("last", "x").run(&mut con).unwrap();
    let last = queue.take(1).run(&mut con).unwrap();
    assert_eq!(queue.counts().run(&mut con).unwrap().completed, 3);
    queue.ack_and_take(&last, 3).run(&mut con).unwrap();
    assert_eq!(queue.counts().run(&mut con).unwrap().completed, 0);
    assert_eq!(queue.job("last").run(&mut con).unwrap(), None);
}

/// Workers keep their handlers' results in the history, and `wait_for_job` reads them
/// there after the results' own time has passed.
#[test]
fn a_worker_keeps_results_in_the_history() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("history worker").unwrap();
    queue
        .configure(
            &Changes::new()
                .completed_max(100)
                .unwrap()
                .result_ttl(Duration::from_millis(1))
                .unwrap(),
        )
        .run(&mut con)
        .unwrap();
    for i in 0..20 {
        queue
            .add(&format!("w{i}"), format!("{i}"))
            .run(&mut con)
            .unwrap();
    }
    let stop = Stop::new();
    thread::scope(|s| {
        let worker = s.spawn(|| {
            let worker = queue.worker().concurrency(4).unwrap();
            worker.run_concurrent(&db.client, &stop, |job| {
                Ok::<_, String>(format!("twice {}", 2 * job.payload_as::<u64>().unwrap()))
            })
        });
        harness::wait_until("20 jobs completed", 1, || {
            queue.counts().run(&mut con).unwrap().completed == 20 || worker.is_finished()
        });
        stop.stop();
        worker.join().unwrap().unwrap();
    });
    harness::wait_until("w7's result past its time", 1, || {
        queue.result("w7").run(&mut con).unwrap().is_none()
    });
    assert_eq!(
        queue
            .wait_for_job(&mut con, "w7", Duration::from_secs(5))
            .unwrap(),
        Some(JobEnd::Completed(Some(b"twice 14".to_vec())))
    );
}

/// Bad settings, a bad grace, damaged history and keys of the wrong type are refused
/// with their codes, and nothing is written.
#[test]
fn bad_history_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("history bad").unwrap();
    assert!(Changes::new().completed_max(10_000_001).is_err());
    assert!(Changes::new().completed_age(Duration::ZERO).is_err());
    assert!(
        Settings::new()
            .keep_completed(1, Duration::from_millis(1_000_000_000_001))
            .is_err()
    );
    queue
        .configure(&Changes::new().completed_max(10).unwrap())
        .run(&mut con)
        .unwrap();
    queue.add("a", "x").run(&mut con).unwrap();
    let job = queue.take(1).run(&mut con).unwrap().remove(0);
    let before = harness::dump(&mut con);
    let configure_keys = crate::work_queue::keys_of(&queue, &script::CONFIGURE);
    for (at, value, code) in [
        (13, "10000001", "BAD_COMPLETED_MAX"),
        (13, "-1", "BAD_COMPLETED_MAX"),
        (14, "0", "BAD_COMPLETED_AGE"),
        (14, "1.5", "BAD_COMPLETED_AGE"),
    ] {
        let mut args = vec![""; 15];
        args[at] = value;
        assert_code(
            harness::eval(&mut con, &script::CONFIGURE, &configure_keys, &args),
            code,
        );
    }
    let clean_keys = crate::work_queue::keys_of(&queue, &script::CLEAN);
    for (args, code) in [
        (["waiting", "1", "1"], "BAD_GRACE"),
        (["dead", "1", "-1"], "BAD_GRACE"),
        (["completed", "1", "1000000000001"], "BAD_GRACE"),
        (["blocked", "1", "0"], "BAD_STATE"),
    ] {
        assert_code(
            harness::eval(&mut con, &script::CLEAN, &clean_keys, &args),
            code,
        );
    }
    assert_code(
        queue
            .clean_ended_before(State::Delayed, Duration::from_millis(1), 1)
            .run(&mut con),
        "BAD_GRACE",
    );
    assert_eq!(harness::dump(&mut con), before);

    // The completed set of another type: the ack is refused, the job still held.
    harness::cmd(&mut con, &["SET", queue.keys()[14], "not a zset"]);
    let before = harness::dump(&mut con);
    assert_code(queue.ack(&job).run(&mut con), "WRONGTYPE");
    assert_code(queue.ack_and_take([&job], 1).run(&mut con), "WRONGTYPE");
    assert_code(queue.counts().run(&mut con), "WRONGTYPE");
    assert_eq!(harness::dump(&mut con), before);
    harness::cmd(&mut con, &["DEL", queue.keys()[14]]);

    // Options another client wrote: refused by the ack that reads them.
    harness::cmd(&mut con, &["HSET", queue.keys()[5], "o:a", "0 w 0 0 x"]);
    let before = harness::dump(&mut con);
    assert_code(queue.ack(&job).run(&mut con), "BAD_JOBS");
    assert_code(queue.ack_and_take([&job], 1).run(&mut con), "BAD_JOBS");
    assert_eq!(harness::dump(&mut con), before);
    harness::cmd(&mut con, &["HDEL", queue.keys()[5], "o:a"]);
    queue.ack(&job).run(&mut con).unwrap();

    // A start time another client wrote: refused by the reads.
    harness::cmd(&mut con, &["HSET", queue.keys()[5], "b:a", "soon"]);
    assert_code(queue.job("a").run(&mut con), "BAD_TIME");
    assert_code(queue.list(State::Completed, 0, 1).run(&mut con), "BAD_JOBS");
}
