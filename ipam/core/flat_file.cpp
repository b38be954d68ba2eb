// The one effect of configuration loading: reading whereabouts' flat file.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "rdmanet/base/confined_file.hpp"
#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/base/json_limits.hpp"

namespace rdmanet::ipam {

namespace {

std::string read_text(const std::string& path, const std::string& confined_to) {
    if (!confined_to.empty()) {
        // Under the node policy: no symlink below the allowed directory, regular files only
        // (a FIFO would block the plugin), bounded size.
        try {
            return base::read_confined(confined_to, path);
        } catch (const base::ConfinedFileError& e) {
            config_error("ipam.configuration_path \"" + path + "\" cannot be read: " + e.what());
        }
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) config_error("ipam.configuration_path \"" + path + "\" cannot be read: " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

nlohmann::json read_flat_file(const std::string& path, const std::string& confined_to) {
    auto parsed = base::parse_json_limited(read_text(path, confined_to));
    if (!parsed.value.is_object()) {
        config_error("ipam.configuration_path \"" + path + "\" is not a JSON object" +
                     (parsed ? std::string() : " (" + parsed.error + ")"));
    }
    return std::move(parsed.value);
}

}  // namespace rdmanet::ipam
