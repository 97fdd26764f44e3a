/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: memory regions.
 *
 * Direct access for the daemon (no system call per packet): at registration
 * the page-aligned range is copied into a sealed memfd, the memfd is mapped
 * MAP_SHARED|MAP_FIXED over the same virtual addresses, and the memfd is
 * passed to the daemon, which maps it too. Both processes then share the
 * pages. A range already inside a shared backing reuses it (overlapping and
 * neighbouring registrations). When the last registration of a backing goes,
 * the range is turned back into private anonymous memory with its contents.
 *
 * Limits (documented in doc/verbs-shim.md):
 *  - only private, writable, anonymous memory (heap, malloc/memalign/mmap
 *    anonymous) is remapped; file-backed, hugetlb, read-only memory, the
 *    stack and ranges partly overlapping an existing backing are registered
 *    without a memfd: the daemon then copies from/to this process through
 *    our /proc/PID/mem (a system call per packet: slower; ATOMICs on such
 *    memory are not atomic against this process's own CPU accesses),
 *    and refuses the registration if it may not (no CAP_SYS_PTRACE over us,
 *    or the address is not mapped);
 *  - a thread writing the range during the copy-and-remap can lose data;
 *  - other data on the same pages becomes shared too, and a fork child
 *    shares the pages instead of copying them on write.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

struct shim_backing {
	uintptr_t start;
	uintptr_t end;
	int fd;
	unsigned int refs;
	dev_t dev;
	ino_t ino;
	struct shim_backing *next;
};

static pthread_mutex_t shim_backing_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_backing *shim_backings;
static bool shim_fork_init_called;

static uintptr_t shim_page(void)
{
	static uintptr_t pg;

	if (pg == 0)
		pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	return pg;
}

/*
 * Walk /proc/self/maps over [start, end): calls @p fn for each mapping that
 * intersects. Returns false as soon as @p fn does, or when there is a gap.
 */
struct shim_vma {
	uintptr_t lo, hi;
	char perms[5];
	unsigned long inode;
	unsigned int dev_major, dev_minor;
	char path[256];
};

static bool shim_vmas_all(uintptr_t start, uintptr_t end, bool (*fn)(const struct shim_vma *, void *),
			  void *arg)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	uintptr_t covered = start;
	bool ok = true;

	if (f == NULL)
		return false;
	while (ok && covered < end && fgets(line, sizeof(line), f)) {
		struct shim_vma v = { 0 };
		unsigned long long off;
		int n = 0;

		if (sscanf(line, "%lx-%lx %4s %llx %x:%x %lu %n", &v.lo, &v.hi, v.perms, &off,
			   &v.dev_major, &v.dev_minor, &v.inode, &n) < 7)
			continue;
		if (v.hi <= covered || v.lo >= end)
			continue;
		if (v.lo > covered) {
			ok = false; /* hole */
			break;
		}
		snprintf(v.path, sizeof(v.path), "%s", line + n);
		v.path[strcspn(v.path, "\n")] = '\0';
		ok = fn(&v, arg);
		covered = v.hi;
	}
	fclose(f);
	return ok && covered >= end;
}

/* Private, writable, anonymous: the brk heap or anonymous mmap (not stack, not hugetlb). */
static bool shim_vma_private_anon(const struct shim_vma *v, void *arg)
{
	(void)arg;
	return strcmp(v->perms, "rw-p") == 0 && v->inode == 0 &&
	       (v->path[0] == '\0' || strcmp(v->path, "[heap]") == 0);
}

static bool shim_vma_is_backing(const struct shim_vma *v, void *arg)
{
	const struct shim_backing *b = arg;

	return v->inode == b->ino && v->perms[3] == 's';
}

/* Copy between memory and a file without ASan's interceptors looking at the heap's redzones. */
static bool shim_file_write(int fd, uintptr_t addr, size_t len)
{
	size_t done = 0;

	while (done < len) {
		long n = syscall(SYS_pwrite64, fd, (void *)(addr + done), len - done, (off_t)done);

		if (n <= 0)
			return false;
		done += (size_t)n;
	}
	return true;
}

static bool shim_file_read(int fd, uintptr_t addr, size_t len)
{
	size_t done = 0;

	while (done < len) {
		long n = syscall(SYS_pread64, fd, (void *)(addr + done), len - done, (off_t)done);

		if (n <= 0)
			return false;
		done += (size_t)n;
	}
	return true;
}

/* Create a backing for [start, end): copy, then map the memfd over it. NULL: not possible. */
static struct shim_backing *shim_backing_create(uintptr_t start, uintptr_t end)
{
	struct shim_backing *b;
	struct stat st;
	int fd;

	if (!shim_vmas_all(start, end, shim_vma_private_anon, NULL))
		return NULL;
	b = calloc(1, sizeof(*b));
	if (b == NULL)
		return NULL;
	fd = ipc_shm_create("roce-mr", end - start);
	if (fd < 0) {
		free(b);
		return NULL;
	}
	if (!shim_file_write(fd, start, end - start) || fstat(fd, &st) < 0 ||
	    mmap((void *)start, end - start, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
		    MAP_FAILED) {
		close(fd);
		free(b);
		return NULL;
	}
	if (shim_fork_init_called)
		madvise((void *)start, end - start, MADV_DONTFORK);
	b->start = start;
	b->end = end;
	b->fd = fd;
	b->refs = 1;
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	b->next = shim_backings;
	shim_backings = b;
	return b;
}

/* Find the backing for [start, end), or make one. *fallback: registration without memfd. */
static struct shim_backing *shim_backing_get(uintptr_t start, uintptr_t end)
{
	struct shim_backing *b;

	for (b = shim_backings; b != NULL; b = b->next) {
		if (b->start <= start && end <= b->end) {
			b->refs++;
			return b;
		}
		if (b->start < end && start < b->end)
			return NULL; /* partial overlap: fallback */
	}
	return shim_backing_create(start, end);
}

static void shim_backing_put(struct shim_backing *b)
{
	struct shim_backing **pp;
	uintptr_t start = b->start;
	size_t len = b->end - b->start;
	int fd = b->fd;
	bool ours;
	void *tmp;

	if (--b->refs > 0)
		return;
	for (pp = &shim_backings; *pp != b; pp = &(*pp)->next)
		;
	*pp = b->next;
	ours = shim_vmas_all(b->start, b->end, shim_vma_is_backing, b);
	free(b); /* b may live on the pages below: nothing reads it from here on */
	/*
	 * Give the application private memory back, contents included: fill a
	 * fresh anonymous mapping from the memfd, then move it over the range
	 * in one mremap, so the range is never seen empty.
	 */
	if (ours) {
		tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (tmp != MAP_FAILED) {
			if (!shim_file_read(fd, (uintptr_t)tmp, len) ||
			    mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)start) ==
				    MAP_FAILED)
				munmap(tmp, len);
		}
	}
	close(fd);
}

/* ---- on-demand paging ---- */

/*
 * An ODP MR (IBV_ACCESS_ON_DEMAND) never gets a shared backing: the daemon
 * reaches its pages through our /proc/PID/mem at each access (lib/ctl
 * ctl_objs.c), so it follows whatever is mapped there at that moment, as a
 * NIC's ODP MR does. The implicit one, ibv_reg_mr(pd, NULL, SIZE_MAX,
 * IBV_ACCESS_ON_DEMAND | ...), covers the whole address space.
 */
static bool shim_mr_implicit(const void *addr, size_t length, unsigned int access)
{
	return addr == NULL && length == SIZE_MAX && (access & IBV_ACCESS_ON_DEMAND);
}

/* ODP MRs of this process, for ibv_advise_mr's key checks. */
static pthread_mutex_t shim_odp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_mr *shim_odp_mrs;

static void shim_odp_add(struct shim_mr *mr)
{
	pthread_mutex_lock(&shim_odp_lock);
	mr->odp_next = shim_odp_mrs;
	shim_odp_mrs = mr;
	pthread_mutex_unlock(&shim_odp_lock);
}

static void shim_odp_remove(struct shim_mr *mr)
{
	pthread_mutex_lock(&shim_odp_lock);
	for (struct shim_mr **pp = &shim_odp_mrs; *pp != NULL; pp = &(*pp)->odp_next)
		if (*pp == mr) {
			*pp = mr->odp_next;
			break;
		}
	pthread_mutex_unlock(&shim_odp_lock);
}

/*
 * The ODP MR of @p sge->lkey that may take @p advice for the SGE's range,
 * as mlx5's get_prefetchable_mr() and pagefault_mr() judge it: 0, ENOENT
 * (no ODP MR has that key), EPERM (another PD, or PREFETCH_WRITE on an MR
 * without local write), EFAULT (the range leaves the MR).
 */
static int shim_odp_check(const struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			  const struct ibv_sge *sge)
{
	const struct shim_mr *mr;
	int rc = ENOENT;

	pthread_mutex_lock(&shim_odp_lock);
	for (mr = shim_odp_mrs; mr != NULL && mr->mr.lkey != sge->lkey; mr = mr->odp_next)
		;
	if (mr != NULL) {
		uintptr_t lo = (uintptr_t)mr->mr.addr, a = (uintptr_t)sge->addr;

		if (mr->mr.pd != pd || mr->mr.context != pd->context)
			rc = EPERM;
		else if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
			 !(mr->access & IBV_ACCESS_LOCAL_WRITE))
			rc = EPERM;
		else if (a < lo || sge->length > mr->mr.length ||
			 a - lo > mr->mr.length - sge->length)
			rc = EFAULT;
		else
			rc = 0;
	}
	pthread_mutex_unlock(&shim_odp_lock);
	return rc;
}

/* Fault the SGE's pages in now, for reading or writing (MADV_POPULATE_*, Linux 5.14). */
static int shim_odp_prefetch(enum ibv_advise_mr_advice advice, const struct ibv_sge *sge)
{
	uintptr_t pg = shim_page();
	uintptr_t start = sge->addr & ~(pg - 1);
	uintptr_t end = (sge->addr + sge->length + pg - 1) & ~(pg - 1);
	int how = advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE ? MADV_POPULATE_WRITE
								 : MADV_POPULATE_READ;

	if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT || sge->length == 0)
		return 0; /* only pages already present would be mapped: nothing to do for us */
	return madvise((void *)start, end - start, how) == 0 ? 0 : EFAULT;
}

/*
 * verbs_context.advise_mr. With IBV_ADVISE_MR_FLAG_FLUSH the pages are in
 * when it returns and a range that is not mapped fails with EFAULT;
 * without it the prefetch is best effort (errors of the faults are not
 * reported, those of the keys are), as on mlx5.
 */
int shim_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		   struct ibv_sge *sg_list, uint32_t num_sge)
{
	int rc = 0;

	if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return shim_ret(EOPNOTSUPP);
	if (flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH)
		return shim_ret(EOPNOTSUPP);
	if (num_sge == 0 || sg_list == NULL)
		return shim_ret(EINVAL);
	for (uint32_t i = 0; i < num_sge && rc == 0; i++)
		rc = shim_odp_check(pd, advice, &sg_list[i]);
	for (uint32_t i = 0; i < num_sge && rc == 0; i++) {
		int f = shim_odp_prefetch(advice, &sg_list[i]);

		if (flags & IBV_ADVISE_MR_FLAG_FLUSH)
			rc = f;
	}
	return shim_ret(rc);
}

/* Register [addr, addr+length) with the daemon, with or without a shared backing. */
static int shim_mr_register(struct shim_mr *mr, struct ibv_pd *ibpd, void *addr, size_t length,
			    uint64_t iova, unsigned int access)
{
	struct ipc_msg req, rsp;
	uintptr_t pg = shim_page();
	bool odp = (access & IBV_ACCESS_ON_DEMAND) != 0;
	uintptr_t start = (uintptr_t)addr & ~(pg - 1);
	uintptr_t end = odp ? start : ((uintptr_t)addr + length + pg - 1) & ~(pg - 1);
	struct shim_backing *b = NULL;
	int fd = -1, rc;

	shim_req(&req, IPC_OP_REG_MR);
	req.u.req_REG_MR.user_handle = (uintptr_t)mr;
	req.u.req_REG_MR.addr = (uintptr_t)addr;
	req.u.req_REG_MR.length = length;
	req.u.req_REG_MR.iova = iova;
	req.u.req_REG_MR.pd = shim_pd(ibpd)->handle;
	req.u.req_REG_MR.access = access;
	pthread_mutex_lock(&shim_backing_lock);
	if (length > 0 && end > start)
		b = shim_backing_get(start, end);
	if (b != NULL) {
		fd = b->fd;
		req.u.req_REG_MR.fd_offset = start - b->start;
	}
	rc = shim_rpc(shim_ctx(ibpd->context), &req, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, &rsp,
		      NULL);
	if (rc) {
		if (b)
			shim_backing_put(b);
		pthread_mutex_unlock(&shim_backing_lock);
		return rc;
	}
	pthread_mutex_unlock(&shim_backing_lock);
	mr->backing = b;
	mr->odp = odp;
	mr->access = access;
	mr->handle = rsp.u.rsp_REG_MR.handle;
	mr->mr.context = ibpd->context;
	mr->mr.pd = ibpd;
	mr->mr.addr = addr;
	mr->mr.length = length;
	mr->mr.handle = mr->handle;
	mr->mr.lkey = rsp.u.rsp_REG_MR.lkey;
	mr->mr.rkey = rsp.u.rsp_REG_MR.rkey;
	return 0;
}

SHIM_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
					    uint64_t iova, unsigned int access)
{
	struct shim_mr *mr;
	int rc;

	if ((length == 0 || addr == NULL) && !shim_mr_implicit(addr, length, access))
		return shim_null(EINVAL);
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL)
		return shim_null(ENOMEM);
	rc = shim_mr_register(mr, pd, addr, length, iova, access);
	if (rc) {
		free(mr);
		return shim_null(rc);
	}
	if (mr->odp)
		shim_odp_add(mr);
	return &mr->mr;
}

SHIM_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

SHIM_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
					   uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

SHIM_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct shim_mr *mr = (struct shim_mr *)ibmr;
	struct ipc_msg req, rsp;
	int rc;

	shim_req(&req, IPC_OP_DEREG_MR);
	req.u.req_DEREG_MR.handle = mr->handle;
	rc = shim_destroy_rc(ibmr->context, shim_rpc(shim_ctx(ibmr->context), &req, NULL, 0, &rsp, NULL));
	if (rc)
		return shim_ret(rc);
	if (mr->odp)
		shim_odp_remove(mr);
	if (mr->backing) {
		pthread_mutex_lock(&shim_backing_lock);
		shim_backing_put(mr->backing);
		pthread_mutex_unlock(&shim_backing_lock);
	}
	free(mr);
	return 0;
}

/*
 * Returns 0 or an enum ibv_rereg_mr_err_code (negative), as rdma-core does:
 * IBV_REREG_MR_ERR_INPUT for bad arguments (the MR stays valid),
 * IBV_REREG_MR_ERR_CMD when the daemon refuses (the MR stays valid, unless
 * the daemon could not restore it either: then only ibv_dereg_mr works on
 * it, lib/ctl ctl.h mr_create).
 */
SHIM_EXPORT int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *pd, void *addr,
			     size_t length, int access)
{
	struct shim_mr *mr = (struct shim_mr *)ibmr;
	struct ipc_msg req, rsp;
	struct shim_backing *b = mr->backing;
	uintptr_t pg = shim_page();
	int fd = -1, rc;

	if (flags <= 0 || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) && pd == NULL) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (addr == NULL || length == 0)) ||
	    ((flags & IBV_REREG_MR_CHANGE_ACCESS) && (access & IBV_ACCESS_ON_DEMAND))) {
		(void)shim_ret(EINVAL);
		return IBV_REREG_MR_ERR_INPUT;
	}
	shim_req(&req, IPC_OP_REREG_MR);
	req.u.req_REREG_MR.handle = mr->handle;
	req.u.req_REREG_MR.flags = (uint32_t)flags;
	req.u.req_REREG_MR.pd = (flags & IBV_REREG_MR_CHANGE_PD) ? shim_pd(pd)->handle : 0;
	req.u.req_REREG_MR.access = (uint32_t)access;
	pthread_mutex_lock(&shim_backing_lock);
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		uintptr_t start = (uintptr_t)addr & ~(pg - 1);
		uintptr_t end = ((uintptr_t)addr + length + pg - 1) & ~(pg - 1);

		b = mr->odp ? NULL : shim_backing_get(start, end);
		if (b) {
			fd = b->fd;
			req.u.req_REREG_MR.fd_offset = start - b->start;
		}
		req.u.req_REREG_MR.addr = (uintptr_t)addr;
		req.u.req_REREG_MR.length = length;
		req.u.req_REREG_MR.iova = (uintptr_t)addr;
	}
	rc = shim_rpc(shim_ctx(ibmr->context), &req, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, &rsp,
		      NULL);
	if (rc) {
		if (b && b != mr->backing)
			shim_backing_put(b);
		pthread_mutex_unlock(&shim_backing_lock);
		(void)shim_ret(rc);
		return IBV_REREG_MR_ERR_CMD;
	}
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		if (mr->backing)
			shim_backing_put(mr->backing);
		mr->backing = b;
		ibmr->addr = addr;
		ibmr->length = length;
	}
	pthread_mutex_unlock(&shim_backing_lock);
	if (flags & IBV_REREG_MR_CHANGE_PD)
		ibmr->pd = pd;
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		mr->access = (unsigned int)access;
	ibmr->lkey = rsp.u.rsp_REREG_MR.lkey;
	ibmr->rkey = rsp.u.rsp_REREG_MR.rkey;
	return 0;
}

SHIM_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					     uint64_t iova, int fd, int access)
{
	(void)pd; (void)offset; (void)length; (void)iova; (void)fd; (void)access;
	return shim_null(EOPNOTSUPP);
}

/*
 * An MR object for @p mr_handle, an MR of @p pd's connection group
 * registered in @p pd. As rdma-core's, its addr is NULL (the pages are the
 * registering process's; the keys reach them through the daemon's mapping).
 * ibv_dereg_mr on it destroys the MR for every context; ibv_unimport_mr
 * frees only ours.
 */
SHIM_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct shim_mr *mr = calloc(1, sizeof(*mr));
	struct ipc_msg req, rsp;
	int rc;

	if (mr == NULL)
		return shim_null(ENOMEM);
	shim_req(&req, IPC_OP_IMPORT_MR);
	req.u.req_IMPORT_MR.handle = mr_handle;
	req.u.req_IMPORT_MR.pd = shim_pd(pd)->handle;
	rc = shim_rpc(shim_ctx(pd->context), &req, NULL, 0, &rsp, NULL);
	if (rc) {
		free(mr);
		return shim_null(rc);
	}
	mr->handle = mr_handle;
	mr->mr.context = pd->context;
	mr->mr.pd = pd;
	mr->mr.addr = NULL;
	mr->mr.length = rsp.u.rsp_IMPORT_MR.length;
	mr->mr.handle = mr_handle;
	mr->mr.lkey = rsp.u.rsp_IMPORT_MR.lkey;
	mr->mr.rkey = rsp.u.rsp_IMPORT_MR.rkey;
	return &mr->mr;
}

/* Frees our object only; a backing of ours (rereg of an imported MR) stays with the daemon's MR. */
SHIM_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	free(mr);
}

/* ---- fork support: shared backings need no copy-on-write protection ---- */

SHIM_EXPORT int ibv_fork_init(void)
{
	shim_fork_init_called = true;
	return 0;
}

SHIM_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return shim_fork_init_called ? IBV_FORK_ENABLED : IBV_FORK_UNNEEDED;
}

SHIM_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	return madvise(base, size, MADV_DONTFORK) == 0 ? 0 : errno;
}

SHIM_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	return madvise(base, size, MADV_DOFORK) == 0 ? 0 : errno;
}
