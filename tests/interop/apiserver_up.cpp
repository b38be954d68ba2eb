// interop_apiserver OUTDIR: a real kube-apiserver + etcd (tests/apiserver/real_apiserver.hpp) for
// the shell suites of tests/interop, which drive real peers (whereabouts, Multus, cnitool) that
// only take a kubeconfig. It starts the server in the network namespace it is run in (the suites
// run it inside the namespace they made, so the peers reach 127.0.0.1 there), writes
//   OUTDIR/sa.kubeconfig     the rdmanet service account of deploy/rbac.yaml (what the product gets)
//   OUTDIR/admin.kubeconfig  an admin (system:masters): the peers and the suite's own requests
//   OUTDIR/server.env        URL=..., ADMIN_TOKEN=..., CA=... for curl
//   OUTDIR/ready             last, once all of the above exist
// and serves until SIGTERM, SIGINT or SIGHUP (or the death of its parent), then stops both
// processes. Exit 77 when no binaries are found (the suite decides whether that is a skip).
#include <signal.h>
#include <sys/prctl.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "real_apiserver.hpp"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: interop_apiserver OUTDIR\n";
        return 2;
    }
    const fs::path out = argv[1];
    // Block the stop signals before anything starts, so none is lost between start and sigwait.
    sigset_t stop;
    sigemptyset(&stop);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop, s);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() == 1) return 1;  // the parent is already gone

    std::string why;
    if (!apiserver_test::find_real_binaries(&why)) {
        std::cerr << "interop_apiserver: no real kube-apiserver: " << why << "\n";
        return apiserver_test::kSkipExitCode;
    }
    try {
        apiserver_test::RealApiServer server;
        apiserver_test::KubeconfigOptions sa;
        sa.ns = "kube-system";
        apiserver_test::KubeconfigOptions admin = sa;
        admin.token = server.admin_token();
        fs::create_directories(out);
        const auto copy = [&](const std::string& from, const char* name) {
            fs::copy_file(from, out / name, fs::copy_options::overwrite_existing);
            fs::permissions(out / name, fs::perms::owner_read | fs::perms::owner_write);
        };
        copy(server.write_kubeconfig("interop-sa.kubeconfig", sa), "sa.kubeconfig");
        copy(server.write_kubeconfig("interop-admin.kubeconfig", admin), "admin.kubeconfig");
        copy(server.ca_file(), "ca.crt");
        std::ofstream(out / "server.env") << "URL=" << server.url() << "\nADMIN_TOKEN=" << server.admin_token()
                                          << "\nCA=" << (out / "ca.crt").string() << "\n";
        std::ofstream(out / "ready") << server.apiserver_pid() << "\n";
        int got = 0;
        sigwait(&stop, &got);
    } catch (const std::exception& e) {
        std::cerr << "interop_apiserver: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
