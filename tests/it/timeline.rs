use std::thread;

use redis_patterns::scripts::timeline as script;
use redis_patterns::timeline::Timeline;

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

const T0: u64 = 1_700_000_000_000;

/// The book's example (entries at 100 to 500, the last two in one add, which the book
/// drops), then the cookbook's deletes, and a maximum length.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let timeline = Timeline::new("timeline").unwrap();
    let _ = step!(t, con, timeline.add(&[(100, "a")]));
    let _ = step!(t, con, timeline.add(&[(200, "b"), (300, "c")]));
    let _ = step!(t, con, timeline.add(&[(400, "d"), (500, "e")]));
    let _ = step!(t, con, timeline.length());
    let _ = step!(t, con, timeline.number(2));
    let _ = step!(t, con, timeline.get::<String>(1, 2));
    let _ = step!(t, con, timeline.get::<String>(3, 2));
    let _ = step!(t, con, timeline.get::<String>(4, 2));
    let _ = step!(t, con, timeline.get_with_time::<String>(1, 3));
    let _ = step!(t, con, timeline.get_by_time_range::<String>(150, 450, 1, 2));
    let _ = step!(t, con, timeline.get_by_time_range::<String>(150, 450, 2, 2));
    let _ = step!(t, con, timeline.add(&[(600, "a")]));
    t.note("an item added again moves to its new time");
    let _ = step!(t, con, timeline.get_with_time::<String>(1, 2));
    let _ = step!(t, con, timeline.delete(&["b", "nothing"]));
    let _ = step!(t, con, timeline.delete_by_time_range(0, 450, 1));
    let _ = step!(t, con, timeline.delete_by_time_range(0, 450, 10));
    let _ = step!(t, con, timeline.delete_by_time_range(0, 450, 10));
    let _ = step!(t, con, timeline.get_with_time::<String>(1, 10));

    let capped = Timeline::new("timeline:capped")
        .unwrap()
        .with_max_length(3)
        .unwrap();
    let _ = step!(
        t,
        con,
        capped.add(&[(T0, "1"), (T0 + 1, "2"), (T0 + 2, "3"), (T0 + 3, "4")])
    );
    let _ = step!(t, con, capped.add(&[(T0 - 1, "0")]));
    t.note("an entry older than all the kept ones is trimmed at once");
    let _ = step!(t, con, capped.get::<String>(1, 10));
    redis::cmd("DEL")
        .arg(&[timeline.key(), capped.key()])
        .exec(con)
        .unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("timeline");
    let mut con = db.con();
    assert_snapshot("timeline__scenario", &scenario(&mut recorder.con(&mut con)));
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("timeline__scenario", &scenario(&mut harness::cluster_con()));
}

/// 8 clients add 100 batches of 5 entries each, at once, to a timeline that keeps 200:
/// it never holds more than 200 after an add, and keeps exactly the 200 newest of all.
#[test]
fn a_capped_timeline_keeps_the_newest_under_concurrent_adds() {
    let db = harness::fresh_db();
    let timeline = Timeline::new("timeline:busy")
        .unwrap()
        .with_max_length(200)
        .unwrap();
    thread::scope(|scope| {
        for c in 0..8u64 {
            let (db, timeline) = (&db, &timeline);
            scope.spawn(move || {
                let mut con = db.con();
                for b in 0..100u64 {
                    let items: Vec<String> = (0..5).map(|i| format!("c{c}b{b}i{i}")).collect();
                    let entries: Vec<(u64, &str)> = items
                        .iter()
                        .enumerate()
                        // Distinct times across clients: time = (batch * 5 + i) * 8 + client.
                        .map(|(i, item)| ((b * 5 + i as u64) * 8 + c, item.as_str()))
                        .collect();
                    let added = timeline.add(&entries).run(&mut con).unwrap();
                    assert!(added.length <= 200, "{added:?}");
                }
            });
        }
    });
    let mut con = db.con();
    let kept = timeline
        .get_with_time::<String>(1, 1000)
        .run(&mut con)
        .unwrap();
    let times: Vec<u64> = kept.iter().map(|(_, time)| *time).collect();
    let expected: Vec<u64> = (4000 - 200..4000).rev().collect();
    assert_eq!(times, expected);
}

/// A range of 2,500 entries is deleted 1000 at a time, in three calls, the last of which
/// says nothing remains; the entries outside it stay.
#[test]
fn a_time_range_is_deleted_in_bounded_steps() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let timeline = Timeline::new("timeline:big").unwrap();
    let items: Vec<String> = (0..3000).map(|i| format!("i{i}")).collect();
    for chunk in items.chunks(1000).enumerate() {
        let (c, chunk) = chunk;
        let entries: Vec<(u64, &str)> = chunk
            .iter()
            .enumerate()
            .map(|(i, item)| ((c * 1000 + i) as u64, item.as_str()))
            .collect();
        timeline.add(&entries).run(&mut con).unwrap();
    }
    let mut calls = Vec::new();
    loop {
        let deleted = timeline
            .delete_by_time_range(250, 2749, 1000)
            .run(&mut con)
            .unwrap();
        calls.push((deleted.deleted, deleted.more));
        if !deleted.more {
            break;
        }
    }
    assert_eq!(calls, [(1000, true), (1000, true), (500, false)]);
    assert_eq!(timeline.length().run(&mut con).unwrap(), 500);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    assert_invalid(Timeline::new(""), "key");
    let timeline = Timeline::new("timeline:bad").unwrap();
    assert_invalid(timeline.clone().with_max_length(0), "max_length");
    timeline.add(&[(1, "a")]).run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    assert_invalid(timeline.add::<&str>(&[]).run(&mut con), "entries");
    assert_invalid(
        timeline.add(&[(1_000_000_000_000_000, "x")]).run(&mut con),
        "entries",
    );
    let many: Vec<(u64, &str)> = (0..1001).map(|i| (i, "x")).collect();
    assert_invalid(timeline.add(&many).run(&mut con), "entries");
    assert_invalid(timeline.get::<String>(0, 10).run(&mut con), "page");
    assert_invalid(timeline.get::<String>(1, 0).run(&mut con), "size");
    assert_invalid(
        timeline.get_with_time::<String>(u64::MAX, 10).run(&mut con),
        "page",
    );
    assert_invalid(
        timeline
            .get_by_time_range::<String>(0, 1_000_000_000_000_000, 1, 10)
            .run(&mut con),
        "max",
    );
    assert_invalid(timeline.number(0).run(&mut con), "size");
    assert_invalid(timeline.delete::<&str>(&[]).run(&mut con), "items");
    assert_invalid(
        timeline.delete_by_time_range(0, 10, 0).run(&mut con),
        "limit",
    );
    assert_invalid(
        timeline.delete_by_time_range(0, 10, 1001).run(&mut con),
        "limit",
    );
    // Raw calls, as another language makes them.
    for time in ["-1", "1.5", "1e3", "007", " 5", "1000000000000000", "x"] {
        assert_code(
            harness::eval(&mut con, &script::ADD, &[timeline.key()], &["", time, "x"]),
            "BAD_ENTRIES",
        );
    }
    assert_code(
        harness::eval(
            &mut con,
            &script::ADD,
            &[timeline.key()],
            &["", "1", "x", "2"],
        ),
        "BAD_ENTRIES",
    );
    assert_code(
        harness::eval(&mut con, &script::ADD, &[timeline.key()], &["0", "1", "x"]),
        "BAD_MAX_LENGTH",
    );
    assert_eq!(harness::dump(&mut con), before);
}

/// Items are bytes: non-UTF-8 items are added, paged, found by time, deleted one by one
/// and by time range, byte for byte, and the sorted set holds their exact bytes; reading
/// one as `String` fails and changes nothing.
#[test]
fn binary_items_round_trip() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let (a, b): (&[u8], &[u8]) = (b"\xff\x00a", b"\xfe\r\nb");
    let timeline = Timeline::new("timeline:bin").unwrap();
    let added = timeline
        .add(&[(100, a), (200, b), (300, &b"plain"[..])])
        .run(&mut con)
        .unwrap();
    assert_eq!(added.length, 3);
    let newest: Vec<Vec<u8>> = timeline.get(1, 2).run(&mut con).unwrap();
    assert_eq!(newest, [&b"plain"[..], b]);
    let timed: Vec<(Vec<u8>, u64)> = timeline.get_with_time(2, 2).run(&mut con).unwrap();
    assert_eq!(timed, [(a.to_vec(), 100)]);
    let range: Vec<(Vec<u8>, u64)> = timeline
        .get_by_time_range(100, 200, 1, 10)
        .run(&mut con)
        .unwrap();
    assert_eq!(range, [(b.to_vec(), 200), (a.to_vec(), 100)]);
    let stored: Vec<(Vec<u8>, u64)> = harness::zset_with_scores(&mut con, timeline.key());
    assert_eq!(
        stored,
        [
            (a.to_vec(), 100),
            (b.to_vec(), 200),
            (b"plain".to_vec(), 300)
        ]
    );
    harness::assert_undecodable_changes_nothing(&mut con, |c| timeline.get::<String>(1, 10).run(c));
    assert_eq!(timeline.delete(&[b, b"\xfe"]).run(&mut con).unwrap(), 1);
    let deleted = timeline
        .delete_by_time_range(0, 100, 10)
        .run(&mut con)
        .unwrap();
    assert_eq!((deleted.deleted, deleted.more), (1, false));
    let left: Vec<String> = timeline.get(1, 10).run(&mut con).unwrap();
    assert_eq!(left, ["plain"]);
}
