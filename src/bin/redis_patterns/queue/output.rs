//! What `queue` and `queues` print: `key: value` lines, aligned tables, or JSON.

use std::fmt::Write as _;

use redis_patterns::work_queue::{Counts, JobInfo, JobLogs, Metrics, Settings};
use serde_json::{Value as Json, json};

pub(super) fn yes_no(yes: bool) -> &'static str {
    if yes { "yes" } else { "no" }
}

pub(super) fn print_json(value: &Json) {
    println!("{value}");
}

pub(super) fn counts_json(counts: &Counts) -> Json {
    json!({
        "waiting": counts.waiting,
        "parked": counts.parked,
        "delayed": counts.delayed,
        "leased": counts.leased,
        "dead": counts.dead,
        "completed": counts.completed,
        "blocked": counts.blocked,
    })
}

pub(super) fn print_counts(counts: &Counts) {
    println!("waiting: {}", counts.waiting);
    println!("parked: {}", counts.parked);
    println!("delayed: {}", counts.delayed);
    println!("leased: {}", counts.leased);
    println!("dead: {}", counts.dead);
    println!("completed: {}", counts.completed);
    println!("blocked: {}", counts.blocked);
}

pub(super) fn print_metrics(metrics: &Metrics, name: &str, minutes: u64) {
    print_counts(&metrics.counts);
    match metrics.next_job_age {
        Some(age) => println!("next_job_age_ms: {}", age.as_millis()),
        None => println!("next_job_age_ms: none (no job waits)"),
    }
    if !metrics.is_on() {
        println!(
            "metrics: off (nothing is counted; `redis-patterns queue {name} limits \
             --metrics-minutes 60` turns them on)"
        );
        return;
    }
    println!("metrics_minutes: {}", metrics.window);
    println!("completed_total: {}", metrics.completed);
    println!("failed_deliveries_total: {}", metrics.failed_deliveries);
    println!("dead_total: {}", metrics.dead);
    let rows: Vec<Vec<String>> = metrics
        .minutes
        .iter()
        .filter(|m| m.completed > 0 || m.failed_deliveries > 0)
        .map(|m| {
            vec![
                utc_minute(m.minute),
                m.completed.to_string(),
                m.failed_deliveries.to_string(),
            ]
        })
        .collect();
    println!();
    if rows.is_empty() {
        // The rows read: the minutes asked for, at most the window kept.
        let read = minutes.min(metrics.window);
        println!("no job ended in the last {read} minute(s)");
    } else {
        print_table(&["minute (UTC)", "completed", "failed deliveries"], &rows);
    }
}

pub(super) fn metrics_json(metrics: &Metrics) -> Json {
    let on = metrics.is_on();
    let total = |n: u64| if on { json!(n) } else { Json::Null };
    json!({
        "counts": counts_json(&metrics.counts),
        "next_job_age_ms": metrics.next_job_age.map(|age| age.as_millis() as u64),
        "metrics_minutes": metrics.window,
        "completed_total": total(metrics.completed),
        "failed_deliveries_total": total(metrics.failed_deliveries),
        "dead_total": total(metrics.dead),
        "minutes": metrics.minutes.iter().map(|m| json!({
            "minute": m.minute,
            "utc": utc_minute(m.minute),
            "completed": m.completed,
            "failed_deliveries": m.failed_deliveries,
        })).collect::<Vec<_>>(),
    })
}

pub(super) fn print_settings(settings: &Settings) {
    for (scope, limits) in [("group", settings.group()), ("queue", settings.queue())] {
        match limits.concurrency_limit() {
            Some(n) => println!("{scope}_concurrency: {n}"),
            None => println!("{scope}_concurrency: none"),
        }
        match limits.rate_limit() {
            Some((n, _)) => println!("{scope}_rate: {n}"),
            None => println!("{scope}_rate: none"),
        }
        println!("{scope}_period_ms: {}", limits.period().as_millis());
    }
    println!("dead_max: {}", settings.dead_max());
    println!("dead_age_ms: {}", settings.dead_age().as_millis());
    let completed = settings.completed_max();
    println!(
        "completed_max: {completed}{}",
        if completed == 0 { " (none kept)" } else { "" }
    );
    println!("completed_age_ms: {}", settings.completed_age().as_millis());
    let off = |n: u64| if n == 0 { " (off)" } else { "" };
    let minutes = settings.metrics_window();
    println!("metrics_minutes: {minutes}{}", off(minutes));
    let events = settings.events_max();
    println!("events_max: {events}{}", off(events));
    println!("result_ttl_ms: {}", settings.result_ttl().as_millis());
    println!("result_max_bytes: {}", settings.result_max());
    println!(
        "group_turns: {}",
        if settings.takes_turns() { "on" } else { "off" }
    );
}

pub(crate) fn settings_json(settings: &Settings) -> Json {
    let (group, queue) = (settings.group(), settings.queue());
    json!({
        "group_concurrency": group.concurrency_limit().unwrap_or(0),
        "group_rate": group.rate_limit().map_or(0, |(n, _)| n),
        "group_period_ms": group.period().as_millis() as u64,
        "queue_concurrency": queue.concurrency_limit().unwrap_or(0),
        "queue_rate": queue.rate_limit().map_or(0, |(n, _)| n),
        "queue_period_ms": queue.period().as_millis() as u64,
        "dead_max": settings.dead_max(),
        "dead_age_ms": settings.dead_age().as_millis() as u64,
        "completed_max": settings.completed_max(),
        "completed_age_ms": settings.completed_age().as_millis() as u64,
        "metrics_minutes": settings.metrics_window(),
        "events_max": settings.events_max(),
        "result_ttl_ms": settings.result_ttl().as_millis() as u64,
        "result_max_bytes": settings.result_max(),
        "group_turns": settings.takes_turns(),
    })
}

pub(super) fn print_job(job: &JobInfo) {
    println!("id: {}", job.id);
    println!("state: {}", job.state);
    println!("deliveries: {}", job.deliveries);
    println!("priority: {}", job.priority);
    println!("group: {}", job.group.as_deref().unwrap_or("none"));
    match &job.last_error {
        Some(error) => println!("last_error: {}", text_cell(error)),
        None => println!("last_error: none"),
    }
    match job.at_ms {
        Some(ms) => println!("at_ms: {ms} ({})", utc(ms)),
        None => println!("at_ms: none"),
    }
    if let Some(ms) = job.started_ms {
        println!("started_ms: {ms} ({})", utc(ms));
    }
    if let Some(ran) = job.ran_for() {
        println!("ran_ms: {}", ran.as_millis());
    }
    if let Some(result) = &job.result {
        println!("result: {}", text_cell(result));
    }
    match &job.progress {
        Some(progress) => println!("progress: {}", text_cell(progress)),
        None => println!("progress: none"),
    }
    if job.pending_children > 0 || !job.failed_children.is_empty() {
        println!("pending_children: {}", job.pending_children);
        println!("failed_children: {}", job.failed_children.join(", "));
    }
    println!("payload: {}", text_cell(&job.payload));
}

/// The log lines a job keeps, after its fields: one line each, as text.
pub(super) fn print_logs(logs: &JobLogs) {
    println!("logs: {}", logs.kept);
    for line in &logs.lines {
        println!("  {}", text_cell(line));
    }
}

/// The log lines a job keeps as JSON: each line as `job_json` writes bytes.
pub(super) fn logs_json(logs: &JobLogs) -> Json {
    let lines: Vec<Json> = logs
        .lines
        .iter()
        .map(|line| {
            let (text, encoding) = bytes_json(line);
            json!({"line": text, "encoding": encoding})
        })
        .collect();
    json!(lines)
}

/// A job as JSON: each value of bytes as text (`"payload"`) when it is UTF-8, else
/// as hex digits, with which in `"payload_encoding"` (`"utf-8"` or `"hex"`). What
/// only `job` reads (progress, children) is there when `whole`.
pub(super) fn job_json(job: &JobInfo, whole: bool) -> Json {
    let mut out = json!({
        "id": job.id,
        "state": job.state.as_str(),
        "deliveries": job.deliveries,
        "priority": job.priority,
        "group": job.group,
        "at_ms": job.at_ms,
        "started_ms": job.started_ms,
    });
    let mut bytes = vec![
        ("payload", Some(&job.payload)),
        ("last_error", job.last_error.as_ref()),
    ];
    if whole {
        out["pending_children"] = json!(job.pending_children);
        out["failed_children"] = json!(job.failed_children);
        bytes.push(("progress", job.progress.as_ref()));
        bytes.push(("result", job.result.as_ref()));
    }
    for (field, bytes) in bytes {
        let (value, encoding) = match bytes.map(|b| bytes_json(b)) {
            Some((value, encoding)) => (json!(value), json!(encoding)),
            None => (Json::Null, Json::Null),
        };
        out[field] = value;
        out[format!("{field}_encoding")] = encoding;
    }
    out
}

/// Bytes as JSON text and its encoding: the text itself when UTF-8, else hex.
pub(crate) fn bytes_json(bytes: &[u8]) -> (String, &'static str) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_owned(), "utf-8"),
        Err(_) => (hex(bytes), "hex"),
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

pub(crate) fn list_row(job: &JobInfo) -> Vec<String> {
    vec![
        job.id.clone(),
        job.deliveries.to_string(),
        job.priority.to_string(),
        job.group.clone().unwrap_or_else(|| "-".to_owned()),
        job.at_ms.map_or_else(|| "-".to_owned(), utc),
        job.last_error
            .as_deref()
            .map_or_else(|| "-".to_owned(), |e| cut(text_cell(e))),
        cut(text_cell(&job.payload)),
    ]
}

/// Bytes for a person to read: UTF-8 text as it is, its control characters escaped
/// (`\n`, `\u{1b}`), so that a value stays on its line; other bytes as `hex:` and
/// their hex digits, and so too a text that starts with `hex:`, so that the prefix
/// always means hex.
pub(crate) fn text_cell(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.starts_with("hex:") => text
            .chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
        _ => format!("hex:{}", hex(bytes)),
    }
}

/// `text` cut to 40 characters, for a table.
pub(super) fn cut(text: String) -> String {
    const MAX: usize = 40;
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

/// Columns padded to their widest cell; the last one as it is.
pub(super) fn print_table(head: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::new();
        for (i, cell) in cells.enumerate() {
            if i + 1 == widths.len() {
                out.push_str(cell);
            } else {
                let _ = write!(out, "{cell:<width$}  ", width = widths[i]);
            }
        }
        println!("{}", out.trim_end());
    };
    line(&mut head.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
}

/// A time in ms of the Unix clock as UTC, `2025-01-31T23:59:59.123Z`.
pub(crate) fn utc(ms: u64) -> String {
    let (date, minute) = utc_parts(ms / 60_000);
    format!("{date}T{minute}:{:02}.{:03}Z", ms / 1000 % 60, ms % 1000)
}

/// A minute of the Unix clock (ms / 60,000) as UTC, `2025-01-31T23:59Z`.
pub(crate) fn utc_minute(minute: u64) -> String {
    let (date, minute) = utc_parts(minute);
    format!("{date}T{minute}Z")
}

/// The date (`2025-01-31`) and the hour and minute (`23:59`) of a Unix minute.
pub(super) fn utc_parts(minute: u64) -> (String, String) {
    let days = minute / 1440;
    let in_day = minute % 1440;
    // Days since 1970-01-01 to a civil date (the proleptic Gregorian calendar), by
    // 400-year eras of 146,097 days counted from 0000-03-01.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (
        format!("{year:04}-{month:02}-{day:02}"),
        format!("{:02}:{:02}", in_day / 60, in_day % 60),
    )
}
