#!/usr/bin/env bash
# Builds the two container images the real test node runs, from files of this machine only (no
# image registry is reachable, and none is needed), as `docker save` archives in OUT_DIR:
#
#   pause.tar  localhost/paperclip-test/pause:1  the pod sandbox: scripts/real-cluster/pause.c,
#              linked static with the system C compiler
#   agent.tar  localhost/paperclip-test/agent:1  what the provider's agent pods run: dash as
#              /bin/sh, busybox-static (the other tools), tini-static at /usr/bin/tini, GNU tar and GNU find with their
#              shared libraries (the in-pod sync scripts use `tar --no-xattrs`, `-C /proc/self/fd/9`
#              and `find -printf`, which busybox lacks), and /usr/local/bin/paperclip-agent-shim,
#              the Job backend's command (prints a line and exits 0). The same image is also
#              tagged AGENT_REGISTRY_IMAGE, the name the claude_local built-in image gets under
#              `imageRegistry: <AGENT_REGISTRY>` (the tests of issue #37 run it through that
#              rewrite, with and without a scheme; its tag must be the built-in's, which
#              crates/kubernetes/tests/real_cluster/images.rs checks)
#
#   scripts/real-cluster/images.sh OUT_DIR
#
# Needs: busybox-static, tini, dash, tar, findutils, gcc (or cc) with a static libc (libc6-dev).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: images.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)

AGENT_IMAGE=localhost/paperclip-test/agent:1
PAUSE_IMAGE=localhost/paperclip-test/pause:1
# A registry no one serves (`.invalid`): the image is imported under this name, never pulled.
AGENT_REGISTRY=registry.paperclip-test.invalid:5000/acme
AGENT_REGISTRY_IMAGE=$AGENT_REGISTRY/agent-runtime-claude:git-38d8f371722b315d2fb3bbaa512518742e33ce2f

fail() { echo "images.sh: $*" >&2; exit 1; }
[ -x /bin/busybox ] || fail "/bin/busybox is missing: apt-get install busybox-static"
/bin/busybox --list >/dev/null 2>&1 || fail "/bin/busybox is not busybox: apt-get install busybox-static"
[ -x /bin/dash ] || fail "/bin/dash is missing: apt-get install dash"
[ -x /usr/bin/tini-static ] || fail "/usr/bin/tini-static is missing: apt-get install tini"
cc=$(command -v cc || command -v gcc || true)
[ -n "$cc" ] || fail "no C compiler: apt-get install gcc"
for tool in tar find sha256sum ldd; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/paperclip-images.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Copies a dynamically linked program and every library ldd names to the same paths in ROOT.
copy_with_libs() {
  local root=$1 program=$2 dest=$3 lib
  mkdir -p "$root$(dirname "$dest")"
  cp -L "$program" "$root$dest"
  for lib in $(ldd "$program" | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
}

# One-layer `docker save` archive of ROOT named NAME (one or more names, space-separated), with
# the given JSON `config` (Env, Cmd...).
docker_archive() {
  local root=$1 name=$2 config=$3 archive=$4 dir layer_sha config_json config_sha
  dir=$work/archive.$(basename "$archive" .tar)
  mkdir -p "$dir/layer"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=gnu \
    -C "$root" -cf "$dir/layer/layer.tar" .
  layer_sha=$(sha256sum "$dir/layer/layer.tar" | cut -d' ' -f1)
  config_json=$(printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"scripts/real-cluster/images.sh"}]}' "$config" "$layer_sha")
  config_sha=$(printf '%s' "$config_json" | sha256sum | cut -d' ' -f1)
  printf '%s' "$config_json" >"$dir/$config_sha.json"
  mv "$dir/layer" "$dir/$layer_sha"
  local tags
  tags=$(printf '"%s",' $name)
  printf '[{"Config":"%s.json","RepoTags":[%s],"Layers":["%s/layer.tar"]}]' "$config_sha" "${tags%,}" "$layer_sha" >"$dir/manifest.json"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$dir" -cf "$archive.partial" .
  mv "$archive.partial" "$archive"
}

# --- pause ----------------------------------------------------------------------------------
pause_root=$work/pause
mkdir -p "$pause_root"
"$cc" -static -Os -s -o "$pause_root/pause" "$here/pause.c" ||
  fail "the C compiler could not link pause.c static: apt-get install libc6-dev"
docker_archive "$pause_root" "$PAUSE_IMAGE" '{"Entrypoint":["/pause"],"User":"65535:65535"}' "$out/pause.tar"

# --- agent ----------------------------------------------------------------------------------
r=$work/agent
mkdir -p "$r/bin" "$r/usr/bin" "$r/usr/local/bin" "$r/etc" "$r/root" "$r/proc" "$r/sys" "$r/dev" \
  "$r/workspace" "$r/home/paperclip/.cache" "$r/tmp" "$r/var/tmp"
chmod 1777 "$r/tmp" "$r/var/tmp"
cp /bin/busybox "$r/bin/busybox"
for applet in $(/bin/busybox --list); do
  case "$applet" in busybox | sh | ash | tar | find) continue ;; esac
  ln -s busybox "$r/bin/$applet"
done
cp /usr/bin/tini-static "$r/usr/bin/tini"
# /bin/sh is dash (as in Debian images): busybox's own shell runs its applets before PATH, so
# `tar` and `find` in a script would be busybox's whatever the image holds.
copy_with_libs "$r" /bin/dash /bin/dash
ln -s dash "$r/bin/sh"
copy_with_libs "$r" "$(command -v tar)" /bin/tar
copy_with_libs "$r" "$(command -v find)" /usr/bin/find
cat >"$r/usr/local/bin/paperclip-agent-shim" <<'SH'
#!/bin/sh
# The Job backend's command in the real test node's agent image: no agent runtime, one line.
echo "paperclip-agent-shim: job pod ran (run ${PAPERCLIP_RUN_ID:-unknown})"
SH
chmod 755 "$r/usr/local/bin/paperclip-agent-shim"
printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'paperclip:x:1000:1000:paperclip:/home/paperclip:/bin/sh' \
  'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >"$r/etc/passwd"
printf '%s\n' 'root:x:0:' 'paperclip:x:1000:' 'nogroup:x:65534:' >"$r/etc/group"
docker_archive "$r" "$AGENT_IMAGE $AGENT_REGISTRY_IMAGE" \
  '{"Env":["PATH=/usr/local/bin:/usr/bin:/bin","HOME=/home/paperclip"],"Cmd":["/bin/sh"],"WorkingDir":"/"}' \
  "$out/agent.tar"

printf 'AGENT_IMAGE=%s\nAGENT_REGISTRY=%s\nAGENT_REGISTRY_IMAGE=%s\nPAUSE_IMAGE=%s\n' \
  "$AGENT_IMAGE" "$AGENT_REGISTRY" "$AGENT_REGISTRY_IMAGE" "$PAUSE_IMAGE" >"$out/images.env"
