// kubeconfig files (the IPAM's ipam.kubernetes.kubeconfig): any YAML -> a KubeConfig or
// IpamError naming the key; never another exception (yaml-cpp's own included), a crash or a
// leak. Files a kubeconfig names are "missing" here (the reader refuses every path).
#include "fuzz_support.hpp"

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/kubeconfig.hpp"

namespace {
struct NoFiles : rdmanet::ipam::kube::FileReader {
    std::string read(const std::string& path, const std::string& what) const override {
        rdmanet::ipam::config_error(what + ": " + path + " does not exist");
    }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    rdmanet::fuzz::expect_clean_rejection([&] {
        (void)rdmanet::ipam::kube::parse_kubeconfig(rdmanet::fuzz::as_text(data, size), "/fuzz/kubeconfig", NoFiles{});
    });
    return 0;
}
