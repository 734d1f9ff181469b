//! What operators do to a `WorkQueue`: limits the queue owns, the dead-letter cap,
//! metrics, and what a handler's `JobError` asks of the worker.

use std::time::Duration;

use redis_patterns::work_queue::{
    Job, JobError, JobOptions, Limits, MAX_TAKE, Nacked, Settings, State, Stop, WorkQueue,
};

use crate::harness::{self, assert_code};

fn ids(jobs: &[Job]) -> Vec<&str> {
    jobs.iter().map(|job| job.id.as_str()).collect()
}

fn add_all(con: &mut redis::Connection, queue: &WorkQueue, ids: &[&str], options: JobOptions) {
    for id in ids {
        queue.add_with(id, *id, options.clone()).run(con).unwrap();
    }
}

fn configure(con: &mut redis::Connection, queue: &WorkQueue, settings: Settings) {
    queue.configure(&settings).run(con).unwrap();
}

/// The queue's concurrency holds across workers: whoever takes, at most 3 jobs are held,
/// and an ack frees a place for the next take.
#[test]
fn the_queue_concurrency_holds_across_workers() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("global").unwrap();
    add_all(
        &mut con,
        &queue,
        &["a", "b", "c", "d", "e"],
        JobOptions::new(),
    );
    let three = Limits::new().concurrency(3).unwrap();
    configure(&mut con, &queue, Settings::new().queue_limits(three));
    let first = queue.take(2).run(&mut con).unwrap();
    let second = queue.take(MAX_TAKE).run(&mut con).unwrap();
    assert_eq!((ids(&first), ids(&second)), (vec!["a", "b"], vec!["c"]));
    assert!(queue.take(MAX_TAKE).run(&mut con).unwrap().is_empty());
    // Acking one in the call that takes: its place is free for that same call.
    let next = queue
        .ack_and_take(&first[..1], MAX_TAKE)
        .run(&mut con)
        .unwrap();
    assert_eq!(ids(&next), ["d"]);
    assert_eq!(queue.counts().run(&mut con).unwrap().leased, 3);
}

/// The queue's rate: 2 starts per hour, whoever takes; a shorter period set by an
/// operator holds at the next take.
#[test]
fn the_queue_rate_holds_and_a_new_period_holds_at_once() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("rated").unwrap();
    add_all(
        &mut con,
        &queue,
        &["a", "b", "c", "d", "e"],
        JobOptions::new(),
    );
    let hourly = Limits::new().rate(2, Duration::from_secs(3600)).unwrap();
    configure(&mut con, &queue, Settings::new().queue_limits(hourly));
    assert_eq!(
        ids(&queue.take(MAX_TAKE).run(&mut con).unwrap()),
        ["a", "b"]
    );
    assert!(queue.take(MAX_TAKE).run(&mut con).unwrap().is_empty());
    let fast = Limits::new().rate(2, Duration::from_millis(1)).unwrap();
    configure(&mut con, &queue, Settings::new().queue_limits(fast));
    harness::wait_server(&mut con, Duration::from_millis(2));
    assert_eq!(
        ids(&queue.take(MAX_TAKE).run(&mut con).unwrap()),
        ["c", "d"]
    );
    // A new rate starts its ring anew.
    let one = Limits::new().rate(1, Duration::from_secs(3600)).unwrap();
    configure(&mut con, &queue, Settings::new().queue_limits(one));
    assert_eq!(ids(&queue.take(MAX_TAKE).run(&mut con).unwrap()), ["e"]);
}

/// Raising a group's concurrency wakes its parked jobs: the next take starts what the
/// new limit allows, without waiting for the group's running job to end.
#[test]
fn raising_a_group_limit_starts_parked_jobs_at_the_next_take() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("raise").unwrap();
    let one = Limits::new().concurrency(1).unwrap();
    configure(&mut con, &queue, Settings::new().group_limits(one));
    add_all(
        &mut con,
        &queue,
        &["a", "b", "c"],
        JobOptions::new().group("g"),
    );
    add_all(&mut con, &queue, &["x"], JobOptions::new().group("h"));
    assert_eq!(
        ids(&queue.take(MAX_TAKE).run(&mut con).unwrap()),
        ["a", "x"]
    );
    assert_eq!(queue.counts().run(&mut con).unwrap().parked, 2);
    let three = Limits::new().concurrency(3).unwrap();
    let done = queue
        .configure(&Settings::new().group_limits(three))
        .run(&mut con)
        .unwrap();
    assert!(done.changed);
    assert_eq!(done.groups_woken, 1);
    assert_eq!(
        ids(&queue.take(MAX_TAKE).run(&mut con).unwrap()),
        ["b", "c"]
    );
}

/// A held-back group: its job comes back parked with its delivery uncounted, no job of
/// the group starts until the hold passes, and other groups go on.
#[test]
fn a_rate_limited_group_waits_out_its_hold() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("held").unwrap();
    add_all(&mut con, &queue, &["a", "b"], JobOptions::new().group("g"));
    let taken = queue.take(1).run(&mut con).unwrap();
    let until = queue
        .rate_limit_group(&taken[0], Duration::from_millis(300))
        .run(&mut con)
        .unwrap();
    let a = queue.job("a").run(&mut con).unwrap().unwrap();
    assert_eq!((a.state, a.deliveries), (State::Parked, 0));
    add_all(&mut con, &queue, &["x"], JobOptions::new().group("h"));
    assert_eq!(ids(&queue.take(MAX_TAKE).run(&mut con).unwrap()), ["x"]);
    assert_eq!(queue.counts().run(&mut con).unwrap().parked, 2);
    // The job's token is spent: a second hold by the same holder is LEASE_LOST.
    assert_code(
        queue
            .rate_limit_group(&taken[0], Duration::from_secs(1))
            .run(&mut con),
        "LEASE_LOST",
    );
    harness::wait_until_server_ms(&mut con, until);
    let back = queue.take(MAX_TAKE).run(&mut con).unwrap();
    assert_eq!(ids(&back), ["a", "b"]);
    assert_eq!(back[0].delivery, 1, "the held-back delivery is not counted");
}

/// The dead-letter set keeps to its cap: by count (the newest stay, the others go with
/// their records) and by age.
#[test]
fn the_dead_letter_set_keeps_to_its_cap() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("dead").unwrap();
    let cap = Settings::new()
        .dead_letters(3, Duration::from_secs(3600))
        .unwrap();
    configure(&mut con, &queue, cap);
    let names = ["d1", "d2", "d3", "d4", "d5"];
    add_all(&mut con, &queue, &names, JobOptions::new());
    for _ in names {
        let job = queue.take(1).run(&mut con).unwrap().remove(0);
        let failed = queue.fail(&job, "bad input").run(&mut con).unwrap();
        assert!(matches!(failed, Nacked::Dead { .. }));
    }
    let dead = queue.list(State::Dead, 0, 10).run(&mut con).unwrap();
    let dead: Vec<&str> = dead.iter().map(|job| job.id.as_str()).collect();
    assert_eq!(dead, ["d3", "d4", "d5"]);
    for gone in ["d1", "d2"] {
        assert_eq!(queue.job(gone).run(&mut con).unwrap(), None);
    }
    let fields: Vec<String> = redis::cmd("HKEYS")
        .arg(queue.keys()[5])
        .query(&mut con)
        .unwrap();
    assert!(
        !fields
            .iter()
            .any(|f| f.ends_with(":d1") || f.ends_with(":d2")),
        "{fields:?}"
    );
    // By age: a take drops those older than the cap, `limit` per call.
    let young = Settings::new()
        .dead_letters(3, Duration::from_millis(1))
        .unwrap();
    configure(&mut con, &queue, young);
    harness::wait_server(&mut con, Duration::from_millis(2));
    assert!(queue.take(2).run(&mut con).unwrap().is_empty());
    assert_eq!(queue.counts().run(&mut con).unwrap().dead, 1);
    assert!(queue.take(2).run(&mut con).unwrap().is_empty());
    assert_eq!(queue.counts().run(&mut con).unwrap().dead, 0);
}

/// What ended is counted where it ended: acks (alone and in a take), nacks, deaths and
/// lapsed leases; with metrics off, nothing moves.
#[test]
fn metrics_count_every_end_once() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("metered")
        .unwrap()
        .with_lease(Duration::from_millis(50))
        .unwrap()
        .with_max_deliveries(2)
        .unwrap();
    configure(
        &mut con,
        &queue,
        Settings::new().metrics_minutes(5).unwrap(),
    );
    add_all(
        &mut con,
        &queue,
        &["a", "b", "c", "d", "e"],
        JobOptions::new(),
    );
    let jobs = queue.take(5).run(&mut con).unwrap();
    queue.ack(&jobs[0]).run(&mut con).unwrap();
    queue.ack_and_take(&jobs[1..2], 1).run(&mut con).unwrap();
    queue.nack(&jobs[2], "retry").run(&mut con).unwrap();
    queue.fail(&jobs[3], "for good").run(&mut con).unwrap();
    // e's lease runs out: the next take counts it as failed, and hands it out again.
    harness::wait_until_server_ms(&mut con, jobs[4].deadline_ms + 1);
    let again = queue.take(1).run(&mut con).unwrap();
    assert_eq!(ids(&again), ["e"]);
    let m = queue.metrics(5).run(&mut con).unwrap();
    assert_eq!((m.completed, m.failed, m.dead), (2, 3, 1));
    let per_minute: (u64, u64) = m
        .minutes
        .iter()
        .fold((0, 0), |(c, f), row| (c + row.completed, f + row.failed));
    assert_eq!(per_minute, (2, 3));
    assert_eq!(m.minutes.len(), 5);
    assert!(m.minutes.windows(2).all(|w| w[0].minute == w[1].minute + 1));
    let text = m.prometheus("metered");
    assert!(text.contains("redis_patterns_queue_failed_total{queue=\"metered\"} 3\n"));

    configure(
        &mut con,
        &queue,
        Settings::new().metrics_minutes(0).unwrap(),
    );
    queue.ack(&again[0]).run(&mut con).unwrap();
    let off = queue.metrics(5).run(&mut con).unwrap();
    assert_eq!((off.completed, off.failed, off.dead), (2, 3, 1));
    assert!(off.minutes.is_empty());
}

/// The next job's age counts from when it was first ready: its add, or the end of its
/// delay; nothing waiting, no age; a job added while metrics were off, none either.
#[test]
fn the_next_jobs_age_follows_the_server_clock() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("aged").unwrap();
    queue.add("before", "x").run(&mut con).unwrap();
    assert_eq!(queue.metrics(1).run(&mut con).unwrap().next_job_age, None);
    queue.clean(State::Waiting, 10).run(&mut con).unwrap();
    configure(
        &mut con,
        &queue,
        Settings::new().metrics_minutes(1).unwrap(),
    );
    assert_eq!(queue.metrics(1).run(&mut con).unwrap().next_job_age, None);
    queue.add("a", "a").run(&mut con).unwrap();
    harness::wait_server(&mut con, Duration::from_millis(30));
    let age = queue
        .metrics(1)
        .run(&mut con)
        .unwrap()
        .next_job_age
        .unwrap();
    assert!(age >= Duration::from_millis(30), "{age:?}");
}

/// A handler's `JobError`: `unrecoverable` sends the job to the dead-letter queue on its
/// first delivery, `rate_limit_group` parks it and holds its group, and any other error
/// is retried.
#[test]
fn a_handlers_job_error_says_what_becomes_of_the_job() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("handled").unwrap().with_backoff(
        redis_patterns::work_queue::Backoff::Fixed(Duration::from_secs(3600)),
    );
    add_all(
        &mut con,
        &queue,
        &["fatal", "busy"],
        JobOptions::new().group("g"),
    );
    add_all(&mut con, &queue, &["flaky"], JobOptions::new());
    let stop = Stop::new();
    let report = queue
        .worker()
        .poll(Duration::from_millis(50))
        .run(&db.client, &stop, |job| -> Result<(), JobError> {
            if job.id == "flaky" {
                stop.stop();
            }
            match job.id.as_str() {
                "fatal" => Err(JobError::unrecoverable("malformed")),
                "busy" => Err(JobError::rate_limit_group(Duration::from_secs(3600), "429")),
                _ => Err("timeout".into()),
            }
        })
        .unwrap();
    assert_eq!((report.dead, report.held_back, report.retried), (1, 1, 1));
    let state = |id| queue.job(id).run(&mut db.con()).unwrap().unwrap();
    assert_eq!(
        (state("fatal").state, state("fatal").deliveries),
        (State::Dead, 1)
    );
    assert_eq!(
        state("fatal").last_error.as_deref(),
        Some(&b"malformed"[..])
    );
    assert_eq!(
        (state("busy").state, state("busy").deliveries),
        (State::Parked, 0)
    );
    assert_eq!(state("flaky").state, State::Delayed);
}

/// Priority and delay changes move a job where it waits: a parked job keeps its group's
/// place in line, a waiting job moves ahead, a parked one can be delayed, a delayed one
/// promoted; a leased job is left to its worker.
#[test]
fn priority_and_delay_changes_move_jobs_where_they_wait() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("moves").unwrap();
    let one = Limits::new().concurrency(1).unwrap();
    configure(&mut con, &queue, Settings::new().group_limits(one));
    add_all(
        &mut con,
        &queue,
        &["g1", "g2", "g3"],
        JobOptions::new().group("g"),
    );
    add_all(&mut con, &queue, &["w1", "w2"], JobOptions::new());
    let first = queue.take(1).run(&mut con).unwrap();
    assert_eq!(ids(&first), ["g1"]);
    // g2 and g3 get parked by the next take (their group is at its limit).
    assert_eq!(ids(&queue.take(1).run(&mut con).unwrap()), ["w1"]);
    assert_eq!(
        queue.set_priority("g3", 5).run(&mut con).unwrap(),
        Some(State::Parked)
    );
    assert_eq!(
        queue.set_priority("w2", 5).run(&mut con).unwrap(),
        Some(State::Waiting)
    );
    assert_eq!(
        queue.set_priority("g1", 5).run(&mut con).unwrap(),
        Some(State::Leased)
    );
    let (moved, state) = queue
        .set_delay("g2", Duration::from_secs(3600))
        .run(&mut con)
        .unwrap();
    assert_eq!((moved, state), (true, Some(State::Delayed)));
    assert_eq!(
        queue
            .set_delay("g1", Duration::from_secs(1))
            .run(&mut con)
            .unwrap(),
        (false, Some(State::Leased))
    );
    // g1 ends: g3 comes back from parked at priority 5, where its add put it among the
    // jobs of that priority: ahead of w2, added later.
    let next = queue.ack_and_take(&first, MAX_TAKE).run(&mut con).unwrap();
    assert_eq!(ids(&next), ["g3", "w2"]);
    assert!(queue.promote("g2").run(&mut con).unwrap());
    assert!(!queue.promote("g2").run(&mut con).unwrap());
    assert_eq!(
        queue.job("g2").run(&mut con).unwrap().unwrap().state,
        State::Waiting
    );
}

/// Settings, totals and per-minute slots another client wrote are refused before any
/// write, by every script that reads them; the keyspace is byte for byte as it was.
#[test]
fn damaged_settings_and_metrics_are_refused_before_any_write() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("damaged").unwrap();
    add_all(&mut con, &queue, &["a", "b"], JobOptions::new().group("g"));
    let job = queue.take(1).run(&mut con).unwrap().remove(0);
    let jobs = queue.keys()[5];
    // Metrics on, so that every script that ends a job reads them.
    let on = "0 0 1000 0 0 1000 10000 15552000000 60";
    for (field, value) in [
        ("#settings", "0 0 1000 0 0 1000 10000 15552000000"),
        ("#settings", "0 0 0 0 0 1000 10000 15552000000 1440"),
        ("#settings", "0 0 1000 0 0 1000 0 15552000000 1440"),
        ("#totals", "1 2"),
        ("#totals", "1 2 x"),
    ] {
        if field != "#settings" {
            harness::cmd(&mut con, &["HSET", jobs, "#settings", on]);
        }
        harness::cmd(&mut con, &["HSET", jobs, field, value]);
        let before = harness::dump(&mut con);
        assert_code(queue.take(1).run(&mut con), "BAD_JOBS");
        assert_code(queue.ack(&job).run(&mut con), "BAD_JOBS");
        assert_code(queue.nack(&job, "x").run(&mut con), "BAD_JOBS");
        assert_code(queue.metrics(5).run(&mut con), "BAD_JOBS");
        if field == "#settings" {
            assert_code(queue.settings().run(&mut con), "BAD_JOBS");
            assert_code(queue.configure(&Settings::new()).run(&mut con), "BAD_JOBS");
        }
        assert_eq!(harness::dump(&mut con), before, "{field} = {value}");
        harness::cmd(&mut con, &["HDEL", jobs, field]);
    }
    // A hold-back time that is no time.
    harness::cmd(&mut con, &["HSET", queue.keys()[6], "u:g", "soon"]);
    let before = harness::dump(&mut con);
    assert_code(queue.ack_and_take([&job], 1).run(&mut con), "BAD_GROUPS");
    assert_eq!(harness::dump(&mut con), before);
    harness::cmd(&mut con, &["HDEL", queue.keys()[6], "u:g"]);
    // A per-minute slot: every one of the window is read by `metrics`, the current one by
    // the scripts that count. (A window of 10 keeps `jobs` small: a hash table's dump
    // order can change on a read, as it rehashes.)
    configure(
        &mut con,
        &queue,
        Settings::new().metrics_minutes(10).unwrap(),
    );
    let slots: Vec<String> = (0..10).map(|i| format!("#m:{i}")).collect();
    let mut hset = vec!["HSET", jobs];
    for slot in &slots {
        hset.extend([slot.as_str(), "7 x 1"]);
    }
    harness::cmd(&mut con, &hset);
    let before = harness::dump(&mut con);
    assert_code(queue.ack(&job).run(&mut con), "BAD_JOBS");
    assert_code(queue.metrics(1).run(&mut con), "BAD_JOBS");
    assert_eq!(harness::dump(&mut con), before);
}
