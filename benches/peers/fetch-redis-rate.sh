#!/bin/sh
# Downloads go-redis/redis_rate (v10, the latest version the Go module proxy lists) into
# benches/peers/redis_rate/, which git ignores: `cargo bench --bench check_overhead` reads
# the `allowN` script from its lua.go there. Its code stays out of this repository.
#
#   sh benches/peers/fetch-redis-rate.sh
#
# Needs curl, unzip (or python3) and https://proxy.golang.org (GOPROXY_URL=<url> for a
# mirror that serves the same paths). Where the proxy cannot be reached, get lua.go some
# other way and run the bench with REDIS_RATE_LUA=<path>.
set -eu

module=github.com/go-redis/redis_rate/v10
proxy=${GOPROXY_URL:-https://proxy.golang.org}
here=$(cd "$(dirname "$0")" && pwd)
dest=$here/redis_rate

version=$(curl -fsS "$proxy/$module/@v/list" | grep -v -- '-' | sort -V | tail -n 1 || true)
if [ -z "$version" ]; then
  # No tagged release listed: the proxy's latest.
  version=$(curl -fsS "$proxy/$module/@latest" | sed -n 's/.*"Version":"\([^"]*\)".*/\1/p')
fi
[ -n "$version" ] || { echo "no version of $module at $proxy" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
curl -fsS -o "$tmp/module.zip" "$proxy/$module/@v/$version.zip"
prefix="$module@$version"
mkdir -p "$dest"
for file in lua.go LICENSE; do
  if command -v unzip >/dev/null 2>&1; then
    unzip -p "$tmp/module.zip" "$prefix/$file" > "$dest/$file"
  else
    python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
      "$tmp/module.zip" "$prefix/$file" > "$dest/$file"
  fi
done
echo "$version" > "$dest/VERSION"
echo "redis_rate $version: $dest/lua.go"
