/* corral-mcp-config.c — loading and validating the mcpServers file.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-mcp-config.h"

#include <glib/gi18n-lib.h>
#include <string.h>

CorralMcpServerConfig *
corral_mcp_server_config_new (const char *name,
                              const char *command,
                              const char *const *args,
                              const char *const *env)
{
        CorralMcpServerConfig *config = g_new0 (CorralMcpServerConfig, 1);
        const char *const none[] = { NULL };

        config->name = g_strdup (name);
        config->command = g_strdup (command);
        config->args = g_strdupv ((char **) (args ? args : none));
        config->env = g_strdupv ((char **) (env ? env : none));
        return config;
}

CorralMcpServerConfig *
corral_mcp_server_config_copy (const CorralMcpServerConfig *c)
{
        return corral_mcp_server_config_new (c->name, c->command, (const char *const *) c->args,
                                             (const char *const *) c->env);
}

void
corral_mcp_server_config_free (CorralMcpServerConfig *config)
{
        if (!config)
                return;
        g_free (config->name);
        g_free (config->command);
        g_strfreev (config->args);
        g_strfreev (config->env);
        g_free (config);
}

void
corral_mcp_config_free (CorralMcpConfig *config)
{
        if (!config)
                return;
        g_ptr_array_unref (config->servers);
        g_free (config);
}

static gboolean
field_error (GError **error, const char *server, const char *field, const char *problem)
{
        /* The server name is the person's own text, but it may hold anything: show it safely. */
        g_autofree char *safe = corral_mcp_sanitize_text (server, strlen (server), 80);

        g_set_error (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CONFIG,
                     _ ("MCP server “%s”: “%s” %s"), safe, field, problem);
        return FALSE;
}

static gboolean
printable (const char *s)
{
        for (const char *p = s; *p; p = g_utf8_next_char (p)) {
                gunichar c = g_utf8_get_char (p);

                if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0))
                        return FALSE;
        }
        return TRUE;
}

static gboolean
valid_env_key (const char *key)
{
        if (!*key || strlen (key) > 256 || g_ascii_isdigit (*key))
                return FALSE;
        for (const char *p = key; *p; p++)
                if (!g_ascii_isalnum (*p) && *p != '_')
                        return FALSE;
        return TRUE;
}

static gboolean
parse_args (const char *name, const cJSON *args, GStrvBuilder *out, GError **error)
{
        const cJSON *item;

        if (!args)
                return TRUE;
        if (!cJSON_IsArray (args))
                return field_error (error, name, "args", _ ("must be an array of strings"));
        if (cJSON_GetArraySize (args) > CORRAL_MCP_CONFIG_MAX_ARGS)
                return field_error (error, name, "args", _ ("has too many items (at most 256)"));
        cJSON_ArrayForEach (item, args) {
                if (!cJSON_IsString (item))
                        return field_error (error, name, "args", _ ("must be an array of strings"));
                if (strlen (item->valuestring) > CORRAL_MCP_CONFIG_MAX_STRING)
                        return field_error (error, name, "args",
                                            _ ("has an item that is too long"));
                g_strv_builder_add (out, item->valuestring);
        }
        return TRUE;
}

static gboolean
parse_env (const char *name, const cJSON *env, GStrvBuilder *out, GError **error)
{
        g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
        const cJSON *item;

        if (!env)
                return TRUE;
        if (!cJSON_IsObject (env))
                return field_error (error, name, "env", _ ("must be an object of strings"));
        if (cJSON_GetArraySize (env) > CORRAL_MCP_CONFIG_MAX_ENV)
                return field_error (error, name, "env", _ ("has too many entries (at most 256)"));
        cJSON_ArrayForEach (item, env) {
                g_autofree char *pair = NULL;

                if (!valid_env_key (item->string))
                        return field_error (error, name, "env",
                                            _ ("has a name that is not [A-Za-z_][A-Za-z0-9_]*"));
                if (!g_hash_table_add (seen, item->string))
                        return field_error (error, name, "env", _ ("names a variable twice"));
                if (!cJSON_IsString (item) ||
                    strlen (item->valuestring) > CORRAL_MCP_CONFIG_MAX_STRING)
                        return field_error (error, name, "env",
                                            _ ("must map names to strings (at most 64 KiB)"));
                pair = g_strdup_printf ("%s=%s", item->string, item->valuestring);
                g_strv_builder_add (out, pair);
        }
        return TRUE;
}

static gboolean
check_transport (const char *name, const cJSON *entry, GError **error)
{
        const cJSON *type = cJSON_GetObjectItemCaseSensitive (entry, "type");

        if (cJSON_GetObjectItemCaseSensitive (entry, "url"))
                return field_error (error, name, "url",
                                    _ ("is not supported: only stdio servers (“command”) are"));
        if (type && (!cJSON_IsString (type) || strcmp (type->valuestring, "stdio") != 0))
                return field_error (error, name, "type", _ ("must be \"stdio\""));
        return TRUE;
}

static CorralMcpServerConfig *
parse_server (const char *name, const cJSON *entry, GError **error)
{
        const cJSON *command = cJSON_GetObjectItemCaseSensitive (entry, "command");
        g_autoptr (GStrvBuilder) args = g_strv_builder_new ();
        g_autoptr (GStrvBuilder) env = g_strv_builder_new ();
        g_auto (GStrv) argv = NULL, envv = NULL;

        if (!cJSON_IsObject (entry))
                return field_error (error, name, name, _ ("must be an object")), NULL;
        if (!check_transport (name, entry, error))
                return NULL;
        if (!command)
                return field_error (error, name, "command", _ ("is missing")), NULL;
        if (!cJSON_IsString (command) || !*command->valuestring ||
            strlen (command->valuestring) > 4096)
                return field_error (error, name, "command",
                                    _ ("must be a non-empty string (at most 4096 bytes)")),
                       NULL;
        if (!parse_args (name, cJSON_GetObjectItemCaseSensitive (entry, "args"), args, error) ||
            !parse_env (name, cJSON_GetObjectItemCaseSensitive (entry, "env"), env, error))
                return NULL;
        argv = g_strv_builder_end (args);
        envv = g_strv_builder_end (env);
        return corral_mcp_server_config_new (name, command->valuestring, (const char *const *) argv,
                                             (const char *const *) envv);
}

static gboolean
check_name (const char *name, GHashTable *seen, GError **error)
{
        if (!*name || strlen (name) > CORRAL_MCP_CONFIG_MAX_NAME || !printable (name)) {
                g_set_error_literal (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CONFIG,
                                     _ ("MCP server names must be 1 to 64 printable characters"));
                return FALSE;
        }
        if (!g_hash_table_add (seen, (gpointer) name))
                return field_error (error, name, name, _ ("is defined twice"));
        return TRUE;
}

static gboolean
is_disabled (const cJSON *entry)
{
        return cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (entry, "disabled"));
}

CorralMcpConfig *
corral_mcp_config_new_from_data (const char *data, gsize len, GError **error)
{
        g_autoptr (cJSON) root = NULL;
        g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
        g_autoptr (CorralMcpConfig) config = g_new0 (CorralMcpConfig, 1);
        g_autoptr (GError) local = NULL;
        const cJSON *servers, *entry;

        config->servers =
                g_ptr_array_new_with_free_func ((GDestroyNotify) corral_mcp_server_config_free);
        if (len > CORRAL_MCP_CONFIG_MAX_BYTES) {
                g_set_error_literal (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CONFIG,
                                     _ ("the MCP configuration is larger than 1 MiB"));
                return NULL;
        }
        if (!(root = corral_mcp_json_parse (data, len, &local))) {
                g_set_error (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CONFIG,
                             _ ("the MCP configuration is not valid: %s"), local->message);
                return NULL;
        }
        servers = cJSON_GetObjectItemCaseSensitive (root, "mcpServers");
        if (!cJSON_IsObject (root) || !cJSON_IsObject (servers)) {
                g_set_error_literal (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CONFIG,
                                     _ ("the MCP configuration needs an “mcpServers” object"));
                return NULL;
        }
        if (cJSON_GetArraySize (servers) > CORRAL_MCP_CONFIG_MAX_SERVERS) {
                g_set_error_literal (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CONFIG,
                                     _ ("the MCP configuration lists more than 64 servers"));
                return NULL;
        }
        cJSON_ArrayForEach (entry, servers) {
                CorralMcpServerConfig *server;

                if (!check_name (entry->string, seen, error))
                        return NULL;
                if (is_disabled (entry))
                        continue;
                if (!(server = parse_server (entry->string, entry, error)))
                        return NULL;
                g_ptr_array_add (config->servers, server);
        }
        return g_steal_pointer (&config);
}

CorralMcpConfig *
corral_mcp_config_new_from_file (const char *path, gboolean missing_ok, GError **error)
{
        g_autoptr (GError) local = NULL;
        g_autofree char *data = NULL;
        gsize len;
        CorralMcpConfig *config;

        if (!g_file_get_contents (path, &data, &len, &local)) {
                if (missing_ok && g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
                        return corral_mcp_config_new_from_data ("{\"mcpServers\":{}}", 17, error);
                g_propagate_error (error, g_steal_pointer (&local));
                return NULL;
        }
        config = corral_mcp_config_new_from_data (data, len, &local);
        if (!config)
                g_propagate_prefixed_error (error, g_steal_pointer (&local), "%s: ", path);
        return config;
}

char *
corral_mcp_config_default_path (void)
{
        return g_build_filename (g_get_user_config_dir (), "corral", "mcp.json", NULL);
}

static void
append_sanitized (GString *out, const char *s)
{
        for (const char *p = s; *p; p++)
                g_string_append_c (out, g_ascii_isalnum (*p) || *p == '_' || *p == '-' ? *p : '_');
}

char *
corral_mcp_tool_name_sanitize (const char *server, const char *tool)
{
        g_autoptr (GString) name = g_string_new (NULL);
        g_autofree char *whole = g_strconcat (server, "__", tool, NULL);
        g_autofree char *hash = NULL;

        append_sanitized (name, server);
        g_string_append (name, "__");
        append_sanitized (name, tool);
        if (name->len <= CORRAL_MCP_TOOL_NAME_MAX)
                return g_string_free (g_steal_pointer (&name), FALSE);
        /* Hash the original, not the sanitised text: "a.b" and "a_b" must stay apart. */
        hash = g_compute_checksum_for_string (G_CHECKSUM_SHA256, whole, -1);
        g_string_truncate (name, CORRAL_MCP_TOOL_NAME_MAX - 9);
        g_string_append_c (name, '_');
        g_string_append_len (name, hash, 8);
        return g_string_free (g_steal_pointer (&name), FALSE);
}

gboolean
corral_mcp_tool_name_is_valid (const char *name)
{
        gsize len = strlen (name);

        if (len == 0 || len > CORRAL_MCP_TOOL_NAME_MAX)
                return FALSE;
        for (const char *p = name; *p; p++)
                if (!g_ascii_isalnum (*p) && *p != '_' && *p != '-')
                        return FALSE;
        return TRUE;
}
