// The node's held-slices files: see slice_held.hpp.
#include "rdmanet/ipam/kube/slice_held.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "rdmanet/base/atomic_file.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/base/json_limits.hpp"

namespace rdmanet::ipam::kube {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::vector<base::IpNetwork> networks(const json& list) {
    std::vector<base::IpNetwork> out;
    if (!list.is_array()) return out;
    for (const auto& s : list) {
        if (auto n = s.is_string() ? base::IpNetwork::parse(s.get<std::string>()) : std::nullopt)
            out.push_back(n->masked());
    }
    return out;
}

json texts(const std::vector<base::IpNetwork>& list) {
    json out = json::array();
    for (const auto& n : list) out.push_back(n.str());
    return out;
}

}  // namespace

std::vector<base::IpNetwork> HeldSlices::usable() const {
    std::vector<base::IpNetwork> out;
    for (const auto& s : slices) {
        if (!is_revoked(s)) out.push_back(s);
    }
    return out;
}

bool HeldSlices::is_revoked(const base::IpNetwork& slice) const {
    return std::find(revoked.begin(), revoked.end(), slice) != revoked.end();
}

std::string held_file_path(const std::string& slices_dir, const std::string& pool_name, const std::string& node) {
    // Per NodeSlicePool and node name (a host whose node name changes holds nothing under the new one).
    return slices_dir + "/held/" + pool_name + "@" + node + ".json";
}

std::optional<HeldSlices> read_held_file(const std::string& slices_dir, const std::string& pool_name,
                                         const std::string& node) {
    const std::string path = held_file_path(slices_dir, pool_name, node);
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::stringstream ss;
    ss << in.rdbuf();
    const auto parsed = base::parse_json_limited(ss.str());
    const json& j = parsed.value;
    if (!j.is_object())
        throw IpamError(codes::io_failure,
                        path + " is not a JSON object" + (parsed ? std::string() : " (" + parsed.error + ")"));
    HeldSlices h;
    h.pool_name = pool_name;
    h.node = node;
    h.range = j.value("range", "");
    h.slice_size = j.value("sliceSize", "");
    h.slices = networks(j.value("slices", json::array()));
    h.revoked = networks(j.value("revoked", json::array()));
    return h;
}

void write_held_file(const std::string& slices_dir, const HeldSlices& h) {
    const std::string text = json{
        {"range", h.range},
        {"sliceSize", h.slice_size},
        {"slices", texts(h.slices)},
        {"revoked",
         texts(h.revoked)}}.dump();
    const std::string path = held_file_path(slices_dir, h.pool_name, h.node);
    try {
        base::write_file_atomically(path, text, 0600);
    } catch (const std::system_error& e) {
        throw IpamError(codes::io_failure, "cannot write " + path + ": " + e.what());
    }
}

std::vector<std::pair<std::string, std::string>> held_file_names(const std::string& slices_dir) {
    std::vector<std::pair<std::string, std::string>> names;  // (pool, node)
    std::error_code ec;
    for (fs::directory_iterator it(slices_dir + "/held", ec), end; !ec && it != end; it.increment(ec)) {
        const std::string n = it->path().filename().string();
        constexpr std::string_view kSuffix = ".json";
        if (n.size() <= kSuffix.size() || n.compare(n.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) continue;
        const std::string stem = n.substr(0, n.size() - kSuffix.size());
        const auto at = stem.rfind('@');
        if (at == std::string::npos || at == 0 || at + 1 == stem.size()) continue;
        names.emplace_back(stem.substr(0, at), stem.substr(at + 1));
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::vector<HeldSlices> list_held_files(const std::string& slices_dir) {
    std::vector<HeldSlices> out;
    for (const auto& [pool, node] : held_file_names(slices_dir)) {
        if (auto h = read_held_file(slices_dir, pool, node)) out.push_back(std::move(*h));
    }
    return out;
}

}  // namespace rdmanet::ipam::kube
