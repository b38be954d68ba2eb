/*
 * kernel_floor: the kernel work of one CNI ADD or DEL, and nothing else, as a floor for the
 * benchmark. Raw rtnetlink (no libnl), one request per step, each acknowledged:
 *
 *   macvlan add: RTM_NEWLINK macvlan on MASTER created directly in the pod netns (IFLA_NET_NS_FD)
 *                under a temporary name; inside the pod one RTM_SETLINK rename+UP, one RTM_NEWADDR
 *   macvlan del: RTM_DELLINK of IFNAME inside the pod
 *   hostdev add: one RTM_SETLINK moving DEVICE into the pod and renaming it to IFNAME in the same
 *                call; inside the pod one RTM_SETLINK UP, one RTM_NEWADDR
 *   hostdev del: one RTM_SETLINK from inside the pod moving IFNAME back to the host as DEVICE
 *
 * Each verb is its own process, like a CNI plugin call, so the floor includes one fork/exec.
 *
 * usage: kernel_floor macvlan add|del MASTER NETNS_PATH IFNAME CIDR
 *        kernel_floor hostdev add|del DEVICE NETNS_PATH IFNAME CIDR
 * Exit 0 on success; the failing step and errno on stderr otherwise.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

unsigned int if_nametoindex(const char *ifname); /* <net/if.h> clashes with <linux/if.h> */

#define BUF_SIZE 4096

struct request {
	struct nlmsghdr *nh;
	char buf[BUF_SIZE] __attribute__((aligned(NLMSG_ALIGNTO)));
};

static void die(const char *step)
{
	fprintf(stderr, "kernel_floor: %s: %s\n", step, strerror(errno));
	exit(1);
}

static struct rtattr *add_attr(struct request *r, unsigned short type, const void *data, size_t len)
{
	struct rtattr *rta = (struct rtattr *)((char *)r->nh + NLMSG_ALIGN(r->nh->nlmsg_len));
	if (NLMSG_ALIGN(r->nh->nlmsg_len) + RTA_SPACE(len) > BUF_SIZE) {
		errno = EMSGSIZE;
		die("building request");
	}
	rta->rta_type = type;
	rta->rta_len = RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(rta), data, len);
	r->nh->nlmsg_len = NLMSG_ALIGN(r->nh->nlmsg_len) + RTA_ALIGN(rta->rta_len);
	return rta;
}

static void add_u32(struct request *r, unsigned short type, __u32 v) { add_attr(r, type, &v, sizeof v); }
static void add_str(struct request *r, unsigned short type, const char *s) { add_attr(r, type, s, strlen(s) + 1); }
static struct rtattr *nest_start(struct request *r, unsigned short type) { return add_attr(r, type, NULL, 0); }
static void nest_end(struct request *r, struct rtattr *nest)
{
	nest->rta_len = (unsigned short)((char *)r->nh + r->nh->nlmsg_len - (char *)nest);
}

static struct ifinfomsg *link_request(struct request *r, unsigned short type, unsigned short flags, int index)
{
	memset(r->buf, 0, sizeof r->buf);
	r->nh = (struct nlmsghdr *)r->buf;
	r->nh->nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
	r->nh->nlmsg_type = type;
	r->nh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	struct ifinfomsg *ifi = NLMSG_DATA(r->nh);
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = index;
	return ifi;
}

/* A socket is bound to the netns it was created in: open it after setns to talk to the pod. */
static int rtnl_open(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		die("socket(NETLINK_ROUTE)");
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("bind");
	return fd;
}

/* Sends one request and waits for its ACK; exits with the kernel's error on failure. */
static void rtnl_talk(int fd, struct request *r, const char *step)
{
	static __u32 seq;
	r->nh->nlmsg_seq = ++seq;
	if (send(fd, r->nh, r->nh->nlmsg_len, 0) < 0)
		die(step);
	char reply[BUF_SIZE] __attribute__((aligned(NLMSG_ALIGNTO)));
	for (;;) {
		ssize_t n = recv(fd, reply, sizeof reply, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die(step);
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)reply; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != r->nh->nlmsg_seq || h->nlmsg_type != NLMSG_ERROR)
				continue;
			struct nlmsgerr *e = NLMSG_DATA(h);
			if (e->error == 0)
				return;
			errno = -e->error;
			die(step);
		}
	}
}

static void set_up(int fd, int index, const char *new_name)
{
	struct request r;
	struct ifinfomsg *ifi = link_request(&r, RTM_SETLINK, 0, index);
	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	if (new_name)
		add_str(&r, IFLA_IFNAME, new_name);
	rtnl_talk(fd, &r, new_name ? "RTM_SETLINK rename+up" : "RTM_SETLINK up");
}

static void add_address(int fd, int index, const char *cidr)
{
	char ip[64];
	const char *slash = strchr(cidr, '/');
	size_t len = slash ? (size_t)(slash - cidr) : strlen(cidr);
	if (len >= sizeof ip) {
		errno = EINVAL;
		die("parsing CIDR");
	}
	memcpy(ip, cidr, len);
	ip[len] = '\0';
	struct in_addr a;
	if (inet_pton(AF_INET, ip, &a) != 1) {
		errno = EINVAL;
		die("parsing CIDR (IPv4 only)");
	}

	struct request r;
	memset(r.buf, 0, sizeof r.buf);
	r.nh = (struct nlmsghdr *)r.buf;
	r.nh->nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
	r.nh->nlmsg_type = RTM_NEWADDR;
	r.nh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
	struct ifaddrmsg *ifa = NLMSG_DATA(r.nh);
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = slash ? (unsigned char)atoi(slash + 1) : 32;
	ifa->ifa_index = (unsigned)index;
	add_attr(&r, IFA_LOCAL, &a, sizeof a);
	add_attr(&r, IFA_ADDRESS, &a, sizeof a);
	rtnl_talk(fd, &r, "RTM_NEWADDR");
}

static int open_ns(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(path);
	return fd;
}

static void enter_ns(int nsfd)
{
	if (setns(nsfd, CLONE_NEWNET) < 0)
		die("setns");
}

static int index_of(const char *name)
{
	int index = (int)if_nametoindex(name);
	if (index == 0)
		die(name);
	return index;
}

static void macvlan_add(const char *master, const char *netns, const char *ifname, const char *cidr)
{
	int host = rtnl_open();
	int pod_ns = open_ns(netns);
	char tmp[IFNAMSIZ];
	snprintf(tmp, sizeof tmp, "kf%08x", (unsigned)getpid());

	struct request r;
	link_request(&r, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0);
	add_str(&r, IFLA_IFNAME, tmp);
	add_u32(&r, IFLA_LINK, (__u32)index_of(master));
	add_u32(&r, IFLA_NET_NS_FD, (__u32)pod_ns);
	struct rtattr *info = nest_start(&r, IFLA_LINKINFO);
	add_str(&r, IFLA_INFO_KIND, "macvlan");
	struct rtattr *data = nest_start(&r, IFLA_INFO_DATA);
	add_u32(&r, IFLA_MACVLAN_MODE, MACVLAN_MODE_BRIDGE);
	nest_end(&r, data);
	nest_end(&r, info);
	rtnl_talk(host, &r, "RTM_NEWLINK macvlan");

	enter_ns(pod_ns);
	int pod = rtnl_open();
	int index = index_of(tmp);
	set_up(pod, index, ifname);
	add_address(pod, index, cidr);
}

static void macvlan_del(const char *netns, const char *ifname)
{
	enter_ns(open_ns(netns));
	int pod = rtnl_open();
	struct request r;
	link_request(&r, RTM_DELLINK, 0, index_of(ifname));
	rtnl_talk(pod, &r, "RTM_DELLINK");
}

static void hostdev_add(const char *device, const char *netns, const char *ifname, const char *cidr)
{
	int host = rtnl_open();
	int pod_ns = open_ns(netns);
	struct request r;
	link_request(&r, RTM_SETLINK, 0, index_of(device));
	add_u32(&r, IFLA_NET_NS_FD, (__u32)pod_ns);
	add_str(&r, IFLA_IFNAME, ifname);
	rtnl_talk(host, &r, "RTM_SETLINK move+rename");

	enter_ns(pod_ns);
	int pod = rtnl_open();
	int index = index_of(ifname);
	set_up(pod, index, NULL);
	add_address(pod, index, cidr);
}

static void hostdev_del(const char *device, const char *netns, const char *ifname)
{
	int host_ns = open_ns("/proc/self/ns/net");
	enter_ns(open_ns(netns));
	int pod = rtnl_open();
	struct request r;
	link_request(&r, RTM_SETLINK, 0, index_of(ifname));
	add_u32(&r, IFLA_NET_NS_FD, (__u32)host_ns);
	add_str(&r, IFLA_IFNAME, device);
	rtnl_talk(pod, &r, "RTM_SETLINK move+rename back");
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: %s macvlan|hostdev add|del MASTER_OR_DEVICE NETNS_PATH IFNAME CIDR\n", argv[0]);
		return 2;
	}
	const char *mode = argv[1], *verb = argv[2], *dev = argv[3], *netns = argv[4], *ifname = argv[5];
	int add = strcmp(verb, "add") == 0;
	if (!add && strcmp(verb, "del") != 0) {
		fprintf(stderr, "kernel_floor: verb must be add or del\n");
		return 2;
	}
	if (strcmp(mode, "macvlan") == 0) {
		if (add)
			macvlan_add(dev, netns, ifname, argv[6]);
		else
			macvlan_del(netns, ifname);
	} else if (strcmp(mode, "hostdev") == 0) {
		if (add)
			hostdev_add(dev, netns, ifname, argv[6]);
		else
			hostdev_del(dev, netns, ifname);
	} else {
		fprintf(stderr, "kernel_floor: mode must be macvlan or hostdev\n");
		return 2;
	}
	return 0;
}
