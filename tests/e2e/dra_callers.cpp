#include "e2e/dra_callers.hpp"

#include <algorithm>
#include <filesystem>

#include "e2e/e2e_helpers.hpp"

namespace rdmanet::test::e2e::dra {

namespace {

std::string dashes_for_slashes(std::string text) {
    std::replace(text.begin(), text.end(), '/', '-');
    return text;
}

}  // namespace

std::string PodSandbox::cni_args() const {
    return "IgnoreUnknown=true;K8S_POD_NAMESPACE=" + namespace_name + ";K8S_POD_NAME=" + name +
           ";K8S_POD_INFRA_CONTAINER_ID=" + sandbox_id + ";K8S_POD_UID=" + uid;
}

PodSandbox pod_sandbox(const std::string& name) {
    PodSandbox pod;
    pod.name = name;
    pod.sandbox_id = container_id("sbx");
    pod.uid = container_id("uid");
    return pod;
}

json standalone_plugin_config(json nad_config, const std::string& nad_name, const std::string& pci_address) {
    if (!nad_config.contains("name") || nad_config["name"] == "") nad_config["name"] = nad_name;
    nad_config["deviceID"] = pci_address;
    return nad_config;
}

json multus_conflist_with_device(json conflist, const std::string& device_id) {
    for (auto& plugin : conflist.at("plugins")) {
        plugin["deviceID"] = device_id;
        plugin["pciBusID"] = device_id;
    }
    return conflist;
}

std::string driver_device_info_path(const std::string& devinfo, const std::string& resource_name,
                                    const std::string& device_id) {
    return (std::filesystem::path(devinfo) / "dp" /
            (dashes_for_slashes(resource_name) + "-" + dashes_for_slashes(device_id) + "-device.json"))
        .string();
}

std::string multus_device_info_path(const std::string& devinfo, const std::string& network,
                                    const std::string& container_id, const std::string& ifname) {
    return (std::filesystem::path(devinfo) / "cni" / dashes_for_slashes(network + "-" + container_id + "_" + ifname))
        .string();
}

NetworkDeviceData network_data_from_result(const json& result) {
    NetworkDeviceData data;
    for (const auto& ip : result.value("ips", json::array())) data.ips.push_back(ip.value("address", ""));
    for (const auto& iface : result.value("interfaces", json::array()))
        if (!iface.value("sandbox", "").empty()) {
            data.interface_name = iface.value("name", "");
            data.hardware_address = iface.value("mac", "");
        }
    return data;
}

}  // namespace rdmanet::test::e2e::dra
