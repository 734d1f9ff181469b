use std::collections::{BTreeMap, BTreeSet};
use std::thread;
use std::time::Duration;

use redis_patterns::Error;
use redis_patterns::online_friends::{LastSeen, MinuteSets};
use redis_patterns::scripts::online_friends as script;

use crate::harness::{self, InMode, Rng, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// 2023-11-14 22:13:20 UTC: minute 13 of its hour.
const T0: u64 = 1_700_000_000_000;
const MINUTE: u64 = 60_000;

fn sorted(users: redis_patterns::Result<Vec<String>>) -> redis_patterns::Result<Vec<String>> {
    users.map(|mut u| {
        u.sort();
        u
    })
}

/// Both designs on the book's example: peter's friends are jack, tom and mary; jack is
/// seen at minute 13, tom at 15, mary at 5 (outside a 3-minute window).
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let minutes = MinuteSets::new("online:site")
        .unwrap()
        .with_window(3)
        .unwrap();
    let _ = step!(
        t,
        con,
        minutes.add_friends("peter", &["jack", "tom", "mary"])
    );
    t.step(
        "minutes.minute_key(13)",
        Ok::<_, Error>(minutes.minute_key(13)),
    )
    .unwrap();
    let _ = step!(t, con, minutes.visit_at("jack", T0));
    let _ = step!(t, con, minutes.visit_at("jack", T0 + 1000));
    let _ = step!(t, con, minutes.visit_at("tom", T0 + 2 * MINUTE));
    let _ = step!(t, con, minutes.visit_at("mary", T0 - 8 * MINUTE));
    let _ = step!(t, con, minutes.visit_at("bob", T0 + 2 * MINUTE));
    t.step(
        "minutes.online_users_at(minute 15)",
        sorted(minutes.online_users_at(T0 + 2 * MINUTE).in_mode().run(con)),
    )
    .unwrap();
    t.step(
        "minutes.online_friends_at(\"peter\", minute 15)",
        sorted(
            minutes
                .online_friends_at("peter", T0 + 2 * MINUTE)
                .in_mode()
                .run(con),
        ),
    )
    .unwrap();
    t.step(
        "minutes.online_friends_at(\"peter\", minute 16)",
        sorted(
            minutes
                .online_friends_at("peter", T0 + 3 * MINUTE)
                .in_mode()
                .run(con),
        ),
    )
    .unwrap();
    let _ = step!(t, con, minutes.online_friends_at("nobody", T0));

    let seen = LastSeen::new("online:site")
        .unwrap()
        .with_window(Duration::from_secs(180))
        .unwrap();
    let _ = step!(t, con, seen.visit_at("jack", T0));
    let _ = step!(t, con, seen.visit_at("tom", T0 + 2 * MINUTE));
    let _ = step!(t, con, seen.visit_at("tom", T0));
    t.note("tom's late visit at minute 13 does not move him back");
    let _ = step!(t, con, seen.visit_at("mary", T0 - 8 * MINUTE));
    let _ = step!(t, con, seen.online_users_at(T0 + 2 * MINUTE));
    t.step(
        "seen.online_friends_at(\"peter\", minute 15)",
        sorted(
            seen.online_friends_at("peter", T0 + 2 * MINUTE)
                .in_mode()
                .run(con),
        ),
    )
    .unwrap();
    t.step(
        "seen.online_friends_at(\"peter\", minute 16:01)",
        sorted(
            seen.online_friends_at("peter", T0 + 3 * MINUTE + 1000)
                .in_mode()
                .run(con),
        ),
    )
    .unwrap();
    let mut keys: Vec<String> = (0..60).map(|m| minutes.minute_key(m)).collect();
    keys.push(seen.seen_key().to_owned());
    keys.push(seen.friends_key("peter").unwrap());
    redis::cmd("DEL").arg(&keys).exec(con).unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("online_friends");
    let mut con = db.con();
    assert_snapshot(
        "online_friends__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "online_friends__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// 8 clients record 300 visits each, at once, of 50 users at random times within 5
/// minutes; then each user's online friends, by both designs at several moments, match a
/// model of the visits.
#[test]
fn online_friends_match_a_model_under_concurrent_visits() {
    let db = harness::fresh_db();
    let minutes = MinuteSets::new("model").unwrap().with_window(2).unwrap();
    let seen = LastSeen::new("model")
        .unwrap()
        .with_window(Duration::from_secs(90))
        .unwrap();
    let mut con = db.con();
    let mut rng = Rng::new(7);
    let mut friends: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for u in 0..50 {
        let list: BTreeSet<String> = (0..10).map(|_| format!("u{}", rng.below(50))).collect();
        let list: Vec<String> = list.into_iter().collect();
        let refs: Vec<&str> = list.iter().map(String::as_str).collect();
        minutes
            .add_friends(&format!("u{u}"), &refs)
            .run(&mut con)
            .unwrap();
        friends.insert(format!("u{u}"), list);
    }
    let visits: Vec<(String, u64)> = thread::scope(|scope| {
        let clients: Vec<_> = (0..8)
            .map(|c| {
                let (db, minutes, seen) = (&db, &minutes, &seen);
                scope.spawn(move || {
                    let mut con = db.con();
                    let mut rng = Rng::new(c + 100);
                    (0..300)
                        .map(|_| {
                            let user = format!("u{}", rng.below(50));
                            let at = T0 + rng.below(5 * MINUTE);
                            minutes.visit_at(&user, at).run(&mut con).unwrap();
                            seen.visit_at(&user, at).run(&mut con).unwrap();
                            (user, at)
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
    for at in [T0 + MINUTE, T0 + 3 * MINUTE + 500, T0 + 5 * MINUTE] {
        let minute = at / MINUTE;
        for (user, list) in &friends {
            let in_minutes = |f: &String| {
                visits
                    .iter()
                    .any(|(u, v)| u == f && (minute - 1..=minute).contains(&(v / MINUTE)))
            };
            let latest = |f: &String| visits.iter().filter(|(u, _)| u == f).map(|(_, v)| *v).max();
            let mut model_a: Vec<String> = list.iter().filter(|f| in_minutes(f)).cloned().collect();
            let mut model_b: Vec<String> = list
                .iter()
                .filter(|f| latest(f).is_some_and(|v| v + 90_000 >= at))
                .cloned()
                .collect();
            model_a.sort();
            model_b.sort();
            assert_eq!(
                sorted(minutes.online_friends_at(user, at).run(&mut con)).unwrap(),
                model_a,
                "a: {user} at {at}"
            );
            assert_eq!(
                sorted(seen.online_friends_at(user, at).run(&mut con)).unwrap(),
                model_b,
                "b: {user} at {at}"
            );
        }
    }
}

/// Each visit forgets up to 100 users not seen for `keep`.
/// The book's two queries of design b disagree on a user seen exactly `window` ago;
/// here the online users and the online friends agree: it is online, a millisecond
/// later it is not.
#[test]
fn both_queries_of_last_seen_agree_on_the_window_s_edge() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let seen = LastSeen::new("edge")
        .unwrap()
        .with_window(Duration::from_secs(600))
        .unwrap();
    seen.add_friends("peter", &["jack"]).run(&mut con).unwrap();
    seen.visit_at("jack", T0).run(&mut con).unwrap();
    let edge = T0 + 600_000;
    for (at, online) in [(edge - 1, true), (edge, true), (edge + 1, false)] {
        let users = seen.online_users_at(at).run(&mut con).unwrap();
        let friends = seen.online_friends_at("peter", at).run(&mut con).unwrap();
        assert_eq!(users.contains(&"jack".to_string()), online, "users at {at}");
        assert_eq!(
            friends.contains(&"jack".to_string()),
            online,
            "friends at {at}"
        );
    }
}

#[test]
fn last_seen_is_trimmed_in_bounded_steps() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let seen = LastSeen::new("trim")
        .unwrap()
        .with_keep(Duration::from_millis(1000))
        .unwrap();
    for u in 0..250 {
        seen.visit_at(&format!("old{u}"), T0).run(&mut con).unwrap();
    }
    let count = |con: &mut redis::Connection| -> u64 {
        redis::cmd("ZCARD").arg(seen.seen_key()).query(con).unwrap()
    };
    assert_eq!(count(&mut con), 250);
    seen.visit_at("new", T0 + 5000).run(&mut con).unwrap();
    assert_eq!(count(&mut con), 151);
    seen.visit_at("new", T0 + 5000).run(&mut con).unwrap();
    seen.visit_at("new", T0 + 5000).run(&mut con).unwrap();
    assert_eq!(count(&mut con), 1);
}

/// Bad input is refused before any I/O, or by the script with its declared code; either
/// way nothing changes.
#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let minutes = MinuteSets::new("bad").unwrap();
    let seen = LastSeen::new("bad").unwrap();
    // One friend more than each design takes: 1,001 for design b, 301 for design a.
    let crowd: Vec<String> = (0..1001).map(|i| format!("f{i}")).collect();
    let crowd: Vec<&str> = crowd.iter().map(String::as_str).collect();
    minutes
        .add_friends("popular", &crowd)
        .run(&mut con)
        .unwrap();
    minutes
        .add_friends("liked", &crowd[..301])
        .run(&mut con)
        .unwrap();
    let before = harness::dump(&mut con);

    for ns in ["", "a}b"] {
        assert_invalid(MinuteSets::new(ns), "name");
        assert_invalid(LastSeen::new(ns), "name");
    }
    for window in [0, 11] {
        assert_invalid(minutes.clone().with_window(window), "minutes");
    }
    assert_invalid(seen.clone().with_window(Duration::ZERO), "window");
    assert_invalid(seen.clone().with_keep(Duration::ZERO), "keep");
    assert_invalid(minutes.visit("").run(&mut con), "user");
    assert_invalid(seen.visit("").run(&mut con), "user");
    assert_invalid(minutes.online_friends("").run(&mut con), "user");
    assert_invalid(seen.online_friends("").run(&mut con), "user");
    assert_invalid(minutes.add_friends("u", &[]).run(&mut con), "friends");
    assert_invalid(minutes.add_friends("u", &[""]).run(&mut con), "friends");
    assert_code(
        minutes.online_friends("popular").run(&mut con),
        "TOO_MANY_FRIENDS",
    );
    assert_code(
        seen.online_friends("popular").run(&mut con),
        "TOO_MANY_FRIENDS",
    );
    assert_code(
        minutes.online_friends("liked").run(&mut con),
        "TOO_MANY_FRIENDS",
    );
    let key = minutes.minute_key(0);
    for expiry in ["0", "3000001", "1e3", ""] {
        assert_code(
            harness::eval(&mut con, &script::MINUTE_VISIT, &[&key], &["u", expiry]),
            "BAD_EXPIRY",
        );
    }
    for now in ["-1", "1000000000000000", "+5"] {
        assert_code(
            harness::eval(
                &mut con,
                &script::SEEN_VISIT,
                &[seen.seen_key()],
                &["u", now, "1000"],
            ),
            "BAD_NOW",
        );
    }
    assert_eq!(harness::dump(&mut con), before);
}
