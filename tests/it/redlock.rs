use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use redis_patterns::Error;
use redis_patterns::redlock::{Held, Redlock};

use crate::harness::{self, Transcript, assert_invalid, assert_snapshot};
use crate::recorder::Recording;
use crate::server::RedisProcess;

const LONG: Duration = Duration::from_secs(30);

/// Five independent masters: a database each of the shared server (for what needs no
/// server to fail).
fn five_dbs() -> Vec<redis::Connection> {
    (0..5).map(|_| harness::fresh_db().con()).collect()
}

/// What a transcript shows of a held lock: its fencing token and extensions (the token
/// is random, the validity is a time).
fn shown(held: &Option<Held>) -> Option<(u64, u32)> {
    held.as_ref().map(|h| (h.fence(), h.extensions()))
}

fn holders(servers: &mut [impl redis::ConnectionLike], key: &str) -> Vec<Option<String>> {
    servers
        .iter_mut()
        .map(|con| redis::cmd("GET").arg(key).query(con).unwrap())
        .collect()
}

#[test]
fn scenario_on_five_servers() {
    // The first server's calls are recorded: what one server of five sees.
    let recorder = crate::recorder::Recorder::new("redlock");
    let mut servers: Vec<_> = five_dbs()
        .into_iter()
        .enumerate()
        .map(|(i, con)| match i {
            0 => recorder.con(con),
            _ => Recording::unrecorded(con),
        })
        .collect();
    let mut t = Transcript::default();
    let lock = Redlock::new("Redlock:invoice:42").unwrap().retries(0);
    t.step("lock.fence_key()", Ok::<_, Error>(lock.fence_key()))
        .unwrap();

    let mut a = lock.acquire(&mut servers, LONG).unwrap();
    t.step(
        "a = lock.acquire(30 s): (fence, extensions)",
        Ok::<_, Error>(shown(&a)),
    )
    .unwrap();
    let b = lock.acquire(&mut servers, LONG).unwrap();
    t.step(
        "b = lock.acquire(30 s): held by a",
        Ok::<_, Error>(shown(&b)),
    )
    .unwrap();
    let a_held = a.as_mut().unwrap();
    t.step(
        "lock.extend(a, 60 s)",
        lock.extend(&mut servers, a_held, Duration::from_secs(60)),
    )
    .unwrap();
    t.step("a: (fence, extensions)", Ok::<_, Error>(shown(&a)))
        .unwrap();
    let a_held = a.unwrap();
    t.step("lock.release(a)", lock.release(&mut servers, &a_held))
        .unwrap();
    t.step("lock.release(a) again", lock.release(&mut servers, &a_held))
        .unwrap();

    // Two servers held by somebody else: three of five still make a majority.
    for con in &mut servers[..2] {
        harness::cmd(con, &["SET", "Redlock:invoice:42", "someone-else"]);
    }
    let c = lock.acquire(&mut servers, LONG).unwrap();
    t.step(
        "c = lock.acquire(30 s), two servers held elsewhere",
        Ok::<_, Error>(shown(&c)),
    )
    .unwrap();
    t.step(
        "lock.release(c)",
        lock.release(&mut servers, c.as_ref().unwrap()),
    )
    .unwrap();
    // Three held elsewhere: no majority, and nothing is left behind.
    harness::cmd(
        &mut servers[2],
        &["SET", "Redlock:invoice:42", "someone-else"],
    );
    let d = lock.acquire(&mut servers, LONG).unwrap();
    t.step(
        "d = lock.acquire(30 s), three servers held elsewhere",
        Ok::<_, Error>(shown(&d)),
    )
    .unwrap();
    t.step(
        "the lock on each server",
        Ok::<_, Error>(holders(&mut servers, "Redlock:invoice:42")),
    )
    .unwrap();
    assert_snapshot("redlock__scenario", &t);
    recorder.finish();
}

#[test]
fn a_lease_shorter_than_the_drift_allowance_is_never_held_and_leaves_nothing() {
    let mut servers = five_dbs();
    let lock = Redlock::new("Redlock:short").unwrap().retries(2);
    assert!(
        lock.acquire(&mut servers, Duration::from_millis(2))
            .unwrap()
            .is_none()
    );
    assert_eq!(holders(&mut servers, "Redlock:short"), vec![None; 5]);
}

#[test]
fn extensions_are_bounded() {
    let mut servers = five_dbs();
    let lock = Redlock::new("Redlock:bounded").unwrap().max_extensions(2);
    let mut held = lock.acquire(&mut servers, LONG).unwrap().unwrap();
    assert!(lock.extend(&mut servers, &mut held, LONG).unwrap());
    assert!(lock.extend(&mut servers, &mut held, LONG).unwrap());
    assert_invalid(lock.extend(&mut servers, &mut held, LONG), "extensions");
    assert_eq!(held.extensions(), 2);
    // A lock another client took over is no longer extended.
    for con in &mut servers[..3] {
        harness::cmd(con, &["SET", "Redlock:bounded", "someone-else"]);
    }
    let lock = lock.max_extensions(5);
    assert!(!lock.extend(&mut servers, &mut held, LONG).unwrap());
    assert_eq!(held.extensions(), 2);
}

#[test]
fn bad_settings_are_refused_before_any_io() {
    let lock = Redlock::new("Redlock:bad").unwrap();
    let mut none: Vec<redis::Connection> = Vec::new();
    assert_invalid(lock.acquire(&mut none, LONG), "servers");
    assert_invalid(lock.acquire(&mut five_dbs(), Duration::ZERO), "ttl");
    assert_invalid(Redlock::new(""), "name");
    assert_invalid(Redlock::new("a}b"), "name");
}

/// Eight threads take the lock in turn on five servers: never two holders, and the
/// fencing tokens rise strictly in the order the holds happened.
#[test]
fn never_two_holders_and_tokens_rise() {
    let servers: Vec<harness::Db> = (0..5).map(|_| harness::fresh_db()).collect();
    let clients: Arc<Vec<redis::Client>> =
        Arc::new(servers.iter().map(|d| d.client.clone()).collect());
    let inside = Arc::new(AtomicUsize::new(0));
    let fences = Arc::new(Mutex::new(Vec::new()));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (clients, inside, fences) = (clients.clone(), inside.clone(), fences.clone());
            thread::spawn(move || {
                let mut cons: Vec<_> = clients
                    .iter()
                    .map(|c| c.get_connection().unwrap())
                    .collect();
                let lock = Redlock::new("Redlock:contended")
                    .unwrap()
                    .retries(10_000)
                    .retry_delay(Duration::from_millis(5));
                for _ in 0..15 {
                    let held = lock
                        .acquire(&mut cons, LONG)
                        .unwrap()
                        .expect("a turn comes");
                    assert_eq!(
                        inside.fetch_add(1, Ordering::SeqCst),
                        0,
                        "two holders at once"
                    );
                    fences.lock().unwrap().push(held.fence());
                    inside.fetch_sub(1, Ordering::SeqCst);
                    // Held on a majority; a contender's failed attempt may hold the rest
                    // until it releases them.
                    assert!(lock.release(&mut cons, &held).unwrap() >= 3);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let fences = fences.lock().unwrap();
    assert_eq!(fences.len(), 120);
    assert!(fences.windows(2).all(|w| w[0] < w[1]), "{fences:?}");
}

/// The lock's token is the highest number among the granting servers, and they are
/// raised to it: a later majority without that server still counts on from it.
#[test]
fn the_fencing_token_rises_across_different_majorities() {
    let mut procs: Vec<RedisProcess> = (0..5).map(|_| RedisProcess::start(&[])).collect();
    let lock = Redlock::new("Redlock:fence").unwrap().retries(0);
    // Server 0 counted further than the others (say, it granted alone, in vain).
    harness::cmd(
        &mut procs[0].connection(),
        &["SET", "{Redlock:fence}:fence", "10"],
    );
    let mut servers: Vec<redis::Connection> = procs.iter().map(|p| p.connection()).collect();
    let first = lock.acquire(&mut servers, LONG).unwrap().unwrap();
    assert_eq!(first.fence(), 11);
    assert_eq!(lock.release(&mut servers, &first).unwrap(), 5);
    let counters: Vec<Option<String>> = holders(&mut servers, "{Redlock:fence}:fence");
    assert_eq!(counters, vec![Some("11".to_owned()); 5]);

    // Server 0 goes down: the four others grant, and the token still rises (without the
    // raise, their counters would have answered 1).
    procs[0].kill();
    let second = lock.acquire(&mut servers, LONG).unwrap().unwrap();
    assert_eq!(second.fence(), 12);
    assert_eq!(lock.release(&mut servers, &second).unwrap(), 4);
}

/// Servers that do not answer count as not granting: with two of five down the lock is
/// still taken; with three down, the caller gets the servers' error, and the two that
/// granted hold nothing.
#[test]
fn a_minority_down_is_survived_and_a_majority_down_is_an_error() {
    let mut procs: Vec<RedisProcess> = (0..5).map(|_| RedisProcess::start(&[])).collect();
    let mut servers: Vec<redis::Connection> = procs.iter().map(|p| p.connection()).collect();
    let lock = Redlock::new("Redlock:down").unwrap().retries(0);
    procs[0].kill();
    procs[1].kill();
    let held = lock
        .acquire(&mut servers, LONG)
        .unwrap()
        .expect("three of five answer");
    assert_eq!(lock.release(&mut servers, &held).unwrap(), 3);
    procs[2].kill();
    match lock.acquire(&mut servers, LONG) {
        Err(Error::Redis(err)) => {
            assert!(err.is_io_error() || err.is_connection_dropped(), "{err}")
        }
        other => panic!("expected the servers' error, got {other:?}"),
    }
    // The two that granted were freed before the error: nothing waits for a lease.
    assert_eq!(holders(&mut servers[3..], lock.key()), [None, None]);
}

#[test]
fn async_acquire_extend_release() {
    let dbs: Vec<harness::Db> = (0..5).map(|_| harness::fresh_db()).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut servers = Vec::new();
        for db in &dbs {
            servers.push(db.multiplexed().await);
        }
        let lock = Redlock::new("Redlock:async").unwrap().retries(0);
        let mut held = lock
            .acquire_async(&mut servers, LONG)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(held.fence(), 1);
        assert!(held.validity() > Duration::ZERO);
        assert!(
            lock.acquire_async(&mut servers, LONG)
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            lock.extend_async(&mut servers, &mut held, LONG)
                .await
                .unwrap()
        );
        assert_eq!(lock.release_async(&mut servers, &held).await.unwrap(), 5);
        let again = lock
            .acquire_async(&mut servers, LONG)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(again.fence(), 2);
    });
}
