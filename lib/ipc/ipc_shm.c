/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/ipc: memfd regions and ring headers shared with the daemon. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipc_shm.h"

int ipc_cq_signal(struct ipc_cq_ctrl *ctrl, int efd)
{
	struct pollfd p = { .fd = efd, .events = POLLOUT };
	uint64_t one = 1;

	__atomic_fetch_add(&ctrl->notify_count, 1, __ATOMIC_RELEASE);
	if (efd < 0)
		return 0;
	/*
	 * The eventfd is shared with the application, which could push its
	 * counter to the maximum so a blocking write would stall the caller (an
	 * lcore). Write only when it is writable now.
	 */
	if (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT))
		return -EAGAIN;
	if (write(efd, &one, sizeof(one)) != sizeof(one))
		return -errno;
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
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0)
		return errno == EINVAL ? -EPERM : -errno;
	if (!(seals & F_SEAL_SHRINK))
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
