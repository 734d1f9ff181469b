//! Job schedulers: set, list, fire and remove; every run added once by many schedulers;
//! the missed-run policies; data the scripts did not write.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use redis_patterns::Error;
use redis_patterns::work_queue::{
    Backoff, DueSchedule, Fired, JobOptions, Missed, Nacked, Schedule, ScheduleReport, State, Stop,
    Timing, WorkQueue,
};

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// 2020-01-01T00:00:00Z and 2040-01-01T00:00:00Z, in ms.
const Y2020: u64 = 1_577_836_800_000;
const Y2040: u64 = 2_208_988_800_000;

/// The schedule `name` of `queue` as due.lua reads it, whatever its run time (the tests
/// choose run times in the past, so it is due).
fn due_one(
    con: &mut dyn redis::ConnectionLike,
    queue: &WorkQueue,
    name: &str,
) -> (DueSchedule, u64) {
    let due = queue.due_schedules(100).run(con).unwrap();
    let one = due
        .due
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("{name} is due"))
        .clone();
    (one, due.now_ms)
}

/// The ids of the jobs waiting in `queue`, sorted.
fn waiting_ids(con: &mut dyn redis::ConnectionLike, queue: &WorkQueue) -> Vec<String> {
    let mut ids: Vec<String> = redis::cmd("ZRANGE")
        .arg(queue.keys()[0])
        .arg(0)
        .arg(-1)
        .query(con)
        .unwrap();
    ids.sort();
    ids
}

/// Run times far in the past relative to the server's clock (and its next ones far in
/// the future), so that what fires is the same whenever the test runs (until 2033).
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let queue = WorkQueue::new("work_queue:reports").unwrap();
    t.step("queue.schedule_keys()", queue.schedule_keys())
        .unwrap();
    // Every 10^12 ms from 0: runs 0 and 10^12 are due; skip adds the latest.
    let skip = Schedule::every(Duration::from_millis(1_000_000_000_000))
        .payload("rollup")
        .options(JobOptions::new().priority(5).group("tenant-7"))
        .first_run_at(0);
    let _ = step!(t, con, queue.set_schedule("rollup", &skip));
    // Every 5 × 10^11 ms from 0: 0, 5e11, 1e12 and 1.5e12 are due; catch up 2.
    let catch_up = Schedule::every(Duration::from_millis(500_000_000_000))
        .missed(Missed::CatchUp(2))
        .payload("sync")
        .first_run_at(0);
    let _ = step!(t, con, queue.set_schedule("sync", &catch_up));
    // Cron: midnight UTC on New Year's Day; first run 2020, so 2020 to this year are due.
    let cron = Schedule::cron("0 0 0 1 1 *", "UTC")
        .unwrap()
        .missed(Missed::CatchUp(100))
        .payload("yearly")
        .first_run_at(Y2020);
    let _ = step!(t, con, queue.set_schedule("yearly", &cron));
    // Jobs with options of their own: one delivery (a retry would wait 5 s), and dropped
    // if it fails.
    let once = Schedule::every(Duration::from_millis(1_000_000_000_000))
        .payload("ping")
        .options(
            JobOptions::new()
                .priority(255)
                .attempts(1)
                .backoff(Backoff::Fixed(Duration::from_secs(5)))
                .remove_on_fail(),
        )
        .first_run_at(0);
    let _ = step!(t, con, queue.set_schedule("once", &once));
    // Not due before 2040.
    let later = Schedule::every(Duration::from_secs(60)).first_run_at(Y2040);
    let _ = step!(t, con, queue.set_schedule("later", &later));
    let _ = step!(t, con, queue.schedules(0, 10));
    let _ = step!(t, con, queue.schedules(1, 2));
    let _ = step!(t, con, queue.schedule("yearly"));
    let _ = step!(t, con, queue.schedule("none"));

    let due = queue.due_schedules(10).run(con).unwrap();
    let names: Vec<(&str, u64)> = due
        .due
        .iter()
        .map(|d| (d.name.as_str(), d.run_ms))
        .collect();
    t.step("due_schedules(10): names and runs", Ok::<_, Error>(names))
        .unwrap();
    t.step(
        "due_schedules(10): next after now",
        Ok::<_, Error>(due.next_ms),
    )
    .unwrap();
    for one in &due.due {
        if one.name != "yearly" {
            let _ = step!(t, con, queue.fire(one, due.now_ms));
            continue;
        }
        // What the cron schedule adds depends on the year the test runs in: its shape.
        let fired = queue.fire(one, due.now_ms).run(con).unwrap();
        let Fired::Done {
            added,
            skipped,
            next_ms,
            ..
        } = fired
        else {
            panic!("yearly fires: {fired:?}")
        };
        const DAY: u64 = 86_400_000;
        let last = *added.last().unwrap();
        let shape = (
            &added[..2],
            skipped,
            added.len() >= 7,
            next_ms > due.now_ms,
            (365 * DAY..=366 * DAY).contains(&(next_ms - last)),
        );
        t.step(
            "queue.fire(yearly): first two added, skipped, all years since 2020, next after now, a year after the last",
            Ok::<_, Error>(format!("{shape:?}")),
        )
        .unwrap();
        for pair in added.windows(2) {
            assert!((365 * DAY..=366 * DAY).contains(&(pair[1] - pair[0])));
        }
    }
    // The same runs again: another scheduler fired them.
    for one in &due.due {
        let _ = step!(t, con, queue.fire(one, due.now_ms));
    }
    // A run after the server's clock.
    let early = DueSchedule {
        name: "later".into(),
        run_ms: Y2040,
        revision: 1,
        timing: Timing::Every {
            every: Duration::from_secs(60),
            offset: Duration::ZERO,
        },
        missed: Missed::Skip,
    };
    let _ = step!(t, con, queue.fire(&early, due.now_ms));
    t.step("waiting jobs", Ok::<_, Error>(waiting_ids(con, &queue)))
        .unwrap();
    let _ = step!(t, con, queue.job("sync:1500000000000"));
    // The run of `once` (first in line) fails once, and is gone: its options came with it.
    queue.remove_schedule("once").run(con).unwrap();
    let ping = queue.take(1).run(con).unwrap().remove(0);
    assert_eq!(ping.id, "once:1000000000000");
    let _ = step!(
        t,
        con,
        queue
            .nack_after(&ping, Duration::ZERO, "unreachable")
            .map(|nacked| Ok(matches!(nacked, Nacked::Dead { .. })))
    );
    let _ = step!(t, con, queue.job("once:1000000000000"));
    // Set again with the same timing: the next run time stays.
    let again = Schedule::every(Duration::from_millis(1_000_000_000_000)).payload("changed");
    let _ = step!(t, con, queue.set_schedule("rollup", &again));
    let _ = step!(t, con, queue.schedule("rollup"));
    let _ = step!(t, con, queue.remove_schedule("rollup"));
    let _ = step!(t, con, queue.remove_schedule("rollup"));
    for name in ["sync", "yearly", "later"] {
        queue.remove_schedule(name).run(con).unwrap();
    }
    let _ = step!(t, con, queue.schedules(0, 10));
    queue.clean(State::Waiting, 100).run(con).unwrap();
    let keys = queue.keys();
    // The jobs' hash, the signal, and the schedulers' wake stream (which lives a minute).
    let _: () = redis::cmd("DEL")
        .arg(keys[5])
        .arg(keys[9])
        .arg(&queue.schedule_keys().unwrap()[2])
        .query(con)
        .unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("work_queue_schedule");
    let mut con = db.con();
    assert_snapshot(
        "work_queue_schedule__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "work_queue_schedule__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// Skip adds one job, for the latest run due; catch-up the latest n, oldest first; both
/// go on from the first run time after now.
#[test]
fn missed_runs_follow_the_schedules_policy() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("missed").unwrap();
    let every = Duration::from_millis(1000);
    for (name, missed) in [
        ("skip", Missed::Skip),
        ("three", Missed::CatchUp(3)),
        ("most", Missed::CatchUp(100)),
    ] {
        // Ten hours ago (server clock): 36,000 runs missed.
        let now = queue.due_schedules(1).run(&mut con).unwrap().now_ms;
        let start = (now - 36_000_000) / 1000 * 1000;
        let schedule = Schedule::every(every).missed(missed).first_run_at(start);
        queue.set_schedule(name, &schedule).run(&mut con).unwrap();
        let (one, now) = due_one(&mut con, &queue, name);
        let Fired::Done {
            added,
            skipped,
            next_ms,
            already_there,
        } = queue.fire(&one, now).run(&mut con).unwrap()
        else {
            panic!("{name} fires")
        };
        let n = match missed {
            Missed::Skip => 1,
            Missed::CatchUp(n) => n as usize,
        };
        assert_eq!(added.len(), n, "{name}");
        assert_eq!(already_there, 0);
        // Consecutive run times, the last the latest up to now, the next one after it.
        for pair in added.windows(2) {
            assert_eq!(pair[1] - pair[0], 1000, "{name}");
        }
        let last = *added.last().unwrap();
        assert_eq!(next_ms, last + 1000);
        assert_eq!(
            skipped + added.len() as u64,
            (last - start) / 1000 + 1,
            "{name}"
        );
        assert_eq!((last - start) % 1000, 0);
        assert_eq!(
            queue
                .schedule(name)
                .run(&mut con)
                .unwrap()
                .unwrap()
                .next_run_ms,
            next_ms
        );
        for t in &added {
            let id = format!("{name}:{t}");
            assert!(queue.job(&id).run(&mut con).unwrap().is_some(), "{id}");
        }
    }
    // A catch-up above the cap, and a delay, are refused before any I/O.
    assert_invalid(
        queue
            .set_schedule("x", &Schedule::every(every).missed(Missed::CatchUp(101)))
            .run(&mut con),
        "missed",
    );
    assert_invalid(
        queue
            .set_schedule(
                "x",
                &Schedule::every(every).options(JobOptions::new().delay(every)),
            )
            .run(&mut con),
        "options",
    );
    // LIFO and a trace context, which a scheduled job does not take, are refused, not
    // dropped; retries out of range are refused as add_with refuses them.
    for (options, what) in [
        (JobOptions::new().lifo(), "lifo"),
        (
            JobOptions::new()
                .trace_context("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            "trace_context",
        ),
        (JobOptions::new().attempts(0), "attempts"),
    ] {
        assert_invalid(
            queue
                .set_schedule("x", &Schedule::every(every).options(options))
                .run(&mut con),
            what,
        );
    }
    assert_invalid(
        queue
            .set_schedule("x", &Schedule::every(every).offset(every))
            .run(&mut con),
        "offset",
    );
    assert_invalid(Schedule::cron("not a cron", "UTC"), "cron");
    assert_invalid(Schedule::cron("* * * * *", "Mars/Olympus"), "tz");
}

/// Eight threads run the scheduler loop on the same every-50 ms schedules until each has
/// fired 20 runs: every run time from the first to the last is added exactly once.
#[test]
fn many_schedulers_add_each_run_once() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = Arc::new(WorkQueue::new("many").unwrap());
    let names = ["a", "b", "c", "d", "e"];
    for name in names {
        let schedule = Schedule::every(Duration::from_millis(50))
            .missed(Missed::CatchUp(100))
            .payload(name);
        queue.set_schedule(name, &schedule).run(&mut con).unwrap();
    }
    let stop = Stop::new();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (queue, stop, client) = (queue.clone(), stop.clone(), db.client.clone());
            thread::spawn(move || {
                queue
                    .scheduler()
                    .max_wait(Duration::from_millis(20))
                    .run(&client, &stop)
                    .unwrap()
            })
        })
        .collect();
    // Wait for the server's state: at least 20 jobs per schedule.
    loop {
        let ids = waiting_ids(&mut con, &queue);
        if names.iter().all(|n| {
            ids.iter()
                .filter(|id| id.starts_with(&format!("{n}:")))
                .count()
                >= 20
        }) {
            break;
        }
        thread::sleep(Duration::from_millis(20));
    }
    stop.stop();
    let reports: Vec<ScheduleReport> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let ids = waiting_ids(&mut con, &queue);
    let mut runs: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for id in &ids {
        let (name, run) = id.split_once(':').unwrap();
        let name = names.iter().find(|n| **n == name).unwrap();
        runs.entry(name).or_default().push(run.parse().unwrap());
    }
    for (name, mut times) in runs {
        times.sort();
        for pair in times.windows(2) {
            assert_eq!(pair[1] - pair[0], 50, "{name}: a run missed: {times:?}");
        }
        // The next run stored is the one after the last added.
        let next = queue
            .schedule(name)
            .run(&mut con)
            .unwrap()
            .unwrap()
            .next_run_ms;
        assert_eq!(next, times.last().unwrap() + 50, "{name}");
    }
    let added: u64 = reports.iter().map(|r| r.added).sum();
    let skipped: u64 = reports.iter().map(|r| r.skipped).sum();
    assert_eq!(
        added,
        ids.len() as u64,
        "a run added twice or lost: {reports:?}"
    );
    assert_eq!(skipped, 0);
}

/// Fields of a schedule that set_schedule.lua did not write, and run times it did not
/// write, are refused with the scripts' codes, and nothing changes.
#[test]
fn foreign_schedules_are_refused() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("foreign").unwrap();
    let [schedules, due, _] = queue.schedule_keys().unwrap();
    let every = Schedule::every(Duration::from_secs(1));
    for (fields, score, code) in [
        (
            &["t:x", "every 0 0", "o:x", "1 0 0", "d:x", "p"][..],
            "0",
            "BAD_SCHEDULES",
        ),
        (
            &["t:x", "every 10 0", "o:x", "1 101 0", "d:x", "p"][..],
            "0",
            "BAD_SCHEDULES",
        ),
        (
            &["t:x", "hourly", "o:x", "1 0 0", "d:x", "p"][..],
            "0",
            "BAD_SCHEDULES",
        ),
        (
            &["t:x", "every 10 0", "o:x", "1 0 0"][..],
            "0",
            "BAD_SCHEDULES",
        ),
        // The jobs' options, after the priority, as add.lua stores a job's: or not.
        (
            &["t:x", "every 10 0", "o:x", "1 0 0 3 x 0 0", "d:x", "p"][..],
            "0",
            "BAD_SCHEDULES",
        ),
        (
            &["t:x", "every 10 0", "o:x", "1 0 0 ", "d:x", "p"][..],
            "0",
            "BAD_SCHEDULES",
        ),
        (
            &["t:x", "every 10 0", "o:x", "1 0 0 1001 f 0 0", "d:x", "p"][..],
            "0",
            "BAD_SCHEDULES",
        ),
        (
            &["t:x", "every 10 0", "o:x", "1 0 0 3 f 0 0 x", "d:x", "p"][..],
            "0",
            "BAD_SCHEDULES",
        ),
        (
            &["t:x", "every 10 0", "o:x", "1 0 0", "d:x", "p"][..],
            "1.5",
            "BAD_DUE",
        ),
        (
            &["t:x", "every 10 0", "o:x", "1 0 0", "d:x", "p"][..],
            "-5",
            "BAD_DUE",
        ),
    ] {
        harness::cmd(&mut con, &["FLUSHDB"]);
        let mut hset = vec!["HSET", schedules.as_str()];
        hset.extend_from_slice(fields);
        harness::cmd(&mut con, &hset);
        harness::cmd(&mut con, &["ZADD", &due, score, "x"]);
        let before = harness::dump(&mut con);
        assert_code(queue.set_schedule("x", &every).run(&mut con), code);
        assert_code(queue.schedule("x").run(&mut con), code);
        assert_code(queue.schedules(0, 10).run(&mut con), code);
        if score == "0" {
            assert_code(queue.due_schedules(10).run(&mut con), code);
        }
        let one = DueSchedule {
            name: "x".into(),
            run_ms: 0,
            revision: 1,
            timing: Timing::Every {
                every: Duration::from_millis(10),
                offset: Duration::ZERO,
            },
            missed: Missed::Skip,
        };
        assert_code(queue.fire(&one, 0).run(&mut con), code);
        assert_eq!(harness::dump(&mut con), before, "{fields:?} {score}");
    }
    // A run time of a schedule with no fields.
    harness::cmd(&mut con, &["FLUSHDB"]);
    harness::cmd(&mut con, &["ZADD", &due, "0", "ghost"]);
    assert_code(queue.due_schedules(10).run(&mut con), "BAD_DUE");
}

/// Schedules on the cluster: the scheduler loop fires them on the queue's node.
#[test]
fn a_scheduler_runs_on_the_cluster() {
    let client = harness::cluster_client();
    let mut con = harness::cluster_con();
    let queue = WorkQueue::new("work_queue_schedule:cluster").unwrap();
    let schedule = Schedule::every(Duration::from_millis(1_000_000_000_000))
        .first_run_at(0)
        .payload("p");
    queue.set_schedule("s", &schedule).run(&mut con).unwrap();
    let stop = Stop::new();
    let report = thread::scope(|scope| {
        let run = scope.spawn(|| queue.scheduler().run(&client, &stop).unwrap());
        while queue
            .job("s:1000000000000")
            .run(&mut con)
            .unwrap()
            .is_none()
        {
            thread::sleep(Duration::from_millis(10));
        }
        stop.stop();
        run.join().unwrap()
    });
    assert!(report.added <= 1 && report.skipped <= 1, "{report:?}");
    queue.remove_schedule("s").run(&mut con).unwrap();
    queue.clean(State::Waiting, 10).run(&mut con).unwrap();
}

/// The async loop fires as the sync one does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_scheduler_fires() {
    let db = harness::fresh_db();
    let mut con = db.multiplexed().await;
    let queue = WorkQueue::new("async").unwrap();
    let schedule = Schedule::every(Duration::from_millis(1_000_000_000_000)).first_run_at(0);
    queue
        .set_schedule("s", &schedule)
        .run_async(&mut con)
        .await
        .unwrap();
    let stop = Stop::new();
    let run = {
        let (queue, stop, mut con) = (queue.clone(), stop.clone(), con.clone());
        tokio::spawn(async move { queue.scheduler().run_async(&mut con, &stop).await })
    };
    while queue
        .job("s:1000000000000")
        .run_async(&mut con)
        .await
        .unwrap()
        .is_none()
    {
        // Waiting for the server's state; the loop runs on the other worker thread.
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.stop();
    let report = run.await.unwrap().unwrap();
    assert_eq!(report.added, 1);
    assert_eq!(report.skipped, 1);
}

/// One scheduler at its defaults, and schedules every 100, 250 and 500 ms set one after
/// another at random moments while it blocks: every run of each, from its first, is added
/// on time, none skipped (at its defaults it slept a whole second and missed most runs of
/// a 100 ms schedule, and a schedule set while it slept waited for that second to end).
/// Checked from the jobs in the queue.
#[test]
fn a_default_scheduler_adds_every_run_of_schedules_set_while_it_sleeps() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("on-time").unwrap();
    let stop = Stop::new();
    let mut rng = harness::Rng::new(42);
    let (report, firsts, end_ms) = thread::scope(|scope| {
        let run = scope.spawn(|| queue.scheduler().run(&db.client, &stop).unwrap());
        let mut firsts = BTreeMap::new();
        for (name, every) in [("slow", 500), ("mid", 250), ("fast", 100)] {
            // A random moment on the server's clock, 50 to 350 ms on.
            let at = harness::server_ms(&mut con) + 50 + rng.below(300);
            while harness::server_ms(&mut con) < at {
                thread::sleep(Duration::from_millis(5));
            }
            let schedule = Schedule::every(Duration::from_millis(every)).payload(name);
            let (_, first) = queue.set_schedule(name, &schedule).run(&mut con).unwrap();
            firsts.insert(name, (every, first));
        }
        // Until the fast schedule has fired 20 run times (added or skipped).
        let (_, fast_first) = firsts["fast"];
        while queue
            .schedule("fast")
            .run(&mut con)
            .unwrap()
            .is_none_or(|fast| fast.next_run_ms < fast_first + 20 * 100)
        {
            thread::sleep(Duration::from_millis(10));
        }
        let end_ms = harness::server_ms(&mut con);
        stop.stop();
        (run.join().unwrap(), firsts, end_ms)
    });
    assert_eq!(report.skipped, 0, "{report:?}");
    let ids = waiting_ids(&mut con, &queue);
    for (name, (every, first)) in firsts {
        let mut runs: Vec<u64> = ids
            .iter()
            .filter_map(|id| id.strip_prefix(&format!("{name}:")))
            .map(|run| run.parse().unwrap())
            .collect();
        runs.sort();
        let expected: Vec<u64> = (first..)
            .step_by(every as usize)
            .take_while(|run| *run <= runs.last().copied().unwrap_or(0))
            .collect();
        assert_eq!(runs, expected, "{name}: runs missed");
        // Every run time that passed a period before the end was added.
        assert!(
            runs.last().is_some_and(|last| last + 2 * every > end_ms),
            "{name}: runs {runs:?} stop well before {end_ms}"
        );
    }
}
