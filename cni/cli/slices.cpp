// rdmanetctl pool slices, and the data doctor judges: see slices.hpp.
#include "rdmanet/cni/cli/slices.hpp"

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <tuple>

#include "rdmanet/cni/node/kube.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/core/node_slice_size.hpp"
#include "rdmanet/ipam/core/range.hpp"
#include "rdmanet/ipam/core/u128.hpp"
#include "rdmanet/ipam/kube/api.hpp"
#include "rdmanet/ipam/kube/node_slices.hpp"
#include "rdmanet/ipam/kube/slice_backlog.hpp"
#include "rdmanet/ipam/kube/slice_held.hpp"
#include "rdmanet/ipam/kube/slice_store.hpp"
#include "rdmanet/ipam/kube/wire.hpp"
#include "rdmanet/ipam/local/sqlite_store.hpp"
#include "rdmanet/base/exit_status.hpp"
#include "rdmanet/base/json_limits.hpp"
#include "rdmanet/ipam/kube/response_json.hpp"

namespace rdmanet::cni::cli {

namespace fs = std::filesystem;
using nlohmann::json;
using ipam::kube::HeldSlices;

namespace {

// Budget of `pool slices` against the API: an unreachable server is reported, not waited out.
constexpr std::chrono::milliseconds kSlicesBudget{10000};

// The slice IPPool names a node's slice may have: with the network_name, and without (whereabouts
// names it <node>-<slice> when the network has no network_name).
std::vector<std::string> ippool_names(const std::string& pool, const std::string& node, const base::IpNetwork& slice) {
    return {ipam::kube::slice_pool_key(pool, node, slice).name(), ipam::kube::slice_pool_key("", node, slice).name()};
}

bool names_slice_pool(const ipam::PoolKey& key, const std::string& pool, const std::string& node,
                      const base::IpNetwork& slice) {
    return key.range == slice && (key.network_name == pool + "-" + node || key.network_name == node);
}

std::string usable_count(const base::IpNetwork& slice) {
    const ipam::Interval u = ipam::usable_offsets(slice.masked());
    return u.hi < u.lo ? "0" : ipam::to_decimal(u.hi - u.lo + 1);
}

std::string minus(const std::string& usable, std::uint64_t used) {
    const auto u = ipam::parse_decimal(usable);
    if (!u) return "";
    return ipam::to_decimal(*u > used ? *u - used : ipam::uint128{0});
}

// The creation time in a backlog marker's name (nanoseconds since the epoch, then "-pid-n.json").
std::optional<std::chrono::system_clock::time_point> marker_time(const std::string& name) {
    const auto dash = name.find('-');
    if (dash == std::string::npos || dash == 0) return std::nullopt;
    long long ns = 0;
    for (std::size_t i = 0; i < dash; ++i) {
        if (name[i] < '0' || name[i] > '9') return std::nullopt;
        ns = ns * 10 + (name[i] - '0');
    }
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(ns)));
}

struct ApiView {
    std::vector<ipam::kube::NodeSlicePool> pools;
    std::map<std::string, std::uint64_t> ippool_entries;  // IPPool name -> allocations
};

ApiView read_api(const ipam::kube::KubeConfig& config, std::chrono::milliseconds budget) {
    using namespace ipam::kube;
    KubeApi api(config, Deadline::in(budget));
    ApiView view;
    auto list = [&](std::string_view plural) {
        const std::string path = collection_path(config.namespace_, plural);
        const HttpResponse r = api.call("GET", path, {}, "application/json", RequestOptions{{}, false, kMaxListBody});
        if (r.status != 200) api.fail("GET " + path, r);
        const json body = base::parse_json_limited(r.body, api_body_limits(r)).value;
        if (!body.is_object() || !body.contains("items") || !body["items"].is_array()) {
            throw ipam::IpamError(ipam::codes::io_failure, "GET " + path + ": not a list");
        }
        return body["items"];
    };
    for (const json& o : list(kNodeSlicePools)) {
        const json spec = o.value("spec", json::object());
        const auto range = base::IpNetwork::parse(spec.value("range", ""));
        if (!range) continue;
        try {
            const int prefix = ipam::parse_node_slice_size(spec.value("sliceSize", ""));
            view.pools.push_back(parse_node_slice_pool(o, *range, prefix));
        } catch (const ipam::IpamError&) {
            continue;  // not a NodeSlicePool anyone can use: nothing of it to show
        }
    }
    for (const json& o : list(kPools)) {
        const json allocations = o.value("spec", json::object()).value("allocations", json::object());
        view.ippool_entries[o.value("metadata", json::object()).value("name", "")] =
            allocations.is_object() ? allocations.size() : 0;
    }
    return view;
}

void sort_slices(std::vector<SliceLine>& lines) {
    std::sort(lines.begin(), lines.end(), [](const SliceLine& a, const SliceLine& b) {
        const auto na = base::IpNetwork::parse(a.slice), nb = base::IpNetwork::parse(b.slice);
        return na && nb ? na->address.to_u128() < nb->address.to_u128() : a.slice < b.slice;
    });
}

}  // namespace

SlicesReport slices_report(const std::string& slices_dir, const std::optional<ipam::kube::KubeConfig>& api,
                           std::chrono::milliseconds budget, std::chrono::system_clock::time_point now) {
    SlicesReport report;
    report.slices_dir = slices_dir;
    std::vector<HeldSlices> held;
    try {
        held = ipam::kube::list_held_files(slices_dir);
    } catch (const ipam::IpamError& e) {
        report.local_error = e.msg;  // a held file that is not JSON: the rest is still reported
    }

    // The backlog: unpublished changes, oldest first.
    std::vector<std::pair<std::string, ipam::kube::SliceChange>> pending;
    report.backlog.dir = slices_dir + "/backlog";
    try {
        pending = ipam::kube::SliceBacklog(report.backlog.dir).pending();
    } catch (const ipam::IpamError& e) {
        report.backlog.error = e.msg;
    }
    report.backlog.changes = pending.size();
    if (!pending.empty()) {
        if (auto t = marker_time(pending.front().first)) {
            report.backlog.oldest_age =
                std::max(std::chrono::seconds(0), std::chrono::duration_cast<std::chrono::seconds>(now - *t));
        }
    }

    // The local store: opened only when it exists (inspecting must not create one).
    std::unique_ptr<ipam::SqliteStore> local;
    std::error_code ec;
    std::vector<ipam::PoolKey> local_keys;
    try {
        if (fs::exists(fs::path(slices_dir) / ipam::SqliteStore::kFileName, ec)) {
            local = std::make_unique<ipam::SqliteStore>(slices_dir);
            local_keys = local->pools();
        }
    } catch (const ipam::IpamError& e) {
        local.reset();
        report.local_error = e.msg;
    }

    std::optional<ApiView> view;
    if (api) {
        report.api_read = true;
        try {
            view = read_api(*api, budget);
        } catch (const ipam::IpamError& e) {
            report.api_error = e.msg;
        }
    }

    auto fill_node_side = [&](SliceLine& line, const std::string& pool, const std::string& node,
                              const base::IpNetwork& slice) {
        if (local) {
            std::uint64_t used = 0;
            for (const auto& key : local_keys) {
                if (names_slice_pool(key, pool, node, slice)) used += local->dump(key).allocations.size();
            }
            line.local_used = used;
        }
        for (const auto& [marker, change] : pending) line.pending += names_slice_pool(change.pool, pool, node, slice);
        // The name the node's local store uses, else whereabouts' with the network name.
        for (const auto& key : local_keys) {
            if (names_slice_pool(key, pool, node, slice)) line.ippool = key.name();
        }
    };
    auto fill_api_side = [&](SliceLine& line, const std::string& pool, const base::IpNetwork& slice) {
        if (!view || line.node.empty()) return;
        for (const auto& name : ippool_names(pool, line.node, slice)) {
            if (auto it = view->ippool_entries.find(name); it != view->ippool_entries.end()) {
                line.ippool = name;
                line.used = it->second;
                return;
            }
        }
        line.used = 0;  // no IPPool yet: nothing published in the slice
    };

    std::set<std::string> from_api;
    if (view) {
        for (const auto& nsp : view->pools) {
            from_api.insert(nsp.name);
            const auto mine =
                std::find_if(held.begin(), held.end(), [&](const HeldSlices& h) { return h.pool_name == nsp.name; });
            SlicePoolReport p;
            p.name = nsp.name;
            p.range = nsp.range.str();
            p.slice_size = nsp.slice_size_text;
            p.node = mine != held.end() ? mine->node : "";
            std::set<std::string> listed;
            for (const auto& e : nsp.entries) {
                SliceLine line;
                line.slice = e.slice.str();
                line.node = e.node;
                line.usable = usable_count(e.slice);
                listed.insert(line.slice);
                const bool claimed_here = mine != held.end() && std::find(mine->slices.begin(), mine->slices.end(),
                                                                          e.slice) != mine->slices.end();
                line.revoked_locally = claimed_here && mine->is_revoked(e.slice);
                if (claimed_here && (e.node != mine->node || line.revoked_locally)) {
                    line.state = "revoked";
                } else if (mine != held.end() && e.node == mine->node) {
                    line.state = "held";
                } else {
                    line.state = e.node.empty() ? "free" : "other";
                }
                if (mine != held.end() && (claimed_here || e.node == mine->node)) {
                    fill_node_side(line, nsp.name, mine->node, e.slice);
                }
                fill_api_side(line, nsp.name, e.slice);
                if (line.state == "free") {
                    line.ippool.clear();
                } else if (line.ippool.empty()) {
                    line.ippool = ippool_names(nsp.name, line.node, e.slice).front();
                }
                if (line.used) line.free = minus(line.usable, *line.used);
                p.slices.push_back(std::move(line));
            }
            // Slices this node claimed that the NodeSlicePool does not list at all: revoked too.
            if (mine != held.end()) {
                for (const auto& s : mine->slices) {
                    if (listed.count(s.str())) continue;
                    SliceLine line;
                    line.slice = s.str();
                    line.state = "revoked";
                    line.revoked_locally = mine->is_revoked(s);
                    line.usable = usable_count(s);
                    fill_node_side(line, nsp.name, mine->node, s);
                    p.slices.push_back(std::move(line));
                }
            }
            sort_slices(p.slices);
            report.pools.push_back(std::move(p));
        }
    }
    // This node's own view of the pools the API did not show (not asked, unreachable, or deleted).
    for (const auto& h : held) {
        if (from_api.count(h.pool_name)) continue;
        SlicePoolReport p;
        p.name = h.pool_name;
        p.node = h.node;
        p.range = h.range;
        p.slice_size = h.slice_size;
        if (view) p.api_error = "NodeSlicePool " + h.pool_name + " does not exist";
        for (const auto& s : h.slices) {
            SliceLine line;
            line.slice = s.str();
            line.node = h.node;
            line.revoked_locally = h.is_revoked(s);
            line.state = line.revoked_locally || view ? "revoked" : "held";
            line.usable = usable_count(s);
            fill_node_side(line, h.pool_name, h.node, s);
            if (line.ippool.empty()) line.ippool = ippool_names(h.pool_name, h.node, s).front();
            if (line.local_used) line.free = minus(line.usable, *line.local_used);
            p.slices.push_back(std::move(line));
        }
        sort_slices(p.slices);
        report.pools.push_back(std::move(p));
    }
    std::sort(report.pools.begin(), report.pools.end(), [](const SlicePoolReport& a, const SlicePoolReport& b) {
        return std::tie(a.name, a.node) < std::tie(b.name, b.node);
    });
    return report;
}

json slices_report_json(const SlicesReport& r) {
    auto opt = [](const std::optional<std::uint64_t>& v) { return v ? json(*v) : json(nullptr); };
    json pools = json::array();
    for (const auto& p : r.pools) {
        json slices = json::array();
        for (const auto& s : p.slices) {
            slices.push_back({{"sliceRange", s.slice},
                              {"nodeName", s.node},
                              {"state", s.state},
                              {"revokedLocally", s.revoked_locally},
                              {"ipPool", s.ippool},
                              {"used", opt(s.used)},
                              {"usable", s.usable},
                              {"free", s.free.empty() ? json(nullptr) : json(s.free)},
                              {"localUsed", opt(s.local_used)},
                              {"pending", s.pending}});
        }
        pools.push_back({{"name", p.name},
                         {"node", p.node},
                         {"range", p.range},
                         {"sliceSize", p.slice_size},
                         {"apiError", p.api_error},
                         {"slices", slices}});
    }
    json backlog = {{"dir", r.backlog.dir},
                    {"changes", r.backlog.changes},
                    {"oldestAgeSeconds", r.backlog.oldest_age ? json(r.backlog.oldest_age->count()) : json(nullptr)},
                    {"error", r.backlog.error}};
    return {{"slicesDir", r.slices_dir},   {"apiRead", r.api_read},   {"apiError", r.api_error},
            {"localError", r.local_error}, {"nodeSlicePools", pools}, {"backlog", backlog}};
}

void print_slices_report(const SlicesReport& r, std::ostream& out) {
    auto num = [](const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : std::string("-"); };
    if (r.api_read && !r.api_error.empty()) out << "API: not read: " << r.api_error << '\n';
    if (!r.local_error.empty()) out << "local store: not read: " << r.local_error << '\n';
    if (r.pools.empty())
        out << "no node slices" << (r.api_read ? "" : " held by this node") << " (" << r.slices_dir << ")\n";
    for (const auto& p : r.pools) {
        out << "NodeSlicePool " << p.name << ": range " << p.range << ", slices " << p.slice_size << ", this node "
            << (p.node.empty() ? std::string("holds none") : p.node) << '\n';
        if (!p.api_error.empty()) out << "  API: " << p.api_error << '\n';
        const std::vector<std::string> head{"SLICE", "NODE", "STATE", "IPPOOL", "USED", "FREE", "LOCAL", "PENDING"};
        std::vector<std::vector<std::string>> rows{head};
        for (const auto& s : p.slices) {
            rows.push_back({s.slice, s.node.empty() ? "-" : s.node, s.state, s.ippool.empty() ? "-" : s.ippool,
                            num(s.used), s.free.empty() ? "-" : s.free, num(s.local_used),
                            s.local_used ? std::to_string(s.pending) : "-"});
        }
        std::vector<std::size_t> width(head.size(), 0);
        for (const auto& row : rows)
            for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
        for (const auto& row : rows) {
            out << "  ";
            for (std::size_t i = 0; i < row.size(); ++i) {
                out << std::left << std::setw(static_cast<int>(i + 1 < row.size() ? width[i] + 2 : 0)) << row[i];
            }
            out << '\n';
        }
    }
    out << "backlog: " << r.backlog.changes << " unpublished change(s)";
    if (r.backlog.oldest_age) out << ", oldest " << r.backlog.oldest_age->count() << " s ago";
    out << " (" << r.backlog.dir << ")\n";
    if (!r.backlog.error.empty()) out << "backlog: " << r.backlog.error << '\n';
}

int pool_slices(const PoolOptions& options, std::ostream& out, std::ostream& err) {
    return base::exit_status_of(err, "rdmanetctl", [&] {
        std::optional<ipam::kube::KubeConfig> api;
        if (options.kube.enabled()) api = node::kube_config(options.kube);
        const SlicesReport r = slices_report(ipam::kube::slices_dir(options.data_dir), api, kSlicesBudget,
                                             std::chrono::system_clock::now());
        if (options.json) {
            out << slices_report_json(r).dump(2) << '\n';
        } else {
            print_slices_report(r, out);
        }
        return 0;
    });
}

}  // namespace rdmanet::cni::cli
