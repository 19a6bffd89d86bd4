/* corral-mcp-server-tools.c — the tools of `corralctl mcp`: exec, read_file, write_file,
 * list_dir, vm_info, all carried out by the guest agent.
 *
 * Arguments come from an MCP client (often a model) and are checked before anything reaches the
 * agent: only known keys, the right types, bounded sizes, absolute paths. A bad argument gives a
 * tool error that says what is wrong, so the model can fix its call.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-mcp-server-private.h"

#include "corral-vmm.h"

#include <glib/gi18n-lib.h>
#include <math.h>
#include <string.h>

#include "corral-computer-log.h"

#define MAX_PATH 4096
#define MAX_COMMAND ((gsize) 64 * 1024)
#define MAX_ARGV 1024
#define MAX_OUTPUT ((gsize) 100 * 1024) /* kept per stream; the rest is counted and dropped */
#define DEFAULT_READ ((gint64) 256 * 1024)
#define MAX_READ ((gint64) 1024 * 1024)
#define MAX_WRITE ((gsize) 3 * 1024 * 1024)
#define MAX_LIST_SHOWN 2000

typedef void (*ToolRun) (const CorralMcpBackend *backend, const cJSON *args, GTask *task);

typedef struct {
        const char *name;
        const char *description;
        const char *schema; /* JSON */
        ToolRun run;
} Tool;

cJSON *
corral_mcp_server_text_result (const char *text, gboolean is_error)
{
        cJSON *result = cJSON_CreateObject ();
        cJSON *content = cJSON_AddArrayToObject (result, "content");
        cJSON *block = cJSON_CreateObject ();

        cJSON_AddStringToObject (block, "type", "text");
        cJSON_AddStringToObject (block, "text", text);
        cJSON_AddItemToArray (content, block);
        if (is_error)
                cJSON_AddBoolToObject (result, "isError", TRUE);
        return result;
}

static void
return_tool_error (GTask *task, const char *text)
{
        g_task_return_pointer (task, corral_mcp_server_text_result (text, TRUE),
                               (GDestroyNotify) cJSON_Delete);
}

/* Argument checks ------------------------------------------------------------------------------ */

static gboolean
only_keys (const cJSON *args, const char *const *allowed, GError **error)
{
        const cJSON *item;

        cJSON_ArrayForEach (item, args) {
                if (!g_strv_contains (allowed, item->string)) {
                        g_autofree char *safe =
                                corral_mcp_sanitize_text (item->string, strlen (item->string), 64);

                        g_set_error (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_INVALID_ARGUMENT,
                                     _ ("unknown argument “%s”"), safe);
                        return FALSE;
                }
        }
        return TRUE;
}

static gboolean
get_path (const cJSON *args, const char *key, gboolean required, const char **ret, GError **error)
{
        if (!corral_mcp_get_string (args, key, MAX_PATH, ret, error))
                return FALSE;
        if (!*ret && !required)
                return TRUE;
        if (!*ret || **ret != '/') {
                g_set_error (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” must be an absolute path in the VM"), key);
                return FALSE;
        }
        return TRUE;
}

/* An optional number in [min, max]; integral when integer. */
static gboolean
get_number (const cJSON *args,
            const char *key,
            double min,
            double max,
            gboolean integer,
            double *ret,
            GError **error)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (args, key);

        if (!item)
                return TRUE;
        if (!cJSON_IsNumber (item) || !isfinite (item->valuedouble) || item->valuedouble < min ||
            item->valuedouble > max ||
            (integer && item->valuedouble != floor (item->valuedouble))) {
                g_set_error (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_INVALID_ARGUMENT,
                             integer ? _ ("“%s” must be a whole number from %.0f to %.0f")
                                     : _ ("“%s” must be a number from %g to %g"),
                             key, min, max);
                return FALSE;
        }
        *ret = item->valuedouble;
        return TRUE;
}

static gboolean
get_bool (const cJSON *args, const char *key, gboolean *ret, GError **error)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (args, key);

        if (!item)
                return TRUE;
        if (!cJSON_IsBool (item)) {
                g_set_error (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” must be true or false"), key);
                return FALSE;
        }
        *ret = cJSON_IsTrue (item);
        return TRUE;
}

static char **
get_argv (const cJSON *argv, GError **error)
{
        g_autoptr (GStrvBuilder) builder = g_strv_builder_new ();
        const cJSON *item;
        int n = cJSON_GetArraySize (argv);

        if (!cJSON_IsArray (argv) || n < 1 || n > MAX_ARGV) {
                g_set_error_literal (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_INVALID_ARGUMENT,
                                     _ ("“argv” must be an array of 1 to 1024 strings"));
                return NULL;
        }
        cJSON_ArrayForEach (item, argv) {
                if (!cJSON_IsString (item) || strlen (item->valuestring) > MAX_COMMAND) {
                        g_set_error_literal (error, CORRAL_MCP_ERROR,
                                             CORRAL_MCP_ERROR_INVALID_ARGUMENT,
                                             _ ("“argv” must hold strings of at most 64 KiB"));
                        return NULL;
                }
                g_strv_builder_add (builder, item->valuestring);
        }
        return g_strv_builder_end (builder);
}

/* exec ----------------------------------------------------------------------------------------- */

static CorralExecSpec *
exec_spec (const cJSON *args, GError **error)
{
        static const char *const keys[] = { "command", "argv", "cwd", "timeout", NULL };
        const cJSON *argv = cJSON_GetObjectItemCaseSensitive (args, "argv");
        const char *command = NULL, *cwd = NULL;
        g_autoptr (CorralExecSpec) spec = NULL;
        double timeout = 60;

        if (!only_keys (args, keys, error) ||
            !corral_mcp_get_string (args, "command", MAX_COMMAND, &command, error) ||
            !get_path (args, "cwd", FALSE, &cwd, error) ||
            !get_number (args, "timeout", 1, 3600, FALSE, &timeout, error))
                return NULL;
        if (!!command == !!argv || (command && !*command)) {
                g_set_error_literal (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_INVALID_ARGUMENT,
                                     _ ("give either “command” (a shell command line) or “argv” "
                                        "(an array), not both"));
                return NULL;
        }
        if (argv) {
                g_auto (GStrv) strv = get_argv (argv, error);

                if (!strv)
                        return NULL;
                spec = corral_exec_spec_new_argv ((const char *const *) strv);
        } else {
                spec = corral_exec_spec_new_shell (command);
        }
        if (cwd)
                corral_exec_spec_set_cwd (spec, cwd);
        corral_exec_spec_set_timeout_ms (spec, (guint64) (timeout * 1000));
        return g_steal_pointer (&spec);
}

static void
append_stream (GString *out, const char *label, GBytes *data, guint64 total)
{
        gsize len = data ? g_bytes_get_size (data) : 0;
        g_autofree char *text =
                len ? corral_mcp_sanitize_text (g_bytes_get_data (data, NULL), len, len + 8) : NULL;

        if (total == 0)
                return;
        g_string_append_printf (out, "\n--- %s ---\n%s", label, text ? text : "");
        if (total > len)
                g_string_append_printf (out, _ ("\n[%s truncated: %llu of %llu bytes cut]"), label,
                                        (unsigned long long) (total - len),
                                        (unsigned long long) total);
}

static cJSON *
exec_result (CorralRunResult *run)
{
        g_autoptr (GString) out = g_string_new (NULL);
        cJSON *result, *structured;

        if (run->timed_out)
                g_string_append (out, _ ("The command timed out and was killed."));
        else if (run->term_signal > 0)
                g_string_append_printf (out, _ ("The command was killed by signal %d."),
                                        run->term_signal);
        else
                g_string_append_printf (out, _ ("Exit code: %d"), run->exit_code);
        append_stream (out, "stdout", run->stdout_data, run->stdout_total);
        append_stream (out, "stderr", run->stderr_data, run->stderr_total);
        result = corral_mcp_server_text_result (out->str, run->timed_out);
        structured = cJSON_AddObjectToObject (result, "structuredContent");
        cJSON_AddNumberToObject (structured, "exitCode", run->exit_code);
        cJSON_AddNumberToObject (structured, "signal", run->term_signal);
        cJSON_AddBoolToObject (structured, "timedOut", run->timed_out);
        return result;
}

static void
exec_done (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralRunResult) run =
                corral_agent_client_run_finish (CORRAL_AGENT_CLIENT (source), res, &error);

        if (!run) {
                g_autofree char *text =
                        g_strdup_printf (_ ("Could not run the command: %s"), error->message);

                return_tool_error (task, text);
                return;
        }
        g_task_return_pointer (task, exec_result (run), (GDestroyNotify) cJSON_Delete);
}

static void
run_exec (const CorralMcpBackend *backend, const cJSON *args, GTask *task)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralExecSpec) spec = exec_spec (args, &error);

        if (!spec) {
                return_tool_error (task, error->message);
                return;
        }
        corral_agent_client_run_async (backend->agent, spec, MAX_OUTPUT,
                                       g_task_get_cancellable (task), exec_done,
                                       g_object_ref (task));
}

/* read_file ------------------------------------------------------------------------------------ */

typedef struct {
        gint64 max; /* bytes to show */
} ReadState;

static void
read_done (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        ReadState *state = g_task_get_task_data (task);
        g_autoptr (GError) error = NULL;
        g_autoptr (GBytes) bytes =
                corral_agent_client_read_file_finish (CORRAL_AGENT_CLIENT (source), res, &error);
        g_autofree char *text = NULL;
        gsize len;
        const char *data;

        if (!bytes) {
                text = g_strdup_printf (_ ("Could not read the file: %s"), error->message);
                return_tool_error (task, text);
                return;
        }
        data = g_bytes_get_data (bytes, &len);
        if (memchr (data, '\0', len) ||
            !g_utf8_validate (data, (gssize) MIN (len, (gsize) state->max), NULL)) {
                text = g_strdup_printf (_ ("[binary file: not shown as text (%zu bytes read)]"),
                                        len);
        } else if (len > (gsize) state->max) {
                g_autofree char *shown = g_strndup (data, (gsize) state->max);

                text = g_strdup_printf (
                        _ ("%s\n[file truncated: showing the first %lld bytes; use offset to read "
                           "on]"),
                        shown, (long long) state->max);
        } else {
                text = g_strndup (data, len);
        }
        g_task_return_pointer (task, corral_mcp_server_text_result (text, FALSE),
                               (GDestroyNotify) cJSON_Delete);
}

static void
run_read_file (const CorralMcpBackend *backend, const cJSON *args, GTask *task)
{
        static const char *const keys[] = { "path", "offset", "max_bytes", NULL };
        g_autoptr (GError) error = NULL;
        const char *path = NULL;
        double offset = 0, max = (double) DEFAULT_READ;
        ReadState *state;

        if (!only_keys (args, keys, &error) || !get_path (args, "path", TRUE, &path, &error) ||
            !get_number (args, "offset", 0, 1e15, TRUE, &offset, &error) ||
            !get_number (args, "max_bytes", 1, (double) MAX_READ, TRUE, &max, &error)) {
                return_tool_error (task, error->message);
                return;
        }
        state = g_new0 (ReadState, 1);
        state->max = (gint64) max;
        g_task_set_task_data (task, state, g_free);
        /* One byte more than shown tells whether there is more. */
        corral_agent_client_read_file_async (backend->agent, path, (guint64) offset, state->max + 1,
                                             (gsize) state->max + 1, g_task_get_cancellable (task),
                                             read_done, g_object_ref (task));
}

/* write_file ----------------------------------------------------------------------------------- */

static void
write_done (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        g_autoptr (GError) error = NULL;
        g_autofree char *text = NULL;
        gsize len = GPOINTER_TO_SIZE (g_task_get_task_data (task));

        if (!corral_agent_client_write_file_finish (CORRAL_AGENT_CLIENT (source), res, &error)) {
                text = g_strdup_printf (_ ("Could not write the file: %s"), error->message);
                return_tool_error (task, text);
                return;
        }
        text = g_strdup_printf (_ ("Wrote %zu bytes."), len);
        g_task_return_pointer (task, corral_mcp_server_text_result (text, FALSE),
                               (GDestroyNotify) cJSON_Delete);
}

static void
run_write_file (const CorralMcpBackend *backend, const cJSON *args, GTask *task)
{
        static const char *const keys[] = { "path", "content", "append", NULL };
        g_autoptr (GError) error = NULL;
        g_autoptr (GBytes) bytes = NULL;
        const char *path = NULL, *content = NULL;
        gboolean append = FALSE;

        if (!only_keys (args, keys, &error) || !get_path (args, "path", TRUE, &path, &error) ||
            !corral_mcp_get_string (args, "content", MAX_WRITE, &content, &error) ||
            !get_bool (args, "append", &append, &error)) {
                return_tool_error (task, error->message);
                return;
        }
        if (!content) {
                return_tool_error (task, _ ("“content” is missing"));
                return;
        }
        bytes = g_bytes_new (content, strlen (content));
        g_task_set_task_data (task, GSIZE_TO_POINTER (strlen (content)), NULL);
        corral_agent_client_write_file_async (
                backend->agent, path, bytes, append ? CORRAL_WRITE_APPEND : CORRAL_WRITE_REPLACE, 0,
                g_task_get_cancellable (task), write_done, g_object_ref (task));
}

/* list_dir ------------------------------------------------------------------------------------- */

static const char *
type_suffix (CorralFileType type)
{
        switch (type) {
        case CORRAL_FILE_TYPE_DIR:
                return "/";
        case CORRAL_FILE_TYPE_SYMLINK:
                return "@";
        case CORRAL_FILE_TYPE_FILE:
                return "";
        default:
                return "?";
        }
}

static int
compare_entries (gconstpointer a, gconstpointer b)
{
        const CorralFileEntry *x = *(CorralFileEntry **) a, *y = *(CorralFileEntry **) b;

        return strcmp (x->name, y->name);
}

static void
list_done (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        g_autoptr (GError) error = NULL;
        gboolean truncated = FALSE;
        g_autoptr (GPtrArray) entries = corral_agent_client_list_finish (
                CORRAL_AGENT_CLIENT (source), res, &truncated, &error);
        g_autoptr (GString) out = g_string_new (NULL);

        if (!entries) {
                g_autofree char *text =
                        g_strdup_printf (_ ("Could not list the folder: %s"), error->message);

                return_tool_error (task, text);
                return;
        }
        g_ptr_array_sort (entries, compare_entries);
        for (guint i = 0; i < entries->len && i < MAX_LIST_SHOWN; i++) {
                CorralFileEntry *e = entries->pdata[i];
                g_autofree char *name = corral_mcp_sanitize_text (e->name, strlen (e->name), 1024);

                g_string_append_printf (out, "%s%s\t%" G_GUINT64_FORMAT "\n", name,
                                        type_suffix (e->type), e->size);
        }
        if (truncated || entries->len > MAX_LIST_SHOWN)
                g_string_append (out, _ ("[listing truncated: the folder has more entries]\n"));
        if (entries->len == 0)
                g_string_append (out, _ ("(empty folder)\n"));
        g_task_return_pointer (task, corral_mcp_server_text_result (out->str, FALSE),
                               (GDestroyNotify) cJSON_Delete);
}

static void
run_list_dir (const CorralMcpBackend *backend, const cJSON *args, GTask *task)
{
        static const char *const keys[] = { "path", NULL };
        g_autoptr (GError) error = NULL;
        const char *path = NULL;

        if (!only_keys (args, keys, &error) || !get_path (args, "path", TRUE, &path, &error)) {
                return_tool_error (task, error->message);
                return;
        }
        corral_agent_client_list_async (backend->agent, path, g_task_get_cancellable (task),
                                        list_done, g_object_ref (task));
}

/* vm_info -------------------------------------------------------------------------------------- */

static void
info_done (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        CorralAgentClient *agent = CORRAL_AGENT_CLIENT (source);
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) info = corral_agent_client_info_finish (agent, res, &error);
        const char *vm = g_task_get_task_data (task);
        const char *version = corral_agent_client_get_agent_version (agent);
        g_autofree char *json = NULL;
        cJSON *result;

        if (!info) {
                g_autofree char *text = g_strdup_printf (
                        _ ("Could not read the VM's information: %s"), error->message);
                return_tool_error (task, text);
                return;
        }
        /* Replace, not add: the guest may send keys of the same name. */
        cJSON_DeleteItemFromObjectCaseSensitive (info, "vm");
        cJSON_DeleteItemFromObjectCaseSensitive (info, "agent_version");
        if (vm)
                cJSON_AddStringToObject (info, "vm", vm);
        cJSON_AddStringToObject (info, "agent_version", version ? version : "");
        json = cJSON_PrintUnformatted (info);
        result = corral_mcp_server_text_result (json, FALSE);
        cJSON_AddItemToObject (result, "structuredContent", g_steal_pointer (&info));
        g_task_return_pointer (task, result, (GDestroyNotify) cJSON_Delete);
}

static void
run_vm_info (const CorralMcpBackend *backend, const cJSON *args, GTask *task)
{
        static const char *const keys[] = { NULL };
        g_autoptr (GError) error = NULL;

        if (!only_keys (args, keys, &error)) {
                return_tool_error (task, error->message);
                return;
        }
        g_task_set_task_data (task, g_strdup (backend->vm_name), g_free);
        corral_agent_client_info_async (backend->agent, g_task_get_cancellable (task), info_done,
                                        g_object_ref (task));
}

/* The table ------------------------------------------------------------------------------------ */

static const Tool tools[] = {
        { "exec",
          N_ ("Run a command inside the sandbox VM (never on the host) and return its exit code, "
              "stdout and stderr. Give either command (run by /bin/sh -c) or argv."),
          "{\"type\":\"object\",\"properties\":{"
          "\"command\":{\"type\":\"string\",\"description\":\"Shell command line\"},"
          "\"argv\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1},"
          "\"cwd\":{\"type\":\"string\",\"description\":\"Absolute working directory\"},"
          "\"timeout\":{\"type\":\"number\",\"minimum\":1,\"maximum\":3600,"
          "\"description\":\"Seconds before the command is killed (default 60)\"}},"
          "\"additionalProperties\":false}",
          run_exec },
        { "read_file", N_ ("Read a text file in the VM (absolute path)."),
          "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
          "\"offset\":{\"type\":\"integer\",\"minimum\":0},"
          "\"max_bytes\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1048576}},"
          "\"required\":[\"path\"],\"additionalProperties\":false}",
          run_read_file },
        { "write_file", N_ ("Create or replace (or append to) a file in the VM (absolute path)."),
          "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
          "\"content\":{\"type\":\"string\"},\"append\":{\"type\":\"boolean\"}},"
          "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}",
          run_write_file },
        { "list_dir",
          N_ ("List a folder in the VM: one entry per line, name (with / for folders, @ for "
              "symbolic links), a tab, the size."),
          "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},"
          "\"required\":[\"path\"],\"additionalProperties\":false}",
          run_list_dir },
        { "vm_info", N_ ("Show the VM's kernel, uptime, memory and disk."),
          "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}", run_vm_info },
};

cJSON *
corral_mcp_server_list_tools (void)
{
        CorralMcpBackend none = { 0 };

        return corral_mcp_server_backend_tools (&none);
}

cJSON *
corral_mcp_server_backend_tools (const CorralMcpBackend *backend)
{
        cJSON *list = cJSON_CreateArray ();
        CorralScreenScale scale = { 0 };

        for (gsize i = 0; i < G_N_ELEMENTS (tools); i++) {
                cJSON *tool = cJSON_CreateObject ();

                cJSON_AddStringToObject (tool, "name", tools[i].name);
                cJSON_AddStringToObject (tool, "description", _ (tools[i].description));
                cJSON_AddItemToObject (tool, "inputSchema", cJSON_Parse (tools[i].schema));
                cJSON_AddItemToArray (list, tool);
        }
        if (backend->computer)
                corral_computer_get_scale (backend->computer, &scale);
        if (scale.width && scale.height) {
                g_autofree char *description =
                        corral_computer_tool_describe (scale.width, scale.height);
                cJSON *tool = cJSON_CreateObject ();

                cJSON_AddStringToObject (tool, "name", "computer");
                cJSON_AddStringToObject (tool, "description", description);
                cJSON_AddItemToObject (tool, "inputSchema",
                                       cJSON_Parse (corral_computer_tool_schema));
                cJSON_AddItemToArray (list, tool);
        }
        return list;
}

typedef struct {
        GTask *task;
        char *log_dir; /* (nullable) */
        cJSON *input;
} ComputerCall;

/* The computer tool: its sentence, then the screenshot as MCP image content. */
static void
computer_done (GObject *source, GAsyncResult *res, gpointer data)
{
        ComputerCall *call = data;
        GTask *task = call->task;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralComputerResult) shot =
                corral_computer_run_finish (CORRAL_COMPUTER (source), res, &error);
        cJSON *result;

        if (call->log_dir)
                corral_computer_log (call->log_dir, "mcp", call->input, shot ? shot->text : NULL,
                                     error);
        g_free (call->log_dir);
        cJSON_Delete (call->input);
        g_free (call);

        if (!shot) {
                return_tool_error (task, error->message);
                g_object_unref (task);
                return;
        }
        result = corral_mcp_server_text_result (shot->text ? shot->text : "", FALSE);
        if (shot->image) {
                cJSON *image = cJSON_CreateObject ();
                g_autofree char *data64 = g_base64_encode (g_bytes_get_data (shot->image, NULL),
                                                           g_bytes_get_size (shot->image));

                cJSON_AddStringToObject (image, "type", "image");
                cJSON_AddStringToObject (image, "data", data64);
                cJSON_AddStringToObject (image, "mimeType", shot->mime_type);
                cJSON_AddItemToArray (cJSON_GetObjectItem (result, "content"), image);
        }
        g_task_return_pointer (task, result, (GDestroyNotify) cJSON_Delete);
        g_object_unref (task);
}

gboolean
corral_mcp_server_call_tool (const CorralMcpBackend *backend,
                             const char *name,
                             const cJSON *args,
                             GTask *task)
{
        if (backend->computer && g_str_equal (name, "computer")) {
                ComputerCall *call = g_new0 (ComputerCall, 1);

                call->task = g_object_ref (task);
                call->log_dir = g_strdup (backend->computer_log_dir);
                call->input = cJSON_Duplicate (args, TRUE);
                corral_computer_run_async (backend->computer, args, g_task_get_cancellable (task),
                                           computer_done, call);
                return TRUE;
        }
        for (gsize i = 0; i < G_N_ELEMENTS (tools); i++) {
                if (g_str_equal (tools[i].name, name)) {
                        tools[i].run (backend, args, task);
                        return TRUE;
                }
        }
        return FALSE;
}
