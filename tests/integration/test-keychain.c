/* test-keychain.c — secrets in a real desktop keychain (SECURITY-TESTS item 19): gnome-keyring
 * on a private D-Bus session with its data in a temporary directory, driven through
 * `corralctl secret` and the keychain-bridge library.
 *
 * The test re-executes itself inside `dbus-run-session` with an unlocked gnome-keyring (the
 * recipe of ENVIRONMENT.md), so it never touches the person's own keychain.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-secret-store.h"
#include "egress-test.h"

#include <errno.h>
#include <libsecret/secret.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define CANARY "corral-canary-7f3a9e1d5b"

typedef struct {
        int status;
        char *out;
        char *err;
} Ctl;

static void
ctl_clear (Ctl *c)
{
        g_free (c->out);
        g_free (c->err);
}

static Ctl
ctl (const char *input, const char *bus, const char *const *args)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (
                G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                G_SUBPROCESS_FLAGS_STDERR_PIPE);
        g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
        g_autoptr (GSubprocess) p = NULL;
        Ctl c = { 0 };

        g_ptr_array_add (
                argv, g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "app", "corralctl", NULL));
        g_ptr_array_add (argv, g_strdup ("secret"));
        for (const char *const *a = args; *a; a++)
                g_ptr_array_add (argv, g_strdup (*a));
        g_ptr_array_add (argv, NULL);
        if (bus)
                g_subprocess_launcher_setenv (l, "DBUS_SESSION_BUS_ADDRESS", bus, TRUE);
        p = g_subprocess_launcher_spawnv (l, (const char *const *) argv->pdata, &error);
        g_assert_no_error (error);
        g_subprocess_communicate_utf8 (p, input, NULL, &c.out, &c.err, &error);
        g_assert_no_error (error);
        c.status = g_subprocess_get_exit_status (p);
        return c;
}

/* The value must never be stored in clear anywhere in the test's home. */
static void
assert_no_plaintext (void)
{
        g_autofree char *cmd =
                g_strdup_printf ("grep -rl " CANARY " '%s'", egress_test_keyring_dir ());
        g_autofree char *out = NULL;
        int status = 0;

        g_assert_true (g_spawn_command_line_sync (cmd, &out, NULL, &status, NULL));
        g_assert_cmpstr (out, ==, "");
}

static void
test_set_ls_rm (void)
{
        const char *set[] = { "set",    "GITHUB_TOKEN",       "--host",   "api.github.com",
                              "--host", "uploads.github.com", "--format", "token {}",
                              NULL };
        const char *ls[] = { "ls", NULL };
        const char *rm[] = { "rm", "GITHUB_TOKEN", NULL };
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralSecretInfo) info = NULL;
        Ctl c;
        char *value;

        c = ctl (CANARY "\n", NULL, set);
        g_assert_cmpint (c.status, ==, 0);
        ctl_clear (&c);
        c = ctl ("", NULL, ls);
        g_assert_cmpint (c.status, ==, 0);
        g_assert_nonnull (strstr (c.out, "GITHUB_TOKEN\tapi.github.com,uploads.github.com\t"
                                         "authorization: token {}"));
        g_assert_null (strstr (c.out, CANARY));
        g_assert_null (strstr (c.err, CANARY));
        ctl_clear (&c);
        value = corral_secret_store_lookup_sync ("GITHUB_TOKEN", &info, NULL, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (value, ==, CANARY);
        g_assert_cmpstr (info->hosts[1], ==, "uploads.github.com");
        corral_secret_value_free (value);
        assert_no_plaintext ();
        c = ctl ("", NULL, rm);
        g_assert_cmpint (c.status, ==, 0);
        ctl_clear (&c);
        value = corral_secret_store_lookup_sync ("GITHUB_TOKEN", NULL, NULL, &error);
        g_assert_null (value);
        g_assert_error (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_INVALID);
}

static void
test_refusals (void)
{
        const char *argv_value[] = { "set", "X_TOKEN", "--host", "a.example.com", CANARY, NULL };
        const char *address[] = { "set", "X_TOKEN", "--host", "127.0.0.1", NULL };
        const char *bad_name[] = { "set", "X-TOKEN", "--host", "a.example.com", NULL };
        const char *no_host[] = { "set", "X_TOKEN", NULL };
        const char *bad_fmt[] = {
                "set", "X_TOKEN", "--host", "a.example.com", "--format", "x", NULL
        };
        const char *const *cases[] = { argv_value, address, bad_name, no_host, bad_fmt };
        g_autoptr (GPtrArray) list = NULL;

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                Ctl c = ctl (CANARY "\n", NULL, cases[i]);

                g_assert_cmpint (c.status, ==, 125);
                g_assert_null (strstr (c.err, CANARY));
                ctl_clear (&c);
        }
        /* an empty value */
        {
                const char *set[] = { "set", "X_TOKEN", "--host", "a.example.com", NULL };
                Ctl c = ctl ("\n", NULL, set);

                g_assert_cmpint (c.status, ==, 125);
                ctl_clear (&c);
        }
        list = corral_secret_store_list_sync (NULL, NULL);
        g_assert_nonnull (list);
        g_assert_cmpuint (list->len, ==, 0);
}

static void
stored_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GError) error = NULL;

        g_assert_true (corral_secret_store_set_finish (result, &error));
        g_assert_no_error (error);
        *(gboolean *) user_data = TRUE;
}

static void
looked_up_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralSecretInfo) info = NULL;
        char *value = corral_secret_store_lookup_finish (result, &info, &error);

        g_assert_no_error (error);
        g_assert_cmpstr (value, ==, CANARY);
        g_assert_cmpstr (info->header, ==, "basic");
        corral_secret_value_free (value);
        *(gboolean *) user_data = TRUE;
}

static void
test_async (void)
{
        const char *hosts[] = { "registry.example.com", NULL };
        g_autoptr (CorralSecretInfo) info =
                corral_secret_info_new ("REGISTRY_PASSWORD", hosts, "Basic", "{}", NULL);
        gboolean done = FALSE;

        g_assert_nonnull (info);
        corral_secret_store_set_async (info, CANARY, NULL, stored_cb, &done);
        while (!done)
                g_main_context_iteration (NULL, TRUE);
        done = FALSE;
        corral_secret_store_lookup_async ("REGISTRY_PASSWORD", NULL, looked_up_cb, &done);
        while (!done)
                g_main_context_iteration (NULL, TRUE);
        g_assert_true (corral_secret_store_remove_sync ("REGISTRY_PASSWORD", NULL, NULL));
}

/* corral-egressd --secret: runs corral-egressd until it listens (or exits); returns its exit
 * status (-1 while it runs; then *ret_proc holds it). */
static int
egressd (const char *dir, const char *secret, GSubprocess **ret_proc, char **ret_err)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *exe = g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "keychain-bridge",
                                                 "corral-egressd", NULL);
        g_autofree char *policy = g_build_filename (dir, "policy.json", NULL);
        g_autofree char *ph = g_build_filename (dir, "placeholders", NULL);
        g_autofree char *ca = g_build_filename (dir, "session-ca.pem", NULL);
        g_autoptr (GSubprocess) p = NULL;
        g_autoptr (GDataInputStream) in = NULL;
        g_autofree char *line = NULL;

        g_assert_true (g_file_set_contents (policy, "{}", -1, NULL));
        p = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE,
                              &error, exe, "--policy", policy, "--tcp", "127.0.0.1:0", "--secret",
                              secret, "--placeholders-out", ph, "--session-ca-out", ca, NULL);
        g_assert_no_error (error);
        in = g_data_input_stream_new (g_subprocess_get_stdout_pipe (p));
        line = g_data_input_stream_read_line (in, NULL, NULL, NULL);
        if (line) {
                g_assert_true (g_str_has_prefix (line, "listening on port "));
                *ret_proc = g_steal_pointer (&p);
                return -1;
        }
        g_subprocess_wait (p, NULL, NULL);
        *ret_err = g_malloc0 (4096);
        g_input_stream_read_all (g_subprocess_get_stderr_pipe (p), *ret_err, 4095, NULL, NULL,
                                 NULL);
        return g_subprocess_get_exit_status (p);
}

/* A session binds keychain secrets: the guest gets placeholders and the session CA only. */
static void
test_daemon_binds (void)
{
        const char *set[] = { "set", "API_TOKEN", "--host", "api.example.com", NULL };
        const char *rm[] = { "rm", "API_TOKEN", NULL };
        g_autofree char *dir = g_dir_make_tmp ("corral-egressd-XXXXXX", NULL);
        g_autofree char *ph_file = g_build_filename (dir, "placeholders", NULL);
        g_autofree char *ca_file = g_build_filename (dir, "session-ca.pem", NULL);
        g_autofree char *ph = NULL, *ca = NULL, *err = NULL, *cmd = NULL;
        g_autoptr (GSubprocess) d = NULL;
        Ctl c = ctl (CANARY "\n", NULL, set);

        g_assert_cmpint (c.status, ==, 0);
        ctl_clear (&c);
        g_assert_cmpint (egressd (dir, "API_TOKEN", &d, &err), ==, -1);
        g_assert_true (g_file_get_contents (ph_file, &ph, NULL, NULL));
        g_assert_true (g_str_has_prefix (ph, "API_TOKEN=corral-ph-"));
        g_assert_cmpuint (strlen (ph), ==, strlen ("API_TOKEN=") + 42);
        g_assert_null (strstr (ph, CANARY));
        g_assert_true (g_file_get_contents (ca_file, &ca, NULL, NULL));
        g_assert_true (g_str_has_prefix (ca, "-----BEGIN CERTIFICATE-----"));
        g_subprocess_send_signal (d, SIGTERM);
        g_assert_true (g_subprocess_wait (d, NULL, NULL));
        /* a secret that is not there: the session does not start */
        g_clear_object (&d);
        g_assert_cmpint (egressd (dir, "NO_SUCH_TOKEN", &d, &err), ==, 1);
        g_assert_nonnull (strstr (err, "No secret named"));
        c = ctl ("", NULL, rm);
        ctl_clear (&c);
        cmd = g_strdup_printf ("rm -rf '%s'", dir);
        g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL);
}

/* No Secret Service at all: a clear error, exit 125, nothing stored anywhere. */
static void
test_absent (void)
{
        const char *set[] = { "set", "X_TOKEN", "--host", "a.example.com", NULL };
        const char *ls[] = { "ls", NULL };
        Ctl c = ctl (CANARY "\n", "unix:path=/nonexistent/corral-bus", set);

        g_assert_cmpint (c.status, ==, 125);
        g_assert_nonnull (strstr (c.err, "keychain is not available"));
        ctl_clear (&c);
        c = ctl ("", "unix:path=/nonexistent/corral-bus", ls);
        g_assert_cmpint (c.status, ==, 125);
        ctl_clear (&c);
        assert_no_plaintext ();
}

/* A locked keychain: storing, reading and removing all fail; nothing is written elsewhere.
 * Runs last: unlocking again would need a prompt. */
static void
test_locked (void)
{
        const char *set[] = { "set", "LOCKED_TOKEN", "--host", "a.example.com", NULL };
        const char *before[] = { "set", "KEPT_TOKEN", "--host", "a.example.com", NULL };
        const char *rm[] = { "rm", "KEPT_TOKEN", NULL };
        g_autoptr (GError) error = NULL;
        g_autoptr (SecretService) service = NULL;
        g_autoptr (SecretCollection) coll = NULL;
        GList *objects;
        Ctl c;
        char *value;

        c = ctl ("kept-value\n", NULL, before);
        g_assert_cmpint (c.status, ==, 0);
        ctl_clear (&c);
        service = secret_service_get_sync (SECRET_SERVICE_NONE, NULL, &error);
        g_assert_no_error (error);
        coll = secret_collection_for_alias_sync (service, SECRET_COLLECTION_DEFAULT,
                                                 SECRET_COLLECTION_NONE, NULL, &error);
        g_assert_no_error (error);
        objects = g_list_prepend (NULL, coll);
        g_assert_cmpint (secret_service_lock_sync (service, objects, NULL, NULL, &error), ==, 1);
        g_assert_no_error (error);
        g_list_free (objects);

        c = ctl (CANARY "\n", NULL, set);
        g_assert_cmpint (c.status, ==, 125);
        g_assert_nonnull (strstr (c.err, "keychain is locked"));
        ctl_clear (&c);
        value = corral_secret_store_lookup_sync ("KEPT_TOKEN", NULL, NULL, &error);
        g_assert_null (value);
        g_assert_error (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_KEYCHAIN);
        g_clear_error (&error);
        c = ctl ("", NULL, rm);
        g_assert_cmpint (c.status, ==, 125);
        ctl_clear (&c);
        assert_no_plaintext ();
        /* a session needing a secret from a locked keychain does not start */
        {
                g_autofree char *dir = g_dir_make_tmp ("corral-egressd-XXXXXX", NULL);
                g_autofree char *err = NULL, *cmd = g_strdup_printf ("rm -rf '%s'", dir);
                g_autoptr (GSubprocess) d = NULL;

                g_assert_cmpint (egressd (dir, "KEPT_TOKEN", &d, &err), ==, 1);
                g_assert_nonnull (strstr (err, "keychain is locked"));
                g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL);
        }
}

int
main (int argc, char **argv)
{
        if (!egress_test_keyring_dir ())
                return egress_test_keyring_reexec (argv);
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/keychain/set-ls-rm", test_set_ls_rm);
        g_test_add_func ("/keychain/refusals", test_refusals);
        g_test_add_func ("/keychain/async", test_async);
        g_test_add_func ("/keychain/daemon-binds-secrets", test_daemon_binds);
        g_test_add_func ("/keychain/absent", test_absent);
        g_test_add_func ("/keychain/locked", test_locked);
        return g_test_run ();
}
