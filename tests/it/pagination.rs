use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use redis_patterns::pagination::{PageCursor, Paging};
use redis_patterns::scripts::pagination as script;

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
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
    redis::cmd("DEL").arg(paging.key()).exec(con).unwrap();
    let _ = step!(t, con, paging.first_page::<String>(3));
    let _ = step!(t, con, paging.number(3));
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let mut con = db.con();
    assert_snapshot("pagination__scenario", &scenario(&mut con));
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
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
#[test]
fn cursor_pages_never_shift_under_concurrent_adds() {
    let db = harness::fresh_db();
    let paging = Paging::new("pages:busy").unwrap();
    let mut con = db.con();
    let old: Vec<String> = (0..2000).map(|i| format!("old{i}")).collect();
    paging.add(&old).run(&mut con).unwrap();
    let done = AtomicBool::new(false);
    let seen = thread::scope(|scope| {
        for c in 0..4 {
            let (db, paging, done) = (&db, &paging, &done);
            scope.spawn(move || {
                let mut con = db.con();
                let mut i = 0;
                while !done.load(Ordering::Relaxed) {
                    paging.add(&[format!("new{c}:{i}")]).run(&mut con).unwrap();
                    i += 1;
                }
            });
        }
        let mut page = paging.first_page::<String>(7).run(&mut con).unwrap();
        let mut seen = page.items.clone();
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
    assert!(
        paging.length().run(&mut con).unwrap() > 2000,
        "no item was added meanwhile"
    );
}

#[test]
fn a_cursor_past_a_trimmed_tail_reads_on_from_the_oldest_item() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let paging = Paging::new("pages:trimmed").unwrap();
    paging
        .add(&["a", "b", "c", "d", "e"])
        .run(&mut con)
        .unwrap();
    let first = paging.first_page::<String>(2).run(&mut con).unwrap();
    assert_eq!(first.items, ["e", "d"]);
    assert_eq!(first.next.unwrap().remaining(), 3);
    redis::cmd("LTRIM")
        .arg(paging.key())
        .arg(0)
        .arg(2)
        .exec(&mut con)
        .unwrap();
    let next = paging
        .page_after::<String>(first.next.unwrap(), 2)
        .run(&mut con)
        .unwrap();
    assert_eq!(next.items, ["e", "d"], "all that is left, oldest last");
    assert_eq!(next.next.unwrap().remaining(), 1);
    let cursor: PageCursor = next.next.unwrap().to_string().parse().unwrap();
    let last = paging
        .page_after::<String>(cursor, 2)
        .run(&mut con)
        .unwrap();
    assert_eq!((last.items, last.next), (vec!["c".to_string()], None));
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
    for cursor in ["", "0", "-1", "007", "+5", "1e3", "x", "1000000000000000"] {
        assert_invalid(cursor.parse::<PageCursor>(), "cursor");
    }
    // Raw calls, as another language makes them.
    for cursor in ["0", "-1", "1.5", " 5"] {
        assert_code(
            harness::eval(&mut con, &script::PAGE, &[paging.key()], &[cursor, "10"]),
            "BAD_CURSOR",
        );
    }
    assert_code(
        harness::eval(&mut con, &script::PAGE, &[paging.key()], &["", "1001"]),
        "BAD_SIZE",
    );
    assert_eq!(harness::dump(&mut con), before);
}
