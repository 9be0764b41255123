#!/usr/bin/env bash
# Build the book into _build/html from the committed notebook outputs (nothing is executed).
# Warnings are errors (-W), unresolved references too (-n).
source "$(dirname "$0")/env.sh"
jupyter-book build . --all -W -n --keep-going "$@"
echo "book: $root/_build/html/index.html"
