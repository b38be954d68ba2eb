// The one effect of configuration loading: reading whereabouts' flat file.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "rdmanet/ipam/config.hpp"
#include "rdmanet/ipam/error.hpp"

namespace rdmanet::ipam {

nlohmann::json read_flat_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) config_error("ipam.configuration_path \"" + path + "\" cannot be read: " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    auto j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
        config_error("ipam.configuration_path \"" + path + "\" is not a JSON object");
    }
    return j;
}

}  // namespace rdmanet::ipam
