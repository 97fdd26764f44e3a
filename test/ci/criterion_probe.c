/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the installed Criterion does with a passing test that logs a
 * warning or whose worker dies by a signal in its teardown: test/ci's
 * check_criterion.py runs these cases one at a time (--filter) and checks
 * the exit status and what reaches stderr. Every case passes its body.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <signal.h>
#include <stdio.h>

Test(probe, passes)
{
	cr_assert(1);
}

Test(probe, logs_info)
{
	cr_log_info("probe: an info line");
	cr_assert(1);
}

Test(probe, prints_to_stdout)
{
	printf("probe: a line of the case on stdout\n");
	cr_assert(1);
}

Test(probe, logs_warn)
{
	cr_log_warn("probe: a warning line");
	cr_assert(1);
}

static void
die_by_signal(void)
{
	raise(SIGTERM);
}

Test(probe, dies_in_fini, .fini = die_by_signal)
{
	cr_assert(1);
}

static void
fail_expect(void)
{
	cr_expect(0, "probe: a failed expectation in fini");
}

Test(probe, fails_in_fini, .fini = fail_expect)
{
	cr_assert(1);
}
