# Sourced by real-cluster/node.sh: restarting one component of a running node without ending it
# (the fault tests stop a kubelet and start it again; containerd restarts too). A running script
# keeps the pid of each
# restartable component in CTL/NAME.pid (CTL is DIR/control). A restart (`node.sh restart NAME
# DIR`) first writes CTL/NAME.expect, so that the running script takes NAME's exit as asked for,
# stops NAME, waits, writes CTL/NAME.start and waits for the running script to start NAME again
# with its own command line and write the new pid. A component that exits without NAME.expect
# still ends the node, as before. The sourcing script defines `die`, `pids` and, for the running
# side, `start_again NAME` (which starts NAME as `up` did and sets pids[NAME]).

# The running side, after `wait -n` returned: starts again each of NAMES that exited with its
# exit expected, once its start is asked for (at most 600 s later; not at all once WATCH, the
# stdin watcher, is gone). Returns 1 when one of NAMES exited unasked.
restart_expected() {
  local ctl=$1 watch=$2 name deadline
  shift 2
  for name in "$@"; do
    kill -0 "${pids[$name]}" 2>/dev/null && continue
    [ -f "$ctl/$name.expect" ] || return 1
  done
  for name in "$@"; do
    kill -0 "${pids[$name]}" 2>/dev/null && continue
    wait "${pids[$name]}" 2>/dev/null
    deadline=$(($(date +%s) + 600))
    until [ -f "$ctl/$name.start" ]; do
      # (exited and not yet reaped is a zombie, which kill -0 still finds)
      grep -q '^State:[[:space:]]*[^Z]' "/proc/$watch/status" 2>/dev/null || return 0
      [ "$(date +%s)" -lt "$deadline" ] || return 1
      sleep 0.1
    done
    start_again "$name"
    echo "${pids[$name]}" >"$ctl/$name.pid.new" && mv "$ctl/$name.pid.new" "$ctl/$name.pid"
    rm -f "$ctl/$name.expect" "$ctl/$name.start"
  done
  return 0
}

# The asking side: `request_restart CTL NAME DOWN` stops NAME (SIGTERM, SIGKILL after 5 s),
# keeps it down DOWN seconds, has it started again and prints its new pid.
request_restart() {
  local ctl=$1 name=$2 down=$3 old new
  old=$(cat "$ctl/$name.pid" 2>/dev/null) || die "no $name pid in $ctl: is it running?"
  [ ! -f "$ctl/$name.expect" ] || die "$name is being restarted already"
  : >"$ctl/$name.expect"
  kill -TERM "$old" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$old" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$old" 2>/dev/null || true
  sleep "$down"
  : >"$ctl/$name.start"
  for _ in $(seq 600); do
    new=$(cat "$ctl/$name.pid" 2>/dev/null || true)
    if [ -n "$new" ] && [ "$new" != "$old" ] && [ ! -f "$ctl/$name.expect" ]; then
      echo "$new"
      return 0
    fi
    sleep 0.1
  done
  die "$name was not started again within 60 s"
}
