# rdmanet's sriov mode on a real PF driver: QEMU's emulated Intel 82576 (igb PF, igbvf VFs) with
# two VFs, driven through libcni (bin/cni-driver) as a container runtime drives it. The same
# outcomes are asserted against the fake kernel's igb model by tests/e2e/test_e2e_sriov_igb.cpp (the
# "pair"): a difference between the driver and the fakes fails one side.
# Entry state: modules loaded (igb, igbvf, rdma_rxe, ...), RDMA netns mode shared.

LAB_STATE=/run/lab-cni-state
LAB_IPAM=/var/lib/cni/rdmanet/lab-sriov-ipam
DEVINFO_DIR=/run/k8s.cni.cncf.io/devinfo
mkdir -p "$LAB_STATE" "$DEVINFO_DIR" /lab/conf /lab/cache
# The node policy's defaults, with the attachment state in $LAB_STATE.
LAB_POLICY=/run/lab-sriov-policy.json
printf '{"stateDir":"%s"}\n' "$LAB_STATE" > "$LAB_POLICY"

# ---- the PF and its VFs ----------------------------------------------------------------------

PF=
for dev in /sys/class/net/*; do
  [ "$(basename "$(readlink "$dev/device/driver" 2>/dev/null)")" = igb ] && PF=$(basename "$dev") && break
done
pf_found() { [ -n "$PF" ] && echo "PF: $PF ($(basename "$(readlink "/sys/class/net/$PF/device")"))"; }
check "sriov: an igb PF netdev exists" pf_found
[ -n "$PF" ] || { echo "LAB-INFO: no igb PF: skipping the sriov section"; return 0 2>/dev/null || exit 0; }
PF_PCI=$(basename "$(readlink "/sys/class/net/$PF/device")")
# QEMU's user network answers router solicitations: a VF netdev that comes up in the host would
# get a global IPv6 address (fec0::/64), and the node policy rightly refuses to move a netdev that
# holds a node address. The lab's netdevs take no router advertisements.
echo 0 >/proc/sys/net/ipv6/conf/default/accept_ra
echo 0 >/proc/sys/net/ipv6/conf/all/accept_ra
ip link set "$PF" up
# igb refuses a VF's max_tx_rate (EINVAL) until the PF's link is up with a known speed: the rate
# must not exceed it. QEMU's emulated link comes up a few seconds after `ip link set up`, later on
# a slow emulator, and creating VFs reopens the PF (the link renegotiates), so the ADDs below wait
# for it after the VFs exist.
pf_link_up() {
  _speed=$(cat "/sys/class/net/$PF/speed" 2>/dev/null)
  echo "carrier $(cat "/sys/class/net/$PF/carrier" 2>/dev/null), speed ${_speed:-?}"
  [ "$(cat "/sys/class/net/$PF/carrier" 2>/dev/null)" = 1 ] && [ "${_speed:-0}" -gt 0 ] 2>/dev/null
}

make_vfs() {
  echo 2 >"/sys/class/net/$PF/device/sriov_numvfs" || return 1
  cat "/sys/class/net/$PF/device/sriov_totalvfs" "/sys/class/net/$PF/device/sriov_numvfs"
  [ -e "/sys/class/net/$PF/device/virtfn1" ]
}
check "sriov: writing 2 to sriov_numvfs creates virtfn0 and virtfn1" make_vfs
VF0=$(basename "$(readlink "/sys/class/net/$PF/device/virtfn0")")
VF1=$(basename "$(readlink "/sys/class/net/$PF/device/virtfn1")")
vf_netdev_name() { ls "/sys/bus/pci/devices/$1/net/" 2>/dev/null | head -n1; }
vf_netdevs_appear() { [ -n "$(vf_netdev_name "$VF0")" ] && [ -n "$(vf_netdev_name "$VF1")" ]; }
check "sriov: the VFs $VF0 and $VF1 have igbvf netdevs" retry 10 vf_netdevs_appear
VF0_DEV=$(vf_netdev_name "$VF0")
VF1_DEV=$(vf_netdev_name "$VF1")
echo "LAB-INFO: PF $PF, VF 0 = $VF0 ($VF0_DEV), VF 1 = $VF1 ($VF1_DEV)"
ip link show dev "$PF"
check "sriov: the PF's link is up with a known speed" retry 30 pf_link_up

# ---- helpers ---------------------------------------------------------------------------------

# The PF's line for VF <n> as `ip link` prints it (admin MAC, vlan, qos, spoofchk, trust, ...).
vf_line() { ip link show dev "$PF" | grep -E "^ +vf $1 " | sed 's/^ *//'; }
# The VF netdev as the host sees it: name, MAC, MTU, state flags, alias. Not its permanent
# address: igbvf takes that from the PF's admin MAC whenever the VF resets, so it records the last
# admin MAC the VF had, and nothing can write it back (LAB-INFO below shows it).
host_view() { ip -o link show dev "$1" | sed 's/^[0-9]*: //; s/ qlen [0-9]*//; s/ permaddr [0-9a-f:]*//'; }
# Everything a failed ADD or a DEL must leave as it was.
sriov_snapshot() {
  vf_line 0
  vf_line 1
  host_view "$VF0_DEV"
  host_view "$VF1_DEV"
  ls "$DEVINFO_DIR"
  rdmanetctl pool list --data-dir "$LAB_IPAM" 2>/dev/null | awk 'NF {n += $NF} END {print "ipam allocations:", n + 0}'
}
same_as() {
  _now=$(sriov_snapshot 2>&1)
  if [ "$_now" = "$1" ]; then echo "$_now"; return 0; fi
  echo "before:"; echo "$1"; echo "after:"; echo "$_now"
  return 1
}

# sriov_conf <file> <network-name> <subnet> <extra JSON members>: a conflist with rdmanet in
# sriov mode, deviceID/CNIDeviceInfoFile from the runtime, the embedded IPAM.
sriov_conf() {
  cat >"$1" <<EOF
{"cniVersion":"1.0.0","name":"$2","plugins":[{"type":"rdmanet","mode":"sriov",$4
 "capabilities":{"deviceID":true,"CNIDeviceInfoFile":true},
 "ipam":{"type":"rdmanet-ipam","range":"$3","data_dir":"$LAB_IPAM"}}]}
EOF
}
# drive <verb> <conflist> <netns-name> <container-id> <vf-pci>: one libcni call, with the plugins
# in $LAB_CNI_PATH when set (the failpoint build), else the build dir's.
drive() {
  RDMANET_POLICY_FILE=$LAB_POLICY cni-driver "$1" --conflist "$2" --netns "/run/netns/$3" --ifname net1 \
    --container-id "$4" --cni-path "${LAB_CNI_PATH:-$BUILD_DIR/bin}" --cache-dir /lab/cache \
    --cap-args "{\"deviceID\":\"$5\",\"CNIDeviceInfoFile\":\"$DEVINFO_DIR/$4-net1\"}"
}
# add_fails <code> <text> <hint> <conflist> <netns> <id> <pci>: ADD fails with that CNI code,
# the message or details containing <text> and <hint> ("" = any).
add_fails() {
  _want_code=$1 _want_text=$2 _want_hint=$3
  shift 3
  _res=$(drive add "$@")
  _rc=$?
  echo "exit $_rc: $_res"
  echo "$_res" >>/tmp/lab_refusals   # printed after the section: how rdmanet reports each refusal
  [ "$_rc" -ne 0 ] || return 1
  case $_res in *"\"code\":$_want_code,"* | *"\"code\": $_want_code,"*) ;; *) echo "(expected code $_want_code)"; return 1 ;; esac
  case $_res in *"$_want_text"*) ;; *) echo "(expected the error to contain: $_want_text)"; return 1 ;; esac
  case $_res in *"$_want_hint"*) return 0 ;; esac
  echo "(expected the error to contain: $_want_hint)"
  return 1
}
vf_line_has() { _l=$(vf_line "$1"); echo "$_l"; case $_l in *"$2"*) return 0 ;; esac; echo "(expected: $2)"; return 1; }

# ---- 1. every setting igb supports: ADD, CHECK, DEL ------------------------------------------

ip netns add sriovp1
before=$(sriov_snapshot 2>&1)
vf0_before=$(vf_line 0)
host0_before=$(host_view "$VF0_DEV")
echo "LAB-INFO: VF 0 before: $vf0_before"
sriov_conf /lab/conf/full.conflist lab-sriov 10.78.0.0/24 \
  '"mac":"0a:58:0a:4e:00:05","vlan":100,"vlanQoS":3,"spoofchk":"off","trust":"on","max_tx_rate":100,"mtu":1400,'
add_full() {
  _res=$(drive add /lab/conf/full.conflist sriovp1 c-full "$VF0") || { echo "$_res"; return 1; }
  echo "$_res" | tee /lab/full.result
}
check "sriov ADD (VF 0: mac, vlan 100 qos 3, spoofchk off, trust on, max_tx_rate 100, mtu 1400) through libcni" add_full
check "sriov ADD: the PF shows VF 0's admin MAC" vf_line_has 0 "link/ether 0a:58:0a:4e:00:05"
check "sriov ADD: the PF shows VF 0's vlan 100, qos 3" vf_line_has 0 "vlan 100, qos 3"
check "sriov ADD: the PF shows VF 0's spoof checking off" vf_line_has 0 "spoof checking off"
check "sriov ADD: the PF shows VF 0's trust on" vf_line_has 0 "trust on"
check "sriov ADD: the PF shows VF 0's max_tx_rate 100" vf_line_has 0 "max_tx_rate 100Mbps"
pod_link() {
  _l=$(ip -n "$1" -o link show dev net1) || return 1
  echo "$_l"
  case $_l in *"$2"*) ;; *) echo "(expected: $2)"; return 1 ;; esac
  case $_l in *"mtu $3 "*) ;; *) echo "(expected mtu $3)"; return 1 ;; esac
  case $_l in *"state UP"* | *",UP"* | *"<UP"*) return 0 ;; esac
  echo "(expected up)"
  return 1
}
check "sriov ADD: the VF netdev is net1 in the pod, MAC and MTU applied, up" pod_link sriovp1 0a:58:0a:4e:00:05 1400
check "sriov ADD: the VF netdev left the host" output_lacks "$VF0_DEV" ip -o link show
pod_addr() {
  _want=$(sed -n 's/.*"address": *"\([0-9.]*\)\/.*/\1/p' "$2" | head -n1)
  [ -n "$_want" ] || { echo "no address in $2"; return 1; }
  output_has "inet $_want/" ip -n "$1" -o addr show dev net1
}
check "sriov ADD: the pod's net1 has the address the result reports (embedded IPAM)" pod_addr sriovp1 /lab/full.result
devinfo_names() {
  _f=$DEVINFO_DIR/c-full-net1
  cat "$_f" || return 1
  grep -q "\"pci-address\": *\"$VF0\"" "$_f"
}
check "sriov ADD: the device-info file names VF 0's PCI address" devinfo_names
check "sriov CHECK passes" drive check /lab/conf/full.conflist sriovp1 c-full "$VF0"
check "sriov DEL" drive del /lab/conf/full.conflist sriovp1 c-full "$VF0"
check "sriov DEL: VF 0's PF-side settings are exactly as before" output_has "$vf0_before" vf_line 0
vf0_after_exact() { [ "$(vf_line 0)" = "$vf0_before" ] && vf_line 0; }
check "sriov DEL: VF 0's PF line is identical to before ADD" vf0_after_exact
host_back() { [ "$(host_view "$VF0_DEV")" = "$host0_before" ] && host_view "$VF0_DEV"; }
check "sriov DEL: the VF netdev is back under its host name $VF0_DEV with its MAC, MTU, state" retry 5 host_back
check "sriov DEL: node state, device-info file and IPAM allocation are gone" same_as "$before"
check "sriov DEL again (the runtime may repeat it) succeeds" drive del /lab/conf/full.conflist sriovp1 c-full "$VF0"

# ---- 2. what igb refuses: the ADD fails with the kernel's reason, nothing is left changed -----

# igb has no ndo_set_vf_link_state: RTM_SETLINK IFLA_VF_LINK_STATE -> EOPNOTSUPP.
sriov_conf /lab/conf/linkstate.conflist lab-sriov-ls 10.78.1.0/24 '"vlan":200,"link_state":"enable",'
check "sriov ADD with link_state enable: igb refuses (code 100, names link_state, says to remove it), rolled back" \
  add_fails 100 "link_state enable" "cannot set a VF's link state" /lab/conf/linkstate.conflist sriovp1 c-ls "$VF0"
check "sriov: after the refused link_state, VF 0, the netdevs and the pool are as before" same_as "$before"
check "sriov DEL after the refused ADD succeeds" drive del /lab/conf/linkstate.conflist sriovp1 c-ls "$VF0"
# igb (82576) refuses a minimum rate: ndo_set_vf_rate returns EINVAL when min_tx_rate != 0.
sriov_conf /lab/conf/minrate.conflist lab-sriov-mr 10.78.2.0/24 '"vlan":200,"min_tx_rate":10,"max_tx_rate":100,'
check "sriov ADD with min_tx_rate: igb refuses (code 100, names the rate, explains igb's rate rules), rolled back" \
  add_fails 100 "min_tx_rate 10" "up to the PF's current link speed" /lab/conf/minrate.conflist sriovp1 c-mr "$VF0"
check "sriov: after the refused min_tx_rate, VF 0, the netdevs and the pool are as before" same_as "$before"
check "sriov DEL after the refused ADD succeeds" drive del /lab/conf/minrate.conflist sriovp1 c-mr "$VF0"
# igb accepts only 802.1Q tags (ndo_set_vf_vlan: EPROTONOSUPPORT for 802.1ad).
sriov_conf /lab/conf/qinq.conflist lab-sriov-ad 10.78.3.0/24 '"vlan":200,"vlanProto":"802.1ad",'
check "sriov ADD with vlanProto 802.1ad: igb refuses (code 100, says 802.1Q only), rolled back" \
  add_fails 100 "proto 0x88a8" "802.1Q only" /lab/conf/qinq.conflist sriovp1 c-ad "$VF0"
check "sriov: after the refused 802.1ad, VF 0, the netdevs and the pool are as before" same_as "$before"
check "sriov DEL after the refused ADD succeeds" drive del /lab/conf/qinq.conflist sriovp1 c-ad "$VF0"
sed 's/^/LAB-INFO: refused: /' /tmp/lab_refusals
ip netns del sriovp1

# ---- 3. two pods on two VFs ------------------------------------------------------------------

ip netns add sriovpa
ip netns add sriovpb
sriov_conf /lab/conf/two.conflist lab-sriov-two 10.78.4.0/24 '"spoofchk":"on",'
check "sriov two pods: ADD pod a on VF 0" drive add /lab/conf/two.conflist sriovpa c-a "$VF0"
check "sriov two pods: ADD pod b on VF 1" drive add /lab/conf/two.conflist sriovpb c-b "$VF1"
addr_of() { ip -n "$1" -o -4 addr show dev net1 | awk '{print $4}' | cut -d/ -f1; }
two_addrs() {
  _a=$(addr_of sriovpa) _b=$(addr_of sriovpb)
  echo "pod a: $_a, pod b: $_b"
  [ -n "$_a" ] && [ -n "$_b" ] && [ "$_a" != "$_b" ] &&
    case "$_a $_b" in 10.78.4.*" "10.78.4.*) return 0 ;; esac
  return 1
}
check "sriov two pods: distinct addresses from the embedded IPAM's 10.78.4.0/24" two_addrs
# Whether QEMU's igb switches VF-to-VF traffic (VMDq loopback) is a property of the emulator,
# recorded here, not a check of rdmanet.
if ip netns exec sriovpa ping -c 2 -W 2 "$(addr_of sriovpb)" >/tmp/two_ping 2>&1; then
  echo "LAB-INFO: pod a reaches pod b over igb VF 0 -> VF 1 (emulated switch carries VF-to-VF traffic)"
else
  echo "LAB-INFO: pod a does NOT reach pod b over igb VFs: $(tail -n 2 /tmp/two_ping | tr '\n' ' ')"
fi
check "sriov two pods: DEL pod a" drive del /lab/conf/two.conflist sriovpa c-a "$VF0"
check "sriov two pods: DEL pod b" drive del /lab/conf/two.conflist sriovpb c-b "$VF1"
# igb reports as a VF's MAC the one its VF driver registered through the PF mailbox when the netdev
# came up (igbvf_open), not only an admin MAC. rdmanet writes no MAC it was not asked for, so after
# DEL the PF shows each VF netdev's own MAC where it showed 00:00:00:00:00:00 before.
vf_mac() { vf_line "$1" | sed -n 's/.*link\/ether \([0-9a-f:]*\) .*/\1/p'; }
netdev_mac() { cat "/sys/class/net/$1/address"; }
learned_macs() {
  echo "vf 0: $(vf_mac 0), $VF0_DEV: $(netdev_mac "$VF0_DEV"); vf 1: $(vf_mac 1), $VF1_DEV: $(netdev_mac "$VF1_DEV")"
  [ "$(vf_mac 0)" = "$(netdev_mac "$VF0_DEV")" ] && [ "$(vf_mac 1)" = "$(netdev_mac "$VF1_DEV")" ]
}
check "sriov two pods: igb now reports each VF netdev's own MAC as the VF's MAC (the VF driver registered it)" learned_macs
without_vf_macs() { sed 's/^\(vf [0-9]*  *link\/ether\) [0-9a-f:]*/\1 <mac>/'; }
same_but_macs() {
  _now=$(sriov_snapshot 2>&1 | without_vf_macs)
  _was=$(printf '%s\n' "$1" | without_vf_macs)
  if [ "$_now" = "$_was" ]; then echo "$_now"; return 0; fi
  echo "before:"; echo "$_was"; echo "after:"; echo "$_now"
  return 1
}
check "sriov two pods: apart from those MACs, the VFs, netdevs, device-info files and pool are as before" same_but_macs "$before"
before=$(sriov_snapshot 2>&1)
ip netns del sriovpa
ip netns del sriovpb

# ---- 4. the VF's RDMA device: rxe on the VF netdev -------------------------------------------

rxe_on_vf() { ip link set "$VF1_DEV" up && rdma link add rxevf type rxe netdev "$VF1_DEV" && rdma link show rxevf/1; }
check "sriov RDMA: rxe 'rxevf' on VF 1's netdev $VF1_DEV" rxe_on_vf
before_rdma=$(sriov_snapshot 2>&1)
devices_chain() {
  _out=$(rdmanetctl devices 2>&1) || { echo "$_out"; return 1; }
  echo "$_out"
  printf '%s\n' "$_out" | grep -E "^rxevf[[:space:]]" | grep -q "$VF1_DEV" || { echo "(no rxevf row on $VF1_DEV)"; return 1; }
  printf '%s\n' "$_out" | grep -E "^rxevf[[:space:]]" | grep -q "$VF1 (PF $PF_PCI)" || { echo "(rxevf row does not name VF $VF1 of PF $PF_PCI)"; return 1; }
  printf '%s\n' "$_out" | grep -E "^rxevf[[:space:]]" | grep -q "VF (soft)" || { echo "(rxevf not marked as a soft device on a VF)"; return 1; }
}
check "sriov RDMA: rdmanetctl devices shows rxevf -> $VF1_DEV -> VF $VF1 -> PF $PF_PCI" devices_chain

ip netns add sriovpr
sriov_conf /lab/conf/rdma.conflist lab-sriov-rdma 10.78.5.0/24 '"vlan":300,'
# rxe follows its netdev: moving the VF netdev out of the host namespace sends NETDEV_UNREGISTER
# there and rxe deletes rxevf (6.1 rxe_net.c). So after the ADD no RDMA device sits on the VF any
# more, and the device-info file must not name one (a hardware VF's RDMA device stays bound to its
# PCI function, and the fake pair names it: tests/e2e/test_e2e_sriov.cpp).
add_rdma_shared() {
  _res=$(drive add /lab/conf/rdma.conflist sriovpr c-r "$VF1") || { echo "$_res"; return 1; }
  echo "$_res"
  cat "$DEVINFO_DIR/c-r-net1" || return 1
  if [ -d /sys/class/infiniband/rxevf ]; then
    echo "(rxevf still exists after its netdev moved)"
    return 1
  fi
  ! grep -q '"rdma-device"' "$DEVINFO_DIR/c-r-net1" || { echo "(names an RDMA device that is gone)"; return 1; }
  grep -q "\"pci-address\": *\"$VF1\"" "$DEVINFO_DIR/c-r-net1"
}
check "sriov RDMA shared mode: ADD on VF 1; rxevf leaves with the netdev, the device-info file names the VF and no RDMA device" add_rdma_shared
check "sriov RDMA shared mode: DEL" drive del /lab/conf/rdma.conflist sriovpr c-r "$VF1"
ip netns del sriovpr
retry 10 sh -c '[ -z "$(ls /run/netns 2>/dev/null)" ]'

# Exclusive mode: rxevf is a software device bound to VF 1's netdev (rxe deletes it when the
# netdev leaves the namespace; 6.1 cannot move it at all), so isolation "required" is refused up
# front (code 7, naming it) and leaves VF 1 and its settings as they were.
[ -d /sys/class/infiniband/rxevf ] || { ip link set "$VF1_DEV" up; rdma link add rxevf type rxe netdev "$VF1_DEV"; }
check "sriov RDMA: switch to exclusive mode" retry 10 rdma system set netns exclusive
ip netns add sriovpx
before_x=$(sriov_snapshot 2>&1)
sriov_conf /lab/conf/req.conflist lab-sriov-req 10.78.6.0/24 '"vlan":300,"trust":"on","rdma":{"isolation":"required"},'
check "sriov RDMA exclusive + isolation required: ADD refused (code 7) naming rxevf as a software device" \
  add_fails 7 "RDMA device rxevf" "software device bound to" /lab/conf/req.conflist sriovpx c-x "$VF1"
check "sriov RDMA exclusive: after the failed ADD, VF 1's settings, netdevs and pool are as before" same_as "$before_x"
check "sriov RDMA exclusive: rxevf is still the host's" output_has rxevf rdma dev show
check "sriov RDMA exclusive: DEL after the failed ADD" drive del /lab/conf/req.conflist sriovpx c-x "$VF1"
ip netns del sriovpx
check "sriov RDMA: back to shared mode" retry 10 rdma system set netns shared

# ---- 5. kill -9 during ADD, then DEL ---------------------------------------------------------

# The failpoint walk (tests/e2e/test_e2e_failpoint_walk.cpp) stops the plugin at each named step
# against the fakes; it needs a failpoint build. Here the real driver gets the same invariant at
# the steps a timed kill lands on: whatever the plugin had done when it died, the runtime's DEL
# puts VF 0, its netdev, the device-info file and the pool back. The delays span an ADD under
# TCG (an ADD takes about a second there); where a kill lands varies, the expected end state
# does not.
ip netns add sriovpk
sriov_conf /lab/conf/kill.conflist lab-sriov-kill 10.78.7.0/24 \
  '"mac":"0a:58:0a:4e:00:07","vlan":120,"vlanQoS":2,"spoofchk":"off","trust":"on","max_tx_rate":200,'
before_kill=$(sriov_snapshot 2>&1)
# Without a process per /proc entry (a fork per entry is slow under TCG).
plugin_pids() {
  for _p in /proc/[0-9]*; do
    read -r _comm <"$_p/comm" 2>/dev/null && [ "$_comm" = rdmanet ] && echo "${_p#/proc/}"
  done
}
# killed_then_del <delay>: starts an ADD, waits until the plugin process runs (libcni starts it),
# kills it <delay> seconds later, then runs the runtime's DEL.
killed_then_del() {
  drive add /lab/conf/kill.conflist sriovpk "c-k$1" "$VF0" >/tmp/kill_add.out 2>&1 &
  _drv=$!
  _pids=
  for _i in $(seq 40); do
    _pids=$(plugin_pids)
    [ -n "$_pids" ] && break
    sleep 0.05
  done
  sleep "$1"
  for _pid in $_pids; do kill -9 "$_pid" 2>/dev/null; done
  wait "$_drv"
  _add_rc=$?
  echo "ADD after kill -9 at ${1}s: exit $_add_rc $(head -c 300 /tmp/kill_add.out)"
  echo "${1}s: ADD exit $_add_rc" >>/tmp/kill_points
  drive del /lab/conf/kill.conflist sriovpk "c-k$1" "$VF0" || return 1
  retry 5 same_as "$before_kill"
}
for delay in 0 0.1 0.2 0.4 0.7; do
  check "sriov kill -9 of the plugin ${delay}s into its ADD, then DEL: VF 0, netdevs, device-info and pool as before" \
    killed_then_del "$delay"
done
ip netns del sriovpk
echo "LAB-INFO: where the kills landed (exit 0: the ADD had finished): $(tr '\n' ';' </tmp/kill_points)"
echo "LAB-INFO: after the kills: $(ip -o link show dev "$VF0_DEV" | grep -o 'permaddr [0-9a-f:]*' || echo 'no permaddr shown') on $VF0_DEV"

# ---- 5b. the failpoint walk's steps: kill at each named step, then DEL ---------------------------

# The failpoint build of rdmanet (-DRDMANET_FAILPOINTS=ON, in /lab/fp-bin) SIGKILLs itself when
# RDMANET_FAILPOINT names the step it reaches, so each step of ADD and DEL is hit exactly instead
# of wherever a timed kill lands. The steps are the header's list (/lab/failpoints, generated from
# kFailpoints). Per step: ADD (for a DEL step: ADD, then DEL) through libcni with the step armed
# must die there; then the runtime's DEL through the normal plugin, and DEL again, must put VF 0's
# PF-side settings, both VF netdevs, the device-info files, the pool and the attachment state back
# as they were. The Kubernetes datastore's own steps are not on this path (the lab's IPAM is the
# local store): armed, the call must run to the end, so a step that stops firing is noticed.
if [ -x /lab/fp-bin/rdmanet ] && [ -s /lab/failpoints ]; then
  ip netns add sriovpf
  sriov_conf /lab/conf/fp.conflist lab-sriov-fp 10.78.8.0/24 \
    '"mac":"0a:58:0a:4e:00:08","vlan":130,"vlanQoS":4,"spoofchk":"off","trust":"on","max_tx_rate":300,"mtu":1300,'
  state_files() { find "$LAB_STATE" -type f | sort; }
  before_fp=$(sriov_snapshot 2>&1)
  state_before_fp=$(state_files)
  # The walk's outcome of a step that is reached: the call was killed (libcni reports the signal,
  # the plugin wrote no result or error), not refused or finished.
  killed() {
    [ "$1" -ne 0 ] || { echo "(the armed call succeeded: the failpoint did not fire)"; return 1; }
    case $2 in *"signal: killed"*) return 0 ;; esac
    echo "(expected libcni to report the plugin killed by SIGKILL)"
    return 1
  }
  # failpoint_then_del <step> <container-id> <reached: 1|0>
  failpoint_then_del() {
    _step=$1 _id=$2 _reached=$3
    case $_step in del_*) _verb=del ;; *) _verb=add ;; esac
    if [ "$_verb" = del ]; then
      if ! _res=$(drive add /lab/conf/fp.conflist sriovpf "$_id" "$VF0"); then
        echo "ADD before the armed DEL failed: $_res"
        drive del /lab/conf/fp.conflist sriovpf "$_id" "$VF0"   # leaves the next step a clean VF
        return 1
      fi
    fi
    _res=$(LAB_CNI_PATH=/lab/fp-bin RDMANET_FAILPOINT=$_step drive "$_verb" /lab/conf/fp.conflist sriovpf "$_id" "$VF0")
    _rc=$?
    echo "armed $_verb at $_step: exit $_rc: $(printf '%s' "$_res" | head -c 300)"
    echo "$_step: armed $_verb exit $_rc $(printf '%s' "$_res" | grep -o 'signal: [a-z]*')" >>/tmp/fp_points
    _ok=0
    if [ "$_reached" = 1 ]; then
      killed "$_rc" "$_res" || _ok=1
    else
      [ "$_rc" -eq 0 ] || { echo "(a step the local store never reaches stopped the call)"; _ok=1; }
    fi
    # The recovery runs whatever the armed call did, so that the next step starts from a clean VF.
    drive del /lab/conf/fp.conflist sriovpf "$_id" "$VF0" || { echo "(recovery DEL failed)"; _ok=1; }
    drive del /lab/conf/fp.conflist sriovpf "$_id" "$VF0" || { echo "(second DEL failed)"; _ok=1; }
    [ "$_ok" = 0 ] || return 1
    retry 5 same_as "$before_fp" || return 1
    _state=$(state_files)
    [ "$_state" = "$state_before_fp" ] && return 0
    echo "attachment state before:"; echo "$state_before_fp"; echo "after:"; echo "$_state"
    return 1
  }
  _n=0
  for step in $(cat /lab/failpoints); do
    _n=$((_n + 1))
    case $step in
      # The Kubernetes datastore's steps (pool entry written / reservation dropped; node slices:
      # slice claimed, allocation committed locally, published).
      add_after_pool_write | del_after_reservation_drop | add_after_slice_claim | add_after_slice_commit | \
      add_after_slice_publish)
        check "sriov failpoint $step: a Kubernetes-store step, not reached with the local store: the armed ${step%%_*} runs to the end, DEL restores VF 0, netdevs, device-info, pool, state" \
          failpoint_then_del "$step" "c-fp$_n" 0 ;;
      # CHECK changes nothing: a kill there has nothing to recover (the e2e error walk fails
      # those steps instead).
      check_*) ;;
      # Reached only when the attachment changes routing or sysctls in the pod (policyRouting,
      # sysctl); this walk's network sets neither (the e2e walks run it with policyRouting on).
      add_after_pod_record | add_after_pod_routes)
        check "sriov failpoint $step: a pod-routing step, not reached without policyRouting or sysctl: the armed add runs to the end, DEL restores VF 0, netdevs, device-info, pool, state" \
          failpoint_then_del "$step" "c-fp$_n" 0 ;;
      *)
        check "sriov failpoint $step: the armed ${step%%_*} is killed there; DEL, DEL again: VF 0, netdevs, device-info, pool, state as before" \
          failpoint_then_del "$step" "c-fp$_n" 1 ;;
    esac
  done
  ip netns del sriovpf
  echo "LAB-INFO: failpoint walk (exit 0: the armed call ran to the end): $(tr '\n' ';' </tmp/fp_points)"
else
  skip "sriov failpoint walk: kill at each named step of kFailpoints, then DEL" \
    "no failpoint build in the guest: run_lab.sh was given no LAB_FAILPOINT_BUILD"
fi

# ---- 5c. the node agent's repair: the pod's netns dies without a DEL ---------------------------

# A force-deleted pod: its netns goes and no DEL ever comes. The kernel hands the VF netdev back to
# the host under its pod-side name (net1), with the pod's MAC; the VF keeps the pod's PF-side
# settings, and the device-info file, the IPAM allocation, the VF's in-use record and the
# attachment state stay. One pass of the node agent (rdmanetctl agent --passes 1, local only)
# must undo all of it from the attachment state. The fake pair: tests/e2e/test_e2e_sriov_igb_lab.cpp.
ip netns add sriovpg
sriov_conf /lab/conf/agent.conflist lab-sriov-agent 10.78.9.0/24 \
  '"mac":"0a:58:0a:4e:00:09","vlan":140,"vlanQoS":5,"spoofchk":"off","trust":"on",'
attachment_states() { find "$LAB_STATE" -type f ! -name '*.lock' | sort; }
before_agent=$(sriov_snapshot 2>&1)
states_before_agent=$(attachment_states)
vf0_before_agent=$(vf_line 0)
host0_before_agent=$(host_view "$VF0_DEV")
echo "LAB-INFO: VF 0 before the agent scenario: $vf0_before_agent; $host0_before_agent"
check "sriov agent: ADD on VF 0 (mac, vlan 140 qos 5, spoofchk off, trust on)" \
  drive add /lab/conf/agent.conflist sriovpg c-ag "$VF0"
check "sriov agent: the PF shows VF 0's admin MAC" vf_line_has 0 "link/ether 0a:58:0a:4e:00:09"
check "sriov agent: the PF shows VF 0's vlan 140, qos 5" vf_line_has 0 "vlan 140, qos 5"
check "sriov agent: the PF shows VF 0's spoof checking off" vf_line_has 0 "spoof checking off"
check "sriov agent: the PF shows VF 0's trust on" vf_line_has 0 "trust on"
ip netns del sriovpg
returned_as_net1() { ip -o link show dev net1 2>&1; }
check "sriov agent: the netns is gone, the kernel returns VF 0's netdev to the host as net1" retry 10 returned_as_net1
stranded() {
  [ -e "$DEVINFO_DIR/c-ag-net1" ] || { echo "(no device-info file)"; return 1; }
  [ -e "$LAB_STATE/sriov/pci/$VF0" ] || { echo "(no in-use record of $VF0)"; return 1; }
  [ "$(attachment_states)" != "$states_before_agent" ] || { echo "(no attachment state)"; return 1; }
  vf_line_has 0 "vlan 140, qos 5"
}
check "sriov agent: stranded: VF 0 keeps the pod's settings, device-info, in-use record and state remain" stranded
agent_pass() {
  output_has "1 repaired, 0 failed" env RDMANET_POLICY_FILE="$LAB_POLICY" rdmanetctl agent --passes 1 || return 1
}
check "sriov agent: one pass of rdmanetctl agent repairs the attachment" agent_pass
vf0_agent_exact() { _l=$(vf_line 0); echo "$_l"; [ "$_l" = "$vf0_before_agent" ]; }
check "sriov agent: VF 0's PF line is identical to before the ADD" vf0_agent_exact
host_back_agent() { _h=$(host_view "$VF0_DEV") && echo "$_h" && [ "$_h" = "$host0_before_agent" ]; }
check "sriov agent: the netdev is back under its host name $VF0_DEV with its MAC, MTU, state" retry 5 host_back_agent
check "sriov agent: no net1 left in the host" output_lacks " net1:" ip -o link show
check "sriov agent: device-info file and IPAM allocation are gone, both VFs as before" retry 5 same_as "$before_agent"
states_gone() {
  _now=$(attachment_states)
  [ ! -e "$LAB_STATE/sriov/pci/$VF0" ] || { echo "(the in-use record of $VF0 remains)"; return 1; }
  [ "$_now" = "$states_before_agent" ] && return 0
  echo "state files before:"; echo "$states_before_agent"; echo "after:"; echo "$_now"
  return 1
}
check "sriov agent: the attachment state and the VF's in-use record are gone" states_gone
# The agent prints a pass's report only when the pass repaired or failed something.
check "sriov agent: a second pass finds nothing to do (exit 0, no repair reported)" \
  output_lacks "repair" env RDMANET_POLICY_FILE="$LAB_POLICY" rdmanetctl agent --passes 1

# ---- 6. rdmanetctl doctor --------------------------------------------------------------------

ip link set dev "$PF" vf 1 vlan 42
doctor_reports() {
  _out=$(rdmanetctl doctor 2>&1)
  echo "$_out"
  printf '%s\n' "$_out" | grep -q "$PF.*2 of 7 VFs configured" || { echo "(no PF line)"; return 1; }
  printf '%s\n' "$_out" | grep -q "$VF0" || { echo "(VF 0 not listed)"; return 1; }
  printf '%s\n' "$_out" | grep "$VF1" | grep -q "vlan 42" || { echo "(VF 1's vlan 42 not shown)"; return 1; }
}
check "sriov doctor: reports $PF with 2 of 7 VFs and each VF with its settings" doctor_reports
ip link set dev "$PF" vf 1 vlan 0
