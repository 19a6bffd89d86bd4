/* corral-mcp-manager.c — all configured MCP servers, their tools under collision-safe names.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-mcp-manager.h"
#include "corral-policy.h"

#include <glib/gi18n-lib.h>
#include <string.h>

struct _CorralMcpManager {
        GObject parent_instance;
        GPtrArray *clients; /* CorralMcpClient, in config order */
        GHashTable *errors; /* server name -> GError */
        GPtrArray *tools; /* CorralMcpExposedTool */
        GHashTable *by_name; /* exposed name -> CorralMcpExposedTool (borrowed) */
};

G_DEFINE_FINAL_TYPE (CorralMcpManager, corral_mcp_manager, G_TYPE_OBJECT)

enum { SIGNAL_TOOLS_CHANGED, SIGNAL_SERVER_CLOSED, N_SIGNALS };
static guint signals[N_SIGNALS];

static void
exposed_free (CorralMcpExposedTool *t)
{
        g_free (t->name);
        g_free (t);
}

/* base, or base with the shortest "_N" that is free, within the length limit. */
static char *
unique_name (GHashTable *taken, const char *base)
{
        if (!g_hash_table_contains (taken, base))
                return g_strdup (base);
        for (guint n = 2;; n++) {
                g_autofree char *suffix = g_strdup_printf ("_%u", n);
                gsize keep = MIN (strlen (base), CORRAL_MCP_TOOL_NAME_MAX - strlen (suffix));
                g_autofree char *head = g_strndup (base, keep);
                g_autofree char *name = g_strconcat (head, suffix, NULL);

                if (!g_hash_table_contains (taken, name))
                        return g_steal_pointer (&name);
        }
}

static void
rebuild (CorralMcpManager *self)
{
        g_ptr_array_set_size (self->tools, 0);
        g_hash_table_remove_all (self->by_name);
        for (guint i = 0; i < self->clients->len; i++) {
                CorralMcpClient *client = self->clients->pdata[i];
                GPtrArray *tools = corral_mcp_client_get_tools (client);

                if (!corral_mcp_client_is_ready (client))
                        continue;
                for (guint j = 0; j < tools->len; j++) {
                        CorralMcpTool *tool = tools->pdata[j];
                        g_autofree char *base = corral_mcp_tool_name_sanitize (
                                corral_mcp_client_get_name (client), tool->name);
                        CorralMcpExposedTool *t = g_new0 (CorralMcpExposedTool, 1);

                        t->name = unique_name (self->by_name, base);
                        t->client = client;
                        t->tool = tool;
                        g_ptr_array_add (self->tools, t);
                        g_hash_table_insert (self->by_name, t->name, t);
                }
        }
        g_signal_emit (self, signals[SIGNAL_TOOLS_CHANGED], 0);
}

static void
on_tools_changed (CorralMcpClient *client, CorralMcpManager *self)
{
        rebuild (self);
}

static void
on_closed (CorralMcpClient *client, GError *error, CorralMcpManager *self)
{
        g_hash_table_replace (self->errors, g_strdup (corral_mcp_client_get_name (client)),
                              g_error_copy (error));
        rebuild (self);
        g_signal_emit (self, signals[SIGNAL_SERVER_CLOSED], 0, corral_mcp_client_get_name (client),
                       error);
}

typedef struct {
        guint left;
} StartState;

static void
started_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        CorralMcpManager *self = g_task_get_source_object (task);
        CorralMcpClient *client = CORRAL_MCP_CLIENT (source);
        StartState *state = g_task_get_task_data (task);
        g_autoptr (GError) error = NULL;

        if (!corral_mcp_client_start_finish (client, result, &error))
                g_hash_table_replace (self->errors, g_strdup (corral_mcp_client_get_name (client)),
                                      g_steal_pointer (&error));
        if (--state->left > 0)
                return;
        rebuild (self);
        if (!g_task_return_error_if_cancelled (task))
                g_task_return_boolean (task, TRUE);
}

void
corral_mcp_manager_start_async (CorralMcpManager *self,
                                GCancellable *cancellable,
                                GAsyncReadyCallback callback,
                                gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);
        StartState *state = g_new0 (StartState, 1);

        state->left = self->clients->len;
        g_task_set_task_data (task, state, g_free);
        if (self->clients->len == 0) {
                g_task_return_boolean (task, TRUE);
                return;
        }
        for (guint i = 0; i < self->clients->len; i++)
                corral_mcp_client_start_async (self->clients->pdata[i], cancellable, started_cb,
                                               g_object_ref (task));
}

gboolean
corral_mcp_manager_start_finish (CorralMcpManager *self, GAsyncResult *result, GError **error)
{
        return g_task_propagate_boolean (G_TASK (result), error);
}

GPtrArray *
corral_mcp_manager_get_tools (CorralMcpManager *self)
{
        return self->tools;
}

const GError *
corral_mcp_manager_get_error (CorralMcpManager *self, const char *server)
{
        return g_hash_table_lookup (self->errors, server);
}

static void
called_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        g_autoptr (GError) error = NULL;
        CorralMcpToolResult *ret =
                corral_mcp_client_call_tool_finish (CORRAL_MCP_CLIENT (source), result, &error);

        if (ret)
                g_task_return_pointer (task, ret, (GDestroyNotify) corral_mcp_tool_result_free);
        else
                g_task_return_error (task, g_steal_pointer (&error));
}

void
corral_mcp_manager_call_tool_async (CorralMcpManager *self,
                                    const char *name,
                                    cJSON *arguments,
                                    GCancellable *cancellable,
                                    GAsyncReadyCallback callback,
                                    gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);
        CorralMcpExposedTool *t = g_hash_table_lookup (self->by_name, name);

        if (!t) {
                g_autofree char *safe = corral_mcp_sanitize_text (name, strlen (name), 128);

                cJSON_Delete (arguments);
                g_task_return_new_error (task, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_UNKNOWN_TOOL,
                                         _ ("there is no MCP tool “%s”"), safe);
                return;
        }
        corral_mcp_client_call_tool_async (t->client, t->tool->name, arguments, cancellable,
                                           called_cb, g_steal_pointer (&task));
}

CorralMcpToolResult *
corral_mcp_manager_call_tool_finish (CorralMcpManager *self, GAsyncResult *result, GError **error)
{
        return g_task_propagate_pointer (G_TASK (result), error);
}

static void
client_shut_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        StartState *state = g_task_get_task_data (task);

        corral_mcp_client_shutdown_finish (CORRAL_MCP_CLIENT (source), result);
        if (--state->left == 0)
                g_task_return_boolean (task, TRUE);
}

void
corral_mcp_manager_shutdown_async (CorralMcpManager *self,
                                   GAsyncReadyCallback callback,
                                   gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (self, NULL, callback, user_data);
        StartState *state = g_new0 (StartState, 1);

        state->left = self->clients->len;
        g_task_set_task_data (task, state, g_free);
        g_ptr_array_set_size (self->tools, 0);
        g_hash_table_remove_all (self->by_name);
        if (self->clients->len == 0) {
                g_task_return_boolean (task, TRUE);
                return;
        }
        for (guint i = 0; i < self->clients->len; i++)
                corral_mcp_client_shutdown_async (self->clients->pdata[i], client_shut_cb,
                                                  g_object_ref (task));
}

void
corral_mcp_manager_shutdown_finish (CorralMcpManager *self, GAsyncResult *result)
{
        g_task_propagate_boolean (G_TASK (result), NULL);
}

void
corral_mcp_manager_set_timeout (CorralMcpManager *self, guint timeout_ms)
{
        for (guint i = 0; i < self->clients->len; i++)
                corral_mcp_client_set_timeout (self->clients->pdata[i], timeout_ms);
}

static void
corral_mcp_manager_dispose (GObject *object)
{
        CorralMcpManager *self = CORRAL_MCP_MANAGER (object);

        g_ptr_array_set_size (self->tools, 0);
        g_hash_table_remove_all (self->by_name);
        for (guint i = 0; i < self->clients->len; i++)
                g_signal_handlers_disconnect_by_data (self->clients->pdata[i], self);
        g_ptr_array_set_size (self->clients, 0);
        G_OBJECT_CLASS (corral_mcp_manager_parent_class)->dispose (object);
}

static void
corral_mcp_manager_finalize (GObject *object)
{
        CorralMcpManager *self = CORRAL_MCP_MANAGER (object);

        g_ptr_array_unref (self->clients);
        g_ptr_array_unref (self->tools);
        g_hash_table_unref (self->by_name);
        g_hash_table_unref (self->errors);
        G_OBJECT_CLASS (corral_mcp_manager_parent_class)->finalize (object);
}

static void
corral_mcp_manager_class_init (CorralMcpManagerClass *klass)
{
        GObjectClass *object_class = G_OBJECT_CLASS (klass);

        object_class->dispose = corral_mcp_manager_dispose;
        object_class->finalize = corral_mcp_manager_finalize;
        signals[SIGNAL_TOOLS_CHANGED] =
                g_signal_new ("tools-changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                              NULL, NULL, NULL, G_TYPE_NONE, 0);
        signals[SIGNAL_SERVER_CLOSED] =
                g_signal_new ("server-closed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                              NULL, NULL, NULL, G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_ERROR);
}

static void
corral_mcp_manager_init (CorralMcpManager *self)
{
        self->clients = g_ptr_array_new_with_free_func (g_object_unref);
        self->tools = g_ptr_array_new_with_free_func ((GDestroyNotify) exposed_free);
        self->by_name = g_hash_table_new (g_str_hash, g_str_equal);
        self->errors = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                              (GDestroyNotify) g_error_free);
}

static void
add_client (CorralMcpManager *self, const CorralMcpServerConfig *config)
{
        CorralMcpClient *client = corral_mcp_client_new (config);

        g_signal_connect (client, "tools-changed", G_CALLBACK (on_tools_changed), self);
        g_signal_connect (client, "closed", G_CALLBACK (on_closed), self);
        g_ptr_array_add (self->clients, client);
}

/* A server that is not started, and why (corral_mcp_manager_get_error()). */
static void
refuse (CorralMcpManager *self, const char *name, const GError *error)
{
        g_hash_table_replace (self->errors, g_strdup (name), g_error_copy (error));
}

/* One of the organisation's mcp.servers: {"name", "command": [PROGRAM, ARG...], "env": {}}
 * (corral-policy.h checked the members and their types). */
static CorralMcpServerConfig *
server_from_policy (const cJSON *item)
{
        const char *name = cJSON_GetStringValue (cJSON_GetObjectItemCaseSensitive (item, "name"));
        const cJSON *command = cJSON_GetObjectItemCaseSensitive (item, "command");
        const cJSON *env = cJSON_GetObjectItemCaseSensitive (item, "env");
        g_autoptr (GStrvBuilder) args = g_strv_builder_new ();
        g_autoptr (GStrvBuilder) vars = g_strv_builder_new ();
        g_auto (GStrv) argv = NULL, envv = NULL;
        const cJSON *e;
        int i = 0;

        cJSON_ArrayForEach (e, command) {
                if (i++ > 0)
                        g_strv_builder_add (args, cJSON_GetStringValue (e));
        }
        cJSON_ArrayForEach (e, env) {
                g_autofree char *kv =
                        g_strdup_printf ("%s=%s", e->string, cJSON_GetStringValue (e));
                g_strv_builder_add (vars, kv);
        }
        argv = g_strv_builder_end (args);
        envv = g_strv_builder_end (vars);
        return corral_mcp_server_config_new (
                name, cJSON_GetStringValue (cJSON_GetArrayItem (command, 0)),
                (const char *const *) argv, (const char *const *) envv);
}

/* The organisation's servers (mcp.servers), then the person's that its policy allows
 * (mcp.personMayAddServers, mcp.allowedServers; locked keys only). A policy that cannot be
 * loaded starts none of the person's servers, each with the reason. */
static void
add_allowed (CorralMcpManager *self, const CorralMcpConfig *config)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralPolicy) managed = corral_policy_load_default (&error);
        g_autoptr (GHashTable) provided = g_hash_table_new (g_str_hash, g_str_equal);
        const cJSON *servers = NULL, *item;
        CorralPolicySetting how;
        gboolean own = TRUE;

        if (managed && corral_policy_get_objects (managed, "mcp.servers", &servers, NULL)) {
                cJSON_ArrayForEach (item, servers) {
                        g_autoptr (CorralMcpServerConfig) c = server_from_policy (item);

                        add_client (self, c);
                        g_hash_table_add (provided,
                                          (gpointer) cJSON_GetStringValue (
                                                  cJSON_GetObjectItemCaseSensitive (item, "name")));
                }
        }
        if (managed && corral_policy_get_bool (managed, "mcp.personMayAddServers", &own, &how) &&
            how.locked && !own)
                g_set_error_literal (&error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED,
                                     _ ("MCP servers of your own are turned off (set by your "
                                        "organisation)."));
        for (guint i = 0; i < config->servers->len; i++) {
                const CorralMcpServerConfig *c = config->servers->pdata[i];
                g_autoptr (GError) refused = NULL;

                if (g_hash_table_contains (provided, c->name))
                        continue; /* the organisation's server of that name runs instead */
                if (error)
                        refuse (self, c->name, error);
                else if (!corral_policy_allows (managed, "mcp.allowedServers", c->name, &refused))
                        refuse (self, c->name, refused);
                else
                        add_client (self, c);
        }
}

CorralMcpManager *
corral_mcp_manager_new (const CorralMcpConfig *config)
{
        CorralMcpManager *self = g_object_new (CORRAL_TYPE_MCP_MANAGER, NULL);

        add_allowed (self, config);
        return self;
}
