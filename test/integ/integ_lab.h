/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test/integ: what the lab-driving suites (test_integ.c, test_rdmacm.c)
 * share: the environment meson gives them and the lab.sh command line.
 */
#ifndef TEST_INTEG_LAB_H
#define TEST_INTEG_LAB_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

/* A variable meson's test() env sets; the test fails without it. */
static inline const char *
env(const char *name)
{
	const char *v = getenv(name);

	cr_assert_not_null(v, "%s not set", name);
	return v;
}

/* "env LAB_BUILD=... scripts/lab.sh -n NAME" for the lab called @p name. */
static inline const char *
lab_cmd_of(const char *name)
{
	static char cmd[512];

	snprintf(cmd, sizeof(cmd), "env LAB_BUILD=%s %s/scripts/lab.sh -n %s", env("ROCE_BUILD_DIR"),
		 env("ROCE_SOURCE_DIR"), name);
	return cmd;
}

#endif /* TEST_INTEG_LAB_H */
