//! Throwaway `redis-server` processes on free loopback ports: one standalone server, or
//! three of them joined into a Redis Cluster. Shared by the tests and the benchmarks.
//!
//! The `redis-test` crate does much of this for redis-rs itself, but it takes its binary
//! from `REDISRS_SERVER_BIN` while probing the version with a hard-coded `redis-server`,
//! starts without waiting for the server to answer, and forms clusters through
//! `redis-cli`; here the servers are also killed with the process that started them,
//! which lets one server be shared by every test of a binary.

#![allow(dead_code)] // each user takes only part of it

use std::io::{self, ErrorKind};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// The binary to run: `$REDIS_SERVER_BIN`, or `redis-server` from the `PATH`.
pub fn server_bin() -> String {
    std::env::var("REDIS_SERVER_BIN").unwrap_or_else(|_| "redis-server".into())
}

/// A running `redis-server`, killed when dropped (or when this process dies).
pub struct RedisProcess {
    child: Child,
    port: u16,
    dir: PathBuf,
    /// The arguments it was started with after the common ones, to start it again.
    extra: Vec<String>,
}

impl RedisProcess {
    /// Starts a server with `extra` arguments on a free port, and waits until it answers.
    pub fn start(extra: &[&str]) -> RedisProcess {
        RedisProcess::start_with(extra, None)
    }

    /// Starts a sentinel (`redis-server <its config> --sentinel`) on a free port that
    /// monitors `primary` as `name`, with a quorum of 2: it calls the primary down after
    /// 400 ms without an answer, and gives a failover 4 s.
    pub fn start_sentinel(primary: &RedisProcess, name: &str) -> RedisProcess {
        let config = format!(
            "sentinel monitor {name} 127.0.0.1 {} 2\n\
             sentinel down-after-milliseconds {name} 400\n\
             sentinel failover-timeout {name} 4000\n",
            primary.port()
        );
        RedisProcess::start_with(&["--sentinel"], Some(&config))
    }

    /// [`start`](Self::start), with `config` written to `redis.conf` in the server's
    /// folder and given as its configuration file (a sentinel needs one it can rewrite).
    fn start_with(extra: &[&str], config: Option<&str>) -> RedisProcess {
        let mut last_log = String::new();
        // The free port can be taken by someone else before the server binds it.
        sweep_stale_folders();
        for _ in 0..5 {
            let port = free_port();
            let dir = scratch_dir().join(format!("redis-{}-{port}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("cannot create the server's folder");
            let mut extra: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
            if let Some(config) = config {
                let path = dir.join("redis.conf");
                std::fs::write(&path, config).expect("cannot write the server's config");
                extra.insert(0, path.display().to_string());
            }
            let child = spawn(port, &dir, &extra);
            let mut server = RedisProcess {
                child,
                port,
                dir,
                extra,
            };
            match server.wait_until_ready() {
                Ok(()) => return server,
                Err(log) => last_log = log,
            }
        }
        panic!("redis-server did not start; its last log:\n{last_log}");
    }

    /// Kills the server at once (`SIGKILL`: no shutdown, no save), as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the killed server again: the same port, folder and arguments (a cluster
    /// node finds its `nodes.conf` there, and comes back with its id and slots), and
    /// waits until it answers.
    pub fn restart(&mut self) {
        self.kill();
        self.child = spawn(self.port, &self.dir, &self.extra);
        if let Err(log) = self.wait_until_ready() {
            panic!("redis-server did not start again; its log:\n{log}");
        }
    }

    /// The port it listens on, at 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>/<db>`.
    pub fn url(&self, db: u32) -> String {
        format!("redis://127.0.0.1:{}/{db}", self.port)
    }

    /// A new connection to database 0.
    pub fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url(0))
            .and_then(|c| c.get_connection())
            .expect("connect to a test server")
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }

    fn wait_until_ready(&mut self) -> Result<(), String> {
        let client = redis::Client::open(self.url(0)).expect("a valid url");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return Err(self.log());
            }
            let answered = client
                .get_connection()
                .and_then(|mut con| redis::cmd("PING").query::<String>(&mut con));
            if answered.is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                return Err(self.log());
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Three masters sharing the 16384 slots.
pub struct RedisCluster {
    pub nodes: Vec<RedisProcess>,
}

impl RedisCluster {
    /// Starts three cluster-enabled servers and joins them, without `redis-cli`: each
    /// node takes a third of the slots, the first meets the others, and the cluster is
    /// ready once every node sees all three and reports `cluster_state:ok`.
    pub fn start() -> RedisCluster {
        let nodes: Vec<RedisProcess> = (0..3)
            .map(|_| {
                RedisProcess::start(&[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "5000",
                ])
            })
            .collect();
        let ranges = [(0, 5460), (5461, 10922), (10923, 16383)];
        for (node, (first, last)) in nodes.iter().zip(ranges) {
            let mut con = node.connection();
            let _: () = redis::cmd("CLUSTER")
                .arg("ADDSLOTSRANGE")
                .arg(first)
                .arg(last)
                .query(&mut con)
                .expect("CLUSTER ADDSLOTSRANGE");
        }
        let mut first = nodes[0].connection();
        for node in &nodes[1..] {
            let _: () = redis::cmd("CLUSTER")
                .arg("MEET")
                .arg("127.0.0.1")
                .arg(node.port())
                .query(&mut first)
                .expect("CLUSTER MEET");
        }
        let cluster = RedisCluster { nodes };
        cluster.wait_until_ready();
        cluster
    }

    /// The nodes' URLs, for `redis::cluster::ClusterClient::new`.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.url(0)).collect()
    }

    fn wait_until_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        for node in &self.nodes {
            let mut con = node.connection();
            loop {
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query(&mut con)
                    .expect("CLUSTER INFO");
                let slots: Vec<redis::Value> = redis::cmd("CLUSTER")
                    .arg("SLOTS")
                    .query(&mut con)
                    .expect("CLUSTER SLOTS");
                if info.contains("cluster_state:ok")
                    && info.contains("cluster_known_nodes:3")
                    && slots.len() == 3
                {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "the cluster did not form:\n{info}\n{}",
                    node.log()
                );
                thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

impl RedisCluster {
    /// Three masters sharing the 16384 slots, each with one replica (`nodes[0..3]` the
    /// masters, `nodes[3 + i]` the replica of `nodes[i]`), with `--cluster-node-timeout`
    /// `node_timeout_ms`: a master killed is failed over to its replica within a few
    /// node timeouts. Ready once every node sees all six and `cluster_state:ok`, and
    /// each replica's link to its master is up.
    pub fn start_with_replicas(node_timeout_ms: u32) -> RedisCluster {
        let timeout = node_timeout_ms.to_string();
        let nodes: Vec<RedisProcess> = (0..6)
            .map(|_| {
                RedisProcess::start(&[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    &timeout,
                    // A replica syncs at once, not after the default 5 s delay.
                    "--repl-diskless-sync-delay",
                    "0",
                ])
            })
            .collect();
        let ranges = [(0, 5460), (5461, 10922), (10923, 16383)];
        for (node, (first, last)) in nodes.iter().zip(ranges) {
            let _: () = redis::cmd("CLUSTER")
                .arg("ADDSLOTSRANGE")
                .arg(first)
                .arg(last)
                .query(&mut node.connection())
                .expect("CLUSTER ADDSLOTSRANGE");
        }
        let mut first = nodes[0].connection();
        for node in &nodes[1..] {
            let _: () = redis::cmd("CLUSTER")
                .arg("MEET")
                .arg("127.0.0.1")
                .arg(node.port())
                .query(&mut first)
                .expect("CLUSTER MEET");
        }
        let cluster = RedisCluster { nodes };
        // A replica can follow only a master it knows.
        cluster.wait_for_every_node("every node to know the six", |_, info, _| {
            info.contains("cluster_known_nodes:6")
        });
        for i in 0..3 {
            let id = cluster.node_id(i);
            let _: () = redis::cmd("CLUSTER")
                .arg("REPLICATE")
                .arg(id)
                .query(&mut cluster.nodes[3 + i].connection())
                .expect("CLUSTER REPLICATE");
        }
        cluster.wait_for_every_node("the cluster with replicas to form", |i, info, nodes| {
            let replicas = nodes.lines().filter(|l| l.contains("slave")).count();
            let linked = i < 3
                || cluster.nodes[i]
                    .info("replication")
                    .contains("master_link_status:up");
            info.contains("cluster_state:ok") && replicas == 3 && linked
        });
        cluster
    }

    /// The id of node `i` (`CLUSTER MYID`).
    pub fn node_id(&self, i: usize) -> String {
        redis::cmd("CLUSTER")
            .arg("MYID")
            .query(&mut self.nodes[i].connection())
            .expect("CLUSTER MYID")
    }

    /// Waits until `ready(i, CLUSTER INFO, CLUSTER NODES)` holds on every node `i`.
    fn wait_for_every_node(&self, what: &str, ready: impl Fn(usize, &str, &str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        for (i, node) in self.nodes.iter().enumerate() {
            let mut con = node.connection();
            loop {
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query(&mut con)
                    .expect("CLUSTER INFO");
                let nodes: String = redis::cmd("CLUSTER")
                    .arg("NODES")
                    .query(&mut con)
                    .expect("CLUSTER NODES");
                if ready(i, &info, &nodes) {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{what}: not after 30 s:\n{info}\n{nodes}\n{}",
                    node.log()
                );
                thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// Spawns `redis-server` on `port`, in and writing to `dir`, tied to this process.
fn spawn(port: u16, dir: &std::path::Path, extra: &[String]) -> Child {
    let mut cmd = Command::new(server_bin());
    // A configuration file comes first (start_with puts it first in `extra`).
    let (config, extra) = match extra.first() {
        Some(first) if first.ends_with(".conf") => (Some(first), &extra[1..]),
        _ => (None, extra),
    };
    cmd.args(config);
    cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
        .arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(dir.join("redis.log"))
        .args(extra)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let child = match spawn_tied_to_this_process(cmd) {
        Ok(child) => child,
        Err(err) if err.kind() == ErrorKind::NotFound => missing_server(),
        Err(err) => panic!("cannot start {}: {err}", server_bin()),
    };
    forget_at_exit(child.id(), dir.to_path_buf());
    child
}

/// Stops the whole run with one line: every test needs the server.
fn missing_server() -> ! {
    use std::io::Write;
    // Straight to the process's stderr: the test harness captures `eprintln!`, and
    // exiting would lose what it captured.
    let _ = writeln!(
        io::stderr(),
        "error: `{}` not found; install it with `sudo apt-get install redis-server` (Debian, Ubuntu), or set REDIS_SERVER_BIN to its path",
        server_bin()
    );
    std::process::exit(1)
}

/// A port nobody listens on right now (the OS picks it).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port on 127.0.0.1")
}

/// Servers kept in statics are never dropped: when the process exits, this stops them and
/// removes their folders (the test harness leaves through `exit`, which runs `atexit`).
fn forget_at_exit(pid: u32, dir: PathBuf) {
    static STARTED: Mutex<Vec<(u32, PathBuf)>> = Mutex::new(Vec::new());
    static HOOK: OnceLock<()> = OnceLock::new();
    extern "C" fn clean_up() {
        let started = STARTED.lock().map(|s| s.clone()).unwrap_or_default();
        for (pid, dir) in started {
            // SAFETY: kill has no memory effects; the pid is one this process started.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    HOOK.get_or_init(|| {
        // SAFETY: registers a plain function with no arguments, as atexit requires.
        unsafe {
            libc::atexit(clean_up);
        }
    });
    STARTED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((pid, dir));
}

/// Removes the folders of servers whose test process is gone (killed before `atexit`
/// could run), once per process.
fn sweep_stale_folders() {
    static SWEPT: OnceLock<()> = OnceLock::new();
    SWEPT.get_or_init(|| {
        // Only in Cargo's own scratch folder: the system's temporary folder is shared.
        let Some(dir) = option_env!("CARGO_TARGET_TMPDIR") else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix("redis-")
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse::<u32>().ok())
            else {
                continue;
            };
            let alive = std::path::Path::new(&format!("/proc/{pid}")).exists();
            if !alive {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    });
}

fn scratch_dir() -> PathBuf {
    // Cargo gives integration tests a scratch folder under target/; the tour has none.
    option_env!("CARGO_TARGET_TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
}

type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

/// Spawns `cmd` so that it is killed when this process exits, even by a panic or a
/// signal: servers shared through statics are never dropped.
///
/// Linux delivers the parent-death signal when the *thread* that forked the child exits,
/// so every server is forked by one thread that lives as long as the process.
fn spawn_tied_to_this_process(cmd: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        thread::Builder::new()
            .name("redis-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    tie_to_parent(&mut cmd);
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("cannot start the spawner thread");
        Mutex::new(tx)
    });
    let (tx, rx) = mpsc::channel();
    spawner
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((cmd, tx))
        .expect("the spawner thread is gone");
    rx.recv().expect("the spawner thread is gone")
}

#[cfg(target_os = "linux")]
fn tie_to_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: prctl and getppid are async-signal-safe, and the closure allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect.
            if libc::getppid() != parent {
                return Err(io::Error::other("the test process is gone"));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn tie_to_parent(_cmd: &mut Command) {
    // Elsewhere the servers outlive a crashed test run; Drop still stops them otherwise.
}

impl RedisProcess {
    /// Starts a replica of `primary` (with `extra` arguments too), and waits until its
    /// link to the primary is up and the primary counts it online.
    pub fn start_replica_of(primary: &RedisProcess, extra: &[&str]) -> RedisProcess {
        let port = primary.port().to_string();
        let mut args = vec!["--replicaof", "127.0.0.1", port.as_str()];
        args.extend_from_slice(extra);
        let replica = RedisProcess::start(&args);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let linked = replica
                .info("replication")
                .contains("master_link_status:up");
            let online = primary
                .info("replication")
                .lines()
                .any(|line| line.starts_with("slave") && line.contains("state=online"));
            if linked && online {
                return replica;
            }
            assert!(
                Instant::now() < deadline,
                "the replica did not sync:\n{}",
                replica.log()
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// `INFO section`.
    pub fn info(&self, section: &str) -> String {
        redis::cmd("INFO")
            .arg(section)
            .query(&mut self.connection())
            .expect("INFO")
    }
}
