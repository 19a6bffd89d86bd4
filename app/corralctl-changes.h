/* corralctl-changes.h — `corralctl changes VM [--json]`: what the assistant changed in a task's
 * shared folders, read from the change journal its file server keeps (fs-journal.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

/* argv[0] is "changes". */
int corralctl_changes_main (int argc, char **argv);
