/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * doc/qp-state-machine.md prints the transition table; this test prints it
 * again from qp_sem_transition() and requires the two to be identical, so
 * the document cannot drift from the code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "qp_fixture.h"

#define BEGIN "<!-- begin: transition table (test/qp/test_qp_doc.c checks it) -->"
#define END   "<!-- end: transition table -->"

static void
cat_bits(char *out, size_t len, int mask)
{
	size_t used = strlen(out);
	bool first = true;

	if (mask == 0) {
		snprintf(out + used, len - used, "–");
		return;
	}
	for (unsigned int b = 1; b < 32; b++) {
		if (!(mask & (int)(1u << b)))
			continue;
		used += (size_t)snprintf(out + used, len - used, "%s%s",
					 first ? "" : ", ", qp_sem_attr_name(b));
		first = false;
	}
}

/* The table as markdown: one row per valid move, "required / optional". */
static void
table_markdown(char *out, size_t len)
{
	size_t used = 0;

	used += (size_t)snprintf(out + used, len - used,
		"| move | RC | UC | UD | RAW_PACKET | XRC_INI | XRC_TGT |\n"
		"| --- | --- | --- | --- | --- | --- | --- |\n");
	for (int from = IBV_QPS_RESET; from <= IBV_QPS_ERR; from++) {
		for (int to = IBV_QPS_RESET; to <= IBV_QPS_ERR; to++) {
			const struct qp_sem_transition *t = qp_sem_transition(from, to);

			if (!t->valid)
				continue;
			used += (size_t)snprintf(out + used, len - used, "| %s→%s |",
						 qp_sem_state_name(from),
						 qp_sem_state_name(to));
			for (int ti = 0; ti < QP_SEM_NTYPES; ti++) {
				char cell[512] = " ";

				cat_bits(cell, sizeof(cell), t->req[ti]);
				strcat(cell, " / ");
				cat_bits(cell, sizeof(cell), t->opt[ti]);
				used += (size_t)snprintf(out + used, len - used, "%s |",
							 cell);
			}
			used += (size_t)snprintf(out + used, len - used, "\n");
		}
	}
}

Test(qp_doc, table_matches_code)
{
	const char *path = getenv("QP_DOC");
	static char want[32768], have[32768];
	char line[2048];
	size_t used = 0;
	int inside = 0;
	FILE *f;

	cr_assert(path != NULL, "QP_DOC is not set (meson passes it)");
	f = fopen(path, "r");
	cr_assert(f != NULL, "cannot open %s", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, BEGIN, strlen(BEGIN)) == 0) {
			inside = 1;
			continue;
		}
		if (strncmp(line, END, strlen(END)) == 0) {
			inside = 2;
			break;
		}
		if (inside == 1 && used + strlen(line) < sizeof(have)) {
			memcpy(have + used, line, strlen(line) + 1);
			used += strlen(line);
		}
	}
	fclose(f);
	cr_assert_eq(inside, 2, "%s lacks the table markers", path);
	table_markdown(want, sizeof(want));
	if (strcmp(want, have) != 0)
		cr_log_info("the table as the code has it:\n%s", want);
	cr_expect_str_eq(have, want, "doc table differs from qp_state.c");
}
