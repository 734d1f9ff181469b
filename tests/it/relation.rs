use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use redis_patterns::relation::Relations;
use redis_patterns::scripts::relation as script;

use crate::harness::{self, InMode, Rng, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

fn names(
    page: redis_patterns::Result<redis_patterns::relation::Follows>,
) -> redis_patterns::Result<(Vec<String>, bool)> {
    page.map(|p| {
        (
            p.users.into_iter().map(|(u, _)| u).collect(),
            p.next.is_some(),
        )
    })
}

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let relations = Relations::new("social").unwrap();
    let _ = step!(t, con, relations.follow("peter", "jack"));
    let _ = step!(t, con, relations.follow("peter", "jack"));
    let _ = step!(t, con, relations.is_following("peter", "jack"));
    let _ = step!(t, con, relations.is_followed_by("jack", "peter"));
    let _ = step!(t, con, relations.is_following_each_other("peter", "jack"));
    let _ = step!(t, con, relations.follow("jack", "peter"));
    let _ = step!(t, con, relations.is_following_each_other("peter", "jack"));
    let _ = step!(t, con, relations.follow("peter", "peter"));
    for user in ["tom", "mary", "bob"] {
        t.step(
            &format!("relations.follow({user:?}, \"jack\")"),
            relations.follow(user, "jack").in_mode().run(con),
        )
        .unwrap();
    }
    let _ = step!(t, con, relations.followers_count("jack"));
    let _ = step!(t, con, relations.following_count("peter"));
    let first = relations
        .followers("jack", None, 2)
        .in_mode()
        .run(con)
        .unwrap();
    t.step(
        "relations.followers(\"jack\", None, 2): users, and whether a cursor follows",
        names(Ok(first.clone())),
    )
    .unwrap();
    let second = relations
        .followers("jack", first.next, 2)
        .in_mode()
        .run(con);
    t.step(
        "relations.followers(\"jack\", cursor, 2)",
        names(second.clone()),
    )
    .unwrap();
    let times: Vec<u64> = first
        .users
        .iter()
        .chain(second.unwrap().users.iter())
        .map(|(_, at)| *at)
        .collect();
    t.step(
        "the four followers' times: distinct, newest first",
        Ok::<_, redis_patterns::Error>(times.windows(2).all(|w| w[0] > w[1])),
    )
    .unwrap();
    let _ = step!(t, con, relations.unfollow("peter", "jack"));
    let _ = step!(t, con, relations.unfollow("peter", "jack"));
    let _ = step!(t, con, relations.is_following("peter", "jack"));
    let _ = step!(t, con, relations.is_followed_by("jack", "peter"));
    let _ = step!(t, con, relations.followers_count("jack"));
    let mut keys = Vec::new();
    for user in ["peter", "jack", "tom", "mary", "bob"] {
        keys.push(relations.following_key(user).unwrap());
        keys.push(relations.followers_key(user).unwrap());
    }
    redis::cmd("DEL").arg(&keys).exec(con).unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("relation");
    let mut con = db.con();
    assert_snapshot("relation__scenario", &scenario(&mut recorder.con(&mut con)));
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("relation__scenario", &scenario(&mut harness::cluster_con()));
}

/// 8 clients follow and unfollow at random among 20 users, 500 times each, at once: both
/// sides agree on every edge afterwards, each client's own last word on an edge it alone
/// touches holds, and no list ever holds two entries with one time.
#[test]
fn a_follow_storm_leaves_both_sides_consistent() {
    const USERS: u64 = 20;
    let db = harness::fresh_db();
    let relations = Relations::new("storm").unwrap();
    thread::scope(|scope| {
        for c in 0..8 {
            let (db, relations) = (&db, &relations);
            scope.spawn(move || {
                let mut con = db.con();
                let mut rng = Rng::new(c);
                for _ in 0..500 {
                    let user = format!("u{}", rng.below(USERS));
                    let target = format!("u{}", rng.below(USERS));
                    if user == target {
                        continue;
                    }
                    if rng.below(2) == 0 {
                        relations.follow(&user, &target).run(&mut con).unwrap();
                    } else {
                        relations.unfollow(&user, &target).run(&mut con).unwrap();
                    }
                }
            });
        }
    });
    let mut con = db.con();
    let mut edges = 0;
    for u in 0..USERS {
        let user = format!("u{u}");
        let following: Vec<(String, u64)> = redis::cmd("ZRANGE")
            .arg(relations.following_key(&user).unwrap())
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(&mut con)
            .unwrap();
        for (target, _) in &following {
            assert!(
                relations
                    .is_followed_by(target, &user)
                    .run(&mut con)
                    .unwrap(),
                "{user} follows {target}, but is not among its followers"
            );
        }
        let followers: Vec<(String, u64)> = redis::cmd("ZRANGE")
            .arg(relations.followers_key(&user).unwrap())
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(&mut con)
            .unwrap();
        for (follower, _) in &followers {
            assert!(
                relations
                    .is_following(follower, &user)
                    .run(&mut con)
                    .unwrap(),
                "{follower} is among {user}'s followers, but does not follow it"
            );
        }
        for list in [&following, &followers] {
            let times: BTreeSet<u64> = list.iter().map(|(_, at)| *at).collect();
            assert_eq!(times.len(), list.len(), "two entries share a time");
        }
        edges += following.len();
    }
    assert!(edges > 0);
}

/// A reader pages through 300 followers, 7 at a time, while 4 clients add new followers
/// as fast as they can: it sees each of the 300 exactly once, newest first.
#[test]
fn pages_never_skip_or_repeat_under_concurrent_follows() {
    let db = harness::fresh_db();
    let relations = Relations::new("paging").unwrap();
    let mut con = db.con();
    let old: Vec<String> = (0..300).map(|i| format!("old{i}")).collect();
    for user in &old {
        relations.follow(user, "star").run(&mut con).unwrap();
    }
    let done = AtomicBool::new(false);
    let seen = thread::scope(|scope| {
        for c in 0..4 {
            let (db, relations, done) = (&db, &relations, &done);
            scope.spawn(move || {
                let mut con = db.con();
                let mut i = 0;
                while !done.load(Ordering::Relaxed) {
                    relations
                        .follow(&format!("new{c}:{i}"), "star")
                        .run(&mut con)
                        .unwrap();
                    i += 1;
                }
            });
        }
        let mut page = relations.followers("star", None, 7).run(&mut con).unwrap();
        let mut seen = page.users.clone();
        while page.next.is_some() {
            page = relations
                .followers("star", page.next, 7)
                .run(&mut con)
                .unwrap();
            seen.extend(page.users.iter().cloned());
        }
        done.store(true, Ordering::Relaxed);
        seen
    });
    let from_old: Vec<&String> = seen
        .iter()
        .map(|(u, _)| u)
        .filter(|u| u.starts_with("old"))
        .collect();
    let expected: Vec<&String> = old.iter().rev().collect();
    assert_eq!(from_old, expected);
    assert!(seen.windows(2).all(|w| w[0].1 > w[1].1), "not newest first");
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    for namespace in ["", "a}b"] {
        assert_invalid(Relations::new(namespace), "namespace");
    }
    let relations = Relations::new("bad").unwrap();
    relations.follow("peter", "jack").run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    assert_code(
        relations.follow("peter", "peter").run(&mut con),
        "SELF_FOLLOW",
    );
    assert_invalid(relations.follow("", "jack").run(&mut con), "user");
    assert_invalid(relations.follow("peter", "").run(&mut con), "target");
    assert_invalid(relations.unfollow("", "jack").run(&mut con), "user");
    assert_invalid(
        relations.is_following_each_other("peter", "").run(&mut con),
        "other",
    );
    assert_invalid(relations.following("peter", None, 0).run(&mut con), "n");
    assert_invalid(relations.followers_count("").run(&mut con), "user");
    // Raw calls, as another language makes them.
    let keys = [
        relations.following_key("peter").unwrap(),
        relations.followers_key("jack").unwrap(),
    ];
    let keys = [keys[0].as_str(), keys[1].as_str()];
    assert_code(
        harness::eval(&mut con, &script::FOLLOW, &keys, &["", "jack"]),
        "BAD_USER",
    );
    let own = [
        relations.following_key("x").unwrap(),
        relations.followers_key("x").unwrap(),
    ];
    assert_code(
        harness::eval(&mut con, &script::FOLLOW, &[&own[0], &own[1]], &["x", "x"]),
        "SELF_FOLLOW",
    );
    assert_code(
        harness::eval(&mut con, &script::UNFOLLOW, &keys, &["peter", ""]),
        "BAD_TARGET",
    );
    assert_eq!(harness::dump(&mut con), before);
}
