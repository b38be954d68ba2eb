#pragma once
// Which node this is, resolved as whereabouts resolves it: $NODENAME, else the first line of the
// file `nodename` in the configuration directory (the installer writes it from the pod's
// spec.nodeName), else the host name (/etc/hostname, then gethostname()). The name must be a
// valid Kubernetes object name part (lower-case DNS label characters and dots), since it goes
// into the slice IPPools' names.
#include <optional>
#include <string>
#include <string_view>

namespace rdmanet::ipam::kube {

// Whether `name` can be a Node's name: lower-case letters, digits, '-' and '.', at most 253
// characters, starting and ending with a letter or digit (a DNS subdomain). Node names read from
// API objects go into request paths and object names, so they are checked with this first.
bool valid_node_name(std::string_view name);

// Pure: picks the first non-empty of the three sources (trimmed) and validates it. Throws
// IpamError(invalid_config) saying where the name came from and how to set it when none is usable.
std::string choose_node_name(std::optional<std::string> env_nodename, std::optional<std::string> nodename_file,
                             std::optional<std::string> hostname, std::string_view config_dir);

// The effects: reads <config_dir>/nodename (unless `env_nodename` is set), /etc/hostname and
// gethostname(). `env_nodename` is $NODENAME as the caller read it with the rest of the CNI
// environment: the IPAM library reads no environment variable itself.
std::string resolve_node_name(const std::optional<std::string>& env_nodename, const std::string& config_dir);

}  // namespace rdmanet::ipam::kube
