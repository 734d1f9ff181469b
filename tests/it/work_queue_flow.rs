//! Flows: a parent job that runs once each of its children has ended, as each child's
//! failure policy says.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use redis_patterns::work_queue::{
    Backoff, Child, Job, JobInfo, JobOptions, MAX_CHILDREN, MAX_TAKE, OnChildFailure, Settings,
    State, WorkQueue,
};

use crate::harness::{self, Transcript, assert_code, assert_snapshot};
use crate::step;

/// The next job, which the transcript expects to be `id` (children wait in the order
/// they were given, the parent after them).
fn take_one(con: &mut dyn redis::ConnectionLike, queue: &WorkQueue, id: &str) -> Job {
    let mut jobs = queue.take(1).run(con).unwrap();
    assert_eq!(jobs.len(), 1, "{id} was not taken");
    assert_eq!(jobs[0].id, id);
    jobs.remove(0)
}

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let queue = WorkQueue::new("work_queue:flows")
        .unwrap()
        .with_max_deliveries(1)
        .unwrap();
    let settings = Settings::new().events(100).unwrap();
    queue.configure(&settings).run(con).unwrap();
    let children = [
        Child::new("sales", "s").unwrap(),
        Child::new("costs", "c")
            .unwrap()
            .on_failure(OnChildFailure::Continue),
        Child::new("charts", "g")
            .unwrap()
            .on_failure(OnChildFailure::Ignore),
    ];
    let _ = step!(
        t,
        con,
        queue.add_flow(
            "report",
            "assemble",
            JobOptions::new().priority(3),
            &children
        )
    );
    let _ = step!(
        t,
        con,
        queue.add_flow("report", "again", JobOptions::new(), &children[..1])
    );
    let again = [Child::new("sales", "s").unwrap()];
    let _ = step!(
        t,
        con,
        queue.add_flow("other", "x", JobOptions::new(), &again)
    );
    let twice = [Child::new("a", "1").unwrap(), Child::new("a", "2").unwrap()];
    let _ = step!(
        t,
        con,
        queue.add_flow("third", "x", JobOptions::new(), &twice)
    );
    // A blocked parent's time is when it was added: whether it has one is what replays.
    let _ = step!(
        t,
        con,
        queue.job("report").map(|j| Ok(j.map(|j| JobInfo {
            at_ms: j.at_ms.map(|_| 0),
            ..j
        })))
    );
    let _ = step!(t, con, queue.counts());
    let _ = step!(t, con, listed(&queue, State::Blocked));
    let sales = take_one(con, &queue, "sales");
    let _ = step!(t, con, queue.ack(&sales).map(|_| Ok("sales acked")));
    let costs = take_one(con, &queue, "costs");
    let _ = step!(
        t,
        con,
        queue.fail(&costs, "no ledger").map(|_| Ok("costs dead"))
    );
    let _ = step!(
        t,
        con,
        queue.job("report").map(|j| Ok(j.map(|j| (
            j.state,
            j.pending_children,
            j.failed_children
        ))))
    );
    let charts = take_one(con, &queue, "charts");
    let _ = step!(
        t,
        con,
        queue.fail(&charts, "no plot").map(|_| Ok("charts dead"))
    );
    let _ = step!(
        t,
        con,
        queue.job("report").map(|j| Ok(j.map(|j| (
            j.state,
            j.pending_children,
            j.failed_children
        ))))
    );
    let _ = step!(t, con, listed(&queue, State::Blocked));
    let _ = step!(t, con, queue.counts());
    let report = take_one(con, &queue, "report");
    t.note(&format!(
        "taken: {} (payload {:?})",
        report.id,
        String::from_utf8_lossy(&report.payload)
    ));
    let _ = step!(t, con, queue.ack(&report).map(|_| Ok("report acked")));
    // A child whose failure fails its parent.
    let strict = [
        Child::new("fetch", "f").unwrap(),
        Child::new("parse", "p").unwrap(),
    ];
    let _ = step!(
        t,
        con,
        queue.add_flow("import", "i", JobOptions::new(), &strict)
    );
    let fetch = take_one(con, &queue, "fetch");
    let _ = step!(t, con, queue.fail(&fetch, "404").map(|_| Ok("fetch dead")));
    let _ = step!(
        t,
        con,
        queue
            .job("import")
            .map(|j| Ok(j.map(|j| (j.state, j.last_error))))
    );
    let parse = take_one(con, &queue, "parse");
    let _ = step!(
        t,
        con,
        queue
            .ack(&parse)
            .map(|_| Ok("parse acked, its parent dead already"))
    );
    let _ = step!(
        t,
        con,
        queue.events_after("0-0", 100).map(|page| {
            let events: Vec<String> = page
                .events
                .iter()
                .map(|e| format!("{} {}", e.kind.as_str(), e.job))
                .collect();
            Ok(events)
        })
    );
    // A blocked parent removed leaves its children to run on their own.
    let alone = [Child::new("orphan", "o").unwrap()];
    let _ = step!(
        t,
        con,
        queue.add_flow("dropped", "d", JobOptions::new(), &alone)
    );
    let _ = step!(t, con, queue.remove("dropped"));
    let _ = step!(t, con, listed(&queue, State::Blocked));
    let _ = step!(t, con, queue.add_flow("none", "x", JobOptions::new(), &[]));
    let delayed = JobOptions::new().delay(Duration::from_secs(1));
    let _ = step!(t, con, queue.add_flow("late", "x", delayed, &again));
    t
}

/// The ids of the first page of jobs in `state`.
fn listed(queue: &WorkQueue, state: State) -> redis_patterns::Op<Vec<String>> {
    queue
        .list(state, 0, 100)
        .map(|jobs| Ok(jobs.into_iter().map(|job| job.id).collect()))
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("work_queue_flow");
    let mut con = db.con();
    assert_snapshot(
        "work_queue_flow__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "work_queue_flow__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// 120 flows of 1 to 5 children each, under every failure policy, run by 4 workers that
/// fail some children and abandon others (their leases run out: a crashed worker): each
/// parent runs exactly once, only after all its children ended, and with the outcome its
/// children's policies give; a parent that a child failed never runs, and is dead.
#[test]
fn every_parent_runs_once_after_its_children_with_the_right_outcome() {
    const FLOWS: u64 = 120;
    let db = harness::fresh_db();
    let queue = WorkQueue::new("flows")
        .unwrap()
        .with_max_deliveries(2)
        .unwrap()
        .with_lease(Duration::from_millis(200))
        .unwrap();
    let mut rng = harness::Rng::new(11);
    // Per child: its parent, whether it will fail for good, and its policy.
    let mut plan: BTreeMap<String, (String, bool, OnChildFailure)> = BTreeMap::new();
    let mut con = db.con();
    for f in 0..FLOWS {
        let parent = format!("p{f}");
        let children: Vec<Child> = (0..1 + rng.below(5))
            .map(|c| {
                let id = format!("p{f}c{c}");
                let policy = [
                    OnChildFailure::FailParent,
                    OnChildFailure::Ignore,
                    OnChildFailure::Continue,
                ][rng.below(3) as usize];
                plan.insert(id.clone(), (parent.clone(), rng.below(4) == 0, policy));
                Child::new(id, "c").unwrap().on_failure(policy)
            })
            .collect();
        queue
            .add_flow(&parent, "p", JobOptions::new(), &children)
            .run(&mut con)
            .unwrap();
    }
    // Every parent is blocked, listed by when it was added (then by id).
    assert_eq!(queue.counts().run(&mut con).unwrap().blocked, FLOWS);
    let mut listed = Vec::new();
    for offset in (0..FLOWS).step_by(100) {
        listed.extend(
            queue
                .list(State::Blocked, offset, 100)
                .run(&mut con)
                .unwrap(),
        );
    }
    assert!(
        listed
            .windows(2)
            .all(|w| (w[0].at_ms, &w[0].id) < (w[1].at_ms, &w[1].id))
    );
    let listed: BTreeSet<String> = listed.into_iter().map(|job| job.id).collect();
    assert_eq!(listed, (0..FLOWS).map(|f| format!("p{f}")).collect());
    // Each parent's run, with the failed children it listed.
    let runs: Mutex<Vec<(String, Vec<String>)>> = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        for w in 0..4u64 {
            let (queue, plan, runs, stop, db) = (&queue, &plan, &runs, &stop, &db);
            s.spawn(move || {
                let mut con = db.con();
                let mut rng = harness::Rng::new(100 + w);
                while !stop.load(Ordering::SeqCst) {
                    let jobs = queue.take(3).run(&mut con).unwrap();
                    if jobs.is_empty() {
                        queue
                            .wait_for_work(Duration::from_millis(50))
                            .run(&mut con)
                            .unwrap();
                        continue;
                    }
                    for job in jobs {
                        if let Some((_, fails, _)) = plan.get(&job.id) {
                            // A child: abandoned now and then (its lease runs out and it
                            // is delivered again, or dies on its last delivery), or
                            // failed for good, or done.
                            if rng.below(5) == 0 {
                                continue;
                            }
                            // A lease lost meanwhile (abandoned once before) is fine.
                            let _ = if *fails {
                                queue.fail(&job, "boom").run(&mut con).map(|_| ())
                            } else {
                                queue.ack(&job).run(&mut con).map(|_| ())
                            };
                        } else {
                            // A parent: it runs only once every child has ended,
                            // as the server tells: acked (its record gone) or dead.
                            let info = queue.job(&job.id).run(&mut con).unwrap().unwrap();
                            let mine = plan.iter().filter(|(_, (p, _, _))| *p == job.id);
                            for (id, _) in mine {
                                let child = queue.job(id).run(&mut con).unwrap();
                                let state = child.map(|c| c.state);
                                assert!(
                                    matches!(state, None | Some(State::Dead)),
                                    "{} ran before its child {id} ended: {state:?}",
                                    job.id
                                );
                            }
                            runs.lock()
                                .unwrap()
                                .push((job.id.clone(), info.failed_children));
                            queue.ack(&job).run(&mut con).unwrap();
                        }
                    }
                }
            });
        }
        // Done once no job is left to run: every flow has ended one way or the other.
        let mut con = db.con();
        harness::wait_until("every flow to end", 20, || {
            let counts = queue.counts().run(&mut con).unwrap();
            counts.waiting + counts.delayed + counts.leased + counts.parked + counts.blocked == 0
        });
        stop.store(true, Ordering::SeqCst);
    });
    assert!(
        queue
            .list(State::Blocked, 0, 100)
            .run(&mut con)
            .unwrap()
            .is_empty()
    );
    let runs = runs.into_inner().unwrap();
    let mut ran: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (parent, failed) in runs {
        assert!(
            ran.insert(parent.clone(), failed).is_none(),
            "{parent} ran twice"
        );
    }
    // What each parent's children make of it: a failing child under FailParent kills it;
    // otherwise it runs, listing its failing children under Continue.
    for f in 0..FLOWS {
        let parent = format!("p{f}");
        let children: Vec<(&String, &(String, bool, OnChildFailure))> =
            plan.iter().filter(|(_, (p, _, _))| *p == parent).collect();
        let mut died = false;
        let mut listed = Vec::new();
        for (id, (_, fails, policy)) in &children {
            // Abandoned twice, a child dies however it would have ended.
            let dead = queue.job(id).run(&mut con).unwrap().map(|c| c.state) == Some(State::Dead);
            let failed = *fails || dead;
            if failed && *policy == OnChildFailure::FailParent {
                died = true;
            }
            if failed && *policy == OnChildFailure::Continue {
                listed.push((*id).clone());
            }
        }
        if died {
            assert!(
                !ran.contains_key(&parent),
                "{parent} ran though a child failed it"
            );
            let info = queue.job(&parent).run(&mut con).unwrap().unwrap();
            assert_eq!(info.state, State::Dead, "{parent}");
        } else {
            let mut got = ran
                .get(&parent)
                .unwrap_or_else(|| panic!("{parent} never ran"))
                .clone();
            got.sort();
            listed.sort();
            assert_eq!(got, listed, "{parent}'s failed children");
        }
    }
}

/// A child's link to its parent, or the parent's count, that add_flow.lua did not write is
/// refused before the ack writes anything.
#[test]
fn a_damaged_link_or_count_is_refused_before_any_write() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("damaged").unwrap();
    let children = [Child::new("c", "x").unwrap()];
    queue
        .add_flow("p", "x", JobOptions::new(), &children)
        .run(&mut con)
        .unwrap();
    let job = queue.take(1).run(&mut con).unwrap().remove(0);
    let jobs = queue.keys()[5];
    for (field, value) in [("P:c", "xp"), ("P:c", "f"), ("w:p", "0"), ("w:p", "abc")] {
        let before: String = redis::cmd("HGET")
            .arg(jobs)
            .arg(field)
            .query(&mut con)
            .unwrap();
        harness::cmd(&mut con, &["HSET", jobs, field, value]);
        let dump = harness::dump(&mut con);
        assert_code(queue.ack(&job).run(&mut con), "BAD_JOBS");
        assert_eq!(harness::dump(&mut con), dump, "{field} = {value}");
        harness::cmd(&mut con, &["HSET", jobs, field, &before]);
    }
    // The blocked parents' set of another type: refused before the ack writes, as by the
    // nack and the take that would end the child too.
    let blocked = queue.keys()[15];
    let parents = harness::dump(&mut con);
    harness::cmd(&mut con, &["RENAME", blocked, "aside"]);
    harness::cmd(&mut con, &["SET", blocked, "not a zset"]);
    let dump = harness::dump(&mut con);
    assert_code(queue.ack(&job).run(&mut con), "WRONGTYPE");
    assert_code(queue.nack(&job, "x").run(&mut con), "WRONGTYPE");
    assert_eq!(harness::dump(&mut con), dump);
    harness::cmd(&mut con, &["DEL", blocked]);
    harness::cmd(&mut con, &["RENAME", "aside", blocked]);
    assert_eq!(harness::dump(&mut con), parents);
    queue.ack(&job).run(&mut con).unwrap();
    assert_eq!(
        queue.job("p").run(&mut con).unwrap().map(|j| j.state),
        Some(State::Waiting)
    );
}

/// A flow has at most [`MAX_CHILDREN`] children: one more is refused before any I/O, and a
/// flow of that many runs its parent once they have all ended.
#[test]
fn a_flow_holds_at_most_max_children() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("widest").unwrap();
    let children: Vec<Child> = (0..=MAX_CHILDREN)
        .map(|n| Child::new(format!("c{n}"), "x").unwrap())
        .collect();
    harness::assert_invalid(
        queue
            .add_flow("p", "x", JobOptions::new(), &children)
            .run(&mut con),
        "children",
    );
    // Options a flow's parent does not take are refused, not dropped.
    for (options, what) in [
        (
            JobOptions::new().backoff(Backoff::Fixed(Duration::ZERO)),
            "backoff",
        ),
        (JobOptions::new().remove_on_complete(), "remove_on_complete"),
    ] {
        harness::assert_invalid(
            queue
                .add_flow("p", "x", options, &children[..1])
                .run(&mut con),
            what,
        );
    }
    assert!(harness::dump(&mut con).is_empty());
    queue
        .add_flow("p", "x", JobOptions::new(), &children[..MAX_CHILDREN])
        .run(&mut con)
        .unwrap();
    let mut ended = 0;
    while ended < MAX_CHILDREN {
        let jobs = queue.take(MAX_TAKE).run(&mut con).unwrap();
        assert!(!jobs.is_empty() && jobs.iter().all(|job| job.id != "p"));
        for job in &jobs {
            queue.ack(job).run(&mut con).unwrap();
        }
        ended += jobs.len();
    }
    assert_eq!(take_one(&mut con, &queue, "p").id, "p");
}
