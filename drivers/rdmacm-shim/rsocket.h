/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdmacm shim: rsockets (stream sockets over RC QPs), wire compatible with
 * rdma-core's librdmacm rsockets (protocol version 1; librdmacm's
 * docs/rsocket describes it; we learnt it there and wrote ours).
 *
 * The protocol in short:
 *  - the connection's private data (REQ and REP) is struct rsk_conn_data:
 *    version 1, flags, the receive credits (the peer's receive queue), the
 *    address/rkey of the sender's "target SGL" (2 entries the peer writes
 *    buffer announcements into) and the first receive buffer;
 *  - every message is an RDMA WRITE WITH IMMEDIATE whose 32-bit immediate
 *    (big endian on the wire) carries an op in bits 31..29 and an argument
 *    in bits 28..0 (RSK_OP_LIST);
 *  - data: a write into the buffer the peer announced, immediate = DATA |
 *    length. The receive buffer is two halves; a half is announced again
 *    (an SGL message: a 16-byte {addr, key, length} written into the
 *    sender's target SGL, in the receiver's byte order) once read;
 *  - credits: the SGL message's argument is the sequence number up to which
 *    the peer may send (its messages consume our receive WQEs);
 *  - control: DISCONNECT, KEEPALIVE, SHUTDOWN (RSK_CTRL_LIST), a
 *    zero-length write with immediate.
 *
 * Files: rsocket_wire.c (the pure protocol: conn data, the immediate, the
 * receive-side checks; no verbs, unit-tested), rsocket.c (the socket table
 * and the socket calls), rsocket_conn.c (the endpoint: QP, CQ, buffers;
 * connect and accept), rsocket_data.c (completions, send, receive), and
 * rsocket_poll.c (rpoll, rselect), rsocket_keepalive.c (SO_KEEPALIVE),
 * rsocket_dgram.c and rsocket_dgram_wire.c (SOCK_DGRAM).
 */
#ifndef RCM_RSOCKET_H
#define RCM_RSOCKET_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* ---- the wire (rsocket_wire.c) ---- */

#define RSK_VERSION 1
#define RSK_CONN_FLAG_NET (1u << 0)   /* sender is big endian */
#define RSK_CONN_FLAG_IOMAP (1u << 1) /* target_iomap_size is valid */
#define RSK_SGL_SIZE 2u               /* entries of a target SGL */
#define RSK_CTRL_SLOTS 4u             /* control messages in flight */
#define RSK_SNDLOWAT 2048u            /* send space below which a socket is not writable */
#define RSK_MAX_TRANSFER 65536u
#define RSK_OLAP_START 2048u
#define RSK_QP_MIN 16u
#define RSK_QP_MAX 0xfffeu
#define RSK_LINGER_MS 10000           /* longest a shutdown waits for the peer */

/* The immediate's op (bits 31..29): X(name, value, queued as data). */
#define RSK_OP_LIST(X)                                                                             \
	X(DATA, 0)                                                                                 \
	X(RSVD_DATA_MORE, 1)                                                                       \
	X(WRITE, 2)                                                                                \
	X(RSVD_DRA_MORE, 3)                                                                        \
	X(SGL, 4)                                                                                  \
	X(RSVD, 5)                                                                                 \
	X(IOMAP_SGL, 6)                                                                            \
	X(CTRL, 7)

enum rsk_op {
#define RSK_OP_ENUM(n, v) RSK_OP_##n = v,
	RSK_OP_LIST(RSK_OP_ENUM)
#undef RSK_OP_ENUM
};

/* Control messages (the argument of RSK_OP_CTRL). */
#define RSK_CTRL_LIST(X)                                                                           \
	X(DISCONNECT, 0)                                                                           \
	X(KEEPALIVE, 1)                                                                            \
	X(SHUTDOWN, 2)

enum rsk_ctrl {
#define RSK_CTRL_ENUM(n, v) RSK_CTRL_##n = v,
	RSK_CTRL_LIST(RSK_CTRL_ENUM)
#undef RSK_CTRL_ENUM
};

static inline uint32_t rsk_msg(enum rsk_op op, uint32_t arg)
{
	return ((uint32_t)op << 29) | (arg & 0x1fffffffu);
}
static inline enum rsk_op rsk_msg_op(uint32_t msg)
{
	return (enum rsk_op)(msg >> 29);
}
static inline uint32_t rsk_msg_arg(uint32_t msg)
{
	return msg & 0x1fffffffu;
}

/* A buffer announcement: 16 bytes, in the byte order of the host that reads it. */
struct rsk_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

/* The private data of REQ and REP (40 bytes; multi-byte fields big endian). */
struct rsk_conn_data {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;           /* big endian */
	uint8_t reserved[3];
	uint8_t target_iomap_size;  /* rsk_scale() encoded */
	struct rsk_sge target_sgl;  /* big endian; length = number of entries */
	struct rsk_sge data_buf;    /* big endian; the first receive buffer */
};
_Static_assert(sizeof(struct rsk_conn_data) == 40, "rsockets conn data is 40 bytes");

/* What we take from a peer's conn data. */
struct rsk_peer {
	struct rsk_sge target_sgl;  /* host order */
	struct rsk_sge data_buf;    /* host order */
	uint16_t credits;
	bool swap;                  /* the peer's byte order differs from ours */
	uint32_t iomap_size;        /* entries of its target iomap (after its target SGL) */
	uint64_t iomap_addr;
};

/* An iomap entry: 24 bytes, after the target SGL, in the reader's byte order. */
struct rsk_iomap {
	uint64_t offset;
	struct rsk_sge sge;
};
_Static_assert(sizeof(struct rsk_iomap) == 24, "rsockets iomap entries are 24 bytes");
#define RSK_IOMAP_MAX 32512u /* the largest size the 8-bit scale encodes */

/* Why a peer's conn data or message is refused: X(name). */
#define RSK_BAD_LIST(X)                                                                            \
	X(conn_short)                                                                              \
	X(conn_version)                                                                            \
	X(conn_credits)                                                                            \
	X(conn_sgl)                                                                                \
	X(conn_buf)                                                                                \
	X(msg_op)                                                                                  \
	X(msg_ctrl)                                                                                \
	X(msg_no_imm)                                                                              \
	X(msg_overrun)                                                                             \
	X(msg_queue)                                                                               \
	X(msg_credits)                                                                             \
	X(msg_iomap)                                                                               \
	X(ds_hdr)                                                                                  \
	X(ds_dests)

enum rsk_bad {
	RSK_OK = 0,
#define RSK_BAD_ENUM(n) RSK_BAD_##n,
	RSK_BAD_LIST(RSK_BAD_ENUM)
#undef RSK_BAD_ENUM
	RSK_BAD_COUNT
};

/* Process-wide counters of refused input, by reason (index: enum rsk_bad). */
extern uint64_t rsk_bad_count[RSK_BAD_COUNT];
const char *rsk_bad_name(enum rsk_bad why);

/* The receive side's accounting of what the peer may write (one connection). */
struct rsk_rx {
	uint32_t rq_size;       /* our receive queue = credits per window */
	uint32_t rbuf_size;     /* two halves */
	uint32_t granted;       /* bytes announced to the peer and not yet written */
	uint32_t bytes_avail;   /* read bytes not announced again */
	uint32_t free_offset;   /* the next half to announce */
	uint32_t read_offset;   /* where the next unread byte is */
	uint16_t seq_no;        /* data messages consumed */
	uint16_t seq_comp;      /* give credits again when seq_no reaches this */
	uint32_t *queue;        /* lengths of received, unread data messages */
	uint32_t head, tail;    /* queue ring of rq_size + 1 */
	uint32_t iomap_size;    /* entries of our target iomap */
};

/* What one received message does (rsk_rx_msg()). */
struct rsk_rx_result {
	enum rsk_bad bad;       /* RSK_OK, or why the connection must fail */
	bool has_credits;       /* SGL: new credits limit in credits */
	uint16_t credits;
	bool ctrl;              /* CTRL: ctrl is set */
	enum rsk_ctrl ctrl_msg;
};

/** The rsockets scale encoding of a size in 8 bits (the conn data's iomap size). */
uint32_t rsk_scale(uint32_t value);
uint32_t rsk_unscale(uint32_t scaled);

/** Fill @p cd for our side. @p target_sgl and @p data_buf in host order. */
void rsk_conn_data_build(struct rsk_conn_data *cd, uint16_t credits, uint32_t iomap_size,
			 const struct rsk_sge *target_sgl, const struct rsk_sge *data_buf);
/**
 * Check and take a peer's conn data (@p len bytes of private data).
 * @return RSK_OK, or the reason (counted in rsk_bad_count).
 */
enum rsk_bad rsk_conn_data_parse(const void *pd, size_t len, struct rsk_peer *peer);

/** Initialise @p rx for a connection; @p queue has rq_size + 1 entries. */
void rsk_rx_init(struct rsk_rx *rx, uint32_t rq_size, uint32_t rbuf_size, uint32_t *queue);
/**
 * One received immediate (host order), @p sseq_no our data messages sent so
 * far and @p peer_credits the peer's receive queue. A malformed message is
 * counted and reported in the result's bad; nothing is changed then.
 */
struct rsk_rx_result rsk_rx_msg(struct rsk_rx *rx, uint32_t msg, uint16_t sseq_no,
				uint16_t peer_credits);
/** True when the receive side should announce a half or grant credits. */
bool rsk_rx_want_credits(const struct rsk_rx *rx);
/**
 * Account an SGL message about to be sent: @return true if a half buffer is
 * announced (then *@p offset is its offset in the receive buffer); the
 * credit limit to send is rsk_rx_credit_limit().
 */
bool rsk_rx_take_half(struct rsk_rx *rx, uint32_t *offset);
uint16_t rsk_rx_credit_limit(const struct rsk_rx *rx);
/** Bytes queued and unread. */
bool rsk_rx_has_data(const struct rsk_rx *rx);
/**
 * Copy up to @p len unread bytes from @p rbuf to @p buf (NULL: discard);
 * @p peek leaves them unread. @return bytes copied.
 */
size_t rsk_rx_read(struct rsk_rx *rx, const uint8_t *rbuf, uint8_t *buf, size_t len, bool peek);

/* ---- datagram rsockets: the wire (rsocket_dgram_wire.c) ----
 *
 * Every UD message of a datagram rsocket starts with librdmacm's ds header
 * (the sender's address and port) and uses Q_Key RDMA_UDP_QKEY; a slot is
 * 2048 bytes (its RS_SNDLOWAT) with the header. rsocket_dgram.c has how a
 * destination's QP is found (SIDR).
 */
#define RSK_DS_HDR4 8u       /* version 4, length, port, IPv4 */
#define RSK_DS_HDR6 24u      /* version 6, length, port, flowinfo, IPv6 */
#define RSK_DS_MSG 2048u     /* a message slot: ds header + data */
#define RSK_DS_GRH 40u       /* the GRH before every UD receive */

/** Write the ds header of a datagram from @p from (AF_INET/AF_INET6); @return its length, 0 if neither. */
uint32_t rsk_ds_hdr_build(uint8_t *out, const struct sockaddr *from);
/**
 * Check the ds header at the start of a received message of @p len bytes;
 * the sender's address into @p from (may be NULL). @return RSK_OK (then
 * *@p hdr_len is the header's length) or RSK_BAD_ds_hdr, counted.
 */
enum rsk_bad rsk_ds_hdr_parse(const uint8_t *msg, size_t len, struct sockaddr_storage *from,
			      uint32_t *hdr_len);

/* ---- the socket (rsocket.c, rsocket_conn.c, rsocket_data.c) ---- */

enum rsk_state {
	RSK_INIT = 0,
	RSK_BOUND = 1u << 0,
	RSK_LISTENING = 1u << 1,
	RSK_OPENING = 1u << 2,          /* connecting or accepting: see phase */
	RSK_CONNECTED = 1u << 3,
	RSK_READABLE = 1u << 4,
	RSK_WRITABLE = 1u << 5,
	RSK_CONNECT_ERROR = 1u << 6,
	RSK_DISCONNECTED = 1u << 7,
	RSK_ERROR = 1u << 8,
};
#define RSK_RDWR (RSK_CONNECTED | RSK_READABLE | RSK_WRITABLE)

enum rsk_phase {
	RSK_PH_NONE,
	RSK_PH_RESOLVE_ADDR,
	RSK_PH_RESOLVE_ROUTE,
	RSK_PH_CONNECT,
	RSK_PH_ACCEPT,
};

struct rsk {
	int fd;                         /* the index: the cm channel's fd */
	int domain;
	pthread_mutex_t lock;           /* everything below */
	pthread_mutex_t wait_lock;      /* one thread sleeps on the CQ channel at a time */
	pthread_mutex_t slock, rlock;   /* serialise senders, receivers */
	uint32_t state;
	enum rsk_phase phase;
	int err;                        /* SO_ERROR */
	int fs_flags;                   /* O_NONBLOCK */
	int retries;
	struct rdma_cm_id *cm;
	struct sockaddr_storage dst;    /* rconnect's */

	/* options */
	uint32_t sbuf_size, rbuf_size;
	uint16_t sq_size, rq_size;
	uint32_t sq_inline;
	uint64_t so_opts, tcp_opts, ipv6_opts;
	uint32_t keepalive_time;
	int linger_ms;                  /* how long a shutdown waits for the peer (SO_LINGER) */
	bool linger_set;
	void *route;                    /* RDMA_ROUTE */
	size_t route_len;

	/* the endpoint */
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	bool cq_armed;
	uint32_t unacked_events;
	uint8_t *sbuf, *rbuf;
	struct rsk_sge *target;         /* RSK_SGL_SIZE entries the peer writes */
	struct rsk_iomap *target_iomap; /* then iomap_size entries it writes */
	uint32_t iomap_size;            /* RDMA_IOMAPSIZE */
	struct rsk_iomr *maps;          /* riomap()s of this socket */
	uint32_t nmaps;
	bool iomap_pending;             /* some are not sent yet */
	struct ibv_mr *smr, *rmr, *tmr;
	size_t sbuf_alloc, rbuf_alloc, target_alloc;
	uint32_t *rqueue;

	/* send side */
	struct rsk_peer peer;
	uint16_t sseq_no, sseq_comp;
	uint32_t target_idx;            /* entry of target[] being filled */
	uint32_t remote_sge;            /* entry of the peer's target SGL we write next */
	uint32_t sqe_avail;
	uint32_t sbuf_avail;
	uint32_t sbuf_head;             /* where the next copy goes in sbuf */
	uint32_t ctrl_seqno, ctrl_max_seqno;

	/* receive side */
	struct rsk_rx rx;

	struct rsk_dgram *dg;           /* SOCK_DGRAM (rsocket_dgram.c); NULL for a stream */
};

/* rsocket.c */
struct rsk *rsk_get(int fd);
int rsk_insert(struct rsk *rs);
void rsk_remove(struct rsk *rs);
struct rsk *rsk_alloc(const struct rsk *inherit, int domain);
void rsk_free(struct rsk *rs);
bool rsk_nonblocking(const struct rsk *rs, int flags);

/* rsocket_dgram.c: datagram sockets (lock taken inside unless said) */
int rsk_dg_open(struct rsk *rs);              /* its id (RDMA_PS_UDP): rs->cm, rs->fd */
void rsk_dg_free(struct rsk *rs);             /* before the CQ goes */
int rsk_dg_bind(struct rsk *rs, const struct sockaddr *addr, socklen_t len);
int rsk_dg_connect(struct rsk *rs, const struct sockaddr *addr, socklen_t len);
int rsk_dg_peer(struct rsk *rs, struct sockaddr *addr, socklen_t *len);
ssize_t rsk_dg_sendv(struct rsk *rs, const struct iovec *iov, int iovcnt, int flags,
		     const struct sockaddr *to, socklen_t tolen);
ssize_t rsk_dg_recv(struct rsk *rs, void *buf, size_t len, int flags, struct sockaddr *from,
		    socklen_t *fromlen);
short rsk_dg_revents(struct rsk *rs, short events);       /* lock held */
int rsk_dg_wait_fds(struct rsk *rs, struct pollfd *out);  /* lock held; at most 2 */

/* rsocket_keepalive.c: SO_KEEPALIVE's KEEPALIVE every keepalive_time seconds */
int rsk_ka_set(struct rsk *rs, bool on);      /* rs->lock held; on again: reschedule */
void rsk_ka_remove(struct rsk *rs);           /* before rs is freed */

/* rsocket_iomap.c */
/* Send the riomap()s not announced yet (lock held); 0 or -1 with errno. */
int rsk_send_iomaps(struct rsk *rs, int flags);
void rsk_free_iomaps(struct rsk *rs);

/* rsocket_conn.c */
int rsk_create_ep(struct rsk *rs);
/* Drive a connect/accept in progress; 0 when connected, -1 with errno (EINPROGRESS). */
int rsk_do_connect(struct rsk *rs);
/* Take one connection request from a listener; the new socket or NULL with errno. */
struct rsk *rsk_accept_one(struct rsk *ls);
/* Read the CM events of a connected socket (DISCONNECTED): lock held. */
void rsk_cm_events(struct rsk *rs);

/* rsocket_data.c */
typedef bool (*rsk_test_fn)(struct rsk *rs);
bool rsk_can_send(struct rsk *rs);
bool rsk_test_can_send(struct rsk *rs);
bool rsk_test_have_data(struct rsk *rs);
bool rsk_test_all_sent(struct rsk *rs);
bool rsk_test_ctrl(struct rsk *rs);
bool rsk_test_any(struct rsk *rs);
/*
 * Poll the CQ and apply completions until @p test holds (lock held); block
 * unless @p nonblock. @return 0, or -1 with errno (EWOULDBLOCK, the error).
 */
int rsk_process(struct rsk *rs, bool nonblock, rsk_test_fn test);
/* The same, giving up after @p timeout_ms (> 0) with ETIMEDOUT. */
int rsk_process_until(struct rsk *rs, bool nonblock, rsk_test_fn test, int timeout_ms);
/* Post an RDMA WRITE (WITH IMMEDIATE unless @p imm is false) whose wr_id is @p msg. */
int rsk_post_write(struct rsk *rs, struct ibv_sge *sg, int nsg, uint32_t msg, bool imm, int flags,
		   uint64_t addr, uint32_t rkey);
/* Copy @p len bytes at @p buf into the send ring; fills @p sg, @return its count. */
int rsk_stage_buf(struct rsk *rs, const void *buf, uint32_t len, struct ibv_sge sg[2]);
/* Wait until something can be sent (lock held); 0 or -1 with errno. */
int rsk_wait_send(struct rsk *rs, int flags);
/* Connect/accept still in progress: drive it (-1/EAGAIN while it is). */
int rsk_ready(struct rsk *rs);
/* Send a control message (lock held). */
int rsk_send_ctrl(struct rsk *rs, enum rsk_ctrl ctrl);
/* Consume a pending CQ channel event if any (lock held). */
void rsk_drain_cq_events(struct rsk *rs);
/* Arm the CQ (lock held). */
void rsk_arm(struct rsk *rs);

#endif /* RCM_RSOCKET_H */
