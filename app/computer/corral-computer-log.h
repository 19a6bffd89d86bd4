/* corral-computer-log.h — every computer action, whoever asked for it, in the VM folder's
 * computer.jsonl (beside the file server's audit.jsonl): when, by whom ("assistant",
 * "corralctl", "person"), the input as sent, and what came of it. Copied to the journal too
 * when the organisation's policy says so (audit.copyTo). The screenshots are not kept.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <cjson/cJSON.h>
#include <glib.h>

G_BEGIN_DECLS

/* Appends one line; a log that cannot be written is said with g_warning (the action has
 * happened either way). input: the action's JSON (NULL: none, e.g. the person taking the
 * screen); result: its text; error: why it failed. */
void corral_computer_log (const char *vm_dir,
                          const char *by,
                          const cJSON *input,
                          const char *result,
                          const GError *error);

G_END_DECLS
