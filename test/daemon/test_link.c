/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Link-state tracking (app/roce-daemon/link.c) against a fake link source:
 * readings, transitions and their counters, LSC interrupts between polls,
 * read errors, and recover attempts for a port that stays down.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "link.h"

#define MS 1000000ull

static struct {
	struct link_sample s[LINK_MAX_PORTS];
	int read_rc[LINK_MAX_PORTS];
	unsigned int reads[LINK_MAX_PORTS];
	int recover_rc[LINK_MAX_PORTS];
	unsigned int recovers[LINK_MAX_PORTS];
	/* changes seen */
	unsigned int n;
	unsigned int port[32];
	enum link_change what[32];
	struct link_sample old[32], now[32];
} f;

static int
fake_read(void *arg, unsigned int i, struct link_sample *out)
{
	cr_assert_eq(arg, &f);
	f.reads[i]++;
	if (f.read_rc[i] != 0)
		return f.read_rc[i];
	*out = f.s[i];
	return 0;
}

static int
fake_recover(void *arg, unsigned int i, uint64_t now_ns)
{
	(void)arg;
	(void)now_ns;
	f.recovers[i]++;
	return f.recover_rc[i];
}

static void
changed(void *arg, unsigned int i, enum link_change what, const struct link_sample *old,
	const struct link_sample *now)
{
	cr_assert_eq(arg, &f);
	cr_assert_lt(f.n, 32u);
	f.port[f.n] = i;
	f.what[f.n] = what;
	f.old[f.n] = *old;
	f.now[f.n] = *now;
	f.n++;
}

static struct link_tracker t;

static void
setup_n(unsigned int n, bool with_recover)
{
	struct link_source src = { .read = fake_read, .recover = with_recover ? fake_recover : NULL,
				   .arg = &f };

	memset(&f, 0, sizeof(f));
	cr_assert_eq(link_tracker_init(&t, n, &src, 100 * MS, 500 * MS), 0);
	link_tracker_on_change(&t, changed, &f);
}

Test(link, init_rejects_bad_arguments)
{
	struct link_source src = { .read = fake_read, .arg = &f };
	struct link_source none = { 0 };

	cr_assert_eq(link_tracker_init(&t, LINK_MAX_PORTS + 1, &src, 1, 1), -EINVAL);
	cr_assert_eq(link_tracker_init(&t, 1, &none, 1, 1), -EINVAL);
	cr_assert_eq(link_tracker_init(&t, 1, NULL, 1, 1), -EINVAL);
	cr_assert_eq(link_tracker_init(&t, LINK_MAX_PORTS, &src, 1, 1), 0);
}

Test(link, first_reading_is_reported_but_not_counted)
{
	setup_n(2, false);
	f.s[0] = (struct link_sample){ .up = true, .speed_mbps = 10000, .mtu = 1500 };
	f.s[1] = (struct link_sample){ .up = false };
	cr_assert_eq(link_tick(&t, 0), 2);
	cr_assert_eq(f.n, 2);
	cr_assert_eq(f.what[0], LINK_FIRST);
	cr_assert_eq(f.what[1], LINK_FIRST);
	cr_assert(f.now[0].up);
	cr_assert_eq(f.now[0].speed_mbps, 10000);
	cr_assert_not(f.now[1].up);
	cr_assert_eq(t.port[0].ups + t.port[0].downs + t.port[1].ups + t.port[1].downs, 0);
	/* nothing changed: nothing reported */
	cr_assert_eq(link_tick(&t, 200 * MS), 0);
	cr_assert_eq(f.n, 2);
}

Test(link, transitions_are_reported_counted_and_polled_on_time)
{
	setup_n(1, false);
	f.s[0] = (struct link_sample){ .up = true, .speed_mbps = 25000, .mtu = 9000 };
	link_tick(&t, 0);
	cr_assert_eq(f.reads[0], 1);

	f.s[0].up = false;
	f.s[0].speed_mbps = 0;
	/* before the poll period: not read yet */
	cr_assert_eq(link_tick(&t, 50 * MS), 0);
	cr_assert_eq(f.reads[0], 1);
	cr_assert_eq(link_tick(&t, 100 * MS), 1);
	cr_assert_eq(f.reads[0], 2);
	cr_assert_eq(f.what[1], LINK_DOWN);
	cr_assert(f.old[1].up);
	cr_assert_not(f.now[1].up);
	cr_assert_eq(t.port[0].downs, 1);
	cr_assert_eq(t.port[0].changed_ns, 100 * MS);

	f.s[0] = (struct link_sample){ .up = true, .speed_mbps = 25000, .mtu = 9000 };
	cr_assert_eq(link_tick(&t, 200 * MS), 1);
	cr_assert_eq(f.what[2], LINK_UP);
	cr_assert_eq(t.port[0].ups, 1);

	/* same state, other speed (autonegotiation) or MTU: an attribute change */
	f.s[0].speed_mbps = 10000;
	cr_assert_eq(link_tick(&t, 300 * MS), 1);
	cr_assert_eq(f.what[3], LINK_ATTR);
	f.s[0].mtu = 1500;
	cr_assert_eq(link_tick(&t, 400 * MS), 1);
	cr_assert_eq(f.what[4], LINK_ATTR);
	cr_assert_eq(f.now[4].mtu, 1500);
	cr_assert_eq(t.port[0].ups, 1, "attribute changes are not transitions");
	cr_assert_eq(t.port[0].downs, 1);
}

Test(link, lsc_interrupt_reads_the_port_before_the_poll_period)
{
	setup_n(2, false);
	f.s[0].up = f.s[1].up = true;
	link_tick(&t, 0);
	f.s[1].up = false;
	link_lsc_raise(&t, 1);
	link_lsc_raise(&t, 7); /* no such port: ignored */
	cr_assert_eq(link_tick(&t, 1 * MS), 1);
	cr_assert_eq(f.reads[0], 1, "only the port that raised it is read");
	cr_assert_eq(f.reads[1], 2);
	cr_assert_eq(f.what[2], LINK_DOWN);
	cr_assert_eq(f.port[2], 1);
	/* consumed: the next tick before the period reads nothing */
	cr_assert_eq(link_tick(&t, 2 * MS), 0);
	cr_assert_eq(f.reads[1], 2);
}

Test(link, a_failed_read_keeps_the_state_and_is_counted)
{
	setup_n(1, false);
	f.s[0].up = true;
	link_tick(&t, 0);
	f.read_rc[0] = -EIO;
	f.s[0].up = false;
	cr_assert_eq(link_tick(&t, 100 * MS), 0);
	cr_assert(t.port[0].cur.up);
	cr_assert_eq(t.port[0].read_errors, 1);
	f.read_rc[0] = 0;
	cr_assert_eq(link_tick(&t, 200 * MS), 1);
	cr_assert_eq(f.what[1], LINK_DOWN);
}

Test(link, a_down_port_gets_recover_attempts_every_retry_period)
{
	setup_n(2, true);
	f.s[0].up = false;      /* a memif client without its server */
	f.s[1].up = false;      /* a NIC without a cable: nothing to recover */
	f.recover_rc[1] = -ENOTSUP;
	link_tick(&t, 0);
	cr_assert_eq(f.recovers[0], 0, "found down: a connection may be under way, wait a period");
	link_tick(&t, 100 * MS);
	cr_assert_eq(f.recovers[0], 0, "not before the retry period");
	link_tick(&t, 500 * MS);
	cr_assert_eq(f.recovers[0], 1);
	cr_assert_eq(f.recovers[1], 1);
	link_tick(&t, 900 * MS);
	cr_assert_eq(f.recovers[0], 1);
	link_tick(&t, 1000 * MS);
	cr_assert_eq(f.recovers[0], 2);
	cr_assert_eq(f.recovers[1], 1, "-ENOTSUP: not asked again during this outage");
	f.recover_rc[0] = -ECONNREFUSED;
	link_tick(&t, 1500 * MS);
	cr_assert_eq(t.port[0].recover_tries, 3);
	cr_assert_eq(t.port[0].recover_errors, 1);

	/* up: no more attempts; down again: attempts again, for both, a period later */
	f.s[0].up = f.s[1].up = true;
	link_tick(&t, 1600 * MS);
	link_tick(&t, 2100 * MS);
	cr_assert_eq(f.recovers[0], 3);
	f.s[0].up = f.s[1].up = false;
	link_tick(&t, 2200 * MS);
	cr_assert_eq(f.recovers[0], 3);
	link_tick(&t, 2700 * MS);
	cr_assert_eq(f.recovers[0], 4);
	cr_assert_eq(f.recovers[1], 2);
}

Test(link, apply_without_a_tracker)
{
	struct link_port lp;
	struct link_sample up = { .up = true, .speed_mbps = 100, .mtu = 1500 }, down = { 0 };

	memset(&lp, 0, sizeof(lp));
	cr_assert_eq(link_apply(&lp, &down, 5), LINK_FIRST);
	cr_assert_eq(link_apply(&lp, &down, 6), LINK_SAME);
	cr_assert_eq(link_apply(&lp, &up, 7), LINK_UP);
	cr_assert_eq(link_apply(&lp, &up, 8), LINK_SAME);
	cr_assert_eq(link_apply(&lp, &down, 9), LINK_DOWN);
	cr_assert_eq(lp.ups, 1);
	cr_assert_eq(lp.downs, 1);
	cr_assert_eq(lp.changed_ns, 9);
	cr_assert_str_eq(link_change_name(LINK_DOWN), "down");
	cr_assert_str_eq(link_change_name((enum link_change)99), "?");
}
