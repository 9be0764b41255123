#!/usr/bin/env bash
# Run the CPU test suite: unit tests, kernel compiles for every supported GPU, notebook hygiene and
# freshness, the book build and a real browser on the built pages. GPU tests skip with their reason.
source "$(dirname "$0")/env.sh"
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing Debian's chromium for the browser test ..."
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "chromium is not installed and this user cannot apt-get it: the browser test will skip" >&2
    fi
fi
# pytest-xdist: three workers share the two cores of a CI machine, so that nvcc's builds (tests/nvcc_cache.py, cached
# in _build/nvcc-cache), the book build (once, tests/conftest.py) and the browser tests that wait overlap; a test
# file stays on one worker. GEMMLAB_TEST_WORKERS=0 runs everything in this process.
python -m pytest -n "${GEMMLAB_TEST_WORKERS:-3}" --dist loadfile "$@"
