#!/bin/sh
# Mutation testing of one core package (not in CI): tools/mutation.sh PACKAGE [--jobs 2] [--sample N] [--confirm] [--list]
# See docs/mutation.md. Runs from the repository root with the project's virtual environment
# (coverage.py from the 'mutation' extra: pip install -e '.[mutation]').
set -e
cd "$(dirname "$0")/.."
[ -f .venv/bin/activate ] && . .venv/bin/activate
exec python tools/mutation.py "$@"
