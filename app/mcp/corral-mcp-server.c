/* corral-mcp-server.c — JSON-RPC dispatch of the MCP server that serves a VM.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-mcp-server-private.h"
#include "corral-mcp-transport.h"

#include "corral-mcp-client.h"

#include <glib/gi18n-lib.h>
#include <string.h>

#define SERVER_BUSY (-32000)
#define NOT_INITIALIZED (-32002)

struct _CorralMcpServer {
        GObject parent_instance;
        CorralMcpBackend backend;
        char *vm_name;
        char *computer_log_dir;
        CorralMcpTransport *transport;
        GTask *run_task;
        gboolean initialized;
        gboolean input_eof;
        gulong cancel_id;
        GHashTable *calls; /* printed id -> Call */
};

G_DEFINE_FINAL_TYPE (CorralMcpServer, corral_mcp_server, G_TYPE_OBJECT)

typedef struct {
        CorralMcpServer *server; /* a reference */
        char *key;
        cJSON *id;
        cJSON *args; /* the tool's arguments, alive until the call completes */
        GCancellable *cancellable;
} Call;

static void
call_free (Call *call)
{
        g_free (call->key);
        cJSON_Delete (call->id);
        cJSON_Delete (call->args);
        g_clear_object (&call->cancellable);
        g_clear_object (&call->server);
        g_free (call);
}

static char *
id_key (const cJSON *id)
{
        char *printed = cJSON_PrintUnformatted (id);
        char *key = g_strdup (printed);

        cJSON_free (printed);
        return key;
}

static void
reply (CorralMcpServer *self, const cJSON *id, cJSON *result)
{
        corral_mcp_transport_send (self->transport,
                                   corral_mcp_result_new (cJSON_Duplicate (id, TRUE), result));
}

static void
reply_error (CorralMcpServer *self, const cJSON *id, int code, const char *message)
{
        corral_mcp_transport_send (
                self->transport,
                corral_mcp_error_new (id ? cJSON_Duplicate (id, TRUE) : NULL, code, message));
}

static void
handle_initialize (CorralMcpServer *self, CorralMcpMessage *msg)
{
        const char *asked = NULL;
        cJSON *result = cJSON_CreateObject ();
        cJSON *caps = cJSON_AddObjectToObject (result, "capabilities");
        cJSON *info = cJSON_CreateObject ();

        /* Answer with the client's version when we speak it, else with our latest (spec). */
        if (msg->params)
                corral_mcp_get_string (msg->params, "protocolVersion", 64, &asked, NULL);
        cJSON_AddStringToObject (result, "protocolVersion",
                                 corral_mcp_protocol_version_supported (asked)
                                         ? asked
                                         : CORRAL_MCP_LATEST_PROTOCOL_VERSION);
        cJSON_AddObjectToObject (caps, "tools");
        cJSON_AddStringToObject (info, "name", "corral");
        cJSON_AddStringToObject (info, "version", CORRAL_VERSION);
        cJSON_AddItemToObject (result, "serverInfo", info);
        cJSON_AddStringToObject (result, "instructions",
                                 _ ("Every tool runs inside a Corral sandbox VM, not on the "
                                    "user's computer. Paths are paths in the VM."));
        self->initialized = TRUE;
        reply (self, msg->id, result);
}

static void maybe_finish_after_eof (CorralMcpServer *self);

static void
call_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        Call *call = user_data;
        CorralMcpServer *self = call->server;
        g_autoptr (cJSON) ret = g_task_propagate_pointer (G_TASK (result), NULL);

        /* A cancelled request gets no answer (notifications/cancelled in the spec). */
        if (!g_cancellable_is_cancelled (call->cancellable) && ret)
                reply (self, call->id, g_steal_pointer (&ret));
        g_object_ref (self);
        g_hash_table_remove (self->calls, call->key);
        maybe_finish_after_eof (self);
        g_object_unref (self);
}

static void
handle_tools_call (CorralMcpServer *self, CorralMcpMessage *msg)
{
        const cJSON *args = cJSON_GetObjectItemCaseSensitive (msg->params, "arguments");
        const char *name = NULL;
        g_autoptr (GTask) task = NULL;
        Call *call;

        if (!msg->params || !corral_mcp_get_string (msg->params, "name", 128, &name, NULL) ||
            !name || (args && !cJSON_IsObject (args))) {
                reply_error (self, msg->id, CORRAL_MCP_INVALID_PARAMS,
                             "tools/call needs a string “name” and an object “arguments”");
                return;
        }
        if (g_hash_table_size (self->calls) >= CORRAL_MCP_SERVER_MAX_CALLS) {
                reply_error (self, msg->id, SERVER_BUSY, "Too many tool calls at once");
                return;
        }
        call = g_new0 (Call, 1);
        call->server = g_object_ref (self);
        call->key = id_key (msg->id);
        call->id = cJSON_Duplicate (msg->id, TRUE);
        call->args = args ? cJSON_Duplicate (args, TRUE) : cJSON_CreateObject ();
        call->cancellable = g_cancellable_new ();
        if (g_hash_table_contains (self->calls, call->key)) {
                reply_error (self, msg->id, CORRAL_MCP_INVALID_REQUEST,
                             "A request with this id is still running");
                call_free (call);
                return;
        }
        g_hash_table_insert (self->calls, call->key, call);
        task = g_task_new (NULL, call->cancellable, call_done, call);
        if (!corral_mcp_server_call_tool (&self->backend, name, call->args, task)) {
                g_autofree char *safe = corral_mcp_sanitize_text (name, strlen (name), 128);
                g_autofree char *text = g_strdup_printf ("Unknown tool: %s", safe);

                reply_error (self, msg->id, CORRAL_MCP_INVALID_PARAMS, text);
                g_cancellable_cancel (call->cancellable); /* no second answer from call_done */
                g_task_return_pointer (task, NULL, NULL);
        }
}

static void
handle_request (CorralMcpServer *self, CorralMcpMessage *msg)
{
        if (g_str_equal (msg->method, "initialize")) {
                handle_initialize (self, msg);
        } else if (g_str_equal (msg->method, "ping")) {
                reply (self, msg->id, NULL);
        } else if (!self->initialized && (g_str_equal (msg->method, "tools/list") ||
                                          g_str_equal (msg->method, "tools/call"))) {
                reply_error (self, msg->id, NOT_INITIALIZED, "Server not initialized");
        } else if (g_str_equal (msg->method, "tools/list")) {
                cJSON *result = cJSON_CreateObject ();

                cJSON_AddItemToObject (result, "tools",
                                       corral_mcp_server_backend_tools (&self->backend));
                reply (self, msg->id, result);
        } else if (g_str_equal (msg->method, "tools/call")) {
                handle_tools_call (self, msg);
        } else {
                reply_error (self, msg->id, CORRAL_MCP_METHOD_NOT_FOUND, "Method not found");
        }
}

static void
handle_notification (CorralMcpServer *self, CorralMcpMessage *msg)
{
        const cJSON *id;
        g_autofree char *key = NULL;
        Call *call;

        if (!g_str_equal (msg->method, "notifications/cancelled") || !msg->params)
                return;
        id = cJSON_GetObjectItemCaseSensitive (msg->params, "requestId");
        if (!id || !(cJSON_IsString (id) || cJSON_IsNumber (id)))
                return;
        key = id_key (id);
        if ((call = g_hash_table_lookup (self->calls, key)))
                g_cancellable_cancel (call->cancellable);
}

static void
on_message (CorralMcpTransport *transport, CorralMcpMessage *msg, CorralMcpServer *self)
{
        if (msg->kind == CORRAL_MCP_MESSAGE_REQUEST)
                handle_request (self, msg);
        else if (msg->kind == CORRAL_MCP_MESSAGE_NOTIFICATION)
                handle_notification (self, msg);
        /* We send no requests, so replies are stray: dropped. */
}

static void
on_invalid (
        CorralMcpTransport *transport, int code, gpointer id, GError *error, CorralMcpServer *self)
{
        reply_error (self, id, code, error->message);
}

static void
finish_run (CorralMcpServer *self, GError *error)
{
        g_autoptr (GTask) task = g_steal_pointer (&self->run_task);

        if (!task)
                return;
        if (self->cancel_id)
                g_cancellable_disconnect (g_task_get_cancellable (task), self->cancel_id);
        self->cancel_id = 0;
        if (error)
                g_task_return_error (task, g_error_copy (error));
        else
                g_task_return_boolean (task, TRUE);
}

static void
on_closed (CorralMcpTransport *transport, GError *error, CorralMcpServer *self)
{
        GHashTableIter iter;
        Call *call;

        g_hash_table_iter_init (&iter, self->calls);
        while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &call))
                g_cancellable_cancel (call->cancellable);
        finish_run (self, g_error_matches (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CLOSED)
                                  ? NULL
                                  : error);
}

static void
flushed_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (CorralMcpServer) self = user_data;

        if (self->transport)
                corral_mcp_transport_close (self->transport, NULL);
}

/* After the client's EOF: answer what is still running, write it out, then stop. */
static void
maybe_finish_after_eof (CorralMcpServer *self)
{
        if (!self->input_eof || g_hash_table_size (self->calls) > 0 || !self->transport)
                return;
        corral_mcp_transport_flush_async (self->transport, flushed_cb, g_object_ref (self));
}

static void
on_input_closed (CorralMcpTransport *transport, CorralMcpServer *self)
{
        self->input_eof = TRUE;
        maybe_finish_after_eof (self);
}

static gboolean
close_idle_cb (gpointer user_data)
{
        CorralMcpServer *self = user_data;

        if (self->transport)
                corral_mcp_transport_close (self->transport, NULL);
        return G_SOURCE_REMOVE;
}

static void
run_cancelled_cb (GCancellable *cancellable, gpointer user_data)
{
        CorralMcpServer *self = user_data;

        /* May run inside g_cancellable_connect(): defer. */
        g_idle_add_full (G_PRIORITY_DEFAULT, close_idle_cb, g_object_ref (self), g_object_unref);
}

void
corral_mcp_server_run_async (CorralMcpServer *self,
                             GInputStream *input,
                             GOutputStream *output,
                             GCancellable *cancellable,
                             GAsyncReadyCallback callback,
                             gpointer user_data)
{
        g_return_if_fail (self->transport == NULL);
        self->run_task = g_task_new (self, cancellable, callback, user_data);
        self->transport = corral_mcp_transport_new (input, output);
        corral_mcp_transport_set_half_close (self->transport, TRUE);
        g_signal_connect (self->transport, "message", G_CALLBACK (on_message), self);
        g_signal_connect (self->transport, "invalid", G_CALLBACK (on_invalid), self);
        g_signal_connect (self->transport, "closed", G_CALLBACK (on_closed), self);
        g_signal_connect (self->transport, "input-closed", G_CALLBACK (on_input_closed), self);
        if (cancellable)
                self->cancel_id = g_cancellable_connect (cancellable, G_CALLBACK (run_cancelled_cb),
                                                         self, NULL);
        corral_mcp_transport_start (self->transport);
}

gboolean
corral_mcp_server_run_finish (CorralMcpServer *self, GAsyncResult *result, GError **error)
{
        return g_task_propagate_boolean (G_TASK (result), error);
}

static void
corral_mcp_server_dispose (GObject *object)
{
        CorralMcpServer *self = CORRAL_MCP_SERVER (object);

        if (self->transport) {
                g_signal_handlers_disconnect_by_data (self->transport, self);
                corral_mcp_transport_close (self->transport, NULL);
                g_clear_object (&self->transport);
        }
        g_clear_object (&self->backend.agent);
        g_clear_object (&self->backend.computer);
        g_clear_pointer (&self->computer_log_dir, g_free);
        G_OBJECT_CLASS (corral_mcp_server_parent_class)->dispose (object);
}

static void
corral_mcp_server_finalize (GObject *object)
{
        CorralMcpServer *self = CORRAL_MCP_SERVER (object);

        g_hash_table_unref (self->calls);
        g_free (self->vm_name);
        G_OBJECT_CLASS (corral_mcp_server_parent_class)->finalize (object);
}

static void
corral_mcp_server_class_init (CorralMcpServerClass *klass)
{
        GObjectClass *object_class = G_OBJECT_CLASS (klass);

        object_class->dispose = corral_mcp_server_dispose;
        object_class->finalize = corral_mcp_server_finalize;
}

static void
corral_mcp_server_init (CorralMcpServer *self)
{
        self->calls =
                g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) call_free);
}

CorralMcpServer *
corral_mcp_server_new (CorralAgentClient *agent, const char *vm_name)
{
        CorralMcpServer *self = g_object_new (CORRAL_TYPE_MCP_SERVER, NULL);

        self->backend.agent = g_object_ref (agent);
        self->vm_name = g_strdup (vm_name);
        self->backend.vm_name = self->vm_name;
        return self;
}

void
corral_mcp_server_set_computer (CorralMcpServer *self,
                                CorralComputer *computer,
                                const char *log_dir)
{
        g_return_if_fail (CORRAL_IS_MCP_SERVER (self));
        g_set_object (&self->backend.computer, computer);
        g_free (self->computer_log_dir);
        self->computer_log_dir = g_strdup (log_dir);
        self->backend.computer_log_dir = self->computer_log_dir;
}
