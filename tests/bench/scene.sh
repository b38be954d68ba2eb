# shellcheck shell=bash
# Shared by the whole-process benchmarks (run_bench.sh, compare_builds.sh); sourced, not run.
# The scene: namespaces and veth pairs with a unique tag, a work dir, a node policy that keeps
# attachment state, IPAM data and logs in that work dir, and a trap that removes all of it, also
# on failure or Ctrl-C. Then the plugin configs and one measured CNI call (bench_measure).
#
# The caller sets: ME (its name for messages), MEASURE (path of bin/bench_measure), REF (the
# reference plugins' dir, CNI_PATH of every call).

die() { echo "$ME: $*" >&2; exit 1; }

# bin_dir BUILD: absolute path of BUILD/bin, or die.
bin_dir() { (cd "$1/bin" 2>/dev/null && pwd) || die "no $1/bin (build first: cmake --build $1)"; }

# scene_open PREFIX: picks TAG (PREFIX + 4 hex digits, no link or netns by that name yet), makes WORK
# and the policy, installs the cleanup trap.
NETNS=()
LINKS=()
scene_open() {
  while :; do
    TAG=$(printf '%s%04x' "$1" $(( (RANDOM << 1 ^ $$) & 0xffff )))
    ip -o link show | grep -q ": ${TAG}" || ip netns list | grep -q "^${TAG}-" || break
  done
  WORK=$(mktemp -d -t rdmanet-bench.XXXXXX)   # in $TMPDIR when set (e.g. a tmpfs: no disk syncs)
  trap scene_close EXIT
  trap 'exit 130' INT TERM
  # Node policy for this run: attachment state, IPAM data dirs and logs live in $WORK, not
  # /var/lib, /var/log. RDMANET_STATE_DIR is what builds before the policy's stateDir read.
  printf '{"ipamDataDirs":["%s"],"logDir":"%s","stateDir":"%s/state"}\n' "$WORK" "$WORK" "$WORK" >"$WORK/policy.json"
  export RDMANET_POLICY_FILE=$WORK/policy.json RDMANET_STATE_DIR=$WORK/state
}

scene_close() {
  local ns l
  # Deleting a pod netns destroys a veth end still inside it together with its host peer.
  for ns in "${NETNS[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  for l in "${LINKS[@]}"; do ip link del "$l" 2>/dev/null || true; done
  rm -rf "$WORK"
}

# scene_netns NAME...: namespaces $TAG-NAME (one per configuration: CNI_NETNS of its calls).
scene_netns() {
  local n
  for n in "$@"; do NETNS+=("$TAG-$n"); ip netns add "$TAG-$n"; done
}

# scene_veth NAME...: veth pairs ${TAG}NAME0 / ${TAG}NAME1, both up (NAME0 is a master or a device).
scene_veth() {
  local n
  for n in "$@"; do
    LINKS+=("${TAG}${n}0")
    ip link add "${TAG}${n}0" type veth peer name "${TAG}${n}1"
    ip link set "${TAG}${n}0" up
    ip link set "${TAG}${n}1" up
  done
}

# conf NAME TYPE-SPECIFIC-JSON SUBNET: a plugin config as libcni hands it over (name and
# cniVersion injected), host-local IPAM with its own dataDir.
conf() {
  cat >"$WORK/$1.json" <<JSON
{"cniVersion":"1.0.0","name":"bench-$1",$2,
 "ipam":{"type":"host-local","subnet":"$3","dataDir":"$WORK/ipam-$1"}}
JSON
}

# conf_emb NAME TYPE-SPECIFIC-JSON RANGE: the same with rdmanet's embedded IPAM, own data_dir.
conf_emb() {
  cat >"$WORK/$1.json" <<JSON
{"cniVersion":"1.0.0","name":"bench-$1",$2,
 "ipam":{"type":"rdmanet-ipam","range":"$3","data_dir":"$WORK/ripam-$1"}}
JSON
}

# cni_call CFG PLUGIN VERB ID: one plugin process in netns $TAG-CFG; prints "wall_us cpu_us".
cni_call() {
  local cfg=$1 plugin=$2 verb=$3 id=$4 m
  m=$(CNI_COMMAND=$verb CNI_CONTAINERID=$id CNI_NETNS=/run/netns/$TAG-$cfg CNI_IFNAME=net1 \
      CNI_PATH=$REF CNI_ARGS='' "$MEASURE" -i "$WORK/$cfg.json" -o "$WORK/out" -- "$plugin")
  check "$cfg $verb" "$m"
}

# check WHAT "wall cpu code": prints "wall cpu", or the plugin's output and exits on failure.
check() {
  local what=$1 wall cpu code
  read -r wall cpu code <<<"$2"
  if [[ $code -ne 0 ]]; then
    echo "$ME: $what failed (exit $code):" >&2
    cat "$WORK/out" >&2
    exit 1
  fi
  echo "$wall $cpu"
}

# add_del CFG PLUGIN ID [VERB VERB]: ADD then DEL (or the two verbs given); prints "wall cpu" of
# the pair (microseconds).
add_del() {
  local a d
  a=$(cni_call "$1" "$2" "${4:-ADD}" "$3") || exit 1
  d=$(cni_call "$1" "$2" "${5:-DEL}" "$3") || exit 1
  echo "$a $d" | awk '{print $1+$3, $2+$4}'
}

# median FILE COLUMN / p90 FILE COLUMN (microseconds in, milliseconds out)
median() { sort -n -k"$2","$2" "$1" | awk -v c="$2" '{v[NR]=$c} END {m = NR % 2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "%.3f", m/1000}'; }
p90() { sort -n -k"$2","$2" "$1" | awk -v c="$2" '{v[NR]=$c} END {i = int(NR*0.9 + 0.999); if (i < 1) i = 1; printf "%.3f", v[i]/1000}'; }
