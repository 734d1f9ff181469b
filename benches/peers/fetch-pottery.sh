#!/bin/sh
# Installs pottery (PyPI; its BloomFilter is the peer of `cargo bench --bench bloom`) and
# redis-py, the versions benches/peers/pottery/requirements.txt pins, into a venv that git
# ignores, benches/peers/pottery/venv/ (benches/peers/pottery/bench.py runs with its
# python). Its code stays out of this repository.
#
#   sh benches/peers/fetch-pottery.sh
#
# Needs python 3.9 or newer with venv (PYTHON=<path>, by default /usr/bin/python3;
# Debian: apt-get install python3-venv) and PyPI (or the mirror pip is set up to use).
# The bench also runs with the venv of benches/peers/fetch-coordination.sh (same pins),
# when that one is there and this one is not.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
dest=$here/pottery
python=${PYTHON:-/usr/bin/python3}

[ -x "$dest/venv/bin/python" ] || "$python" -m venv "$dest/venv" || {
  echo "cannot make a venv with $python (Debian: apt-get install python3-venv; or PYTHON=<path>)" >&2
  exit 1
}
"$dest/venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$dest/requirements.txt"
echo "pottery $("$dest/venv/bin/python" -c 'from importlib.metadata import version; print(version("pottery"))'): $dest/venv"
