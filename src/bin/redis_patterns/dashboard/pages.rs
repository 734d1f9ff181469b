//! The dashboard's pages and actions: what each reads through the queue's Rust API, as
//! the data of its template, and what each action runs.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use redis_patterns::Batch;
use redis_patterns::work_queue::{
    Counts, JobInfo, MAX_LOG_LINES, MAX_PAGE, Removed, State as JobState, Timing, WorkQueue,
};
use serde_json::{Value as Json, json};

use super::chart::{Chart, MINUTES};
use super::{App, blocking, check_token, encode};
use crate::queue::output::{bytes_json, list_row, settings_json, text_cell, utc};
use crate::queue::{clean, queue_names, retry_all_dead};
use crate::shared::{Failure, uint_from_text};

/// The queues one page of `/` lists.
const QUEUES_PAGE: u64 = 50;
/// The schedules the queue's page shows.
const SCHEDULES: u64 = 20;
/// Every state, in the order the pages show them.
const STATES: [JobState; 7] = [
    JobState::Waiting,
    JobState::Parked,
    JobState::Delayed,
    JobState::Leased,
    JobState::Dead,
    JobState::Completed,
    JobState::Blocked,
];

/// Why a page is not shown.
#[derive(Debug)]
pub(crate) enum PageError {
    /// No such queue, job, state or page: 404.
    NotFound(String),
    /// Refused (no token, another site, read-only, a host name not ours): 403.
    Forbidden(String),
    /// A form that makes no sense: 400.
    Bad(String),
    /// Redis or a script answered an error, or could not be reached: 502.
    Redis(String),
}

impl PageError {
    pub(super) fn status_and_message(&self) -> (StatusCode, &str) {
        match self {
            PageError::NotFound(m) => (StatusCode::NOT_FOUND, m),
            PageError::Forbidden(m) => (StatusCode::FORBIDDEN, m),
            PageError::Bad(m) => (StatusCode::BAD_REQUEST, m),
            PageError::Redis(m) => (StatusCode::BAD_GATEWAY, m),
        }
    }
}

impl From<Failure> for PageError {
    fn from(failure: Failure) -> Self {
        match failure.code {
            2 => PageError::Bad(failure.message),
            _ => PageError::Redis(failure.message),
        }
    }
}

impl From<redis_patterns::Error> for PageError {
    fn from(err: redis_patterns::Error) -> Self {
        Failure::from(err).into()
    }
}

type Params = Query<HashMap<String, String>>;
type Shared = State<Arc<App>>;

/// The page's address of a queue, and of one job.
fn queue_href(name: &str) -> String {
    format!("/queues/{}", encode(name))
}

fn job_href(name: &str, id: &str) -> String {
    format!("/queues/{}/jobs/{}", encode(name), encode(id))
}

/// The queue `name`, as the pages reach it: a name the API refuses is no queue (404).
fn open(name: &str) -> Result<WorkQueue, PageError> {
    WorkQueue::new(name).map_err(|err| PageError::NotFound(format!("no queue {name:?}: {err}")))
}

/// The queue `name` when the server holds keys of it; else 404.
fn existing(name: &str, con: &mut dyn redis::ConnectionLike) -> Result<WorkQueue, PageError> {
    let queue = open(name)?;
    if !queue.exists().run(con)? {
        return Err(PageError::NotFound(format!(
            "queue {name:?} has no keys on this server (no job, setting or pause flag)"
        )));
    }
    Ok(queue)
}

fn offset(params: &HashMap<String, String>) -> u64 {
    params
        .get("offset")
        .and_then(|o| uint_from_text(o))
        .unwrap_or(0)
}

fn count_of(counts: &Counts, state: JobState) -> u64 {
    match state {
        JobState::Waiting => counts.waiting,
        JobState::Parked => counts.parked,
        JobState::Delayed => counts.delayed,
        JobState::Leased => counts.leased,
        JobState::Dead => counts.dead,
        JobState::Completed => counts.completed,
        JobState::Blocked => counts.blocked,
    }
}

/// The counts of a queue, each a link to the page of its jobs.
fn counts_cells(name: &str, counts: &Counts) -> Json {
    STATES
        .iter()
        .map(|&state| {
            json!({
                "state": state.as_str(),
                "n": count_of(counts, state),
                "href": format!("{}/{state}", queue_href(name)),
            })
        })
        .collect()
}

/// What a queue's row and its page share: its counts, whether it is paused, its chart.
fn summary(
    name: &str,
    queue: &WorkQueue,
    con: &mut dyn redis::ConnectionLike,
) -> Result<(Json, redis_patterns::work_queue::Metrics), PageError> {
    let mut batch = Batch::new();
    let metrics = batch.add(queue.metrics(MINUTES));
    let paused = batch.add(queue.is_paused());
    let mut replies = batch.run(con)?;
    let (metrics, paused) = (metrics.take(&mut replies)?, paused.take(&mut replies)?);
    let data = json!({
        "name": name,
        "href": queue_href(name),
        "paused": paused,
        "counts": counts_cells(name, &metrics.counts),
        "chart": Chart::new(&metrics),
    });
    Ok((data, metrics))
}

/// What an action's redirect tells the page it lands on (`?note=…&n=…&state=…`): a
/// fixed text per note, with a number and a state the page checks.
fn note(params: &HashMap<String, String>) -> Json {
    let n = params.get("n").and_then(|n| uint_from_text(n)).unwrap_or(0);
    let state = params
        .get("state")
        .and_then(|s| s.parse::<JobState>().ok())
        .map_or("", JobState::as_str);
    let text = match params.get("note").map(String::as_str) {
        Some("paused") => "Paused: workers take no job until it is resumed.".to_owned(),
        Some("already-paused") => "Nothing changed: the queue was paused already.".to_owned(),
        Some("resumed") => "Resumed: workers take jobs again.".to_owned(),
        Some("not-paused") => "Nothing changed: the queue was not paused.".to_owned(),
        Some("retried-all") => format!("{n} dead job(s) moved back to waiting."),
        Some("cleaned") => format!("{n} {state} job(s) removed."),
        Some("retried") => "The job was moved back to waiting.".to_owned(),
        Some("not-dead") => "Nothing changed: the job is not dead.".to_owned(),
        Some("removed") => format!("The job was removed (it was {state})."),
        Some("held") => {
            "Nothing changed: a worker holds the job (its ack or nack ends it).".to_owned()
        }
        Some("promoted") => "The job was promoted: it waits now.".to_owned(),
        Some("not-delayed") => "Nothing changed: the job is not delayed.".to_owned(),
        Some("priority") => format!("Priority set to {n} (the job is {state})."),
        _ => return Json::Null,
    };
    json!(text)
}

/// A page from the Redis half of its request.
async fn respond(
    app: Shared,
    headers: HeaderMap,
    template: &'static str,
    params: &HashMap<String, String>,
    work: impl FnOnce(&App, &mut dyn redis::ConnectionLike) -> Result<Json, PageError> + Send + 'static,
) -> Response {
    let State(app) = app;
    match blocking(&app, work).await {
        Ok(mut data) => {
            data["note"] = note(params);
            app.page(&headers, template, data)
        }
        Err(err) => app.error(&err),
    }
}

/// `/`: every queue of the server (of every primary of a cluster), 50 per page, each
/// with its counts, whether it is paused, and its last hour.
pub(super) async fn queues(app: Shared, headers: HeaderMap, Query(params): Params) -> Response {
    let offset = offset(&params);
    respond(app, headers, "queues", &params, move |app, con| {
        let names = queue_names(&app.url, app.cluster, con)?;
        let total = names.len() as u64;
        let mut rows = Vec::new();
        for name in names
            .iter()
            .skip(offset as usize)
            .take(QUEUES_PAGE as usize)
        {
            rows.push(summary(name, &open(name)?, con)?.0);
        }
        Ok(json!({
            "title": "Queues",
            "queues": rows,
            "states": STATES.map(JobState::as_str),
            "paging": paging("/", offset, rows.len() as u64, total, QUEUES_PAGE),
        }))
    })
    .await
}

/// The links to the pages before and after this one, and which items it holds.
fn paging(base: &str, offset: u64, shown: u64, total: u64, page: u64) -> Json {
    let link = |offset: u64| format!("{base}?offset={offset}");
    json!({
        "from": if shown == 0 { 0 } else { offset + 1 },
        "to": offset + shown,
        "total": total,
        "prev": (offset > 0).then(|| link(offset.saturating_sub(page))),
        "next": (offset + shown < total).then(|| link(offset + shown)),
    })
}

/// `/queues/<name>`: the queue's counts, chart, totals, settings and limits, and
/// schedules; pause or resume, retry the dead jobs, clean a state.
pub(super) async fn queue(
    app: Shared,
    headers: HeaderMap,
    Path(name): Path<String>,
    Query(params): Params,
) -> Response {
    respond(app, headers, "queue", &params, move |_, con| {
        let queue = existing(&name, con)?;
        let (mut data, metrics) = summary(&name, &queue, con)?;
        let settings = queue.settings().run(con)?;
        let schedules = queue.schedules(0, SCHEDULES).run(con)?;
        let rows: Vec<Json> = settings_json(&settings)
            .as_object()
            .map(|all| {
                all.iter()
                    .map(|(k, v)| json!({ "name": k, "value": v.to_string() }))
                    .collect()
            })
            .unwrap_or_default();
        data["title"] = json!(name);
        data["settings"] = json!(rows);
        data["metrics"] = json!({
            "on": metrics.is_on(),
            "window": metrics.window,
            "completed": metrics.completed,
            "failed_deliveries": metrics.failed_deliveries,
            "dead": metrics.dead,
            "next_job_age_ms": metrics.next_job_age.map(|a| a.as_millis() as u64),
        });
        data["schedules"] = schedules
            .iter()
            .map(|s| {
                let timing = match &s.timing {
                    Timing::Every { every, offset } => format!(
                        "every {} ms, offset {} ms",
                        every.as_millis(),
                        offset.as_millis()
                    ),
                    Timing::Cron { expr, tz } => format!("cron {expr} ({tz})"),
                };
                json!({
                    "name": s.name,
                    "next_run": utc(s.next_run_ms),
                    "timing": timing,
                    "priority": s.priority,
                    "group": s.group,
                    "payload": text_cell(&s.payload),
                })
            })
            .collect();
        data["dead"] = json!(metrics.counts.dead);
        data["cleanable"] = json!(cleanable());
        Ok(data)
    })
    .await
}

/// The states `clean` empties (leased jobs are their workers', blocked ones their flows').
fn cleanable() -> Vec<&'static str> {
    STATES
        .into_iter()
        .filter(|s| !matches!(s, JobState::Leased | JobState::Blocked))
        .map(JobState::as_str)
        .collect()
}

/// `/queues/<name>/<state>?offset=`: one page of the jobs in a state, `MAX_PAGE` jobs.
pub(super) async fn jobs(
    app: Shared,
    headers: HeaderMap,
    Path((name, state)): Path<(String, String)>,
    Query(params): Params,
) -> Response {
    let offset = offset(&params);
    respond(app, headers, "jobs", &params, move |_, con| {
        let state: JobState = state
            .parse()
            .map_err(|_| PageError::NotFound(format!("no state {state:?}")))?;
        let queue = existing(&name, con)?;
        let mut batch = Batch::new();
        let counts = batch.add(queue.counts());
        let page = batch.add(queue.list(state, offset, MAX_PAGE));
        let mut replies = batch.run(con)?;
        let (counts, page) = (counts.take(&mut replies)?, page.take(&mut replies)?);
        let rows: Vec<Json> = page
            .iter()
            .map(|job| json!({ "href": job_href(&name, &job.id), "cells": list_row(job) }))
            .collect();
        let base = format!("{}/{state}", queue_href(&name));
        Ok(json!({
            "title": format!("{name}: {state}"),
            "name": name,
            "href": queue_href(&name),
            "state": state.as_str(),
            "counts": counts_cells(&name, &counts),
            "jobs": rows,
            "paging": paging(&base, offset, page.len() as u64, count_of(&counts, state), MAX_PAGE),
            "dead": state == JobState::Dead && counts.dead > 0,
            "cleanable": cleanable().contains(&state.as_str()),
            "ended": matches!(state, JobState::Dead | JobState::Completed),
        }))
    })
    .await
}

/// The most bytes of one value a job's page shows.
const SHOWN_BYTES: usize = 64 * 1024;

/// Bytes for the page: the text when UTF-8, else hex, and which; the first
/// `SHOWN_BYTES` of a longer value (cut before a character the cut would split).
fn blob(bytes: Option<&Vec<u8>>) -> Json {
    let Some(bytes) = bytes else {
        return Json::Null;
    };
    let mut shown = &bytes[..bytes.len().min(SHOWN_BYTES)];
    if let Err(err) = std::str::from_utf8(shown)
        && err.error_len().is_none()
        && shown.len() < bytes.len()
    {
        shown = &shown[..err.valid_up_to()];
    }
    let (text, encoding) = bytes_json(shown);
    json!({
        "text": text,
        "hex": encoding == "hex",
        "len": bytes.len(),
        "cut": (shown.len() < bytes.len()).then_some(shown.len()),
    })
}

/// What a job's time means in its state.
fn at_label(job: &JobInfo) -> &'static str {
    match job.state {
        JobState::Delayed => "due (UTC)",
        JobState::Leased => "lease ends (UTC)",
        JobState::Dead => "died (UTC)",
        JobState::Completed => "completed (UTC)",
        JobState::Blocked => "added (UTC)",
        JobState::Waiting | JobState::Parked => "at (UTC)",
    }
}

/// `/queues/<name>/jobs/<id>`: one job, all the API reads of it.
pub(super) async fn job(
    app: Shared,
    headers: HeaderMap,
    Path((name, id)): Path<(String, String)>,
    Query(params): Params,
) -> Response {
    respond(app, headers, "job", &params, move |_, con| {
        let queue = open(&name)?;
        let Some(job) = queue.job(&id).run(con)? else {
            return Err(PageError::NotFound(format!(
                "no job {id:?} in queue {name:?}"
            )));
        };
        let logs = queue.logs(&id, 0, MAX_LOG_LINES).run(con)?;
        let mut times = Vec::new();
        if let Some(at) = job.at_ms {
            times.push(json!({ "name": at_label(&job), "value": utc(at) }));
        }
        if let Some(started) = job.started_ms {
            times.push(json!({ "name": "last delivery taken (UTC)", "value": utc(started) }));
        }
        if let Some(ran) = job.ran_for() {
            times.push(json!({ "name": "ran", "value": format!("{} ms", ran.as_millis()) }));
        }
        let href = job_href(&name, &id);
        Ok(json!({
            "title": format!("{name}: job {id}"),
            "name": name,
            "queue_href": queue_href(&name),
            "href": href,
            "id": id,
            "state": job.state.as_str(),
            "state_href": format!("{}/{}", queue_href(&name), job.state),
            "deliveries": job.deliveries,
            "priority": job.priority,
            "group": job.group,
            "times": times,
            "payload": blob(Some(&job.payload)),
            "error": blob(job.last_error.as_ref()),
            "result": blob(job.result.as_ref()),
            "progress": blob(job.progress.as_ref()),
            "logs": {
                "kept": logs.kept,
                "lines": logs.lines.iter().map(|l| blob(Some(l))).collect::<Vec<_>>(),
            },
            "flow": (job.pending_children > 0 || !job.failed_children.is_empty()).then(|| json!({
                "pending": job.pending_children,
                "failed": job.failed_children.iter().map(|child| json!({
                    "id": child, "href": job_href(&name, child),
                })).collect::<Vec<_>>(),
            })),
            "can_retry": job.state == JobState::Dead,
            "can_promote": job.state == JobState::Delayed,
            "can_prioritise": job.state != JobState::Completed,
            "can_remove": job.state != JobState::Leased,
        }))
    })
    .await
}

/// Where an action sends the browser: `href` with a note for the page to show.
fn back(href: &str, note: &str, n: u64, state: Option<JobState>) -> String {
    let state = state.map_or(String::new(), |s| format!("&state={s}"));
    format!("{href}?note={note}&n={n}{state}")
}

/// Runs an action whose form carries the token, and sends the browser back (303).
async fn act(
    app: Shared,
    form: &HashMap<String, String>,
    work: impl FnOnce(&App, &mut dyn redis::ConnectionLike) -> Result<String, PageError>
    + Send
    + 'static,
) -> Response {
    let State(app) = app;
    if let Err(err) = check_token(&app, form) {
        return app.error(&err);
    }
    match blocking(&app, work).await {
        Ok(to) => Redirect::to(&to).into_response(),
        Err(err) => app.error(&err),
    }
}

/// POST `/queues/<name>/<action>`: `pause`, `resume`, `retry-dead` (every dead job),
/// `clean` (`state`, and `grace_ms` for dead and completed jobs).
pub(super) async fn queue_action(
    app: Shared,
    Path((name, action)): Path<(String, String)>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let (state, grace) = (form.get("state").cloned(), form.get("grace_ms").cloned());
    act(app, &form.clone(), move |_, con| {
        let queue = existing(&name, con)?;
        let href = queue_href(&name);
        Ok(match action.as_str() {
            "pause" => {
                let note = if queue.pause().run(con)? {
                    "paused"
                } else {
                    "already-paused"
                };
                back(&href, note, 0, None)
            }
            "resume" => {
                let note = if queue.resume().run(con)? {
                    "resumed"
                } else {
                    "not-paused"
                };
                back(&href, note, 0, None)
            }
            "retry-dead" => back(&href, "retried-all", retry_all_dead(&queue, con)?, None),
            "clean" => {
                let state: JobState = state
                    .as_deref()
                    .and_then(|s| s.parse().ok())
                    .filter(|s| cleanable().contains(&JobState::as_str(*s)))
                    .ok_or_else(|| PageError::Bad("clean: no state it cleans".into()))?;
                let grace = match grace.as_deref().filter(|g| !g.is_empty()) {
                    None => 0,
                    Some(g) => uint_from_text(g).ok_or_else(|| {
                        PageError::Bad(format!("clean: the grace {g:?} is no whole number of ms"))
                    })?,
                };
                let removed = clean(&queue, con, state, grace)?;
                back(&format!("{href}/{state}"), "cleaned", removed, Some(state))
            }
            other => return Err(PageError::NotFound(format!("no action {other:?}"))),
        })
    })
    .await
}

/// POST `/queues/<name>/jobs/<id>/<action>`: `retry` (a dead job), `remove`, `promote`
/// (a delayed job), `priority` (`priority`, 0 to 255).
pub(super) async fn job_action(
    app: Shared,
    Path((name, id, action)): Path<(String, String, String)>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let priority = form.get("priority").cloned();
    act(app, &form.clone(), move |_, con| {
        let queue = existing(&name, con)?;
        let href = job_href(&name, &id);
        let no_job = || PageError::NotFound(format!("no job {id:?} in queue {name:?}"));
        Ok(match action.as_str() {
            "retry" => {
                let note = if queue.requeue(&id).run(con)? {
                    "retried"
                } else {
                    "not-dead"
                };
                back(&href, note, 0, None)
            }
            "promote" => {
                let note = if queue.promote(&id).run(con)? {
                    "promoted"
                } else {
                    "not-delayed"
                };
                back(&href, note, 0, None)
            }
            "remove" => match queue.remove(&id).run(con)? {
                Removed::From(state) => back(&queue_href(&name), "removed", 0, Some(state)),
                Removed::Running => back(&href, "held", 0, None),
                Removed::NoSuchJob => return Err(no_job()),
            },
            "priority" => {
                let priority = priority
                    .as_deref()
                    .and_then(uint_from_text)
                    .and_then(|p| u8::try_from(p).ok())
                    .ok_or_else(|| {
                        PageError::Bad("priority: a whole number from 0 to 255".into())
                    })?;
                let state = queue
                    .set_priority(&id, priority)
                    .run(con)?
                    .ok_or_else(no_job)?;
                back(&href, "priority", u64::from(priority), Some(state))
            }
            other => return Err(PageError::NotFound(format!("no action {other:?}"))),
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_show_as_text_or_hex_and_long_ones_are_cut_on_a_character() {
        let text = blob(Some(&b"<b>hi</b>".to_vec()));
        assert_eq!(
            (text["text"].as_str(), text["hex"].as_bool()),
            (Some("<b>hi</b>"), Some(false))
        );
        let binary = blob(Some(&vec![0xff, 0x00, 0x41]));
        assert_eq!(
            (binary["text"].as_str(), binary["hex"].as_bool()),
            (Some("ff0041"), Some(true))
        );
        // 'é' is two bytes: a cut inside the last one drops it, and the rest is text.
        let mut long = vec![b'a'; SHOWN_BYTES - 1];
        long.extend("é and more".as_bytes());
        let cut = blob(Some(&long));
        assert_eq!(cut["hex"].as_bool(), Some(false));
        assert_eq!(cut["cut"].as_u64(), Some(SHOWN_BYTES as u64 - 1));
        assert_eq!(cut["len"].as_u64(), Some(long.len() as u64));
        assert_eq!(blob(None), Json::Null);
    }
}
