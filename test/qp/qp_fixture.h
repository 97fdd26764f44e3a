/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test fixture for the QP semantics library: a device shaped like the rxe0
 * the oracle ran on, the oracle's setup/alternative attribute values, the
 * minimal bring-up paths, field-by-field dumps in the oracle's notation,
 * and readers for the oracle files.
 */
#ifndef TEST_QP_FIXTURE_H
#define TEST_QP_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qp_attr.h"

/* ---- device ---- */

/* rxe0 as device_rxe.txt shows it, with what we advertise differently:
 * no AUTO_PATH_MIG, packet pacing for RC and RAW_PACKET. */
const struct qp_sem_device *fx_device(void);
/* A private copy to tweak (APM on, RAW_PACKET creatable, ...). */
void fx_device_copy(struct qp_sem_device *dev);

extern const union ibv_gid fx_gid_self;   /* ::ffff:198.18.0.1, GID 1 */
extern const union ibv_gid fx_gid_peer;   /* ::ffff:198.18.0.2 */

/* Opaque handles the QP stores; dumps print them like the oracle. */
extern int fx_cq_token, fx_srq_token, fx_ctx_token;
#define FX_CQ  ((struct ibv_cq *)(void *)&fx_cq_token)
#define FX_SRQ ((struct ibv_srq *)(void *)&fx_srq_token)
#define FX_CTX ((void *)&fx_ctx_token)

/* ---- attributes ---- */

/* Create a QP like the oracle: caps 16/16/1/1/0, one CQ, no SRQ. */
int fx_create(struct qp_sem *qp, enum ibv_qp_type type);
/* Every field at its setup value; CUR_STATE claims @p cur. */
void fx_setup_attr(struct ibv_qp_attr *a, enum ibv_qp_state cur);
/* The alternative value of mask bit @p bit. */
void fx_alt_attr(struct ibv_qp_attr *a, unsigned int bit);
/* Required bits of from -> to for the QP's type (0 if the move is invalid). */
int fx_required(enum ibv_qp_type type, int from, int to);
/* Bring a fresh QP to @p state along the oracle's minimal path. */
int fx_bring_to(struct qp_sem *qp, enum ibv_qp_state state);
/* Apply one "key=value" override; false if the key is unknown. */
bool fx_override(struct ibv_qp_attr *a, const char *key, const char *val);

/* The attributes a successful modify must leave (with fx_device() limits
 * and fx_resolve): every masked field as requested, normalised the way the
 * library documents (AV without LIDs, resolved hop limit 64, responder
 * resources rounded to a power of two), state-derived fields updated. */
void fx_model_after(const struct ibv_qp_attr *before, const struct ibv_qp_attr *a,
		    int mask, int new_state, struct ibv_qp_attr *out);

/* ---- names ---- */
int fx_state_parse(const char *s);          /* "RTS", "S7", "S-1" -> value */
enum ibv_qp_type fx_type_parse(const char *s);
int fx_errno_parse(const char *s);          /* "OK" -> 0, "EINVAL" -> 22 */

/* ---- dumps in the oracle's notation ---- */
#define FX_DUMP_MAX 72
struct fx_dump {
	unsigned int n;
	struct {
		const char *name;
		char val[48];
	} f[FX_DUMP_MAX];
};
void fx_dump(const struct ibv_qp_attr *a, const struct ibv_qp_init_attr *init,
	     struct fx_dump *d);
void fx_dump_qp(const struct qp_sem *qp, struct fx_dump *d);
const char *fx_dump_get(const struct fx_dump *d, const char *name);
/* "name:old>new,..." for every differing field ("-" if none). */
void fx_dump_diff(const struct fx_dump *a, const struct fx_dump *b, char *out,
		  size_t len);

/* ---- oracle files ---- */
/* Path of @p file in the oracle directory ($QP_ORACLE_DIR). */
const char *fx_oracle_path(const char *file, char *buf, size_t len);

/* Split @p line in place at tabs; returns the number of fields. */
unsigned int fx_split_tabs(char *line, char **field, unsigned int max);

/* One line of modify_qp_rxe.tsv. */
struct fx_probe {
	int id;
	char section[16];
	enum ibv_qp_type type;
	int from;
	bool has_to;
	long to;
	bool has_mask;
	uint32_t mask;
	char variant[96];
	char overrides[256];
	char tbl[8];
	int rc;                 /* errno value, 0 for OK */
	int errno_after;        /* errno after the call (0: libibverbs refused
				 * without a system call, or success) */
	int ibqp_state;         /* libibverbs's cached ibv_qp.state after it */
	int state_after;        /* q_state_mask_STATE, or -1 */
	char changed[1024];
	char events[64];
};
/* Reads every probe; returns the count (also in *n), exits the test on error. */
struct fx_probe *fx_load_probes(unsigned int *n, unsigned int *summary_probes);

/* Build the request a probe made: attribute values and mask. */
void fx_probe_request(const struct fx_probe *p, struct ibv_qp_attr *a,
		      int *mask);

#endif
