#!/usr/bin/env bash
# Import and report the published data sets into OUT (default /tmp/published-reports), then, when
# BEFORE is given, compare each report.json value by value with BEFORE's (scripts/compare_reports.py).
#   bash scripts/published_reports.sh OUT [BEFORE]
# The data come from ../shared/data (DIALEVAL_SHARED_DATA); nothing of them is written into the
# repository. Run before and after a change that must not move a number.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
data="${DIALEVAL_SHARED_DATA:-$repo/../shared/data}"
out="${1:-/tmp/published-reports}"
before="${2:-}"
dialeval="${DIALEVAL:-$repo/.venv/bin/dialeval}"
py="${PY:-$repo/.venv/bin/python}"
rm -rf "$out" && mkdir -p "$out" && cd "$out"
"$dialeval" import dialogue-eval "$data/dialogue-eval/FreeTopicRound1/Combined_Batches_305hits.csv" de-run1 >/dev/null
"$dialeval" import spot-the-bot "$data/spot-the-bot" --domain dailydialog stb-dd >/dev/null
"$dialeval" import spot-the-bot "$data/spot-the-bot" --domain empathetic stb-ed >/dev/null
"$dialeval" import arena "$data/arena-judges/human.jsonl" arena-human >/dev/null
"$dialeval" import arena "$data/arena-judges/human.jsonl" arena-judged --judges "$data/arena-judges/gpt-3.5-turbo.jsonl" >/dev/null
status=0
for study in de-run1 stb-dd stb-ed arena-human arena-judged; do
  "$dialeval" report "$study" >/dev/null
  if [ -n "$before" ]; then
    "$py" "$repo/scripts/compare_reports.py" "$before/$study/report/report.json" "$study/report/report.json" | tail -5 || status=1
  fi
done
exit $status
