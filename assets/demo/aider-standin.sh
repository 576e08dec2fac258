#!/usr/bin/env bash
# A scripted stand-in for aider, for shadow's demo and tests: it looks and behaves like aider in a
# terminal (banner, "> " prompt, replies, SEARCH/REPLACE edits, an auto-commit attempt) without any
# model, network or API key. Each request edits a file of the project it is started in; in the demo
# project the first two requests fix src/cart.js and src/format.js. "/exit" or end of input quits.
set -u

model=${AIDER_MODEL:-sonnet}
while [ $# -gt 0 ]; do
  case $1 in
    --model) model=${2:-$model}; shift ;;
    --model=*) model=${1#--model=} ;;
  esac
  shift
done

bold=$'\e[1m' dim=$'\e[2m' red=$'\e[31m' green=$'\e[32m' yellow=$'\e[33m' blue=$'\e[34m' off=$'\e[0m'
pause() { sleep "${DEMO_AGENT_DELAY:-0.2}"; }
rule() { printf '%s%s%s\n' "$dim" "────────────────────────────────────────────────────────────" "$off"; }

files=$(git ls-files 2>/dev/null | wc -l)
printf '%sAider v0.0.0-standin%s %s(scripted: no model, no network)%s\n' "$bold" "$off" "$dim" "$off"
printf 'Main model: %s with diff edit format\n' "$model"
if [ -d .git ]; then
  printf 'Git repo: .git with %d files\n' "$files"
else
  printf 'Git repo: none\n'
fi
printf 'Repo-map: using 1024 tokens, auto refresh\n'
rule

# show_edit FILE SEARCH REPLACE prints an edit block as aider does.
show_edit() {
  printf '\n%s%s%s\n' "$bold" "$1" "$off"
  printf '%s<<<<<<< SEARCH%s\n' "$red" "$off"
  [ -n "$2" ] && printf '%s\n' "$2"
  printf '%s=======%s\n' "$yellow" "$off"
  printf '%s\n' "$3"
  printf '%s>>>>>>> REPLACE%s\n\n' "$green" "$off"
}

# edit N REQUEST makes the Nth edit and prints it.
edit() {
  local n=$1 request=$2
  if [ "$n" = 1 ] && [ -f src/cart.js ] && grep -q 'sum += item.product.price;' src/cart.js; then
    printf 'The total adds each price once and ignores the quantity.\n'
    pause
    show_edit src/cart.js '      sum += item.product.price;' '      sum += item.product.price * item.quantity;'
    sed -i 's/      sum += item.product.price;/      sum += item.product.price * item.quantity;/' src/cart.js
    printf 'Applied edit to src/cart.js\n'
    return
  fi
  if [ "$n" = 2 ] && [ -f src/format.js ] && grep -q 'return "\$" + cents / 100;' src/format.js; then
    printf 'formatCents drops the cents when they are zero.\n'
    pause
    show_edit src/format.js '  return "$" + cents / 100;' '  return "$" + (cents / 100).toFixed(2);'
    sed -i 's|  return "\$" + cents / 100;|  return "$" + (cents / 100).toFixed(2);|' src/format.js
    printf 'Applied edit to src/format.js\n'
    return
  fi
  printf "I'll note that in NOTES.md.\n"
  pause
  local search=""
  [ -f NOTES.md ] && search=$(tail -n 1 NOTES.md)
  if [ -n "$search" ]; then
    show_edit NOTES.md "$search" "$search"$'\n'"- $request"
  else
    show_edit NOTES.md "" "- $request"
  fi
  printf -- '- %s\n' "$request" >>NOTES.md
  printf 'Applied edit to NOTES.md\n'
}

n=0
while :; do
  printf '%s>%s ' "$green" "$off"
  IFS= read -r line || { printf '\n'; break; }
  line=${line%$'\r'}
  case $line in
    /exit | /quit) break ;;
    "") continue ;;
    /*) printf '%sInvalid command: %s%s\n' "$red" "$line" "$off"; continue ;;
  esac
  n=$((n + 1))
  printf '\n%sThinking…%s\n' "$dim" "$off"
  pause
  edit "$n" "$line"
  msg="standin: $(printf '%s' "$line" | cut -c1-50)"
  if git add -A >/dev/null 2>&1 && git commit -qm "$msg" >/dev/null 2>&1; then
    printf 'Commit %s %s\n' "$(git rev-parse --short HEAD 2>/dev/null)" "$msg"
  else
    printf '%sUnable to commit: the repository is not writable (.git is read-only in this jail)%s\n' "$yellow" "$off"
  fi
  printf 'Tokens: %d sent, %d received.\n' $((1200 + n * 37)) $((80 + n * 11))
  rule
done
printf '%sBye.%s\n' "$blue" "$off"
