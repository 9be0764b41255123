# Sourced by the other scripts: creates .venv (once per requirements.txt) and activates it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
venv="$root/.venv"
stamp="$venv/.requirements.sha256"
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "setting up $venv from requirements.txt ..."
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -r requirements.txt
    "$venv/bin/python" -m pip install --quiet --no-deps -e .
    echo "$want" > "$stamp"
fi
export PATH="$venv/bin:$PATH"
export MPLBACKEND=Agg
