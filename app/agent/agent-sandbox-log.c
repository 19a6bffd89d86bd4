/* agent-sandbox-log.c — reading the VM's audit logs and explaining refusals.
 *
 * The logs are written by host processes, but what they quote (paths, host names) comes from
 * the guest: everything is type-checked and cut to a bounded length before it is used.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "agent-sandbox-log.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gi18n-lib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FIELD 512

static guint64
file_size (const char *vm_dir, const char *name)
{
        g_autofree char *path = g_build_filename (vm_dir, name, NULL);
        struct stat st;

        return stat (path, &st) == 0 ? (guint64) st.st_size : 0;
}

void
agent_sandbox_mark (const char *vm_dir, AgentLogMark *mark)
{
        mark->audit = vm_dir ? file_size (vm_dir, "audit.jsonl") : 0;
        mark->egress = vm_dir ? file_size (vm_dir, "egress.jsonl") : 0;
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

/* Reads complete lines from *offset; returns the bytes skipped. */
static guint64
read_log (const char *vm_dir, const char *name, const char *source, guint64 *offset, GPtrArray *out)
{
        g_autofree char *path = g_build_filename (vm_dir, name, NULL);
        g_autofree char *buf = NULL;
        guint64 skipped = 0;
        struct stat st;
        gssize n;
        int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        const char *last_nl;

        if (fd < 0)
                return 0;
        if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode) || (guint64) st.st_size <= *offset) {
                /* A log that shrank was replaced: start again from its end. */
                if (fstat (fd, &st) == 0 && (guint64) st.st_size < *offset)
                        *offset = (guint64) st.st_size;
                close (fd);
                return 0;
        }
        if ((guint64) st.st_size - *offset > AGENT_SANDBOX_LOG_MAX_READ) {
                skipped = (guint64) st.st_size - *offset - AGENT_SANDBOX_LOG_MAX_READ;
                *offset += skipped;
        }
        buf = g_malloc (AGENT_SANDBOX_LOG_MAX_READ);
        n = pread (fd, buf, AGENT_SANDBOX_LOG_MAX_READ, (off_t) *offset);
        close (fd);
        if (n <= 0)
                return skipped;
        last_nl = memrchr (buf, '\n', (gsize) n);
        if (!last_nl)
                return skipped;
        parse_lines (buf, (gsize) (last_nl - buf) + 1, source, out);
        *offset += (guint64) (last_nl - buf) + 1;
        return skipped;
}

GPtrArray *
agent_sandbox_read_since (const char *vm_dir, AgentLogMark *mark, guint64 *ret_skipped)
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
agent_sandbox_is_refusal (const cJSON *record)
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
        const char *prefix = "Blocked by the sandbox: ";
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

static char *
explain_egress (const cJSON *rec)
{
        g_autofree char *host = field (rec, "host");
        g_autofree char *port = field (rec, "port");
        g_autofree char *rule = field (rec, "rule");
        g_autofree char *reason = field (rec, "reason");

        return g_strdup_printf (
                _ ("Blocked by the sandbox: a connection to %s:%s was refused by the network "
                   "policy (rule “%s”%s%s). To reach it, call request_approval with action "
                   "“network” and host “%s:%s” and say why; the person can also allow it in "
                   "Settings → Network. Do not try other ways around the proxy."),
                host, port, rule, *reason ? ", " : "", reason, host, port);
}

const char *
agent_sandbox_explanation_prefix (void)
{
        /* Every explanation below starts so (their translations must too). */
        return _ ("Blocked by the sandbox:");
}

char *
agent_sandbox_explain (const cJSON *record)
{
        if (!agent_sandbox_is_refusal (record))
                return NULL;
        return is_source (record, "files") ? explain_files (record) : explain_egress (record);
}

char *
agent_sandbox_summary (const cJSON *record)
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
