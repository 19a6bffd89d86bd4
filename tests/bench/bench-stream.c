/* bench-stream.c — stdout throughput of `head -c 1G /dev/zero` through the channel against the
 * same command piped to a local reader, same run (issue: ratio goal >= 0.5).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-common.h"

#define BYTES "1073741824"

extern char **environ;

static double
read_local (guint64 *ret_bytes)
{
        char *argv[] = { (char *) "head", (char *) "-c", (char *) BYTES, (char *) "/dev/zero",
                         NULL };
        posix_spawn_file_actions_t fa;
        static char buf[128 * 1024];
        double t0 = bench_now ();
        guint64 total = 0;
        int fds[2];
        pid_t pid;
        ssize_t n;

        if (pipe2 (fds, O_CLOEXEC) < 0)
                g_error ("pipe2 failed");
        posix_spawn_file_actions_init (&fa);
        posix_spawn_file_actions_adddup2 (&fa, fds[1], 1);
        if (posix_spawnp (&pid, "head", &fa, NULL, argv, environ) != 0)
                g_error ("posix_spawnp failed");
        posix_spawn_file_actions_destroy (&fa);
        close (fds[1]);
        while ((n = read (fds[0], buf, sizeof buf)) > 0)
                total += (guint64) n;
        close (fds[0]);
        waitpid (pid, NULL, 0);
        *ret_bytes = total;
        return bench_now () - t0;
}

static void
on_output (CorralProcess *proc, guint stream, GBytes *data, gpointer user_data)
{
        *(guint64 *) user_data += g_bytes_get_size (data);
}

typedef struct {
        CorralProcess *proc;
        guint64 total;
} StreamRun;

static void
on_spawned (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GError) error = NULL;
        StreamRun *run = user_data;

        run->proc = corral_agent_client_spawn_finish (CORRAL_AGENT_CLIENT (source), res, &error);
        if (!run->proc)
                g_error ("spawn failed: %s", error->message);
        /* Here, not later: output held until now is emitted right after this callback. */
        g_signal_connect (run->proc, "output", G_CALLBACK (on_output), &run->total);
}

static void
on_waited (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GError) error = NULL;

        if (!corral_process_wait_finish (CORRAL_PROCESS (source), res, &error))
                g_error ("wait failed: %s", error->message);
        *(gboolean *) user_data = TRUE;
}

static double
read_channel (BenchAgent *agent, guint64 *ret_bytes)
{
        const char *const argv[] = { "head", "-c", BYTES, "/dev/zero", NULL };
        CorralExecSpec *spec = corral_exec_spec_new_argv (argv);
        StreamRun run = { NULL, 0 };
        double t0 = bench_now ();
        gboolean done = FALSE;

        corral_agent_client_spawn_async (agent->client, spec, NULL, on_spawned, &run);
        while (!run.proc)
                g_main_context_iteration (NULL, TRUE);
        corral_process_wait_async (run.proc, NULL, on_waited, &done);
        bench_wait (&done);
        g_object_unref (run.proc);
        corral_exec_spec_unref (spec);
        *ret_bytes = run.total;
        return bench_now () - t0;
}

int
main (void)
{
        BenchAgent agent;
        guint64 local_bytes = 0, chan_bytes = 0;
        double local_s = 0, chan_s = 0, local_rate, chan_rate;

        bench_agent_start (&agent);
        /* Best of three for each, interleaved. */
        for (int i = 0; i < 3; i++) {
                double l = read_local (&local_bytes), c = read_channel (&agent, &chan_bytes);

                local_s = i == 0 ? l : MIN (local_s, l);
                chan_s = i == 0 ? c : MIN (chan_s, c);
        }
        bench_agent_stop (&agent);

        if (local_bytes != chan_bytes || chan_bytes != 1073741824u)
                g_error ("byte counts differ: local %" G_GUINT64_FORMAT
                         ", channel %" G_GUINT64_FORMAT,
                         local_bytes, chan_bytes);
        local_rate = local_bytes / local_s / (1024 * 1024);
        chan_rate = chan_bytes / chan_s / (1024 * 1024);
        g_print ("local pipe reader:   %.0f MiB/s (%.2f s for 1 GiB)\n", local_rate, local_s);
        g_print ("through the channel: %.0f MiB/s (%.2f s for 1 GiB)\n", chan_rate, chan_s);
        g_print ("stdout throughput: %.0f MiB/s vs %.0f MiB/s baseline, ratio %.2f (goal >= 0.5)\n",
                 chan_rate, local_rate, chan_rate / local_rate);
        return 0;
}
