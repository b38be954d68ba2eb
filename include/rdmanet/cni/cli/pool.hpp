#pragma once
// rdmanetctl: the node admin's inspection tool. The command-line wiring (CLI11) lives in
// cni/main/rdmanetctl.cpp; the commands are plain functions here so that they stay testable and
// the rdmanet_cni library does not depend on CLI11.
//
// Every command writes its answer to `out`, problems to `err`, and returns the process exit
// status (0 = success).
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/cni/node/kube.hpp"
#include "rdmanet/cni/modes/kernel.hpp"
#include "rdmanet/ipam/core/store.hpp"

namespace rdmanet::cni::cli {

struct PoolOptions {
    std::string data_dir = std::string(ipam::kDefaultDataDir);  // the local store's directory
    bool json = false;
    node::KubeOptions kube;  // set: list/show IPPools from the API
};

// A pool as a whereabouts IPPool object:
// {"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"IPPool","metadata":{"name":..},
//  "spec":{"range":..,"allocations":{"<decimal offset>":{"id","podref","ifname"}}}}
nlohmann::json ippool_json(const ipam::PoolDump& dump);

// `pool list`: one line per pool ("<name> <range> <allocation count>"), or with json a JSON array
// of IPPool objects. A data dir without a datastore holds no pools (nothing is created).
int pool_list(const PoolOptions& options, std::ostream& out, std::ostream& err);
// `pool show NAME`: one IPPool object; NAME is the IPPool name ("blue-10.0.0.0-16") or, when only
// one pool has it, the range ("10.0.0.0/16"). Unknown -> message on err, 1.
int pool_show(const PoolOptions& options, const std::string& name, std::ostream& out, std::ostream& err);
// `pool verify`: SqliteStore::verify(); one line per inconsistency on err and 1 when there is any.
int pool_verify(const PoolOptions& options, std::ostream& out, std::ostream& err);

// nv-ipam pools (ipam.poolName): the node's block or subnet of each pool it has used, from the
// node's cached copy (no API request). `source` says who wrote the status entry.
struct NvBlockUsage {
    std::string pool;  // "CIDRPool kube-system/rail1"
    std::string node;
    std::string block;    // "10.0.3.0/24" or "192.168.0.101-192.168.0.200"
    std::string gateway;  // "" = none
    std::uint64_t used = 0;
    std::uint64_t free = 0;
    std::string source;  // nv-ipam's controller, or rdmanet (claimed without it)
};
std::vector<NvBlockUsage> nv_block_usage(const std::string& data_dir);
// `pool blocks`: one line per block, or a JSON array with json.
int pool_blocks(const PoolOptions& options, std::ostream& out, std::ostream& err);

// `reconcile` (Kubernetes datastore): releases allocations whose pod no longer exists and
// reservations no pool entry accounts for; prints what it released (dry_run: what it would).
int reconcile(const node::KubeOptions& options, bool dry_run, std::ostream& out, std::ostream& err);

// `reconcile --local`: one repair pass over this node's attachment states (the plugin's, in the
// node policy's stateDir; the repair runs the plugin's own DEL, which reads them there).
struct LocalReconcileOptions {
    bool dry_run = false;
    KernelServices services;  // null members: the real kernel
};
// Prints one line per repair ("repaired NETWORK CONTAINER IFNAME (MODE): netns PATH gone"), one
// per failure on err, and a summary; 0 when nothing failed, 1 otherwise.
int reconcile_local(const LocalReconcileOptions& options, std::ostream& out, std::ostream& err);

}  // namespace rdmanet::cni::cli
