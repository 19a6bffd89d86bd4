/* bench-exec.c — exec round trip of `true` through host client -> corral-agent, against
 * posix_spawn + waitpid of the same program in the same run (issue: ratio goal <= 1.5).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "bench-common.h"

#define ROUNDS (g_getenv ("BENCH_ROUNDS") ? atoi (g_getenv ("BENCH_ROUNDS")) : 400)

extern char **environ;

static double
spawn_direct (void)
{
        char *argv[] = { (char *) "/bin/true", NULL };
        double t0 = bench_now ();
        pid_t pid;
        int status;

        if (posix_spawn (&pid, argv[0], NULL, NULL, argv, environ) != 0)
                g_error ("posix_spawn failed");
        waitpid (pid, &status, 0);
        return bench_now () - t0;
}

static void
on_ran (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralRunResult) result =
                corral_agent_client_run_finish (CORRAL_AGENT_CLIENT (source), res, &error);

        if (!result || result->exit_code != 0)
                g_error ("exec of true failed: %s", error ? error->message : "non-zero exit");
        *(gboolean *) user_data = TRUE;
}

static double
spawn_agent (BenchAgent *agent, CorralExecSpec *spec)
{
        gboolean done = FALSE;
        double t0 = bench_now ();

        corral_agent_client_run_async (agent->client, spec, 4096, NULL, on_ran, &done);
        bench_wait (&done);
        return bench_now () - t0;
}

int
main (void)
{
        const char *const argv[] = { "/bin/true", NULL };
        g_autoptr (GArray) direct = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) via = g_array_new (FALSE, FALSE, sizeof (double));
        CorralExecSpec *spec = corral_exec_spec_new_argv (argv);
        BenchAgent agent;
        double d, v;

        bench_agent_start (&agent);
        /* Interleave so both see the same machine load. */
        for (int i = 0; i < ROUNDS; i++) {
                double a = spawn_direct (), b = spawn_agent (&agent, spec);

                g_array_append_val (direct, a);
                g_array_append_val (via, b);
        }
        bench_agent_stop (&agent);
        corral_exec_spec_unref (spec);

        d = bench_median (direct) * 1000.0;
        v = bench_median (via) * 1000.0;
        g_print ("posix_spawn+waitpid of /bin/true: median %.3f ms over %d runs\n", d, ROUNDS);
        g_print ("corral-agent exec of /bin/true:   median %.3f ms over %d runs\n", v, ROUNDS);
        g_print ("exec round trip: %.3f ms vs %.3f ms baseline, ratio %.2f (goal <= 1.5)\n", v, d,
                 v / d);
        return 0;
}
