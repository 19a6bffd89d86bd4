/* corralctl-net.h — `corralctl net preset|allow|deny|ls VM ...`: a VM's network policy, kept in
 * <state dir>/vms/VM/egress-policy.json, which the VM's egress proxy reloads when it changes
 * (so a change applies to the running session at once).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

/* argv[0] is "net". */
int corralctl_net_main (int argc, char **argv);
