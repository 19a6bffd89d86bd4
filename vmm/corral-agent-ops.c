/* corral-agent-ops.c — typed wrappers over corral_agent_client_call_async().
 *
 * Each wrapper builds the params, and a parser turns the (untrusted) result into a typed value
 * or a CORRAL_AGENT_ERROR_PROTOCOL error.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-agent-ops.h"

#include "corral-agent-private.h"

#include <glib/gi18n-lib.h>
#define NSEC_PER_SEC ((int64_t) 1000000000)

#define MAX_LIST_ENTRIES 10000
#define MAX_NAME 4096

/* Returns the task's value through g_task_return_*(); FALSE for a malformed result. */
typedef gboolean (*ResultParser) (GTask *task, const cJSON *result);

static void
typed_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        ResultParser parse = g_task_get_task_data (task);
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) reply = NULL;

        reply = corral_agent_client_call_finish (CORRAL_AGENT_CLIENT (source), result, &error);
        if (!reply)
                g_task_return_error (task, g_steal_pointer (&error));
        else if (!parse (task, reply))
                g_task_return_new_error (task, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_PROTOCOL,
                                         _ ("The guest agent sent a malformed result for %s"),
                                         (const char *) g_task_get_name (task));
}

static void
call_typed (CorralAgentClient *self,
            const char *method,
            cJSON *params,
            gpointer source_tag,
            ResultParser parse,
            GCancellable *cancellable,
            GAsyncReadyCallback callback,
            gpointer user_data)
{
        GTask *task = g_task_new (self, cancellable, callback, user_data);

        g_task_set_source_tag (task, source_tag);
        g_task_set_name (task, method);
        g_task_set_task_data (task, (gpointer) parse, NULL);
        corral_agent_client_call_async (self, method, params, cancellable, typed_done, task);
}

static gboolean
parse_empty (GTask *task, const cJSON *result)
{
        g_task_return_boolean (task, TRUE);
        return TRUE;
}

gboolean
corral_agent_client_op_finish (CorralAgentClient *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        return g_task_propagate_boolean (G_TASK (result), error);
}

static CorralFileType
file_type_from_string (const char *s)
{
        static const char *const names[] = {
                [CORRAL_FILE_TYPE_FILE] = "file",       [CORRAL_FILE_TYPE_DIR] = "dir",
                [CORRAL_FILE_TYPE_SYMLINK] = "symlink", [CORRAL_FILE_TYPE_FIFO] = "fifo",
                [CORRAL_FILE_TYPE_SOCKET] = "socket",   [CORRAL_FILE_TYPE_CHAR] = "char",
                [CORRAL_FILE_TYPE_BLOCK] = "block",
        };

        for (gsize i = 1; i < G_N_ELEMENTS (names); i++)
                if (g_str_equal (s, names[i]))
                        return (CorralFileType) i;
        return CORRAL_FILE_TYPE_UNKNOWN;
}

void
corral_file_stat_free (CorralFileStat *stat)
{
        if (!stat)
                return;
        g_free (stat->target);
        g_free (stat);
}

void
corral_file_entry_free (CorralFileEntry *entry)
{
        if (!entry)
                return;
        g_free (entry->name);
        g_free (entry);
}

static gboolean
parse_stat (GTask *task, const cJSON *r)
{
        g_autoptr (CorralFileStat) st = g_new0 (CorralFileStat, 1);
        const char *type = NULL, *target = NULL;
        int64_t size = 0, mode = 0, uid = 0, gid = 0, mtime_s = 0, mtime_nsec = 0;

        if (proto_json_get_string (r, "type", 16, &type) < 0 ||
            proto_json_get_int (r, "size", 0, (int64_t) PROTO_MAX_ID, &size) == -EINVAL ||
            proto_json_get_int (r, "mode", 0, 0177777, &mode) == -EINVAL ||
            proto_json_get_int (r, "uid", 0, G_MAXUINT32, &uid) == -EINVAL ||
            proto_json_get_int (r, "gid", 0, G_MAXUINT32, &gid) == -EINVAL ||
            proto_json_get_string (r, "target", MAX_NAME, &target) == -EINVAL ||
            proto_json_get_int (r, "mtime_s", -(int64_t) PROTO_MAX_ID, (int64_t) PROTO_MAX_ID,
                                &mtime_s) == -EINVAL ||
            proto_json_get_int (r, "mtime_nsec", 0, 999999999, &mtime_nsec) == -EINVAL)
                return FALSE;
        st->type = file_type_from_string (type);
        st->size = (guint64) size;
        st->mode = (guint32) mode;
        st->uid = (guint32) uid;
        st->gid = (guint32) gid;
        st->target = g_strdup (target);
        /* Saturate rather than overflow for times past the year 2262. */
        st->mtime_ns = mtime_s > G_MAXINT64 / NSEC_PER_SEC - 1 ? G_MAXINT64
                       : mtime_s < G_MININT64 / NSEC_PER_SEC + 1
                               ? G_MININT64
                               : mtime_s * (int64_t) NSEC_PER_SEC + mtime_nsec;
        g_task_return_pointer (task, g_steal_pointer (&st), (GDestroyNotify) corral_file_stat_free);
        return TRUE;
}

void
corral_agent_client_stat_async (CorralAgentClient *self,
                                const char *path,
                                gboolean follow,
                                GCancellable *cancellable,
                                GAsyncReadyCallback callback,
                                gpointer user_data)
{
        cJSON *params = cJSON_CreateObject ();

        cJSON_AddStringToObject (params, "path", path);
        cJSON_AddBoolToObject (params, "follow", follow);
        call_typed (self, "file.stat", params, corral_agent_client_stat_async, parse_stat,
                    cancellable, callback, user_data);
}

CorralFileStat *
corral_agent_client_stat_finish (CorralAgentClient *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}

/* A name is one path component: the host builds paths from it. */
static CorralFileEntry *
parse_entry (const cJSON *item)
{
        const char *name = NULL, *type = NULL;
        int64_t size = 0;
        CorralFileEntry *e;

        if (!cJSON_IsObject (item) || proto_json_get_string (item, "name", MAX_NAME, &name) < 0 ||
            proto_json_get_string (item, "type", 16, &type) < 0 ||
            proto_json_get_int (item, "size", 0, (int64_t) PROTO_MAX_ID, &size) == -EINVAL)
                return NULL;
        if (!*name || strchr (name, '/') || g_str_equal (name, ".") || g_str_equal (name, ".."))
                return NULL;
        e = g_new0 (CorralFileEntry, 1);
        e->name = g_strdup (name);
        e->type = file_type_from_string (type);
        e->size = (guint64) size;
        return e;
}

static gboolean
parse_list (GTask *task, const cJSON *r)
{
        g_autoptr (GPtrArray) entries =
                g_ptr_array_new_with_free_func ((GDestroyNotify) corral_file_entry_free);
        const cJSON *array = NULL, *item;
        bool truncated = false;

        if (proto_json_get_array (r, "entries", MAX_LIST_ENTRIES, &array) < 0 ||
            proto_json_get_bool (r, "truncated", &truncated) == -EINVAL)
                return FALSE;
        cJSON_ArrayForEach (item, array) {
                CorralFileEntry *e = parse_entry (item);

                if (!e)
                        return FALSE;
                g_ptr_array_add (entries, e);
        }
        g_object_set_data (G_OBJECT (task), "truncated", GINT_TO_POINTER (truncated));
        g_task_return_pointer (task, g_steal_pointer (&entries),
                               (GDestroyNotify) g_ptr_array_unref);
        return TRUE;
}

void
corral_agent_client_list_async (CorralAgentClient *self,
                                const char *path,
                                GCancellable *cancellable,
                                GAsyncReadyCallback callback,
                                gpointer user_data)
{
        cJSON *params = cJSON_CreateObject ();

        cJSON_AddStringToObject (params, "path", path);
        call_typed (self, "file.list", params, corral_agent_client_list_async, parse_list,
                    cancellable, callback, user_data);
}

GPtrArray *
corral_agent_client_list_finish (CorralAgentClient *self,
                                 GAsyncResult *result,
                                 gboolean *ret_truncated,
                                 GError **error)
{
        GPtrArray *entries;

        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        entries = g_task_propagate_pointer (G_TASK (result), error);
        if (entries && ret_truncated)
                *ret_truncated =
                        GPOINTER_TO_INT (g_object_get_data (G_OBJECT (result), "truncated"));
        return entries;
}

void
corral_agent_client_mkdir_async (CorralAgentClient *self,
                                 const char *path,
                                 gboolean parents,
                                 guint perm,
                                 GCancellable *cancellable,
                                 GAsyncReadyCallback callback,
                                 gpointer user_data)
{
        cJSON *params = cJSON_CreateObject ();

        g_return_if_fail (perm <= 07777);
        cJSON_AddStringToObject (params, "path", path);
        cJSON_AddBoolToObject (params, "parents", parents);
        if (perm)
                cJSON_AddNumberToObject (params, "perm", perm);
        call_typed (self, "file.mkdir", params, corral_agent_client_mkdir_async, parse_empty,
                    cancellable, callback, user_data);
}

void
corral_agent_client_move_async (CorralAgentClient *self,
                                const char *from,
                                const char *to,
                                gboolean overwrite,
                                GCancellable *cancellable,
                                GAsyncReadyCallback callback,
                                gpointer user_data)
{
        cJSON *params = cJSON_CreateObject ();

        cJSON_AddStringToObject (params, "from", from);
        cJSON_AddStringToObject (params, "to", to);
        cJSON_AddBoolToObject (params, "overwrite", overwrite);
        call_typed (self, "file.move", params, corral_agent_client_move_async, parse_empty,
                    cancellable, callback, user_data);
}

void
corral_agent_client_remove_async (CorralAgentClient *self,
                                  const char *path,
                                  gboolean recursive,
                                  GCancellable *cancellable,
                                  GAsyncReadyCallback callback,
                                  gpointer user_data)
{
        cJSON *params = cJSON_CreateObject ();

        cJSON_AddStringToObject (params, "path", path);
        cJSON_AddBoolToObject (params, "recursive", recursive);
        call_typed (self, "file.remove", params, corral_agent_client_remove_async, parse_empty,
                    cancellable, callback, user_data);
}

static gboolean
parse_watch (GTask *task, const cJSON *r)
{
        int64_t watch;

        if (proto_json_get_int (r, "watch", 1, G_MAXUINT32, &watch) < 0)
                return FALSE;
        g_task_return_int (task, (gssize) watch);
        return TRUE;
}

void
corral_agent_client_watch_start_async (CorralAgentClient *self,
                                       const char *path,
                                       gboolean recursive,
                                       GCancellable *cancellable,
                                       GAsyncReadyCallback callback,
                                       gpointer user_data)
{
        cJSON *params = cJSON_CreateObject ();

        cJSON_AddStringToObject (params, "path", path);
        cJSON_AddBoolToObject (params, "recursive", recursive);
        call_typed (self, "watch.start", params, corral_agent_client_watch_start_async, parse_watch,
                    cancellable, callback, user_data);
}

guint
corral_agent_client_watch_start_finish (CorralAgentClient *self,
                                        GAsyncResult *result,
                                        GError **error)
{
        gssize watch;

        g_return_val_if_fail (g_task_is_valid (result, self), 0);
        watch = g_task_propagate_int (G_TASK (result), error);
        return watch > 0 ? (guint) watch : 0;
}

void
corral_agent_client_watch_stop_async (CorralAgentClient *self,
                                      guint watch,
                                      GCancellable *cancellable,
                                      GAsyncReadyCallback callback,
                                      gpointer user_data)
{
        cJSON *params = cJSON_CreateObject ();

        cJSON_AddNumberToObject (params, "watch", watch);
        call_typed (self, "watch.stop", params, corral_agent_client_watch_stop_async, parse_empty,
                    cancellable, callback, user_data);
}

void
corral_agent_client_wait_port_async (CorralAgentClient *self,
                                     const char *host,
                                     guint16 port,
                                     guint timeout_ms,
                                     GCancellable *cancellable,
                                     GAsyncReadyCallback callback,
                                     gpointer user_data)
{
        cJSON *params = cJSON_CreateObject ();

        cJSON_AddStringToObject (params, "host", host ? host : "127.0.0.1");
        cJSON_AddNumberToObject (params, "port", port);
        cJSON_AddNumberToObject (params, "timeout_ms", timeout_ms);
        call_typed (self, "wait.port", params, corral_agent_client_wait_port_async, parse_empty,
                    cancellable, callback, user_data);
}

static gboolean
parse_line (GTask *task, const cJSON *r)
{
        const char *line = NULL;

        if (proto_json_get_string (r, "line", 0, &line) < 0)
                return FALSE;
        g_task_return_pointer (task, g_strdup (line), g_free);
        return TRUE;
}

void
corral_agent_client_wait_log_async (CorralAgentClient *self,
                                    guint64 proc_id,
                                    const char *regex,
                                    guint timeout_ms,
                                    GCancellable *cancellable,
                                    GAsyncReadyCallback callback,
                                    gpointer user_data)
{
        cJSON *params = cJSON_CreateObject ();

        cJSON_AddNumberToObject (params, "proc", (double) proc_id);
        cJSON_AddStringToObject (params, "regex", regex);
        cJSON_AddNumberToObject (params, "timeout_ms", timeout_ms);
        call_typed (self, "wait.log", params, corral_agent_client_wait_log_async, parse_line,
                    cancellable, callback, user_data);
}

char *
corral_agent_client_wait_log_finish (CorralAgentClient *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}

void
corral_agent_client_info_async (CorralAgentClient *self,
                                GCancellable *cancellable,
                                GAsyncReadyCallback callback,
                                gpointer user_data)
{
        g_return_if_fail (CORRAL_IS_AGENT_CLIENT (self));
        corral_agent_client_call_async (self, "info", NULL, cancellable, callback, user_data);
}

cJSON *
corral_agent_client_info_finish (CorralAgentClient *self, GAsyncResult *result, GError **error)
{
        return corral_agent_client_call_finish (self, result, error);
}

void
corral_agent_client_poweroff_async (CorralAgentClient *self,
                                    GCancellable *cancellable,
                                    GAsyncReadyCallback callback,
                                    gpointer user_data)
{
        g_return_if_fail (CORRAL_IS_AGENT_CLIENT (self));
        corral_agent_client_call_async (self, "system.poweroff", NULL, cancellable, callback,
                                        user_data);
}

gboolean
corral_agent_client_poweroff_finish (CorralAgentClient *self, GAsyncResult *result, GError **error)
{
        cJSON *res = corral_agent_client_call_finish (self, result, error);

        cJSON_Delete (res);
        return res != NULL;
}
