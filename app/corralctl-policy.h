/* corralctl-policy.h — the organisation's managed policy as Corral reads it
 * (util/corral-policy.h), for IT departments:
 *
 *   corralctl policy show [--json]   every setting, its value, locked or a default, and the
 *                                    files it comes from; exit 125 when the policy is damaged
 *   corralctl policy check FILE...   the files as if they were the policy, merged in the order
 *                                    given: "FILE: ok" or the error; exit 0 or 1
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

/* argv[0] is "policy". */
int corralctl_policy_main (int argc, char **argv);
