//! `redis-patterns queue <name> …` and `redis-patterns queues`: what operators do to a
//! [`work_queue`](redis_patterns::work_queue), each action one of its ops (one script, or
//! one native command to know whether the queue has keys), never a raw command.

use std::time::Duration;

use redis_patterns::Batch;
use redis_patterns::work_queue::{MAX_BULK, MAX_LOG_LINES, Removed, State, WorkQueue};
use serde_json::{Value as Json, json};

use crate::shared::{Failure, connect};

mod args;
pub(crate) mod output;
mod queues;
use args::{Action, MARK};
pub use args::{QueueArgs, QueuesArgs, name_first};
use output::{
    counts_json, job_json, list_row, logs_json, metrics_json, print_counts, print_job, print_json,
    print_logs, print_metrics, print_settings, print_table, settings_json, yes_no,
};
pub use queues::list_queues;
#[cfg(feature = "dashboard")]
pub(crate) use {args::DEFAULT_URL, queues::queue_names};

/// What an operator is told about a queue with no keys.
fn no_keys(name: &str) -> String {
    format!(
        "queue {name:?} has no keys on this server (no job, setting or pause flag); \
         `redis-patterns queues` lists the queues there"
    )
}

pub fn run(args: QueueArgs) -> Result<(), Failure> {
    let QueueArgs {
        name,
        url,
        cluster,
        action,
    } = args;
    let name = name.strip_prefix(MARK).unwrap_or(&name).to_owned();
    let queue = WorkQueue::new(name.as_str())?;
    // Settings the flags cannot make, refused before anything is sent.
    if let Action::Limits(flags) = &action {
        flags.changes()?;
    }
    let mut con = connect(&url, cluster)?;
    let con = &mut *con;
    let exists = queue.exists().run(con)?;
    if !exists && action.writes() && !action.creates() {
        let create = if matches!(action, Action::Pause { .. } | Action::Limits(_)) {
            ", and --create sets up a new queue before its first job"
        } else {
            ""
        };
        return Err(Failure::failed(format!(
            "nothing changed: {}{create}",
            no_keys(&name)
        )));
    }
    let reads = !action.writes();
    let result = act(&queue, &name, con, action);
    if !exists && reads {
        eprintln!("redis-patterns: note: {}", no_keys(&name));
    }
    result
}

fn act(
    queue: &WorkQueue,
    name: &str,
    con: &mut dyn redis::ConnectionLike,
    action: Action,
) -> Result<(), Failure> {
    match action {
        Action::Counts { json } => {
            let mut batch = Batch::new();
            let counts = batch.add(queue.counts());
            let paused = batch.add(queue.is_paused());
            let mut replies = batch.run(con)?;
            let (counts, paused) = (counts.take(&mut replies)?, paused.take(&mut replies)?);
            if json {
                let mut out = counts_json(&counts);
                out["paused"] = json!(paused);
                print_json(&out);
            } else {
                print_counts(&counts);
                println!("paused: {}", yes_no(paused));
            }
        }
        Action::Metrics {
            minutes,
            prometheus,
            json,
        } => {
            let metrics = queue.metrics(minutes).run(con)?;
            if prometheus {
                print!("{}", metrics.prometheus(name));
            } else if json {
                print_json(&metrics_json(&metrics));
            } else {
                print_metrics(&metrics, name, minutes);
            }
        }
        Action::List {
            state,
            offset,
            count,
            json,
        } => {
            let jobs = queue.list(state.into(), offset, count).run(con)?;
            if json {
                print_json(&Json::Array(
                    jobs.iter().map(|job| job_json(job, false)).collect(),
                ));
            } else {
                let rows: Vec<Vec<String>> = jobs.iter().map(list_row).collect();
                print_table(
                    &[
                        "id",
                        "deliveries",
                        "priority",
                        "group",
                        "at (UTC)",
                        "last_error",
                        "payload",
                    ],
                    &rows,
                );
            }
        }
        Action::Job { id, json } => match queue.job(&id).run(con)? {
            Some(job) => {
                let logs = queue.logs(&id, 0, MAX_LOG_LINES).run(con)?;
                if json {
                    let mut out = job_json(&job, true);
                    out["logs"] = logs_json(&logs);
                    print_json(&out);
                } else {
                    print_job(&job);
                    print_logs(&logs);
                }
            }
            None => return Err(no_job(&id, name)),
        },
        Action::Settings { json } => {
            let settings = queue.settings().run(con)?;
            if json {
                print_json(&settings_json(&settings));
            } else {
                print_settings(&settings);
            }
        }
        Action::Pause { .. } => {
            if queue.pause().run(con)? {
                println!("paused queue {name}");
            } else {
                println!("queue {name} was already paused");
            }
        }
        Action::Resume => {
            if queue.resume().run(con)? {
                println!("resumed queue {name}");
            } else {
                println!("queue {name} was not paused");
            }
        }
        Action::Retry { id: Some(id), .. } => {
            if !queue.requeue(&id).run(con)? {
                return Err(Failure::failed(format!(
                    "job {id:?} is not in the dead-letter queue of {name}: nothing changed"
                )));
            }
            println!("requeued job {id:?}: waiting");
        }
        Action::Retry { id: None, .. } => {
            println!("requeued: {}", retry_all_dead(queue, con)?);
        }
        Action::Remove { id } => match queue.remove(&id).run(con)? {
            Removed::From(state) => println!("removed job {id:?} (was {state})"),
            Removed::Running => {
                return Err(Failure::failed(format!(
                    "job {id:?} is held by a worker: left to it (its ack or nack ends it)"
                )));
            }
            Removed::NoSuchJob => return Err(no_job(&id, name)),
        },
        Action::Drain { delayed } => {
            let mut states = vec![State::Waiting, State::Parked];
            if delayed {
                states.push(State::Delayed);
            }
            for state in states {
                println!("removed_{state}: {}", clean(queue, con, state, 0)?);
            }
        }
        Action::Clean { state, grace_ms } => {
            let state = State::from(state);
            println!("removed_{state}: {}", clean(queue, con, state, grace_ms)?);
        }
        Action::Delete { force } => {
            loop {
                match queue.delete(MAX_BULK, force).run(con) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(err) if err.code() == Some("NOT_PAUSED") => {
                        return Err(Failure::failed(format!(
                            "queue {name} is running: pause it first \
                             (`redis-patterns queue {name} pause`), then delete it"
                        )));
                    }
                    Err(err) if err.code() == Some("JOBS_RUNNING") => {
                        return Err(Failure::failed(format!(
                            "workers hold jobs of queue {name}: wait until they end \
                             (`redis-patterns queue {name} counts` shows them as leased), \
                             or delete with --force (their acks then fail with LEASE_LOST)"
                        )));
                    }
                    Err(err) => return Err(err.into()),
                }
            }
            println!("deleted queue {name}");
        }
        Action::Priority { id, priority } => {
            let priority = u8::try_from(priority).expect("the header bounds it to a byte");
            match queue.set_priority(&id, priority).run(con)? {
                Some(state) => println!("job {id:?}: priority {priority} ({state})"),
                None => return Err(no_job(&id, name)),
            }
        }
        Action::Delay { id, ms } => {
            match queue.set_delay(&id, Duration::from_millis(ms)).run(con)? {
                (true, Some(state)) => println!("job {id:?}: {state}"),
                (false, Some(state @ (State::Waiting | State::Parked))) => {
                    // Only a delay of 0 leaves these alone: they are ready already.
                    return Err(Failure::failed(format!(
                        "job {id:?} is {state}, ready already: a delay of 0 makes only a \
                         delayed job wait at once; nothing changed"
                    )));
                }
                (false, Some(state)) => {
                    return Err(Failure::failed(format!(
                        "job {id:?} is {state}: only a waiting, parked or delayed job \
                         can be delayed; nothing changed"
                    )));
                }
                (_, None) => return Err(no_job(&id, name)),
            }
        }
        Action::Promote { id } => {
            if !queue.promote(&id).run(con)? {
                return Err(Failure::failed(format!(
                    "job {id:?} is not delayed in queue {name} (`redis-patterns queue \
                     {name} job {id}` shows where it is): nothing changed"
                )));
            }
            println!("job {id:?}: waiting");
        }
        Action::Limits(flags) => {
            let changes = flags.changes()?;
            if !changes.is_empty() {
                let configured = queue.configure(&changes).run(con)?;
                println!("changed: {}", yes_no(configured.changed));
                println!("groups_woken: {}", configured.groups_woken);
            }
            print_settings(&queue.settings().run(con)?);
        }
    }
    Ok(())
}

/// Moves every dead job back to waiting, `MAX_BULK` per call; answers how many moved.
pub(crate) fn retry_all_dead(
    queue: &WorkQueue,
    con: &mut dyn redis::ConnectionLike,
) -> Result<u64, Failure> {
    let mut total = 0;
    loop {
        let moved = queue.retry_dead(MAX_BULK).run(con)?;
        total += moved;
        if moved < MAX_BULK {
            return Ok(total);
        }
    }
}

/// Removes every job in `state`, `MAX_BULK` per call; answers how many went.
pub(crate) fn clean(
    queue: &WorkQueue,
    con: &mut dyn redis::ConnectionLike,
    state: State,
    grace_ms: u64,
) -> Result<u64, Failure> {
    let grace = std::time::Duration::from_millis(grace_ms);
    let mut total = 0;
    loop {
        let removed = queue.clean_ended_before(state, grace, MAX_BULK).run(con)?;
        total += removed;
        if removed < MAX_BULK {
            return Ok(total);
        }
    }
}

fn no_job(id: &str, queue: &str) -> Failure {
    Failure::failed(format!("no job {id:?} in queue {queue}"))
}
