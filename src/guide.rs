//! Reference pages: what the README sums up, in full (`docs/*.md` in the repository, with
//! their links made intra-doc links: see build.rs).
//!
//! - [`dashboard`]: `redis-patterns dashboard`, the web page of a server's work queues:
//!   its flags, what each page shows, its actions, and its security model.
//! - [`from_bullmq`]: moving a BullMQ app to [`work_queue`](crate::work_queue): every
//!   option and method of BullMQ's queue, worker, job, events, flows and schedulers with
//!   its equivalent here, what differs in meaning, and the same app both ways.
//! - [`script_header`]: the grammar of a script's header (every tag, type, constraint and
//!   key template), the shared helpers, and what the generator checks.
//! - [`servers`]: the servers the crate is tested on, what differs between them, and where
//!   the crate sends a server's native command instead of a script.
//! - [`which_lock`]: every coordination primitive (locks, read-write and fair locks,
//!   semaphores, latches, barriers, Redlock, fenced writes), efficiency against
//!   correctness, what a failover does to each, and the peers.

#[doc = include_str!(concat!(env!("OUT_DIR"), "/docs/dashboard.md"))]
pub mod dashboard {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/docs/from-bullmq.md"))]
pub mod from_bullmq {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/docs/script-header.md"))]
pub mod script_header {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/docs/servers.md"))]
pub mod servers {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/docs/which-lock.md"))]
pub mod which_lock {}
