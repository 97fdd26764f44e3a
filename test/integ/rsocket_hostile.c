/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsocket_hostile ADDR PORT MSG: a hostile rsockets peer. Connects over
 * rdma_cm with valid conn data (rsocket_wire.c builds it), writes "hello"
 * into the buffer the server announced (a DATA message), then sends the
 * immediate MSG (hex, e.g. e0000063 = CTRL 99) as an RDMA WRITE WITH
 * IMMEDIATE of no bytes. Exit 0 once both writes completed, 1 otherwise.
 * rsocket_lab.sh checks that the server got "hello", then failed that
 * connection with EPROTO, and that other connections went on.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "rsocket.h"

static int post_imm(struct rdma_cm_id *id, const void *buf, uint32_t len, uint32_t imm,
		    const struct rsk_peer *peer)
{
	struct ibv_sge sg = { .addr = (uintptr_t)buf, .length = len };
	struct ibv_send_wr wr = { .sg_list = len ? &sg : NULL, .num_sge = len ? 1 : 0,
				  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED },
			   *bad;

	wr.imm_data = htobe32(imm);
	wr.wr.rdma.remote_addr = peer->data_buf.addr;
	wr.wr.rdma.rkey = peer->data_buf.key;
	return ibv_post_send(id->qp, &wr, &bad);
}

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
						.max_recv_sge = 1, .max_inline_data = 64 },
				       .qp_type = IBV_QPT_RC, .sq_sig_all = 1 };
	static struct rsk_sge target[RSK_SGL_SIZE];
	static uint8_t rbuf[8192];
	struct rdma_conn_param param = { .flow_control = 1, .retry_count = 7, .rnr_retry_count = 7 };
	struct rsk_conn_data cd;
	struct rsk_peer peer;
	struct rdma_cm_id *id;
	struct ibv_mr *tmr, *rmr;
	struct ibv_wc wc;
	int done = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: %s ADDR PORT HEXMSG\n", argv[0]);
		return 2;
	}
	if (rdma_getaddrinfo(argv[1], argv[2], &hints, &res) || rdma_create_ep(&id, res, NULL, &qa)) {
		perror("rdma_create_ep");
		return 1;
	}
	tmr = ibv_reg_mr(id->pd, target, sizeof(target),
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rmr = ibv_reg_mr(id->pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (tmr == NULL || rmr == NULL) {
		perror("ibv_reg_mr");
		return 1;
	}
	rsk_conn_data_build(&cd, 8, 0,
			    &(struct rsk_sge){ .addr = (uintptr_t)target, .key = tmr->rkey,
					       .length = RSK_SGL_SIZE },
			    &(struct rsk_sge){ .addr = (uintptr_t)rbuf, .key = rmr->rkey,
					       .length = sizeof(rbuf) / 2 });
	param.private_data = &cd;
	param.private_data_len = sizeof(cd);
	if (rdma_connect(id, &param)) {
		perror("rdma_connect");
		return 1;
	}
	if (id->event == NULL ||
	    rsk_conn_data_parse(id->event->param.conn.private_data,
				id->event->param.conn.private_data_len, &peer) != RSK_OK) {
		fprintf(stderr, "no rsockets conn data in the REP\n");
		return 1;
	}
	if (post_imm(id, "hello", 5, rsk_msg(RSK_OP_DATA, 5), &peer) ||
	    post_imm(id, NULL, 0, (uint32_t)strtoul(argv[3], NULL, 16), &peer)) {
		perror("ibv_post_send");
		return 1;
	}
	for (int i = 0; i < 5000 && done < 2; i++) {
		int n = ibv_poll_cq(id->send_cq, 1, &wc);

		if (n < 0 || (n == 1 && wc.status != IBV_WC_SUCCESS)) {
			fprintf(stderr, "write failed: %s\n", ibv_wc_status_str(wc.status));
			return 1;
		}
		done += n;
		if (n == 0)
			usleep(1000);
	}
	printf("sent %d\n", done);
	sleep(1); /* let the server see it before the DREQ */
	return done == 2 ? 0 : 1;
}
