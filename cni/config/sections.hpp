#pragma once
// One parser per group of the common network configuration keys; config.cpp runs them in order
// (a mode's own keys are parsed by the mode). Each one
// reads from the top-level object and fills its part of NetConf. Errors are invalid_config (7)
// naming the key.
#include "rdmanet/cni/config/config.hpp"
#include "rdmanet/cni/config/mode_keys.hpp"
#include "rdmanet/cni/protocol/json_fields.hpp"

namespace rdmanet::cni {

void parse_logging(const JsonFields& top, NetConf& conf, const Attempt& attempt);
void parse_runtime_config(const JsonFields& top, NetConf& conf, const Attempt& attempt);
void parse_args(const JsonFields& top, NetConf& conf, const Attempt& attempt);
void parse_ipam(const JsonFields& top, NetConf& conf, const Attempt& attempt);
void parse_dns(const JsonFields& top, NetConf& conf, const Attempt& attempt);
// prevResult; `required` for CHECK.
void parse_prev_result(const JsonFields& top, NetConf& conf, const Attempt& attempt, bool required);
// The "rdma" object (rdma_section.cpp): isolation auto|required|off.
void parse_rdma(const JsonFields& top, NetConf& conf, const Attempt& attempt);
// "policyRouting", "sysctl" and "ipv6" (pod_section.cpp): the pod side of the interface.
void parse_pod_settings(const JsonFields& top, NetConf& conf, const Attempt& attempt);
// cni.dev/valid-attachments, else the legacy cni.dev/attachments.
void parse_valid_attachments(const JsonFields& top, NetConf& conf, const Attempt& attempt);

}  // namespace rdmanet::cni
