/* fs-audit.h — the file server's part of the session audit log: one JSON object per line for
 * every change a guest made through a share and every refusal, with the rule that refused it.
 *
 * {"time":"2026-11-30T21:03:04.123Z","source":"files","share":"proj","op":"unlink",
 *  "path":"notes/old.txt","result":"refused","rule":"no-delete","errno":"EPERM",
 *  "message":"Blocked by the sandbox: ..."}
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>
#include <stdint.h>

typedef struct _FsAudit FsAudit;

/* Appends to path (created 0600); NULL path: a disabled log. */
FsAudit *fs_audit_open (const char *path, GError **error);
void fs_audit_close (FsAudit *a);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FsAudit, fs_audit_close)

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
