use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use redis_patterns::reliable_topic::{Batch, From, MAX_POLL, ReliableTopic};

use crate::harness::{self, Transcript, assert_code, assert_snapshot};
use crate::step;

const LEASE: Duration = Duration::from_secs(60);

/// What a transcript shows of a batch: the loss, and each message's number and payload
/// (ids and the wake depend on the clock).
fn shown(batch: &Batch) -> (u64, Vec<(u64, String)>) {
    (
        batch.lost,
        batch
            .messages
            .iter()
            .map(|m| (m.number, String::from_utf8_lossy(&m.payload).into_owned()))
            .collect(),
    )
}

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let topic = ReliableTopic::new("Topic:orders", 5).unwrap();
    let numbers = |r: redis_patterns::Result<(String, u64)>| r.map(|(_, n)| n);
    t.step(
        "topic.publish(\"before anyone\")",
        numbers(topic.publish("before anyone").run(con)),
    )
    .unwrap();
    let subscribed = topic
        .subscribe("billing", LEASE, From::Newest)
        .run(con)
        .map(|s| (s.created, s.number));
    t.step(
        "topic.subscribe(billing, Newest): (created, number)",
        subscribed,
    )
    .unwrap();
    let subscribed = topic
        .subscribe("audit", LEASE, From::Oldest)
        .run(con)
        .map(|s| (s.created, s.number));
    t.step(
        "topic.subscribe(audit, Oldest): (created, number)",
        subscribed,
    )
    .unwrap();
    for payload in ["a", "b", "c"] {
        t.step("topic.publish", numbers(topic.publish(payload).run(con)))
            .unwrap();
    }
    let batch = t
        .step(
            "topic.poll(billing, 2)",
            topic.poll("billing", LEASE, 2).run(con).map(|b| shown(&b)),
        )
        .unwrap();
    assert_eq!(batch.1.len(), 2);
    t.note("billing crashed before its ack: the same messages come again");
    let batch = topic.poll("billing", LEASE, 10).run(con).unwrap();
    t.step(
        "topic.poll(billing, 10)",
        Ok::<_, redis_patterns::Error>(shown(&batch)),
    )
    .unwrap();
    let _ = step!(t, con, topic.ack("billing", LEASE, &batch.messages[1]));
    let _ = step!(t, con, topic.ack("billing", LEASE, &batch.messages[0]));
    t.step(
        "topic.poll(billing, 10)",
        topic.poll("billing", LEASE, 10).run(con).map(|b| shown(&b)),
    )
    .unwrap();
    t.note("audit reads nothing while the cap (5) trims what it had not read");
    for payload in ["d", "e", "f", "g"] {
        t.step("topic.publish", numbers(topic.publish(payload).run(con)))
            .unwrap();
    }
    t.step(
        "topic.poll(audit, 10)",
        topic.poll("audit", LEASE, 10).run(con).map(|b| shown(&b)),
    )
    .unwrap();
    let subscribed = topic
        .subscribe("billing", LEASE, From::Oldest)
        .run(con)
        .map(|s| (s.created, s.number));
    t.step("topic.subscribe(billing) again: it resumes", subscribed)
        .unwrap();
    let _ = step!(t, con, topic.unsubscribe("billing"));
    let _ = t.step(
        "topic.poll(billing, 10)",
        topic.poll("billing", LEASE, 10).run(con).map(|b| shown(&b)),
    );
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("reliable_topic");
    assert_snapshot(
        "reliable_topic__scenario",
        &scenario(&mut recorder.con(db.con())),
    );
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "reliable_topic__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// The stream keeps what the slowest live subscription needs: once a subscription stops
/// renewing and its lease runs out, the others' acks drop it and trim what it held back.
#[test]
fn an_abandoned_subscription_stops_holding_the_stream_back() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let topic = ReliableTopic::new("Topic:trim", 1_000_000).unwrap();
    topic
        .subscribe("live", LEASE, From::Newest)
        .run(&mut con)
        .unwrap();
    topic
        .subscribe("gone", LEASE, From::Newest)
        .run(&mut con)
        .unwrap();
    for i in 0..3000 {
        topic.publish(format!("m{i}")).run(&mut con).unwrap();
    }
    let len = |con: &mut redis::Connection| -> u64 {
        redis::cmd("XLEN")
            .arg(topic.stream_key())
            .query(con)
            .unwrap()
    };
    let drain = |con: &mut redis::Connection| loop {
        let batch = topic.poll("live", LEASE, MAX_POLL).run(con).unwrap();
        let Some(last) = batch.messages.last() else {
            break;
        };
        topic.ack("live", LEASE, last).run(con).unwrap();
    };
    drain(&mut con);
    assert_eq!(len(&mut con), 3000, "`gone` still needs every message");
    // `gone` renews its lease one last time, for 1 ms, and is heard of no more.
    let now = harness::server_ms(&mut con);
    topic
        .subscribe("gone", Duration::from_millis(1), From::Newest)
        .run(&mut con)
        .unwrap();
    harness::wait_until_server_ms(&mut con, now + 10);
    topic.publish("after").run(&mut con).unwrap();
    // Each ack trims at most 1,000 messages.
    for _ in 0..4 {
        drain(&mut con);
        topic.publish("more").run(&mut con).unwrap();
    }
    drain(&mut con);
    assert!(len(&mut con) < 200, "{}", len(&mut con));
    assert_code(
        topic.poll("gone", LEASE, 10).run(&mut con),
        "NOT_SUBSCRIBED",
    );
}

/// Four subscriptions, each read by a thread that stops at random (without its last
/// acks) and is replaced by a new one with the same name, while messages are published:
/// every subscription handles every message, in order, none lost; the only repeats are
/// messages read and not acknowledged before a stop.
#[test]
fn restarted_subscribers_miss_nothing() {
    const MESSAGES: u64 = 1500;
    let db = Arc::new(harness::fresh_db());
    let topic = Arc::new(ReliableTopic::new("Topic:restarts", 1_000_000).unwrap());
    let mut con = db.con();
    for s in 0..4 {
        topic
            .subscribe(&format!("sub{s}"), LEASE, From::Newest)
            .run(&mut con)
            .unwrap();
    }
    let published = Arc::new(AtomicBool::new(false));
    let publisher = {
        let (db, topic, published) = (db.clone(), topic.clone(), published.clone());
        thread::spawn(move || {
            let mut con = db.con();
            for i in 1..=MESSAGES {
                topic.publish(format!("m{i}")).run(&mut con).unwrap();
            }
            published.store(true, Ordering::SeqCst);
        })
    };
    let readers: Vec<_> = (0..4u64)
        .map(|s| {
            let (db, topic) = (db.clone(), topic.clone());
            thread::spawn(move || {
                let name = format!("sub{s}");
                let mut handled: Vec<u64> = Vec::new();
                let mut rng = harness::Rng::new(s + 1);
                let mut restarts = 0;
                // Each turn of the loop is one process: a fresh connection, polls and
                // acks until it "crashes" after a random number of polls.
                while handled.last() != Some(&MESSAGES) {
                    let mut con = db.con();
                    let polls = 1 + rng.below(5);
                    for _ in 0..polls {
                        let Some(batch) = topic
                            .poll_within(
                                &mut con,
                                &name,
                                LEASE,
                                1 + rng.below(50),
                                Duration::from_secs(10),
                            )
                            .unwrap()
                        else {
                            continue;
                        };
                        assert_eq!(batch.lost, 0);
                        handled.extend(batch.messages.iter().map(|m| m.number));
                        // The crash comes before the ack, now and then.
                        if rng.below(4) == 0 {
                            break;
                        }
                        topic
                            .ack(&name, LEASE, batch.messages.last().unwrap())
                            .run(&mut con)
                            .unwrap();
                    }
                    restarts += 1;
                }
                (handled, restarts)
            })
        })
        .collect();
    publisher.join().unwrap();
    assert!(published.load(Ordering::SeqCst));
    for reader in readers {
        let (handled, restarts) = reader.join().unwrap();
        let distinct: BTreeSet<u64> = handled.iter().copied().collect();
        assert_eq!(
            distinct,
            (1..=MESSAGES).collect(),
            "every message, none lost"
        );
        // Redelivery starts again after the last ack: numbers only go back, never skip.
        for pair in handled.windows(2) {
            assert!(
                pair[1] <= pair[0] + 1,
                "a message skipped: {} then {}",
                pair[0],
                pair[1]
            );
        }
        assert!(restarts > 1);
    }
}

/// A waiting poll wakes when a message is published.
#[test]
fn a_waiting_poll_wakes_on_publish() {
    let db = harness::fresh_db();
    let topic = ReliableTopic::new("Topic:wake", 100).unwrap();
    let mut con = db.con();
    topic
        .subscribe("s", LEASE, From::Newest)
        .run(&mut con)
        .unwrap();
    let waiter = {
        let (client, topic) = (db.client.clone(), topic.clone());
        thread::spawn(move || {
            let mut con = client.get_connection().unwrap();
            topic
                .poll_within(&mut con, "s", LEASE, 10, Duration::from_secs(60))
                .unwrap()
        })
    };
    // Publish once the waiter blocks on the stream.
    harness::wait_until("the waiter blocks in XREAD", 1, || {
        harness::blocked_in(&mut con, "xread") == 1
    });
    topic.publish("hello").run(&mut con).unwrap();
    let batch = waiter.join().unwrap().expect("woken before the timeout");
    assert_eq!(batch.messages[0].payload, b"hello");
}

#[test]
fn bad_calls_change_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let topic = ReliableTopic::new("Topic:bad", 10).unwrap();
    topic
        .subscribe("s", LEASE, From::Newest)
        .run(&mut con)
        .unwrap();
    let (id, number) = topic.publish("a").run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    assert_code(
        topic.poll("nobody", LEASE, 10).run(&mut con),
        "NOT_SUBSCRIBED",
    );
    let message = redis_patterns::reliable_topic::Message {
        id: id.clone(),
        number: number + 5,
        payload: vec![],
    };
    assert_code(topic.ack("s", LEASE, &message).run(&mut con), "BAD_ID");
    assert_eq!(harness::dump(&mut con), before);
    // A foreign entry in the stream is refused before the lease is renewed.
    harness::cmd(&mut con, &["XADD", "{Topic:bad}:stream", "*", "x", "y"]);
    let before = harness::dump(&mut con);
    assert_code(topic.poll("s", LEASE, 10).run(&mut con), "BAD_STREAM");
    assert_eq!(harness::dump(&mut con), before);
    harness::assert_invalid(ReliableTopic::new("t", 0), "cap");
}

/// A poll answers at most [`MAX_POLL`] messages, the header's bound on `count` (a header
/// that changes it fails here until the constant follows); a larger count is refused
/// before any I/O, and a subscriber further behind gets the rest in later polls.
#[test]
fn a_poll_answers_at_most_max_poll() {
    use redis_patterns::Rule;
    use redis_patterns::scripts::reliable_topic::POLL;
    let count = POLL.args.iter().find(|a| a.name == "count").unwrap();
    assert!(matches!(count.rule, Rule::Range { max, .. } if max as u64 == MAX_POLL));
    let db = harness::fresh_db();
    let mut con = db.con();
    let topic = ReliableTopic::new("Topic:bound", 1_000_000).unwrap();
    topic
        .subscribe("s", LEASE, From::Newest)
        .run(&mut con)
        .unwrap();
    let mut batch = redis_patterns::Batch::new();
    for i in 0..MAX_POLL + 1 {
        let _ = batch.add(topic.publish(format!("m{i}")));
    }
    batch.run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    harness::assert_invalid(topic.poll("s", LEASE, MAX_POLL + 1).run(&mut con), "count");
    assert_eq!(harness::dump(&mut con), before);
    let first = topic.poll("s", LEASE, MAX_POLL).run(&mut con).unwrap();
    assert_eq!(first.messages.len() as u64, MAX_POLL);
    topic
        .ack("s", LEASE, first.messages.last().unwrap())
        .run(&mut con)
        .unwrap();
    let rest = topic.poll("s", LEASE, MAX_POLL).run(&mut con).unwrap();
    assert_eq!(
        rest.messages.iter().map(|m| m.number).collect::<Vec<_>>(),
        [MAX_POLL + 1]
    );
}

/// When the slowest subscription ends, what it held back goes: its unsubscribe trims,
/// and so does every later ack, moving or not, 1,000 messages a call.
#[test]
fn an_ended_subscription_stops_holding_the_stream_back() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let topic = ReliableTopic::new("Topic:ended", 1_000_000).unwrap();
    topic
        .subscribe("a", LEASE, From::Newest)
        .run(&mut con)
        .unwrap();
    topic
        .subscribe("b", LEASE, From::Newest)
        .run(&mut con)
        .unwrap();
    let mut batch = redis_patterns::Batch::new();
    for i in 0..2500 {
        let _ = batch.add(topic.publish(format!("m{i}")));
    }
    batch.run(&mut con).unwrap();
    let len = |con: &mut redis::Connection| -> u64 {
        redis::cmd("XLEN")
            .arg(topic.stream_key())
            .query(con)
            .unwrap()
    };
    let mut last = None;
    loop {
        let batch = topic.poll("a", LEASE, MAX_POLL).run(&mut con).unwrap();
        let Some(message) = batch.messages.last().cloned() else {
            break;
        };
        topic.ack("a", LEASE, &message).run(&mut con).unwrap();
        last = Some(message);
    }
    assert_eq!(len(&mut con), 2500, "`b` still needs every message");
    assert!(topic.unsubscribe("b").run(&mut con).unwrap());
    let after_unsubscribe = len(&mut con);
    assert!(
        (1400..=1600).contains(&after_unsubscribe),
        "{after_unsubscribe}"
    );
    let last = last.unwrap();
    assert!(!topic.ack("a", LEASE, &last).run(&mut con).unwrap());
    assert!(!topic.ack("a", LEASE, &last).run(&mut con).unwrap());
    assert!(len(&mut con) <= 100, "{}", len(&mut con));
}
