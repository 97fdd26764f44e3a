/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl: a poll(2) server over a listening SOCK_SEQPACKET socket: accepts
 * clients, feeds their requests to ctl_conn_handle() and tears a client's
 * objects down when its socket closes. A client that breaks the framing
 * (bad magic, size, fds: see ipc_msg_check()) is disconnected, which also
 * tears its objects down; semantic errors are answered with a status.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "ctl_internal.h"

struct ctl_server_conn {
	int fd;
	struct ctl_conn *conn;
};

struct ctl_server {
	struct ctl *ctl;
	int lfd;
	char path[108];
	uint32_t max;
	uint32_t n;
	struct ctl_server_conn *conns;
	struct pollfd *pfds;
};

struct ctl_server *ctl_server_create(struct ctl *ctl, const char *path)
{
	struct ctl_server *srv = calloc(1, sizeof(*srv));
	int fd;

	if (srv == NULL)
		return NULL;
	srv->ctl = ctl;
	srv->max = ctl->cfg.limits.max_conns;
	srv->conns = calloc(srv->max, sizeof(*srv->conns));
	srv->pfds = calloc(srv->max + 1, sizeof(*srv->pfds));
	if (srv->conns == NULL || srv->pfds == NULL || strlen(path) >= sizeof(srv->path)) {
		int e = srv->conns && srv->pfds ? ENAMETOOLONG : ENOMEM;

		free(srv->conns);
		free(srv->pfds);
		free(srv);
		errno = e;
		return NULL;
	}
	fd = ipc_listen(path, 64);
	if (fd < 0) {
		free(srv->conns);
		free(srv->pfds);
		free(srv);
		errno = -fd;
		return NULL;
	}
	srv->lfd = fd;
	strcpy(srv->path, path);
	return srv;
}

static void ctl_server_drop(struct ctl_server *srv, uint32_t i)
{
	ctl_conn_close(srv->conns[i].conn);
	close(srv->conns[i].fd);
	srv->conns[i] = srv->conns[--srv->n];
}

static void ctl_server_accept(struct ctl_server *srv)
{
	for (;;) {
		int fd = ipc_accept(srv->lfd, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct ctl_conn *c;

		if (fd < 0)
			return;
		c = srv->n < srv->max ? ctl_conn_open(srv->ctl, fd) : NULL;
		if (c == NULL) {
			close(fd); /* over the connection limit: the client sees EOF */
			continue;
		}
		srv->conns[srv->n].fd = fd;
		srv->conns[srv->n].conn = c;
		srv->n++;
	}
}

/* Serve every queued request of connection @p i. @return false when it must be dropped. */
static bool ctl_server_serve(struct ctl_server *srv, uint32_t i)
{
	struct ipc_msg req, rsp;
	int fds[IPC_MAX_FDS], rfds[IPC_MAX_FDS];
	unsigned int nfds, rnfds;

	for (int budget = 64; budget > 0; budget--) {
		ssize_t n = ipc_recv(srv->conns[i].fd, &req, fds, &nfds, IPC_REQUEST);
		int rc;

		if (n == -EAGAIN)
			return true;
		if (n <= 0)
			return false; /* EOF, reset, or a framing violation */
		ctl_conn_handle(srv->conns[i].conn, &req, fds, nfds, &rsp, rfds, &rnfds);
		rc = ipc_send(srv->conns[i].fd, &rsp, rfds, rnfds);
		for (unsigned int k = 0; k < rnfds; k++)
			close(rfds[k]);
		if (rc < 0)
			return false;
	}
	return true;
}

int ctl_server_poll(struct ctl_server *srv, int timeout_ms)
{
	int handled = 0, n;
	uint32_t nc = srv->n;

	srv->pfds[0] = (struct pollfd){ .fd = srv->lfd, .events = POLLIN };
	for (uint32_t i = 0; i < nc; i++)
		srv->pfds[i + 1] = (struct pollfd){ .fd = srv->conns[i].fd, .events = POLLIN };
	n = poll(srv->pfds, nc + 1, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	/* Walk backwards: dropping swaps the last connection into the hole. */
	for (uint32_t i = nc; i-- > 0;) {
		short re = srv->pfds[i + 1].revents;

		if (re == 0)
			continue;
		handled++;
		if (!ctl_server_serve(srv, i))
			ctl_server_drop(srv, i);
	}
	if (srv->pfds[0].revents & POLLIN) {
		handled++;
		ctl_server_accept(srv);
	}
	return handled;
}

uint32_t ctl_server_nconns(const struct ctl_server *srv)
{
	return srv->n;
}

void ctl_server_destroy(struct ctl_server *srv)
{
	if (srv == NULL)
		return;
	while (srv->n > 0) {
		ctl_send_event(srv->conns[srv->n - 1].conn, IBV_EVENT_DEVICE_FATAL, IPC_OBJ_DEVICE, 0);
		ctl_server_drop(srv, srv->n - 1);
	}
	close(srv->lfd);
	unlink(srv->path);
	free(srv->conns);
	free(srv->pfds);
	free(srv);
}
