//! The `tracing` feature: the spans of an operation, a batch and a `NOSCRIPT` recovery,
//! recorded by a subscriber of the test's own on a server of its own (the recovery needs
//! a server that has not seen the script).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use redis_patterns::Batch;
use redis_patterns::counter::Counter;
use redis_patterns::work_queue::{Job, LEASE_LOST, WorkQueue};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

use crate::server::RedisProcess;

/// A span or an event as the subscriber saw it: its name and its fields, as text.
#[derive(Debug, Clone, Default)]
struct Seen {
    name: String,
    fields: BTreeMap<String, String>,
    /// For an event, the span it belongs to (its index in `spans`).
    parent: Option<usize>,
}

impl Visit for Seen {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.fields.insert(field.name().into(), value.into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.fields
            .insert(field.name().into(), format!("{value:?}"));
    }
}

/// Keeps every span and event of the thread it is the default of.
#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<Vec<Seen>>>,
    events: Arc<Mutex<Vec<Seen>>>,
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attributes: &Attributes<'_>) -> Id {
        let mut seen = Seen {
            name: attributes.metadata().name().into(),
            ..Seen::default()
        };
        attributes.record(&mut seen);
        let mut spans = self.spans.lock().unwrap();
        spans.push(seen);
        Id::from_u64(spans.len() as u64)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        values.record(&mut self.spans.lock().unwrap()[span.into_u64() as usize - 1]);
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut seen = Seen {
            name: event.metadata().name().into(),
            parent: event.parent().map(|id| id.into_u64() as usize - 1),
            ..Seen::default()
        };
        event.record(&mut seen);
        self.events.lock().unwrap().push(seen);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// The fields of a span, without the elapsed time (which changes from run to run; it is
/// checked apart).
fn fields(seen: &Seen) -> Vec<(String, String)> {
    seen.fields
        .iter()
        .filter(|(name, _)| *name != "elapsed_us")
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn an_op_a_batch_and_a_recovery_are_spans() {
    let server = RedisProcess::start(&[]);
    let mut con = server.connection();
    let capture = Capture::default();
    let queue = WorkQueue::new("traced").unwrap();
    let visits = Counter::new("traced:visits").unwrap();
    tracing::subscriber::with_default(capture.clone(), || {
        // The server has never seen work_queue/add: NOSCRIPT, loaded, sent again.
        queue.add("a", "x").run(&mut con).unwrap();
        queue.add("b", "x").run(&mut con).unwrap();
        visits.increase(1).run(&mut con).unwrap();
        let job = queue.take(1).run(&mut con).unwrap().pop().unwrap();
        let stale = Job {
            token: format!("{}0", job.token),
            ..job
        };
        let lost = queue.ack(&stale).run(&mut con);
        assert_eq!(lost.unwrap_err().code(), Some(LEASE_LOST));
        assert!(queue.take(0).run(&mut con).is_err());
        let mut batch = Batch::new();
        let _ = batch.add(visits.increase(1));
        let _ = batch.add(queue.add("c", "x"));
        batch.run(&mut con).unwrap();
    });
    let spans = capture.spans.lock().unwrap().clone();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "redis_patterns.op",
            "redis_patterns.op",
            "redis_patterns.op",
            "redis_patterns.op",
            "redis_patterns.op",
            "redis_patterns.op",
            "redis_patterns.batch",
        ]
    );
    let expected: [&[(&str, &str)]; 7] = [
        &[
            ("keys", "4"),
            ("mode", "EVALSHA"),
            ("recoveries", "1"),
            ("script", "work_queue/add"),
        ],
        &[
            ("keys", "4"),
            ("mode", "EVALSHA"),
            ("recoveries", "0"),
            ("script", "work_queue/add"),
        ],
        &[
            ("keys", "1"),
            ("mode", "native"),
            ("recoveries", "0"),
            ("script", "native"),
        ],
        &[
            ("keys", "10"),
            ("mode", "EVALSHA"),
            ("recoveries", "1"),
            ("script", "work_queue/take"),
        ],
        &[
            ("error", "LEASE_LOST"),
            ("keys", "6"),
            ("mode", "EVALSHA"),
            ("recoveries", "1"),
            ("script", "work_queue/ack"),
        ],
        &[
            ("error", "INVALID_INPUT"),
            ("keys", "0"),
            ("mode", "none"),
            ("recoveries", "0"),
            ("script", "rejected"),
        ],
        &[("ops", "2"), ("recoveries", "0"), ("transaction", "false")],
    ];
    for (span, want) in spans.iter().zip(expected) {
        assert_eq!(fields(span), pairs(want), "{span:?}");
        let elapsed: u64 = span.fields["elapsed_us"].parse().unwrap();
        assert!(elapsed > 0, "{span:?}");
    }
    // Each recovery is an event inside the span of its operation.
    let events = capture.events.lock().unwrap().clone();
    let recoveries: Vec<(usize, String)> = events
        .iter()
        .map(|e| (e.parent.unwrap(), e.fields["recovery"].clone()))
        .collect();
    assert_eq!(
        recoveries,
        [
            (0, "NOSCRIPT".to_owned()),
            (3, "NOSCRIPT".to_owned()),
            (4, "NOSCRIPT".to_owned())
        ]
    );
}
