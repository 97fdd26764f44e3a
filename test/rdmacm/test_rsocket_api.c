/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsockets against shim-server's CM (lib/ctl + lib/cm, no dataplane: the
 * connection is set up, no byte moves), in one process with non-blocking
 * sockets:
 *  - a listener: raccept EAGAIN, rpoll not readable, then readable when a
 *    request waits; rconnect EINPROGRESS, completed through rpoll; SO_ERROR;
 *  - the conn data exchanged both ways: a connected socket is writable at
 *    once (the peer's first buffer and credits came with the REP/REQ);
 *  - names, options (buffer sizes doubled, SOL_RDMA only before
 *    connecting, SO_LINGER), rfcntl, rpoll mixing a pipe and rsockets,
 *    rselect;
 *  - a request whose private data is not rsockets' conn data is rejected;
 *  - a connection nobody takes: ECONNREFUSED, blocking or through SO_ERROR.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include "rdmacm_test.h"

TestSuite(rsocket, .init = rt_setup_server, .fini = rt_teardown, .timeout = 60);

static struct sockaddr_in addr_of(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, "198.18.0.1", &sin.sin_addr);
	return sin;
}

static int listener(uint16_t port)
{
	struct sockaddr_in sin = addr_of(port);
	int one = 1, fd = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	cr_assert_geq(fd, 0, "rsocket: errno %d", errno);
	cr_assert_eq(rsetsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	cr_assert_eq(rbind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0, "errno %d", errno);
	cr_assert_eq(rlisten(fd, 4), 0, "errno %d", errno);
	return fd;
}

/* rpoll one descriptor until @p ev (2 s at most). */
static short wait_for(int fd, short ev)
{
	struct pollfd p = { .fd = fd, .events = ev };

	for (int i = 0; i < 200; i++) {
		if (rpoll(&p, 1, 10) == 1 && (p.revents & ev))
			return p.revents;
	}
	return 0;
}

static void no_linger(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	cr_assert_eq(rsetsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)), 0);
}

Test(rsocket, nonblocking_listen_connect_accept)
{
	struct sockaddr_in sin = addr_of(7471), got;
	struct pollfd p;
	socklen_t len;
	int ls, c, a = -1, err = -1;
	char buf[8];

	ls = listener(7471);
	errno = 0;
	cr_assert_eq(raccept(ls, NULL, NULL), -1);
	cr_assert(errno == EAGAIN || errno == EWOULDBLOCK, "errno %d", errno);
	p = (struct pollfd){ .fd = ls, .events = POLLIN };
	cr_assert_eq(rpoll(&p, 1, 0), 0);

	c = rsocket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(c, 0);
	cr_assert_eq(rfcntl(c, F_SETFL, O_NONBLOCK), 0);
	cr_assert_eq(rfcntl(c, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	errno = 0;
	cr_assert_eq(rconnect(c, (struct sockaddr *)&sin, sizeof(sin)), -1);
	cr_assert_eq(errno, EINPROGRESS);
	/* not connected yet: no data, EAGAIN */
	errno = 0;
	cr_assert_eq(rrecv(c, buf, sizeof(buf), 0), -1);
	cr_assert(errno == EAGAIN || errno == ENOTCONN, "errno %d", errno);

	/* drive both ends: the client's steps in rpoll, the listener's request */
	for (int i = 0; i < 200 && a < 0; i++) {
		struct pollfd two[2] = { { .fd = ls, .events = POLLIN },
					 { .fd = c, .events = POLLOUT } };

		rpoll(two, 2, 10);
		if (two[0].revents & POLLIN)
			a = raccept(ls, (struct sockaddr *)&got, &(socklen_t){ sizeof(got) });
	}
	cr_assert_geq(a, 0, "no connection accepted: errno %d", errno);
	cr_assert(wait_for(c, POLLOUT) & POLLOUT, "the client never became writable");
	len = sizeof(err);
	cr_assert_eq(rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	cr_assert_eq(err, 0);
	cr_assert(wait_for(a, POLLOUT) & POLLOUT, "the accepted socket never became writable");

	len = sizeof(got);
	cr_assert_eq(rgetpeername(c, (struct sockaddr *)&got, &len), 0);
	cr_assert_eq(len, sizeof(got));
	cr_assert_eq(got.sin_port, htons(7471));
	cr_assert_eq(got.sin_addr.s_addr, sin.sin_addr.s_addr);
	len = sizeof(got);
	cr_assert_eq(rgetsockname(a, (struct sockaddr *)&got, &len), 0);
	cr_assert_eq(got.sin_port, htons(7471));
	/* nothing sent: not readable, EAGAIN */
	errno = 0;
	cr_assert_eq(rrecv(a, buf, sizeof(buf), 0), -1);
	cr_assert(errno == EAGAIN || errno == EWOULDBLOCK, "errno %d", errno);
	/* SOL_RDMA options only before connecting */
	cr_assert_eq(rsetsockopt(c, SOL_RDMA, RDMA_SQSIZE, &(int){ 64 }, sizeof(int)), -1);
	cr_assert_eq(errno, EINVAL);

	no_linger(c);
	no_linger(a);
	cr_assert_eq(rclose(c), 0);
	cr_assert_eq(rclose(a), 0);
	cr_assert_eq(rclose(ls), 0);
	errno = 0;
	cr_assert_eq(rclose(ls), -1);
	cr_assert_eq(errno, EBADF);
}

/* Nobody listens: a blocking rconnect fails ECONNREFUSED; a non-blocking one
 * reports POLLOUT|POLLERR through rpoll and the reason in SO_ERROR, once. */
Test(rsocket, connect_refused)
{
	struct sockaddr_in sin = addr_of(7479);
	int fd = rsocket(AF_INET, SOCK_STREAM, 0), err = 0;
	socklen_t len = sizeof(err);
	short rev;

	cr_assert_geq(fd, 0);
	errno = 0;
	cr_assert_eq(rconnect(fd, (struct sockaddr *)&sin, sizeof(sin)), -1);
	cr_assert_eq(errno, ECONNREFUSED, "errno %d", errno);
	/*
	 * librspreload then falls back to a kernel socket (transpose_socket):
	 * it asks the family with rgetsockname(fd, NULL, &zero), which must
	 * tell the size and copy nothing, as getsockname(2) and librdmacm do
	 * (an EFAULT here was every forked TCP client's connect() error).
	 */
	len = 0;
	cr_assert_eq(rgetsockname(fd, NULL, &len), 0, "errno %d", errno);
	cr_assert_eq(len, sizeof(struct sockaddr_in));
	len = sizeof(sin);
	cr_assert_eq(rgetsockname(fd, NULL, &len), -1, "room asked for at NULL");
	cr_assert_eq(errno, EFAULT);
	cr_assert_eq(rgetsockname(fd, (struct sockaddr *)&sin, NULL), -1);
	cr_assert_eq(errno, EFAULT);
	len = sizeof(err);
	cr_assert_eq(rclose(fd), 0);

	fd = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	cr_assert_geq(fd, 0);
	errno = 0;
	cr_assert_eq(rconnect(fd, (struct sockaddr *)&sin, sizeof(sin)), -1);
	cr_assert_eq(errno, EINPROGRESS);
	rev = wait_for(fd, POLLOUT);
	cr_assert_eq(rev, POLLOUT | POLLERR, "revents %#x", rev);
	cr_assert_eq(rgetsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	cr_assert_eq(err, ECONNREFUSED);
	cr_assert_eq(rgetsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	cr_assert_eq(err, 0);
	cr_assert_eq(rclose(fd), 0);
}

Test(rsocket, options_and_names)
{
	int fd = rsocket(AF_INET6, SOCK_STREAM, 0), v;
	struct sockaddr_in6 s6;
	socklen_t len = sizeof(v);

	cr_assert_geq(fd, 0);
	/* socket buffers keep twice the value, as Linux reports it */
	cr_assert_eq(rsetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &(int){ 65536 }, sizeof(int)), 0);
	cr_assert_eq(rgetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &len), 0);
	cr_assert_eq(v, 131072);
	cr_assert_eq(rsetsockopt(fd, SOL_RDMA, RDMA_INLINE, &(int){ 0 }, sizeof(int)), 0);
	cr_assert_eq(rgetsockopt(fd, SOL_RDMA, RDMA_INLINE, &v, &len), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(rsetsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int)), 0);
	cr_assert_eq(rgetsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len), 0);
	cr_assert_eq(v, 1);
	cr_assert_eq(rsetsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &(int){ 0 }, sizeof(int)), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rsetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, 1), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rsetsockopt(fd, 12345, 1, &v, sizeof(v)), -1);
	cr_assert_eq(errno, ENOTSUP);
	/* unbound: the wildcard of its family; not connected: ENOTCONN */
	len = sizeof(s6);
	cr_assert_eq(rgetsockname(fd, (struct sockaddr *)&s6, &len), 0);
	cr_assert_eq(s6.sin6_family, AF_INET6);
	cr_assert_eq(rgetpeername(fd, (struct sockaddr *)&s6, &len), -1);
	cr_assert_eq(errno, ENOTCONN);
	cr_assert_eq(rshutdown(fd, SHUT_RDWR), -1);
	cr_assert_eq(errno, ENOTCONN);
	cr_assert_eq(rclose(fd), 0);
}

Test(rsocket, rpoll_and_rselect_mix_fds)
{
	int ls = listener(7472), pfd[2];
	struct pollfd p[2];
	fd_set rd;
	struct timeval tv = { 0, 20000 };

	cr_assert_eq(pipe(pfd), 0);
	p[0] = (struct pollfd){ .fd = ls, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = pfd[0], .events = POLLIN };
	cr_assert_eq(rpoll(p, 2, 20), 0);
	cr_assert_eq(write(pfd[1], "x", 1), 1);
	cr_assert_eq(rpoll(p, 2, 1000), 1);
	cr_assert_eq(p[0].revents, 0);
	cr_assert_eq(p[1].revents, POLLIN);
	FD_ZERO(&rd);
	FD_SET(ls, &rd);
	FD_SET(pfd[0], &rd);
	cr_assert_eq(rselect((ls > pfd[0] ? ls : pfd[0]) + 1, &rd, NULL, NULL, &tv), 1);
	cr_assert(FD_ISSET(pfd[0], &rd));
	cr_assert_not(FD_ISSET(ls, &rd));
	close(pfd[0]);
	close(pfd[1]);
	cr_assert_eq(rclose(ls), 0);
}

static atomic_int accept_stop;
static atomic_int accepted;

/* raccept on a non-blocking listener until told to stop. */
static void *accept_loop(void *arg)
{
	int ls = *(int *)arg;

	while (!atomic_load(&accept_stop)) {
		int a = raccept(ls, NULL, NULL);

		if (a >= 0) {
			atomic_fetch_add(&accepted, 1);
			rclose(a);
		}
		usleep(5000);
	}
	return NULL;
}

/* An rdma_cm client whose REQ carries something else than rsockets' conn data. */
Test(rsocket, foreign_private_data_rejected)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 },
				       .qp_type = IBV_QPT_RC, .sq_sig_all = 1 };
	struct rdma_conn_param param = { .private_data = "not rsockets", .private_data_len = 12 };
	struct rdma_cm_id *id;
	pthread_t t;
	int ls = listener(7473);

	cr_assert_eq(rdma_getaddrinfo("198.18.0.1", "7473", &hints, &res), 0);
	cr_assert_eq(rdma_create_ep(&id, res, NULL, &qa), 0, "errno %d", errno);
	rdma_freeaddrinfo(res);
	cr_assert_eq(pthread_create(&t, NULL, accept_loop, &ls), 0);
	errno = 0;
	cr_assert_eq(rdma_connect(id, &param), -1);
	cr_assert_eq(errno, ECONNREFUSED, "errno %d", errno);
	atomic_store(&accept_stop, 1);
	pthread_join(t, NULL);
	cr_assert_eq(atomic_load(&accepted), 0);
	rdma_destroy_ep(id);
	cr_assert_eq(rclose(ls), 0);
}
