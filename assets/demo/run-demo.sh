#!/usr/bin/env bash
# Runs shadow's demo: the demo project is copied to a temporary directory (a git repository), the
# scripted demo agent runs in the jail through `shadow tui`, and the review screen opens.
# Usage: run-demo.sh PATH/TO/shadow
set -euo pipefail
shadow=$(realpath "${1:?usage: run-demo.sh PATH/TO/shadow}")
here=$(cd "$(dirname "$0")" && pwd)

work=$(mktemp -d /tmp/shadow-demo.XXXXXX)
project="$work/demo-shop"
agent="$work/agent"
cp -r "$here/project" "$project"
mkdir -p "$agent"
cp "$here/agent.sh" "$agent/demo-agent"
chmod 0755 "$agent/demo-agent"
chmod -R a+rX "$work"
(
  cd "$project"
  git init -q
  git -c user.name=demo -c user.email=demo@example.invalid add -A
  git -c user.name=demo -c user.email=demo@example.invalid commit -qm "demo-shop 0.3.1"
)
# A private state directory, so the demo never touches your own sessions.
export XDG_STATE_HOME="$work/state"

echo "shadow: $shadow ($("$shadow" version | head -1), built $(date -r "$shadow" '+%Y-%m-%d %H:%M'))"
echo "demo project: $project"
if "$shadow" tui --help >/dev/null 2>&1; then
  exec "$shadow" tui --project "$project" --ro "$agent" -- "$agent/demo-agent"
fi

# Without the app: the same three phases, one command each.
"$shadow" doctor || true
"$shadow" run --project "$project" --ro "$agent" -- "$agent/demo-agent"
"$shadow" diff --project "$project" --stat
"$shadow" diff --project "$project"
echo
echo "The host project is untouched:"
git -C "$project" status --short
echo "(clean)"
echo
again="XDG_STATE_HOME=$XDG_STATE_HOME $shadow"
echo "Next: $again review --project $project   (or $again apply --project $project --all)"
