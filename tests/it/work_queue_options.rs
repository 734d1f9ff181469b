//! A job's own options: its attempts and backoff (`add.lua`'s retry options, applied by
//! `nack.lua`, by `take.lua` for a lapsed lease, and so by every worker), LIFO order, and
//! deduplication windows (`add_deduplicated.lua`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

use redis_patterns::scripts::work_queue as script;
use redis_patterns::work_queue::{
    Backoff, Deduplicated, Deduplication, Job, JobOptions, Nacked, State, Stop, WorkQueue,
};

use crate::harness::{self, InMode, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// A queue whose jobs carry options of their own: a LIFO job goes first, a job of one
/// attempt dies at its first failure, a job without backoff comes back at once, and a job
/// without options of its own keeps the queue's.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let queue = WorkQueue::new("work_queue:options")
        .unwrap()
        .with_backoff(Backoff::Fixed(Duration::from_secs(60)));
    let _ = step!(t, con, queue.add("plain", "x"));
    let _ = step!(
        t,
        con,
        queue.add_with("last", "x", JobOptions::new().lifo())
    );
    let _ = step!(
        t,
        con,
        queue.add_with("once", "x", JobOptions::new().attempts(1))
    );
    let _ = step!(
        t,
        con,
        queue.add_with(
            "again",
            "x",
            JobOptions::new()
                .attempts(3)
                .backoff(Backoff::Fixed(Duration::ZERO))
        )
    );
    let jobs = queue.take(10).in_mode().run(con);
    let shown = jobs
        .as_ref()
        .map(|jobs| {
            jobs.iter()
                .map(|j| (j.id.clone(), j.delivery))
                .collect::<Vec<_>>()
        })
        .map_err(Clone::clone);
    t.step("queue.take(10)", shown).unwrap();
    let jobs = jobs.unwrap();
    let _ = step!(t, con, queue.log(&jobs[0], "sending"));
    let _ = step!(t, con, queue.logs("last", 0, 10));
    for job in &jobs {
        let nacked = queue.nack(job, "boom").in_mode().run(con).map(|n| match n {
            Nacked::Retry {
                state: State::Waiting,
                ..
            } => "retry at once (waiting)",
            Nacked::Retry { .. } => "retry after the backoff (delayed)",
            Nacked::Dead { .. } => "dead",
        });
        t.step(&format!("queue.nack({})", job.id), nacked).unwrap();
    }
    let _ = step!(t, con, queue.counts());
    let _ = step!(
        t,
        con,
        queue
            .job("again")
            .map(|i| Ok(i.map(|i| (i.state, i.deliveries))))
    );
    // A window of 100 ms under the deduplication id "user:7": the second add is
    // deduplicated and replaces the first job's payload; once the window has passed, the
    // next add opens a new one.
    let window = Deduplication::new("user:7", Duration::from_millis(100))
        .unwrap()
        .replace();
    let _ = step!(
        t,
        con,
        queue.add_deduplicated("mail-1", "v1", JobOptions::new(), &window)
    );
    let _ = step!(
        t,
        con,
        queue.add_deduplicated("mail-2", "v2", JobOptions::new(), &window)
    );
    let _ = step!(
        t,
        con,
        queue.job("mail-1").map(|i| Ok(i.map(|i| i.payload)))
    );
    let _ = step!(t, con, queue.remove("mail-1"));
    harness::wait_until_gone(con, "{work_queue:options}:dedup:user:7");
    t.note("wait until the window has passed");
    let _ = step!(
        t,
        con,
        queue.add_deduplicated("mail-3", "v3", JobOptions::new(), &window)
    );
    harness::wait_until_gone(con, "{work_queue:options}:dedup:user:7");
    t.note("wait until the window has passed");
    let _ = step!(t, con, queue.pause());
    let _ = step!(t, con, queue.delete(10, true));
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let recorder = crate::recorder::Recorder::new("work_queue_options").within_one_minute(&mut con);
    assert_snapshot(
        "work_queue_options__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "work_queue_options__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// Takes the one job the queue holds.
fn take_one(con: &mut redis::Connection, queue: &WorkQueue) -> Job {
    let mut jobs = queue.take(1).run(con).unwrap();
    assert_eq!(jobs.len(), 1, "one job to take");
    jobs.remove(0)
}

/// Nacks `job` with a delay of 0 (the caller's), answering what happened.
fn nack(con: &mut redis::Connection, queue: &WorkQueue, job: &Job) -> Nacked {
    queue
        .nack_after(job, Duration::ZERO, "boom")
        .run(con)
        .unwrap()
}

/// A job's attempts replace the caller's most deliveries, both ways; `fail` still ends
/// it at once.
#[test]
fn a_jobs_attempts_win_over_the_callers_max_deliveries() {
    let db = harness::fresh_db();
    let mut con = db.con();
    // The caller allows 3 deliveries.
    let queue = WorkQueue::new("attempts")
        .unwrap()
        .with_max_deliveries(3)
        .unwrap();
    queue
        .add_with("once", "x", JobOptions::new().attempts(1))
        .run(&mut con)
        .unwrap();
    let job = take_one(&mut con, &queue);
    assert!(matches!(nack(&mut con, &queue, &job), Nacked::Dead { .. }));

    queue
        .add_with("five", "x", JobOptions::new().attempts(5))
        .run(&mut con)
        .unwrap();
    for delivery in 1..=5 {
        let job = take_one(&mut con, &queue);
        assert_eq!(job.delivery, delivery);
        let nacked = nack(&mut con, &queue, &job);
        if delivery < 5 {
            assert!(
                matches!(
                    nacked,
                    Nacked::Retry {
                        state: State::Waiting,
                        ..
                    }
                ),
                "delivery {delivery}: {nacked:?}"
            );
        } else {
            assert!(matches!(nacked, Nacked::Dead { .. }), "{nacked:?}");
        }
    }

    queue
        .add_with("doomed", "x", JobOptions::new().attempts(1000))
        .run(&mut con)
        .unwrap();
    let job = take_one(&mut con, &queue);
    assert!(matches!(
        queue.fail(&job, "for good").run(&mut con).unwrap(),
        Nacked::Dead { .. }
    ));
    // A job without attempts of its own keeps the caller's 3.
    queue.add("plain", "x").run(&mut con).unwrap();
    for delivery in 1..=3 {
        let job = take_one(&mut con, &queue);
        let dead = matches!(nack(&mut con, &queue, &job), Nacked::Dead { .. });
        assert_eq!(dead, delivery == 3);
    }
    assert_eq!(queue.counts().run(&mut con).unwrap().dead, 4);
}

/// A lease that runs out counts against the job's own attempts too.
#[test]
fn a_lapsed_lease_counts_against_the_jobs_attempts() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let lease = Duration::from_millis(20);
    // The caller allows one delivery; the job asks for two.
    let queue = WorkQueue::new("lapses")
        .unwrap()
        .with_max_deliveries(1)
        .unwrap()
        .with_lease(lease)
        .unwrap();
    queue
        .add_with("twice", "x", JobOptions::new().attempts(2))
        .run(&mut con)
        .unwrap();
    let first = take_one(&mut con, &queue);
    harness::wait_until_server_ms(&mut con, first.deadline_ms + 1);
    // The take that finds the lease run out hands the job back and takes it again.
    let second = take_one(&mut con, &queue);
    assert_eq!((second.id.as_str(), second.delivery), ("twice", 2));
    harness::wait_until_server_ms(&mut con, second.deadline_ms + 1);
    assert!(queue.take(1).run(&mut con).unwrap().is_empty());
    let info = queue.job("twice").run(&mut con).unwrap().unwrap();
    assert_eq!(info.state, State::Dead);
}

/// A job's backoff replaces the delay the caller gives: none, fixed, or exponential at a
/// point from half of its delay to all of it.
#[test]
fn a_jobs_backoff_wins_over_the_callers_delay() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("backoff").unwrap();
    let retry_after = |con: &mut redis::Connection, id: &str, options: JobOptions| {
        queue.add_with(id, "x", options).run(con).unwrap();
        let job = take_one(con, &queue);
        let before = harness::server_ms(con);
        let nacked = queue
            .nack_after(&job, Duration::from_secs(7), "boom")
            .run(con)
            .unwrap();
        let after = harness::server_ms(con);
        queue.remove(id).run(con).unwrap();
        match nacked {
            Nacked::Retry { state, at_ms } => (
                state,
                at_ms.saturating_sub(before),
                at_ms.saturating_sub(after),
            ),
            dead => panic!("{id}: {dead:?}"),
        }
    };
    let (state, _, _) = retry_after(
        &mut con,
        "none",
        JobOptions::new().backoff(Backoff::Fixed(Duration::ZERO)),
    );
    assert_eq!(state, State::Waiting);
    let (state, most, least) = retry_after(
        &mut con,
        "fixed",
        JobOptions::new().backoff(Backoff::Fixed(Duration::from_secs(60))),
    );
    assert_eq!(state, State::Delayed);
    assert!((least..=most).contains(&60_000), "{least}..={most}");
    // Without a backoff of its own, the caller's 7 s.
    let (_, most, least) = retry_after(&mut con, "caller's", JobOptions::new().attempts(9));
    assert!((least..=most).contains(&7_000), "{least}..={most}");

    // Exponential from 40 s, at most 100 s: its first retry from 20 s to 40 s; many jobs
    // spread over that range.
    let exponential = Backoff::Exponential {
        base: Duration::from_secs(40),
        max: Duration::from_secs(100),
    };
    let mut delays = Vec::new();
    for n in 0..40 {
        let (state, most, least) = retry_after(
            &mut con,
            &format!("exp-{n}"),
            JobOptions::new().backoff(exponential),
        );
        assert_eq!(state, State::Delayed);
        assert!(most >= 20_000 && least <= 40_000, "{least}..={most}");
        delays.push(most);
    }
    let (low, high) = (delays.iter().min().unwrap(), delays.iter().max().unwrap());
    assert!(
        *low < 25_000 && *high > 35_000,
        "jittered over 20..40 s: {low}..{high}"
    );
    // Its later deliveries double, up to the 100 s cap: the job is promoted to take it
    // again at once.
    queue
        .add_with("exp", "x", JobOptions::new().backoff(exponential))
        .run(&mut con)
        .unwrap();
    for (delivery, full) in [(1, 40_000), (2, 80_000), (3, 100_000), (4, 100_000)] {
        let job = take_one(&mut con, &queue);
        assert_eq!(job.delivery, delivery);
        let before = harness::server_ms(&mut con);
        let Nacked::Retry { at_ms, .. } = nack(&mut con, &queue, &job) else {
            panic!("exp died at delivery {delivery}");
        };
        let after = harness::server_ms(&mut con);
        assert!(
            at_ms >= before + full / 2 && at_ms <= after + full,
            "delivery {delivery}: {} ms",
            at_ms - before
        );
        assert!(queue.promote("exp").run(&mut con).unwrap());
    }
}

/// Many workers whose handler always fails: every job is delivered exactly its own
/// attempts (or the worker's, for a job with none), then dies, none twice at once.
#[test]
fn workers_deliver_each_job_its_own_attempts() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("many-attempts")
        .unwrap()
        .with_max_deliveries(2)
        .unwrap()
        .with_backoff(Backoff::Fixed(Duration::from_secs(60)));
    let mut expected = HashMap::new();
    for n in 0..60u32 {
        let id = format!("job-{n}");
        let attempts = n % 4;
        let options = match attempts {
            0 => JobOptions::new().backoff(Backoff::Fixed(Duration::ZERO)),
            _ => JobOptions::new()
                .attempts(attempts)
                .backoff(Backoff::Fixed(Duration::ZERO)),
        };
        queue.add_with(&id, "x", options).run(&mut con).unwrap();
        expected.insert(id, if attempts == 0 { 2 } else { attempts });
    }
    let stop = Stop::new();
    let seen = Mutex::new(HashMap::<String, Vec<u32>>::new());
    thread::scope(|scope| {
        for _ in 0..4 {
            let (db, queue, stop, seen) = (&db, &queue, &stop, &seen);
            scope.spawn(move || {
                queue
                    .worker()
                    .poll(Duration::from_millis(10))
                    .run(&db.client, stop, |job| {
                        let mut seen = seen.lock().unwrap();
                        seen.entry(job.id.clone()).or_default().push(job.delivery);
                        Err::<(), _>("always fails")
                    })
                    .unwrap()
            });
        }
        harness::wait_until("every job dead", 20, || {
            queue.counts().run(&mut db.con()).unwrap().dead == 60
        });
        stop.stop();
    });
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 60);
    for (id, deliveries) in &seen {
        let mut sorted = deliveries.clone();
        sorted.sort_unstable();
        let want: Vec<u32> = (1..=expected[id]).collect();
        assert_eq!(sorted, want, "{id}");
    }
}

/// A LIFO job goes ahead of the jobs waiting at its priority; priority still comes
/// first, and a retried job keeps its place.
#[test]
fn lifo_jobs_go_ahead_of_their_priority() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("lifo").unwrap();
    let add = |con: &mut redis::Connection, id: &str, options: JobOptions| {
        queue.add_with(id, id, options).run(con).unwrap();
    };
    add(&mut con, "a", JobOptions::new());
    add(&mut con, "b", JobOptions::new());
    add(&mut con, "c", JobOptions::new().lifo());
    add(&mut con, "d", JobOptions::new().lifo());
    add(&mut con, "high", JobOptions::new().priority(1));
    add(&mut con, "high-lifo", JobOptions::new().priority(1).lifo());
    let order: Vec<String> = (0..6).map(|_| take_one(&mut con, &queue).id).collect();
    assert_eq!(order, ["high-lifo", "high", "d", "c", "a", "b"]);

    add(&mut con, "e", JobOptions::new());
    add(&mut con, "f", JobOptions::new().lifo());
    let f = take_one(&mut con, &queue);
    assert_eq!(f.id, "f");
    nack(&mut con, &queue, &f);
    assert_eq!(take_one(&mut con, &queue).id, "f");
}

/// Retry options out of range are refused before any I/O; retry options that these
/// scripts did not write are refused by nack and take, with nothing written.
#[test]
fn bad_retry_options_are_refused_and_write_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("bad-options")
        .unwrap()
        .with_lease(Duration::from_millis(20))
        .unwrap();
    let before = harness::dump(&mut con);
    for (options, what) in [
        (JobOptions::new().attempts(0), "attempts"),
        (JobOptions::new().attempts(1001), "attempts"),
        (
            JobOptions::new().backoff(Backoff::Fixed(Duration::from_millis(1_000_000_000_001))),
            "backoff_delay",
        ),
        (
            JobOptions::new().backoff(Backoff::Exponential {
                base: Duration::from_secs(1),
                max: Duration::from_millis(1_000_000_000_001),
            }),
            "backoff_max",
        ),
    ] {
        assert_invalid(queue.add_with("x", "x", options).run(&mut con), what);
    }
    assert_eq!(harness::dump(&mut con), before);

    queue
        .add_with("a", "x", JobOptions::new().attempts(3))
        .run(&mut con)
        .unwrap();
    let job = take_one(&mut con, &queue);
    for foreign in ["3", "3 x 0 0", "1001 f 0 0", "3 e -1 0", "3 f 0 1e3", ""] {
        harness::cmd(&mut con, &["HSET", "{bad-options}:jobs", "o:a", foreign]);
        let held = harness::dump(&mut con);
        assert_code(queue.nack(&job, "boom").run(&mut con), "BAD_JOBS");
        assert_eq!(harness::dump(&mut con), held, "nack with o:a = {foreign:?}");
        // The same record met by take, once the lease ran out.
        harness::wait_until_server_ms(&mut con, job.deadline_ms + 1);
        assert_code(queue.take(1).run(&mut con), "BAD_JOBS");
        assert_eq!(harness::dump(&mut con), held, "take with o:a = {foreign:?}");
    }
}

/// Throttle: an add within the window adds nothing and says which job holds it, whatever
/// became of that job; the window ends with its time.
#[test]
fn a_deduplication_window_throttles_adds() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("throttle").unwrap();
    let window = Deduplication::new("report", Duration::from_millis(300)).unwrap();
    let add = |con: &mut redis::Connection, id: &str| {
        queue
            .add_deduplicated(id, id, JobOptions::new(), &window)
            .run(con)
            .unwrap()
    };
    assert_eq!(add(&mut con, "a"), Deduplicated::Added(State::Waiting));
    let in_window = |state| Deduplicated::InWindow {
        job: "a".into(),
        state,
        extended: false,
        replaced: false,
    };
    assert_eq!(add(&mut con, "b"), in_window(Some(State::Waiting)));
    let job = take_one(&mut con, &queue);
    queue.ack(&job).run(&mut con).unwrap();
    // Acked, but the window holds on.
    assert_eq!(add(&mut con, "c"), in_window(None));
    assert_eq!(queue.counts().run(&mut con).unwrap().waiting, 0);
    harness::wait_until_gone(&mut con, "{throttle}:dedup:report");
    assert_eq!(add(&mut con, "d"), Deduplicated::Added(State::Waiting));

    // An id already in the queue is refused as add refuses it, and opens no window.
    let other = Deduplication::new("other", Duration::from_secs(60)).unwrap();
    assert_eq!(
        queue
            .add_deduplicated("d", "x", JobOptions::new(), &other)
            .run(&mut con)
            .unwrap(),
        Deduplicated::Duplicate(State::Waiting)
    );
    let open: bool = redis::cmd("EXISTS")
        .arg("{throttle}:dedup:other")
        .query(&mut con)
        .unwrap();
    assert!(!open);
}

/// Extend starts the window again; replace gives the waiting job the newest payload, and
/// a delayed one the newest delay; a leased job keeps its payload.
#[test]
fn a_deduplication_window_extends_and_replaces() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("debounce").unwrap();
    let key = "{debounce}:dedup:doc";
    let window = Deduplication::new("doc", Duration::from_secs(100))
        .unwrap()
        .extend()
        .replace();
    let later = |secs| JobOptions::new().delay(Duration::from_secs(secs));
    let first = queue
        .add_deduplicated("v1", "one", later(10), &window)
        .run(&mut con)
        .unwrap();
    assert_eq!(first, Deduplicated::Added(State::Delayed));
    harness::cmd(&mut con, &["PEXPIRE", key, "5000"]);
    let before = harness::server_ms(&mut con);
    let second = queue
        .add_deduplicated("v2", "two", later(60), &window)
        .run(&mut con)
        .unwrap();
    let after = harness::server_ms(&mut con);
    assert_eq!(
        second,
        Deduplicated::InWindow {
            job: "v1".into(),
            state: Some(State::Delayed),
            extended: true,
            replaced: true,
        }
    );
    let ttl: i64 = redis::cmd("PTTL").arg(key).query(&mut con).unwrap();
    assert!(ttl > 90_000, "the window started again: {ttl} ms left");
    let info = queue.job("v1").run(&mut con).unwrap().unwrap();
    assert_eq!(info.payload, b"two");
    let due = info.at_ms.unwrap();
    assert!(
        due >= before + 60_000 && due <= after + 60_000,
        "due {} ms after the add",
        due - before
    );
    assert!(queue.job("v2").run(&mut con).unwrap().is_none());

    // Held by a worker: its payload stays.
    queue.promote("v1").run(&mut con).unwrap();
    let job = take_one(&mut con, &queue);
    let third = queue
        .add_deduplicated("v3", "three", JobOptions::new(), &window)
        .run(&mut con)
        .unwrap();
    assert_eq!(
        third,
        Deduplicated::InWindow {
            job: "v1".into(),
            state: Some(State::Leased),
            extended: true,
            replaced: false,
        }
    );
    assert_eq!(job.payload, b"two");
    assert_eq!(
        queue.job("v1").run(&mut con).unwrap().unwrap().payload,
        b"two"
    );
}

/// 8 producers adding under one deduplication id at once add one job.
#[test]
fn concurrent_adds_under_one_deduplication_id_add_one_job() {
    let db = harness::fresh_db();
    let queue = WorkQueue::new("dedup-race").unwrap();
    let window = Deduplication::new("once", Duration::from_secs(60)).unwrap();
    let added = Mutex::new(Vec::new());
    thread::scope(|scope| {
        for producer in 0..8 {
            let (db, queue, window, added) = (&db, &queue, &window, &added);
            scope.spawn(move || {
                let mut con = db.con();
                for n in 0..50 {
                    let id = format!("p{producer}-{n}");
                    let outcome = queue
                        .add_deduplicated(&id, "x", JobOptions::new(), window)
                        .run(&mut con)
                        .unwrap();
                    if let Deduplicated::Added(_) = outcome {
                        added.lock().unwrap().push(id);
                    }
                }
            });
        }
    });
    let added = added.into_inner().unwrap();
    assert_eq!(added.len(), 1, "{added:?}");
    let mut con = db.con();
    assert_eq!(queue.counts().run(&mut con).unwrap().waiting, 1);
    assert_eq!(
        queue.job(&added[0]).run(&mut con).unwrap().unwrap().state,
        State::Waiting
    );
}

/// A bad window is refused before any I/O; a raw call with a window key of another id or
/// of the wrong type, or a bad window argument, is refused with nothing written.
#[test]
fn bad_deduplication_is_refused_and_writes_nothing() {
    assert_invalid(
        Deduplication::new("", Duration::from_secs(1)),
        "deduplication id",
    );
    assert_invalid(
        Deduplication::new("x", Duration::ZERO),
        "deduplication window",
    );
    assert_invalid(
        Deduplication::new("x", Duration::from_millis(1_000_000_000_000_000)),
        "deduplication window",
    );
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("bad-dedup").unwrap();
    queue.add("a", "x").run(&mut con).unwrap();
    harness::cmd(&mut con, &["HSET", "{bad-dedup}:dedup:h", "f", "v"]);
    let before = harness::dump(&mut con);
    let keys = |window: &'static str| {
        let mut keys: Vec<&str> = vec![
            "{bad-dedup}:waiting",
            "{bad-dedup}:delayed",
            "{bad-dedup}:parked",
            "{bad-dedup}:jobs",
            "{bad-dedup}:signal",
            "{bad-dedup}:events",
            "{bad-dedup}:turns",
        ];
        keys.push(window);
        keys
    };
    let long_trace: &'static str = Box::leak("0".repeat(1025).into_boxed_str());
    let args = |dedup: &'static str, ttl: &'static str, extend: &'static str| {
        [
            "b", "x", "0", "0", "", "0", "worker", "0", "0", "0", "0", "0", dedup, ttl, extend,
            "0", "",
        ]
    };
    let mut too_long = args("u", "1000", "0");
    too_long[16] = long_trace;
    let cases: [(&str, [&str; 17], &str); 6] = [
        ("{bad-dedup}:dedup:u", too_long, "BAD_TRACE"),
        (
            "{bad-dedup}:dedup:other",
            args("u", "1000", "0"),
            "BAD_KEYS",
        ),
        ("{other}:dedup:u", args("u", "1000", "0"), "BAD_KEYS"),
        ("{bad-dedup}:dedup:u", args("u", "0", "0"), "BAD_TTL"),
        (
            "{bad-dedup}:dedup:u",
            args("u", "1000", "yes"),
            "BAD_EXTEND",
        ),
        ("{bad-dedup}:dedup:", args("", "1000", "0"), "BAD_DEDUP"),
    ];
    for (window, args, code) in cases {
        assert_code(
            harness::eval(&mut con, &script::ADD_DEDUPLICATED, &keys(window), &args),
            code,
        );
    }
    let wrong_type = harness::eval(
        &mut con,
        &script::ADD_DEDUPLICATED,
        &keys("{bad-dedup}:dedup:h"),
        &args("h", "1000", "0"),
    );
    assert!(
        format!("{wrong_type:?}").contains("WRONGTYPE"),
        "{wrong_type:?}"
    );
    assert_eq!(harness::dump(&mut con), before);
}

/// A job's log lines: kept oldest first, the newest `keep` of them and at most 64 KiB,
/// written only under the job's lease, read in pages, and gone with the job.
#[test]
fn a_job_keeps_its_log_lines_until_it_ends() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("logs").unwrap();
    queue.add("a", "x").run(&mut con).unwrap();
    let job = take_one(&mut con, &queue);
    for n in 1..=5 {
        let kept = queue.log(&job, format!("line {n}")).run(&mut con).unwrap();
        assert_eq!(kept, n);
    }
    let page = queue.logs("a", 1, 2).run(&mut con).unwrap();
    assert_eq!(page.kept, 5);
    assert_eq!(page.lines, [b"line 2".to_vec(), b"line 3".to_vec()]);
    // Keeping 3: the two oldest go.
    assert_eq!(
        queue.log_keeping(&job, "line 6", 3).run(&mut con).unwrap(),
        3
    );
    let all = queue.logs("a", 0, 1000).run(&mut con).unwrap();
    assert_eq!(
        all.lines,
        [b"line 4".to_vec(), b"line 5".to_vec(), b"line 6".to_vec()]
    );
    // At most 64 KiB: 4 KiB lines, 16 of them.
    for _ in 0..20 {
        queue.log(&job, vec![b'l'; 4096]).run(&mut con).unwrap();
    }
    let big = queue.logs("a", 0, 1000).run(&mut con).unwrap();
    assert_eq!(big.kept, 16);
    assert!(big.lines.iter().all(|line| line.len() == 4096));

    // Only under the lease.
    let stale = Job {
        token: format!("{}x", job.token),
        ..job.clone()
    };
    assert_code(queue.log(&stale, "no").run(&mut con), "LEASE_LOST");
    assert_invalid(queue.log(&job, vec![b'l'; 4097]).run(&mut con), "line");
    assert_invalid(queue.log(&job, "").run(&mut con), "line");

    // Gone with the job.
    queue.ack(&job).run(&mut con).unwrap();
    let after = queue.logs("a", 0, 10).run(&mut con).unwrap();
    assert_eq!((after.kept, after.lines.len()), (0, 0));
    let left: bool = redis::cmd("HEXISTS")
        .arg("{logs}:jobs")
        .arg("l:a")
        .query(&mut con)
        .unwrap();
    assert!(!left);
}

/// Log lines that these scripts did not write are refused by `log` and `logs`, with
/// nothing written.
#[test]
fn foreign_log_lines_are_refused() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("bad-logs").unwrap();
    queue.add("a", "x").run(&mut con).unwrap();
    let job = take_one(&mut con, &queue);
    // Not MessagePack; a map; an array of a number; an array with a nil; two objects.
    let foreign: [&[u8]; 5] = [
        b"text",
        b"\x81\xa1a\xa1b",
        b"\x91\x01",
        b"\x92\xc0\xa1a",
        b"\x90\x90",
    ];
    for foreign in foreign {
        redis::cmd("HSET")
            .arg("{bad-logs}:jobs")
            .arg("l:a")
            .arg(foreign)
            .exec(&mut con)
            .unwrap();
        let held = harness::dump(&mut con);
        assert_code(queue.log(&job, "line").run(&mut con), "BAD_JOBS");
        assert_code(queue.logs("a", 0, 10).run(&mut con), "BAD_JOBS");
        assert_eq!(harness::dump(&mut con), held, "{foreign:?}");
    }
}
