#!/usr/bin/env bash
# Gradescope setup: a venv built from the image's system python3 (Ubuntu
# 22.04: Python 3.10) holding only what grading needs (numpy, threadpoolctl).
# Nothing is fetched at grading time. RLCAP_VENV overrides the location (tests).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
VENV="${RLCAP_VENV:-/opt/rlcap-venv}"
if ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv python3-pip >/dev/null
fi
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$HERE/requirements-grader.txt"
chmod -R a+rX "$VENV"
# The unprivileged user the submission's code runs as (the grader also creates it on demand).
id rlcap-w0 >/dev/null 2>&1 || useradd --system --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin --user-group rlcap-w0
# The grader's own folder is Gradescope's copy of this zip: make it private, since a
# container usually cannot give the worker a mount namespace that would hide it.
chmod 700 "$HERE"
"$VENV/bin/python" -c "import numpy, threadpoolctl; print('grading venv ready: numpy', numpy.__version__)"
