# Sourced by real-apiserver/control-plane.sh and real-cluster/node.sh: how each picks loopback
# ports and waits for the servers it starts. The sourcing script defines `fail MESSAGE [NAME]`
# (exits, with NAME's log) and the associative array `pids` (component name -> pid) first.

# A loopback port nothing listens on (a random one that refuses a connection), below the kernel's
# ephemeral range: a port in that range can be taken between this check and the bind by the local
# end of any outgoing connection (another control plane's apiserver talking to its etcd made etcd's
# bind fail with "address already in use"). Never one handed out earlier by this script.
# `free_port NAME` sets the variable NAME (not a subshell, so that the ports handed out are kept).
ephemeral_low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ "$ephemeral_low" -gt 11000 ] 2>/dev/null || fail "the ephemeral port range starts at $ephemeral_low: no room below it"
taken_ports=" "
free_port() {
  local port
  for _ in $(seq 200); do
    port=$((10000 + (RANDOM * 32768 + RANDOM) % (ephemeral_low - 10000)))
    case $taken_ports in *" $port "*) continue ;; esac
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      taken_ports="$taken_ports$port "
      printf -v "$1" '%s' "$port"
      return
    fi
  done
  fail "no free loopback port found"
}

# `wait_for NAME SECONDS CHECK...`: polls CHECK every 0.2 s until it succeeds, at most SECONDS s,
# while the component NAME runs; fails (with NAME's log) if NAME exits or time runs out.
wait_for() {
  local name=$1 seconds=$2
  shift 2
  local deadline=$(($(date +%s) + seconds))
  until "$@" >/dev/null 2>&1; do
    kill -0 "${pids[$name]}" 2>/dev/null || fail "$name exited during start-up" "$name"
    [ "$(date +%s)" -lt "$deadline" ] || fail "$name was not ready within ${seconds}s" "$name"
    sleep 0.2
  done
}
