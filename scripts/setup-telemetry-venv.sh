#!/bin/sh
# Installs what the OpenTelemetry tests run for real into its own virtualenv outside the repository
# (test/support/telemetry-venv.ts): Arize Phoenix (a local OTLP receiver with its own span API), and the Python
# OpenTelemetry SDK with its OTLP/HTTP exporter and OpenInference's instrumentation of the official `openai` SDK (3.x, the version Phoenix needs; an
# instrumented agent that sends us its spans).
#   ${TELEMETRY_VENV:-${XDG_CACHE_HOME:-~/.cache}/massgen-rl/telemetry-venv}
# Through uv (scripts/uv-install.sh), as scripts/setup-massgen-venv.sh does. Idempotent: a venv that
# already holds these versions is left as it is. Needs Python 3.11+ ($PYTHON, default python3).
set -eu
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/massgen-rl"
VENV="${TELEMETRY_VENV:-$CACHE/telemetry-venv}"
PYTHON="${PYTHON:-python3}"
PINS="arize-phoenix==20.26.1 opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-http==1.45.2
openinference-instrumentation-openai==0.1.66 openai==3.57.0"
WANT="$(echo $PINS | tr ' ' '\n' | sort | tr '\n' ' ')"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Phoenix needs Python 3.11+ (set PYTHON=...)")'
installed() {
  "$VENV/bin/python" - "$@" <<'PY' 2>/dev/null
import importlib.metadata as m, sys
names = ["arize-phoenix", "opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http",
         "openinference-instrumentation-openai", "openai"]
print(" ".join(sorted(f"{n}=={m.version(n)}" for n in names)) + " ")
PY
}
if [ -x "$VENV/bin/python" ] && [ "$(installed)" = "$WANT" ]; then
  echo "the telemetry test tools are already installed in $VENV"
  exit 0
fi
# shellcheck disable=SC2086
PYTHON="$PYTHON" sh "$(dirname "$0")/uv-install.sh" "$VENV" $PINS
"$VENV/bin/python" -W ignore -c 'import sys, phoenix, opentelemetry.sdk, openinference.instrumentation.openai
print("phoenix", phoenix.__version__, "and the OpenTelemetry SDK ready in", sys.prefix)'
