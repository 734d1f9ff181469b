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
//! | `{name}:waiting` | zset | job id → rank: `(255 − priority) × 10^13 + 5 × 10^12 ± arrival number` (− for a LIFO job) |
//! | `{name}:delayed` | zset | job id → when it is due (ms, server clock) |
//! | `{name}:leased` | zset | job id → lease deadline (ms) |
//! | `{name}:dead` | zset | job id → when it died (ms): the dead-letter queue |
//! | `{name}:parked` | zset | jobs held back by their group's limits (score 0, named so that one group is one lexicographic range) |
//! | `{name}:jobs` | hash | `<x>:<id>` per job: `d` payload, `s` state, `r` rank, `n` deliveries, `g` group, `t` lease token, `e` last error, `a` when it was first ready, `o` its own [options](JobOptions) (retries, removal), `l` its [log](WorkQueue::log), `c` its producer's W3C trace context ([`JobOptions::trace_context`], or with the feature `otel` the add's span: see `work_queue::otel`), and once it was taken while the queue [keeps completed jobs](Settings::keep_completed) `b` when its last delivery started, and once completed `v` its result; the counter `#seq`; `#paused` (`1`) while the queue is [paused](#pause-and-resume); the queue's [settings](#limits-the-queue-owns) `#settings` (a MessagePack array; the text earlier builds wrote is read too, and `configure` rewrites it), its rate ring `#qn` and `#qs:<i>`; its [metrics](#metrics) `#totals` and `#m:<slot>` |
//! | `{name}:groups` | hash | per group `g`: `r:<g>` jobs running; `p:<g>` jobs started, `z:<g>` the ring's size, `s:<g>:<i>` a ring of the last start times, `o:<g>` where old start times left by a change of the rate end; `u:<g>` until when a handler [held it back](WorkQueue::rate_limit_group) |
//! | `{name}:wake` | zset | group → when its rate window lets a parked job start |
//! | `{name}:idle` | zset | group → when its ring of start times stops mattering (it is dropped then), or now while old start times of it are left to drop |
//! | `{name}:signal` | zset | one member while a job may be ready: idle workers wait on it with `BZPOPMIN` |
//! | `{name}:events` | stream | what happened to each job, once [events](#events-results-and-progress) are on: `event`, `job`, and `error` or `progress`; at most the queue's cap |
//! | `{name}:results` | hash | job id → the result its worker gave, while kept |
//! | `{name}:kept` | zset | job id → until when its result is kept (ms) |
//! | `{name}:turns` | zset | group (`''` for jobs without one) → its turn, while [groups take turns](#groups-that-take-turns) |
//! | `{name}:completed` | zset | job id → when it completed (ms), while the queue [keeps completed jobs](Settings::keep_completed) |
//! | `{name}:blocked` | zset | a flow's parent → when it was added (ms), while it waits for its children |
//!
//! A flow's parent ([`add_flow`](WorkQueue::add_flow)) is `blocked`, in `{name}:blocked`,
//! with `w:<id>` the children it waits for and `x:<id>` the failed ones it lists; each
//! child names it in `P:<id>`. A job's last progress report is `p:<id>`. The
//! [schedules](schedule) live in `{name}:schedules`, `{name}:due` and
//! `{name}:schedules_wake`.
//!
//! A job moves between seven [`State`]s:
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
//!         (gone), or completed while the queue keeps them ──trimmed, clean, remove──► (gone)
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
//! jobs at once.
//!
//! The settings are stored in a form that each script reads in one step (a MessagePack
//! array). Scripts of this version also read the text that earlier versions stored, and
//! `configure` writes it again in the new form. Earlier versions' scripts refuse the new
//! form (`BAD_JOBS`, nothing written), so on a rolling deploy upgrade every app that
//! calls the queue before any of them calls `configure`. A handler whose upstream answers "too many requests"
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
//! to `{name}:dead` with its error. A job can carry its own
//! [`attempts`](JobOptions::attempts) and [`backoff`](JobOptions::backoff) (BullMQ's job
//! options): they replace the queue's or worker's for that job, in `nack` and when its
//! lease runs out, so every worker in every language retries it the same way. A job that can never succeed (a malformed payload)
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
//! # Completed jobs
//!
//! An acked job leaves the queue unless the queue keeps a history
//! ([`Settings::keep_completed`], BullMQ's `removeOnComplete: {count, age}`): then it
//! stays in [`State::Completed`] with its record, when its last delivery started, when it
//! ended and its result, at most `count` of them for at most `age`. Each ack drops up to
//! two of the oldest beyond either bound and each `take` up to its `limit`, so the set
//! never holds more than its count. [`job`](WorkQueue::job) reads one (its
//! [`ran_for`](JobInfo::ran_for) is how long it ran), [`list`](WorkQueue::list) pages
//! through them, [`clean_ended_before`](WorkQueue::clean_ended_before) drops those that
//! ended before a grace time, and [`wait_for_job`](WorkQueue::wait_for_job) reads a kept
//! job's result even with events off. A job added with
//! [`remove_on_complete`](JobOptions::remove_on_complete) is not kept; one added with
//! [`remove_on_fail`](JobOptions::remove_on_fail) does not go to the dead-letter queue.
//! While a job is kept its id is a duplicate, as in BullMQ.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::work_queue::{Settings, State, WorkQueue};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let queue = WorkQueue::new("invoices")?;
//! let history = Settings::new().keep_completed(1_000, Duration::from_secs(86_400))?;
//! queue.configure(&history).run(&mut con)?;
//! for job in queue.list(State::Completed, 0, 10).run(&mut con)? {
//!     println!("{} ran for {:?}", job.id, job.ran_for());
//! }
//! # Ok(()) }
//! ```
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
//! - **Events** ([`Settings::events`], off by default): the scripts append what they do
//!   to a job to `{name}:events` in the same call ([`EventKind`]): `added` (with its
//!   state), `waiting` (a delayed job come due, a flow's parent whose children ended),
//!   `active` (taken, with its delivery), `progress`, `completed`, `failed` (with the
//!   error; retried), `stalled` (its lease ran out; retried), `dead` and `retried`. The stream keeps the newest `max` entries exactly
//!   (at most [`MAX_EVENTS`]). An [`Events`] reader follows them from an id, blocking on
//!   the stream itself (`XREAD BLOCK`), and goes on from the last id it handed out after
//!   a reconnect; each read says whether the cap may have trimmed entries it had not read
//!   ([`EventPage::lost`]). [`wait_for_job`](WorkQueue::wait_for_job) waits for one
//!   job's end: it reads where the events stand, then the job's state (an end before the
//!   call is seen there), then follows the events, and reads the state again when the
//!   cap trimmed some. Called again on a new connection after an error, it misses
//!   nothing. While events are on, an ack without a result keeps an empty one for the
//!   result time, so a wait tells a job acked before it began from one never added.
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
//! - **Logs**: the holder of a job may keep log lines with it ([`log`](WorkQueue::log),
//!   BullMQ's `job.log`): the job keeps its newest [`MAX_LOG_LINES`] lines, at most 64 KiB
//!   of them, whichever delivery wrote them, and they go with it when it ends;
//!   [`logs`](WorkQueue::logs) and the `redis-patterns queue <name> job <id>` command read
//!   them.
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
//!   queued twice, and `add` says where the job already is; a deduplication window
//!   ([`add_deduplicated`](WorkQueue::add_deduplicated)) throttles or debounces adds for a
//!   while, as BullMQ's `deduplication` does.
//!
//! A BullMQ app moving here finds every BullMQ option and method with its equivalent, and
//! what differs in meaning (priority runs the other way), in the
//! [BullMQ guide](crate::guide::from_bullmq).

use std::time::Duration;

#[cfg(doc)]
use crate::runtime::error::Error;
use crate::runtime::error::Result;
use crate::runtime::input;
use crate::scripts::work_queue as script;

mod dedup;
mod events;
mod flow;
mod operate;
pub use dedup::{Deduplicated, Deduplication, MAX_WINDOW};
pub use events::{
    Event, EventKind, EventPage, Events, JobEnd, JobLogs, MAX_EVENTS_READ, MAX_LOG_LINE_BYTES,
    MAX_LOG_LINES, MAX_PROGRESS_BYTES,
};
pub use flow::{Child, MAX_CHILDREN, OnChildFailure};
pub use operate::{
    Changes, Configured, MAX_BULK, MAX_EVENTS, MAX_METRICS_MINUTES, MAX_RESULT_BYTES,
    MAX_RESULT_TTL, Metrics, Minute, Settings,
};
#[cfg(feature = "otel")]
pub mod otel;
pub mod schedule;
pub use schedule::{
    Due, DueSchedule, Fired, MAX_CATCH_UP, MAX_SCHEDULES_PAGE, Missed, Schedule, ScheduleInfo,
    ScheduleReport, Scheduler, Timing,
};

mod jobs;
mod limits;
mod memory;
mod ops;
mod renew;
mod retry;
mod spans;
mod work_loop;
mod worker;
#[cfg(feature = "aio")]
mod worker_async;
pub use jobs::{Added, Counts, Done, Job, JobInfo, JobOptions, JobOutput, Nacked, Removed, State};
pub use limits::Limits;
#[cfg(feature = "aio")]
pub use memory::memory_policy_async;
pub use memory::{MemoryPolicy, OnEviction, memory_policy};
pub use retry::{Backoff, HandlerError, JobError, is_transient};
pub use worker::{Connect, Stop, WorkReport, Worker};
// What `operate` and `schedule` reach through `super::`.
use jobs::unsigned;
use retry::Retries;
use worker::Link;

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
/// The most deliveries a job can ask for ([`JobOptions::attempts`]), as
/// [`with_max_deliveries`](WorkQueue::with_max_deliveries) allows a queue.
pub const MAX_ATTEMPTS: u32 = 1000;

/// The code of the error [`ack`](WorkQueue::ack), [`nack`](WorkQueue::nack) and
/// [`extend`](WorkQueue::extend) fail with when the caller no longer holds the job:
/// `err.code() == Some(LEASE_LOST)`.
pub const LEASE_LOST: &str = "LEASE_LOST";

/// The code of the error [`ack_with`](WorkQueue::ack_with) and
/// [`ack_and_take`](WorkQueue::ack_and_take) fail with when a result is longer than the
/// queue keeps ([`Settings::results`]): `err.code() == Some(RESULT_TOO_BIG)`. The job is
/// still held then.
pub const RESULT_TOO_BIG: &str = "RESULT_TOO_BIG";

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

/// A queue's sixteen keys, in the order the scripts take them.
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
    completed: String,
    blocked: String,
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
            completed: keys::completed(name)?,
            blocked: keys::blocked(name)?,
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

    /// The queue's sixteen keys: `waiting`, `delayed`, `leased`, `dead`, `parked`,
    /// `jobs`, `groups`, `wake`, `idle`, `signal`, `events`, `results`, `kept`, `turns`,
    /// `completed`, `blocked`.
    /// Each `work_queue` script takes the ones it uses, in this order.
    pub fn keys(&self) -> [&str; 16] {
        let k = &self.keys;
        [
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
            &k.completed,
            &k.blocked,
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
}
