/* bench-exec.c — exec round trip of `true` through host client -> corral-agent, against
 * posix_spawn + waitpid of the same program in the same run (issue: ratio goal <= 1.5); and
 * the same under the second wall (seccomp + Landlock, the default) against without it (goal
 * <= 1.05).
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
        g_autoptr (GArray) unconfined = g_array_new (FALSE, FALSE, sizeof (double));
        CorralExecSpec *spec = corral_exec_spec_new_argv (argv);
        CorralExecSpec *free_spec = corral_exec_spec_new_argv (argv);
        BenchAgent agent;
        double d, v, u;

        corral_exec_spec_set_unconfined (free_spec, TRUE);
        bench_agent_start (&agent);
        /* Interleave so all see the same machine load. */
        for (int i = 0; i < ROUNDS; i++) {
                /* Which of the two goes first alternates: the first one after posix_spawn
                 * pays for a colder cache (measured: 0.1 ms with no wall at all). */
                double a = spawn_direct (), b, c;

                if (i % 2) {
                        b = spawn_agent (&agent, spec);
                        c = spawn_agent (&agent, free_spec);
                } else {
                        c = spawn_agent (&agent, free_spec);
                        b = spawn_agent (&agent, spec);
                }

                g_array_append_val (direct, a);
                g_array_append_val (via, b);
                g_array_append_val (unconfined, c);
        }
        bench_agent_stop (&agent);
        corral_exec_spec_unref (spec);
        corral_exec_spec_unref (free_spec);

        d = bench_median (direct) * 1000.0;
        v = bench_median (via) * 1000.0;
        g_print ("posix_spawn+waitpid of /bin/true: median %.3f ms over %d runs\n", d, ROUNDS);
        g_print ("corral-agent exec of /bin/true:   median %.3f ms over %d runs\n", v, ROUNDS);
        g_print ("exec round trip: %.3f ms vs %.3f ms baseline, ratio %.2f (goal <= 1.5)\n", v, d,
                 v / d);
        u = bench_median (unconfined) * 1000.0;
        g_print ("exec under seccomp + Landlock vs unconfined: %.3f ms vs %.3f ms, ratio %.2f "
                 "(goal <= 1.05)\n",
                 v, u, v / u);
        return 0;
}
