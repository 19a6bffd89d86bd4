/* assistant-sandbox-log.c — reading the VM's audit logs and explaining refusals.
 *
 * The logs are written by host processes, but what they quote (paths, host names) comes from
 * the guest: everything is type-checked and cut to a bounded length before it is used.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "assistant-sandbox-log.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gi18n-lib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral-audit-log.h"

#define MAX_FIELD 512

static void
pos_of (const char *vm_dir, const char *name, AssistantLogPos *pos)
{
        g_autofree char *path = g_build_filename (vm_dir, name, NULL);
        struct stat st;

        *pos = (AssistantLogPos){ 0 };
        if (stat (path, &st) == 0 && S_ISREG (st.st_mode))
                *pos = (AssistantLogPos){ (guint64) st.st_size, (guint64) st.st_dev,
                                          (guint64) st.st_ino };
}

void
assistant_sandbox_mark (const char *vm_dir, AssistantLogMark *mark)
{
        *mark = (AssistantLogMark){ { 0 } };
        if (!vm_dir)
                return;
        pos_of (vm_dir, "audit.jsonl", &mark->audit);
        pos_of (vm_dir, "egress.jsonl", &mark->egress);
}

static void
parse_lines (const char *data, gsize len, const char *source, GPtrArray *out)
{
        const char *end = data + len;

        while (data < end) {
                const char *nl = memchr (data, '\n', end - data);
                cJSON *rec = cJSON_ParseWithLength (data, nl - data);

                if (cJSON_IsObject (rec)) {
                        if (!cJSON_GetObjectItemCaseSensitive (rec, "source"))
                                cJSON_AddStringToObject (rec, "source", source);
                        g_ptr_array_add (out, rec);
                } else {
                        cJSON_Delete (rec);
                }
                data = nl + 1;
        }
}

/* One file of a log to read, from start to end. */
typedef struct {
        int fd;
        struct stat st;
        guint64 start, end;
} Piece;

static gboolean
piece_open (const char *path, Piece *ret)
{
        ret->fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (ret->fd < 0)
                return FALSE;
        if (fstat (ret->fd, &ret->st) < 0 || !S_ISREG (ret->st.st_mode)) {
                close (ret->fd);
                ret->fd = -1;
                return FALSE;
        }
        ret->start = 0;
        ret->end = (guint64) ret->st.st_size;
        return TRUE;
}

static gboolean
piece_is (const Piece *p, const AssistantLogPos *pos)
{
        return (guint64) p->st.st_dev == pos->dev && (guint64) p->st.st_ino == pos->ino;
}

/* The older generations from the one holding pos (or all of them, when it has rotated out)
 * onwards, oldest first, in pieces[]; returns how many. */
static guint
older_pieces (const char *path, const AssistantLogPos *pos, Piece *pieces)
{
        Piece found[CORRAL_AUDIT_LOG_GENERATIONS];
        guint n = 0, k;

        for (k = 1; k <= CORRAL_AUDIT_LOG_GENERATIONS; k++) {
                g_autofree char *old = g_strdup_printf ("%s.%u", path, k);

                if (!piece_open (old, &found[n]))
                        continue;
                if (piece_is (&found[n], pos)) {
                        found[n].start = MIN (pos->offset, found[n].end);
                        n++;
                        break;
                }
                n++;
        }
        for (k = 0; k < n; k++)
                pieces[k] = found[n - 1 - k];
        return n;
}

/* Reads complete lines since *pos from each piece, at most ASSISTANT_SANDBOX_LOG_MAX_READ bytes
 * (the newest); returns the bytes skipped. The last piece is the current file. */
static guint64
read_pieces (Piece *pieces, guint n, const char *source, AssistantLogPos *pos, GPtrArray *out)
{
        guint64 total = 0, skipped = 0;

        for (guint i = 0; i < n; i++)
                total += pieces[i].end - pieces[i].start;
        for (guint i = 0; i < n && total > ASSISTANT_SANDBOX_LOG_MAX_READ; i++) {
                guint64 cut = MIN (pieces[i].end - pieces[i].start,
                                   total - ASSISTANT_SANDBOX_LOG_MAX_READ);

                pieces[i].start += cut;
                skipped += cut;
                total -= cut;
        }
        for (guint i = 0; i < n; i++) {
                Piece *p = &pieces[i];
                gsize len = (gsize) (p->end - p->start);
                g_autofree char *buf = len ? g_malloc (len) : NULL;
                gssize got = len ? pread (p->fd, buf, len, (off_t) p->start) : 0;
                const char *last_nl = got > 0 ? memrchr (buf, '\n', (gsize) got) : NULL;
                guint64 used = last_nl ? (guint64) (last_nl - buf) + 1 : 0;

                if (used)
                        parse_lines (buf, (gsize) used, source, out);
                if (i == n - 1)
                        *pos = (AssistantLogPos){ p->start + used, (guint64) p->st.st_dev,
                                                  (guint64) p->st.st_ino };
        }
        return skipped;
}

/* Reads complete lines since *pos; returns the bytes skipped. */
static guint64
read_log (const char *vm_dir,
          const char *name,
          const char *source,
          AssistantLogPos *pos,
          GPtrArray *out)
{
        g_autofree char *path = g_build_filename (vm_dir, name, NULL);
        Piece pieces[CORRAL_AUDIT_LOG_GENERATIONS + 1];
        Piece current;
        guint n = 0;
        guint64 skipped;

        if (!piece_open (path, &current))
                return 0; /* gone, or between a rotation's rename and the new file: later */
        if (pos->ino == 0 || piece_is (&current, pos)) {
                /* A log that shrank in place was replaced: start again from its end. */
                current.start = MIN (pos->offset, current.end);
        } else {
                /* Rotated since the mark: the marked file is one of the older ones now. */
                n = older_pieces (path, pos, pieces);
        }
        pieces[n++] = current;
        skipped = read_pieces (pieces, n, source, pos, out);
        for (guint i = 0; i < n; i++)
                close (pieces[i].fd);
        return skipped;
}

GPtrArray *
assistant_sandbox_read_since (const char *vm_dir, AssistantLogMark *mark, guint64 *ret_skipped)
{
        GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) cJSON_Delete);
        guint64 skipped = 0;

        if (vm_dir) {
                skipped += read_log (vm_dir, "audit.jsonl", "files", &mark->audit, out);
                skipped += read_log (vm_dir, "egress.jsonl", "egress", &mark->egress, out);
        }
        if (ret_skipped)
                *ret_skipped = skipped;
        return out;
}

/* A field, bounded and printable; "" when absent. (transfer full) */
static char *
field (const cJSON *rec, const char *key)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (rec, key);
        g_autofree char *valid = NULL;
        GString *out;

        if (cJSON_IsNumber (item))
                return g_strdup_printf ("%.0f", item->valuedouble);
        if (!cJSON_IsString (item))
                return g_strdup ("");
        valid = g_utf8_make_valid (item->valuestring, -1);
        out = g_string_new (NULL);
        for (const char *p = valid; *p && out->len < MAX_FIELD; p = g_utf8_next_char (p)) {
                gunichar c = g_utf8_get_char (p);
                g_string_append_unichar (out, g_unichar_iscntrl (c) ? ' ' : c);
        }
        return g_string_free (out, FALSE);
}

static gboolean
is_source (const cJSON *rec, const char *source)
{
        const cJSON *s = cJSON_GetObjectItemCaseSensitive (rec, "source");

        return cJSON_IsString (s) && g_str_equal (s->valuestring, source);
}

gboolean
assistant_sandbox_is_refusal (const cJSON *record)
{
        g_autofree char *result = field (record, "result");
        g_autofree char *decision = field (record, "decision");

        if (is_source (record, "files"))
                return g_str_equal (result, "refused");
        if (is_source (record, "egress"))
                return g_str_equal (decision, "denied");
        return FALSE;
}

static char *
explain_files (const cJSON *rec)
{
        g_autofree char *share = field (rec, "share");
        g_autofree char *op = field (rec, "op");
        g_autofree char *path = field (rec, "path");
        g_autofree char *rule = field (rec, "rule");
        g_autofree char *message = field (rec, "message");
        g_autofree char *vm_path = g_strdup_printf ("/workspace/%s/%s", share, path);
        /* The file server's words, in its (the person's) language: the same prefix. */
        g_autofree char *prefix = g_strconcat (assistant_sandbox_explanation_prefix (), " ", NULL);
        const char *hint;

        if (g_str_equal (rule, "no-delete"))
                hint = _ ("If it really must go, call request_approval with action “delete” and "
                          "this path to ask the person to delete it; do not try other ways.");
        else if (g_str_equal (rule, "read-only"))
                hint = _ ("The person can make the folder editable; tell them why you need it "
                          "instead of retrying.");
        else if (g_str_equal (rule, "protected-path"))
                hint = _ ("This path stays read-only in every mode; do not retry.");
        else
                hint = _ ("Do not retry the same operation.");
        /* The file server's message already starts the same way. */
        if (g_str_has_prefix (message, prefix))
                memmove (message, message + strlen (prefix),
                         strlen (message) - strlen (prefix) + 1);
        return g_strdup_printf (_ ("Blocked by the sandbox: %s of %s was refused (rule “%s”). "
                                   "%s %s"),
                                op, vm_path, rule, message, hint);
}

/* Refusals that no approval changes: what the credential rules and the VM's network session
 * refused (SECURITY.md K4, K5, K9), or a host that cannot be reached. */
static gboolean
credential_rule (const char *rule)
{
        return g_str_has_prefix (rule, "credential-") || g_str_has_prefix (rule, "upstream-") ||
               g_str_equal (rule, "unknown-placeholder") ||
               g_str_equal (rule, "response-unmaskable");
}

static char *
explain_egress (const cJSON *rec)
{
        g_autofree char *host = field (rec, "host");
        g_autofree char *port = field (rec, "port");
        g_autofree char *rule = field (rec, "rule");
        g_autofree char *reason = field (rec, "reason");
        const char *sep = *reason ? ", " : "";

        if (g_str_equal (rule, "secret-from-guest") || g_str_equal (rule, "session-ended"))
                return g_strdup_printf (
                        _ ("Blocked by the sandbox: the VM's network is off (rule “%s”%s%s): a "
                           "program in the VM sent the real value of a credential, which only the "
                           "person's computer may hold. Tell the person now what you were doing; "
                           "only they can turn the network on again, by restarting the VM. Do not "
                           "retry, and do not ask for network approval: it cannot help."),
                        rule, sep, reason);
        if (credential_rule (rule))
                return g_strdup_printf (
                        _ ("Blocked by the sandbox: a request to %s:%s was refused by the "
                           "credential rules (rule “%s”%s%s). Network approval does not change "
                           "this: change the request as the reason says, or tell the person."),
                        host, port, rule, sep, reason);
        if (g_str_equal (rule, "resolve-failed") || g_str_equal (rule, "connect-failed"))
                return g_strdup_printf (
                        _ ("Blocked by the sandbox: %s:%s could not be reached (rule “%s”%s%s). "
                           "Check the name and port, or try again later; network approval "
                           "does not change this."),
                        host, port, rule, sep, reason);
        return g_strdup_printf (
                _ ("Blocked by the sandbox: a connection to %s:%s was refused by the network "
                   "policy (rule “%s”%s%s). To reach it, call request_approval with action "
                   "“network” and host “%s:%s” and say why; the person can also allow it in "
                   "Settings → Network. Do not try other ways around the proxy."),
                host, port, rule, sep, reason, host, port);
}

const char *
assistant_sandbox_explanation_prefix (void)
{
        /* Every explanation below starts so (their translations must too). */
        return _ ("Blocked by the sandbox:");
}

guint64
assistant_sandbox_count (const cJSON *record)
{
        const cJSON *count = cJSON_GetObjectItemCaseSensitive (record, "count");

        /* Written by the host, but checked like the rest: a count is a whole number >= 1. */
        if (!cJSON_IsNumber (count) || !(count->valuedouble >= 1 && count->valuedouble < 1e15))
                return 1;
        return (guint64) count->valuedouble;
}

char *
assistant_sandbox_explain (const cJSON *record)
{
        if (!assistant_sandbox_is_refusal (record) ||
            cJSON_GetObjectItemCaseSensitive (record, "count"))
                return NULL;
        return is_source (record, "files") ? explain_files (record) : explain_egress (record);
}

static char *
summary_line (const cJSON *record)
{
        if (is_source (record, "files")) {
                g_autofree char *op = field (record, "op");
                g_autofree char *share = field (record, "share");
                g_autofree char *path = field (record, "path");
                g_autofree char *result = field (record, "result");
                g_autofree char *rule = field (record, "rule");

                return g_strdup_printf ("%s %s/%s: %s%s%s%s", op, share, path, result,
                                        *rule ? " (" : "", rule, *rule ? ")" : "");
        }
        {
                g_autofree char *method = field (record, "method");
                g_autofree char *host = field (record, "host");
                g_autofree char *port = field (record, "port");
                g_autofree char *decision = field (record, "decision");
                g_autofree char *rule = field (record, "rule");

                return g_strdup_printf ("%s %s:%s %s (%s)", method, host, port, decision, rule);
        }
}

char *
assistant_sandbox_summary (const cJSON *record)
{
        g_autofree char *line = summary_line (record);
        guint64 count = assistant_sandbox_count (record);

        if (count > 1)
                return g_strdup_printf ("%s ×%" G_GUINT64_FORMAT, line, count);
        return g_steal_pointer (&line);
}

/* The guest agent's temporary name for a file being transferred (guest-image/agent/xfer.c). */
static gboolean
is_transfer_temporary (const char *path)
{
        const char *base = strrchr (path, '/');
        const char *tag;

        base = base ? base + 1 : path;
        if (base[0] != '.' || !(tag = g_strrstr (base, ".corral-")) || tag == base)
                return FALSE;
        tag += strlen (".corral-");
        if (!*tag)
                return FALSE;
        for (; *tag; tag++)
                if (!g_ascii_isxdigit (*tag))
                        return FALSE;
        return TRUE;
}

char *
assistant_sandbox_changed_path (const cJSON *record)
{
        g_autofree char *result = NULL, *op = NULL, *share = NULL, *path = NULL;

        if (!is_source (record, "files"))
                return NULL;
        result = field (record, "result");
        op = field (record, "op");
        if (!g_str_equal (result, "ok") || g_str_equal (op, "keep"))
                return NULL;
        share = field (record, "share");
        path = field (record, g_str_equal (op, "rename") ? "path2" : "path");
        if (!*share || !*path || is_transfer_temporary (path))
                return NULL;
        return g_build_filename ("/workspace", share, path, NULL);
}
