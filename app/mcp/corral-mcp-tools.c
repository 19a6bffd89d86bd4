/* corral-mcp-tools.c — the client's tool list (tools/list with pagination) and tool results.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-mcp-private.h"

#include <glib/gi18n-lib.h>
#include <string.h>

#define MAX_PAGES 64
#define MAX_TOOL_NAME 128
#define MAX_DESCRIPTION ((gsize) 64 * 1024)
#define MAX_CURSOR 4096

void
corral_mcp_tool_free (CorralMcpTool *tool)
{
        if (!tool)
                return;
        g_free (tool->name);
        g_free (tool->title);
        g_free (tool->description);
        cJSON_Delete (tool->input_schema);
        g_free (tool);
}

void
corral_mcp_tool_result_free (CorralMcpToolResult *result)
{
        if (!result)
                return;
        cJSON_Delete (result->content);
        cJSON_Delete (result->structured);
        g_free (result);
}

/* A tool the model cannot be offered safely is skipped, not fatal: the others still work. */
static CorralMcpTool *
parse_tool (const cJSON *item)
{
        const cJSON *schema = cJSON_GetObjectItemCaseSensitive (item, "inputSchema");
        const char *name = NULL, *title = NULL, *description = NULL;
        CorralMcpTool *tool;

        if (!cJSON_IsObject (item) ||
            !corral_mcp_get_string (item, "name", MAX_TOOL_NAME, &name, NULL) || !name || !*name ||
            !corral_mcp_get_string (item, "title", MAX_TOOL_NAME, &title, NULL) ||
            !corral_mcp_get_string (item, "description", MAX_DESCRIPTION, &description, NULL) ||
            (schema && !cJSON_IsObject (schema)))
                return NULL;
        tool = g_new0 (CorralMcpTool, 1);
        tool->name = g_strdup (name);
        tool->title = g_strdup (title);
        tool->description = g_strdup (description);
        tool->input_schema =
                schema ? cJSON_Duplicate (schema, TRUE) : cJSON_Parse ("{\"type\":\"object\"}");
        return tool;
}

typedef struct {
        GPtrArray *tools;
        GHashTable *names; /* borrowed from tools */
        guint pages;
} ListState;

static void
list_state_free (ListState *state)
{
        g_hash_table_unref (state->names);
        g_ptr_array_unref (state->tools);
        g_free (state);
}

static void list_page (GTask *task, const char *cursor);

/* Returns FALSE (task returned) when done or failed. */
static gboolean
add_page (GTask *task, const cJSON *result, const char **ret_cursor)
{
        ListState *state = g_task_get_task_data (task);
        const cJSON *tools = cJSON_GetObjectItemCaseSensitive (result, "tools");
        const cJSON *item;
        g_autoptr (GError) error = NULL;

        if (!cJSON_IsArray (tools) ||
            !corral_mcp_get_string (result, "nextCursor", MAX_CURSOR, ret_cursor, &error)) {
                g_task_return_new_error (task, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_PROTOCOL,
                                         _ ("the answer to tools/list is malformed"));
                return FALSE;
        }
        cJSON_ArrayForEach (item, tools) {
                CorralMcpTool *tool = parse_tool (item);

                if (!tool || !g_hash_table_add (state->names, tool->name)) {
                        corral_mcp_tool_free (tool);
                        continue;
                }
                g_ptr_array_add (state->tools, tool);
                if (state->tools->len > CORRAL_MCP_MAX_TOOLS) {
                        g_task_return_new_error (task, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_TOO_LARGE,
                                                 _ ("the server offers more than %d tools"),
                                                 CORRAL_MCP_MAX_TOOLS);
                        return FALSE;
                }
        }
        return TRUE;
}

static void
page_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        ListState *state = g_task_get_task_data (task);
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) result = g_task_propagate_pointer (G_TASK (res), &error);
        const char *cursor = NULL;

        if (!result) {
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        if (!add_page (task, result, &cursor))
                return;
        if (!cursor) {
                g_task_return_pointer (task, g_ptr_array_ref (state->tools),
                                       (GDestroyNotify) g_ptr_array_unref);
                return;
        }
        if (++state->pages >= MAX_PAGES) {
                g_task_return_new_error (task, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_TOO_LARGE,
                                         _ ("the server's tool list has more than %d pages"),
                                         MAX_PAGES);
                return;
        }
        list_page (g_steal_pointer (&task), cursor);
}

static void
list_page (GTask *task, const char *cursor)
{
        cJSON *params = cursor ? cJSON_CreateObject () : NULL;

        if (cursor)
                cJSON_AddStringToObject (params, "cursor", cursor);
        corral_mcp_client_send_request (g_task_get_source_object (task), "tools/list", params,
                                        g_task_get_cancellable (task), page_cb, task);
}

void
corral_mcp_client_list_tools_async (CorralMcpClient *self,
                                    GCancellable *cancellable,
                                    GAsyncReadyCallback callback,
                                    gpointer user_data)
{
        GTask *task = g_task_new (self, cancellable, callback, user_data);
        ListState *state = g_new0 (ListState, 1);

        state->tools = g_ptr_array_new_with_free_func ((GDestroyNotify) corral_mcp_tool_free);
        state->names = g_hash_table_new (g_str_hash, g_str_equal);
        g_task_set_task_data (task, state, (GDestroyNotify) list_state_free);
        list_page (task, NULL);
}

GPtrArray *
corral_mcp_client_list_tools_finish (CorralMcpClient *self, GAsyncResult *result, GError **error)
{
        return g_task_propagate_pointer (G_TASK (result), error);
}

CorralMcpToolResult *
corral_mcp_tool_result_new_from_json (const cJSON *result, GError **error)
{
        const cJSON *content = cJSON_GetObjectItemCaseSensitive (result, "content");
        const cJSON *structured = cJSON_GetObjectItemCaseSensitive (result, "structuredContent");
        const cJSON *is_error = cJSON_GetObjectItemCaseSensitive (result, "isError");
        CorralMcpToolResult *ret;

        if ((content && !cJSON_IsArray (content)) || (is_error && !cJSON_IsBool (is_error))) {
                g_set_error_literal (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_PROTOCOL,
                                     _ ("the answer to tools/call is malformed"));
                return NULL;
        }
        ret = g_new0 (CorralMcpToolResult, 1);
        ret->content = content ? cJSON_Duplicate (content, TRUE) : cJSON_CreateArray ();
        ret->structured = structured ? cJSON_Duplicate (structured, TRUE) : NULL;
        ret->is_error = cJSON_IsTrue (is_error);
        return ret;
}

static const char *
str_member (const cJSON *obj, const char *key)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (obj, key);

        return cJSON_IsString (item) ? item->valuestring : NULL;
}

static void
summarise_resource (GString *out, const cJSON *block)
{
        const cJSON *res = cJSON_GetObjectItemCaseSensitive (block, "resource");
        const char *uri = str_member (res, "uri"), *text = str_member (res, "text");
        const char *mime = str_member (res, "mimeType"), *blob = str_member (res, "blob");

        if (text)
                g_string_append_printf (out, "[resource %s]\n%s", uri ? uri : "?", text);
        else
                g_string_append_printf (out, _ ("[binary resource %s: %s, about %zu bytes]"),
                                        uri ? uri : "?", mime ? mime : "?",
                                        blob ? strlen (blob) / 4 * 3 : 0);
}

static void
append_block (GString *out, const cJSON *block)
{
        const char *type = str_member (block, "type");
        const char *mime = str_member (block, "mimeType");
        const char *data = str_member (block, "data");

        if (out->len > 0)
                g_string_append_c (out, '\n');
        if (g_strcmp0 (type, "text") == 0 && str_member (block, "text"))
                g_string_append (out, str_member (block, "text"));
        else if (g_strcmp0 (type, "image") == 0 || g_strcmp0 (type, "audio") == 0)
                g_string_append_printf (out, _ ("[%s: %s, about %zu bytes]"), type,
                                        mime ? mime : "?", data ? strlen (data) / 4 * 3 : 0);
        else if (g_strcmp0 (type, "resource_link") == 0)
                g_string_append_printf (out, _ ("[resource link: %s %s]"),
                                        str_member (block, "name") ?: "?",
                                        str_member (block, "uri") ?: "?");
        else if (g_strcmp0 (type, "resource") == 0)
                summarise_resource (out, block);
        else
                g_string_append (out, _ ("[content of an unsupported type]"));
}

char *
corral_mcp_tool_result_to_text (const CorralMcpToolResult *result, gsize max_bytes)
{
        g_autoptr (GString) out = g_string_new (NULL);
        g_autofree char *safe = NULL;
        const cJSON *block;

        cJSON_ArrayForEach (block, result->content) {
                append_block (out, block);
        }
        if (out->len == 0 && result->structured) {
                char *json = cJSON_PrintUnformatted (result->structured);

                g_string_append (out, json ? json : "");
                cJSON_free (json);
        }
        safe = corral_mcp_sanitize_text (out->str, out->len, max_bytes);
        if (out->len <= max_bytes)
                return g_steal_pointer (&safe);
        return g_strdup_printf (_ ("%s\n[output cut: %zu of %zu bytes not shown]"), safe,
                                out->len - max_bytes, out->len);
}
