/* assistant-tools.c — the tools offered to the model, and running one tool call.
 *
 * Every call ends with a result for the model, errors included: an unknown tool, a missing
 * argument or a failure in the VM is something the model can read and act on. Only
 * cancellation fails a call. After each call, the records the sandbox wrote while it ran are
 * read, and refusals are explained at the end of the result.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "assistant-private.h"

#include "assistant-text.h"

#include <glib/gi18n-lib.h>
#include <string.h>

#define MCP_RESULT_MAX ((gsize) 64 * 1024)

typedef struct {
        const char *name;
        void (*run) (AssistantToolCall *call);
        const char *description;
        const char *schema;
} BuiltinTool;

static const BuiltinTool builtins[] = {
        { "shell", assistant_tool_shell,
          "Run a shell command (sh -c) in the VM as an unprivileged user. Returns stdout and "
          "stderr interleaved, then the exit status. Long output is cut in the middle.",
          "{\"type\":\"object\",\"properties\":{"
          "\"command\":{\"type\":\"string\",\"description\":\"The command line\"},"
          "\"description\":{\"type\":\"string\",\"description\":\"What the command does, in "
          "a few plain words for the person watching (e.g. Sort the notes into folders by "
          "topic); shown to them instead of the command\"},"
          "\"timeout\":{\"type\":\"integer\",\"description\":\"Seconds before the command is "
          "killed\"},"
          "\"cwd\":{\"type\":\"string\",\"description\":\"Working directory (a VM path)\"}},"
          "\"required\":[\"command\"]}" },
        { "view", assistant_tool_view,
          "Show a file with line numbers (optionally only lines view_range [first, last]; last "
          "-1 means to the end), or list a directory.",
          "{\"type\":\"object\",\"properties\":{"
          "\"path\":{\"type\":\"string\",\"description\":\"Absolute VM path\"},"
          "\"view_range\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},"
          "\"minItems\":2,\"maxItems\":2}},\"required\":[\"path\"]}" },
        { "create", assistant_tool_create,
          "Create a new file with the given text (missing folders are created). Refuses to "
          "overwrite an existing file: change those with str_replace or insert.",
          "{\"type\":\"object\",\"properties\":{"
          "\"path\":{\"type\":\"string\"},\"file_text\":{\"type\":\"string\"}},"
          "\"required\":[\"path\",\"file_text\"]}" },
        { "str_replace", assistant_tool_str_replace,
          "Replace old_str, which must occur exactly once in the file, with new_str.",
          "{\"type\":\"object\",\"properties\":{"
          "\"path\":{\"type\":\"string\"},\"old_str\":{\"type\":\"string\"},"
          "\"new_str\":{\"type\":\"string\"}},\"required\":[\"path\",\"old_str\",\"new_str\"]}" },
        { "insert", assistant_tool_insert,
          "Insert new_str after line insert_line of the file (0: at the start).",
          "{\"type\":\"object\",\"properties\":{"
          "\"path\":{\"type\":\"string\"},\"insert_line\":{\"type\":\"integer\"},"
          "\"new_str\":{\"type\":\"string\"}},\"required\":[\"path\",\"insert_line\",\"new_str\"]"
          "}" },
        { "request_approval", assistant_tool_request_approval,
          "Ask the person to allow one thing the sandbox refuses: action \"delete\" with the "
          "/workspace path of a file or empty folder, or action \"network\" with a host or "
          "host:port the network policy does not allow. Give a short reason. If they agree, "
          "the host does it (deletes the file, or opens the host) and the result says so.",
          "{\"type\":\"object\",\"properties\":{"
          "\"action\":{\"type\":\"string\",\"enum\":[\"delete\",\"network\"]},"
          "\"path\":{\"type\":\"string\"},\"host\":{\"type\":\"string\"},"
          "\"reason\":{\"type\":\"string\"}},\"required\":[\"action\",\"reason\"]}" },
};

void
agent_tools_describe (CorralAssistantSession *self, CorralLlmConversation *conv)
{
        g_ptr_array_set_size (conv->tools, 0);
        for (gsize i = 0; i < G_N_ELEMENTS (builtins); i++)
                corral_llm_conversation_add_tool (conv, builtins[i].name, builtins[i].description,
                                                  cJSON_Parse (builtins[i].schema));
        assistant_computer_describe (self, conv);
        if (!self->mcp)
                return;
        for (guint i = 0; i < corral_mcp_manager_get_tools (self->mcp)->len; i++) {
                CorralMcpExposedTool *t = corral_mcp_manager_get_tools (self->mcp)->pdata[i];
                corral_llm_conversation_add_tool (
                        conv, t->name, t->tool->description ? t->tool->description : t->tool->name,
                        cJSON_Duplicate (t->tool->input_schema, TRUE));
        }
}

static gboolean
is_mcp_tool (CorralAssistantSession *self, const char *name)
{
        GPtrArray *tools = self->mcp ? corral_mcp_manager_get_tools (self->mcp) : NULL;

        for (guint i = 0; tools && i < tools->len; i++)
                if (g_str_equal (((CorralMcpExposedTool *) tools->pdata[i])->name, name))
                        return TRUE;
        return FALSE;
}

static void
call_free (AssistantToolCall *call)
{
        g_clear_pointer (&call->card, corral_assistant_tool_card_unref);
        g_clear_pointer (&call->input, cJSON_Delete);
        g_clear_object (&call->cancellable);
        g_free (call);
}

static void
unknown_tool (AssistantToolCall *call)
{
        GString *names = g_string_new (NULL);
        CorralAssistantSession *self = call->session;

        for (gsize i = 0; i < G_N_ELEMENTS (builtins); i++)
                g_string_append_printf (names, "%s%s", i ? ", " : "", builtins[i].name);
        if (self->computer)
                g_string_append (names, ", computer, ask_for_help");
        for (guint i = 0; self->mcp && i < corral_mcp_manager_get_tools (self->mcp)->len; i++)
                g_string_append_printf (
                        names, ", %s",
                        ((CorralMcpExposedTool *) corral_mcp_manager_get_tools (self->mcp)
                                 ->pdata[i])
                                ->name);
        assistant_tool_call_return (
                call,
                g_strdup_printf (_ ("There is no tool named “%s”. The tools are: "
                                    "%s."),
                                 call->card->tool, names->str),
                TRUE);
        g_string_free (names, TRUE);
}

void
agent_tools_run_async (CorralAssistantSession *self,
                       const CorralLlmBlock *block,
                       CorralAssistantToolCard *card,
                       GCancellable *cancellable,
                       GAsyncReadyCallback callback,
                       gpointer user_data)
{
        AssistantToolCall *call = g_new0 (AssistantToolCall, 1);

        call->session = self;
        call->card = corral_assistant_tool_card_ref (card);
        call->input = cJSON_IsObject (block->input) ? cJSON_Duplicate (block->input, TRUE)
                                                    : cJSON_CreateObject ();
        call->cancellable = cancellable ? g_object_ref (cancellable) : NULL;
        call->task = g_task_new (self, cancellable, callback, user_data);
        call->started_us = g_get_monotonic_time ();
        g_task_set_task_data (call->task, call, (GDestroyNotify) call_free);
        assistant_sandbox_mark (self->vm_dir, &call->mark);
        for (gsize i = 0; i < G_N_ELEMENTS (builtins); i++) {
                if (g_str_equal (block->name, builtins[i].name)) {
                        builtins[i].run (call);
                        return;
                }
        }
        if (self->computer && g_str_equal (block->name, "computer"))
                assistant_tool_computer (call);
        else if (self->computer && g_str_equal (block->name, "ask_for_help"))
                assistant_tool_ask_for_help (call);
        else if (is_mcp_tool (self, block->name))
                assistant_tool_mcp (call);
        else
                unknown_tool (call);
}

gboolean
agent_tools_run_finish (GAsyncResult *result, GError **error)
{
        return g_task_propagate_boolean (G_TASK (result), error);
}

/* Adds what the sandbox recorded during the call to the card, and its refusals to text. */
static void
add_sandbox_records (AssistantToolCall *call, GString *text)
{
        guint64 skipped = 0;
        g_autoptr (GPtrArray) records =
                assistant_sandbox_read_since (call->session->vm_dir, &call->mark, &skipped);

        for (guint i = 0; i < records->len; i++) {
                const cJSON *rec = records->pdata[i];
                char *explained = assistant_sandbox_explain (rec);
                const cJSON *source = cJSON_GetObjectItemCaseSensitive (rec, "source");
                gboolean files =
                        cJSON_IsString (source) && g_str_equal (source->valuestring, "files");

                if (explained) {
                        g_string_append_printf (text, "\n\n%s", explained);
                        g_ptr_array_add (call->card->blocked, explained);
                }
                /* The file server's note of the organisation's policy is not traffic. */
                if (cJSON_IsString (source) && g_str_equal (source->valuestring, "policy"))
                        continue;
                if (!files) {
                        g_ptr_array_add (call->card->network, assistant_sandbox_summary (rec));
                        continue;
                }
                /* Files changed: paths, as the workspace names them (the Changes panel has the
                 * task's whole list from the change journal); refused attempts are under
                 * "blocked", and the guest agent's temporary files are not changes. */
                {
                        char *vm_path = assistant_sandbox_changed_path (rec);

                        if (vm_path &&
                            !g_ptr_array_find_with_equal_func (call->card->files_changed, vm_path,
                                                               g_str_equal, NULL))
                                g_ptr_array_add (call->card->files_changed, vm_path);
                        else
                                g_free (vm_path);
                }
        }
        if (skipped)
                g_string_append_printf (text,
                                        _ ("\n\n[The sandbox logged more than can be shown here; "
                                           "%llu bytes of records were skipped.]"),
                                        (unsigned long long) skipped);
}

void
corral_assistant_result_describe (const char *text, int *ret_exit_code, GPtrArray **ret_blocked)
{
        const char *prefix = assistant_sandbox_explanation_prefix ();
        GPtrArray *blocked = g_ptr_array_new_with_free_func (g_free);
        g_autofree char *needle = g_strconcat ("\n\n", prefix, NULL);
        const char *first = text ? strstr (text, needle) : NULL;
        const char *end, *line;

        g_return_if_fail (ret_exit_code != NULL && ret_blocked != NULL);
        *ret_exit_code = -1;
        *ret_blocked = blocked;
        if (!text)
                return;
        /* The command's part ends with its status line; the refusals follow, a paragraph each
         * (add_sandbox_records). */
        end = first ? first : text + strlen (text);
        while (end > text && end[-1] == '\n')
                end--;
        line = g_strrstr_len (text, end - text, "\n");
        line = line ? line + 1 : text;
        *ret_exit_code = assistant_shell_parse_status (line, (gsize) (end - line));
        for (const char *p = first; p; p = strstr (p + 2, needle)) {
                const char *start = p + 2;
                const char *stop = strstr (start, "\n\n");

                g_ptr_array_add (blocked, stop ? g_strndup (start, (gsize) (stop - start))
                                               : g_strdup (start));
        }
}

void
assistant_tool_call_return (AssistantToolCall *call, char *text, gboolean is_error)
{
        GString *out = g_string_new (text);
        GTask *task = call->task;

        g_free (text);
        g_return_if_fail (!call->returned);
        call->returned = TRUE;
        if (g_cancellable_is_cancelled (call->cancellable)) {
                g_string_free (out, TRUE);
                g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                         _ ("The task was stopped"));
                g_object_unref (task);
                return;
        }
        add_sandbox_records (call, out);
        call->card->is_error = is_error;
        call->card->finished = TRUE;
        call->card->duration_us = g_get_monotonic_time () - call->started_us;
        g_free (call->card->output);
        call->card->output = g_string_free (out, FALSE);
        g_task_return_boolean (task, TRUE);
        g_object_unref (task);
}

void
assistant_tool_call_return_error (AssistantToolCall *call, const GError *error)
{
        assistant_tool_call_return (call, g_strdup (error->message), TRUE);
}

/* Arguments ----------------------------------------------------------------------------------- */

static void
bad_arg (AssistantToolCall *call, const char *name, const char *expected)
{
        assistant_tool_call_return (call,
                                    g_strdup_printf (_ ("The argument “%s” of %s must be %s."),
                                                     name, call->card->tool, expected),
                                    TRUE);
}

gboolean
assistant_arg_string (AssistantToolCall *call,
                      const char *name,
                      gboolean required,
                      const char **ret)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (call->input, name);

        if (!item && !required)
                return TRUE;
        if (!cJSON_IsString (item)) {
                bad_arg (call, name, _ ("a string"));
                return FALSE;
        }
        *ret = item->valuestring;
        return TRUE;
}

gboolean
assistant_arg_int (AssistantToolCall *call,
                   const char *name,
                   gint64 min,
                   gint64 max,
                   gboolean required,
                   gint64 *ret)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (call->input, name);
        g_autofree char *expected = NULL;

        if (!item && !required)
                return TRUE;
        if (cJSON_IsNumber (item) && item->valuedouble == (double) (gint64) item->valuedouble &&
            item->valuedouble >= (double) min && item->valuedouble <= (double) max) {
                *ret = (gint64) item->valuedouble;
                return TRUE;
        }
        expected = g_strdup_printf (_ ("a whole number from %lld to %lld"), (long long) min,
                                    (long long) max);
        bad_arg (call, name, expected);
        return FALSE;
}

gboolean
assistant_arg_path (AssistantToolCall *call, const char **ret)
{
        const char *path = NULL;

        if (!assistant_arg_string (call, "path", TRUE, &path))
                return FALSE;
        if (path[0] != '/') {
                bad_arg (call, "path", _ ("an absolute path in the VM (starting with /)"));
                return FALSE;
        }
        *ret = path;
        g_free (call->card->title);
        call->card->title = g_strdup (path);
        return TRUE;
}

/* MCP tools ------------------------------------------------------------------------------------ */

static void
mcp_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        AssistantToolCall *call = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralMcpToolResult) res =
                corral_mcp_manager_call_tool_finish (CORRAL_MCP_MANAGER (source), result, &error);

        if (!res) {
                assistant_tool_call_return (
                        call, g_strdup_printf (_ ("The tool server failed: %s"), error->message),
                        TRUE);
                return;
        }
        assistant_tool_call_return (call, corral_mcp_tool_result_to_text (res, MCP_RESULT_MAX),
                                    res->is_error);
}

void
assistant_tool_mcp (AssistantToolCall *call)
{
        g_free (call->card->title);
        call->card->title = g_strdup_printf (_ ("%s (on this computer)"), call->card->tool);
        corral_mcp_manager_call_tool_async (call->session->mcp, call->card->tool,
                                            cJSON_Duplicate (call->input, TRUE), call->cancellable,
                                            mcp_done, call);
}
