use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use redis_patterns::message_queue::{Chat, Comment, DEFAULT_COUNT, MessageQueue};
use redis_patterns::stream_iterator::{Block, EntryId, StreamEntry};
use redis_patterns::{Error, Result};

use crate::harness::{self, NOT_UTF8, Transcript, assert_code, assert_invalid, assert_snapshot};

/// Names the ids a scenario meets in one stream `<prefix1>`, `<prefix2>`, … in the order
/// it meets them: the server picks them from its clock, so a transcript cannot hold them
/// as they are. (Two streams may hand out the same id, so each has its own names.)
struct Ids {
    prefix: &'static str,
    seen: Vec<EntryId>,
}

impl Ids {
    fn new(prefix: &'static str) -> Self {
        Ids {
            prefix,
            seen: Vec::new(),
        }
    }

    fn name(&mut self, id: EntryId) -> String {
        let n = match self.seen.iter().position(|&seen| seen == id) {
            Some(n) => n,
            None => {
                self.seen.push(id);
                self.seen.len() - 1
            }
        };
        format!("<{}{}>", self.prefix, n + 1)
    }

    fn cursor(&mut self, cursor: Option<EntryId>) -> Option<String> {
        cursor.map(|id| self.name(id))
    }

    /// `<name> field=value …`, bytes that are not printable ASCII escaped.
    fn entry(&mut self, entry: &StreamEntry) -> String {
        let mut line = self.name(entry.id);
        for (field, value) in &entry.fields {
            line.push_str(&format!(
                " {}={}",
                field.escape_ascii(),
                value.escape_ascii()
            ));
        }
        line
    }

    fn entries(&mut self, entries: Vec<StreamEntry>) -> Vec<String> {
        entries.iter().map(|e| self.entry(e)).collect()
    }

    /// The id's name and the comment as `Chat::show` writes it.
    fn comments(&mut self, comments: Vec<Comment>) -> Vec<String> {
        comments
            .iter()
            .map(|c| format!("{} {c}", self.name(c.id)))
            .collect()
    }
}

/// Records an operation run on `con`, written as in the code, its result shown by `show`.
macro_rules! op {
    ($t:expr, $con:expr, $op:expr, $show:expr) => {
        $t.step(stringify!($op), $op.run($con).map($show))
    };
}

/// Records a call that is not an `Op`.
macro_rules! call {
    ($t:expr, $call:expr, $show:expr) => {
        $t.step(stringify!($call), $call.map($show))
    };
}

/// The book's examples (chapter 14): a queue that sends, gets, counts and receives
/// (without and with a wait, and from "now" for a second receiver, which gets the same
/// messages), then a live chat whose viewer sees only the comments sent after it joined.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Result<Transcript> {
    let mut t = Transcript::default();
    let mut ids = Ids::new("mq");
    harness::cmd(con, &["DEL", "message_queue:mq", "Chat:peter"]);

    let mut mq = MessageQueue::new("message_queue:mq")?;
    t.note("let mut mq = MessageQueue::new(\"message_queue:mq\")?");
    let _ = op!(t, con, mq.send(&[("k1", "v1"), ("k2", "v2")]), |id| ids
        .name(id));
    let id1 = ids.seen[0];
    let _ = op!(t, con, mq.send(&[("k3", "v3")]), |id| ids.name(id));
    let _ = op!(t, con, mq.send(&[("k4", "v4"), ("k5", "v5")]), |id| ids
        .name(id));
    let _ = op!(t, con, mq.length(), |n| n);
    let _ = op!(t, con, mq.get(id1), |e| e.map(|e| ids.entry(&e)));
    let _ = op!(t, con, mq.get(EntryId::new(1, 0)), |e| e
        .map(|e| ids.entry(&e)));
    let _ = call!(t, mq.receive(con, 2, None), |e| ids.entries(e));
    let _ = call!(t, mq.receive(con, DEFAULT_COUNT, None), |e| ids.entries(e));
    let _ = call!(t, mq.receive(con, DEFAULT_COUNT, None), |e| ids.entries(e));
    let _ = call!(
        t,
        mq.receive(con, DEFAULT_COUNT, Some(Duration::from_millis(20))),
        |e| ids.entries(e)
    );
    let _ = t.step("mq.cursor()", Ok(ids.cursor(mq.cursor())));

    let mut late = MessageQueue::from_now("message_queue:mq")?;
    t.note("let mut late = MessageQueue::from_now(\"message_queue:mq\")?");
    let _ = t.step("late.cursor()", Ok(ids.cursor(late.cursor())));
    let _ = call!(t, late.receive(con, DEFAULT_COUNT, None), |e| ids
        .entries(e));
    let _ = t.step("late.cursor()", Ok(ids.cursor(late.cursor())));
    let _ = op!(t, con, mq.send(&[("k6", "v6")]), |id| ids.name(id));
    let _ = call!(t, mq.receive(con, DEFAULT_COUNT, Block::Forever), |e| ids
        .entries(e));
    let _ = call!(t, late.receive(con, DEFAULT_COUNT, Block::Forever), |e| ids
        .entries(e));

    let _ = op!(
        t,
        con,
        mq.send(&[(&b"raw\xff"[..], &b"\x00\xfe"[..]), (b"n", b"7")]),
        |id| ids.name(id)
    );
    let _ = call!(t, mq.receive(con, DEFAULT_COUNT, None), |e| ids.entries(e));
    let _ = op!(t, con, mq.send::<&str, &str>(&[]), |id| ids.name(id));
    let _ = t.step("mq.rewind_to(\"$\")", mq.rewind_to("$"));
    let _ = t.step("mq.rewind_to(\"abc\")", mq.rewind_to("abc"));
    let _ = t.step(
        "mq.rewind_to(&id1.to_string())",
        mq.rewind_to(&id1.to_string()),
    );
    let _ = call!(t, mq.receive(con, 2, None), |e| ids.entries(e));
    let _ = op!(t, con, mq.length(), |n| n);

    let mut ids = Ids::new("chat");
    let room = Chat::new("peter")?;
    t.note("let room = Chat::new(\"peter\")?");
    let _ = t.step("room.key()", Ok(room.key().to_owned()));
    let mut viewer = Chat::new("peter")?;
    t.note("let mut viewer = Chat::new(\"peter\")?");
    let _ = op!(
        t,
        con,
        room.send("tom", "before the viewer joined", 0),
        |id| ids.name(id)
    );
    let _ = call!(t, viewer.join(con), |id| ids.name(id));
    let _ = op!(t, con, room.send("jack", "hello peter", 0), |id| ids
        .name(id));
    let _ = op!(t, con, room.send("mary", "for the cat", 100), |id| ids
        .name(id));
    let _ = call!(t, viewer.receive(con, DEFAULT_COUNT), |c| ids.comments(c));
    let _ = op!(t, con, room.send(42, "a number as uid", 0), |id| ids
        .name(id));
    let _ = op!(t, con, room.send("ann", "one", 0), |id| ids.name(id));
    let _ = call!(t, viewer.receive(con, 1), |c| ids.comments(c));
    let _ = call!(t, viewer.receive(con, 1), |c| ids.comments(c));
    let _ = t.step("viewer.cursor()", Ok(ids.cursor(viewer.cursor())));
    // What send wrote: no donate field for a plain comment.
    let mut raw = MessageQueue::new("Chat:peter")?;
    t.note("let mut raw = MessageQueue::new(\"Chat:peter\")?");
    let _ = call!(t, raw.receive(con, DEFAULT_COUNT, None), |e| ids.entries(e));
    Ok(t)
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("message_queue");
    assert_snapshot(
        "message_queue__scenario",
        &scenario(&mut recorder.con(db.con())).unwrap(),
    );
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "message_queue__scenario",
        &scenario(&mut harness::cluster_con()).unwrap(),
    );
}

/// A comment of the concurrency test: sender `p`'s `n`th, with a donation for every
/// third.
fn comment_of(p: usize, n: usize) -> (String, String, u64) {
    (format!("u{p}"), format!("{p}:{n}"), (n % 3 * 10) as u64)
}

const SENDERS: usize = 4;
const EACH: usize = 40;
const BEFORE: usize = 5;

/// Waits until each connection in `ids` (by `CLIENT ID`) has sent an XREAD: its viewer has
/// joined (the XREVRANGE came first) and is waiting.
fn wait_until_reading(db: &harness::Db, ids: &[i64]) {
    let mut observer = db.con();
    for &id in ids {
        harness::wait_until_sent(&mut observer, id, "xread");
    }
}

/// Once the viewers are waiting (and have waited past a 500 ms response timeout), the
/// senders send `EACH` comments each, each on its own connection, one of them pausing
/// past the timeout halfway. Returns what was sent, by id.
fn send_while_viewers_wait(
    db: &harness::Db,
    viewers: &[i64],
) -> HashMap<EntryId, (String, String, u64)> {
    wait_until_reading(db, viewers);
    thread::sleep(Duration::from_millis(600));
    thread::scope(|s| {
        let senders: Vec<_> = (0..SENDERS)
            .map(|p| {
                s.spawn(move || {
                    let mut con = db.con();
                    let room = Chat::new("live").unwrap();
                    (0..EACH)
                        .map(|n| {
                            if p == 0 && n == EACH / 2 {
                                thread::sleep(Duration::from_millis(700));
                            }
                            let (uid, content, donate) = comment_of(p, n);
                            let id = room.send(&uid, &content, donate).run(&mut con).unwrap();
                            (id, (uid, content, donate))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        senders
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

/// Asserts that a viewer received exactly the comments sent after it joined: each once,
/// in id order, as sent; and that its cursor is the last one.
#[track_caller]
fn assert_saw_exactly(
    viewer: &Chat,
    seen: &[Comment],
    sent: &HashMap<EntryId, (String, String, u64)>,
) {
    assert!(
        seen.windows(2).all(|w| w[0].id < w[1].id),
        "in id order, none twice"
    );
    assert_eq!(seen.len(), sent.len());
    for comment in seen {
        let (uid, content, donate) = sent
            .get(&comment.id)
            .unwrap_or_else(|| panic!("{comment:?} was not sent after the viewer joined"));
        assert_eq!(comment.uid_str(), Some(uid.as_str()));
        assert_eq!(comment.content_str(), Some(content.as_str()));
        assert_eq!(comment.donate, *donate);
    }
    assert_eq!(viewer.cursor(), sent.keys().max().copied());
}

/// Two viewers of one room, one on an async multiplexed connection with redis-rs's
/// default 500 ms response timeout, one on a sync connection, wait with `receive` (which
/// waits forever, in slices) while four senders comment from threads of their own. Each
/// viewer gets every comment sent after its first receive once, and none of the comments
/// sent before it.
#[tokio::test]
async fn chat_viewers_see_every_comment_sent_after_they_join_once() {
    let total = SENDERS * EACH;
    let db = Arc::new(harness::fresh_db());
    let mut con = db.con();
    let room = Chat::new("live").unwrap();
    for n in 0..BEFORE {
        room.send("early", format!("before {n}"), 0)
            .run(&mut con)
            .unwrap();
    }
    let mut multiplexed = db.multiplexed().await;
    let async_id = harness::client_id_async(&mut multiplexed).await;
    let sync_id = harness::client_id(&mut con);

    // Each viewer's first receive comes before any comment of the senders, who wait for
    // both to be reading.
    let (done, sync_result) = mpsc::channel();
    thread::spawn(move || {
        let mut viewer = Chat::new("live").unwrap();
        let mut seen = Vec::new();
        while seen.len() < total {
            seen.extend(viewer.receive(&mut con, 7).unwrap());
        }
        done.send((viewer, seen)).unwrap();
    });
    let senders = thread::spawn({
        let db = db.clone();
        move || send_while_viewers_wait(&db, &[async_id, sync_id])
    });
    let (async_viewer, async_seen) = tokio::time::timeout(Duration::from_secs(60), async {
        let mut viewer = Chat::new("live").unwrap();
        let mut seen = Vec::new();
        while seen.len() < total {
            seen.extend(viewer.receive_async(&mut multiplexed, 7).await.unwrap());
        }
        (viewer, seen)
    })
    .await
    .expect("the async viewer missed comments");
    let sent = senders.join().unwrap();
    let (sync_viewer, sync_seen) = sync_result
        .recv_timeout(Duration::from_secs(60))
        .expect("the sync viewer missed comments");

    assert_eq!(sent.len(), total);
    assert_saw_exactly(&async_viewer, &async_seen, &sent);
    assert_saw_exactly(&sync_viewer, &sync_seen, &sent);
}

/// `show` writes each comment as a line and flushes after each batch; it returns only
/// when something fails, here the output.
#[test]
fn chat_show_writes_comments_until_the_output_fails() {
    struct Screen {
        text: Vec<u8>,
    }
    impl Write for Screen {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.text.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::Error::other("the screen is off"))
        }
    }

    let db = harness::fresh_db();
    let mut con = db.con();
    let mut viewer = Chat::new("peter").unwrap();
    let room = Chat::new("peter").unwrap();
    room.send("early", "not shown", 0).run(&mut con).unwrap();
    viewer.join(&mut con).unwrap();
    room.send("tom", "hello", 0).run(&mut con).unwrap();
    room.send("ann", "super", 5).run(&mut con).unwrap();
    room.send(b"\xffbin".as_slice(), NOT_UTF8, 0)
        .run(&mut con)
        .unwrap();

    let mut screen = Screen { text: Vec::new() };
    let Err(err) = viewer.show(&mut con, &mut screen);
    assert!(
        matches!(&err, Error::Redis(e) if e.kind() == redis::ErrorKind::Io),
        "{err:?}"
    );
    assert!(err.to_string().contains("the screen is off"), "{err}");
    assert_eq!(
        String::from_utf8(screen.text).unwrap(),
        "tom: hello\nann [donate 5]: super\n\u{fffd}bin: \u{fffd}\u{fffd}\0bin\r\n\u{fffd}\n"
    );
}

/// Bad input is refused with a typed error before any I/O, and a key of another type
/// gets Redis's WRONGTYPE: either way the keyspace is unchanged and no cursor moves.
#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let mut mq = MessageQueue::new("q").unwrap();
    let first = mq.send(&[("a", "1")]).run(&mut con).unwrap();
    harness::cmd(&mut con, &["RPUSH", "a:list", "x"]);
    harness::cmd(&mut con, &["RPUSH", "Chat:listed", "x"]);
    let before = harness::dump(&mut con);

    assert_invalid(MessageQueue::new(""), "key");
    assert_invalid(MessageQueue::from_now(""), "key");
    assert_invalid(Chat::new(""), "broadcaster");
    assert_invalid(Chat::new("peter").unwrap().with_history(0), "history");
    assert_invalid(
        Chat::new("peter")
            .unwrap()
            .with_history(i64::MAX as u64 + 1),
        "history",
    );
    assert_eq!(
        Chat::new("peter")
            .unwrap()
            .with_history(i64::MAX as u64)
            .unwrap()
            .history(),
        i64::MAX as u64
    );

    assert_invalid(mq.send::<&str, &str>(&[]).run(&mut con), "fields");
    // A value redis-rs sends as two arguments would shift every pair after it.
    assert_invalid(mq.send(&[("a", vec!["1", "2"])]).run(&mut con), "fields");
    assert_invalid(mq.send(&[(vec!["a", "b"], "1")]).run(&mut con), "fields");
    assert_invalid(mq.receive(&mut con, 0, None), "count");
    assert_invalid(mq.receive(&mut con, 1, Block::For(Duration::ZERO)), "block");
    assert_invalid(mq.receive(&mut con, 1, Duration::from_micros(999)), "block");
    for bad in ["abc", "$", "", "-", "+", "1-x", "(1-1"] {
        assert_invalid(mq.rewind_to(bad), "cursor");
        assert_invalid(bad.parse::<EntryId>(), "id");
    }
    assert_eq!(
        mq.cursor(),
        Some(EntryId::MIN),
        "a refused cursor does not move it"
    );

    let room = Chat::new("peter").unwrap();
    let mut viewer = Chat::new("peter").unwrap();
    assert_invalid(room.send(vec!["a", "b"], "hi", 0).run(&mut con), "uid");
    assert_invalid(room.send("tom", vec!["a", "b"], 0).run(&mut con), "content");
    assert_invalid(viewer.receive(&mut con, 0), "count");
    assert_eq!(viewer.cursor(), None, "a refused receive joins nothing");

    let mut listed = MessageQueue::new("a:list").unwrap();
    assert_code(listed.send(&[("a", "1")]).run(&mut con), "WRONGTYPE");
    assert_code(listed.receive(&mut con, 1, None), "WRONGTYPE");
    assert_code(listed.receive(&mut con, 1, Block::Forever), "WRONGTYPE");
    assert_code(listed.get(first).run(&mut con), "WRONGTYPE");
    assert_code(listed.length().run(&mut con), "WRONGTYPE");
    assert_eq!(listed.cursor(), Some(EntryId::MIN));
    let mut listed = Chat::new("listed").unwrap();
    assert_code(listed.send("tom", "hi", 5).run(&mut con), "WRONGTYPE");
    assert_code(listed.receive(&mut con, 1), "WRONGTYPE");
    assert_code(listed.join(&mut con), "WRONGTYPE");
    assert_eq!(listed.cursor(), None);

    assert_eq!(harness::dump(&mut con), before);
    assert_eq!(
        mq.receive(&mut con, 10, None).unwrap().len(),
        1,
        "the queue reads as before"
    );
}

/// Messages and comments whose fields and values are not UTF-8 read back byte for byte,
/// sync and async; a comment's text accessors say when it is not text.
#[tokio::test]
async fn binary_messages_and_comments_read_back_unchanged() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let mut mq = MessageQueue::new("q").unwrap();
    let fields: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (NOT_UTF8.to_vec(), b"text".to_vec()),
        (b"photo".to_vec(), NOT_UTF8.to_vec()),
        (b"photo".to_vec(), b"a second field of that name".to_vec()),
        (b"empty".to_vec(), Vec::new()),
    ];
    let id = mq.send(&fields).run(&mut con).unwrap();
    let sent = StreamEntry { id, fields };
    assert_eq!(mq.get(id).run(&mut con).unwrap().as_ref(), Some(&sent));
    assert_eq!(
        mq.receive(&mut con, 10, None).unwrap(),
        std::slice::from_ref(&sent)
    );
    let mut multiplexed = db.multiplexed().await;
    let mut again = MessageQueue::new("q").unwrap();
    assert_eq!(
        again
            .receive_async(&mut multiplexed, 10, Block::Forever)
            .await
            .unwrap(),
        std::slice::from_ref(&sent)
    );
    assert_eq!(mq.length().run_async(&mut multiplexed).await.unwrap(), 1);

    let room = Chat::new("peter").unwrap();
    let mut viewer = Chat::new("peter").unwrap();
    viewer.join_async(&mut multiplexed).await.unwrap();
    let id = room.send(NOT_UTF8, NOT_UTF8, 0).run(&mut con).unwrap();
    let got = viewer.receive_async(&mut multiplexed, 10).await.unwrap();
    assert_eq!(
        got,
        [Comment {
            id,
            uid: NOT_UTF8.to_vec(),
            content: NOT_UTF8.to_vec(),
            donate: 0
        }]
    );
    assert_eq!((got[0].uid_str(), got[0].content_str()), (None, None));
}

/// A chat keeps about `history` comments: never fewer once that many were sent, and
/// fewer than a stream node (100 entries by default) more; a plain queue keeps every
/// message. A comment without a donation has no `donate` field.
#[test]
fn chat_history_is_trimmed_approximately_and_queues_are_not() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let room = Chat::new("peter").unwrap().with_history(10).unwrap();
    let mq = MessageQueue::new("q").unwrap();
    let mut sent = Vec::new();
    for n in 0..500 {
        sent.push(room.send("tom", n, n % 2).run(&mut con).unwrap());
        mq.send(&[("n", n)]).run(&mut con).unwrap();
    }
    let kept = MessageQueue::new("Chat:peter")
        .unwrap()
        .length()
        .run(&mut con)
        .unwrap();
    assert!((10..110).contains(&kept), "{kept} comments kept");
    assert_eq!(mq.length().run(&mut con).unwrap(), 500);

    let raw = MessageQueue::new("Chat:peter").unwrap();
    let plain = raw.get(sent[498]).run(&mut con).unwrap().unwrap();
    assert_eq!(plain.get("donate"), None);
    assert_eq!(Comment::from_entry(&plain).donate, 0);
    let paid = raw.get(sent[499]).run(&mut con).unwrap().unwrap();
    assert_eq!(paid.get_str("donate"), Some("1"));
    assert_eq!(Comment::from_entry(&paid).donate, 1);
    assert_eq!(raw.get(sent[0]).run(&mut con).unwrap(), None, "trimmed");
}

/// An entry another program added to a chat's stream reads as a comment with what it
/// has: missing fields empty, a donation that is not a number 0.
#[test]
fn chat_reads_entries_it_did_not_write() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let mut viewer = Chat::new("peter").unwrap();
    viewer.join(&mut con).unwrap();
    harness::cmd(
        &mut con,
        &["XADD", "Chat:peter", "*", "text", "hi", "donate", "lots"],
    );
    harness::cmd(
        &mut con,
        &["XADD", "Chat:peter", "*", "uid", "tom", "donate", "-5"],
    );
    let got = viewer.receive(&mut con, 10).unwrap();
    let shown: Vec<(&str, &str, u64)> = got
        .iter()
        .map(|c| (c.uid_str().unwrap(), c.content_str().unwrap(), c.donate))
        .collect();
    assert_eq!(shown, [("", "", 0), ("tom", "", 0)]);
}
