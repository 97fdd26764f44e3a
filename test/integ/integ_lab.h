/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test/integ: what the lab-driving suites (test_integ.c, test_rdmacm.c)
 * share: the environment meson gives them and the lab.sh command line.
 */
#ifndef TEST_INTEG_LAB_H
#define TEST_INTEG_LAB_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * Record an excused rerun for the CI table: Criterion's TAP output drops a
 * test's own output and its cr_log lines, so scripts/ci_report.py reads
 * ROCE_RETRY_LOG (meson-logs/retried.txt, "TEST<TAB>what") instead.
 */
static inline void
retry_record(const char *test, const char *what, const char *why)
{
	const char *path = getenv("ROCE_RETRY_LOG");
	FILE *f = path ? fopen(path, "a") : NULL;

	if (f) {
		fprintf(f, "%s\t%s: %s\n", test, what, why);
		fclose(f);
	}
}

/*
 * perftest calibrates its cycle counter against gettimeofday() before it
 * reports (get_cpu_mhz(): a linear fit of samples); a process descheduled
 * while it samples gets r^2 < 0.9, prints this and exits 1 with "Can't
 * produce a report", whatever the transfer did, even with -F.
 */
static inline bool
perftest_clock_failed(const char *o)
{
	return strstr(o, "Correlation coefficient r^2") != NULL;
}

#endif /* TEST_INTEG_LAB_H */
