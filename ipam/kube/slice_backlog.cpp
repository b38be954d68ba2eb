// The durable publication backlog: see slice_backlog.hpp.
#include "rdmanet/base/atomic_file.hpp"
#include "rdmanet/ipam/kube/slice_backlog.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/wire.hpp"
#include "rdmanet/ipam/core/u128.hpp"
#include "rdmanet/base/json_limits.hpp"

namespace rdmanet::ipam::kube {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

[[noreturn]] void io_fail(const std::string& what, const std::string& path) {
    throw IpamError(codes::io_failure, "node slice backlog: " + what + " " + path + ": " + std::strerror(errno));
}

void fsync_path(const std::string& path, int flags) {
    const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
    if (fd < 0) io_fail("cannot open", path);
    const int rc = ::fsync(fd);
    ::close(fd);
    if (rc != 0) io_fail("cannot fsync", path);
}

std::string marker_name() {
    static std::atomic<unsigned> counter{0};
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%020lld-%010d-%06u.json", static_cast<long long>(ns), static_cast<int>(::getpid()),
                  counter++ % 1000000);
    return buf;
}

}  // namespace

json to_json(const SliceChange& c) {
    json j = {{"op", c.op == SliceChange::Op::add ? "add" : "remove"},
              {"namespace", c.ns},
              {"pool", {{"network_name", c.pool.network_name}, {"range", c.pool.range.str()}}},
              {"containerID", c.container_id},
              {"ifname", c.ifname},
              {"podref", c.podref}};
    json entries = json::array();
    for (const auto& [offset, owner] : c.entries)
        entries.push_back({{"offset", to_decimal(offset)}, {"owner", owner_json(owner)}});
    j["entries"] = entries;
    return j;
}

SliceChange slice_change_from_json(const json& j) {
    try {
        SliceChange c;
        const std::string op = j.at("op").get<std::string>();
        if (op != "add" && op != "remove") throw std::runtime_error("op " + op);
        c.op = op == "add" ? SliceChange::Op::add : SliceChange::Op::remove;
        c.ns = j.at("namespace").get<std::string>();
        const auto range = base::IpNetwork::parse(j.at("pool").at("range").get<std::string>());
        if (!range) throw std::runtime_error("pool range");
        c.pool = PoolKey{j.at("pool").at("network_name").get<std::string>(), range->masked()};
        c.container_id = j.at("containerID").get<std::string>();
        c.ifname = j.at("ifname").get<std::string>();
        c.podref = j.at("podref").get<std::string>();
        for (const auto& e : j.at("entries")) {
            const auto offset = parse_decimal(e.at("offset").get<std::string>());
            if (!offset) throw std::runtime_error("offset");
            const json& o = e.at("owner");
            c.entries.push_back({*offset, Owner{o.at("id").get<std::string>(), o.at("podref").get<std::string>(),
                                                o.value("ifname", "")}});
        }
        return c;
    } catch (const std::exception& e) {
        throw IpamError(codes::io_failure, std::string("node slice backlog: malformed marker (") + e.what() + ")");
    }
}

SliceBacklog::SliceBacklog(std::string dir) : dir_(std::move(dir)) {}

std::string SliceBacklog::add(const SliceChange& change) {
    std::error_code ec;
    if (!fs::exists(dir_, ec)) {
        fs::create_directories(dir_, ec);
        if (ec) throw IpamError(codes::io_failure, "node slice backlog: cannot create " + dir_ + ": " + ec.message());
        ::chmod(dir_.c_str(), 0700);
        fsync_path(fs::path(dir_).parent_path().string(), O_RDONLY | O_DIRECTORY);
    }
    const std::string name = marker_name();
    try {
        // Durable before the allocation is committed locally: a crash after it still publishes.
        base::write_file_atomically(dir_ + "/" + name, to_json(change).dump(), 0600);
    } catch (const std::system_error& e) {
        throw IpamError(codes::io_failure, "node slice backlog: cannot write " + dir_ + "/" + name + ": " + e.what());
    }
    return name;
}

void SliceBacklog::remove(const std::string& marker) {
    // Not fsynced: a removal lost to a power cut only publishes the change once more (idempotent).
    ::unlink((dir_ + "/" + marker).c_str());
}

std::vector<std::pair<std::string, SliceChange>> SliceBacklog::pending() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
        const std::string n = e.path().filename().string();
        if (n.empty() || n.front() == '.' || n.size() < 5 || n.substr(n.size() - 5) != ".json") continue;
        names.push_back(n);
    }
    std::sort(names.begin(), names.end());
    std::vector<std::pair<std::string, SliceChange>> out;
    for (const auto& n : names) {
        std::ifstream in(dir_ + "/" + n);
        if (!in) continue;  // published by a concurrent caller meanwhile
        std::stringstream ss;
        ss << in.rdbuf();
        const auto parsed = base::parse_json_limited(ss.str());
        if (!parsed)
            throw IpamError(codes::io_failure,
                            "node slice backlog: " + dir_ + "/" + n + " is not usable JSON: " + parsed.error);
        const json& j = parsed.value;
        out.emplace_back(n, slice_change_from_json(j));
    }
    return out;
}

bool SliceBacklog::empty() const {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
        const std::string n = e.path().filename().string();
        if (!n.empty() && n.front() != '.') return false;
    }
    return true;
}

}  // namespace rdmanet::ipam::kube
