#!/bin/sh
# Installs BullMQ (the version package.json pins, with ioredis) into
# benches/peers/bullmq/node_modules/, which git ignores: `cargo bench --bench bullmq` runs
# benches/peers/bullmq/bench.mjs with it. Its code stays out of this repository.
#
#   sh benches/peers/fetch-bullmq.sh
#
# Needs node 20 or newer and npm (Debian: apt-get install nodejs npm), and the npm
# registry (npm's own settings, such as `npm config set registry <url>`, pick a mirror).
# package-lock.json pins every package; `npm ci` installs exactly those.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
dest=$here/bullmq

command -v node >/dev/null 2>&1 || { echo "node is not installed (Debian: apt-get install nodejs)" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || { echo "npm is not installed (Debian: apt-get install npm)" >&2; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || echo "warning: node $(node --version); the bench is written for node 20 or newer" >&2

cd "$dest"
if [ -f package-lock.json ]; then
  npm ci --no-audit --no-fund
else
  npm install --no-audit --no-fund
fi
echo "bullmq $(node -p 'require("./node_modules/bullmq/package.json").version'): $dest/node_modules"
