/* assistant-edit.c — create, str_replace and insert.
 *
 * An edit is stat → read → change in memory → atomic write with the old permissions (the agent
 * writes a new file and renames it over; in a "can edit, but not delete" share the file server
 * keeps the old version). Files over 4 MiB are left to shell tools. The result shows the changed lines with a little context, so the model sees what it did without
 * another view call.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "assistant-private.h"

#include "assistant-text.h"
#include "corral-agent-ops.h"

#include <glib/gi18n-lib.h>
#include <string.h>

#define EDIT_MAX ((gsize) 4 * 1024 * 1024)
#define SNIPPET_CONTEXT 3

typedef char *(*EditFunc) (AssistantToolCall *call, const char *text, guint *first, guint *last);

typedef struct {
        AssistantToolCall *call;
        const char *path; /* in call->input */
        const char *text; /* create: the new file's text */
        EditFunc edit;
        guint32 perm;
        char *result; /* the new text */
        guint first, last; /* the changed lines */
} Edit;

static void
edit_return (Edit *e, char *text, gboolean is_error)
{
        AssistantToolCall *call = e->call;

        g_free (e->result);
        g_free (e);
        assistant_tool_call_return (call, text, is_error);
}

static void
edit_fail (Edit *e, const char *what, const GError *error)
{
        if (g_error_matches (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_NOT_FOUND))
                edit_return (e, g_strdup_printf (_ ("%s: no such file or folder."), e->path), TRUE);
        else
                edit_return (
                        e, g_strdup_printf (_ ("%s %s failed: %s"), what, e->path, error->message),
                        TRUE);
}

static void
written (GObject *source, GAsyncResult *result, gpointer user_data)
{
        Edit *e = user_data;
        g_autoptr (GError) error = NULL;
        g_autofree char *snippet = NULL;

        if (!corral_agent_client_write_file_finish (CORRAL_AGENT_CLIENT (source), result, &error)) {
                edit_fail (e, _ ("Writing"), error);
                return;
        }
        g_ptr_array_add (e->call->card->files_changed, g_strdup (e->path));
        if (e->text) {
                edit_return (e,
                             g_strdup_printf (_ ("Created %s (%u lines)."), e->path,
                                              assistant_text_count_lines (e->text)),
                             FALSE);
                return;
        }
        snippet = assistant_text_snippet (e->result, e->first, e->last, SNIPPET_CONTEXT);
        edit_return (e,
                     g_strdup_printf (_ ("Edited %s. The changed part now reads:\n%s"), e->path,
                                      snippet),
                     FALSE);
}

static void
write_text (Edit *e, const char *text)
{
        g_autoptr (GBytes) bytes = g_bytes_new (text, strlen (text));

        corral_agent_client_write_file_async (e->call->session->client, e->path, bytes,
                                              CORRAL_WRITE_REPLACE, e->perm, e->call->cancellable,
                                              written, e);
}

/* create ---------------------------------------------------------------------------------------- */

static void
parent_made (GObject *source, GAsyncResult *result, gpointer user_data)
{
        Edit *e = user_data;
        g_autoptr (GError) error = NULL;

        if (!corral_agent_client_op_finish (CORRAL_AGENT_CLIENT (source), result, &error)) {
                edit_fail (e, _ ("Creating the folder of"), error);
                return;
        }
        write_text (e, e->text);
}

static void
stat_for_create (GObject *source, GAsyncResult *result, gpointer user_data)
{
        Edit *e = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralFileStat) st =
                corral_agent_client_stat_finish (CORRAL_AGENT_CLIENT (source), result, &error);
        g_autofree char *parent = g_path_get_dirname (e->path);

        if (st) {
                edit_return (e,
                             g_strdup_printf (_ ("%s already exists; change it with "
                                                 "str_replace or insert, or pick another "
                                                 "name."),
                                              e->path),
                             TRUE);
                return;
        }
        if (!g_error_matches (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_NOT_FOUND)) {
                edit_fail (e, _ ("Checking"), error);
                return;
        }
        corral_agent_client_mkdir_async (CORRAL_AGENT_CLIENT (source), parent, TRUE, 0,
                                         e->call->cancellable, parent_made, e);
}

void
assistant_tool_create (AssistantToolCall *call)
{
        const char *path, *text;
        Edit *e;

        if (!assistant_arg_path (call, &path) ||
            !assistant_arg_string (call, "file_text", TRUE, &text))
                return;
        e = g_new0 (Edit, 1);
        e->call = call;
        e->path = path;
        e->text = text;
        corral_agent_client_stat_async (call->session->client, path, FALSE, call->cancellable,
                                        stat_for_create, e);
}

/* str_replace and insert ---------------------------------------------------------------------- */

static void
read_for_edit (GObject *source, GAsyncResult *result, gpointer user_data)
{
        Edit *e = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (GBytes) bytes =
                corral_agent_client_read_file_finish (CORRAL_AGENT_CLIENT (source), result, &error);
        g_autofree char *text = NULL;
        gsize len;
        const char *data;

        if (!bytes) {
                if (g_error_matches (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_TOO_LARGE))
                        edit_return (e,
                                     g_strdup_printf (_ ("%s is larger than 4 MiB; edit it with "
                                                         "shell tools (sed, patch)."),
                                                      e->path),
                                     TRUE);
                else
                        edit_fail (e, _ ("Reading"), error);
                return;
        }
        data = g_bytes_get_data (bytes, &len);
        if (memchr (data, '\0', len) || !g_utf8_validate (data, (gssize) len, NULL)) {
                edit_return (e,
                             g_strdup_printf (_ ("%s is not a UTF-8 text file; edit it with "
                                                 "shell tools."),
                                              e->path),
                             TRUE);
                return;
        }
        text = g_strndup (data, len);
        e->result = e->edit (e->call, text, &e->first, &e->last);
        if (!e->result) {
                /* The edit function ended the call with its reason. */
                g_free (e);
                return;
        }
        write_text (e, e->result);
}

static void
stat_for_edit (GObject *source, GAsyncResult *result, gpointer user_data)
{
        Edit *e = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralFileStat) st =
                corral_agent_client_stat_finish (CORRAL_AGENT_CLIENT (source), result, &error);

        if (!st) {
                edit_fail (e, _ ("Editing"), error);
                return;
        }
        if (st->type != CORRAL_FILE_TYPE_FILE) {
                edit_return (e, g_strdup_printf (_ ("%s is not a regular file."), e->path), TRUE);
                return;
        }
        e->perm = st->mode & 07777;
        corral_agent_client_read_file_async (CORRAL_AGENT_CLIENT (source), e->path, 0, -1, EDIT_MAX,
                                             e->call->cancellable, read_for_edit, e);
}

static void
start_edit (AssistantToolCall *call, const char *path, EditFunc edit)
{
        Edit *e = g_new0 (Edit, 1);

        e->call = call;
        e->path = path;
        e->edit = edit;
        corral_agent_client_stat_async (call->session->client, path, TRUE, call->cancellable,
                                        stat_for_edit, e);
}

static char *
replace_edit (AssistantToolCall *call, const char *text, guint *first, guint *last)
{
        const char *old_str = cJSON_GetObjectItem (call->input, "old_str")->valuestring;
        const char *new_str = cJSON_GetObjectItem (call->input, "new_str")->valuestring;
        guint n = assistant_text_count (text, old_str);

        if (n != 1) {
                assistant_tool_call_return (
                        call,
                        n == 0 ? g_strdup (_ ("old_str was not found in the file (0 matches). "
                                              "View the file and copy the text exactly, "
                                              "including spaces and line breaks."))
                               : g_strdup_printf (_ ("old_str matches %u times; it must match "
                                                     "exactly once. Include more of the "
                                                     "surrounding lines to make it unique."),
                                                  n),
                        TRUE);
                return NULL;
        }
        {
                char *result = assistant_text_replace_once (text, old_str, new_str, first);
                *last = *first + assistant_text_count_lines (new_str);
                return result;
        }
}

void
assistant_tool_str_replace (AssistantToolCall *call)
{
        const char *path, *old_str, *new_str;

        if (!assistant_arg_path (call, &path) ||
            !assistant_arg_string (call, "old_str", TRUE, &old_str) ||
            !assistant_arg_string (call, "new_str", TRUE, &new_str))
                return;
        if (!*old_str) {
                assistant_tool_call_return (
                        call, g_strdup (_ ("old_str is empty; to add text, use insert.")), TRUE);
                return;
        }
        start_edit (call, path, replace_edit);
}

static char *
insert_edit (AssistantToolCall *call, const char *text, guint *first, guint *last)
{
        gint64 line = (gint64) cJSON_GetObjectItem (call->input, "insert_line")->valuedouble;
        const char *new_str = cJSON_GetObjectItem (call->input, "new_str")->valuestring;
        g_autoptr (GError) error = NULL;
        char *result = assistant_text_insert_after (text, (guint) line, new_str, &error);

        if (!result) {
                assistant_tool_call_return (call, g_strdup (error->message), TRUE);
                return NULL;
        }
        *first = (guint) line + 1;
        *last = (guint) line + MAX (assistant_text_count_lines (new_str), 1);
        return result;
}

void
assistant_tool_insert (AssistantToolCall *call)
{
        const char *path, *new_str;
        gint64 line = 0;

        if (!assistant_arg_path (call, &path) ||
            !assistant_arg_int (call, "insert_line", 0, G_MAXUINT32, TRUE, &line) ||
            !assistant_arg_string (call, "new_str", TRUE, &new_str))
                return;
        start_edit (call, path, insert_edit);
}
