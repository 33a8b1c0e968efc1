#!/bin/sh
# Installs the real MassGen (from PyPI) into its own virtualenv outside the repository, for the tests that run it
# (test/support/massgen.ts) and the vs-massgen benchmark:
#   ${MASSGEN_VENV:-${MASSGEN_BENCH_VENV:-${XDG_CACHE_HOME:-~/.cache}/massgen-rl/massgen-bench-venv}}
# MassGen pins many dependencies and pip's resolver backtracks for a long time on them, so the install goes
# through uv (itself installed from PyPI into a small side venv). Version: $MASSGEN_VERSION (default 0.1.97).
# The official `openai` Python SDK is installed explicitly, at the version MassGen 0.1.97 pins ($OPENAI_SDK_VERSION,
# default 2.2.0): tests run it against our server (test/real-model/openai-sdk-real-model.test.ts).
# Its `observability` extra (Logfire) too: a test points MassGen's own tracing at the OTLP receiver.
# Idempotent: a venv that already holds both versions and Logfire is left as it is. Needs Python 3.11+ ($PYTHON, default python3).
set -eu
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/massgen-rl"
VENV="${MASSGEN_VENV:-${MASSGEN_BENCH_VENV:-$CACHE/massgen-bench-venv}}"
VERSION="${MASSGEN_VERSION:-0.1.97}"
OPENAI_SDK_VERSION="${OPENAI_SDK_VERSION:-2.2.0}"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "MassGen needs Python 3.11+ (set PYTHON=...)")'
installed() {
  "$VENV/bin/python" -c 'import importlib.metadata as m; m.version("logfire"); print(m.version("massgen"), m.version("openai"))' 2>/dev/null
}
if [ -x "$VENV/bin/python" ] && [ "$(installed)" = "$VERSION $OPENAI_SDK_VERSION" ]; then
  echo "massgen $VERSION and openai $OPENAI_SDK_VERSION already installed in $VENV"
  exit 0
fi
PYTHON="$PYTHON" sh "$(dirname "$0")/uv-install.sh" "$VENV" "massgen[observability]==$VERSION" "openai==$OPENAI_SDK_VERSION"
"$VENV/bin/python" -W ignore -c 'import sys, massgen, openai
print("massgen", massgen.__version__, "and openai", openai.__version__, "ready in", sys.prefix)'
