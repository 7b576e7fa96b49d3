#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image (Ubuntu, as root).
# Zip this folder's setup.sh and run_autograder with a copy of the attn-tutor source tree
# in a folder named attn-tutor/ beside them; Gradescope unpacks the zip into /autograder/source.
#
#   AUTOGRADER_ROOT  where Gradescope's tree is (default /autograder; a test sets a tmp folder)
#   ATTN_VENV        where the tutor is installed (default $AUTOGRADER_ROOT/attn-venv)
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
VENV="${ATTN_VENV:-$ROOT/attn-venv}"

if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  apt-get update -q
  apt-get install -y -q python3 python3-venv python3-pip
fi
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
# torch comes with the tutor's own requirements; for the smaller CPU-only build, install it
# first from PyTorch's CPU wheel index (see the tutor's README, "Install").
"$VENV/bin/pip" install -q "$ROOT/source/attn-tutor"
"$VENV/bin/attn-tutor" --version
