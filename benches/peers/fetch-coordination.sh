#!/bin/sh
# Installs the peers of `cargo bench --bench coordination` into ignored folders under
# benches/peers/coordination/, so their code stays out of this repository:
#
# - npm: redis-semaphore (Mutex, Semaphore), redlock and ioredis, the versions
#   package-lock.json pins, into node_modules/ (bench.mjs runs them);
# - PyPI: pottery (Redlock) and redis, the versions requirements.txt pins, into a venv,
#   venv/ (bench.py runs with its python);
# - crates.io: rslock, in a program of its own (rslock/, outside the crate's workspace),
#   built in release into rslock/target/.
#
#   sh benches/peers/fetch-coordination.sh            # all three
#   sh benches/peers/fetch-coordination.sh npm rslock # some of them: npm, pypi, rslock
#
# Needs node 20 or newer and npm, python 3.9 or newer with venv (PYTHON=<path>, by
# default /usr/bin/python3; Debian: apt-get install python3-venv), cargo, and the
# registries (or the mirrors npm, pip and cargo are set up to use). A peer that fails to
# install is reported and the others still install; the bench skips a missing peer.
set -u

here=$(cd "$(dirname "$0")" && pwd)
dest=$here/coordination
python=${PYTHON:-/usr/bin/python3}
which=${*:-npm pypi rslock}
failed=""

npm_peers() {
  command -v node >/dev/null 2>&1 || { echo "node is not installed (Debian: apt-get install nodejs)" >&2; return 1; }
  command -v npm >/dev/null 2>&1 || { echo "npm is not installed (Debian: apt-get install npm)" >&2; return 1; }
  major=$(node -p 'process.versions.node.split(".")[0]')
  [ "$major" -ge 20 ] || echo "warning: node $(node --version); bench.mjs is written for node 20 or newer" >&2
  (cd "$dest" && npm ci --no-audit --no-fund) || return 1
  for p in redis-semaphore redlock ioredis; do
    echo "$p $(cd "$dest" && node -p "require('./node_modules/$p/package.json').version"): $dest/node_modules"
  done
}

pypi_peers() {
  [ -x "$dest/venv/bin/python" ] || "$python" -m venv "$dest/venv" || {
    echo "cannot make a venv with $python (Debian: apt-get install python3-venv; or PYTHON=<path>)" >&2
    return 1
  }
  "$dest/venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$dest/requirements.txt" || return 1
  echo "pottery $("$dest/venv/bin/python" -c 'from importlib.metadata import version; print(version("pottery"))'): $dest/venv"
}

rslock_peer() {
  command -v cargo >/dev/null 2>&1 || { echo "cargo is not installed" >&2; return 1; }
  (cd "$dest/rslock" && cargo build --release --locked) || return 1
  echo "rslock: $dest/rslock/target/release/coordination-rslock"
}

for peer in $which; do
  case $peer in
    npm) npm_peers || failed="$failed npm" ;;
    pypi) pypi_peers || failed="$failed pypi" ;;
    rslock) rslock_peer || failed="$failed rslock" ;;
    *) echo "unknown peer $peer (npm, pypi or rslock)" >&2; failed="$failed $peer" ;;
  esac
done
if [ -n "$failed" ]; then
  echo "not installed:$failed" >&2
  exit 1
fi
