/* test-egress-daemon.c — corral-egressd as a process: policy file reloads apply at once, a
 * broken policy file fails closed, the listener is loopback-only, the audit log is written.
 * With a keychain: the daemon outlives the D-Bus session of the terminal that started it and
 * finds the person's keychain on their own session bus; a guest that sends a secret's value
 * turns the VM's network off and the daemon says why where the app can show it.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-egress-vm.h"
#include "corral-secret-store.h"
#include "egress-test.h"

#include <glib/gstdio.h>
#include <libsecret/secret.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>

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

/* managed (nullable): the organisation's policy file the daemon reads, instead of the suite's. */
static void
daemon_start_managed (Daemon *d, const char *json, const char *managed)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *exe = daemon_path ();
        g_autofree char *line = NULL;
        g_autoptr (GDataInputStream) in = NULL;
        g_autoptr (GSubprocessLauncher) l =
                g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE);

        d->dir = g_dir_make_tmp ("corral-egressd-XXXXXX", &error);
        g_assert_no_error (error);
        d->policy = g_build_filename (d->dir, "policy.json", NULL);
        d->audit = g_build_filename (d->dir, "audit.jsonl", NULL);
        write_policy (d, json);
        if (managed)
                g_subprocess_launcher_setenv (l, "CORRAL_MANAGED_POLICY", managed, TRUE);
        d->proc = g_subprocess_launcher_spawn (l, &error, exe, "--policy", d->policy, "--tcp",
                                               "127.0.0.1:0", "--audit", d->audit, NULL);
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
daemon_start (Daemon *d, const char *json)
{
        daemon_start_managed (d, json, NULL);
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

/* The organisation's policy over the person's (SECURITY.md M3): a host it denies is refused
 * although the person allowed it, with a reply that says who decided; a changed policy applies
 * at the next reload (SIGHUP); a damaged one refuses everything. */
static void
test_managed_policy (void)
{
        g_autoptr (EgressTestServer) srv = egress_test_server_new (NULL, FALSE);
        guint16 p = egress_test_server_get_port (srv);
        g_autofree char *allow = g_strdup_printf ("{\"allow\":[\"127.0.0.1:%u\"]}", p);
        g_autofree char *dir = g_dir_make_tmp ("corral-egress-managed-XXXXXX", NULL);
        g_autofree char *managed = g_build_filename (dir, "managed.json", NULL);
        g_autofree char *request = g_strdup_printf ("GET http://127.0.0.1:%u/ HTTP/1.0\r\n\r\n", p);
        g_autofree char *audit = NULL;
        g_autoptr (GString) reply = NULL;
        Daemon d = { 0 };

        g_assert_true (g_file_set_contents (
                managed, "{\"network\": {\"deniedHosts\": [\"127.0.0.1\"]}}", -1, NULL));
        daemon_start_managed (&d, allow, managed);
        reply = egress_test_request (d.port, request, -1);
        g_assert_cmpuint (egress_test_status (reply->str), ==, 403);
        g_assert_nonnull (strstr (reply->str, "X-Corral-Blocked: managed-deny"));
        g_assert_nonnull (strstr (reply->str, "organisation"));
        g_assert_true (g_file_get_contents (d.audit, &audit, NULL, NULL));
        g_assert_nonnull (strstr (audit, "\"rule\":\"managed-deny\""));

        g_assert_true (g_file_set_contents (managed, "{}", -1, NULL));
        g_subprocess_send_signal (d.proc, SIGHUP);
        wait_status (&d, p, 204);
        g_assert_true (g_file_set_contents (managed, "{\"network\": 7}", -1, NULL));
        g_subprocess_send_signal (d.proc, SIGHUP);
        wait_status (&d, p, 403);
        daemon_stop (&d);
        g_unlink (managed);
        g_rmdir (dir);
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

/* The person's desktop session: a session bus at $XDG_RUNTIME_DIR/bus (where a systemd user
 * session has it) with an unlocked gnome-keyring holding one secret. ------------------------ */

#define CANARY "canary-daemon-3e9b71c04d2a"

typedef struct {
        char *dir; /* HOME; data/ and run/ are XDG_DATA_HOME and XDG_RUNTIME_DIR */
        GSubprocess *bus;
        GSubprocess *keyring;
        char *certs; /* the origin's test CA and certificate for host.corral.internal */
        EgressTestServer *origin;
} Person;

static Person person;

static void
die_with_parent (gpointer data)
{
        prctl (PR_SET_PDEATHSIG, SIGTERM);
}

static void
person_stop (void)
{
        g_autofree char *cmd = NULL;

        if (!person.dir)
                return;
        secret_service_disconnect ();
        if (person.keyring)
                g_subprocess_send_signal (person.keyring, SIGTERM);
        if (person.bus)
                g_subprocess_send_signal (person.bus, SIGTERM);
        g_clear_object (&person.keyring);
        g_clear_object (&person.bus);
        g_clear_pointer (&person.origin, egress_test_server_free);
        cmd = g_strdup_printf ("rm -rf '%s' '%s'", person.dir, person.certs);
        g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL);
        g_clear_pointer (&person.dir, g_free);
        g_clear_pointer (&person.certs, g_free);
}

/* Stores the secret, retrying while the keyring comes up on the bus. */
static void
store_secret (const char *host)
{
        const char *hosts[] = { host, NULL };
        g_autoptr (CorralSecretInfo) info =
                corral_secret_info_new ("API_TOKEN", hosts, "authorization", "Bearer {}", NULL);

        for (int i = 0; i < 100; i++) {
                g_autoptr (GError) error = NULL;

                if (corral_secret_store_set_sync (info, CANARY, NULL, &error))
                        return;
                secret_service_disconnect ();
                g_usleep (100 * 1000);
        }
        g_error ("the test keyring never answered");
}

/* FALSE (the test skipped) without dbus-daemon or gnome-keyring-daemon. */
static gboolean
person_start (void)
{
        const char *names[] = { "host.corral.internal", NULL };
        g_autoptr (GError) error = NULL;
        g_autoptr (GSubprocessLauncher) l = NULL;
        g_autoptr (GDBusConnection) bus = NULL;
        g_autoptr (GTlsCertificate) cert = NULL;
        g_autofree char *run = NULL, *data = NULL, *sock = NULL, *addr = NULL, *pem = NULL;
        g_autofree char *key = NULL, *host = NULL;
        g_autofree char *dbus = g_find_program_in_path ("dbus-daemon");
        g_autofree char *keyring = g_find_program_in_path ("gnome-keyring-daemon");

        if (person.dir)
                return TRUE;
        if (!dbus || !keyring) {
                g_test_skip ("dbus-daemon or gnome-keyring-daemon missing");
                return FALSE;
        }
        person.dir = g_dir_make_tmp ("corral-person-XXXXXX", NULL);
        run = g_build_filename (person.dir, "run", NULL);
        data = g_build_filename (person.dir, "data", NULL);
        g_mkdir_with_parents (run, 0700);
        g_mkdir_with_parents (data, 0700);
        sock = g_build_filename (run, "bus", NULL);
        addr = g_strdup_printf ("unix:path=%s", sock);
        g_setenv ("HOME", person.dir, TRUE);
        g_setenv ("XDG_DATA_HOME", data, TRUE);
        g_setenv ("XDG_RUNTIME_DIR", run, TRUE);
        g_setenv ("DBUS_SESSION_BUS_ADDRESS", addr, TRUE);
        l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE |
                                       G_SUBPROCESS_FLAGS_STDERR_SILENCE);
        /* not left behind by a test that fails */
        g_subprocess_launcher_set_child_setup (l, die_with_parent, NULL, NULL);
        person.bus = g_subprocess_launcher_spawn (l, &error, "dbus-daemon", "--session", "--nofork",
                                                  "--address", addr, NULL);
        g_assert_no_error (error);
        g_clear_object (&l);
        for (int i = 0; i < 100 && !g_file_test (sock, G_FILE_TEST_EXISTS); i++)
                g_usleep (50 * 1000);
        l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDIN_PIPE |
                                       G_SUBPROCESS_FLAGS_STDOUT_SILENCE |
                                       G_SUBPROCESS_FLAGS_STDERR_SILENCE);
        g_subprocess_launcher_set_child_setup (l, die_with_parent, NULL, NULL);
        person.keyring =
                g_subprocess_launcher_spawn (l, &error, "gnome-keyring-daemon", "--foreground",
                                             "--unlock", "--components=secrets", NULL);
        g_assert_no_error (error);
        g_output_stream_write_all (g_subprocess_get_stdin_pipe (person.keyring), "corral-test", 11,
                                   NULL, NULL, &error);
        g_assert_no_error (error);
        g_output_stream_close (g_subprocess_get_stdin_pipe (person.keyring), NULL, NULL);
        /* this process outlives the bus too (person_stop); the bus listens a moment after its
         * socket appears */
        for (int i = 0; i < 100 && !bus; i++) {
                g_clear_error (&error);
                if (!(bus = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, &error)))
                        g_usleep (50 * 1000);
        }
        g_assert_no_error (error);
        g_dbus_connection_set_exit_on_close (bus, FALSE);
        person.certs = egress_test_make_certs (names);
        pem = g_build_filename (person.certs, "host.corral.internal.pem", NULL);
        key = g_build_filename (person.certs, "host.corral.internal.key", NULL);
        cert = g_tls_certificate_new_from_files (pem, key, &error);
        g_assert_no_error (error);
        person.origin = egress_test_server_new (cert, FALSE);
        host = g_strdup_printf ("host.corral.internal:%u",
                                egress_test_server_get_port (person.origin));
        store_secret (host);
        return TRUE;
}

/* A VM's corral-egressd, on a loopback port instead of a VM's port. */
typedef struct {
        char *dir; /* as a VM's folder: egressd.lock, network-off.txt, ... */
        GPid pid;
        guint16 port;
} VmDaemon;

static char *
vm_file (VmDaemon *d, const char *name)
{
        return g_build_filename (d->dir, name, NULL);
}

/* Started as `corralctl exec` starts it (detached, setsid), from a terminal whose own D-Bus
 * session (dbus-run-session) ends as soon as the daemon listens. keyring_in_terminal: the
 * person has no session bus of their own ($XDG_RUNTIME_DIR/bus), their keychain answers on the
 * terminal's bus only, and goes away with it. */
static void
vm_daemon_start (VmDaemon *d, gboolean keyring_in_terminal)
{
        const char *script =
                "if [ -n \"$KEYRING\" ]; then echo -n corral-test | gnome-keyring-daemon "
                "--unlock --components=secrets >/dev/null || exit 1; fi; "
                "setsid \"$@\" >\"$DIR/out\" 2>\"$DIR/egressd.log\" </dev/null & "
                "echo $! >\"$DIR/pid\"; "
                "for i in $(seq 100); do grep -q listening \"$DIR/out\" && exit 0; "
                "sleep 0.1; done; exit 1";
        g_autoptr (GError) error = NULL;
        g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
        g_autoptr (GSubprocess) term = NULL;
        g_autoptr (GStrvBuilder) args = g_strv_builder_new ();
        static const char *const files[] = {
                "--placeholders-out", "ph",          "--session-ca-out", "ca.pem",  "--lock",
                "egressd.lock",       "--alert-out", "network-off.txt",  "--audit", "egress.jsonl"
        };
        g_auto (GStrv) argv = NULL;
        g_autofree char *exe = daemon_path (), *policy = NULL, *rule = NULL, *out = NULL;
        g_autofree char *pid = NULL, *ca = NULL, *text = NULL;

        d->dir = g_dir_make_tmp ("corral-vm-XXXXXX", NULL);
        policy = vm_file (d, "egress-policy.json");
        rule = g_strdup_printf ("{\"allow\":[\"host.corral.internal:%u\"]}",
                                egress_test_server_get_port (person.origin));
        g_assert_true (g_file_set_contents (policy, rule, -1, NULL));
        ca = g_build_filename (person.certs, "ca.pem", NULL);
        g_strv_builder_add_many (args, "dbus-run-session", "--", "sh", "-c", script, "sh", exe,
                                 "--policy", policy, "--tcp", "127.0.0.1:0", "--all-secrets",
                                 "--upstream-ca", ca, NULL);
        for (gsize i = 0; i < G_N_ELEMENTS (files); i += 2) {
                g_autofree char *f = vm_file (d, files[i + 1]);

                g_strv_builder_add_many (args, files[i], f, NULL);
        }
        argv = g_strv_builder_end (args);
        g_subprocess_launcher_setenv (l, "DIR", d->dir, TRUE);
        if (keyring_in_terminal) {
                g_autofree char *run = vm_file (d, "run");

                g_mkdir_with_parents (run, 0700);
                g_subprocess_launcher_setenv (l, "XDG_RUNTIME_DIR", run, TRUE);
                g_subprocess_launcher_setenv (l, "KEYRING", "1", TRUE);
        }
        /* as for a VM: a warning is a line in its log, not the end of the daemon */
        g_subprocess_launcher_unsetenv (l, "G_DEBUG");
        term = g_subprocess_launcher_spawnv (l, (const char *const *) argv, &error);
        g_assert_no_error (error);
        g_subprocess_wait_check (term, NULL, &error);
        g_assert_no_error (error);
        pid = vm_file (d, "pid");
        out = vm_file (d, "out");
        g_assert_true (g_file_get_contents (pid, &text, NULL, NULL));
        d->pid = (GPid) g_ascii_strtoll (text, NULL, 10);
        g_clear_pointer (&text, g_free);
        g_assert_true (g_file_get_contents (out, &text, NULL, NULL));
        g_assert_true (g_str_has_prefix (text, "listening on port "));
        d->port = (guint16) g_ascii_strtoull (text + 18, NULL, 10);
}

static void
vm_daemon_stop (VmDaemon *d)
{
        g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", d->dir);

        if (d->pid > 0 && kill (d->pid, SIGTERM) == 0)
                for (int i = 0; i < 100 && kill (d->pid, 0) == 0; i++)
                        g_usleep (50 * 1000);
        g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL);
        g_free (d->dir);
}

/* curl through the daemon to the origin, as a program in the VM would; stdout+stderr. */
static char *
curl_via (VmDaemon *d, const char *header)
{
        g_autofree char *proxy = g_strdup_printf ("http://127.0.0.1:%u", d->port);
        g_autofree char *url = g_strdup_printf ("https://host.corral.internal:%u/echo",
                                                egress_test_server_get_port (person.origin));
        g_autofree char *ca = vm_file (d, "ca.pem");
        g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (
                G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_MERGE);
        g_autoptr (GSubprocess) p = NULL;
        g_autoptr (GError) error = NULL;
        char *out = NULL;

        g_subprocess_launcher_unsetenv (l, "https_proxy");
        g_subprocess_launcher_unsetenv (l, "HTTPS_PROXY");
        p = g_subprocess_launcher_spawn (l, &error, "curl", "-si", "--suppress-connect-headers",
                                         "--max-time", "30", "-x", proxy, "--cacert", ca, "-H",
                                         header, url, NULL);
        g_assert_no_error (error);
        g_subprocess_communicate_utf8 (p, NULL, NULL, &out, NULL, &error);
        g_assert_no_error (error);
        return out;
}

/* KEY=VALUE of the daemon's placeholders file (transfer full). */
static char *
placeholder (VmDaemon *d)
{
        g_autofree char *file = vm_file (d, "ph"), *text = NULL;

        g_assert_true (g_file_get_contents (file, &text, NULL, NULL));
        if (!g_str_has_prefix (text, "API_TOKEN=corral-ph-"))
                g_error ("no credentials in the session: '%s'", text);
        return g_strdup (text + strlen ("API_TOKEN="));
}

/* S8: the terminal's D-Bus session ends; the daemon lives on, with the person's keychain
 * (found on their own bus, or read from the terminal's while it was there). */
static void
test_outlives_terminal_bus (gconstpointer data)
{
        VmDaemon d = { 0 };
        g_autofree char *ph = NULL, *auth = NULL, *out = NULL, *heads = NULL;

        if (!person_start ())
                return;
        vm_daemon_start (&d, GPOINTER_TO_INT (data));
        g_usleep (500 * 1000); /* the terminal's bus is gone by now */
        g_assert_cmpint (kill (d.pid, 0), ==, 0);
        ph = placeholder (&d);
        auth = g_strdup_printf ("Authorization: Bearer %s", ph);
        out = curl_via (&d, auth);
        if (!g_str_has_prefix (out, "HTTP/1.1 200"))
                g_error ("no reply through the daemon: %s", out);
        heads = egress_test_server_dup_heads (person.origin);
        g_assert_nonnull (strstr (heads, "Authorization: Bearer " CANARY "\r\n"));
        vm_daemon_stop (&d);
}

/* K9: the guest sends the secret's value: the network is off, and why is written for the
 * person (corral_egress_vm_dup_alert, the daemon's log). */
static void
test_secret_from_guest_alert (void)
{
        VmDaemon d = { 0 };
        g_autofree char *out = NULL, *again = NULL, *alert = NULL, *log = NULL, *text = NULL;
        g_autofree char *ph = NULL, *auth = NULL, *file = NULL, *audit = NULL, *records = NULL;
        struct stat st;

        if (!person_start ())
                return;
        vm_daemon_start (&d, FALSE);
        g_assert_null (corral_egress_vm_dup_alert (d.dir));
        out = curl_via (&d, "X-Leak: " CANARY);
        g_assert_true (g_str_has_prefix (out, "HTTP/1.1 403"));
        g_assert_nonnull (strstr (out, "X-Corral-Blocked: secret-from-guest"));
        ph = placeholder (&d);
        auth = g_strdup_printf ("Authorization: Bearer %s", ph);
        again = curl_via (&d, auth);
        g_assert_false (g_str_has_prefix (again, "HTTP/1.1 200"));
        audit = vm_file (&d, "egress.jsonl");
        /* a connection's record is written as it closes, a moment after the client saw it */
        for (int i = 0; i < 100; i++) {
                g_clear_pointer (&records, g_free);
                g_assert_true (g_file_get_contents (audit, &records, NULL, NULL));
                if (strstr (records, "\"rule\":\"session-ended\""))
                        break;
                g_usleep (50 * 1000);
        }
        g_assert_nonnull (strstr (records, "\"rule\":\"secret-from-guest\""));
        g_assert_nonnull (strstr (records, "\"rule\":\"session-ended\""));
        g_assert_null (strstr (records, CANARY));
        alert = corral_egress_vm_dup_alert (d.dir);
        g_assert_nonnull (alert);
        g_assert_nonnull (strstr (alert, "“API_TOKEN”"));
        g_assert_null (strstr (alert, CANARY));
        file = vm_file (&d, "network-off.txt");
        g_assert_cmpint (g_stat (file, &st), ==, 0);
        g_assert_cmpint (st.st_mode & 0777, ==, 0600);
        log = vm_file (&d, "egressd.log");
        g_assert_true (g_file_get_contents (log, &text, NULL, NULL));
        g_assert_nonnull (strstr (text, "network is off"));
        g_assert_null (strstr (text, CANARY));
        vm_daemon_stop (&d);
}

/* The organisation's credential keys (SECURITY.md M8): a keychain secret whose name it does
 * not allow is not bound into the VM's session (no placeholder, the daemon says why); one it
 * allows is, for the hosts it allows. */
static void
test_credentials_policy (void)
{
        VmDaemon d = { 0 };
        g_autofree char *dir = g_dir_make_tmp ("corral-egress-cred-policy-XXXXXX", NULL);
        g_autofree char *managed = g_build_filename (dir, "managed.json", NULL);
        g_autofree char *saved = g_strdup (g_getenv ("CORRAL_MANAGED_POLICY"));
        g_autofree char *ph_file = NULL, *ph = NULL, *log = NULL, *text = NULL;

        if (!person_start ())
                return;
        g_assert_true (g_file_set_contents (
                managed, "{\"credentials\": {\"allowedNames\": [\"OTHER_TOKEN\"]}}", -1, NULL));
        g_setenv ("CORRAL_MANAGED_POLICY", managed, TRUE);
        vm_daemon_start (&d, FALSE);
        ph_file = vm_file (&d, "ph");
        g_assert_true (g_file_get_contents (ph_file, &ph, NULL, NULL));
        g_assert_null (strstr (ph, "API_TOKEN"));
        log = vm_file (&d, "egressd.log");
        g_assert_true (g_file_get_contents (log, &text, NULL, NULL));
        /* (the quotes are "?" in the C locale the suite runs in) */
        g_assert_nonnull (strstr (text, "API_TOKEN"));
        g_assert_nonnull (strstr (text, " is not available in the VM"));
        g_assert_nonnull (strstr (text, "set by your organisation"));
        vm_daemon_stop (&d);

        /* Allowed: bound as before. */
        g_assert_true (g_file_set_contents (
                managed, "{\"credentials\": {\"allowedNames\": [\"API_TOKEN\"]}}", -1, NULL));
        vm_daemon_start (&d, FALSE);
        g_free (placeholder (&d));
        vm_daemon_stop (&d);
        g_setenv ("CORRAL_MANAGED_POLICY", saved ? saved : "", TRUE);
        g_unlink (managed);
        g_rmdir (dir);
}

/* Ends GLib's idle pool threads (one ran the origin's TLS handshake) and waits until the kernel
 * has reaped them: LeakSanitizer's exit-time scan of such a thread's dynamic TLS crashes its
 * tracer ("Tracer caught signal 11") with gcc 12 and glibc 2.36. */
static void
retire_pool_threads (void)
{
        g_thread_pool_set_max_idle_time (1);
        for (int i = 0; i < 200; i++) {
                g_autoptr (GDir) dir = g_dir_open ("/proc/self/task", 0, NULL);
                const char *tid;
                gboolean pool = FALSE;

                g_thread_pool_stop_unused_threads ();
                while (dir && !pool && (tid = g_dir_read_name (dir))) {
                        g_autofree char *path = g_strdup_printf ("/proc/self/task/%s/comm", tid);
                        g_autofree char *comm = NULL;

                        pool = g_file_get_contents (path, &comm, NULL, NULL) &&
                               g_str_has_prefix (comm, "pool-") &&
                               !g_str_has_prefix (comm, "pool-spawner"); /* never idle */
                }
                if (!pool)
                        return;
                g_usleep (50 * 1000);
        }
}

int
main (int argc, char **argv)
{
        int r;

        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/egress-daemon/policy-reload", test_reload);
        g_test_add_func ("/egress-daemon/loopback-only", test_loopback_only);
        g_test_add_func ("/egress-daemon/managed-policy", test_managed_policy);
        g_test_add_data_func ("/egress-daemon/outlives-terminal-bus", GINT_TO_POINTER (FALSE),
                              test_outlives_terminal_bus);
        g_test_add_data_func ("/egress-daemon/outlives-terminal-keyring", GINT_TO_POINTER (TRUE),
                              test_outlives_terminal_bus);
        g_test_add_func ("/egress-daemon/secret-from-guest-alert", test_secret_from_guest_alert);
        g_test_add_func ("/egress-daemon/credentials-policy", test_credentials_policy);
        r = g_test_run ();
        person_stop ();
        retire_pool_threads ();
        return r;
}
