#pragma once
// One parser per group of network configuration keys; config.cpp runs them in order. Each one
// reads from the top-level object and fills its part of NetConf. Errors are invalid_config (7)
// naming the key.
#include "rdmanet/cni/protocol/json_fields.hpp"
#include "rdmanet/cni/config/config.hpp"
#include "rdmanet/cni/protocol/error.hpp"

namespace rdmanet::cni {

// Runs one key's parser. A strict parse (ADD, CHECK) fails on the first bad key; a lenient one
// (DEL, GC, STATUS) leaves that key at its default and goes on, so teardown never depends on a
// config that has since become invalid.
struct Attempt {
    bool strict = true;
    template <class Parse>
    void operator()(Parse&& parse) const {
        if (strict) {
            parse();
            return;
        }
        try {
            parse();
        } catch (const Error&) {
        }
    }
};

void parse_logging(const JsonFields& top, NetConf& conf, const Attempt& attempt);
void parse_runtime_config(const JsonFields& top, NetConf& conf, const Attempt& attempt);
void parse_args(const JsonFields& top, NetConf& conf, const Attempt& attempt);
void parse_ipam(const JsonFields& top, NetConf& conf, const Attempt& attempt);
void parse_dns(const JsonFields& top, NetConf& conf, const Attempt& attempt);
// prevResult; `required` for CHECK.
void parse_prev_result(const JsonFields& top, NetConf& conf, const Attempt& attempt, bool required);
// mode; `required` on ADD/CHECK, else a missing or bad mode keeps the default.
void parse_mode(const JsonFields& top, NetConf& conf, const Attempt& attempt, bool required);
// The keys of conf.mode's backend; `required` enforces master / a hostdev selector.
void parse_macvlan(const JsonFields& top, NetConf& conf, const Attempt& attempt, bool required);
// Runs after parse_runtime_config: runtimeConfig.deviceID takes precedence.
void parse_hostdev(const JsonFields& top, NetConf& conf, const Attempt& attempt, bool required);
// mode "sriov" (config_sriov.cpp): deviceID like hostdev (a PCI address is required on ADD/CHECK),
// the VF settings validated as sriov-cni / ib-sriov-cni do.
void parse_sriov(const JsonFields& top, NetConf& conf, const Attempt& attempt, bool required);
// mode "ipoib" (config_rdma.cpp): master (required on ADD/CHECK), pkey, ipoibMode, mtu.
void parse_ipoib(const JsonFields& top, NetConf& conf, const Attempt& attempt, bool required);
// The "rdma" object (config_rdma.cpp): isolation auto|required|off.
void parse_rdma(const JsonFields& top, NetConf& conf, const Attempt& attempt);
// cni.dev/valid-attachments, else the legacy cni.dev/attachments.
void parse_valid_attachments(const JsonFields& top, NetConf& conf, const Attempt& attempt);

}  // namespace rdmanet::cni
