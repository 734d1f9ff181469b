//! What the Rust API fills in where the app gives nothing is what each header's `@default`
//! lines say (and the manifest gives), so that an app in another language that reads
//! them shares data with a Rust app built with the defaults: the same key names, the same
//! settings.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use redis_patterns::fair_lock::FairLock;
use redis_patterns::rate_limiter::{GcraLimiter, Limiter, RateLimiter, SlidingWindowLimiter};
use redis_patterns::session::SessionStore;
use redis_patterns::work_queue::{
    Child, Deduplication, DueSchedule, Job, JobOptions, Missed, Schedule, State, Timing, WorkQueue,
};
use redis_patterns::{Op, PresetValue, catalog};

use crate::key_templates::{expand, matches, sent};

/// Asserts that `op`, built with the Rust API's defaults, sends each `@default` of its
/// script, and returns the script's name.
fn check<T: 'static>(op: Op<T>) -> &'static str {
    let (script, keys, args) = sent(&op);
    assert!(!script.defaults.is_empty(), "{}: no @default", script.name);
    let arg_at = |name: &str| script.args.iter().position(|a| a.name == name);
    for preset in script.defaults {
        match (preset.value, arg_at(preset.name)) {
            (PresetValue::Text(text), Some(at)) => {
                assert_eq!(args[at], text, "{}: {}", script.name, preset.name);
            }
            (PresetValue::SameAs(other), Some(at)) => {
                let other = arg_at(other).expect("a declared argument");
                assert_eq!(args[at], args[other], "{}: {}", script.name, preset.name);
            }
            (PresetValue::Text(text), None) => {
                // A placeholder: each key that names it takes the value.
                let mut named = 0;
                for (key, param) in keys.iter().zip(script.keys) {
                    let Some(template) = param.template else {
                        continue;
                    };
                    let form = &template.forms[0];
                    if form.params.contains(&preset.name) {
                        named += 1;
                        let values = BTreeMap::from([(preset.name, text)]);
                        let expected = expand(form.text, &values);
                        assert!(
                            matches(key, &expected),
                            "{}: {key} is not {expected}",
                            script.name
                        );
                    }
                }
                assert!(named > 0, "{}: no key names {}", script.name, preset.name);
            }
            (PresetValue::SameAs(_), None) => {
                panic!("{}: a placeholder takes no other argument", script.name)
            }
        }
    }
    script.name
}

#[test]
fn the_rust_api_fills_in_what_the_headers_default_to() {
    let mut seen = BTreeSet::new();
    let limit = 10;
    let period = Duration::from_secs(1);
    seen.insert(check(
        RateLimiter::new("login", limit, period)
            .unwrap()
            .attempt("ann", 1),
    ));
    seen.insert(check(
        RateLimiter::new("login", limit, period)
            .unwrap()
            .duration("ann"),
    ));
    seen.insert(check(
        SlidingWindowLimiter::new("login", limit, period)
            .unwrap()
            .attempt("ann", 1),
    ));
    seen.insert(check(
        GcraLimiter::new("login", limit, period)
            .unwrap()
            .attempt("ann", 1),
    ));
    let queue = WorkQueue::new("emails").unwrap();
    let job = Job {
        id: "1".into(),
        token: "0123456789abcdef0123456789abcdef:1".into(),
        delivery: 1,
        deadline_ms: 0,
        group: None,
        payload: Vec::new(),
        trace_context: None,
    };
    seen.insert(check(queue.add("1", "p")));
    let window = Deduplication::new("user:7", period).unwrap();
    seen.insert(check(queue.add_deduplicated(
        "1",
        "p",
        JobOptions::new(),
        &window,
    )));
    seen.insert(check(queue.take(1)));
    seen.insert(check(queue.add_flow(
        "1",
        "p",
        JobOptions::new(),
        &[Child::new("2", "c").unwrap()],
    )));
    let due = DueSchedule {
        name: "hourly".into(),
        run_ms: 0,
        revision: 1,
        timing: Timing::Every {
            every: Duration::from_secs(3600),
            offset: Duration::ZERO,
        },
        missed: Missed::Skip,
    };
    seen.insert(check(queue.fire(&due, 0)));
    seen.insert(check(queue.set_schedule(
        "hourly",
        &Schedule::every(Duration::from_secs(3600)),
    )));
    seen.insert(check(queue.clean(State::Dead, 1)));
    seen.insert(check(queue.extend(&job)));
    seen.insert(check(queue.nack(&job, "failed")));
    seen.insert(check(SessionStore::new("app").unwrap().create("ann")));
    seen.insert(check(
        FairLock::new("printer")
            .unwrap()
            .try_acquire(&FairLock::random_token(), period),
    ));
    // Every script with a `@default` is checked.
    let declared: BTreeSet<&str> = catalog::scripts()
        .iter()
        .filter(|s| !s.defaults.is_empty())
        .map(|s| s.name)
        .collect();
    assert_eq!(seen, declared);
}
