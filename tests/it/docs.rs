//! What the docs restate of a script's header is checked against the header, so that
//! the header stays the one source of truth: every reply type a page cites
//! (`` `work_queue/take` answers `[(…)]` ``), and every header it shows as an example.

use std::collections::HashMap;
use std::path::Path;

use redis_patterns::catalog;

/// The pages that cite scripts: the README, the guide pages, and the codegen crate's docs.
const PAGES: &[&str] = &[
    "README.md",
    "docs/script-header.md",
    "docs/servers.md",
    "codegen/src/lib.rs",
];

/// The folders of the scripts a page may show.
const SCRIPT_FOLDERS: &[&str] = &["scripts", "examples/own-scripts/lua"];

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// A page's text; a Rust file's `//!` docs, without the markers.
fn page(path: &str) -> String {
    let text = read(path);
    if !path.ends_with(".rs") {
        return text;
    }
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix("//!"))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A line with its runs of blanks as one space, as a header is read.
fn squeezed(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Each cited reply type: `` `<family>/<op>` answers `<type>` ``, wrapped anywhere
/// between the three.
fn cited_replies(text: &str) -> Vec<(String, String)> {
    let mut cited = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(" answers") {
        let before = rest[..at].trim_end();
        rest = &rest[at + " answers".len()..];
        let Some(name) = before
            .strip_suffix('`')
            .and_then(|b| b.rfind('`').map(|open| &b[open + 1..]))
        else {
            continue;
        };
        if !name.contains('/') || name.contains(char::is_whitespace) {
            continue;
        }
        let Some(ty) = rest
            .trim_start()
            .strip_prefix('`')
            .and_then(|t| t.split_once('`'))
            .map(|(ty, _)| ty)
        else {
            continue;
        };
        cited.push((name.to_owned(), ty.to_owned()));
    }
    cited
}

#[test]
fn every_cited_reply_type_is_the_headers() {
    let mut cited_in_guide = 0;
    for path in PAGES {
        for (name, ty) in cited_replies(&page(path)) {
            let script = catalog::find(&name)
                .unwrap_or_else(|| panic!("{path} cites {name}: no such script"));
            let spelled = |t: &str| t.split_whitespace().collect::<String>();
            assert_eq!(
                spelled(&ty),
                spelled(script.returns.ty),
                "{path} says {name} answers `{ty}`; its header says `{}`",
                script.returns.ty
            );
            cited_in_guide += usize::from(*path == "docs/script-header.md");
        }
    }
    // The guide's examples of the reply grammar are citations: rows, a tuple with a list,
    // a tuple or nil.
    assert!(
        cited_in_guide >= 3,
        "the guide cites {cited_in_guide} reply types"
    );
}

/// Every script's header lines (squeezed), by its summary.
fn headers() -> HashMap<String, (String, Vec<String>)> {
    let mut headers = HashMap::new();
    for folder in SCRIPT_FOLDERS {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
        for family in std::fs::read_dir(&root).unwrap() {
            let family = family.unwrap().path();
            if !family.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(&family).unwrap() {
                let file = file.unwrap().path();
                if file.extension().is_none_or(|e| e != "lua") {
                    continue;
                }
                let text = std::fs::read_to_string(&file).unwrap();
                let lines: Vec<String> = text
                    .lines()
                    .filter(|l| l.starts_with("---") || l.starts_with("#!lua"))
                    .map(squeezed)
                    .collect();
                let summary = lines
                    .iter()
                    .find(|l| l.starts_with("--- "))
                    .cloned()
                    .unwrap();
                headers.insert(summary, (file.display().to_string(), lines));
            }
        }
    }
    headers
}

/// The lines of each fenced `lua` block of a text.
fn lua_blocks(text: &str) -> Vec<Vec<&str>> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while lines.any(|l| l.trim() == "```lua") {
        blocks.push(lines.by_ref().take_while(|l| l.trim() != "```").collect());
    }
    blocks
}

/// A header shown as an example is a script's: each of its tags (and its flags line) is
/// a line of the header whose summary it shows. Its prose may stand for the script's
/// (`--- Longer description, …`).
#[test]
fn every_header_shown_is_a_scripts() {
    let headers = headers();
    let mut shown = 0;
    for path in PAGES {
        for block in lua_blocks(&page(path)) {
            let Some((file, lines)) = block
                .iter()
                .find(|l| l.starts_with("--- "))
                .and_then(|summary| headers.get(&squeezed(summary)))
            else {
                continue;
            };
            shown += 1;
            for line in block
                .iter()
                .filter(|l| squeezed(l).starts_with("--- @") || l.starts_with("#!lua"))
            {
                assert!(
                    lines.contains(&squeezed(line)),
                    "{path} shows {file}'s header with the line\n  {line}\nwhich it does not have"
                );
            }
        }
    }
    assert!(shown >= 3, "{shown} headers shown");
}

/// The pages a reader of a checkout reads: the README and every page of `docs/`.
fn linked_pages() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec!["README.md".to_owned()];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") {
            pages.push(format!("docs/{name}"));
        }
    }
    pages.sort();
    pages
}

/// A link of a page: where it points, and the line it is on.
#[derive(Debug)]
struct Link {
    line: usize,
    dest: String,
}

/// What a page's links are: the destinations of its inline links and of the references
/// it uses, and every reference that has no definition (it renders as brackets).
#[derive(Debug, Default)]
struct Links {
    links: Vec<Link>,
    undefined: Vec<(usize, String)>,
    headings: Vec<String>,
}

/// A label as CommonMark matches it: case and runs of blanks do not count.
fn label_key(label: &str) -> String {
    label
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The anchor a heading gets (GitHub's and rustdoc's): lower case, blanks as `-`, no
/// punctuation but `-` and `_`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The index after the `]` that closes the `[` at `open`, skipping code spans.
fn closing_bracket(text: &[u8], code: &[bool], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (i, &b) in text.iter().enumerate().skip(open) {
        if code[i] {
            continue;
        }
        match b {
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            b'\n' if i + 1 < text.len() && text[i + 1] == b'\n' => return None,
            _ => {}
        }
    }
    None
}

/// Reads a page's links, its link definitions and its headings, outside fenced code
/// blocks and code spans.
fn links_of(page: &str) -> Links {
    // Fenced code blocks become blank lines, so that line numbers hold.
    let mut fenced = false;
    let mut prose = String::new();
    let mut found = Links::default();
    let mut definitions = HashMap::new();
    for (n, line) in page.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            prose.push('\n');
            continue;
        }
        if fenced {
            prose.push('\n');
            continue;
        }
        if let Some(heading) = line.strip_prefix('#') {
            found
                .headings
                .push(anchor(&heading.trim_start_matches('#').replace('`', "")));
        }
        // A definition: `[label]: destination`.
        let definition = line
            .strip_prefix('[')
            .and_then(|rest| rest.split_once("]: "))
            .filter(|(label, _)| !label.contains(']'));
        if let Some((label, dest)) = definition {
            definitions.insert(label_key(label), ());
            found.links.push(Link {
                line: n + 1,
                dest: dest.trim().to_owned(),
            });
            prose.push('\n');
            continue;
        }
        prose.push_str(line);
        prose.push('\n');
    }
    // Which bytes are inside a code span: a run of backticks up to the next run as long.
    let text = prose.as_bytes();
    let mut code = vec![false; text.len()];
    let mut i = 0;
    while i < text.len() {
        if text[i] != b'`' {
            i += 1;
            continue;
        }
        let run = text[i..].iter().take_while(|&&b| b == b'`').count();
        let fence = &prose[i..i + run];
        let close = prose[i + run..]
            .match_indices(fence)
            .map(|(at, _)| i + run + at)
            .find(|&at| text.get(at + run) != Some(&b'`') && text[at - 1] != b'`');
        let end = close.map_or(i + run, |at| at + run);
        code[i..end].iter_mut().for_each(|c| *c = true);
        i = end;
    }
    let line_of = |at: usize| prose[..at].matches('\n').count() + 1;
    let mut i = 0;
    while i < text.len() {
        if code[i] || text[i] != b'[' {
            i += 1;
            continue;
        }
        let Some(close) = closing_bracket(text, &code, i) else {
            i += 1;
            continue;
        };
        let label = &prose[i + 1..close];
        match text.get(close + 1) {
            Some(b'(') => {
                let end = prose[close..].find(')').map_or(text.len(), |at| close + at);
                let dest = prose[close + 2..end]
                    .split_whitespace()
                    .next()
                    .unwrap_or("");
                found.links.push(Link {
                    line: line_of(i),
                    dest: dest.to_owned(),
                });
                i = end;
                continue;
            }
            Some(b'[') => {
                let end = prose[close + 1..]
                    .find(']')
                    .map_or(text.len(), |at| close + 1 + at);
                let reference = &prose[close + 2..end];
                let reference = if reference.is_empty() {
                    label
                } else {
                    reference
                };
                found.undefined.push((line_of(i), reference.to_owned()));
                i = end;
                continue;
            }
            _ => {
                // A shortcut reference, or brackets that are only text: either way a
                // reader sees brackets unless the label has a definition.
                if !label.contains('[') {
                    found.undefined.push((line_of(i), label.to_owned()));
                }
            }
        }
        i = close + 1;
    }
    found
        .undefined
        .retain(|(_, label)| !definitions.contains_key(&label_key(label)));
    found
}

/// `path` with its `.` and `..` parts resolved; `None` when it leaves the checkout.
fn normalized(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// Whether `path` (under `target/doc/`) names a page `cargo doc` writes for this
/// workspace's crates: a module's `index.html`, or an item's `<kind>.<Name>.html`, with an
/// optional anchor. Whether the item exists is rustdoc's check: the crate's build turns
/// these links into intra-doc links in the docs it renders (see `build.rs`).
fn is_a_doc_page(path: &str) -> bool {
    let (path, _anchor) = path.split_once('#').unwrap_or((path, ""));
    let Some(rest) = path.strip_prefix("target/doc/redis_patterns/") else {
        return false;
    };
    let (modules, file) = rest.rsplit_once('/').unwrap_or(("", rest));
    let module_ok = modules
        .split('/')
        .all(|m| m.is_empty() || m.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
    let file_ok = file == "index.html"
        || file
            .strip_suffix(".html")
            .and_then(|f| f.split_once('.'))
            .is_some_and(|(kind, name)| {
                [
                    "struct", "enum", "trait", "fn", "constant", "type", "macro", "static",
                ]
                .contains(&kind)
                    && !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
    module_ok && file_ok
}

/// Every link of the README and of `docs/` can be followed in a checkout: a file link
/// goes to a file or folder that exists (and its `#anchor` to a heading of that page), an
/// API item to the page `cargo doc` writes (`target/doc/…`; the crate is not published
/// yet), never to docs.rs or to the repository's host; every reference has a definition.
#[test]
fn every_link_of_the_readme_and_docs_resolves_in_a_checkout() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = read("Cargo.toml");
    let repository = manifest
        .lines()
        .find_map(|l| l.strip_prefix("repository = \""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("Cargo.toml names the repository");
    let pages: HashMap<String, Links> = linked_pages()
        .into_iter()
        .map(|page| {
            let links = links_of(&read(&page));
            (page, links)
        })
        .collect();
    let mut wrong = Vec::new();
    let mut api_links = 0;
    for (page, links) in &pages {
        for (line, label) in &links.undefined {
            wrong.push(format!("{page}:{line}: [{label}] has no definition"));
        }
        let folder = Path::new(page).parent().unwrap().to_str().unwrap();
        for Link { line, dest } in &links.links {
            let at = format!("{page}:{line}: {dest}");
            if dest.starts_with("https://docs.rs/redis-patterns")
                || dest.starts_with("https://docs.rs/redis_patterns")
            {
                wrong.push(format!(
                    "{at}: docs.rs has no page of the unpublished crate; link the page \
                     `cargo doc` writes (target/doc/redis_patterns/…)"
                ));
                continue;
            }
            if dest.starts_with(repository) {
                wrong.push(format!(
                    "{at}: the repository's host; link the file relatively"
                ));
                continue;
            }
            if dest.contains("://") || dest.starts_with("mailto:") {
                continue;
            }
            if dest.contains("::") {
                wrong.push(format!(
                    "{at}: a Rust path, which only rustdoc follows; link the page `cargo doc` \
                     writes (target/doc/redis_patterns/…)"
                ));
                continue;
            }
            let (path, fragment) = dest.split_once('#').unwrap_or((dest, ""));
            let (target, headings) = if path.is_empty() {
                (page.clone(), Some(&links.headings))
            } else {
                let Some(target) = normalized(&format!("{folder}/{path}")) else {
                    wrong.push(format!("{at}: outside the checkout"));
                    continue;
                };
                if target.starts_with("target/") {
                    api_links += 1;
                    if !is_a_doc_page(&format!("{target}#{fragment}")) {
                        wrong.push(format!(
                            "{at}: not a page `cargo doc` writes for redis_patterns"
                        ));
                    }
                    continue;
                }
                if !root.join(&target).exists() {
                    wrong.push(format!("{at}: no file {target}"));
                    continue;
                }
                (target.clone(), pages.get(&target).map(|l| &l.headings))
            };
            if fragment.is_empty() {
                continue;
            }
            match headings {
                Some(headings) if headings.iter().any(|h| h == fragment) => {}
                Some(_) => wrong.push(format!("{at}: {target} has no heading #{fragment}")),
                None => wrong.push(format!("{at}: an anchor in {target}, which is no page")),
            }
        }
    }
    wrong.sort();
    assert!(
        wrong.is_empty(),
        "{} links cannot be followed in a checkout:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    // The README names the crate's API throughout.
    assert!(api_links >= 50, "{api_links} links to API items");
}

/// Whether this run is CI's (`CI` set, as `.ci/test` sets it), where a test never skips.
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|ci| !matches!(ci.as_str(), "" | "0" | "false"))
}

/// The first fenced `sh` block after the README's heading `heading`.
fn sh_block_after(heading: &str) -> String {
    let readme = read("README.md");
    let section = &readme[readme
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no `{heading}` in the README"))..];
    let block = &section[section.find("```sh\n").expect("a sh block") + "```sh\n".len()..];
    block[..block.find("```").expect("the block's end")].to_owned()
}

/// Writes an executable shell script.
fn write_script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The quick start's run commands, run as a reader pastes them, reach the server they
/// start and no other, and stop it; when that server does not start, the tour has nothing
/// to reach. A TCP listener holds every port the commands name, as another server would;
/// `redis-server` is the one the tests run, and `cargo` stands for the tour: it writes one
/// key through `REDIS_URL` with redis-cli, as the tour's first call writes.
#[test]
fn the_quick_start_reaches_only_the_server_it_starts() {
    use std::net::TcpListener;
    use std::process::Command;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let block = sh_block_after("## Quick start");
    assert!(block.contains("cargo run --example tour"), "{block}");
    if !Command::new("redis-cli")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        let how = "the quick start needs redis-cli (Debian's redis-tools, which redis-server \
                   brings), and none is on the PATH";
        assert!(!in_ci(), "{how}");
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "\nskipped the quick start's test: {how}");
        return;
    }
    let work = std::env::temp_dir().join(format!("rp-quick-start-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let (real, dead) = (work.join("real"), work.join("dead"));
    std::fs::create_dir_all(&real).unwrap();
    std::fs::create_dir_all(&dead).unwrap();
    let tour = r#"[ "$*" = "run --example tour" ] || exit 64
printf '%s\n' "$REDIS_URL" >"$QUICK_START_OUT/url"
case $REDIS_URL in
  redis+unix://*) set -- -s "${REDIS_URL#redis+unix://}" ;;
  *) set -- -u "$REDIS_URL" ;;
esac
redis-cli "$@" SET quick-start:probe 1 >"$QUICK_START_OUT/reply" 2>&1
"#;
    for shims in [&real, &dead] {
        write_script(&shims.join("cargo"), tour);
    }
    // By its full path: the shim's own name comes first on the PATH.
    let server = crate::server::server_bin();
    let server = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|folder| folder.join(&server))
        .find(|path| !server.contains('/') && path.is_file())
        .map_or(server.clone(), |path| path.display().to_string());
    write_script(
        &real.join("redis-server"),
        &format!("exec '{server}' \"$@\"\n"),
    );
    // A server that dies at start-up, as a daemon whose parent has already exited 0 does.
    write_script(&dead.join("redis-server"), "exit 0\n");

    // Something on every TCP port the commands name, counting who connects.
    let mut ports: Vec<u16> = block
        .split(|c: char| c.is_whitespace() || c == ':' || c == '/')
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0] == "--port" || w[0] == "127.0.0.1" || w[0] == "localhost")
        .filter_map(|w| w[1].parse().ok())
        .filter(|&port| port != 0)
        .collect();
    ports.sort_unstable();
    ports.dedup();
    let reached = Arc::new(AtomicUsize::new(0));
    let mut listeners = Vec::new();
    for port in &ports {
        let listener = TcpListener::bind(("127.0.0.1", *port))
            .unwrap_or_else(|e| panic!("the quick start names port {port}, which is taken: {e}"));
        let reached = Arc::clone(&reached);
        let held = listener.try_clone().unwrap();
        std::thread::spawn(move || {
            for stream in held.incoming() {
                if stream.is_ok() {
                    reached.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        listeners.push(listener);
    }

    let run = |shims: &Path| {
        let out = work.join(format!(
            "{}-out",
            shims.file_name().unwrap().to_str().unwrap()
        ));
        std::fs::create_dir_all(&out).unwrap();
        let path = format!("{}:{}", shims.display(), std::env::var("PATH").unwrap());
        let status = Command::new("bash")
            .args(["-c", &block])
            .env("PATH", path)
            .env("TMPDIR", &work)
            .env("QUICK_START_OUT", &out)
            .current_dir(&work)
            .output()
            .unwrap();
        let url = std::fs::read_to_string(out.join("url")).unwrap_or_default();
        let reply = std::fs::read_to_string(out.join("reply")).unwrap_or_default();
        (status, url.trim().to_owned(), reply.trim().to_owned())
    };

    let (output, url, reply) = run(&real);
    let said = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "the tour reached a server the quick start did not start, at {url}"
    );
    assert_eq!(reply, "OK", "the tour reached no server at {url:?}: {said}");
    // Its server is stopped and its folder deleted.
    let socket = url
        .strip_prefix("redis+unix://")
        .unwrap_or_else(|| panic!("{url}: not a socket of the quick start's own"));
    assert!(
        !Path::new(socket).parent().unwrap().exists(),
        "{socket}: the quick start's folder is left behind"
    );

    let (output, url, reply) = run(&dead);
    let said = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert_ne!(
        reply, "OK",
        "with no server of its own, the tour still wrote, to {url}: {said}"
    );
    assert_eq!(reached.load(Ordering::SeqCst), 0, "{url}: {said}");
    drop(listeners);
    std::fs::remove_dir_all(&work).unwrap();
}

/// The minimum Rust version the README's quick start states is Cargo.toml's `rust-version`.
#[test]
fn the_readme_states_the_rust_version_of_cargo_toml() {
    let manifest = read("Cargo.toml");
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("Cargo.toml's rust-version");
    let readme = read("README.md");
    let quick_start = &readme[readme.find("\n## Quick start\n").unwrap()..];
    let quick_start = &quick_start[..quick_start[1..].find("\n## ").unwrap()];
    assert!(
        quick_start.contains(&format!("Rust {version} or newer")),
        "the quick start does not say `Rust {version} or newer`:\n{quick_start}"
    );
}

/// While the crate is not on crates.io, every `cargo install` the docs show installs from
/// a checkout (`--path`) or the repository (`--git`): one from the registry cannot work.
#[test]
fn every_install_line_works_before_the_crate_is_published() {
    let readme = read("README.md");
    if !readme.contains("The crate is not on crates.io yet") {
        return;
    }
    let mut files: Vec<String> = linked_pages();
    files.extend(
        [
            "Cargo.toml",
            "codegen/Cargo.toml",
            "codegen/src/lib.rs",
            "codegen/src/main.rs",
        ]
        .map(String::from),
    );
    let mut wrong = Vec::new();
    for file in &files {
        // Lines joined, so that a command wrapped over two lines reads whole.
        let text = read(file)
            .lines()
            .map(|l| l.trim_start_matches(['/', '!', '#', ' ']))
            .collect::<Vec<_>>()
            .join(" ");
        for (at, _) in text.match_indices("cargo install") {
            let command: String = text[at..].chars().take(60).collect();
            let command = command.split(['`', ')', ';']).next().unwrap();
            if !command.contains("--path") && !command.contains("--git") {
                wrong.push(format!("{file}: {command}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "installs from crates.io, where the crate is not yet:\n{}",
        wrong.join("\n")
    );
}
