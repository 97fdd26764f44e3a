/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/ipc: memfd regions and ring headers shared with the daemon. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "ipc_shm.h"

int ipc_cq_signal(struct ipc_cq_ctrl *ctrl, int wfd)
{
	const uint8_t one = 1;
	ssize_t n;

	__atomic_fetch_add(&ctrl->notify_count, 1, __ATOMIC_RELEASE);
	if (wfd < 0)
		return 0;
	/*
	 * wfd is the daemon's own socket (ipc_channel_pair()); the application
	 * holds the other end, shut for writing. MSG_DONTWAIT makes this call
	 * non-blocking whatever any file flag says; MSG_NOSIGNAL: a reader gone
	 * is -EPIPE, not a signal.
	 */
	do
		n = send(wfd, &one, sizeof(one), MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(one))
		return 0;
	return n < 0 && errno != EWOULDBLOCK && errno != EAGAIN ? -errno : -EAGAIN;
}

int ipc_channel_pair(int *app_fd, int *daemon_fd)
{
	int sv[2], rc;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	/* The application only reads, the daemon only writes (shutdown cannot be undone). */
	if (shutdown(sv[0], SHUT_WR) < 0 || shutdown(sv[1], SHUT_RD) < 0) {
		rc = -errno;
		close(sv[0]);
		close(sv[1]);
		return rc;
	}
	*app_fd = sv[0];
	*daemon_fd = sv[1];
	return 0;
}

int ipc_shm_create(const char *name, size_t size)
{
	int fd, rc;

	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int ipc_shm_check(int fd, uint64_t need)
{
	struct statfs sfs;
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0)
		return errno == EINVAL ? -EPERM : -errno;
	if (!(seals & F_SEAL_SHRINK))
		return -EPERM;
	/*
	 * hugetlbfs: a page punched out (fallocate PUNCH_HOLE) after we mapped
	 * it is refilled on our next touch only if the huge page pool has one,
	 * else that touch is a SIGBUS in the daemon. The seals that forbid
	 * punching (F_SEAL_WRITE, F_SEAL_FUTURE_WRITE) also forbid the writable
	 * mapping an MR needs, so such memory is refused here; the verbs shim
	 * never sends it (it registers hugetlb memory without a memfd, served
	 * by copies, where a missing page is an error, not a signal).
	 */
	if (fstatfs(fd, &sfs) < 0)
		return -errno;
	if (sfs.f_type == HUGETLBFS_MAGIC)
		return -EPERM;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size < 0 || (uint64_t)st.st_size < need)
		return -EINVAL;
	return 0;
}

void *ipc_shm_map(int fd, size_t len, uint64_t off)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);

	return p == MAP_FAILED ? NULL : p;
}

uint32_t ipc_pow2_roundup(uint32_t v)
{
	uint32_t p = 1;

	while (p < v && p < (UINT32_C(1) << 31))
		p <<= 1;
	return p;
}
