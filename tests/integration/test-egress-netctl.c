/* test-egress-netctl.c — `corralctl net preset|allow|deny|ls VM` writes the VM's policy file,
 * which corral-egressd reloads: a change applies to the running session at once.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-policy.h"
#include "egress-test.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>

typedef struct {
        int status;
        char *out;
        char *err;
} Ctl;

static char *state;

static Ctl
net (const char *a, const char *b, const char *c)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *exe =
                g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "app", "corralctl", NULL);
        g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (
                G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
        g_autoptr (GSubprocess) p = NULL;
        Ctl r = { 0 };

        g_subprocess_launcher_setenv (l, "XDG_STATE_HOME", state, TRUE);
        p = g_subprocess_launcher_spawn (l, &error, exe, "net", a, b, c, NULL);
        g_assert_no_error (error);
        g_subprocess_communicate_utf8 (p, NULL, NULL, &r.out, &r.err, &error);
        g_assert_no_error (error);
        r.status = g_subprocess_get_exit_status (p);
        return r;
}

static void
ctl_clear (Ctl *c)
{
        g_free (c->out);
        g_free (c->err);
}

static void
test_commands (void)
{
        g_autofree char *vm_dir = g_build_filename (state, "corral", "vms", "work", NULL);
        g_autofree char *file = g_build_filename (vm_dir, "egress-policy.json", NULL);
        g_autoptr (CorralEgressPolicy) p = NULL;
        g_autofree char *rule = NULL;
        Ctl c;

        c = net ("ls", "work", NULL);
        g_assert_cmpint (c.status, ==, 125); /* no such VM */
        g_assert_nonnull (strstr (c.err, "No VM named"));
        ctl_clear (&c);
        g_assert_cmpint (g_mkdir_with_parents (vm_dir, 0700), ==, 0);
        c = net ("ls", "work", NULL);
        g_assert_cmpint (c.status, ==, 0);
        g_assert_cmpstr (c.out, ==, "preset: allowlist\n");
        ctl_clear (&c);
        c = net ("allow", "work", "*.Example.com");
        g_assert_cmpint (c.status, ==, 0);
        ctl_clear (&c);
        c = net ("deny", "work", "bad.example.com:443");
        g_assert_cmpint (c.status, ==, 0);
        ctl_clear (&c);
        c = net ("preset", "work", "package-managers");
        g_assert_cmpint (c.status, ==, 0);
        g_assert_cmpstr (c.out, ==,
                         "preset: package-managers\nallow *.example.com\n"
                         "deny  bad.example.com:443\n");
        ctl_clear (&c);
        /* refused input leaves the file as it was */
        c = net ("allow", "work", "0x7f.1");
        g_assert_cmpint (c.status, ==, 125);
        ctl_clear (&c);
        c = net ("preset", "work", "everything");
        g_assert_cmpint (c.status, ==, 125);
        ctl_clear (&c);
        c = net ("allow", "../etc", "a.com");
        g_assert_cmpint (c.status, ==, 125);
        ctl_clear (&c);
        p = corral_egress_policy_load_file (file, NULL);
        g_assert_nonnull (p);
        g_assert_false (
                corral_egress_policy_check (p, "bad.example.com", CORRAL_HOST_NAME, 443, &rule));
        g_assert_cmpstr (rule, ==, "deny:bad.example.com:443");
}

/* The daemon follows the file corralctl writes. */
static void
test_applies_to_running_proxy (void)
{
        g_autoptr (EgressTestServer) srv = egress_test_server_new (NULL, FALSE);
        guint16 p = egress_test_server_get_port (srv);
        g_autofree char *vm_dir = g_build_filename (state, "corral", "vms", "live", NULL);
        g_autofree char *file = g_build_filename (vm_dir, "egress-policy.json", NULL);
        g_autofree char *exe = g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "keychain-bridge",
                                                 "corral-egressd", NULL);
        g_autofree char *rule = g_strdup_printf ("127.0.0.1:%u", p);
        g_autofree char *request = g_strdup_printf ("GET http://%s/ HTTP/1.0\r\n\r\n", rule);
        g_autoptr (GError) error = NULL;
        g_autoptr (GSubprocess) d = NULL;
        g_autoptr (GDataInputStream) in = NULL;
        g_autofree char *line = NULL;
        guint16 port;
        guint got = 0;
        Ctl c;

        g_assert_cmpint (g_mkdir_with_parents (vm_dir, 0700), ==, 0);
        c = net ("allow", "live", rule);
        g_assert_cmpint (c.status, ==, 0);
        ctl_clear (&c);
        d = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error, exe, "--policy", file,
                              "--tcp", "127.0.0.1:0", NULL);
        g_assert_no_error (error);
        in = g_data_input_stream_new (g_subprocess_get_stdout_pipe (d));
        line = g_data_input_stream_read_line (in, NULL, NULL, &error);
        g_assert_nonnull (line);
        port = (guint16) g_ascii_strtoull (line + strlen ("listening on port "), NULL, 10);
        {
                g_autoptr (GString) r = egress_test_request (port, request, -1);
                g_assert_cmpuint (egress_test_status (r->str), ==, 204);
        }
        c = net ("deny", "live", rule);
        g_assert_cmpint (c.status, ==, 0);
        ctl_clear (&c);
        for (int i = 0; i < 400 && got != 403; i++) {
                g_autoptr (GString) r = egress_test_request (port, request, -1);
                got = egress_test_status (r->str);
                if (got != 403)
                        g_usleep (50 * 1000);
        }
        g_assert_cmpuint (got, ==, 403);
        g_subprocess_send_signal (d, SIGTERM);
        g_assert_true (g_subprocess_wait (d, NULL, NULL));
}

int
main (int argc, char **argv)
{
        g_autofree char *cmd = NULL;
        int rc;

        g_test_init (&argc, &argv, NULL);
        state = g_dir_make_tmp ("corral-netctl-XXXXXX", NULL);
        g_test_add_func ("/egress-netctl/commands", test_commands);
        g_test_add_func ("/egress-netctl/applies-to-running-proxy", test_applies_to_running_proxy);
        rc = g_test_run ();
        cmd = g_strdup_printf ("rm -rf '%s'", state);
        g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL);
        g_free (state);
        return rc;
}
