//! The `tracing` feature: the spans of an operation, a batch and a `NOSCRIPT` recovery,
//! recorded by a subscriber of the test's own on a server of its own (the recovery needs
//! a server that has not seen the script).
//!
//! The spans are recorded through a global subscriber that hands each thread's spans to
//! that thread's capture, not through a scoped one (`tracing::subscriber::with_default`):
//! tracing caches each callsite's interest when the callsite is first reached, and while
//! exactly one subscriber exists it asks only the subscriber of the thread that reached
//! it first (tracing-core 0.1.36, `Rebuilder::JustOne` in `callsite.rs`). Another test's
//! thread, with no subscriber, would cache `never` for the crate's span, and the capture
//! would miss it.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex, Once};

use redis_patterns::Batch;
use redis_patterns::counter::Counter;
use redis_patterns::identity_lock::IdentityLock;
use redis_patterns::work_queue::{Job, LEASE_LOST, WorkQueue};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
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

/// Every span and event of one thread, while it captures (see [`capture`]). A span's id
/// is its index in `spans`, plus one.
#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<Vec<Seen>>>,
    events: Arc<Mutex<Vec<Seen>>>,
}

thread_local! {
    /// The capture of the test running on this thread, while it captures.
    static CAPTURE: RefCell<Option<Capture>> = const { RefCell::new(None) };
}

/// Runs `f` with `capture` (on this thread only) recording every span and event.
fn capture<R>(capture: &Capture, f: impl FnOnce() -> R) -> R {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        tracing::subscriber::set_global_default(PerThread)
            .expect("no other global subscriber in the integration tests");
    });
    CAPTURE.with(|c| *c.borrow_mut() = Some(capture.clone()));
    let result = f();
    CAPTURE.with(|c| *c.borrow_mut() = None);
    result
}

/// The process's subscriber: each span and event goes to the capture of the thread it
/// happens on, if that thread captures. Its interest in every callsite is `sometimes`,
/// so that tracing asks `enabled` on each thread at each call instead of caching one
/// answer for all threads.
struct PerThread;

impl PerThread {
    fn with<R>(f: impl FnOnce(&Capture) -> R) -> Option<R> {
        CAPTURE.with(|c| c.borrow().as_ref().map(f))
    }
}

impl Subscriber for PerThread {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::sometimes()
    }

    fn enabled(&self, _: &Metadata<'_>) -> bool {
        Self::with(|_| ()).is_some()
    }

    fn new_span(&self, attributes: &Attributes<'_>) -> Id {
        let mut seen = Seen {
            name: attributes.metadata().name().into(),
            ..Seen::default()
        };
        attributes.record(&mut seen);
        let id = Self::with(|capture| {
            let mut spans = capture.spans.lock().unwrap();
            spans.push(seen);
            spans.len() as u64
        });
        // `enabled` said yes on this thread, so it captures; an id no capture holds
        // otherwise, which `record` ignores.
        Id::from_u64(id.unwrap_or(u64::MAX))
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        Self::with(|capture| {
            if let Some(seen) = capture
                .spans
                .lock()
                .unwrap()
                .get_mut(span.into_u64() as usize - 1)
            {
                values.record(seen);
            }
        });
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut seen = Seen {
            name: event.metadata().name().into(),
            parent: event.parent().map(|id| id.into_u64() as usize - 1),
            ..Seen::default()
        };
        event.record(&mut seen);
        Self::with(|capture| capture.events.lock().unwrap().push(seen));
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
    let captured = Capture::default();
    let queue = WorkQueue::new("traced").unwrap();
    let visits = Counter::new("traced:visits").unwrap();
    capture(&captured, || {
        // Another thread reaches every callsite first (an op, its recovery, a batch),
        // with nothing capturing there, as another test would: this thread's spans are
        // recorded all the same, and the other thread's are not.
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut con = server.connection();
                let lock = IdentityLock::new("traced:lock").unwrap();
                assert!(!lock.release("t").run(&mut con).unwrap());
                let mut batch = Batch::new();
                let _ = batch.add(visits.increase(1));
                batch.run(&mut con).unwrap();
            });
        });
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
    let spans = captured.spans.lock().unwrap().clone();
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
            ("keys", "7"),
            ("mode", "EVALSHA"),
            ("recoveries", "1"),
            ("script", "work_queue/add"),
        ],
        &[
            ("keys", "7"),
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
            ("keys", "16"),
            ("mode", "EVALSHA"),
            ("recoveries", "1"),
            ("script", "work_queue/take"),
        ],
        &[
            ("error", "LEASE_LOST"),
            ("keys", "11"),
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
    let events = captured.events.lock().unwrap().clone();
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
