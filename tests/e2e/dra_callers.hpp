#pragma once
// The two DRA callers that run rdmanet as their one CNI plugin, reduced to what they hand the
// plugin and what they take from its result (facts read from their sources):
//
// - dra-driver-sriov in STANDALONE mode, at the NRI RunPodSandbox hook: reads the
//   NetworkAttachmentDefinition named in the claim's config, fills in "name" from the NAD's name
//   when the config has none, sets the top-level "deviceID" to the claimed function's PCI address,
//   and calls libcni AddNetwork on that ONE plugin configuration (no conflist); DelNetwork the same
//   way at StopPodSandbox. No runtimeConfig (no capability args). From the result it builds the
//   ResourceClaim's KEP-4817 networkData.
// - Multus with DRA: the claimed device's "k8s.cni.cncf.io/deviceID" attribute becomes
//   "deviceID" and "pciBusID" in every plugin of the NAD's conflist (the top level of a single
//   config), plus runtimeConfig deviceID and CNIDeviceInfoFile for plugins that declare those
//   capabilities; it copies the driver's device-info file to that CNIDeviceInfoFile first.
//
// Both set CNI_ARGS to the same five keys.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdmanet::test::e2e::dra {

using json = nlohmann::json;

// The pod as the NRI sandbox describes it.
struct PodSandbox {
    std::string namespace_name = "dra-e2e";
    std::string name;
    std::string sandbox_id;  // the container id of every call, and K8S_POD_INFRA_CONTAINER_ID
    std::string uid;

    // "IgnoreUnknown=true;K8S_POD_NAMESPACE=..;K8S_POD_NAME=..;K8S_POD_INFRA_CONTAINER_ID=..;K8S_POD_UID=..".
    std::string cni_args() const;
};
// A sandbox with unique id and uid.
PodSandbox pod_sandbox(const std::string& name);

// dra-driver-sriov STANDALONE: the NAD's spec.config with "name" = `nad_name` when missing or
// empty and "deviceID" = `pci_address`.
json standalone_plugin_config(json nad_config, const std::string& nad_name, const std::string& pci_address);

// Multus: "deviceID" and "pciBusID" = `device_id` in every plugin of `conflist`.
json multus_conflist_with_device(json conflist, const std::string& device_id);

// Where device plugins and DRA drivers put a device's file under the devinfo directory `devinfo`:
// dp/<resourceName>-<deviceID>-device.json, every '/' of both turned into '-'.
std::string driver_device_info_path(const std::string& devinfo, const std::string& resource_name,
                                    const std::string& device_id);
// Where Multus puts the copy it hands a delegate: cni/<network>-<containerID>_<ifname>, '/' -> '-'.
std::string multus_device_info_path(const std::string& devinfo, const std::string& network,
                                    const std::string& container_id, const std::string& ifname);

// KEP-4817 NetworkDeviceData (ResourceClaim status.devices[].networkData).
struct NetworkDeviceData {
    std::string interface_name;
    std::string hardware_address;
    std::vector<std::string> ips;
};
// As dra-driver-sriov builds it from a CNI result: every ips[].address, and the name and MAC of
// the (last) interface with a non-empty "sandbox".
NetworkDeviceData network_data_from_result(const json& result);

}  // namespace rdmanet::test::e2e::dra
