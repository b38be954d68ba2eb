#include "rdmanet/cni/protocol/value_checks.hpp"

namespace rdmanet::cni::checks {

namespace {

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

int hex_value(char c) {
    if (is_digit(c)) return c - '0';
    return (c | 0x20) - 'a' + 10;
}

// `octets` hex pairs separated by ':'.
bool is_colon_hex(std::string_view text, std::size_t octets) {
    if (text.size() != octets * 3 - 1) return false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        bool separator = i % 3 == 2;
        if (separator ? text[i] != ':' : !is_hex(text[i])) return false;
    }
    return true;
}

bool has_control_character(std::string_view text) {
    for (unsigned char c : text)
        if (c < 0x20 || c == 0x7f) return true;
    return false;
}

}  // namespace

bool is_mac(std::string_view text) { return is_colon_hex(text, 6); }

bool is_assignable_mac(std::string_view text) {
    if (!is_mac(text)) return false;
    bool multicast = hex_value(text[1]) & 1;  // I/G bit of the first octet
    bool all_zero = true;
    for (char c : text) all_zero = all_zero && (c == '0' || c == ':');
    return !multicast && !all_zero;
}

bool is_guid(std::string_view text) { return is_colon_hex(text, 8); }

bool is_pci_address(std::string_view text) {
    // dddd:bb:dd.f
    if (text.size() != 12 || text[4] != ':' || text[7] != ':' || text[10] != '.') return false;
    for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
        if (!is_hex(text[i])) return false;
    return text[11] >= '0' && text[11] <= '7';
}

bool is_auxiliary_device_id(std::string_view text) {
    if (text.empty() || text.size() > 255 || !is_letter(text.front())) return false;
    if (text.find('.') == std::string_view::npos || text.back() == '.') return false;
    for (char c : text)
        if (!is_letter(c) && !is_digit(c) && c != '_' && c != '.' && c != '-') return false;
    return true;
}

bool is_device_plugin_index(std::string_view text) {
    if (text.empty()) return false;
    for (char c : text)
        if (!is_digit(c)) return false;
    return true;
}

bool is_safe_absolute_path(std::string_view text) {
    if (text.empty() || text.front() != '/' || has_control_character(text)) return false;
    std::string_view rest = text;
    while (!rest.empty()) {
        auto slash = rest.find('/');
        if (rest.substr(0, slash) == "..") return false;
        rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    }
    return true;
}

bool is_sys_devices_path(std::string_view text) {
    constexpr std::string_view kRoot = "/sys/devices/";
    return text.size() > kRoot.size() && text.substr(0, kRoot.size()) == kRoot && is_safe_absolute_path(text);
}

bool is_plain_file_name(std::string_view text) {
    return !text.empty() && text != "." && text != ".." && text.find('/') == std::string_view::npos &&
           !has_control_character(text);
}

std::string lowercase(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

}  // namespace rdmanet::cni::checks
