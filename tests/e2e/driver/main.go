// cni-driver: the real caller for the end-to-end tests. It drives a conflist through Debian's
// libcni 1.1.2 exactly as a container runtime does (name/cniVersion injection, capability
// filtering, result cache, prevResult on CHECK/DEL), so the plugin is tested against the code
// that runtimes actually link instead of against our own reading of the spec.
//
// With --conf instead of --conflist it drives ONE plugin configuration (no list) through
// AddNetwork/CheckNetwork/DelNetwork: the call DRA drivers make that run a single plugin from a
// NetworkAttachmentDefinition (dra-driver-sriov in STANDALONE mode).
//
// Usage:
//
//	cni-driver <add|check|del> (--conflist FILE | --conf FILE) --netns PATH --ifname IF --container-id ID
//	    [--cni-path P] [--cap-args JSON] [--args "K=V;K=V"] [--cache-dir DIR] [--timeout DUR]
//
// Success: add prints the result (converted to the list's or config's cniVersion) on stdout; check and del
// print nothing. Failure: {"code":N,"msg":"...","details":"..."} on stdout and exit status 1;
// the code is the plugin's (or libcni's) *types.Error code, 999 for any other error.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
)

// errInternal mirrors the Go library's "internal error" code for failures that carry none.
const errInternal = 999

type options struct {
	conflist    string
	conf        string
	netns       string
	ifname      string
	containerID string
	cniPath     string
	capArgs     string
	args        string
	cacheDir    string
	timeout     time.Duration
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	verb := os.Args[1]
	opts, err := parseFlags(os.Args[2:])
	if err != nil {
		fail(err)
	}
	if err := run(verb, opts); err != nil {
		fail(err)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: cni-driver <add|check|del> (--conflist FILE | --conf FILE) --netns PATH --ifname IF "+
		"--container-id ID [--cni-path P] [--cap-args JSON] [--args K=V;K=V] [--cache-dir DIR] [--timeout DUR]")
	os.Exit(2)
}

func parseFlags(argv []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("cni-driver", flag.ContinueOnError)
	fs.StringVar(&o.conflist, "conflist", "", "conflist file")
	fs.StringVar(&o.conf, "conf", "", "single plugin configuration file (no list)")
	fs.StringVar(&o.netns, "netns", "", "network namespace path")
	fs.StringVar(&o.ifname, "ifname", "", "interface name inside the netns")
	fs.StringVar(&o.containerID, "container-id", "", "container id")
	fs.StringVar(&o.cniPath, "cni-path", os.Getenv("CNI_PATH"), "plugin search path (':'-separated)")
	fs.StringVar(&o.capArgs, "cap-args", "", "capability args as a JSON object")
	fs.StringVar(&o.args, "args", "", "CNI_ARGS as K=V;K=V")
	fs.StringVar(&o.cacheDir, "cache-dir", "", "libcni result cache directory")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "overall deadline for the plugin calls")
	if err := fs.Parse(argv); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if (o.conflist == "") == (o.conf == "") {
		return nil, errors.New("exactly one of --conflist and --conf is required")
	}
	return o, nil
}

func run(verb string, o *options) error {
	rt, err := runtimeConf(o)
	if err != nil {
		return err
	}
	// Exec nil: libcni's default exec, i.e. the same fork/exec path a runtime uses.
	cni := libcni.NewCNIConfigWithCacheDir(filepath.SplitList(o.cniPath), o.cacheDir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	if o.conf != "" {
		return runSingle(ctx, cni, verb, o.conf, rt)
	}
	list, err := libcni.ConfListFromFile(o.conflist)
	if err != nil {
		return err
	}
	switch verb {
	case "add":
		result, err := cni.AddNetworkList(ctx, list, rt)
		if err != nil {
			return err
		}
		return printResult(result, list.CNIVersion)
	case "check":
		return cni.CheckNetworkList(ctx, list, rt)
	case "del":
		return cni.DelNetworkList(ctx, list, rt)
	default:
		return fmt.Errorf("unknown verb %q (want add, check or del)", verb)
	}
}

// runSingle is run's counterpart for one plugin configuration: libcni parses it from bytes as a
// DRA driver does with the NetworkAttachmentDefinition's config, and calls the plugin once.
func runSingle(ctx context.Context, cni *libcni.CNIConfig, verb, path string, rt *libcni.RuntimeConf) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	conf, err := libcni.ConfFromBytes(data)
	if err != nil {
		return err
	}
	switch verb {
	case "add":
		result, err := cni.AddNetwork(ctx, conf, rt)
		if err != nil {
			return err
		}
		return printResult(result, conf.Network.CNIVersion)
	case "check":
		return cni.CheckNetwork(ctx, conf, rt)
	case "del":
		return cni.DelNetwork(ctx, conf, rt)
	default:
		return fmt.Errorf("unknown verb %q (want add, check or del)", verb)
	}
}

func runtimeConf(o *options) (*libcni.RuntimeConf, error) {
	rt := &libcni.RuntimeConf{
		ContainerID: o.containerID,
		NetNS:       o.netns,
		IfName:      o.ifname,
	}
	if o.args != "" {
		// Same shape cnitool accepts: pairs split on ';', each on its first '='.
		for _, pair := range strings.Split(o.args, ";") {
			if pair == "" {
				continue
			}
			kv := strings.SplitN(pair, "=", 2)
			if len(kv) != 2 {
				return nil, fmt.Errorf("invalid --args pair %q", pair)
			}
			rt.Args = append(rt.Args, [2]string{kv[0], kv[1]})
		}
	}
	if o.capArgs != "" {
		if err := json.Unmarshal([]byte(o.capArgs), &rt.CapabilityArgs); err != nil {
			return nil, fmt.Errorf("invalid --cap-args: %w", err)
		}
	}
	return rt, nil
}

func printResult(result types.Result, version string) error {
	converted, err := result.GetAsVersion(version)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(converted, "", "    ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(os.Stdout, "%s\n", data)
	return err
}

// fail prints the error the way a plugin would and exits 1. libcni wraps plugin errors
// ("plugin type=... failed (add): ..."), so the *types.Error is dug out with errors.As to keep
// the plugin's own code, msg and details intact.
func fail(err error) {
	out := types.Error{Code: errInternal, Msg: err.Error()}
	var cniErr *types.Error
	if errors.As(err, &cniErr) {
		out = *cniErr
	}
	data, merr := json.Marshal(map[string]interface{}{
		"code": out.Code, "msg": out.Msg, "details": out.Details,
	})
	if merr != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stdout, "%s\n", data)
	os.Exit(1)
}
