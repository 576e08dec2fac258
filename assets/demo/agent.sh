#!/usr/bin/env bash
# shadow's scripted demo agent: behaves like a terminal coding agent (a prompt, some "thinking",
# edits to several files, a new file, a deleted file, a commit attempt) without any model or API key.
# It only touches the project it is started in.
set -u

bold=$'\e[1m' dim=$'\e[2m' red=$'\e[31m' green=$'\e[32m' yellow=$'\e[33m' blue=$'\e[34m' cyan=$'\e[36m' off=$'\e[0m'
pause() { sleep "${DEMO_AGENT_DELAY:-0.4}"; }
say() { printf '%s\n' "$*"; pause; }
step() { printf '%s●%s %s\n' "$cyan" "$off" "$*"; pause; }
edit() { printf '  %s✎ %s%s\n' "$yellow" "$1" "$off"; pause; }

[ -f src/cart.js ] || { echo "demo-agent: run me in the demo project (src/cart.js not found)" >&2; exit 1; }

printf '%s%sdemo-agent%s %s(scripted: no model, no network)%s\n' "$bold" "$blue" "$off" "$dim" "$off"
printf 'Working in %s%s%s\n\n' "$bold" "$PWD" "$off"

task="fix the cart total"
if [ -t 0 ]; then
  printf '%s>%s What should I work on? %s[enter: %s]%s ' "$green" "$off" "$dim" "$task" "$off"
  IFS= read -r answer || answer=""
  [ -n "$answer" ] && task="$answer"
fi
printf '\n%sTask:%s %s\n\n' "$bold" "$off" "$task"

step "Reading the project"
for f in package.json src/cart.js src/format.js test/cart.test.js; do
  printf '  %sread%s %s (%s lines)\n' "$dim" "$off" "$f" "$(wc -l <"$f")"
done
pause

step "Thinking"
say "  total() adds each product's price once and ignores the quantity,"
say "  and formatCents prints \$19 instead of \$19.00."

step "Editing"
sed -i 's/      sum += item.product.price;/      sum += item.product.price * item.quantity;/' src/cart.js
edit src/cart.js
sed -i 's|  return "\$" + cents / 100;|  return "$" + (cents / 100).toFixed(2);|' src/format.js
edit src/format.js

cat >src/discount.js <<'JS'
"use strict";

// applyDiscount returns total reduced by percent, rounded to whole cents.
function applyDiscount(total, percent) {
  if (percent < 0 || percent > 100) {
    throw new RangeError("percent must be between 0 and 100");
  }
  return Math.round(total * (1 - percent / 100));
}

module.exports = { applyDiscount };
JS
printf '  %s+ src/discount.js%s (new)\n' "$green" "$off"
pause

rm src/legacy.js
printf '  %s- src/legacy.js%s (unused since 0.2)\n' "$red" "$off"
pause

cat >>README.md <<'MD'

## Discounts

`applyDiscount(total, percent)` in `src/discount.js` takes a percentage off a total.
MD
edit README.md

step "Running the tests"
if command -v node >/dev/null 2>&1; then
  if node test/cart.test.js; then
    printf '  %stests pass%s\n' "$green" "$off"
  else
    printf '  %stests fail%s\n' "$red" "$off"
  fi
else
  printf '  %snode is not installed; skipping the tests%s\n' "$dim" "$off"
fi
pause

step "Committing"
if git add -A >/dev/null 2>&1 && git commit -qm "Fix cart total and price formatting" >/dev/null 2>&1; then
  say "  committed"
else
  printf '  %scould not commit: .git is read-only in this jail; shadow will show you the changes instead%s\n' "$yellow" "$off"
fi

printf '\n%sDone.%s 3 files edited, 1 added, 1 deleted.\n' "$bold" "$off"
