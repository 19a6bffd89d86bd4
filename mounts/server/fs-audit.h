/* fs-audit.h — the file server's part of the session audit log: one JSON object per line for
 * every change a guest made through a share and every refusal, with the rule that refused it.
 *
 * {"time":"2026-11-30T21:03:04.123Z","source":"files","share":"proj","op":"unlink",
 *  "path":"notes/old.txt","result":"refused","rule":"no-delete","errno":"EPERM",
 *  "message":"Blocked by the sandbox: ..."}
 *
 * The guest decides how many lines there are, so the log is bounded (corral-audit-log.h):
 * it rotates at 8 MiB into audit.jsonl.1 ... .3, and a refusal or failure that repeats an
 * identical one within a second is folded into a later line with "count": N. Changes ("ok")
 * are always written, each as it happens.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>
#include <stdint.h>

typedef struct _FsAudit FsAudit;

/* Appends to path (created 0600); NULL path: a disabled log. Pending counts are written on a
 * timer in the thread-default main context of the caller, and at close. */
FsAudit *fs_audit_open (const char *path, GError **error);
void fs_audit_close (FsAudit *a);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FsAudit, fs_audit_close)

/* The size at which the file rotates and how many older files stay (tests; defaults above). */
void fs_audit_set_limits (FsAudit *a, uint64_t max_bytes, unsigned generations);
/* Writes every pending count now. */
void fs_audit_flush (FsAudit *a);
/* Every line from now on also to the system journal (corral_audit_log_set_journal()). */
void fs_audit_set_journal (FsAudit *a, gboolean copy);

typedef struct {
        const char *share;
        const char *op;
        const char *path; /* relative to the share; may be non-UTF-8 (made valid) */
        const char *path2; /* rename target, kept copy */
        const char *result; /* "ok", "refused", "error" */
        const char *rule; /* refusals */
        int errnum; /* refusals and errors */
        const char *message; /* refusals: what was blocked and what the person can do */
        int64_t size; /* -1: none */
} FsAuditRecord;

void fs_audit_write (FsAudit *a, const FsAuditRecord *rec);

/* The organisation's policy the server runs under, as the task's first record:
 * {"time": ..., "source": "policy", "digest": SHA256, "sources": [FILE...]} (no files: no
 * policy; corral-policy.h). */
void fs_audit_write_policy (FsAudit *a, const char *digest, const char *const *sources);
