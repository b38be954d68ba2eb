// The JSON that network CRs carry inside strings (rdmanetctl render): the fuzz input, unchanged,
// becomes a MacvlanNetwork's `metaPlugins` string, its `ipam` string, an RdmaNetwork's
// `metaPlugins` string next to its own `sysctl`, and a NetworkAttachmentDefinition's
// spec.config. The documents are built as JSON trees, so every byte reaches the embedded parser
// (YAML quoting does not shape it). Deep nesting must be refused before a tree is built (it used
// to overflow the stack), and a type error must be reported naming its field: an
// nlohmann::json::exception escaping render is a bug, so it is let through for libFuzzer to
// report; the documented render errors (std::runtime_error, which the CNI and IPAM errors are) are not.
#include <exception>
#include <stdexcept>

#include "fuzz_support.hpp"

#include "rdmanet/cni/translate/render.hpp"

namespace {

using nlohmann::json;

json operator_cr(const std::string& meta_plugins, const std::string& ipam) {
    return {{"apiVersion", "mellanox.com/v1alpha1"},
            {"kind", "MacvlanNetwork"},
            {"metadata", {{"name", "fuzz"}}},
            {"spec", {{"master", "eth1"}, {"mode", "bridge"}, {"metaPlugins", meta_plugins}, {"ipam", ipam}}}};
}

json own_cr(const std::string& meta_plugins) {
    return {{"apiVersion", "rdmanet.dev/v1alpha1"},
            {"kind", "RdmaNetwork"},
            {"metadata", {{"name", "fuzz"}}},
            {"spec",
             {{"mode", "macvlan"},
              {"master", "eth1"},
              {"sysctl", {{"net.ipv4.conf.IFNAME.arp_ignore", "1"}}},
              {"metaPlugins", meta_plugins}}}};
}

json nad(const std::string& config) {
    return {{"apiVersion", "k8s.cni.cncf.io/v1"},
            {"kind", "NetworkAttachmentDefinition"},
            {"metadata", {{"name", "fuzz"}}},
            {"spec", {{"config", config}}}};
}

void render(const json& doc, const char* ipam) {
    rdmanet::cni::translate::RenderOptions options;
    options.ipam = ipam;
    try {
        (void)rdmanet::cni::translate::render_network(doc, options).dump();
    } catch (const nlohmann::json::exception&) {
        throw;                             // a raw library message: the field was not named
    } catch (const std::runtime_error&) {  // render's own errors, and the CNI and IPAM errors it passes on
    }
}

bool valid_utf8(const std::string& text) {
    try {
        (void)json(text).dump();  // the strict handler throws on a broken sequence
        return true;
    } catch (const json::type_error&) {
        return false;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // Invalid UTF-8 cannot be a JSON string of a CR: the API server and YAML reader refuse it.
    const std::string text(rdmanet::fuzz::as_text(data, size));
    if (!valid_utf8(text)) return 0;
    for (const char* ipam : {"", "rdmanet"}) {
        render(operator_cr(text, ""), ipam);
        render(operator_cr("", text), ipam);
        render(own_cr(text), ipam);
        render(nad(text), ipam);
    }
    return 0;
}
