use std::thread;
use std::time::Duration;

use redis_patterns::Error;
use redis_patterns::geo::{Location, UNKNOWN_MEMBER};
use redis_patterns::scripts::geo as script;

use crate::harness::{self, InMode, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::server::RedisProcess;
use crate::step;

/// The book's people, a few metres to a few km apart (chapter 25).
const PEOPLE: [(&str, f64, f64); 5] = [
    ("peter", 113.2099647, 23.593675),
    ("jack", 113.2099100, 23.593600),
    ("tom", 113.2098000, 23.593500),
    ("mary", 113.2150000, 23.596000),
    ("far", 113.3000000, 23.700000),
];

fn pin_people(con: &mut dyn redis::ConnectionLike, places: &Location) {
    for (who, lon, lat) in PEOPLE {
        places.pin(who, lon, lat).run(con).unwrap();
    }
}

/// `x` to `digits` decimals, as a snapshot shows it.
fn round(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

/// Rounds distances so that a snapshot reads them to the metre.
fn metres(found: Vec<(String, f64)>) -> Vec<(String, u64)> {
    found
        .into_iter()
        .map(|(who, km)| (who, (km * 1000.0).round() as u64))
        .collect()
}

/// The book's calls, then what it lacks: the member never takes a place in `limit`, an
/// unknown member is a typed answer, "no neighbours" is cached, and pins that expire.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let places = Location::new("geo:places").unwrap();
    pin_people(con, &places);
    t.note("pinned peter, jack, tom (within 30 m), mary (570 m) and far (15 km)");
    let _ = step!(t, con, places.size());
    let at = places
        .locate("peter")
        .in_mode()
        .run(con)
        .map(|p| p.map(|(lon, lat)| (round(lon, 4), round(lat, 4))));
    t.step("places.locate(\"peter\") to 4 decimals", at)
        .unwrap();
    let _ = step!(t, con, places.locate("nobody"));
    let km = places
        .distance("peter", "mary")
        .in_mode()
        .run(con)
        .map(|d| d.map(|km| round(km, 3)));
    t.step("places.distance(\"peter\", \"mary\") to the metre", km)
        .unwrap();
    let _ = step!(t, con, places.distance("peter", "nobody"));
    let _ = step!(
        t,
        con,
        places.search("peter", 1.0, 2).map(|f| Ok(metres(f)))
    );
    let _ = step!(
        t,
        con,
        places.search("peter", 1.0, 10).map(|f| Ok(metres(f)))
    );
    let _ = step!(
        t,
        con,
        places.search("peter", 50.0, 10).map(|f| Ok(metres(f)))
    );
    let _ = step!(t, con, places.search("nobody", 1.0, 10));
    let _ = step!(t, con, places.random_neighbour("far", 10));
    let _ = step!(t, con, places.cached_random_neighbour("far", 10));
    let _ = step!(t, con, places.cached_random_neighbour("far", 10));
    let cache = places.cache_key("far").unwrap();
    let members: Vec<String> = redis::cmd("ZRANGE")
        .arg(&cache)
        .arg(0)
        .arg(-1)
        .query(con)
        .unwrap();
    t.step(
        "ZRANGE {geo:places}:neighbours:far 0 -1 (\"no neighbours\", cached)",
        Ok::<_, Error>(members),
    )
    .unwrap();
    let shaken = places
        .cached_random_neighbour("peter", 2)
        .in_mode()
        .run(con)
        .unwrap()
        .unwrap();
    t.step(
        "cached_random_neighbour(\"peter\", 2) is jack or tom",
        Ok::<_, Error>(["jack", "tom"].contains(&shaken.as_str())),
    )
    .unwrap();
    let _ = step!(t, con, places.cached_random_neighbour("nobody", 10));

    t.note("tom is seen for 100 ms only");
    let _ = step!(
        t,
        con,
        places.pin_for("tom", 113.2098, 23.5935, Duration::from_millis(100))
    );
    harness::wait_server(con, Duration::from_millis(100));
    t.note("wait 100 ms: tom's pin expired");
    let _ = step!(t, con, places.size());
    let _ = step!(t, con, places.locate("tom"));
    let _ = step!(
        t,
        con,
        places.search("peter", 1.0, 10).map(|f| Ok(metres(f)))
    );
    let _ = step!(t, con, places.search("tom", 1.0, 10));
    let _ = step!(t, con, places.purge(10));
    let _ = step!(t, con, places.purge(10));
    let _ = step!(t, con, places.pin("tom", 113.2098, 23.5935));
    let _ = step!(t, con, places.size());
    let keys = [
        places.key().to_string(),
        places.deadlines_key().to_string(),
        cache,
        places.cache_key("peter").unwrap(),
    ];
    redis::cmd("DEL").arg(&keys).exec(con).unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("geo");
    let mut con = db.con();
    assert_snapshot("geo__scenario", &scenario(&mut recorder.con(&mut con)));
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("geo__scenario", &scenario(&mut harness::cluster_con()));
}

/// How many GEOSEARCHes the server has run (inside scripts too).
fn searches(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    info.lines()
        .find(|line| line.starts_with("cmdstat_geosearch:"))
        .and_then(|line| line.split("calls=").nth(1)?.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

/// 16 clients ask for peter's and far's cached neighbour 20 times each at once: one
/// search per member per miss, the lonely member's "none" included; once the cache has
/// expired, one more each.
#[test]
fn the_neighbour_cache_computes_once_per_miss() {
    let server = RedisProcess::start(&[]);
    let mut con = server.connection();
    let places = Location::new("shake")
        .unwrap()
        .with_cache_ttl(Duration::from_millis(500))
        .unwrap();
    pin_people(&mut con, &places);
    let round = |con: &mut redis::Connection| {
        let before = searches(con);
        let answers: Vec<(Option<String>, Option<String>)> = thread::scope(|scope| {
            let clients: Vec<_> = (0..16)
                .map(|_| {
                    let (server, places) = (&server, &places);
                    scope.spawn(move || {
                        let mut con = server.connection();
                        (0..20)
                            .map(|_| {
                                let near = places
                                    .cached_random_neighbour("peter", 10)
                                    .run(&mut con)
                                    .unwrap();
                                let lonely = places
                                    .cached_random_neighbour("far", 10)
                                    .run(&mut con)
                                    .unwrap();
                                (near, lonely)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            clients
                .into_iter()
                .flat_map(|c| c.join().unwrap())
                .collect()
        });
        for (near, lonely) in &answers {
            assert!(
                matches!(near.as_deref(), Some("jack" | "tom" | "mary")),
                "{near:?}"
            );
            assert_eq!(*lonely, None);
        }
        searches(con) - before
    };
    assert_eq!(round(&mut con), 2);
    harness::wait_server(&mut con, Duration::from_millis(500));
    assert_eq!(round(&mut con), 2);
}

/// Bad input is refused before any I/O, or by the script with its declared code; either
/// way nothing changes.
#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let places = Location::new("bad").unwrap();
    pin_people(&mut con, &places);
    let before = harness::dump(&mut con);

    for key in ["", "a}b"] {
        assert_invalid(Location::new(key), "key");
    }
    assert_invalid(places.clone().with_cache_ttl(Duration::ZERO), "ttl");
    for (lon, lat, what) in [
        (180.5, 0.0, "longitude"),
        (-181.0, 0.0, "longitude"),
        (f64::NAN, 0.0, "longitude"),
        (0.0, 85.1, "latitude"),
        (0.0, f64::INFINITY, "latitude"),
    ] {
        assert_invalid(places.pin("x", lon, lat).run(&mut con), what);
    }
    assert_invalid(places.pin("", 0.0, 0.0).run(&mut con), "member");
    assert_invalid(
        places.pin_for("x", 0.0, 0.0, Duration::ZERO).run(&mut con),
        "ttl",
    );
    for radius in [0.0, -1.0, 20_038.0, f64::NAN] {
        assert_invalid(places.search("peter", radius, 10).run(&mut con), "radius");
    }
    for limit in [0, 1001] {
        assert_invalid(places.search("peter", 1.0, limit).run(&mut con), "limit");
        assert_invalid(
            places.cached_random_neighbour("peter", limit).run(&mut con),
            "limit",
        );
        assert_invalid(places.purge(limit).run(&mut con), "limit");
    }
    assert_invalid(places.locate("").run(&mut con), "member");
    assert_invalid(places.distance("", "peter").run(&mut con), "x");
    assert_code(
        places.search("nobody", 1.0, 10).run(&mut con),
        UNKNOWN_MEMBER,
    );
    assert_code(
        places.random_neighbour("nobody", 10).run(&mut con),
        UNKNOWN_MEMBER,
    );
    assert_code(
        places.cached_random_neighbour("nobody", 10).run(&mut con),
        UNKNOWN_MEMBER,
    );

    // Raw calls, as another language makes them.
    let keys = [places.key(), places.deadlines_key()];
    for lon in ["180.1", "-180.0001", "1e3", "nan", "0x10", " 5"] {
        assert_code(
            harness::eval(&mut con, &script::PIN, &keys, &["x", lon, "0", ""]),
            "BAD_LONGITUDE",
        );
    }
    assert_code(
        harness::eval(&mut con, &script::PIN, &keys, &["x", "0", "85.06", ""]),
        "BAD_LATITUDE",
    );
    for radius in ["0", "-1", "20037.6", "inf"] {
        assert_code(
            harness::eval(&mut con, &script::SEARCH, &keys, &["peter", radius, "10"]),
            "BAD_RADIUS",
        );
    }
    assert_eq!(harness::dump(&mut con), before);
}

/// 8 clients pin 50 members each for good and 50 for a while, at once; once those expired
/// (their deadlines moved to the past), 8 clients purge at once: each expired pin is
/// deleted exactly once, the 400 lasting pins are left, and no deadline.
#[test]
fn pins_and_purges_under_contention_leave_exactly_the_lasting_pins() {
    let db = harness::fresh_db();
    let places = Location::new("crowd").unwrap();
    let a_while = Duration::from_secs(600);
    thread::scope(|scope| {
        for c in 0..8 {
            let (db, places) = (&db, &places);
            scope.spawn(move || {
                let mut con = db.con();
                for i in 0..50 {
                    let (lon, lat) = (113.0 + i as f64 * 0.001, 23.0 + c as f64 * 0.001);
                    places
                        .pin(&format!("stay:{c}:{i}"), lon, lat)
                        .run(&mut con)
                        .unwrap();
                    places
                        .pin_for(&format!("go:{c}:{i}"), lon, lat, a_while)
                        .run(&mut con)
                        .unwrap();
                }
            });
        }
    });
    let mut con = db.con();
    assert_eq!(places.size().run(&mut con).unwrap(), 800);
    let expire_all = "for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do redis.call('ZADD', KEYS[1], 1, m) end";
    let _: () = redis::cmd("EVAL")
        .arg(expire_all)
        .arg(1)
        .arg(places.deadlines_key())
        .query(&mut con)
        .unwrap();
    assert_eq!(places.size().run(&mut con).unwrap(), 400);
    let purged: u64 = thread::scope(|scope| {
        let purgers: Vec<_> = (0..8)
            .map(|_| {
                let (db, places) = (&db, &places);
                scope.spawn(move || {
                    let mut con = db.con();
                    let mut total = 0;
                    loop {
                        match places.purge(10).run(&mut con).unwrap() {
                            0 => return total,
                            n => total += n,
                        }
                    }
                })
            })
            .collect();
        purgers.into_iter().map(|p| p.join().unwrap()).sum()
    });
    let members: Vec<String> = redis::cmd("ZRANGE")
        .arg(places.key())
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    assert_eq!(members.len(), 400);
    assert!(members.iter().all(|m| m.starts_with("stay:")));
    let deadlines: u64 = redis::cmd("ZCARD")
        .arg(places.deadlines_key())
        .query(&mut con)
        .unwrap();
    assert_eq!(deadlines, 0);
    assert_eq!(purged, 400);
}
