//! OpenTelemetry spans that follow a job from its producer to the workers that run it
//! (feature `otel`), after the OpenTelemetry semantic conventions for messaging.
//!
//! Each add keeps its producer's W3C trace context with the job (`c:<id>` in
//! `{name}:jobs`: the `traceparent`, then a space and the `tracestate` if there is one),
//! once: retries hand the same context to each delivery (a context whose sampler dropped
//! it is not kept). The spans go to the global
//! tracer provider (`opentelemetry::global::set_tracer_provider`), under the
//! instrumentation scope `redis-patterns`; with none installed they cost a no-op span,
//! and jobs are added with no context.
//!
//! | Span | Kind | Parent | When |
//! |---|---|---|---|
//! | `send <queue>` | `PRODUCER` | the current context | [`add`](super::WorkQueue::add), [`add_with`](super::WorkQueue::add_with), [`add_deduplicated`](super::WorkQueue::add_deduplicated), [`add_flow`](super::WorkQueue::add_flow) (one for the flow) |
//! | `send <queue>` | `PRODUCER` | none: a root | each firing of a [schedule](super::schedule) |
//! | `receive <queue>` | `CLIENT` | none: a root | each take of a [`Worker`](super::Worker) loop that hands out jobs, with a link to each job's producer |
//! | `process <queue>` | `CONSUMER` | none: a root | each job a worker loop runs, from its take to its handler's end, linked to its producer; the handler runs inside it |
//! | `settle <queue>` | `CLIENT` | its `process` span | from the handler's end to the ack or nack that settled the job |
//!
//! Every span has `messaging.system` = `redis_patterns`, `messaging.destination.name` =
//! the queue's name, `messaging.operation.type` (`send`, `receive`, `process`, `settle`)
//! and `messaging.operation.name` (the call: `add`, `add_deduplicated`, `add_flow`,
//! `fire`, `take`, `process`, `ack`, `nack`); a span of one job has
//! `messaging.message.id` (its id) and, but for a settle, `messaging.message.body.size`.
//! The crate's own attributes are under `redis_patterns.`:
//!
//! | Attribute | On | Value |
//! |---|---|---|
//! | `redis_patterns.job.state` | `send` | the job's state after the add (`waiting`, `delayed`, `parked`, `blocked`), or that of the job already there |
//! | `redis_patterns.job.added` | `send` | `false` when a job with that id was there already |
//! | `redis_patterns.job.delivery` | `process` | which delivery this is, from 1 |
//! | `redis_patterns.job.group` | `process` | the job's group, when it has one |
//! | `redis_patterns.job.outcome` | `settle` | `ack`, `retry`, `dead`, `held_back` (a group [held back](super::WorkQueue::rate_limit_group)) or `lost` (the call never went through: its lease runs out) |
//! | `redis_patterns.schedule` | `send` of a firing | the schedule's name |
//!
//! A failed handler sets its `process` span's status to an error with its message (and
//! `error.type` = `handler`, or `panic`); a settle that failed, to the error's.
//!
//! **No span outlives a job.** The loops open no span of their own: `receive`,
//! `process` and a firing's `send` start from an empty context, whatever context the
//! thread or task that runs the loop has, so a long-lived loop never becomes the parent
//! of the app's traces; renewals and event readers make no spans.
//!
//! **Spans of a `send`.** The span opens when the [`Op`](crate::Op) is built and ends
//! when its reply is read; an `Op` that is never run, or whose call fails, ends its span
//! when it is dropped, with no `redis_patterns.job.state`. A job given a context of its
//! own ([`JobOptions::trace_context`](super::JobOptions::trace_context)) is added with
//! that context and no span.
//!
//! **With the `tracing` feature.** The crate's [`tracing` spans](crate::trace) (one per
//! call, `redis_patterns.op`) are a separate layer: they are children of the current
//! `tracing` span, not of these. An app that turns them into OpenTelemetry spans
//! (`tracing-opentelemetry`) sees a take's call span inside whatever `tracing` span is
//! current, and a handler's own spans inside the `process` span only if it enters that
//! context ([`opentelemetry::Context::current`] while the handler runs is the `process`
//! span's).
//!
//! **A worker of your own.** Jobs taken by hand carry
//! [`Job::trace_context`](super::Job::trace_context); [`producer_context`] reads it,
//! and [`process_span`] opens a `process` span as the loops do.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use opentelemetry::trace::TraceContextExt;
//! use redis_patterns::work_queue::{WorkQueue, otel};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let queue = WorkQueue::new("emails")?;
//! queue.add("welcome:42", "to=ann@example.com").run(&mut con)?; // a `send emails` span
//! for job in queue.take(10).run(&mut con)? {
//!     let cx = otel::process_span(&queue, &job);
//!     let _entered = cx.clone().attach(); // the handler's spans are its children
//!     queue.ack(&job).run(&mut con)?;
//!     cx.span().end();
//! }
//! # Ok(()) }
//! ```

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::SystemTime;

use opentelemetry::global::{self, BoxedTracer};
#[cfg(feature = "aio")]
use opentelemetry::trace::FutureExt;
use opentelemetry::trace::{
    Link, Span as _, SpanBuilder, SpanContext, SpanId, SpanKind, Status, TraceContextExt,
    TraceFlags, TraceId, TraceState, Tracer,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};

use super::{Added, Job, JobError, WorkQueue};
use crate::runtime::error::Error;

/// The attribute keys of the crate's own.
const JOB_STATE: &str = "redis_patterns.job.state";
const JOB_ADDED: &str = "redis_patterns.job.added";
const JOB_DELIVERY: &str = "redis_patterns.job.delivery";
const JOB_GROUP: &str = "redis_patterns.job.group";
const JOB_OUTCOME: &str = "redis_patterns.job.outcome";
const SCHEDULE: &str = "redis_patterns.schedule";

fn tracer() -> BoxedTracer {
    global::tracer_with_scope(
        InstrumentationScope::builder("redis-patterns")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build(),
    )
}

/// A messaging span's name (`<operation type> <queue>`), kind and common attributes.
fn builder(
    queue: &str,
    kind: SpanKind,
    operation: &'static str,
    name: &'static str,
) -> SpanBuilder {
    SpanBuilder::from_name(format!("{operation} {queue}"))
        .with_kind(kind)
        .with_attributes([
            KeyValue::new("messaging.system", "redis_patterns"),
            KeyValue::new("messaging.destination.name", queue.to_owned()),
            KeyValue::new("messaging.operation.type", operation),
            KeyValue::new("messaging.operation.name", name),
        ])
}

/// The context a job carries as the scripts keep it: the W3C `traceparent`, then a space
/// and the `tracestate` when it has entries. `None` for a context without a valid span,
/// or one its sampler dropped: a job would keep its 55 bytes or more for a trace that
/// nobody records.
pub fn context_text(cx: &Context) -> Option<String> {
    let span = cx.span();
    let sc = span.span_context();
    if !sc.is_valid() || !sc.is_sampled() {
        return None;
    }
    let parent = format!(
        "00-{}-{}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8()
    );
    let state = sc.trace_state().header();
    Some(if state.is_empty() {
        parent
    } else {
        format!("{parent} {state}")
    })
}

/// The producer's span context that `job` carries, as [`context_text`] writes it (and any
/// W3C `traceparent` of version 00, with a `tracestate` after a space); `None` for a job
/// added with none, or with text that is no such context.
pub fn producer_context(job: &Job) -> Option<SpanContext> {
    parse_context(job.trace_context.as_deref()?)
}

fn parse_context(text: &str) -> Option<SpanContext> {
    let (parent, state) = text.split_once(' ').unwrap_or((text, ""));
    let mut parts = parent.split('-');
    let (Some("00"), Some(trace), Some(span), Some(flags), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    let lower_hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if !(lower_hex(trace, 32) && lower_hex(span, 16) && lower_hex(flags, 2)) {
        return None;
    }
    let trace_state = state.parse::<TraceState>().unwrap_or_default();
    let sc = SpanContext::new(
        TraceId::from_hex(trace).ok()?,
        SpanId::from_hex(span).ok()?,
        TraceFlags::new(u8::from_str_radix(flags, 16).ok()?),
        true,
        trace_state,
    );
    sc.is_valid().then_some(sc)
}

/// Opens a `process <queue>` span for `job` as the worker loops do: a root, linked to
/// the job's producer, with its id, delivery, group and payload size. End it with
/// `cx.span().end()` (it also ends when the last clone of the context is dropped).
pub fn process_span(queue: &WorkQueue, job: &Job) -> Context {
    process_started(queue.name(), job, SystemTime::now())
}

fn process_started(queue: &str, job: &Job, start: SystemTime) -> Context {
    let mut attributes = vec![
        KeyValue::new("messaging.message.id", job.id.clone()),
        KeyValue::new("messaging.message.body.size", job.payload.len() as i64),
        KeyValue::new(JOB_DELIVERY, i64::from(job.delivery)),
    ];
    if let Some(group) = &job.group {
        attributes.push(KeyValue::new(JOB_GROUP, group.clone()));
    }
    let mut builder =
        builder(queue, SpanKind::Consumer, "process", "process").with_start_time(start);
    builder
        .attributes
        .get_or_insert_with(Vec::new)
        .extend(attributes);
    if let Some(producer) = producer_context(job) {
        builder = builder.with_links(vec![Link::with_context(producer)]);
    }
    let span = tracer().build_with_context(builder, &Context::new());
    Context::new().with_span(span)
}

/// The `send` span of an add, open until its reply is read.
pub(super) struct SendSpan(Context);

impl SendSpan {
    /// Opens `send <queue>` for the call `name` of job `id` (none for a firing, which adds
    /// one job per run) under `parent`, with `payload` bytes; the text of its context is
    /// what the job keeps ('' when no tracer records it).
    pub(super) fn open(
        queue: &str,
        name: &'static str,
        id: Option<&str>,
        payload: usize,
        parent: &Context,
    ) -> (SendSpan, String) {
        let mut builder = builder(queue, SpanKind::Producer, "send", name);
        let attributes = builder.attributes.get_or_insert_with(Vec::new);
        if let Some(id) = id {
            attributes.push(KeyValue::new("messaging.message.id", id.to_owned()));
        }
        attributes.push(KeyValue::new("messaging.message.body.size", payload as i64));
        let span = tracer().build_with_context(builder, parent);
        let cx = parent.with_span(span);
        let text = context_text(&cx).unwrap_or_default();
        (SendSpan(cx), text)
    }

    /// The same for a schedule's firing: a root, named for its schedule.
    pub(super) fn firing(queue: &str, schedule: &str) -> (Option<SendSpan>, String) {
        let (send, text) = SendSpan::open(queue, "fire", None, 0, &Context::new());
        send.0
            .span()
            .set_attribute(KeyValue::new(SCHEDULE, schedule.to_owned()));
        (Some(send), text)
    }

    /// The add answered: the job's state, and whether it was added.
    pub(super) fn added(&self, added: Added) {
        let span = self.0.span();
        span.set_attribute(KeyValue::new(JOB_STATE, added.state().as_str()));
        span.set_attribute(KeyValue::new(JOB_ADDED, added.is_new()));
        span.end();
    }

    /// The call answered with something other than one job's state.
    pub(super) fn end(&self) {
        self.0.span().end();
    }
}

/// The trace context a job is added with: the caller's own (`given`), or that of a new
/// `send` span (see [`SendSpan::open`]).
pub(super) fn send_context(
    given: Option<&str>,
    queue: &str,
    name: &'static str,
    id: &str,
    payload: usize,
) -> (Option<SendSpan>, String) {
    match given {
        Some(text) => (None, text.to_owned()),
        None => {
            let (send, text) = SendSpan::open(queue, name, Some(id), payload, &Context::current());
            (Some(send), text)
        }
    }
}

/// The spans of a worker loop's jobs, by lease token (one per delivery).
#[derive(Default)]
pub(super) struct LoopSpans {
    queue: String,
    take_sent: Option<SystemTime>,
    processing: HashMap<String, Context>,
    settling: HashMap<String, Context>,
}

impl LoopSpans {
    pub(super) fn new(queue: &str) -> Self {
        LoopSpans {
            queue: queue.to_owned(),
            ..LoopSpans::default()
        }
    }

    /// A take was sent (the first time: a call sent again keeps its start).
    pub(super) fn take_sent(&mut self) {
        self.take_sent.get_or_insert_with(SystemTime::now);
    }

    /// The take answered `jobs`: one `receive` span for the call, when it handed out
    /// any, and a `process` span for each.
    pub(super) fn received(&mut self, jobs: &[Job]) {
        let start = self.take_sent.take().unwrap_or_else(SystemTime::now);
        if jobs.is_empty() {
            return;
        }
        let links = jobs
            .iter()
            .filter_map(producer_context)
            .map(Link::with_context)
            .collect();
        let mut builder = builder(&self.queue, SpanKind::Client, "receive", "take")
            .with_start_time(start)
            .with_links(links);
        builder
            .attributes
            .get_or_insert_with(Vec::new)
            .push(KeyValue::new(
                "messaging.batch.message_count",
                jobs.len() as i64,
            ));
        // It covers the take: it ends now that the take answered.
        tracer().build_with_context(builder, &Context::new()).end();
        for job in jobs {
            let cx = process_started(&self.queue, job, start);
            self.processing.insert(job.token.clone(), cx);
        }
    }

    /// The context `job`'s handler runs in.
    pub(super) fn scope_of(&self, job: &Job) -> HandlerScope {
        HandlerScope(self.processing.get(&job.token).cloned())
    }

    /// `job`'s handler ended: its `process` span ends (with the error it failed with),
    /// and its `settle` span opens, named for the call that settles it.
    pub(super) fn ended(&mut self, job: &Job, failed: Option<&JobError>) {
        let Some(cx) = self.processing.remove(&job.token) else {
            return;
        };
        if let Some(why) = failed {
            cx.span()
                .set_attribute(KeyValue::new("error.type", "handler"));
            cx.span()
                .set_status(Status::error(why.message().to_owned()));
        }
        cx.span().end();
        let name = if failed.is_some() { "nack" } else { "ack" };
        let mut builder = builder(&self.queue, SpanKind::Client, "settle", name);
        builder
            .attributes
            .get_or_insert_with(Vec::new)
            .push(KeyValue::new("messaging.message.id", job.id.clone()));
        let span = tracer().build_with_context(builder, &cx);
        self.settling.insert(job.token.clone(), cx.with_span(span));
    }

    /// `job`'s handler panicked: its `process` span ends with that error.
    pub(super) fn panicked(&mut self, job: &Job) {
        if let Some(cx) = self.processing.remove(&job.token) {
            cx.span()
                .set_attribute(KeyValue::new("error.type", "panic"));
            cx.span().set_status(Status::error("the handler panicked"));
            cx.span().end();
        }
    }

    /// `job` was settled with `outcome`, or its call failed.
    pub(super) fn settled(&mut self, job: &Job, outcome: Result<&'static str, &Error>) {
        let Some(cx) = self.settling.remove(&job.token) else {
            return;
        };
        let span = cx.span();
        match outcome {
            Ok(outcome) => span.set_attribute(KeyValue::new(JOB_OUTCOME, outcome)),
            Err(err) => {
                span.set_attribute(KeyValue::new(
                    "error.type",
                    Cow::Owned(err.code().unwrap_or("error").to_owned()),
                ));
                span.set_status(Status::error(err.to_string()));
            }
        }
        span.end();
    }
}

/// The context a handler runs in: its job's `process` span.
pub(super) struct HandlerScope(Option<Context>);

impl HandlerScope {
    /// Makes it the thread's current context until the guard drops.
    pub(super) fn enter(self) -> Option<opentelemetry::ContextGuard> {
        self.0.map(Context::attach)
    }

    /// Runs `work` in it.
    #[cfg(feature = "aio")]
    pub(super) fn wrap<F: std::future::Future>(
        self,
        work: F,
    ) -> impl std::future::Future<Output = F::Output> {
        work.with_context(self.0.unwrap_or_default())
    }
}
