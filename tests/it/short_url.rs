use std::collections::BTreeSet;
use std::thread;
use std::time::Duration;

use redis_patterns::Error;
use redis_patterns::scripts::short_url as script;
use redis_patterns::short_url::{LinkOptions, UrlShorty, UrlShortyWithCache, base62};

use crate::harness::{self, InMode, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The book's example (chapter 20), then what it lacks: the cached shortener's one id
/// per URL, custom slugs, expiring and visit-limited links, visit counts, purging.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let shorty = UrlShorty::with_name("short_url:demo").unwrap();
    t.step("shorty.keys()", Ok::<_, Error>(shorty.keys()))
        .unwrap();
    let _ = step!(t, con, shorty.shorten("RedisGuide.com"));
    let _ = step!(t, con, shorty.shorten("RedisDoc.io"));
    let _ = step!(t, con, shorty.shorten("RedisGuide.com"));
    let _ = step!(t, con, shorty.restore("1"));
    let _ = step!(t, con, shorty.restore("2"));
    let _ = step!(t, con, shorty.restore("404"));
    harness::cmd(con, &["SET", shorty.keys()[0], "10085"]);
    t.note("the counter is set to 10085");
    let _ = step!(t, con, shorty.shorten("RedisBook.com"));

    let cached = UrlShortyWithCache::with_name("short_url:demo").unwrap();
    let _ = step!(t, con, cached.shorten("RedisGuide.com"));
    let _ = step!(t, con, cached.shorten("RedisGuide.com"));
    let _ = step!(t, con, cached.restore("2CH"));

    t.note("custom slugs; a slug made of base62 digits is skipped by shorten");
    let none = LinkOptions::new();
    let _ = step!(t, con, shorty.claim("2CI", "slug.example", none));
    let _ = step!(t, con, shorty.claim("2CI", "other.example", none));
    let _ = step!(t, con, shorty.shorten("next.example"));
    let _ = step!(
        t,
        con,
        shorty.claim("spring-sale", "shop.example/sale", none)
    );

    t.note("a link for 2 visits, and one for 100 ms");
    let twice = LinkOptions::new().max_visits(2);
    let _ = step!(t, con, shorty.claim("twice", "once-more.example", twice));
    let _ = step!(t, con, shorty.visit("twice"));
    let _ = step!(t, con, shorty.visit("twice"));
    let _ = step!(t, con, shorty.visit("twice"));
    let _ = step!(t, con, shorty.restore("twice"));
    let _ = step!(t, con, shorty.visits("twice"));
    let _ = step!(t, con, shorty.claim("twice", "reused.example", none));
    let _ = step!(t, con, shorty.visits("twice"));
    let brief = LinkOptions::new().ttl(Duration::from_millis(100));
    let _ = step!(t, con, shorty.claim("brief", "gone-soon.example", brief));
    let brief_id = shorty
        .shorten_with("gone-soon-too.example", brief)
        .in_mode()
        .run(con)
        .unwrap();
    t.step(
        "shorty.shorten_with(\"gone-soon-too.example\", brief)",
        Ok::<_, Error>(&brief_id),
    )
    .unwrap();
    let _ = step!(t, con, shorty.visit("brief"));
    let _ = step!(t, con, shorty.visits("brief"));
    harness::wait_server(con, Duration::from_millis(100));
    t.note("wait 100 ms: both links expired");
    let _ = step!(t, con, shorty.restore("brief"));
    let _ = step!(t, con, shorty.visit("brief"));
    let _ = step!(t, con, shorty.visits("brief"));
    let _ = step!(t, con, shorty.purge(10));
    let _ = step!(t, con, shorty.restore(&brief_id));
    let _ = step!(t, con, shorty.purge(10));
    let _ = step!(t, con, shorty.claim("brief", "back.example", none));
    redis::cmd("DEL").arg(&shorty.keys()).exec(con).unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("short_url");
    let mut con = db.con();
    assert_snapshot(
        "short_url__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "short_url__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// The scripts' base62 is the Rust one: the counter set to n - 1, shorten gives base62(n).
#[test]
fn base62_in_the_script_matches_rust() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let shorty = UrlShorty::new();
    assert_eq!(shorty.keys()[0], "{UrlShorty}:id_counter");
    for n in [
        1u64,
        9,
        10,
        35,
        36,
        61,
        62,
        3843,
        3844,
        10086,
        238_327,
        1 << 40,
        (1 << 53) - 2,
    ] {
        harness::cmd(&mut con, &["SET", shorty.keys()[0], &(n - 1).to_string()]);
        assert_eq!(shorty.shorten("u").run(&mut con).unwrap(), base62(n), "{n}");
    }
    assert_eq!(base62(u64::MAX), "lYGhA16ahyf");
}

/// 16 clients shorten the same 50 URLs at once with the cache: each URL gets one id. 16
/// clients shorten 50 URLs each without it: every id is new.
#[test]
fn the_cache_gives_one_id_per_url_under_contention() {
    let db = harness::fresh_db();
    let shorty = UrlShorty::with_name("busy").unwrap();
    let ids: Vec<Vec<(usize, String)>> = thread::scope(|scope| {
        let clients: Vec<_> = (0..16)
            .map(|c| {
                let (db, shorty) = (&db, &shorty);
                scope.spawn(move || {
                    let mut con = db.con();
                    (0..50)
                        .map(|i| (i * 7 + c * 3) % 50)
                        .map(|u| {
                            (
                                u,
                                shorty
                                    .shorten_cached(&format!("https://x/{u}"))
                                    .run(&mut con)
                                    .unwrap(),
                            )
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        clients.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let mut by_url = std::collections::BTreeMap::new();
    for (url, id) in ids.into_iter().flatten() {
        let first = by_url.entry(url).or_insert_with(|| id.clone());
        assert_eq!(*first, id, "URL {url} got two ids");
    }
    assert_eq!(by_url.len(), 50);
    let distinct: BTreeSet<_> = by_url.values().collect();
    assert_eq!(distinct.len(), 50);

    let fresh: Vec<String> = thread::scope(|scope| {
        let clients: Vec<_> = (0..16)
            .map(|_| {
                let (db, shorty) = (&db, &shorty);
                scope.spawn(move || {
                    let mut con = db.con();
                    (0..50)
                        .map(|_| shorty.shorten("https://same").run(&mut con).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        clients
            .into_iter()
            .flat_map(|c| c.join().unwrap())
            .collect()
    });
    let distinct: BTreeSet<_> = fresh.iter().collect();
    assert_eq!(distinct.len(), 800, "shorten gave an id twice");
    assert!(distinct.iter().all(|id| !by_url.values().any(|v| v == *id)));
}

/// 16 clients claim the same 20 slugs: each slug is won once. A link that allows 25
/// visits, visited 5 times by each of 16 clients: exactly 25 visits get the URL, and the
/// count stops there.
#[test]
fn slugs_are_won_once_and_visit_limits_hold_under_contention() {
    let db = harness::fresh_db();
    let shorty = UrlShorty::with_name("race").unwrap();
    let wins: usize = thread::scope(|scope| {
        let clients: Vec<_> = (0..16)
            .map(|c| {
                let (db, shorty) = (&db, &shorty);
                scope.spawn(move || {
                    let mut con = db.con();
                    (0..20)
                        .filter(|s| {
                            let url = format!("https://client/{c}");
                            shorty
                                .claim(&format!("s{s}"), &url, LinkOptions::new())
                                .run(&mut con)
                                .unwrap()
                        })
                        .count()
                })
            })
            .collect();
        clients.into_iter().map(|c| c.join().unwrap()).sum()
    });
    assert_eq!(wins, 20);

    let mut con = db.con();
    assert!(
        shorty
            .claim("limited", "https://l", LinkOptions::new().max_visits(25))
            .run(&mut con)
            .unwrap()
    );
    let served: usize = thread::scope(|scope| {
        let clients: Vec<_> = (0..16)
            .map(|_| {
                let (db, shorty) = (&db, &shorty);
                scope.spawn(move || {
                    let mut con = db.con();
                    (0..5)
                        .filter(|_| shorty.visit("limited").run(&mut con).unwrap().is_some())
                        .count()
                })
            })
            .collect();
        clients.into_iter().map(|c| c.join().unwrap()).sum()
    });
    assert_eq!(served, 25);
    assert_eq!(shorty.visits("limited").run(&mut con).unwrap(), 25);
}

/// Ids held by custom slugs are skipped, up to 1000 in a row per call; past that the call
/// answers IDS_TAKEN with the counter moved on, and the next call goes on from there.
#[test]
fn shorten_skips_ids_that_slugs_hold() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let shorty = UrlShorty::with_name("slugs").unwrap();
    for slug in ["1", "2", "3"] {
        assert!(
            shorty
                .claim(slug, "https://vanity", LinkOptions::new())
                .run(&mut con)
                .unwrap()
        );
    }
    assert_eq!(shorty.shorten("https://a").run(&mut con).unwrap(), "4");
    let links = shorty.keys()[1];
    let mut fill = redis::cmd("HSET");
    fill.arg(links);
    for n in 5..=1004 {
        fill.arg(base62(n)).arg("https://vanity");
    }
    fill.exec(&mut con).unwrap();
    assert_code(shorty.shorten("https://b").run(&mut con), "IDS_TAKEN");
    let counter: u64 = redis::cmd("GET")
        .arg(shorty.keys()[0])
        .query(&mut con)
        .unwrap();
    assert_eq!(counter, 1004);
    assert_eq!(
        shorty.shorten("https://b").run(&mut con).unwrap(),
        base62(1005)
    );
    assert_eq!(
        shorty
            .restore(&base62(1005))
            .run(&mut con)
            .unwrap()
            .as_deref(),
        Some("https://b")
    );
}

/// Bad input is refused before any I/O, or by the script with its declared code; either
/// way nothing changes.
#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let shorty = UrlShorty::with_name("bad").unwrap();
    shorty.shorten("https://kept").run(&mut con).unwrap();
    let broken = UrlShorty::with_name("broken").unwrap();
    harness::cmd(&mut con, &["SET", broken.keys()[0], "abc"]);
    let before = harness::dump(&mut con);

    for name in ["", "a}b"] {
        assert_invalid(UrlShorty::with_name(name), "name");
        assert_invalid(UrlShortyWithCache::with_name(name), "name");
    }
    let none = LinkOptions::new();
    assert_invalid(shorty.shorten("").run(&mut con), "url");
    assert_invalid(shorty.shorten_cached("").run(&mut con), "url");
    assert_invalid(
        shorty
            .shorten_with("u", none.ttl(Duration::ZERO))
            .run(&mut con),
        "ttl",
    );
    assert_invalid(
        shorty.shorten_with("u", none.max_visits(0)).run(&mut con),
        "max_visits",
    );
    let long = "a".repeat(65);
    for slug in ["", "a b", "a/b", "ü", long.as_str()] {
        assert_invalid(shorty.claim(slug, "u", none).run(&mut con), "slug");
    }
    assert_invalid(shorty.claim("ok", "", none).run(&mut con), "url");
    assert_invalid(
        shorty
            .claim("ok", "u", none.ttl(Duration::ZERO))
            .run(&mut con),
        "ttl",
    );
    for op in [shorty.restore(""), shorty.visit("")] {
        assert_invalid(op.run(&mut con), "id");
    }
    assert_invalid(shorty.visits("").run(&mut con), "id");
    for limit in [0, 101] {
        assert_invalid(shorty.purge(limit).run(&mut con), "limit");
    }
    assert_code(broken.shorten("u").run(&mut con), "BAD_COUNTER");
    assert_code(broken.shorten_cached("u").run(&mut con), "BAD_COUNTER");

    // Raw calls, as another language makes them.
    let [counter, links, _, expiries, limits, visits] = shorty.keys();
    let link_keys = [links, expiries, limits, visits];
    for slug in ["a b", "é", &"x".repeat(65), "a.b"] {
        assert_code(
            harness::eval(&mut con, &script::CLAIM, &link_keys, &[slug, "u", "", ""]),
            "BAD_SLUG",
        );
    }
    let shorten_keys = [counter, links, expiries, limits];
    assert_code(
        harness::eval(&mut con, &script::SHORTEN, &shorten_keys, &["u", "0", ""]),
        "BAD_TTL",
    );
    assert_code(
        harness::eval(&mut con, &script::SHORTEN, &shorten_keys, &["u", "", "0"]),
        "BAD_MAX_VISITS",
    );
    assert_eq!(harness::dump(&mut con), before);
}

/// 300 links expire; 8 clients purge them 10 at a time, at once, while another reads them:
/// each link is deleted exactly once, and no read gets an expired link's URL.
#[test]
fn purge_deletes_each_expired_link_once_under_contention() {
    let db = harness::fresh_db();
    let shorty = UrlShorty::with_name("purged").unwrap();
    let mut con = db.con();
    let brief = LinkOptions::new().ttl(Duration::from_millis(20));
    let ids: Vec<String> = (0..300)
        .map(|i| {
            shorty
                .shorten_with(&format!("https://gone/{i}"), brief)
                .run(&mut con)
                .unwrap()
        })
        .collect();
    let kept = shorty.shorten("https://kept").run(&mut con).unwrap();
    harness::wait_server(&mut con, Duration::from_millis(20));
    let deleted: u64 = thread::scope(|scope| {
        let purgers: Vec<_> = (0..8)
            .map(|_| {
                let (db, shorty) = (&db, &shorty);
                scope.spawn(move || {
                    let mut con = db.con();
                    let mut total = 0;
                    loop {
                        let n = shorty.purge(10).run(&mut con).unwrap();
                        if n == 0 {
                            return total;
                        }
                        total += n;
                    }
                })
            })
            .collect();
        let visitor = {
            let (db, shorty, ids) = (&db, &shorty, &ids);
            scope.spawn(move || {
                let mut con = db.con();
                for id in ids {
                    assert_eq!(shorty.restore(id).run(&mut con).unwrap(), None, "{id}");
                }
            })
        };
        visitor.join().unwrap();
        purgers.into_iter().map(|p| p.join().unwrap()).sum()
    });
    let expiries: u64 = redis::cmd("ZCARD")
        .arg(shorty.keys()[3])
        .query(&mut con)
        .unwrap();
    let links: u64 = redis::cmd("HLEN")
        .arg(shorty.keys()[1])
        .query(&mut con)
        .unwrap();
    assert_eq!((expiries, links), (0, 1));
    assert_eq!(deleted, 300);
    assert_eq!(
        shorty.restore(&kept).run(&mut con).unwrap().as_deref(),
        Some("https://kept")
    );
}
