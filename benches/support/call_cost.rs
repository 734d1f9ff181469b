//! `PART=calls` of `benches/work_queue.rs`: what one `add`, one `take` (acking the job the
//! previous one took, and taking the next) and one `ack` cost the server, for the scripts
//! of this checkout (as they are, keeping the newest 1,000 completed jobs, and adding
//! each job with a 55-byte W3C trace context, as the `otel` feature does) against
//! those of another revision (`BASE`, read with `git show`), side by side on one server,
//! features off.
//!
//! Each side's scripts are loaded as they are (`SCRIPT LOAD` of the file's text) and
//! called with `EVALSHA` on a queue of their own. The keys and arguments come from each
//! revision's header, by name: the keys from their templates, `lease` 30 s, `limit` 1,
//! `max_deliveries` 5, group limits off, a fresh `token`, `done` as the header says (id,
//! token, and an empty result when it names results), and an add's job options at their
//! defaults. A round adds `JOBS` jobs of 100 bytes (pipelined, one script a job), then
//! takes them one per call, each call acking the job the previous one took, until none
//! is left; then it adds `JOBS` more, takes them ten a call, and acks them one a call
//! (pipelined); `INFO commandstats` gives the µs per `EVALSHA` of each phase. The sides take turns round after round; the table
//! gives each side's best round, as the noise of a shared machine only ever adds time.

use std::process::Command;

/// The script `family/op.lua` at `rev`, from the git history of this checkout.
fn source_at(rev: &str, path: &str) -> String {
    let out = Command::new("git")
        .args(["show", &format!("{rev}:{path}")])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git show {rev}:{path}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("a script is text")
}

/// `@key` templates and `@arg` names (with their descriptions) of a script's header.
struct Header {
    keys: Vec<String>,
    args: Vec<(String, String)>,
}

fn header(source: &str) -> Header {
    let mut header = Header {
        keys: Vec::new(),
        args: Vec::new(),
    };
    for line in source.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["---", "@key", _, _, template, ..] => header.keys.push(template.to_string()),
            ["---", "@arg", name, _, rest @ ..] => {
                header.args.push((name.to_string(), rest.join(" ")));
            }
            _ => {}
        }
    }
    header
}

/// A script loaded (its SHA1), its keys on the side's queue, and its header.
struct Loaded {
    sha1: String,
    keys: Vec<String>,
    header: Header,
}

/// One revision's `add`, `take` and `ack`, loaded, with the queue they run on.
struct Side {
    label: String,
    /// The trace context each add keeps ('' for none).
    trace: &'static str,
    add: Loaded,
    take: Loaded,
    ack: Loaded,
}

impl Side {
    /// The scripts `sources` (add, take, ack) on queue `queue`; `settings`, when given,
    /// configured on it first (this checkout's `configure`: a base revision must read
    /// what it writes).
    fn new(
        con: &mut redis::Connection,
        label: &str,
        sources: [&str; 3],
        queue: &str,
        settings: Option<&redis_patterns::work_queue::Settings>,
        trace: &'static str,
    ) -> Side {
        let load = |con: &mut redis::Connection, source: &str| -> Loaded {
            let header = header(source);
            Loaded {
                sha1: redis::cmd("SCRIPT")
                    .arg("LOAD")
                    .arg(source)
                    .query(con)
                    .unwrap(),
                keys: header
                    .keys
                    .iter()
                    .map(|t| t.replace("<name>", queue))
                    .collect(),
                header,
            }
        };
        if let Some(settings) = settings {
            let queue = redis_patterns::work_queue::WorkQueue::new(queue).unwrap();
            queue.configure(settings).run(con).unwrap();
        }
        let [add, take, ack] = sources;
        Side {
            label: label.to_string(),
            trace,
            add: load(con, add),
            take: load(con, take),
            ack: load(con, ack),
        }
    }

    /// The arguments of an add of job `id`, by the header's names: 100 bytes, no
    /// priority, delay or group, and the job options of later revisions at their
    /// defaults.
    fn add_args(&self, id: &str) -> Vec<Vec<u8>> {
        let args = &self.add.header.args;
        args.iter()
            .map(|(name, _)| match name.as_str() {
                "id" => id.as_bytes().to_vec(),
                "payload" => vec![b'x'; 100],
                "group" => Vec::new(),
                "backoff" => b"worker".to_vec(),
                "trace" => self.trace.as_bytes().to_vec(),
                _ => b"0".to_vec(),
            })
            .collect()
    }

    /// The arguments of a take of `limit` jobs that acks `done` (id and token), by the
    /// header's names.
    fn take_args(&self, limit: usize, done: Option<&(String, String)>) -> Vec<String> {
        let mut args = Vec::new();
        for (name, description) in &self.take.header.args {
            match name.as_str() {
                "lease" => args.push("30000".into()),
                "limit" => args.push(limit.to_string()),
                "max_deliveries" => args.push("5".into()),
                "group_period" => args.push("1000".into()),
                "token" => args.push("0123456789abcdef0123456789abcdef".into()),
                "done" => {
                    if let Some((id, token)) = done {
                        args.push(id.clone());
                        args.push(token.clone());
                        if description.contains("result") {
                            args.push(String::new());
                        }
                    }
                }
                // Group limits (arguments before they moved into the queue's settings): off.
                _ => args.push("0".into()),
            }
        }
        args
    }

    /// The arguments of an ack of `job` (id and token), by the header's names.
    fn ack_args(&self, job: &(String, String)) -> Vec<String> {
        let args = &self.ack.header.args;
        args.iter()
            .map(|(name, _)| match name.as_str() {
                "id" => job.0.clone(),
                "token" => job.1.clone(),
                _ => String::new(),
            })
            .collect()
    }

    /// A take of `limit` jobs acking `done`: the jobs taken, as (id, token).
    fn take(
        &self,
        con: &mut redis::Connection,
        limit: usize,
        done: Option<&(String, String)>,
    ) -> Vec<(String, String)> {
        let taken: Vec<Vec<redis::Value>> = redis::cmd("EVALSHA")
            .arg(&self.take.sha1)
            .arg(self.take.keys.len())
            .arg(&self.take.keys)
            .arg(self.take_args(limit, done))
            .query(con)
            .unwrap();
        let text = |v: &redis::Value| redis::from_redis_value::<String>(v.clone()).unwrap();
        taken
            .iter()
            .map(|job| (text(&job[0]), text(&job[1])))
            .collect()
    }

    /// `jobs` adds, pipelined, of ids that start with `batch` (ids never used before: a
    /// queue that keeps completed jobs would take an old id for a duplicate).
    fn add_jobs(&self, con: &mut redis::Connection, jobs: usize, batch: &str) {
        let mut adds = redis::pipe();
        for n in 0..jobs {
            adds.cmd("EVALSHA")
                .arg(&self.add.sha1)
                .arg(self.add.keys.len())
                .arg(&self.add.keys)
                .arg(self.add_args(&format!("{batch}:{n}")))
                .ignore();
        }
        adds.exec(con).unwrap();
    }

    /// Round `round`: µs per call of the adds, of the takes (each acking the job the one
    /// before took), and of acks on their own.
    fn round(&self, con: &mut redis::Connection, round: usize, jobs: usize) -> [f64; 3] {
        reset(con);
        self.add_jobs(con, jobs, &format!("{round}:taken"));
        let add_us = evalsha_us(con);
        reset(con);
        let mut held: Option<(String, String)> = None;
        while let Some(job) = self.take(con, 1, held.as_ref()).pop() {
            held = Some(job);
        }
        let take_us = evalsha_us(con);
        // Acks on their own: the jobs taken ten a call first, then acked one a call.
        self.add_jobs(con, jobs, &format!("{round}:acked"));
        let mut taken = Vec::new();
        loop {
            let more = self.take(con, 10, None);
            if more.is_empty() {
                break;
            }
            taken.extend(more);
        }
        reset(con);
        let mut acks = redis::pipe();
        for job in &taken {
            acks.cmd("EVALSHA")
                .arg(&self.ack.sha1)
                .arg(self.ack.keys.len())
                .arg(&self.ack.keys)
                .arg(self.ack_args(job))
                .ignore();
        }
        acks.exec(con).unwrap();
        [add_us, take_us, evalsha_us(con)]
    }

    /// Bytes of `{name}:jobs` per job (`MEMORY USAGE`, every field counted), with `jobs`
    /// jobs waiting on an emptied queue.
    fn bytes_per_job(&self, con: &mut redis::Connection, jobs: usize) -> f64 {
        let keys: Vec<&String> = self.add.keys.iter().chain(&self.take.keys).collect();
        redis::cmd("DEL").arg(&keys).exec(con).unwrap();
        self.add_jobs(con, jobs, "bytes");
        let hash = self
            .add
            .keys
            .iter()
            .find(|k| k.ends_with(":jobs"))
            .expect("add names the jobs hash");
        let bytes: u64 = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(hash)
            .arg("SAMPLES")
            .arg(0)
            .query(con)
            .unwrap();
        bytes as f64 / jobs as f64
    }
}

fn reset(con: &mut redis::Connection) {
    redis::cmd("CONFIG").arg("RESETSTAT").exec(con).unwrap();
}

/// µs per `EVALSHA` since the last reset.
fn evalsha_us(con: &mut redis::Connection) -> f64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("cmdstat_evalsha:"))
        .and_then(|stats| {
            let per = stats
                .split(',')
                .find_map(|f| f.strip_prefix("usec_per_call="))?;
            per.parse().ok()
        })
        .expect("evalsha in INFO commandstats")
}

/// Runs the comparison on `con` (a server of its own) and prints the table: this
/// checkout's scripts, the same keeping the newest 1,000 completed jobs (BullMQ's
/// `removeOnComplete: 1000`), and `base`'s.
pub fn compare(con: &mut redis::Connection, base: &str, rounds: usize, jobs: usize) {
    use redis_patterns::scripts::work_queue as script;
    use redis_patterns::work_queue::Settings;
    use std::time::Duration;
    let now = [script::ADD.source, script::TAKE.source, script::ACK.source];
    let then =
        ["add", "take", "ack"].map(|op| source_at(base, &format!("scripts/work_queue/{op}.lua")));
    // Every side's queue configured (in the form every revision since 2ac4a10 reads: a
    // dead-letter age of 179 days rather than the default 180 is a setting stored), so that
    // each script reads and checks stored settings as a configured queue's do; the kept
    // side's differ by what it keeps only.
    let plain = Settings::new()
        .dead_letters(10_000, Duration::from_secs(179 * 86_400))
        .unwrap();
    let keep = plain
        .keep_completed(1_000, Duration::from_secs(86_400))
        .unwrap();
    // A sampled W3C context, as the `otel` feature keeps one: 55 bytes.
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let sides = [
        Side::new(con, "this checkout", now, "calls:now", Some(&plain), ""),
        Side::new(
            con,
            "keeping 1,000 done",
            now,
            "calls:kept",
            Some(&keep),
            "",
        ),
        Side::new(
            con,
            base,
            [&then[0], &then[1], &then[2]],
            "calls:base",
            Some(&plain),
            "",
        ),
        Side::new(
            con,
            "traced (55 bytes)",
            now,
            "calls:traced",
            Some(&plain),
            traceparent,
        ),
    ];
    let mut best = [[f64::INFINITY; 3]; 4];
    for round in 0..rounds {
        for k in 0..sides.len() {
            let i = (round + k) % sides.len();
            let costs = sides[i].round(con, round, jobs);
            for (b, c) in best[i].iter_mut().zip(costs) {
                *b = b.min(c);
            }
        }
    }
    println!(
        "work_queue scripts, µs of server time per call (INFO commandstats), features off, \
         best of {rounds} rounds of {jobs} jobs:"
    );
    println!(
        "{:<20} {:>8} {:>18} {:>8}",
        "scripts", "add", "take (ack + take)", "ack"
    );
    for (side, [add, take, ack]) in sides.iter().zip(best) {
        println!("{:<20} {add:>8.1} {take:>18.1} {ack:>8.1}", side.label);
    }
    let ratios = |label: &str, costs: [f64; 3], to: [f64; 3]| {
        println!(
            "{label:<20} {:>7.2}× {:>17.2}× {:>7.2}×",
            costs[0] / to[0],
            costs[1] / to[1],
            costs[2] / to[2]
        );
    };
    ratios("ratio to base", best[0], best[2]);
    ratios("kept, ratio to base", best[1], best[2]);
    ratios("traced, to untraced", best[3], best[0]);
    let (plain_bytes, traced_bytes) = (
        sides[0].bytes_per_job(con, jobs),
        sides[3].bytes_per_job(con, jobs),
    );
    println!(
        "bytes of {{name}}:jobs per waiting job (MEMORY USAGE): {plain_bytes:.1} untraced, \
         {traced_bytes:.1} traced: {:.1} more for a 55-byte context",
        traced_bytes - plain_bytes
    );
}
