# The arm64 suites (run_lab.sh arm64 / arm64-16k): the cross-built static plugin on Debian's arm64
# kernel, 4K or 16K pages. A binary whose LOAD segments are aligned below the kernel's page size
# does not load (SIGSEGV at exec), so the first checks are the page size and the plugin starting;
# then a macvlan attachment with the embedded IPAM through ADD, CHECK and DEL, driven as a
# container runtime drives the plugin (CNI environment, config on stdin).

A64_STATE=/run/a64-cni-state
A64_IPAM=/var/lib/cni/rdmanet/a64-ipam   # the node policy confines data_dir below /var/lib/cni/rdmanet
A64_POLICY=/run/a64-policy.json
mkdir -p "$A64_STATE"
printf '{"stateDir":"%s"}\n' "$A64_STATE" >"$A64_POLICY"

# The kernel's page size for this process's mappings (busybox has no getconf).
page_kb() { awk '/^KernelPageSize:/ {print $2; exit}' /proc/self/smaps; }
page_size_is() {
  _kb=$(page_kb)
  echo "kernel $(uname -r) $(uname -m): page size ${_kb} kB, expected $1 kB"
  [ "$_kb" = "$1" ]
}
check "arm64: $(uname -m) kernel with $(cat /lab/page_kb) kB pages" page_size_is "$(cat /lab/page_kb)"
# stdin from /dev/null: a plugin reads its config from stdin, and /init's is the console.
version_of() { CNI_COMMAND=VERSION "$1" </dev/null; }
check "arm64: rdmanet (static, aarch64) starts and answers VERSION on this kernel" \
  output_has '"supportedVersions"' version_of rdmanet
check "arm64: rdmanet-ipam starts and answers VERSION on this kernel" \
  output_has '"supportedVersions"' version_of rdmanet-ipam

# a64_call <verb> <config-json>: the plugin on the pod a64pod, interface net1.
a64_call() {
  CNI_COMMAND=$1 CNI_CONTAINERID=c-a64 CNI_NETNS=/run/netns/a64pod CNI_IFNAME=net1 \
    CNI_PATH="$BUILD_DIR/bin" RDMANET_POLICY_FILE=$A64_POLICY rdmanet <<<"$2"
}
A64_CONF='{"cniVersion":"1.0.0","name":"a64net","type":"rdmanet","mode":"macvlan","master":"a64m",'
A64_CONF=$A64_CONF'"ipam":{"type":"rdmanet-ipam","range":"10.79.0.0/24","data_dir":"'$A64_IPAM'"}}'

ip link add a64m type dummy && ip link set a64m up
ip netns add a64pod
# check runs its command in a subshell: the ADD result goes through a file.
a64_add() {
  a64_call ADD "$A64_CONF" >/tmp/a64_result || { cat /tmp/a64_result; return 1; }
  cat /tmp/a64_result
  grep -q '"10\.79\.0\.' /tmp/a64_result || { echo "(expected an address from 10.79.0.0/24)"; return 1; }
}
check "arm64: macvlan + embedded IPAM: ADD returns an address of the range" a64_add
A64_RESULT=$(cat /tmp/a64_result 2>/dev/null)
A64_ADDR=$(printf '%s' "$A64_RESULT" | grep -o '10\.79\.0\.[0-9]*/24' | head -n 1)
check "arm64: macvlan: the pod has net1 with $A64_ADDR" \
  output_has "inet $A64_ADDR" ip -n a64pod -o addr show dev net1
check "arm64: macvlan: net1 is a macvlan on a64m" output_has "macvlan" ip -n a64pod -d link show dev net1
# CHECK gets the ADD result as prevResult, as a runtime passes it.
check "arm64: macvlan: CHECK with the ADD's result passes" \
  a64_call CHECK "${A64_CONF%\}},\"prevResult\":${A64_RESULT:-null}}"
check "arm64: macvlan: DEL succeeds" a64_call DEL "$A64_CONF"
check "arm64: macvlan: the pod has no net1 after DEL" output_lacks "net1" ip -n a64pod -o link show
check "arm64: macvlan: a second DEL succeeds (idempotent)" a64_call DEL "$A64_CONF"
a64_released() {
  _out=$(rdmanetctl pool list --data-dir "$A64_IPAM" 2>&1) || { echo "$_out"; return 1; }
  echo "$_out"
  printf '%s\n' "$_out" | awk 'NF && $NF != "0" {bad = 1} END {exit bad}'
}
check "arm64: macvlan: the address is released (rdmanetctl pool list)" a64_released
ip netns del a64pod
ip link del a64m
