// Fast compact JSON serializer: see json_writer.hpp.
#include "json_writer.hpp"

#include "member_text.hpp"

#include <array>
#include <charconv>

namespace apiserver {

namespace {

// Characters that cannot be copied as they are: '"', '\\' and the control characters.
constexpr std::array<bool, 256> kNeedsEscape = [] {
    std::array<bool, 256> t{};
    for (int c = 0; c < 0x20; ++c) t[static_cast<std::size_t>(c)] = true;
    t['"'] = true;
    t['\\'] = true;
    return t;
}();

void write_string(const std::string& s, std::string& out) {
    out += '"';
    const char* p = s.data();
    const char* end = p + s.size();
    while (p < end) {
        const char* run = p;
        while (p < end && !kNeedsEscape[static_cast<unsigned char>(*p)]) ++p;
        out.append(run, static_cast<std::size_t>(p - run));
        if (p == end) break;
        const auto c = static_cast<unsigned char>(*p++);
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default: {
            static constexpr char hex[] = "0123456789abcdef";
            const char u[] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            out.append(u, sizeof u);
        }
        }
    }
    out += '"';
}

template <class Int>
void write_integer(Int v, std::string& out) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, static_cast<std::size_t>(r.ptr - buf));
}

}  // namespace

void write_json(const nlohmann::json& v, std::string& out) { write_json(v, out, nullptr, MemberText()); }

void write_member(const std::string& key, const nlohmann::json& value, std::string& out) {
    write_string(key, out);
    out += ':';
    write_json(value, out);
}

void write_json(const nlohmann::json& v, std::string& out, const nlohmann::json* cached_node, const MemberText& cache) {
    using t = nlohmann::json::value_t;
    if (&v == cached_node) {
        cache.write(out);
        return;
    }
    switch (v.type()) {
    case t::object: {
        out += '{';
        bool first = true;
        for (const auto& [key, member] : v.get_ref<const nlohmann::json::object_t&>()) {
            if (!first) out += ',';
            first = false;
            write_string(key, out);
            out += ':';
            write_json(member, out, cached_node, cache);
        }
        out += '}';
        break;
    }
    case t::array: {
        out += '[';
        bool first = true;
        for (const auto& element : v.get_ref<const nlohmann::json::array_t&>()) {
            if (!first) out += ',';
            first = false;
            write_json(element, out, cached_node, cache);
        }
        out += ']';
        break;
    }
    case t::string: write_string(v.get_ref<const std::string&>(), out); break;
    case t::boolean: out += v.get<bool>() ? "true" : "false"; break;
    case t::null: out += "null"; break;
    case t::number_integer: write_integer(v.get<std::int64_t>(), out); break;
    case t::number_unsigned: write_integer(v.get<std::uint64_t>(), out); break;
    default: out += v.dump(); break;  // floats (nlohmann's shortest round-trip format), binary, discarded
    }
}

}  // namespace apiserver
