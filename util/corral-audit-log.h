/* corral-audit-log.h — an append-only JSON-lines log that a guest cannot grow without bound.
 *
 * The host programs that record what a guest did write through this: corral-fsd's audit.jsonl
 * and corral-egressd's egress.jsonl. The guest decides how many records there are, so:
 *
 *  - Rotation: before a line would take FILE past max_bytes, FILE.(n-1) becomes FILE.n, ...,
 *    FILE becomes FILE.1 and a new FILE starts; the oldest of `generations` older files goes.
 *    On disk one log never holds more than (generations + 1) × max_bytes. Readers follow a
 *    file by its inode across the rename (assistant-sandbox-log.c).
 *  - Folding: a record with a fold key (refusals, failures) that comes less than
 *    CORRAL_AUDIT_LOG_FOLD_GAP_US after an identical one is not written at once. Such repeats
 *    are counted and written as one line, the last of them with "count": N (the occurrences
 *    that line stands for; a line without "count" stands for one), when they pause for that
 *    gap, at the latest CORRAL_AUDIT_LOG_FOLD_HOLD_US after the first of them, and at close.
 *    The first occurrence is always written at once, so a reader that looks right after a
 *    command finds its refusal. Records without a key (changes) are never folded.
 *
 * Each line is one write() on an O_APPEND fd. Not thread-safe: callers hold their own lock.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <cjson/cJSON.h>
#include <glib.h>

G_BEGIN_DECLS

#define CORRAL_AUDIT_LOG_MAX_BYTES ((guint64) 8 * 1024 * 1024)
#define CORRAL_AUDIT_LOG_GENERATIONS 3
#define CORRAL_AUDIT_LOG_FOLD_GAP_US (G_USEC_PER_SEC)
#define CORRAL_AUDIT_LOG_FOLD_HOLD_US (60 * G_USEC_PER_SEC)
/* Distinct fold keys remembered at once; past it, pending counts are written and forgotten. */
#define CORRAL_AUDIT_LOG_FOLD_KEYS 256

typedef struct _CorralAuditLog CorralAuditLog;

/* Appends to path (created 0600, never through a symlink), with the default limits. */
CorralAuditLog *corral_audit_log_open (const char *path, GError **error);
/* Writes every pending count, then closes. */
void corral_audit_log_close (CorralAuditLog *log);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralAuditLog, corral_audit_log_close)

/* generations >= 1; max_bytes: the largest a file grows before it rotates. */
void corral_audit_log_set_limits (CorralAuditLog *log, guint64 max_bytes, guint generations);

/* copy: every line written from now on also goes to the system journal (the managed policy's
 * audit.copyTo "journal"; SYSLOG_IDENTIFIER=corral-audit, CORRAL_AUDIT_LOG=the file, MESSAGE=
 * the line), through $CORRAL_JOURNAL_SOCKET when set (tests), else journald's socket. A
 * journal that is not there or refuses a line loses that copy, never the file's line. */
gboolean corral_audit_log_set_journal (CorralAuditLog *log, gboolean copy, GError **error);

/* Writes record (transfer full) as one line, or folds it (fold_key: NULL never folds). */
void corral_audit_log_append (CorralAuditLog *log, cJSON *record, const char *fold_key);

/* Writes the counts whose time has come; returns the monotonic time (µs) when the next one is
 * due, or -1 when none is pending. */
gint64 corral_audit_log_flush_due (CorralAuditLog *log);
/* When the next pending count is due (monotonic µs), or -1. */
gint64 corral_audit_log_next_due (CorralAuditLog *log);
/* Writes every pending count now. */
void corral_audit_log_flush (CorralAuditLog *log);

G_END_DECLS
