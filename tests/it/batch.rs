//! Batches: one round trip in order whatever the script cache holds, transactions never
//! applied in part, pipelines of one script that load only after `NOSCRIPT`, per-op
//! recovery in pipelines, and cluster connections, sync and async.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use redis_patterns::counter::{Counter, HashCounter};
use redis_patterns::fixed_length_queue::FixedLengthQueue;
use redis_patterns::identity_lock::IdentityLock;
use redis_patterns::{Batch, Error};

use crate::harness::{self, Counting};

fn flush(con: &mut dyn redis::ConnectionLike) {
    harness::cmd(con, &["SCRIPT", "FLUSH"]);
}

/// Three scripts and a native command, in one batch.
fn mixed(batch: &mut Batch, tag: &str) -> Vec<redis_patterns::Slot<i64>> {
    let lock = IdentityLock::new(format!("{{{tag}}}:lock")).unwrap();
    vec![
        batch.add(lock.acquire("t", None).map(|b| Ok(i64::from(b)))),
        batch.add(
            HashCounter::new(format!("{{{tag}}}:h"), "f")
                .unwrap()
                .reset(7),
        ),
        batch.add(Counter::new(format!("{{{tag}}}:n")).unwrap().increase(1)),
        batch.add(lock.release("t").map(|b| Ok(i64::from(b)))),
    ]
}

/// How many times the server ran `command` (`calls=` of `INFO commandstats`).
fn calls(con: &mut redis::Connection, command: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|line| line.strip_prefix(&prefix)?.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

/// A batch is one round trip whatever the script cache holds: it loads its scripts in
/// band. The exception is a plain pipeline whose operations all call one script: it sends
/// its calls alone, one round trip with no load while the server has the script, and
/// right after a flush two, the second with the script's load and the calls again.
#[test]
fn a_batch_is_one_round_trip_right_after_a_flush_but_a_pipeline_of_one_script_two() {
    let servers = harness::script_cache_servers();
    let db = servers.db();
    let mut observer = db.con();
    // The distinct scripts `mixed` calls (its other operations are native commands).
    let lock = IdentityLock::new("{rt}:lock").unwrap();
    let scripts = [
        lock.acquire("t", None).script(),
        HashCounter::new("{rt}:h", "f").unwrap().reset(7).script(),
        Counter::new("{rt}:n").unwrap().increase(1).script(),
        lock.release("t").script(),
    ]
    .into_iter()
    .flatten()
    .map(|script| script.name)
    .collect::<std::collections::BTreeSet<_>>()
    .len() as u64;
    assert!(scripts >= 2, "{scripts}");
    for one_script in [false, true] {
        for atomic in [false, true] {
            for flushed in [true, false] {
                let mut con = Counting {
                    inner: db.con(),
                    requests: 0,
                };
                if flushed {
                    flush(&mut con.inner);
                }
                let loads_before = calls(&mut observer, "script|load");
                let mut batch = if atomic {
                    Batch::transaction()
                } else {
                    Batch::new()
                };
                let values: Vec<i64> = if one_script {
                    // Three releases of locks nobody holds with the token: one script.
                    let slots: Vec<_> = (0..3)
                        .map(|i| {
                            let lock = IdentityLock::new(format!("{{rt}}:free:{i}")).unwrap();
                            batch.add(lock.release("t").map(|b| Ok(i64::from(b))))
                        })
                        .collect();
                    let mut replies = batch.run(&mut con).unwrap();
                    slots
                        .into_iter()
                        .map(|s| s.take(&mut replies).unwrap())
                        .collect()
                } else {
                    let slots = mixed(&mut batch, "rt");
                    let mut replies = batch.run(&mut con).unwrap();
                    slots
                        .into_iter()
                        .map(|s| s.take(&mut replies).unwrap())
                        .collect()
                };
                if one_script {
                    assert_eq!(values, [0, 0, 0]);
                } else {
                    assert_eq!((values[0], values[3]), (1, 1));
                }
                let loads = calls(&mut observer, "script|load") - loads_before;
                let case =
                    format!("one script: {one_script}, transaction: {atomic}, flushed: {flushed}");
                let (round_trips, loaded) = match (one_script, atomic, flushed) {
                    (false, _, _) => (1, scripts),
                    (true, true, _) => (1, 1),
                    (true, false, true) => (2, 1),
                    (true, false, false) => (1, 0),
                };
                assert_eq!(con.requests, round_trips, "{case}");
                assert_eq!(loads, loaded, "{case}");
            }
        }
    }
}

/// Right after a flush a batch runs its operations in the batch's order: a pipeline of a
/// script's call and a native command (it loads in band), a transaction, and a pipeline
/// whose calls are all of one script (they all got `NOSCRIPT` and went again, in order).
#[test]
fn after_a_flush_a_batch_runs_in_its_order() {
    let servers = harness::script_cache_servers();
    let db = servers.db();
    let mut con = db.con();
    for atomic in [false, true] {
        for flushed in [true, false] {
            let counter = HashCounter::new("{order}:h", "f").unwrap();
            harness::cmd(&mut con, &["DEL", "{order}:h"]);
            if flushed {
                flush(&mut con);
            } else {
                counter.reset(0).run(&mut con).unwrap();
            }
            let mut batch = if atomic {
                Batch::transaction()
            } else {
                Batch::new()
            };
            // reset(7) is a script and answers the value it replaced; increase(1) is a
            // native HINCRBY and answers the new value.
            let reset = batch.add(counter.reset(7));
            let increased = batch.add(counter.increase(1));
            let mut replies = batch.run(&mut con).unwrap();
            let got = (
                reset.take(&mut replies).unwrap(),
                increased.take(&mut replies).unwrap(),
                counter.get().run(&mut con).unwrap(),
            );
            assert_eq!(got, (0, 8, 8), "transaction: {atomic}, flushed: {flushed}");
        }
    }
    // One script: each reset answers the value the one before it set.
    let counter = HashCounter::new("{order}:h", "f").unwrap();
    harness::cmd(&mut con, &["DEL", "{order}:h"]);
    flush(&mut con);
    let mut batch = Batch::new();
    let resets: Vec<_> = [1, 2, 3].map(|v| batch.add(counter.reset(v))).into();
    let mut replies = batch.run(&mut con).unwrap();
    let replaced: Vec<i64> = resets
        .into_iter()
        .map(|s| s.take(&mut replies).unwrap())
        .collect();
    assert_eq!(replaced, [0, 1, 2]);
    assert_eq!(counter.get().run(&mut con).unwrap(), 3);
}

/// Flushes the script cache every millisecond until the returned flag is set.
fn flusher<'s>(
    scope: &'s thread::Scope<'s, '_>,
    stop: &'s AtomicBool,
    flushes: &'s AtomicU64,
    mut con: impl redis::ConnectionLike + Send + 's,
) {
    scope.spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            flush(&mut con);
            flushes.fetch_add(1, Ordering::SeqCst);
            thread::sleep(Duration::from_millis(1));
        }
    });
}

/// What the hammer saw: transactions with some op failed, pipeline ops that failed, single
/// ops that failed, and how many flushes ran meanwhile.
#[derive(Debug, Default)]
struct Hammer {
    partial_transactions: usize,
    failed_pipeline_ops: usize,
    failed_single_ops: usize,
    flushes: u64,
    /// The first error any op got, to say what went wrong.
    first_error: Option<String>,
}

/// `rounds` transactions, pipelines and single ops on keys tagged `tag`, while another
/// connection flushes the script cache every millisecond; every 8 rounds wait for a
/// flush of their own, so flushes land amid the rounds however the threads are
/// scheduled. Returns what failed, after checking that no op ran twice (the queue holds
/// each pushed item once).
fn hammer(
    rounds: usize,
    tag: &str,
    mut con: impl redis::ConnectionLike,
    flusher_con: impl redis::ConnectionLike + Send,
) -> Hammer {
    let stop = AtomicBool::new(false);
    let flushes = AtomicU64::new(0);
    let mut seen = Hammer::default();
    let queue = FixedLengthQueue::new(format!("{{{tag}}}:queue"), 1_000_000).unwrap();
    thread::scope(|scope| {
        flusher(scope, &stop, &flushes, flusher_con);
        // Stops the flusher however this thread leaves the scope, a failed unwrap too.
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let _stop = Stop(&stop);
        for round in 0..rounds {
            let due = (round / 8) as u64 + 1;
            harness::wait_for_count(&flushes, due, "a flush amid the rounds");
            let mut batch = Batch::transaction();
            let slots = mixed(&mut batch, tag);
            let pushed = batch.add(queue.enqueue(&[format!("t{round}")]));
            let mut replies = batch.run(&mut con).unwrap();
            let pushed_failed = pushed.take(&mut replies).is_err();
            let failed = slots
                .into_iter()
                .map(|s| s.take(&mut replies).is_err())
                .filter(|&f| f)
                .count()
                + usize::from(pushed_failed);
            seen.partial_transactions += usize::from(failed > 0);

            let mut batch = Batch::new();
            let slots = mixed(&mut batch, tag);
            let pushed = batch.add(queue.enqueue(&[format!("p{round}")]));
            let mut replies = batch.run(&mut con).unwrap();
            let pushed_failed = pushed.take(&mut replies).is_err();
            seen.failed_pipeline_ops += slots
                .into_iter()
                .map(|s| s.take(&mut replies).is_err())
                .filter(|&f| f)
                .count()
                + usize::from(pushed_failed);

            let lock = IdentityLock::new(format!("{{{tag}}}:single")).unwrap();
            let single = [
                lock.acquire("s", None).run(&mut con).map(drop),
                queue
                    .enqueue(&[format!("s{round}")])
                    .run(&mut con)
                    .map(drop),
                lock.release("s").run(&mut con).map(drop),
            ];
            seen.failed_single_ops += single.iter().filter(|r| r.is_err()).count();
            if let Some(Err(err)) = single.iter().find(|r| r.is_err()) {
                seen.first_error.get_or_insert(err.to_string());
            }
        }
    });
    seen.flushes = flushes.load(Ordering::SeqCst);
    // Every push ran exactly once: three per round, none doubled, none lost.
    let items: Vec<String> = redis::cmd("LRANGE")
        .arg(format!("{{{tag}}}:queue"))
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    let mut sorted = items.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), items.len(), "an op ran twice: {seen:?}");
    assert_eq!(items.len(), 3 * rounds, "an op was lost: {seen:?}");
    seen
}

#[test]
fn under_flushes_transactions_never_apply_in_part_and_nothing_fails() {
    let servers = harness::script_cache_servers();
    let db = servers.db();
    let seen = hammer(800, "hammer", db.con(), db.con());
    println!("standalone: {seen:?}");
    assert!(seen.flushes > 50, "{seen:?}");
    assert_eq!(seen.partial_transactions, 0, "{seen:?}");
    assert_eq!(seen.failed_pipeline_ops, 0, "{seen:?}");
    assert_eq!(seen.failed_single_ops, 0, "{seen:?}");
}

#[test]
fn under_flushes_on_a_cluster_transactions_never_apply_in_part_and_nothing_fails() {
    let servers = harness::script_cache_servers();
    harness::cmd(&mut servers.cluster_con(), &["FLUSHALL"]);
    let seen = hammer(
        400,
        "cluster:hammer",
        servers.cluster_con(),
        servers.cluster_con(),
    );
    println!("cluster: {seen:?}");
    assert!(seen.flushes > 25, "{seen:?}");
    assert_eq!(seen.partial_transactions, 0, "{seen:?}");
    assert_eq!(seen.failed_pipeline_ops, 0, "{seen:?}");
    assert_eq!(seen.failed_single_ops, 0, "{seen:?}");
}

#[test]
fn batches_run_on_sync_and_async_cluster_connections() {
    let mut con = harness::cluster_con();
    for atomic in [false, true] {
        let mut batch = if atomic {
            Batch::transaction()
        } else {
            Batch::new()
        };
        let tag = format!("batch:sync:{atomic}");
        let slots = mixed(&mut batch, &tag);
        let mut replies = batch.run(&mut con).unwrap();
        let values: Vec<i64> = slots
            .into_iter()
            .map(|s| s.take(&mut replies).unwrap())
            .collect();
        assert_eq!(values, [1, 0, 1, 1]);
    }
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let mut con = harness::cluster_client()
            .get_async_connection()
            .await
            .unwrap();
        for atomic in [false, true] {
            let mut batch = if atomic {
                Batch::transaction()
            } else {
                Batch::new()
            };
            let tag = format!("batch:async:{atomic}");
            let slots = mixed(&mut batch, &tag);
            let mut replies = batch.run_async(&mut con).await.unwrap();
            let values: Vec<i64> = slots
                .into_iter()
                .map(|s| s.take(&mut replies).unwrap())
                .collect();
            assert_eq!(values, [1, 0, 1, 1]);
        }
    });
}

/// Keys of two slots in one batch: refused before anything is sent, with the keys and
/// what to do.
#[test]
fn a_cross_slot_batch_is_refused_before_any_io_on_a_cluster() {
    let cross = || {
        let mut batch = Batch::transaction();
        let _ = batch.add(Counter::new("{slot:a}:n").unwrap().increase(1));
        let _ = batch.add(Counter::new("{slot:b}:n").unwrap().increase(1));
        batch
    };
    let check = |result: Result<redis_patterns::Replies, Error>| match result {
        Err(Error::InvalidInput { what: "batch", why }) => {
            assert!(why.contains("`{slot:a}:n`"), "{why}");
            assert!(why.contains("`{slot:b}:n`"), "{why}");
            // The example keeps the first key's own tag rather than nesting one in another.
            assert!(why.contains("one hash tag, as in `{slot:a}:a`"), "{why}");
        }
        other => panic!("expected a refused batch, got {other:?}"),
    };
    let mut con = harness::cluster_con();
    check(cross().run(&mut con));
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let mut con = harness::cluster_client()
            .get_async_connection()
            .await
            .unwrap();
        check(cross().run_async(&mut con).await);
    });
    for key in ["{slot:a}:n", "{slot:b}:n"] {
        let exists: bool = redis::cmd("EXISTS").arg(key).query(&mut con).unwrap();
        assert!(!exists, "{key} was written");
    }
    // On a standalone server any keys share a batch.
    let db = harness::fresh_db();
    let mut batch = Batch::transaction();
    let a = batch.add(Counter::new("{slot:a}:n").unwrap().increase(1));
    let b = batch.add(Counter::new("{slot:b}:n").unwrap().increase(2));
    let mut replies = batch.run(&mut db.con()).unwrap();
    assert_eq!(
        (a.take(&mut replies).unwrap(), b.take(&mut replies).unwrap()),
        (1, 2)
    );
}

#[test]
fn a_slot_is_read_only_from_its_own_batch() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let mut first = Batch::new();
    let slot = first.add(Counter::new("n").unwrap().increase(1));
    let mut other = Batch::new();
    let _ = other.add(Counter::new("m").unwrap().increase(1));
    let _ = first.run(&mut con).unwrap();
    let mut replies = other.run(&mut con).unwrap();
    match slot.take(&mut replies) {
        Err(err) => assert!(err.to_string().contains("another batch"), "{err}"),
        Ok(n) => panic!("read {n} from another batch's replies"),
    }
}

/// The futures of a run can move between threads (`tokio::spawn`): a plan holds nothing
/// that is not `Send`.
#[test]
fn runs_on_async_connections_are_send() {
    fn send<T: Send>(_: &T) {}
    async fn both(mut con: redis::aio::MultiplexedConnection) {
        let counter = Counter::new("send").unwrap();
        let mut batch = Batch::new();
        let _ = batch.add(counter.increase(1));
        let _ = counter.increase(1).run_async(&mut con).await;
        let _ = batch.run_async(&mut con).await;
    }
    let _future = |con| {
        let future = both(con);
        send(&future);
        future
    };
}
