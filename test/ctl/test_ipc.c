/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/ipc: framing, descriptor passing, validation, shared rings. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc.h"
#include "ipc_shm.h"
#include "ipc_verbs.h"

static int sv[2];

static void pair_up(void)
{
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

static void pair_down(void)
{
	close(sv[0]);
	close(sv[1]);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	cr_assert_not_null(d);
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

TestSuite(ipc, .init = pair_up, .fini = pair_down, .timeout = 10);

Test(ipc, op_table_is_consistent)
{
	size_t max = 0;

	for (uint32_t op = 0; op < IPC_OP_MAX + 5; op++) {
		const struct ipc_op_desc *d = ipc_op_desc(op);

		if (d == NULL)
			continue;
		cr_assert(d->req_size > 0 && d->rsp_size > 0, "%s sizes", d->name);
		cr_assert(d->req_fds <= IPC_MAX_FDS && d->rsp_fds <= IPC_MAX_FDS);
		max = d->req_size > max ? d->req_size : max;
		max = d->rsp_size > max ? d->rsp_size : max;
	}
	cr_assert_null(ipc_op_desc(0));
	cr_assert_null(ipc_op_desc(IPC_OP_MAX));
	cr_assert_str_eq(ipc_op_name(IPC_OP_QUERY_PORT), "QUERY_PORT");
	cr_assert_str_eq(ipc_op_name(999), "?");
	cr_assert_geq(ipc_msg_max(), sizeof(struct ipc_hdr) + max);
}

Test(ipc, request_response_round_trip_with_memfd)
{
	struct ipc_msg m, r;
	int fds[IPC_MAX_FDS], fd = ipc_shm_create("t", 4096);
	unsigned int n;
	char *p, *q;

	cr_assert_geq(fd, 0);
	p = ipc_shm_map(fd, 4096, 0);
	cr_assert_not_null(p);
	strcpy(p, "shared bytes");

	ipc_req_init(&m, IPC_OP_REG_MR, 7);
	memset(&m.u.req_REG_MR, 0, sizeof(m.u.req_REG_MR));
	m.u.req_REG_MR.length = 4096;
	cr_assert_eq(ipc_send(sv[0], &m, &fd, 1), 0);
	cr_assert_eq(ipc_recv(sv[1], &r, fds, &n, IPC_REQUEST),
		     (ssize_t)(sizeof(r.hdr) + sizeof(r.u.req_REG_MR)));
	cr_assert_eq(n, 1);
	cr_assert_eq(r.hdr.op, IPC_OP_REG_MR);
	cr_assert_eq(r.hdr.seq, 7);
	cr_assert_eq(r.u.req_REG_MR.length, 4096);
	cr_assert_neq(fds[0], fd, "a new descriptor for the same file");
	q = ipc_shm_map(fds[0], 4096, 0);
	cr_assert_not_null(q);
	cr_assert_str_eq(q, "shared bytes");
	q[0] = 'S';
	cr_assert_eq(p[0], 'S', "both mappings see the same pages");
	cr_assert_eq(ipc_shm_check(fds[0], 4096), 0);
	cr_assert_eq(ipc_shm_check(fds[0], 8192), -EINVAL);
	munmap(p, 4096);
	munmap(q, 4096);
	close(fd);
	close(fds[0]);
}

Test(ipc, unsealed_memfd_is_refused)
{
	int fd = memfd_create("plain", MFD_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	cr_assert_eq(ipc_shm_check(fd, 4096), -EPERM);
	close(fd);
	fd = open("/dev/null", O_RDWR);
	cr_assert_eq(ipc_shm_check(fd, 1), -EPERM, "not a memfd: no seals");
	close(fd);
}

Test(ipc, truncated_message_is_rejected)
{
	struct ipc_msg m, r;
	int fds[IPC_MAX_FDS];
	unsigned int n;

	ipc_req_init(&m, IPC_OP_QUERY_PORT, 1);
	/* Claims the full length but only the header and half the body arrive. */
	cr_assert_eq(send(sv[0], &m, sizeof(m.hdr) + 2, 0), (ssize_t)(sizeof(m.hdr) + 2));
	cr_assert_eq(ipc_recv(sv[1], &r, fds, &n, IPC_REQUEST), -EPROTO);
	/* Shorter than a header. */
	cr_assert_eq(send(sv[0], &m, 5, 0), 5);
	cr_assert_eq(ipc_recv(sv[1], &r, fds, &n, IPC_REQUEST), -EPROTO);
}

Test(ipc, garbage_and_unknown_ops_are_rejected)
{
	struct ipc_msg m, r;
	int fds[IPC_MAX_FDS];
	unsigned int n;

	ipc_req_init(&m, IPC_OP_QUERY_PORT, 1);
	m.hdr.magic ^= 1;
	cr_assert_eq(ipc_send(sv[0], &m, NULL, 0), 0);
	cr_assert_eq(ipc_recv(sv[1], &r, fds, &n, IPC_REQUEST), -EPROTO);

	ipc_req_init(&m, IPC_OP_QUERY_PORT, 1);
	m.hdr.version = 99;
	cr_assert_eq(ipc_send(sv[0], &m, NULL, 0), 0);
	cr_assert_eq(ipc_recv(sv[1], &r, fds, &n, IPC_REQUEST), -EPROTO);

	ipc_req_init(&m, IPC_OP_QUERY_PORT, 1);
	m.hdr.op = 200;
	cr_assert_eq(ipc_send(sv[0], &m, NULL, 0), 0);
	cr_assert_eq(ipc_recv(sv[1], &r, fds, &n, IPC_REQUEST), -EOPNOTSUPP);

	/* Right header, body size of another op. */
	ipc_req_init(&m, IPC_OP_QUERY_PORT, 1);
	m.hdr.len = sizeof(m.hdr) + sizeof(m.u.req_CREATE_QP);
	cr_assert_eq(ipc_send(sv[0], &m, NULL, 0), 0);
	cr_assert_eq(ipc_recv(sv[1], &r, fds, &n, IPC_REQUEST), -EPROTO);

	/* A request must not carry a status. */
	ipc_req_init(&m, IPC_OP_QUERY_PORT, 1);
	m.hdr.status = 5;
	cr_assert_eq(ipc_send(sv[0], &m, NULL, 0), 0);
	cr_assert_eq(ipc_recv(sv[1], &r, fds, &n, IPC_REQUEST), -EPROTO);

	/* The request body is not a valid response body. */
	ipc_req_init(&m, IPC_OP_QUERY_PORT, 1);
	cr_assert_eq(ipc_send(sv[0], &m, NULL, 0), 0);
	cr_assert_eq(ipc_recv(sv[1], &r, fds, &n, IPC_RESPONSE), -EPROTO);
}

Test(ipc, oversized_datagram_is_rejected_and_its_fds_closed)
{
	static uint8_t big[sizeof(struct ipc_msg) + 64];
	struct ipc_msg r;
	int fds[IPC_MAX_FDS], before, efd = eventfd(0, EFD_CLOEXEC);
	unsigned int n;
	union {
		struct cmsghdr a;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = big, .iov_len = sizeof(big) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
			     .msg_controllen = sizeof(ctl.b) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	ipc_req_init((struct ipc_msg *)big, IPC_OP_QUERY_PORT, 1);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &efd, sizeof(int));
	cr_assert_eq(sendmsg(sv[0], &mh, 0), (ssize_t)sizeof(big));
	close(efd);
	before = count_fds();
	cr_assert_eq(ipc_recv(sv[1], &r, fds, &n, IPC_REQUEST), -EMSGSIZE);
	cr_assert_eq(n, 0);
	cr_assert_eq(count_fds(), before, "the passed descriptor was closed");
}

Test(ipc, fd_count_must_match_the_op)
{
	struct ipc_msg m, r;
	int fds[IPC_MAX_FDS], two[2] = { eventfd(0, 0), eventfd(0, 0) }, before;
	unsigned int n;

	/* QUERY_PORT takes no descriptors. */
	ipc_req_init(&m, IPC_OP_QUERY_PORT, 1);
	cr_assert_eq(ipc_send(sv[0], &m, two, 1), 0);
	before = count_fds();
	cr_assert_eq(ipc_recv(sv[1], &r, fds, &n, IPC_REQUEST), -EBADMSG);
	cr_assert_eq(count_fds(), before);

	/* REG_MR takes at most one. */
	ipc_req_init(&m, IPC_OP_REG_MR, 2);
	cr_assert_eq(ipc_send(sv[0], &m, two, 2), 0);
	cr_assert_eq(ipc_recv(sv[1], &r, fds, &n, IPC_REQUEST), -EBADMSG);
	cr_assert_eq(count_fds(), before);

	/* hdr.nfds must say what really came. */
	ipc_req_init(&m, IPC_OP_REG_MR, 3);
	m.hdr.nfds = 1;
	cr_assert_eq(send(sv[0], &m, m.hdr.len, 0), (ssize_t)m.hdr.len);
	cr_assert_eq(ipc_recv(sv[1], &r, fds, &n, IPC_REQUEST), -EBADMSG);
	close(two[0]);
	close(two[1]);
}

Test(ipc, eof_and_peer_credentials)
{
	struct ipc_msg r;
	int fds[IPC_MAX_FDS];
	unsigned int n;
	pid_t pid;
	uid_t uid;

	cr_assert_eq(ipc_peer_cred(sv[1], &pid, &uid, NULL), 0);
	cr_assert_eq(pid, getpid());
	cr_assert_eq(uid, getuid());
	shutdown(sv[0], SHUT_WR);
	cr_assert_eq(ipc_recv(sv[1], &r, fds, &n, IPC_REQUEST), 0);
}

Test(ipc, call_matches_seq_and_skips_stale_answers)
{
	struct ipc_msg m, r, stale, got;
	int fds[IPC_MAX_FDS];
	unsigned int n;

	/* Queue a stale answer (seq 4) and the right one (seq 5) before calling. */
	ipc_req_init(&m, IPC_OP_QUERY_PKEY, 4);
	ipc_rsp_init(&stale, &m, 0);
	stale.u.rsp_QUERY_PKEY.pkey = 0x1234;
	cr_assert_eq(ipc_send(sv[1], &stale, NULL, 0), 0);
	ipc_req_init(&m, IPC_OP_QUERY_PKEY, 5);
	ipc_rsp_init(&r, &m, 0);
	r.u.rsp_QUERY_PKEY.pkey = 0xffff;
	cr_assert_eq(ipc_send(sv[1], &r, NULL, 0), 0);

	cr_assert_eq(ipc_call(sv[0], &m, NULL, 0, &got, NULL), 0);
	cr_assert_eq(got.u.rsp_QUERY_PKEY.pkey, 0xffff);
	cr_assert_gt(ipc_recv(sv[1], &r, fds, &n, IPC_REQUEST), 0, "the request went out");

	/* An error status comes back as the return value. */
	ipc_req_init(&m, IPC_OP_QUERY_PKEY, 6);
	ipc_rsp_init(&r, &m, EINVAL);
	cr_assert_eq(ipc_send(sv[1], &r, NULL, 0), 0);
	cr_assert_eq(ipc_call(sv[0], &m, NULL, 0, &got, NULL), EINVAL);

	/* The peer going away is a transport error. */
	close(sv[1]);
	sv[1] = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	cr_assert_lt(ipc_call(sv[0], &m, NULL, 0, &got, NULL), 0);
}

Test(ipc, listen_connect_accept)
{
	char path[64] = "/tmp/ipc-test-XXXXXX";
	int lfd, cfd, afd;

	cr_assert_not_null(mkdtemp(path));
	strcat(path, "/s");
	lfd = ipc_listen(path, 4);
	cr_assert_geq(lfd, 0);
	cfd = ipc_connect(path);
	cr_assert_geq(cfd, 0);
	afd = ipc_accept(lfd, SOCK_CLOEXEC);
	cr_assert_geq(afd, 0);
	close(afd);
	close(cfd);
	close(lfd);
	/* A stale socket is replaced, another file type is not. */
	lfd = ipc_listen(path, 4);
	cr_assert_geq(lfd, 0);
	close(lfd);
	unlink(path);
	cr_assert_eq(ipc_connect(path), -ENOENT);
	close(open(path, O_CREAT | O_WRONLY, 0600));
	cr_assert_eq(ipc_listen(path, 4), -EEXIST);
	unlink(path);
	*strrchr(path, '/') = '\0';
	rmdir(path);
}

Test(ipc, ring_layout_and_cq_signal)
{
	struct ipc_cq_ctrl ctrl = { 0 };
	uint8_t b[8];
	int rfd, wfd;

	/* Rings in one memfd stay cache-line aligned; invalid geometries are refused. */
	cr_assert_eq(ipc_ring_bytes(8, sizeof(struct sq_wqe)) % IPC_CACHE_LINE, 0);
	cr_assert_geq(ipc_ring_bytes(8, sizeof(struct sq_wqe)), 8 * sizeof(struct sq_wqe));
	cr_assert_eq(ipc_ring_bytes(6, 64), 0, "not a power of two");
	cr_assert_eq(ipc_ring_bytes(8, 12), 0, "stride not a multiple of 8");

	cr_assert_eq(ipc_channel_pair(&rfd, &wfd), 0);
	cr_assert_eq(ipc_cq_signal(&ctrl, wfd), 0);
	cr_assert_eq(ipc_cq_signal(&ctrl, wfd), 0);
	cr_assert_eq(ctrl.notify_count, 2);
	cr_assert_eq(read(rfd, b, sizeof(b)), 2, "one byte per notification");
	cr_assert_eq(ipc_cq_signal(&ctrl, -1), 0, "no channel: only the count");
	cr_assert_eq(ctrl.notify_count, 3);
	close(rfd);
	close(wfd);
	cr_assert_eq(ipc_pow2_roundup(0), 1);
	cr_assert_eq(ipc_pow2_roundup(5), 8);
	cr_assert_eq(ipc_pow2_roundup(4096), 4096);
}

/*
 * Issue 16: the channel fd used to be the application's eventfd. Its open
 * file (O_NONBLOCK, the counter) is shared with the application, which
 * could fill the counter to 2^64-2 and clear O_NONBLOCK between the
 * daemon's poll() and write(): the control thread blocked for good. Now
 * the daemon's end is a socket only the daemon holds, written with
 * MSG_DONTWAIT: the reader cannot write to it or change how it is
 * written, and a reader that never reads costs notifications (-EAGAIN,
 * counted), never a wait.
 */
Test(ipc, cq_signal_never_blocks_whatever_the_reader_does)
{
	struct ipc_cq_ctrl ctrl = { 0 };
	uint8_t one = 1;
	int rfd, wfd, full = 0;

	cr_assert_eq(ipc_channel_pair(&rfd, &wfd), 0);
	cr_assert_eq(fcntl(rfd, F_GETFL) & O_NONBLOCK, 0, "the reader blocks unless it asks");
	cr_assert_eq(send(rfd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL), -1);
	cr_assert_eq(errno, EPIPE, "the application's end cannot be written");
	/* The daemon's end is blocking as a file: only MSG_DONTWAIT keeps it from waiting. */
	cr_assert_eq(fcntl(wfd, F_GETFL) & O_NONBLOCK, 0);
	/* The application never reads: the channel fills, then every signal fails at once. */
	for (unsigned int i = 0; i < (1u << 22) && full < 16; i++)
		if (ipc_cq_signal(&ctrl, wfd) == -EAGAIN)
			full++;
	cr_assert_eq(full, 16, "a full channel refuses with -EAGAIN");
	cr_assert_eq(ipc_cq_signal(&ctrl, wfd), -EAGAIN);
	close(rfd);
	cr_assert_eq(ipc_cq_signal(&ctrl, wfd), -EPIPE, "a reader that went away: no SIGPIPE");
	close(wfd);
}

/*
 * Issue 16: a hugetlb memfd sealed only against shrinking passed, and a
 * page the client punched out after the daemon mapped it was a SIGBUS in
 * the daemon once the huge page pool was empty. Refused now.
 */
Test(ipc, a_hugetlb_memfd_is_refused)
{
	int fd = memfd_create("huge", MFD_CLOEXEC | MFD_HUGETLB | MFD_ALLOW_SEALING);

	cr_assert_geq(fd, 0, "memfd_create(MFD_HUGETLB): %m");
	cr_assert_eq(ftruncate(fd, 2 << 20), 0);
	cr_assert_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	cr_assert_eq(ipc_shm_check(fd, 4096), -EPERM);
	close(fd);
	fd = ipc_shm_create("plain", 8192);
	cr_assert_eq(ipc_shm_check(fd, 8192), 0, "an ordinary sealed memfd still passes");
	close(fd);
}

/* ibv_create_flow's attribute and specs as the shim sends them (ipc_flow_from_ibv()). */
struct flow_attr_buf {
	struct ibv_flow_attr attr;
	struct ibv_flow_spec_eth eth;
	struct ibv_flow_spec_ipv4_ext ip;
	struct ibv_flow_spec_tcp_udp udp;
};

static struct flow_attr_buf flow_attr_udp(void)
{
	struct flow_attr_buf b;

	memset(&b, 0, sizeof(b));
	b.attr = (struct ibv_flow_attr){ .type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(b),
					 .priority = 7, .num_of_specs = 3, .port = 1 };
	b.eth.type = IBV_FLOW_SPEC_ETH;
	b.eth.size = sizeof(b.eth);
	b.eth.val.ether_type = htons(0x0800);
	b.eth.mask.ether_type = 0xffff;
	b.eth.val.dst_mac[5] = 0x42;
	memset(b.eth.mask.dst_mac, 0xff, 6);
	b.ip.type = IBV_FLOW_SPEC_IPV4_EXT;
	b.ip.size = sizeof(b.ip);
	b.ip.val.dst_ip = htonl(0xc6120002);
	b.ip.mask.dst_ip = 0xffffffff;
	b.ip.val.proto = 17;
	b.ip.mask.proto = 0xff;
	b.udp.type = IBV_FLOW_SPEC_UDP;
	b.udp.size = sizeof(b.udp);
	b.udp.val.dst_port = htons(4000);
	b.udp.mask.dst_port = 0xffff;
	return b;
}

Test(ipc, flow_specs_become_one_rule)
{
	struct flow_attr_buf b = flow_attr_udp();
	struct ipc_create_flow_req q;

	cr_assert_eq(ipc_flow_from_ibv(&b.attr, &q), 0);
	cr_assert_eq(q.port, 1u);
	cr_assert_eq(q.priority, 7u);
	cr_assert_eq(q.type, IBV_FLOW_ATTR_NORMAL);
	cr_assert_eq(q.match.layers, FLOW_L_ETH | FLOW_L_IPV4 | FLOW_L_UDP);
	cr_assert_eq(q.match.val.ether_type, htons(0x0800));
	cr_assert_eq(q.match.val.dst_mac[5], 0x42);
	cr_assert_eq(q.match.mask.dst_mac[0], 0xff);
	cr_assert_eq(q.match.val.ip4_dst, htonl(0xc6120002));
	cr_assert_eq(q.match.val.ip4_proto, 17);
	cr_assert_eq(q.match.val.l4_dst, htons(4000));
	cr_assert_eq(q.match.mask.l4_src, 0, "unasked: a wildcard");
	cr_assert_eq(flow_match_check(&q.match), 0, "the daemon takes it");
}

/*
 * attr.size is not a bound of the spec list: libibverbs' ibv_cmd_create_flow
 * walks num_of_specs specs by their own sizes and recomputes it, and pyverbs
 * (Flow) passes sizeof(struct ibv_flow_attr) with three specs after it.
 */
Test(ipc, the_spec_list_follows_the_specs_not_attr_size)
{
	struct flow_attr_buf b = flow_attr_udp();
	struct ipc_create_flow_req q;

	b.attr.size = sizeof(b.attr);
	cr_assert_eq(ipc_flow_from_ibv(&b.attr, &q), 0);
	cr_assert_eq(q.match.layers, FLOW_L_ETH | FLOW_L_IPV4 | FLOW_L_UDP);
	b.attr.size = 0;
	cr_assert_eq(ipc_flow_from_ibv(&b.attr, &q), 0, "whatever it says");
}

Test(ipc, malformed_flow_specs_are_refused)
{
	struct flow_attr_buf b = flow_attr_udp();
	struct ipc_create_flow_req q;

	b.attr.num_of_specs = IPC_FLOW_MAX_SPECS + 1;
	cr_assert_eq(ipc_flow_from_ibv(&b.attr, &q), EINVAL, "more specs than a rule can hold");
	b = flow_attr_udp();
	b.eth.size = sizeof(struct ibv_flow_spec) + 8;
	cr_assert_eq(ipc_flow_from_ibv(&b.attr, &q), EINVAL, "a spec larger than any spec type");
	b = flow_attr_udp();
	b.ip.size = 4;
	cr_assert_eq(ipc_flow_from_ibv(&b.attr, &q), EINVAL, "a spec shorter than its type");
	b = flow_attr_udp();
	b.udp.size = 0;
	cr_assert_eq(ipc_flow_from_ibv(&b.attr, &q), EINVAL, "a spec of size 0");
	b = flow_attr_udp();
	b.ip.type = IBV_FLOW_SPEC_ETH;
	b.ip.size = sizeof(b.ip);
	cr_assert_eq(ipc_flow_from_ibv(&b.attr, &q), EINVAL, "two Ethernet specs");
	b = flow_attr_udp();
	b.udp.type = IBV_FLOW_SPEC_VXLAN_TUNNEL;
	cr_assert_eq(ipc_flow_from_ibv(&b.attr, &q), EOPNOTSUPP);
	b = flow_attr_udp();
	b.udp.type = IBV_FLOW_SPEC_UDP | IBV_FLOW_SPEC_INNER;
	cr_assert_eq(ipc_flow_from_ibv(&b.attr, &q), EOPNOTSUPP, "inner specs");
	b = flow_attr_udp();
	b.attr.comp_mask = 1;
	cr_assert_eq(ipc_flow_from_ibv(&b.attr, &q), EINVAL);
	b = flow_attr_udp();
	b.attr.num_of_specs = 0;
	cr_assert_eq(ipc_flow_from_ibv(&b.attr, &q), 0, "no spec: every frame");
	cr_assert_eq(q.match.layers, 0u);
}
