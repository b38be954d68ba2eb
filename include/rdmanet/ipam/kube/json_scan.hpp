#pragma once
// A strict RFC 8259 JSON scanner that reports what it reads to a handler, SAX style, without
// building anything: for the IPPool GET of every ADD/DEL (wire.cpp parse_pool_body), where a pool
// of 10k entries is ~700 kB and nlohmann's lexer (one virtual-ish read and one push_back per
// character) cost more CPU than the rest of the operation. Strings without escapes are handed out
// as views into the input; escaped ones are decoded (\uXXXX with surrogate pairs) into a buffer.
// Rejects what nlohmann rejects: control characters in strings, invalid UTF-8, bad escapes,
// numbers outside the grammar, trailing data; nesting deeper than kMaxDepth is refused too.
//
// Handler: start_object(), key(std::string_view), end_object(), start_array(), end_array(),
// string(std::string_view), null(), other_scalar() (numbers and booleans); each returns bool
// (false stops the scan). The views passed are valid only during the call, except a key's: it
// stays valid until the value of its member has been reported (handlers keep it as "the current
// key" instead of copying it).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rdmanet::ipam::kube {

namespace json_scan_detail {

// Well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
inline bool valid_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        int len = 0;
        std::uint32_t cp = 0, min = 0;
        if ((c & 0xE0) == 0xC0)
            len = 2, cp = c & 0x1F, min = 0x80;
        else if ((c & 0xF0) == 0xE0)
            len = 3, cp = c & 0x0F, min = 0x800;
        else if ((c & 0xF8) == 0xF0)
            len = 4, cp = c & 0x07, min = 0x10000;
        else
            return false;
        if (i + static_cast<std::size_t>(len) > s.size()) return false;
        for (int k = 1; k < len; ++k) {
            const auto cc = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
            if ((cc & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += static_cast<std::size_t>(len);
    }
    return true;
}

inline void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

template <class Handler>
class Scanner {
public:
    Scanner(std::string_view text, Handler& h) : s_(text), h_(h) {}

    bool run() {
        if (!value(0)) return false;
        ws();
        return i_ == s_.size();
    }

private:
    static constexpr int kMaxDepth = 128;

    void ws() {
        // Compact JSON (what the apiserver writes) has none: one comparison for that case.
        if (i_ < s_.size() && static_cast<unsigned char>(s_[i_]) > ' ') return;
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
    }
    bool at(char c) {
        ws();
        return i_ < s_.size() && s_[i_] == c;
    }

    bool value(int depth) {
        ws();
        if (i_ >= s_.size()) return false;
        switch (s_[i_]) {
        case '{': return object(depth + 1);
        case '[': return array(depth + 1);
        case '"': {
            std::string buf;
            std::string_view v;
            return string(buf, v) && h_.string(v);
        }
        case 'n': return literal("null") && h_.null();
        case 't': return literal("true") && h_.other_scalar();
        case 'f': return literal("false") && h_.other_scalar();
        default: return number() && h_.other_scalar();
        }
    }

    bool object(int depth) {
        if (depth > kMaxDepth || !h_.start_object()) return false;
        ++i_;  // '{'
        if (at('}')) {
            ++i_;
            return h_.end_object();
        }
        for (;;) {
            std::string buf;
            std::string_view k;
            if (!at('"') || !string(buf, k) || !h_.key(k)) return false;
            if (!at(':')) return false;
            ++i_;
            if (!value(depth)) return false;
            if (at(',')) {
                ++i_;
                continue;
            }
            if (!at('}')) return false;
            ++i_;
            return h_.end_object();
        }
    }

    bool array(int depth) {
        if (depth > kMaxDepth || !h_.start_array()) return false;
        ++i_;  // '['
        if (at(']')) {
            ++i_;
            return h_.end_array();
        }
        for (;;) {
            if (!value(depth)) return false;
            if (at(',')) {
                ++i_;
                continue;
            }
            if (!at(']')) return false;
            ++i_;
            return h_.end_array();
        }
    }

    bool literal(std::string_view word) {
        if (s_.substr(i_, word.size()) != word) return false;
        i_ += word.size();
        return true;
    }

    bool digits() {
        const std::size_t start = i_;
        while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
        return i_ > start;
    }

    bool number() {
        if (i_ < s_.size() && s_[i_] == '-') ++i_;
        if (i_ < s_.size() && s_[i_] == '0') {
            ++i_;
        } else if (!digits()) {
            return false;
        }
        if (i_ < s_.size() && s_[i_] == '.') {
            ++i_;
            if (!digits()) return false;
        }
        if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
            ++i_;
            if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
            if (!digits()) return false;
        }
        return true;
    }

    bool hex4(std::uint32_t& out) {
        if (i_ + 4 > s_.size()) return false;
        out = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = s_[i_++];
            out <<= 4;
            if (c >= '0' && c <= '9')
                out |= static_cast<std::uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f')
                out |= static_cast<std::uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                out |= static_cast<std::uint32_t>(c - 'A' + 10);
            else
                return false;
        }
        return true;
    }

    // Byte classes inside a string: plain, '"', '\\', control (invalid), non-ASCII (UTF-8 check).
    enum : std::uint8_t { kPlain, kQuote, kBackslash, kControl, kHigh };
    static constexpr std::array<std::uint8_t, 256> kClass = [] {
        std::array<std::uint8_t, 256> t{};
        for (int c = 0; c < 0x20; ++c) t[static_cast<std::size_t>(c)] = kControl;
        for (int c = 0x80; c < 0x100; ++c) t[static_cast<std::size_t>(c)] = kHigh;
        t['"'] = kQuote;
        t['\\'] = kBackslash;
        return t;
    }();

    // At '"': reads the string; `out` views the input (no escapes) or `buf`.
    bool string(std::string& buf, std::string_view& out) {
        ++i_;
        const std::size_t start = i_;
        bool high = false;
        const char* const data = s_.data();
        const std::size_t n = s_.size();
        while (i_ < n) {
            // The plain bytes (nearly all of a pool) in a tight loop; then what ended the run.
            // (Eight bytes at a time with bit tricks was no faster: the strings are short.)
            while (i_ < n && kClass[static_cast<unsigned char>(data[i_])] == kPlain) ++i_;
            if (i_ >= n) break;
            const std::uint8_t c = kClass[static_cast<unsigned char>(data[i_])];
            if (c == kQuote) {
                out = s_.substr(start, i_ - start);
                ++i_;
                return !high || valid_utf8(out);
            }
            if (c == kBackslash) break;
            if (c == kControl) return false;
            high = true;
            ++i_;
        }
        if (i_ >= n) return false;  // unterminated
        buf.assign(s_.data() + start, i_ - start);
        while (i_ < s_.size()) {
            const auto c = static_cast<unsigned char>(s_[i_++]);
            if (c == '"') {
                out = buf;
                return valid_utf8(buf);
            }
            if (c < 0x20) return false;
            if (c != '\\') {
                buf += static_cast<char>(c);
                continue;
            }
            if (i_ >= s_.size()) return false;
            switch (s_[i_++]) {
            case '"': buf += '"'; break;
            case '\\': buf += '\\'; break;
            case '/': buf += '/'; break;
            case 'b': buf += '\b'; break;
            case 'f': buf += '\f'; break;
            case 'n': buf += '\n'; break;
            case 'r': buf += '\r'; break;
            case 't': buf += '\t'; break;
            case 'u': {
                std::uint32_t cp = 0;
                if (!hex4(cp)) return false;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    std::uint32_t lo = 0;
                    if (s_.substr(i_, 2) != "\\u") return false;
                    i_ += 2;
                    if (!hex4(lo) || lo < 0xDC00 || lo > 0xDFFF) return false;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    return false;
                }
                append_utf8(buf, cp);
                break;
            }
            default: return false;
            }
        }
        return false;  // unterminated
    }

    std::string_view s_;
    std::size_t i_ = 0;
    Handler& h_;
};

}  // namespace json_scan_detail

// True when `text` is one well-formed JSON value and the handler accepted everything.
template <class Handler>
bool scan_json(std::string_view text, Handler& handler) {
    return json_scan_detail::Scanner<Handler>(text, handler).run();
}

}  // namespace rdmanet::ipam::kube
