use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;

use redis_patterns::fair_lock::{FairLock, Order};
use redis_patterns::wait::Attempt;
use redis_patterns::{Error, Op};

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const C: &str = "cccccccccccccccccccccccccccccccc";
const D: &str = "dddddddddddddddddddddddddddddddd";

/// An attempt as the transcript shows it: the wake id is a time, so only its kind shows.
fn brief(op: Op<Attempt<u64>>) -> Op<String> {
    op.map(|attempt| {
        Ok(match attempt {
            Attempt::Done(n) => format!("Done({n})"),
            Attempt::NotYet(wake) => format!("NotYet(block on {})", wake.key),
        })
    })
}

/// The waiting tokens, in queue order.
fn queue(con: &mut dyn redis::ConnectionLike, lock: &FairLock) -> Vec<String> {
    redis::cmd("ZRANGE")
        .arg(lock.keys()[1])
        .arg(0)
        .arg(-1)
        .query(con)
        .unwrap()
}

/// The lock's keys that exist now.
fn keys_left(con: &mut dyn redis::ConnectionLike, lock: &FairLock) -> Vec<String> {
    lock.keys()
        .into_iter()
        .filter(|key| redis::cmd("EXISTS").arg(*key).query::<bool>(con).unwrap())
        .map(str::to_owned)
        .collect()
}

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let lock = FairLock::new("FairLock:payouts").unwrap();
    let lease = Duration::from_secs(60);
    t.step("lock.keys()", Ok::<_, Error>(lock.keys())).unwrap();
    let _ = step!(t, con, brief(lock.try_acquire(A, lease)));
    let _ = step!(t, con, brief(lock.try_acquire(A, lease)));
    t.note("b, c and d queue in that order");
    let _ = step!(t, con, brief(lock.try_acquire(B, lease)));
    let _ = step!(t, con, brief(lock.try_acquire(C, lease)));
    let _ = step!(t, con, brief(lock.try_acquire(D, lease)));
    t.step("queue", Ok::<_, Error>(queue(con, &lock))).unwrap();
    let _ = step!(t, con, lock.extend(A, lease));
    let _ = step!(t, con, lock.extend(B, lease));
    let _ = step!(t, con, lock.release(B));
    let _ = step!(t, con, lock.release(A));
    t.note("the lock is free, but c is not first: b is");
    let _ = step!(t, con, brief(lock.try_acquire(C, lease)));
    let _ = step!(t, con, brief(lock.try_acquire(B, lease)));
    t.note("c gives up its place; d is next");
    let _ = step!(t, con, lock.cancel(C));
    let _ = step!(t, con, lock.cancel(C));
    let _ = step!(t, con, lock.release(B));
    let _ = step!(t, con, brief(lock.try_acquire(D, lease)));
    let _ = step!(t, con, lock.release(D));
    t.step("keys left", Ok::<_, Error>(keys_left(con, &lock)))
        .unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("fair_lock");
    assert_snapshot(
        "fair_lock__scenario",
        &scenario(&mut recorder.con(db.con())),
    );
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "fair_lock__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// 12 waiters queue in a known order while the lock is held, then each waits in its own
/// thread: they get the lock in exactly that order, one at a time.
#[test]
fn live_waiters_are_served_first_come_first_served() {
    let db = Arc::new(harness::fresh_db());
    let mut con = db.con();
    let lock = FairLock::new("fifo").unwrap();
    let long = Duration::from_secs(60);
    let holder = FairLock::random_token();
    assert!(matches!(
        lock.try_acquire(&holder, long).run(&mut con).unwrap(),
        Attempt::Done(_)
    ));
    let tokens: Vec<String> = (0..12).map(|_| FairLock::random_token()).collect();
    for token in &tokens {
        assert!(matches!(
            lock.try_acquire(token, long).run(&mut con).unwrap(),
            Attempt::NotYet(_)
        ));
    }
    let order = Arc::new(Mutex::new(Vec::new()));
    let holders = Arc::new(AtomicI64::new(0));
    let (ids, id) = mpsc::channel();
    let threads: Vec<_> = tokens
        .iter()
        .cloned()
        .map(|token| {
            let (db, lock, order, holders, ids) = (
                db.clone(),
                lock.clone(),
                order.clone(),
                holders.clone(),
                ids.clone(),
            );
            thread::spawn(move || {
                let mut con = db.con();
                ids.send(harness::client_id(&mut con)).unwrap();
                let fence = lock
                    .acquire_within(&mut con, &token, long, long)
                    .unwrap()
                    .expect("the lock within a minute");
                assert_eq!(holders.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                order.lock().unwrap().push((token.clone(), fence));
                holders.fetch_sub(1, Ordering::SeqCst);
                assert!(lock.release(&token).run(&mut con).unwrap());
            })
        })
        .collect();
    // Every waiter is blocked, each on the turn key of the one ahead, before the holder
    // lets go.
    for _ in 0..tokens.len() {
        harness::wait_until_sent(&mut con, id.recv().unwrap(), "blpop");
    }
    assert!(lock.release(&holder).run(&mut con).unwrap());
    for thread in threads {
        thread.join().unwrap();
    }
    let order = order.lock().unwrap().clone();
    let served: Vec<String> = order.iter().map(|(token, _)| token.clone()).collect();
    assert_eq!(served, tokens, "not in order of arrival");
    let fences: Vec<u64> = order.iter().map(|(_, fence)| *fence).collect();
    assert_eq!(fences, (2..=13).collect::<Vec<u64>>());
    assert_eq!(keys_left(&mut con, &lock), [lock.fence_key()]);
}

/// Each waiter in line blocks on the turn key of the one ahead of it: a release wakes the
/// first alone, whatever order the waiters blocked in, and the others stay blocked.
#[test]
fn a_release_wakes_the_first_in_line_only() {
    let db = Arc::new(harness::fresh_db());
    let mut con = db.con();
    let lock = FairLock::new("one_wakes").unwrap();
    let long = Duration::from_secs(60);
    let holder = FairLock::random_token();
    assert!(matches!(
        lock.try_acquire(&holder, long).run(&mut con).unwrap(),
        Attempt::Done(1)
    ));
    let tokens: Vec<String> = (0..8).map(|_| FairLock::random_token()).collect();
    let wakes: Vec<_> = tokens
        .iter()
        .map(
            |token| match lock.try_acquire(token, long).run(&mut con).unwrap() {
                Attempt::NotYet(wake) => wake,
                done => panic!("{done:?}"),
            },
        )
        .collect();
    for (i, wake) in wakes.iter().enumerate() {
        let ahead = if i == 0 { &holder } else { &tokens[i - 1] };
        assert_eq!(wake.key, lock.turn_key(ahead).unwrap());
    }
    // The waiters block on what their attempts said, the last in line first.
    let waiters = harness::Poppers::block(
        &db,
        &mut con,
        wakes.into_iter().map(|wake| wake.key).enumerate().rev(),
    );
    assert!(lock.release(&holder).run(&mut con).unwrap());
    assert_eq!(waiters.woken.recv().unwrap(), 0, "the first in line");
    assert_eq!(waiters.blocked(&mut con), 7, "one release woke one waiter");
    assert_eq!(
        lock.try_acquire(&tokens[0], long).run(&mut con).unwrap(),
        Attempt::Done(2)
    );
    // The second now waits behind the holder, on the key it blocks on already.
    assert_eq!(
        lock.try_acquire(&tokens[1], long).run(&mut con).unwrap(),
        Attempt::NotYet(redis_patterns::wait::Wake::bell(
            &lock.turn_key(&tokens[0]).unwrap(),
            1000
        ))
    );
    // The holder's release wakes the first in line; a waiter that gives up, the one behind.
    assert!(lock.release(&tokens[0]).run(&mut con).unwrap());
    assert_eq!(waiters.woken.recv().unwrap(), 1);
    for (i, token) in tokens.iter().enumerate().skip(1) {
        assert!(lock.cancel(token).run(&mut con).unwrap());
        if i + 1 < tokens.len() {
            assert_eq!(
                waiters.woken.recv().unwrap(),
                i + 1,
                "a cancel wakes the one behind"
            );
        }
    }
    waiters.join();
}

/// Barging: an attempt takes the free lock while nobody waits in line, before a waiter
/// that was woken for it; waiters in line go first.
#[test]
fn a_barging_attempt_takes_a_free_lock_unless_someone_waits_in_line() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let fair = FairLock::new("barging").unwrap();
    let barging = fair.clone().with_order(Order::Any);
    let long = Duration::from_secs(60);
    assert_eq!(
        barging.try_acquire(A, long).run(&mut con).unwrap(),
        Attempt::Done(1)
    );
    assert!(matches!(
        barging.try_acquire(B, long).run(&mut con).unwrap(),
        Attempt::NotYet(_)
    ));
    assert!(
        queue(&mut con, &fair).is_empty(),
        "a barging waiter takes no place in line"
    );
    assert!(barging.release(A).run(&mut con).unwrap());
    let rings: u64 = redis::cmd("LLEN")
        .arg(fair.bell_key())
        .query(&mut con)
        .unwrap();
    assert_eq!(rings, 1, "rung for b");
    assert_eq!(
        barging.try_acquire(C, long).run(&mut con).unwrap(),
        Attempt::Done(2)
    );
    assert!(matches!(
        barging.try_acquire(B, long).run(&mut con).unwrap(),
        Attempt::NotYet(_)
    ));
    // d waits in line: once the lock frees, it goes before b, who barges.
    assert!(matches!(
        fair.try_acquire(D, long).run(&mut con).unwrap(),
        Attempt::NotYet(_)
    ));
    assert!(barging.release(C).run(&mut con).unwrap());
    assert!(matches!(
        barging.try_acquire(B, long).run(&mut con).unwrap(),
        Attempt::NotYet(_)
    ));
    assert_eq!(
        fair.try_acquire(D, long).run(&mut con).unwrap(),
        Attempt::Done(3)
    );
    assert!(fair.release(D).run(&mut con).unwrap());
    assert_eq!(
        barging.try_acquire(B, long).run(&mut con).unwrap(),
        Attempt::Done(4)
    );
    assert!(barging.release(B).run(&mut con).unwrap());
    let mut left = keys_left(&mut con, &fair);
    left.retain(|key| key != fair.bell_key());
    assert_eq!(left, [fair.fence_key()], "no waiter left a place");
}

/// A waiter that stops calling (killed) loses its place within one place lease, wherever
/// it stands in the queue, and the waiters behind it go on in order.
#[test]
fn a_killed_waiter_loses_its_place_within_one_lease() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let lock = FairLock::new("killed").unwrap();
    let short = lock
        .clone()
        .with_place_lease(Duration::from_millis(200))
        .unwrap();
    let long = Duration::from_secs(60);
    assert!(matches!(
        lock.try_acquire(A, long).run(&mut con).unwrap(),
        Attempt::Done(1)
    ));
    // b (at the head) and d (in the middle) will die; c and e wait on.
    const E: &str = "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee";
    for (waiter, token) in [(&short, B), (&lock, C), (&short, D), (&lock, E)] {
        assert!(matches!(
            waiter.try_acquire(token, long).run(&mut con).unwrap(),
            Attempt::NotYet(_)
        ));
    }
    assert!(lock.release(A).run(&mut con).unwrap());
    // b holds the head until its place lapses: c must wait.
    assert!(matches!(
        lock.try_acquire(C, long).run(&mut con).unwrap(),
        Attempt::NotYet(_)
    ));
    harness::wait_server(&mut con, Duration::from_millis(200));
    assert_eq!(
        lock.try_acquire(C, long).run(&mut con).unwrap(),
        Attempt::Done(2)
    );
    assert_eq!(queue(&mut con, &lock), [E], "both dead places dropped");
    assert!(lock.release(C).run(&mut con).unwrap());
    assert_eq!(
        lock.try_acquire(E, long).run(&mut con).unwrap(),
        Attempt::Done(3)
    );
    // The dead waiter, calling again after all, queues anew at the back.
    assert!(matches!(
        short.try_acquire(B, long).run(&mut con).unwrap(),
        Attempt::NotYet(_)
    ));
    assert!(lock.release(E).run(&mut con).unwrap());
    assert_eq!(
        short.try_acquire(B, long).run(&mut con).unwrap(),
        Attempt::Done(4)
    );
}

/// 10 threads contend, each many times, through the waiting form, in line and barging:
/// never two holders, the fencing tokens increase strictly, every acquisition succeeds.
#[test]
fn never_two_holders() {
    never_two_holders_in(Order::Fifo);
    never_two_holders_in(Order::Any);
}

fn never_two_holders_in(order: Order) {
    let db = Arc::new(harness::fresh_db());
    let holders = Arc::new(AtomicI64::new(0));
    let last = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..10)
        .map(|_| {
            let (db, holders, last) = (db.clone(), holders.clone(), last.clone());
            thread::spawn(move || {
                let mut con = db.con();
                let lock = FairLock::new("contended").unwrap().with_order(order);
                let long = Duration::from_secs(60);
                for _ in 0..20 {
                    let token = FairLock::random_token();
                    let fence = lock
                        .acquire_within(&mut con, &token, long, long)
                        .unwrap()
                        .expect("the lock within a minute");
                    assert_eq!(holders.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                    let before = last.swap(fence, Ordering::SeqCst);
                    assert!(before < fence, "fence {fence} after {before}");
                    thread::yield_now();
                    holders.fetch_sub(1, Ordering::SeqCst);
                    assert!(lock.release(&token).run(&mut con).unwrap());
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(last.load(Ordering::SeqCst), 200);
}

/// The async form waits and wakes; a waiter that times out gives up its place, so the
/// next one is not held back.
#[tokio::test]
async fn async_form_and_a_timed_out_waiter_cancels() {
    let db = harness::fresh_db();
    let mut con = db.multiplexed().await;
    let lock = FairLock::new("async").unwrap();
    let long = Duration::from_secs(60);
    assert_eq!(
        lock.acquire_within_async(&mut con, A, long, long)
            .await
            .unwrap(),
        Some(1)
    );
    assert_eq!(
        lock.acquire_within_async(&mut con, B, long, Duration::from_millis(20))
            .await
            .unwrap(),
        None
    );
    let mut sync = db.con();
    assert_eq!(
        lock.acquire_within(&mut sync, C, long, Duration::from_millis(20))
            .unwrap(),
        None
    );
    assert!(
        queue(&mut sync, &lock).is_empty(),
        "timed-out waiters keep no place"
    );
    assert!(lock.release(A).run(&mut sync).unwrap());
    assert_eq!(
        lock.acquire_within_async(&mut con, D, long, Duration::ZERO)
            .await
            .unwrap(),
        Some(2)
    );
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let lock = FairLock::new("bad").unwrap();
    let long = Duration::from_secs(60);
    assert!(matches!(
        lock.try_acquire(A, long).run(&mut con).unwrap(),
        Attempt::Done(1)
    ));
    harness::cmd(&mut con, &["HSET", "{damaged}:owner", "t", "x", "f", "1"]);
    harness::cmd(&mut con, &["ZADD", "{tickets}:queue", "1.5", B]);
    harness::cmd(&mut con, &["ZADD", "{tickets}:places", "4102444800000", B]);
    let before = harness::dump(&mut con);

    assert_invalid(FairLock::new(""), "name");
    assert_invalid(FairLock::new("a}b"), "name");
    assert_invalid(
        lock.clone().with_place_lease(Duration::from_millis(99)),
        "place_lease",
    );
    assert_invalid(lock.try_acquire("not-hex", long).run(&mut con), "token");
    assert_invalid(lock.try_acquire(B, Duration::ZERO).run(&mut con), "lease");
    assert_invalid(lock.extend(A, Duration::ZERO).run(&mut con), "lease");
    assert_invalid(lock.cancel("").run(&mut con), "token");
    let damaged = FairLock::new("damaged").unwrap();
    assert_code(damaged.try_acquire(B, long).run(&mut con), "BAD_OWNER");
    assert_code(damaged.release(B).run(&mut con), "BAD_OWNER");
    let tickets = FairLock::new("tickets").unwrap();
    assert_code(tickets.try_acquire(C, long).run(&mut con), "BAD_QUEUE");
    assert_eq!(harness::dump(&mut con), before);
}

/// A holder that dies keeps the lock only until its lease ends: a waiter blocked in
/// `acquire_within` takes it then, with no release and no wake-up (its bounded wait
/// runs out at the lease's end, and the script runs again).
#[test]
fn a_dead_holder_blocks_the_queue_one_lease_at_most() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let lock = FairLock::new("dead_holder").unwrap();
    assert_eq!(
        lock.try_acquire(A, Duration::from_millis(100))
            .run(&mut con)
            .unwrap(),
        Attempt::Done(1)
    );
    // A dies holding the lock.
    let long = Duration::from_secs(60);
    assert_eq!(
        lock.acquire_within(&mut con, B, long, long).unwrap(),
        Some(2)
    );
    assert!(!lock.release(A).run(&mut con).unwrap());
    assert!(lock.release(B).run(&mut con).unwrap());
}
