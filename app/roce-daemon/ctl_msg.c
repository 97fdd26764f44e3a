/* SPDX-License-Identifier: BSD-3-Clause */
/* Control messages (ctl_msg.h): their names, from CTL_MSG_LIST. */
#include "ctl_msg.h"

const char *
ctl_msg_name(unsigned int t)
{
	static const char *const name[] = {
#define CTL_MSG_NAME(sym, str) [CTL_MSG_##sym] = str,
		CTL_MSG_LIST(CTL_MSG_NAME)
#undef CTL_MSG_NAME
	};

	return t < sizeof(name) / sizeof(name[0]) ? name[t] : "?";
}
