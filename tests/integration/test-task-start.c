/* test-task-start.c — the desktop app and corralctl start a task one way (app/task): every start
 * that can be known to fail before a build or a boot fails alike through the app's task
 * service (CorralVmLauncher) and through `corralctl vm create`, with the same words.
 *
 * Both sides run as child processes with the same environment: corralctl, and this program in
 * its --launcher mode, which starts a task through the task service as the window does. As
 * root, the folders the person cannot open are tried as nobody (setpriv).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <locale.h>
#include <string.h>
#include <unistd.h>

#include "corral-vm-launcher.h"

/* No libvirt: a start that gets past its checks fails on this host selection at once. */
#define NO_LIBVIRT "CORRAL_LIBVIRT_URI=corral-test-none:///nowhere"

static char *self_path;

/* --launcher FOLDER MODE: the window's start, through the task service. Prints the title and
 * the message of the error on two lines; exit 0 when the start failed, 1 when it did not. */
static void
on_started (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GAsyncResult **slot = user_data;

        *slot = g_object_ref (res);
}

static int
launcher_main (const char *folder, const char *mode)
{
        g_autoptr (CorralVmLauncher) launcher = corral_vm_launcher_new ();
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralLaunchResult) result = NULL;
        g_autofree char *title = NULL, *hint = NULL;
        CorralTaskConfig config = { .folder = (char *) folder,
                                    .image = (char *) "minimal",
                                    .memory_mib = 512,
                                    .vcpus = 2,
                                    .network_preset = (char *) "none" };

        if (!fs_mode_parse (mode, &config.mode))
                return 2;
        corral_launcher_start_async (CORRAL_LAUNCHER (launcher), &config, NULL, NULL, NULL,
                                     on_started, &res);
        while (!res)
                g_main_context_iteration (NULL, TRUE);
        result = corral_launcher_start_finish (CORRAL_LAUNCHER (launcher), res, &error);
        if (!error)
                return 1;
        corral_launch_error_explain (error, &title, &hint);
        g_print ("%s\n%s\n", title, error->message);
        return 0;
}

typedef struct {
        int status;
        char *out;
        char *err;
} Run;

static void
run_clear (Run *r)
{
        g_free (r->out);
        g_free (r->err);
}

/* argv (NULL-terminated), as nobody when as_nobody, with env (KEY=VALUE, NULL-terminated)
 * added. */
static Run
run (gboolean as_nobody, const char *const *env, const char *const *argv)
{
        g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (
                G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
        g_autoptr (GPtrArray) args = g_ptr_array_new ();
        g_autoptr (GSubprocess) proc = NULL;
        g_autoptr (GError) error = NULL;
        Run r = { 0 };

        if (as_nobody) {
                g_ptr_array_add (args, (char *) "setpriv");
                g_ptr_array_add (args, (char *) "--reuid=65534");
                g_ptr_array_add (args, (char *) "--regid=65534");
                g_ptr_array_add (args, (char *) "--clear-groups");
                g_ptr_array_add (args, (char *) "--");
        }
        for (const char *const *a = argv; *a; a++)
                g_ptr_array_add (args, (char *) *a);
        g_ptr_array_add (args, NULL);
        for (const char *const *e = env; e && *e; e++) {
                g_auto (GStrv) kv = g_strsplit (*e, "=", 2);

                g_subprocess_launcher_setenv (launcher, kv[0], kv[1], TRUE);
        }
        proc = g_subprocess_launcher_spawnv (launcher, (const char *const *) args->pdata, &error);
        g_assert_no_error (error);
        g_assert_true (g_subprocess_communicate_utf8 (proc, NULL, NULL, &r.out, &r.err, &error));
        g_assert_no_error (error);
        g_assert_true (g_subprocess_get_if_exited (proc));
        r.status = g_subprocess_get_exit_status (proc);
        return r;
}

/* Starts FOLDER in MODE both ways and checks that they fail alike, before libvirt, with the
 * app showing title. */
static void
assert_same_start (gboolean as_nobody,
                   const char *const *env,
                   const char *folder,
                   const char *mode,
                   const char *title,
                   const char *words)
{
        g_autofree char *ctl =
                g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "app", "corralctl", NULL);
        g_autofree char *spec = g_strdup_printf ("%s:%s", folder, mode);
        /* The image the launcher's person chose (launcher_main): the one asked for, both ways. */
        const char *ctl_argv[] = { ctl,  "vm",      "create",  "same-start", "--share",
                                   spec, "--image", "minimal", NULL };
        const char *app_argv[] = { self_path, "--launcher", folder, mode, NULL };
        Run cli = run (as_nobody, env, ctl_argv);
        Run app = run (as_nobody, env, app_argv);
        g_auto (GStrv) lines = NULL;
        g_autofree char *expected = NULL;

        g_test_message ("app: %s; corralctl: %s", app.out, cli.err);
        g_assert_cmpint (app.status, ==, 0);
        lines = g_strsplit (app.out, "\n", 3);
        g_assert_cmpuint (g_strv_length (lines), ==, 3);
        g_assert_cmpstr (lines[0], ==, title);
        g_assert_nonnull (strstr (lines[1], words));
        /* Never the error of a later step: neither got to libvirt. */
        g_assert_null (strstr (lines[1], "libvirt"));
        g_assert_null (strstr (lines[1], "nowhere"));
        /* corralctl says the same sentence. */
        expected = g_strdup_printf ("corralctl: %s\n", lines[1]);
        g_assert_cmpint (cli.status, ==, 125);
        g_assert_cmpstr (cli.err, ==, expected);
        g_assert_cmpstr (cli.out, ==, "");
        run_clear (&cli);
        run_clear (&app);
}

typedef struct {
        char *dir;
        char *state_env;
        char *policy_env;
        const char *env[5];
} Fixture;

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
        f->dir = g_dir_make_tmp ("task-start-XXXXXX", NULL);
        g_assert_nonnull (f->dir);
        /* nobody reaches the folders made here (each test sets their own modes). */
        g_assert_cmpint (g_chmod (f->dir, 0755), ==, 0);
        f->state_env = g_strdup_printf ("XDG_STATE_HOME=%s/state", f->dir);
        f->policy_env =
                g_strdup_printf ("CORRAL_MANAGED_POLICY=%s", g_getenv ("CORRAL_MANAGED_POLICY"));
        f->env[0] = f->state_env;
        f->env[1] = f->policy_env;
        f->env[2] = NO_LIBVIRT;
        /* The words as the person reads them, quotes and all, on both sides. */
        f->env[3] = "LC_ALL=C.UTF-8";
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
        g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", f->dir);

        g_assert_true (g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL));
        g_free (f->dir);
        g_free (f->state_env);
        g_free (f->policy_env);
}

static char *
make_folder (Fixture *f, const char *name, int mode)
{
        char *path = g_build_filename (f->dir, name, NULL);

        g_assert_cmpint (g_mkdir (path, 0700), ==, 0);
        g_assert_cmpint (g_chmod (path, mode), ==, 0);
        return path;
}

static void
test_missing_folder (Fixture *f, gconstpointer data)
{
        g_autofree char *missing = g_build_filename (f->dir, "gone", NULL);

        assert_same_start (FALSE, f->env, missing, "rw", "This Folder Cannot Be Shared",
                           "does not exist");
}

static void
test_file_not_folder (Fixture *f, gconstpointer data)
{
        g_autofree char *file = g_build_filename (f->dir, "notes.txt", NULL);

        g_assert_true (g_file_set_contents (file, "x", 1, NULL));
        assert_same_start (FALSE, f->env, file, "ro", "This Folder Cannot Be Shared",
                           "is a file, not a folder");
}

static void
test_damaged_policy (Fixture *f, gconstpointer data)
{
        g_autofree char *folder = make_folder (f, "work", 0755);
        g_autofree char *policy = g_build_filename (f->dir, "managed.json", NULL);

        g_assert_true (g_file_set_contents (policy, "{\"sharedFolders\": 7}", -1, NULL));
        g_free (f->policy_env);
        f->policy_env = g_strdup_printf ("CORRAL_MANAGED_POLICY=%s", policy);
        f->env[1] = f->policy_env;
        assert_same_start (FALSE, f->env, folder, "rw", "Your Organisation’s Policy Needs Fixing",
                           policy);
}

static void
use_policy (Fixture *f, const char *text)
{
        g_autofree char *policy = g_build_filename (f->dir, "managed.json", NULL);

        g_assert_true (g_file_set_contents (policy, text, -1, NULL));
        g_free (f->policy_env);
        f->policy_env = g_strdup_printf ("CORRAL_MANAGED_POLICY=%s", policy);
        f->env[1] = f->policy_env;
}

/* The organisation's limits stop a start before anything boots, in the app and in corralctl
 * alike (the file server refuses the same share later too, SECURITY.md F23). */
static void
test_policy_blocks (Fixture *f, gconstpointer data)
{
        g_autofree char *folder = make_folder (f, "work", 0755);
        g_autofree char *denied = NULL;

        use_policy (f, "{\"sharedFolders\": {\"maxMode\": \"ro\"}}");
        assert_same_start (FALSE, f->env, folder, "rw", "Your Organisation Does Not Allow This",
                           "“Can read” at most (set by your organisation)");

        denied = g_strdup_printf ("{\"sharedFolders\": {\"deniedFolders\": [\"%s\"]}}", f->dir);
        use_policy (f, denied);
        assert_same_start (FALSE, f->env, folder, "ro", "Your Organisation Does Not Allow This",
                           "may not be shared (set by your organisation)");

        use_policy (f, "{\"minimumVersion\": \"999.0.0\"}");
        assert_same_start (FALSE, f->env, folder, "ro", "Your Organisation Does Not Allow This",
                           "the lowest version allowed to run");

        /* The workspace both ask for: the minimal image, 512 MiB, 2 processors. */
        use_policy (f, "{\"vm\": {\"maxMemoryMib\": 256}}");
        assert_same_start (FALSE, f->env, folder, "ro", "Your Organisation Does Not Allow This",
                           "at most 256 MiB of memory (set by your organisation)");
        use_policy (f, "{\"vm\": {\"maxVcpus\": 1}}");
        assert_same_start (FALSE, f->env, folder, "ro", "Your Organisation Does Not Allow This",
                           "at most 1 processor (set by your organisation)");
        use_policy (f, "{\"images\": {\"required\": \"standard\"}}");
        assert_same_start (FALSE, f->env, folder, "ro", "Your Organisation Does Not Allow This",
                           "must use the workspace image “standard”");
        /* Without --image, corralctl takes the required image, as the window does: no refusal,
         * the start goes on to libvirt. */
        {
                g_autofree char *ctl =
                        g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "app", "corralctl", NULL);
                g_autofree char *spec = g_strdup_printf ("%s:ro", folder);
                const char *ctl_argv[] = {
                        ctl, "vm", "create", "same-start", "--share", spec, NULL
                };
                Run cli = run (FALSE, f->env, ctl_argv);

                g_assert_null (strstr (cli.err, "must use the workspace image"));
                g_assert_nonnull (strstr (cli.err, "nowhere"));
                run_clear (&cli);
        }
        use_policy (f, "{\"images\": {\"allowed\": [\"standard\"]}}");
        assert_same_start (FALSE, f->env, folder, "ro", "Your Organisation Does Not Allow This",
                           "minimal is not allowed (set by your organisation)");
        /* Only defaults (not locked): the person's choice stands; the start reaches libvirt. */
        use_policy (f, "{\"vm\": {\"maxMemoryMib\": {\"value\": 256, \"locked\": false}}}");
        {
                g_autofree char *ctl =
                        g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "app", "corralctl", NULL);
                g_autofree char *spec = g_strdup_printf ("%s:ro", folder);
                const char *ctl_argv[] = {
                        ctl, "vm", "create", "same-start", "--share", spec, NULL
                };
                Run cli = run (FALSE, f->env, ctl_argv);

                g_assert_nonnull (strstr (cli.err, "nowhere"));
                run_clear (&cli);
        }
}

/* The person's rights, not root's: these need an account that lacks them. */
static gboolean
need_nobody (void)
{
        g_autofree char *setpriv = g_find_program_in_path ("setpriv");

        if (geteuid () == 0 && setpriv)
                return TRUE;
        g_test_skip ("needs root and setpriv, to try as an account without the rights");
        return FALSE;
}

static void
test_unreadable_folder (Fixture *f, gconstpointer data)
{
        g_autofree char *folder = NULL;

        if (!need_nobody ())
                return;
        folder = make_folder (f, "private", 0700);
        assert_same_start (TRUE, f->env, folder, "ro", "This Folder Cannot Be Shared",
                           "Permission denied");
}

static void
test_read_only_folder_to_edit (Fixture *f, gconstpointer data)
{
        g_autofree char *folder = NULL;

        if (!need_nobody ())
                return;
        folder = make_folder (f, "archive", 0555);
        assert_same_start (TRUE, f->env, folder, "rw-nodelete", "This Folder Cannot Be Shared",
                           "cannot be changed from your account");
}

/* The checks pass: both go on to libvirt, which is not there, and both say so alike. */
static void
test_good_folder_reaches_libvirt (Fixture *f, gconstpointer data)
{
        g_autofree char *folder = make_folder (f, "work", 0755);
        g_autofree char *ctl =
                g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "app", "corralctl", NULL);
        g_autofree char *spec = g_strdup_printf ("%s:rw", folder);
        const char *ctl_argv[] = { ctl, "vm", "create", "same-start", "--share", spec, NULL };
        const char *app_argv[] = { self_path, "--launcher", folder, "rw", NULL };
        Run cli = run (FALSE, f->env, ctl_argv);
        Run app = run (FALSE, f->env, app_argv);
        g_auto (GStrv) lines = g_strsplit (app.out, "\n", 3);
        g_autofree char *expected = NULL;

        g_assert_cmpint (app.status, ==, 0);
        g_assert_cmpstr (lines[0], !=, "This Folder Cannot Be Shared");
        g_assert_nonnull (strstr (lines[1], "nowhere"));
        expected = g_strdup_printf ("corralctl: %s\n", lines[1]);
        g_assert_cmpint (cli.status, ==, 125);
        g_assert_cmpstr (cli.err, ==, expected);
        run_clear (&cli);
        run_clear (&app);
}

int
main (int argc, char **argv)
{
        if (argc == 4 && g_str_equal (argv[1], "--launcher")) {
                corral_vm_launcher_init_process ();
                setlocale (LC_ALL, "");
                return launcher_main (argv[2], argv[3]);
        }
        g_test_init (&argc, &argv, NULL);
        self_path = g_canonicalize_filename (argv[0], NULL);
#define ADD(path, fn)                                                                              \
        g_test_add ("/task-start/" path, Fixture, NULL, fixture_set_up, fn, fixture_tear_down)
        ADD ("missing-folder", test_missing_folder);
        ADD ("file-not-folder", test_file_not_folder);
        ADD ("damaged-policy", test_damaged_policy);
        ADD ("policy-blocks", test_policy_blocks);
        ADD ("unreadable-folder", test_unreadable_folder);
        ADD ("read-only-folder-to-edit", test_read_only_folder_to_edit);
        ADD ("good-folder-reaches-libvirt", test_good_folder_reaches_libvirt);
#undef ADD
        return g_test_run ();
}
