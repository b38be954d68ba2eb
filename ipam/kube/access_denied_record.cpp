// The node's record of refused credentials: see access_denied_record.hpp.
#include "rdmanet/ipam/kube/access_denied_record.hpp"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "rdmanet/base/atomic_file.hpp"
#include "rdmanet/base/json_limits.hpp"

namespace rdmanet::ipam::kube {

namespace {
std::string record_path(const std::string& slices_dir) { return slices_dir + "/access-denied.json"; }
}  // namespace

void record_access_denied(const std::string& slices_dir, const AccessDenied& e) {
    const auto now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
    const nlohmann::json j = {{"time", now.count()}, {"http", e.http}, {"message", e.msg}};
    try {
        base::write_file_atomically(record_path(slices_dir), j.dump() + "\n");
    } catch (const std::exception&) {
        // best effort: the CNI call's own error and log line still say it
    }
}

void clear_access_denied(const std::string& slices_dir) { ::unlink(record_path(slices_dir).c_str()); }

std::optional<AccessDeniedRecord> read_access_denied(const std::string& slices_dir) {
    std::ifstream in(record_path(slices_dir));
    if (!in) return std::nullopt;
    const auto j = base::parse_json_limited(std::string(std::istreambuf_iterator<char>(in), {})).value;
    AccessDeniedRecord r;
    if (!j.is_object()) {
        r.message = record_path(slices_dir) + " is not readable JSON";
        return r;
    }
    r.unix_time = j.value("time", std::int64_t{0});
    r.http = j.value("http", 0L);
    r.message = j.value("message", "");
    return r;
}

}  // namespace rdmanet::ipam::kube
