/* test-egress-daemon.c — corral-egressd as a process: policy file reloads apply at once, a
 * broken policy file fails closed, the listener is loopback-only, the audit log is written.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-test.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>

typedef struct {
        char *dir;
        char *policy;
        char *audit;
        GSubprocess *proc;
        guint16 port;
} Daemon;

static char *
daemon_path (void)
{
        return g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "keychain-bridge", "corral-egressd",
                                 NULL);
}

static void
write_policy (Daemon *d, const char *json)
{
        g_autoptr (GError) error = NULL;

        g_file_set_contents (d->policy, json, -1, &error);
        g_assert_no_error (error);
}

static void
daemon_start (Daemon *d, const char *json)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *exe = daemon_path ();
        g_autofree char *line = NULL;
        g_autoptr (GDataInputStream) in = NULL;

        d->dir = g_dir_make_tmp ("corral-egressd-XXXXXX", &error);
        g_assert_no_error (error);
        d->policy = g_build_filename (d->dir, "policy.json", NULL);
        d->audit = g_build_filename (d->dir, "audit.jsonl", NULL);
        write_policy (d, json);
        d->proc = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error, exe, "--policy",
                                    d->policy, "--tcp", "127.0.0.1:0", "--audit", d->audit, NULL);
        g_assert_no_error (error);
        in = g_data_input_stream_new (g_subprocess_get_stdout_pipe (d->proc));
        line = g_data_input_stream_read_line (in, NULL, NULL, &error);
        g_assert_no_error (error);
        g_assert_nonnull (line);
        g_assert_true (g_str_has_prefix (line, "listening on port "));
        d->port = (guint16) g_ascii_strtoull (line + 18, NULL, 10);
        g_assert_cmpuint (d->port, >, 0);
}

static void
daemon_stop (Daemon *d)
{
        g_autoptr (GError) error = NULL;

        g_subprocess_send_signal (d->proc, SIGTERM);
        g_subprocess_wait_check (d->proc, NULL, &error);
        g_assert_no_error (error);
        g_clear_object (&d->proc);
        g_unlink (d->policy);
        g_unlink (d->audit);
        g_rmdir (d->dir);
        g_free (d->policy);
        g_free (d->audit);
        g_free (d->dir);
}

static guint
status_of (Daemon *d, guint16 upstream)
{
        g_autofree char *text =
                g_strdup_printf ("GET http://127.0.0.1:%u/ HTTP/1.0\r\n\r\n", upstream);
        g_autoptr (GString) r = egress_test_request (d->port, text, -1);

        return egress_test_status (r->str);
}

/* The reload is asynchronous (file monitor): poll until the wanted answer, 20 s at most. */
static void
wait_status (Daemon *d, guint16 upstream, guint want)
{
        guint got = 0;

        for (int i = 0; i < 400 && (got = status_of (d, upstream)) != want; i++)
                g_usleep (50 * 1000);
        g_assert_cmpuint (got, ==, want);
}

static void
test_reload (void)
{
        g_autoptr (EgressTestServer) srv = egress_test_server_new (NULL, FALSE);
        guint16 p = egress_test_server_get_port (srv);
        g_autofree char *allow = g_strdup_printf ("{\"allow\":[\"127.0.0.1:%u\"]}", p);
        g_autofree char *deny = g_strdup_printf ("{\"deny\":[\"127.0.0.1:%u\"]}", p);
        g_autofree char *audit = NULL;
        Daemon d = { 0 };

        daemon_start (&d, allow);
        g_assert_cmpuint (status_of (&d, p), ==, 204);
        write_policy (&d, deny);
        wait_status (&d, p, 403);
        /* a broken file: everything refused until it is fixed */
        write_policy (&d, allow);
        wait_status (&d, p, 204);
        write_policy (&d, "{\"allow\":[\"127.0.0.1:");
        wait_status (&d, p, 403);
        write_policy (&d, allow);
        wait_status (&d, p, 204);
        g_assert_true (g_file_get_contents (d.audit, &audit, NULL, NULL));
        g_assert_nonnull (strstr (audit, "\"decision\":\"denied\",\"rule\":\"preset:none\""));
        g_assert_nonnull (strstr (audit, "\"rule\":\"deny:127.0.0.1:"));
        daemon_stop (&d);
}

static void
test_loopback_only (void)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *exe = daemon_path ();
        g_autofree char *dir = g_dir_make_tmp ("corral-egressd-XXXXXX", NULL);
        g_autofree char *policy = g_build_filename (dir, "p.json", NULL);
        g_autoptr (GSubprocess) proc = NULL;

        g_assert_true (g_file_set_contents (policy, "{}", -1, NULL));
        proc = g_subprocess_new (G_SUBPROCESS_FLAGS_STDERR_SILENCE |
                                         G_SUBPROCESS_FLAGS_STDOUT_SILENCE,
                                 &error, exe, "--policy", policy, "--tcp", "0.0.0.0:0", NULL);
        g_assert_no_error (error);
        g_assert_true (g_subprocess_wait (proc, NULL, NULL));
        g_assert_cmpint (g_subprocess_get_exit_status (proc), ==, 1);
        g_unlink (policy);
        g_rmdir (dir);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/egress-daemon/policy-reload", test_reload);
        g_test_add_func ("/egress-daemon/loopback-only", test_loopback_only);
        return g_test_run ();
}
