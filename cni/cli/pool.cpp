// rdmanetctl pool list | show | verify: the local IPAM datastore as whereabouts IPPool objects.
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <memory>
#include <ostream>
#include <vector>

#include "rdmanet/cni/node/kube.hpp"
#include "rdmanet/cni/cli/pool.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/local/sqlite_store.hpp"
#include "rdmanet/base/exit_status.hpp"

namespace rdmanet::cni::cli {

namespace {

std::string store_file(const PoolOptions& options) {
    return (std::filesystem::path(options.data_dir) / ipam::SqliteStore::kFileName).string();
}

// The store, or nullptr when the data dir holds none: inspecting must not create one.
std::unique_ptr<ipam::SqliteStore> open_existing(const PoolOptions& options) {
    std::error_code ec;
    if (!std::filesystem::exists(store_file(options), ec)) return nullptr;
    return std::make_unique<ipam::SqliteStore>(options.data_dir);
}

std::vector<ipam::PoolDump> dump_all(ipam::Store& store) {
    std::vector<ipam::PoolDump> dumps;
    for (const auto& key : store.pools()) dumps.push_back(store.dump(key));
    return dumps;
}

// Runs a command body (base::exit_status_of: an exception is one line on err, exit status 1).
template <class Fn>
int guarded(std::ostream& err, Fn&& fn) {
    return base::exit_status_of(err, "rdmanetctl", std::forward<Fn>(fn));
}

}  // namespace

nlohmann::json ippool_json(const ipam::PoolDump& dump) {
    return {{"apiVersion", "whereabouts.cni.cncf.io/v1alpha1"},
            {"kind", "IPPool"},
            {"metadata", {{"name", dump.pool.name()}}},
            {"spec", dump.spec_json()}};
}

int pool_list(const PoolOptions& options, std::ostream& out, std::ostream& err) {
    return guarded(err, [&] {
        std::vector<ipam::PoolDump> dumps;
        if (options.kube.enabled()) {
            dumps = dump_all(*node::open_kube_store(options.kube));
        } else if (auto store = open_existing(options)) {
            dumps = dump_all(*store);
        }
        if (options.json) {
            nlohmann::json array = nlohmann::json::array();
            for (const auto& d : dumps) array.push_back(ippool_json(d));
            out << array.dump(2) << '\n';
            return 0;
        }
        std::size_t name_width = 4, range_width = 5;
        for (const auto& d : dumps) {
            name_width = std::max(name_width, d.pool.name().size());
            range_width = std::max(range_width, d.pool.range.str().size());
        }
        for (const auto& d : dumps) {
            out << std::left << std::setw(static_cast<int>(name_width)) << d.pool.name() << "  "
                << std::setw(static_cast<int>(range_width)) << d.pool.range.str() << "  " << d.allocations.size()
                << '\n';
        }
        return 0;
    });
}

int pool_show(const PoolOptions& options, const std::string& name, std::ostream& out, std::ostream& err) {
    return guarded(err, [&] {
        std::unique_ptr<ipam::Store> store;
        if (options.kube.enabled()) {
            store = node::open_kube_store(options.kube);
        } else {
            store = open_existing(options);
        }
        if (!store) {
            err << "rdmanetctl: no pool named \"" << name << "\": there is no datastore at " << store_file(options)
                << '\n';
            return 1;
        }
        std::vector<ipam::PoolKey> by_name, by_range;
        for (const auto& key : store->pools()) {
            if (key.name() == name) by_name.push_back(key);
            if (key.range.str() == name) by_range.push_back(key);
        }
        const auto& matches = by_name.empty() ? by_range : by_name;
        if (matches.size() != 1) {
            err << "rdmanetctl: ";
            if (matches.empty()) {
                err << "no pool named \"" << name << "\" in "
                    << (options.kube.enabled() ? std::string("the Kubernetes datastore") : store_file(options))
                    << " (rdmanetctl pool list shows the names)\n";
            } else {
                err << "\"" << name << "\" is the range of " << matches.size() << " pools:";
                for (const auto& key : matches) err << ' ' << key.name();
                err << "; name one of them\n";
            }
            return 1;
        }
        out << ippool_json(store->dump(matches.front())).dump(2) << '\n';
        return 0;
    });
}

int pool_verify(const PoolOptions& options, std::ostream& out, std::ostream& err) {
    return guarded(err, [&] {
        auto store = open_existing(options);
        if (!store) {
            out << "no datastore at " << store_file(options) << ": nothing to verify\n";
            return 0;
        }
        const auto problems = store->verify();
        for (const auto& p : problems) err << "rdmanetctl: " << store_file(options) << ": " << p << '\n';
        if (!problems.empty()) return 1;
        std::size_t pools = 0, allocations = 0;
        for (const auto& d : dump_all(*store)) {
            ++pools;
            allocations += d.allocations.size();
        }
        out << store_file(options) << ": consistent (" << pools << " pools, " << allocations << " allocations)\n";
        return 0;
    });
}

}  // namespace rdmanet::cni::cli
