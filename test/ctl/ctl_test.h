/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test/ctl: what the lib/ctl tests share. A client is a connection of the
 * control plane under test (the global `ctl`, set up by each test file);
 * every request goes through the public path, ctl_conn_handle(), as the
 * daemon's control thread would pass it.
 */
#ifndef CTL_TEST_H
#define CTL_TEST_H

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <grp.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl.h"

/* The control plane under test (one per test binary; its fixtures create it). */
static struct ctl *ctl;

static const uint8_t ctl_test_mac[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x01 };

struct client {
	struct ctl_conn *c;
	int sp[2];     /* only for SO_PEERCRED */
	int async_fd;
};

/* Descriptors open in this process. */
static inline int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

/* Mappings of memfds named @p name (memfd_create(name)) in this process. */
static inline int count_maps(const char *name)
{
	char line[512], needle[64];
	FILE *f = fopen("/proc/self/maps", "re");
	int n = 0;

	cr_assert_not_null(f);
	snprintf(needle, sizeof(needle), "/memfd:%s ", name);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, needle) != NULL)
			n++;
	fclose(f);
	return n;
}

/* One device "dpdk_roce0", GID 1 = ::ffff:198.18.0.1, no dataplane. */
static inline struct ctl_config base_cfg(void)
{
	struct ctl_config cfg;
	uint32_t ip;

	inet_pton(AF_INET, "198.18.0.1", &ip);
	ctl_config_default(&cfg, "dpdk_roce0", ctl_test_mac, ip);
	return cfg;
}

/* One request through ctl_conn_handle(); response descriptors land in rfds (or are closed). */
static inline int call(struct client *cl, struct ipc_msg *req, int *fds, unsigned int nfds,
		       struct ipc_msg *rsp, int *rfds)
{
	int tmp[IPC_MAX_FDS], owned[IPC_MAX_FDS] = { -1, -1 };
	unsigned int rn;

	for (unsigned int i = 0; i < nfds; i++)
		owned[i] = fds[i];
	ctl_conn_handle(cl->c, req, owned, nfds, rsp, rfds ? rfds : tmp, &rn);
	cr_assert_eq(rsp->hdr.op, req->hdr.op);
	cr_assert_eq(rsp->hdr.nfds, 0u, "the caller sets nfds when sending");
	cr_assert_eq(rsp->hdr.len, sizeof(rsp->hdr) + ipc_op_desc(req->hdr.op)->rsp_size);
	if (rsp->hdr.status != 0)
		cr_assert_eq(rn, 0u, "no descriptors with an error");
	if (!rfds)
		for (unsigned int i = 0; i < rn; i++)
			close(tmp[i]);
	return rsp->hdr.status;
}

static inline void req(struct ipc_msg *m, enum ipc_op op)
{
	ipc_req_init(m, op, 1);
	memset(&m->u, 0, ipc_op_desc(op)->req_size);
}

static inline void client_open(struct client *cl, bool open_dev)
{
	struct ipc_msg m, r;
	int rfds[IPC_MAX_FDS];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, cl->sp), 0);
	cl->c = ctl_conn_open(ctl, cl->sp[0]);
	cr_assert_not_null(cl->c);
	cl->async_fd = -1;
	if (!open_dev)
		return;
	req(&m, IPC_OP_OPEN_DEVICE);
	strcpy(m.u.req_OPEN_DEVICE.name, "dpdk_roce0");
	cr_assert_eq(call(cl, &m, NULL, 0, &r, rfds), 0);
	cl->async_fd = rfds[0];
	cr_assert_geq(cl->async_fd, 0);
	cr_assert_str_eq(r.u.rsp_OPEN_DEVICE.info.name, "dpdk_roce0");
}

static inline void client_close(struct client *cl)
{
	if (cl->c)
		ctl_conn_close(cl->c);
	cl->c = NULL;
	close(cl->sp[0]);
	close(cl->sp[1]);
	if (cl->async_fd >= 0)
		close(cl->async_fd);
}

static inline uint32_t alloc_pd(struct client *cl)
{
	struct ipc_msg m, r;

	req(&m, IPC_OP_ALLOC_PD);
	cr_assert_eq(call(cl, &m, NULL, 0, &r, NULL), 0);
	return r.u.rsp_ALLOC_PD.handle;
}

static inline uint32_t create_cq(struct client *cl, uint32_t cqe, uint32_t channel)
{
	struct ipc_msg m, r;

	req(&m, IPC_OP_CREATE_CQ);
	m.u.req_CREATE_CQ.cqe = cqe;
	m.u.req_CREATE_CQ.channel = channel;
	cr_assert_eq(call(cl, &m, NULL, 0, &r, NULL), 0);
	cr_assert_geq(r.u.rsp_CREATE_CQ.cqe, cqe);
	return r.u.rsp_CREATE_CQ.handle;
}

static inline int create_qp(struct client *cl, uint32_t pd, uint32_t cq, uint32_t type,
			    struct ipc_create_qp_rsp *out)
{
	struct ipc_msg m, r;
	int rc;

	req(&m, IPC_OP_CREATE_QP);
	m.u.req_CREATE_QP.pd = pd;
	m.u.req_CREATE_QP.send_cq = cq;
	m.u.req_CREATE_QP.recv_cq = cq;
	m.u.req_CREATE_QP.qp_type = type;
	m.u.req_CREATE_QP.cap = (struct ipc_qp_cap){ .max_send_wr = 16, .max_recv_wr = 16,
						     .max_send_sge = 2, .max_recv_sge = 2 };
	rc = call(cl, &m, NULL, 0, &r, NULL);
	if (out)
		*out = r.u.rsp_CREATE_QP;
	return rc;
}

/* An RC QP on send CQ @p scq, receive CQ @p rcq and @p srq (0: none), small caps. */
static inline int create_rc_qp(struct client *cl, uint32_t pd, uint32_t scq, uint32_t rcq,
			       uint32_t srq, struct ipc_create_qp_rsp *out)
{
	struct ipc_msg m, r;
	int rc;

	req(&m, IPC_OP_CREATE_QP);
	m.u.req_CREATE_QP.pd = pd;
	m.u.req_CREATE_QP.send_cq = scq;
	m.u.req_CREATE_QP.recv_cq = rcq;
	m.u.req_CREATE_QP.srq = srq;
	m.u.req_CREATE_QP.qp_type = IBV_QPT_RC;
	m.u.req_CREATE_QP.cap = (struct ipc_qp_cap){ .max_send_wr = 4, .max_recv_wr = srq ? 0 : 4,
						     .max_send_sge = 1, .max_recv_sge = srq ? 0 : 1 };
	rc = call(cl, &m, NULL, 0, &r, NULL);
	if (out)
		*out = r.u.rsp_CREATE_QP;
	return rc;
}

static inline int modify_qp(struct client *cl, uint32_t qp, uint32_t mask,
			    const struct ipc_qp_attr *a)
{
	struct ipc_msg m, r;

	req(&m, IPC_OP_MODIFY_QP);
	m.u.req_MODIFY_QP.handle = qp;
	m.u.req_MODIFY_QP.mask = mask;
	m.u.req_MODIFY_QP.attr = *a;
	return call(cl, &m, NULL, 0, &r, NULL);
}

static inline int destroy(struct client *cl, enum ipc_op op, uint32_t handle)
{
	struct ipc_msg m, r;

	req(&m, op);
	m.u.req_DEALLOC_PD.handle = handle; /* every destroy body is an ipc_handle_req */
	return call(cl, &m, NULL, 0, &r, NULL);
}

/*
 * A peer with another user's IDs (@p uid, @p gid: no capabilities): a child
 * that connects to a listening socket, so SO_PEERCRED and SO_PEERPIDFD are
 * its. It then obeys one-letter commands: 'n' makes it non-dumpable (what a
 * set-user-ID program is left with); every command is acknowledged.
 */
struct peer {
	char dir[32], path[64];
	int lfd, cmd, done;
	pid_t pid;
	struct client cl;
};

static inline void peer_open(struct peer *p, uid_t uid, gid_t gid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ipc_msg m, r;
	int cmd[2], done[2], rfds[IPC_MAX_FDS];
	char c;

	memset(p, 0, sizeof(*p));
	strcpy(p->dir, "/tmp/roce-sec-XXXXXX");
	cr_assert_not_null(mkdtemp(p->dir));
	snprintf(p->path, sizeof(p->path), "%s/s", p->dir);
	strcpy(sa.sun_path, p->path);
	p->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	cr_assert_eq(bind(p->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(chmod(p->dir, 0755), 0);
	cr_assert_eq(chmod(p->path, 0777), 0);
	cr_assert_eq(listen(p->lfd, 1), 0);
	cr_assert_eq(pipe(cmd), 0);
	cr_assert_eq(pipe(done), 0);
	p->pid = fork();
	cr_assert_geq(p->pid, 0);
	if (p->pid == 0) {
		int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

		alarm(20);
		close(cmd[1]);
		close(done[0]);
		/* a user's ordinary process: changing IDs cleared "dumpable", set it back */
		if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0 ||
		    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0 ||
		    connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0)
			_exit(1);
		while (read(cmd[0], &c, 1) == 1) {
			if (c == 'n')
				prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
			if (write(done[1], &c, 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	close(cmd[0]);
	close(done[1]);
	p->cmd = cmd[1];
	p->done = done[0];
	p->cl.sp[1] = -1;
	p->cl.async_fd = -1;
	p->cl.sp[0] = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
	cr_assert_geq(p->cl.sp[0], 0);
	p->cl.c = ctl_conn_open(ctl, p->cl.sp[0]);
	if (p->cl.c == NULL)
		return; /* refused (ctl_access): the caller checks */
	req(&m, IPC_OP_OPEN_DEVICE);
	strcpy(m.u.req_OPEN_DEVICE.name, "dpdk_roce0");
	cr_assert_eq(call(&p->cl, &m, NULL, 0, &r, rfds), 0);
	p->cl.async_fd = rfds[0];
}

static inline void peer_do(struct peer *p, char c)
{
	cr_assert_eq(write(p->cmd, &c, 1), 1);
	cr_assert_eq(read(p->done, &c, 1), 1);
}

static inline void peer_close(struct peer *p)
{
	client_close(&p->cl);
	close(p->cmd);
	cr_assert_eq(waitpid(p->pid, NULL, 0), p->pid);
	close(p->done);
	close(p->lfd);
	unlink(p->path);
	rmdir(p->dir);
}

#endif /* CTL_TEST_H */
