#!/bin/sh
# Builds bullmq-official's side of `cargo bench --bench bullmq`: the program in
# benches/peers/bullmq-rs/ (outside the crate's workspace, so the crate's dependencies
# never include bullmq-official), in release, into benches/peers/bullmq-rs/target/, which
# git ignores. Cargo.lock there pins every crate (--locked); their code stays out of this
# repository.
#
#   sh benches/peers/fetch-bullmq-rs.sh
#
# Needs cargo and crates.io (or the mirror cargo is set up to use). A first build
# compiles bullmq-official and its dependencies (tokio, redis with TLS, …): a few minutes.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
manifest=$here/bullmq-rs/Cargo.toml

command -v cargo >/dev/null 2>&1 || { echo "cargo is not installed (https://rustup.rs)" >&2; exit 1; }
cargo build --release --locked --manifest-path "$manifest"
version=$(sed -n '/^name = "bullmq-official"$/{n;s/^version = "\(.*\)"$/\1/p;}' "$here/bullmq-rs/Cargo.lock")
echo "bullmq-official $version: $here/bullmq-rs/target/release/bench-bullmq-official"
