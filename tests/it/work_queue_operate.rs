//! What operators do to a `WorkQueue`: limits the queue owns, the dead-letter cap,
//! metrics, and what a handler's `JobError` asks of the worker.

use std::time::Duration;

use std::thread;

use redis_patterns::Error;
use redis_patterns::scripts::work_queue as script;
use redis_patterns::work_queue::{
    Changes, Child, Job, JobError, JobOptions, Limits, MAX_TAKE, Nacked, Settings, State, Stop,
    WorkQueue,
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
    assert_eq!((m.completed, m.failed_deliveries, m.dead), (2, 3, 1));
    assert_eq!(m.window, 5);
    let per_minute: (u64, u64) = m.minutes.iter().fold((0, 0), |(c, f), row| {
        (c + row.completed, f + row.failed_deliveries)
    });
    assert_eq!(per_minute, (2, 3));
    assert_eq!(m.minutes.len(), 5);
    assert!(m.minutes.windows(2).all(|w| w[0].minute == w[1].minute + 1));
    let text = m.prometheus("metered");
    assert!(text.contains("redis_patterns_queue_failed_deliveries_total{queue=\"metered\"} 3\n"));

    configure(
        &mut con,
        &queue,
        Settings::new().metrics_minutes(0).unwrap(),
    );
    queue.ack(&again[0]).run(&mut con).unwrap();
    let off = queue.metrics(5).run(&mut con).unwrap();
    assert_eq!((off.completed, off.failed_deliveries, off.dead), (2, 3, 1));
    assert!(off.minutes.is_empty());
    // Off, the metrics say so, and an export has no counters that nothing counts.
    assert_eq!((off.window, off.is_on()), (0, false));
    let text = off.prometheus("metered");
    assert!(!text.contains("_total"), "{text}");
    assert!(text.contains("Metrics are off"), "{text}");
}

/// The next job's age counts from when it was first ready: its add, or the end of its
/// delay; nothing waiting, no age. Metrics on or off, the age is there.
#[test]
fn the_next_jobs_age_follows_the_server_clock() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("aged").unwrap();
    assert_eq!(queue.metrics(1).run(&mut con).unwrap().next_job_age, None);
    queue.add("a", "a").run(&mut con).unwrap();
    harness::wait_server(&mut con, Duration::from_millis(30));
    let off = queue.metrics(1).run(&mut con).unwrap();
    assert_eq!(off.window, 0);
    let age = off.next_job_age.expect("an age with metrics off");
    assert!(age >= Duration::from_millis(30), "{age:?}");
    configure(
        &mut con,
        &queue,
        Settings::new().metrics_minutes(1).unwrap(),
    );
    let on = queue
        .metrics(1)
        .run(&mut con)
        .unwrap()
        .next_job_age
        .unwrap();
    assert!(on >= age, "{on:?} < {age:?}");
    // A delayed job is ready when its delay ends, not when it was added: a paused take
    // moves it to waiting once due, and takes nothing.
    queue.clean(State::Waiting, 10).run(&mut con).unwrap();
    queue.pause().run(&mut con).unwrap();
    let added = harness::server_ms(&mut con);
    queue
        .add_with(
            "later",
            "b",
            JobOptions::new().delay(Duration::from_millis(300)),
        )
        .run(&mut con)
        .unwrap();
    harness::wait_until_server_ms(&mut con, added + 310);
    assert!(queue.take(1).run(&mut con).unwrap().is_empty());
    assert_eq!(queue.counts().run(&mut con).unwrap().waiting, 1);
    let age = queue
        .metrics(1)
        .run(&mut con)
        .unwrap()
        .next_job_age
        .unwrap();
    assert!(
        age < Duration::from_millis(300),
        "{age:?} counts from the add"
    );
}

/// While groups take turns, jobs wait parked in their groups' ranges, not in `waiting`:
/// the next job's age is the first job's of the group whose turn comes first.
#[test]
fn the_next_jobs_age_counts_jobs_waiting_for_their_turn() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("turned").unwrap();
    queue
        .configure(&Changes::new().group_turns(true))
        .run(&mut con)
        .unwrap();
    add_all(
        &mut con,
        &queue,
        &["a1", "a2"],
        JobOptions::new().group("a"),
    );
    add_all(&mut con, &queue, &["b1"], JobOptions::new().group("b"));
    let counts = queue.counts().run(&mut con).unwrap();
    assert_eq!((counts.waiting, counts.parked), (0, 3));
    harness::wait_server(&mut con, Duration::from_millis(20));
    let first = queue.metrics(1).run(&mut con).unwrap().next_job_age;
    assert!(
        first.is_some_and(|age| age >= Duration::from_millis(20)),
        "{first:?}"
    );
    // a1 is taken; b's turn is next, and b1 was added after a1 and a2.
    assert_eq!(ids(&queue.take(1).run(&mut con).unwrap()), ["a1"]);
    let next = queue
        .metrics(1)
        .run(&mut con)
        .unwrap()
        .next_job_age
        .unwrap();
    assert!(next <= first.unwrap() + Duration::from_secs(1), "{next:?}");
    assert_eq!(ids(&queue.take(2).run(&mut con).unwrap()), ["b1", "a2"]);
    assert_eq!(queue.metrics(1).run(&mut con).unwrap().next_job_age, None);
}

/// A change names some settings and keeps every other: the operator's scene of issue 42,
/// where a group concurrency of 3 wiped events, results and turns.
#[test]
fn a_change_keeps_the_settings_it_does_not_name() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("kept").unwrap();
    let before = Settings::new()
        .group_limits(Limits::new().rate(5, Duration::from_secs(2)).unwrap())
        .queue_limits(Limits::new().concurrency(40).unwrap())
        .dead_letters(500, Duration::from_secs(86_400))
        .unwrap()
        .metrics_minutes(30)
        .unwrap()
        .events(1_000)
        .unwrap()
        .results(Duration::from_secs(60), 4_096)
        .unwrap()
        .group_turns(true);
    queue.configure(&before).run(&mut con).unwrap();
    assert_eq!(queue.settings().run(&mut con).unwrap(), before);

    let done = queue
        .configure(&Changes::new().group_concurrency(3).unwrap())
        .run(&mut con)
        .unwrap();
    assert!(done.changed);
    let after = queue.settings().run(&mut con).unwrap();
    let group = Limits::new()
        .concurrency(3)
        .unwrap()
        .rate(5, Duration::from_secs(2))
        .unwrap();
    assert_eq!(after, before.group_limits(group));

    // A rate without a period keeps the period; a period alone keeps the rate.
    queue
        .configure(&Changes::new().queue_rate(7).unwrap())
        .run(&mut con)
        .unwrap();
    queue
        .configure(
            &Changes::new()
                .group_period(Duration::from_millis(250))
                .unwrap(),
        )
        .run(&mut con)
        .unwrap();
    let now = queue.settings().run(&mut con).unwrap();
    assert_eq!(now.queue().rate_limit(), Some((7, Duration::from_secs(1))));
    assert_eq!(
        now.group().rate_limit(),
        Some((5, Duration::from_millis(250)))
    );
    assert_eq!(now.queue().concurrency_limit(), Some(40));
    // Naming nothing changes nothing.
    let none = queue.configure(&Changes::new()).run(&mut con).unwrap();
    assert_eq!((none.changed, none.groups_woken), (false, 0));
    assert_eq!(queue.settings().run(&mut con).unwrap(), now);
    // Naming a setting as it is changes nothing either.
    let same = Changes::new().events(1_000).unwrap().group_turns(true);
    assert!(!queue.configure(&same).run(&mut con).unwrap().changed);
}

/// Settings an earlier version wrote as text (thirteen numbers, or the first twelve or
/// nine) are read as before by every script, and the next `configure`, even one that
/// changes nothing, writes them again in the form one call unpacks (a MessagePack array
/// whose first element, 3, names the form). The packed form 2 of earlier versions is
/// read too.
#[test]
fn settings_written_as_text_are_read_and_rewritten_in_the_packed_form() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("text settings").unwrap();
    let jobs = queue.keys()[5];
    let stored = |con: &mut redis::Connection| -> Vec<u8> {
        redis::cmd("HGET")
            .arg(jobs)
            .arg("#settings")
            .query(con)
            .unwrap()
    };
    // Group concurrency 1, a dead-letter cap of 7, 30 minutes of metrics.
    let thirteen = "1 0 1000 0 0 1000 7 15552000000 30 0 3600000 16384 0";
    for text in [
        thirteen,
        "1 0 1000 0 0 1000 7 15552000000 30 0 3600000 16384",
        "1 0 1000 0 0 1000 7 15552000000 30",
    ] {
        harness::cmd(&mut con, &["HSET", jobs, "#settings", text]);
        let read = queue.settings().run(&mut con).unwrap();
        assert_eq!(read.group().concurrency_limit(), Some(1), "{text}");
        assert_eq!(read.metrics_window(), 30, "{text}");
    }
    harness::cmd(&mut con, &["HSET", jobs, "#settings", thirteen]);
    let text_settings = queue.settings().run(&mut con).unwrap();
    // take and ack apply them: one job of the group at a time, its end counted.
    for id in ["a", "b"] {
        queue
            .add_with(id, b"x", JobOptions::new().group("g"))
            .run(&mut con)
            .unwrap();
    }
    let first = queue.take(2).run(&mut con).unwrap();
    assert_eq!(ids(&first), ["a"]);
    let next = queue.ack_and_take(&first, 2).run(&mut con).unwrap();
    assert_eq!(ids(&next), ["b"]);
    assert_eq!(queue.metrics(1).run(&mut con).unwrap().completed, 1);

    let done = queue.configure(&Changes::new()).run(&mut con).unwrap();
    assert!(!done.changed, "the same settings, in another form");
    let packed = stored(&mut con);
    assert_eq!(
        packed[..4],
        [0xdc, 0, 16, 3],
        "an array of 16, form 3 first"
    );
    assert_eq!(queue.settings().run(&mut con).unwrap(), text_settings);
    // Naming nothing again writes nothing: the form is already the new one.
    queue.configure(&Changes::new()).run(&mut con).unwrap();
    assert_eq!(stored(&mut con), packed); // The form 2 an earlier version packed (thirteen settings) is read, the two settings
    // it lacks at their defaults, and rewritten in form 3 by the next change.
    let form_2: &str = "return redis.call('HSET', KEYS[1], '#settings', cmsgpack.pack({ 2, 1, 0, 1000, 0, 0, \
                        1000, 7, 15552000000, 30, 0, 3600000, 16384, 0 }))";
    harness::cmd(&mut con, &["EVAL", form_2, "1", jobs]);
    assert_eq!(queue.settings().run(&mut con).unwrap(), text_settings);
    queue.configure(&Changes::new()).run(&mut con).unwrap();
    assert_eq!(stored(&mut con)[..2], [0x9e, 2], "unchanged: nothing named");
    queue
        .configure(&Changes::new().completed_max(5).unwrap())
        .run(&mut con)
        .unwrap();
    assert_eq!(stored(&mut con)[..4], [0xdc, 0, 16, 3]);
    assert_eq!(queue.settings().run(&mut con).unwrap().completed_max(), 5);
}

/// Two operators change different settings at the same moment, many times over: the
/// merge is in the script, so neither change undoes the other (a read of the settings
/// then a write of all of them, from each client, would).
#[test]
fn concurrent_changes_of_different_settings_both_hold() {
    let db = harness::fresh_db();
    let queue = WorkQueue::new("operators").unwrap();
    const ROUNDS: u64 = 200;
    thread::scope(|scope| {
        let limits = scope.spawn(|| {
            let mut con = db.con();
            for n in 1..=ROUNDS {
                let change = Changes::new().group_concurrency(n).unwrap();
                queue.configure(&change).run(&mut con).unwrap();
                let seen = queue.settings().run(&mut con).unwrap();
                assert!(seen.group().concurrency_limit() >= Some(n), "{seen:?}");
            }
        });
        let events = scope.spawn(|| {
            let mut con = db.con();
            for n in 1..=ROUNDS {
                let change = Changes::new().events(n).unwrap().dead_max(n).unwrap();
                queue.configure(&change).run(&mut con).unwrap();
                let seen = queue.settings().run(&mut con).unwrap();
                assert!(seen.events_max() >= n && seen.dead_max() >= n, "{seen:?}");
            }
        });
        limits.join().unwrap();
        events.join().unwrap();
    });
    let last = queue.settings().run(&mut db.con()).unwrap();
    assert_eq!(last.group().concurrency_limit(), Some(ROUNDS));
    assert_eq!((last.events_max(), last.dead_max()), (ROUNDS, ROUNDS));
    assert_eq!(last.metrics_window(), 0, "a setting nobody named");
}

/// A bad change is refused before any I/O, naming the setting; sent as it is to the
/// script (as an app in another language would), it is refused with its code and
/// nothing changes. An empty argument is the script's "unchanged".
#[test]
fn bad_changes_are_refused_and_empty_arguments_keep_settings() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("checked").unwrap();
    for (result, what) in [
        (Changes::new().group_rate(1_001), "group_rate"),
        (
            Changes::new().queue_concurrency(1_000_001),
            "queue_concurrency",
        ),
        (Changes::new().dead_max(0), "dead_max"),
        (Changes::new().metrics_minutes(1_441), "metrics_minutes"),
        (Changes::new().events(100_001), "events_max"),
        (Changes::new().result_max(16_385), "result_max"),
        (Changes::new().group_period(Duration::ZERO), "group_period"),
        (
            Changes::new().result_ttl(Duration::from_secs(31 * 86_400)),
            "result_ttl",
        ),
    ] {
        assert!(
            matches!(&result, Err(Error::InvalidInput { what: w, .. }) if *w == what),
            "{what}: {result:?}"
        );
    }
    queue
        .configure(&Changes::new().events(10).unwrap())
        .run(&mut con)
        .unwrap();
    let keys: Vec<String> = ["parked", "jobs", "wake", "signal", "events"]
        .iter()
        .map(|k| format!("{{checked}}:{k}"))
        .collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let mut args = vec![""; 15];
    args[1] = "1001";
    let before = harness::dump(&mut con);
    assert_code(
        harness::eval(&mut con, &script::CONFIGURE, &keys, &args),
        "BAD_GROUP_RATE",
    );
    assert_eq!(harness::dump(&mut con), before);
    // Only the dead-letter cap named: the events cap set above stays.
    args[1] = "";
    args[6] = "77";
    harness::eval(&mut con, &script::CONFIGURE, &keys, &args).unwrap();
    let now = queue.settings().run(&mut con).unwrap();
    assert_eq!((now.dead_max(), now.events_max()), (77, 10));
}

/// `exists` tells a queue that holds something from a name nobody used (a typo).
#[test]
fn a_queue_exists_once_it_holds_something() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("present").unwrap();
    assert!(!queue.exists().run(&mut con).unwrap());
    queue.pause().run(&mut con).unwrap();
    assert!(queue.exists().run(&mut con).unwrap());
    while queue.delete(100, true).run(&mut con).unwrap() > 0 {}
    assert!(!queue.exists().run(&mut con).unwrap());
    queue.add("a", "x").run(&mut con).unwrap();
    assert!(queue.exists().run(&mut con).unwrap());
    assert!(
        !WorkQueue::new("presnet")
            .unwrap()
            .exists()
            .run(&mut con)
            .unwrap()
    );
}

/// A flow's parent waits for its children: a delay would start it before they end, so
/// set_delay leaves it alone, and says so by its state.
#[test]
fn a_blocked_parent_is_not_delayed() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("flowing").unwrap();
    let children = [Child::new("child", "c").unwrap()];
    queue
        .add_flow("parent", "p", JobOptions::new(), &children)
        .run(&mut con)
        .unwrap();
    let before = harness::dump(&mut con);
    assert_eq!(
        queue
            .set_delay("parent", Duration::from_secs(60))
            .run(&mut con)
            .unwrap(),
        (false, Some(State::Blocked))
    );
    assert_eq!(harness::dump(&mut con), before);
    // A waiting job with a delay of 0 is ready already: nothing moves either.
    assert_eq!(
        queue
            .set_delay("child", Duration::ZERO)
            .run(&mut con)
            .unwrap(),
        (false, Some(State::Waiting))
    );
    let child = queue.take(1).run(&mut con).unwrap();
    queue.ack(&child[0]).run(&mut con).unwrap();
    assert_eq!(ids(&queue.take(1).run(&mut con).unwrap()), ["parent"]);
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
    // The packed form (see settings_written_as_text_are_read_and_rewritten_in_the_packed_form):
    // a MessagePack array of 14, form 2 then the settings, each encoded here by hand.
    let packed = |form: u8, settings: &[Vec<u8>]| -> Vec<u8> {
        let mut bytes = vec![0x90 + 1 + settings.len() as u8, form];
        settings.iter().for_each(|one| bytes.extend_from_slice(one));
        bytes
    };
    let fixints = [0u8, 0, 100, 0, 0, 100, 100, 100, 60, 0, 100, 100, 0];
    let valid: Vec<Vec<u8>> = fixints.iter().map(|&n| vec![n]).collect();
    let with = |at: usize, element: &[u8]| {
        let mut settings = valid.clone();
        settings[at] = element.to_vec();
        settings
    };
    let float_period = [&[0xcb][..], &1.5f64.to_be_bytes()].concat(); // a double: 1.5 ms
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("#settings", b"0 0 1000 0 0 1000 10000 15552000000".to_vec()),
        (
            "#settings",
            b"0 0 0 0 0 1000 10000 15552000000 1440".to_vec(),
        ),
        (
            "#settings",
            b"0 0 1000 0 0 1000 0 15552000000 1440".to_vec(),
        ),
        ("#settings", packed(3, &valid)),
        ("#settings", packed(2, &valid[..12])),
        ("#settings", packed(2, &with(2, &float_period))),
        ("#settings", packed(2, &with(12, &[0xa1, b'1']))), // a text
        ("#settings", packed(2, &with(8, &[0xcd, 0x05, 0xa1]))), // 1,441 minutes
        ("#settings", [packed(2, &valid), vec![0]].concat()),
        ("#settings", vec![0xc1, 0x00]),
        ("#settings", b"x 0 1000".to_vec()),
        ("#totals", b"1 2".to_vec()),
        ("#totals", b"1 2 x".to_vec()),
    ];
    // Each packed case differs from a valid value in one thing: this one, with a
    // dead-letter cap of 1,000 as a uint16, is read.
    redis::cmd("HSET")
        .arg(jobs)
        .arg("#settings")
        .arg(packed(2, &with(6, &[0xcd, 0x03, 0xe8])))
        .exec(&mut con)
        .unwrap();
    let read = queue.settings().run(&mut con).unwrap();
    assert_eq!((read.metrics_window(), read.dead_max()), (60, 1000));
    harness::cmd(&mut con, &["HDEL", jobs, "#settings"]);
    for (field, value) in damaged {
        let value = value.as_slice();
        if field != "#settings" {
            harness::cmd(&mut con, &["HSET", jobs, "#settings", on]);
        }
        redis::cmd("HSET")
            .arg(jobs)
            .arg(field)
            .arg(value)
            .exec(&mut con)
            .unwrap();
        let before = harness::dump(&mut con);
        assert_code(queue.take(1).run(&mut con), "BAD_JOBS");
        assert_code(queue.ack(&job).run(&mut con), "BAD_JOBS");
        assert_code(queue.nack(&job, "x").run(&mut con), "BAD_JOBS");
        assert_code(queue.metrics(5).run(&mut con), "BAD_JOBS");
        if field == "#settings" {
            assert_code(queue.settings().run(&mut con), "BAD_JOBS");
            assert_code(queue.configure(&Settings::new()).run(&mut con), "BAD_JOBS");
        }
        assert_eq!(harness::dump(&mut con), before, "{field} = {value:?}");
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
