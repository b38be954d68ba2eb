#include "rdmanet/cni/protocol/error.hpp"

#include "rdmanet/cni/protocol/text.hpp"

namespace rdmanet::cni {

nlohmann::json Error::to_json(std::string_view cni_version) const {
    // Messages quote untrusted input; keep the object printable whatever bytes they carry.
    nlohmann::json j = {{"cniVersion", std::string(cni_version)}, {"code", code_}, {"msg", text::valid_utf8(msg_)}};
    if (!details_.empty()) j["details"] = text::valid_utf8(details_);
    return j;
}

}  // namespace rdmanet::cni
