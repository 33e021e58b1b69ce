#!/usr/bin/env bash
# Builds everything the real test node (scripts/real-cluster/node.sh) runs, into the cache outside
# the repository that scripts/real-apiserver/build.sh uses, each piece keyed by its version:
#
#   kube-$KUBE_VERSION/bin                the control plane and kubelet, kube-scheduler, kubectl
#                                         (scripts/real-apiserver/build.sh --node: one scratch
#                                         module, one build)
#   agent-sandbox-$AGENT_SANDBOX_VERSION  sigs.k8s.io/agent-sandbox's controller, built with its own
#                                         go.mod (it pins k8s.io/* v0.36, not the node's v0.37), and
#                                         its CRDs (k8s/crds of the module)
#   images-<hash>                         the pause and agent images (images.sh), keyed by a hash of
#                                         the recipe and of the Debian packages they are made from
#
# Prints, when everything is there, shell assignments on stdout (one a line):
#   KUBE_BIN=… AGENT_SANDBOX_BIN=… AGENT_SANDBOX_CRDS=… IMAGES_DIR=… AGENT_IMAGE=… AGENT_REGISTRY=…
#   AGENT_REGISTRY_IMAGE=… PAUSE_IMAGE=…
# Each piece that is missing is built first, with a progress line on stderr saying what and
# about how long it takes.
#
#   scripts/real-cluster/build.sh           # build what is missing, print the assignments
#   scripts/real-cluster/build.sh --check   # print them if all is built, else exit 3 (never builds)
#
# Environment: as scripts/real-apiserver/build.sh (KUBE_VERSION, PAPERCLIP_KUBE_CACHE,
# KUBE_BUILD_JOBS), AGENT_SANDBOX_VERSION (default v1.0.1; v0.5.0 also resolves) and
# PAPERCLIP_KEEP_GO_CACHE (scripts/lib/go-scratch.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

cache_root=${PAPERCLIP_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/paperclip-sandbox}
jobs=${KUBE_BUILD_JOBS:-1}
asb_version=${AGENT_SANDBOX_VERSION:-v1.0.1}
asb_dir="$cache_root/agent-sandbox-$asb_version"
missing=()

# Scratch Go caches for whatever gets built (scripts/lib/go-scratch.sh).
if [ "$check" = 0 ]; then
  . "$here/../lib/go-scratch.sh"
  go_scratch_caches "$cache_root"
fi

# --- Kubernetes binaries ----------------------------------------------------------------------
if kube_bin=$("$here/../real-apiserver/build.sh" --node --check 2>/dev/null); then :; else
  [ "$check" = 1 ] && missing+=("the Kubernetes binaries (scripts/real-apiserver/build.sh --node)")
fi
if [ "$check" = 0 ] && [ -z "${kube_bin:-}" ]; then
  kube_bin=$("$here/../real-apiserver/build.sh" --node)
fi

# --- agent-sandbox controller -----------------------------------------------------------------
asb_complete() {
  [ -f "$asb_dir/COMPLETE" ] && [ -x "$asb_dir/bin/agent-sandbox-controller" ] &&
    [ -f "$asb_dir/crds/agents.x-k8s.io_sandboxes.yaml" ]
}
if ! asb_complete; then
  if [ "$check" = 1 ]; then
    missing+=("the agent-sandbox controller $asb_version")
  else
    command -v go >/dev/null 2>&1 || { echo "real-cluster/build.sh: the Go toolchain (go) is required to build the agent-sandbox controller" >&2; exit 1; }
    mkdir -p "$asb_dir"
    exec 8>"$asb_dir/.lock"
    flock 8
    if ! asb_complete; then
      start=$(date +%s)
      echo "real-cluster/build.sh: building sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller $asb_version (go build -p=$jobs; about 2.5 min, cached in $asb_dir)" >&2
      rm -rf "$asb_dir/bin" "$asb_dir/crds" "$asb_dir/partial"
      mkdir -p "$asb_dir/partial"
      # `go install pkg@version` builds with the module's own go.mod (it has no replace directives).
      (cd "$asb_dir" && GOBIN="$asb_dir/partial" GOFLAGS=-trimpath go install -p="$jobs" \
        "sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller@$asb_version")
      module_dir=$(cd "$asb_dir" && go mod download -json "sigs.k8s.io/agent-sandbox@$asb_version" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
      [ -f "$module_dir/k8s/crds/agents.x-k8s.io_sandboxes.yaml" ] ||
        { echo "real-cluster/build.sh: no k8s/crds/agents.x-k8s.io_sandboxes.yaml in sigs.k8s.io/agent-sandbox@$asb_version" >&2; exit 1; }
      mkdir -p "$asb_dir/crds"
      cp "$module_dir"/k8s/crds/*.yaml "$asb_dir/crds/"
      chmod 644 "$asb_dir"/crds/*.yaml
      mv "$asb_dir/partial" "$asb_dir/bin"
      { echo "sigs.k8s.io/agent-sandbox $asb_version"; go version; echo "built in $(($(date +%s) - start)) s"; } >"$asb_dir/COMPLETE"
      echo "real-cluster/build.sh: built the agent-sandbox controller in $(($(date +%s) - start)) s" >&2
    fi
    exec 8>&-
  fi
fi

# --- images -----------------------------------------------------------------------------------
# Keyed by the recipe and by the packages the files come from.
packages=$(dpkg-query -W busybox-static tini dash tar findutils libc6 2>/dev/null || true)
images_key=$(cat "$here/images.sh" "$here/pause.c" <(printf '%s' "$packages") | sha256sum | cut -c1-16)
images_dir="$cache_root/images-$images_key"
images_complete() {
  [ -f "$images_dir/images.env" ] && [ -f "$images_dir/agent.tar" ] && [ -f "$images_dir/pause.tar" ]
}
if ! images_complete; then
  if [ "$check" = 1 ]; then
    missing+=("the pause and agent images")
  else
    echo "real-cluster/build.sh: building the pause and agent images from this machine's files (a few seconds, cached in $images_dir)" >&2
    "$here/images.sh" "$images_dir.partial"
    rm -rf "$images_dir"
    mv "$images_dir.partial" "$images_dir"
  fi
fi

if [ ${#missing[@]} -gt 0 ]; then
  printf 'real-cluster/build.sh: not built yet: %s. Run scripts/real-cluster/build.sh (after the control plane build, about 5 min; from nothing, about 30 min on 2 cores)\n' \
    "$(IFS=';'; echo "${missing[*]}" | sed 's/;/, /g')" >&2
  exit 3
fi

echo "KUBE_BIN=$kube_bin"
echo "AGENT_SANDBOX_VERSION=$asb_version"
echo "AGENT_SANDBOX_BIN=$asb_dir/bin/agent-sandbox-controller"
echo "AGENT_SANDBOX_CRDS=$asb_dir/crds"
echo "IMAGES_DIR=$images_dir"
cat "$images_dir/images.env"
