#!/usr/bin/env bash
# Checks shadow inside a podman container started as the README says, on an image made here
# (no registry needed): a minimal Debian root filesystem from debootstrap, cached under
# /var/tmp, imported with podman import. It prints `shadow doctor` with podman's default options
# (which fail) and with the documented ones (which pass), then runs a command in the jail and
# `shadow diff --stat` as root and as a user of the container.
# Usage (as root): packaging/container/check.sh PATH/TO/static/shadow   (make container-check)
set -euo pipefail
bin=$(realpath "${1:?usage: check.sh PATH/TO/shadow (the static binary of make release)}")
cache=${SHADOW_ROOTFS_CACHE:-/var/tmp/shadow-container}
tarball=$cache/bookworm-minbase.tar
image=localhost/shadow-check
# The options the README documents for podman.
documented=(--security-opt seccomp=unconfined --security-opt 'unmask=/proc/*')

fail() { echo "container-check: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "run as root: podman import and debootstrap need it"

missing=()
command -v podman >/dev/null || missing+=(podman)
command -v debootstrap >/dev/null || missing+=(debootstrap)
# Options of this machine, not of the jail: crun refuses a host whose cgroup v2 hierarchy still
# holds controllers beside v1 ones (hybrid), runc does not; and where podman may not raise
# its limits (no CAP_SYS_RESOURCE), the container keeps this shell's.
machine=()
if grep -qs . /sys/fs/cgroup/unified/cgroup.controllers; then
  command -v runc >/dev/null || missing+=(runc)
  machine+=(--runtime runc)
fi
capeff=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
if (((16#$capeff >> 24 & 1) == 0)); then # CAP_SYS_RESOURCE
  nproc=$(ulimit -Hu)
  [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ] && nproc=32768
  machine+=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit "nproc=$nproc:$nproc")
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "container-check: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -s "$tarball" ]; then
  # Debian's mirror as apt is configured to reach it.
  mirror=$(grep -rhoE 'https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null | head -1 | tr -d ' ')
  mirror=${mirror:-http://deb.debian.org/debian}
  echo "container-check: debootstrap --variant=minbase bookworm from $mirror (once; cached in $tarball)"
  mkdir -p "$cache"
  rm -rf "$cache/rootfs"
  debootstrap --variant=minbase bookworm "$cache/rootfs" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
    fail "debootstrap failed: see $cache/debootstrap.log"
  tar -C "$cache/rootfs" -c . >"$tarball.tmp" && mv "$tarball.tmp" "$tarball"
  rm -rf "$cache/rootfs"
fi
podman image exists "$image" || podman import -q "$tarball" "$image" >/dev/null

in_container() { podman run --rm "${machine[@]}" -v "$bin:/usr/local/bin/shadow:ro" "$@"; }

echo "== podman run $image shadow doctor   (podman's default options)"
if out=$(in_container "$image" shadow doctor 2>&1); then
  echo "$out"
  fail "doctor passed with podman's default options: nothing left to check"
fi
echo "$out"
grep -q '^shadow doctor: .*, in a podman container' <<<"$out" || fail "doctor did not run, or did not see the container"
echo
echo "== podman run ${documented[*]} $image shadow doctor"
in_container "${documented[@]}" "$image" shadow doctor || fail "doctor fails with the documented options"

run_and_diff='mkdir -p "$HOME/p" && cd "$HOME/p" && shadow run -- sh -c "echo hi > f" && shadow diff --stat && test ! -e f'
echo
echo "== as root in the container: shadow run -- sh -c 'echo hi > f'; shadow diff --stat"
out=$(in_container "${documented[@]}" "$image" sh -c "$run_and_diff" 2>&1) || fail "as root: $out"
echo "$out"
grep -q '1 file changed, 1 insertion' <<<"$out" || fail "as root: the diff does not show f"
echo
echo "== as user dev in the container: the same"
out=$(in_container "${documented[@]}" "$image" sh -c "useradd -m dev && su dev -c '$run_and_diff'" 2>&1) || fail "as a user: $out"
echo "$out"
grep -q '1 file changed, 1 insertion' <<<"$out" || fail "as a user: the diff does not show f"
echo
echo "container-check: ok (podman $(podman version -f '{{.Client.Version}}'), options: ${documented[*]})"
