/* assistant-sandbox-log.h — what the sandbox recorded while a tool ran, and why it refused.
 *
 * The host's file server appends to VM_DIR/audit.jsonl and the egress daemon to
 * VM_DIR/egress.jsonl. Before a tool call the loop marks both files' ends; after it, it reads
 * the records written since (bounded; lines that are not JSON objects are skipped) and turns
 * refusals into plain sentences for the model: what was blocked, by which rule, what the person
 * could change.
 *
 * The logs rotate (corral-audit-log.h: FILE becomes FILE.1, ...), so a mark names its file by
 * inode as well as offset; reading follows the marked file into the older generations and on
 * into the new file. A line with "count": N stands for N repeats of a refusal whose first
 * occurrence was its own line before it: it is summed up, never explained a second time.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <cjson/cJSON.h>
#include <glib.h>

G_BEGIN_DECLS

/* At most this much of each log is read per call; beyond it, records are skipped (counted). */
#define ASSISTANT_SANDBOX_LOG_MAX_READ ((gsize) 1024 * 1024)

typedef struct {
        guint64 offset; /* where the next unread record starts */
        guint64 dev, ino; /* in this file (0: there was none) */
} AssistantLogPos;

typedef struct {
        AssistantLogPos audit;
        AssistantLogPos egress;
} AssistantLogMark;

/* The current ends of both logs (offset 0 and no file for a missing one). */
void assistant_sandbox_mark (const char *vm_dir, AssistantLogMark *mark);

/* Records written since mark, oldest first, each with "source": "files" or "egress" (the egress
 * records get it added), across rotations; mark moves past them. A partial last line is left
 * for later. ret_skipped: bytes skipped because the logs grew faster than the bound (the
 * oldest go first). (transfer full) */
GPtrArray *
assistant_sandbox_read_since (const char *vm_dir, AssistantLogMark *mark, guint64 *ret_skipped);

/* TRUE for a refusal (file server "refused", egress "denied"). */
gboolean assistant_sandbox_is_refusal (const cJSON *record);
/* The start of every refusal explained for the model (translated). */
const char *assistant_sandbox_explanation_prefix (void);
/* How many occurrences record stands for ("count", 1 without it). */
guint64 assistant_sandbox_count (const cJSON *record);
/* A refusal explained for the model; NULL for other records and for folded repeats (a
 * "count" line), whose first occurrence was explained already. (transfer full) */
char *assistant_sandbox_explain (const cJSON *record);
/* One line for a tool card: "unlink proj/notes.txt: refused (no-delete)", "GET example.com:443
 * allowed". (transfer full) */
char *assistant_sandbox_summary (const cJSON *record);
/* The file or folder a shared folder's record says the guest changed, as the workspace names
 * it ("/workspace/proj/notes.txt"; a rename's new name), control characters blanked; NULL for
 * refusals, errors, network records, originals kept and the guest agent's own temporary files
 * (".NAME.corral-HEX", renamed over NAME when a transfer completes). (transfer full) */
char *assistant_sandbox_changed_path (const cJSON *record);

G_END_DECLS
