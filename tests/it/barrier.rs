use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use redis_patterns::barrier::{Arrival, Barrier};
use redis_patterns::wait::Attempt;
use redis_patterns::{Error, Op};

use crate::harness::{self, Transcript, assert_invalid, assert_snapshot};
use crate::step;

/// A try as the transcript shows it: how the generation ended, or `None` for still
/// waiting (the wake id differs from run to run).
fn done<T: 'static>(op: Op<Attempt<T>>) -> Op<Option<T>> {
    op.map(|attempt| {
        Ok(match attempt {
            Attempt::Done(value) => Some(value),
            Attempt::NotYet(_) => None,
        })
    })
}

/// Three parties released together; a party with another count refused; a leave and a
/// reset that break a generation; a party whose lease ran out, which breaks its
/// generation for the party waiting with it; a timed-out arrival that leaves.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let barrier = Barrier::new("barrier:step", 3).unwrap();
    let lease = Duration::from_secs(30);
    let (a, b, c) = (barrier.party(), barrier.party(), barrier.party());
    t.step("barrier.state_key()", Ok::<_, Error>(barrier.state_key()))
        .unwrap();
    let _ = step!(t, con, barrier.state());
    let _ = step!(t, con, done(barrier.try_arrive(&a, lease)));
    t.step("a.generation()", Ok::<_, Error>(a.generation()))
        .unwrap();
    let _ = step!(t, con, done(barrier.try_arrive(&a, lease)));
    let _ = step!(t, con, done(barrier.try_arrive(&b, lease)));
    let _ = step!(t, con, barrier.state());
    let _ = step!(t, con, done(barrier.try_arrive(&c, lease)));
    let _ = step!(t, con, done(barrier.try_arrive(&a, lease)));
    let _ = step!(t, con, done(barrier.try_arrive(&b, lease)));
    t.step("a.generation()", Ok::<_, Error>(a.generation()))
        .unwrap();
    let _ = step!(t, con, barrier.state());
    let four = Barrier::new("barrier:step", 4).unwrap();
    let _ = step!(t, con, done(four.try_arrive(&a, lease)));

    t.note("a party that leaves breaks the generation");
    let _ = step!(t, con, done(barrier.try_arrive(&a, lease)));
    let _ = step!(t, con, done(barrier.try_arrive(&b, lease)));
    let _ = step!(t, con, barrier.leave(&c));
    let _ = step!(t, con, barrier.leave(&a));
    let _ = step!(t, con, done(barrier.try_arrive(&b, lease)));
    t.note("a reset breaks it too");
    let _ = step!(t, con, done(barrier.try_arrive(&b, lease)));
    let _ = step!(t, con, barrier.reset());
    let _ = step!(t, con, barrier.reset());
    let _ = step!(t, con, done(barrier.try_arrive(&b, lease)));

    t.note("c stops renewing its 50 ms lease");
    let _ = step!(t, con, done(barrier.try_arrive(&a, lease)));
    let _ = step!(
        t,
        con,
        done(barrier.try_arrive(&c, Duration::from_millis(50)))
    );
    harness::wait_server(con, Duration::from_millis(50));
    let _ = step!(t, con, barrier.state());
    let _ = step!(t, con, done(barrier.try_arrive(&a, lease)));
    let _ = step!(t, con, done(barrier.try_arrive(&c, lease)));
    let _ = step!(t, con, barrier.state());
    t.step(
        "barrier.arrive_within(con, lease, 1 ms)",
        barrier.arrive_within(con, lease, Duration::from_millis(1)),
    )
    .unwrap();
    let _ = step!(t, con, barrier.state());
    t.step(
        "Barrier::new(name, 0)",
        Barrier::new("barrier:step", 0).map(|_| ()),
    )
    .unwrap_err();
    redis::cmd("DEL")
        .arg(&[
            barrier.state_key(),
            barrier.arrived_key(),
            barrier.history_key(),
            barrier.wake_key(),
        ])
        .exec(con)
        .unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("barrier");
    let mut con = db.con();
    assert_snapshot("barrier__scenario", &scenario(&mut recorder.con(&mut con)));
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("barrier__scenario", &scenario(&mut harness::cluster_con()));
}

#[test]
fn keys_share_the_names_slot() {
    let barrier = Barrier::new("{app}:step", 2).unwrap();
    assert_eq!(
        [
            barrier.state_key(),
            barrier.arrived_key(),
            barrier.history_key(),
            barrier.wake_key()
        ],
        [
            "{app}:step:barrier",
            "{app}:step:arrived",
            "{app}:step:history",
            "{app}:step:wake"
        ]
    );
    assert_invalid(Barrier::new("", 2), "name");
    assert_invalid(Barrier::new("b", 0), "parties");
    assert_invalid(Barrier::new("b", 10_001), "parties");
}

/// 6 threads meet 15 times: every thread's r-th arrival answers released, generation r.
/// No generation is released before all 6 arrived (each waits in it until then), and
/// none breaks.
#[test]
fn parties_are_released_together_each_generation() {
    const PARTIES: u64 = 6;
    const ROUNDS: u64 = 15;
    let db = Arc::new(harness::fresh_db());
    let barrier = Barrier::new("rounds", PARTIES).unwrap();
    let arrived = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..PARTIES)
        .map(|_| {
            let (db, barrier, arrived) = (db.clone(), barrier.clone(), arrived.clone());
            thread::spawn(move || {
                let mut con = db.con();
                for round in 1..=ROUNDS {
                    arrived.fetch_add(1, Ordering::SeqCst);
                    let got = barrier
                        .arrive_within(&mut con, Duration::from_secs(30), Duration::from_secs(60))
                        .unwrap();
                    assert_eq!(got, Some(Arrival::Released(round)));
                    // Released only once every party had arrived in this round.
                    assert!(arrived.load(Ordering::SeqCst) >= round * PARTIES);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let mut con = db.con();
    let state = barrier.state().run(&mut con).unwrap().unwrap();
    assert_eq!((state.generation, state.waiting), (ROUNDS + 1, 0));
}

/// The fault test, scaled: 3 parties wait (30 s leases, renewed as they wait) for a
/// barrier of 5; a fourth arrives with a 200 ms lease on a connection of its own and is
/// killed (the connection dropped, nothing renewed). Every waiter answers broken,
/// generation 1, once the lease ran out: no waiter hangs, and the barrier is ready for
/// generation 2. The test waits for server state, never for time.
#[test]
fn a_killed_party_breaks_the_generation_for_every_waiter() {
    let db = Arc::new(harness::fresh_db());
    let barrier = Barrier::new("killed", 5).unwrap();
    let answers = Arc::new(Mutex::new(Vec::new()));
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let (db, barrier, answers) = (db.clone(), barrier.clone(), answers.clone());
            thread::spawn(move || {
                let mut con = db.con();
                let got = barrier
                    .arrive_within(&mut con, Duration::from_secs(30), Duration::from_secs(60))
                    .unwrap();
                answers.lock().unwrap().push(got);
            })
        })
        .collect();
    let mut con = db.con();
    harness::wait_until("three parties waiting", 5, || {
        barrier
            .state()
            .run(&mut con)
            .unwrap()
            .is_some_and(|s| s.waiting == 3)
    });
    {
        let mut doomed = db.con();
        let party = barrier.party();
        let first = barrier
            .try_arrive(&party, Duration::from_millis(200))
            .run(&mut doomed)
            .unwrap();
        assert!(matches!(first, Attempt::NotYet(_)));
    }
    for waiter in waiters {
        waiter.join().unwrap();
    }
    assert_eq!(
        *answers.lock().unwrap(),
        vec![Some(Arrival::Broken(1)); 3],
        "every waiter told"
    );
    let state = barrier.state().run(&mut con).unwrap().unwrap();
    assert_eq!((state.generation, state.waiting), (2, 0));
}

/// A party that times out leaves, and the others answer broken at once (woken through
/// the wake stream).
#[test]
fn a_party_that_times_out_breaks_the_generation() {
    let db = Arc::new(harness::fresh_db());
    let barrier = Barrier::new("timeout", 3).unwrap();
    let waiter = {
        let (db, barrier) = (db.clone(), barrier.clone());
        thread::spawn(move || {
            barrier
                .arrive_within(
                    &mut db.con(),
                    Duration::from_secs(30),
                    Duration::from_secs(60),
                )
                .unwrap()
        })
    };
    let mut con = db.con();
    harness::wait_until("one party waiting", 5, || {
        barrier
            .state()
            .run(&mut con)
            .unwrap()
            .is_some_and(|s| s.waiting == 1)
    });
    let gave_up = barrier
        .arrive_within(&mut con, Duration::from_secs(30), Duration::from_millis(1))
        .unwrap();
    assert_eq!(gave_up, None);
    assert_eq!(waiter.join().unwrap(), Some(Arrival::Broken(1)));
}

#[tokio::test]
async fn arrives_on_an_async_connection() {
    let db = harness::fresh_db();
    let barrier = Barrier::new("async", 2).unwrap();
    let mut first = db.multiplexed().await;
    let mut second = db.multiplexed().await;
    let one = {
        let barrier = barrier.clone();
        tokio::spawn(async move {
            barrier
                .arrive_within_async(&mut first, Duration::from_secs(30), Duration::from_secs(60))
                .await
                .unwrap()
        })
    };
    let two = barrier
        .arrive_within_async(
            &mut second,
            Duration::from_secs(30),
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    assert_eq!(two, Some(Arrival::Released(1)));
    assert_eq!(one.await.unwrap(), Some(Arrival::Released(1)));
}

/// Data another client wrote is refused before anything is written: a barrier hash
/// these scripts did not write, and an outcome in history they never write.
#[test]
fn foreign_data_is_refused() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let barrier = Barrier::new("foreign", 2).unwrap();
    let party = barrier.party();
    let lease = Duration::from_secs(30);
    for fields in [
        &["parties", "2"][..],
        &["parties", "2", "gen", "0"],
        &["parties", "02", "gen", "1"],
        &["parties", "10001", "gen", "1"],
        &["other", "x"],
    ] {
        redis::cmd("DEL")
            .arg(barrier.state_key())
            .exec(&mut con)
            .unwrap();
        let mut hset = vec!["HSET", barrier.state_key()];
        hset.extend_from_slice(fields);
        harness::cmd(&mut con, &hset);
        let before = harness::dump(&mut con);
        harness::assert_code(
            barrier.try_arrive(&party, lease).run(&mut con),
            "BAD_BARRIER",
        );
        harness::assert_code(barrier.leave(&party).run(&mut con), "BAD_BARRIER");
        harness::assert_code(barrier.reset().run(&mut con), "BAD_BARRIER");
        harness::assert_code(barrier.state().run(&mut con), "BAD_BARRIER");
        assert_eq!(harness::dump(&mut con), before, "{fields:?}");
    }
    redis::cmd("DEL")
        .arg(barrier.state_key())
        .exec(&mut con)
        .unwrap();
    // Generation 1 waits for a second party; then its outcome is foreign.
    assert!(matches!(
        barrier.try_arrive(&party, lease).run(&mut con).unwrap(),
        Attempt::NotYet(_)
    ));
    barrier.reset().run(&mut con).unwrap();
    harness::cmd(&mut con, &["ZADD", barrier.history_key(), "7", "1"]);
    let before = harness::dump(&mut con);
    harness::assert_code(
        barrier.try_arrive(&party, lease).run(&mut con),
        "BAD_HISTORY",
    );
    assert_eq!(harness::dump(&mut con), before);
}
