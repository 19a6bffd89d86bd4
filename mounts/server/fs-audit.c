/* fs-audit.c — see fs-audit.h. The bound itself (rotation, folding) is corral-audit-log.c,
 * shared with corral-egressd.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-audit.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "corral-audit-log.h"
#include "proto.h"

struct _FsAudit {
        CorralAuditLog *log; /* NULL: disabled */
        GSource *timer; /* dispatched when a folded count is due */
};

static gboolean
timer_dispatch (GSource *source, GSourceFunc callback, gpointer user_data)
{
        return callback (user_data);
}

static GSourceFuncs timer_funcs = { .dispatch = timer_dispatch };

static void
arm (FsAudit *a, gint64 due)
{
        if (a->timer && g_source_get_ready_time (a->timer) != due)
                g_source_set_ready_time (a->timer, due);
}

static gboolean
on_due (gpointer user_data)
{
        FsAudit *a = user_data;

        arm (a, corral_audit_log_flush_due (a->log));
        return G_SOURCE_CONTINUE;
}

FsAudit *
fs_audit_open (const char *path, GError **error)
{
        g_autoptr (GMainContext) context = NULL;
        FsAudit *a;
        CorralAuditLog *log = NULL;

        if (path && !(log = corral_audit_log_open (path, error)))
                return NULL;
        a = g_new0 (FsAudit, 1);
        a->log = log;
        if (log) {
                context = g_main_context_ref_thread_default ();
                a->timer = g_source_new (&timer_funcs, sizeof (GSource));
                g_source_set_static_name (a->timer, "fs-audit folded counts");
                g_source_set_callback (a->timer, on_due, a, NULL);
                g_source_set_ready_time (a->timer, -1);
                g_source_attach (a->timer, context);
        }
        return a;
}

void
fs_audit_close (FsAudit *a)
{
        if (!a)
                return;
        if (a->timer) {
                g_source_destroy (a->timer);
                g_source_unref (a->timer);
        }
        corral_audit_log_close (a->log);
        g_free (a);
}

void
fs_audit_set_limits (FsAudit *a, uint64_t max_bytes, unsigned generations)
{
        if (a && a->log)
                corral_audit_log_set_limits (a->log, max_bytes, generations);
}

void
fs_audit_set_journal (FsAudit *a, gboolean copy)
{
        g_autoptr (GError) error = NULL;

        if (a && a->log && !corral_audit_log_set_journal (a->log, copy, &error))
                g_warning ("%s", error->message);
}

void
fs_audit_flush (FsAudit *a)
{
        if (a && a->log) {
                corral_audit_log_flush (a->log);
                arm (a, -1);
        }
}

static void
add_string (cJSON *obj, const char *key, const char *value)
{
        g_autofree char *valid = NULL;

        if (!value)
                return;
        valid = g_utf8_make_valid (value, -1);
        cJSON_AddStringToObject (obj, key, valid);
}

static void
add_key_part (GString *key, const char *value)
{
        /* Length-prefixed: no name the guest picks can make two records look alike. */
        g_string_append_printf (key, "%zu:%s", value ? strlen (value) + 1 : 0, value ? value : "");
}

/* What makes two refusals "the same" for folding: everything but the time. */
static char *
fold_key (const FsAuditRecord *rec)
{
        GString *key = g_string_new (NULL);

        add_key_part (key, rec->share);
        add_key_part (key, rec->op);
        add_key_part (key, rec->path);
        add_key_part (key, rec->path2);
        add_key_part (key, rec->result);
        add_key_part (key, rec->rule);
        g_string_append_printf (key, "%d", rec->errnum);
        return g_string_free (key, FALSE);
}

/* A record's first members: when (UTC, milliseconds) and which part wrote it. */
static cJSON *
record_new (const char *source)
{
        g_autoptr (GDateTime) now = g_date_time_new_now_utc ();
        g_autofree char *time = g_date_time_format (now, "%Y-%m-%dT%H:%M:%S.%fZ");
        cJSON *obj = cJSON_CreateObject ();

        add_string (obj, "time", time);
        add_string (obj, "source", source);
        return obj;
}

void
fs_audit_write_policy (FsAudit *a, const char *digest, const char *const *sources)
{
        cJSON *obj, *list;

        if (!a || !a->log)
                return;
        obj = record_new ("policy");
        add_string (obj, "digest", digest);
        list = cJSON_AddArrayToObject (obj, "sources");
        for (guint i = 0; sources && sources[i]; i++)
                cJSON_AddItemToArray (list, cJSON_CreateString (sources[i]));
        corral_audit_log_append (a->log, obj, NULL);
}

void
fs_audit_write (FsAudit *a, const FsAuditRecord *rec)
{
        g_autofree char *key = NULL;
        cJSON *obj;

        if (!a || !a->log)
                return;

        obj = record_new ("files");
        add_string (obj, "share", rec->share);
        add_string (obj, "op", rec->op);
        add_string (obj, "path", rec->path);
        add_string (obj, "path2", rec->path2);
        add_string (obj, "result", rec->result);
        add_string (obj, "rule", rec->rule);
        if (rec->errnum)
                add_string (obj, "errno", proto_errno_name (rec->errnum));
        add_string (obj, "message", rec->message);
        if (rec->size >= 0)
                cJSON_AddNumberToObject (obj, "size", (double) rec->size);

        /* A change is always its own line; refusals and failures may repeat by the thousand. */
        if (g_strcmp0 (rec->result, "ok") != 0)
                key = fold_key (rec);
        corral_audit_log_append (a->log, obj, key);
        arm (a, corral_audit_log_next_due (a->log));
}
