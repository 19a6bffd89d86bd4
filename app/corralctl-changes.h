/* corralctl-changes.h — what the assistant changed in a task's shared folders, and the person's
 * answer to it, from the change journal its file server keeps (fs-journal.h):
 *
 *   corralctl changes VM [--json]
 *   corralctl diff VM [SHARE/PATH]...
 *   corralctl undo VM SHARE/PATH... | --all [--force]
 *   corralctl keep VM
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

/* argv[0] is "changes", "diff", "undo" or "keep". */
int corralctl_changes_main (int argc, char **argv);
