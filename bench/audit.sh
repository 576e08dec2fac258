#!/usr/bin/env bash
# Preflight audit cost on a real npm project (SPEC §9), as a ratio of medians, interleaved:
#   shadow verify --project DIR --format json --output /dev/null
#   vs  reading every package.json under DIR/node_modules (find | xargs cat)
# The project depends on a few big real packages; `npm install --ignore-scripts` of them gives about
# 1,500 packages. The install is cached under ${XDG_CACHE_HOME:-$HOME/.cache}/shadow-bench/, keyed by
# the package.json below, so only the first run needs the npm registry.
# Usage: bash bench/audit.sh [PATH/TO/shadow] [ROUNDS]   (needs hyperfine, jq, node and npm)
set -euo pipefail
shadow=$(realpath "${1:-bin/shadow}")
[ -x "$shadow" ] || { echo "bench/audit.sh: $shadow is not an executable (make build)" >&2; exit 1; }
for tool in hyperfine npm node; do
  command -v "$tool" >/dev/null || { echo "bench/audit.sh: $tool is not installed" >&2; exit 1; }
done

manifest='{
  "name": "shadow-bench-audit",
  "version": "1.0.0",
  "private": true,
  "devDependencies": {
    "@angular/cli": "^17.0.0",
    "@aws-sdk/client-s3": "^3.0.0",
    "@babel/core": "^7.0.0",
    "@babel/preset-env": "^7.0.0",
    "@typescript-eslint/eslint-plugin": "^7.0.0",
    "eslint": "^8.57.0",
    "jest": "^29.7.0",
    "karma": "^6.0.0",
    "lerna": "^8.0.0",
    "mocha": "^10.0.0",
    "next": "^14.0.0",
    "puppeteer": "^22.0.0",
    "react": "^18.0.0",
    "react-dom": "^18.0.0",
    "tailwindcss": "^3.0.0",
    "typescript": "^5.0.0",
    "vite": "^5.0.0",
    "webpack": "^5.0.0",
    "webpack-cli": "^5.0.0",
    "webpack-dev-server": "^5.0.0"
  }
}'

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/shadow-bench"
key=$(printf '%s' "$manifest" | sha256sum | cut -c1-16)
cached="$cache_root/audit-$key"
if [ ! -f "$cached/.complete" ]; then
  echo "installing the benchmark project into $cached (first run only)..."
  rm -rf "$cache_root"/audit-* # installs of an older package.json
  mkdir -p "$cached"
  printf '%s\n' "$manifest" >"$cached/package.json"
  (cd "$cached" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error)
  touch "$cached/.complete"
fi

# The project itself is a temporary copy (hard links where the file system allows), so the report
# and attestation that verify writes never land in the cache.
. "$(dirname "$0")/lib.sh"
bench_init audit "$shadow"
copy=$(mktemp -d "$cache_root/run.XXXXXX")
trap 'rm -rf "$copy"; chmod -R u+rwX "$work" 2>/dev/null; rm -rf "$work"' EXIT
project="$copy/project"
mkdir -p "$project"
cp -al "$cached/package.json" "$cached/package-lock.json" "$cached/node_modules" "$project/" 2>/dev/null ||
  cp -a "$cached/package.json" "$cached/package-lock.json" "$cached/node_modules" "$project/"

# node_modules/.package-lock.json lists what npm actually installed (no optional packages of other platforms).
packages=$(node -e '
const l = require(process.argv[1]);
console.log(Object.entries(l.packages).filter(([k, v]) => k.includes("node_modules/") && !v.link).length);
' "$project/node_modules/.package-lock.json")
manifests=$(find "$project/node_modules" -name package.json | wc -l)
echo "packages installed under node_modules: $packages ($manifests package.json files)"

rounds=${2:-7}
measure "audit of $packages packages vs reading each package.json" \
  true "'$shadow' verify --project '$project' --format json --output /dev/null >/dev/null 2>&1 || true" \
  true "find '$project/node_modules' -name package.json -print0 | xargs -0 cat > /dev/null" 2
print_table
