/* corral-agent-run.c — spawn, capture bounded output, wait: the common "run a command" case.
 *
 * Output past max_output is still read (the process would block otherwise) but dropped, and the
 * result says so: never a silent truncation, never unbounded memory.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-process.h"

#include "corral-agent-private.h"

#include <signal.h>

typedef struct {
        gsize max_output;
        gboolean close_stdin;
        GByteArray *out;
        GByteArray *err;
        CorralRunResult result;
        CorralProcess *proc;
} RunData;

static void
run_data_free (RunData *rd)
{
        g_clear_pointer (&rd->out, g_byte_array_unref);
        g_clear_pointer (&rd->err, g_byte_array_unref);
        g_clear_object (&rd->proc);
        g_free (rd);
}

void
corral_run_result_free (CorralRunResult *result)
{
        if (!result)
                return;
        g_clear_pointer (&result->stdout_data, g_bytes_unref);
        g_clear_pointer (&result->stderr_data, g_bytes_unref);
        g_clear_pointer (&result->refused_calls, g_strfreev);
        g_free (result);
}

static void
run_output (CorralProcess *proc, guint stream, GBytes *bytes, gpointer user_data)
{
        RunData *rd = user_data;
        GByteArray *buf = stream == CORRAL_PROCESS_STDERR ? rd->err : rd->out;
        gsize len;
        const guint8 *data = g_bytes_get_data (bytes, &len);
        gsize keep = MIN (len, rd->max_output - MIN (buf->len, rd->max_output));

        if (stream == CORRAL_PROCESS_STDERR)
                rd->result.stderr_total += len;
        else
                rd->result.stdout_total += len;
        g_byte_array_append (buf, data, (guint) keep);
        if (keep < len)
                rd->result.truncated = TRUE;
}

static void
run_waited (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        RunData *rd = g_task_get_task_data (task);
        g_autoptr (GError) error = NULL;
        CorralRunResult *res;

        g_signal_handlers_disconnect_by_data (rd->proc, rd);
        if (!corral_process_wait_finish (CORRAL_PROCESS (source), result, &error)) {
                /* Do not leave an abandoned command running. */
                corral_process_kill (rd->proc, SIGKILL);
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        res = g_memdup2 (&rd->result, sizeof rd->result);
        res->exit_code = corral_process_get_exit_code (rd->proc);
        res->term_signal = corral_process_get_term_signal (rd->proc);
        res->timed_out = corral_process_get_timed_out (rd->proc);
        res->refused_calls = g_strdupv ((char **) corral_process_get_refused_calls (rd->proc));
        res->stdout_data = g_byte_array_free_to_bytes (g_steal_pointer (&rd->out));
        res->stderr_data = g_byte_array_free_to_bytes (g_steal_pointer (&rd->err));
        g_task_return_pointer (task, res, (GDestroyNotify) corral_run_result_free);
}

static void
run_spawned (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        RunData *rd = g_task_get_task_data (task);
        g_autoptr (GError) error = NULL;
        GCancellable *cancellable;

        rd->proc = corral_agent_client_spawn_finish (CORRAL_AGENT_CLIENT (source), result, &error);
        if (!rd->proc) {
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        g_signal_connect (rd->proc, "output", G_CALLBACK (run_output), rd);
        if (rd->close_stdin)
                corral_process_close_stdin (rd->proc);
        cancellable = g_task_get_cancellable (task);
        corral_process_wait_async (rd->proc, cancellable, run_waited, g_steal_pointer (&task));
}

void
corral_agent_client_run_async (CorralAgentClient *self,
                               CorralExecSpec *spec,
                               gsize max_output,
                               GCancellable *cancellable,
                               GAsyncReadyCallback callback,
                               gpointer user_data)
{
        GTask *task;
        RunData *rd;

        g_return_if_fail (CORRAL_IS_AGENT_CLIENT (self));
        g_return_if_fail (spec != NULL);
        g_return_if_fail (max_output <= G_MAXUINT);

        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_agent_client_run_async);
        rd = g_new0 (RunData, 1);
        rd->max_output = max_output;
        rd->close_stdin = corral_exec_spec_get_stdin (spec);
        rd->out = g_byte_array_new ();
        rd->err = g_byte_array_new ();
        g_task_set_task_data (task, rd, (GDestroyNotify) run_data_free);
        corral_agent_client_spawn_async (self, spec, cancellable, run_spawned, task);
}

CorralRunResult *
corral_agent_client_run_finish (CorralAgentClient *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}
