use std::collections::HashSet;
use std::sync::Arc;
use std::thread;

use redis_patterns::compact_string::CompactString;

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// Items as text for the transcript; bytes that are not UTF-8 (a cut character) show as
/// U+FFFD.
fn text(items: Vec<Vec<u8>>) -> redis_patterns::Result<Vec<String>> {
    Ok(items
        .iter()
        .map(|item| String::from_utf8_lossy(item).into_owned())
        .collect())
}

/// The book's example (chapter 11): HTTP response lines packed in one string and read
/// back by byte range, `(0, 20)` giving the first line and a cut `Serve`.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let log = CompactString::new("compact_string:log").unwrap();
    let _ = step!(t, con, log.get_all().map(text));
    let _ = step!(t, con, log.append("HTTP/1.1 200 OK"));
    let _ = step!(t, con, log.append("Server: nginx/1.21.5"));
    let _ = step!(t, con, log.append("Content-Type: text/html"));
    let _ = step!(t, con, log.get_bytes(0, 20).map(text));
    let _ = step!(t, con, log.get_all().map(text));
    let _ = step!(t, con, log.get_bytes(16, 36).map(text));
    let _ = step!(t, con, log.get_bytes(15, 37).map(text));
    let _ = step!(t, con, log.get_bytes(15, 15).map(text));
    let _ = step!(t, con, log.get_bytes(-10, -1).map(text));
    let _ = step!(t, con, log.get_bytes(100, 200).map(text));
    let _ = step!(t, con, log.get_bytes(20, 10).map(text));

    t.note("the book's bugs are refused: an item with the separator, an empty item");
    let _ = step!(t, con, log.append("two\nlines"));
    let _ = step!(t, con, log.append(""));

    t.note("a range that cuts a multi-byte UTF-8 character: bytes, no panic");
    let utf8 = CompactString::new("compact_string:utf8").unwrap();
    let _ = step!(t, con, utf8.append("日志"));
    let _ = step!(t, con, utf8.append("记录"));
    let _ = step!(t, con, utf8.get_bytes(0, 4));
    let _ = step!(t, con, utf8.get_bytes(0, 4).map(text));
    let _ = step!(t, con, utf8.get_bytes(8, -1).map(text));

    t.note("another separator, two bytes long");
    let csv = CompactString::with_separator("compact_string:csv", ";;").unwrap();
    let _ = step!(t, con, csv.append("a;b"));
    let _ = step!(t, con, csv.append("c"));
    let _ = step!(t, con, csv.append("d;"));
    let _ = step!(t, con, csv.get_all().map(text));
    let _ = step!(t, con, csv.get_bytes(4, 5).map(text));

    redis::cmd("DEL")
        .arg(log.key())
        .arg(utf8.key())
        .arg(csv.key())
        .exec(con)
        .unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("compact_string");
    let mut con = db.con();
    assert_snapshot(
        "compact_string__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "compact_string__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// No script here (each operation is one command), but appends never interleave: 8
/// clients × 100 appends of distinct items read back as exactly those 800 items, whole,
/// and the lengths the appends return are all different.
#[test]
fn concurrent_appends_keep_every_item_whole() {
    let db = Arc::new(harness::fresh_db());
    let clients: Vec<_> = (0..8)
        .map(|c| {
            let db = db.clone();
            thread::spawn(move || {
                let mut con = db.con();
                let log = CompactString::new("log").unwrap();
                (0..100)
                    .map(|i| {
                        log.append(format!("client {c} line {i} ünïcödé"))
                            .run(&mut con)
                            .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let lengths: Vec<u64> = clients
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    assert_eq!(lengths.iter().collect::<HashSet<_>>().len(), 800);
    let items = CompactString::new("log")
        .unwrap()
        .get_all()
        .run(&mut db.con())
        .unwrap();
    let expected: HashSet<Vec<u8>> = (0..8)
        .flat_map(|c| (0..100).map(move |i| format!("client {c} line {i} ünïcödé").into_bytes()))
        .collect();
    assert_eq!(items.len(), 800);
    assert_eq!(items.into_iter().collect::<HashSet<_>>(), expected);
    assert_eq!(*lengths.iter().max().unwrap(), {
        let total: usize = expected.iter().map(|item| item.len() + 1).sum();
        total as u64
    });
}

/// The key and separator are checked where the string is built, and named.
#[test]
fn constructors_refuse_bad_settings() {
    assert_invalid(CompactString::new(""), "key");
    assert_invalid(CompactString::with_separator("", ";"), "key");
    assert_invalid(CompactString::with_separator("log", ""), "separator");
    assert_invalid(
        CompactString::with_separator("log", Vec::<u8>::new()),
        "separator",
    );
    let nul = CompactString::with_separator("log", [0u8]).unwrap();
    assert_eq!(nul.separator(), b"\0");
}

/// Items and separators are bytes: non-UTF-8 ones (here with a NUL and a CR LF) go in
/// through `append` and come back unchanged through every read.
#[test]
fn binary_items_round_trip() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let bin = harness::NOT_UTF8;
    let log = CompactString::with_separator("bin", b"\xff\x00|").unwrap();
    let len = bin.len() as u64 + 3;
    assert_eq!(log.append(bin).run(&mut con).unwrap(), len);
    assert_eq!(log.append(bin.to_vec()).run(&mut con).unwrap(), 2 * len);
    assert_eq!(log.append(42).run(&mut con).unwrap(), 2 * len + 5);
    assert_eq!(
        log.get_all().run(&mut con).unwrap(),
        vec![bin.to_vec(), bin.to_vec(), b"42".to_vec()]
    );
    assert_eq!(
        log.get_bytes(0, len as i64 - 1).run(&mut con).unwrap(),
        vec![bin.to_vec()]
    );
    // The framing holds for bytes too: an item may not hold the separator.
    assert_invalid(log.append(b"a\xff\x00|b").run(&mut con), "item");
    assert_invalid(log.append(b"\xff\x00|").run(&mut con), "item");
    // NOT_UTF8 ends with "\r\n\x80": the book's "\n" separator cannot frame it.
    let lines = CompactString::new("bin:lines").unwrap();
    assert_invalid(lines.append(bin).run(&mut con), "item");

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut a = db.multiplexed().await;
        // NOT_UTF8 holds "\r\n", so the book's "\n" separator would refuse it.
        let lines = CompactString::with_separator("bin:async", b"\xff\x00|").unwrap();
        lines.append(bin).run_async(&mut a).await.unwrap();
        let items = lines.get_all().run_async(&mut a).await.unwrap();
        assert_eq!(items, vec![bin.to_vec()]);
    });
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["APPEND", "log", "kept\n"]);
    harness::cmd(&mut con, &["SADD", "a:set", "x"]);
    let before = harness::dump(&mut con);

    let log = CompactString::new("log").unwrap();
    assert_invalid(log.append("").run(&mut con), "item");
    assert_invalid(log.append("a\nb").run(&mut con), "item");
    assert_invalid(log.append("trailing\n").run(&mut con), "item");
    assert_invalid(log.append("\n").run(&mut con), "item");
    let pairs = CompactString::with_separator("log", ";;").unwrap();
    assert_invalid(pairs.append("a;;b").run(&mut con), "item");
    assert_invalid(pairs.append("a;").run(&mut con), "item");
    assert_invalid(pairs.append(";").run(&mut con), "item");
    // An item is one value: a slice of several, or none, is refused.
    assert_invalid(log.append(["a", "b"].as_slice()).run(&mut con), "item");
    assert_invalid(log.append(Vec::<String>::new()).run(&mut con), "item");

    let set = CompactString::new("a:set").unwrap();
    assert_code(set.append("a").run(&mut con), "WRONGTYPE");
    assert_code(set.get_all().run(&mut con), "WRONGTYPE");

    assert_eq!(harness::dump(&mut con), before);
    assert_eq!(log.get_all().run(&mut con).unwrap(), vec![b"kept".to_vec()]);
}
