#!/usr/bin/env bash
# Starts a real Kubernetes control plane on 127.0.0.1 only: etcd, kube-apiserver (token
# authentication, RBAC) and kube-controller-manager (the namespace, garbage-collector,
# serviceaccount, resourcequota and job controllers). No scheduler, no kubelet, no nodes: pods
# are admitted and stored, never run.
#
#   scripts/real-apiserver/control-plane.sh up [--dir DIR] [--crd FILE]... [--controllers LIST]
#                                              [--apiserver-flag FLAG]...
#
# Prints one JSON line on stdout when everything is ready:
#   {"dir":…,"server":"https://127.0.0.1:PORT","kubeconfig":…,"limitedKubeconfig":…,"pids":{…}}
# `kubeconfig` is an admin (system:masters) kubeconfig; `limitedKubeconfig` authenticates as
# the user `paperclip-limited`, whom RBAC grants nothing. Both carry the CA inline.
# Each --crd FILE (one CustomResourceDefinition, YAML or JSON) is created and waited for
# (Established) before the controller manager starts, so its garbage collector watches it
# from the start.
# --controllers LIST (comma-separated) adds controllers to the controller manager's own list, and
# each --apiserver-flag FLAG (`--name=value`) is passed to kube-apiserver: scripts/real-cluster
# adds node-lifecycle-controller and root-ca-cert-publisher, and the kubelet's address type.
#
# Then it serves until its standard input reaches EOF (so it stops with the process that
# started it, however that one ends) or it gets SIGINT/SIGTERM, or a component exits; then it
# stops every process it started, by pid, and removes DIR unless --keep was given.
#
# The binaries come from $KUBE_BIN_DIR, else from scripts/real-apiserver/build.sh (which builds
# them into a cache outside the repository the first time).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
usage() { echo "usage: $0 up [--dir DIR] [--keep] [--crd FILE]... [--controllers LIST] [--apiserver-flag FLAG]..." >&2; exit 2; }
[ "${1:-}" = up ] || usage
shift
dir="" keep=0 crds=() extra_controllers="" apiserver_flags=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --crd) crds+=("$2"); shift 2 ;;
    --controllers) extra_controllers=",$2"; shift 2 ;;
    --apiserver-flag) apiserver_flags+=("$2"); shift 2 ;;
    *) usage ;;
  esac
done
for tool in openssl curl setpriv; do
  command -v "$tool" >/dev/null 2>&1 || { echo "control-plane.sh: $tool is required" >&2; exit 1; }
done
bin=${KUBE_BIN_DIR:-$("$here/build.sh")}
for b in etcd kube-apiserver kube-controller-manager; do
  [ -x "$bin/$b" ] || { echo "control-plane.sh: $bin/$b is missing (run scripts/real-apiserver/build.sh)" >&2; exit 1; }
done

if [ -z "$dir" ]; then
  dir=$(mktemp -d "${TMPDIR:-/tmp}/paperclip-control-plane.XXXXXX")
else
  mkdir -p "$dir"
fi
dir=$(cd "$dir" && pwd)
mkdir -p "$dir/pki" "$dir/logs"

# --- processes, and stopping them by pid --------------------------------------------------
declare -A pids=()
stopping=0
stop_all() {
  [ "$stopping" = 1 ] && return
  stopping=1
  # Reverse start order: the controller manager and the API server before etcd.
  for name in kube-controller-manager kube-apiserver etcd stdin-watch; do
    local pid=${pids[$name]:-}
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
  done
  for name in kube-controller-manager kube-apiserver etcd stdin-watch; do
    local pid=${pids[$name]:-}
    [ -z "$pid" ] && continue
    # Bounded: 10 s for a clean exit, then SIGKILL.
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "$keep" = 0 ]; then rm -rf "$dir"; fi
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
  echo "control-plane.sh: $1" >&2
  if [ -n "${2:-}" ] && [ -f "$dir/logs/$2.log" ]; then
    echo "--- last lines of $2.log ---" >&2
    tail -n 40 "$dir/logs/$2.log" >&2
  fi
  exit 1
}

# Each component dies with this script even if it is SIGKILLed (parent-death signal).
start() {
  local name=$1
  shift
  setpriv --pdeathsig KILL -- "$@" >"$dir/logs/$name.log" 2>&1 </dev/null &
  pids[$name]=$!
}

# free_port and wait_for.
# shellcheck source=../lib/start-up.sh
source "$here/../lib/start-up.sh"

# --- certificates and credentials ---------------------------------------------------------
pki=$dir/pki
openssl_quiet() { openssl "$@" 2>/dev/null; }
openssl_quiet req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7 \
  -subj "/CN=paperclip-test-ca" -keyout "$pki/ca.key" -out "$pki/ca.crt" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
openssl_quiet req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -subj "/CN=kube-apiserver" -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr"
printf '%s\n' \
  "basicConstraints=critical,CA:FALSE" \
  "keyUsage=critical,digitalSignature,keyEncipherment" \
  "extendedKeyUsage=serverAuth" \
  "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1" \
  >"$pki/apiserver.ext"
openssl_quiet x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
  -CAcreateserial -days 7 -extfile "$pki/apiserver.ext" -out "$pki/apiserver.crt"
# Service-account token signing key (projected tokens; the ServiceAccount admission plugin).
openssl_quiet genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$pki/sa.key"
openssl_quiet pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
for f in ca.crt apiserver.crt apiserver.key sa.key sa.pub; do
  [ -s "$pki/$f" ] || fail "openssl did not produce $f"
done
chmod 600 "$pki"/*.key

admin_token=$(openssl rand -hex 24)
limited_token=$(openssl rand -hex 24)
kcm_token=$(openssl rand -hex 24)
{
  echo "$admin_token,paperclip-admin,uid-admin,\"system:masters\""
  echo "$kcm_token,system:kube-controller-manager,uid-kcm,\"system:masters\""
  echo "$limited_token,paperclip-limited,uid-limited"
} >"$pki/tokens.csv"
chmod 600 "$pki/tokens.csv"

free_port etcd_port
free_port peer_port
free_port api_port
server="https://127.0.0.1:$api_port"
ca_data=$(base64 -w0 <"$pki/ca.crt")

kubeconfig() {
  cat <<YAML
apiVersion: v1
kind: Config
clusters:
- name: real-apiserver
  cluster:
    server: $server
    certificate-authority-data: $ca_data
users:
- name: $1
  user:
    token: $2
contexts:
- name: $1@real-apiserver
  context:
    cluster: real-apiserver
    user: $1
    namespace: default
current-context: $1@real-apiserver
YAML
}
kubeconfig paperclip-admin "$admin_token" >"$dir/admin.kubeconfig"
kubeconfig paperclip-limited "$limited_token" >"$dir/limited.kubeconfig"
kubeconfig kube-controller-manager "$kcm_token" >"$dir/kcm.kubeconfig"
chmod 600 "$dir"/*.kubeconfig

api() {
  curl -sS --fail --max-time 10 --cacert "$pki/ca.crt" -H "Authorization: Bearer $admin_token" -H "Accept: application/json" "$@"
}

# --- etcd ---------------------------------------------------------------------------------
start etcd "$bin/etcd" \
  --name paperclip-test \
  --data-dir "$dir/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" \
  --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-cluster "paperclip-test=http://127.0.0.1:$peer_port" \
  --unsafe-no-fsync \
  --log-level warn
wait_for etcd 60 curl -sS --fail --max-time 2 "http://127.0.0.1:$etcd_port/health"

# --- kube-apiserver -----------------------------------------------------------------------
start kube-apiserver "$bin/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$etcd_port" \
  --bind-address 127.0.0.1 \
  --advertise-address 127.0.0.1 \
  --secure-port "$api_port" \
  --cert-dir "$pki" \
  --tls-cert-file "$pki/apiserver.crt" \
  --tls-private-key-file "$pki/apiserver.key" \
  --client-ca-file "$pki/ca.crt" \
  --token-auth-file "$pki/tokens.csv" \
  --authorization-mode RBAC \
  --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "$pki/sa.pub" \
  --service-account-signing-key-file "$pki/sa.key" \
  --service-cluster-ip-range 10.0.0.0/24 \
  --endpoint-reconciler-type none \
  --profiling=false \
  ${apiserver_flags[@]+"${apiserver_flags[@]}"}
wait_for kube-apiserver 180 api "$server/readyz"

for crd in "${crds[@]}"; do
  case "$crd" in *.json) type=application/json ;; *) type=application/yaml ;; esac
  created=$(api -X POST -H "Content-Type: $type" --data-binary "@$crd" \
    "$server/apis/apiextensions.k8s.io/v1/customresourcedefinitions") ||
    fail "the API server refused the CustomResourceDefinition $crd"
  # (curl gets pretty-printed JSON: squeeze the white space out first)
  name=$(printf '%s' "$created" | tr -d ' \n\t' | grep -o '"metadata":{"name":"[^"]*"' | head -n 1 | cut -d'"' -f6 || true)
  [ -n "$name" ] || fail "no name in the answer to the CustomResourceDefinition $crd"
  established() {
    api "$server/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$1" | tr -d ' \n\t' |
      grep -q '"type":"Established","status":"True"'
  }
  wait_for kube-apiserver 60 established "$name"
done

# --- kube-controller-manager --------------------------------------------------------------
start kube-controller-manager "$bin/kube-controller-manager" \
  --kubeconfig "$dir/kcm.kubeconfig" \
  --bind-address 127.0.0.1 \
  --secure-port 0 \
  --leader-elect=false \
  --controllers "namespace-controller,garbage-collector-controller,serviceaccount-controller,resourcequota-controller,job-controller$extra_controllers" \
  --root-ca-file "$pki/ca.crt" \
  --concurrent-gc-syncs 5 \
  --profiling=false
# The serviceaccount controller is up once `default` has its ServiceAccount.
wait_for kube-controller-manager 120 api "$server/api/v1/namespaces/default/serviceaccounts/default"

# --- ready --------------------------------------------------------------------------------
exec 3<&0
cat <&3 >/dev/null &
pids[stdin-watch]=$!
exec 3<&-

printf '{"dir":"%s","server":"%s","kubeconfig":"%s","limitedKubeconfig":"%s","pids":{"etcd":%s,"kubeApiserver":%s,"kubeControllerManager":%s}}\n' \
  "$dir" "$server" "$dir/admin.kubeconfig" "$dir/limited.kubeconfig" \
  "${pids[etcd]}" "${pids[kube-apiserver]}" "${pids[kube-controller-manager]}"
echo "control-plane.sh: ready at $server (admin kubeconfig $dir/admin.kubeconfig); stops at EOF on stdin or Ctrl-C" >&2

# Serve until stdin closes or any component exits.
set +e
wait -n "${pids[stdin-watch]}" "${pids[etcd]}" "${pids[kube-apiserver]}" "${pids[kube-controller-manager]}"
if ! kill -0 "${pids[stdin-watch]}" 2>/dev/null; then
  exit 0
fi
for name in etcd kube-apiserver kube-controller-manager; do
  kill -0 "${pids[$name]}" 2>/dev/null || { echo "control-plane.sh: $name exited" >&2; tail -n 20 "$dir/logs/$name.log" >&2; }
done
exit 1
