//! A reliable work queue: jobs with leases, retries, a dead-letter queue, delays,
//! priorities, deduplication, limits the queue owns (per group and queue-wide) and
//! metrics (beyond the books).
//!
//! The books' queues ([`fifo_queue`](crate::fifo_queue), and the message queue of
//! chapter 14 in `message_queue`) lose a job when the worker that popped it dies. Here a
//! worker *takes* a job under a **lease** (a visibility timeout, on the server's clock),
//! renews it while it works ([`extend`](WorkQueue::extend)), and ends it with
//! [`ack`](WorkQueue::ack) (done: the job leaves the queue) or [`nack`](WorkQueue::nack)
//! (failed: retried after a backoff, or moved to the dead-letter queue after
//! [`max_deliveries`](WorkQueue::with_max_deliveries)). A worker that dies just stops
//! renewing; once its lease has run out the job is handed to another worker, with its
//! delivery count. Delivery is at least once: a job whose lease runs out while its
//! worker is still busy (a long pause, a lost network) runs again, so handlers should be
//! idempotent.
//!
//! Every operation is one script (`scripts/work_queue/*.lua`), so it is one round trip
//! and atomic; [`Worker`] is the loop that takes jobs, renews their leases while the
//! handler runs, and acks or nacks by the handler's result. What a crashed worker, a
//! closed connection, a failover and an idle queue do to it is under
//! [Faults](#faults).
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::work_queue::{JobOptions, Stop, WorkQueue};
//!
//! let client = redis::Client::open("redis://127.0.0.1/")?;
//! let mut con = client.get_connection()?;
//! let queue = WorkQueue::new("emails")?.with_lease(Duration::from_secs(60))?;
//!
//! // Producers: the id deduplicates; a second add of "welcome:42" changes nothing.
//! queue.add("welcome:42", "to=ann@example.com").run(&mut con)?;
//! queue
//!     .add_with("digest:42", "weekly", JobOptions::new().delay(Duration::from_secs(3600)))
//!     .run(&mut con)?;
//!
//! // A worker: by hand...
//! for job in queue.take(10).run(&mut con)? {
//!     if let Err(why) = send_email(&job.payload) {
//!         queue.nack(&job, &why).run(&mut con)?; // retried after a backoff, or dead
//!     } else {
//!         queue.ack(&job).run(&mut con)?;
//!     }
//! }
//!
//! // ...or with the loop, which also renews leases while `send_email` runs, on
//! // connections of its own.
//! let stop = Stop::new();
//! let report = queue.worker().run(&client, &stop, |job| send_email(&job.payload))?;
//! # Ok(()) }
//! # fn send_email(_: &[u8]) -> Result<(), String> { Ok(()) }
//! ```
//!
//! # Keys and states
//!
//! A queue named `name` is its keys in `name`'s hash slot; each script takes the ones it
//! uses, in this order (its header lists them):
//!
//! | Key | Type | Holds |
//! |---|---|---|
//! | `{name}:waiting` | zset | job id → rank: `(255 − priority) × 10^13 + arrival number` |
//! | `{name}:delayed` | zset | job id → when it is due (ms, server clock) |
//! | `{name}:leased` | zset | job id → lease deadline (ms) |
//! | `{name}:dead` | zset | job id → when it died (ms): the dead-letter queue |
//! | `{name}:parked` | zset | jobs held back by their group's limits (score 0, named so that one group is one lexicographic range) |
//! | `{name}:jobs` | hash | `<x>:<id>` per job: `d` payload, `s` state, `r` rank, `n` deliveries, `g` group, `t` lease token, `e` last error, `a` when it was first ready; the counter `#seq`; `#paused` (`1`) while the queue is [paused](#pause-and-resume); the queue's [settings](#limits-the-queue-owns) `#settings`, its rate ring `#qn` and `#qs:<i>`; its [metrics](#metrics) `#totals` and `#m:<slot>` |
//! | `{name}:groups` | hash | per group `g`: `r:<g>` jobs running; `p:<g>` jobs started, `z:<g>` the ring's size, `s:<g>:<i>` a ring of the last start times, `o:<g>` where old start times left by a change of the rate end; `u:<g>` until when a handler [held it back](WorkQueue::rate_limit_group) |
//! | `{name}:wake` | zset | group → when its rate window lets a parked job start |
//! | `{name}:idle` | zset | group → when its ring of start times stops mattering (it is dropped then), or now while old start times of it are left to drop |
//! | `{name}:signal` | zset | one member while a job may be ready: idle workers wait on it with `BZPOPMIN` |
//! | `{name}:events` | stream | what happened to each job, once [events](#events-results-and-progress) are on: `event`, `job`, and `error` or `progress`; at most the queue's cap |
//! | `{name}:results` | hash | job id → the result its worker gave, while kept |
//! | `{name}:kept` | zset | job id → until when its result is kept (ms) |
//! | `{name}:turns` | zset | group (`''` for jobs without one) → its turn, while [groups take turns](#groups-that-take-turns) |
//!
//! A flow's parent ([`add_flow`](WorkQueue::add_flow)) is `blocked`, in `{name}:jobs`
//! only, with `w:<id>` the children it waits for and `x:<id>` the failed ones it lists;
//! each child names it in `P:<id>`. A job's last progress report is `p:<id>`. The
//! [schedules](schedule) live in `{name}:schedules`, `{name}:due` and
//! `{name}:schedules_wake`.
//!
//! A job moves between six [`State`]s:
//!
//! ```text
//!  add_flow ──► blocked (a parent) ──its last child ends──► waiting
//!  add ──► waiting ◄──────────── delayed ◄── add with a delay
//!           │  ▲  ▲                  ▲
//!      take │  │  └── parked ◄─┐     │ nack with a delay
//!           ▼  │ unpark        │ take (group at its limit)
//!         leased ──────────────┘     │
//!           │ │ └── lease runs out, or nack ──► waiting / delayed, or dead after max deliveries
//!       ack │ └────────────────────────────────► dead ──requeue──► waiting
//!           ▼                                     └──remove──► (gone)
//!         (gone)
//! ```
//!
//! Hand-outs happen only in `take`: it first returns lapsed leases (up to `limit`),
//! promotes due delayed jobs (up to `limit`) and wakes groups whose rate window passed
//! (up to `limit` jobs), then examines at most `4 × limit` waiting jobs in rank order, and
//! last drops the start times of groups idle for a whole period. A change of the rate
//! limit starts each group's ring of start times anew; the old start times, and those of
//! idle groups, go at most 400 per call. So every call does bounded work, whatever the
//! queue's size: at `limit` = [`MAX_TAKE`] and every chore full, one call takes about
//! 3 ms of server time (`cargo bench --bench worst_case`); a backlog of lapsed leases,
//! due jobs or old start times drains over successive calls. The call is read and
//! checked whole before it writes: data another client wrote into the queue's keys (a
//! parked entry, a count, a record the scripts never write) is refused with the
//! script's error code and nothing changed, so no job is lost or left half moved.
//!
//! # From another language
//!
//! Each script's header is its manual; a worker in any language runs the same steps
//! (here with redis-cli, for a queue named `mail`):
//!
//! ```text
//! $ redis-cli --eval scripts/work_queue/add.lua '{mail}:waiting' '{mail}:delayed' '{mail}:jobs' \
//!     '{mail}:signal' , welcome:42 'to=ann@example.com' 0 0 ''   # id, payload, priority, delay ms, group
//! 1
//! waiting
//! $ redis-cli --eval scripts/work_queue/take.lua '{mail}:waiting' '{mail}:delayed' '{mail}:leased' \
//!     '{mail}:dead' '{mail}:parked' '{mail}:jobs' '{mail}:groups' '{mail}:wake' '{mail}:idle' \
//!     '{mail}:signal' '{mail}:events' '{mail}:results' '{mail}:kept' , 30000 1 5 $(openssl rand -hex 16)
//!     # lease ms, limit, max deliveries, 128 random bits,
//!     # then the id, token and result ('' for none) of each job to ack first (none here)
//! welcome:42                              # id
//! 9b1c0e6f4d2a48c7a1f3e5d7c9b0a2e4:1      # lease token
//! 1                                       # delivery
//! 1795464207092                           # lease deadline (ms)
//!                                         # group ('' for none)
//! to=ann@example.com                      # payload
//! $ redis-cli --eval scripts/work_queue/extend.lua '{mail}:leased' '{mail}:jobs' \
//!     , welcome:42 9b1c0e6f4d2a48c7a1f3e5d7c9b0a2e4:1 30000
//! 1795464207100
//! $ redis-cli --eval scripts/work_queue/ack.lua '{mail}:waiting' '{mail}:leased' '{mail}:parked' \
//!     '{mail}:jobs' '{mail}:groups' '{mail}:signal' '{mail}:events' '{mail}:results' '{mail}:kept' \
//!     , welcome:42 9b1c0e6f4d2a48c7a1f3e5d7c9b0a2e4:1 ''    # id, token, result ('' for none)
//! 1795464177107
//! $ redis-cli BZPOPMIN '{mail}:signal' 5   # nothing to take: wait up to 5 s for a job
//! $ redis-cli --eval scripts/work_queue/pause.lua '{mail}:jobs'                 # take hands out nothing
//! 1
//! $ redis-cli --eval scripts/work_queue/resume.lua '{mail}:jobs' '{mail}:signal' # and again
//! 1
//! ```
//!
//! # Pause and resume
//!
//! [`pause`](WorkQueue::pause) sets `#paused` in `{name}:jobs`; while it is set, `take`
//! hands out nothing and wakes no worker (it still acks the jobs it is given and hands
//! back lapsed leases), adds are accepted, and leased jobs run on and end as usual. Idle
//! workers wait on `{name}:signal` as on an empty queue: an add wakes one, whose `take`
//! answers nothing, and it waits again, so a paused queue costs no faster polling.
//! [`resume`](WorkQueue::resume) clears the flag and fills `signal`: one idle worker wakes
//! at once, and its `take` wakes the next while jobs are left. The flag is read by the one
//! `take` call that also takes, so no worker can start a job after `pause` answered.
//!
//! # Operating a queue from a shell
//!
//! The `redis-patterns` command (`cargo install redis-patterns --features cli`) runs
//! these operations on a queue by name, each through the op documented here (one
//! script, never a raw command), on a server or a cluster (`--cluster`): `counts`,
//! `metrics [--prometheus]`, `list <state>`, `job <id>`, `settings`, `pause`, `resume`,
//! `retry <id>` or `retry --all-dead`, `remove <id>`, `drain [--delayed]`, `clean
//! <state>`, `delete [--force]`, `priority <id> <p>`, `delay <id> <ms>`, `promote <id>`
//! and `limits [--group-concurrency N] …` (which changes only the settings it names).
//! Bulk actions call their script 100 jobs at a time until done; the output is `key:
//! value` lines or an aligned table, and the exit code is 0 when done, 1 for an error
//! from Redis or a script (a `delete` of a running queue says to pause it first), 2 for a
//! command line that makes no sense, with nothing sent.
//!
//! ```text
//! $ redis-patterns queue emails counts --url redis://127.0.0.1:6379
//! waiting: 2
//! parked: 0
//! delayed: 0
//! leased: 1
//! dead: 3
//! paused: no
//! $ redis-patterns queue emails retry --all-dead
//! requeued: 3
//! $ redis-patterns queue emails limits --group-concurrency 2 --group-rate 10 --group-period-ms 1000
//! ```
//!
//! # Faults
//!
//! - **A worker dies** (a crash, `SIGKILL`, a lost machine): it stops renewing, and once
//!   its lease runs out the next `take` hands its job to another worker with its delivery
//!   count; a job that ran out of leases on its last delivery goes to the dead-letter
//!   queue with the reason "lease ran out on the last delivery".
//! - **A connection closes** (the server's `timeout` closed an idle one, a proxy or
//!   `CLIENT KILL` cut it, the server restarted): the sync [`Worker`] opens its
//!   connections itself from a client and opens them again, sending a failed renewal
//!   once more at once, so a long job keeps its lease; [`WorkReport`] counts the failed
//!   renewals and the reconnects. The async loop renews on a clone of its connection:
//!   give it a `ConnectionManager`, which reconnects by itself.
//! - **A server that changes roles, restarts or moves slots.** A managed failover (or
//!   `REPLICAOF`) demotes the primary: a worker blocked in `BZPOPMIN` on it gets
//!   `UNBLOCKED … (master -> replica?)`, and every write it sends there `READONLY`; a
//!   restarted server answers `LOADING` while it reads its data, and a cluster moving
//!   slots `TRYAGAIN` or `CLUSTERDOWN`. The [`Worker`] loops treat these, and failed
//!   connections, as errors that pass ([`is_transient`], the one place that says which):
//!   they open a new connection and send the call again after a pause that doubles from
//!   10 ms up to 1 s, count it in [`WorkReport::server_retries`] and `reconnects`, and
//!   stop only on errors that cannot pass (BullMQ#648: its workers stopped after such a
//!   reconnect). The new connection comes from the worker's [`Connect`]: a
//!   [`redis::Client`] reaches the same address again (a managed Redis's endpoint that
//!   follows the primary, or the demoted node until it is a primary again); a `Connect`
//!   of your own can ask Sentinel which node is the primary. The held job is safe
//!   meanwhile: its renewals are retried, and its lease brings it back if they fail.
//! - **An evicting server.** A queue's records are in one hash, `{name}:jobs`; a server
//!   whose `maxmemory-policy` evicts any key (`allkeys-*`) can evict it, and every later
//!   `take` then drops the ids it finds without a record, silently. Run queues on a server
//!   with `noeviction` (a `volatile-*` policy never evicts them either: none of their
//!   keys has an expiry). A [`Worker`] looks once as it starts ([`Worker::on_eviction`]):
//!   it warns (with `tracing`) and reports [`WorkReport::memory_policy`] by default, or
//!   refuses to run with [`Error::EvictingServer`]; where `CONFIG GET` is refused (a
//!   managed Redis, an ACL), the policy is [`MemoryPolicy::Unknown`] and one warning says
//!   so. [`memory_policy`] reads it for your own check.
//! - **A handler that blocks its thread.** The sync loops renew from a thread of their
//!   own. The async loop renews in its own task unless [`Worker::renew_from`] gives the
//!   renewals a thread and a connection of their own: without it, a handler that blocks
//!   the executor (CPU work outside `spawn_blocking`) stops its own renewals, its lease
//!   runs out and the job runs again elsewhere (BullMQ#631, #3078).
//! - **A failover** to a replica that missed the primary's last writes (replication is
//!   asynchronous): the jobs it missed come back to the state the replica knew (an add
//!   it missed is gone, an ack it missed runs the job again, a take it missed hands the
//!   job out again), as Redis documents for every write. A lease token is 128 random bits
//!   the taking call drew and the delivery count, never a counter of the server's, so the
//!   new primary never hands out a token a worker of the old one holds: that worker's
//!   ack, extend or nack gets [`LEASE_LOST`]. Where an acknowledged add must survive a
//!   failover, wait for a replica in the same round trip with
//!   [`Op::wait_for`](crate::Op::wait_for) (and, on Redis 7.2+ and Valkey, for the
//!   append-only file): an add that a replica acknowledged survives that replica's
//!   promotion, and waiting never turns an applied add into an error. The crate's other
//!   holders meet the same failover: the tokens of
//!   [`IdentityLock`](crate::identity_lock::IdentityLock),
//!   [`ResourcePool`](crate::resource_pool::ResourcePool) leases and
//!   [`session`](crate::session)s are random and the caller's, as these are, so none is
//!   handed out twice, but a lock taken, a lease granted or a session created that the
//!   replica missed is gone (a second holder can take the lock; the user signs in again);
//!   [`FencedLock`](crate::fenced_lock::FencedLock)'s tokens come from a counter on the
//!   server, which a promoted replica can repeat (its docs say what that leaves).
//! - **An idle queue**: every script that makes a job ready (an add, a nack to waiting, an
//!   ack or nack that frees a group's slot, a requeue, a take that leaves jobs behind)
//!   adds the one member of `{name}:signal`; an idle worker waits on it with `BZPOPMIN`
//!   ([`wait_for_work`](WorkQueue::wait_for_work)), so a job added to an idle queue starts
//!   at once and one waiting worker wakes per ready job. A delayed job that comes due
//!   wakes no one: it is found within the worker's [`poll`](Worker::poll), the longest
//!   wait, drawn at random from 80 to 100 % of it so that workers do not look in step;
//!   an exponential [`Backoff`] is jittered the same way.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::{Durability, work_queue::WorkQueue};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let queue = WorkQueue::new("emails")?;
//! let added = queue
//!     .add("welcome:42", "to=ann@example.com")
//!     .wait_for(Durability::replicas(1).timeout(Duration::from_millis(500)))
//!     .run(&mut con)?;
//! if !added.is_met() {
//!     // On the primary only, for now. Adding it again deduplicates while the job is in
//!     // the queue; once it ran and was acked, the id is free and it would run again.
//! }
//! # Ok(()) }
//! ```
//!
//! # Why sorted sets, not a stream
//!
//! A stream with a consumer group has leases of a kind (the pending entries list,
//! `XAUTOCLAIM`), but no delays, no priorities, no deduplication and no per-group limits,
//! and a delay built beside it turns into a second delivery when it outlives the claim
//! timeout (kombu#337). Sorted sets give each of these one place: a delayed job sits in
//! `delayed` holding no lease, so a delay can never cause a second delivery; `waiting` is
//! ordered by priority then arrival; a job's id is its member, so deduplication is one
//! `HGET`. Everything runs on Redis 7.0 and Valkey 8.
//!
//! # Limits the queue owns
//!
//! A job added with a [`group`](JobOptions::group) (a tenant, a user, an API key) counts
//! against its group's limits: at most [`concurrency`](Limits::concurrency) of its jobs
//! held at once, and at most [`rate`](Limits::rate) started per period (a sliding window:
//! in any span of that length). A job whose group is at a limit is *parked*: out of
//! `waiting`, so it never blocks other groups' jobs, and back when a job of its group
//! ends (concurrency) or when the window passes (rate). The whole queue may have limits
//! too (BullMQ's global concurrency and its worker `limiter`): at most so many jobs held,
//! and started per period, whichever worker takes them.
//!
//! These limits are the queue's, not the workers': an operator sets them with
//! [`configure`](WorkQueue::configure) (the [`Changes`] it names, the other settings
//! kept; or a whole [`Settings`]), they live in `{name}:jobs`, and every `take` reads
//! them, so a worker deployed with other code still applies the same ones, and a change
//! holds from the next `take`. Raising a group limit wakes up to 100 groups with parked
//! jobs at once. A handler whose upstream answers "too many requests"
//! for one tenant holds that tenant back with
//! [`rate_limit_group`](WorkQueue::rate_limit_group) (or returns
//! [`JobError::rate_limit_group`] from a [`Worker`]'s handler): its job is parked with its
//! delivery not counted, and no job of its group starts until the hold has passed, while
//! other groups go on (BullMQ Pro's `rateLimitGroup`).
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::work_queue::{Limits, Settings, WorkQueue};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let queue = WorkQueue::new("reports")?;
//! let settings = Settings::new()
//!     // Each tenant: at most 2 jobs at once, at most 10 started per second.
//!     .group_limits(Limits::new().concurrency(2)?.rate(10, Duration::from_secs(1))?)
//!     // The whole queue: at most 50 jobs at once.
//!     .queue_limits(Limits::new().concurrency(50)?);
//! queue.configure(&settings).run(&mut con)?;
//! # Ok(()) }
//! ```
//!
//! # Groups that take turns
//!
//! By default jobs are taken in priority then arrival order across all groups, so one
//! tenant's backlog of 10,000 jobs delays every other tenant's jobs behind it (its group
//! limits only cap how many of them run). With [`Settings::group_turns`] the groups with
//! jobs ready take turns instead (round-robin, BullMQ Pro's groups): one job per turn,
//! and a group that just had a job taken goes behind every other group with jobs ready.
//! Jobs without a group are one group of their own (`''`), taking turns with the others.
//! Priority orders the jobs of one group; it does not jump between groups (a turn is a
//! turn, so one tenant's priorities cannot starve another tenant).
//!
//! How it is kept, bounded: a job ready for its turn is *parked* in its group's
//! lexicographic range of `{name}:parked` (as a job held back by a limit, in rank order,
//! and [counted](WorkQueue::counts) as parked), and each such group has a turn number in
//! `{name}:turns`. `add` puts a new job there at once and gives its group, if it has
//! none, the next turn. Jobs that come back by other paths (a lapsed lease, a retry, a
//! delay that ends, a group slot freed, a requeue) come back to `waiting`, and each
//! `take` first moves up to 2 × its `limit` of them to their groups; then it takes the
//! first job of the group with the lowest turn, gives that group the next turn if it has
//! more, and so on, up to `limit` jobs and 2 × `limit` turns examined. A group at a limit
//! loses its turn, its jobs stay parked, and it gets a turn again when one of them comes
//! back to `waiting` (a job of it ends, its window passes). Switching turns on or off
//! with jobs queued loses nothing: with turns on, `take` moves the jobs left in `waiting`
//! (2 × `limit` a call); with turns off, each `take` hands the jobs of up to `limit`
//! groups that still have a turn (up to `limit` jobs) back to `waiting`. Until those
//! moves are done, the order is partly the old one.
//!
//! Off, turns cost a queue one `EXISTS` per `take` (shared with the keys of events and
//! results). On, a `take` of `limit` L moves and
//! examines O(L) items (its worst case is in `benches/worst_case.rs`), and `add` two
//! more reads of `{name}:turns`. `cargo bench --bench
//! work_queue_fairness` measures a small tenant's wait behind a big tenant's backlog,
//! with turns off and on.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::work_queue::{Changes, JobOptions, WorkQueue};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let queue = WorkQueue::new("exports")?;
//! queue.configure(&Changes::new().group_turns(true)).run(&mut con)?;
//! for n in 0..1_000 {
//!     queue.add_with(&format!("big:{n}"), "…", JobOptions::new().group("big")).run(&mut con)?;
//! }
//! queue.add_with("small:1", "…", JobOptions::new().group("small")).run(&mut con)?;
//! // The small tenant's job is second, not 1,001st.
//! let jobs = queue.take(2).run(&mut con)?;
//! assert_eq!(jobs[1].id, "small:1");
//! # Ok(()) }
//! ```
//!
//! # Failures and the dead-letter queue
//!
//! A failed delivery is retried after the [`Backoff`] until its last delivery, then goes
//! to `{name}:dead` with its error. A job that can never succeed (a malformed payload)
//! fails for good at once: [`fail`](WorkQueue::fail), or [`JobError::unrecoverable`] from
//! a handler (BullMQ's `UnrecoverableError`). The dead-letter set is capped by count and
//! by age (10,000 jobs and 180 days unless [configured](Settings::dead_letters), Sidekiq's
//! caps): each death drops up to two jobs beyond the cap and each `take` up to its
//! `limit`, oldest first, with their records. Operators move dead jobs back in bulk
//! ([`retry_dead`](WorkQueue::retry_dead)), remove jobs of a state in bulk
//! ([`clean`](WorkQueue::clean): draining the waiting jobs, dropping dead letters),
//! change a job's [priority](WorkQueue::set_priority) or [delay](WorkQueue::set_delay),
//! [promote](WorkQueue::promote) a delayed job, and [delete](WorkQueue::delete) a paused
//! queue. Every bulk call handles at most [`MAX_BULK`] jobs, so each stays bounded; call
//! again while it answers that many. [`exists`](WorkQueue::exists) tells a queue that
//! holds something from a name nobody used (a typo reads as an empty queue).
//!
//! # Metrics
//!
//! The scripts that end jobs count them as they do, at no extra round trip: `ack` and
//! `take`'s acks as completed jobs, `nack` and leases that ran out as failed deliveries
//! (a job that fails three times counts three), and the jobs that died. The counts are
//! kept in `{name}:jobs` as all-time totals and per minute of the server's clock over a
//! window of up to a day, once an operator turns them on ([`Changes::metrics_minutes`];
//! off by default, as BullMQ's: they cost each script that ends a job two hash commands,
//! about a tenth of its server time). [`metrics`](WorkQueue::metrics) reads them with
//! the counts per state and the age of the job next in line (how long it has been ready,
//! metrics on or off: every job is stamped with when it was first ready) in one call,
//! and [`Metrics::prometheus`] writes them in Prometheus' text format.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::work_queue::{Changes, WorkQueue};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let queue = WorkQueue::new("emails")?;
//! queue.configure(&Changes::new().metrics_minutes(60)?).run(&mut con)?; // once
//! let metrics = queue.metrics(60).run(&mut con)?;
//! println!("{} waiting, {} completed in the last hour", metrics.counts.waiting,
//!     metrics.minutes.iter().map(|m| m.completed).sum::<u64>());
//! print!("{}", metrics.prometheus(queue.name())); // for a /metrics endpoint
//! # Ok(()) }
//! ```
//!
//! # Events, results and progress
//!
//! What happens to each job can be followed, and a job's outcome read, at a cost only to
//! a queue that asks for it:
//!
//! - **Events** ([`Settings::events`], off by default): `ack`, `take`'s acks and lapsed
//!   leases, `nack`, `retry_dead`, `requeue` and [`progress`](WorkQueue::progress) append
//!   `completed`, `failed` (with the error; retried), `dead`, `retried` or `progress` to
//!   `{name}:events` in the same call. The stream keeps the newest `max` entries exactly
//!   (at most [`MAX_EVENTS`]). An [`Events`] reader follows them from an id, blocking on
//!   the stream itself (`XREAD BLOCK`), and goes on from the last id it handed out after
//!   a reconnect; each read says whether the cap may have trimmed entries it had not read
//!   ([`EventPage::lost`]). [`wait_for_job`](WorkQueue::wait_for_job) waits for one
//!   job's end: it reads where the events stand, then the job's state (an end before the
//!   call is seen there), then follows the events, and reads the state again when the
//!   cap trimmed some. Called again on a new connection after an error, it misses
//!   nothing.
//! - **Results**: a worker that acks with a result ([`ack_with`](WorkQueue::ack_with), a
//!   [`Done::with_result`] in [`ack_and_take`](WorkQueue::ack_and_take), or a
//!   [`Worker`] handler that returns one: [`JobOutput`]) has it kept in
//!   `{name}:results` for the queue's result time (an hour unless set, at most 30 days),
//!   and one longer than the queue's bound (16 KiB unless set, at most
//!   [`MAX_RESULT_BYTES`]) is refused with [`RESULT_TOO_BIG`], the job still held. Each
//!   kept result drops two whose time passed, and each `take` up to its `limit`, so the
//!   results kept shrink as fast as they grow; [`result`](WorkQueue::result) never
//!   answers one whose time passed. Nothing is kept for an ack without a result.
//! - **Progress**: the holder of a job may report its progress (at most
//!   [`MAX_PROGRESS_BYTES`]); [`job`](WorkQueue::job) shows the last report and the
//!   events carry each.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::work_queue::{Changes, WorkQueue};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let queue = WorkQueue::new("renders")?;
//! queue.configure(&Changes::new().events(10_000)?).run(&mut con)?; // once
//! let mut events = queue.events(&queue.newest_event().run(&mut con)?);
//! loop {
//!     for event in events.next(&mut con, Duration::from_secs(30))? {
//!         println!("{} {}", event.kind.as_str(), event.job);
//!     }
//!     // Keep `events.last_id()` to go on from there after a restart.
//! }
//! # }
//! ```
//!
//! # Flows
//!
//! [`add_flow`](WorkQueue::add_flow) adds a parent job and its children (up to
//! [`MAX_CHILDREN`], jobs of the same queue) in one call: the children wait at once, and
//! the parent ([`State::Blocked`]) runs once each of them has ended. The script that ends
//! a child (an ack, a nack or `take`'s acks and lapsed leases) tells the parent in the
//! same call, so no checker runs and no end is missed. A child's [`OnChildFailure`]
//! says what its death does to the parent: fail it, be ignored, or be listed in the
//! parent's [`failed_children`](JobInfo::failed_children) for its worker to read.
//! Children in other queues, or in another cluster slot, are the app's to join: wait for
//! each ([`wait_for_job`](WorkQueue::wait_for_job)), then add the parent. Removing a
//! child leaves its parent waiting for it: remove the parent too.
//!
//! # Differences from other queues
//!
//! - BullMQ's open-source core has no group concurrency or group rate limits, no
//!   `rateLimitGroup` and no round trip-free metrics beside a job's end (they are in its
//!   paid tier, or opt-in); here they are part of `take` and of the scripts that end jobs. BullMQ holds a job with a lock key
//!   per job and finds stalled jobs with a separate periodic check; its "job stalled more
//!   than allowable limit" is, here, a lease that ran out on the last delivery: the job
//!   goes to the dead-letter queue with the reason "lease ran out on the last delivery",
//!   and the next `take` notices it, with no checker to run. Its lock tokens are random,
//!   as the leases' here; its worker acks a job and fetches the next in one call, as
//!   [`ack_and_take`](WorkQueue::ack_and_take) does, and wakes on a marker key with
//!   `BZPOPMIN`, as `{name}:signal` here.
//! - Beyond BullMQ: round-robin between groups is BullMQ Pro's (paid, closed source) main
//!   group feature; its open-source core takes jobs in priority and arrival order only,
//!   so one tenant's backlog holds back every other tenant. Here
//!   [`Settings::group_turns`] turns it on, in the same `take`, bounded by its `limit`,
//!   with no separate process.
//! - Sidekiq's open-source fetch pops a job off a list (`BRPOP`), and Resque pops one too:
//!   a worker that dies mid-job loses it. Here the lease brings it back.
//! - Celery's Redis transport (kombu) hands a task with a countdown or ETA to a worker at
//!   once, which holds it unacknowledged until it is due; a delay longer than the
//!   visibility timeout makes the transport restore and deliver it a second time
//!   (kombu#337). Here a delayed job sits in `delayed`, holding no lease, until it is due.
//! - All three leave deduplication to plug-ins or to the caller; here an id is never
//!   queued twice, and `add` says where the job already is.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use redis::{FromRedisValue, ToRedisArgs, Value};

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::{Op, ScriptMode};
use crate::runtime::show::Bytes;
use crate::runtime::token;
use crate::scripts::work_queue as script;

mod events;
mod flow;
mod operate;
pub use events::{
    Event, EventKind, EventPage, Events, JobEnd, MAX_EVENTS_READ, MAX_PROGRESS_BYTES,
};
pub use flow::{Child, MAX_CHILDREN, OnChildFailure};
pub use operate::{
    Changes, Configured, MAX_BULK, MAX_EVENTS, MAX_METRICS_MINUTES, MAX_RESULT_BYTES,
    MAX_RESULT_TTL, Metrics, Minute, Settings,
};
pub mod schedule;
pub use schedule::{
    Due, DueSchedule, Fired, MAX_CATCH_UP, MAX_SCHEDULES_PAGE, Missed, Schedule, ScheduleInfo,
    ScheduleReport, Scheduler, Timing,
};

/// The longest a concurrent worker with jobs still running waits for new work before it
/// looks for jobs that ended, to ack them.
const IN_FLIGHT_WAIT: Duration = Duration::from_millis(100);

/// The most jobs one [`take`](WorkQueue::take) hands out (its `limit`), and acks
/// ([`ack_and_take`](WorkQueue::ack_and_take)): at 10, with every chore full and a result
/// of the longest size per ack, a call takes a few milliseconds of server time.
pub const MAX_TAKE: u64 = 10;
/// The most jobs a [`Worker`] runs at once ([`Worker::concurrency`]): it takes them up to
/// [`MAX_TAKE`] per call.
pub const MAX_CONCURRENCY: u64 = 25;
/// The most jobs one page of [`list`](WorkQueue::list) holds.
pub const MAX_PAGE: u64 = 100;
/// The highest [`priority`](JobOptions::priority).
pub const MAX_PRIORITY: u8 = 255;

/// The code of the error [`ack`](WorkQueue::ack), [`nack`](WorkQueue::nack) and
/// [`extend`](WorkQueue::extend) fail with when the caller no longer holds the job:
/// `err.code() == Some(LEASE_LOST)`.
pub const LEASE_LOST: &str = "LEASE_LOST";

/// The code of the error [`ack_with`](WorkQueue::ack_with) and
/// [`ack_and_take`](WorkQueue::ack_and_take) fail with when a result is longer than the
/// queue keeps ([`Settings::results`]): `err.code() == Some(RESULT_TOO_BIG)`. The job is
/// still held then.
pub const RESULT_TOO_BIG: &str = "RESULT_TOO_BIG";

/// A job a worker is done with, and the result to keep for it, if any: what
/// [`ack_and_take`](WorkQueue::ack_and_take) acks. A `&Job` converts to one with no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done<'j> {
    job: &'j Job,
    result: Vec<u8>,
}

impl<'j> Done<'j> {
    /// `job`, done, with `result` to keep (see [`WorkQueue::ack_with`]). A value that is
    /// not sent as one argument is [`Error::InvalidInput`].
    pub fn with_result<V: ToRedisArgs>(job: &'j Job, result: V) -> Result<Self> {
        Ok(Done {
            job,
            result: input::value("result", &result)?,
        })
    }

    /// The job.
    pub fn job(&self) -> &'j Job {
        self.job
    }
}

impl<'j> From<&'j Job> for Done<'j> {
    fn from(job: &'j Job) -> Self {
        Done {
            job,
            result: Vec::new(),
        }
    }
}

/// What a [`Worker`]'s handler gives back for a job it did: nothing (`()`), or a result
/// the queue keeps ([`WorkQueue::ack_with`]; an empty one keeps nothing).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::work_queue::{Stop, WorkQueue};
///
/// let client = redis::Client::open("redis://127.0.0.1/")?;
/// let queue = WorkQueue::new("invoices")?;
/// queue.worker().run(&client, &Stop::new(), |job| {
///     let total: u64 = job.payload_as().map_err(|e| e.to_string())?;
///     Ok::<_, String>(format!("{{\"total\":{total}}}"))
/// })?;
/// # Ok(()) }
/// ```
pub trait JobOutput {
    /// The result's bytes; empty for none.
    fn into_result(self) -> Vec<u8>;
}

impl JobOutput for () {
    fn into_result(self) -> Vec<u8> {
        Vec::new()
    }
}

impl JobOutput for Vec<u8> {
    fn into_result(self) -> Vec<u8> {
        self
    }
}

impl JobOutput for String {
    fn into_result(self) -> Vec<u8> {
        self.into_bytes()
    }
}

impl<T: JobOutput> JobOutput for Option<T> {
    fn into_result(self) -> Vec<u8> {
        self.map(JobOutput::into_result).unwrap_or_default()
    }
}

/// A job a worker loop finished, with the result its handler gave, until it is acked.
struct Finished {
    job: Job,
    result: Vec<u8>,
}

impl std::ops::Deref for Finished {
    type Target = Job;

    fn deref(&self) -> &Job {
        &self.job
    }
}

impl<'j> From<&'j Finished> for Done<'j> {
    fn from(finished: &'j Finished) -> Self {
        Done {
            job: &finished.job,
            result: finished.result.clone(),
        }
    }
}

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Ready to be taken, in priority then arrival order.
    Waiting,
    /// Held back because its group was at a limit when it came up.
    Parked,
    /// Waiting for its delay (on add, or after a failed delivery).
    Delayed,
    /// Held by a worker under a lease.
    Leased,
    /// In the dead-letter queue, after its last delivery failed.
    Dead,
    /// A flow's parent waiting for its children ([`add_flow`](WorkQueue::add_flow)): in
    /// no list of its own, so [`list`](WorkQueue::list), [`clean`](WorkQueue::clean) and
    /// [`counts`](WorkQueue::counts) leave it out; [`job`](WorkQueue::job) reads it.
    Blocked,
}

impl State {
    /// The state's name in the scripts (`"waiting"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            State::Waiting => "waiting",
            State::Parked => "parked",
            State::Delayed => "delayed",
            State::Leased => "leased",
            State::Dead => "dead",
            State::Blocked => "blocked",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for State {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "waiting" => State::Waiting,
            "parked" => State::Parked,
            "delayed" => State::Delayed,
            "leased" => State::Leased,
            "dead" => State::Dead,
            "blocked" => State::Blocked,
            other => {
                return Err(Error::unexpected_reply(
                    "job state",
                    format!("{other:?} is not a job state"),
                ));
            }
        })
    }
}

/// What [`add`](WorkQueue::add) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// The job was added, in this state (waiting, or delayed).
    New(State),
    /// A job with this id is already in the queue, in this state; nothing changed.
    Duplicate(State),
}

impl Added {
    /// An add script's reply: added, and the job's state.
    fn of((added, state): (bool, String)) -> Result<Self> {
        let state = state.parse()?;
        Ok(if added {
            Added::New(state)
        } else {
            Added::Duplicate(state)
        })
    }

    /// Whether the job was added.
    pub fn is_new(self) -> bool {
        matches!(self, Added::New(_))
    }

    /// The job's state now.
    pub fn state(self) -> State {
        match self {
            Added::New(state) | Added::Duplicate(state) => state,
        }
    }
}

/// How a job is added: its priority, delay and group. The default is priority 0, no
/// delay, no group.
///
/// ```
/// use std::time::Duration;
/// use redis_patterns::work_queue::JobOptions;
///
/// let options = JobOptions::new()
///     .priority(10)
///     .delay(Duration::from_secs(5))
///     .group("tenant-7");
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobOptions {
    priority: u8,
    delay: Duration,
    group: Option<String>,
}

impl JobOptions {
    /// The group as the add scripts take it: '' for none; an empty name is refused.
    fn group_arg(&self) -> Result<&str> {
        match &self.group {
            Some(group) if group.is_empty() => Err(Error::invalid(
                "group",
                "must not be empty; leave it unset for no group",
            )),
            Some(group) => Ok(group),
            None => Ok(""),
        }
    }

    /// Priority 0, no delay, no group.
    pub fn new() -> Self {
        JobOptions::default()
    }

    /// Jobs of a higher priority (up to [`MAX_PRIORITY`]) are taken first; jobs of one
    /// priority in the order they were added.
    pub fn priority(mut self, priority: u8) -> Self {
        self.priority = priority;
        self
    }

    /// The job can be taken only after `delay` (whole milliseconds, up to 10^12 ms). A
    /// delayed job holds no lease, so its delay never causes a second delivery.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// The group whose limits the job counts against (see [`Settings::group_limits`]); not
    /// empty.
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.group = Some(group.into());
        self
    }
}

/// A concurrency and a rate limit, for each group of a queue or for the whole queue (see
/// [`Settings`]): how many jobs may be held at once, and how many may start in any span
/// of a period. Both are off by default.
///
/// ```
/// use std::time::Duration;
/// use redis_patterns::work_queue::Limits;
///
/// // At most 2 jobs at once, at most 10 started in any second.
/// let limits = Limits::new()
///     .concurrency(2)?
///     .rate(10, Duration::from_secs(1))?;
/// assert_eq!(limits.rate_limit(), Some((10, Duration::from_secs(1))));
/// # Ok::<(), redis_patterns::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    concurrency: u64,
    rate: u64,
    period: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            concurrency: 0,
            rate: 0,
            period: Duration::from_secs(1),
        }
    }
}

impl Limits {
    /// No limits.
    pub fn new() -> Self {
        Limits::default()
    }

    /// At most `max` jobs held at once (1 to 10^6).
    pub fn concurrency(mut self, max: u64) -> Result<Self> {
        if !(1..=1_000_000).contains(&max) {
            return Err(Error::invalid(
                "concurrency",
                format!(
                    "must be an integer from 1 to 1000000 (leave it unset for no limit), got {max}"
                ),
            ));
        }
        self.concurrency = max;
        Ok(self)
    }

    /// At most `count` jobs started in any span of `period` (`count` from 1 to 1000,
    /// `period` whole milliseconds from 1 ms to 10^10 ms).
    pub fn rate(mut self, count: u64, period: Duration) -> Result<Self> {
        if !(1..=1000).contains(&count) {
            return Err(Error::invalid(
                "rate",
                format!(
                    "must be an integer from 1 to 1000 (leave it unset for no limit), got {count}"
                ),
            ));
        }
        // The bounds of `group_period` and `queue_period` alike, named for this call.
        if input::check_param(&script::CONFIGURE.args[2], period).is_err() {
            return Err(Error::invalid(
                "period",
                format!("must be whole milliseconds from 1 ms to 10^10 ms, got {period:?}"),
            ));
        }
        self.rate = count;
        self.period = period;
        Ok(self)
    }

    /// The concurrency limit, if any.
    pub fn concurrency_limit(&self) -> Option<u64> {
        (self.concurrency > 0).then_some(self.concurrency)
    }

    /// The rate limit, if any: jobs started per period.
    pub fn rate_limit(&self) -> Option<(u64, Duration)> {
        (self.rate > 0).then_some((self.rate, self.period))
    }

    /// The period of the rate limit, kept while there is no rate (1 s unless set): a
    /// rate set later without a period of its own ([`Changes::group_rate`]) counts in it.
    pub fn period(&self) -> Duration {
        self.period
    }
}

/// How long a failed job waits before its next delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backoff {
    /// The same delay after every failure.
    Fixed(Duration),
    /// `base` after the first delivery fails, doubling after each further one, never
    /// more than `max`.
    Exponential {
        /// The delay after the first failure.
        base: Duration,
        /// The longest delay.
        max: Duration,
    },
}

impl Backoff {
    /// The delay after delivery number `delivery` (1 for the first) failed.
    ///
    /// ```
    /// use std::time::Duration;
    /// use redis_patterns::work_queue::Backoff;
    ///
    /// let backoff = Backoff::Exponential { base: Duration::from_secs(1), max: Duration::from_secs(60) };
    /// assert_eq!(backoff.delay(1), Duration::from_secs(1));
    /// assert_eq!(backoff.delay(3), Duration::from_secs(4));
    /// assert_eq!(backoff.delay(30), Duration::from_secs(60));
    /// ```
    pub fn delay(&self, delivery: u32) -> Duration {
        match *self {
            Backoff::Fixed(delay) => delay,
            Backoff::Exponential { base, max } => {
                let doublings = delivery.saturating_sub(1);
                if doublings >= 32 {
                    return max;
                }
                base.checked_mul(1 << doublings)
                    .map_or(max, |delay| delay.min(max))
            }
        }
    }

    /// The delay [`nack`](WorkQueue::nack) uses: [`Fixed`](Backoff::Fixed) as it is, and
    /// [`Exponential`](Backoff::Exponential) at a random point between half of
    /// [`delay`](Self::delay) and all of it, so that jobs that failed together (an outage
    /// of what they call) do not all come back at the same moment.
    pub fn jittered(&self, delivery: u32) -> Duration {
        let delay = self.delay(delivery);
        match self {
            Backoff::Fixed(_) => delay,
            Backoff::Exponential { .. } => delay / 2 + jitter(delay / 2),
        }
    }
}

/// A random duration from zero to `most`.
fn jitter(most: Duration) -> Duration {
    const STEPS: u32 = 1 << 16;
    most * token::below(STEPS as usize + 1) as u32 / STEPS
}

/// A job taken from the queue, held under a lease until [`ack`](WorkQueue::ack),
/// [`nack`](WorkQueue::nack), or its deadline.
///
/// Its `Debug` shows the payload as text, or as a byte string literal when it is not
/// UTF-8.
#[derive(Clone, PartialEq, Eq)]
pub struct Job {
    /// The job's id.
    pub id: String,
    /// The lease's token: only this delivery's holder can ack, nack or extend it. It is
    /// the 128 random bits the taking call drew (as 32 hex digits) and the delivery count,
    /// `<random>:<delivery>`, so no two deliveries of a job share one, even across a
    /// failover to a replica that missed some of them. The scripts compare it with Lua's
    /// `==` (by address in Redis, whatever the bytes; no hash is needed against timing:
    /// see [Tokens and timing](crate#tokens-and-timing)).
    pub token: String,
    /// Which delivery this is: 1 the first time the job is handed out.
    pub delivery: u32,
    /// When the lease runs out, in milliseconds of the server's clock (Unix time).
    pub deadline_ms: u64,
    /// The job's group, if it has one.
    pub group: Option<String>,
    /// The job's data, as added.
    pub payload: Vec<u8>,
}

impl Job {
    /// The payload decoded as redis-rs decodes a bulk string (`String`, a number, your
    /// own `FromRedisValue`).
    pub fn payload_as<T: FromRedisValue>(&self) -> Result<T> {
        T::from_redis_value(Value::BulkString(self.payload.clone())).map_err(Error::from)
    }
}

impl fmt::Debug for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Job")
            .field("id", &self.id)
            .field("token", &self.token)
            .field("delivery", &self.delivery)
            .field("deadline_ms", &self.deadline_ms)
            .field("group", &self.group)
            .field("payload", &Bytes(&self.payload))
            .finish()
    }
}

/// A job as [`job`](WorkQueue::job) and [`list`](WorkQueue::list) read it, for
/// operators.
#[derive(Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// The job's id.
    pub id: String,
    /// Where it is.
    pub state: State,
    /// How many times it was handed out (reset by [`requeue`](WorkQueue::requeue)).
    pub deliveries: u32,
    /// Its priority.
    pub priority: u8,
    /// Its group, if any.
    pub group: Option<String>,
    /// The reason of its last failure ([`nack`](WorkQueue::nack), or a lease that ran out
    /// on its last delivery), if any.
    pub last_error: Option<Vec<u8>>,
    /// The time that goes with its state, in milliseconds of the server's clock: when a
    /// delayed job is due, when a lease runs out, when a dead job died; `None` for
    /// waiting and parked jobs.
    pub at_ms: Option<u64>,
    /// The job's data.
    pub payload: Vec<u8>,
    /// Its last progress report ([`progress`](WorkQueue::progress)), if any; read by
    /// [`job`](WorkQueue::job) (a [`list`](WorkQueue::list) page leaves it `None`).
    pub progress: Option<Vec<u8>>,
    /// For a flow's parent ([`add_flow`](WorkQueue::add_flow)): how many of its children
    /// have not ended yet (0 once it runs). Read by [`job`](WorkQueue::job).
    pub pending_children: u64,
    /// For a flow's parent: its children that died under
    /// [`OnChildFailure::Continue`], in the order they died. Read by
    /// [`job`](WorkQueue::job); the parent's worker reads them there.
    pub failed_children: Vec<String>,
}

impl fmt::Debug for JobInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobInfo")
            .field("id", &self.id)
            .field("state", &self.state)
            .field("deliveries", &self.deliveries)
            .field("priority", &self.priority)
            .field("group", &self.group)
            .field("last_error", &self.last_error.as_deref().map(Bytes))
            .field("at_ms", &self.at_ms)
            .field("payload", &Bytes(&self.payload))
            .field("progress", &self.progress.as_deref().map(Bytes))
            .field("pending_children", &self.pending_children)
            .field("failed_children", &self.failed_children)
            .finish()
    }
}

/// How many jobs are in each state, counted at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Ready to be taken.
    pub waiting: u64,
    /// Held back by their group's limits.
    pub parked: u64,
    /// Waiting for a delay.
    pub delayed: u64,
    /// Held by workers (a lease that ran out counts until a `take` hands it back).
    pub leased: u64,
    /// In the dead-letter queue.
    pub dead: u64,
}

/// What a failed delivery led to: [`nack`](WorkQueue::nack)'s answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nacked {
    /// The job will be delivered again from this time on (ms, server clock): at once
    /// (waiting) or after its backoff (delayed).
    Retry {
        /// Its state now: waiting or delayed.
        state: State,
        /// When it can be taken again.
        at_ms: u64,
    },
    /// That was its last delivery: it is in the dead-letter queue (since `at_ms`).
    Dead {
        /// When it died.
        at_ms: u64,
    },
}

/// A work queue named `name`, with what its workers apply: the lease, the most
/// deliveries and the backoff after a failure. The limits, the dead-letter cap and the
/// metrics window are the queue's own, kept in Redis ([`configure`](Self::configure)).
///
/// The defaults: a 30 s lease, 5 deliveries, an exponential backoff from 1 s to 5 min.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkQueue {
    name: String,
    keys: Keys,
    lease: Duration,
    max_deliveries: u32,
    backoff: Backoff,
}

/// A queue's fourteen keys, in the order the scripts take them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Keys {
    waiting: String,
    delayed: String,
    leased: String,
    dead: String,
    parked: String,
    jobs: String,
    groups: String,
    wake: String,
    idle: String,
    signal: String,
    events: String,
    results: String,
    kept: String,
    turns: String,
}

impl Keys {
    /// The names the scripts' headers give the keys (`{<name>}:waiting`, …).
    fn of(name: &str) -> Result<Self> {
        use script::keys;
        Ok(Keys {
            waiting: keys::waiting(name)?,
            delayed: keys::delayed(name)?,
            leased: keys::leased(name)?,
            dead: keys::dead(name)?,
            parked: keys::parked(name)?,
            jobs: keys::jobs(name)?,
            groups: keys::groups(name)?,
            wake: keys::wake(name)?,
            idle: keys::idle(name)?,
            signal: keys::signal(name)?,
            events: keys::events(name)?,
            results: keys::results(name)?,
            kept: keys::kept(name)?,
            turns: keys::turns(name)?,
        })
    }
}

/// A number `@default` gives a script's argument (the headers' defaults are the queue's).
fn default_number(script: &crate::Script, name: &str) -> u64 {
    let text = script.default_text(name);
    text.parse()
        .unwrap_or_else(|_| panic!("{}: `@default {name} {text}` is no number", script.name))
}

impl WorkQueue {
    /// The queue named `name`, with its keys `{name}:waiting`, `{name}:delayed`, … (see
    /// the [module docs](self)), and the default settings.
    ///
    /// An empty `name`, or one with a `}` but no hash tag (its keys could not share one
    /// cluster hash slot), is [`Error::InvalidInput`].
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        input::key("name", &name)?;
        Ok(WorkQueue {
            keys: Keys::of(&name)?,
            name,
            lease: Duration::from_millis(default_number(&script::TAKE, "lease")),
            max_deliveries: default_number(&script::TAKE, "max_deliveries") as u32,
            backoff: Backoff::Exponential {
                base: Duration::from_secs(1),
                max: Duration::from_secs(300),
            },
        })
    }

    /// How long a taken job is held before it is handed out again, unless renewed (1 ms
    /// to 10^15 - 1 ms, whole milliseconds, as every lease and ttl of the crate).
    pub fn with_lease(mut self, lease: Duration) -> Result<Self> {
        input::check_param(&script::TAKE.args[0], lease)?;
        self.lease = lease;
        Ok(self)
    }

    /// After how many deliveries a failed job goes to the dead-letter queue instead of
    /// being retried (1 to 1000).
    pub fn with_max_deliveries(mut self, max: u32) -> Result<Self> {
        input::check_param(&script::TAKE.args[2], u64::from(max))?;
        self.max_deliveries = max;
        Ok(self)
    }

    /// How long a failed job waits before its next delivery; each delay must be whole
    /// milliseconds up to 10^12 ms (a longer one is cut to that).
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The queue's fourteen keys: `waiting`, `delayed`, `leased`, `dead`, `parked`,
    /// `jobs`, `groups`, `wake`, `idle`, `signal`, `events`, `results`, `kept`, `turns`.
    /// Each `work_queue` script takes the ones it uses, in this order.
    pub fn keys(&self) -> [&str; 14] {
        let k = &self.keys;
        [
            &k.waiting, &k.delayed, &k.leased, &k.dead, &k.parked, &k.jobs, &k.groups, &k.wake,
            &k.idle, &k.signal, &k.events, &k.results, &k.kept, &k.turns,
        ]
    }

    /// The lease a taken job is held for.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// The deliveries after which a failed job is dead.
    pub fn max_deliveries(&self) -> u32 {
        self.max_deliveries
    }

    /// The backoff after a failed delivery.
    pub fn backoff(&self) -> Backoff {
        self.backoff
    }

    /// Adds a job with priority 0, no delay and no group, unless a job with the same id
    /// is in the queue (in any state): then nothing changes and the answer says where
    /// that job is. Once a job is acked or removed its id can be added again. One script
    /// (`work_queue/add`).
    pub fn add<V: ToRedisArgs>(&self, id: &str, payload: V) -> Op<Added> {
        self.add_with(id, payload, JobOptions::new())
    }

    /// [`add`](Self::add) with a priority, a delay or a group.
    pub fn add_with<V: ToRedisArgs>(&self, id: &str, payload: V, options: JobOptions) -> Op<Added> {
        Op::try_build(|| {
            let payload = input::value("payload", &payload)?;
            let group = options.group_arg()?;
            let k = &self.keys;
            let op = script::add(
                &k.waiting,
                &k.delayed,
                &k.parked,
                &k.jobs,
                &k.signal,
                &k.turns,
                id,
                &payload,
                u64::from(options.priority),
                options.delay,
                group,
            );
            Ok(op.map(Added::of))
        })
    }

    /// Takes up to `limit` jobs (1 to [`MAX_TAKE`]), each under the queue's lease, in
    /// priority then arrival order (or one per group's turn, round-robin, while
    /// [groups take turns](Settings::group_turns)); parks the jobs of groups at a limit. Before taking it
    /// hands back up to `limit` lapsed leases, promotes up to `limit` due delayed jobs and
    /// wakes up to `limit` rate-limited groups (see the [module docs](self)). An empty
    /// `Vec` when no job can be taken now ([`wait_for_work`](Self::wait_for_work) waits
    /// for one). One script (`work_queue/take`).
    ///
    /// The `Op` carries 128 random bits drawn when it is built, which make its jobs' lease
    /// tokens unique; build one for each call (running the same `Op` again reuses them,
    /// and tokens then differ only by the delivery count, which a failover can repeat).
    pub fn take(&self, limit: u64) -> Op<Vec<Job>> {
        self.ack_and_take(std::iter::empty::<&Job>(), limit)
    }

    /// Acks the jobs in `done` (up to [`MAX_TAKE`]), as [`ack`](Self::ack) acks one, and
    /// takes up to `limit` jobs, as [`take`](Self::take) does, in one call: a busy
    /// worker's one round trip per job, or per batch. Fails with [`LEASE_LOST`] when a job
    /// of `done` is no longer held under its token (or is there twice); nothing is acked
    /// or taken then. Each item is a `&Job`, or a [`Done`] that carries the job's result
    /// ([`Done::with_result`]). One script (`work_queue/take`).
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::work_queue::{MAX_TAKE, WorkQueue};
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let queue = WorkQueue::new("thumbnails")?;
    /// let mut jobs = queue.take(MAX_TAKE).run(&mut con)?;
    /// while !jobs.is_empty() {
    ///     for job in &jobs {
    ///         make_thumbnail(&job.payload);
    ///     }
    ///     jobs = queue.ack_and_take(&jobs, MAX_TAKE).run(&mut con)?;
    /// }
    /// # Ok(()) }
    /// # fn make_thumbnail(_: &[u8]) {}
    /// ```
    pub fn ack_and_take<'j, D: Into<Done<'j>>>(
        &self,
        done: impl IntoIterator<Item = D>,
        limit: u64,
    ) -> Op<Vec<Job>> {
        let done: Vec<Done<'j>> = done.into_iter().map(Into::into).collect();
        let done: Vec<&[u8]> = done
            .iter()
            .flat_map(|d| [d.job.id.as_bytes(), d.job.token.as_bytes(), &d.result])
            .collect();
        let k = &self.keys;
        script::take(
            &k.waiting,
            &k.delayed,
            &k.leased,
            &k.dead,
            &k.parked,
            &k.jobs,
            &k.groups,
            &k.wake,
            &k.idle,
            &k.signal,
            &k.events,
            &k.results,
            &k.kept,
            &k.turns,
            self.lease,
            limit,
            u64::from(self.max_deliveries),
            &token::random(),
            &done,
        )
        .map(taken)
    }

    /// Waits until a job may be ready, or `timeout` passed: whether it woke for a job.
    /// Every script that makes a job ready (an add, a nack or an ack that frees a group's
    /// slot, a requeue, a take that leaves jobs behind) wakes one waiting worker, so a
    /// job added to an idle queue starts at once; a delayed job that comes due wakes no
    /// one, and is found by the next [`take`](Self::take) after a `timeout`. One blocking
    /// command (`BZPOPMIN {name}:signal <timeout>`): the connection is busy meanwhile, so
    /// give it a connection of its own, whose response timeout (if any) is longer than
    /// `timeout`.
    pub fn wait_for_work(&self, timeout: Duration) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("BZPOPMIN");
            cmd.arg(&self.keys.signal)
                .arg(input::block_timeout(Some(timeout))?);
            Ok(Op::<Value>::native(cmd).map(|woken| Ok(woken != Value::Nil)))
        })
    }

    /// Ends a job that was done: it leaves the queue. Fails with the code [`LEASE_LOST`]
    /// when `job` is no longer held under its token (its lease ran out and it was handed
    /// to another worker, or it was acked already); nothing changes then. Answers when it
    /// was acked (ms, server clock). One script (`work_queue/ack`).
    pub fn ack(&self, job: &Job) -> Op<u64> {
        self.ack_done(Done::from(job))
    }

    /// [`ack`](Self::ack) that keeps `result`, the job's outcome, for the queue's result
    /// time ([`Settings::results`]), where [`result`](Self::result) and
    /// [`wait_for_job`](Self::wait_for_job) read it. One longer than the queue's longest
    /// result fails with the code [`RESULT_TOO_BIG`], the job still held (ack it without,
    /// or nack it); an empty one keeps nothing.
    pub fn ack_with<V: ToRedisArgs>(&self, job: &Job, result: V) -> Op<u64> {
        Op::try_build(|| Ok(self.ack_done(Done::with_result(job, result)?)))
    }

    /// `ack.lua` with what `done` carries.
    fn ack_done(&self, done: Done<'_>) -> Op<u64> {
        let k = &self.keys;
        let job = done.job;
        script::ack(
            &k.waiting,
            &k.leased,
            &k.parked,
            &k.jobs,
            &k.groups,
            &k.signal,
            &k.events,
            &k.results,
            &k.kept,
            &job.id,
            &job.token,
            &done.result,
        )
        .map(unsigned)
    }

    /// Renews `job`'s lease: held for the queue's lease from now. Answers the new
    /// deadline (ms, server clock); fails with [`LEASE_LOST`] when the job is no longer
    /// held under its token (stop working on it then). One script
    /// (`work_queue/extend`).
    pub fn extend(&self, job: &Job) -> Op<u64> {
        let k = &self.keys;
        script::extend(&k.leased, &k.jobs, &job.id, &job.token, self.lease).map(unsigned)
    }

    /// Ends a failed delivery: the job is retried after the queue's backoff for this
    /// delivery, or goes to the dead-letter queue with `reason` if this was delivery
    /// number [`max_deliveries`](Self::with_max_deliveries). Fails with [`LEASE_LOST`] as
    /// [`ack`](Self::ack) does. One script (`work_queue/nack`).
    pub fn nack<R: ToRedisArgs>(&self, job: &Job, reason: R) -> Op<Nacked> {
        self.nack_after(job, self.backoff.jittered(job.delivery), reason)
    }

    /// [`nack`](Self::nack) with a delay of the caller's choosing (whole milliseconds up
    /// to 10^12 ms; zero for at once) instead of the backoff.
    pub fn nack_after<R: ToRedisArgs>(&self, job: &Job, delay: Duration, reason: R) -> Op<Nacked> {
        self.nack_with(job, delay, self.max_deliveries, reason)
    }

    /// `nack.lua` with the delay and the most deliveries given.
    fn nack_with<R: ToRedisArgs>(
        &self,
        job: &Job,
        delay: Duration,
        max_deliveries: u32,
        reason: R,
    ) -> Op<Nacked> {
        Op::try_build(|| {
            let reason = input::value("reason", &reason)?;
            let k = &self.keys;
            let op = script::nack(
                &k.waiting,
                &k.delayed,
                &k.leased,
                &k.dead,
                &k.parked,
                &k.jobs,
                &k.groups,
                &k.signal,
                &k.events,
                &job.id,
                &job.token,
                delay.min(MAX_DELAY),
                u64::from(max_deliveries),
                &reason,
            );
            Ok(op.map(|(state, at)| {
                let at_ms = u64::try_from(at).map_err(|_| negative(at))?;
                Ok(match state.parse()? {
                    State::Dead => Nacked::Dead { at_ms },
                    state => Nacked::Retry { state, at_ms },
                })
            }))
        })
    }

    /// Moves a dead job back to waiting with its delivery count reset (behind the jobs
    /// waiting at its priority): true if it was dead. One script
    /// (`work_queue/requeue`).
    pub fn requeue(&self, id: &str) -> Op<bool> {
        let k = &self.keys;
        script::requeue(&k.waiting, &k.dead, &k.jobs, &k.signal, &k.events, id)
    }

    /// Removes a job that is not held by a worker: waiting, parked, delayed or dead (this
    /// is how a dead letter is dropped). A leased job is left to its worker, which ends
    /// it with an ack or a nack. One script (`work_queue/remove`).
    pub fn remove(&self, id: &str) -> Op<Removed> {
        let k = &self.keys;
        script::remove(&k.waiting, &k.delayed, &k.dead, &k.parked, &k.jobs, id).map(
            |(removed, state)| {
                Ok(match (removed, state) {
                    (_, None) => Removed::NoSuchJob,
                    (true, Some(state)) => Removed::From(state.parse()?),
                    (false, Some(_)) => Removed::Running,
                })
            },
        )
    }

    /// One job, for operators: `None` when there is no job with this id. One read-only
    /// script (`work_queue/job`).
    pub fn job(&self, id: &str) -> Op<Option<JobInfo>> {
        let k = &self.keys;
        let op = script::job(&k.delayed, &k.leased, &k.dead, &k.jobs, id);
        let id = id.to_owned();
        op.map(move |job| {
            job.map(|row| {
                let (state, deliveries, priority, group, error, payload, at, progress) =
                    (row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7);
                let (pending_children, failed) = (row.8, row.9);
                let fields = (deliveries, priority, group, error, payload, at);
                let info = info(id.clone(), state.parse()?, fields)?;
                Ok(JobInfo {
                    progress,
                    pending_children,
                    failed_children: flow::failed_children(failed.as_deref().unwrap_or_default())?,
                    ..info
                })
            })
            .transpose()
        })
    }

    /// One page of the jobs in `state`, for operators: `count` jobs (1 to [`MAX_PAGE`])
    /// after skipping `offset`, waiting jobs in the order they will be taken, delayed
    /// ones by due time, leased ones by deadline, dead ones by when they died, parked
    /// ones by group. One read-only script (`work_queue/list`); a page is one instant,
    /// and pages read one after another may skip or repeat a job that moved in between.
    pub fn list(&self, state: State, offset: u64, count: u64) -> Op<Vec<JobInfo>> {
        let k = &self.keys;
        script::list(
            &k.waiting,
            &k.delayed,
            &k.leased,
            &k.dead,
            &k.parked,
            &k.jobs,
            state.as_str(),
            offset,
            count,
        )
        .map(move |rows| {
            rows.into_iter()
                .map(|(id, deliveries, priority, group, error, payload, at)| {
                    info(id, state, (deliveries, priority, group, error, payload, at))
                })
                .collect()
        })
    }

    /// How many jobs are in each state, at one instant. One read-only script
    /// (`work_queue/counts`).
    pub fn counts(&self) -> Op<Counts> {
        let k = &self.keys;
        script::counts(&k.waiting, &k.delayed, &k.leased, &k.dead, &k.parked).map(
            |(waiting, parked, delayed, leased, dead)| {
                Ok(Counts {
                    waiting,
                    parked,
                    delayed,
                    leased,
                    dead,
                })
            },
        )
    }

    /// Pauses the queue: from now on [`take`](Self::take) hands out nothing (it still acks
    /// the jobs of [`ack_and_take`](Self::ack_and_take) and hands back lapsed leases), while
    /// adds are accepted and leased jobs run on and end as usual. Idle [`Worker`]s wait as
    /// on an empty queue, at no extra cost. True if the queue was running. One script
    /// (`work_queue/pause`); the flag is the field `#paused` of `{name}:jobs`.
    pub fn pause(&self) -> Op<bool> {
        script::pause(&self.keys.jobs)
    }

    /// Resumes a paused queue: jobs are handed out again, and one idle worker wakes at
    /// once (the wake-ups then chain from worker to worker while jobs are left). True if
    /// the queue was paused. One script (`work_queue/resume`).
    pub fn resume(&self) -> Op<bool> {
        script::resume(&self.keys.jobs, &self.keys.signal)
    }

    /// Whether the queue is paused. One read-only script (`work_queue/paused`).
    pub fn is_paused(&self) -> Op<bool> {
        script::paused(&self.keys.jobs)
    }

    /// The loop that takes jobs one at a time, renews each lease while the handler runs,
    /// and acks or nacks by the handler's result. See [`Worker`].
    pub fn worker(&self) -> Worker<'_> {
        Worker::new(self)
    }
}

/// The longest delay `nack.lua` accepts; a longer backoff is cut to it.
const MAX_DELAY: Duration = Duration::from_millis(1_000_000_000_000);

/// What [`remove`](WorkQueue::remove) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removed {
    /// The job was removed from this state.
    From(State),
    /// The job is held by a worker: it was left to it (ack or nack ends it).
    Running,
    /// There is no job with this id.
    NoSuchJob,
}

fn bad_reply(detail: &str) -> Error {
    Error::unexpected_reply("work queue reply", detail.to_owned())
}

fn negative(n: i64) -> Error {
    bad_reply(&format!("expected a time, got {n}"))
}

fn unsigned(n: i64) -> Result<u64> {
    u64::try_from(n).map_err(|_| negative(n))
}

/// A job's fields as `job.lua` and `list.lua` answer them, after its state (`job.lua`)
/// or id (`list.lua`): deliveries, priority, group, last error, payload, time.
type JobFields = (
    u64,
    u64,
    Option<String>,
    Option<Vec<u8>>,
    Vec<u8>,
    Option<u64>,
);

fn info(id: String, state: State, fields: JobFields) -> Result<JobInfo> {
    let (deliveries, priority, group, error, payload, at_ms) = fields;
    Ok(JobInfo {
        id,
        state,
        deliveries: u32::try_from(deliveries).map_err(|_| bad_reply("a delivery past 2^32"))?,
        priority: u8::try_from(priority).map_err(|_| bad_reply("a priority past 255"))?,
        group,
        // A failure given no reason reads as none, as it always has.
        last_error: error.filter(|error| !error.is_empty()),
        at_ms,
        payload,
        progress: None,
        pending_children: 0,
        failed_children: Vec::new(),
    })
}

/// A row of `take.lua`'s reply: id, token, delivery, deadline, group, payload.
type TakenRow = (String, String, u64, u64, Option<String>, Vec<u8>);

/// `take.lua`'s reply, as its `@return` decodes it: a row per job.
fn taken(rows: Vec<TakenRow>) -> Result<Vec<Job>> {
    rows.into_iter()
        .map(|(id, token, delivery, deadline_ms, group, payload)| {
            Ok(Job {
                id,
                token,
                delivery: u32::try_from(delivery).map_err(|_| bad_reply("a delivery past 2^32"))?,
                deadline_ms,
                group,
                payload,
            })
        })
        .collect()
}

/// A flag that asks a [`Worker`] to stop: it finishes the job in hand, acks or nacks it,
/// and returns. Clones share the flag.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// A flag not yet raised.
    pub fn new() -> Self {
        Stop::default()
    }

    /// Asks every worker watching this flag to stop.
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether [`stop`](Self::stop) was called.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// What a [`Worker`] did before it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkReport {
    /// Jobs the handler finished and that were acked.
    pub acked: u64,
    /// Jobs the handler failed that will be delivered again.
    pub retried: u64,
    /// Jobs the handler failed on their last delivery, or for good
    /// ([`JobError::unrecoverable`]): now in the dead-letter queue.
    pub dead: u64,
    /// Jobs given back with their group held back ([`JobError::rate_limit_group`]).
    pub held_back: u64,
    /// Jobs whose lease was lost before they ended (the handler outlived the lease and
    /// another worker took the job): their ack or nack changed nothing.
    pub lost: u64,
    /// Lease renewals that failed for a reason other than a lost lease (a closed
    /// connection, a server that did not answer, a demoted server): each was tried again
    /// on a new connection. Jobs whose lease ran out meanwhile are counted in `lost`.
    pub renewals_failed: u64,
    /// Connections the loop opened again after one failed (the server closed an idle
    /// one, a proxy or `CLIENT KILL` cut it, the server restarted), or after a server
    /// error that calls for a new connection (see `server_retries`).
    pub reconnects: u64,
    /// Calls of the loop (takes, acks, nacks, waits) that met a server changing roles,
    /// loading its data or moving slots (`UNBLOCKED`, `READONLY`, `LOADING`,
    /// `MASTERDOWN`, `TRYAGAIN`, `CLUSTERDOWN`, `BUSY`: see [`is_transient`]) and were
    /// sent again, on a new connection, after a pause.
    pub server_retries: u64,
    /// What the loop found of its server's `maxmemory-policy` when it started (see
    /// [`OnEviction`]).
    pub memory_policy: MemoryPolicy,
}

/// What a [`Worker`] opens its connections with, and opens again when one fails:
/// [`redis::Client`], or [`redis::cluster::ClusterClient`] (feature `cluster`), or your
/// own (one that asks Sentinel, or a list of servers, which node is the primary now).
pub trait Connect: Sync {
    /// A new connection.
    fn connect(&self) -> redis::RedisResult<Box<dyn redis::ConnectionLike + Send>>;
}

impl Connect for redis::Client {
    fn connect(&self) -> redis::RedisResult<Box<dyn redis::ConnectionLike + Send>> {
        Ok(Box::new(self.get_connection()?))
    }
}

#[cfg(feature = "cluster")]
impl Connect for redis::cluster::ClusterClient {
    fn connect(&self) -> redis::RedisResult<Box<dyn redis::ConnectionLike + Send>> {
        Ok(Box::new(self.get_connection()?))
    }
}

/// Whether an error can pass, so that the [`Worker`] loop sends the call again (on a new
/// connection, after a pause) rather than stop: a failed connection (an I/O error, a
/// closed or refused connection, a timeout), or the error reply of a server that changes
/// roles, loads its data or moves slots:
///
/// | Code | When |
/// |---|---|
/// | `UNBLOCKED` | a blocked `BZPOPMIN` when its server is demoted (`REPLICAOF`, a managed failover) |
/// | `READONLY` | a write sent to a replica: a demoted primary, or a stale address |
/// | `LOADING` | a server loading its RDB or AOF after a restart |
/// | `MASTERDOWN` | a replica that lost its primary (`replica-serve-stale-data no`) |
/// | `TRYAGAIN`, `CLUSTERDOWN` | a cluster moving slots, or with slots uncovered |
/// | `BUSY` | a server running a long script |
///
/// Every other error (a script's declared code, `NOPERM`, `WRONGTYPE`, `OOM`, …) is
/// fatal: the loop returns it.
pub fn is_transient(err: &Error) -> bool {
    match err {
        Error::Redis(err) => {
            err.is_io_error()
                || err.is_connection_dropped()
                || err.is_connection_refusal()
                || err.is_timeout()
                || err
                    .code()
                    .is_some_and(|code| TRANSIENT_CODES.contains(&code))
        }
        Error::ResponseTimeout { .. } => true,
        _ => false,
    }
}

/// The server error codes [`is_transient`] lets pass.
const TRANSIENT_CODES: [&str; 7] = [
    "UNBLOCKED",
    "READONLY",
    "LOADING",
    "MASTERDOWN",
    "TRYAGAIN",
    "CLUSTERDOWN",
    "BUSY",
];

/// A failure of the connection rather than an answer of the server's: the command may or
/// may not have run, and a new connection may do better.
fn is_connection_failure(err: &Error) -> bool {
    match err {
        Error::Redis(err) => {
            err.is_io_error() || err.is_connection_dropped() || err.is_connection_refusal()
        }
        _ => false,
    }
}

/// A queue lives in one hash (`{name}:jobs`) and a few sorted sets that have no expiry: a
/// server whose `maxmemory-policy` evicts any key (`allkeys-lru`, `allkeys-lfu`,
/// `allkeys-random`) can evict the hash, and every later `take` then drops the ids it
/// finds without a record, silently. What a [`Worker`] does when it finds such a policy
/// as it starts ([`Worker::on_eviction`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnEviction {
    /// Runs, and says so: a `tracing` warning (feature `tracing`) and
    /// [`WorkReport::memory_policy`]. The default.
    #[default]
    Warn,
    /// Refuses to run: [`Error::EvictingServer`].
    Refuse,
    /// Does not look (no `CONFIG GET` is sent).
    Ignore,
}

/// What a server's `maxmemory-policy` means for a queue (see [`OnEviction`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MemoryPolicy {
    /// Not looked at ([`OnEviction::Ignore`]).
    #[default]
    NotChecked,
    /// `noeviction`: a write that needs memory past `maxmemory` fails; nothing is evicted.
    NoEviction,
    /// A `volatile-*` policy: only keys with an expiry are evicted, and a queue's keys
    /// have none (once no such key is left, writes fail as under `noeviction`).
    Volatile,
    /// An `allkeys-*` policy: a queue's keys may be evicted, and its jobs lost.
    AllKeys,
    /// The server refused `CONFIG GET` (a managed Redis that renames or forbids it, an
    /// ACL without `+config|get`), or answered something else: look in its console.
    Unknown,
}

impl MemoryPolicy {
    /// What a `maxmemory-policy` value means for a queue.
    pub fn of(policy: &str) -> Self {
        if policy == "noeviction" {
            MemoryPolicy::NoEviction
        } else if policy.starts_with("volatile-") {
            MemoryPolicy::Volatile
        } else if policy.starts_with("allkeys-") {
            MemoryPolicy::AllKeys
        } else {
            MemoryPolicy::Unknown
        }
    }
}

/// Reads the server's `maxmemory-policy` (`CONFIG GET maxmemory-policy`): the policy and
/// what it means for a queue; `(None, MemoryPolicy::Unknown)` when the server refuses the
/// command. Fails only when the connection does.
pub fn memory_policy(
    con: &mut dyn redis::ConnectionLike,
) -> Result<(Option<String>, MemoryPolicy)> {
    let reply = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query::<Value>(con)
        .map_err(Error::from);
    read_policy(reply)
}

/// [`memory_policy`] on an async connection.
#[cfg(feature = "aio")]
pub async fn memory_policy_async<C: redis::aio::ConnectionLike + Send>(
    con: &mut C,
) -> Result<(Option<String>, MemoryPolicy)> {
    let reply = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query_async::<Value>(con)
        .await
        .map_err(Error::from);
    read_policy(reply)
}

fn read_policy(reply: Result<Value>) -> Result<(Option<String>, MemoryPolicy)> {
    let value = match reply {
        Ok(value) => value,
        Err(err) if is_connection_failure(&err) => return Err(err),
        Err(_) => return Ok((None, MemoryPolicy::Unknown)),
    };
    // A map (RESP3), a flat list of name, value (RESP2); a cluster answers one per node,
    // and the first evicting one counts.
    let mut texts = Vec::new();
    collect_texts(&value, &mut texts);
    let mut found: Option<String> = None;
    for pair in texts.windows(2) {
        if pair[0] == "maxmemory-policy" {
            let policy = pair[1].clone();
            if found.is_none() || MemoryPolicy::of(&policy) == MemoryPolicy::AllKeys {
                found = Some(policy);
            }
        }
    }
    Ok(match found {
        Some(policy) => {
            let meaning = MemoryPolicy::of(&policy);
            (Some(policy), meaning)
        }
        None => (None, MemoryPolicy::Unknown),
    })
}

fn collect_texts(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::BulkString(bytes) => out.push(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(text) => out.push(text.clone()),
        Value::Array(items) | Value::Set(items) => {
            items.iter().for_each(|item| collect_texts(item, out))
        }
        Value::Map(pairs) => pairs.iter().for_each(|(k, v)| {
            collect_texts(k, out);
            collect_texts(v, out);
        }),
        _ => {}
    }
}

/// What a [`Worker`]'s handler asks for a job it could not do, beyond a retry: fail it
/// for good, or hold its group back for a while. Any error that is [`fmt::Display`]
/// converts into a [`retry`](Self::retry) (so `?` works in a handler that returns
/// `Result<(), JobError>`), and a handler may return any `Display` error instead: it is
/// retried.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::work_queue::{JobError, Stop, WorkQueue};
///
/// let client = redis::Client::open("redis://127.0.0.1/")?;
/// let queue = WorkQueue::new("webhooks")?;
/// queue.worker().run(&client, &Stop::new(), |job| -> Result<(), JobError> {
///     let url = std::str::from_utf8(&job.payload).map_err(JobError::unrecoverable)?;
///     match post(url)? {
///         429 => Err(JobError::rate_limit_group(Duration::from_secs(30), "429 from the tenant's endpoint")),
///         _ => Ok(()),
///     }
/// })?;
/// # Ok(()) }
/// # fn post(_: &str) -> Result<u16, std::io::Error> { Ok(200) }
/// ```
///
/// `JobError` is not itself `Display` (that is what lets every `Display` error convert
/// into it); [`message`](Self::message) is its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobError {
    message: String,
    kind: JobErrorKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JobErrorKind {
    Retry,
    Unrecoverable,
    RateLimitGroup(Duration),
}

impl JobError {
    /// The job is nacked: retried after the queue's backoff, or dead after its last
    /// delivery.
    pub fn retry(why: impl fmt::Display) -> Self {
        JobError {
            message: why.to_string(),
            kind: JobErrorKind::Retry,
        }
    }

    /// The job fails for good: dead at once, whatever its delivery count
    /// ([`WorkQueue::fail`]; BullMQ's `UnrecoverableError`).
    pub fn unrecoverable(why: impl fmt::Display) -> Self {
        JobError {
            message: why.to_string(),
            kind: JobErrorKind::Unrecoverable,
        }
    }

    /// The job's group is held back for `hold` and the job goes back, its delivery not
    /// counted ([`WorkQueue::rate_limit_group`]; BullMQ Pro's `rateLimitGroup`). A job
    /// without a group is retried instead.
    pub fn rate_limit_group(hold: Duration, why: impl fmt::Display) -> Self {
        JobError {
            message: why.to_string(),
            kind: JobErrorKind::RateLimitGroup(hold),
        }
    }

    /// The error's text: what a nack keeps as the job's last error.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl<E: fmt::Display> From<E> for JobError {
    fn from(why: E) -> Self {
        JobError::retry(why)
    }
}

/// What a [`Worker`]'s handler may fail with: any [`fmt::Display`] error (retried), or a
/// [`JobError`], which says what to do.
pub trait HandlerError {
    /// The error as a [`JobError`].
    fn into_job_error(self) -> JobError;
}

impl<E: fmt::Display> HandlerError for E {
    fn into_job_error(self) -> JobError {
        JobError::retry(self)
    }
}

impl HandlerError for JobError {
    fn into_job_error(self) -> JobError {
        self
    }
}

/// The consumer loop of a [`WorkQueue`]: takes jobs, renews each one's lease every third
/// of the lease while its handler runs, then acks it (`Ok`) or nacks it with the error's
/// text and the queue's backoff (`Err`; a [`JobError`] may ask to fail it for good or to
/// hold its group back instead). A finished job is acked in the same call that
/// takes the next ([`ack_and_take`](WorkQueue::ack_and_take)), so a busy worker makes one
/// round trip per job. With nothing to take it waits for a wake-up
/// ([`wait_for_work`](WorkQueue::wait_for_work)): a job added to an idle queue starts at
/// once; a delayed job that comes due is found within [`poll`](Self::poll).
///
/// [`run`](Self::run) runs one job at a time on the calling thread;
/// [`run_concurrent`](Self::run_concurrent) runs up to [`concurrency`](Self::concurrency)
/// jobs on threads of its own, each under its own lease, on the same two connections.
/// Either returns when the [`Stop`] flag is raised (after the jobs in hand), or with the
/// first error that cannot pass: a failed connection, and a server that changes roles,
/// loads its data or moves slots (a failover, a restart: see [`is_transient`]), only
/// make it open a new connection and send the call again, after a pause that doubles
/// from 10 ms up to 1 s; [`WorkReport`] counts them.
///
/// A handler that panics unwinds through the loop: its job is not acked, and is handed
/// out again once its lease runs out.
#[derive(Clone)]
pub struct Worker<'q> {
    queue: &'q WorkQueue,
    poll: Duration,
    /// How the loop's operations run their scripts.
    mode: ScriptMode,
    concurrency: u64,
    on_eviction: OnEviction,
    /// Where the async loop's renewals connect from, if not the loop's connection.
    renew_from: Option<Arc<dyn Connect + Send>>,
}

impl fmt::Debug for Worker<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("queue", &self.queue.name)
            .field("poll", &self.poll)
            .field("mode", &self.mode)
            .field("concurrency", &self.concurrency)
            .field("on_eviction", &self.on_eviction)
            .field("renew_from", &self.renew_from.is_some())
            .finish()
    }
}

/// The longest pause before the loop sends a call again after a failed connection or a
/// transient server error; the pauses double from 10 ms up to it.
const MOST_RETRY_PAUSE: Duration = Duration::from_secs(1);
/// The first such pause.
const FIRST_RETRY_PAUSE: Duration = Duration::from_millis(10);

impl<'q> Worker<'q> {
    fn new(queue: &'q WorkQueue) -> Self {
        Worker {
            queue,
            poll: Duration::from_millis(200),
            mode: ScriptMode::Eval,
            concurrency: 1,
            on_eviction: OnEviction::Warn,
            renew_from: None,
        }
    }
}

impl Worker<'_> {
    /// The longest wait for a wake-up before looking for jobs again (200 ms by default),
    /// which is how late a delayed job that came due may start. Each wait is drawn at
    /// random from 80 % to 100 % of it, so that workers started together do not look in
    /// step.
    pub fn poll(mut self, interval: Duration) -> Self {
        self.poll = interval;
        self
    }

    /// How the loop's takes, acks, nacks and renewals run their scripts
    /// ([`ScriptMode::Eval`] by default): see [`Op::via`].
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::ScriptMode;
    /// use redis_patterns::work_queue::{Stop, WorkQueue};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let queue = WorkQueue::new("thumbnails")?;
    /// let worker = queue.worker().via(ScriptMode::Functions);
    /// worker.run(&client, &Stop::new(), |_job| Ok::<(), String>(()))?;
    /// # Ok(()) }
    /// ```
    pub fn via(mut self, mode: ScriptMode) -> Self {
        self.mode = mode;
        self
    }

    /// How many jobs [`run_concurrent`](Self::run_concurrent) and
    /// [`run_async`](Self::run_async) run at once (1 to [`MAX_CONCURRENCY`]; 1 by default), each
    /// under its own lease: on threads of their own for `run_concurrent`, as futures
    /// polled side by side in the loop's task for `run_async`.
    pub fn concurrency(mut self, jobs: u64) -> Result<Self> {
        if jobs == 0 || jobs > MAX_CONCURRENCY {
            return Err(Error::invalid(
                "concurrency",
                format!("must be from 1 to {MAX_CONCURRENCY}, got {jobs}"),
            ));
        }
        self.concurrency = jobs;
        Ok(self)
    }

    /// What the loop does when its server's `maxmemory-policy` may evict the queue's keys
    /// ([`OnEviction::Warn`] by default): it looks once, as it starts, with `CONFIG GET`
    /// (where the server refuses it, [`WorkReport::memory_policy`] is
    /// [`MemoryPolicy::Unknown`] and, with `tracing`, one warning says so).
    pub fn on_eviction(mut self, on_eviction: OnEviction) -> Self {
        self.on_eviction = on_eviction;
        self
    }

    /// Where [`run_async`](Self::run_async) sends its lease renewals from: a thread of
    /// their own, on a sync connection opened (and opened again when it fails) with
    /// `client`. Without it the renewals run in the loop's task beside the handler, and a
    /// handler that blocks its thread (CPU work outside `spawn_blocking`, a sync call)
    /// stops them: its lease runs out, and the job runs a second time elsewhere. With it
    /// a blocked handler cannot stop them, on any runtime, `current_thread` included; it
    /// costs one OS thread and one connection per running loop.
    pub fn renew_from(mut self, client: impl Connect + Send + 'static) -> Self {
        self.renew_from = Some(Arc::new(client));
        self
    }

    fn renew_every(&self) -> Duration {
        (self.queue.lease / 3).max(Duration::from_millis(1))
    }

    /// One wait for a wake-up, with its jitter (at least 1 ms, which the command needs).
    fn wait(&self) -> Op<bool> {
        let wait = self.poll * 4 / 5 + jitter(self.poll / 5);
        self.queue
            .wait_for_work(wait.max(Duration::from_millis(1)))
            .via(self.mode)
    }

    /// A wait for work of at most `most` (and at most `poll`).
    fn wait_at_most(&self, most: Duration) -> Op<bool> {
        self.queue
            .wait_for_work(most.min(self.poll).max(Duration::from_millis(1)))
            .via(self.mode)
    }

    /// The call that ends a job by the handler's result and takes the next one: on
    /// success an [`ack_and_take`](WorkQueue::ack_and_take) (an [`ack`](WorkQueue::ack)
    /// once the loop is asked to stop), on failure a [`nack`](WorkQueue::nack).
    fn settle<O: JobOutput, E: HandlerError>(
        &self,
        job: &Job,
        outcome: std::result::Result<O, E>,
        stopping: bool,
    ) -> Op<(Ending, Vec<Job>)> {
        let op = match outcome.map(JobOutput::into_result) {
            Ok(result) if stopping => self
                .queue
                .ack_done(Done { job, result })
                .map(|_| Ok((Ending::Acked, Vec::new()))),
            Ok(result) => self
                .queue
                .ack_and_take([Done { job, result }], 1)
                .map(|next| Ok((Ending::Acked, next))),
            Err(why) => self.nack(job, why),
        };
        op.via(self.mode)
    }

    /// The call that ends a failed job as its handler's error asks.
    fn nack<E: HandlerError>(&self, job: &Job, why: E) -> Op<(Ending, Vec<Job>)> {
        let why = why.into_job_error();
        let nacked = |nacked| {
            Ok(match nacked {
                Nacked::Dead { .. } => (Ending::Dead, Vec::new()),
                Nacked::Retry { .. } => (Ending::Retried, Vec::new()),
            })
        };
        match why.kind {
            JobErrorKind::RateLimitGroup(hold) if job.group.is_some() => self
                .queue
                .rate_limit_group(job, hold)
                .map(|_| Ok((Ending::HeldBack, Vec::new()))),
            JobErrorKind::Unrecoverable => self.queue.fail(job, why.message).map(nacked),
            _ => self.queue.nack(job, why.message).map(nacked),
        }
        .via(self.mode)
    }

    /// Looks at the server's `maxmemory-policy` as [`on_eviction`](Self::on_eviction)
    /// says; refuses to go on with [`Error::EvictingServer`] when asked to.
    fn check_memory(&self, con: &mut Link<'_>, stop: &Stop) -> Result<MemoryPolicy> {
        if self.on_eviction == OnEviction::Ignore {
            return Ok(MemoryPolicy::NotChecked);
        }
        let mut pause = FIRST_RETRY_PAUSE;
        let (policy, meaning) = loop {
            match con.with(memory_policy) {
                Ok(found) => break found,
                Err(_) if stop.is_stopped() => return Ok(MemoryPolicy::Unknown),
                Err(_) => retry_pause(&mut pause),
            }
        };
        self.judge_memory(policy, meaning)
    }

    fn judge_memory(&self, policy: Option<String>, meaning: MemoryPolicy) -> Result<MemoryPolicy> {
        match (meaning, policy) {
            (MemoryPolicy::AllKeys, Some(policy)) if self.on_eviction == OnEviction::Refuse => {
                return Err(Error::EvictingServer { policy });
            }
            (MemoryPolicy::AllKeys, Some(_policy)) => {
                #[cfg(feature = "tracing")]
                tracing::warn!(
                    queue = %self.queue.name,
                    policy = %_policy,
                    "the server's maxmemory-policy may evict the queue's keys and lose its \
                     jobs silently: set it to noeviction"
                );
            }
            (MemoryPolicy::Unknown, _policy) => {
                #[cfg(feature = "tracing")]
                tracing::warn!(
                    queue = %self.queue.name,
                    policy = ?_policy,
                    "could not read the server's maxmemory-policy (CONFIG GET refused): make \
                     sure it is noeviction, or the queue's keys may be evicted"
                );
            }
            _ => {}
        }
        Ok(meaning)
    }

    /// Runs the loop on sync connections it opens with `client` (a [`redis::Client`], a
    /// cluster client, your own [`Connect`]): one for taking and ending jobs, one for
    /// lease renewals, sent from another thread while the handler runs on this one. A
    /// connection that fails (the server's `timeout` closed it while it sat idle, a proxy
    /// or `CLIENT KILL` cut it, the server restarted), and a server that answers with an
    /// error that passes ([`is_transient`]: a demoted primary's `UNBLOCKED` and
    /// `READONLY`, a restarted server's `LOADING`, …), make the loop open a new
    /// connection and send the call again, after a pause that doubles from 10 ms up to
    /// 1 s; a renewal that failed is sent again at once on the new connection.
    /// [`WorkReport`] counts them. After a failover, a `client` that always opens the
    /// same address reaches the demoted node and waits until it is a primary again: give
    /// the worker a [`Connect`] that finds the primary (Sentinel, a DNS name the
    /// provider moves, or a cluster client) to go on at once.
    ///
    /// Runs one job at a time; a [`concurrency`](Self::concurrency) above 1 is
    /// [`Error::InvalidInput`] here (see [`run_concurrent`](Self::run_concurrent)).
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::work_queue::{Stop, WorkQueue};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let queue = WorkQueue::new("thumbnails")?;
    /// let stop = Stop::new();
    /// let on_signal = stop.clone(); // raise it from a signal handler or another thread
    /// let report = queue.worker().run(&client, &stop, |job| {
    ///     let path: String = job.payload_as().map_err(|e| e.to_string())?;
    ///     make_thumbnail(&path)
    /// })?;
    /// println!("{} done, {} to retry, {} dead", report.acked, report.retried, report.dead);
    /// # Ok(()) }
    /// # fn make_thumbnail(_: &str) -> Result<(), String> { Ok(()) }
    /// ```
    pub fn run<H, O, E>(
        &self,
        client: &dyn Connect,
        stop: &Stop,
        mut handler: H,
    ) -> Result<WorkReport>
    where
        H: FnMut(&Job) -> std::result::Result<O, E>,
        O: JobOutput,
        E: HandlerError,
    {
        if self.concurrency > 1 {
            return Err(Error::invalid(
                "concurrency",
                "run runs one job at a time: use run_concurrent for more",
            ));
        }
        let mut report = WorkReport::default();
        let counts = RenewalCounts::default();
        let outcome = std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::channel::<Renewal>();
            let counts = &counts;
            scope.spawn(move || renew_held(self.queue, self.mode, client, rx, counts));
            let mut con = Link::new(client);
            let result = (|| {
                report.memory_policy = self.check_memory(&mut con, stop)?;
                let mut next: Vec<Job> = Vec::new();
                loop {
                    // A job taken in the call that acked the last one is run before stopping.
                    if stop.is_stopped() && next.is_empty() {
                        return Ok(());
                    }
                    if next.is_empty() {
                        match con.run(&self.queue.take(1).via(self.mode), stop)? {
                            Some(jobs) => next = jobs,
                            None => continue,
                        }
                    }
                    let Some(job) = next.pop() else {
                        con.run(&self.wait(), stop)?;
                        continue;
                    };
                    let _ = tx.send(Renewal::Hold(job.clone(), self.renew_every()));
                    let outcome = handler(&job);
                    let settle = self.settle(&job, outcome, stop.is_stopped());
                    // Renewed until the job is settled: an ack retried through an outage
                    // longer than the lease keeps the job.
                    let settled = con.run(&settle, stop);
                    let _ = tx.send(Renewal::Release(job.token.clone()));
                    match settled {
                        Ok(Some((ending, jobs))) => {
                            report.count(Ok(ending))?;
                            next = jobs;
                        }
                        // Stopped while the connection was down: the job's lease runs out.
                        Ok(None) => report.lost += 1,
                        Err(err) if err.code() == Some(LEASE_LOST) => report.lost += 1,
                        Err(err) => return Err(err),
                    }
                }
            })();
            report.reconnects += con.reconnects;
            report.server_retries += con.retries;
            result
        });
        counts.add_to(&mut report);
        outcome.map(|()| report)
    }

    /// Runs up to [`concurrency`](Self::concurrency) jobs at once, each on a thread of
    /// its own (scoped: they end with the call) and under its own lease, on two
    /// connections opened with `client`, as [`run`](Self::run) does: this thread takes
    /// and ends the jobs, up to the free slots ([`MAX_TAKE`] per call), acking those
    /// finished in the same call; another renews the leases of all the jobs in hand. A failed job is
    /// nacked at once. While slots are free and the queue is empty this thread waits for
    /// a wake-up: for at most [`poll`](Self::poll) when no job runs, and at most 100 ms
    /// while some do, so that the jobs that end meanwhile are acked within that (their
    /// leases renewed until then). Faults are met as in [`run`](Self::run).
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::work_queue::{Stop, WorkQueue};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let queue = WorkQueue::new("thumbnails")?;
    /// let report = queue
    ///     .worker()
    ///     .concurrency(8)?
    ///     .run_concurrent(&client, &Stop::new(), |job| make_thumbnail(&job.payload))?;
    /// # Ok(()) }
    /// # fn make_thumbnail(_: &[u8]) -> Result<(), String> { Ok(()) }
    /// ```
    pub fn run_concurrent<H, O, E>(
        &self,
        client: &dyn Connect,
        stop: &Stop,
        handler: H,
    ) -> Result<WorkReport>
    where
        H: Fn(&Job) -> std::result::Result<O, E> + Sync,
        O: JobOutput,
        E: HandlerError,
    {
        use std::sync::Mutex;
        use std::sync::mpsc::{RecvTimeoutError, channel};

        let mut report = WorkReport::default();
        let counts = RenewalCounts::default();
        let slots = self.concurrency;
        let (work_tx, work_rx) = channel::<Job>();
        let work_rx = Mutex::new(work_rx);
        let outcome = std::thread::scope(|scope| {
            let (renew_tx, renew_rx) = channel::<Renewal>();
            let counts = &counts;
            scope.spawn(move || renew_held(self.queue, self.mode, client, renew_rx, counts));
            let (done_tx, done_rx) = channel::<(Job, Outcome)>();
            for _ in 0..slots {
                let (work_rx, done_tx, handler) = (&work_rx, done_tx.clone(), &handler);
                scope.spawn(move || {
                    loop {
                        let next = work_rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        let Ok(job) = next else { return };
                        let outcome =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                handler(&job).map_err(HandlerError::into_job_error)
                            }));
                        let outcome = match outcome {
                            Ok(Ok(output)) => Outcome::Done(output.into_result()),
                            Ok(Err(why)) => Outcome::Failed(why),
                            Err(panic) => Outcome::Panicked(panic),
                        };
                        if done_tx.send((job, outcome)).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(done_tx);
            let mut con = Link::new(client);
            let mut panicked = None;
            let result = (|| {
                report.memory_policy = self.check_memory(&mut con, stop)?;
                let mut running = 0u64;
                let mut finished: Vec<Finished> = Vec::new();
                let mut ended: Vec<(Job, Outcome)> = Vec::new();
                loop {
                    ended.extend(done_rx.try_iter());
                    for (job, outcome) in ended.drain(..) {
                        running -= 1;
                        match outcome {
                            Outcome::Done(result) => finished.push(Finished { job, result }),
                            Outcome::Failed(why) => {
                                let nacked = con.run(&self.nack(&job, why), stop);
                                let _ = renew_tx.send(Renewal::Release(job.token.clone()));
                                match nacked {
                                    Ok(Some((ending, _))) => report.count(Ok(ending))?,
                                    Ok(None) => report.lost += 1,
                                    Err(err) => report.count(Err(err))?,
                                }
                            }
                            Outcome::Panicked(panic) => {
                                // Its lease runs out; the loop stops and unwinds.
                                let _ = renew_tx.send(Renewal::Release(job.token.clone()));
                                panicked.get_or_insert(panic);
                            }
                        }
                    }
                    let stopping = stop.is_stopped() || panicked.is_some();
                    let free = if stopping { 0 } else { slots - running };
                    if free == 0 || stopping {
                        // Acks what ended; takes nothing.
                        for job in std::mem::take(&mut finished) {
                            let ack = self.queue.ack_done(Done::from(&job)).via(self.mode);
                            let acked = con.run(&ack.map(|_| Ok(Ending::Acked)), stop);
                            let _ = renew_tx.send(Renewal::Release(job.token.clone()));
                            match acked {
                                Ok(Some(ending)) => report.count(Ok(ending))?,
                                Ok(None) => report.lost += 1,
                                Err(err) => report.count(Err(err))?,
                            }
                        }
                        if running == 0 && stopping {
                            return Ok(());
                        }
                        match done_rx.recv_timeout(self.poll) {
                            Ok(one) => ended.push(one),
                            Err(RecvTimeoutError::Timeout) => {}
                            Err(RecvTimeoutError::Disconnected) => return Ok(()),
                        }
                        continue;
                    }
                    let done: Vec<Finished> = finished
                        .drain(..finished.len().min(MAX_TAKE as usize))
                        .collect();
                    let take = self
                        .queue
                        .ack_and_take(&done, free.min(MAX_TAKE))
                        .via(self.mode);
                    let jobs = match con.run(&take, stop) {
                        Ok(Some(jobs)) => jobs,
                        Ok(None) => {
                            // Stopped while the connection was down: acked on the next turn.
                            finished.extend(done);
                            continue;
                        }
                        Err(err) if err.code() == Some(LEASE_LOST) => {
                            // One of them was lost: ack them one by one to tell which.
                            finished.extend(done);
                            for job in std::mem::take(&mut finished) {
                                let ack = self.queue.ack_done(Done::from(&job)).via(self.mode);
                                let acked = con.run(&ack.map(|_| Ok(Ending::Acked)), stop);
                                let _ = renew_tx.send(Renewal::Release(job.token.clone()));
                                match acked {
                                    Ok(Some(ending)) => report.count(Ok(ending))?,
                                    Ok(None) => report.lost += 1,
                                    Err(err) => report.count(Err(err))?,
                                }
                            }
                            continue;
                        }
                        Err(err) => return Err(err),
                    };
                    for job in done {
                        let _ = renew_tx.send(Renewal::Release(job.token.clone()));
                        report.acked += 1;
                    }
                    if jobs.is_empty() {
                        // With jobs still running, a job that ends is acked within
                        // IN_FLIGHT_WAIT, not at the end of a whole `poll`.
                        let wait = if running > 0 {
                            self.wait_at_most(IN_FLIGHT_WAIT)
                        } else {
                            self.wait()
                        };
                        con.run(&wait, stop)?;
                        continue;
                    }
                    for job in jobs {
                        let _ = renew_tx.send(Renewal::Hold(job.clone(), self.renew_every()));
                        running += 1;
                        let _ = work_tx.send(job);
                    }
                }
            })();
            drop(work_tx);
            report.reconnects += con.reconnects;
            report.server_retries += con.retries;
            (result, panicked)
        });
        let (result, panicked) = outcome;
        if let Some(panic) = panicked {
            std::panic::resume_unwind(panic);
        }
        counts.add_to(&mut report);
        result.map(|()| report)
    }

    /// Runs the loop on an async connection (a `MultiplexedConnection`, a
    /// `ConnectionManager`, a cluster connection), on any runtime: one job at a time, or
    /// up to [`concurrency`](Self::concurrency) handler futures side by side in this
    /// task, each taken, renewed and ended on its own lease (the jobs that end are acked
    /// in the call that takes the next ones, as [`run_concurrent`](Self::run_concurrent)
    /// does).
    /// With nothing to take, the loop waits for a wake-up on `con`
    /// ([`wait_for_work`](WorkQueue::wait_for_work)), which holds the connection
    /// meanwhile: give the worker a connection of its own (a response timeout shorter
    /// than [`poll`](Self::poll) only cuts the waits short).
    ///
    /// The lease renewals run on a clone of `con` in the loop's task, beside the
    /// handler's future, unless [`renew_from`](Self::renew_from) gives them a thread and
    /// a connection of their own: do that when a handler may block its thread, which
    /// would stop renewals in the same task, and so that an outage of `con` alone does
    /// not stop them. Either way a job's lease is renewed until its ack or nack is
    /// settled, as the sync loops do: an ack retried through an outage longer than the
    /// lease keeps its job. A renewal that fails for another reason than a lost lease is
    /// counted and sent again at the next tick.
    ///
    /// An error that passes ([`is_transient`]: a failed connection, a demoted or
    /// restarting server) makes the loop send the call again after a pause that doubles
    /// from 10 ms up to 1 s, counted in [`WorkReport::server_retries`]; `con` must find
    /// its way back itself: a `ConnectionManager` reconnects, to the same address.
    ///
    /// ```no_run
    /// # async fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::work_queue::{Job, Stop, WorkQueue};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let mut con = client.get_connection_manager().await?;
    /// let queue = WorkQueue::new("webhooks")?;
    /// let stop = Stop::new();
    /// let report = queue
    ///     .worker()
    ///     .renew_from(client.clone())
    ///     .run_async(&mut con, &stop, |job: Job| async move { deliver(&job.payload).await })
    ///     .await?;
    /// # Ok(()) }
    /// # async fn deliver(_: &[u8]) -> Result<(), String> { Ok(()) }
    /// ```
    #[cfg(feature = "aio")]
    pub async fn run_async<C, H, F, O, E>(
        &self,
        con: &mut C,
        stop: &Stop,
        mut handler: H,
    ) -> Result<WorkReport>
    where
        C: redis::aio::ConnectionLike + Clone + Send,
        H: FnMut(Job) -> F,
        F: std::future::Future<Output = std::result::Result<O, E>>,
        O: JobOutput,
        E: HandlerError,
    {
        use futures_util::future::{Either, select};

        let mut report = WorkReport::default();
        if self.on_eviction != OnEviction::Ignore {
            let mut pause = FIRST_RETRY_PAUSE;
            let (policy, meaning) = loop {
                match memory_policy_async(con).await {
                    Ok(found) => break found,
                    Err(_) if stop.is_stopped() => break (None, MemoryPolicy::Unknown),
                    Err(_) => retry_pause_async(&mut pause).await,
                }
            };
            report.memory_policy = self.judge_memory(policy, meaning)?;
        }
        let renewals_failed = AtomicU64::new(0);
        let every = self.renew_every();
        // Renewals on a thread of their own, when asked for.
        let renewer = self.renew_from.clone().map(|client| {
            let (tx, rx) = std::sync::mpsc::channel::<Renewal>();
            let counts = Arc::new(RenewalCounts::default());
            let (queue, mode, thread_counts) = (self.queue.clone(), self.mode, counts.clone());
            let thread = std::thread::spawn(move || {
                renew_held(&queue, mode, &*client, rx, &thread_counts);
            });
            (tx, counts, thread)
        });
        let mut next: Vec<Job> = Vec::new();
        let many = self.concurrency > 1;
        // A job taken in the call that acked the last one is run before stopping.
        let result: Result<()> = async {
            if many {
                let renewer = renewer.as_ref().map(|(tx, _, _)| tx);
                let failed = &renewals_failed;
                return self
                    .run_many_async(con, stop, &mut handler, &mut report, renewer, failed)
                    .await;
            }
            while !(stop.is_stopped() && next.is_empty()) {
                if next.is_empty() {
                    let take = self.queue.take(1).via(self.mode);
                    match retrying_async(&take, con, stop, &mut report).await? {
                        Some(jobs) => next = jobs,
                        None => continue,
                    }
                }
                let Some(job) = next.pop() else {
                    // The connection's response timeout is shorter than the wait: what
                    // it misses is one wake-up, and the next take looks anyway.
                    retrying_async(&self.wait(), con, stop, &mut report).await?;
                    continue;
                };
                let outcome = if let Some((tx, _, _)) = &renewer {
                    let _ = tx.send(Renewal::Hold(job.clone(), every));
                    handler(job.clone()).await
                } else {
                    let mut renewals = con.clone();
                    let extend = self.queue.extend(&job).via(self.mode);
                    let failed = &renewals_failed;
                    let renew = async move {
                        loop {
                            futures_timer::Delay::new(every).await;
                            // Stop renewing once the lease is lost; the ack or nack tells.
                            match extend.run_async(&mut renewals).await {
                                Err(err) if err.code() == Some(LEASE_LOST) => {
                                    std::future::pending::<()>().await;
                                }
                                Err(_) => {
                                    failed.fetch_add(1, Ordering::Relaxed);
                                }
                                Ok(_) => {}
                            }
                        }
                    };
                    let work = handler(job.clone());
                    match select(std::pin::pin!(work), std::pin::pin!(renew)).await {
                        Either::Left((outcome, _)) => outcome,
                        Either::Right(((), _)) => unreachable!("the renewals never end"),
                    }
                };
                // The lease is renewed until the ack or nack is settled: one retried
                // through an outage must not outlive it.
                let settle = self.settle(&job, outcome, stop.is_stopped());
                let renewals = renewer.is_none().then(|| con.clone());
                let settled = renewing(
                    retrying_async(&settle, con, stop, &mut report),
                    self.extends([&job]),
                    renewals,
                    every,
                    &renewals_failed,
                )
                .await;
                if let Some((tx, _, _)) = &renewer {
                    let _ = tx.send(Renewal::Release(job.token.clone()));
                }
                match settled {
                    Ok(Some((ending, jobs))) => {
                        report.count(Ok(ending))?;
                        next = jobs;
                    }
                    Ok(None) => report.lost += 1,
                    Err(err) => report.count(Err(err))?,
                }
            }
            Ok(())
        }
        .await;
        report.renewals_failed += renewals_failed.into_inner();
        if let Some((tx, counts, thread)) = renewer {
            drop(tx);
            // The thread ends at its next wake-up (at most a third of a lease); its
            // counts are read now, and it is not waited for.
            drop(thread);
            counts.add_to(&mut report);
        }
        result.map(|()| report)
    }
}

impl Worker<'_> {
    /// [`run_async`](Self::run_async) with a [`concurrency`](Self::concurrency) above 1:
    /// up to that many handler futures at once, polled in this task, each job renewed on
    /// its own (in its future, or by the renewals thread).
    #[cfg(feature = "aio")]
    async fn run_many_async<C, H, F, O, E>(
        &self,
        con: &mut C,
        stop: &Stop,
        handler: &mut H,
        report: &mut WorkReport,
        renewer: Option<&std::sync::mpsc::Sender<Renewal>>,
        failed: &AtomicU64,
    ) -> Result<()>
    where
        C: redis::aio::ConnectionLike + Clone + Send,
        H: FnMut(Job) -> F,
        F: std::future::Future<Output = std::result::Result<O, E>>,
        O: JobOutput,
        E: HandlerError,
    {
        use futures_util::future::{Either, FutureExt, select};
        use futures_util::stream::{FuturesUnordered, StreamExt};

        let every = self.renew_every();
        let slots = self.concurrency as usize;
        // One job's future: its handler, with its renewals beside it unless the renewals
        // thread holds it.
        let start = |job: Job, work: F, mut renewals: C| {
            let extend = self.queue.extend(&job).via(self.mode);
            async move {
                let outcome = match renewer {
                    Some(tx) => {
                        let _ = tx.send(Renewal::Hold(job.clone(), every));
                        work.await
                    }
                    None => {
                        let renew = async {
                            loop {
                                futures_timer::Delay::new(every).await;
                                match extend.run_async(&mut renewals).await {
                                    Err(err) if err.code() == Some(LEASE_LOST) => {
                                        std::future::pending::<()>().await;
                                    }
                                    Err(_) => {
                                        failed.fetch_add(1, Ordering::Relaxed);
                                    }
                                    Ok(_) => {}
                                }
                            }
                        };
                        match select(std::pin::pin!(work), std::pin::pin!(renew)).await {
                            Either::Left((outcome, _)) => outcome,
                            Either::Right(((), _)) => unreachable!("the renewals never end"),
                        }
                    }
                };
                let outcome = outcome.map(JobOutput::into_result);
                (job, outcome.map_err(HandlerError::into_job_error))
            }
        };
        let release = |job: &Job| {
            if let Some(tx) = renewer {
                let _ = tx.send(Renewal::Release(job.token.clone()));
            }
        };
        // The connection that renews jobs while they are settled, unless the renewals
        // thread holds them.
        let renewals = |con: &C| renewer.is_none().then(|| con.clone());
        let mut running = FuturesUnordered::new();
        let mut finished: Vec<Finished> = Vec::new();
        let mut ended: Vec<(Job, std::result::Result<Vec<u8>, JobError>)> = Vec::new();
        loop {
            while let Some(Some(one)) = running.next().now_or_never() {
                ended.push(one);
            }
            for (job, outcome) in ended.drain(..) {
                match outcome {
                    Ok(result) => finished.push(Finished { job, result }),
                    Err(why) => {
                        let nack = self.nack(&job, why);
                        let holding = renewals(con);
                        let nacked = renewing(
                            retrying_async(&nack, con, stop, report),
                            self.extends([&job]),
                            holding,
                            every,
                            failed,
                        )
                        .await;
                        release(&job);
                        match nacked {
                            Ok(Some((ending, _))) => report.count(Ok(ending))?,
                            Ok(None) => report.lost += 1,
                            Err(err) => report.count(Err(err))?,
                        }
                    }
                }
            }
            let stopping = stop.is_stopped();
            let free = if stopping { 0 } else { slots - running.len() };
            if free == 0 {
                if stopping {
                    // Acks what ended; takes nothing.
                    for job in std::mem::take(&mut finished) {
                        self.ack_holding(&job, con, stop, report, renewals(con), failed)
                            .await?;
                        release(&job);
                    }
                }
                match running.next().await {
                    Some(one) => ended.push(one),
                    None => return Ok(()),
                }
                continue;
            }
            let done: Vec<Finished> = finished
                .drain(..finished.len().min(MAX_TAKE as usize))
                .collect();
            let take = self
                .queue
                .ack_and_take(&done, (free as u64).min(MAX_TAKE))
                .via(self.mode);
            let holding = renewals(con);
            let taken = renewing(
                retrying_async(&take, con, stop, report),
                self.extends(done.iter().map(|d| &d.job)),
                holding,
                every,
                failed,
            )
            .await;
            let jobs = match taken {
                Ok(Some(jobs)) => jobs,
                Ok(None) => {
                    finished.extend(done);
                    continue;
                }
                Err(err) if err.code() == Some(LEASE_LOST) => {
                    // One of them was lost: ack them one by one to tell which.
                    for job in done {
                        self.ack_holding(&job, con, stop, report, renewals(con), failed)
                            .await?;
                        release(&job);
                    }
                    continue;
                }
                Err(err) => return Err(err),
            };
            for job in &done {
                release(job);
                report.acked += 1;
            }
            if !jobs.is_empty() {
                for job in jobs {
                    let work = handler(job.clone());
                    running.push(start(job, work, con.clone()));
                }
                continue;
            }
            // Nothing to take: a wake-up, or a handler that ends, whichever comes first.
            // A wait cut short holds `con` until it times out: with handlers running it
            // lasts at most IN_FLIGHT_WAIT, so that the ones that end are acked soon.
            let wait = if running.is_empty() {
                self.wait()
            } else {
                self.wait_at_most(IN_FLIGHT_WAIT)
            };
            let one = {
                let waiting = std::pin::pin!(retrying_async(&wait, con, stop, report));
                if running.is_empty() {
                    waiting.await?;
                    None
                } else {
                    match select(waiting, running.next()).await {
                        Either::Left((woken, _)) => {
                            woken?;
                            None
                        }
                        Either::Right((one, _)) => one,
                    }
                }
            };
            ended.extend(one);
        }
    }
}

impl Worker<'_> {
    /// The lease renewals of `jobs`.
    #[cfg(feature = "aio")]
    fn extends<'j>(&self, jobs: impl IntoIterator<Item = &'j Job>) -> Vec<Op<u64>> {
        jobs.into_iter()
            .map(|job| self.queue.extend(job).via(self.mode))
            .collect()
    }

    /// Acks `job` (finished, its result kept) alone, renewing its lease meanwhile on
    /// `renewals` when given, and counts the outcome.
    #[cfg(feature = "aio")]
    async fn ack_holding<C>(
        &self,
        job: &Finished,
        con: &mut C,
        stop: &Stop,
        report: &mut WorkReport,
        renewals: Option<C>,
        failed: &AtomicU64,
    ) -> Result<()>
    where
        C: redis::aio::ConnectionLike + Send,
    {
        let ack = self.queue.ack_done(Done::from(job)).via(self.mode);
        let acked = renewing(
            retrying_async(&ack, con, stop, report),
            self.extends([&job.job]),
            renewals,
            self.renew_every(),
            failed,
        )
        .await;
        match acked {
            Ok(Some(_)) => report.acked += 1,
            Ok(None) => report.lost += 1,
            Err(err) => report.count(Err(err))?,
        }
        Ok(())
    }
}

/// Runs `settle` (an ack or nack, retried through failures) while renewing the leases of
/// `extends` every `every` on `renewals`, so that a settle that outlasts a lease does not
/// lose its job to another worker; without `renewals` (a renewals thread holds the
/// jobs), `settle` alone. A lost lease is left alone; a failed renewal is counted in
/// `failed` and tried again at the next turn.
#[cfg(feature = "aio")]
async fn renewing<T, C>(
    settle: impl std::future::Future<Output = T>,
    extends: Vec<Op<u64>>,
    renewals: Option<C>,
    every: Duration,
    failed: &AtomicU64,
) -> T
where
    C: redis::aio::ConnectionLike + Send,
{
    use futures_util::future::{Either, select};

    let Some(mut renewals) = renewals else {
        return settle.await;
    };
    let renew = async {
        let mut lost = vec![false; extends.len()];
        loop {
            futures_timer::Delay::new(every).await;
            for (extend, lost) in extends.iter().zip(&mut lost) {
                if *lost {
                    continue;
                }
                match extend.run_async(&mut renewals).await {
                    Err(err) if err.code() == Some(LEASE_LOST) => *lost = true,
                    Err(_) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(_) => {}
                }
            }
        }
    };
    match select(std::pin::pin!(settle), std::pin::pin!(renew)).await {
        Either::Left((settled, _)) => settled,
        Either::Right(((), _)) => unreachable!("the renewals never end"),
    }
}

/// Runs `op` on `con` until it gets an answer other than an error that passes, pausing
/// between tries; `None` when `stop` was raised first.
#[cfg(feature = "aio")]
async fn retrying_async<T: 'static, C>(
    op: &Op<T>,
    con: &mut C,
    stop: &Stop,
    report: &mut WorkReport,
) -> Result<Option<T>>
where
    C: redis::aio::ConnectionLike + Send,
{
    let mut pause = FIRST_RETRY_PAUSE;
    loop {
        match op.run_async(con).await {
            Err(err) if is_transient(&err) => {
                if is_connection_failure(&err) {
                    report.reconnects += 1;
                } else if !matches!(err, Error::ResponseTimeout { .. }) {
                    report.server_retries += 1;
                }
                if stop.is_stopped() {
                    return Ok(None);
                }
                retry_pause_async(&mut pause).await;
            }
            result => return result.map(Some),
        }
    }
}

/// Sleeps for about `pause` (from half of it to all of it), and doubles it up to
/// [`MOST_RETRY_PAUSE`].
fn retry_pause(pause: &mut Duration) {
    std::thread::sleep(*pause / 2 + jitter(*pause / 2));
    *pause = (*pause * 2).min(MOST_RETRY_PAUSE);
}

#[cfg(feature = "aio")]
async fn retry_pause_async(pause: &mut Duration) {
    futures_timer::Delay::new(*pause / 2 + jitter(*pause / 2)).await;
    *pause = (*pause * 2).min(MOST_RETRY_PAUSE);
}

/// What a handler thread of [`Worker::run_concurrent`] hands back.
enum Outcome {
    /// With the result to keep ('' for none).
    Done(Vec<u8>),
    Failed(JobError),
    Panicked(Box<dyn std::any::Any + Send>),
}

/// What the renewals thread is told: renew a job every so often from now on, or no more.
enum Renewal {
    Hold(Job, Duration),
    /// The job with this token.
    Release(String),
}

/// What the renewals thread counts.
#[derive(Default)]
struct RenewalCounts {
    failed: AtomicU64,
    reconnects: AtomicU64,
    retries: AtomicU64,
}

impl RenewalCounts {
    fn add_to(&self, report: &mut WorkReport) {
        report.renewals_failed += self.failed.load(Ordering::Relaxed);
        report.reconnects += self.reconnects.load(Ordering::Relaxed);
        report.server_retries += self.retries.load(Ordering::Relaxed);
    }
}

/// The renewals thread: renews every held job every `every` (a third of the lease) on a
/// connection of its own, until the channel closes. A job whose lease is lost is dropped
/// (its ack or nack tells); a renewal that failed otherwise is sent again at once on a
/// new connection, and at the next tick.
fn renew_held(
    queue: &WorkQueue,
    mode: ScriptMode,
    client: &dyn Connect,
    rx: std::sync::mpsc::Receiver<Renewal>,
    counts: &RenewalCounts,
) {
    use std::sync::mpsc::RecvTimeoutError;
    use std::time::Instant;

    let mut con = Link::new(client);
    // Each held job with when it is renewed next, and how often.
    let mut held: Vec<(Job, Instant, Duration)> = Vec::new();
    loop {
        let now = Instant::now();
        let next = held.iter().map(|(_, at, _)| *at).min();
        let message = match next {
            Some(at) => rx.recv_timeout(at.saturating_duration_since(now)),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match message {
            Ok(Renewal::Hold(job, every)) => held.push((job, Instant::now() + every, every)),
            Ok(Renewal::Release(token)) => held.retain(|(job, _, _)| job.token != token),
            Err(RecvTimeoutError::Timeout) => {
                let now = Instant::now();
                held.retain_mut(|(job, at, every)| {
                    if *at > now {
                        return true;
                    }
                    *at = now + *every;
                    renew(queue, mode, job, &mut con, &counts.failed)
                });
                counts.reconnects.store(con.reconnects, Ordering::Relaxed);
                counts.retries.store(con.retries, Ordering::Relaxed);
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Renews `job`'s lease on `con`, opening it again and sending the renewal once more
/// when it failed; whether to go on renewing (false once the lease is lost).
fn renew(
    queue: &WorkQueue,
    mode: ScriptMode,
    job: &Job,
    con: &mut Link<'_>,
    failed: &AtomicU64,
) -> bool {
    let extend = queue.extend(job).via(mode);
    for _ in 0..2 {
        match con.try_run(&extend) {
            Ok(_) => return true,
            Err(err) if err.code() == Some(LEASE_LOST) => return false,
            Err(_) => {
                failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    // Tried again at the next tick, while the lease may still be held.
    true
}

/// How a job the worker held ended.
enum Ending {
    Acked,
    Retried,
    Dead,
    HeldBack,
}

impl WorkReport {
    fn count(&mut self, ending: Result<Ending>) -> Result<()> {
        match ending {
            Ok(Ending::Acked) => self.acked += 1,
            Ok(Ending::Retried) => self.retried += 1,
            Ok(Ending::Dead) => self.dead += 1,
            Ok(Ending::HeldBack) => self.held_back += 1,
            Err(err) if err.code() == Some(LEASE_LOST) => self.lost += 1,
            Err(err) => return Err(err),
        }
        Ok(())
    }
}

/// A sync connection of the worker loop's, opened on first use and again after it failed
/// or its server answered with an error that passes.
struct Link<'c> {
    client: &'c dyn Connect,
    con: Option<Box<dyn redis::ConnectionLike + Send>>,
    reconnects: u64,
    retries: u64,
}

impl<'c> Link<'c> {
    fn new(client: &'c dyn Connect) -> Self {
        Link {
            client,
            con: None,
            reconnects: 0,
            retries: 0,
        }
    }

    /// Runs `f` once on the connection, opened first if it is not; after an error that
    /// passes the connection is dropped, to be opened again by the next call.
    fn with<T>(
        &mut self,
        f: impl FnOnce(&mut dyn redis::ConnectionLike) -> Result<T>,
    ) -> Result<T> {
        let con = match &mut self.con {
            Some(con) => con,
            None => {
                let con = self.client.connect().map_err(Error::from);
                let con = match con {
                    Ok(con) => con,
                    Err(err) => {
                        self.count(&err);
                        return Err(err);
                    }
                };
                self.con.insert(con)
            }
        };
        let result = f(con.as_mut());
        if let Err(err) = &result
            && is_transient(err)
        {
            // A demoted server's connection stays on it: a new one may reach the primary.
            self.con = None;
            self.count(err);
        }
        result
    }

    fn count(&mut self, err: &Error) {
        if is_connection_failure(err) {
            self.reconnects += 1;
        } else if is_transient(err) {
            self.retries += 1;
        }
    }

    /// Runs `op` once (see [`with`](Self::with)).
    fn try_run<T: 'static>(&mut self, op: &Op<T>) -> Result<T> {
        self.with(|con| op.run(con))
    }

    /// Runs `op` until it gets an answer other than an error that passes, pausing
    /// between tries; `None` when `stop` was raised first.
    fn run<T: 'static>(&mut self, op: &Op<T>, stop: &Stop) -> Result<Option<T>> {
        let mut pause = FIRST_RETRY_PAUSE;
        loop {
            match self.try_run(op) {
                Err(err) if is_transient(&err) => {
                    if stop.is_stopped() {
                        return Ok(None);
                    }
                    retry_pause(&mut pause);
                }
                result => return result.map(Some),
            }
        }
    }
}
