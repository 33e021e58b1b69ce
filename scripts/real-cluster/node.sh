#!/usr/bin/env bash
# Starts a real single-node Kubernetes cluster on this machine, for tests: containerd (its own
# config, state and socket under a private directory), the control plane of
# scripts/real-apiserver/control-plane.sh (etcd, kube-apiserver, kube-controller-manager), the
# scheduler, a kubelet, and the kubernetes-sigs/agent-sandbox controller with its Sandbox CRD; the
# pause and agent images of scripts/real-cluster/images.sh are imported into containerd. Pods get
# a CNI bridge on a private subnet with no default route: nothing a pod sends leaves the machine.
#
#   scripts/real-cluster/node.sh up [--dir DIR] [--keep]
#   scripts/real-cluster/node.sh down DIR      # restore the host after an `up` killed by SIGKILL
#   scripts/real-cluster/node.sh check         # only the requirements (root, packages, cgroups)
#   scripts/real-cluster/node.sh restart NAME DIR [--down SECONDS]
#                                              # NAME (containerd or kubelet) of the
#                                              # node running in DIR stopped, kept down SECONDS
#                                              # (default 0), started again; prints its new pid
#
# `up` prints one JSON line on stdout when the node is Ready and untainted:
#   {"dir":…,"server":…,"kubeconfig":…,"node":…,"images":{"agent":…,"pause":…,"agentRegistry":…,
#    "agentRegistryImage":…},
#    "agentSandboxVersion":…,"pids":{…}}
# then serves until its standard input reaches EOF, SIGINT/SIGTERM, or a component exits; then it
# stops everything and leaves the host as it found it: processes (every one in the node's own
# cgroup, which holds the components, the containerd shims and the pods), mounts under DIR, the
# cgroups it made, the sysctls the kubelet changes (saved before, restored after), iptables and
# ip6tables (each table the node changed is restored from iptables-save taken before; tables it
# created are flushed and removed), the bridge and the node's address, CNI state, and DIR itself
# (unless --keep). A later `up` cleans up after an earlier one that was killed before it could.
#
# `restart` (the fault tests) stops one component and has the running `up` start it again with
# the same command line (scripts/lib/restart.sh: through files in DIR/control, the running
# script told to expect the exit first); a component that exits without being asked still ends
# the node.
#
# Root only. One node at a time on a host (a lock in /run): a second `up` waits for the first.
# It fails, never skips, with the reason and what to install when it cannot run.
#
# Binaries and images: scripts/real-cluster/build.sh (built into the cache the first time, with
# a progress line; PAPERCLIP_NODE_NO_BUILD=1 refuses to build and fails instead).
#
# Environment: PAPERCLIP_NODE_SUBNET (default 10.213.0.0/24: the pods), PAPERCLIP_NODE_IP
# (default 10.213.255.1: the kubelet's address, a /32 on the loopback interface, which the kubelet
# accepts as a node address where it refuses 127.0.0.1; the API server reaches the kubelet there,
# and the pods, with no route but their subnet's, cannot).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
NODE_NAME=paperclip-test-node
BRIDGE=pcbr0
CGROUP_NAME=paperclip-node
LOCK=/run/paperclip-real-node.lock
LAST=/run/paperclip-real-node.dir
SUBNET=${PAPERCLIP_NODE_SUBNET:-10.213.0.0/24}
NODE_IP=${PAPERCLIP_NODE_IP:-10.213.255.1}
# Host paths used whatever the config says (the CNI library's cache, the kubelet's device-plugin
# socket and container log links, containerd's shim sockets, libmount's utab): removed after
# when they were not there before.
HOST_PATHS="/var/lib/cni /var/lib/kubelet /var/log/containers /var/log/pods /run/containerd /var/run/netns /run/netns /run/mount"
SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward net.ipv6.conf.all.forwarding net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables net.ipv4.conf.all.route_localnet"

usage() { echo "usage: $0 up [--dir DIR] [--keep] | $0 down DIR | $0 check" >&2; exit 2; }
say() { echo "node.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# --- the cgroup hierarchies -----------------------------------------------------------------
# v1: every mounted hierarchy (/sys/fs/cgroup/<controller>, and the cgroup2 one of a hybrid
# setup, where runc makes the containers' cgroups too); v2: /sys/fs/cgroup itself.
cgroup_v2() { [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; }
hierarchies() {
  if cgroup_v2; then
    echo /sys/fs/cgroup
  else
    awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/self/mounts
  fi
}
# The hierarchy whose cgroup.procs track the node's processes.
tracking_hierarchy() {
  if cgroup_v2; then echo /sys/fs/cgroup; else
    awk '$3 == "cgroup" && $4 ~ /(^|,)freezer(,|$)/ { print $2; exit }' /proc/self/mounts
  fi
}

# Every pid in the node's cgroup subtree.
node_pids() {
  local track
  track=$(tracking_hierarchy)
  [ -d "$track/$CGROUP_NAME" ] || return 0
  find "$track/$CGROUP_NAME" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -un
}

# Kills every process in the node's cgroup (frozen first on v1, so none forks meanwhile) and
# removes the node's cgroups, deepest first, in every hierarchy.
kill_cgroup_and_remove() {
  local track pids h
  track=$(tracking_hierarchy)
  if [ -n "$track" ] && [ -d "$track/$CGROUP_NAME" ]; then
    if cgroup_v2; then
      [ -f "$track/$CGROUP_NAME/cgroup.kill" ] && echo 1 >"$track/$CGROUP_NAME/cgroup.kill" 2>/dev/null || true
    else
      echo FROZEN >"$track/$CGROUP_NAME/freezer.state" 2>/dev/null || true
    fi
    for _ in $(seq 100); do
      pids=$(node_pids)
      [ -z "$pids" ] && break
      # shellcheck disable=SC2086
      kill -KILL $pids 2>/dev/null || true
      cgroup_v2 || echo THAWED >"$track/$CGROUP_NAME/freezer.state" 2>/dev/null || true
      sleep 0.1
    done
    [ -z "$(node_pids)" ] || say "processes left in the node's cgroup: $(node_pids | tr '\n' ' ')"
  fi
  for h in $(hierarchies); do
    [ -d "$h/$CGROUP_NAME" ] || continue
    for _ in $(seq 50); do
      find "$h/$CGROUP_NAME" -depth -type d -exec rmdir {} \; 2>/dev/null || true
      [ -d "$h/$CGROUP_NAME" ] || break
      sleep 0.1
    done
    [ -d "$h/$CGROUP_NAME" ] && say "could not remove the cgroup $h/$CGROUP_NAME"
  done
  return 0
}

# --- restoring the host ---------------------------------------------------------------------
restore_iptables() {
  local tool=$1 saved=$2 table current
  command -v "$tool-save" >/dev/null 2>&1 || return 0
  [ -f "$saved" ] || return 0
  # (the chains and rules of one table, without counters and comments)
  table_of() { awk -v t="*$2" '$0 == t { on = 1; next } on && /^COMMIT/ { exit } on && !/^#/ { sub(/ \[[0-9]+:[0-9]+\]$/, ""); print }' "$1"; }
  current=$(mktemp)
  "$tool-save" >"$current" 2>/dev/null || true
  for table in $(sed -n 's/^\*//p' "$current"); do
    if grep -qx "\*$table" "$saved"; then
      if [ "$(table_of "$current" "$table")" != "$(table_of "$saved" "$table")" ]; then
        "$tool-restore" -T "$table" <"$saved" || say "$tool-restore of the $table table failed"
      fi
    else
      "$tool" -t "$table" -F 2>/dev/null || true
      "$tool" -t "$table" -X 2>/dev/null || true
    fi
  done
  rm -f "$current"
}

# Undoes everything `up` did to the host, from what it saved in DIR/host. Safe to run twice.
teardown() {
  local dir=$1 host=$1/host name value target
  kill_cgroup_and_remove
  # Mounts under DIR (overlay rootfs, shm, projected volumes, netns), deepest first.
  if command -v findmnt >/dev/null 2>&1; then
    for _ in 1 2 3; do
      targets=$(findmnt -rn -o TARGET | awk -v d="$dir/" 'index($0, d) == 1' | sort -r)
      [ -z "$targets" ] && break
      for target in $targets; do umount "$target" 2>/dev/null || umount -l "$target" 2>/dev/null || true; done
    done
    targets=$(findmnt -rn -o TARGET | awk -v d="$dir/" 'index($0, d) == 1')
    [ -z "$targets" ] || say "mounts left under $dir: $targets"
  fi
  ip link del "$BRIDGE" 2>/dev/null || true
  [ -f "$host/node-ip" ] && ip addr del "$(cat "$host/node-ip")/32" dev lo 2>/dev/null || true
  if [ -f "$host/sysctl" ]; then
    while read -r name value; do
      [ "$(sysctl -n "$name" 2>/dev/null)" = "$value" ] || sysctl -qw "$name=$value" >/dev/null 2>&1 || say "could not restore $name=$value"
    done <"$host/sysctl"
  fi
  restore_iptables iptables "$host/iptables"
  restore_iptables ip6tables "$host/ip6tables"
  # iptables over nf_tables cannot remove a table it created (only empty it): nft can.
  if [ -f "$host/nft-tables" ] && command -v nft >/dev/null 2>&1; then
    nft list tables 2>/dev/null | while read -r _ family table; do
      grep -qx "table $family $table" "$host/nft-tables" || nft delete table "$family" "$table" 2>/dev/null || true
    done
  fi
  # Host paths that containerd, the CNI library and the kubelet use whatever their config says.
  for path in $HOST_PATHS; do
    if [ -f "$host/absent$(echo "$path" | tr / _)" ]; then rm -rf "$path"; fi
  done
  rm -f /var/lib/cni/results/paperclip-node-* 2>/dev/null || true
  find /var/log/containers -maxdepth 1 -lname "$dir/*" -delete 2>/dev/null || true
  [ "$(cat "$LAST" 2>/dev/null)" = "$dir" ] && rm -f "$LAST"
  return 0
}

# --- requirements: fail with what to install ----------------------------------------------------
requirements() {
  [ "$(id -u)" = 0 ] || die "must run as root (it starts containerd and a kubelet, and changes cgroups, mounts, iptables and sysctls); run it with sudo"
  need=()
  for pair in containerd:containerd runc:runc ctr:containerd iptables:iptables iptables-save:iptables \
    ip:iproute2 findmnt:util-linux setpriv:util-linux flock:util-linux openssl:openssl curl:curl; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
  done
  # (what the images are made of: scripts/real-cluster/images.sh)
  [ -x /bin/busybox ] && /bin/busybox --list >/dev/null 2>&1 || need+=(busybox-static)
  [ -x /usr/bin/tini-static ] || need+=(tini)
  [ -x /bin/dash ] || need+=(dash)
  command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || need+=(gcc)
  [ -n "$(find /usr/lib -name libc.a -print -quit 2>/dev/null)" ] || need+=(libc6-dev)
  for plugin in bridge host-local loopback; do
    [ -x "/usr/lib/cni/$plugin" ] || { need+=(containernetworking-plugins); break; }
  done
  if [ ${#need[@]} -gt 0 ]; then
    die "missing: apt-get install $(printf '%s\n' "${need[@]}" | sort -u | tr '\n' ' ')"
  fi
  grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || die "the kernel has no overlay filesystem (containerd's overlayfs snapshotter needs it)"
  if cgroup_v2; then
    for c in cpu memory pids; do
      grep -qw "$c" /sys/fs/cgroup/cgroup.controllers || die "cgroup v2 without the $c controller"
    done
  else
    for c in cpu cpuacct cpuset memory pids freezer; do
      awk -v c="$c" '$3 == "cgroup" && $4 ~ "(^|,)" c "(,|$)" { found = 1 } END { exit !found }' /proc/self/mounts ||
        die "the cgroup v1 hierarchy $c is not mounted under /sys/fs/cgroup"
    done
  fi
}

# The control plane of a node whose script was killed stops by itself (its stdin closes); in case
# it did not, it is stopped by the pid saved in DIR/host/pids (if that pid still runs the script).
stop_control_plane() {
  local name pid
  [ -f "$1/host/pids" ] || return 0
  while read -r name pid; do
    [ "$name" = control-plane ] || continue
    { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -q "control-plane.sh up --dir $1/" || continue
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done <"$1/host/pids"
}

if [ "${1:-}" = check ]; then
  requirements
  exit 0
fi

# shellcheck source=../lib/restart.sh
source "$here/../lib/restart.sh"

if [ "${1:-}" = restart ]; then
  [ $# -eq 3 ] || { [ $# -eq 5 ] && [ "$4" = --down ]; } || usage
  [ "$(id -u)" = 0 ] || die "must run as root"
  [ -d "$3/host" ] || die "$3 is not the directory of a node (no host/ in it)"
  case "$2" in
    containerd | kubelet) request_restart "$3/control" "$2" "${5:-0}" ;;
    *) die "restart: $2 is not a component that restarts (containerd, kubelet)" ;;
  esac
  exit 0
fi

if [ "${1:-}" = down ]; then
  [ $# -eq 2 ] || usage
  [ "$(id -u)" = 0 ] || die "must run as root"
  [ -d "$2/host" ] || die "$2 is not the directory of a node (no host/ in it)"
  dir=$(cd "$2" && pwd)
  exec 7>"$LOCK"
  flock 7
  stop_control_plane "$dir"
  teardown "$dir"
  rm -rf "$dir"
  exit 0
fi

[ "${1:-}" = up ] || usage
shift
dir="" keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) usage ;;
  esac
done

requirements

# --- binaries and images --------------------------------------------------------------------
if [ "${PAPERCLIP_NODE_NO_BUILD:-}" = 1 ]; then
  built=$("$here/build.sh" --check)
else
  built=$("$here/build.sh")
fi
KUBE_BIN="" AGENT_SANDBOX_BIN="" AGENT_SANDBOX_CRDS="" AGENT_SANDBOX_VERSION="" IMAGES_DIR="" AGENT_IMAGE="" PAUSE_IMAGE=""
AGENT_REGISTRY="" AGENT_REGISTRY_IMAGE=""
while IFS='=' read -r key value; do
  case "$key" in
    KUBE_BIN | AGENT_SANDBOX_BIN | AGENT_SANDBOX_CRDS | AGENT_SANDBOX_VERSION | IMAGES_DIR | AGENT_IMAGE | PAUSE_IMAGE | AGENT_REGISTRY | AGENT_REGISTRY_IMAGE) printf -v "$key" '%s' "$value" ;;
  esac
done <<<"$built"
for b in kubelet kube-scheduler kubectl; do [ -x "$KUBE_BIN/$b" ] || die "$KUBE_BIN/$b is missing"; done

# --- one node at a time; clean up after one that was killed ---------------------------------------
exec 7>"$LOCK"
if ! flock -n 7; then
  say "another node is running on this host; waiting for it to stop (at most 15 min)"
  flock -w 900 7 || die "another node held $LOCK for 15 min"
fi
if [ -f "$LAST" ]; then
  previous=$(cat "$LAST")
  if [ -d "$previous/host" ]; then
    say "cleaning up after the node in $previous, which was stopped before it could"
    stop_control_plane "$previous"
    teardown "$previous"
    rm -rf "$previous"
  fi
  rm -f "$LAST"
fi
! ip link show "$BRIDGE" >/dev/null 2>&1 || die "the interface $BRIDGE exists already (a node not stopped cleanly? run: ip link del $BRIDGE)"
ip -4 addr show | grep -q "inet ${NODE_IP}/" && die "$NODE_IP is already an address of this host (set PAPERCLIP_NODE_IP)"
if ip -4 route show | grep -v '^default' | grep -q "^${SUBNET%%.*}\.${SUBNET#*.}" 2>/dev/null; then
  die "the pod subnet $SUBNET is routed on this host already (set PAPERCLIP_NODE_SUBNET)"
fi

if [ -z "$dir" ]; then
  dir=$(mktemp -d /tmp/paperclip-node.XXXXXX)
else
  mkdir -p "$dir"
fi
dir=$(cd "$dir" && pwd)
chmod 755 "$dir"
mkdir -p "$dir/host" "$dir/logs" "$dir/containerd" "$dir/cni/net.d" "$dir/cni/ipam" "$dir/kubelet" "$dir/pod-logs"
echo "$dir" >"$LAST"

# --- the host as it was -------------------------------------------------------------------------
for name in $SYSCTLS; do
  value=$(sysctl -n "$name" 2>/dev/null) && echo "$name $value"
done >"$dir/host/sysctl"
iptables-save >"$dir/host/iptables" 2>/dev/null || true
command -v ip6tables-save >/dev/null 2>&1 && { ip6tables-save >"$dir/host/ip6tables" 2>/dev/null || true; }
command -v nft >/dev/null 2>&1 && { nft list tables >"$dir/host/nft-tables" 2>/dev/null || true; }
for path in $HOST_PATHS; do
  [ -e "$path" ] || touch "$dir/host/absent$(echo "$path" | tr / _)"
done

# --- processes --------------------------------------------------------------------------------
declare -A pids=()
stopping=0
stop_all() {
  [ "$stopping" = 1 ] && return
  stopping=1
  local name pid
  for name in stdin-watch agent-sandbox-controller kube-scheduler kubelet containerd; do
    pid=${pids[$name]:-}
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
  done
  for name in agent-sandbox-controller kube-scheduler kubelet containerd stdin-watch; do
    pid=${pids[$name]:-}
    [ -z "$pid" ] && continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  # The pods and the containerd shims (they outlive containerd) go with the node's cgroup.
  teardown "$dir"
  if [ -n "${CONTROL_PLANE_PID:-}" ]; then
    exec 6>&-
    for _ in $(seq 300); do kill -0 "$CONTROL_PLANE_PID" 2>/dev/null || break; sleep 0.1; done
    kill -TERM "$CONTROL_PLANE_PID" 2>/dev/null || true
    wait "$CONTROL_PLANE_PID" 2>/dev/null || true
  fi
  if [ "$keep" = 0 ]; then rm -rf "$dir"; fi
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
  say "$1"
  if [ -n "${2:-}" ] && [ -f "$dir/logs/$2.log" ]; then
    echo "--- last lines of $2.log ---" >&2
    tail -n 40 "$dir/logs/$2.log" >&2
  fi
  exit 1
}

# The node's cgroup: every process it starts (and every container) is under it, so that stopping
# finds them all by their cgroup, shims and pods included.
track=$(tracking_hierarchy)
[ -n "$track" ] || fail "no cgroup hierarchy to track the node's processes in"
for h in $(hierarchies); do
  mkdir -p "$h/$CGROUP_NAME" "$h/$CGROUP_NAME/host"
  if [ -f "$h/cpuset.cpus" ]; then
    for sub in "$h/$CGROUP_NAME" "$h/$CGROUP_NAME/host"; do
      cat "$h/cpuset.cpus" >"$sub/cpuset.cpus"
      cat "$h/cpuset.mems" >"$sub/cpuset.mems"
    done
  fi
done
if cgroup_v2; then
  for c in cpu cpuset memory pids io hugetlb; do
    grep -qw "$c" /sys/fs/cgroup/cgroup.controllers && echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
    grep -qw "$c" /sys/fs/cgroup/cgroup.controllers && echo "+$c" >"/sys/fs/cgroup/$CGROUP_NAME/cgroup.subtree_control" 2>/dev/null || true
  done
fi

# Each component dies with this script even if it is SIGKILLed (parent-death signal), and runs in
# the node's cgroup (all v1 hierarchies).
start() {
  local name=$1
  shift
  (
    # Not the host lock (fd 7; the containerd shims would hold it past the node) nor the control
    # plane's stdin (fd 6).
    exec 6>&- 7>&-
    for h in $(hierarchies); do echo "$BASHPID" >"$h/$CGROUP_NAME/host/cgroup.procs" 2>/dev/null || true; done
    exec setpriv --pdeathsig KILL -- "$@"
  ) >>"$dir/logs/$name.log" 2>&1 </dev/null &
  pids[$name]=$!
}

# free_port and wait_for.
# shellcheck source=../lib/start-up.sh
source "$here/../lib/start-up.sh"

# --- network: the kubelet's address and the pods' bridge ----------------------------------------
ip addr add "$NODE_IP/32" dev lo || fail "could not add $NODE_IP/32 to the loopback interface"
echo "$NODE_IP" >"$dir/host/node-ip"
cat >"$dir/cni/net.d/10-paperclip-node.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "paperclip-node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": false,
      "ipam": { "type": "host-local", "ranges": [[{ "subnet": "$SUBNET" }]], "dataDir": "$dir/cni/ipam" }
    }
  ]
}
JSON

# --- containerd ---------------------------------------------------------------------------------
c=$dir/containerd
sock=$c/containerd.sock
cat >"$c/config.toml" <<TOML
version = 2
root = "$c/root"
state = "$c/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$c/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # This VM's capability bounding set lacks CAP_SYS_RESOURCE: without this, runc fails every pod
  # sandbox writing /proc/self/oom_score_adj.
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$c/runc"
        BinaryName = "$(command -v runc)"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni/net.d"
    max_conf_num = 1
TOML
start_containerd() { start containerd containerd --config "$c/config.toml"; }
start_containerd
ctr_() { ctr --address "$sock" -n k8s.io "$@" 7>&-; }
wait_for containerd 60 ctr_ version
for image in pause agent; do
  ctr_ images import "$IMAGES_DIR/$image.tar" >>"$dir/logs/images.log" 2>&1 || fail "could not import the $image image" images
done
# The list read whole first: `ctr … | grep -q` under pipefail fails when grep exits at its match
# before ctr has written the following lines (SIGPIPE).
images=$(ctr_ images ls -q) || fail "could not list containerd's images" images
grep -qx "$AGENT_IMAGE" <<<"$images" || fail "the agent image $AGENT_IMAGE is not in containerd after the import" images
grep -qx "$AGENT_REGISTRY_IMAGE" <<<"$images" || fail "the agent image's registry name $AGENT_REGISTRY_IMAGE is not in containerd after the import" images
grep -qx "$PAUSE_IMAGE" <<<"$images" || fail "the pause image $PAUSE_IMAGE is not in containerd after the import" images

# --- the control plane (one recipe: scripts/real-apiserver/control-plane.sh) ----------------------
# It runs until its stdin (a FIFO whose write end only this script holds, on fd 6) closes.
mkfifo "$dir/control-plane.in"
KUBE_BIN_DIR=$KUBE_BIN "$here/../real-apiserver/control-plane.sh" up --dir "$dir/control-plane" \
  --crd "$AGENT_SANDBOX_CRDS/agents.x-k8s.io_sandboxes.yaml" \
  --controllers node-lifecycle-controller,root-ca-cert-publisher,ttl-after-finished-controller,pod-garbage-collector-controller \
  --apiserver-flag --kubelet-preferred-address-types=InternalIP \
  <"$dir/control-plane.in" >"$dir/control-plane.out" 2>"$dir/logs/control-plane.log" 7>&- &
CONTROL_PLANE_PID=$!
echo "control-plane $CONTROL_PLANE_PID" >>"$dir/host/pids"
exec 6>"$dir/control-plane.in"
line=""
deadline=$(($(date +%s) + 300))
until line=$(head -n 1 "$dir/control-plane.out") && [ -n "$line" ]; do
  kill -0 "$CONTROL_PLANE_PID" 2>/dev/null || fail "the control plane did not start" control-plane
  [ "$(date +%s)" -lt "$deadline" ] || fail "the control plane was not ready within 300 s" control-plane
  sleep 0.2
done
case "$line" in
  '{'*) ;;
  *) fail "the control plane did not start: $line" control-plane ;;
esac
# (the JSON line has no nested objects before "pids": the keys are read by pattern)
json_field() { printf '%s' "$line" | grep -o "\"$1\":\"[^\"]*\"" | head -n 1 | cut -d'"' -f4; }
server=$(json_field server)
kubeconfig=$(json_field kubeconfig)
[ -n "$server" ] && [ -f "$kubeconfig" ] || fail "unexpected answer from control-plane.sh: $line"
kubectl_() { "$KUBE_BIN/kubectl" --kubeconfig "$kubeconfig" --cache-dir "$dir/kubectl-cache" "$@" 6>&- 7>&-; }

# --- scheduler, kubelet, agent-sandbox controller -------------------------------------------------
start kube-scheduler "$KUBE_BIN/kube-scheduler" --kubeconfig "$kubeconfig" --leader-elect=false \
  --bind-address 127.0.0.1 --secure-port 0 --profiling=false

free_port kubelet_port
cat >"$dir/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: "$NODE_IP"
port: $kubelet_port
readOnlyPort: 0
healthzPort: 0
# No kubelet client certificate on the API server: anonymous, allowed, reachable only on this
# host (an address on the loopback interface).
authentication:
  anonymous: { enabled: true }
  webhook: { enabled: false }
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP_NAME
failCgroupV1: false
containerRuntimeEndpoint: unix://$sock
imageServiceEndpoint: unix://$sock
podLogsDirectory: $dir/pod-logs
resolvConf: ""
staticPodPath: ""
registerNode: true
# The tests' disk may be fuller than a node's defaults allow: evict and collect images only when
# it is nearly full.
evictionHard: { memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%", imagefs.inodesFree: "1%" }
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
imageMinimumGCAge: 87600h
serializeImagePulls: false
failSwapOn: false
logging: { format: text }
YAML
start_kubelet() {
  start kubelet "$KUBE_BIN/kubelet" --config "$dir/kubelet/config.yaml" --kubeconfig "$kubeconfig" \
    --root-dir "$dir/kubelet/root" --cert-dir "$dir/kubelet/pki" --hostname-override "$NODE_NAME" \
    --node-ip "$NODE_IP" --v=1
}
start_kubelet

start agent-sandbox-controller "$AGENT_SANDBOX_BIN" --kubeconfig "$kubeconfig" --leader-elect=false \
  --metrics-bind-address=0 --health-probe-bind-address=0

node_ready() {
  local out
  out=$(kubectl_ get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.spec.taints}')
  [ "$out" = "True " ]
}
wait_for kubelet 120 node_ready
kill -0 "${pids[agent-sandbox-controller]}" 2>/dev/null || fail "the agent-sandbox controller exited" agent-sandbox-controller
kill -0 "${pids[kube-scheduler]}" 2>/dev/null || fail "the scheduler exited" kube-scheduler

# --- ready ----------------------------------------------------------------------------------------
exec 3<&0
setpriv --pdeathsig KILL -- cat <&3 >/dev/null 6>&- 7>&- &
pids[stdin-watch]=$!
exec 3<&-

printf '{"dir":"%s","server":"%s","kubeconfig":"%s","node":"%s","images":{"agent":"%s","pause":"%s","agentRegistry":"%s","agentRegistryImage":"%s"},"agentSandboxVersion":"%s","pids":{"containerd":%s,"controlPlane":%s,"kubeScheduler":%s,"kubelet":%s,"agentSandboxController":%s}}\n' \
  "$dir" "$server" "$kubeconfig" "$NODE_NAME" "$AGENT_IMAGE" "$PAUSE_IMAGE" "$AGENT_REGISTRY" "$AGENT_REGISTRY_IMAGE" "$AGENT_SANDBOX_VERSION" \
  "${pids[containerd]}" "$CONTROL_PLANE_PID" "${pids[kube-scheduler]}" "${pids[kubelet]}" "${pids[agent-sandbox-controller]}"
say "node $NODE_NAME ready at $server (admin kubeconfig $kubeconfig); stops at EOF on stdin or Ctrl-C"

# What `restart` may stop (scripts/lib/restart.sh).
mkdir -p "$dir/control"
for name in containerd kubelet; do echo "${pids[$name]}" >"$dir/control/$name.pid"; done
start_again() { "start_$1"; }

set +e
while :; do
  wait -n "${pids[stdin-watch]}" "${pids[containerd]}" "${pids[kube-scheduler]}" "${pids[kubelet]}" "${pids[agent-sandbox-controller]}" "$CONTROL_PLANE_PID"
  if ! kill -0 "${pids[stdin-watch]}" 2>/dev/null; then
    exit 0
  fi
  kill -0 "${pids[kube-scheduler]}" 2>/dev/null && kill -0 "${pids[agent-sandbox-controller]}" 2>/dev/null &&
    kill -0 "$CONTROL_PLANE_PID" 2>/dev/null && restart_expected "$dir/control" "${pids[stdin-watch]}" containerd kubelet || break
done
for name in containerd kube-scheduler kubelet agent-sandbox-controller; do
  kill -0 "${pids[$name]}" 2>/dev/null || { say "$name exited"; tail -n 20 "$dir/logs/$name.log" >&2; }
done
kill -0 "$CONTROL_PLANE_PID" 2>/dev/null || { say "the control plane exited"; tail -n 20 "$dir/logs/control-plane.log" >&2; }
exit 1
