/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsockets: rpoll and rselect over any mix of rsockets and ordinary
 * descriptors. An rsocket's readiness is its protocol state (data queued,
 * credits and send space, a listener's pending request, a connect that
 * finished), not its fd's: rpoll checks every rsocket without blocking,
 * and only when nothing is ready arms the CQs and sleeps in poll(2) on
 * what can change that state (the CQ channel and the cm channel of each
 * rsocket, the ordinary fds as given), then checks again.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include <rdma/rsocket.h>

#include "rcm.h"
#include "rsocket.h"

/* A listener is readable while a connection request waits on its channel. */
static short rsk_listen_revents(struct rsk *rs, short events)
{
	struct pollfd p = { .fd = rs->fd, .events = events };

	return poll(&p, 1, 0) > 0 ? p.revents : 0;
}

static short rsk_data_revents(struct rsk *rs, short events)
{
	short rev = 0;

	if (rs->state & RSK_CONNECTED)
		rsk_cm_events(rs);
	rsk_process(rs, true, rsk_test_any);
	if ((events & POLLIN) && rsk_test_have_data(rs))
		rev |= POLLIN;
	if ((events & POLLOUT) && rsk_can_send(rs))
		rev |= POLLOUT;
	/*
	 * A peer that sent its last bytes and DISCONNECT at once: the bytes
	 * first (readable), the hang-up once they are read. librdmacm reports
	 * both together, and its own examples' do_poll() takes that for a
	 * failure when the two arrive in one poll.
	 */
	if (rs->state & RSK_ERROR)
		rev |= POLLERR;
	else if (!(rs->state & RSK_CONNECTED) && !rsk_rx_has_data(&rs->rx))
		rev |= POLLHUP;
	return rev;
}

/* What @p rs reports for @p events now, moving a connect along (lock taken here). */
static short rsk_revents(struct rsk *rs, short events)
{
	short rev = 0;

	pthread_mutex_lock(&rs->lock);
	if (rs->dg != NULL) {
		rev = rsk_dg_revents(rs, events);
		pthread_mutex_unlock(&rs->lock);
		return rev;
	}
	if (rs->state & RSK_OPENING)
		rsk_do_connect(rs);
	if (rs->state & (RSK_CONNECTED | RSK_DISCONNECTED | RSK_ERROR))
		rev = rsk_data_revents(rs, events);
	else if (rs->state == RSK_LISTENING)
		rev = rsk_listen_revents(rs, events);
	else if (rs->state == RSK_CONNECT_ERROR)
		rev = (short)((events & (POLLIN | POLLOUT)) | POLLERR);
	pthread_mutex_unlock(&rs->lock);
	return rev;
}

/* The fds whose activity can change @p rs's readiness (at most 2). */
static int rsk_wait_fds(struct rsk *rs, struct pollfd *out)
{
	int n = 0;

	pthread_mutex_lock(&rs->lock);
	if (rs->dg != NULL) {
		n = rsk_dg_wait_fds(rs, out);
		pthread_mutex_unlock(&rs->lock);
		return n;
	}
	if (rs->cq != NULL && (rs->state & RSK_CONNECTED)) {
		rsk_arm(rs);
		out[n++] = (struct pollfd){ .fd = rs->cch->fd, .events = POLLIN };
	}
	out[n++] = (struct pollfd){ .fd = rs->fd, .events = POLLIN };
	pthread_mutex_unlock(&rs->lock);
	return n;
}

/* Every descriptor's state now; @return how many have events. */
static int rsk_poll_check(struct pollfd *fds, nfds_t nfds)
{
	int cnt = 0;

	for (nfds_t i = 0; i < nfds; i++) {
		struct rsk *rs = rsk_get(fds[i].fd);

		fds[i].revents = 0;
		if (rs != NULL)
			fds[i].revents = rsk_revents(rs, fds[i].events);
		else if (fds[i].fd >= 0)
			poll(&fds[i], 1, 0);
		if (fds[i].revents)
			cnt++;
	}
	return cnt;
}

/* Build the sleep set: 2 slots per descriptor. @return its size. */
static nfds_t rsk_poll_arm(const struct pollfd *fds, nfds_t nfds, struct pollfd *rfds)
{
	nfds_t n = 0;

	for (nfds_t i = 0; i < nfds; i++) {
		struct rsk *rs = rsk_get(fds[i].fd);

		if (rs != NULL) {
			n += (nfds_t)rsk_wait_fds(rs, &rfds[n]);
		} else {
			rfds[n] = fds[i];
			rfds[n++].revents = 0;
		}
	}
	return n;
}

/* After a wake: take the CQ notifications so the channels go quiet again. */
static void rsk_poll_drain(const struct pollfd *fds, nfds_t nfds)
{
	for (nfds_t i = 0; i < nfds; i++) {
		struct rsk *rs = rsk_get(fds[i].fd);

		if (rs == NULL)
			continue;
		pthread_mutex_lock(&rs->lock);
		rsk_drain_cq_events(rs);
		pthread_mutex_unlock(&rs->lock);
	}
}

static int64_t rsk_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool rsk_any(const struct pollfd *fds, nfds_t nfds)
{
	for (nfds_t i = 0; i < nfds; i++)
		if (rsk_get(fds[i].fd) != NULL)
			return true;
	return false;
}

RCM_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	int64_t deadline = timeout > 0 ? rsk_now_ms() + timeout : 0;
	struct pollfd *rfds;
	int cnt;

	if (!rsk_any(fds, nfds))
		return poll(fds, nfds, timeout);
	if (nfds > (nfds_t)1 << 20)
		return rcm_err(EINVAL);
	rfds = calloc(2 * nfds, sizeof(*rfds));
	if (rfds == NULL)
		return rcm_err(ENOMEM);
	for (;;) {
		int wait = timeout;
		nfds_t n;

		cnt = rsk_poll_check(fds, nfds);
		if (cnt || timeout == 0)
			break;
		n = rsk_poll_arm(fds, nfds, rfds);
		/* armed: anything that landed before the arm is seen by this check */
		cnt = rsk_poll_check(fds, nfds);
		if (cnt)
			break;
		if (timeout > 0) {
			int64_t left = deadline - rsk_now_ms();

			if (left <= 0)
				break;
			wait = (int)left;
		}
		cnt = poll(rfds, n, wait);
		if (cnt < 0)
			break;
		rsk_poll_drain(fds, nfds);
		cnt = 0;
	}
	free(rfds);
	return cnt;
}

static void rsk_fdset_to_poll(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct pollfd *p,
			      nfds_t *n)
{
	*n = 0;
	for (int fd = 0; fd < nfds; fd++) {
		short ev = 0;

		if (rd && FD_ISSET(fd, rd))
			ev |= POLLIN;
		if (wr && FD_ISSET(fd, wr))
			ev |= POLLOUT;
		if (ex && FD_ISSET(fd, ex))
			ev |= POLLPRI;
		if (ev)
			p[(*n)++] = (struct pollfd){ .fd = fd, .events = ev };
	}
}

/* Back into the sets: @return the number of bits set, as select(2). */
static int rsk_poll_to_fdset(const struct pollfd *p, nfds_t n, fd_set *rd, fd_set *wr, fd_set *ex)
{
	int cnt = 0;

	if (rd)
		FD_ZERO(rd);
	if (wr)
		FD_ZERO(wr);
	if (ex)
		FD_ZERO(ex);
	for (nfds_t i = 0; i < n; i++) {
		if (rd && (p[i].revents & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(p[i].fd, rd);
			cnt++;
		}
		if (wr && (p[i].revents & (POLLOUT | POLLERR))) {
			FD_SET(p[i].fd, wr);
			cnt++;
		}
		if (ex && (p[i].revents & POLLPRI)) {
			FD_SET(p[i].fd, ex);
			cnt++;
		}
	}
	return cnt;
}

RCM_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		       struct timeval *timeout)
{
	struct pollfd *p;
	nfds_t n;
	int to = -1, rc;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return rcm_err(EINVAL);
	if (timeout != NULL) {
		if (timeout->tv_sec < 0 || timeout->tv_usec < 0)
			return rcm_err(EINVAL);
		to = (int)(timeout->tv_sec * 1000 + (timeout->tv_usec + 999) / 1000);
	}
	p = calloc((size_t)nfds + 1, sizeof(*p));
	if (p == NULL)
		return rcm_err(ENOMEM);
	rsk_fdset_to_poll(nfds, readfds, writefds, exceptfds, p, &n);
	rc = rpoll(p, n, to);
	if (rc >= 0)
		rc = rsk_poll_to_fdset(p, n, readfds, writefds, exceptfds);
	free(p);
	return rc;
}
