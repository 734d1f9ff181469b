//! The `otel` feature: a job's spans, from its add to the worker that settles it, as the
//! OpenTelemetry SDK's in-memory exporter records them.
//!
//! The tracer provider is global, so it sees every test of this binary: its sampler
//! records only the spans of the queues named `otel-…` here (and their children), and
//! every other test's adds get a context the sampler dropped, which is not kept.

use std::sync::OnceLock;
use std::thread;
use std::time::Duration;

use opentelemetry::trace::{
    Link, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceId, TraceState, Tracer,
};
use opentelemetry::{Context, KeyValue, global};
use opentelemetry_sdk::trace::{
    InMemorySpanExporter, SamplingDecision, SamplingResult, SdkTracerProvider, ShouldSample,
    SpanData,
};
use redis_patterns::scripts::work_queue as script;
use redis_patterns::work_queue::{
    Backoff, Child, Job, JobError, JobOptions, Schedule, Stop, WorkQueue,
};

use crate::harness;

/// Records the spans of the `otel-…` queues and of the spans under them.
#[derive(Debug, Clone)]
struct OtelQueuesOnly;

impl ShouldSample for OtelQueuesOnly {
    fn should_sample(
        &self,
        parent: Option<&Context>,
        _trace_id: TraceId,
        name: &str,
        _kind: &SpanKind,
        _attributes: &[KeyValue],
        _links: &[Link],
    ) -> SamplingResult {
        let parent_sampled = parent.is_some_and(|cx| cx.span().span_context().is_sampled());
        let ours = name.contains(" otel-") || name.starts_with("app ");
        SamplingResult {
            decision: if ours || parent_sampled {
                SamplingDecision::RecordAndSample
            } else {
                SamplingDecision::Drop
            },
            attributes: Vec::new(),
            trace_state: TraceState::default(),
        }
    }
}

fn exporter() -> &'static InMemorySpanExporter {
    static EXPORTER: OnceLock<InMemorySpanExporter> = OnceLock::new();
    EXPORTER.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_sampler(OtelQueuesOnly)
            .with_simple_exporter(exporter.clone())
            .build();
        global::set_tracer_provider(provider);
        exporter
    })
}

/// The finished spans of queue `queue`, and of the spans under them, in the order they ended.
fn spans_of(queue: &str) -> Vec<SpanData> {
    let all = exporter().get_finished_spans().unwrap();
    let ours: Vec<SpanId> = all
        .iter()
        .filter(|s| attr(s, "messaging.destination.name").as_deref() == Some(queue))
        .map(|s| s.span_context.span_id())
        .collect();
    all.into_iter()
        .filter(|s| ours.contains(&s.span_context.span_id()) || ours.contains(&s.parent_span_id))
        .collect()
}

fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

fn named<'s>(spans: &'s [SpanData], name: &str) -> Vec<&'s SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// The trace and span ids a span links to (a link read from a job is remote; the span
/// it names was not, to its exporter).
fn linked(span: &SpanData) -> Vec<(TraceId, SpanId)> {
    span.links.iter().map(|l| ids(&l.span_context)).collect()
}

fn ids(sc: &SpanContext) -> (TraceId, SpanId) {
    (sc.trace_id(), sc.span_id())
}

/// One line per span, for a reader: name, kind, parent, links and attributes.
fn shown(spans: &[SpanData]) -> String {
    spans
        .iter()
        .map(|s| {
            let attributes: Vec<String> = s
                .attributes
                .iter()
                .map(|kv| format!("{}={}", kv.key, kv.value))
                .collect();
            format!(
                "{} {:?} trace={} span={} parent={} links={:?} status={:?} {}",
                s.name,
                s.span_kind,
                s.span_context.trace_id(),
                s.span_context.span_id(),
                s.parent_span_id,
                linked(s)
                    .iter()
                    .map(|(trace, span)| format!("{trace}/{span}"))
                    .collect::<Vec<_>>(),
                s.status,
                attributes.join(" ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn drain(con: &mut redis::Connection, queue: &WorkQueue, stop: &Stop) {
    harness::wait_until("the workers drain the queue", 10, || {
        let c = queue.counts().run(con).unwrap();
        c.waiting + c.delayed + c.leased == 0
    });
    stop.stop();
}

/// A job added inside an app's span and run by a worker on threads of its own: a `send`
/// span under the app's, the job's stored context its, a `receive` and a `process` span
/// that start new traces linked to it, the handler's span inside `process`, and the
/// `settle` of its ack.
#[test]
fn a_job_is_followed_from_its_add_to_its_ack() {
    exporter();
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("otel-one").unwrap();
    let app = global::tracer("app");
    let app_span = app.start("app checkout");
    let app_cx = Context::current_with_span(app_span);
    {
        let _entered = app_cx.clone().attach();
        assert!(queue.add("j1", "hello").run(&mut con).unwrap().is_new());
    }
    app_cx.span().end();
    let stored: Option<String> = redis::cmd("HGET")
        .arg("{otel-one}:jobs")
        .arg("c:j1")
        .query(&mut con)
        .unwrap();

    let stop = Stop::new();
    thread::scope(|scope| {
        let worker = scope.spawn(|| {
            queue
                .worker()
                .concurrency(2)
                .unwrap()
                .poll(Duration::from_millis(10))
                .run_concurrent(&db.client, &stop, |_job: &Job| {
                    global::tracer("app").in_span("app handler", |_| Ok::<_, JobError>(()))
                })
                .unwrap()
        });
        drain(&mut con, &queue, &stop);
        worker.join().unwrap();
    });

    let spans = spans_of("otel-one");
    println!("{}", shown(&spans));
    let [send] = named(&spans, "send otel-one")[..] else {
        panic!("one send span:\n{}", shown(&spans))
    };
    assert_eq!(send.span_kind, SpanKind::Producer);
    assert_eq!(send.parent_span_id, app_cx.span().span_context().span_id());
    assert_eq!(
        send.span_context.trace_id(),
        app_cx.span().span_context().trace_id()
    );
    for (key, value) in [
        ("messaging.system", "redis_patterns"),
        ("messaging.operation.type", "send"),
        ("messaging.operation.name", "add"),
        ("messaging.message.id", "j1"),
        ("messaging.message.body.size", "5"),
        ("redis_patterns.job.state", "waiting"),
        ("redis_patterns.job.added", "true"),
    ] {
        assert_eq!(attr(send, key).as_deref(), Some(value), "{key}");
    }
    let sc = &send.span_context;
    assert_eq!(
        stored,
        Some(format!("00-{}-{}-01", sc.trace_id(), sc.span_id())),
        "the job keeps its send span's context"
    );

    let [receive] = named(&spans, "receive otel-one")[..] else {
        panic!("one receive span:\n{}", shown(&spans))
    };
    assert_eq!(receive.span_kind, SpanKind::Client);
    assert_eq!(receive.parent_span_id, SpanId::INVALID, "a root");
    assert_eq!(linked(receive), [ids(sc)]);
    assert_eq!(
        attr(receive, "messaging.batch.message_count").as_deref(),
        Some("1")
    );

    let [process] = named(&spans, "process otel-one")[..] else {
        panic!("one process span:\n{}", shown(&spans))
    };
    assert_eq!(process.span_kind, SpanKind::Consumer);
    assert_eq!(process.parent_span_id, SpanId::INVALID, "a root");
    assert_ne!(process.span_context.trace_id(), sc.trace_id());
    assert_eq!(linked(process), [ids(sc)]);
    assert_eq!(attr(process, "messaging.message.id").as_deref(), Some("j1"));
    assert_eq!(
        attr(process, "redis_patterns.job.delivery").as_deref(),
        Some("1")
    );
    assert_eq!(process.status, Status::Unset);

    let [handler] = named(&spans, "app handler")[..] else {
        panic!("one handler span:\n{}", shown(&spans))
    };
    assert_eq!(handler.parent_span_id, process.span_context.span_id());
    assert_eq!(
        handler.span_context.trace_id(),
        process.span_context.trace_id()
    );

    let [settle] = named(&spans, "settle otel-one")[..] else {
        panic!("one settle span:\n{}", shown(&spans))
    };
    assert_eq!(settle.span_kind, SpanKind::Client);
    assert_eq!(settle.parent_span_id, process.span_context.span_id());
    assert_eq!(
        attr(settle, "messaging.operation.name").as_deref(),
        Some("ack")
    );
    assert_eq!(
        attr(settle, "redis_patterns.job.outcome").as_deref(),
        Some("ack")
    );
}

/// A job that fails twice, on the async loop: three `process` spans, each a trace of its
/// own linked to the one producer context, the first two failed and settled by a retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_delivery_of_a_retried_job_links_to_its_one_producer() {
    exporter();
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("otel-retried").unwrap();
    let options = JobOptions::new()
        .attempts(5)
        .backoff(Backoff::Fixed(Duration::ZERO));
    queue.add_with("r1", "x", options).run(&mut con).unwrap();

    let stop = Stop::new();
    let mut worker_con = db.multiplexed().await;
    let (worker_queue, worker_stop) = (queue.clone(), stop.clone());
    let worker = tokio::spawn(async move {
        let work = |job: Job| async move {
            if job.delivery < 3 {
                Err(format!("attempt {} failed", job.delivery))
            } else {
                Ok(())
            }
        };
        worker_queue
            .worker()
            .poll(Duration::from_millis(10))
            .run_async(&mut worker_con, &worker_stop, work)
            .await
            .unwrap()
    });
    let (drain_queue, drain_stop) = (queue.clone(), stop.clone());
    tokio::task::spawn_blocking(move || drain(&mut con, &drain_queue, &drain_stop))
        .await
        .unwrap();
    worker.await.unwrap();

    let spans = spans_of("otel-retried");
    let [send] = named(&spans, "send otel-retried")[..] else {
        panic!("one send span:\n{}", shown(&spans))
    };
    let processes = named(&spans, "process otel-retried");
    assert_eq!(processes.len(), 3, "{}", shown(&spans));
    let mut deliveries: Vec<String> = Vec::new();
    for process in &processes {
        assert_eq!(linked(process), [ids(&send.span_context)]);
        deliveries.push(attr(process, "redis_patterns.job.delivery").unwrap());
        let failed = process.status != Status::Unset;
        assert_eq!(
            failed,
            attr(process, "redis_patterns.job.delivery").as_deref() != Some("3"),
            "{}",
            shown(&spans)
        );
    }
    deliveries.sort();
    assert_eq!(deliveries, ["1", "2", "3"]);
    let traces: std::collections::HashSet<TraceId> = processes
        .iter()
        .map(|p| p.span_context.trace_id())
        .collect();
    assert_eq!(traces.len(), 3, "each delivery is a trace of its own");
    let mut outcomes: Vec<String> = named(&spans, "settle otel-retried")
        .iter()
        .map(|s| attr(s, "redis_patterns.job.outcome").unwrap())
        .collect();
    outcomes.sort();
    assert_eq!(outcomes, ["ack", "retry", "retry"]);
    assert_eq!(
        processes
            .iter()
            .filter(|p| p.status == Status::error("attempt 1 failed"))
            .count(),
        1
    );
}

/// Jobs a producer in another language added with no context, or with text that is no
/// W3C context: each runs, with a `process` span that links to nothing.
#[test]
fn a_job_without_a_context_runs_with_no_link() {
    exporter();
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("otel-plain").unwrap();
    let add_keys = crate::work_queue::keys_of(&queue, &script::ADD);
    for (id, trace) in [("p1", ""), ("p2", "not a context"), ("p3", "00-zz-zz-01")] {
        let args = [
            id, "x", "0", "0", "", "0", "worker", "0", "0", "0", "0", "0", trace,
        ];
        harness::eval(&mut con, &script::ADD, &add_keys, &args).unwrap();
    }
    let stop = Stop::new();
    let seen = std::sync::Mutex::new(Vec::new());
    thread::scope(|scope| {
        let worker = scope.spawn(|| {
            queue
                .worker()
                .poll(Duration::from_millis(10))
                .run(&db.client, &stop, |job| {
                    seen.lock()
                        .unwrap()
                        .push((job.id.clone(), job.trace_context.clone()));
                    Ok::<_, JobError>(())
                })
                .unwrap()
        });
        drain(&mut con, &queue, &stop);
        worker.join().unwrap();
    });
    let mut seen = seen.into_inner().unwrap();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("p1".to_owned(), None),
            ("p2".to_owned(), Some("not a context".to_owned())),
            ("p3".to_owned(), Some("00-zz-zz-01".to_owned())),
        ]
    );
    let spans = spans_of("otel-plain");
    assert!(named(&spans, "send otel-plain").is_empty());
    let processes = named(&spans, "process otel-plain");
    assert_eq!(processes.len(), 3, "{}", shown(&spans));
    assert!(processes.iter().all(|p| p.links.is_empty()));
    assert_eq!(named(&spans, "settle otel-plain").len(), 3);
}

/// A flow added inside an app's span is one `send` span whose context the parent and each
/// child keep; a schedule's firing, run inside the same app span, is a `send` span of a
/// trace of its own, named for its schedule, whose context its job keeps.
#[test]
fn a_flow_and_a_firing_each_send_one_span() {
    exporter();
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("otel-flow").unwrap();
    let children = [
        Child::new("c1", "x").unwrap(),
        Child::new("c2", "y").unwrap(),
    ];
    let app_cx = Context::current_with_span(global::tracer("app").start("app report"));
    let _entered = app_cx.clone().attach();
    queue
        .add_flow("parent", "p", JobOptions::new(), &children)
        .run(&mut con)
        .unwrap();
    queue
        .set_schedule(
            "nightly",
            &Schedule::every(Duration::from_secs(3600)).first_run_at(0),
        )
        .run(&mut con)
        .unwrap();
    let due = queue.due_schedules(10).run(&mut con).unwrap();
    let [one] = &due.due[..] else {
        panic!("{:?}", due.due)
    };
    queue.fire(one, due.now_ms).run(&mut con).unwrap();

    let spans = spans_of("otel-flow");
    let sends = named(&spans, "send otel-flow");
    let [flow, firing] = sends[..] else {
        panic!("two send spans:\n{}", shown(&spans))
    };
    assert_eq!(flow.parent_span_id, app_cx.span().span_context().span_id());
    assert_eq!(
        attr(flow, "messaging.operation.name").as_deref(),
        Some("add_flow")
    );
    assert_eq!(
        attr(flow, "messaging.message.id").as_deref(),
        Some("parent")
    );
    assert_eq!(
        attr(flow, "redis_patterns.job.state").as_deref(),
        Some("blocked")
    );
    assert_eq!(
        attr(firing, "messaging.operation.name").as_deref(),
        Some("fire")
    );
    assert_eq!(
        attr(firing, "redis_patterns.schedule").as_deref(),
        Some("nightly")
    );
    assert_eq!(
        firing.parent_span_id,
        SpanId::INVALID,
        "a root, not the app's"
    );
    assert_ne!(
        firing.span_context.trace_id(),
        app_cx.span().span_context().trace_id()
    );

    let text = |sc: &SpanContext| format!("00-{}-{}-01", sc.trace_id(), sc.span_id());
    let stored: Vec<(String, Option<String>)> = redis::cmd("HGETALL")
        .arg("{otel-flow}:jobs")
        .query::<Vec<(String, String)>>(&mut con)
        .unwrap()
        .into_iter()
        .filter(|(field, _)| field.starts_with("s:"))
        .map(|(field, _)| {
            let id = field[2..].to_owned();
            let context = redis::cmd("HGET")
                .arg("{otel-flow}:jobs")
                .arg(format!("c:{id}"))
                .query(&mut con)
                .unwrap();
            (id, context)
        })
        .collect();
    assert_eq!(
        stored.len(),
        4,
        "the parent, two children, a run: {stored:?}"
    );
    for (id, context) in stored {
        let expected = if id.starts_with("nightly:") {
            text(&firing.span_context)
        } else {
            text(&flow.span_context)
        };
        assert_eq!(context, Some(expected), "job {id}");
    }
}
