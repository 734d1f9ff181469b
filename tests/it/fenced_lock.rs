use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use redis_patterns::Error;
use redis_patterns::fenced_lock::FencedLock;
use redis_patterns::scripts::fenced_lock as script;

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let lock = FencedLock::new("FencedLock:invoice:42").unwrap();
    t.step("lock.fence_key()", Ok::<_, Error>(lock.fence_key()))
        .unwrap();
    let _ = step!(t, con, lock.acquire(Duration::from_secs(30)));
    let _ = step!(t, con, lock.acquire(Duration::from_secs(30)));
    let _ = step!(t, con, lock.release(2));
    let _ = step!(t, con, lock.extend(1, Duration::from_secs(60)));
    let _ = step!(t, con, lock.release(1));
    let _ = step!(t, con, lock.release(1));
    let _ = step!(t, con, lock.acquire(Duration::from_millis(50)));
    harness::wait_until_gone(con, "FencedLock:invoice:42");
    t.note("wait: the holder of token 2 is paused past its lease");
    let _ = step!(t, con, lock.acquire(Duration::from_secs(30)));
    let _ = step!(t, con, lock.release(2));
    let _ = step!(t, con, lock.extend(2, Duration::from_secs(30)));
    let _ = step!(t, con, lock.release(3));
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("fenced_lock");
    assert_snapshot(
        "fenced_lock__scenario",
        &scenario(&mut recorder.con(db.con())),
    );
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "fenced_lock__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// The lock and its counter are in one hash slot, so the script runs on a cluster.
#[test]
fn fence_key_shares_the_locks_slot() {
    let mut con = harness::cluster_con();
    for name in ["invoice:42", "{user:7}:lock", "a{b"] {
        let lock = FencedLock::new(name).unwrap();
        let mut slot = |key: &str| -> i64 {
            redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(key)
                .query(&mut con)
                .unwrap()
        };
        let (lock_slot, fence_slot) = (slot(lock.key()), slot(lock.fence_key()));
        assert_eq!(lock_slot, fence_slot, "{name}");
    }
}

/// 16 clients × 200 acquire attempts: the tokens are exactly 1..=N in acquisition order,
/// each holder's token is larger than every earlier holder's, and never two holders.
#[test]
fn tokens_never_repeat_nor_go_backwards() {
    let db = Arc::new(harness::fresh_db());
    let holders = Arc::new(AtomicUsize::new(0));
    let last = Arc::new(AtomicU64::new(0));
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let clients: Vec<_> = (0..16)
        .map(|_| {
            let (db, holders, last, tokens) =
                (db.clone(), holders.clone(), last.clone(), tokens.clone());
            thread::spawn(move || {
                let mut con = db.con();
                let lock = FencedLock::new("contended").unwrap();
                for _ in 0..200 {
                    if let Some(token) =
                        lock.acquire(Duration::from_secs(60)).run(&mut con).unwrap()
                    {
                        assert_eq!(
                            holders.fetch_add(1, Ordering::SeqCst),
                            0,
                            "two holders at once"
                        );
                        let previous = last.swap(token, Ordering::SeqCst);
                        assert!(previous < token, "token {token} after {previous}");
                        tokens.lock().unwrap().push(token);
                        assert!(
                            lock.extend(token, Duration::from_secs(60))
                                .run(&mut con)
                                .unwrap()
                        );
                        holders.fetch_sub(1, Ordering::SeqCst);
                        assert!(lock.release(token).run(&mut con).unwrap());
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    let mut tokens = tokens.lock().unwrap().clone();
    let n = tokens.len() as u64;
    assert!(n > 0);
    assert_eq!(
        tokens.iter().collect::<HashSet<_>>().len() as u64,
        n,
        "a token repeated"
    );
    tokens.sort_unstable();
    assert_eq!(tokens, (1..=n).collect::<Vec<_>>());
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["SET", "{damaged}:fence", "abc"]);
    harness::cmd(&mut con, &["SET", "{too_far}:fence", "9007199254740992"]);
    harness::cmd(&mut con, &["HSET", "{hashed}:fence", "f", "v"]);
    let held = FencedLock::new("held").unwrap();
    assert_eq!(
        held.acquire(Duration::from_secs(100))
            .run(&mut con)
            .unwrap(),
        Some(1)
    );
    let before = harness::dump(&mut con);

    assert_invalid(FencedLock::new(""), "name");
    assert_invalid(FencedLock::new("a}b"), "name");
    assert_invalid(FencedLock::new("a{}b"), "name");
    assert_invalid(held.acquire(Duration::ZERO).run(&mut con), "ttl");
    assert_invalid(held.release(0).run(&mut con), "token");
    assert_invalid(
        held.extend(0, Duration::from_secs(1)).run(&mut con),
        "token",
    );
    assert_invalid(held.extend(1, Duration::ZERO).run(&mut con), "ttl");

    // A counter that holds no token count, or no string, fails before anything is written.
    assert_code(
        FencedLock::new("damaged")
            .unwrap()
            .acquire(Duration::from_secs(1))
            .run(&mut con),
        "BAD_FENCE",
    );
    assert_code(
        FencedLock::new("too_far")
            .unwrap()
            .acquire(Duration::from_secs(1))
            .run(&mut con),
        "BAD_FENCE",
    );
    assert_code(
        FencedLock::new("hashed")
            .unwrap()
            .acquire(Duration::from_secs(1))
            .run(&mut con),
        "WRONGTYPE",
    );

    for ttl in ["-1", "0", "1e3", "abc", "", "1000000000000000"] {
        let reply = harness::eval(
            &mut con,
            &script::ACQUIRE,
            &["free", "{free}:fence"],
            &[ttl],
        );
        assert_code(reply, "BAD_TTL");
    }

    assert_eq!(harness::dump(&mut con), before);
}
