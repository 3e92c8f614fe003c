#!/bin/sh
# The slow burn's sensitivity tables (bench/RESULTS.md): bench/sensitivity.py.
#   bench/sensitivity.sh [BUILD] [SECONDS] [TABLES]
exec python3 "$(dirname "$0")/sensitivity.py" "${1:-build}" "${2:-300}" "${3:-}"
