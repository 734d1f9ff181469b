use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use redis_patterns::pagination::{PageCursor, Paging};
use redis_patterns::scripts::pagination as script;

use crate::harness::{self, InMode, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The book's example (items 1 to 7, pages of 3), then a cursor reader that an item
/// added between its pages does not disturb, where an offset reader sees an item twice.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let paging = Paging::new("pages").unwrap();
    let _ = step!(t, con, paging.add(&["1", "2", "3", "4", "5", "6", "7"]));
    let _ = step!(t, con, paging.length());
    let _ = step!(t, con, paging.number(3));
    let _ = step!(t, con, paging.get::<String>(1, 3));
    let _ = step!(t, con, paging.get::<String>(2, 3));
    let _ = step!(t, con, paging.get::<String>(3, 3));
    let _ = step!(t, con, paging.get::<String>(4, 3));

    let first = step!(t, con, paging.first_page::<String>(3)).unwrap();
    let _ = step!(t, con, paging.add(&["8"]));
    t.note("an item arrived after the first page");
    let _ = step!(t, con, paging.get::<String>(2, 3));
    let second = step!(t, con, paging.page_after::<String>(first.next.unwrap(), 3)).unwrap();
    let third = step!(t, con, paging.page_after::<String>(second.next.unwrap(), 3)).unwrap();
    assert_eq!(third.next, None);
    let _ = step!(t, con, paging.first_page::<String>(100));
    let _ = step!(t, con, paging.number(3));
    paging.clear().in_mode().run(con).unwrap();
    let _ = step!(t, con, paging.first_page::<String>(3));
    let _ = step!(t, con, paging.number(3));
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("pagination");
    let mut con = db.con();
    assert_snapshot(
        "pagination__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "pagination__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// 4 clients add items as fast as they can while a reader pages through with cursors,
/// pages of 7: the reader sees each of the 2,000 items that were there when it started,
/// exactly once and newest first, and nothing else but newer items on its first page.
/// The adds start once the first page is read, and land amid the rest; in the end the
/// count of items added is the list's length: no add lost its number.
#[test]
fn cursor_pages_never_shift_under_concurrent_adds() {
    let db = harness::fresh_db();
    let paging = Paging::new("pages:busy").unwrap();
    let mut con = db.con();
    let old: Vec<String> = (0..2000).map(|i| format!("old{i:04}")).collect();
    for chunk in old.chunks(1000) {
        paging.add(chunk).run(&mut con).unwrap();
    }
    let done = AtomicBool::new(false);
    let (adds, first_read) = (AtomicU64::new(0), AtomicU64::new(0));
    let seen = thread::scope(|scope| {
        for c in 0..4 {
            let (db, paging, done, adds, first_read) = (&db, &paging, &done, &adds, &first_read);
            scope.spawn(move || {
                let mut con = db.con();
                harness::wait_for_count(first_read, 1, "the first page");
                let mut i = 0;
                while !done.load(Ordering::Relaxed) {
                    paging.add(&[format!("new{c}:{i}")]).run(&mut con).unwrap();
                    adds.fetch_add(1, Ordering::SeqCst);
                    i += 1;
                }
            });
        }
        let mut page = paging.first_page::<String>(7).run(&mut con).unwrap();
        let mut seen = page.items.clone();
        first_read.store(1, Ordering::SeqCst);
        harness::wait_for_a_whole_turn(&adds, 4, "an add amid the pages");
        while let Some(cursor) = page.next {
            page = paging.page_after(cursor, 7).run(&mut con).unwrap();
            seen.extend(page.items.iter().cloned());
        }
        done.store(true, Ordering::Relaxed);
        seen
    });
    let from_old: Vec<&String> = seen.iter().filter(|s| s.starts_with("old")).collect();
    let expected: Vec<&String> = old.iter().rev().collect();
    assert_eq!(
        from_old, expected,
        "an old item was missed, doubled or out of order"
    );
    // Items added during the read can only be on the first page.
    assert!(seen[7..].iter().all(|s| s.starts_with("old")));
    let length = paging.length().run(&mut con).unwrap();
    assert!(length > 2000, "no item was added meanwhile");
    let added: u64 = redis::cmd("GET")
        .arg(paging.added_key())
        .query(&mut con)
        .unwrap();
    assert_eq!(added, length, "an add lost its number");
}

/// The defect this replaced: counted from the tail, a cursor taken after the first page
/// of 10 items read that first page again once the list was trimmed to 4.
#[test]
fn a_trim_at_the_tail_never_shows_an_item_twice() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let paging = Paging::new("pages:trimmed").unwrap();
    let items: Vec<String> = (1..=10).map(|i| i.to_string()).collect();
    paging.add(&items).run(&mut con).unwrap();
    let first = paging.first_page::<String>(3).run(&mut con).unwrap();
    assert_eq!(first.items, ["10", "9", "8"]);
    assert_eq!(first.next.unwrap().number(), 7);
    let ltrim = |con: &mut redis::Connection, stop: i64| {
        redis::cmd("LTRIM")
            .arg(paging.key())
            .arg(0)
            .arg(stop)
            .exec(con)
            .unwrap()
    };
    // Two of the unread items are trimmed away: the reader goes on with the rest.
    ltrim(&mut con, 7);
    let next = paging
        .page_after::<String>(first.next.unwrap(), 3)
        .run(&mut con)
        .unwrap();
    assert_eq!(next.items, ["7", "6", "5"]);
    assert_eq!(next.next.unwrap().number(), 4);
    // Down to 4 items, all of them read: the next page is empty, and the last.
    ltrim(&mut con, 3);
    let cursor: PageCursor = next.next.unwrap().to_string().parse().unwrap();
    let last = paging
        .page_after::<String>(cursor, 3)
        .run(&mut con)
        .unwrap();
    assert_eq!((last.items, last.next), (vec![], None));
    // The case: 10 items, a first page, a trim to 4, then the cursor.
    paging.clear().run(&mut con).unwrap();
    paging.add(&items).run(&mut con).unwrap();
    let first = paging.first_page::<String>(3).run(&mut con).unwrap();
    ltrim(&mut con, 3);
    let next = paging
        .page_after::<String>(first.next.unwrap(), 3)
        .run(&mut con)
        .unwrap();
    assert_eq!((next.items, next.next), (vec!["7".to_string()], None));
    // A cursor past the newest item (the keys were deleted and begun again) ends too.
    paging.clear().run(&mut con).unwrap();
    paging.add(&["a"]).run(&mut con).unwrap();
    let stale = paging
        .page_after::<String>("5".parse().unwrap(), 3)
        .run(&mut con)
        .unwrap();
    assert_eq!((stale.items, stale.next), (vec![], None));
}

/// A list filled by LPUSH alone is read as if its oldest item were number 1, and its
/// first `add` counts it from there on.
#[test]
fn a_list_filled_by_lpush_is_numbered_from_its_oldest_item() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let paging = Paging::new("pages:old").unwrap();
    redis::cmd("LPUSH")
        .arg(paging.key())
        .arg(&["a", "b", "c"])
        .exec(&mut con)
        .unwrap();
    let first = paging.first_page::<String>(2).run(&mut con).unwrap();
    assert_eq!(
        (first.items, first.next.unwrap().number()),
        (vec!["c".into(), "b".into()], 1)
    );
    assert_eq!(paging.add(&["d"]).run(&mut con).unwrap(), 4);
    let added: u64 = redis::cmd("GET")
        .arg(paging.added_key())
        .query(&mut con)
        .unwrap();
    assert_eq!(added, 4);
    let next = paging
        .page_after::<String>(first.next.unwrap(), 2)
        .run(&mut con)
        .unwrap();
    assert_eq!((next.items, next.next), (vec!["a".to_string()], None));
}

/// 2 clients add items and a third trims the list to its newest 50 again and again, while
/// a reader pages through with cursors, pages of 7, 30 times over: it never sees an item
/// twice, and each writer's items come newest first. Each read starts after a trim, and
/// waits for another one on its way, so trims land amid every read.
#[test]
fn cursor_pages_never_repeat_an_item_under_concurrent_adds_and_trims() {
    let db = harness::fresh_db();
    let paging = Paging::new("pages:capped").unwrap();
    let mut con = db.con();
    let seed: Vec<String> = (0..200).map(|i| format!("seed{i}")).collect();
    paging.add(&seed).run(&mut con).unwrap();
    let done = AtomicBool::new(false);
    let trims = AtomicU64::new(0);
    thread::scope(|scope| {
        for c in 0..2 {
            let (db, paging, done) = (&db, &paging, &done);
            scope.spawn(move || {
                let mut con = db.con();
                let mut i = 0u64;
                while !done.load(Ordering::Relaxed) {
                    paging.add(&[format!("{c}:{i:08}")]).run(&mut con).unwrap();
                    i += 1;
                }
            });
        }
        {
            let (db, paging, done, trims) = (&db, &paging, &done, &trims);
            scope.spawn(move || {
                let mut con = db.con();
                while !done.load(Ordering::Relaxed) {
                    redis::cmd("LTRIM")
                        .arg(paging.key())
                        .arg(0)
                        .arg(49)
                        .exec(&mut con)
                        .unwrap();
                    trims.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
        for _ in 0..30 {
            harness::wait_for_a_whole_turn(&trims, 1, "a trim before the read");
            let started = trims.load(Ordering::SeqCst);
            let mut page = paging.first_page::<String>(7).run(&mut con).unwrap();
            let mut seen = page.items.clone();
            let mut waited = false;
            while let Some(cursor) = page.next {
                if !waited {
                    harness::wait_for_count(&trims, started + 1, "a trim amid the read");
                    waited = true;
                }
                page = paging.page_after(cursor, 7).run(&mut con).unwrap();
                seen.extend(page.items.iter().cloned());
            }
            let mut unique = seen.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), seen.len(), "an item was seen twice: {seen:?}");
            // Each writer's items arrive in order, so a reader meets them in reverse.
            for c in 0..2 {
                let mine: Vec<&String> = seen
                    .iter()
                    .filter(|s| s.starts_with(&format!("{c}:")))
                    .collect();
                assert!(
                    mine.windows(2).all(|w| w[0] > w[1]),
                    "out of order: {mine:?}"
                );
            }
        }
        done.store(true, Ordering::Relaxed);
    });
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    assert_invalid(Paging::new(""), "key");
    let paging = Paging::new("pages:bad").unwrap();
    paging.add(&["a", "b"]).run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    assert_invalid(paging.get::<String>(0, 10).run(&mut con), "page");
    assert_invalid(paging.get::<String>(1, 0).run(&mut con), "size");
    assert_invalid(paging.get::<String>(u64::MAX, 10).run(&mut con), "page");
    assert_invalid(paging.number(0).run(&mut con), "size");
    assert_invalid(paging.first_page::<String>(0).run(&mut con), "size");
    assert_invalid(paging.first_page::<String>(1001).run(&mut con), "size");
    assert_invalid(paging.add::<&str>(&[]).run(&mut con), "items");
    let too_many: Vec<String> = (0..1001).map(|i| i.to_string()).collect();
    assert_invalid(paging.add(&too_many).run(&mut con), "items");
    for cursor in ["", "0", "-1", "007", "+5", "1e3", "x", "1000000000000000"] {
        assert_invalid(cursor.parse::<PageCursor>(), "cursor");
    }
    // Raw calls, as another language makes them.
    for cursor in ["0", "-1", "1.5", " 5"] {
        assert_code(
            harness::eval(
                &mut con,
                &script::PAGE,
                &[paging.key(), paging.added_key()],
                &[cursor, "10"],
            ),
            "BAD_CURSOR",
        );
    }
    assert_code(
        harness::eval(
            &mut con,
            &script::PAGE,
            &[paging.key(), paging.added_key()],
            &["", "1001"],
        ),
        "BAD_SIZE",
    );
    assert_eq!(harness::dump(&mut con), before);
}
