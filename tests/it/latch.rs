use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier as Rendezvous, Mutex};
use std::thread;
use std::time::Duration;

use redis_patterns::latch::{Armed, Latch, LatchState};
use redis_patterns::wait::Attempt;
use redis_patterns::{Batch, Error, Op};

use crate::harness::{self, Transcript, assert_invalid, assert_snapshot};
use crate::step;

/// A try as the transcript shows it: the generation that opened, or `None` for not yet
/// (the wake id differs from run to run).
fn done<T: 'static>(op: Op<Attempt<T>>) -> Op<Option<T>> {
    op.map(|attempt| {
        Ok(match attempt {
            Attempt::Done(value) => Some(value),
            Attempt::NotYet(_) => None,
        })
    })
}

/// A latch nobody armed, two generations with ids, a resent count-down, a count-down of
/// another generation, a waiter that saw generation 1 closed and asks after the re-arm.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let latch = Latch::new("latch:import").unwrap();
    t.step("latch.latch_key()", Ok::<_, Error>(latch.latch_key()))
        .unwrap();
    t.note("a latch nobody armed is never open");
    let _ = step!(t, con, latch.state());
    let _ = step!(t, con, done(latch.try_wait(None)));
    let _ = step!(t, con, done(latch.try_wait(Some(1))));
    let _ = step!(t, con, latch.count_down(None));
    let _ = step!(t, con, latch.arm(2, None));
    let _ = step!(t, con, latch.arm(5, None));
    let _ = step!(t, con, latch.count_down(Some("shard-1")));
    let _ = step!(t, con, latch.count_down(Some("shard-1")));
    let _ = step!(t, con, latch.count_down_in(2, Some("shard-2")));
    let _ = step!(t, con, latch.state());
    let _ = step!(t, con, done(latch.try_wait(None)));
    let _ = step!(t, con, latch.count_down_in(1, Some("shard-2")));
    let _ = step!(t, con, latch.count_down(Some("shard-3")));
    let _ = step!(t, con, latch.state());
    let _ = step!(t, con, done(latch.try_wait(None)));
    t.note("re-armed: a waiter of generation 1 still learns that it opened");
    let _ = step!(t, con, latch.arm(1, None));
    let _ = step!(t, con, done(latch.try_wait(Some(1))));
    let _ = step!(t, con, done(latch.try_wait(None)));
    let _ = step!(t, con, done(latch.try_wait(Some(3))));
    t.step(
        "latch.wait_within(con, Some(2), 1 ms)",
        latch.wait_within(con, Some(2), Duration::from_millis(1)),
    )
    .unwrap();
    let _ = step!(t, con, latch.count_down(None));
    t.step(
        "latch.wait_within(con, Some(2), 10 s)",
        latch.wait_within(con, Some(2), Duration::from_secs(10)),
    )
    .unwrap();
    let _ = step!(t, con, latch.count_down(Some("")));
    let mut batch = Batch::new();
    let armed = batch.add(latch.arm(2, None));
    let counted = batch.add(latch.count_down(Some("a")));
    let state = batch.add(latch.state());
    let mut got = batch.run(con).unwrap();
    t.step(
        "batch: arm(2), count_down(a), state()",
        Ok::<_, Error>((
            armed.take(&mut got).unwrap(),
            counted.take(&mut got).unwrap(),
            state.take(&mut got).unwrap(),
        )),
    )
    .unwrap();
    redis::cmd("DEL")
        .arg(&[latch.latch_key(), latch.ids_key(), latch.wake_key()])
        .exec(con)
        .unwrap();
    t.note("deleted: never open again");
    let _ = step!(t, con, latch.state());
    let _ = step!(t, con, done(latch.try_wait(Some(3))));
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("latch");
    let mut con = db.con();
    assert_snapshot("latch__scenario", &scenario(&mut recorder.con(&mut con)));
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("latch__scenario", &scenario(&mut harness::cluster_con()));
}

#[test]
fn keys_share_the_names_slot() {
    let latch = Latch::new("{app}:import").unwrap();
    assert_eq!(
        [latch.latch_key(), latch.ids_key(), latch.wake_key()],
        [
            "{app}:import:latch",
            "{app}:import:ids",
            "{app}:import:wake"
        ]
    );
    assert_invalid(Latch::new(""), "name");
}

/// Ten generations of 20 count-downs: 8 threads each send all 20 ids of the generation
/// (so every id arrives 8 times): each generation counts exactly 20, opens exactly once
/// (one reply takes it to 0), and 4 waiters of each generation all learn it opened.
#[test]
fn count_downs_with_repeated_ids_open_once_and_wake_every_waiter() {
    const COUNT: u64 = 20;
    const COUNTERS: usize = 8;
    const WAITERS: usize = 4;
    const GENERATIONS: u64 = 10;
    let db = Arc::new(harness::fresh_db());
    let latch = Latch::new("busy").unwrap();
    let start = Arc::new(Rendezvous::new(COUNTERS + WAITERS + 1));
    let end = Arc::new(Rendezvous::new(COUNTERS + WAITERS + 1));
    let generation = Arc::new(AtomicU64::new(0));
    let counted = Arc::new(Mutex::new(BTreeMap::<u64, (u64, u64)>::new()));
    let mut threads = Vec::new();
    for c in 0..COUNTERS {
        let (db, latch, start, end) = (db.clone(), latch.clone(), start.clone(), end.clone());
        let (generation, counted) = (generation.clone(), counted.clone());
        threads.push(thread::spawn(move || {
            let mut con = db.con();
            for _ in 0..GENERATIONS {
                start.wait();
                let g = generation.load(Ordering::SeqCst);
                for i in 0..COUNT {
                    let id = format!("task-{}", (i + c as u64 * 3) % COUNT);
                    let down = latch
                        .count_down_in(g, Some(&id))
                        .run(&mut con)
                        .unwrap()
                        .expect("armed");
                    assert_eq!(down.generation, g);
                    let mut counted = counted.lock().unwrap();
                    let entry = counted.entry(g).or_default();
                    if down.counted {
                        entry.0 += 1;
                        if down.remaining == 0 {
                            entry.1 += 1;
                        }
                    }
                }
                end.wait();
            }
        }));
    }
    let opened = Arc::new(Mutex::new(Vec::new()));
    for _ in 0..WAITERS {
        let (db, latch, start, end) = (db.clone(), latch.clone(), start.clone(), end.clone());
        let (generation, opened) = (generation.clone(), opened.clone());
        threads.push(thread::spawn(move || {
            let mut con = db.con();
            for _ in 0..GENERATIONS {
                start.wait();
                let g = generation.load(Ordering::SeqCst);
                let got = latch
                    .wait_within(&mut con, Some(g), Duration::from_secs(60))
                    .unwrap();
                opened.lock().unwrap().push((g, got));
                end.wait();
            }
        }));
    }
    let mut con = db.con();
    for g in 1..=GENERATIONS {
        assert_eq!(latch.arm(COUNT, None).run(&mut con).unwrap(), Armed::New(g));
        generation.store(g, Ordering::SeqCst);
        start.wait();
        end.wait();
        assert_eq!(
            latch.state().run(&mut con).unwrap(),
            LatchState::Open {
                generation: g,
                count: COUNT
            }
        );
    }
    for thread in threads {
        thread.join().unwrap();
    }
    let counted = counted.lock().unwrap();
    for g in 1..=GENERATIONS {
        assert_eq!(counted.get(&g), Some(&(COUNT, 1)), "generation {g}");
    }
    let opened = opened.lock().unwrap();
    assert_eq!(opened.len(), WAITERS * GENERATIONS as usize);
    for (g, got) in opened.iter() {
        assert_eq!(Some(*g), *got, "a waiter of generation {g}");
    }
}

/// The fault test, scaled: a driver arms and opens the latch over and over while 6
/// waiters each wait for 40 generations they saw, half of the waits abandoned while
/// blocked (the connection dropped mid-`XREAD`, as a killed process leaves it) and taken
/// up again on a new connection. Every wait learns its generation opened: 0 missed
/// openings, however far the latch moved on meanwhile.
#[test]
fn open_and_re_arm_cycles_miss_no_opening_with_waiters_killed() {
    const WAITERS: usize = 6;
    const WAITS: usize = 40;
    let db = Arc::new(harness::fresh_db());
    let latch = Latch::new("cycles").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let cycles = Arc::new(AtomicU64::new(0));
    let driver = {
        let (db, latch, stop, cycles) = (db.clone(), latch.clone(), stop.clone(), cycles.clone());
        thread::spawn(move || {
            let mut con = db.con();
            while !stop.load(Ordering::SeqCst) {
                let Armed::New(g) = latch.arm(2, None).run(&mut con).unwrap() else {
                    panic!("the last generation opened, so arm starts a new one");
                };
                latch.count_down_in(g, Some("a")).run(&mut con).unwrap();
                latch.count_down_in(g, Some("b")).run(&mut con).unwrap();
                cycles.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let missed = Arc::new(AtomicU64::new(0));
    let waiters: Vec<_> = (0..WAITERS)
        .map(|w| {
            let (db, latch, missed) = (db.clone(), latch.clone(), missed.clone());
            thread::spawn(move || {
                let mut con = db.con();
                let mut last = 0;
                for i in 0..WAITS {
                    let g = match latch.state().run(&mut con).unwrap() {
                        LatchState::Open { generation, .. }
                        | LatchState::Closed { generation, .. } => generation,
                        LatchState::NotFound => 1,
                    };
                    assert!(g >= last, "generations went back: {last} then {g}");
                    last = g;
                    if (i + w) % 2 == 0 {
                        // Killed while blocked: the connection goes mid-wait.
                        if let Attempt::NotYet(wake) =
                            latch.try_wait(Some(g)).run(&mut con).unwrap()
                        {
                            let mut doomed = db.con();
                            let _ = redis::cmd("XREAD")
                                .arg("BLOCK")
                                .arg(1)
                                .arg("STREAMS")
                                .arg(&wake.key)
                                .arg(&wake.after)
                                .query::<redis::Value>(&mut doomed);
                            drop(doomed);
                        }
                        con = db.con(); // restarted
                    }
                    match latch
                        .wait_within(&mut con, Some(g), Duration::from_secs(60))
                        .unwrap()
                    {
                        Some(opened) => assert_eq!(opened, g),
                        None => {
                            missed.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
            })
        })
        .collect();
    for waiter in waiters {
        waiter.join().unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    driver.join().unwrap();
    assert_eq!(missed.load(Ordering::SeqCst), 0, "missed openings");
    assert!(cycles.load(Ordering::SeqCst) > 0);
}

/// A latch nobody armed, one deleted and one whose keys expired never read open, while
/// another client arms and opens a latch of another name beside them.
#[test]
fn a_missing_latch_never_reads_open() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let never = Latch::new("never").unwrap();
    let expiring = Latch::new("expiring").unwrap();
    let check_missing = |con: &mut redis::Connection, latch: &Latch| {
        assert_eq!(latch.state().run(con).unwrap(), LatchState::NotFound);
        for g in [None, Some(1), Some(2)] {
            assert!(
                matches!(latch.try_wait(g).run(con).unwrap(), Attempt::NotYet(_)),
                "{} read open for {g:?}",
                latch.name()
            );
        }
        assert_eq!(
            latch
                .wait_within(con, None, Duration::from_millis(1))
                .unwrap(),
            None
        );
        assert_eq!(latch.count_down(Some("x")).run(con).unwrap(), None);
    };
    check_missing(&mut con, &never);
    // Open, then expired.
    assert_eq!(
        expiring
            .arm(1, Some(Duration::from_millis(50)))
            .run(&mut con)
            .unwrap(),
        Armed::New(1)
    );
    expiring.count_down(None).run(&mut con).unwrap();
    assert_eq!(
        expiring.try_wait(None).run(&mut con).unwrap(),
        Attempt::Done(1)
    );
    harness::wait_until_gone(&mut con, expiring.latch_key());
    check_missing(&mut con, &expiring);
    // Closed, with ids, then expired: the ids go with it.
    expiring
        .arm(2, Some(Duration::from_millis(50)))
        .run(&mut con)
        .unwrap();
    expiring.count_down(Some("a")).run(&mut con).unwrap();
    harness::wait_until_gone(&mut con, expiring.latch_key());
    harness::wait_until_gone(&mut con, expiring.ids_key());
    check_missing(&mut con, &expiring);
    // Re-armed for ever: no expiry left behind.
    expiring.arm(1, None).run(&mut con).unwrap();
    let ttl: i64 = redis::cmd("PTTL")
        .arg(expiring.latch_key())
        .query(&mut con)
        .unwrap();
    assert_eq!(ttl, -1);
}

/// A waiter blocked on the wake stream goes on when the last count-down opens the latch:
/// the count-down is sent once the waiter is seen blocked (`XREAD`) on the server.
#[test]
fn the_opening_count_down_wakes_a_blocked_waiter() {
    let db = Arc::new(harness::fresh_db());
    let latch = Latch::new("wake").unwrap();
    let mut con = db.con();
    latch.arm(1, None).run(&mut con).unwrap();
    let mut waiter_con = db.con();
    let id = harness::client_id(&mut waiter_con);
    let waiter = {
        let latch = latch.clone();
        thread::spawn(move || {
            latch
                .wait_within(&mut waiter_con, None, Duration::from_secs(60))
                .unwrap()
        })
    };
    harness::wait_until_sent(&mut con, id, "xread");
    latch.count_down(None).run(&mut con).unwrap();
    assert_eq!(waiter.join().unwrap(), Some(1));
}

#[tokio::test]
async fn waits_on_an_async_connection() {
    let db = harness::fresh_db();
    let mut con = db.multiplexed().await;
    let mut waiter_con = db.multiplexed().await;
    let latch = Latch::new("async").unwrap();
    assert_eq!(
        latch.arm(1, None).run_async(&mut con).await.unwrap(),
        Armed::New(1)
    );
    assert_eq!(
        latch
            .wait_within_async(&mut waiter_con, None, Duration::from_millis(1))
            .await
            .unwrap(),
        None
    );
    let waiter = {
        let latch = latch.clone();
        tokio::spawn(async move {
            latch
                .wait_within_async(&mut waiter_con, Some(1), Duration::from_secs(60))
                .await
                .unwrap()
        })
    };
    latch.count_down(None).run_async(&mut con).await.unwrap();
    assert_eq!(waiter.await.unwrap(), Some(1));
}

/// Data another client wrote in the latch's hash is refused before anything is written.
#[test]
fn a_foreign_latch_is_refused() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let latch = Latch::new("foreign").unwrap();
    for fields in [
        &["gen", "1"][..],
        &["gen", "1", "count", "2", "left", "3", "opened", "0"],
        &["gen", "2", "count", "2", "left", "0", "opened", "1"],
        &["gen", "1", "count", "2", "left", "1", "opened", "1"],
        &["gen", "01", "count", "2", "left", "1", "opened", "0"],
        &["other", "x"],
    ] {
        redis::cmd("DEL")
            .arg(latch.latch_key())
            .exec(&mut con)
            .unwrap();
        let mut hset = vec!["HSET", latch.latch_key()];
        hset.extend_from_slice(fields);
        harness::cmd(&mut con, &hset);
        let before = harness::dump(&mut con);
        harness::assert_code(latch.arm(1, None).run(&mut con), "BAD_LATCH");
        harness::assert_code(latch.count_down(Some("x")).run(&mut con), "BAD_LATCH");
        harness::assert_code(latch.state().run(&mut con), "BAD_LATCH");
        harness::assert_code(latch.try_wait(None).run(&mut con), "BAD_LATCH");
        assert_eq!(harness::dump(&mut con), before, "{fields:?}");
    }
}
