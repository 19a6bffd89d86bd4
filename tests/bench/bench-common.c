/* bench-common.c — see bench-common.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "bench-common.h"

#include <signal.h>
#include <sys/wait.h>

static void
on_connected (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GError) error = NULL;

        if (!corral_agent_client_connect_fd_finish (CORRAL_AGENT_CLIENT (source), res, &error))
                g_error ("connecting to the agent: %s", error->message);
        *(gboolean *) user_data = TRUE;
}

void
bench_agent_start (BenchAgent *agent)
{
        const char *path = g_getenv ("CORRAL_AGENT_PATH");
        const char *args[] = { "--user", g_get_user_name (), NULL };
        g_autoptr (GError) error = NULL;
        gboolean done = FALSE;
        int fd;

        if (!path)
                g_error ("CORRAL_AGENT_PATH is not set (run through meson test --benchmark)");
        if (!corral_agent_client_spawn_local_agent (path, args, &agent->pid, &fd, &error))
                g_error ("starting %s: %s", path, error->message);
        agent->client = corral_agent_client_new ();
        corral_agent_client_connect_fd_async (agent->client, fd, NULL, on_connected, &done);
        bench_wait (&done);
}

void
bench_agent_stop (BenchAgent *agent)
{
        corral_agent_client_close (agent->client);
        g_clear_object (&agent->client);
        kill (agent->pid, SIGTERM);
        waitpid (agent->pid, NULL, 0);
        g_spawn_close_pid (agent->pid);
}

void
bench_wait (gboolean *done)
{
        while (!*done)
                g_main_context_iteration (NULL, TRUE);
}

double
bench_now (void)
{
        return (double) g_get_monotonic_time () / G_USEC_PER_SEC;
}

static int
cmp_double (gconstpointer a, gconstpointer b)
{
        double x = *(const double *) a, y = *(const double *) b;

        return (x > y) - (x < y);
}

double
bench_median (GArray *samples)
{
        g_array_sort (samples, cmp_double);
        return g_array_index (samples, double, samples->len / 2);
}

static void
on_run_done (GObject *source, GAsyncResult *res, gpointer user_data)
{
        *(GAsyncResult **) user_data = g_object_ref (res);
}

void
bench_exec_true (CorralAgentClient *client)
{
        const char *argv[] = { "/bin/true", NULL };
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralRunResult) r = NULL;

        corral_agent_client_run_async (client, spec, 1024, NULL, on_run_done, &res);
        while (!res)
                g_main_context_iteration (NULL, TRUE);
        r = corral_agent_client_run_finish (client, res, &error);
        if (!r || r->exit_code != 0)
                g_error ("exec /bin/true: %s", error ? error->message : "non-zero exit status");
}

typedef struct {
        CorralProcess *proc;
        guint64 total;
        gboolean done;
        GError *error;
} StreamRun;

static void
on_output (CorralProcess *proc, guint stream, GBytes *data, gpointer user_data)
{
        *(guint64 *) user_data += g_bytes_get_size (data);
}

static void
on_spawned (GObject *source, GAsyncResult *res, gpointer user_data)
{
        StreamRun *run = user_data;

        run->proc =
                corral_agent_client_spawn_finish (CORRAL_AGENT_CLIENT (source), res, &run->error);
        if (run->proc) /* now: output held until now is emitted right after this callback */
                g_signal_connect (run->proc, "output", G_CALLBACK (on_output), &run->total);
        else
                run->done = TRUE;
}

static void
on_waited (GObject *source, GAsyncResult *res, gpointer user_data)
{
        StreamRun *run = user_data;

        corral_process_wait_finish (CORRAL_PROCESS (source), res, &run->error);
        run->done = TRUE;
}

double
bench_stream_zero (CorralAgentClient *client, guint bytes, guint64 *ret_bytes, GError **error)
{
        g_autofree char *count = g_strdup_printf ("%u", bytes);
        const char *const argv[] = { "head", "-c", count, "/dev/zero", NULL };
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
        StreamRun run = { 0 };
        double t0 = bench_now ();

        corral_agent_client_spawn_async (client, spec, NULL, on_spawned, &run);
        while (!run.proc && !run.done)
                g_main_context_iteration (NULL, TRUE);
        if (run.proc)
                corral_process_wait_async (run.proc, NULL, on_waited, &run);
        bench_wait (&run.done);
        g_clear_object (&run.proc);
        *ret_bytes = run.total;
        if (run.error) {
                g_propagate_error (error, run.error);
                return -1;
        }
        return bench_now () - t0;
}
