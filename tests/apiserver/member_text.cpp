// Per-member text cache: see member_text.hpp.
#include "member_text.hpp"

#include <algorithm>

namespace apiserver {

void MemberText::rebuild(const nlohmann::json& object) {
    members_.clear();
    const auto& map = object.get_ref<const nlohmann::json::object_t&>();
    members_.reserve(map.size());
    for (const auto& [key, value] : map) {
        std::string text;
        write_member(key, value, text);
        members_.emplace_back(key, std::move(text));
    }
}

void MemberText::update(const nlohmann::json& object, const std::vector<std::string>& keys) {
    const auto& map = object.get_ref<const nlohmann::json::object_t&>();
    for (const std::string& key : keys) {
        auto it = std::lower_bound(members_.begin(), members_.end(), key,
                                   [](const auto& member, const std::string& k) { return member.first < k; });
        const bool cached = it != members_.end() && it->first == key;
        auto now = map.find(key);
        if (now == map.end()) {
            if (cached) members_.erase(it);
            continue;
        }
        std::string text;
        write_member(key, now->second, text);
        if (cached) {
            it->second = std::move(text);
        } else {
            members_.emplace(it, key, std::move(text));
        }
    }
}

void MemberText::write(std::string& out) const {
    out += '{';
    bool first = true;
    for (const auto& [key, text] : members_) {
        if (!first) out += ',';
        first = false;
        out += text;
    }
    out += '}';
}

}  // namespace apiserver
