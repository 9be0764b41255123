#!/usr/bin/env bash
# Execute chapter notebooks in place on a machine with a GPU (default: every chapter), so their
# stored outputs come from a real run. Needs PyCUDA, nbclient and ipykernel; run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
[ $# -gt 0 ] || set -- chapters/*.ipynb
for nb in "$@"; do
    echo "executing $nb"
    python3 -c 'from nbclient.cli import main; main()' --inplace --timeout=1200 "$nb"
done
