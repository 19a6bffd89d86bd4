/* corralctl-gc.h — `corralctl gc [--dry-run]`: delete VM folders without a domain and images
 * nothing uses (corral-vm-gc.h), printing what was freed.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

/* argv[0] is "gc". */
int corralctl_gc_main (int argc, char **argv);
