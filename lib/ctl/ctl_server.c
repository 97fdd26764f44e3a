/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl: a poll(2) server over a listening SOCK_SEQPACKET socket: accepts
 * clients, feeds their requests to ctl_conn_handle() and closes a client's
 * connection when its socket closes (the objects go with the last
 * connection of its group). A client that breaks the framing (bad magic,
 * size, fds: see ipc_msg_check()) is disconnected; semantic errors are
 * answered with a status. IMPORT_DEVICE adds a connection on the socket the
 * request carries (ctl_server_import()).
 *
 * A request the dataplane answers later (CTL_PENDING) parks its connection:
 * its socket is not read until the answer went out (so its next requests
 * wait in the socket, in order), while every other connection is served.
 * Answers that arrived (ctl_dp_done()) are sent at the start of each poll.
 */
#include <errno.h>
#include <fcntl.h>
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
	struct pollfd *pfds;         /**< the listener, max connections, the watched fd */
	int watch_fd;                /**< ctl_server_watch(), or -1 */
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
	srv->pfds = calloc(srv->max + 2, sizeof(*srv->pfds));
	srv->watch_fd = -1;
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

/* A socket the importer may hand us: our end of a SOCK_SEQPACKET pair, made non-blocking. */
static bool ctl_server_sock_ok(int fd)
{
	int v = 0;
	socklen_t len = sizeof(v);
	int fl;

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) < 0 || v != AF_UNIX)
		return false;
	len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) < 0 || v != SOCK_SEQPACKET)
		return false;
	fl = fcntl(fd, F_GETFL);
	return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

/*
 * IMPORT_DEVICE on connection @p i: serve a connection of i's group on the
 * socket the request carries, and answer there. Connection i's socket gets
 * no answer (other processes may share it, waiting for their own), except
 * EINVAL when no usable socket came (nothing else to answer on).
 */
static void ctl_server_import(struct ctl_server *srv, uint32_t i, const struct ipc_msg *req,
			      int *fds, unsigned int nfds)
{
	struct ipc_msg rsp;
	int rfds[IPC_MAX_FDS];
	unsigned int rnfds = 0;
	int sock = nfds == 1 ? fds[0] : -1;
	struct ctl_conn *c = NULL;

	for (unsigned int k = 1; k < nfds; k++)
		close(fds[k]);
	if (sock < 0 || !ctl_server_sock_ok(sock)) {
		if (sock >= 0)
			close(sock);
		ipc_rsp_init(&rsp, req, EINVAL);
		ipc_send(srv->conns[i].fd, &rsp, NULL, 0);
		return;
	}
	if (srv->n < srv->max) {
		c = ctl_conn_import(srv->conns[i].conn, sock, req, &rsp, rfds, &rnfds);
	} else {
		ipc_rsp_init(&rsp, req, EMFILE);
	}
	if (ipc_send(sock, &rsp, rfds, rnfds) < 0 && c != NULL) {
		ctl_conn_close(c);
		c = NULL;
	}
	for (unsigned int k = 0; k < rnfds; k++)
		close(rfds[k]);
	if (c == NULL) {
		close(sock);
		return;
	}
	srv->conns[srv->n].fd = sock;
	srv->conns[srv->n].conn = c;
	srv->n++;
}

/* Send an answer and close its descriptors. @return false when the client must be dropped. */
static bool ctl_server_reply(struct ctl_server *srv, uint32_t i, struct ipc_msg *rsp,
			     int *rfds, unsigned int rnfds)
{
	int rc = ipc_send(srv->conns[i].fd, rsp, rfds, rnfds);

	for (unsigned int k = 0; k < rnfds; k++)
		close(rfds[k]);
	return rc == 0;
}

/*
 * Serve the queued requests of connection @p i until one is left pending.
 * @return false when it must be dropped.
 */
static bool ctl_server_serve(struct ctl_server *srv, uint32_t i)
{
	struct ipc_msg req, rsp;
	int fds[IPC_MAX_FDS], rfds[IPC_MAX_FDS];
	unsigned int nfds, rnfds;

	for (int budget = 64; budget > 0 && !ctl_conn_pending(srv->conns[i].conn); budget--) {
		ssize_t n = ipc_recv(srv->conns[i].fd, &req, fds, &nfds, IPC_REQUEST);

		if (n == -EAGAIN)
			return true;
		if (n <= 0)
			return false; /* EOF, reset, or a framing violation */
		if (req.hdr.op == IPC_OP_IMPORT_DEVICE) {
			ctl_server_import(srv, i, &req, fds, nfds);
			continue;
		}
		if (ctl_conn_handle(srv->conns[i].conn, &req, fds, nfds, &rsp, rfds, &rnfds) ==
		    CTL_PENDING)
			return true;
		if (!ctl_server_reply(srv, i, &rsp, rfds, rnfds))
			return false;
	}
	return true;
}

/* Send the answers the dataplane completed since the last poll. @return answers sent */
static int ctl_server_answer(struct ctl_server *srv)
{
	struct ipc_msg rsp;
	int rfds[IPC_MAX_FDS];
	unsigned int rnfds;
	int n = 0;

	for (uint32_t i = srv->n; i-- > 0;) {
		if (!ctl_conn_answer(srv->conns[i].conn, &rsp, rfds, &rnfds))
			continue;
		n++;
		if (!ctl_server_reply(srv, i, &rsp, rfds, rnfds))
			ctl_server_drop(srv, i);
	}
	return n;
}

int ctl_server_poll(struct ctl_server *srv, int timeout_ms)
{
	int handled = ctl_server_answer(srv), n;
	uint32_t nc = srv->n;

	srv->pfds[0] = (struct pollfd){ .fd = srv->lfd, .events = POLLIN };
	for (uint32_t i = 0; i < nc; i++) {
		/* a parked connection is watched for hang-up only */
		short ev = ctl_conn_pending(srv->conns[i].conn) ? 0 : POLLIN;

		srv->pfds[i + 1] = (struct pollfd){ .fd = srv->conns[i].fd, .events = ev };
	}
	srv->pfds[nc + 1] = (struct pollfd){ .fd = srv->watch_fd, .events = POLLIN };
	n = poll(srv->pfds, nc + 2, handled ? 0 : timeout_ms);
	if (n < 0)
		return errno == EINTR ? handled : -errno;
	if (srv->pfds[nc + 1].revents & POLLIN) {
		uint64_t v;

		handled++;
		(void)!read(srv->watch_fd, &v, sizeof(v)); /* an eventfd: reading resets it */
	}
	/* Walk backwards: dropping swaps the last connection into the hole. */
	for (uint32_t i = nc; i-- > 0;) {
		short re = srv->pfds[i + 1].revents;

		if (re == 0)
			continue;
		handled++;
		if (ctl_conn_pending(srv->conns[i].conn)) {
			/* hung up while its answer is pending: lib/ctl finishes it alone */
			if (re & (POLLHUP | POLLERR | POLLNVAL))
				ctl_server_drop(srv, i);
			continue;
		}
		if (!ctl_server_serve(srv, i))
			ctl_server_drop(srv, i);
	}
	if (srv->pfds[0].revents & POLLIN) {
		handled++;
		ctl_server_accept(srv);
	}
	return handled;
}

void ctl_server_watch(struct ctl_server *srv, int fd)
{
	srv->watch_fd = fd;
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
