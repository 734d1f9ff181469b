//! The per-minute chart of a queue: jobs completed and deliveries failed in each of the
//! last 60 minutes, as the numbers of an SVG bar chart that `chart.hbs` draws (no
//! JavaScript, and no markup made outside the templates).

use redis_patterns::work_queue::Metrics;
use serde::Serialize;

use crate::queue::output::utc_minute;

/// The minutes a chart shows.
pub(super) const MINUTES: u64 = 60;
/// Each minute's width, and the height of the tallest bar, in SVG units.
const BAR: u64 = 8;
const HEIGHT: u64 = 60;

/// The chart's numbers: a bar per minute of the window kept, oldest on the left.
#[derive(Serialize, Debug, PartialEq)]
pub(super) struct Chart {
    /// The metrics are off: nothing is counted, so there is nothing to draw.
    off: bool,
    width: u64,
    height: u64,
    /// The largest minute (completed plus failed), what the full height stands for.
    top: u64,
    completed: u64,
    failed: u64,
    bars: Vec<Bar>,
}

#[derive(Serialize, Debug, PartialEq)]
struct Bar {
    x: u64,
    /// The completed part, from the bottom, and the failed part on top of it.
    completed_y: u64,
    completed_h: u64,
    failed_y: u64,
    failed_h: u64,
    /// What a pointer over the bar reads: the minute (UTC) and its two numbers.
    title: String,
}

impl Chart {
    /// The chart of `metrics` as `WorkQueue::metrics(MINUTES)` read them: its rows are the
    /// minutes kept, newest first, from the server's current minute back.
    pub(super) fn new(metrics: &Metrics) -> Chart {
        let rows = &metrics.minutes[..metrics.minutes.len().min(MINUTES as usize)];
        let top = rows
            .iter()
            .map(|m| m.completed + m.failed_deliveries)
            .max()
            .unwrap_or(0);
        let scale = |n: u64| {
            if top == 0 {
                0
            } else {
                // At least one unit, so that a minute of one job among thousands shows.
                (n * HEIGHT).div_ceil(top).min(HEIGHT)
            }
        };
        let bars = rows
            .iter()
            .enumerate()
            .map(|(age, m)| {
                let completed_h = scale(m.completed);
                let failed_h = scale(m.failed_deliveries).min(HEIGHT - completed_h);
                Bar {
                    x: (MINUTES - 1 - age as u64) * BAR,
                    completed_y: HEIGHT - completed_h,
                    completed_h,
                    failed_y: HEIGHT - completed_h - failed_h,
                    failed_h,
                    title: format!(
                        "{}: {} completed, {} failed",
                        utc_minute(m.minute),
                        m.completed,
                        m.failed_deliveries
                    ),
                }
            })
            .collect();
        Chart {
            off: !metrics.is_on(),
            width: MINUTES * BAR,
            height: HEIGHT,
            top,
            completed: rows.iter().map(|m| m.completed).sum(),
            failed: rows.iter().map(|m| m.failed_deliveries).sum(),
            bars,
        }
    }
}

#[cfg(test)]
mod tests {
    use redis_patterns::work_queue::{Counts, Minute};

    use super::*;

    fn metrics(window: u64, minutes: &[(u64, u64)]) -> Metrics {
        Metrics {
            counts: Counts::default(),
            window,
            completed: 0,
            failed_deliveries: 0,
            dead: 0,
            next_job_age: None,
            minutes: minutes
                .iter()
                .enumerate()
                .map(|(i, &(completed, failed_deliveries))| Minute {
                    minute: 29_000_000 - i as u64,
                    completed,
                    failed_deliveries,
                })
                .collect(),
        }
    }

    #[test]
    fn newest_minute_is_the_rightmost_bar_and_the_busiest_fills_the_height() {
        let chart = Chart::new(&metrics(60, &[(3, 1), (0, 0), (1000, 0)]));
        assert!(!chart.off);
        assert_eq!((chart.top, chart.completed, chart.failed), (1000, 1003, 1));
        let [now, empty, busy] = &chart.bars[..] else {
            panic!("three bars")
        };
        assert_eq!((now.x, empty.x, busy.x), (59 * BAR, 58 * BAR, 57 * BAR));
        assert_eq!((busy.completed_h, busy.completed_y), (HEIGHT, 0));
        // Small numbers still show as one unit, stacked.
        assert_eq!((now.completed_h, now.failed_h), (1, 1));
        assert_eq!((now.completed_y, now.failed_y), (HEIGHT - 1, HEIGHT - 2));
        assert_eq!((empty.completed_h, empty.failed_h), (0, 0));
        assert_eq!(now.title, "2025-02-19T21:20Z: 3 completed, 1 failed");
    }

    #[test]
    fn metrics_off_draw_nothing() {
        let chart = Chart::new(&metrics(0, &[]));
        assert!(chart.off);
        assert!(chart.bars.is_empty());
        assert_eq!(chart.top, 0);
    }
}
