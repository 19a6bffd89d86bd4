/* assistant-files.c — the view tool, on VM paths through the guest agent.
 *
 * view reads at most 1 MiB and shows at most 64 KiB; the rest is for shell tools (grep, sed).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "assistant-private.h"

#include "assistant-text.h"
#include "corral-agent-ops.h"

#include <glib/gi18n-lib.h>
#include <string.h>

#define VIEW_MAX_READ ((gsize) 1024 * 1024)
#define VIEW_MAX_OUTPUT ((gsize) 64 * 1024)
#define LIST_MAX_ENTRIES 1000
#define BINARY_PROBE 8192

typedef struct {
        AssistantToolCall *call;
        const char *path; /* in call->input */
        gint64 range[2];
        gboolean has_range;
        CorralFileStat *stat;
} FileOp;

static void
op_free (FileOp *op)
{
        g_clear_pointer (&op->stat, corral_file_stat_free);
        g_free (op);
}

static FileOp *
op_new (AssistantToolCall *call, const char *path)
{
        FileOp *op = g_new0 (FileOp, 1);

        op->call = call;
        op->path = path;
        return op;
}

/* Ends the call with text (taken) and frees op. */
static void
op_return (FileOp *op, char *text, gboolean is_error)
{
        AssistantToolCall *call = op->call;

        op_free (op);
        assistant_tool_call_return (call, text, is_error);
}

static void
op_return_gerror (FileOp *op, const char *what, const GError *error)
{
        if (g_error_matches (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_NOT_FOUND))
                op_return (op, g_strdup_printf (_ ("%s: no such file or folder."), op->path), TRUE);
        else
                op_return (op,
                           g_strdup_printf (_ ("%s %s failed: %s"), what, op->path, error->message),
                           TRUE);
}

/* view ----------------------------------------------------------------------------------------- */

static int
compare_entries (gconstpointer a, gconstpointer b)
{
        const CorralFileEntry *ea = *(CorralFileEntry **) a, *eb = *(CorralFileEntry **) b;

        return strcmp (ea->name, eb->name);
}

static void
listed (GObject *source, GAsyncResult *result, gpointer user_data)
{
        FileOp *op = user_data;
        g_autoptr (GError) error = NULL;
        gboolean truncated = FALSE;
        g_autoptr (GPtrArray) entries = corral_agent_client_list_finish (
                CORRAL_AGENT_CLIENT (source), result, &truncated, &error);
        GString *out;

        if (!entries) {
                op_return_gerror (op, _ ("Listing"), error);
                return;
        }
        g_ptr_array_sort (entries, compare_entries);
        out = g_string_new (NULL);
        g_string_append_printf (out, _ ("%s (a folder, %u entries):\n"), op->path, entries->len);
        for (guint i = 0; i < entries->len && i < LIST_MAX_ENTRIES; i++) {
                const CorralFileEntry *e = entries->pdata[i];
                g_autofree char *name = assistant_text_make_valid (e->name, strlen (e->name));
                if (e->type == CORRAL_FILE_TYPE_DIR)
                        g_string_append_printf (out, "%s/\n", name);
                else
                        g_string_append_printf (out, "%s  %" G_GUINT64_FORMAT "\n", name, e->size);
        }
        if (truncated || entries->len > LIST_MAX_ENTRIES)
                g_string_append (out, _ ("[… more entries not shown; use shell tools such as "
                                         "find or ls | head to see them …]\n"));
        g_ptr_array_add (op->call->card->files_read, g_strdup (op->path));
        op_return (op, g_string_free (out, FALSE), FALSE);
}

static char *
numbered_view (FileOp *op, GBytes *bytes, GError **error)
{
        gsize len;
        const char *data = g_bytes_get_data (bytes, &len);
        g_autofree char *text = assistant_text_make_valid (data, len);
        g_autofree char *numbered = NULL;
        g_autofree char *cut = NULL;
        guint n_lines = 0;

        numbered = assistant_text_number_lines (text, op->has_range ? op->range[0] : 1,
                                                op->has_range ? op->range[1] : -1, &n_lines, error);
        if (!numbered)
                return NULL;
        cut = assistant_text_truncate (numbered, VIEW_MAX_OUTPUT);
        if (op->stat->size > len)
                return g_strdup_printf (_ ("%s[The file has %llu bytes; only the first %llu were "
                                           "read. Use shell tools (grep -n, sed -n) for the "
                                           "rest.]"),
                                        cut, (unsigned long long) op->stat->size,
                                        (unsigned long long) len);
        return g_steal_pointer (&cut);
}

static void
read_for_view (GObject *source, GAsyncResult *result, gpointer user_data)
{
        FileOp *op = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (GBytes) bytes =
                corral_agent_client_read_file_finish (CORRAL_AGENT_CLIENT (source), result, &error);
        gsize len;
        const char *data;
        char *text;

        if (!bytes) {
                op_return_gerror (op, _ ("Reading"), error);
                return;
        }
        data = g_bytes_get_data (bytes, &len);
        g_ptr_array_add (op->call->card->files_read, g_strdup (op->path));
        if (memchr (data, '\0', MIN (len, BINARY_PROBE))) {
                op_return (op,
                           g_strdup_printf (_ ("%s is a binary file (%llu bytes); inspect it with "
                                               "shell tools (file, xxd | head)."),
                                            op->path, (unsigned long long) op->stat->size),
                           TRUE);
                return;
        }
        text = numbered_view (op, bytes, &error);
        if (!text)
                op_return (op, g_strdup (error->message), TRUE);
        else
                op_return (op, text, FALSE);
}

static void
stat_for_view (GObject *source, GAsyncResult *result, gpointer user_data)
{
        FileOp *op = user_data;
        CorralAgentClient *client = CORRAL_AGENT_CLIENT (source);
        g_autoptr (GError) error = NULL;

        op->stat = corral_agent_client_stat_finish (client, result, &error);
        if (!op->stat) {
                op_return_gerror (op, _ ("Viewing"), error);
                return;
        }
        if (op->stat->type == CORRAL_FILE_TYPE_DIR) {
                corral_agent_client_list_async (client, op->path, op->call->cancellable, listed,
                                                op);
                return;
        }
        if (op->stat->type != CORRAL_FILE_TYPE_FILE) {
                op_return (op,
                           g_strdup_printf (_ ("%s is not a regular file or a folder."), op->path),
                           TRUE);
                return;
        }
        corral_agent_client_read_file_async (
                client, op->path, 0, (gint64) MIN (op->stat->size, VIEW_MAX_READ), VIEW_MAX_READ,
                op->call->cancellable, read_for_view, op);
}

static gboolean
parse_range (FileOp *op)
{
        const cJSON *range = cJSON_GetObjectItemCaseSensitive (op->call->input, "view_range");
        const cJSON *a, *b;

        if (!range)
                return TRUE;
        a = cJSON_GetArrayItem (range, 0);
        b = cJSON_GetArrayItem (range, 1);
        if (!cJSON_IsArray (range) || cJSON_GetArraySize (range) != 2 || !cJSON_IsNumber (a) ||
            !cJSON_IsNumber (b) || a->valuedouble < 1 || a->valuedouble > G_MAXUINT ||
            b->valuedouble < -1 || b->valuedouble > G_MAXUINT) {
                op_return (op,
                           g_strdup (_ ("view_range must be [first, last]: line numbers from "
                                        "1, last -1 for the end of the file.")),
                           TRUE);
                return FALSE;
        }
        op->has_range = TRUE;
        op->range[0] = (gint64) a->valuedouble;
        op->range[1] = (gint64) b->valuedouble;
        return TRUE;
}

void
assistant_tool_view (AssistantToolCall *call)
{
        const char *path;
        FileOp *op;

        if (!assistant_arg_path (call, &path))
                return;
        op = op_new (call, path);
        if (!parse_range (op))
                return;
        corral_agent_client_stat_async (call->session->client, path, TRUE, call->cancellable,
                                        stat_for_view, op);
}
