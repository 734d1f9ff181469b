//! Where the queue's calls and worker loops open their OpenTelemetry spans: the spans of
//! [`otel`](super::otel) with the `otel` feature, and nothing at all without it.

#[cfg(feature = "otel")]
pub(super) use super::otel::{HandlerScope, LoopSpans, SendSpan, send_context};

#[cfg(not(feature = "otel"))]
pub(super) use off::{HandlerScope, LoopSpans, SendSpan, send_context};

#[cfg(not(feature = "otel"))]
mod off {
    use super::super::{Added, Job, JobError};
    use crate::runtime::error::Error;

    /// No span: a job is added with the context its caller gave, or none.
    pub(crate) fn send_context(
        given: Option<&str>,
        _queue: &str,
        _name: &'static str,
        _id: &str,
        _payload: usize,
    ) -> (Option<SendSpan>, String) {
        (None, given.unwrap_or_default().to_owned())
    }

    pub(crate) enum SendSpan {}

    impl SendSpan {
        pub(crate) fn firing(_queue: &str, _schedule: &str) -> (Option<SendSpan>, String) {
            (None, String::new())
        }

        pub(crate) fn added(&self, _added: Added) {
            match *self {}
        }

        pub(crate) fn end(&self) {
            match *self {}
        }
    }

    pub(crate) struct LoopSpans;

    impl LoopSpans {
        pub(crate) fn new(_queue: &str) -> Self {
            LoopSpans
        }
        pub(crate) fn take_sent(&mut self) {}
        pub(crate) fn received(&mut self, _jobs: &[Job]) {}
        pub(crate) fn scope_of(&self, _job: &Job) -> HandlerScope {
            HandlerScope
        }
        pub(crate) fn ended(&mut self, _job: &Job, _failed: Option<&JobError>) {}
        pub(crate) fn panicked(&mut self, _job: &Job) {}
        pub(crate) fn settled(&mut self, _job: &Job, _outcome: Result<&'static str, &Error>) {}
    }

    pub(crate) struct HandlerScope;

    /// What [`HandlerScope::enter`] holds: nothing.
    pub(crate) struct Entered;

    impl HandlerScope {
        pub(crate) fn enter(self) -> Entered {
            Entered
        }
        #[cfg(feature = "aio")]
        pub(crate) fn wrap<F: std::future::Future>(self, work: F) -> F {
            work
        }
    }
}
