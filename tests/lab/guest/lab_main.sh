# The kernel lab's checks, run by /init in the guest (busybox sh). Every section sources the
# check helpers' state, so the summary covers all of them.
. /lab/lab_lib.sh

BUILD_DIR=$(cat /lab/build_dir)
export BUILD_DIR
export PATH="$BUILD_DIR/bin:$PATH"

echo "== modules"
check_modules_load
mount_configfs() { mount -t configfs configfs /sys/kernel/config && [ -d /sys/kernel/config/rdma_cm ]; }
check "configfs mounted at /sys/kernel/config, rdma_cm's group there" mount_configfs

# The suite the initramfs was built for (build_initramfs.sh): rxe = soft-RoCE and rdmanet's RDMA
# paths; sriov = rdmanet's sriov mode on QEMU's igb PF and its igbvf VFs; rdma73 = RDMA traffic
# between pods on Linux 7.x soft-RoCE.
case $(cat /lab/suite 2>/dev/null) in
  sriov) sections="lab_sriov" ;;
  rdma73) sections="lab_rdma73" ;;
  # arm64 (Debian 12's 4K-page kernel) and arm64-16k (Debian 13's 16K-page kernel): the
  # cross-built binaries; no integration_tests (lab_rdmanet.sh stops before its scenarios).
  arm64 | arm64-16k) sections="lab_arm64 lab_rxe lab_rdma_tool lab_rdmanet" ;;
  *) sections="lab_rxe lab_rdma_tool lab_rdmanet lab_compat" ;;
esac
for section in $sections; do
  echo "== $section"
  . "/lab/$section.sh"
done

lab_summary
