/* test-corralctl.c — the corralctl command line, with --local agents.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <gio/gio.h>
#include <string.h>

typedef struct {
        int status;
        char *out;
        char *err;
} Ctl;

static void
ctl_clear (Ctl *ctl)
{
        g_free (ctl->out);
        g_free (ctl->err);
}

static char *
corralctl_path (void)
{
        const char *build = g_getenv ("CORRAL_BUILD_DIR");

        g_assert_nonnull (build);
        return g_build_filename (build, "app", "corralctl", NULL);
}

static char *
bytes_to_string (GBytes *bytes)
{
        gsize len;
        const char *data = g_bytes_get_data (bytes, &len);

        return len ? g_strndup (data, len) : g_strdup ("");
}

/* Runs corralctl with args (NULL-terminated) and optional stdin text. */
static Ctl
run_ctl (const char *stdin_text, const char *agent_override, ...)
{
        g_autoptr (GSubprocessLauncher) launcher = NULL;
        g_autoptr (GSubprocess) proc = NULL;
        g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
        g_autoptr (GError) error = NULL;
        g_autoptr (GBytes) out = NULL;
        g_autoptr (GBytes) err = NULL;
        g_autoptr (GBytes) in = NULL;
        Ctl ctl = { 0 };
        const char *arg;
        va_list ap;

        g_ptr_array_add (argv, corralctl_path ());
        va_start (ap, agent_override);
        while ((arg = va_arg (ap, const char *)))
                g_ptr_array_add (argv, g_strdup (arg));
        va_end (ap);
        g_ptr_array_add (argv, NULL);

        launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDIN_PIPE |
                                              G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                              G_SUBPROCESS_FLAGS_STDERR_PIPE);
        if (agent_override)
                g_subprocess_launcher_setenv (launcher, "CORRAL_AGENT_PATH", agent_override, TRUE);
        proc = g_subprocess_launcher_spawnv (launcher, (const char *const *) argv->pdata, &error);
        g_assert_no_error (error);
        in = g_bytes_new (stdin_text ? stdin_text : "", stdin_text ? strlen (stdin_text) : 0);
        g_assert_true (g_subprocess_communicate (proc, in, NULL, &out, &err, &error));
        g_assert_no_error (error);
        g_assert_true (g_subprocess_get_if_exited (proc));
        ctl.status = g_subprocess_get_exit_status (proc);
        ctl.out = bytes_to_string (out);
        ctl.err = bytes_to_string (err);
        return ctl;
}

static void
test_version_help (void)
{
        Ctl v = run_ctl (NULL, NULL, "--version", NULL);
        Ctl h = run_ctl (NULL, NULL, "exec", "--help", NULL);
        Ctl none = run_ctl (NULL, NULL, NULL);

        g_assert_cmpint (v.status, ==, 0);
        g_assert_true (g_str_has_prefix (v.out, "corralctl "));
        g_assert_cmpint (h.status, ==, 0);
        g_assert_nonnull (strstr (h.out, "--local"));
        g_assert_nonnull (strstr (h.out, "no isolation"));
        g_assert_cmpint (none.status, ==, 125);
        ctl_clear (&v);
        ctl_clear (&h);
        ctl_clear (&none);
}

static void
test_exit_status (void)
{
        Ctl ok = run_ctl (NULL, NULL, "exec", "--local", "--", "sh", "-c", "echo out; echo err >&2",
                          NULL);
        Ctl three = run_ctl (NULL, NULL, "exec", "--local", "--", "sh", "-c", "exit 3", NULL);
        Ctl killed = run_ctl (NULL, NULL, "exec", "--local", "--", "sh", "-c", "kill -9 $$", NULL);

        g_assert_cmpint (ok.status, ==, 0);
        g_assert_cmpstr (ok.out, ==, "out\n");
        g_assert_cmpstr (ok.err, ==, "err\n");
        g_assert_cmpint (three.status, ==, 3);
        g_assert_cmpint (killed.status, ==, 128 + 9);
        ctl_clear (&ok);
        ctl_clear (&three);
        ctl_clear (&killed);
}

static void
test_env_cwd_stdin (void)
{
        Ctl env = run_ctl (NULL, NULL, "exec", "--local", "--env", "A=x y", "-e", "B=", "--cwd",
                           "/", "--", "sh", "-c", "echo \"$A|$B\"; pwd", NULL);
        Ctl cat =
                run_ctl ("line one\nline two\n", NULL, "exec", "--local", "-i", "--", "cat", NULL);
        Ctl no_i = run_ctl ("ignored\n", NULL, "exec", "--local", "--", "cat", NULL);

        g_assert_cmpint (env.status, ==, 0);
        g_assert_cmpstr (env.out, ==, "x y|\n/\n");
        g_assert_cmpint (cat.status, ==, 0);
        g_assert_cmpstr (cat.out, ==, "line one\nline two\n");
        g_assert_cmpint (no_i.status, ==, 0);
        g_assert_cmpstr (no_i.out, ==, "");
        ctl_clear (&env);
        ctl_clear (&cat);
        ctl_clear (&no_i);
}

static void
test_timeout (void)
{
        Ctl t = run_ctl (NULL, NULL, "exec", "--local", "--timeout", "0.3", "--", "sleep", "30",
                         NULL);

        g_assert_cmpint (t.status, ==, 124);
        g_assert_nonnull (strstr (t.err, "timed out"));
        ctl_clear (&t);
}

static void
test_errors (void)
{
        Ctl missing =
                run_ctl (NULL, "/nonexistent/corral-agent", "exec", "--local", "--", "true", NULL);
        Ctl no_local = run_ctl (NULL, NULL, "exec", "--", "true", NULL);
        Ctl no_cmd = run_ctl (NULL, NULL, "exec", "--local", NULL);
        Ctl bad_env =
                run_ctl (NULL, NULL, "exec", "--local", "--env", "novalue", "--", "true", NULL);
        Ctl unknown = run_ctl (NULL, NULL, "frobnicate", NULL);

        g_assert_cmpint (missing.status, ==, 125);
        g_assert_nonnull (strstr (missing.err, "/nonexistent/corral-agent"));
        g_assert_cmpint (no_local.status, ==, 125);
        g_assert_nonnull (strstr (no_local.err, "--local"));
        g_assert_cmpint (no_cmd.status, ==, 125);
        g_assert_cmpint (bad_env.status, ==, 125);
        g_assert_nonnull (strstr (bad_env.err, "KEY=VALUE"));
        g_assert_cmpint (unknown.status, ==, 125);
        ctl_clear (&missing);
        ctl_clear (&no_local);
        ctl_clear (&no_cmd);
        ctl_clear (&bad_env);
        ctl_clear (&unknown);
}

static void
test_info (void)
{
        Ctl info = run_ctl (NULL, NULL, "info", "--local", NULL);

        g_assert_cmpint (info.status, ==, 0);
        g_assert_nonnull (strstr (info.out, "\"kernel\""));
        g_assert_nonnull (strstr (info.out, "no isolation"));
        ctl_clear (&info);
}

/* Not a terminal here, so the PTY gets the default 24x80. */
static void
test_shell_pty (void)
{
        Ctl sh = run_ctl ("", NULL, "shell", "--local", "--", "sh", "-c", "stty size; tty", NULL);

        g_assert_cmpint (sh.status, ==, 0);
        g_assert_nonnull (strstr (sh.out, "24 80"));
        g_assert_nonnull (strstr (sh.out, "/dev/pts/"));
        ctl_clear (&sh);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);

        g_test_add_func ("/corralctl/version-help", test_version_help);
        g_test_add_func ("/corralctl/exit-status", test_exit_status);
        g_test_add_func ("/corralctl/env-cwd-stdin", test_env_cwd_stdin);
        g_test_add_func ("/corralctl/timeout", test_timeout);
        g_test_add_func ("/corralctl/errors", test_errors);
        g_test_add_func ("/corralctl/info", test_info);
        g_test_add_func ("/corralctl/shell-pty", test_shell_pty);

        return g_test_run ();
}
