// The provider's claim records and their routing tables: see claim_records.hpp.
#include "rdmanet/cni/node/dranet/claim_records.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "rdmanet/base/atomic_file.hpp"
#include "rdmanet/base/private_dir.hpp"
#include "rdmanet/cni/node/dranet/wire.hpp"

namespace rdmanet::cni::node::dranet {

namespace {

constexpr const char* kFileName = "claims.json";
// Tables the kernel reserves: RT_TABLE_DEFAULT, RT_TABLE_MAIN, RT_TABLE_LOCAL.
bool reserved(unsigned t) { return t == 0 || (t >= 253 && t <= 255); }

}  // namespace

std::vector<unsigned> choose_tables(const std::set<unsigned>& used, unsigned first, std::size_t count) {
    std::vector<unsigned> out;
    for (unsigned t = first == 0 ? 1 : first; out.size() < count; ++t) {
        if (t == 0) throw ProviderError(500, "policyRouting: every routing table on this node is in use");
        if (reserved(t) || used.contains(t)) continue;
        out.push_back(t);
    }
    return out;
}

std::optional<std::map<ClaimKey, ClaimRecord>> read_claim_records(const std::string& state_dir) {
    const std::string path = state_dir + "/" + kFileName;
    std::ifstream in(path);
    if (!in) return std::nullopt;  // nothing recorded yet
    std::stringstream ss;
    ss << in.rdbuf();
    const auto j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (!j.is_object() || !j.contains("claims") || !j["claims"].is_array())
        throw std::runtime_error(path +
                                 " is not the provider's claim record: move it away to start empty "
                                 "(the claims' addresses stay in the IPAM datastore)");
    std::map<ClaimKey, ClaimRecord> records;
    for (const auto& c : j["claims"]) {
        if (!c.is_object() || !c.value("claim", nlohmann::json()).is_string() ||
            !c.value("device", nlohmann::json()).is_string())
            throw std::runtime_error(path + ": an entry without claim/device: " + c.dump());
        ClaimRecord r;
        r.profile = c.value("profile", "");
        if (c.contains("tables") && c["tables"].is_array())
            for (const auto& t : c["tables"])
                if (t.is_number_unsigned()) r.tables.push_back(t.get<unsigned>());
        records[ClaimKey{c["claim"].get<std::string>(), c["device"].get<std::string>()}] = std::move(r);
    }
    return records;
}

ClaimRecords::ClaimRecords(std::string state_dir) : state_dir_(std::move(state_dir)) {
    if (const std::string why = base::make_private_dir(state_dir_); !why.empty())
        throw std::runtime_error("--state-dir: " + why);
    if (auto records = read_claim_records(state_dir_)) records_ = std::move(*records);
}

void ClaimRecords::save() const {
    nlohmann::json claims = nlohmann::json::array();
    for (const auto& [key, r] : records_)
        claims.push_back(
            {{"claim", key.claim_uid}, {"device", key.device}, {"profile", r.profile}, {"tables", r.tables}});
    try {
        base::write_file_atomically(state_dir_ + "/" + kFileName, nlohmann::json{{"claims", claims}}.dump(1) + "\n",
                                    0600);
    } catch (const std::exception& e) {
        throw ProviderError(500, std::string("cannot record the claim's routing tables: ") + e.what());
    }
}

std::vector<unsigned> ClaimRecords::tables_for(const ClaimKey& key, const std::string& profile, unsigned first,
                                               std::size_t count) {
    const std::lock_guard lock(mutex_);
    if (auto it = records_.find(key); it != records_.end() && it->second.tables.size() == count) {
        if (it->second.profile != profile) {
            it->second.profile = profile;
            save();
        }
        return it->second.tables;
    }
    std::set<unsigned> used;
    for (const auto& [k, r] : records_)
        if (!(k == key)) used.insert(r.tables.begin(), r.tables.end());
    ClaimRecord updated{profile, choose_tables(used, first, count)};
    const auto previous = records_.find(key) == records_.end() ? std::nullopt : std::optional(records_[key]);
    records_[key] = updated;
    try {
        save();
    } catch (...) {
        if (previous)
            records_[key] = *previous;
        else
            records_.erase(key);
        throw;
    }
    return updated.tables;
}

std::optional<ClaimRecord> ClaimRecords::forget(const ClaimKey& key) {
    const std::lock_guard lock(mutex_);
    auto it = records_.find(key);
    if (it == records_.end()) return std::nullopt;
    ClaimRecord r = std::move(it->second);
    records_.erase(it);
    try {
        save();
    } catch (...) {
        records_[key] = r;
        throw;
    }
    return r;
}

std::optional<ClaimRecord> ClaimRecords::find(const ClaimKey& key) const {
    const std::lock_guard lock(mutex_);
    auto it = records_.find(key);
    if (it == records_.end()) return std::nullopt;
    return it->second;
}

std::map<ClaimKey, ClaimRecord> ClaimRecords::all() const {
    const std::lock_guard lock(mutex_);
    return records_;
}

}  // namespace rdmanet::cni::node::dranet
