/* bench-vm.c — Corral in a real (TCG) VM, plain QEMU started here, one VM at a time:
 *   1. boot: bare kernel to its first userspace program vs the minimal image to the first
 *      `exec true` through CorralAgentClient (goal <= 1.3);
 *   2. exec round trip of /bin/true vs the physical limit (in-guest spawn + channel ping, goal
 *      <= 1.2), vs qemu-guest-agent guest-exec on the same VM (goal: never slower), and under
 *      the second wall (seccomp + Landlock, the default) vs without it (goal <= 1.05);
 *   3. stdout streaming of 64 MiB through Corral (qemu-ga can only capture: 16 MiB for contrast).
 * The image is built (or taken from the cache) with guest-image/minimal/build-minimal; set
 * CORRAL_BENCH_VM_IMAGE / CORRAL_BENCH_VM_IMAGE_QGA to image directories to skip that.
 * BENCH_VM_BOOTS (3) and BENCH_VM_ROUNDS (200) override the counts.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <glib/gstdio.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench-common.h"
#include "bench-vm-qemu.h"

#define APPEND "console=ttyS0 quiet panic=-1"
#define MARKER "CORRAL-BENCH-INIT-REACHED"
#define AGENT_MARKER "corral-init: agent started"
#define STREAM_BYTES 67108864u /* 64 MiB: under TCG the guest itself pipes only ~7 MiB/s */
#define QGA_CAPTURE_BYTES 16777216u
/* The exec rounds are measured in this many blocks, each followed by the in-guest spawn loop. */
#define SPAWN_BLOCKS 4

static int
env_int (const char *name, int def)
{
        const char *v = g_getenv (name);

        return v && atoi (v) > 0 ? atoi (v) : def;
}

/* --- Corral client helpers ------------------------------------------------------------------ */

typedef struct {
        gboolean done;
        GError *error;
        cJSON *json;
} Wait;

static void
on_called (GObject *source, GAsyncResult *res, gpointer user_data)
{
        Wait *w = user_data;

        w->json = corral_agent_client_call_finish (CORRAL_AGENT_CLIENT (source), res, &w->error);
        w->done = TRUE;
}

static double
ping (CorralAgentClient *client, BenchVm *vm)
{
        double t0 = bench_now ();
        Wait w = { 0 };

        corral_agent_client_call_async (client, "exec.list", NULL, NULL, on_called, &w);
        bench_wait (&w.done);
        if (!w.json) {
                bench_vm_stop (vm);
                g_error ("exec.list failed: %s", w.error->message);
        }
        cJSON_Delete (w.json);
        return bench_now () - t0;
}

/* --- qemu-guest-agent client (blocking; one JSON object per line) -------------------------- */

typedef struct {
        int fd;
        GString *buf;
        BenchVm *vm;
} Qga;

G_GNUC_NORETURN static void
qga_fail (Qga *q, const char *what)
{
        bench_vm_stop (q->vm);
        g_error ("qemu-ga: %s", what);
}

static void
qga_send (Qga *q, const char *data, gsize len)
{
        while (len > 0) {
                ssize_t n = write (q->fd, data, len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        qga_fail (q, "write failed");
                data += n;
                len -= (gsize) n;
        }
}

/* One line without its newline (a string the caller frees). */
static char *
qga_read_line (Qga *q, double timeout_s)
{
        double deadline = bench_now () + timeout_s;
        gsize scanned = 0;

        for (;;) {
                char *nl = memchr (q->buf->str + scanned, '\n', q->buf->len - scanned);
                struct pollfd p = { q->fd, POLLIN, 0 };
                char chunk[65536];
                ssize_t n;

                if (nl) {
                        gsize len = (gsize) (nl - q->buf->str);
                        char *line = g_strndup (q->buf->str, len);

                        g_string_erase (q->buf, 0, (gssize) len + 1);
                        return line;
                }
                scanned = q->buf->len;
                if (poll (&p, 1, (int) MAX (1, (deadline - bench_now ()) * 1000)) == 0)
                        qga_fail (q, "timed out waiting for an answer");
                n = read (q->fd, chunk, sizeof chunk);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        qga_fail (q, "connection lost");
                g_string_append_len (q->buf, chunk, n);
        }
}

static cJSON *
qga_call (Qga *q, const char *request)
{
        g_autofree char *line = NULL;
        cJSON *json, *ret;

        qga_send (q, request, strlen (request));
        line = qga_read_line (q, 60);
        json = cJSON_Parse (line);
        ret = json ? cJSON_GetObjectItem (json, "return") : NULL;
        if (!ret) {
                g_printerr ("qemu-ga answered: %.300s\n", line);
                qga_fail (q, "unexpected answer");
        }
        return json;
}

/* guest-sync-delimited: 0xff resets qemu-ga's parser; its answer starts with 0xff, so everything
 * before it (stale answers, the parser's complaint about 0xff) is dropped. */
static void
qga_sync (Qga *q)
{
        guint32 id = g_random_int () & 0x7fffffff;
        g_autofree char *req = g_strdup_printf (
                "\xff{\"execute\":\"guest-sync-delimited\",\"arguments\":{\"id\":%u}}\n", id);
        g_autofree char *want = g_strdup_printf ("{\"return\": %u}", id);

        qga_send (q, req, strlen (req));
        for (;;) {
                g_autofree char *line = qga_read_line (q, 60);
                char *ff = strchr (line, '\xff');

                if (ff && strcmp (ff + 1, want) == 0)
                        return;
        }
}

static Qga
qga_connect (BenchVm *vm)
{
        Qga q = { bench_vm_unix_connect (vm->qga_sock, 30), g_string_new (NULL), vm };

        if (q.fd < 0)
                qga_fail (&q, "cannot connect to its socket");
        /* qemu-ga starts next to corral-agent; until it opens the port, nothing answers. */
        qga_sync (&q);
        return q;
}

/* guest-exec with capture-output, then guest-exec-status until exited (every poll_us).
 * Returns the seconds it took; *out_bytes: decoded size of out-data. */
static double
qga_exec (Qga *q, const char *args_json, guint poll_us, gsize *out_bytes, int *polls)
{
        g_autofree char *req = g_strdup_printf (
                "{\"execute\":\"guest-exec\",\"arguments\":{%s,\"capture-output\":true}}\n",
                args_json);
        double t0 = bench_now ();
        g_autoptr (cJSON) started = qga_call (q, req);
        cJSON *pid = cJSON_GetObjectItem (cJSON_GetObjectItem (started, "return"), "pid");
        g_autofree char *status_req = NULL;

        if (!cJSON_IsNumber (pid))
                qga_fail (q, "guest-exec returned no pid");
        status_req = g_strdup_printf (
                "{\"execute\":\"guest-exec-status\",\"arguments\":{\"pid\":%d}}\n", pid->valueint);
        for (int n = 1;; n++) {
                g_autoptr (cJSON) st = qga_call (q, status_req);
                cJSON *ret = cJSON_GetObjectItem (st, "return");
                cJSON *out;

                if (!cJSON_IsTrue (cJSON_GetObjectItem (ret, "exited"))) {
                        if (poll_us)
                                g_usleep (poll_us);
                        continue;
                }
                if (cJSON_GetNumberValue (cJSON_GetObjectItem (ret, "exitcode")) != 0)
                        qga_fail (q, "guest-exec: non-zero exit");
                out = cJSON_GetObjectItem (ret, "out-data");
                if (out_bytes) {
                        *out_bytes = 0;
                        if (cJSON_IsString (out))
                                g_free (g_base64_decode (out->valuestring, out_bytes));
                }
                if (polls)
                        *polls = n;
                return bench_now () - t0;
        }
}

/* --- the rows ------------------------------------------------------------------------------ */

/* Row 1. Returns the line to print last. */
static char *
bench_boot (const char *img)
{
        g_autofree char *kernel = g_build_filename (img, "vmlinuz", NULL);
        g_autofree char *initrd = g_build_filename (img, "initramfs.img", NULL);
        g_autofree char *tmp = g_dir_make_tmp ("corral-bench-initrd-XXXXXX", NULL);
        g_autofree char *marker_initrd = bench_vm_marker_initrd (initrd, tmp, MARKER);
        g_autoptr (GArray) bare = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) full = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) agent_up = g_array_new (FALSE, FALSE, sizeof (double));
        const char *const true_argv[] = { "/bin/true", NULL };
        CorralExecSpec *spec = corral_exec_spec_new_argv (true_argv);
        int boots = env_int ("BENCH_VM_BOOTS", 3);
        double a, b;

        for (int i = 0; i < boots; i++) {
                BenchVm vm;
                CorralAgentClient *client;
                double t, t_marker = 0;

                /* (a) the same kernel and initramfs (plus a 1-file archive), rdinit= a script
                 * that only echoes the marker: kernel + unpacking + first exec. */
                bench_vm_start (&vm, kernel, marker_initrd, APPEND " rdinit=/bench-init", FALSE,
                                FALSE);
                t = bench_vm_wait_console (&vm, MARKER, 120) - vm.t_start;
                bench_vm_stop (&vm);
                g_array_append_val (bare, t);

                /* (b) the minimal image with the agent port, to the first `exec true`. */
                bench_vm_start (&vm, kernel, initrd, APPEND, TRUE, FALSE);
                vm.watch = AGENT_MARKER;
                client = bench_vm_connect_agent (&vm);
                corral_run_result_free (bench_vm_run (client, &vm, spec, 4096));
                t = bench_now () - vm.t_start;
                if (vm.watch_time)
                        t_marker = vm.watch_time - vm.t_start;
                corral_agent_client_close (client);
                g_object_unref (client);
                bench_vm_stop (&vm);
                g_array_append_val (full, t);
                g_array_append_val (agent_up, t_marker);
                g_print ("boot %d/%d: bare kernel to init %.2f s; minimal image: agent-started "
                         "marker %.2f s, first exec %.2f s\n",
                         i + 1, boots, g_array_index (bare, double, i), t_marker, t);
        }
        corral_exec_spec_unref (spec);
        g_unlink (marker_initrd);
        g_rmdir (tmp);
        a = bench_median (bare);
        b = bench_median (full);
        g_print ("boot medians over %d: bare kernel to init %.2f s, agent-started marker %.2f s, "
                 "first exec %.2f s\n",
                 boots, a, bench_median (agent_up), b);
        return g_strdup_printf ("vm boot to first exec: %.2f s vs %.2f s bare boot to init, "
                                "ratio %.2f (goal <= 1.3)",
                                b, a, b / a);
}

int
main (void)
{
        g_autofree char *img = bench_vm_minimal_image (FALSE);
        g_autofree char *img_qga = bench_vm_minimal_image (TRUE);
        g_autofree char *boot_line = NULL;
        g_autofree char *kernel = g_build_filename (img_qga, "vmlinuz", NULL);
        g_autofree char *initrd = g_build_filename (img_qga, "initramfs.img", NULL);
        const char *const true_argv[] = { "/bin/true", NULL };
        int rounds = env_int ("BENCH_VM_ROUNDS", 200);
        g_autoptr (GArray) corral = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) qga = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) unconfined = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) pings = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) spawns = g_array_new (FALSE, FALSE, sizeof (double));
        g_autofree char *loop = NULL;
        CorralAgentClient *client;
        CorralExecSpec *spec, *loop_spec, *free_spec;
        double c, g, p, u, spawn, limit, t_stream, t_cap, t_pipe;
        guint64 streamed = 0;
        g_autoptr (GError) error = NULL;
        gsize captured = 0;
        int polls_total = 0;
        BenchVm vm;
        Qga q;

        g_print ("images: %s (boot), %s (with qemu-ga)\n", img, img_qga);
        boot_line = bench_boot (img);

        /* Rows 2 and 3: one VM with both agents. */
        bench_vm_start (&vm, kernel, initrd, APPEND, TRUE, TRUE);
        client = bench_vm_connect_agent (&vm);
        q = qga_connect (&vm);
        spec = corral_exec_spec_new_argv (true_argv);
        free_spec = corral_exec_spec_new_argv (true_argv);
        corral_exec_spec_set_unconfined (free_spec, TRUE);
        for (int i = 0; i < 5; i++) { /* warm up both (page cache, first-run costs) */
                corral_run_result_free (bench_vm_run (client, &vm, spec, 4096));
                corral_run_result_free (bench_vm_run (client, &vm, free_spec, 4096));
                qga_exec (&q, "\"path\":\"/bin/true\"", 0, NULL, NULL);
        }
        /* In blocks, each of them an interleaved run of both agents followed by the in-guest
         * spawn loop (fork + exec + wait of true from a shell), so that all three see the same
         * guest and host load: the machine's speed drifts over a minute by more than the
         * difference being measured. */
        loop = g_strdup_printf ("read a _ </proc/uptime; i=0; while [ $i -lt %d ]; do /bin/true; "
                                "i=$((i+1)); done; read b _ </proc/uptime; echo $a $b",
                                rounds / SPAWN_BLOCKS);
        loop_spec = corral_exec_spec_new_shell (loop);
        for (int block = 0; block < SPAWN_BLOCKS; block++) {
                g_autoptr (CorralRunResult) r = NULL;
                g_autofree char *text = NULL;
                double ua, ub;

                for (int i = 0; i < rounds / SPAWN_BLOCKS; i++) {
                        double t0 = bench_now (), tc, tg, tu;
                        int polls = 0;

                        corral_run_result_free (bench_vm_run (client, &vm, spec, 4096));
                        tc = bench_now () - t0;
                        t0 = bench_now ();
                        corral_run_result_free (bench_vm_run (client, &vm, free_spec, 4096));
                        tu = bench_now () - t0;
                        g_array_append_val (unconfined, tu);
                        tg = qga_exec (&q, "\"path\":\"/bin/true\"", 0, NULL, &polls);
                        polls_total += polls;
                        g_array_append_val (corral, tc);
                        g_array_append_val (qga, tg);
                }
                r = bench_vm_run (client, &vm, loop_spec, 4096);
                text = g_strndup (g_bytes_get_data (r->stdout_data, NULL),
                                  g_bytes_get_size (r->stdout_data));
                if (sscanf (text, "%lf %lf", &ua, &ub) != 2) {
                        bench_vm_stop (&vm);
                        g_error ("unexpected output of the spawn loop: %s", text);
                }
                g_array_append_val (spawns, (double){ (ub - ua) / (rounds / SPAWN_BLOCKS) });
        }
        corral_exec_spec_unref (spec);
        corral_exec_spec_unref (free_spec);
        corral_exec_spec_unref (loop_spec);
        for (int i = 0; i < 50; i++) {
                double t = ping (client, &vm);
                g_array_append_val (pings, t);
        }
        spawn = bench_median (spawns);

        c = bench_median (corral) * 1000;
        g = bench_median (qga) * 1000;
        u = bench_median (unconfined) * 1000;
        p = bench_median (pings) * 1000;
        limit = spawn * 1000 + p;
        g_print ("in-guest spawn of /bin/true (sh loop, /proc/uptime, median of %d blocks): %.2f "
                 "ms; exec.list ping: "
                 "%.2f ms\n",
                 SPAWN_BLOCKS, spawn * 1000, p);
        g_print ("qemu-ga guest-exec + guest-exec-status polls (%.1f per exec, no sleep): "
                 "median %.2f ms over %d\n",
                 (double) polls_total / rounds, g, rounds);
        g_print ("vm exec true vs limit: %.2f ms vs %.2f ms (spawn %.2f + ping %.2f), ratio %.2f "
                 "(goal <= 1.2)\n",
                 c, limit, spawn * 1000, p, c / limit);
        g_print ("vm exec true vs qemu-ga: %.2f ms vs %.2f ms, ratio %.2f (goal <= 1.0)\n", c, g,
                 c / g);
        g_print ("vm exec true under seccomp + Landlock vs unconfined: %.2f ms vs %.2f ms, ratio "
                 "%.2f (goal <= 1.05)\n",
                 c, u, c / u);

        /* Row 3. */
        t_stream = bench_stream_zero (client, STREAM_BYTES, &streamed, &error);
        if (t_stream < 0) {
                bench_vm_stop (&vm);
                g_error ("streaming failed: %s", error->message);
        }
        if (streamed != STREAM_BYTES) {
                bench_vm_stop (&vm);
                g_error ("streamed %" G_GUINT64_FORMAT " bytes, expected %u", streamed,
                         STREAM_BYTES);
        }
        /* In-guest pipe throughput of the same command, for scale. */
        {
                g_autofree char *cmd = g_strdup_printf (
                        "read a _ </proc/uptime; head -c %u /dev/zero | cat >/dev/null; "
                        "read b _ </proc/uptime; echo $a $b",
                        STREAM_BYTES);
                CorralExecSpec *pspec = corral_exec_spec_new_shell (cmd);
                g_autoptr (CorralRunResult) r = bench_vm_run (client, &vm, pspec, 4096);
                g_autofree char *text = g_strndup (g_bytes_get_data (r->stdout_data, NULL),
                                                   g_bytes_get_size (r->stdout_data));
                double ua, ub;

                corral_exec_spec_unref (pspec);
                if (sscanf (text, "%lf %lf", &ua, &ub) != 2 || ub <= ua) {
                        bench_vm_stop (&vm);
                        g_error ("unexpected output of the pipe test: %s", text);
                }
                t_pipe = ub - ua;
        }
        /* qemu-ga blocks this thread for seconds: close Corral's client first (heartbeats). */
        corral_agent_client_close (client);
        g_object_unref (client);
        t_cap = qga_exec (&q,
                          "\"path\":\"/bin/sh\",\"arg\":[\"-c\",\"head -c 16777216 /dev/zero\"]",
                          10000, &captured, NULL);
        close (q.fd);
        g_string_free (q.buf, TRUE);
        bench_vm_stop (&vm);
        if (captured != QGA_CAPTURE_BYTES)
                g_print ("note: qemu-ga returned %" G_GSIZE_FORMAT " of %u bytes (its capture "
                         "limit is 16 MiB)\n",
                         captured, QGA_CAPTURE_BYTES);
        g_print ("in-guest pipe head -c 64M /dev/zero | cat >/dev/null: %.1f MiB/s (%.2f s); "
                 "Corral reaches %.0f%% of it\n",
                 STREAM_BYTES / t_pipe / 1048576, t_pipe, 100 * t_pipe / t_stream);
        g_print ("vm stream 64 MiB stdout: %.1f MiB/s (%.2f s) vs qemu-ga capture of 16 MiB "
                 "(base64 JSON, polled every 10 ms) %.1f MiB/s (%.2f s), ratio %.1f (goal: "
                 "streams, > 1)\n",
                 STREAM_BYTES / t_stream / 1048576, t_stream, captured / t_cap / 1048576, t_cap,
                 (STREAM_BYTES / t_stream) / (captured / t_cap));
        g_print ("%s\n", boot_line);
        return 0;
}
