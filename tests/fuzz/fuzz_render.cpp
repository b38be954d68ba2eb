// HostDeviceNetwork-like specs (rdmanetctl render -f): any YAML -> NADs validated by the
// plugin's own parser, or an error rdmanetctl prints (any std::exception: the CLI reports it and
// exits 1). What this target hunts is what a CLI must not do either: crash, UB, leak, hang.
#include <exception>

#include "fuzz_support.hpp"

#include "rdmanet/cni/translate/render.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(rdmanet::fuzz::as_text(data, size));
    for (const char* ipam : {"", "rdmanet"}) {
        rdmanet::cni::translate::RenderOptions options;
        options.ipam = ipam;
        try {
            for (const auto& nad : rdmanet::cni::translate::render_documents(text, options)) (void)nad.dump();
        } catch (const std::exception&) {
        }
    }
    return 0;
}
