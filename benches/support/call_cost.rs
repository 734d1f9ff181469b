//! `PART=calls` of `benches/work_queue.rs`: what one `add` and one `take` (acking the job
//! the previous one took, and taking the next) cost the server, for the scripts of this
//! checkout against those of another revision (`BASE`, read with `git show`), side by
//! side on one server, features off.
//!
//! Each side's scripts are loaded as they are (`SCRIPT LOAD` of the file's text) and
//! called with `EVALSHA` on a queue of their own. The keys and arguments come from each
//! revision's header, by name: the keys from their templates, `lease` 30 s, `limit` 1,
//! `max_deliveries` 5, group limits off, a fresh `token`, and `done` as the header says
//! (id, token, and an empty result when it names results). A round adds `JOBS` jobs of
//! 100 bytes (pipelined, one script a job), then takes them one per call, each call
//! acking the job the previous one took, until none is left; `INFO commandstats` gives
//! the µs per `EVALSHA` of each phase. The sides take turns round after round; the table
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

/// One revision's `add` and `take`, loaded, with the queue they run on.
struct Side {
    label: String,
    add: (String, Vec<String>),
    take: (String, Vec<String>, Header),
}

impl Side {
    fn new(con: &mut redis::Connection, label: &str, add: &str, take: &str, queue: &str) -> Side {
        let load = |con: &mut redis::Connection, source: &str| -> String {
            redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(source)
                .query(con)
                .unwrap()
        };
        let keys = |h: &Header| -> Vec<String> {
            h.keys.iter().map(|t| t.replace("<name>", queue)).collect()
        };
        let (add_header, take_header) = (header(add), header(take));
        Side {
            label: label.to_string(),
            add: (load(con, add), keys(&add_header)),
            take: (load(con, take), keys(&take_header), take_header),
        }
    }

    /// The arguments of a take that acks `done` (id and token), by the header's names.
    fn take_args(&self, done: Option<&(String, String)>) -> Vec<String> {
        let mut args = Vec::new();
        for (name, description) in &self.take.2.args {
            match name.as_str() {
                "lease" => args.push("30000".into()),
                "limit" => args.push("1".into()),
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

    /// One round: µs per call of the adds, then of the takes.
    fn round(&self, con: &mut redis::Connection, jobs: usize) -> (f64, f64) {
        let payload = [b'x'; 100];
        reset(con);
        let mut adds = redis::pipe();
        for n in 0..jobs {
            adds.cmd("EVALSHA")
                .arg(&self.add.0)
                .arg(self.add.1.len())
                .arg(&self.add.1)
                .arg(format!("j{n}"))
                .arg(&payload[..])
                .arg(0)
                .arg(0)
                .arg("")
                .ignore();
        }
        adds.exec(con).unwrap();
        let add_us = evalsha_us(con);
        reset(con);
        let mut held: Option<(String, String)> = None;
        loop {
            let taken: Vec<Vec<redis::Value>> = redis::cmd("EVALSHA")
                .arg(&self.take.0)
                .arg(self.take.1.len())
                .arg(&self.take.1)
                .arg(self.take_args(held.as_ref()))
                .query(con)
                .unwrap();
            let Some(job) = taken.first() else { break };
            let text = |v: &redis::Value| redis::from_redis_value::<String>(v.clone()).unwrap();
            held = Some((text(&job[0]), text(&job[1])));
        }
        (add_us, evalsha_us(con))
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

/// Runs the comparison on `con` (a server of its own) and prints the table.
pub fn compare(con: &mut redis::Connection, base: &str, rounds: usize, jobs: usize) {
    use redis_patterns::scripts::work_queue as script;
    let sides = [
        Side::new(
            con,
            "this checkout",
            script::ADD.source,
            script::TAKE.source,
            "calls:now",
        ),
        Side::new(
            con,
            base,
            &source_at(base, "scripts/work_queue/add.lua"),
            &source_at(base, "scripts/work_queue/take.lua"),
            "calls:base",
        ),
    ];
    let mut best = [(f64::INFINITY, f64::INFINITY); 2];
    for round in 0..rounds {
        for k in 0..2 {
            let i = (round + k) % 2;
            let (add, take) = sides[i].round(con, jobs);
            best[i] = (best[i].0.min(add), best[i].1.min(take));
        }
    }
    println!(
        "work_queue scripts, µs of server time per call (INFO commandstats), features off, \
         best of {rounds} rounds of {jobs} jobs:"
    );
    println!("{:<20} {:>8} {:>16}", "scripts", "add", "take (ack + take)");
    for (side, (add, take)) in sides.iter().zip(best) {
        println!("{:<20} {add:>8.1} {take:>16.1}", side.label);
    }
    let (now, then) = (best[0], best[1]);
    println!(
        "{:<20} {:>7.2}× {:>15.2}×",
        "ratio",
        now.0 / then.0,
        now.1 / then.1
    );
}
