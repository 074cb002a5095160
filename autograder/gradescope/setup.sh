#!/usr/bin/env bash
# Gradescope setup: a venv built from the image's system python3 (Ubuntu
# 22.04: Python 3.10) holding only what grading needs. Nothing is fetched at
# grading time.
set -euo pipefail
VENV=/opt/rlcap-venv
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv python3-pip >/dev/null
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -r /autograder/source/requirements-grader.txt
chmod -R a+rX "$VENV"
"$VENV/bin/python" -c "import numpy, threadpoolctl; print('numpy', numpy.__version__)"
