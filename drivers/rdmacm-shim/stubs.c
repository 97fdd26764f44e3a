/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdmacm shim: rsockets, exported so that every program
 * linked against librdmacm loads (rping, ucmatose, udaddy and cmtime link
 * rpoll through the examples' common.h even when they never use rsockets).
 *
 * Until the rsockets/multicast issue (issue 21) lands:
 *  - rsocket() and every call on an rsocket fail with ENOSYS;
 *  - rpoll() and rselect() on ordinary descriptors behave as poll(2) and
 *    select(2), as librdmacm's do for a descriptor that is not an rsocket
 *    (no rsocket can exist here, so every descriptor is an ordinary one);
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/select.h>

#include <rdma/rsocket.h>

#include "rcm.h"

static int rcm_enosys(void)
{
	errno = ENOSYS;
	return -1;
}

RCM_EXPORT int rsocket(int domain, int type, int protocol)
{
	(void)domain;
	(void)type;
	(void)protocol;
	return rcm_enosys();
}

RCM_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return rcm_enosys();
}

RCM_EXPORT int rlisten(int socket, int backlog)
{
	(void)socket;
	(void)backlog;
	return rcm_enosys();
}

RCM_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return rcm_enosys();
}

RCM_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return rcm_enosys();
}

RCM_EXPORT int rshutdown(int socket, int how)
{
	(void)socket;
	(void)how;
	return rcm_enosys();
}

RCM_EXPORT int rclose(int socket)
{
	(void)socket;
	return rcm_enosys();
}

RCM_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	return rcm_enosys();
}

RCM_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			     struct sockaddr *src_addr, socklen_t *addrlen)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	(void)src_addr;
	(void)addrlen;
	return rcm_enosys();
}

RCM_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	(void)socket;
	(void)msg;
	(void)flags;
	return rcm_enosys();
}

RCM_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	return rcm_enosys();
}

RCM_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			   const struct sockaddr *dest_addr, socklen_t addrlen)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	(void)dest_addr;
	(void)addrlen;
	return rcm_enosys();
}

RCM_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	(void)socket;
	(void)msg;
	(void)flags;
	return rcm_enosys();
}

RCM_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	(void)socket;
	(void)buf;
	(void)count;
	return rcm_enosys();
}

RCM_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket;
	(void)iov;
	(void)iovcnt;
	return rcm_enosys();
}

RCM_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	(void)socket;
	(void)buf;
	(void)count;
	return rcm_enosys();
}

RCM_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket;
	(void)iov;
	(void)iovcnt;
	return rcm_enosys();
}

/* No descriptor is an rsocket: librdmacm polls such descriptors with poll(2). */
RCM_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

RCM_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		       struct timeval *timeout)
{
	return select(nfds, readfds, writefds, exceptfds, timeout);
}

RCM_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return rcm_enosys();
}

RCM_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return rcm_enosys();
}

RCM_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval,
			   socklen_t optlen)
{
	(void)socket;
	(void)level;
	(void)optname;
	(void)optval;
	(void)optlen;
	return rcm_enosys();
}

RCM_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	(void)socket;
	(void)level;
	(void)optname;
	(void)optval;
	(void)optlen;
	return rcm_enosys();
}

RCM_EXPORT int rfcntl(int socket, int cmd, ...)
{
	(void)socket;
	(void)cmd;
	return rcm_enosys();
}

RCM_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)prot;
	(void)flags;
	(void)offset;
	return rcm_enosys();
}

RCM_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	(void)socket;
	(void)buf;
	(void)len;
	return rcm_enosys();
}

RCM_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	(void)socket;
	(void)buf;
	(void)count;
	(void)offset;
	(void)flags;
	rcm_enosys();
	return (size_t)-1; /* librdmacm's riowrite returns -1 as size_t on error */
}

