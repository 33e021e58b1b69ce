# Sourced by the build scripts of the real control plane and node (scripts/real-apiserver/build.sh,
# scripts/real-cluster/build.sh).
#
# Go's build and module caches of a Kubernetes build take ~6 GB and are of no use once the
# binaries are cached by release, so a build uses scratch caches beside those binaries, removed
# when the script ends or is stopped: a CI machine keeps the binaries, not the Go caches.
# PAPERCLIP_KEEP_GO_CACHE=1 builds with the usual Go caches instead.

# go_scratch_caches CACHE_ROOT: points GOCACHE and GOMODCACHE at a new directory under CACHE_ROOT
# and removes it on exit; does nothing when an outer build script already did (one scratch cache
# shared by the control plane's and the node's builds) or PAPERCLIP_KEEP_GO_CACHE is set.
go_scratch_caches() {
  [ -z "${PAPERCLIP_KEEP_GO_CACHE:-}" ] && [ -z "${PAPERCLIP_GO_SCRATCH:-}" ] || return 0
  mkdir -p "$1"
  PAPERCLIP_GO_SCRATCH=$(mktemp -d "$1/go-scratch.XXXXXX")
  export PAPERCLIP_GO_SCRATCH GOCACHE="$PAPERCLIP_GO_SCRATCH/build" GOMODCACHE="$PAPERCLIP_GO_SCRATCH/mod"
  # the module cache is written read-only: make it writable to remove it
  trap 'chmod -R u+w "$PAPERCLIP_GO_SCRATCH" 2>/dev/null; rm -rf "$PAPERCLIP_GO_SCRATCH"' EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
}
