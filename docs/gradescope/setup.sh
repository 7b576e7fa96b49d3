#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image (Ubuntu, as root).
# Zip this folder's setup.sh and run_autograder with a copy of the attn-tutor source tree
# in a folder named attn-tutor/ beside them; Gradescope unpacks the zip into /autograder/source.
#
#   AUTOGRADER_ROOT  where Gradescope's tree is (default /autograder; a test sets a tmp folder)
#   ATTN_VENV        where the tutor is installed (default $AUTOGRADER_ROOT/attn-venv)
#   ATTN_TORCH_INDEX a pip index to take torch from (PyTorch's CPU-only wheel index, whose
#                    address PyTorch's install page gives), where pip's default gives a CUDA build
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
VENV="${ATTN_VENV:-$ROOT/attn-venv}"

if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  apt-get update -q
  apt-get install -y -q python3 python3-venv python3-pip
fi
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
# torch first, pinned (the tutor's README, "Install"): the tutor asks for torch>=2.2,<2.14,
# which this CPU build satisfies, so pip keeps it; a bare requirement can pull a CUDA build of
# several GB.
"$VENV/bin/pip" install -q ${ATTN_TORCH_INDEX:+--index-url "$ATTN_TORCH_INDEX"} "torch==2.13.0"
"$VENV/bin/pip" install -q "$ROOT/source/attn-tutor"
"$VENV/bin/attn-tutor" --version
