#!/bin/sh
# Installs the peers of benches/python/bench.py from PyPI: bullmq (BullMQ's Python port),
# rq, pottery and redis-py, the versions requirements.txt pins, into a venv that git
# ignores, benches/peers/python/venv/. Their code stays out of this repository.
#
#   sh benches/python/fetch.sh
#
# Needs python 3.9 or newer with venv (PYTHON=<path>, by default /usr/bin/python3;
# Debian: apt-get install python3-venv) and PyPI (or the mirror pip is set up to use).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
dest=$(cd "$here/../peers" && pwd)/python
python=${PYTHON:-/usr/bin/python3}

[ -x "$dest/venv/bin/python" ] || "$python" -m venv "$dest/venv" || {
  echo "cannot make a venv with $python (Debian: apt-get install python3-venv; or PYTHON=<path>)" >&2
  exit 1
}
"$dest/venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
for p in bullmq rq pottery redis; do
  echo "$p $("$dest/venv/bin/python" -c "from importlib.metadata import version; print(version('$p'))"): $dest/venv"
done
