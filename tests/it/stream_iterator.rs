use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use redis_patterns::stream_iterator::{
    Block, EntryId, FOREVER_SLICE, StreamEntry, XrangeIterator, XreadIterator,
};
use redis_patterns::{Error, Result};

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};

/// The cursor as text, as a transcript shows it.
fn cursor_of(reader: &XreadIterator) -> Result<Option<String>> {
    Ok(reader.cursor().map(|id| id.to_string()))
}

/// Records a call that is not an `Op`, written as in the code, with entries shown as
/// `id field=value …` (bytes that are not printable ASCII escaped, as `\xff`).
macro_rules! call {
    ($t:expr, $call:expr) => {
        $t.step(stringify!($call), show($call))
    };
}

fn show(batch: Result<Vec<StreamEntry>>) -> Result<Vec<String>> {
    batch.map(|entries| entries.iter().map(line).collect())
}

fn line(entry: &StreamEntry) -> String {
    let fields: Vec<String> = entry
        .fields
        .iter()
        .map(|(f, v)| format!("{}={}", f.escape_ascii(), v.escape_ascii()))
        .collect();
    format!("{} {}", entry.id, fields.join(" "))
}

/// The book's examples (chapter 13) on a stream of temperature readings with fixed ids:
/// the XRANGE iterator (exclusive cursor, new entries picked up, rewind), then the XREAD
/// one (with a block that times out).
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let key = "stream_iterator:temperature";
    harness::cmd(con, &["DEL", key]);
    for (id, value) in [
        ("1-1", "20"),
        ("1-2", "21"),
        ("1-3", "19"),
        ("2-1", "22"),
        ("2-2", "18"),
    ] {
        harness::cmd(con, &["XADD", key, id, "celsius", value, "room", "lab"]);
    }
    t.note("XADD 1-1, 1-2, 1-3, 2-1, 2-2 (celsius, room)");

    let mut it = XrangeIterator::new(key);
    let _ = call!(t, it.next(con, 2));
    let _ = t.step("it.cursor()", Ok::<_, Error>(it.cursor()));
    let _ = call!(t, it.next(con, 2));
    let _ = call!(t, it.next(con, 2));
    let _ = call!(t, it.next(con, 2));
    harness::cmd(con, &["XADD", key, "3-1", "celsius", "25", "room", "hall"]);
    t.note("XADD 3-1: the iterator picks it up");
    let _ = call!(t, it.next(con, 2));
    it.rewind();
    t.note("it.rewind()");
    let _ = call!(t, it.next(con, 3));
    let _ = t.step("it.rewind_to(\"2\")", it.rewind_to("2"));
    let _ = call!(t, it.next(con, 10));
    let _ = t.step("it.rewind_to(\"(1-3\")", it.rewind_to("(1-3"));
    let _ = call!(t, it.next(con, 1));
    let _ = call!(
        t,
        XrangeIterator::new("stream_iterator:missing").next(con, 10)
    );
    let _ = call!(
        t,
        XrangeIterator::new(key)
            .entries(con, 4)
            .collect::<Result<Vec<_>>>()
    );

    let mut reader = XreadIterator::new(key);
    let _ = call!(t, reader.next(con, 2, None));
    let _ = t.step("reader.cursor()", cursor_of(&reader));
    let _ = call!(t, reader.next(con, 10, None));
    let _ = call!(t, reader.next(con, 10, None));
    let _ = call!(t, reader.next(con, 10, Some(Duration::from_millis(20))));
    let _ = t.step("reader.rewind_to(\"2-2\")", reader.rewind_to("2-2"));
    let _ = call!(t, reader.next(con, 10, None));
    reader.rewind();
    t.note("reader.rewind()");
    let _ = call!(t, reader.next(con, 1, None));
    let _ = call!(
        t,
        XreadIterator::new("stream_iterator:missing").next(con, 10, None)
    );

    redis::cmd("XADD")
        .arg(key)
        .arg("4-1")
        .arg(b"raw\xff")
        .arg(b"\x00\xfe")
        .arg("room")
        .arg("lab")
        .exec(con)
        .unwrap();
    t.note("XADD 4-1 raw\\xff \\x00\\xfe room lab: a field and a value that are not UTF-8");
    let _ = t.step("it.rewind_to(\"(3-1\")", it.rewind_to("(3-1"));
    let _ = call!(t, it.next(con, 10));
    let _ = t.step("reader.rewind_to(\"3-1\")", reader.rewind_to("3-1"));
    let batch = t.step("reader.next(con, 10, None)", reader.next(con, 10, None));
    let entry = &batch.unwrap()[0];
    let _ = t.step(
        "entry.get(b\"raw\\xff\") == Some(b\"\\x00\\xfe\")",
        Ok(entry.get(b"raw\xff") == Some(&b"\x00\xfe"[..])),
    );
    let _ = t.step(
        "entry.get_str(b\"raw\\xff\")",
        Ok(entry.get_str(b"raw\xff")),
    );
    let _ = t.step("entry.get_str(\"room\")", Ok(entry.get_str("room")));
    let text: Result<Option<String>> = entry.get_as(b"raw\xff");
    let _ = t.step(
        "let text: Option<String> = entry.get_as(b\"raw\\xff\")",
        text,
    );

    // The book's cursor `$`, resolved once: the entries added from the first read on.
    let _ = t.step("reader.rewind_to(\"$\")", reader.rewind_to("$"));
    let mut live = XreadIterator::from_now(key);
    t.note("let mut live = XreadIterator::from_now(key)");
    let _ = t.step("live.cursor()", cursor_of(&live));
    let _ = call!(t, live.next(con, 10, None));
    let _ = t.step("live.cursor()", cursor_of(&live));
    harness::cmd(con, &["XADD", key, "5-1", "celsius", "23", "room", "lab"]);
    harness::cmd(con, &["XADD", key, "5-2", "celsius", "24", "room", "lab"]);
    t.note("XADD 5-1, 5-2: added between two reads");
    let _ = call!(t, live.next(con, 1, None));
    let _ = call!(t, live.next(con, 10, Block::Forever));
    live.rewind_to_now();
    t.note("live.rewind_to_now()");
    let _ = t.step("live.cursor()", cursor_of(&live));
    let _ = call!(t, live.next(con, 10, Duration::from_millis(20)));
    let _ = t.step("live.cursor()", cursor_of(&live));
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("stream_iterator");
    assert_snapshot(
        "stream_iterator__scenario",
        &scenario(&mut recorder.con(db.con())),
    );
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "stream_iterator__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// 4 producers append 300 entries each while an XRANGE reader and an XREAD reader (blocking
/// 50 ms) walk the stream: each reader sees all 1200 entries exactly once, in id order, and
/// each producer's entries in the order it added them.
#[test]
fn readers_see_every_entry_once_in_order_while_producers_append() {
    const PRODUCERS: usize = 4;
    const EACH: usize = 300;
    let db = Arc::new(harness::fresh_db());
    let key = "events";
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let db = db.clone();
            thread::spawn(move || {
                let mut con = db.con();
                for i in 0..EACH {
                    redis::cmd("XADD")
                        .arg(key)
                        .arg("*")
                        .arg("producer")
                        .arg(p)
                        .arg("n")
                        .arg(i)
                        .exec(&mut con)
                        .unwrap();
                }
            })
        })
        .collect();
    let readers: Vec<_> = [false, true]
        .into_iter()
        .map(|xread| {
            let db = db.clone();
            thread::spawn(move || {
                let mut con = db.con();
                let mut range = XrangeIterator::new(key);
                let mut read = XreadIterator::new(key);
                let mut seen = Vec::new();
                let deadline = Instant::now() + Duration::from_secs(20);
                while seen.len() < PRODUCERS * EACH && Instant::now() < deadline {
                    let batch = if xread {
                        read.next(&mut con, 37, Some(Duration::from_millis(50)))
                    } else {
                        range.next(&mut con, 37)
                    };
                    seen.extend(batch.unwrap());
                }
                // Nothing more comes after the last entry.
                let rest = if xread {
                    read.next(&mut con, 37, None)
                } else {
                    range.next(&mut con, 37)
                };
                assert!(rest.unwrap().is_empty());
                seen
            })
        })
        .collect();
    for producer in producers {
        producer.join().unwrap();
    }
    for reader in readers {
        let seen = reader.join().unwrap();
        assert_eq!(seen.len(), PRODUCERS * EACH);
        assert!(
            seen.windows(2).all(|w| w[0].id < w[1].id),
            "ids strictly increase: none twice, none out of order"
        );
        for p in 0..PRODUCERS {
            let ns: Vec<usize> = seen
                .iter()
                .filter(|e| e.get_str("producer") == Some(&p.to_string()))
                .map(|e| e.get_as::<usize>("n").unwrap().unwrap())
                .collect();
            assert_eq!(ns, (0..EACH).collect::<Vec<_>>());
        }
    }
}

#[tokio::test]
async fn async_iterators_and_long_blocks() {
    let db = harness::fresh_db();
    let mut con = db.con();
    for i in 1..=7 {
        harness::cmd(
            &mut con,
            &["XADD", "s", &format!("{i}-0"), "i", &i.to_string()],
        );
    }
    let mut multiplexed = db.multiplexed().await;
    let ids = |entries: Vec<StreamEntry>| entries.into_iter().map(|e| e.id.ms).collect::<Vec<_>>();
    let all: Vec<StreamEntry> = XrangeIterator::new("s")
        .entry_stream(&mut multiplexed, 3)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(ids(all), (1..=7).collect::<Vec<_>>());
    let mut reader = XreadIterator::new("s");
    reader.rewind_to("5").unwrap();
    let rest: Vec<StreamEntry> = reader
        .entry_stream(&mut multiplexed, 1, None)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(ids(rest), vec![6, 7]);

    // A block longer than the connection's response timeout (500 ms by default) fails on
    // the client, and leaves the cursor where it was.
    let mut reader = XreadIterator::new("s");
    reader.rewind_to("7-0").unwrap();
    // The server would answer after 10 s; the client gives up at 500 ms.
    let started = Instant::now();
    let timed_out = reader
        .next_async(&mut multiplexed, 10, Some(Duration::from_secs(10)))
        .await;
    assert!(
        matches!(&timed_out, Err(Error::ResponseTimeout { command, source })
            if command == "XREAD" && source.is_timeout()),
        "{timed_out:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(reader.cursor(), Some(EntryId::new(7, 0)));

    // A connection without a response timeout waits for the entry a producer adds.
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    let mut patient = db
        .client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap();
    let started = Instant::now();
    let producer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        harness::cmd(&mut con, &["XADD", "s", "8-0", "i", "8"]);
    });
    let fresh = reader
        .next_async(&mut patient, 10, Some(Duration::from_secs(5)))
        .await
        .unwrap();
    assert_eq!(ids(fresh), vec![8]);
    assert!(started.elapsed() >= Duration::from_millis(600));
    assert_eq!(reader.cursor(), Some(EntryId::new(8, 0)));
    producer.await.unwrap();
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["XADD", "s", "1-1", "a", "1"]);
    harness::cmd(&mut con, &["RPUSH", "a:list", "x"]);
    let before = harness::dump(&mut con);

    let mut it = XrangeIterator::new("s");
    it.rewind_to("(1-1").unwrap();
    for bad in [
        "abc",
        "(abc",
        "1-",
        "-1",
        "1-1-1",
        "+",
        "$",
        "",
        "(",
        "18446744073709551616",
    ] {
        assert_invalid(it.rewind_to(bad), "cursor");
    }
    assert_eq!(it.cursor(), "(1-1", "a refused cursor does not move it");
    assert_invalid(it.next(&mut con, 0), "count");
    assert_invalid(XrangeIterator::new("").next(&mut con, 1), "key");
    assert_code(XrangeIterator::new("a:list").next(&mut con, 1), "WRONGTYPE");
    it.rewind_to(&EntryId::MAX.to_string()).unwrap();
    assert!(it.next(&mut con, 1).unwrap().is_empty());
    it.rewind_to(&format!("({}", EntryId::MAX)).unwrap();
    assert!(it.next(&mut con, 1).unwrap().is_empty(), "past the last id");

    let mut reader = XreadIterator::new("s");
    for bad in ["abc", "$", "(1-1", "-", "1-x"] {
        assert_invalid(reader.rewind_to(bad), "cursor");
    }
    assert_eq!(reader.cursor(), Some(EntryId::MIN));
    assert_invalid(reader.next(&mut con, 0, None), "count");
    assert_invalid(reader.next(&mut con, 1, Some(Duration::ZERO)), "block");
    assert_invalid(
        reader.next(&mut con, 1, Some(Duration::from_micros(900))),
        "block",
    );
    assert_invalid(reader.next(&mut con, 1, Some(Duration::MAX)), "block");
    assert_invalid(XreadIterator::new("").next(&mut con, 1, None), "key");
    assert_code(
        XreadIterator::new("a:list").next(&mut con, 1, None),
        "WRONGTYPE",
    );
    assert_invalid(
        reader.next(&mut con, 1, Block::For(Duration::ZERO)),
        "block",
    );
    let mut live = XreadIterator::from_now("s");
    assert_invalid(live.next(&mut con, 0, Block::Forever), "count");
    assert_eq!(live.cursor(), None, "a refused read resolves nothing");
    assert_invalid(XreadIterator::from_now("").next(&mut con, 1, None), "key");
    assert_invalid(XreadIterator::from_now("").resolve(&mut con), "key");
    let mut wrong = XreadIterator::from_now("a:list");
    assert_code(wrong.next(&mut con, 1, Block::Forever), "WRONGTYPE");
    assert_code(wrong.resolve(&mut con), "WRONGTYPE");
    assert_eq!(wrong.cursor(), None);
    {
        let mut entries = XreadIterator::new("s").entries(&mut con, 0, None);
        assert_invalid(entries.next().unwrap(), "count");
        assert!(entries.next().is_none(), "the iterator ends after an error");
    }

    assert_eq!(harness::dump(&mut con), before);
}

/// XRANGE and XREAD replies decode the same under RESP3 (XREAD answers a map there), where
/// the book's parsing breaks.
#[test]
fn resp3_replies_decode_the_same() {
    let db = harness::fresh_db();
    let info = db.client.get_connection_info().clone();
    let settings = info
        .redis_settings()
        .clone()
        .set_protocol(redis::ProtocolVersion::RESP3);
    let resp3 = redis::Client::open(info.set_redis_settings(settings)).unwrap();
    let mut con = resp3.get_connection().unwrap();
    harness::cmd(&mut con, &["XADD", "s", "1-1", "a", "1", "b", "2"]);
    harness::cmd(&mut con, &["XADD", "s", "1-2", "a", "3"]);
    let expected = vec!["1-1 a=1 b=2".to_owned(), "1-2 a=3".to_owned()];

    let mut range = XrangeIterator::new("s");
    assert_eq!(show(range.next(&mut con, 10)).unwrap(), expected);
    let mut read = XreadIterator::new("s");
    assert_eq!(show(read.next(&mut con, 10, None)).unwrap(), expected);
    assert!(read.next(&mut con, 10, None).unwrap().is_empty());
    assert!(
        read.next(&mut con, 10, Some(Duration::from_millis(10)))
            .unwrap()
            .is_empty()
    );
}

/// Entries with fields and values that are not UTF-8 (and a NUL byte), beside text ones,
/// added to the stream `s`: the setup for the binary tests. Returns what each entry holds.
fn binary_entries(con: &mut dyn redis::ConnectionLike) -> Vec<StreamEntry> {
    let entries = vec![
        StreamEntry {
            id: EntryId::new(1, 1),
            fields: vec![
                (b"f\xff".to_vec(), b"v\x00\xfe".to_vec()),
                (b"text".to_vec(), b"hello".to_vec()),
            ],
        },
        StreamEntry {
            id: EntryId::new(1, 2),
            fields: vec![(b"\xc3(".to_vec(), b"\xe2\x82".to_vec())],
        },
        StreamEntry {
            id: EntryId::new(2, 0),
            fields: vec![(b"text".to_vec(), "caf\u{e9}".as_bytes().to_vec())],
        },
    ];
    for entry in &entries {
        let mut cmd = redis::cmd("XADD");
        cmd.arg("s").arg(entry.id.to_string());
        for (field, value) in &entry.fields {
            cmd.arg(field).arg(value);
        }
        cmd.exec(con).unwrap();
    }
    entries
}

/// What an entry's accessors give for fields and values that are not UTF-8.
fn assert_accessors(entries: &[StreamEntry]) {
    let first = &entries[0];
    assert_eq!(first.get(b"f\xff"), Some(&b"v\x00\xfe"[..]));
    assert_eq!(first.get_str(b"f\xff"), None, "not UTF-8");
    assert_eq!(first.get_str("text"), Some("hello"));
    assert_eq!(
        first.get_as::<Vec<u8>>(b"f\xff").unwrap(),
        Some(b"v\x00\xfe".to_vec())
    );
    assert!(first.get_as::<String>(b"f\xff").is_err());
    assert_eq!(first.get_as::<String>("missing").unwrap(), None);
    assert_eq!(entries[2].get_str("text"), Some("caf\u{e9}"));
    assert_eq!(
        format!("{first:?}"),
        r#"StreamEntry { id: 1-1, fields: {b"f\xff": b"v\x00\xfe", "text": "hello"} }"#
    );
}

/// A stream entry whose field and value are not UTF-8 reads back with its exact bytes
/// through both iterators, batch by batch and one entry at a time, under RESP2 and RESP3.
#[test]
fn binary_fields_and_values_read_back_unchanged() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let written = binary_entries(&mut con);
    let before = harness::dump(&mut con);

    let mut range = XrangeIterator::new("s");
    let mut read = range.next(&mut con, 2).unwrap();
    read.extend(range.next(&mut con, 2).unwrap());
    assert!(range.next(&mut con, 2).unwrap().is_empty());
    assert_eq!(read, written);
    assert_accessors(&read);
    let all: Vec<StreamEntry> = XrangeIterator::new("s")
        .entries(&mut con, 1)
        .collect::<Result<_>>()
        .unwrap();
    assert_eq!(all, written);

    let mut reader = XreadIterator::new("s");
    let mut read = reader.next(&mut con, 2, None).unwrap();
    read.extend(
        reader
            .next(&mut con, 2, Some(Duration::from_millis(10)))
            .unwrap(),
    );
    assert_eq!(read, written);
    assert_accessors(&read);
    let all: Vec<StreamEntry> = XreadIterator::new("s")
        .entries(&mut con, 1, None)
        .collect::<Result<_>>()
        .unwrap();
    assert_eq!(all, written);

    let info = db.client.get_connection_info().clone();
    let settings = info
        .redis_settings()
        .clone()
        .set_protocol(redis::ProtocolVersion::RESP3);
    let mut resp3 = redis::Client::open(info.set_redis_settings(settings))
        .unwrap()
        .get_connection()
        .unwrap();
    assert_eq!(
        XrangeIterator::new("s").next(&mut resp3, 10).unwrap(),
        written
    );
    assert_eq!(
        XreadIterator::new("s").next(&mut resp3, 10, None).unwrap(),
        written
    );

    assert_eq!(harness::dump(&mut con), before, "reading writes nothing");
}

/// The same on an async connection: `next_async` and `entry_stream` of both iterators.
#[tokio::test]
async fn binary_fields_and_values_read_back_unchanged_async() {
    let db = harness::fresh_db();
    let written = binary_entries(&mut db.con());
    let mut con = db.multiplexed().await;

    let mut range = XrangeIterator::new("s");
    let read = range.next_async(&mut con, 10).await.unwrap();
    assert_eq!(read, written);
    assert_accessors(&read);
    let streamed: Vec<StreamEntry> = XrangeIterator::new("s")
        .entry_stream(&mut con, 1)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(streamed, written);

    let mut reader = XreadIterator::new("s");
    let read = reader.next_async(&mut con, 10, None).await.unwrap();
    assert_eq!(read, written);
    let streamed: Vec<StreamEntry> = XreadIterator::new("s")
        .entry_stream(&mut con, 2, None)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(streamed, written);
}

/// Adds an entry `n=<n>` with an id of the server's choosing, and returns that id.
fn add(con: &mut dyn redis::ConnectionLike, key: &str, n: u32) -> EntryId {
    let id: String = redis::cmd("XADD")
        .arg(key)
        .arg("*")
        .arg("n")
        .arg(n)
        .query(con)
        .unwrap();
    id.parse().unwrap()
}

fn ns(entries: &[StreamEntry]) -> Vec<u32> {
    entries
        .iter()
        .map(|e| e.get_as::<u32>("n").unwrap().unwrap())
        .collect()
}

/// A reader from now reads, after reads that found nothing, every entry added between
/// them; `XREAD … STREAMS key $` sent at the same moment finds none of them.
#[test]
fn from_now_misses_nothing_added_between_reads() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let mut producer = db.con();
    for n in 1..=3 {
        add(&mut producer, "s", n);
    }
    let newest = add(&mut producer, "s", 4);

    let mut live = XreadIterator::from_now("s");
    assert_eq!(live.cursor(), None, "not resolved before the first read");
    assert!(live.next(&mut con, 10, None).unwrap().is_empty());
    assert_eq!(live.cursor(), Some(newest), "resolved to the newest entry");
    assert!(live.next(&mut con, 10, None).unwrap().is_empty());

    add(&mut producer, "s", 5);
    add(&mut producer, "s", 6);
    let dollar: redis::Value = redis::cmd("XREAD")
        .arg("COUNT")
        .arg(10)
        .arg("STREAMS")
        .arg("s")
        .arg("$")
        .query(&mut con)
        .unwrap();
    assert_eq!(
        dollar,
        redis::Value::Nil,
        "`$` skips what was added before it"
    );
    assert_eq!(ns(&live.next(&mut con, 1, None).unwrap()), [5]);
    assert_eq!(ns(&live.next(&mut con, 10, None).unwrap()), [6]);
    assert!(
        live.next(&mut con, 10, Duration::from_millis(10))
            .unwrap()
            .is_empty()
    );
    let last = add(&mut producer, "s", 7);
    assert_eq!(
        ns(&live.next(&mut con, 10, Duration::from_millis(10)).unwrap()),
        [7]
    );
    assert_eq!(live.cursor(), Some(last));

    // Back to "now": the next read starts after the newest entry again.
    live.rewind_to_now();
    assert_eq!(live.cursor(), None);
    add(&mut producer, "s", 8);
    assert!(live.next(&mut con, 10, None).unwrap().is_empty());
    add(&mut producer, "s", 9);
    assert_eq!(ns(&live.next(&mut con, 10, None).unwrap()), [9]);

    // `resolve` pins "now" before the first read: what is added after it is read.
    let mut pinned = XreadIterator::from_now("s");
    let since = pinned.resolve(&mut con).unwrap();
    assert_eq!(pinned.cursor(), Some(since));
    add(&mut producer, "s", 10);
    assert_eq!(pinned.resolve(&mut con).unwrap(), since, "resolved once");
    assert_eq!(ns(&pinned.next(&mut con, 10, None).unwrap()), [10]);

    // A first read whose input is refused resolves nothing: the entry added after it is
    // older than "now" when the next read resolves.
    let mut refused = XreadIterator::from_now("s");
    assert_invalid(refused.next(&mut con, 0, None), "count");
    assert_invalid(
        refused.next(&mut con, 1, Block::For(Duration::ZERO)),
        "block",
    );
    assert_eq!(refused.cursor(), None);
    add(&mut producer, "s", 11);
    assert!(refused.next(&mut con, 10, None).unwrap().is_empty());
    add(&mut producer, "s", 12);
    assert_eq!(ns(&refused.next(&mut con, 10, None).unwrap()), [12]);
}

/// "Now" is the newest entry left, so a reader from now reads exactly what is added
/// after it: on a missing key, after the newest entries were deleted (the stream's last
/// generated id is higher then), after `XSETID` lowered that id again, and on a stream
/// whose entries were all deleted.
#[test]
fn from_now_starts_after_the_newest_entry_left() {
    let db = harness::fresh_db();
    let mut con = db.con();

    let mut live = XreadIterator::from_now("s");
    assert!(live.next(&mut con, 10, None).unwrap().is_empty());
    assert_eq!(live.cursor(), Some(EntryId::MIN), "a missing key: 0-0");
    harness::cmd(&mut con, &["XADD", "s", "1-1", "n", "1"]);
    assert_eq!(ns(&live.next(&mut con, 10, None).unwrap()), [1]);

    harness::cmd(&mut con, &["XADD", "s", "2-1", "n", "2"]);
    harness::cmd(&mut con, &["XADD", "s", "3-1", "n", "3"]);
    harness::cmd(&mut con, &["XDEL", "s", "3-1"]);
    let mut late = XreadIterator::from_now("s");
    assert!(late.next(&mut con, 10, None).unwrap().is_empty());
    assert_eq!(late.cursor(), Some(EntryId::new(2, 1)));
    // The last generated id is 3-1. Redis lets XSETID lower it down to the newest entry,
    // and the next entry may then take an id below 3-1: a reader from 3-1 would never
    // see it. Valkey 9 refuses to lower it below an id it deleted.
    match redis::cmd("XSETID").arg("s").arg("2-5").exec(&mut con) {
        Ok(()) => {
            harness::cmd(&mut con, &["XADD", "s", "2-6", "n", "26"]);
            assert_eq!(ns(&late.next(&mut con, 10, None).unwrap()), [26]);
        }
        Err(err) => assert!(err.to_string().contains("max_deleted_entry_id"), "{err}"),
    }

    harness::cmd(&mut con, &["XDEL", "s", "1-1", "2-1", "2-6"]);
    let mut emptied = XreadIterator::from_now("s");
    assert!(emptied.next(&mut con, 10, None).unwrap().is_empty());
    assert_eq!(emptied.cursor(), Some(EntryId::MIN), "no entry left: 0-0");
    add(&mut con, "s", 4);
    assert_eq!(ns(&emptied.next(&mut con, 10, None).unwrap()), [4]);
}

/// `Block::Forever` waits well past a connection's response timeout (redis-rs's default
/// 500 ms on an async connection; 400 ms set on a sync one), in slices shorter than it,
/// and returns the entry that arrives; a single `BLOCK` as long fails on the same
/// connection.
#[tokio::test]
async fn forever_waits_past_the_response_timeout_in_slices() {
    const WAIT: Duration = Duration::from_millis(1300);
    assert!(FOREVER_SLICE < Duration::from_millis(400));
    let db = harness::fresh_db();

    let mut con = db.multiplexed().await;
    let mut live = XreadIterator::from_now("s");
    live.resolve_async(&mut con).await.unwrap();
    let mut producer = db.con();
    let started = Instant::now();
    let adding = thread::spawn(move || {
        thread::sleep(WAIT);
        add(&mut producer, "s", 1)
    });
    let got = live.next_async(&mut con, 10, Block::Forever).await.unwrap();
    assert!(started.elapsed() >= WAIT - Duration::from_millis(100));
    assert_eq!(ns(&got), [1]);
    assert_eq!(live.cursor(), Some(adding.join().unwrap()));
    let timed_out = live.next_async(&mut con, 10, WAIT).await;
    assert!(
        matches!(&timed_out, Err(Error::ResponseTimeout { .. })),
        "{timed_out:?}"
    );

    let mut sync = db.con();
    sync.set_read_timeout(Some(Duration::from_millis(400)))
        .unwrap();
    let mut live = XreadIterator::from_now("s");
    live.resolve(&mut sync).unwrap();
    let mut producer = db.con();
    let started = Instant::now();
    let adding = thread::spawn(move || {
        thread::sleep(WAIT);
        add(&mut producer, "s", 2)
    });
    let got = live.next(&mut sync, 10, Block::Forever).unwrap();
    assert!(started.elapsed() >= WAIT - Duration::from_millis(100));
    assert_eq!(ns(&got), [2]);
    assert_eq!(live.cursor(), Some(adding.join().unwrap()));
}

/// With `Block::Forever`, `entries` and `entry_stream` follow the stream: they yield the
/// entries a producer adds, with pauses longer than a slice between them, and never end.
#[tokio::test]
async fn forever_iterators_follow_the_stream() {
    let db = harness::fresh_db();
    let producing = |key: &'static str| {
        let mut producer = db.con();
        thread::spawn(move || {
            for n in 1..=4 {
                thread::sleep(Duration::from_millis(300));
                add(&mut producer, key, n);
            }
        })
    };

    let mut con = db.con();
    let mut live = XreadIterator::from_now("s");
    live.resolve(&mut con).unwrap();
    let adding = producing("s");
    let followed: Vec<StreamEntry> = live
        .entries(&mut con, 3, Block::Forever)
        .take(4)
        .collect::<Result<_>>()
        .unwrap();
    assert_eq!(ns(&followed), [1, 2, 3, 4]);
    adding.join().unwrap();

    let mut con = db.multiplexed().await;
    let mut live = XreadIterator::from_now("t");
    live.resolve_async(&mut con).await.unwrap();
    let adding = producing("t");
    let followed: Vec<StreamEntry> =
        futures_util::StreamExt::take(live.entry_stream(&mut con, 3, Block::Forever), 4)
            .try_collect()
            .await
            .unwrap();
    assert_eq!(ns(&followed), [1, 2, 3, 4]);
    adding.join().unwrap();
}
