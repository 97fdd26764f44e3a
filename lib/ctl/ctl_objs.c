/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl: PD, MR, completion channel, CQ, SRQ and AH requests, and the
 * destructor every teardown goes through.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "ctl_internal.h"
#include "xport.h"

_Static_assert((int)IPC_CQ_ARM_NEXT == (int)XPORT_CQ_ARM_NEXT &&
	       (int)IPC_CQ_ARM_SOLICITED == (int)XPORT_CQ_ARM_SOLICITED,
	       "the shim arms CQs with the engine's values");

/* ---- shared memory ---- */

int ctl_shm_alloc(struct ctl_shm *shm, const char *name, size_t size, int *fd_out)
{
	int fd = ipc_shm_create(name, size);

	if (fd < 0)
		return -fd;
	shm->map = ipc_shm_map(fd, size, 0);
	if (shm->map == NULL) {
		int e = errno;

		close(fd);
		return e;
	}
	shm->size = size;
	*fd_out = fd;
	return 0;
}

void ctl_shm_free(struct ctl_shm *shm)
{
	if (shm->map != NULL && !shm->held) /* held: quarantined, kept for good */
		munmap(shm->map, shm->size);
	shm->map = NULL;
	shm->size = 0;
}

/* Lay out one spsc_ring at @p off in @p shm and describe it for both sides. */
static void ctl_ring_setup(struct ctl_shm *shm, size_t off, uint32_t entries, uint32_t stride,
			   struct ctl_ring_info *ri, struct ipc_ring_desc *desc)
{
	ri->ring = (struct spsc_ring *)((uint8_t *)shm->map + off);
	spsc_ring_init(ri->ring, entries, stride);
	ri->entries = entries;
	ri->stride = stride;
	desc->offset = off;
	desc->entries = entries;
	desc->stride = stride;
}

/* ---- PD ---- */

int ctl_h_ALLOC_PD(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ipc_msg *rsp = x->rsp;
	struct ctl_pd *pd = ctl_table_alloc(&c->ctl->tab[CTL_KIND_PD], c, CTL_KIND_PD,
					    req->u.req_ALLOC_PD.user_handle);

	if (pd == NULL)
		return ENOMEM;
	rsp->u.rsp_ALLOC_PD.handle = ctl_obj_handle(&pd->o);
	rsp->u.rsp_ALLOC_PD.num = pd->o.index;
	return 0;
}

int ctl_h_DEALLOC_PD(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ctl_pd *pd = ctl_lookup(c, CTL_KIND_PD, req->u.req_DEALLOC_PD.handle);

	if (pd == NULL)
		return EINVAL;
	if (pd->o.refs != 0)
		return EBUSY;
	return ctl_obj_destroy(c->ctl, &pd->o);
}

/* ---- MR ---- */

/* IBV_ACCESS_HUGETLB is a hint the kernel takes and ignores (the pages' size is the mapping's). */
#define CTL_MR_HINTS (IBV_ACCESS_OPTIONAL_RANGE | IBV_ACCESS_HUGETLB)
#define CTL_MR_ACCESS_KNOWN (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                 \
			     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                 \
			     IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND | \
			     QP_ACCESS_FLUSH_GLOBAL | QP_ACCESS_FLUSH_PERSISTENT | CTL_MR_HINTS)

/*
 * On-demand paging. An ODP MR is never shared through a memfd: the lcores
 * reach it through the registering process's /proc/PID/mem (the copy path,
 * ctl_mr_map()), so every access faults the process's pages in as the
 * kernel resolves them at that moment, as a NIC's page faults do (and an
 * unmapped page fails the access with a copy error, as a NIC's ODP
 * access to an unmapped range does). Nothing is pinned or mapped by the
 * daemon, so ODP bytes are not charged to the registered-bytes quota.
 * Implicit ODP (address 0, length UINT64_MAX) covers the whole address
 * space of the process. XRC, RC to the engine, has RC's capabilities.
 */
void ctl_mr_odp_caps(struct ipc_device_attr *a)
{
	const uint32_t all = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV;

	a->odp_general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	a->odp_rc_caps = all | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC;
	a->odp_uc_caps = all | IBV_ODP_SUPPORT_WRITE;
	a->odp_ud_caps = all;
	/* XRC is RC with an XRCETH: its memory is reached the same way */
	a->odp_xrc_caps = a->odp_rc_caps;
}

static bool ctl_mr_is_odp(uint32_t access)
{
	return (access & IBV_ACCESS_ON_DEMAND) != 0;
}

/* The implicit ODP MR of ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | ...). */
static bool ctl_mr_is_implicit(uint64_t addr, uint64_t length, uint32_t access)
{
	return ctl_mr_is_odp(access) && addr == 0 && length == UINT64_MAX;
}

/* Bytes an MR counts against its group's quota: what the daemon maps (ODP: none). */
static uint64_t ctl_mr_charge(uint32_t access, uint64_t length)
{
	return ctl_mr_is_odp(access) ? 0 : length;
}

/* (an MR in device memory maps nothing: the DM is charged, to dm_bytes) */
static uint64_t ctl_mr_charged(const struct ctl_mr *mr)
{
	return mr->dm != NULL ? 0 : ctl_mr_charge(mr->info.access, mr->info.length);
}

/* An ODP MR takes no memfd: the copy path is what makes it on-demand. */
static int ctl_mr_check_odp(uint32_t access, unsigned int nfds)
{
	return ctl_mr_is_odp(access) && nfds > 0 ? EINVAL : 0;
}

static int ctl_mr_check_access(uint32_t access)
{
	if (access & ~(uint32_t)CTL_MR_ACCESS_KNOWN)
		return EINVAL;
	/* IBA section 10.6.3, item 1: remote write/atomic need local write. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	/* no persistent memory, so no IB_DEVICE_FLUSH_PERSISTENT: EOPNOTSUPP, as
	 * Linux's ib_check_mr_access() answers a flush access the device lacks */
	if (access & QP_ACCESS_FLUSH_PERSISTENT)
		return EOPNOTSUPP;
	return 0;
}

/* Real, effective and saved IDs of process @p pid (its /proc status) are all @p uid / @p gid. */
static bool ctl_proc_creds_are(pid_t pid, uid_t uid, gid_t gid)
{
	char path[64], line[256];
	unsigned int id[3];
	int seen = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	while (fgets(line, sizeof(line), f) != NULL) {
		bool is_uid = strncmp(line, "Uid:", 4) == 0;

		if (!is_uid && strncmp(line, "Gid:", 4) != 0)
			continue;
		if (sscanf(line + 4, "%u %u %u", &id[0], &id[1], &id[2]) != 3 ||
		    id[0] != id[1] || id[1] != id[2] || id[0] != (is_uid ? uid : gid))
			break;
		seen++;
	}
	fclose(f);
	return seen == 2;
}

/*
 * The fallback path's access to the client @p c: an open /proc/PID/mem of
 * the process that connected. It is opened first (it pins the address
 * space the process has now: an exec later, a setuid one included, leaves
 * it pointing at the old, dead image, lib/xport mr.h), then trusted only if,
 * after the open, the process (1) is still the one that connected (the
 * pidfd taken at connect time names a live process, so its PID was not
 * reused), (2) has the peer's user and group as real, effective and saved
 * IDs (not a setuid program), and (3) is dumpable: /proc/PID/status
 * belongs to the peer (the kernel hands a non-dumpable process's files
 * there to root),
 * i.e. the peer could ptrace it itself. An image exec'd between the open
 * and the checks is either the pinned one (checked) or a later one (not
 * reachable through the fd).
 * @return the fd, or -errno
 */
static int ctl_client_memfd(const struct ctl_conn *c)
{
	char path[64];
	struct stat st;
	int fd;

	if (c->pid <= 0 || c->pidfd < 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)c->pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno == EACCES ? -EPERM : -errno;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)c->pid);
	if (stat(path, &st) != 0 || st.st_uid != c->uid || st.st_gid != c->gid ||
	    !ctl_proc_creds_are(c->pid, c->uid, c->gid) ||
	    syscall(SYS_pidfd_send_signal, c->pidfd, 0, NULL, 0) != 0) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/*
 * Map the client's memfd so the dataplane reaches [addr, addr+length)
 * directly. Without one (memory the shim could not share: file-backed,
 * stack, read-only...) the dataplane copies from/to the client's process
 * (fallback path) through its /proc/PID/mem (ctl_client_memfd()).
 */
static int ctl_mr_map(struct ctl_mr *mr, const struct ctl_conn *c, int fd, uint64_t addr,
		      uint64_t length, uint64_t fd_offset)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t start = addr & ~(uint64_t)(pg - 1);
	uint64_t end = (addr + length + (uint64_t)pg - 1) & ~(uint64_t)(pg - 1);
	int rc;

	mr->map = NULL;
	mr->map_len = 0;
	mr->info.local = NULL;
	mr->info.mem_fd = -1;
	if (fd < 0) {
		rc = ctl_client_memfd(c);
		mr->info.mem_fd = rc >= 0 ? rc : -1;
		return rc >= 0 ? 0 : -rc;
	}
	if (fd_offset % (uint64_t)pg != 0 || end - start > SIZE_MAX)
		return EINVAL;
	rc = ipc_shm_check(fd, fd_offset + (end - start));
	if (rc < 0)
		return -rc;
	mr->map = ipc_shm_map(fd, end - start, fd_offset);
	if (mr->map == NULL)
		return errno;
	mr->map_len = end - start;
	mr->info.local = (uint8_t *)mr->map + (addr - start);
	return 0;
}

static void ctl_mr_unmap(struct ctl_mr *mr)
{
	/* held (quarantined): an lcore may still copy through the mapping or the mem fd */
	if (mr->map != NULL && !mr->held)
		munmap(mr->map, mr->map_len);
	if (mr->info.mem_fd >= 0 && !mr->held)
		close(mr->info.mem_fd);
	mr->map = NULL;
	mr->map_len = 0;
	mr->info.local = NULL;
	mr->info.mem_fd = -1;
}

/*
 * Fail closed: the dataplane no longer has @p mr and would not take it back.
 * Its memory goes now; the slot, its keys and its PD reference stay until
 * DEREG_MR, which the application still owes (as after rdma-core's
 * IBV_REREG_MR_ERR_CMD), so the keys are not handed out again meanwhile.
 */
static void ctl_mr_invalidate(struct ctl_mr *mr)
{
	ctl_mr_unmap(mr);
	mr->invalid = true;
}

/* Same memory behind both (mapping or fallback mem fd): unmapping one would unmap the other. */
static bool ctl_mr_same_memory(const struct ctl_mr *a, const struct ctl_mr *b)
{
	return a->map == b->map && a->info.mem_fd == b->info.mem_fd;
}

/* ---- quarantine: what the dataplane may still hold is never released ---- */

static void ctl_quarantine_shm(struct ctl *ctl, struct ctl_shm *shm)
{
	if (shm->map == NULL || shm->held)
		return;
	shm->held = true;
	ctl->quarantined_bytes += shm->size;
}

static void ctl_quarantine_mr(struct ctl *ctl, struct ctl_mr *mr)
{
	if (mr->held)
		return;
	mr->held = true;
	mr->pd->o.refs++; /* for good: the lcore's copy names the PD's index */
	if (mr->dm != NULL) {
		/* and points into the DM's mapping: that stays too */
		mr->dm->o.refs++;
		ctl_quarantine_shm(ctl, &mr->dm->shm);
	}
	ctl->quarantined++;
	ctl->quarantined_bytes += mr->map_len;
}

/*
 * The dataplane could not let go of @p o: keep its memory, and the rings of
 * what a QP writes into (its CQs, its SRQ), mapped for good.
 */
static void ctl_quarantine(struct ctl *ctl, struct ctl_obj *o)
{
	switch ((enum ctl_kind)o->kind) {
	case CTL_KIND_QP: {
		struct ctl_qp *qp = (struct ctl_qp *)o;

		if (qp->pd != NULL) /* for good: its index is never given to another PD */
			qp->pd->o.refs++;
		ctl_quarantine_shm(ctl, &qp->shm);
		if (qp->scq != NULL)
			ctl_quarantine_shm(ctl, &qp->scq->shm);
		if (qp->rcq != NULL)
			ctl_quarantine_shm(ctl, &qp->rcq->shm);
		if (qp->srq != NULL)
			ctl_quarantine_shm(ctl, &qp->srq->shm);
		break;
	}
	case CTL_KIND_MR:
		ctl_quarantine_mr(ctl, (struct ctl_mr *)o);
		return; /* counted there */
	case CTL_KIND_CQ:
		ctl_quarantine_shm(ctl, &((struct ctl_cq *)o)->shm);
		break;
	case CTL_KIND_SRQ:
		ctl_quarantine_shm(ctl, &((struct ctl_srq *)o)->shm);
		if (((struct ctl_srq *)o)->cq != NULL) /* an XRC SRQ writes its CQ */
			ctl_quarantine_shm(ctl, &((struct ctl_srq *)o)->cq->shm);
		break;
	default:
		break;
	}
	ctl->quarantined++;
}

static int ctl_mr_check_range(const struct ctl_conn *c, uint64_t addr, uint64_t length,
			      uint32_t access)
{
	const struct ipc_device_attr *a = &c->ctl->cfg.dev[c->dev].attr;

	if (ctl_mr_is_implicit(addr, length, access))
		return 0;
	if (length == 0 || length > a->max_mr_size || addr + length < addr)
		return EINVAL;
	return 0;
}

/*
 * A new key for MR slot @p index: (index + 1) << 8 | a random byte unlike
 * the slot's last one (IBA section 10.6.3 lets keys vary per registration; rxe
 * draws its 8 key bits at random the same way). A counter in that byte let
 * a peer that saw one key name the next registration of any slot; random,
 * a guess is right once in 256 and each wrong one breaks the guesser's
 * connection (an R_Key violation NAK moves its QP to the error state).
 */
uint8_t ctl_key_byte_next(uint8_t *last)
{
	uint8_t b = *last;

	for (int i = 0; i < 8 && b == *last; i++)
		if (getrandom(&b, 1, 0) != 1)
			b = (uint8_t)(*last + 1 + (rand() % 255)); /* no entropy: still another */
	if (b == *last)
		b++;
	*last = b;
	return b;
}

static uint32_t ctl_mr_key(struct ctl *ctl, uint32_t index)
{
	return ((index + 1) << 8) | ctl_key_byte_next(&ctl->mr_key_byte[index]);
}

/* Would @p c's group hold more than its quota of registered bytes with @p add more (@p sub less)? */
static bool ctl_mr_bytes_over(struct ctl_conn *c, uint64_t add, uint64_t sub)
{
	uint64_t q = c->ctl->cfg.quota.max_mr_bytes, have = c->group->mr_bytes - sub;

	if (q == 0 || (add <= q && have <= q - add))
		return false;
	c->ctl->quota_refused++;
	return true;
}

static int ctl_reg_mr_fin(struct ctl *ctl, struct ctl_pend *p, int rc)
{
	struct ctl_mr *mr = (struct ctl_mr *)p->obj;
	struct ipc_reg_mr_rsp *r = &p->rsp.u.rsp_REG_MR;

	if (rc) {
		mr->o.owner->mr_bytes -= ctl_mr_charged(mr);
		mr->pd->o.refs--;
		if (mr->dm != NULL)
			mr->dm->o.refs--;
		ctl_mr_unmap(mr);
		ctl_table_free(&ctl->tab[CTL_KIND_MR], mr);
		return rc;
	}
	r->handle = ctl_obj_handle(&mr->o);
	r->lkey = mr->info.lkey;
	r->rkey = mr->info.rkey;
	return 0;
}

int ctl_h_REG_MR(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	int *fds = x->fds;
	unsigned int nfds = x->nfds;
	const struct ipc_reg_mr_req *q = &req->u.req_REG_MR;
	struct ctl *ctl = c->ctl;
	struct ctl_pd *pd = ctl_lookup(c, CTL_KIND_PD, q->pd);
	struct ctl_mr *mr;
	int rc;

	if (pd == NULL)
		return EINVAL;
	rc = ctl_mr_check_access(q->access);
	if (rc == 0)
		rc = ctl_mr_check_range(c, q->addr, q->length, q->access);
	if (rc == 0)
		rc = ctl_mr_check_odp(q->access, nfds);
	if (rc)
		return rc;
	if (ctl_mr_bytes_over(c, ctl_mr_charge(q->access, q->length), 0))
		return ENOMEM; /* the client's quota of registered bytes */
	mr = ctl_table_alloc(&ctl->tab[CTL_KIND_MR], c, CTL_KIND_MR, q->user_handle);
	if (mr == NULL)
		return ENOMEM;
	rc = ctl_mr_map(mr, c, nfds > 0 ? fds[0] : -1, q->addr, q->length, q->fd_offset);
	if (rc) {
		ctl_table_free(&ctl->tab[CTL_KIND_MR], mr);
		return rc;
	}
	mr->pd = pd;
	mr->info.lkey = ctl_mr_key(ctl, mr->o.index);
	mr->info.rkey = mr->info.lkey;
	mr->info.pd = pd->o.index;
	mr->info.access = q->access & ~(uint32_t)CTL_MR_HINTS;
	mr->info.iova = q->iova;
	mr->info.length = q->length;
	mr->info.app_addr = q->addr;
	mr->info.pid = c->pid;
	c->group->mr_bytes += ctl_mr_charged(mr); /* given back by a refusal or the destroy */
	pd->o.refs++; /* held while the dataplane decides, so the PD cannot go meanwhile */
	rc = DP_HAS(ctl, mr_create) ? DP(ctl)->mr_create(ctl->cfg.dp, &mr->info) : 0;
	return ctl_then(ctl, ctl->cur, rc, ctl_reg_mr_fin, &mr->o);
}

/*
 * ibv_reg_dm_mr: [offset, offset + length) of a DM, zero-based (rdma-core
 * requires IBV_ACCESS_ZERO_BASED), in the daemon's mapping of the DM: the
 * lcores reach it directly. The MR holds a reference on the DM (FREE_DM is
 * EBUSY meanwhile, as the kernel's) and charges nothing to mr_bytes.
 */
int ctl_h_REG_DM_MR(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_reg_dm_mr_req *q = &x->req->u.req_REG_DM_MR;
	struct ctl *ctl = c->ctl;
	struct ctl_pd *pd = ctl_lookup(c, CTL_KIND_PD, q->pd);
	struct ctl_dm *dm = ctl_lookup(c, CTL_KIND_DM, q->dm);
	struct ctl_mr *mr;
	int rc;

	if (pd == NULL || dm == NULL || !(q->access & IBV_ACCESS_ZERO_BASED) ||
	    (q->access & IBV_ACCESS_ON_DEMAND))
		return EINVAL;
	rc = ctl_mr_check_access(q->access);
	if (rc)
		return rc;
	/* inside the DM, as ib_uverbs_reg_dm_mr() checks; 0 bytes are allowed
	 * there (pyverbs' test_create_dm_mr registers some): an MR nothing fits in */
	if (q->offset > dm->length || q->length > dm->length - q->offset)
		return EINVAL;
	mr = ctl_table_alloc(&ctl->tab[CTL_KIND_MR], c, CTL_KIND_MR, q->user_handle);
	if (mr == NULL)
		return ENOMEM;
	mr->map = NULL;
	mr->map_len = 0;
	mr->dm = dm;
	mr->pd = pd;
	mr->info.local = (uint8_t *)dm->shm.map + q->offset;
	mr->info.mem_fd = -1;
	mr->info.lkey = ctl_mr_key(ctl, mr->o.index);
	mr->info.rkey = mr->info.lkey;
	mr->info.pd = pd->o.index;
	mr->info.access = q->access & ~(uint32_t)CTL_MR_HINTS;
	mr->info.iova = 0;
	mr->info.length = q->length;
	mr->info.app_addr = 0;
	mr->info.pid = c->pid;
	pd->o.refs++;
	dm->o.refs++;
	rc = DP_HAS(ctl, mr_create) ? DP(ctl)->mr_create(ctl->cfg.dp, &mr->info) : 0;
	return ctl_then(ctl, ctl->cur, rc, ctl_reg_mr_fin, &mr->o);
}

/* rereg, after a refused restore's cleanup: the MR fails closed. */
static int ctl_rereg_fin_closed(struct ctl *ctl, struct ctl_pend *p, int rc)
{
	(void)ctl;
	(void)rc;
	ctl_mr_invalidate((struct ctl_mr *)p->obj);
	return p->u.rereg.rc;
}

/*
 * rereg, last step: the old registration is given back (the new one was
 * refused). It must come back under the keys the application holds:
 * refused, or under other keys (then taken away again), the MR fails closed.
 */
static int ctl_rereg_fin_restored(struct ctl *ctl, struct ctl_pend *p, int rc)
{
	struct ctl_mr *mr = (struct ctl_mr *)p->obj;

	p->u.rereg.next.pd->o.refs--;
	if (rc != 0) {
		ctl_mr_invalidate(mr);
		return p->u.rereg.rc;
	}
	if (mr->info.lkey == p->u.rereg.old.info.lkey && mr->info.rkey == p->u.rereg.old.info.rkey)
		return p->u.rereg.rc;
	if (DP_HAS(ctl, mr_destroy))
		DP(ctl)->mr_destroy(ctl->cfg.dp, &mr->info);
	return ctl_then(ctl, p, 0, ctl_rereg_fin_closed, &mr->o);
}

/* rereg, second step: the new registration was taken, or refused. */
static int ctl_rereg_fin_made(struct ctl *ctl, struct ctl_pend *p, int rc)
{
	struct ctl_mr *mr = (struct ctl_mr *)p->obj, *old = &p->u.rereg.old;
	struct ipc_reg_mr_rsp *r = &p->rsp.u.rsp_REREG_MR;

	if (rc) {
		if (!ctl_mr_same_memory(mr, old))
			ctl_mr_unmap(mr);
		*mr = *old;
		p->u.rereg.rc = rc;
		rc = DP(ctl)->mr_create(ctl->cfg.dp, &mr->info);
		return ctl_then(ctl, p, rc, ctl_rereg_fin_restored, &mr->o);
	}
	if (!ctl_mr_same_memory(mr, old))
		ctl_mr_unmap(old);
	old->pd->o.refs--;
	/* unsigned: wraps right */
	mr->o.owner->mr_bytes += ctl_mr_charged(mr) - ctl_mr_charged(old);
	r->handle = p->req.u.req_REREG_MR.handle;
	r->lkey = mr->info.lkey;
	r->rkey = mr->info.rkey;
	return 0;
}

/* rereg, first step: the old registration is gone from the dataplane. */
static int ctl_rereg_fin_gone(struct ctl *ctl, struct ctl_pend *p, int rc)
{
	struct ctl_mr *mr = (struct ctl_mr *)p->obj;

	if (rc) {
		/* Not let go: the old memory stays for good, the MR fails closed. */
		struct ctl_mr *next = &p->u.rereg.next;

		ctl_quarantine_mr(ctl, mr);
		if (!ctl_mr_same_memory(next, mr))
			ctl_mr_unmap(next);
		next->pd->o.refs--;
		ctl_mr_invalidate(mr);
		return EIO;
	}
	*mr = p->u.rereg.next;
	rc = DP_HAS(ctl, mr_create) ? DP(ctl)->mr_create(ctl->cfg.dp, &mr->info) : 0;
	return ctl_then(ctl, p, rc, ctl_rereg_fin_made, &mr->o);
}

int ctl_h_REREG_MR(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	int *fds = x->fds;
	unsigned int nfds = x->nfds;
	const struct ipc_rereg_mr_req *q = &req->u.req_REREG_MR;
	struct ctl *ctl = c->ctl;
	struct ctl_mr *mr = ctl_lookup(c, CTL_KIND_MR, q->handle);
	struct ctl_pd *pd;
	struct ctl_mr next;
	int rc;

	/* an MR in device memory is not re-registered (ibv_rereg_mr knows no DM) */
	if (mr == NULL || mr->invalid || mr->dm != NULL || q->flags == 0 ||
	    (q->flags & ~(uint32_t)IBV_REREG_MR_FLAGS_SUPPORTED))
		return EINVAL;
	pd = mr->pd;
	if (q->flags & IBV_REREG_MR_CHANGE_PD) {
		pd = ctl_lookup(c, CTL_KIND_PD, q->pd);
		if (pd == NULL)
			return EINVAL;
	}
	next = *mr;
	if (q->flags & IBV_REREG_MR_CHANGE_ACCESS) {
		rc = ctl_mr_check_access(q->access);
		if (rc == 0 && ctl_mr_is_odp(q->access) != ctl_mr_is_odp(mr->info.access))
			rc = EINVAL; /* as the kernel: ODP is fixed at registration */
		if (rc)
			return rc;
		next.info.access = q->access & ~(uint32_t)CTL_MR_HINTS;
	}
	if (q->flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		rc = ctl_mr_check_range(c, q->addr, q->length, next.info.access);
		if (rc == 0)
			rc = ctl_mr_check_odp(next.info.access, nfds);
		if (rc == 0 && ctl_mr_bytes_over(c, ctl_mr_charge(next.info.access, q->length),
						 ctl_mr_charged(mr)))
			rc = ENOMEM;
		if (rc == 0)
			rc = ctl_mr_map(&next, c, nfds > 0 ? fds[0] : -1, q->addr, q->length,
					q->fd_offset);
		if (rc)
			return rc;
		next.info.iova = q->iova;
		next.info.length = q->length;
		next.info.app_addr = q->addr;
	}
	next.pd = pd;
	next.info.pd = pd->o.index;
	/*
	 * The dataplane sees the old registration go and the new one come, keys
	 * unchanged, always through the table's own storage (it may keep the
	 * pointer until mr_destroy). Both PDs are held meanwhile.
	 */
	pd->o.refs++;
	ctl->cur->u.rereg.old = *mr;
	ctl->cur->u.rereg.next = next;
	ctl->cur->dp_held = false;
	if (DP_HAS(ctl, mr_destroy))
		DP(ctl)->mr_destroy(ctl->cfg.dp, &mr->info);
	return ctl_then(ctl, ctl->cur, ctl->cur->dp_held ? EIO : 0, ctl_rereg_fin_gone, &mr->o);
}

int ctl_h_DEREG_MR(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ctl_mr *mr = ctl_lookup(c, CTL_KIND_MR, req->u.req_DEREG_MR.handle);

	if (mr == NULL)
		return EINVAL;
	/* IBA section 10.6.7: not while windows are bound to it (rxe: EINVAL) */
	if (!mr->invalid && mw_mr_bound(c->ctl->mws, mr->info.lkey) != 0)
		return EINVAL;
	return ctl_obj_destroy(c->ctl, &mr->o);
}

/* ---- import (ibv_import_pd / ibv_import_mr): the object must be the group's ---- */

int ctl_h_IMPORT_PD(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;

	return ctl_lookup(c, CTL_KIND_PD, req->u.req_IMPORT_PD.handle) ? 0 : EINVAL;
}

int ctl_h_IMPORT_MR(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ipc_msg *rsp = x->rsp;
	const struct ipc_import_mr_req *q = &req->u.req_IMPORT_MR;
	struct ipc_import_mr_rsp *r = &rsp->u.rsp_IMPORT_MR;
	struct ctl_mr *mr = ctl_lookup(c, CTL_KIND_MR, q->handle);

	/* Stricter than uverbs' QUERY_MR: the PD given must be the MR's. */
	if (mr == NULL || mr->invalid || mr->pd != ctl_lookup(c, CTL_KIND_PD, q->pd))
		return EINVAL;
	r->lkey = mr->info.lkey;
	r->rkey = mr->info.rkey;
	r->length = mr->info.length;
	return 0;
}

/* ---- completion channel ---- */

int ctl_h_CREATE_CHANNEL(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ipc_msg *rsp = x->rsp;
	struct ctl_channel *ch;
	int rfd, wfd, rc;

	/*
	 * The daemon makes the channel (a socket pair) and keeps one end: an
	 * fd the application made (an eventfd) shares its open file, whose
	 * O_NONBLOCK and counter the application controls, so a write to it
	 * could block the control thread.
	 */
	ch = ctl_table_alloc(&c->ctl->tab[CTL_KIND_CHANNEL], c, CTL_KIND_CHANNEL,
			     req->u.req_CREATE_CHANNEL.user_handle);
	if (ch == NULL)
		return ENOMEM;
	rc = ipc_channel_pair(&rfd, &wfd);
	if (rc) {
		ctl_table_free(&c->ctl->tab[CTL_KIND_CHANNEL], ch);
		return -rc;
	}
	ch->efd = wfd;
	x->rfds[0] = rfd;
	*x->rnfds = 1;
	rsp->u.rsp_CREATE_CHANNEL.handle = ctl_obj_handle(&ch->o);
	return 0;
}

int ctl_h_DESTROY_CHANNEL(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ctl_channel *ch = ctl_lookup(c, CTL_KIND_CHANNEL, req->u.req_DESTROY_CHANNEL.handle);

	if (ch == NULL)
		return EINVAL;
	if (ch->o.refs != 0)
		return EBUSY;
	return ctl_obj_destroy(c->ctl, &ch->o);
}

/* ---- CQ ---- */

/* The CQ memfd: [struct ipc_cq_ctrl][ring of struct cqe]. */
static int ctl_cq_ring(struct ctl_cq *cq, uint32_t cqe, struct ipc_cq_rsp *r, int *fd)
{
	uint32_t entries = ipc_pow2_roundup(cqe + 1);
	size_t size = sizeof(struct ipc_cq_ctrl) + ipc_ring_bytes(entries, sizeof(struct cqe));
	int rc = ctl_shm_alloc(&cq->shm, "roce-cq", size, fd);

	if (rc)
		return rc;
	cq->info.ctrl = cq->shm.map;
	ctl_ring_setup(&cq->shm, sizeof(struct ipc_cq_ctrl), entries, sizeof(struct cqe),
		       &cq->info.ring, &r->ring);
	cq->info.cqe = entries - 1;
	r->cqe = entries - 1;
	r->shm_size = size;
	r->ctrl_offset = 0;
	return 0;
}

static int ctl_create_cq_fin(struct ctl *ctl, struct ctl_pend *p, int rc)
{
	struct ctl_cq *cq = (struct ctl_cq *)p->obj;

	if (rc) {
		if (cq->ch)
			cq->ch->o.refs--;
		ctl_shm_free(&cq->shm);
		ctl_table_free(&ctl->tab[CTL_KIND_CQ], cq);
		return rc;
	}
	p->rsp.u.rsp_CREATE_CQ.handle = ctl_obj_handle(&cq->o);
	return 0;
}

int ctl_h_CREATE_CQ(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ipc_msg *rsp = x->rsp;
	int *rfds = x->rfds;
	unsigned int *rnfds = x->rnfds;
	const struct ipc_create_cq_req *q = &req->u.req_CREATE_CQ;
	struct ipc_cq_rsp *r = &rsp->u.rsp_CREATE_CQ;
	struct ctl *ctl = c->ctl;
	const struct ctl_device_cfg *d = &ctl->cfg.dev[c->dev];
	struct ctl_channel *ch = NULL;
	struct ctl_cq *cq;
	int rc, fd;

	if (q->cqe == 0 || q->cqe > d->attr.max_cqe || q->comp_vector >= d->num_comp_vectors)
		return EINVAL;
	if (q->channel != IPC_HANDLE_NONE) {
		ch = ctl_lookup(c, CTL_KIND_CHANNEL, q->channel);
		if (ch == NULL)
			return EINVAL;
	}
	cq = ctl_table_alloc(&ctl->tab[CTL_KIND_CQ], c, CTL_KIND_CQ, q->user_handle);
	if (cq == NULL)
		return ENOMEM;
	rc = ctl_cq_ring(cq, q->cqe, r, &fd);
	if (rc) {
		ctl_table_free(&ctl->tab[CTL_KIND_CQ], cq);
		return rc;
	}
	cq->ch = ch;
	cq->lcore = CTL_LCORE_NONE;
	cq->info.cqn = cq->o.index;
	cq->info.event_fd = ch ? ch->efd : -1;
	cq->info.user_handle = q->user_handle;
	cq->info.owner = c->group;
	if (ch)
		ch->o.refs++;
	rfds[0] = fd; /* closed if the dataplane refuses */
	*rnfds = 1;
	rc = DP_HAS(ctl, cq_create) ? DP(ctl)->cq_create(ctl->cfg.dp, &cq->info) : 0;
	return ctl_then(ctl, ctl->cur, rc, ctl_create_cq_fin, &cq->o);
}

/* Without a dataplane the control plane moves the unconsumed CQEs itself. */
static void ctl_cq_copy(const struct ctl_cq_info *to, const struct ctl_cq_info *from)
{
	uint32_t n = spsc_ring_count(from->ring.ring);

	for (uint32_t i = 0; i < n; i++)
		memcpy(spsc_ring_prod_slot(to->ring.ring, i), spsc_ring_cons_slot(from->ring.ring, i),
		       sizeof(struct cqe));
	spsc_ring_publish(to->ring.ring, n);
	to->ctrl->notify_count = from->ctrl->notify_count;
}

static int ctl_resize_cq_fin(struct ctl *ctl, struct ctl_pend *p, int rc)
{
	struct ctl_cq *cq = (struct ctl_cq *)p->obj, *next = &p->u.resize.next;

	(void)ctl;
	if (rc) {
		ctl_shm_free(&next->shm);
		return rc;
	}
	ctl_shm_free(&cq->shm);
	/* only the ring moves: refs, events and the lcore may have changed meanwhile */
	cq->shm = next->shm;
	cq->info.ring = next->info.ring;
	cq->info.ctrl = next->info.ctrl;
	cq->info.cqe = next->info.cqe;
	p->rsp.u.rsp_RESIZE_CQ.handle = p->req.u.req_RESIZE_CQ.handle;
	return 0;
}

int ctl_h_RESIZE_CQ(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ipc_msg *rsp = x->rsp;
	int *rfds = x->rfds;
	unsigned int *rnfds = x->rnfds;
	const struct ipc_resize_cq_req *q = &req->u.req_RESIZE_CQ;
	struct ipc_cq_rsp *r = &rsp->u.rsp_RESIZE_CQ;
	struct ctl *ctl = c->ctl;
	struct ctl_cq *cq = ctl_lookup(c, CTL_KIND_CQ, q->handle);
	struct ctl_cq next;
	int rc, fd;

	if (cq == NULL || q->cqe == 0 || q->cqe > ctl->cfg.dev[c->dev].attr.max_cqe)
		return EINVAL;
	/* IBA 11.2.8.4 / Linux: the new size must hold what the CQ holds now. */
	if (q->cqe < spsc_ring_count(cq->info.ring.ring))
		return EINVAL;
	next = *cq;
	rc = ctl_cq_ring(&next, q->cqe, r, &fd);
	if (rc)
		return rc;
	rfds[0] = fd; /* closed if the dataplane refuses */
	*rnfds = 1;
	/* the dataplane gets the table's copy of the new view: stable while it works */
	ctl->cur->u.resize.next = next;
	if (DP_HAS(ctl, cq_resize))
		rc = DP(ctl)->cq_resize(ctl->cfg.dp, &ctl->cur->u.resize.next.info, &cq->info);
	else
		ctl_cq_copy(&next.info, &cq->info);
	return ctl_then(ctl, ctl->cur, rc, ctl_resize_cq_fin, &cq->o);
}

int ctl_h_DESTROY_CQ(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ipc_msg *rsp = x->rsp;
	struct ctl_cq *cq = ctl_lookup(c, CTL_KIND_CQ, req->u.req_DESTROY_CQ.handle);

	if (cq == NULL)
		return EINVAL;
	if (cq->o.refs != 0)
		return EBUSY;
	rsp->u.rsp_DESTROY_CQ.events_reported = cq->o.events;
	return ctl_obj_destroy(c->ctl, &cq->o);
}

/* ---- SRQ ---- */

/* An XRC SRQ lets go of its domain's lcore and its CQ, a TM SRQ of its CQ and its tags. */
static void ctl_srq_xrc_put(struct ctl *ctl, struct ctl_srq *srq)
{
	if (srq->xrcd != NULL)
		ctl_xrcd_unbind(ctl, srq->xrcd);
	if (srq->cq != NULL && --srq->cq->o.refs == 0)
		srq->cq->lcore = CTL_LCORE_NONE;
	srq->o.owner->tm_tags -= srq->info.max_num_tags; /* owner: the group head */
	srq->xrcd = NULL;
	srq->cq = NULL;
	srq->info.max_num_tags = 0;
}

/*
 * A TM SRQ (IBV_SRQT_TM): max_num_tags and max_ops within the limits (0:
 * no tag matching, EOPNOTSUPP) and the group's quota of tags, a CQ for the
 * operations' completions; bound to the CQ's lcore (or the least loaded)
 * for its life: that lcore consumes its ops ring.
 */
static int ctl_srq_tm_get(struct ctl *ctl, struct ctl_conn *c, const struct ipc_create_srq_req *q,
			  struct ctl_srq *srq)
{
	const struct ctl_limits *l = &ctl->cfg.limits;
	uint64_t quota = ctl->cfg.quota.max_tm_tags;
	struct ctl_cq *cq;
	uint32_t lcore;

	if (l->max_tm_tags == 0 || l->max_tm_ops == 0)
		return EOPNOTSUPP;
	cq = ctl_lookup(c, CTL_KIND_CQ, q->cq);
	if (cq == NULL || q->max_num_tags == 0 || q->max_num_tags > l->max_tm_tags ||
	    q->max_num_tags > 0xffffu || q->max_ops == 0 || q->max_ops > l->max_tm_ops)
		return EINVAL;
	if (quota != 0 && c->group->tm_tags + q->max_num_tags > quota) {
		ctl->quota_refused++;
		return ENOMEM;
	}
	lcore = cq->lcore;
	if (lcore == CTL_LCORE_NONE)
		lcore = ctl_lcore_least(ctl);
	cq->o.refs++;
	cq->lcore = lcore;
	c->group->tm_tags += q->max_num_tags;
	srq->cq = cq;
	srq->lcore = lcore;
	srq->info.cqn = cq->info.cqn;
	srq->info.lcore = lcore;
	srq->info.max_num_tags = q->max_num_tags;
	return 0;
}

/*
 * An XRC SRQ (IBV_SRQT_XRC): its domain handle and CQ, and the lcore of
 * the domain, which its CQ must be on too (ctl.h "QP placement").
 */
static int ctl_srq_xrc_get(struct ctl *ctl, struct ctl_conn *c, const struct ipc_create_srq_req *q,
			   struct ctl_srq *srq)
{
	struct ctl_xrcd *xrcd = ctl_lookup(c, CTL_KIND_XRCD, q->xrcd);
	struct ctl_cq *cq = ctl_lookup(c, CTL_KIND_CQ, q->cq);
	uint32_t lcore;

	if (xrcd == NULL || cq == NULL)
		return EINVAL;
	lcore = ctl_xrcd_lcore(ctl, xrcd);
	if (!ctl_place_with(cq->lcore, &lcore))
		return EINVAL;
	if (lcore == CTL_LCORE_NONE)
		lcore = ctl_lcore_least(ctl);
	ctl_xrcd_bind(ctl, xrcd, lcore);
	cq->o.refs++;
	cq->lcore = lcore;
	srq->xrcd = xrcd;
	srq->cq = cq;
	srq->lcore = lcore;
	srq->info.xrcd = ctl_xrcd_num(xrcd);
	srq->info.cqn = cq->info.cqn;
	srq->info.lcore = lcore;
	return 0;
}

static int ctl_create_srq_fin(struct ctl *ctl, struct ctl_pend *p, int rc)
{
	struct ctl_srq *srq = (struct ctl_srq *)p->obj;

	if (rc) {
		ctl_srq_xrc_put(ctl, srq);
		srq->pd->o.refs--;
		ctl_shm_free(&srq->shm);
		ctl_table_free(&ctl->tab[CTL_KIND_SRQ], srq);
		return rc;
	}
	p->rsp.u.rsp_CREATE_SRQ.handle = ctl_obj_handle(&srq->o);
	return 0;
}

int ctl_h_CREATE_SRQ(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ipc_msg *rsp = x->rsp;
	int *rfds = x->rfds;
	unsigned int *rnfds = x->rnfds;
	const struct ipc_create_srq_req *q = &req->u.req_CREATE_SRQ;
	struct ipc_create_srq_rsp *r = &rsp->u.rsp_CREATE_SRQ;
	struct ctl *ctl = c->ctl;
	const struct ipc_device_attr *a = &ctl->cfg.dev[c->dev].attr;
	struct ctl_pd *pd = ctl_lookup(c, CTL_KIND_PD, q->pd);
	struct ctl_srq *srq;
	uint32_t entries, stride, max_sge, tm_entries = 0;
	size_t size, tm_off = 0, tm_rel = 0;
	int rc, fd;

	if (pd == NULL || q->max_wr == 0 || q->max_wr > a->max_srq_wr || q->max_sge > a->max_srq_sge ||
	    q->max_sge > WQE_MAX_SGE || q->srq_limit > q->max_wr)
		return EINVAL;
	if (q->srq_type != IBV_SRQT_BASIC && q->srq_type != IBV_SRQT_XRC && q->srq_type != IBV_SRQT_TM)
		return EINVAL;
	srq = ctl_table_alloc(&ctl->tab[CTL_KIND_SRQ], c, CTL_KIND_SRQ, q->user_handle);
	if (srq == NULL)
		return ENOMEM;
	srq->info.cqn = UINT32_MAX;
	srq->lcore = CTL_LCORE_NONE;
	rc = q->srq_type == IBV_SRQT_XRC ? ctl_srq_xrc_get(ctl, c, q, srq) :
	     q->srq_type == IBV_SRQT_TM ? ctl_srq_tm_get(ctl, c, q, srq) : 0;
	if (rc) {
		ctl_table_free(&ctl->tab[CTL_KIND_SRQ], srq);
		return rc;
	}
	/* As QPs (lib/qp qp_sem_create): max_wr becomes 2^k - 1, the ring 2^k. */
	max_sge = q->max_sge ? q->max_sge : 1;
	entries = ipc_pow2_roundup(q->max_wr + 1);
	stride = rq_wqe_stride(max_sge); /* whole lines (wqe.h) */
	size = ipc_ring_bytes(entries, stride);
	if (srq->info.max_num_tags != 0) {
		/* then the ops ring, then the released counts (ipc_create_srq_rsp) */
		tm_entries = ipc_pow2_roundup(q->max_ops + 1);
		tm_off = size;
		size += ipc_ring_bytes(tm_entries, sizeof(struct tm_op_wqe));
		tm_rel = size;
		size += ((size_t)srq->info.max_num_tags * sizeof(uint32_t) + 63) & ~(size_t)63;
	}
	rc = ctl_shm_alloc(&srq->shm, "roce-srq", size, &fd);
	if (rc) {
		ctl_srq_xrc_put(ctl, srq);
		ctl_table_free(&ctl->tab[CTL_KIND_SRQ], srq);
		return rc;
	}
	ctl_ring_setup(&srq->shm, 0, entries, stride, &srq->info.ring, &r->ring);
	if (srq->info.max_num_tags != 0) {
		ctl_ring_setup(&srq->shm, tm_off, tm_entries, sizeof(struct tm_op_wqe),
			       &srq->info.tm_ops, &r->tm_ops);
		srq->info.tm_released = (uint32_t *)((uint8_t *)srq->shm.map + tm_rel);
		srq->info.max_ops = tm_entries - 1;
		r->tm_released = tm_rel;
		r->max_num_tags = srq->info.max_num_tags;
		r->max_ops = srq->info.max_ops;
	}
	srq->pd = pd;
	srq->info.srqn = srq->o.index + 1;
	srq->info.pd = pd->o.index;
	srq->info.max_wr = entries - 1;
	srq->info.max_sge = max_sge;
	srq->info.srq_limit = q->srq_limit;
	srq->info.user_handle = q->user_handle;
	srq->info.owner = c->group;
	pd->o.refs++;
	r->srqn = srq->info.srqn;
	r->max_wr = srq->info.max_wr;
	r->max_sge = srq->info.max_sge;
	r->shm_size = size;
	rfds[0] = fd; /* closed if the dataplane refuses */
	*rnfds = 1;
	rc = DP_HAS(ctl, srq_create) ? DP(ctl)->srq_create(ctl->cfg.dp, &srq->info) : 0;
	return ctl_then(ctl, ctl->cur, rc, ctl_create_srq_fin, &srq->o);
}

static int ctl_modify_srq_fin(struct ctl *ctl, struct ctl_pend *p, int rc)
{
	(void)ctl;
	if (rc == 0)
		((struct ctl_srq *)p->obj)->info = p->u.srq;
	return rc;
}

int ctl_h_MODIFY_SRQ(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	const struct ipc_modify_srq_req *q = &req->u.req_MODIFY_SRQ;
	struct ctl *ctl = c->ctl;
	struct ctl_srq *srq = ctl_lookup(c, CTL_KIND_SRQ, q->handle);
	struct ctl_srq_info next;
	int rc;

	if (srq == NULL || (q->mask & ~(uint32_t)(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
		return EINVAL;
	if (q->mask & IBV_SRQ_MAX_WR)
		return EOPNOTSUPP; /* resizing an SRQ ring: not supported (no IBV_DEVICE_SRQ_RESIZE) */
	next = srq->info;
	if (q->mask & IBV_SRQ_LIMIT) {
		if (q->srq_limit > srq->info.max_wr)
			return EINVAL;
		next.srq_limit = q->srq_limit;
	}
	ctl->cur->u.srq = next;
	rc = DP_HAS(ctl, srq_modify) ? DP(ctl)->srq_modify(ctl->cfg.dp, &ctl->cur->u.srq) : 0;
	return ctl_then(ctl, ctl->cur, rc, ctl_modify_srq_fin, &srq->o);
}

int ctl_h_QUERY_SRQ(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ipc_msg *rsp = x->rsp;
	struct ctl_srq *srq = ctl_lookup(c, CTL_KIND_SRQ, req->u.req_QUERY_SRQ.handle);
	struct ipc_query_srq_rsp *r = &rsp->u.rsp_QUERY_SRQ;

	if (srq == NULL)
		return EINVAL;
	r->max_wr = srq->info.max_wr;
	r->max_sge = srq->info.max_sge;
	r->srq_limit = srq->info.srq_limit;
	return 0;
}

int ctl_h_DESTROY_SRQ(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ipc_msg *rsp = x->rsp;
	struct ctl_srq *srq = ctl_lookup(c, CTL_KIND_SRQ, req->u.req_DESTROY_SRQ.handle);

	if (srq == NULL)
		return EINVAL;
	if (srq->o.refs != 0)
		return EBUSY;
	rsp->u.rsp_DESTROY_SRQ.events_reported = srq->o.events;
	return ctl_obj_destroy(c->ctl, &srq->o);
}

/* ---- AH ---- */

/* The address vector as far as the control plane knows it (the MAC of the peer is the dataplane's). */
static void ctl_ah_av(const struct ctl_port_cfg *port, const struct ipc_ah_attr *a, uint32_t ahn,
		      struct wr_av *av)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	memset(av, 0, sizeof(*av));
	memcpy(av->smac, port->mac, 6);
	av->vlan_present = port->vlan != 0; /* priority 0: the engine adds the port's pcp */
	av->vlan_tci = port->vlan & 0x0fff;
	memcpy(av->dgid, a->dgid, 16);
	memcpy(av->sgid, port->gid[a->sgid_index], 16);
	av->ipv6 = memcmp(av->sgid, v4mapped, sizeof(v4mapped)) != 0;
	av->flow_label = a->flow_label & 0xfffff;
	av->traffic_class = a->traffic_class;
	av->hop_limit = a->hop_limit;
	av->sl = a->sl;
	av->port_num = a->port_num;
	av->ah_handle = ahn;
}

static int ctl_create_ah_fin(struct ctl *ctl, struct ctl_pend *p, int rc)
{
	struct ctl_ah *ah = (struct ctl_ah *)p->obj;

	if (rc) {
		ah->pd->o.refs--;
		ctl_table_free(&ctl->tab[CTL_KIND_AH], ah);
		return rc;
	}
	p->rsp.u.rsp_CREATE_AH.handle = ctl_obj_handle(&ah->o);
	p->rsp.u.rsp_CREATE_AH.num = ah->info.ahn;
	p->rsp.u.rsp_CREATE_AH.av = ah->info.av;
	return 0;
}

int ctl_h_CREATE_AH(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	const struct ipc_create_ah_req *q = &req->u.req_CREATE_AH;
	struct ctl *ctl = c->ctl;
	const struct ctl_device_cfg *d = &ctl->cfg.dev[c->dev];
	struct ctl_pd *pd = ctl_lookup(c, CTL_KIND_PD, q->pd);
	const struct ctl_port_cfg *port;
	struct ctl_ah *ah;
	int rc;

	if (pd == NULL || q->attr.port_num == 0 || q->attr.port_num > d->attr.phys_port_cnt)
		return EINVAL;
	port = &d->port[q->attr.port_num - 1];
	/* RoCE: an address handle needs a GRH with a valid source GID; an empty
	 * slot of the table is ENODATA, as Linux's rdma_get_gid_attr(). */
	if (!q->attr.is_global || q->attr.sgid_index >= CTL_GID_TBL_LEN)
		return EINVAL;
	if (!port->gid_valid[q->attr.sgid_index])
		return ENODATA;
	ah = ctl_table_alloc(&ctl->tab[CTL_KIND_AH], c, CTL_KIND_AH, q->user_handle);
	if (ah == NULL)
		return ENOMEM;
	ah->pd = pd;
	ah->info.ahn = ah->o.index;
	ah->info.pd = pd->o.index;
	ah->info.dev = (uint32_t)c->dev;
	ah->info.attr = q->attr;
	ctl_ah_av(port, &q->attr, ah->info.ahn, &ah->info.av);
	pd->o.refs++;
	rc = DP_HAS(ctl, ah_create) ? DP(ctl)->ah_create(ctl->cfg.dp, &ah->info) : 0;
	return ctl_then(ctl, ctl->cur, rc, ctl_create_ah_fin, &ah->o);
}

int ctl_h_DESTROY_AH(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ctl_ah *ah = ctl_lookup(c, CTL_KIND_AH, req->u.req_DESTROY_AH.handle);

	if (ah == NULL)
		return EINVAL;
	return ctl_obj_destroy(c->ctl, &ah->o);
}

/* ---- the one destructor ---- */

/* What is left of a destroy once the dataplane let go of the object. */
static int ctl_obj_destroy_fin(struct ctl *ctl, struct ctl_pend *p, int rc)
{
	struct ctl_obj *o = p->obj;
	struct ctl_table *t = &ctl->tab[o->kind];
	int status = rc ? EIO : 0;

	if (rc)
		ctl_quarantine(ctl, o); /* then released as usual: held memory stays */
	switch ((enum ctl_kind)o->kind) {
	case CTL_KIND_QP:
		ctl_qp_destroyed(ctl, (struct ctl_qp *)o);
		return status; /* frees its slot itself */
	case CTL_KIND_SRQ: {
		struct ctl_srq *srq = (struct ctl_srq *)o;

		ctl_shm_free(&srq->shm);
		ctl_srq_xrc_put(ctl, srq);
		srq->pd->o.refs--;
		break;
	}
	case CTL_KIND_XRCD:
		ctl_xrcd_freed(ctl, (struct ctl_xrcd *)o);
		break;
	case CTL_KIND_AH:
		((struct ctl_ah *)o)->pd->o.refs--;
		break;
	case CTL_KIND_MR: {
		struct ctl_mr *mr = (struct ctl_mr *)o;

		ctl_mr_unmap(mr);
		mr->pd->o.refs--;
		if (mr->dm != NULL)
			mr->dm->o.refs--;
		o->owner->mr_bytes -= ctl_mr_charged(mr);
		break;
	}
	case CTL_KIND_DM:
		ctl_dm_destroyed(ctl, (struct ctl_dm *)o);
		break;
	case CTL_KIND_CQ: {
		struct ctl_cq *cq = (struct ctl_cq *)o;

		ctl_shm_free(&cq->shm);
		if (cq->ch)
			cq->ch->o.refs--;
		break;
	}
	case CTL_KIND_CHANNEL:
		close(((struct ctl_channel *)o)->efd);
		break;
	case CTL_KIND_CM_ID:
		ctl_cm_id_freed(ctl, o);
		break;
	case CTL_KIND_CM_CHANNEL:
		ctl_cm_channel_freed(ctl, o);
		break;
	case CTL_KIND_MW:
		ctl_mw_destroyed(ctl, (struct ctl_mw *)o);
		break;
	case CTL_KIND_FLOW:
		ctl_flow_destroyed(ctl, (struct ctl_flow *)o);
		break;
	case CTL_KIND_PD:
	case CTL_KIND_COUNT:
		break;
	}
	ctl_table_free(t, o);
	return status;
}

int ctl_obj_destroy(struct ctl *ctl, struct ctl_obj *o)
{
	void *dp = ctl->cfg.dp;

	ctl->cur->dp_held = false;

	switch ((enum ctl_kind)o->kind) {
	case CTL_KIND_QP:
		ctl_mcast_qp_gone(ctl, (struct ctl_qp *)o); /* no frame for it from now on */
		if (((struct ctl_qp *)o)->rss == NULL && DP_HAS(ctl, qp_destroy))
			DP(ctl)->qp_destroy(dp, &((struct ctl_qp *)o)->info);
		break;
	case CTL_KIND_SRQ:
		if (DP_HAS(ctl, srq_destroy))
			DP(ctl)->srq_destroy(dp, &((struct ctl_srq *)o)->info);
		break;
	case CTL_KIND_AH:
		if (DP_HAS(ctl, ah_destroy))
			DP(ctl)->ah_destroy(dp, &((struct ctl_ah *)o)->info);
		break;
	case CTL_KIND_MR:
		/* an invalid MR is no longer the dataplane's (ctl_mr_invalidate()) */
		if (!((struct ctl_mr *)o)->invalid && DP_HAS(ctl, mr_destroy))
			DP(ctl)->mr_destroy(dp, &((struct ctl_mr *)o)->info);
		break;
	case CTL_KIND_CQ:
		if (DP_HAS(ctl, cq_destroy))
			DP(ctl)->cq_destroy(dp, &((struct ctl_cq *)o)->info);
		break;
	case CTL_KIND_CM_ID:
		ctl_cm_id_release(ctl, o);
		break;
	case CTL_KIND_FLOW: /* no frame for its QP from now on */
		if (DP_HAS(ctl, flow_destroy))
			DP(ctl)->flow_destroy(dp, &((struct ctl_flow *)o)->info);
		break;
	case CTL_KIND_CHANNEL:
	case CTL_KIND_CM_CHANNEL:
	case CTL_KIND_DM: /* no dataplane object: its MRs are gone (refs) */
	case CTL_KIND_XRCD: /* the dataplane knows domains by number only */
	case CTL_KIND_MW: /* the shared table is closed at the end (ctl_mw_destroyed()) */
	case CTL_KIND_PD:
	case CTL_KIND_COUNT:
		break;
	}
	return ctl_then(ctl, ctl->cur, ctl->cur->dp_held ? EIO : 0, ctl_obj_destroy_fin, o);
}
