use std::collections::{BTreeMap, BTreeSet};
use std::sync::Barrier;
use std::thread;
use std::time::Duration;

use redis_patterns::scripts::tag as script;
use redis_patterns::tag::Tags;

use crate::harness::{self, Rng, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

const MINUTE: Duration = Duration::from_secs(60);

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let tags = Tags::new("books").unwrap();
    let _ = step!(
        t,
        con,
        tags.add("The C Programming Language", &["C", "programming"])
    );
    let _ = step!(
        t,
        con,
        tags.add("SICP", &["Lisp", "programming", "classic"])
    );
    let _ = step!(t, con, tags.add("SICP", &["Lisp", "Scheme"]));
    let _ = step!(
        t,
        con,
        tags.add("Redis in Action", &["NoSQL", "programming"])
    );
    let _ = step!(t, con, tags.get_tags_by_target("SICP"));
    let _ = step!(t, con, tags.get_target_by_tags(&["programming", "Lisp"]));
    let _ = step!(t, con, tags.get_target_by_tags(&["C", "Lisp"]));
    let _ = step!(t, con, tags.get_target_by_any_tag(&["C", "Lisp"]));
    let _ = step!(
        t,
        con,
        tags.get_target_by_tag_except("programming", &["Lisp", "C"])
    );
    t.step(
        "tags.cache_key(&[\"programming\", \"NoSQL\", \"programming\"])",
        tags.cache_key(&["programming", "NoSQL", "programming"]),
    )
    .unwrap();
    t.step(
        "tags.cache_key(&[\"a,b\", \"100%\"])",
        tags.cache_key(&["a,b", "100%"]),
    )
    .unwrap();
    let _ = step!(
        t,
        con,
        tags.lookup_cached(&["programming", "NoSQL"], MINUTE)
    );
    let _ = step!(
        t,
        con,
        tags.lookup_cached(&["NoSQL", "programming"], MINUTE)
    );
    let _ = step!(t, con, tags.lookup_cached(&["C", "Lisp"], MINUTE));
    let _ = step!(t, con, tags.lookup_cached(&["Lisp", "C"], MINUTE));
    t.note("the empty answer was cached: the second call did not compute");
    let _ = step!(t, con, tags.add("Redis in Action", &["Lisp"]));
    let _ = step!(
        t,
        con,
        tags.get_cached_target_by_tags(&["programming", "NoSQL"], MINUTE)
    );
    let _ = step!(t, con, tags.remove("SICP", &["classic", "nothing"]));
    let _ = step!(t, con, tags.get_tags_by_target("SICP"));
    let _ = step!(t, con, tags.get_target_by_tags(&["classic"]));
    let mut keys: Vec<String> = ["The C Programming Language", "SICP", "Redis in Action"]
        .iter()
        .map(|target| tags.target_key(target).unwrap())
        .collect();
    for tag in ["C", "programming", "Lisp", "classic", "Scheme", "NoSQL"] {
        keys.push(tags.tag_key(tag).unwrap());
    }
    keys.push(tags.cache_key(&["programming", "NoSQL"]).unwrap());
    keys.push(tags.cache_key(&["C", "Lisp"]).unwrap());
    redis::cmd("DEL").arg(&keys).exec(con).unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("tag");
    let mut con = db.con();
    assert_snapshot("tag__scenario", &scenario(&mut recorder.con(&mut con)));
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("tag__scenario", &scenario(&mut harness::cluster_con()));
}

/// 8 clients add and remove random tags of 30 targets, at once: afterwards a target has
/// a tag exactly when the tag lists the target.
#[test]
fn the_two_directions_never_disagree() {
    let db = harness::fresh_db();
    let tags = Tags::new("storm").unwrap();
    let names: Vec<String> = (0..10).map(|t| format!("t{t}")).collect();
    thread::scope(|scope| {
        for c in 0..8 {
            let (db, tags, names) = (&db, &tags, &names);
            scope.spawn(move || {
                let mut con = db.con();
                let mut rng = Rng::new(c);
                for _ in 0..300 {
                    let target = format!("x{}", rng.below(30));
                    let picked: Vec<&str> = (0..1 + rng.below(3))
                        .map(|_| names[rng.below(10) as usize].as_str())
                        .collect();
                    if rng.below(2) == 0 {
                        tags.add(&target, &picked).run(&mut con).unwrap();
                    } else {
                        tags.remove(&target, &picked).run(&mut con).unwrap();
                    }
                }
            });
        }
    });
    let mut con = db.con();
    let mut by_target: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for x in 0..30 {
        let target = format!("x{x}");
        let has = tags.get_tags_by_target(&target).run(&mut con).unwrap();
        by_target.insert(target, has);
    }
    let mut pairs = 0;
    for tag in &names {
        let listed = tags.get_target_by_tags(&[tag]).run(&mut con).unwrap();
        for (target, has) in &by_target {
            assert_eq!(
                listed.contains(target),
                has.contains(tag),
                "{target} and {tag} disagree"
            );
            pairs += usize::from(has.contains(tag));
        }
    }
    assert!(pairs > 0);
}

/// 16 clients ask for the same uncached intersection at the same moment: exactly one
/// computes it, and all get the same answer.
#[test]
fn concurrent_misses_compute_once() {
    let db = harness::fresh_db();
    let tags = Tags::new("cache").unwrap();
    let mut con = db.con();
    for i in 0..200 {
        let target = format!("b{i}");
        let picked: &[&str] = if i % 2 == 0 {
            &["even", "all"]
        } else {
            &["all"]
        };
        tags.add(&target, picked).run(&mut con).unwrap();
    }
    for round in 0..5 {
        redis::cmd("DEL")
            .arg(tags.cache_key(&["even", "all"]).unwrap())
            .exec(&mut con)
            .unwrap();
        let barrier = Barrier::new(16);
        let answers: Vec<(bool, BTreeSet<String>)> = thread::scope(|scope| {
            let clients: Vec<_> = (0..16)
                .map(|c| {
                    let (db, tags, barrier) = (&db, &tags, &barrier);
                    scope.spawn(move || {
                        let mut con = db.con();
                        let order: &[&str] = if c % 2 == 0 {
                            &["even", "all"]
                        } else {
                            &["all", "even"]
                        };
                        barrier.wait();
                        tags.lookup_cached(order, MINUTE).run(&mut con).unwrap()
                    })
                })
                .collect();
            clients.into_iter().map(|c| c.join().unwrap()).collect()
        });
        let computed = answers.iter().filter(|(computed, _)| *computed).count();
        assert_eq!(computed, 1, "round {round}: {computed} computations");
        assert!(
            answers
                .iter()
                .all(|(_, a)| a.len() == 100 && *a == answers[0].1)
        );
    }
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    for namespace in ["", "a}b"] {
        assert_invalid(Tags::new(namespace), "namespace");
    }
    let tags = Tags::new("bad").unwrap();
    tags.add("book", &["a"]).run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    assert_invalid(tags.add("book", &[]).run(&mut con), "tags");
    assert_invalid(tags.add("book", &["a", ""]).run(&mut con), "tags");
    assert_invalid(tags.add("", &["a"]).run(&mut con), "target");
    let many: Vec<String> = (0..101).map(|i| format!("t{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert_invalid(tags.add("book", &many).run(&mut con), "tags");
    assert_invalid(tags.remove("book", &[]).run(&mut con), "tags");
    assert_invalid(tags.get_target_by_tags(&[]).run(&mut con), "tags");
    assert_invalid(
        tags.get_cached_target_by_tags(&many[..11], MINUTE)
            .run(&mut con),
        "tags",
    );
    assert_invalid(
        tags.get_cached_target_by_tags(&["a"], Duration::ZERO)
            .run(&mut con),
        "ttl",
    );
    // A miss over tags whose rarest has more than 1,500 targets is refused, a hit is not.
    let wide: Vec<String> = (0..1501).map(|i| format!("w{i}")).collect();
    let mut args = vec!["SADD".to_string(), tags.tag_key("wide").unwrap()];
    args.extend(wide.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    harness::cmd(&mut con, &args);
    let before_wide = harness::dump(&mut con);
    assert_code(
        tags.get_cached_target_by_tags(&["wide"], MINUTE)
            .run(&mut con),
        "TOO_BROAD",
    );
    assert_eq!(harness::dump(&mut con), before_wide);
    harness::cmd(&mut con, &["DEL", &tags.tag_key("wide").unwrap()]);
    // Raw calls, as another language makes them.
    let target = tags.target_key("book").unwrap();
    let tag_a = tags.tag_key("a").unwrap();
    assert_code(
        harness::eval(
            &mut con,
            &script::ADD,
            &[&target, &tag_a],
            &["book", "a", "b"],
        ),
        "BAD_ARGS",
    );
    assert_code(
        harness::eval(&mut con, &script::ADD, &[&target, &tag_a], &["book", ""]),
        "BAD_TAG",
    );
    assert_code(
        harness::eval(&mut con, &script::REMOVE, &[&target, &tag_a], &["", "a"]),
        "BAD_TARGET",
    );
    assert_eq!(harness::dump(&mut con), before);
}

/// A raw call of `tag/cached` answers whether it computed the answer, then the targets,
/// as two elements: `(bool, [string])`, where it answered one flat list of a flag and the
/// targets.
#[test]
fn a_raw_cached_lookup_answers_the_flag_and_the_targets_apart() {
    use redis::Value;

    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["SADD", "{t}:tag:a", "x", "y"]);
    let keys = ["{t}:cached:a", "{t}:tag:a"];
    let targets = |reply: &Value| -> BTreeSet<Vec<u8>> {
        let Value::Array(items) = reply else {
            panic!("{reply:?}")
        };
        let [_, Value::Array(targets)] = &items[..] else {
            panic!("{reply:?}")
        };
        targets
            .iter()
            .map(|t| match t {
                Value::BulkString(bytes) => bytes.clone(),
                other => panic!("{other:?}"),
            })
            .collect()
    };
    let miss = harness::eval(&mut con, &script::CACHED, &keys, &["60000"]).unwrap();
    let Value::Array(items) = &miss else {
        panic!("{miss:?}")
    };
    assert_eq!(items[0], Value::Int(1));
    assert_eq!(
        targets(&miss),
        BTreeSet::from([b"x".to_vec(), b"y".to_vec()])
    );
    let hit = harness::eval(&mut con, &script::CACHED, &keys, &["60000"]).unwrap();
    let Value::Array(items) = &hit else {
        panic!("{hit:?}")
    };
    assert_eq!(items[0], Value::Int(0));
    assert_eq!(targets(&hit), targets(&miss));
}
