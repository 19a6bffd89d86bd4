/* corral-egressd — the host egress proxy as a process: serves one session's policy on a unix
 * socket or a loopback TCP port.
 *
 *   corral-egressd --policy FILE [--unix PATH | --tcp 127.0.0.1:PORT] [--audit FILE]
 *                  [--stream-fd N | --connect SOCKET [--lock FILE]]
 *                  [--secret NAME… | --all-secrets] [--placeholders-out FILE]
 *                  [--session-ca-out FILE] [--upstream-ca FILE] [--alert-out FILE]
 *
 * --stream-fd serves a guest's channel stream (NET-PROTOCOL.md) besides the listener.
 * --connect serves a VM's network port through QEMU's unix socket, hands the guest proxy its
 * session (a fresh proxy token, the placeholders, the session CA) when it asks, and exits when
 * the VM is gone; --lock makes it the only one per VM.
 * --secret binds keychain secrets for this session (--all-secrets: every secret in the
 * keychain but the model providers' keys, which stay with the host's agent loop): their
 * placeholders are written as NAME=placeholder lines to --placeholders-out (0600), the session
 * CA the guest must trust to --session-ca-out. A locked or missing keychain
 * stops the daemon before it serves anything, except with --all-secrets, where it serves
 * without credentials and says so (nothing is ever sent in their place).
 *
 * The keychain is read once, when the session starts, and its secrets are held in this process
 * for the session's life: the daemon does not depend on the D-Bus session of the terminal that
 * started it (it does not exit when that bus goes away) and looks for the keychain on the
 * person's own session bus ($XDG_RUNTIME_DIR/bus, else /run/user/UID/bus) before the caller's
 * DBUS_SESSION_BUS_ADDRESS, so a restart from another terminal finds the same keychain.
 *
 * A guest that sends a bound secret's real value ends the session (egress-proxy.h): the daemon
 * says so in its log and writes why, in words for the person, to --alert-out (removed when a
 * new session starts); it keeps running, refusing everything, until the VM is gone.
 *
 * The policy file is reloaded when it changes and on SIGHUP; changes apply at once, also to
 * open connections. A policy file that cannot be read or parsed makes the proxy refuse
 * everything (preset "none") until it is fixed: fail closed.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-proxy.h"

#include <gio/gunixsocketaddress.h>
#include <glib-unix.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral-secret-store.h"
#include "proto.h"

static char *opt_policy;
static char *opt_unix;
static char *opt_tcp;
static char *opt_audit;
static int opt_stream_fd = -1;
static char **opt_secrets;
static char *opt_placeholders_out;
static char *opt_ca_out;
static char *opt_upstream_ca;
static char *opt_connect;
static char *opt_lock;
static char *opt_alert;
static gboolean opt_all_secrets;

static const GOptionEntry entries[] = {
        { "policy", 0, 0, G_OPTION_ARG_FILENAME, &opt_policy, N_ ("Policy file (JSON)"),
          N_ ("FILE") },
        { "unix", 0, 0, G_OPTION_ARG_FILENAME, &opt_unix, N_ ("Listen on this unix socket"),
          N_ ("PATH") },
        { "tcp", 0, 0, G_OPTION_ARG_STRING, &opt_tcp, N_ ("Listen on this loopback address"),
          N_ ("ADDR:PORT") },
        { "audit", 0, 0, G_OPTION_ARG_FILENAME, &opt_audit, N_ ("Append audit records here"),
          N_ ("FILE") },
        { "stream-fd", 0, 0, G_OPTION_ARG_INT, &opt_stream_fd,
          N_ ("Serve the guest channel stream on this fd"), N_ ("FD") },
        { "secret", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_secrets,
          N_ ("Bind this keychain secret for the session"), N_ ("NAME") },
        { "placeholders-out", 0, 0, G_OPTION_ARG_FILENAME, &opt_placeholders_out,
          N_ ("Write NAME=placeholder lines here"), N_ ("FILE") },
        { "session-ca-out", 0, 0, G_OPTION_ARG_FILENAME, &opt_ca_out,
          N_ ("Write the session CA (PEM) here"), N_ ("FILE") },
        { "upstream-ca", 0, 0, G_OPTION_ARG_FILENAME, &opt_upstream_ca,
          N_ ("Also trust these CA certificates upstream"), N_ ("FILE") },
        { "connect", 0, 0, G_OPTION_ARG_FILENAME, &opt_connect,
          N_ ("Serve the VM network port behind this unix socket"), N_ ("SOCKET") },
        { "lock", 0, 0, G_OPTION_ARG_FILENAME, &opt_lock,
          N_ ("Hold this lock while running; exit at once if it is taken"), N_ ("FILE") },
        { "all-secrets", 0, 0, G_OPTION_ARG_NONE, &opt_all_secrets,
          N_ ("Bind every secret in the keychain"), NULL },
        { "alert-out", 0, 0, G_OPTION_ARG_FILENAME, &opt_alert,
          N_ ("Write here why the session ended, if the guest ends it"), N_ ("FILE") },
        { NULL }
};

/* The person's own session bus: $XDG_RUNTIME_DIR/bus or /run/user/UID/bus, a socket of ours.
 * (transfer full) (nullable) its D-Bus address. */
static char *
own_session_bus (void)
{
        const char *runtime = g_getenv ("XDG_RUNTIME_DIR");
        g_autofree char *fallback = g_strdup_printf ("/run/user/%u", (guint) getuid ());
        const char *dirs[] = { runtime && *runtime ? runtime : fallback, fallback };

        for (gsize i = 0; i < G_N_ELEMENTS (dirs); i++) {
                g_autofree char *path = g_build_filename (dirs[i], "bus", NULL);
                g_autofree char *escaped = NULL;
                struct stat st;

                if (lstat (path, &st) < 0 || !S_ISSOCK (st.st_mode) || st.st_uid != getuid ())
                        continue;
                escaped = g_dbus_address_escape_value (path);
                return g_strdup_printf ("unix:path=%s", escaped);
        }
        return NULL;
}

/* Before anything talks to D-Bus (single-threaded still: setenv is safe). The keychain is
 * read at session start only; losing the bus later must not end the daemon, which GDBus's
 * shared session connection would do by default (exit-on-close). */
static void
choose_session_bus (void)
{
        /* GDBus keeps its shared connection only while someone holds it: held for good here,
         * so that libsecret gets this one, not a new one that exits on close again. */
        static GDBusConnection *bus;
        g_autofree char *own = own_session_bus ();

        if (own)
                g_setenv ("DBUS_SESSION_BUS_ADDRESS", own, TRUE);
        bus = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, NULL);
        if (bus)
                g_dbus_connection_set_exit_on_close (bus, FALSE);
}

/* The secrets to bind: --secret, or with --all-secrets every one in the keychain. A keychain
 * that cannot be listed then means no credentials, said once (fail closed: nothing is bound). */
static char **
secret_names (void)
{
        g_autoptr (GError) error = NULL;
        char **names;

        if (!opt_all_secrets)
                return g_strdupv (opt_secrets);
        /* the agent loop's own keys stay on the host (SECURITY.md S7) */
        names = corral_secret_store_list_session_names_sync (NULL, &error);
        if (!names)
                g_printerr ("corral-egressd: %s; no credentials in this session\n", error->message);
        return names;
}

/* Keychain secrets -> bindings; their placeholders (ret_env) and the session CA (ret_pem,
 * NULL without bindings) for the guest. */
static gboolean
setup_credentials (CorralEgressProxy *proxy, char ***ret_env, char **ret_pem, GError **error)
{
        g_autoptr (CorralEgressCredentials) creds = corral_egress_credentials_new ();
        g_autofree char *pem = NULL, *lines = NULL;
        g_auto (GStrv) env = NULL, names = NULL, refused = NULL;
        g_autoptr (CorralPolicy) managed = NULL;
        g_autoptr (GError) policy_error = NULL;

        if (opt_upstream_ca &&
            !corral_egress_proxy_set_upstream_ca_file (proxy, opt_upstream_ca, error))
                return FALSE;
        names = secret_names ();
        /* The organisation's credential keys (SECURITY.md M8); a policy that cannot be read
         * binds nothing (and reload() refuses all traffic). */
        if (names && names[0] && !(managed = corral_policy_load_default (&policy_error))) {
                g_printerr ("corral-egressd: %s; no credentials in this session\n",
                            policy_error->message);
                g_clear_pointer (&names, g_strfreev);
        }
        if (names && names[0]) {
                if (!corral_egress_credentials_add_from_keychain (
                            creds, (const char *const *) names, managed, &refused, NULL, error) ||
                    !corral_egress_proxy_set_credentials (proxy, creds, error) ||
                    !(pem = corral_egress_proxy_dup_ca_pem (proxy, error)))
                        return FALSE;
        }
        for (guint i = 0; refused && refused[i]; i++)
                g_printerr ("corral-egressd: %s\n", refused[i]);
        env = corral_egress_credentials_dup_environ (creds);
        lines = g_strjoinv ("\n", env);
        if (opt_placeholders_out &&
            !g_file_set_contents_full (opt_placeholders_out, lines, -1,
                                       G_FILE_SET_CONTENTS_CONSISTENT, 0600, error))
                return FALSE;
        if (opt_ca_out && pem &&
            !g_file_set_contents_full (opt_ca_out, pem, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0644,
                                       error))
                return FALSE;
        *ret_env = g_steal_pointer (&env);
        *ret_pem = g_steal_pointer (&pem);
        return TRUE;
}

/* Runs on the connection's thread (egress-proxy.h). */
static void
on_session_ended (CorralEgressProxy *proxy, const char *name, const char *host, gpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *text = g_strdup_printf (
                _ ("This VM's network is off: a program in it sent the real value of the secret "
                   "“%s” (to %s), which only this computer should hold. Check what ran in the "
                   "VM; restarting the VM turns the network on again with new placeholders.\n"),
                name, host ? host : _ ("a host"));

        g_printerr ("corral-egressd: %s", text);
        if (opt_alert && !g_file_set_contents_full (opt_alert, text, -1,
                                                    G_FILE_SET_CONTENTS_CONSISTENT, 0600, &error))
                g_printerr ("corral-egressd: %s\n", error->message);
}

/* --connect: the guest proxy's session, with a proxy token of its own. */
static gboolean
setup_guest_session (CorralEgressProxy *proxy, char **env, const char *pem, GError **error)
{
        char token[2 * 24 + 1];

        if (proto_random_hex (token, 24) < 0) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, _ ("No randomness for a token"));
                return FALSE;
        }
        return corral_egress_proxy_set_guest_session (proxy, token, (const char *const *) env, pem,
                                                      error);
}

/* Only one daemon per VM: the lock is kept (open) until exit. FALSE when another holds it. */
static gboolean
take_lock (void)
{
        int fd = open (opt_lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

        return fd >= 0 && flock (fd, LOCK_EX | LOCK_NB) == 0;
}

static gboolean
on_guest_gone (gpointer user_data)
{
        g_main_loop_quit (user_data);
        return G_SOURCE_REMOVE;
}

static void
reload (CorralEgressProxy *proxy)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralEgressPolicy) policy = NULL;
        g_autoptr (CorralPolicy) managed = NULL;

        /* No file yet: the default of a new VM (corralctl net), an allowlist without rules. */
        if (!g_file_test (opt_policy, G_FILE_TEST_EXISTS))
                policy = corral_egress_policy_new (CORRAL_EGRESS_PRESET_ALLOWLIST);
        else
                policy = corral_egress_policy_load_file (opt_policy, &error);
        if (!policy) {
                g_printerr ("corral-egressd: %s; refusing all traffic until it is fixed\n",
                            error->message);
                policy = corral_egress_policy_new (CORRAL_EGRESS_PRESET_NONE);
        }
        /* The organisation's policy over the person's: a damaged one refuses everything, as
         * a damaged person's policy does (nothing of a damaged policy applies, SECURITY.md
         * M1). Read at each reload: SIGHUP applies a changed policy to a running VM. */
        g_clear_error (&error);
        managed = corral_policy_load_default (&error);
        if (!managed) {
                g_printerr ("corral-egressd: %s; refusing all traffic until it is fixed\n",
                            error->message);
                g_clear_pointer (&policy, corral_egress_policy_unref);
                policy = corral_egress_policy_new (CORRAL_EGRESS_PRESET_NONE);
        }
        corral_egress_policy_set_managed (policy, managed);
        corral_egress_proxy_set_audit_journal (
                proxy, managed && corral_policy_audit_copies_to (managed, "journal"));
        corral_egress_proxy_set_policy (proxy, policy);
}

static void
on_changed (GFileMonitor *monitor,
            GFile *file,
            GFile *other,
            GFileMonitorEvent event,
            gpointer user_data)
{
        if (event == G_FILE_MONITOR_EVENT_CHANGES_DONE_HINT ||
            event == G_FILE_MONITOR_EVENT_CREATED || event == G_FILE_MONITOR_EVENT_RENAMED ||
            event == G_FILE_MONITOR_EVENT_MOVED_IN || event == G_FILE_MONITOR_EVENT_DELETED)
                reload (user_data);
}

static gboolean
on_hup (gpointer user_data)
{
        reload (user_data);
        return G_SOURCE_CONTINUE;
}

static gboolean
on_term (gpointer user_data)
{
        g_main_loop_quit (user_data);
        return G_SOURCE_CONTINUE;
}

static GSocketAddress *
listen_address (GError **error)
{
        g_autoptr (GSocketConnectable) c = NULL;
        g_autoptr (GSocketAddressEnumerator) e = NULL;
        g_autoptr (GSocketAddress) sa = NULL;

        if (opt_unix)
                return g_unix_socket_address_new (opt_unix);
        c = g_network_address_parse (opt_tcp, 0, error);
        if (!c)
                return NULL;
        e = g_socket_connectable_enumerate (c);
        sa = g_socket_address_enumerator_next (e, NULL, error);
        if (!sa)
                return NULL;
        /* The proxy's own port is for the session only: never reachable from the network. */
        if (!G_IS_INET_SOCKET_ADDRESS (sa) ||
            !g_inet_address_get_is_loopback (
                    g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (sa)))) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("--tcp must be a loopback address, got “%s”"), opt_tcp);
                return NULL;
        }
        return g_steal_pointer (&sa);
}

static gboolean
serve (CorralEgressProxy *proxy, GMainLoop *loop, GError **error)
{
        g_auto (GStrv) env = NULL;
        g_autofree char *pem = NULL;

        if (!setup_credentials (proxy, &env, &pem, error))
                return FALSE;
        if (opt_stream_fd >= 0 && !corral_egress_proxy_serve_stream (proxy, opt_stream_fd, error))
                return FALSE;
        if (opt_connect &&
            (!setup_guest_session (proxy, env, pem, error) ||
             !corral_egress_proxy_connect_guest (proxy, opt_connect, on_guest_gone, loop, error)))
                return FALSE;
        return TRUE;
}

static gboolean
listen_if_asked (CorralEgressProxy *proxy, GError **error)
{
        g_autoptr (GSocketAddress) addr = NULL, bound = NULL;

        if (!opt_unix && !opt_tcp)
                return TRUE;
        if (!(addr = listen_address (error)) ||
            !corral_egress_proxy_listen (proxy, addr, &bound, error))
                return FALSE;
        if (G_IS_INET_SOCKET_ADDRESS (bound))
                g_print ("listening on port %u\n",
                         g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound)));
        else
                g_print ("listening\n");
        fflush (stdout);
        return TRUE;
}

int
main (int argc, char **argv)
{
        g_autoptr (GOptionContext) context = g_option_context_new (NULL);
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralEgressPolicy) none = corral_egress_policy_new (CORRAL_EGRESS_PRESET_NONE);
        g_autoptr (CorralEgressProxy) proxy = NULL;
        g_autoptr (GFile) file = NULL;
        g_autoptr (GFileMonitor) monitor = NULL;
        g_autoptr (GMainLoop) loop = g_main_loop_new (NULL, FALSE);

        setlocale (LC_ALL, "");
        g_option_context_add_main_entries (context, entries, NULL);
        if (!g_option_context_parse (context, &argc, &argv, &error) || !opt_policy ||
            (opt_unix && opt_tcp) || (!opt_unix && !opt_tcp && !opt_connect) ||
            (opt_stream_fd >= 0 && opt_connect)) {
                g_printerr ("corral-egressd: %s\n",
                            error ? error->message
                                  : _ ("need --policy FILE and --unix, --tcp or --connect "
                                       "(--stream-fd and --connect exclude each other)"));
                return 2;
        }
        if (opt_lock && !take_lock ())
                return 0; /* another daemon serves this VM */
        /* before the proxy starts its threads */
        if (opt_secrets || opt_all_secrets)
                choose_session_bus ();
        proxy = corral_egress_proxy_new (none);
        if (opt_alert)
                g_unlink (opt_alert); /* a new session */
        g_signal_connect (proxy, "session-ended", G_CALLBACK (on_session_ended), NULL);
        file = g_file_new_for_path (opt_policy);
        monitor = g_file_monitor_file (file, G_FILE_MONITOR_WATCH_MOVES, NULL, &error);
        /* The audit log first: the policies say whether it is also copied to the journal. */
        if (!monitor ||
            (opt_audit && !corral_egress_proxy_set_audit_path (proxy, opt_audit, &error))) {
                g_printerr ("corral-egressd: %s\n", error->message);
                return 1;
        }
        reload (proxy);
        if (!serve (proxy, loop, &error) || !listen_if_asked (proxy, &error)) {
                g_printerr ("corral-egressd: %s\n", error->message);
                return 1;
        }
        g_signal_connect (monitor, "changed", G_CALLBACK (on_changed), proxy);
        g_unix_signal_add (SIGHUP, on_hup, proxy);
        g_unix_signal_add (SIGTERM, on_term, loop);
        g_unix_signal_add (SIGINT, on_term, loop);
        g_main_loop_run (loop);
        corral_egress_proxy_shutdown (proxy);
        return 0;
}
