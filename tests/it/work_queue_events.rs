//! What happened to each job, as callers learn it: waiters for one job's end while their
//! connections are killed, the events' cap, results and progress reports.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use redis_patterns::work_queue::{
    Child, Done, Event, EventKind, JobEnd, JobOptions, Settings, Stop, WorkQueue,
};

use crate::harness;

/// What the workers below do with job `n`: every seventh fails for good, the others are
/// acked with the result `r<n>`.
fn expected_end(n: u64) -> JobEnd {
    if n.is_multiple_of(7) {
        JobEnd::Dead(b"boom".to_vec())
    } else {
        JobEnd::Completed(Some(format!("r{n}").into_bytes()))
    }
}

/// Six callers each add jobs and wait for each one's end while three workers run them
/// (acking a batch with results in each take) and another thread kills the callers'
/// connections at random: every caller learns every job's end, with its result or
/// error, and the events never pass their cap. The cap (40) is far below the 600 events,
/// so readers also meet events trimmed unread, and learn those ends from the job's state.
#[test]
fn every_waiter_learns_its_jobs_end_across_killed_connections() {
    const CALLERS: u64 = 6;
    const JOBS: u64 = 50;
    const CAP: u64 = 40;
    let db = harness::fresh_db();
    let queue = WorkQueue::new("events")
        .unwrap()
        .with_max_deliveries(1)
        .unwrap();
    let settings = Settings::new().events(CAP).unwrap();
    queue.configure(&settings).run(&mut db.con()).unwrap();
    let callers_done = AtomicU64::new(0);
    let finished = AtomicBool::new(false);
    let kills = AtomicU64::new(0);
    let longest = AtomicU64::new(0);
    thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                let mut con = db.con();
                let mut held = Vec::new();
                while !finished.load(Ordering::SeqCst) {
                    let (failing, done): (Vec<_>, Vec<_>) =
                        held.iter()
                            .partition(|job: &&redis_patterns::work_queue::Job| {
                                job.id.parse::<u64>().unwrap().is_multiple_of(7)
                            });
                    for job in failing {
                        queue.fail(job, "boom").run(&mut con).unwrap();
                    }
                    let done: Vec<Done> = done
                        .into_iter()
                        .map(|job| Done::with_result(job, format!("r{}", job.id)).unwrap())
                        .collect();
                    held = queue.ack_and_take(done, 5).run(&mut con).unwrap();
                    if held.is_empty() {
                        queue
                            .wait_for_work(Duration::from_millis(50))
                            .run(&mut con)
                            .unwrap();
                    }
                }
            });
        }
        for caller in 0..CALLERS {
            let (queue, db, callers_done) = (&queue, &db, &callers_done);
            s.spawn(move || {
                let connect = || {
                    let mut con = db.con();
                    harness::cmd(&mut con, &["CLIENT", "SETNAME", "caller"]);
                    con
                };
                let mut con = connect();
                for i in 0..JOBS {
                    let n = caller * JOBS + i;
                    let id = n.to_string();
                    let end = loop {
                        let waited = queue.add(&id, "x").run(&mut con).and_then(|_| {
                            queue.wait_for_job(&mut con, &id, Duration::from_secs(60))
                        });
                        match waited {
                            Ok(end) => break end,
                            // Killed: a new connection, and the same wait again.
                            Err(_) => con = connect(),
                        }
                    };
                    assert_eq!(end, Some(expected_end(n)), "job {n}");
                }
                callers_done.fetch_add(1, Ordering::SeqCst);
            });
        }
        s.spawn(|| {
            let mut con = db.con();
            let mut rng = harness::Rng::new(7);
            while callers_done.load(Ordering::SeqCst) < CALLERS {
                let len: u64 = redis::cmd("XLEN")
                    .arg(queue.keys()[10])
                    .query(&mut con)
                    .unwrap();
                longest.fetch_max(len, Ordering::SeqCst);
                let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
                let callers: Vec<&str> = list
                    .lines()
                    .filter(|line| line.contains(" name=caller "))
                    .filter_map(|line| line.split(' ').next()?.strip_prefix("id="))
                    .collect();
                if !callers.is_empty() {
                    let id = callers[rng.below(callers.len() as u64) as usize];
                    let _: redis::RedisResult<()> = redis::cmd("CLIENT")
                        .arg("KILL")
                        .arg("ID")
                        .arg(id)
                        .query(&mut con);
                    kills.fetch_add(1, Ordering::SeqCst);
                }
                // Pacing only: the callers' progress is what ends the loop.
                thread::sleep(Duration::from_millis(20));
            }
            finished.store(true, Ordering::SeqCst);
        });
    });
    assert!(kills.load(Ordering::SeqCst) > 0, "no connection was killed");
    assert!(longest.load(Ordering::SeqCst) <= CAP);
    let mut con = db.con();
    let len: u64 = redis::cmd("XLEN")
        .arg(queue.keys()[10])
        .query(&mut con)
        .unwrap();
    assert_eq!(len, CAP, "600 events and more, trimmed to the cap");
}

/// A reader that stops and goes on from its last id, on a new connection, reads every
/// event once, in order; one that falls a whole cap behind hears that it lost some.
#[test]
fn a_reader_goes_on_from_its_last_id() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("reader").unwrap();
    let settings = Settings::new().events(5).unwrap();
    queue.configure(&settings).run(&mut con).unwrap();
    assert_eq!(queue.newest_event().run(&mut con).unwrap(), "0-0");
    for id in ["a", "b", "c"] {
        queue.add(id, "x").run(&mut con).unwrap();
    }
    let jobs = queue.take(3).run(&mut con).unwrap();
    // From now: the adds and takes (six events) are behind the reader.
    let start = queue.newest_event().run(&mut con).unwrap();
    let mut events = queue.events(&start);
    queue.ack(&jobs[0]).run(&mut con).unwrap();
    let first = events.next(&mut con, Duration::from_secs(5)).unwrap();
    assert_eq!(kinds(&first), [(EventKind::Completed, "a")]);
    assert!(!events.lost());
    let resume_from = events.last_id().to_owned();
    for job in &jobs[1..] {
        queue.progress(job, "half").run(&mut con).unwrap();
        queue.ack(job).run(&mut con).unwrap();
    }
    // Another connection, another reader, from the last id the first one handled.
    let mut con = db.con();
    let mut events = queue.events(&resume_from);
    let rest = events.next(&mut con, Duration::from_secs(5)).unwrap();
    assert_eq!(
        kinds(&rest),
        [
            (EventKind::Progress, "b"),
            (EventKind::Completed, "b"),
            (EventKind::Progress, "c"),
            (EventKind::Completed, "c"),
        ]
    );
    assert_eq!(rest[0].detail, b"half");
    assert!(!events.lost());
    // Five more events while nobody reads: the cap keeps five, the reader missed one.
    let behind = events.last_id().to_owned();
    for id in ["d", "e", "f", "g", "h"] {
        queue.add(id, "x").run(&mut con).unwrap();
    }
    let jobs = queue.take(5).run(&mut con).unwrap();
    queue.ack_and_take(&jobs, 1).run(&mut con).unwrap();
    let mut events = queue.events(&behind);
    let page = events.next(&mut con, Duration::from_secs(5)).unwrap();
    assert_eq!(page.len(), 5);
    assert!(
        events.lost(),
        "events after the reader's last id were trimmed"
    );
    // Nothing new: a read waits, and times out empty.
    assert!(
        events
            .next(&mut con, Duration::from_millis(50))
            .unwrap()
            .is_empty()
    );
}

fn kinds(events: &[Event]) -> Vec<(EventKind, &str)> {
    events.iter().map(|e| (e.kind, e.job.as_str())).collect()
}

/// A handler's result is kept by every worker loop: `run` (acked with the next take),
/// `run_concurrent` (acked in a batch) and `run_async`; a handler that gives `()` keeps
/// nothing, and the events tell each end.
#[test]
fn a_handlers_result_is_kept_by_every_loop() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("results").unwrap();
    let settings = Settings::new().events(100).unwrap();
    queue.configure(&settings).run(&mut con).unwrap();
    let loops = ["run", "concurrent", "async"];
    for name in loops {
        for n in 0..4 {
            queue
                .add(&format!("{name}-{n}"), n.to_string())
                .run(&mut con)
                .unwrap();
        }
        let stop = Stop::new();
        let seen = AtomicU64::new(0);
        // Every fourth job gives no result.
        let handler = |job: &redis_patterns::work_queue::Job| {
            if seen.fetch_add(1, Ordering::SeqCst) == 3 {
                stop.stop();
            }
            let n: u64 = job.payload_as().map_err(|e| e.to_string())?;
            Ok::<_, String>((n != 3).then(|| format!("twice {}", 2 * n)))
        };
        let report = match name {
            "run" => queue.worker().run(&db.client, &stop, handler),
            "concurrent" => queue
                .worker()
                .concurrency(2)
                .unwrap()
                .run_concurrent(&db.client, &stop, handler),
            _ => tokio::runtime::Runtime::new().unwrap().block_on(async {
                let mut con = db.client.get_multiplexed_async_connection().await.unwrap();
                queue
                    .worker()
                    .run_async(&mut con, &stop, |job| {
                        let kept = handler(&job);
                        async move { kept }
                    })
                    .await
            }),
        }
        .unwrap();
        assert_eq!(report.acked, 4, "{name}");
        for n in 0..4u64 {
            let kept = queue.result(&format!("{name}-{n}")).run(&mut con).unwrap();
            let expected = (n != 3).then(|| format!("twice {}", 2 * n).into_bytes());
            assert_eq!(kept, expected, "{name}-{n}");
        }
    }
    let page = queue.events_after("0-0", 100).run(&mut con).unwrap();
    let completed = page
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Completed)
        .count();
    assert_eq!(completed, 12);
}

/// The start of a job's life is in the events too: added (with its state), waiting (a
/// delayed job come due, a flow's parent whose children ended), active (with the
/// delivery) and stalled (a lease run out); a wait tells a job acked without a result
/// from one never added.
#[test]
fn events_follow_a_job_from_its_add() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("lifecycle")
        .unwrap()
        .with_lease(Duration::from_millis(30))
        .unwrap();
    queue
        .configure(&Settings::new().events(1000).unwrap())
        .run(&mut con)
        .unwrap();
    let mut events = queue.events("0-0");
    let mut read = |con: &mut redis::Connection| {
        let page = events.next(con, Duration::from_secs(5)).unwrap();
        page.into_iter()
            .map(|e| {
                let detail = String::from_utf8(e.detail).unwrap();
                (e.kind, e.job, detail)
            })
            .collect::<Vec<_>>()
    };
    let event = |kind, job: &str, detail: &str| (kind, job.to_owned(), detail.to_owned());

    queue.add("now", "x").run(&mut con).unwrap();
    let before = harness::server_ms(&mut con);
    queue
        .add_with(
            "later",
            "x",
            JobOptions::new().delay(Duration::from_millis(30)),
        )
        .run(&mut con)
        .unwrap();
    let after = harness::server_ms(&mut con);
    let mut added = read(&mut con);
    // A delayed job's `delayed` names when it is due: 30 ms after its add.
    let (kind, job, due) = added.pop().unwrap();
    assert_eq!((kind, job.as_str()), (EventKind::Delayed, "later"));
    let due: u64 = due.parse().unwrap();
    assert!((before + 30..=after + 30).contains(&due), "due at {due}");
    assert_eq!(
        added,
        [
            event(EventKind::Added, "now", "waiting"),
            event(EventKind::Added, "later", "delayed"),
        ]
    );
    let first = queue.take(1).run(&mut con).unwrap();
    assert_eq!(read(&mut con), [event(EventKind::Active, "now", "1")]);
    // The lease runs out; the delayed job comes due: one take finds both.
    harness::wait_until_server_ms(&mut con, first[0].deadline_ms + 1);
    let taken = queue.take(10).run(&mut con).unwrap();
    let mut seen = read(&mut con);
    seen.sort_by_key(|(kind, job, _)| (kind.as_str(), job.clone()));
    let mut want = vec![
        event(EventKind::Stalled, "now", "lease ran out"),
        event(EventKind::Waiting, "later", ""),
    ];
    want.extend(
        taken
            .iter()
            .map(|job| event(EventKind::Active, &job.id, &job.delivery.to_string())),
    );
    want.sort_by_key(|(kind, job, _)| (kind.as_str(), job.clone()));
    assert_eq!(seen, want);
    for job in &taken {
        queue.ack(job).run(&mut con).unwrap();
    }
    read(&mut con);

    // A flow's parent whose only child ends is waiting again.
    queue
        .add_flow(
            "parent",
            "p",
            JobOptions::new(),
            &[Child::new("child", "c").unwrap()],
        )
        .run(&mut con)
        .unwrap();
    let child = queue.take(1).run(&mut con).unwrap();
    read(&mut con);
    queue.ack(&child[0]).run(&mut con).unwrap();
    assert_eq!(
        read(&mut con),
        [
            event(EventKind::Completed, "child", ""),
            event(EventKind::Waiting, "parent", ""),
        ]
    );

    // Acked without a result before the wait began, or never added.
    assert_eq!(
        queue
            .wait_for_job(&mut con, "now", Duration::from_secs(1))
            .unwrap(),
        Some(JobEnd::Completed(None))
    );
    assert_eq!(queue.result("now").run(&mut con).unwrap(), None);
    assert_eq!(
        queue
            .wait_for_job(&mut con, "never", Duration::from_secs(1))
            .unwrap(),
        Some(JobEnd::Gone)
    );
}
