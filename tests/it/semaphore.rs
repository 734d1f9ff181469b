use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use redis_patterns::Error;
use redis_patterns::Op;
use redis_patterns::semaphore::{Holding, Order, Semaphore, State};
use redis_patterns::wait::Attempt;

use crate::harness::{self, Rng, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

const LONG: Duration = Duration::from_secs(600);

/// A token per letter, the same in every run.
fn tok(letter: char) -> String {
    letter.to_string().repeat(32)
}

/// A try, shown without its deadline or wake id (which vary from run to run).
fn outcome(op: Op<Attempt<Holding>>) -> Op<String> {
    op.map(|attempt| {
        Ok(match attempt {
            Attempt::Done(h) => format!("granted {} permits", h.permits),
            Attempt::NotYet(_) => "not yet".to_string(),
        })
    })
}

fn shown(op: Op<State>) -> Op<String> {
    op.map(|s| {
        Ok(format!(
            "capacity {:?}, used {}, held {}, live {}, holdings {}, waiters {}",
            s.capacity, s.used, s.held, s.live, s.holdings, s.waiters
        ))
    })
}

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t_ = Transcript::default();
    let t = &mut t_;
    let sem = Semaphore::new("Semaphore:exports").unwrap();
    let (a, b, c, d) = (tok('a'), tok('b'), tok('c'), tok('d'));
    let _ = step!(t, con, outcome(sem.try_acquire(&a, 1, LONG, Order::Any)));
    let _ = step!(t, con, sem.set_capacity(5));
    let _ = step!(t, con, outcome(sem.try_acquire(&a, 6, LONG, Order::Any)));
    let _ = step!(t, con, outcome(sem.try_acquire(&a, 3, LONG, Order::Any)));
    t.note("a re-sent acquire renews the holding");
    let _ = step!(t, con, outcome(sem.try_acquire(&a, 3, LONG, Order::Any)));
    let _ = step!(t, con, outcome(sem.try_acquire(&a, 2, LONG, Order::Any)));
    let _ = step!(t, con, outcome(sem.try_acquire(&b, 1, LONG, Order::Any)));
    t.note("c asks for 5 and waits in line; d's 1 would fit, but c is ahead");
    let _ = step!(t, con, outcome(sem.try_acquire(&c, 5, LONG, Order::Fifo)));
    let _ = step!(t, con, outcome(sem.try_acquire(&d, 1, LONG, Order::Any)));
    let _ = step!(t, con, outcome(sem.try_acquire(&d, 1, LONG, Order::Fifo)));
    let _ = step!(t, con, shown(sem.state()));
    let _ = step!(t, con, sem.release(&a));
    let _ = step!(t, con, outcome(sem.try_acquire(&c, 5, LONG, Order::Fifo)));
    let _ = step!(t, con, sem.release(&b));
    let _ = step!(t, con, outcome(sem.try_acquire(&d, 1, LONG, Order::Fifo)));
    let _ = step!(t, con, outcome(sem.try_acquire(&c, 5, LONG, Order::Fifo)));
    let _ = step!(t, con, shown(sem.state()));
    t.note("lowering the capacity drains: c keeps its 5");
    let _ = step!(t, con, sem.set_capacity(2));
    let _ = step!(t, con, outcome(sem.try_acquire(&d, 1, LONG, Order::Fifo)));
    let _ = step!(t, con, outcome(sem.try_acquire(&b, 3, LONG, Order::Any)));
    let _ = step!(t, con, sem.release(&c));
    let _ = step!(t, con, outcome(sem.try_acquire(&d, 1, LONG, Order::Fifo)));
    let _ = step!(t, con, sem.extend(&a, LONG).map(|d| Ok(d.is_some())));
    let _ = step!(t, con, sem.extend(&d, LONG).map(|d| Ok(d.is_some())));
    let _ = step!(t, con, sem.release(&d));
    let _ = step!(t, con, sem.release(&d));
    let _ = step!(t, con, shown(sem.state()));
    t_
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("semaphore");
    assert_snapshot(
        "semaphore__scenario",
        &scenario(&mut recorder.con(db.con())),
    );
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "semaphore__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// 8 threads take 1 to 4 permits of 10 at random, hold them a moment and give them
/// back, while a checker reads the state throughout: never more in use than the
/// capacity, and the permits in use always the sum of the holdings.
#[test]
fn in_use_is_the_sum_of_the_holdings_and_never_above_the_capacity() {
    let db = Arc::new(harness::fresh_db());
    let sem = Semaphore::new("contended").unwrap();
    sem.set_capacity(10).run(&mut db.con()).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let grants = Arc::new(AtomicU64::new(0));
    let checks = Arc::new(AtomicU64::new(0));
    let checker = {
        let (db, sem, done, checks) = (db.clone(), sem.clone(), done.clone(), checks.clone());
        thread::spawn(move || {
            let mut con = db.con();
            while !done.load(Ordering::SeqCst) {
                let s = sem.state().run(&mut con).unwrap();
                assert!(s.consistent(), "{s:?}");
                assert!(s.used <= 10, "{s:?}");
                checks.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let workers: Vec<_> = (0..8)
        .map(|i| {
            let (db, sem, grants) = (db.clone(), sem.clone(), grants.clone());
            thread::spawn(move || {
                let mut con = db.con();
                let mut rng = Rng::new(i);
                for round in 0..150 {
                    let n = 1 + rng.below(4);
                    let order = if round % 2 == 0 {
                        Order::Any
                    } else {
                        Order::Fifo
                    };
                    let token = Semaphore::random_token();
                    match sem
                        .try_acquire(&token, n, LONG, order)
                        .run(&mut con)
                        .unwrap()
                    {
                        Attempt::Done(h) => {
                            grants.fetch_add(1, Ordering::SeqCst);
                            assert_eq!(sem.release(&h.token).run(&mut con).unwrap(), n);
                        }
                        Attempt::NotYet(_) => {
                            // Gives up its place, if it took one.
                            assert_eq!(sem.release(&token).run(&mut con).unwrap(), 0);
                        }
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    harness::wait_for_count(&checks, 1, "a check");
    done.store(true, Ordering::SeqCst);
    checker.join().unwrap();
    assert!(grants.load(Ordering::SeqCst) > 0);
    let s = sem.state().run(&mut db.con()).unwrap();
    assert_eq!(
        (s.used, s.held, s.holdings, s.waiters),
        (0, 0, 0, 0),
        "{s:?}"
    );
}

/// A holder that never releases (it crashed): once its lease has run out on the server's
/// clock, the next acquire reclaims its permits.
#[test]
fn a_crashed_holders_permits_come_back_after_its_lease() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let sem = Semaphore::new("crash").unwrap();
    sem.set_capacity(4).run(&mut con).unwrap();
    let crashed = Semaphore::random_token();
    let held = sem
        .try_acquire(&crashed, 3, Duration::from_millis(100), Order::Any)
        .run(&mut con)
        .unwrap();
    let Attempt::Done(held) = held else {
        panic!("granted")
    };
    let other = Semaphore::random_token();
    assert!(matches!(
        sem.try_acquire(&other, 2, LONG, Order::Any)
            .run(&mut con)
            .unwrap(),
        Attempt::NotYet(_)
    ));
    harness::wait_until_server_ms(&mut con, held.deadline_ms + 1);
    let s = sem.state().run(&mut con).unwrap();
    assert_eq!(
        (s.used, s.held, s.live),
        (3, 3, 0),
        "lapsed, not yet reclaimed"
    );
    assert!(matches!(
        sem.try_acquire(&other, 4, LONG, Order::Any)
            .run(&mut con)
            .unwrap(),
        Attempt::Done(_)
    ));
    let s = sem.state().run(&mut con).unwrap();
    assert_eq!((s.used, s.held, s.live, s.holdings), (4, 4, 4, 1));
    // The crashed client's token holds nothing any more.
    assert_eq!(sem.extend(&crashed, LONG).run(&mut con).unwrap(), None);
    assert_eq!(sem.release(&crashed).run(&mut con).unwrap(), 0);
}

/// A waiter that crashed loses its place after the place lease, and the request behind it
/// moves up: here, the place of a request for 5 ahead of a request for 1.
#[test]
fn a_crashed_waiters_place_lapses() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let sem = Semaphore::new("queue_crash").unwrap();
    sem.set_capacity(5).run(&mut con).unwrap();
    let holder = Semaphore::random_token();
    assert!(matches!(
        sem.try_acquire(&holder, 1, LONG, Order::Any)
            .run(&mut con)
            .unwrap(),
        Attempt::Done(_)
    ));
    // The crashed waiter's place, with a short place lease.
    let crashed = Semaphore::random_token();
    let short = sem
        .clone()
        .with_place_lease(Duration::from_millis(100))
        .unwrap();
    assert!(matches!(
        short
            .try_acquire(&crashed, 5, LONG, Order::Fifo)
            .run(&mut con)
            .unwrap(),
        Attempt::NotYet(_)
    ));
    let next = Semaphore::random_token();
    assert!(matches!(
        sem.try_acquire(&next, 1, LONG, Order::Fifo)
            .run(&mut con)
            .unwrap(),
        Attempt::NotYet(_)
    ));
    harness::wait_server(&mut con, Duration::from_millis(100));
    assert!(matches!(
        sem.try_acquire(&next, 1, LONG, Order::Fifo)
            .run(&mut con)
            .unwrap(),
        Attempt::Done(_)
    ));
    assert_eq!(sem.state().run(&mut con).unwrap().waiters, 0);
    // A place lease the waiting forms could not keep, or the script would refuse.
    for millis in [0, 99, 10_000_001] {
        let refused = sem.clone().with_place_lease(Duration::from_millis(millis));
        assert!(
            matches!(
                refused,
                Err(redis_patterns::Error::InvalidInput {
                    what: "place_lease",
                    ..
                })
            ),
            "{millis} ms: {refused:?}"
        );
    }
}

/// Threads take 1 permit at a time in a loop, with no gap when several overlap; a
/// request for all 5 waits in line and is granted all the same.
#[test]
fn a_request_for_5_is_not_starved_by_requests_for_1() {
    let db = Arc::new(harness::fresh_db());
    let sem = Semaphore::new("starve").unwrap();
    sem.set_capacity(5).run(&mut db.con()).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let ones = Arc::new(AtomicU64::new(0));
    let small: Vec<_> = (0..4)
        .map(|i| {
            let (db, sem, done, ones) = (db.clone(), sem.clone(), done.clone(), ones.clone());
            thread::spawn(move || {
                let mut con = db.con();
                let order = if i % 2 == 0 { Order::Any } else { Order::Fifo };
                while !done.load(Ordering::SeqCst) {
                    let got = sem
                        .acquire_within(&mut con, 1, LONG, order, Duration::from_millis(200))
                        .unwrap();
                    if let Some(h) = got {
                        ones.fetch_add(1, Ordering::SeqCst);
                        thread::sleep(Duration::from_millis(2));
                        sem.release(&h.token).run(&mut con).unwrap();
                    }
                }
            })
        })
        .collect();
    // The stream of 1s is running before the request for 5 comes.
    harness::wait_for_count(&ones, 20, "requests for 1");
    let mut con = db.con();
    let big = sem
        .acquire_within(&mut con, 5, LONG, Order::Fifo, Duration::from_secs(60))
        .unwrap()
        .expect("the request for 5 was granted");
    assert_eq!(sem.state().run(&mut con).unwrap().used, 5);
    sem.release(&big.token).run(&mut con).unwrap();
    done.store(true, Ordering::SeqCst);
    for s in small {
        s.join().unwrap();
    }
}

/// Lowering the capacity below what is held: holders keep their permits, and nothing is
/// granted until in use + the request fits again.
#[test]
fn lowering_the_capacity_drains() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let sem = Semaphore::new("drain").unwrap();
    sem.set_capacity(10).run(&mut con).unwrap();
    let (a, b, c) = (
        Semaphore::random_token(),
        Semaphore::random_token(),
        Semaphore::random_token(),
    );
    for token in [&a, &b] {
        assert!(matches!(
            sem.try_acquire(token, 4, LONG, Order::Any)
                .run(&mut con)
                .unwrap(),
            Attempt::Done(_)
        ));
    }
    assert_eq!(sem.set_capacity(4).run(&mut con).unwrap(), Some(10));
    let s = sem.state().run(&mut con).unwrap();
    assert_eq!((s.capacity, s.used), (Some(4), 8));
    let try_c =
        |con: &mut redis::Connection| sem.try_acquire(&c, 1, LONG, Order::Any).run(con).unwrap();
    assert!(matches!(try_c(&mut con), Attempt::NotYet(_)));
    sem.release(&a).run(&mut con).unwrap();
    assert!(matches!(try_c(&mut con), Attempt::NotYet(_)));
    sem.release(&b).run(&mut con).unwrap();
    assert!(matches!(try_c(&mut con), Attempt::Done(_)));
    assert_code(
        sem.try_acquire(&a, 5, LONG, Order::Fifo).run(&mut con),
        "BAD_N",
    );
}

/// A waiter blocked in `acquire_within` (sync) and one in `acquire_within_async` are
/// granted once a holder releases: the release wakes them.
#[test]
fn waiting_forms_wake_on_release() {
    let db = Arc::new(harness::fresh_db());
    let sem = Semaphore::new("wakeup").unwrap();
    let mut con = db.con();
    sem.set_capacity(2).run(&mut con).unwrap();
    let holder = Semaphore::random_token();
    assert!(matches!(
        sem.try_acquire(&holder, 2, LONG, Order::Any)
            .run(&mut con)
            .unwrap(),
        Attempt::Done(_)
    ));
    let sync_waiter = {
        let (db, sem) = (db.clone(), sem.clone());
        thread::spawn(move || {
            sem.acquire_within(&mut db.con(), 1, LONG, Order::Fifo, Duration::from_secs(60))
                .unwrap()
        })
    };
    let async_waiter = {
        let (db, sem) = (db.clone(), sem.clone());
        thread::spawn(move || {
            tokio::runtime::Runtime::new().unwrap().block_on(async {
                let mut con = db.multiplexed().await;
                sem.acquire_within_async(&mut con, 1, LONG, Order::Fifo, Duration::from_secs(60))
                    .await
                    .unwrap()
            })
        })
    };
    // Both wait in line before the release.
    harness::wait_until("two waiters", 10, || {
        sem.state().run(&mut con).unwrap().waiters == 2
    });
    assert_eq!(sem.release(&holder).run(&mut con).unwrap(), 2);
    assert!(sync_waiter.join().unwrap().is_some());
    assert!(async_waiter.join().unwrap().is_some());
    let s = sem.state().run(&mut con).unwrap();
    assert_eq!((s.used, s.waiters), (2, 0));
}

/// A release rings the bell once: the first in line wakes alone, while each other waiter
/// stays blocked on the turn key of the one ahead of it; granted, the first rings its own
/// turn key, and the one behind it moves up.
#[test]
fn a_release_wakes_the_first_in_line_only() {
    let db = Arc::new(harness::fresh_db());
    let mut con = db.con();
    let sem = Semaphore::new("one_wakes").unwrap();
    sem.set_capacity(1).run(&mut con).unwrap();
    harness::cmd(&mut con, &["DEL", sem.bell_key()]);
    let holder = Semaphore::random_token();
    assert!(matches!(
        sem.try_acquire(&holder, 1, LONG, Order::Fifo)
            .run(&mut con)
            .unwrap(),
        Attempt::Done(_)
    ));
    let tokens: Vec<String> = (0..6).map(|_| Semaphore::random_token()).collect();
    let keys: Vec<String> = tokens
        .iter()
        .map(|token| {
            match sem
                .try_acquire(token, 1, LONG, Order::Fifo)
                .run(&mut con)
                .unwrap()
            {
                Attempt::NotYet(wake) => wake.key,
                done => panic!("{done:?}"),
            }
        })
        .collect();
    assert_eq!(
        keys[0],
        sem.bell_key(),
        "the first in line waits on the bell"
    );
    for i in 1..tokens.len() {
        assert_eq!(keys[i], sem.turn_key(&tokens[i - 1]).unwrap());
    }
    let waiters = harness::Poppers::block(&db, &mut con, keys.into_iter().enumerate().rev());
    assert_eq!(sem.release(&holder).run(&mut con).unwrap(), 1);
    assert_eq!(waiters.woken.recv().unwrap(), 0);
    assert_eq!(waiters.blocked(&mut con), 5, "one release woke one waiter");
    assert!(matches!(
        sem.try_acquire(&tokens[0], 1, LONG, Order::Fifo)
            .run(&mut con)
            .unwrap(),
        Attempt::Done(_)
    ));
    assert_eq!(
        waiters.woken.recv().unwrap(),
        1,
        "the grant moved the next one up"
    );
    // Each waiter that gives up its place wakes the one behind it.
    for (i, token) in tokens.iter().enumerate().skip(1) {
        sem.release(token).run(&mut con).unwrap();
        if i + 1 < tokens.len() {
            assert_eq!(waiters.woken.recv().unwrap(), i + 1);
        }
    }
    waiters.join();
}

/// Permits that come back ring the bell once each, for as many as wait: raising the
/// capacity by 2 with 3 requests out of line waiting wakes 2 of them, and a release of 1
/// wakes the third.
#[test]
fn permits_that_come_back_wake_as_many_waiters() {
    let db = Arc::new(harness::fresh_db());
    let mut con = db.con();
    let sem = Semaphore::new("as_many").unwrap();
    sem.set_capacity(1).run(&mut con).unwrap();
    let holder = Semaphore::random_token();
    assert!(matches!(
        sem.try_acquire(&holder, 1, LONG, Order::Any)
            .run(&mut con)
            .unwrap(),
        Attempt::Done(_)
    ));
    for _ in 0..3 {
        let wake = match sem
            .try_acquire(&Semaphore::random_token(), 1, LONG, Order::Any)
            .run(&mut con)
            .unwrap()
        {
            Attempt::NotYet(wake) => wake,
            done => panic!("{done:?}"),
        };
        assert_eq!(
            wake.key,
            sem.bell_key(),
            "a request out of line waits on the bell"
        );
    }
    let bell = sem.bell_key().to_owned();
    let waiters = harness::Poppers::block(&db, &mut con, (0..3).map(|i| (i, bell.clone())));
    assert_eq!(sem.set_capacity(3).run(&mut con).unwrap(), Some(1));
    let mut first_two = [waiters.woken.recv().unwrap(), waiters.woken.recv().unwrap()];
    first_two.sort();
    assert_eq!(first_two, [0, 1], "the two blocked longest");
    assert_eq!(
        waiters.blocked(&mut con),
        1,
        "two permits added, two waiters woken"
    );
    assert_eq!(sem.release(&holder).run(&mut con).unwrap(), 1);
    assert_eq!(waiters.woken.recv().unwrap(), 2);
    waiters.join();
}

/// A wait that times out gives up its place, so the request behind it is not held up.
#[test]
fn a_timed_out_wait_gives_up_its_place() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let sem = Semaphore::new("give_up").unwrap();
    sem.set_capacity(1).run(&mut con).unwrap();
    let holder = Semaphore::random_token();
    assert!(matches!(
        sem.try_acquire(&holder, 1, LONG, Order::Any)
            .run(&mut con)
            .unwrap(),
        Attempt::Done(_)
    ));
    let got = sem
        .acquire_within(&mut con, 1, LONG, Order::Fifo, Duration::from_millis(50))
        .unwrap();
    assert_eq!(got, None);
    let s = sem.state().run(&mut con).unwrap();
    assert_eq!((s.used, s.waiters), (1, 0));
    assert!(harness::zset_with_scores::<String>(&mut con, "{give_up}:queue").is_empty());
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let sem = Semaphore::new("bad").unwrap();
    let token = Semaphore::random_token();
    // No capacity yet: a declared error, not a default.
    assert_code(
        sem.try_acquire(&token, 1, LONG, Order::Any).run(&mut con),
        "NO_CAPACITY",
    );
    sem.set_capacity(3).run(&mut con).unwrap();
    assert!(matches!(
        sem.try_acquire(&token, 2, LONG, Order::Any)
            .run(&mut con)
            .unwrap(),
        Attempt::Done(_)
    ));
    let before = harness::dump(&mut con);
    assert_invalid(Semaphore::new(""), "name");
    assert_invalid(Semaphore::new("a}b"), "name");
    assert_invalid(
        sem.try_acquire("not hex", 1, LONG, Order::Any)
            .run(&mut con),
        "token",
    );
    assert_invalid(
        sem.try_acquire(&token, 0, LONG, Order::Any).run(&mut con),
        "n",
    );
    assert_invalid(
        sem.try_acquire(&token, 1001, LONG, Order::Any)
            .run(&mut con),
        "n",
    );
    assert_invalid(
        sem.try_acquire(&token, 1, Duration::ZERO, Order::Any)
            .run(&mut con),
        "lease",
    );
    assert_invalid(sem.set_capacity(1001).run(&mut con), "capacity");
    assert_invalid(sem.extend(&token, Duration::ZERO).run(&mut con), "lease");
    // More than the capacity, or other than what the token holds.
    assert_code(
        sem.try_acquire(&Semaphore::random_token(), 4, LONG, Order::Fifo)
            .run(&mut con),
        "BAD_N",
    );
    assert_code(
        sem.try_acquire(&token, 1, LONG, Order::Any).run(&mut con),
        "BAD_N",
    );
    assert_eq!(harness::dump(&mut con), before);

    // Data another client wrote is refused before anything is written.
    harness::cmd(&mut con, &["HSET", "{bad}:held", &"f".repeat(32), "abc"]);
    harness::cmd(&mut con, &["ZADD", "{bad}:leases", "1", &"f".repeat(32)]);
    let before = harness::dump(&mut con);
    assert_code(
        sem.try_acquire(&Semaphore::random_token(), 1, LONG, Order::Any)
            .run(&mut con),
        "BAD_HELD",
    );
    assert_code(sem.release(&"f".repeat(32)).run(&mut con), "BAD_HELD");
    assert_code(sem.state().run(&mut con), "BAD_HELD");
    harness::cmd(&mut con, &["HSET", "{bad}:state", "used", "-1"]);
    let before_state = harness::dump(&mut con);
    assert_code(sem.set_capacity(5).run(&mut con), "BAD_STATE");
    assert_eq!(harness::dump(&mut con), before_state);
    harness::cmd(&mut con, &["HSET", "{bad}:state", "used", "2"]);
    assert_eq!(harness::dump(&mut con), before);
}

/// Keys and errors that the generic tests do not name: the refusal carries the code.
#[test]
fn errors_name_the_script() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let sem = Semaphore::new("named").unwrap();
    match sem
        .try_acquire(&Semaphore::random_token(), 1, LONG, Order::Any)
        .run(&mut con)
    {
        Err(Error::Script { script, code, .. }) => {
            assert_eq!(
                (script, code.as_str()),
                ("semaphore/acquire", "NO_CAPACITY")
            );
        }
        other => panic!("{other:?}"),
    }
}
