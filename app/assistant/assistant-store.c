/* assistant-store.c — session folders, transcripts and per-task audit logs.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "assistant-store.h"

#include "corral-agent-client.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gi18n-lib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

struct _AssistantStore {
        char *id;
        char *dir;
        int fd; /* transcript, opened at the first write */
        cJSON *header; /* written before the first line of a new session */
        gboolean warned;
};

gboolean
corral_assistant_store_id_is_valid (const char *id)
{
        gsize len = id ? strlen (id) : 0;

        if (len == 0 || len > 64)
                return FALSE;
        for (const char *p = id; *p; p++)
                if (!g_ascii_isalnum (*p) && *p != '-')
                        return FALSE;
        return TRUE;
}

char *
corral_assistant_store_root (void)
{
        return g_build_filename (g_get_user_state_dir (), "corral", "sessions", NULL);
}

gboolean
corral_assistant_store_remove (const char *id, GError **error)
{
        g_autofree char *root = corral_assistant_store_root ();
        g_autofree char *dir = NULL;
        g_autoptr (GDir) entries = NULL;
        g_autoptr (GError) local = NULL;
        const char *name;

        if (!corral_assistant_store_id_is_valid (id)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” is not a session id"), id);
                return FALSE;
        }
        dir = g_build_filename (root, id, NULL);
        if (!(entries = g_dir_open (dir, 0, &local))) {
                if (g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
                        return TRUE;
                g_propagate_error (error, g_steal_pointer (&local));
                return FALSE;
        }
        while ((name = g_dir_read_name (entries))) {
                g_autofree char *path = g_build_filename (dir, name, NULL);
                GStatBuf st;

                /* Never followed: a link is not the store's to remove through. */
                if (g_lstat (path, &st) == 0 && !S_ISREG (st.st_mode)) {
                        g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_REGULAR_FILE,
                                     _ ("The conversation's folder %s holds %s, which Corral did "
                                        "not write; it was left there"),
                                     dir, name);
                        return FALSE;
                }
                if (g_unlink (path) < 0 && errno != ENOENT) {
                        int errsv = errno;

                        g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                                     _ ("Could not remove %s: %s"), path, g_strerror (errsv));
                        return FALSE;
                }
        }
        if (g_rmdir (dir) < 0 && errno != ENOENT) {
                int errsv = errno;

                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                             _ ("Could not remove %s: %s"), dir, g_strerror (errsv));
                return FALSE;
        }
        return TRUE;
}

static AssistantStore *
store_new_for (const char *id)
{
        AssistantStore *store = g_new0 (AssistantStore, 1);
        g_autofree char *root = corral_assistant_store_root ();

        store->id = g_strdup (id);
        store->dir = g_build_filename (root, id, NULL);
        store->fd = -1;
        return store;
}

AssistantStore *
assistant_store_new (void)
{
        g_autoptr (GDateTime) now = g_date_time_new_now_utc ();
        g_autofree char *stamp = g_date_time_format (now, "%Y%m%d-%H%M%S");
        g_autofree char *id = g_strdup_printf ("%s-%08x", stamp, g_random_int ());

        return store_new_for (id);
}

AssistantStore *
assistant_store_open (const char *id, GError **error)
{
        g_autoptr (AssistantStore) store = NULL;
        g_autofree char *path = NULL;

        if (!corral_assistant_store_id_is_valid (id)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” is not a session id"), id);
                return NULL;
        }
        store = store_new_for (id);
        path = g_build_filename (store->dir, "transcript.jsonl", NULL);
        if (!g_file_test (path, G_FILE_TEST_IS_REGULAR)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                             _ ("There is no session “%s”"), id);
                return NULL;
        }
        return g_steal_pointer (&store);
}

void
assistant_store_free (AssistantStore *store)
{
        if (!store)
                return;
        if (store->fd >= 0)
                close (store->fd);
        g_clear_pointer (&store->header, cJSON_Delete);
        g_free (store->id);
        g_free (store->dir);
        g_free (store);
}

const char *
assistant_store_get_id (AssistantStore *store)
{
        return store->id;
}

const char *
assistant_store_get_dir (AssistantStore *store)
{
        return store->dir;
}

void
assistant_store_set_header (AssistantStore *store, cJSON *header)
{
        g_clear_pointer (&store->header, cJSON_Delete);
        store->header = header;
}

static void
warn_once (AssistantStore *store, const char *what, int err)
{
        if (store->warned)
                return;
        store->warned = TRUE;
        g_warning ("session %s: cannot write %s: %s", store->id, what, g_strerror (err));
}

static int
open_append (AssistantStore *store, const char *name)
{
        g_autofree char *path = g_build_filename (store->dir, name, NULL);

        if (g_mkdir_with_parents (store->dir, 0700) < 0)
                return -errno;
        return open (path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
}

/* One write() per line on an O_APPEND fd: a crash leaves whole lines behind. */
static int
write_line (int fd, cJSON *record)
{
        char *json = cJSON_PrintUnformatted (record);
        g_autofree char *line = g_strconcat (json, "\n", NULL);
        gssize n;

        cJSON_free (json);
        n = write (fd, line, strlen (line));
        return n == (gssize) strlen (line) ? 0 : -(n < 0 ? errno : EIO);
}

void
assistant_store_append (AssistantStore *store, cJSON *record)
{
        g_autoptr (cJSON) rec = record;
        int r;

        if (store->fd < 0) {
                store->fd = open_append (store, "transcript.jsonl");
                if (store->fd < 0) {
                        warn_once (store, "transcript.jsonl", -store->fd);
                        return;
                }
                if (store->header && write_line (store->fd, store->header) < 0)
                        warn_once (store, "transcript.jsonl", errno);
                g_clear_pointer (&store->header, cJSON_Delete);
        }
        r = write_line (store->fd, rec);
        if (r < 0)
                warn_once (store, "transcript.jsonl", -r);
}

void
assistant_store_audit (AssistantStore *store, guint task, cJSON *record)
{
        g_autoptr (cJSON) rec = record;
        g_autofree char *name = g_strdup_printf ("task-%u.audit.jsonl", task);
        int fd = open_append (store, name);
        int r;

        if (fd < 0) {
                warn_once (store, name, -fd);
                return;
        }
        if (!cJSON_GetObjectItem (rec, "time")) {
                g_autoptr (GDateTime) now = g_date_time_new_now_utc ();
                g_autofree char *ts = g_date_time_format_iso8601 (now);
                cJSON_AddStringToObject (rec, "time", ts);
        }
        r = write_line (fd, rec);
        if (r < 0)
                warn_once (store, name, -r);
        close (fd);
}

/* Records ------------------------------------------------------------------------------------ */

cJSON *
assistant_store_user_record (const char *text)
{
        cJSON *rec = cJSON_CreateObject ();

        cJSON_AddStringToObject (rec, "type", "user");
        cJSON_AddStringToObject (rec, "text", text);
        return rec;
}

static cJSON *
block_to_json (const CorralLlmBlock *b)
{
        cJSON *json = cJSON_CreateObject ();

        if (b->type == CORRAL_LLM_BLOCK_TEXT) {
                cJSON_AddStringToObject (json, "type", "text");
                cJSON_AddStringToObject (json, "text", b->text ? b->text : "");
        } else {
                cJSON_AddStringToObject (json, "type", "tool_use");
                cJSON_AddStringToObject (json, "id", b->id);
                cJSON_AddStringToObject (json, "name", b->name);
                cJSON_AddItemToObject (json, "input", cJSON_Duplicate (b->input, TRUE));
        }
        return json;
}

cJSON *
assistant_store_response_record (const CorralLlmResponse *response)
{
        cJSON *rec = cJSON_CreateObject ();
        cJSON *blocks = cJSON_AddArrayToObject (rec, "blocks");
        cJSON *usage = cJSON_AddObjectToObject (rec, "usage");

        cJSON_AddStringToObject (rec, "type", "response");
        for (guint i = 0; i < response->blocks->len; i++)
                cJSON_AddItemToArray (blocks, block_to_json (response->blocks->pdata[i]));
        cJSON_AddStringToObject (rec, "stop",
                                 corral_llm_stop_reason_to_string (response->stop_reason));
        cJSON_AddNumberToObject (usage, "input_tokens", (double) response->usage.input_tokens);
        cJSON_AddNumberToObject (usage, "output_tokens", (double) response->usage.output_tokens);
        return rec;
}

cJSON *
assistant_store_tool_result_record (const char *id,
                                    const char *content,
                                    gboolean is_error,
                                    const char *outcome)
{
        cJSON *rec = cJSON_CreateObject ();

        cJSON_AddStringToObject (rec, "type", "tool_result");
        cJSON_AddStringToObject (rec, "tool_use_id", id);
        cJSON_AddStringToObject (rec, "content", content);
        cJSON_AddBoolToObject (rec, "is_error", is_error);
        if (outcome)
                cJSON_AddStringToObject (rec, "outcome", outcome);
        return rec;
}
