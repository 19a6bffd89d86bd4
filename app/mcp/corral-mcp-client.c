/* corral-mcp-client.c — one MCP server as a child process: spawn, requests, shutdown.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-mcp-private.h"
#include "corral-mcp-transport.h"

#include <glib/gi18n-lib.h>
#include <signal.h>
#include <string.h>

#define STDERR_RING 16384
#define STDERR_TAIL 2048
#define EXIT_GRACE_MS 2000
/* After the connection drops, how long to wait for the exit status and the last stderr. */
#define REPORT_WAIT_MS 1000

const char *const corral_mcp_protocol_versions[] = { "2025-06-18", "2025-03-26", "2024-11-05",
                                                     NULL };

typedef enum { STATE_NEW, STATE_STARTING, STATE_READY, STATE_CLOSED } State;

struct _CorralMcpClient {
        GObject parent_instance;
        CorralMcpServerConfig *config;
        State state;
        GSubprocess *proc;
        CorralMcpTransport *transport;
        GCancellable *cancellable; /* our own reads and waits */
        GByteArray *stderr_ring;
        gboolean stderr_eof;
        GHashTable *pending; /* id -> Pending */
        gint64 next_id;
        guint timeout_ms;
        char *protocol_version;
        char *server_name;
        GPtrArray *tools;
        gboolean listing, relist;
        gboolean shutting_down;
        GTask *start_task;
        GError *close_reason; /* set when the connection dropped, until reported */
        guint report_timer;
        guint kill_timer;
};

G_DEFINE_FINAL_TYPE (CorralMcpClient, corral_mcp_client, G_TYPE_OBJECT)

enum { SIGNAL_TOOLS_CHANGED, SIGNAL_CLOSED, N_SIGNALS };
static guint signals[N_SIGNALS];

typedef struct {
        CorralMcpClient *client; /* not a reference: the client owns us */
        gint64 id;
        char *method;
        GTask *task;
        guint timeout_id;
        GCancellable *cancellable;
        gulong cancel_id;
} Pending;

/* Reads of the server's stderr and the wait for its exit must not keep the client alive: its
 * dispose is what stops the server. */
static GWeakRef *
weak_new (gpointer object)
{
        GWeakRef *weak = g_new (GWeakRef, 1);

        g_weak_ref_init (weak, object);
        return weak;
}

static gpointer
weak_take (GWeakRef *weak)
{
        gpointer object = g_weak_ref_get (weak);

        g_weak_ref_clear (weak);
        g_free (weak);
        return object;
}

gboolean
corral_mcp_protocol_version_supported (const char *version)
{
        return version && g_strv_contains (corral_mcp_protocol_versions, version);
}

static const char *
name_of (CorralMcpClient *self)
{
        return self->config->name;
}

/* Completes the start task, if still pending: with error (borrowed) or success. */
static void
finish_start (CorralMcpClient *self, const GError *error)
{
        g_autoptr (GTask) task = g_steal_pointer (&self->start_task);

        if (!task)
                return;
        if (error)
                g_task_return_error (task, g_error_copy (error));
        else
                g_task_return_boolean (task, TRUE);
}

/* Pending requests --------------------------------------------------------------------------- */

static void
pending_free (Pending *p)
{
        if (p->timeout_id)
                g_source_remove (p->timeout_id);
        if (p->cancel_id)
                g_cancellable_disconnect (p->cancellable, p->cancel_id);
        g_clear_object (&p->cancellable);
        g_clear_object (&p->task);
        g_free (p->method);
        g_free (p);
}

/* Removes the request and returns its task (transfer full) for the caller to complete. */
static GTask *
pending_take (CorralMcpClient *self, gint64 id)
{
        Pending *p = g_hash_table_lookup (self->pending, &id);
        GTask *task;

        if (!p)
                return NULL;
        task = g_steal_pointer (&p->task);
        g_hash_table_remove (self->pending, &id);
        return task;
}

static void
send_cancelled (CorralMcpClient *self, gint64 id, const char *reason)
{
        cJSON *params = cJSON_CreateObject ();

        cJSON_AddNumberToObject (params, "requestId", (double) id);
        cJSON_AddStringToObject (params, "reason", reason);
        if (self->transport)
                corral_mcp_transport_send (
                        self->transport,
                        corral_mcp_notification_new ("notifications/cancelled", params));
        else
                cJSON_Delete (params);
}

static gboolean
pending_timeout_cb (gpointer user_data)
{
        Pending *p = user_data;
        CorralMcpClient *self = p->client;
        gint64 id = p->id;
        g_autofree char *method = g_strdup (p->method);
        guint seconds = (self->timeout_ms + 999) / 1000;
        g_autoptr (GTask) task = NULL;

        p->timeout_id = 0;
        task = pending_take (self, id);
        send_cancelled (self, id, "timeout");
        g_task_return_new_error (task, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_TIMEOUT,
                                 _ ("MCP server “%s” did not answer %s within %u s"),
                                 name_of (self), method, seconds);
        return G_SOURCE_REMOVE;
}

typedef struct {
        CorralMcpClient *client;
        gint64 id;
} CancelIdle;

static gboolean
cancel_idle_cb (gpointer user_data)
{
        CancelIdle *c = user_data;
        g_autoptr (GTask) task = pending_take (c->client, c->id);

        if (task) {
                send_cancelled (c->client, c->id, "cancelled by the client");
                g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                         _ ("Operation was cancelled"));
        }
        g_object_unref (c->client);
        g_free (c);
        return G_SOURCE_REMOVE;
}

/* Runs in the cancelling thread, maybe inside g_cancellable_connect(): defer the work. */
static void
pending_cancelled_cb (GCancellable *cancellable, gpointer user_data)
{
        Pending *p = user_data;
        CancelIdle *c = g_new0 (CancelIdle, 1);
        g_autoptr (GSource) idle = g_idle_source_new ();

        c->client = g_object_ref (p->client);
        c->id = p->id;
        /* Not g_main_context_invoke(): it may run at once, and disconnecting from inside the
         * handler deadlocks. */
        g_source_set_callback (idle, cancel_idle_cb, c, NULL);
        g_source_attach (idle, g_task_get_context (p->task));
}

static void
fail_all_pending (CorralMcpClient *self, const GError *error)
{
        g_autoptr (GList) ids = g_hash_table_get_keys (self->pending);
        g_autoptr (GArray) copy = g_array_new (FALSE, FALSE, sizeof (gint64));

        for (GList *l = ids; l; l = l->next)
                g_array_append_val (copy, *(gint64 *) l->data);
        for (guint i = 0; i < copy->len; i++) {
                g_autoptr (GTask) task = pending_take (self, g_array_index (copy, gint64, i));

                if (task)
                        g_task_return_error (task, g_error_copy (error));
        }
}

void
corral_mcp_client_send_request (CorralMcpClient *self,
                                const char *method,
                                cJSON *params,
                                GCancellable *cancellable,
                                GAsyncReadyCallback callback,
                                gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);
        Pending *p;

        if (self->state != STATE_STARTING && self->state != STATE_READY) {
                cJSON_Delete (params);
                g_task_return_new_error (task, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CLOSED,
                                         _ ("MCP server “%s” is not running"), name_of (self));
                return;
        }
        if (g_hash_table_size (self->pending) >= CORRAL_MCP_MAX_PENDING) {
                cJSON_Delete (params);
                g_task_return_new_error (task, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_BUSY,
                                         _ ("too many requests to MCP server “%s” at once"),
                                         name_of (self));
                return;
        }
        p = g_new0 (Pending, 1);
        p->client = self;
        p->id = self->next_id++;
        p->method = g_strdup (method);
        p->task = g_steal_pointer (&task);
        g_hash_table_insert (self->pending, &p->id, p);
        corral_mcp_transport_send (self->transport, corral_mcp_request_new (p->id, method, params));
        if (self->timeout_ms)
                p->timeout_id = g_timeout_add (self->timeout_ms, pending_timeout_cb, p);
        if (cancellable) {
                p->cancellable = g_object_ref (cancellable);
                p->cancel_id = g_cancellable_connect (cancellable,
                                                      G_CALLBACK (pending_cancelled_cb), p, NULL);
        }
}

/* Messages from the server -------------------------------------------------------------------- */

static void
handle_reply (CorralMcpClient *self, CorralMcpMessage *msg)
{
        g_autoptr (GTask) task = NULL;
        g_autofree char *text = NULL;
        gint64 id;

        /* Late replies (after a timeout or a cancel) and unknown ids are dropped. */
        if (!corral_mcp_message_get_int_id (msg, &id) || !(task = pending_take (self, id)))
                return;
        if (msg->kind == CORRAL_MCP_MESSAGE_RESULT) {
                g_task_return_pointer (task, cJSON_Duplicate (msg->result, TRUE),
                                       (GDestroyNotify) cJSON_Delete);
                return;
        }
        text = corral_mcp_sanitize_text (msg->error_message, strlen (msg->error_message), 1024);
        g_task_return_new_error (task, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_REMOTE,
                                 _ ("MCP server “%s” returned an error: %s (code %lld)"),
                                 name_of (self), text, (long long) msg->error_code);
}

static void relist (CorralMcpClient *self);

static void
handle_call (CorralMcpClient *self, CorralMcpMessage *msg)
{
        cJSON *id = msg->id ? cJSON_Duplicate (msg->id, TRUE) : NULL;

        if (msg->kind == CORRAL_MCP_MESSAGE_NOTIFICATION) {
                if (g_str_equal (msg->method, "notifications/tools/list_changed") &&
                    self->state == STATE_READY)
                        relist (self);
                return; /* logging, progress, ...: nothing to do */
        }
        /* We offer no client capabilities (sampling, roots, elicitation): only ping. */
        if (g_str_equal (msg->method, "ping"))
                corral_mcp_transport_send (self->transport, corral_mcp_result_new (id, NULL));
        else
                corral_mcp_transport_send (
                        self->transport,
                        corral_mcp_error_new (id, CORRAL_MCP_METHOD_NOT_FOUND, "Method not found"));
}

static void
on_message (CorralMcpTransport *transport, CorralMcpMessage *msg, CorralMcpClient *self)
{
        if (msg->kind == CORRAL_MCP_MESSAGE_RESULT || msg->kind == CORRAL_MCP_MESSAGE_ERROR)
                handle_reply (self, msg);
        else
                handle_call (self, msg);
}

static void
on_invalid (
        CorralMcpTransport *transport, int code, gpointer id, GError *error, CorralMcpClient *self)
{
        g_autoptr (GError) wrapped =
                g_error_new (CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_PROTOCOL,
                             _ ("it sent an invalid message: %s"), error->message);

        /* A server that writes anything but MCP on stdout cannot be trusted to stay in sync. */
        corral_mcp_transport_close (transport, wrapped);
}

/* Closing ------------------------------------------------------------------------------------- */

static char *
describe_exit (CorralMcpClient *self)
{
        if (!self->proc || !g_subprocess_get_if_exited (self->proc)) {
                if (self->proc && g_subprocess_get_if_signaled (self->proc))
                        return g_strdup_printf (_ ("it was killed by signal %d"),
                                                g_subprocess_get_term_sig (self->proc));
                return g_strdup (_ ("it is still running"));
        }
        return g_strdup_printf (_ ("it exited with status %d"),
                                g_subprocess_get_exit_status (self->proc));
}

static GError *
close_error (CorralMcpClient *self, const GError *error)
{
        g_autofree char *tail = corral_mcp_client_get_stderr_tail (self);
        g_autofree char *how = describe_exit (self);

        if (*tail)
                return g_error_new (
                        error->domain, error->code,
                        _ ("MCP server “%s” stopped: %s; %s. Its last error output:\n%s"),
                        name_of (self), error->message, how, tail);
        return g_error_new (error->domain, error->code, _ ("MCP server “%s” stopped: %s; %s"),
                            name_of (self), error->message, how);
}

/* Reports the close once the server has exited and its stderr is drained, or after a moment. */
static void
maybe_report (CorralMcpClient *self, gboolean force)
{
        g_autoptr (GError) full = NULL;
        gboolean exited = !self->proc || g_subprocess_get_identifier (self->proc) == NULL;

        if (!self->close_reason || (!force && !(exited && self->stderr_eof)))
                return;
        g_clear_handle_id (&self->report_timer, g_source_remove);
        full = close_error (self, self->close_reason);
        g_clear_error (&self->close_reason);
        fail_all_pending (self, full);
        finish_start (self, full);
        if (!self->shutting_down)
                g_signal_emit (self, signals[SIGNAL_CLOSED], 0, full);
}

static gboolean
report_timer_cb (gpointer user_data)
{
        CorralMcpClient *self = user_data;

        self->report_timer = 0;
        maybe_report (self, TRUE);
        return G_SOURCE_REMOVE;
}

static void
exited_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (CorralMcpClient) self = weak_take (user_data);
        gboolean exited = g_subprocess_wait_finish (G_SUBPROCESS (source), result, NULL);

        if (!self)
                return;
        g_clear_handle_id (&self->kill_timer, g_source_remove);
        if (exited)
                maybe_report (self, FALSE);
}

static gboolean
kill_timer_cb (gpointer user_data)
{
        CorralMcpClient *self = user_data;

        self->kill_timer = 0;
        g_subprocess_force_exit (self->proc);
        return G_SOURCE_REMOVE;
}

static void
on_closed (CorralMcpTransport *transport, GError *error, CorralMcpClient *self)
{
        self->state = STATE_CLOSED;
        g_clear_error (&self->close_reason);
        self->close_reason = g_error_copy (error);
        /* EOF usually means the server is exiting; anything else means it must be stopped. */
        if (self->proc && !g_error_matches (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CLOSED)) {
                g_subprocess_send_signal (self->proc, SIGTERM);
                if (!self->kill_timer)
                        self->kill_timer = g_timeout_add (EXIT_GRACE_MS, kill_timer_cb, self);
        }
        if (!self->report_timer)
                self->report_timer =
                        g_timeout_add (REPORT_WAIT_MS + (self->kill_timer ? EXIT_GRACE_MS : 0),
                                       report_timer_cb, self);
        maybe_report (self, FALSE);
}

/* stderr -------------------------------------------------------------------------------------- */

static void read_stderr (CorralMcpClient *self);

static void
stderr_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (CorralMcpClient) self = weak_take (user_data);
        g_autoptr (GBytes) bytes =
                g_input_stream_read_bytes_finish (G_INPUT_STREAM (source), result, NULL);
        gsize len = bytes ? g_bytes_get_size (bytes) : 0;

        if (!self)
                return;
        if (len == 0) {
                self->stderr_eof = TRUE;
                maybe_report (self, FALSE);
                return;
        }
        g_byte_array_append (self->stderr_ring, g_bytes_get_data (bytes, NULL), (guint) len);
        if (self->stderr_ring->len > STDERR_RING)
                g_byte_array_remove_range (self->stderr_ring, 0,
                                           self->stderr_ring->len - STDERR_RING);
        read_stderr (self);
}

/* Always drained, so a chatty server never blocks on a full pipe. */
static void
read_stderr (CorralMcpClient *self)
{
        g_input_stream_read_bytes_async (g_subprocess_get_stderr_pipe (self->proc), 8192,
                                         G_PRIORITY_DEFAULT, self->cancellable, stderr_cb,
                                         weak_new (self));
}

char *
corral_mcp_client_get_stderr_tail (CorralMcpClient *self)
{
        const char *data = (const char *) self->stderr_ring->data;
        gsize len = self->stderr_ring->len, start = len > STDERR_TAIL ? len - STDERR_TAIL : 0;
        g_autofree char *text = NULL;

        if (len == 0)
                return g_strdup ("");
        text = corral_mcp_sanitize_text (data + start, len - start, STDERR_TAIL);
        return g_strstrip (g_steal_pointer (&text));
}

/* Starting ------------------------------------------------------------------------------------ */

/* Like the official SDKs: only a few harmless variables from our environment, so that the API
 * keys and tokens it may hold do not leak to every server; the config adds what a server needs. */
static char **
server_environment (CorralMcpClient *self)
{
        static const char *const inherit[] = { "HOME", "LOGNAME", "PATH",   "SHELL", "TERM",
                                               "USER", "LANG",    "TMPDIR", NULL };
        char **env = NULL;

        for (const char *const *k = inherit; *k; k++)
                if (g_getenv (*k))
                        env = g_environ_setenv (env, *k, g_getenv (*k), TRUE);
        for (char **kv = self->config->env; *kv; kv++) {
                g_autofree char *key = g_strndup (*kv, strcspn (*kv, "="));

                env = g_environ_setenv (env, key, *kv + strlen (key) + 1, TRUE);
        }
        return env;
}

static gboolean
spawn (CorralMcpClient *self, GError **error)
{
        g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (
                G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                G_SUBPROCESS_FLAGS_STDERR_PIPE);
        g_autoptr (GPtrArray) argv = g_ptr_array_new ();
        g_auto (GStrv) env = server_environment (self);
        g_autoptr (GError) local = NULL;

        g_ptr_array_add (argv, self->config->command);
        for (char **a = self->config->args; *a; a++)
                g_ptr_array_add (argv, *a);
        g_ptr_array_add (argv, NULL);
        g_subprocess_launcher_set_environ (launcher, env);
        self->proc =
                g_subprocess_launcher_spawnv (launcher, (const char *const *) argv->pdata, &local);
        if (!self->proc) {
                g_set_error (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CLOSED,
                             _ ("could not start MCP server “%s”: %s"), name_of (self),
                             local->message);
                return FALSE;
        }
        g_subprocess_wait_async (self->proc, self->cancellable, exited_cb, weak_new (self));
        read_stderr (self);
        self->transport = corral_mcp_transport_new (g_subprocess_get_stdout_pipe (self->proc),
                                                    g_subprocess_get_stdin_pipe (self->proc));
        g_signal_connect (self->transport, "message", G_CALLBACK (on_message), self);
        g_signal_connect (self->transport, "invalid", G_CALLBACK (on_invalid), self);
        g_signal_connect (self->transport, "closed", G_CALLBACK (on_closed), self);
        corral_mcp_transport_start (self->transport);
        return TRUE;
}

/* A start that fails after the spawn closes the connection, which completes start_task. */
static void
start_failed (CorralMcpClient *self, GError *error)
{
        corral_mcp_transport_close (self->transport, error);
}

static void
listed_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (CorralMcpClient) self = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) tools = corral_mcp_client_list_tools_finish (self, result, &error);

        if (!self->start_task)
                return;
        if (!tools) {
                start_failed (self, error);
                return;
        }
        corral_mcp_client_set_tools (self, g_steal_pointer (&tools));
        self->state = STATE_READY;
        finish_start (self, NULL);
}

static gboolean
check_initialize (CorralMcpClient *self, const cJSON *result, gboolean *ret_tools, GError **error)
{
        const cJSON *caps = cJSON_GetObjectItemCaseSensitive (result, "capabilities");
        const cJSON *info = cJSON_GetObjectItemCaseSensitive (result, "serverInfo");
        const char *version = NULL, *server = NULL;

        if (!corral_mcp_get_string (result, "protocolVersion", 64, &version, error))
                return FALSE;
        if (!corral_mcp_protocol_version_supported (version)) {
                g_autofree char *safe = corral_mcp_sanitize_text (
                        version ? version : "", version ? strlen (version) : 0, 64);

                g_set_error (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_UNSUPPORTED_VERSION,
                             _ ("the server speaks MCP version “%s”, which Corral does not"), safe);
                return FALSE;
        }
        if (cJSON_IsObject (info) && corral_mcp_get_string (info, "name", 256, &server, NULL) &&
            server)
                self->server_name = corral_mcp_sanitize_text (server, strlen (server), 256);
        self->protocol_version = g_strdup (version);
        *ret_tools = cJSON_IsObject (caps) &&
                     cJSON_IsObject (cJSON_GetObjectItemCaseSensitive (caps, "tools"));
        return TRUE;
}

static void
initialized_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (CorralMcpClient) self = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) reply = g_task_propagate_pointer (G_TASK (result), &error);
        gboolean has_tools = FALSE;

        if (!self->start_task)
                return;
        if (!reply || !check_initialize (self, reply, &has_tools, &error)) {
                start_failed (self, error);
                return;
        }
        corral_mcp_transport_send (self->transport,
                                   corral_mcp_notification_new ("notifications/initialized", NULL));
        if (!has_tools) {
                self->state = STATE_READY;
                finish_start (self, NULL);
                return;
        }
        corral_mcp_client_list_tools_async (self, g_task_get_cancellable (self->start_task),
                                            listed_cb, g_object_ref (self));
}

static cJSON *
initialize_params (void)
{
        cJSON *params = cJSON_CreateObject ();
        cJSON *info = cJSON_CreateObject ();

        cJSON_AddStringToObject (params, "protocolVersion", CORRAL_MCP_LATEST_PROTOCOL_VERSION);
        cJSON_AddObjectToObject (params, "capabilities");
        cJSON_AddStringToObject (info, "name", "corral");
        cJSON_AddStringToObject (info, "version", CORRAL_VERSION);
        cJSON_AddItemToObject (params, "clientInfo", info);
        return params;
}

void
corral_mcp_client_start_async (CorralMcpClient *self,
                               GCancellable *cancellable,
                               GAsyncReadyCallback callback,
                               gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);
        g_autoptr (GError) error = NULL;

        g_return_if_fail (CORRAL_IS_MCP_CLIENT (self));
        g_task_set_source_tag (task, corral_mcp_client_start_async);
        if (self->state != STATE_NEW) {
                g_task_return_new_error (task, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_BUSY,
                                         _ ("MCP server “%s” was already started"), name_of (self));
                return;
        }
        self->state = STATE_STARTING;
        if (!spawn (self, &error)) {
                self->state = STATE_CLOSED;
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        self->start_task = g_steal_pointer (&task);
        corral_mcp_client_send_request (self, "initialize", initialize_params (), cancellable,
                                        initialized_cb, g_object_ref (self));
}

gboolean
corral_mcp_client_start_finish (CorralMcpClient *self, GAsyncResult *result, GError **error)
{
        return g_task_propagate_boolean (G_TASK (result), error);
}

/* Tool list changes --------------------------------------------------------------------------- */

static void
relisted_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (CorralMcpClient) self = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) tools = corral_mcp_client_list_tools_finish (self, result, &error);

        self->listing = FALSE;
        if (tools) {
                corral_mcp_client_set_tools (self, g_steal_pointer (&tools));
                g_signal_emit (self, signals[SIGNAL_TOOLS_CHANGED], 0);
        } else {
                g_debug ("MCP server %s: re-reading tools failed: %s", name_of (self),
                         error->message);
        }
        if (self->relist && self->state == STATE_READY) {
                self->relist = FALSE;
                relist (self);
        }
}

/* Notifications can come in bursts: one listing at a time, one more if asked meanwhile. */
static void
relist (CorralMcpClient *self)
{
        if (self->listing) {
                self->relist = TRUE;
                return;
        }
        self->listing = TRUE;
        corral_mcp_client_list_tools_async (self, self->cancellable, relisted_cb,
                                            g_object_ref (self));
}

void
corral_mcp_client_set_tools (CorralMcpClient *self, GPtrArray *tools)
{
        g_clear_pointer (&self->tools, g_ptr_array_unref);
        self->tools = tools;
}

/* Requests ------------------------------------------------------------------------------------ */

void
corral_mcp_client_request_async (CorralMcpClient *self,
                                 const char *method,
                                 cJSON *params,
                                 GCancellable *cancellable,
                                 GAsyncReadyCallback callback,
                                 gpointer user_data)
{
        g_return_if_fail (CORRAL_IS_MCP_CLIENT (self));
        g_return_if_fail (method != NULL);
        corral_mcp_client_send_request (self, method, params, cancellable, callback, user_data);
}

cJSON *
corral_mcp_client_request_finish (CorralMcpClient *self, GAsyncResult *result, GError **error)
{
        return g_task_propagate_pointer (G_TASK (result), error);
}

static void
called_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) reply = g_task_propagate_pointer (G_TASK (result), &error);
        CorralMcpToolResult *ret;

        if (!reply) {
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        if (!(ret = corral_mcp_tool_result_new_from_json (reply, &error))) {
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        g_task_return_pointer (task, ret, (GDestroyNotify) corral_mcp_tool_result_free);
}

void
corral_mcp_client_call_tool_async (CorralMcpClient *self,
                                   const char *name,
                                   cJSON *arguments,
                                   GCancellable *cancellable,
                                   GAsyncReadyCallback callback,
                                   gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);
        g_autoptr (cJSON) args = arguments;
        cJSON *params;

        g_return_if_fail (CORRAL_IS_MCP_CLIENT (self));
        g_return_if_fail (name != NULL);
        if (args && !cJSON_IsObject (args)) {
                g_task_return_new_error (task, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_INVALID_ARGUMENT,
                                         _ ("tool arguments must be a JSON object"));
                return;
        }
        if (self->state == STATE_READY && !corral_mcp_client_find_tool (self, name)) {
                g_autofree char *safe = corral_mcp_sanitize_text (name, strlen (name), 128);

                g_task_return_new_error (task, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_UNKNOWN_TOOL,
                                         _ ("MCP server “%s” has no tool “%s”"), name_of (self),
                                         safe);
                return;
        }
        params = cJSON_CreateObject ();
        cJSON_AddStringToObject (params, "name", name);
        cJSON_AddItemToObject (params, "arguments",
                               args ? g_steal_pointer (&args) : cJSON_CreateObject ());
        corral_mcp_client_send_request (self, "tools/call", params, cancellable, called_cb,
                                        g_steal_pointer (&task));
}

CorralMcpToolResult *
corral_mcp_client_call_tool_finish (CorralMcpClient *self, GAsyncResult *result, GError **error)
{
        return g_task_propagate_pointer (G_TASK (result), error);
}

/* Shutdown ------------------------------------------------------------------------------------ */

static void shutdown_step (GTask *task);

static void
shutdown_waited_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;

        /* Either it exited or the step's timer cancelled the wait: go on either way. */
        shutdown_step (g_steal_pointer (&task));
}

static gboolean
cancel_wait_cb (gpointer user_data)
{
        g_cancellable_cancel (user_data);
        return G_SOURCE_REMOVE;
}

/* Step 0: stdin closed, wait; 1: SIGTERM, wait; 2: SIGKILL, wait; 3: done. */
static void
shutdown_step (GTask *task)
{
        CorralMcpClient *self = g_task_get_source_object (task);
        guint step = GPOINTER_TO_UINT (g_task_get_task_data (task));
        g_autoptr (GCancellable) wait = g_cancellable_new ();

        if (g_subprocess_get_identifier (self->proc) == NULL || step >= 3) {
                g_task_return_boolean (task, TRUE);
                g_object_unref (task);
                return;
        }
        if (step == 1)
                g_subprocess_send_signal (self->proc, SIGTERM);
        else if (step == 2)
                g_subprocess_force_exit (self->proc);
        g_task_set_task_data (task, GUINT_TO_POINTER (step + 1), NULL);
        if (step < 2)
                g_timeout_add_full (G_PRIORITY_DEFAULT, EXIT_GRACE_MS, cancel_wait_cb,
                                    g_object_ref (wait), g_object_unref);
        g_subprocess_wait_async (self->proc, wait, shutdown_waited_cb, task);
}

void
corral_mcp_client_shutdown_async (CorralMcpClient *self,
                                  GAsyncReadyCallback callback,
                                  gpointer user_data)
{
        GTask *task = g_task_new (self, NULL, callback, user_data);
        g_autoptr (GError) error =
                g_error_new (CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CLOSED,
                             _ ("MCP server “%s” was shut down"), name_of (self));

        g_task_set_task_data (task, GUINT_TO_POINTER (0), NULL);
        self->shutting_down = TRUE;
        self->state = STATE_CLOSED;
        fail_all_pending (self, error);
        finish_start (self, error);
        if (self->transport)
                corral_mcp_transport_close (self->transport, error);
        g_clear_error (&self->close_reason);
        g_clear_handle_id (&self->report_timer, g_source_remove);
        if (!self->proc) {
                g_task_return_boolean (task, TRUE);
                g_object_unref (task);
                return;
        }
        /* EOF on stdin is how the stdio transport asks a server to exit. */
        g_output_stream_close (g_subprocess_get_stdin_pipe (self->proc), NULL, NULL);
        shutdown_step (task);
}

void
corral_mcp_client_shutdown_finish (CorralMcpClient *self, GAsyncResult *result)
{
        g_task_propagate_boolean (G_TASK (result), NULL);
}

/* Getters and the object ---------------------------------------------------------------------- */

const char *
corral_mcp_client_get_name (CorralMcpClient *self)
{
        return self->config->name;
}

gboolean
corral_mcp_client_is_ready (CorralMcpClient *self)
{
        return self->state == STATE_READY;
}

const char *
corral_mcp_client_get_protocol_version (CorralMcpClient *self)
{
        return self->protocol_version;
}

const char *
corral_mcp_client_get_server_name (CorralMcpClient *self)
{
        return self->server_name;
}

GPtrArray *
corral_mcp_client_get_tools (CorralMcpClient *self)
{
        return self->tools;
}

const CorralMcpTool *
corral_mcp_client_find_tool (CorralMcpClient *self, const char *name)
{
        for (guint i = 0; i < self->tools->len; i++) {
                const CorralMcpTool *tool = self->tools->pdata[i];

                if (g_str_equal (tool->name, name))
                        return tool;
        }
        return NULL;
}

void
corral_mcp_client_set_timeout (CorralMcpClient *self, guint timeout_ms)
{
        self->timeout_ms = timeout_ms;
}

static void
corral_mcp_client_dispose (GObject *object)
{
        CorralMcpClient *self = CORRAL_MCP_CLIENT (object);

        self->shutting_down = TRUE;
        g_hash_table_remove_all (self->pending);
        g_clear_handle_id (&self->report_timer, g_source_remove);
        g_clear_handle_id (&self->kill_timer, g_source_remove);
        if (self->transport) {
                g_signal_handlers_disconnect_by_data (self->transport, self);
                corral_mcp_transport_close (self->transport, NULL);
                g_clear_object (&self->transport);
        }
        g_cancellable_cancel (self->cancellable);
        /* Never leave a server behind; GSubprocess reaps it. */
        if (self->proc && g_subprocess_get_identifier (self->proc))
                g_subprocess_force_exit (self->proc);
        g_clear_object (&self->proc);
        G_OBJECT_CLASS (corral_mcp_client_parent_class)->dispose (object);
}

static void
corral_mcp_client_finalize (GObject *object)
{
        CorralMcpClient *self = CORRAL_MCP_CLIENT (object);

        g_hash_table_unref (self->pending);
        g_byte_array_unref (self->stderr_ring);
        g_clear_object (&self->cancellable);
        g_clear_error (&self->close_reason);
        g_clear_pointer (&self->tools, g_ptr_array_unref);
        g_free (self->protocol_version);
        g_free (self->server_name);
        corral_mcp_server_config_free (self->config);
        G_OBJECT_CLASS (corral_mcp_client_parent_class)->finalize (object);
}

static void
corral_mcp_client_class_init (CorralMcpClientClass *klass)
{
        GObjectClass *object_class = G_OBJECT_CLASS (klass);

        object_class->dispose = corral_mcp_client_dispose;
        object_class->finalize = corral_mcp_client_finalize;
        signals[SIGNAL_TOOLS_CHANGED] =
                g_signal_new ("tools-changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                              NULL, NULL, NULL, G_TYPE_NONE, 0);
        signals[SIGNAL_CLOSED] =
                g_signal_new ("closed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                              NULL, G_TYPE_NONE, 1, G_TYPE_ERROR);
}

static void
corral_mcp_client_init (CorralMcpClient *self)
{
        self->pending = g_hash_table_new_full (g_int64_hash, g_int64_equal, NULL,
                                               (GDestroyNotify) pending_free);
        self->stderr_ring = g_byte_array_new ();
        self->cancellable = g_cancellable_new ();
        self->tools = g_ptr_array_new_with_free_func ((GDestroyNotify) corral_mcp_tool_free);
        self->timeout_ms = CORRAL_MCP_DEFAULT_TIMEOUT_MS;
        self->next_id = 1;
}

CorralMcpClient *
corral_mcp_client_new (const CorralMcpServerConfig *config)
{
        CorralMcpClient *self = g_object_new (CORRAL_TYPE_MCP_CLIENT, NULL);

        self->config = corral_mcp_server_config_copy (config);
        return self;
}
