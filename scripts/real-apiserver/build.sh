#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and etcd from the Go module proxy into a cache
# outside the repository, keyed by the Kubernetes release, and prints the directory holding the
# binaries. With --node it also builds the node's binaries of the same release into the same
# directory: kubelet, kube-scheduler and kubectl (scripts/real-cluster). A cache that is complete
# is reused at once.
#
# The scratch module requires k8s.io/kubernetes at one release and pins every staging module
# (k8s.io/api, k8s.io/apiserver, ...) that upstream's go.mod replaces with a local path to the
# matching v0.x.y. etcd is the go.etcd.io/etcd/server/v3 release that this Kubernetes release
# requires, built in the same module so that it shares the module graph and the build cache.
#
#   scripts/real-apiserver/build.sh            # build if needed, print the bin directory
#   scripts/real-apiserver/build.sh --node     # the same, with kubelet, kube-scheduler, kubectl
#   scripts/real-apiserver/build.sh --check    # print it if built, else exit 3 (never builds)
#   KUBE_VERSION=v1.37.2 KUBE_BUILD_JOBS=2 scripts/real-apiserver/build.sh
#
# Environment: KUBE_VERSION (default v1.37.2), PAPERCLIP_KUBE_CACHE (default
# ~/.cache/paperclip-sandbox), KUBE_BUILD_JOBS (go build -p, default 1: ~2 GiB of memory),
# PAPERCLIP_KEEP_GO_CACHE (scripts/lib/go-scratch.sh).
set -euo pipefail

kube_version=${KUBE_VERSION:-v1.37.2}
cache_root=${PAPERCLIP_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/paperclip-sandbox}
jobs=${KUBE_BUILD_JOBS:-1}
dir="$cache_root/kube-$kube_version"
bin="$dir/bin"

check=0 node=0
for arg in "$@"; do
  case "$arg" in
    --check) check=1 ;;
    --node) node=1 ;;
    *) echo "usage: $0 [--node] [--check]" >&2; exit 2 ;;
  esac
done

control_plane_complete() {
  [ -f "$bin/COMPLETE" ] && [ -x "$bin/kube-apiserver" ] && [ -x "$bin/kube-controller-manager" ] && [ -x "$bin/etcd" ]
}
node_complete() {
  [ -f "$bin/NODE_COMPLETE" ] && [ -x "$bin/kubelet" ] && [ -x "$bin/kube-scheduler" ] && [ -x "$bin/kubectl" ]
}
complete() {
  control_plane_complete && { [ "$node" = 0 ] || node_complete; }
}

if complete; then
  echo "$bin"
  exit 0
fi
if [ "$check" = 1 ]; then
  if ! control_plane_complete; then
    echo "build.sh: kube-apiserver $kube_version is not built yet: run scripts/real-apiserver/build.sh (the first build takes 20-35 min on 2 cores; it is cached in $dir)" >&2
  else
    echo "build.sh: the node binaries (kubelet, kube-scheduler, kubectl) $kube_version are not built yet: run scripts/real-apiserver/build.sh --node (about 2 min after the control plane's build, 8-10 min on a cold Go build cache; cached in $bin)" >&2
  fi
  exit 3
fi

command -v go >/dev/null 2>&1 || {
  echo "build.sh: the Go toolchain (go) is required to build kube-apiserver (https://go.dev/dl, or the golang package of a recent enough distribution)" >&2
  exit 1
}

mkdir -p "$dir"
# One build at a time per cache directory; a second caller waits, then finds it complete.
exec 9>"$dir/.lock"
flock 9
if complete; then
  echo "$bin"
  exit 0
fi

# Scratch Go caches, removed when this script ends (scripts/lib/go-scratch.sh).
. "$(dirname "$0")/../lib/go-scratch.sh"
go_scratch_caches "$cache_root"

# The scratch module: one go.mod for every binary of the release, so they share the module graph
# and the build cache (written afresh for each build: `go mod tidy` is seconds on a warm module
# cache).
# `staging` is a version: Kubernetes release vX.Y.Z ships its staging modules as v0.Y.Z.
staging_version="v0.${kube_version#v1.}"
src="$dir/src"
rm -rf "$src"
mkdir -p "$src"
cd "$src"
upstream_mod=$(go mod download -json "k8s.io/kubernetes@$kube_version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
[ -f "$upstream_mod" ] || { echo "build.sh: could not download k8s.io/kubernetes@$kube_version" >&2; exit 1; }
staging=$(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/.*#\1#p' "$upstream_mod")
[ -n "$staging" ] || { echo "build.sh: no staging replacements found in k8s.io/kubernetes@$kube_version's go.mod" >&2; exit 1; }

{
  echo "module paperclipkube"
  echo
  echo "go 1.26.0"
  echo
  echo "require k8s.io/kubernetes $kube_version"
  echo
  echo "replace ("
  for m in $staging; do echo "	$m => $m $staging_version"; done
  echo ")"
} >go.mod
cat >tools.go <<'GO'
//go:build tools

package paperclipkube

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
go mod tidy
etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)

if ! control_plane_complete; then
  start=$(date +%s)
  rm -rf "$bin.partial"
  mkdir -p "$bin.partial"
  echo "build.sh: building kube-apiserver and kube-controller-manager $kube_version, etcd $etcd_version (go build -p=$jobs; about 20 min on 2 cores the first time, cached in $dir)" >&2
  go build -p="$jobs" -trimpath -o "$bin.partial/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
  go build -p="$jobs" -trimpath -o "$bin.partial/etcd" go.etcd.io/etcd/server/v3
  {
    echo "kubernetes $kube_version"
    echo "etcd $etcd_version"
    go version
    echo "built in $(($(date +%s) - start)) s"
  } >"$bin.partial/COMPLETE"
  rm -rf "$bin"
  mv "$bin.partial" "$bin"
  echo "build.sh: built in $(($(date +%s) - start)) s into $bin" >&2
fi

if [ "$node" = 1 ] && ! node_complete; then
  start=$(date +%s)
  partial="$dir/node.partial"
  rm -rf "$partial"
  mkdir -p "$partial"
  echo "build.sh: building kubelet, kube-scheduler and kubectl $kube_version (go build -p=$jobs; about 2 min after the control plane's build, 8-10 min on a cold Go build cache)" >&2
  go build -p="$jobs" -trimpath -o "$partial/" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
  rm -f "$bin/NODE_COMPLETE"
  mv -f "$partial/kubelet" "$partial/kube-scheduler" "$partial/kubectl" "$bin/"
  rmdir "$partial"
  {
    echo "kubernetes $kube_version: kubelet, kube-scheduler, kubectl"
    go version
    echo "built in $(($(date +%s) - start)) s"
  } >"$bin/NODE_COMPLETE"
  echo "build.sh: built the node binaries in $(($(date +%s) - start)) s into $bin" >&2
fi
echo "$bin"
