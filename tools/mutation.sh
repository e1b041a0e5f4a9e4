#!/bin/sh
# Mutation testing of one core package (not in CI): tools/mutation.sh PACKAGE [--sample N] [--seed S] [--list]
# See docs/mutation.md. Runs from the repository root with the project's virtual environment.
set -e
cd "$(dirname "$0")/.."
[ -f .venv/bin/activate ] && . .venv/bin/activate
exec python tools/mutation.py "$@"
