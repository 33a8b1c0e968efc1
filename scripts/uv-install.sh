#!/bin/sh
# Installs packages into a virtualenv outside the repository through uv (itself installed from PyPI into a small
# side venv under the cache once), creating the venv first when needed:
#   sh scripts/uv-install.sh VENV PACKAGE...
# Used by scripts/setup-massgen-venv.sh and scripts/setup-telemetry-venv.sh. Python: $PYTHON (default python3).
set -eu
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/massgen-rl"
PYTHON="${PYTHON:-python3}"
VENV="$1"
shift
mkdir -p "$CACHE"
[ -x "$CACHE/uv-venv/bin/uv" ] || { "$PYTHON" -m venv "$CACHE/uv-venv" && "$CACHE/uv-venv/bin/pip" install -q uv; }
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$CACHE/uv-venv/bin/uv" pip install --compile-bytecode --python "$VENV/bin/python" "$@"
