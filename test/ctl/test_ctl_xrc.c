/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl XRC (ctl_xrc.c): XRC domains shared by inode as ibv_open_xrcd(3)
 * and the kernel's ib_uverbs_open_xrcd() have them, their handles and
 * references, XRC SRQs and XRC INI/TGT QPs, their placement on the lcore
 * of their domain, the PD quota they count against, and teardown.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ctl_test.h"

static char path[64];

static void setup_n(uint32_t n_lcores, uint32_t max_xrcd, uint32_t quota_pd)
{
	struct ctl_config cfg = base_cfg();
	int fd;

	cfg.limits.n_lcores = n_lcores;
	cfg.limits.max_xrcd = max_xrcd;
	cfg.quota.max_pd = quota_pd;
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
	snprintf(path, sizeof(path), "/tmp/xrc-ctl-XXXXXX");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
}

static void setup(void) { setup_n(1, 64, 0); }

static void teardown(void)
{
	unlink(path);
	ctl_destroy(ctl);
	ctl = NULL;
}

TestSuite(ctl_xrc, .init = setup, .fini = teardown, .timeout = 20);
/* tests that configure their own control plane (setup_n()) */
TestSuite(ctl_xrc_cfg, .fini = teardown, .timeout = 20);

/* OPEN_XRCD of @p file (NULL: no file) with @p oflags; @return status, *h and *num set on success. */
static int open_xrcd(struct client *cl, const char *file, uint32_t oflags, uint32_t *h,
		     uint32_t *num)
{
	struct ipc_msg m, r;
	int fd = file ? open(file, O_RDONLY) : -1;
	int rc;

	req(&m, IPC_OP_OPEN_XRCD);
	m.u.req_OPEN_XRCD.oflags = oflags;
	rc = call(cl, &m, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, &r, NULL);
	if (rc == 0) {
		*h = r.u.rsp_OPEN_XRCD.handle;
		*num = r.u.rsp_OPEN_XRCD.num;
	}
	return rc;
}

static int close_xrcd(struct client *cl, uint32_t h)
{
	struct ipc_msg m, r;

	req(&m, IPC_OP_CLOSE_XRCD);
	m.u.req_CLOSE_XRCD.handle = h;
	return call(cl, &m, NULL, 0, &r, NULL);
}

static int create_xrc_srq(struct client *cl, uint32_t pd, uint32_t xrcd, uint32_t cq,
			  uint32_t *h)
{
	struct ipc_msg m, r;
	int rc;

	req(&m, IPC_OP_CREATE_SRQ);
	m.u.req_CREATE_SRQ.pd = pd;
	m.u.req_CREATE_SRQ.max_wr = 8;
	m.u.req_CREATE_SRQ.max_sge = 1;
	m.u.req_CREATE_SRQ.srq_type = IBV_SRQT_XRC;
	m.u.req_CREATE_SRQ.xrcd = xrcd;
	m.u.req_CREATE_SRQ.cq = cq;
	rc = call(cl, &m, NULL, 0, &r, NULL);
	if (rc == 0 && h)
		*h = r.u.rsp_CREATE_SRQ.handle;
	return rc;
}

/* An XRC_RECV (TGT) QP of @p xrcd, or an XRC_SEND (INI) QP on @p pd and @p scq. */
static int create_xrc_qp(struct client *cl, uint32_t type, uint32_t pd, uint32_t scq,
			 uint32_t xrcd, struct ipc_create_qp_rsp *out, int *fd)
{
	struct ipc_msg m, r;
	int rfds[IPC_MAX_FDS] = { -1, -1 };
	int rc;

	req(&m, IPC_OP_CREATE_QP);
	m.u.req_CREATE_QP.pd = pd;
	m.u.req_CREATE_QP.send_cq = scq;
	m.u.req_CREATE_QP.xrcd = xrcd;
	m.u.req_CREATE_QP.qp_type = type;
	if (type == IBV_QPT_XRC_SEND)
		m.u.req_CREATE_QP.cap = (struct ipc_qp_cap){ .max_send_wr = 4, .max_send_sge = 1 };
	rc = call(cl, &m, NULL, 0, &r, rfds);
	if (out)
		*out = r.u.rsp_CREATE_QP;
	if (fd)
		*fd = rfds[0];
	else if (rfds[0] >= 0)
		close(rfds[0]);
	return rc;
}

Test(ctl_xrc, one_inode_one_domain_across_contexts)
{
	struct client a, b;
	uint32_t ha, hb, hc, na, nb, nc;

	client_open(&a, true);
	client_open(&b, true);
	/* an inode without a domain needs O_CREAT */
	cr_assert_eq(open_xrcd(&a, path, 0, &ha, &na), EINVAL);
	cr_assert_eq(open_xrcd(&a, path, O_CREAT, &ha, &na), 0);
	/* another context, another descriptor of the same file: the same domain */
	cr_assert_eq(open_xrcd(&b, path, 0, &hb, &nb), 0);
	cr_assert_eq(nb, na);
	cr_assert_eq(open_xrcd(&b, path, O_CREAT, &hc, &nc), 0);
	cr_assert_eq(nc, na);
	cr_assert_neq(hc, hb, "a handle per open");
	/* it exists: O_EXCL refuses */
	cr_assert_eq(open_xrcd(&b, path, O_CREAT | O_EXCL, &hc, &nc), EINVAL);
	/* no file: a private domain each time, O_CREAT required */
	cr_assert_eq(open_xrcd(&a, NULL, 0, &hc, &nc), EINVAL);
	cr_assert_eq(open_xrcd(&a, NULL, O_CREAT, &hc, &nc), 0);
	cr_assert_neq(nc, na);
	uint32_t hd, nd;
	cr_assert_eq(open_xrcd(&a, NULL, O_CREAT, &hd, &nd), 0);
	cr_assert_neq(nd, nc);
	/* flags beyond O_CREAT | O_EXCL */
	cr_assert_eq(open_xrcd(&a, path, O_CREAT | O_TRUNC, &hc, &nc), EINVAL);
	/* B's handle is B's: A cannot close it */
	cr_assert_eq(close_xrcd(&a, hb), EINVAL);
	/* the domain outlives A's handle while B holds one */
	cr_assert_eq(close_xrcd(&a, ha), 0);
	cr_assert_eq(close_xrcd(&a, ha), EINVAL, "a closed handle is gone");
	cr_assert_eq(open_xrcd(&a, path, 0, &ha, &na), 0);
	cr_assert_eq(na, nb);
	client_close(&b);
	cr_assert_eq(close_xrcd(&a, ha), 0);
	/* the last handle closed: the inode has no domain any more */
	cr_assert_eq(open_xrcd(&a, path, 0, &ha, &na), EINVAL);
	client_close(&a);
	cr_assert_eq(ctl_nobjects(ctl), 0);
}

Test(ctl_xrc, srqs_and_tgt_qps_hold_their_xrcd)
{
	struct client a;
	struct ipc_create_qp_rsp tgt, ini;
	uint32_t x, n, srq;
	int fd = -1;

	client_open(&a, true);
	uint32_t pd = alloc_pd(&a), cq = create_cq(&a, 8, 0);

	cr_assert_eq(open_xrcd(&a, path, O_CREAT, &x, &n), 0);
	/* an XRC SRQ names a domain and a CQ */
	cr_assert_eq(create_xrc_srq(&a, pd, 0, cq, NULL), EINVAL);
	cr_assert_eq(create_xrc_srq(&a, pd, x, 0, NULL), EINVAL);
	cr_assert_eq(create_xrc_srq(&a, pd, x, cq, &srq), 0);
	/* tag matching SRQs are not supported, unknown types are invalid */
	struct ipc_msg m, r;
	req(&m, IPC_OP_CREATE_SRQ);
	m.u.req_CREATE_SRQ.pd = pd;
	m.u.req_CREATE_SRQ.max_wr = 8;
	m.u.req_CREATE_SRQ.srq_type = IBV_SRQT_TM;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EOPNOTSUPP);
	m.u.req_CREATE_SRQ.srq_type = 77;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL);
	/* an RC QP cannot use an XRC SRQ */
	cr_assert_eq(create_rc_qp(&a, pd, cq, cq, srq, NULL), EINVAL);
	/* TGT: a domain and nothing else; its queue is none of the client's */
	cr_assert_eq(create_xrc_qp(&a, IBV_QPT_XRC_RECV, 0, 0, 0, NULL, NULL), EINVAL);
	cr_assert_eq(create_xrc_qp(&a, IBV_QPT_XRC_RECV, 0, 0, x, &tgt, &fd), 0);
	cr_assert_eq(fd, -1, "no memfd for an XRC TGT QP");
	/* INI: a PD and a send CQ */
	cr_assert_eq(create_xrc_qp(&a, IBV_QPT_XRC_SEND, pd, 0, 0, NULL, NULL), EINVAL);
	cr_assert_eq(create_xrc_qp(&a, IBV_QPT_XRC_SEND, pd, cq, 0, &ini, &fd), 0);
	cr_assert_geq(fd, 0, "an XRC INI QP's SQ is the client's");
	close(fd);
	cr_assert_eq(ini.cap.max_recv_wr, 0);
	/* users first: the handle, the SRQ's CQ and PD are busy */
	cr_assert_eq(close_xrcd(&a, x), EBUSY);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_CQ, cq), EBUSY);
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), EBUSY);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_QP, tgt.handle), 0);
	cr_assert_eq(close_xrcd(&a, x), EBUSY, "the SRQ still holds it");
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_SRQ, srq), 0);
	cr_assert_eq(close_xrcd(&a, x), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_QP, ini.handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_CQ, cq), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), 0);
	client_close(&a);
	cr_assert_eq(ctl_nobjects(ctl), 0);
}

Test(ctl_xrc, closing_a_client_tears_its_xrc_objects_down)
{
	struct client a;
	uint32_t x, n, srq;

	client_open(&a, true);
	uint32_t pd = alloc_pd(&a), cq = create_cq(&a, 8, 0);

	cr_assert_eq(open_xrcd(&a, path, O_CREAT, &x, &n), 0);
	cr_assert_eq(create_xrc_srq(&a, pd, x, cq, &srq), 0);
	cr_assert_eq(create_xrc_qp(&a, IBV_QPT_XRC_RECV, 0, 0, x, NULL, NULL), 0);
	cr_assert_eq(create_xrc_qp(&a, IBV_QPT_XRC_SEND, pd, cq, 0, NULL, NULL), 0);
	client_close(&a);
	cr_assert_eq(ctl_nobjects(ctl), 0);
	/* and the domain went with its last handle */
	client_open(&a, true);
	cr_assert_eq(open_xrcd(&a, path, 0, &x, &n), EINVAL);
	client_close(&a);
}

Test(ctl_xrc_cfg, a_domain_keeps_its_srqs_and_tgt_qps_on_one_lcore)
{
	struct ipc_create_qp_rsp q[4];
	struct client a;
	uint32_t x, n, y, ny;

	setup_n(3, 64, 0);
	client_open(&a, true);
	uint32_t pd = alloc_pd(&a);
	uint32_t c1 = create_cq(&a, 8, 0), c2 = create_cq(&a, 8, 0), c3 = create_cq(&a, 8, 0);

	cr_assert_eq(open_xrcd(&a, path, O_CREAT, &x, &n), 0);
	cr_assert_eq(open_xrcd(&a, NULL, O_CREAT, &y, &ny), 0);
	/* c1 bound by an RC QP: the domain's first SRQ brings it there */
	cr_assert_eq(create_rc_qp(&a, pd, c1, c1, 0, &q[0]), 0);
	uint32_t l1 = q[0].qpn % 3;
	cr_assert_eq(create_xrc_srq(&a, pd, x, c1, NULL), 0);
	/* its TGT QPs follow */
	cr_assert_eq(create_xrc_qp(&a, IBV_QPT_XRC_RECV, 0, 0, x, &q[1], NULL), 0);
	cr_assert_eq(q[1].qpn % 3, l1);
	/* an SRQ of the domain whose CQ is bound elsewhere cannot be */
	cr_assert_eq(create_rc_qp(&a, pd, c2, c2, 0, &q[2]), 0);
	cr_assert_neq(q[2].qpn % 3, l1);
	cr_assert_eq(create_xrc_srq(&a, pd, x, c2, NULL), EINVAL);
	/* an unbound CQ goes with the domain */
	cr_assert_eq(create_xrc_srq(&a, pd, x, c3, NULL), 0);
	cr_assert_eq(create_rc_qp(&a, pd, c3, c3, 0, &q[3]), 0);
	cr_assert_eq(q[3].qpn % 3, l1);
	/* another domain is free to go elsewhere; an INI QP follows its send CQ */
	cr_assert_eq(create_xrc_qp(&a, IBV_QPT_XRC_SEND, pd, c2, 0, &q[0], NULL), 0);
	cr_assert_eq(q[0].qpn % 3, q[2].qpn % 3);
	client_close(&a);
	cr_assert_eq(ctl_nobjects(ctl), 0);
}

Test(ctl_xrc_cfg, xrcd_handles_are_bounded_by_the_pd_quota)
{
	struct ctl_stats st;
	struct client a;
	uint32_t x, n;

	setup_n(1, 64, 2);
	client_open(&a, true);
	alloc_pd(&a);
	alloc_pd(&a);
	/* as windows by the MR quota: a count of their own, the PD quota's size */
	cr_assert_eq(open_xrcd(&a, path, O_CREAT, &x, &n), 0);
	cr_assert_eq(open_xrcd(&a, path, 0, &x, &n), 0);
	cr_assert_eq(open_xrcd(&a, path, 0, &x, &n), ENOMEM);
	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.quota_refused, 1);
	cr_assert_eq(close_xrcd(&a, x), 0);
	cr_assert_eq(open_xrcd(&a, NULL, O_CREAT, &x, &n), 0);
	client_close(&a);
}

Test(ctl_xrc_cfg, no_xrc_without_domains)
{
	struct ipc_msg m, r;
	struct client a;
	uint32_t x, n;

	setup_n(1, 0, 0);
	client_open(&a, true);
	req(&m, IPC_OP_QUERY_DEVICE);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_DEVICE.attr.device_cap_flags & IBV_DEVICE_XRC, 0);
	cr_assert_eq(open_xrcd(&a, path, O_CREAT, &x, &n), EOPNOTSUPP);
	uint32_t pd = alloc_pd(&a), cq = create_cq(&a, 8, 0);
	cr_assert_eq(create_xrc_qp(&a, IBV_QPT_XRC_SEND, pd, cq, 0, NULL, NULL), EOPNOTSUPP);
	client_close(&a);
}

Test(ctl_xrc, the_device_reports_xrc)
{
	struct ipc_msg m, r;
	struct client a;

	client_open(&a, true);
	req(&m, IPC_OP_QUERY_DEVICE);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_neq(r.u.rsp_QUERY_DEVICE.attr.device_cap_flags & IBV_DEVICE_XRC, 0);
	client_close(&a);
}
