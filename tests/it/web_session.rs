use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use redis_patterns::scripts::web_session as script;
use redis_patterns::web_session::WebSessions;

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// Every key of a namespace the tests use, for cleaning up on a cluster (no SCAN there).
fn keys_of(web: &WebSessions, tokens: &[&str]) -> Vec<String> {
    let mut keys = vec![
        format!("{{{}}}:login", web.namespace()),
        format!("{{{}}}:recent", web.namespace()),
        web.views_key().to_owned(),
    ];
    for token in tokens {
        keys.push(web.viewed_key(token).unwrap());
        keys.push(web.cart_key(token).unwrap());
    }
    keys
}

/// An `update_token` step, with the last-seen time shown as "a time" (it is the server's).
fn update(
    t: &mut Transcript,
    con: &mut dyn redis::ConnectionLike,
    web: &WebSessions,
    token: &str,
    item: Option<&str>,
) {
    let seen = web.update_token(token, "peter", item).run(con);
    t.step(
        &format!("update_token({token:?}, \"peter\", {item:?})"),
        seen.map(|ms| {
            if ms > 1_600_000_000_000 {
                "a time (ms)"
            } else {
                "?"
            }
        }),
    )
    .unwrap();
}

/// The book's flow: a visit with items viewed, a cart, the cleanups at a limit of 2,
/// and a rescale.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let web = WebSessions::new("web")
        .unwrap()
        .with_limit(2)
        .unwrap()
        .with_viewed_kept(2)
        .unwrap();
    let _ = step!(t, con, web.check_token::<String>("t1"));
    update(&mut t, con, &web, "t1", None);
    let _ = step!(t, con, web.check_token::<String>("t1"));
    for item in ["item:1", "item:2", "item:3", "item:1"] {
        update(&mut t, con, &web, "t1", Some(item));
    }
    t.note("each token keeps its last 2 items viewed (the book's 25)");
    let _ = step!(t, con, web.viewed::<String>("t1"));
    let _ = step!(t, con, web.view_rank("item:1"));
    let _ = step!(t, con, web.view_rank("item:3"));
    let _ = step!(t, con, web.view_rank("item:9"));
    let _ = step!(t, con, web.add_to_cart("t1", "item:1", 2));
    let _ = step!(t, con, web.add_to_cart("t1", "item:2", 1));
    let _ = step!(t, con, web.add_to_cart("t1", "item:2", 0));
    t.note("a count of 0 removes the item (the book calls hrem, which does not exist)");
    let _ = step!(t, con, web.cart::<String>("t1"));
    // A token's requests within one ms move its time on by 1 ms each: let the clock
    // pass them, so that the tokens' order is the order of the calls.
    harness::wait_server(con, Duration::from_millis(10));
    update(&mut t, con, &web, "t2", Some("item:2"));
    let _ = step!(t, con, web.add_to_cart("t2", "item:2", 5));
    harness::wait_server(con, Duration::from_millis(2));
    update(&mut t, con, &web, "t3", None);
    let _ = step!(t, con, web.count());
    let _ = t.step("clean_sessions(con, 100)", web.clean_sessions(con, 100));
    t.note("t1 ended with its items viewed; clean_sessions leaves its cart, as the book");
    let _ = step!(t, con, web.check_token::<String>("t1"));
    let _ = step!(t, con, web.viewed::<String>("t1"));
    let _ = step!(t, con, web.cart::<String>("t1"));
    let _ = t.step(
        "clean_full_sessions(con, 100)",
        web.clean_full_sessions(con, 100),
    );
    t.note("2 sessions, the limit: nothing to end");
    harness::wait_server(con, Duration::from_millis(2));
    update(&mut t, con, &web, "t4", None);
    let _ = t.step(
        "clean_full_sessions(con, 100)",
        web.clean_full_sessions(con, 100),
    );
    let _ = step!(t, con, web.cart::<String>("t2"));
    let _ = step!(t, con, web.count());
    let _ = step!(t, con, web.rescale_viewed(2));
    let _ = step!(t, con, web.most_viewed::<String>(10));
    redis::cmd("DEL")
        .arg(keys_of(&web, &["t1", "t2", "t3", "t4"]))
        .exec(con)
        .unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("web_session");
    let mut con = db.con();
    assert_snapshot(
        "web_session__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "web_session__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// A token refreshed between the cleaner's read and its end keeps its session, items
/// viewed and cart; the others read are ended, and a request after that starts afresh.
#[test]
fn a_token_refreshed_during_the_cleanup_is_kept() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let mut other = db.con();
    let web = WebSessions::new("web:refresh")
        .unwrap()
        .with_limit(0)
        .unwrap();
    let tokens: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
    for token in &tokens {
        web.update_token(token, "u", Some("item"))
            .run(&mut con)
            .unwrap();
        web.add_to_cart(token, "item", 1).run(&mut con).unwrap();
    }
    let oldest = web.oldest(100).run(&mut con).unwrap();
    assert_eq!(oldest.len(), 10);
    // Another web server sees the even tokens again, twice within one ms at most.
    for token in tokens.iter().step_by(2) {
        web.update_token(token, "u", None::<&str>)
            .run(&mut other)
            .unwrap();
    }
    let ended = web.end_sessions(&oldest, true).run(&mut con).unwrap();
    let odd: Vec<String> = tokens.iter().skip(1).step_by(2).cloned().collect();
    assert_eq!(ended, odd);
    for (i, token) in tokens.iter().enumerate() {
        let user: Option<String> = web.check_token(token).run(&mut con).unwrap();
        let cart: Vec<(String, u64)> = web.cart(token).run(&mut con).unwrap();
        let viewed: Vec<String> = web.viewed(token).run(&mut con).unwrap();
        if i % 2 == 0 {
            assert_eq!(user.as_deref(), Some("u"), "{token}");
            assert_eq!(cart, [("item".to_owned(), 1)], "{token}");
            assert_eq!(viewed, ["item"], "{token}");
        } else {
            assert_eq!((user, cart.len(), viewed.len()), (None, 0, 0), "{token}");
        }
    }
    // The same read again ends nothing: the even tokens moved, the odd are gone.
    assert!(
        web.end_sessions(&oldest, true)
            .run(&mut con)
            .unwrap()
            .is_empty()
    );
}

/// 8 clients refresh 16 tokens in a loop while a cleaner, 20 times over, reads every
/// session (the 16 and 50 idle ones), waits until each client has refreshed its tokens
/// since, and ends what it read: it ends exactly the idle sessions, never one refreshed.
#[test]
fn a_cleanup_racing_refreshes_never_ends_a_refreshed_token() {
    let db = harness::fresh_db();
    let web = WebSessions::new("web:race").unwrap().with_limit(0).unwrap();
    let done = AtomicBool::new(false);
    let loops: Vec<std::sync::atomic::AtomicU64> = (0..8)
        .map(|_| std::sync::atomic::AtomicU64::new(0))
        .collect();
    thread::scope(|scope| {
        let (db, web, done, loops) = (&db, &web, &done, &loops);
        for (c, count) in loops.iter().enumerate() {
            scope.spawn(move || {
                let mut con = db.con();
                while !done.load(Ordering::Relaxed) {
                    for token in [format!("hot{c}a"), format!("hot{c}b")] {
                        web.update_token(&token, "u", Some("item"))
                            .run(&mut con)
                            .unwrap();
                    }
                    count.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
        // Stops the clients however the rounds end, so that a failed assertion fails the
        // test instead of leaving the scope waiting for them.
        let _stop = Stop(done);
        let mut con = db.con();
        // Every client has made its tokens before the first round.
        while loops.iter().any(|count| count.load(Ordering::SeqCst) == 0) {
            thread::yield_now();
        }
        for round in 0..20 {
            let idle: BTreeSet<String> = (0..50).map(|i| format!("idle{round}:{i}")).collect();
            for token in &idle {
                web.update_token(token, "u", None::<&str>)
                    .run(&mut con)
                    .unwrap();
            }
            let read = web.oldest(100).run(&mut con).unwrap();
            assert_eq!(read.len(), 66, "round {round}");
            let at_read: Vec<u64> = loops.iter().map(|c| c.load(Ordering::SeqCst)).collect();
            // Each client finishes a loop that started after the read.
            while loops
                .iter()
                .zip(&at_read)
                .any(|(count, read)| count.load(Ordering::SeqCst) < read + 2)
            {
                thread::yield_now();
            }
            let ended: BTreeSet<String> = web
                .end_sessions(&read, true)
                .run(&mut con)
                .unwrap()
                .into_iter()
                .collect();
            assert_eq!(ended, idle, "round {round}");
        }
    });
    let mut con = db.con();
    assert_eq!(web.count().run(&mut con).unwrap(), 16);
}

/// Sets its flag when dropped.
struct Stop<'a>(&'a AtomicBool);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// 16 clients record requests of 40 tokens while a cleaner keeps 20 sessions and a
/// watcher reads both indexes in `MULTI` over and over: the indexes always hold the
/// same tokens, and at the end no view count is lost. The watcher looks before the
/// requests and amid them, and the second half of the requests waits for a cleanup.
#[test]
fn the_indexes_agree_under_concurrent_requests_and_cleanups() {
    let db = harness::fresh_db();
    let web = WebSessions::new("web:busy")
        .unwrap()
        .with_limit(20)
        .unwrap();
    let done = AtomicBool::new(false);
    let (ended, looks) = (AtomicU64::new(0), AtomicU64::new(0));
    const CLIENTS: u64 = 16;
    const REQUESTS: u64 = 300;
    thread::scope(|scope| {
        let (db, web, done, ended, looks) = (&db, &web, &done, &ended, &looks);
        let _stop = Stop(done);
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                scope.spawn(move || {
                    let mut con = db.con();
                    let mut rng = harness::Rng::new(c + 1);
                    harness::wait_for_count(looks, 1, "the watcher's first look");
                    for n in 0..REQUESTS {
                        if n == REQUESTS / 2 {
                            harness::wait_for_count(ended, 1, "a cleanup that ends a session");
                            harness::wait_for_a_whole_turn(looks, 1, "a look amid the requests");
                        }
                        let token = format!("t{}", rng.below(40));
                        let item = format!("item:{}", rng.below(10));
                        web.update_token(&token, "u", Some(&item))
                            .run(&mut con)
                            .unwrap();
                    }
                })
            })
            .collect();
        let cleaner = scope.spawn(move || {
            let mut con = db.con();
            while !done.load(Ordering::Relaxed) {
                let n = web.clean_until_limit(&mut con, true, 7).unwrap();
                ended.fetch_add(n, Ordering::SeqCst);
            }
        });
        let watcher = scope.spawn(move || {
            let mut con = db.con();
            while !done.load(Ordering::Relaxed) {
                let (login, recent): (Vec<String>, Vec<String>) = redis::pipe()
                    .atomic()
                    .cmd("HKEYS")
                    .arg("{web:busy}:login")
                    .cmd("ZRANGE")
                    .arg("{web:busy}:recent")
                    .arg(0)
                    .arg(-1)
                    .query(&mut con)
                    .unwrap();
                let login: BTreeSet<String> = login.into_iter().collect();
                let recent: BTreeSet<String> = recent.into_iter().collect();
                assert_eq!(login, recent, "a token in one index only");
                looks.fetch_add(1, Ordering::SeqCst);
            }
        });
        for client in clients {
            client.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        cleaner.join().unwrap();
        watcher.join().unwrap();
    });
    let mut con = db.con();
    web.clean_until_limit(&mut con, true, 100).unwrap();
    assert_eq!(web.count().run(&mut con).unwrap(), 20);
    let views: Vec<(String, f64)> = web.most_viewed(100).run(&mut con).unwrap();
    let total: f64 = views.iter().map(|(_, views)| views).sum();
    assert_eq!(total, (CLIENTS * REQUESTS) as f64, "a view was lost");
}

/// A set that grew far beyond `keep` is trimmed 1000 at a time, then halved once; the
/// most viewed items stay, in order.
#[test]
fn rescaling_a_large_set_takes_bounded_steps_then_halves_once() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let web = WebSessions::new("web:rescale").unwrap();
    let mut fill = redis::pipe();
    for i in 0..2500u64 {
        fill.cmd("ZADD")
            .arg(web.views_key())
            .arg(-((i + 1) as f64) * 2.0)
            .arg(format!("item:{i}"))
            .ignore();
    }
    fill.exec(&mut con).unwrap();
    let mut steps = Vec::new();
    loop {
        let step = web.rescale_viewed(100).run(&mut con).unwrap();
        steps.push((step.dropped, step.halved));
        if step.halved {
            break;
        }
    }
    assert_eq!(steps, [(1000, false), (1000, false), (400, true)]);
    let top: Vec<(String, f64)> = web.most_viewed(2).run(&mut con).unwrap();
    assert_eq!(
        top,
        [
            ("item:2499".to_owned(), 2500.0),
            ("item:2498".to_owned(), 2499.0)
        ]
    );
    assert_eq!(web.rescale_viewed_fully(&mut con, 100).unwrap(), 0);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    assert_invalid(WebSessions::new(""), "namespace");
    assert_invalid(WebSessions::new("a}b"), "namespace");
    let web = WebSessions::new("web:bad").unwrap();
    assert_invalid(web.clone().with_viewed_kept(0), "keep");
    assert_invalid(web.clone().with_viewed_kept(1001), "keep");
    assert_invalid(web.clone().with_limit(1_000_000_000_000_000), "limit");
    web.update_token("t", "u", Some("i")).run(&mut con).unwrap();
    web.add_to_cart("t", "i", 1).run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    assert_invalid(
        web.update_token("", "u", None::<&str>).run(&mut con),
        "token",
    );
    assert_invalid(
        web.update_token("t", "", None::<&str>).run(&mut con),
        "user",
    );
    assert_invalid(web.update_token("t", "u", Some("")).run(&mut con), "item");
    assert_invalid(web.check_token::<String>("").run(&mut con), "token");
    assert_invalid(web.add_to_cart("", "i", 1).run(&mut con), "token");
    assert_invalid(web.add_to_cart("t", "", 1).run(&mut con), "item");
    assert_invalid(web.oldest(0).run(&mut con), "batch");
    assert_invalid(web.oldest(101).run(&mut con), "batch");
    assert_invalid(web.clean_sessions(&mut con, 0), "batch");
    assert_invalid(web.end_sessions(&[], true).run(&mut con), "batch");
    assert_invalid(
        web.end_sessions(&[(String::new(), 1)], true).run(&mut con),
        "token",
    );
    assert_invalid(web.rescale_viewed(0).run(&mut con), "keep");
    assert_invalid(web.rescale_viewed(10_001).run(&mut con), "keep");
    assert_invalid(web.view_rank("").run(&mut con), "item");
    assert_eq!(harness::dump(&mut con), before);

    // Raw calls, as from another language.
    let (login, recent) = ("{web:bad}:login", "{web:bad}:recent");
    let (viewed, cart) = ("{web:bad}:viewed:t", "{web:bad}:cart:t");
    let clean = |con: &mut redis::Connection, keys: &[&str], args: &[&str]| {
        harness::eval(con, &script::CLEAN, keys, args)
    };
    assert_code(
        clean(&mut con, &[login, recent, viewed], &["0", "1", "t", "1"]),
        "BAD_ARGS",
    );
    // A cart of another token than its viewed items, and keys of another token than the
    // entry's.
    assert_code(
        clean(
            &mut con,
            &[login, recent, viewed, "{web:bad}:cart:u"],
            &["0", "0", "t", "1"],
        ),
        "BAD_KEYS",
    );
    assert_code(
        clean(
            &mut con,
            &[login, recent, "{web:bad}:viewed:u", "{web:bad}:cart:u"],
            &["0", "0", "t", "1"],
        ),
        "BAD_ENTRIES",
    );
    for time in [
        "",
        "-1",
        "1.5",
        "1e3",
        "007",
        " 1",
        "1000000000000000",
        "nan",
    ] {
        assert_code(
            clean(
                &mut con,
                &[login, recent, viewed, cart],
                &["0", "1", "t", time],
            ),
            "BAD_ENTRIES",
        );
    }
    assert_code(
        clean(
            &mut con,
            &[login, recent, viewed, cart],
            &["0", "1", "", "1"],
        ),
        "BAD_ENTRIES",
    );
    assert_code(
        clean(
            &mut con,
            &[login, recent, viewed, cart],
            &["0", "1", "t", "1", "u"],
        ),
        "BAD_ENTRIES",
    );
    assert_code(
        harness::eval(
            &mut con,
            &script::UPDATE,
            &[login, recent, viewed, "{web:bad}:viewed"],
            &["t", "u", "", "0"],
        ),
        "BAD_KEEP",
    );
    // A wrong type anywhere is found before the first write.
    harness::cmd(&mut con, &["SET", "{web:bad}:viewed:x", "a string"]);
    let before = harness::dump(&mut con);
    assert_code(
        harness::eval(
            &mut con,
            &script::UPDATE,
            &[login, recent, "{web:bad}:viewed:x", "{web:bad}:viewed"],
            &["x", "u", "i", "25"],
        ),
        "WRONGTYPE",
    );
    assert_eq!(harness::dump(&mut con), before);
    // A time read long ago matches no token: nothing is ended.
    let ended: Vec<String> = redis::FromRedisValue::from_redis_value(
        clean(
            &mut con,
            &[login, recent, viewed, cart],
            &["0", "1", "t", "1"],
        )
        .unwrap(),
    )
    .unwrap();
    assert!(ended.is_empty());
    assert_eq!(harness::dump(&mut con), before);
}

/// The async cleanup ends what the sync one would, on a multiplexed connection.
#[tokio::test]
async fn the_async_cleanup_ends_the_oldest_beyond_the_limit() {
    let db = harness::fresh_db();
    let mut con = db.multiplexed().await;
    let web = WebSessions::new("web:async")
        .unwrap()
        .with_limit(1)
        .unwrap();
    for token in ["a", "b", "c"] {
        web.update_token(token, "u", None::<&str>)
            .run_async(&mut con)
            .await
            .unwrap();
        web.add_to_cart(token, "i", 1)
            .run_async(&mut con)
            .await
            .unwrap();
        harness::wait_server(&mut db.con(), Duration::from_millis(1));
    }
    let ended = web.clean_sessions_async(&mut con, true, 100).await.unwrap();
    assert_eq!(ended, ["a", "b"]);
    assert!(
        web.clean_sessions_async(&mut con, true, 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        web.cart::<String>("a")
            .run_async(&mut con)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        web.cart::<String>("c")
            .run_async(&mut con)
            .await
            .unwrap()
            .len(),
        1
    );
}

/// Users and items are bytes: a non-UTF-8 user and item go through every call that takes
/// or returns one and come back byte for byte; Redis holds them as they are; reading them
/// as `String` fails and changes nothing; ending the session leaves only the view count.
#[test]
fn binary_users_and_items_round_trip() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let user: &[u8] = b"\xff\x00user";
    let item: &[u8] = b"\xff\x00item";
    let web = WebSessions::new("web:bin").unwrap().with_limit(0).unwrap();
    web.update_token("t", user, Some(item))
        .run(&mut con)
        .unwrap();
    web.update_token("t", user, Some("plain"))
        .run(&mut con)
        .unwrap();
    web.update_token("t", user, Some(item))
        .run(&mut con)
        .unwrap();
    web.add_to_cart("t", item, 3).run(&mut con).unwrap();
    web.add_to_cart("t", "plain", 1).run(&mut con).unwrap();

    let got: Option<Vec<u8>> = web.check_token("t").run(&mut con).unwrap();
    assert_eq!(got.as_deref(), Some(user));
    let viewed: Vec<Vec<u8>> = web.viewed("t").run(&mut con).unwrap();
    assert_eq!(viewed, [item, b"plain"]);
    assert_eq!(web.view_rank(item).run(&mut con).unwrap(), Some(0));
    assert_eq!(web.view_rank(b"\xff\x00").run(&mut con).unwrap(), None);
    let cart: Vec<(Vec<u8>, u64)> = web.cart("t").run(&mut con).unwrap();
    assert_eq!(cart, [(b"plain".to_vec(), 1), (item.to_vec(), 3)]);
    let top: Vec<(Vec<u8>, f64)> = web.most_viewed(10).run(&mut con).unwrap();
    assert_eq!(top, [(item.to_vec(), 2.0), (b"plain".to_vec(), 1.0)]);

    // The keyspace holds the exact bytes.
    let login: Vec<u8> = redis::cmd("HGET")
        .arg("{web:bin}:login")
        .arg("t")
        .query(&mut con)
        .unwrap();
    assert_eq!(login, user);
    let views: Vec<(Vec<u8>, f64)> = harness::zset_with_scores(&mut con, web.views_key());
    assert_eq!(views, [(item.to_vec(), -2.0), (b"plain".to_vec(), -1.0)]);
    let in_viewed: Vec<Vec<u8>> = redis::cmd("ZRANGE")
        .arg(web.viewed_key("t").unwrap())
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    assert_eq!(in_viewed, [b"plain", item]);
    let in_cart: Option<u64> = redis::cmd("HGET")
        .arg(web.cart_key("t").unwrap())
        .arg(item)
        .query(&mut con)
        .unwrap();
    assert_eq!(in_cart, Some(3));

    // Reads that cannot decode as `String` fail, and change nothing.
    harness::assert_undecodable_changes_nothing(&mut con, |c| {
        web.check_token::<String>("t").run(c)
    });
    harness::assert_undecodable_changes_nothing(&mut con, |c| web.viewed::<String>("t").run(c));
    harness::assert_undecodable_changes_nothing(&mut con, |c| web.cart::<String>("t").run(c));
    harness::assert_undecodable_changes_nothing(&mut con, |c| web.most_viewed::<String>(10).run(c));

    // A count of 0 removes the binary item from the cart; a rescale keeps it, halved.
    web.add_to_cart("t", item, 0).run(&mut con).unwrap();
    let cart: Vec<(Vec<u8>, u64)> = web.cart("t").run(&mut con).unwrap();
    assert_eq!(cart, [(b"plain".to_vec(), 1)]);
    web.rescale_viewed_fully(&mut con, 1).unwrap();
    let top: Vec<(Vec<u8>, f64)> = web.most_viewed(10).run(&mut con).unwrap();
    assert_eq!(top, [(item.to_vec(), 1.0)]);

    // Ending the session takes the user, the items viewed and the cart.
    assert_eq!(web.clean_until_limit(&mut con, true, 100).unwrap(), 1);
    let keys: Vec<Vec<u8>> = harness::dump(&mut con).into_keys().collect();
    assert_eq!(keys, [web.views_key().as_bytes()]);
}
