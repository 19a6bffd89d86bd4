/* corral-exec-spec.c — the exec.start parameters, checked before they are sent.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-agent-private.h"

#include <glib/gi18n-lib.h>

#define MAX_ARGV 4096
#define MAX_ENV 4096
#define MAX_RING (16u * 1024 * 1024)

struct _CorralExecSpec {
        gatomicrefcount ref;
        GStrv argv; /* NULL when shell is set */
        char *shell;
        GHashTable *env; /* char * -> char *, insertion order irrelevant */
        char *cwd;
        char *user;
        gboolean stdin_enabled;
        guint pty_rows;
        guint pty_cols;
        guint64 timeout_ms;
        gboolean background;
        gboolean unconfined;
        GHashTable *rlimits; /* static name -> guint64 * */
        gsize ring;
};

G_DEFINE_BOXED_TYPE (CorralExecSpec, corral_exec_spec, corral_exec_spec_ref, corral_exec_spec_unref)

static CorralExecSpec *
spec_new (void)
{
        CorralExecSpec *spec = g_new0 (CorralExecSpec, 1);

        g_atomic_ref_count_init (&spec->ref);
        spec->env = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
        spec->rlimits = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
        return spec;
}

CorralExecSpec *
corral_exec_spec_new_argv (const char *const *argv)
{
        CorralExecSpec *spec;

        g_return_val_if_fail (argv != NULL && argv[0] != NULL, NULL);
        spec = spec_new ();
        spec->argv = g_strdupv ((char **) argv);
        return spec;
}

CorralExecSpec *
corral_exec_spec_new_shell (const char *command)
{
        CorralExecSpec *spec;

        g_return_val_if_fail (command != NULL, NULL);
        spec = spec_new ();
        spec->shell = g_strdup (command);
        return spec;
}

CorralExecSpec *
corral_exec_spec_ref (CorralExecSpec *spec)
{
        g_return_val_if_fail (spec != NULL, NULL);
        g_atomic_ref_count_inc (&spec->ref);
        return spec;
}

void
corral_exec_spec_unref (CorralExecSpec *spec)
{
        if (!spec || !g_atomic_ref_count_dec (&spec->ref))
                return;
        g_strfreev (spec->argv);
        g_free (spec->shell);
        g_hash_table_unref (spec->env);
        g_free (spec->cwd);
        g_free (spec->user);
        g_hash_table_unref (spec->rlimits);
        g_free (spec);
}

void
corral_exec_spec_set_env (CorralExecSpec *spec, const char *key, const char *value)
{
        g_return_if_fail (spec != NULL && key != NULL && value != NULL);
        g_hash_table_replace (spec->env, g_strdup (key), g_strdup (value));
}

void
corral_exec_spec_set_cwd (CorralExecSpec *spec, const char *cwd)
{
        g_return_if_fail (spec != NULL);
        g_free (spec->cwd);
        spec->cwd = g_strdup (cwd);
}

void
corral_exec_spec_set_user (CorralExecSpec *spec, const char *user)
{
        g_return_if_fail (spec != NULL);
        g_free (spec->user);
        spec->user = g_strdup (user);
}

void
corral_exec_spec_set_stdin (CorralExecSpec *spec, gboolean enable)
{
        g_return_if_fail (spec != NULL);
        spec->stdin_enabled = enable;
}

void
corral_exec_spec_set_pty (CorralExecSpec *spec, guint rows, guint cols)
{
        g_return_if_fail (spec != NULL);
        spec->pty_rows = rows;
        spec->pty_cols = cols;
}

void
corral_exec_spec_set_timeout_ms (CorralExecSpec *spec, guint64 timeout_ms)
{
        g_return_if_fail (spec != NULL);
        spec->timeout_ms = timeout_ms;
}

void
corral_exec_spec_set_background (CorralExecSpec *spec, gboolean background)
{
        g_return_if_fail (spec != NULL);
        spec->background = background;
}

void
corral_exec_spec_set_unconfined (CorralExecSpec *spec, gboolean unconfined)
{
        g_return_if_fail (spec != NULL);
        spec->unconfined = unconfined;
}

void
corral_exec_spec_set_rlimit (CorralExecSpec *spec, const char *name, guint64 value)
{
        static const char *const names[] = { "nproc", "fsize", "nofile", "cpu" };

        g_return_if_fail (spec != NULL && name != NULL);
        for (gsize i = 0; i < G_N_ELEMENTS (names); i++) {
                if (g_str_equal (name, names[i])) {
                        g_hash_table_replace (spec->rlimits, (gpointer) names[i],
                                              g_memdup2 (&value, sizeof value));
                        return;
                }
        }
        g_return_if_reached ();
}

void
corral_exec_spec_set_ring_size (CorralExecSpec *spec, gsize bytes)
{
        g_return_if_fail (spec != NULL);
        spec->ring = bytes;
}

gboolean
corral_exec_spec_get_stdin (const CorralExecSpec *spec)
{
        g_return_val_if_fail (spec != NULL, FALSE);
        return spec->stdin_enabled;
}

gboolean
corral_exec_spec_get_background (const CorralExecSpec *spec)
{
        g_return_val_if_fail (spec != NULL, FALSE);
        return spec->background;
}

/* JSON strings must be UTF-8; anything else would be refused by the agent as a whole. */
static gboolean
check_text (const char *what, const char *s, gboolean allow_empty, GError **error)
{
        if (s && g_utf8_validate (s, -1, NULL) && (allow_empty || *s))
                return TRUE;
        g_set_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_INVALID_REQUEST,
                     _ ("Invalid %s: it must be non-empty UTF-8 text"), what);
        return FALSE;
}

static gboolean
add_command (cJSON *params, const CorralExecSpec *spec, GError **error)
{
        cJSON *argv;

        if (spec->shell) {
                if (!check_text ("shell command", spec->shell, FALSE, error))
                        return FALSE;
                cJSON_AddStringToObject (params, "shell", spec->shell);
                return TRUE;
        }
        if (g_strv_length (spec->argv) > MAX_ARGV) {
                g_set_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_TOO_LARGE,
                             _ ("Too many arguments (at most %d)"), MAX_ARGV);
                return FALSE;
        }
        argv = cJSON_AddArrayToObject (params, "argv");
        for (char **a = spec->argv; *a; a++) {
                if (!check_text ("argument", *a, a != spec->argv, error))
                        return FALSE;
                cJSON_AddItemToArray (argv, cJSON_CreateString (*a));
        }
        return TRUE;
}

static gboolean
add_env (cJSON *params, const CorralExecSpec *spec, GError **error)
{
        GHashTableIter iter;
        gpointer key, value;
        cJSON *env;

        if (g_hash_table_size (spec->env) == 0)
                return TRUE;
        if (g_hash_table_size (spec->env) > MAX_ENV) {
                g_set_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_TOO_LARGE,
                             _ ("Too many environment variables (at most %d)"), MAX_ENV);
                return FALSE;
        }
        env = cJSON_AddObjectToObject (params, "env");
        g_hash_table_iter_init (&iter, spec->env);
        while (g_hash_table_iter_next (&iter, &key, &value)) {
                if (!check_text ("environment variable name", key, FALSE, error) ||
                    !check_text ("environment variable value", value, TRUE, error))
                        return FALSE;
                if (strchr (key, '=')) {
                        g_set_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_INVALID_REQUEST,
                                     _ ("Invalid environment variable name: it contains “=”"));
                        return FALSE;
                }
                cJSON_AddStringToObject (env, key, value);
        }
        return TRUE;
}

static void
add_options (cJSON *params, const CorralExecSpec *spec)
{
        if (spec->stdin_enabled)
                cJSON_AddBoolToObject (params, "stdin", TRUE);
        if (spec->pty_rows > 0 && spec->pty_cols > 0) {
                cJSON *pty = cJSON_AddObjectToObject (params, "pty");

                cJSON_AddNumberToObject (pty, "rows", MIN (spec->pty_rows, 65535));
                cJSON_AddNumberToObject (pty, "cols", MIN (spec->pty_cols, 65535));
        }
        if (spec->timeout_ms > 0)
                cJSON_AddNumberToObject (params, "timeout_ms",
                                         (double) MIN (spec->timeout_ms, (guint64) PROTO_MAX_ID));
        if (spec->background)
                cJSON_AddBoolToObject (params, "background", TRUE);
        if (spec->unconfined)
                cJSON_AddBoolToObject (params, "confine", FALSE);
        if (spec->ring > 0)
                cJSON_AddNumberToObject (params, "ring", (double) MIN (spec->ring, MAX_RING));
        if (g_hash_table_size (spec->rlimits) > 0) {
                cJSON *rl = cJSON_AddObjectToObject (params, "rlimits");
                GHashTableIter iter;
                gpointer key, value;

                g_hash_table_iter_init (&iter, spec->rlimits);
                while (g_hash_table_iter_next (&iter, &key, &value))
                        cJSON_AddNumberToObject (
                                rl, key, (double) MIN (*(guint64 *) value, (guint64) PROTO_MAX_ID));
        }
}

cJSON *
_corral_exec_spec_to_json (const CorralExecSpec *spec, guint32 channel, GError **error)
{
        g_autoptr (cJSON) params = cJSON_CreateObject ();

        if (!add_command (params, spec, error) || !add_env (params, spec, error))
                return NULL;
        if (spec->cwd && !check_text ("working directory", spec->cwd, FALSE, error))
                return NULL;
        if (spec->user && !check_text ("user", spec->user, FALSE, error))
                return NULL;
        if (spec->cwd)
                cJSON_AddStringToObject (params, "cwd", spec->cwd);
        if (spec->user)
                cJSON_AddStringToObject (params, "user", spec->user);
        cJSON_AddNumberToObject (params, "channel", channel);
        add_options (params, spec);
        return g_steal_pointer (&params);
}
