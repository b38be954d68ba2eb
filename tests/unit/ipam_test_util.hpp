#pragma once
// Helpers shared by the IPAM tests (unit and integration): a private temporary directory and short
// constructors for configs and requests.
#include <cstdlib>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/ipam/core/store.hpp"

namespace ipam_test {

class TempDir {
public:
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "rdmanet-ipam-test-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }
    std::string sub(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

inline rdmanet::ipam::IpamConfig config(nlohmann::json ipam) {
    if (!ipam.contains("type")) ipam["type"] = "rdmanet-ipam";
    return rdmanet::ipam::parse_ipam_config(ipam);
}

// An allocation request for the first range of `c`; podref defaults to "ns/<container id>".
inline rdmanet::ipam::AllocateRequest request(const rdmanet::ipam::IpamConfig& c, const std::string& container_id,
                                              const std::string& ifname = "net1", std::string podref = "",
                                              const std::string& network = "testnet") {
    if (podref.empty()) podref = "ns/" + container_id;
    return rdmanet::ipam::AllocateRequest{
        c.ranges.at(0), c.network_name, c.enable_overlapping_ranges, rdmanet::ipam::Owner{container_id, podref, ifname},
        network,        std::nullopt};
}

}  // namespace ipam_test
