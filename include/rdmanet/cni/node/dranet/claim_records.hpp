#pragma once
// The provider's own durable record of what each claim holds: per (claim UID, device) the profile
// and the routing tables of its addresses. DRANET never says which pod a claim ends up in, so a
// table must be unique among every claim on the node: N rails in one pod (one claim with N devices
// or N claims) then never share one. Kept in <state-dir>/claims.json, replaced atomically; the
// table choice itself is pure (choose_tables) and unit-tested.
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace rdmanet::cni::node::dranet {

struct ClaimKey {
    std::string claim_uid;
    std::string device;
    friend auto operator<=>(const ClaimKey&, const ClaimKey&) = default;
};

struct ClaimRecord {
    std::string profile;
    std::vector<unsigned> tables;  // one per address, in answer order
};

// `count` tables from `first` up that are not in `used`, skipping 0 and the kernel's reserved
// 253-255; throws ProviderError(500) when the table space is exhausted.
std::vector<unsigned> choose_tables(const std::set<unsigned>& used, unsigned first, std::size_t count);

// The records in <state_dir>/claims.json as they are on disk (nullopt: no file, nothing recorded),
// without creating anything: what the node agent's claim GC reads. Throws std::runtime_error naming
// the file when it cannot be parsed.
std::optional<std::map<ClaimKey, ClaimRecord>> read_claim_records(const std::string& state_dir);

class ClaimRecords {
public:
    // Loads <state_dir>/claims.json (creating the directory 0700 when missing). Throws
    // std::runtime_error naming the file when it exists but cannot be read or parsed.
    explicit ClaimRecords(std::string state_dir);

    // The claim's tables: the recorded ones when it holds `count` already, else fresh ones
    // (recorded before they are returned). Throws ProviderError(500) when the record cannot be written.
    std::vector<unsigned> tables_for(const ClaimKey& key, const std::string& profile, unsigned first,
                                     std::size_t count);
    // Forgets the claim's device; returns its record (nullopt when none).
    std::optional<ClaimRecord> forget(const ClaimKey& key);
    std::optional<ClaimRecord> find(const ClaimKey& key) const;
    std::map<ClaimKey, ClaimRecord> all() const;

private:
    void save() const;  // under mutex_

    std::string state_dir_;
    mutable std::mutex mutex_;
    std::map<ClaimKey, ClaimRecord> records_;
};

}  // namespace rdmanet::cni::node::dranet
