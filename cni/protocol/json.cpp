#include "rdmanet/cni/protocol/json.hpp"

#include <utility>

#include "rdmanet/cni/protocol/error.hpp"

namespace rdmanet::cni {

nlohmann::json parse_json_bounded(std::string_view text, std::size_t max_depth) {
    auto parsed = base::parse_json_limited(text, base::JsonLimits{max_depth, base::kMaxJsonBytes});
    if (!parsed) throw Error(ErrorCode::decode_failure, std::move(parsed.error));
    return std::move(parsed.value);
}

}  // namespace rdmanet::cni
