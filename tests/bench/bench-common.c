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
