/* bench-ui-startup.c — `corral` start to first painted window, and its memory (RSS) after 2 s
 * idle, next to a minimal GTK 4 + libadwaita window (bench-ui-minimal) started the same way in
 * the same run: same display (Xvfb when there is none), same environment, same renderer.
 * Prints both figures and the ratios on the last line (goal <= 2x each).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sys/prctl.h>
#include <string.h>
#include <unistd.h>

#define RUNS 5

static GSubprocess *xvfb;

/* Xvfb goes when this process goes, also when a failed assertion aborts it. */
static void
die_with_parent (gpointer data)
{
        prctl (PR_SET_PDEATHSIG, SIGTERM);
}

static void
ensure_display (void)
{
        int fds[2];
        char buf[16] = { 0 };
        g_autoptr (GSubprocessLauncher) l = NULL;
        g_autoptr (GError) error = NULL;

        if (g_getenv ("DISPLAY") && *g_getenv ("DISPLAY"))
                return;
        if (!g_find_program_in_path ("Xvfb")) {
                g_print ("no display and no Xvfb: skipped\n");
                exit (77);
        }
        g_assert_cmpint (pipe2 (fds, O_CLOEXEC), ==, 0);
        l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE |
                                       G_SUBPROCESS_FLAGS_STDERR_SILENCE);
        g_subprocess_launcher_take_fd (l, fds[1], 3);
        g_subprocess_launcher_set_child_setup (l, die_with_parent, NULL, NULL);
        xvfb = g_subprocess_launcher_spawn (l, &error, "Xvfb", "-displayfd", "3", "-screen", "0",
                                            "1280x900x24", "-nolisten", "tcp", NULL);
        g_assert_no_error (error);
        g_clear_object (&l);
        for (gsize got = 0; got < sizeof buf - 1 && !strchr (buf, '\n');) {
                ssize_t n = read (fds[0], buf + got, sizeof buf - 1 - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                got += (gsize) n;
        }
        close (fds[0]);
        g_strstrip (buf);
        {
                g_autofree char *display = g_strdup_printf (":%s", buf);
                g_setenv ("DISPLAY", display, TRUE);
        }
}

static long
rss_kib (const char *pid)
{
        g_autofree char *path = g_strdup_printf ("/proc/%s/status", pid);
        g_autofree char *status = NULL;
        const char *line;

        if (!g_file_get_contents (path, &status, NULL, NULL) || !(line = strstr (status, "VmRSS:")))
                return -1;
        return strtol (line + strlen ("VmRSS:"), NULL, 10);
}

/* One start: seconds to "shown" on stdout, and the RSS in KiB after 2 s idle. */
static void
run_once (const char *exe, double *ret_seconds, long *ret_rss)
{
        g_autoptr (GError) error = NULL;
        gint64 start = g_get_monotonic_time ();
        g_autoptr (GSubprocess) p = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                                              G_SUBPROCESS_FLAGS_STDERR_SILENCE,
                                                      &error, exe, NULL);
        g_autoptr (GDataInputStream) out = NULL;
        g_autofree char *line = NULL;

        g_assert_no_error (error);
        out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (p));
        line = g_data_input_stream_read_line (out, NULL, NULL, &error);
        g_assert_no_error (error);
        if (g_strcmp0 (line, "shown") != 0)
                g_error ("%s did not report its window (got “%s”)", exe, line ? line : "EOF");
        *ret_seconds = (g_get_monotonic_time () - start) / 1e6;
        g_usleep (2 * G_USEC_PER_SEC);
        *ret_rss = rss_kib (g_subprocess_get_identifier (p));
        g_subprocess_send_signal (p, SIGTERM);
        g_subprocess_wait (p, NULL, NULL);
}

static int
cmp_double (gconstpointer a, gconstpointer b)
{
        double x = *(const double *) a, y = *(const double *) b;
        return (x > y) - (x < y);
}

static double
median (double *v, guint n)
{
        qsort (v, n, sizeof *v, (int (*) (const void *, const void *)) cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int
main (int argc, char **argv)
{
        g_autofree char *tmp = g_dir_make_tmp ("corral-bench-ui-XXXXXX", NULL);
        double t_app[RUNS], t_min[RUNS], r_app[RUNS], r_min[RUNS];
        double ta, tm, ra, rm;

        ensure_display ();
        /* Both start as on a fresh account: no settings, no cache, software rendering. */
        g_setenv ("HOME", tmp, TRUE);
        g_setenv ("XDG_CONFIG_HOME", tmp, TRUE);
        g_setenv ("XDG_CACHE_HOME", tmp, TRUE);
        g_setenv ("XDG_STATE_HOME", tmp, TRUE);
        g_setenv ("GSETTINGS_BACKEND", "memory", TRUE);
        g_setenv ("GSETTINGS_SCHEMA_DIR", CORRAL_BUILD_SCHEMA_DIR, TRUE);
        g_setenv ("GSK_RENDERER", "cairo", TRUE);
        g_setenv ("GDK_BACKEND", "x11", TRUE);
        g_setenv ("NO_AT_BRIDGE", "1", TRUE);
        g_setenv ("CORRAL_BENCH_SHOWN", "1", TRUE);
        g_unsetenv ("G_DEBUG");
        /* Alternate the two so that machine noise hits both alike. */
        for (guint i = 0; i < RUNS; i++) {
                long ra_kib, rm_kib;

                run_once (CORRAL_UI_EXE, &t_app[i], &ra_kib);
                run_once (CORRAL_UI_MINIMAL_EXE, &t_min[i], &rm_kib);
                r_app[i] = ra_kib;
                r_min[i] = rm_kib;
        }
        ta = median (t_app, RUNS);
        tm = median (t_min, RUNS);
        ra = median (r_app, RUNS);
        rm = median (r_min, RUNS);
        g_print ("corral: first window %.0f ms, idle RSS %.1f MiB (median of %d)\n", ta * 1e3,
                 ra / 1024, RUNS);
        g_print ("minimal GTK4 + libadwaita window: first window %.0f ms, idle RSS %.1f MiB\n",
                 tm * 1e3, rm / 1024);
        g_print ("ratio: start %.2f, memory %.2f (goal <= 2)\n", ta / tm, ra / rm);
        if (xvfb) {
                g_subprocess_send_signal (xvfb, SIGTERM);
                g_subprocess_wait (xvfb, NULL, NULL);
        }
        g_rmdir (tmp);
        return 0;
}
