use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use redis_patterns::resource_pool::{Lease, ResourcePool};
use redis_patterns::scripts::resource_pool as script;
use redis_patterns::{Batch, Error};

use crate::harness::{self, InMode, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The book's pool (chapter 10): associate, acquire, release, the counts and checks; then
/// leases: a holder that vanishes, its resource reclaimed, its stale token refused.
/// Acquire picks at random, so the pool holds one available resource whenever the
/// transcript shows which one was taken.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let pool = ResourcePool::new("resource_pool:printers").unwrap();
    t.step("pool.available_key()", Ok::<_, Error>(pool.available_key()))
        .unwrap();
    t.step("pool.occupied_key()", Ok::<_, Error>(pool.occupied_key()))
        .unwrap();
    let _ = step!(t, con, pool.associate("printer-1"));
    let _ = step!(t, con, pool.associate("printer-1"));
    let _ = step!(t, con, pool.has("printer-1"));
    let _ = step!(t, con, pool.has("printer-9"));
    let _ = step!(t, con, pool.total_count());
    let _ = step!(t, con, pool.acquire());
    let _ = step!(t, con, pool.acquire());
    let _ = step!(t, con, pool.is_occupied("printer-1"));
    let _ = step!(t, con, pool.is_available("printer-1"));
    let _ = step!(t, con, pool.associate("printer-1"));
    let _ = step!(t, con, pool.associate("printer-2"));
    let _ = step!(t, con, pool.available_count());
    let _ = step!(t, con, pool.occupied_count());
    let _ = step!(t, con, pool.total_count());
    let _ = step!(t, con, pool.release("printer-1"));
    let _ = step!(t, con, pool.release("printer-1"));
    let _ = step!(t, con, pool.disassociate("printer-1"));
    let _ = step!(t, con, pool.disassociate("printer-1"));
    let _ = step!(t, con, pool.has("printer-1"));
    let _ = step!(t, con, pool.total_count());

    t.note("leases: printer-2 is the only resource left");
    let lease = pool
        .acquire_with_lease(Duration::from_millis(2000))
        .in_mode()
        .run(con)
        .unwrap()
        .unwrap();
    t.step(
        "pool.acquire_with_lease(2 s) → resource",
        Ok::<_, Error>(&lease.resource),
    )
    .unwrap();
    let _ = step!(t, con, pool.acquire());
    let _ = step!(t, con, pool.release("printer-2"));
    let guess = Lease {
        resource: "printer-2".into(),
        token: "guess".into(),
    };
    let _ = step!(t, con, pool.release_lease(&guess));
    let _ = step!(t, con, pool.extend_lease(&lease, Duration::from_millis(50)));
    // The deadline is at most 50 ms past the server's clock now.
    let deadline = harness::server_ms(con) + 51;
    harness::wait_until_server_ms(con, deadline);
    t.note("wait: the holder vanished and its lease ran out");
    let _ = step!(t, con, pool.occupied_count());
    let _ = step!(t, con, pool.reclaim(10));
    let _ = step!(t, con, pool.reclaim(10));
    let _ = step!(t, con, pool.is_available("printer-2"));
    let _ = step!(t, con, pool.release_lease(&lease));
    let _ = step!(t, con, pool.extend_lease(&lease, Duration::from_secs(30)));
    let second = pool
        .acquire_with_lease(Duration::from_secs(30))
        .in_mode()
        .run(con)
        .unwrap()
        .unwrap();
    t.step(
        "pool.acquire_with_lease(30 s) → resource",
        Ok::<_, Error>(&second.resource),
    )
    .unwrap();
    t.step(
        "the new token differs from the stale one",
        Ok::<_, Error>(second.token != lease.token),
    )
    .unwrap();
    let _ = step!(t, con, pool.release_lease(&lease));
    let _ = step!(t, con, pool.is_occupied("printer-2"));
    let _ = step!(t, con, pool.release_lease(&second));
    let _ = step!(t, con, pool.release_lease(&second));

    t.note("bounded reclaim: six resources leased for 1 s");
    for name in ["a", "b", "c", "d", "e"] {
        pool.associate(name).in_mode().run(con).unwrap();
    }
    for _ in 0..6 {
        pool.acquire_with_lease(Duration::from_millis(1000))
            .in_mode()
            .run(con)
            .unwrap()
            .unwrap();
    }
    let _ = step!(t, con, pool.available_count());
    let _ = step!(t, con, pool.reclaim(10));
    let deadline = harness::server_ms(con) + 1001;
    harness::wait_until_server_ms(con, deadline);
    t.note("wait: the six leases ran out");
    let _ = step!(t, con, pool.reclaim(2));
    let _ = step!(t, con, pool.reclaim(3));
    let _ = step!(t, con, pool.available_count());
    let _ = step!(t, con, pool.acquire().map(|r| Ok(r.is_some())));
    let _ = step!(t, con, pool.available_count());
    let _ = step!(t, con, pool.occupied_count());
    let _ = step!(t, con, pool.reclaim(10));
    let _ = step!(t, con, pool.total_count());

    let keys = [
        pool.available_key(),
        pool.occupied_key(),
        pool.leases_key(),
        pool.holders_key(),
    ];
    redis::cmd("DEL").arg(&keys).exec(con).unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("resource_pool");
    let mut con = db.con();
    assert_snapshot(
        "resource_pool__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "resource_pool__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// The pool's four keys are derived once from its name, in its cluster hash slot: a
/// name's own hash tag is kept.
#[test]
fn keys_share_the_names_slot() {
    let pool = ResourcePool::new("{app}:printers").unwrap();
    assert_eq!(pool.name(), "{app}:printers");
    assert_eq!(
        [
            pool.available_key(),
            pool.occupied_key(),
            pool.leases_key(),
            pool.holders_key(),
        ],
        [
            "{app}:printers:available",
            "{app}:printers:occupied",
            "{app}:printers:leases",
            "{app}:printers:holders",
        ]
    );
}

fn pool_of(db: &harness::Db, name: &str, size: usize) -> ResourcePool {
    let pool = ResourcePool::new(name).unwrap();
    let mut con = db.con();
    for r in 0..size {
        assert!(pool.associate(&format!("r{r}")).run(&mut con).unwrap());
    }
    pool
}

/// Marks `resource` held by this client; panics if another client holds it.
fn take(held: &Mutex<HashMap<String, usize>>, resource: &str, client: usize) {
    let previous = held.lock().unwrap().insert(resource.to_owned(), client);
    assert_eq!(previous, None, "{resource} held by two clients at once");
}

fn give_back(held: &Mutex<HashMap<String, usize>>, resource: &str, client: usize) {
    assert_eq!(held.lock().unwrap().remove(resource), Some(client));
}

/// 16 clients × 150 rounds on a pool of 16 (half of them with plain acquire/release, half
/// with 60 s leases): a client holds at most one resource, so one is always free for it
/// and acquire never answers None; no resource is ever held twice; `has` sees every held
/// resource; the counts always add up to 16.
#[test]
fn acquire_never_fails_while_a_resource_is_free() {
    const SIZE: usize = 16;
    let db = Arc::new(harness::fresh_db());
    let pool = pool_of(&db, "busy", SIZE);
    let held = Arc::new(Mutex::new(HashMap::new()));
    let clients: Vec<_> = (0..16)
        .map(|client| {
            let (db, pool, held) = (db.clone(), pool.clone(), held.clone());
            thread::spawn(move || {
                let mut con = db.con();
                for _ in 0..150 {
                    if client % 2 == 0 {
                        let r = pool.acquire().run(&mut con).unwrap().expect("contention");
                        take(&held, &r, client);
                        assert!(pool.has(&r).run(&mut con).unwrap());
                        give_back(&held, &r, client);
                        assert!(pool.release(&r).run(&mut con).unwrap());
                    } else {
                        let lease = pool
                            .acquire_with_lease(Duration::from_secs(60))
                            .run(&mut con)
                            .unwrap()
                            .expect("contention");
                        take(&held, &lease.resource, client);
                        assert!(!pool.release(&lease.resource).run(&mut con).unwrap());
                        give_back(&held, &lease.resource, client);
                        assert!(pool.release_lease(&lease).run(&mut con).unwrap());
                    }
                    assert_eq!(pool.total_count().run(&mut con).unwrap(), SIZE as u64);
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    let mut con = db.con();
    assert_eq!(pool.available_count().run(&mut con).unwrap(), SIZE as u64);
    assert_eq!(pool.occupied_count().run(&mut con).unwrap(), 0);
    assert_eq!(
        harness::dump(&mut con).len(),
        1,
        "only the available set remains"
    );
}

/// 16 clients × 150 rounds on a pool of 4, each acquire sent in one transaction with
/// both counts, so the counts are what that acquire saw: they always add up to 4, None
/// comes only with all 4 occupied, and no resource is ever held twice.
#[test]
fn a_small_pool_is_never_over_handed() {
    const SIZE: u64 = 4;
    let db = Arc::new(harness::fresh_db());
    let pool = pool_of(&db, "small", SIZE as usize);
    let held = Arc::new(Mutex::new(HashMap::new()));
    let nones = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..16)
        .map(|client| {
            let (db, pool, held) = (db.clone(), pool.clone(), held.clone());
            let nones = nones.clone();
            thread::spawn(move || {
                let mut con = db.con();
                // The pool runs empty however the threads are scheduled: the first 4
                // clients hold their first resource until someone has been refused,
                // and nobody stops before that.
                for round in 0.. {
                    if round >= 150 && nones.load(Ordering::SeqCst) > 0 {
                        break;
                    }
                    // Acquire and both counts in one transaction: what acquire saw.
                    let mut batch = Batch::transaction();
                    let acquired = batch.add(pool.acquire());
                    let available = batch.add(pool.available_count());
                    let occupied = batch.add(pool.occupied_count());
                    let mut replies = batch.run(&mut con).unwrap();
                    let acquired = acquired.take(&mut replies).unwrap();
                    let available = available.take(&mut replies).unwrap();
                    let occupied = occupied.take(&mut replies).unwrap();
                    assert_eq!(available + occupied, SIZE);
                    match acquired {
                        Some(r) => {
                            take(&held, &r, client);
                            if round == 0 && client < SIZE as usize {
                                harness::wait_for_count(&nones, 1, "a refusal from a full pool");
                            } else {
                                thread::sleep(Duration::from_micros(200));
                            }
                            give_back(&held, &r, client);
                            assert!(pool.release(&r).run(&mut con).unwrap());
                        }
                        None => {
                            nones.fetch_add(1, Ordering::SeqCst);
                            assert_eq!(occupied, SIZE, "None while a resource was free");
                        }
                    }
                    assert_eq!(pool.total_count().run(&mut con).unwrap(), SIZE);
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    assert_eq!(pool.total_count().run(&mut db.con()).unwrap(), SIZE);
}

/// 8 clients associate the same 200 resources (each in its own order): each is added
/// exactly once. Then 8 clients disassociate them all, a third of them held under
/// leases: each is removed exactly once, and no lease brings one back.
#[test]
fn associate_and_disassociate_act_once_per_resource() {
    const RESOURCES: usize = 200;
    let db = Arc::new(harness::fresh_db());
    let pool = ResourcePool::new("shared").unwrap();
    let run = |op: fn(&ResourcePool, &str) -> redis_patterns::Op<bool>| -> Vec<usize> {
        let wins: Vec<_> = (0..8)
            .map(|client| {
                let (db, pool) = (db.clone(), pool.clone());
                thread::spawn(move || {
                    let mut con = db.con();
                    (0..RESOURCES)
                        .map(|i| (i * 7 + client * 31) % RESOURCES)
                        .filter(|&r| op(&pool, &format!("r{r}")).run(&mut con).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<usize> = wins.into_iter().flat_map(|w| w.join().unwrap()).collect();
        all.sort_unstable();
        all
    };
    assert_eq!(
        run(|pool, r| pool.associate(r)),
        (0..RESOURCES).collect::<Vec<_>>()
    );
    let mut con = db.con();
    assert_eq!(pool.total_count().run(&mut con).unwrap(), RESOURCES as u64);
    for _ in 0..RESOURCES / 3 {
        pool.acquire_with_lease(Duration::from_millis(30))
            .run(&mut con)
            .unwrap()
            .unwrap();
    }
    assert_eq!(
        run(|pool, r| pool.disassociate(r)),
        (0..RESOURCES).collect::<Vec<_>>()
    );
    // Every lease has run out on the server's clock: none brings a resource back.
    harness::wait_server(&mut con, Duration::from_millis(30));
    assert_eq!(pool.reclaim(1000).run(&mut con).unwrap(), 0);
    assert_eq!(pool.total_count().run(&mut con).unwrap(), 0);
    assert!(harness::dump(&mut con).is_empty());
}

/// 16 clients × 60 rounds take resources of a pool of 4 with 25 ms leases and hold them
/// 0 to 45 ms, some "crashing" (never releasing), while a reclaimer calls reclaim(2) in a
/// loop. Each resource's acquisitions are numbered; a release succeeds only if nobody
/// acquired the resource since (the token is still current), and a holder whose resource
/// was acquired again (a stale token) can never release it.
#[test]
fn expired_leases_come_back_and_stale_tokens_release_nothing() {
    let db = Arc::new(harness::fresh_db());
    let pool = pool_of(&db, "leased", 4);
    let epochs: Arc<HashMap<String, Mutex<u64>>> =
        Arc::new((0..4).map(|r| (format!("r{r}"), Mutex::new(0))).collect());
    let done = Arc::new(AtomicBool::new(false));
    let reclaimer = {
        let (db, pool, done) = (db.clone(), pool.clone(), done.clone());
        thread::spawn(move || {
            let mut con = db.con();
            let mut reclaimed = 0;
            while !done.load(Ordering::SeqCst) {
                reclaimed += pool.reclaim(2).run(&mut con).unwrap();
                thread::sleep(Duration::from_millis(3));
            }
            reclaimed
        })
    };
    let stats = Arc::new(Mutex::new((0, 0, 0))); // (acquired, released, refused)
    let clients: Vec<_> = (0..16u64)
        .map(|client| {
            let (db, pool, epochs, stats) =
                (db.clone(), pool.clone(), epochs.clone(), stats.clone());
            thread::spawn(move || {
                let mut con = db.con();
                let mut state = client;
                for _ in 0..60 {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                    let hold = (state >> 33) % 46;
                    let Some(lease) = pool
                        .acquire_with_lease(Duration::from_millis(25))
                        .run(&mut con)
                        .unwrap()
                    else {
                        thread::sleep(Duration::from_millis(2));
                        continue;
                    };
                    let mine = {
                        let mut epoch = epochs[&lease.resource].lock().unwrap();
                        *epoch += 1;
                        *epoch
                    };
                    stats.lock().unwrap().0 += 1;
                    thread::sleep(Duration::from_millis(hold));
                    if hold.is_multiple_of(5) {
                        continue; // crashed: never releases
                    }
                    let epoch = epochs[&lease.resource].lock().unwrap();
                    let released = pool.release_lease(&lease).run(&mut con).unwrap();
                    if *epoch != mine {
                        assert!(!released, "a stale token released {}", lease.resource);
                    }
                    if released {
                        assert_eq!(*epoch, mine, "released a resource someone else held");
                        stats.lock().unwrap().1 += 1;
                    } else {
                        stats.lock().unwrap().2 += 1;
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let mut reclaimed = reclaimer.join().unwrap();
    // The storm's acquisitions may have taken back every crashed lease themselves (each
    // reclaims before it picks); one more crash, left to run out, is the reclaimer's.
    let mut con = db.con();
    let crashed = loop {
        if let Some(lease) = pool
            .acquire_with_lease(Duration::from_millis(25))
            .run(&mut con)
            .unwrap()
        {
            break lease;
        }
        harness::wait_server(&mut con, Duration::from_millis(25));
    };
    harness::wait_server(&mut con, Duration::from_millis(25));
    reclaimed += pool.reclaim(1000).run(&mut con).unwrap();
    assert!(!pool.release_lease(&crashed).run(&mut con).unwrap());
    let (acquired, released, refused) = *stats.lock().unwrap();
    assert!(refused > 0 && released > 0 && reclaimed > 0, "{stats:?}");
    assert_eq!(pool.available_count().run(&mut con).unwrap(), 4);
    assert!(acquired > 4);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let pool = pool_of(&db, "pool", 2);
    let lease = pool
        .acquire_with_lease(Duration::from_secs(100))
        .run(&mut con)
        .unwrap()
        .unwrap();
    harness::cmd(&mut con, &["SET", "{broken}:available", "x"]);
    harness::cmd(&mut con, &["SET", "{broken_leases}:leases", "x"]);
    harness::cmd(&mut con, &["SADD", "{broken_leases}:occupied", "r0"]);
    let before = harness::dump(&mut con);

    let ttl = Duration::from_secs(1);
    for bad in ["", "a}b", "a{}b"] {
        assert_invalid(ResourcePool::new(bad), "name");
    }
    assert_invalid(pool.associate("").run(&mut con), "resource");
    assert_invalid(pool.disassociate("").run(&mut con), "resource");
    assert_invalid(pool.release("").run(&mut con), "resource");
    assert_invalid(pool.has("").run(&mut con), "resource");
    assert_invalid(pool.is_available("").run(&mut con), "resource");
    assert_invalid(pool.is_occupied("").run(&mut con), "resource");
    assert_invalid(pool.acquire_with_lease(Duration::ZERO).run(&mut con), "ttl");
    assert_invalid(
        pool.extend_lease(&lease, Duration::ZERO).run(&mut con),
        "ttl",
    );
    let no_token = Lease {
        resource: lease.resource.clone(),
        token: String::new(),
    };
    assert_invalid(pool.release_lease(&no_token).run(&mut con), "token");
    assert_invalid(pool.extend_lease(&no_token, ttl).run(&mut con), "token");
    let no_resource = Lease {
        resource: String::new(),
        token: lease.token.clone(),
    };
    assert_invalid(pool.release_lease(&no_resource).run(&mut con), "resource");
    assert_invalid(pool.reclaim(0).run(&mut con), "limit");
    assert_invalid(pool.reclaim(1001).run(&mut con), "limit");

    // Keys of the wrong type fail before any write.
    let broken = ResourcePool::new("broken").unwrap();
    assert_code(broken.associate("r").run(&mut con), "WRONGTYPE");
    assert_code(broken.acquire().run(&mut con), "WRONGTYPE");
    assert_code(broken.disassociate("r").run(&mut con), "WRONGTYPE");
    assert_code(broken.release("r").run(&mut con), "WRONGTYPE");
    assert_code(broken.total_count().run(&mut con), "WRONGTYPE");
    assert_code(broken.reclaim(5).run(&mut con), "WRONGTYPE");
    let broken_leases = ResourcePool::new("broken_leases").unwrap();
    assert_code(broken_leases.acquire().run(&mut con), "WRONGTYPE");
    assert_code(broken_leases.disassociate("r0").run(&mut con), "WRONGTYPE");
    assert_code(
        broken_leases.acquire_with_lease(ttl).run(&mut con),
        "WRONGTYPE",
    );

    // Raw calls, as a non-Rust caller would make them.
    let keys = [
        "{pool}:available",
        "{pool}:occupied",
        "{pool}:leases",
        "{pool}:holders",
    ];
    let (avail_occ, all) = (&keys[..2], &keys[..]);
    assert_code(
        harness::eval(&mut con, &script::ASSOCIATE, avail_occ, &[""]),
        "BAD_RESOURCE",
    );
    assert_code(
        harness::eval(&mut con, &script::DISASSOCIATE, all, &[""]),
        "BAD_RESOURCE",
    );
    assert_code(
        harness::eval(
            &mut con,
            &script::RELEASE,
            &[keys[0], keys[1], keys[3]],
            &[""],
        ),
        "BAD_RESOURCE",
    );
    for limit in ["0", "-1", "1001", "1e2", "abc", "", "1.5"] {
        assert_code(
            harness::eval(&mut con, &script::RECLAIM, all, &[limit]),
            "BAD_LIMIT",
        );
        assert_code(
            harness::eval(&mut con, &script::ACQUIRE, all, &[limit]),
            "BAD_LIMIT",
        );
        assert_code(
            harness::eval(&mut con, &script::ACQUIRE_LEASE, all, &["1000", "t", limit]),
            "BAD_LIMIT",
        );
    }
    for ttl in ["-1", "0", "1e3", "abc", "", "1000000000000000"] {
        assert_code(
            harness::eval(&mut con, &script::ACQUIRE_LEASE, all, &[ttl, "t", "10"]),
            "BAD_TTL",
        );
        assert_code(
            harness::eval(
                &mut con,
                &script::EXTEND_LEASE,
                &keys[2..],
                &[&lease.resource, &lease.token, ttl],
            ),
            "BAD_TTL",
        );
    }
    assert_code(
        harness::eval(&mut con, &script::ACQUIRE_LEASE, all, &["1000", "", "10"]),
        "BAD_TOKEN",
    );
    assert_code(
        harness::eval(
            &mut con,
            &script::RELEASE_LEASE,
            all,
            &[&lease.resource, ""],
        ),
        "BAD_TOKEN",
    );
    assert_code(
        harness::eval(&mut con, &script::RELEASE_LEASE, all, &["", "t"]),
        "BAD_RESOURCE",
    );
    assert_code(
        harness::eval(
            &mut con,
            &script::EXTEND_LEASE,
            &keys[2..],
            &["r", "", "10"],
        ),
        "BAD_TOKEN",
    );
    assert_code(
        harness::eval(
            &mut con,
            &script::EXTEND_LEASE,
            &keys[2..],
            &["", "t", "10"],
        ),
        "BAD_RESOURCE",
    );

    assert_eq!(harness::dump(&mut con), before);
}
