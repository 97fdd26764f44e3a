/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ipc: framing over AF_UNIX SOCK_SEQPACKET, SCM_RIGHTS descriptor
 * passing and SO_PEERCRED. One datagram is one message; a datagram that does
 * not fit the receive buffer (MSG_TRUNC) or whose control data was cut
 * (MSG_CTRUNC) is rejected whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ipc.h"

const char *ipc_socket_path(void)
{
	const char *p = getenv(IPC_SOCKET_ENV);

	return (p != NULL && p[0] != '\0') ? p : IPC_DEFAULT_SOCKET;
}

static int ipc_sockaddr(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

int ipc_listen(const char *path, int backlog)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd, rc;

	rc = ipc_sockaddr(path, &sa);
	if (rc < 0)
		return rc;
	/* Remove a stale socket left by a crashed daemon, never another file type. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, backlog) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int ipc_connect(const char *path)
{
	struct sockaddr_un sa;
	int fd, rc;

	if (path == NULL)
		path = ipc_socket_path();
	rc = ipc_sockaddr(path, &sa);
	if (rc < 0)
		return rc;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int ipc_accept(int lfd, int flags)
{
	int fd = accept4(lfd, NULL, NULL, flags);

	return fd < 0 ? -errno : fd;
}

int ipc_peer_cred(int fd, pid_t *pid, uid_t *uid, gid_t *gid)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return -errno;
	if (pid)
		*pid = cr.pid;
	if (uid)
		*uid = cr.uid;
	if (gid)
		*gid = cr.gid;
	return 0;
}

int ipc_send(int fd, struct ipc_msg *msg, const int *fds, unsigned int nfds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * IPC_MAX_FDS)];
	} ctl;
	struct iovec iov = { .iov_base = msg, .iov_len = msg->hdr.len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds > IPC_MAX_FDS || msg->hdr.len < sizeof(msg->hdr) || msg->hdr.len > sizeof(*msg))
		return -EINVAL;
	msg->hdr.nfds = nfds;
	if (nfds > 0) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	do {
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == msg->hdr.len ? 0 : -EMSGSIZE;
}

static void ipc_close_fds(int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

ssize_t ipc_recv(int fd, struct ipc_msg *msg, int *fds, unsigned int *nfds, enum ipc_dir dir)
{
	union {
		struct cmsghdr align;
		/* Room for more fds than allowed, so an excess is seen (and closed), not cut. */
		char buf[CMSG_SPACE(sizeof(int) * (IPC_MAX_FDS + 8))];
	} ctl;
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(*msg) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	int got[IPC_MAX_FDS + 8];
	unsigned int ngot = 0;
	ssize_t n;
	int rc;

	*nfds = 0;
	for (unsigned int i = 0; i < IPC_MAX_FDS; i++)
		fds[i] = -1;
	do {
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		for (size_t i = 0; i < k && ngot < sizeof(got) / sizeof(got[0]); i++)
			memcpy(&got[ngot++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
	}
	if (n == 0 && ngot == 0)
		return 0;
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		ipc_close_fds(got, ngot);
		return -EMSGSIZE;
	}
	rc = ipc_msg_check(msg, (size_t)n, ngot, dir);
	if (rc < 0) {
		ipc_close_fds(got, ngot);
		return rc;
	}
	memcpy(fds, got, ngot * sizeof(int));
	*nfds = ngot;
	return n;
}

int ipc_call(int fd, struct ipc_msg *req, const int *fds, unsigned int nfds,
	     struct ipc_msg *rsp, int *rfds)
{
	uint32_t op = req->hdr.op, seq = req->hdr.seq;
	int rc = ipc_send(fd, req, fds, nfds);

	if (rc < 0)
		return rc;
	return ipc_await(fd, op, seq, rsp, rfds);
}

/* Milliseconds left until @p deadline_ns (CLOCK_MONOTONIC); -1 without a deadline. */
static int ms_left(uint64_t deadline_ns)
{
	struct timespec ts;
	uint64_t now;

	if (deadline_ns == UINT64_MAX)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return now >= deadline_ns ? 0 : (int)((deadline_ns - now + 999999u) / 1000000u);
}

int ipc_await_timeout(int fd, uint32_t op, uint32_t seq, struct ipc_msg *rsp, int *rfds,
		      int timeout_ms)
{
	unsigned int n;
	int tmp[IPC_MAX_FDS];
	int *out = rfds ? rfds : tmp;
	uint64_t deadline = UINT64_MAX;
	ssize_t len;

	if (timeout_ms >= 0) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		deadline = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec +
			   (uint64_t)timeout_ms * 1000000u;
	}
	for (;;) {
		if (deadline != UINT64_MAX) {
			/* the socket may be blocking: wait for it here, bounded */
			struct pollfd p = { .fd = fd, .events = POLLIN };
			int rc = poll(&p, 1, ms_left(deadline));

			if (rc < 0 && errno != EINTR)
				return -errno;
			if (rc == 0)
				return -ETIMEDOUT;
			if (rc < 0)
				continue;
		}
		len = ipc_recv(fd, rsp, out, &n, IPC_RESPONSE);
		if (len == -EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (poll(&p, 1, ms_left(deadline)) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		if (len < 0)
			return (int)len;
		if (len == 0)
			return -ECONNRESET;
		if (rsp->hdr.op == op && rsp->hdr.seq == seq)
			break;
		/* A stale answer (an earlier call was interrupted): drop it. */
		ipc_close_fds(out, n);
	}
	if (rfds == NULL)
		ipc_close_fds(out, n);
	if (rsp->hdr.status < 0)
		return -EPROTO;
	return rsp->hdr.status;
}

int ipc_await(int fd, uint32_t op, uint32_t seq, struct ipc_msg *rsp, int *rfds)
{
	return ipc_await_timeout(fd, op, seq, rsp, rfds, -1);
}
