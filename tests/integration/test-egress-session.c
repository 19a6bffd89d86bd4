/* test-egress-session.c — a VM's network without the VM: corral-egressd --connect on a unix
 * socket the test listens on (as QEMU does for the port), corral-netproxy on the connection
 * the test accepted (as the guest's port), and the session between them (NET-PROTOCOL.md
 * "Sessions"): token, placeholders, session CA, the files the guest gets, restarts, the lock.
 * The test re-executes itself in a private keyring session (egress-test.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-egress-vm.h"
#include "corral-secret-store.h"
#include "egress-test.h"
#include "netmux.h"

#include <fcntl.h>
#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#define CANARY "corral-canary-51e0c2d7aa"
#define BASE_BUNDLE "# the image's own CAs\n-----BEGIN CERTIFICATE-----\nBASE\n"

typedef struct {
        char *dir;
        char *sock_path;
        GSocket *listener;
        GSubprocess *egressd;
        GSubprocess *netproxy;
        guint16 proxy_port;
        EgressTestServer *origin;
} Fixture;

static char *
path (Fixture *fx, const char *name)
{
        return g_build_filename (fx->dir, name, NULL);
}

static void
fixture_setup (Fixture *fx, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GSocketAddress) addr = NULL;
        g_autofree char *policy = NULL, *rules = NULL, *bundle = NULL;

        fx->dir = g_dir_make_tmp ("corral-egress-session-XXXXXX", &error);
        g_assert_no_error (error);
        fx->sock_path = path (fx, "net.sock");
        fx->listener = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM,
                                     G_SOCKET_PROTOCOL_DEFAULT, &error);
        g_assert_no_error (error);
        addr = g_unix_socket_address_new (fx->sock_path);
        g_assert_true (g_socket_bind (fx->listener, addr, FALSE, &error));
        g_assert_true (g_socket_listen (fx->listener, &error));
        fx->origin = egress_test_server_new (NULL, FALSE);
        policy = path (fx, "egress-policy.json");
        rules = g_strdup_printf ("{\"preset\": \"allowlist\", \"allow\": [\"127.0.0.1:%u\"]}",
                                 egress_test_server_get_port (fx->origin));
        g_assert_true (g_file_set_contents (policy, rules, -1, NULL));
        bundle = path (fx, "bundle.crt");
        g_assert_true (g_file_set_contents (bundle, BASE_BUNDLE, -1, NULL));
}

static void
stop (GSubprocess **p)
{
        if (!*p)
                return;
        g_subprocess_send_signal (*p, SIGTERM);
        g_subprocess_wait (*p, NULL, NULL);
        g_clear_object (p);
}

static void
fixture_teardown (Fixture *fx, gconstpointer data)
{
        g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", fx->dir);

        stop (&fx->netproxy);
        stop (&fx->egressd);
        g_clear_object (&fx->listener);
        g_clear_pointer (&fx->origin, egress_test_server_free);
        g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL);
        g_free (fx->sock_path);
        g_free (fx->dir);
}

static GSubprocess *
spawn_egressd (Fixture *fx, gboolean all_secrets)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *lock = path (fx, "egressd.lock");
        g_autofree char *policy = path (fx, "egress-policy.json");
        g_autofree char *audit = path (fx, "egress.jsonl");
        GSubprocess *p =
                g_subprocess_new (G_SUBPROCESS_FLAGS_NONE, &error, corral_egress_vm_daemon_path (),
                                  "--connect", fx->sock_path, "--lock", lock, "--policy", policy,
                                  "--audit", audit, all_secrets ? "--all-secrets" : NULL, NULL);

        g_assert_no_error (error);
        return p;
}

/* What QEMU does when the host side connects: the test is the "port". */
static int
accept_host (Fixture *fx)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GSocket) conn = NULL;
        int fd;

        g_socket_set_timeout (fx->listener, 10);
        conn = g_socket_accept (fx->listener, NULL, &error);
        g_assert_no_error (error);
        fd = dup (g_socket_get_fd (conn));
        g_assert_cmpint (fd, >=, 0);
        return fd;
}

/* Starts the guest proxy on fd (taken); returns its exit status if it exits before listening,
 * else -1 with fx->netproxy running. */
static int
spawn_netproxy (Fixture *fx, int fd)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GSubprocessLauncher) l =
                g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE);
        g_autoptr (GDataInputStream) in = NULL;
        g_autofree char *line = NULL, *bundle = path (fx, "bundle.crt");
        g_autoptr (GSubprocess) p = NULL;

        g_subprocess_launcher_take_fd (l, fd, 3);
        g_subprocess_launcher_unsetenv (l, "CORRAL_PROXY_TOKEN");
        p = g_subprocess_launcher_spawn (l, &error, g_getenv ("CORRAL_NETPROXY_PATH"), "--fd", "3",
                                         "--listen", "0", "--state-dir", fx->dir, "--trust-bundle",
                                         bundle, NULL);
        g_assert_no_error (error);
        in = g_data_input_stream_new (g_subprocess_get_stdout_pipe (p));
        line = g_data_input_stream_read_line (in, NULL, NULL, NULL);
        if (!line) {
                g_subprocess_wait (p, NULL, NULL);
                /* a crash is never an answer */
                g_assert_true (g_subprocess_get_if_exited (p));
                return g_subprocess_get_exit_status (p);
        }
        g_assert_true (g_str_has_prefix (line, "listening on port "));
        fx->proxy_port = (guint16) atoi (line + strlen ("listening on port "));
        fx->netproxy = g_steal_pointer (&p);
        return -1;
}

/* KEY's value in the guest's net.env (transfer full, nullable). */
static char *
net_env (Fixture *fx, const char *key)
{
        g_autofree char *file = path (fx, "net.env"), *data = NULL;
        g_auto (GStrv) lines = NULL;

        if (!g_file_get_contents (file, &data, NULL, NULL))
                return NULL;
        lines = g_strsplit (data, "\n", -1);
        for (char **l = lines; *l; l++)
                if (g_str_has_prefix (*l, key) && (*l)[strlen (key)] == '=')
                        return g_strdup (*l + strlen (key) + 1);
        return NULL;
}

static char *
token_of (Fixture *fx)
{
        g_autofree char *url = net_env (fx, "HTTP_PROXY");
        const char *colon, *at;

        g_assert_nonnull (url);
        g_assert_true (g_str_has_prefix (url, "http://corral:"));
        colon = url + strlen ("http://corral:");
        at = strchr (colon, '@');
        g_assert_nonnull (at);
        return g_strndup (colon, (gsize) (at - colon));
}

static guint
get_through_proxy (Fixture *fx, const char *token)
{
        g_autofree char *cred = g_strdup_printf ("corral:%s", token ? token : "wrong-token-1234");
        g_autofree char *b64 = g_base64_encode ((const guchar *) cred, strlen (cred));
        guint16 port = egress_test_server_get_port (fx->origin);
        g_autofree char *req = g_strdup_printf (
                "GET http://127.0.0.1:%u/blob?n=10 HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
                "Proxy-Authorization: Basic %s\r\n\r\n",
                port, port, b64);
        g_autoptr (GString) resp = egress_test_request (fx->proxy_port, req, -1);

        return egress_test_status (resp->str);
}

static void
start_session (Fixture *fx, gboolean all_secrets)
{
        fx->egressd = spawn_egressd (fx, all_secrets);
        g_assert_cmpint (spawn_netproxy (fx, accept_host (fx)), ==, -1);
}

/* The guest asks, the host answers: a fresh token in the proxy URLs, requests with it pass. */
static void
test_handshake (Fixture *fx, gconstpointer data)
{
        g_autofree char *token = NULL, *no_proxy = NULL, *bundle = path (fx, "bundle.crt");
        g_autofree char *contents = NULL;

        start_session (fx, FALSE);
        token = token_of (fx);
        g_assert_cmpuint (strlen (token), ==, 48);
        no_proxy = net_env (fx, "NO_PROXY");
        g_assert_cmpstr (no_proxy, ==, "localhost,127.0.0.1,::1");
        g_assert_cmpuint (get_through_proxy (fx, token), ==, 200);
        g_assert_cmpuint (get_through_proxy (fx, NULL), ==, 407);
        /* no credentials: no CA, the trust store is left alone */
        g_assert_true (g_file_get_contents (bundle, &contents, NULL, NULL));
        g_assert_cmpstr (contents, ==, BASE_BUNDLE);
        g_assert_true (corral_egress_vm_is_running (fx->dir));
}

/* A new host (the daemon restarted) means a new session: the guest proxy exits when the old
 * one goes, and the next one gets a different token. */
static void
test_new_session (Fixture *fx, gconstpointer data)
{
        g_autofree char *first = NULL, *second = NULL;

        start_session (fx, FALSE);
        first = token_of (fx);
        stop (&fx->egressd);
        g_assert_true (g_subprocess_wait (fx->netproxy, NULL, NULL));
        g_assert_true (g_subprocess_get_if_exited (fx->netproxy));
        g_assert_cmpint (g_subprocess_get_exit_status (fx->netproxy), ==, 0);
        g_clear_object (&fx->netproxy);
        start_session (fx, FALSE);
        second = token_of (fx);
        g_assert_cmpstr (first, !=, second);
        g_assert_cmpuint (get_through_proxy (fx, first), ==, 407);
        g_assert_cmpuint (get_through_proxy (fx, second), ==, 200);
}

/* One daemon per VM; it ends when the VM's socket is gone. */
static void
test_lock_and_exit (Fixture *fx, gconstpointer data)
{
        g_autoptr (GSubprocess) second = NULL;
        int fd;

        fx->egressd = spawn_egressd (fx, FALSE);
        fd = accept_host (fx);
        second = spawn_egressd (fx, FALSE);
        g_assert_true (g_subprocess_wait (second, NULL, NULL));
        g_assert_cmpint (g_subprocess_get_exit_status (second), ==, 0);
        g_assert_true (corral_egress_vm_is_running (fx->dir));
        /* QEMU went away: the port's socket is gone, the connection closes */
        g_clear_object (&fx->listener);
        g_assert_cmpint (g_unlink (fx->sock_path), ==, 0);
        close (fd);
        g_assert_true (g_subprocess_wait (fx->egressd, NULL, NULL));
        g_assert_cmpint (g_subprocess_get_exit_status (fx->egressd), ==, 0);
        g_clear_object (&fx->egressd);
        g_assert_false (corral_egress_vm_is_running (fx->dir));
}

/* The test plays the host with a session of its choosing, on a thread. */
typedef struct {
        const char *session; /* the egress.hello result */
        gboolean send_reset; /* announce a new session right after answering */
        int fd;
        gint answered;
        gint listening; /* set once the guest proxy serves */
        gint stop;
        GThread *thread;
} FakeHost;

static cJSON *
fake_hello (void *user, NetMux *m, const char *method, const cJSON *params)
{
        FakeHost *h = user;

        if (!g_str_equal (method, "egress.hello"))
                return NULL;
        g_atomic_int_set (&h->answered, 1);
        return cJSON_Parse (h->session);
}

static gpointer
fake_host_main (gpointer data)
{
        FakeHost *h = data;
        NetMux *m = NULL;
        gboolean reset_sent = FALSE;

        g_assert_cmpint (netmux_new (h->fd, NULL, NULL, &m), ==, 0);
        netmux_set_handlers (m, fake_hello, NULL, h);
        while (!g_atomic_int_get (&h->stop) && netmux_poll (m, NULL, 0, 50) == 0) {
                if (h->send_reset && g_atomic_int_get (&h->listening) && !reset_sent) {
                        g_assert_cmpint (netmux_event (m, "egress.reset", NULL), ==, 0);
                        reset_sent = TRUE;
                }
        }
        netmux_free (m);
        return NULL;
}

/* Starts the guest proxy against a fake host; as spawn_netproxy. */
static int
spawn_against (Fixture *fx, FakeHost *h)
{
        int sv[2];

        g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        h->fd = sv[0];
        h->thread = g_thread_new ("fake-host", fake_host_main, h);
        return spawn_netproxy (fx, sv[1]);
}

static void
fake_host_stop (FakeHost *h)
{
        g_atomic_int_set (&h->stop, 1);
        g_thread_join (h->thread);
        close (h->fd);
}

#define PH "corral-ph-0123456789abcdef0123456789abcdef"
#define TOKEN "0123456789abcdef0123456789abcdef"
#define CA1 "-----BEGIN CERTIFICATE-----\nSESSION-ONE\n-----END CERTIFICATE-----\n"

/* The guest checks what the host sends: nothing it refuses is written anywhere. */
static void
test_bad_sessions (Fixture *fx, gconstpointer data)
{
        const char *bad[] = {
                "{\"version\": 1, \"token\": \"short\", \"env\": {}}",
                "{\"version\": 1, \"token\": \"" TOKEN ":x\", \"env\": {}}",
                "{\"version\": 1, \"token\": \"" TOKEN "@evil\", \"env\": {}}",
                "{\"version\": 2, \"token\": \"" TOKEN "\", \"env\": {}}",
                "{\"version\": 1, \"token\": \"" TOKEN "\"}",
                "{\"version\": 1, \"token\": \"" TOKEN "\", \"env\": {\"PATH\": \"" PH "\"}}",
                "{\"version\": 1, \"token\": \"" TOKEN "\", \"env\": {\"LD_PRELOAD\": \"" PH "\"}}",
                "{\"version\": 1, \"token\": \"" TOKEN "\", \"env\": {\"HTTPS_PROXY\": \"" PH
                "\"}}",
                "{\"version\": 1, \"token\": \"" TOKEN "\", \"env\": {\"A\": \"real-secret\"}}",
                "{\"version\": 1, \"token\": \"" TOKEN "\", \"env\": {\"A B\": \"" PH "\"}}",
                "{\"version\": 1, \"token\": \"" TOKEN "\", \"env\": {}, \"ca\": \"not pem\"}",
                "{\"version\": 1, \"token\": \"" TOKEN "\", \"env\": {}, "
                "\"ca\": \"-----BEGIN CERTIFICATE-----\\u0001\"}",
        };
        g_autofree char *env = path (fx, "net.env");

        for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
                FakeHost h = { .session = bad[i] };

                g_test_message ("session %s", bad[i]);
                g_assert_cmpint (spawn_against (fx, &h), ==, 1);
                fake_host_stop (&h);
                g_assert_false (g_file_test (env, G_FILE_TEST_EXISTS));
        }
}

/* The session CA goes into the trust bundle after a marker, replacing an earlier session's;
 * Node.js gets it by file. A session without one leaves only the image's own CAs. */
static void
test_trust_bundle (Fixture *fx, gconstpointer data)
{
        FakeHost with = { .session = "{\"version\": 1, \"token\": \"" TOKEN "\", \"env\": "
                                     "{\"API_TOKEN\": \"" PH "\"}, \"ca\": \"" CA1 "\"}" };
        FakeHost without = { .session = "{\"version\": 1, \"token\": \"" TOKEN "\", "
                                        "\"env\": {}}" };
        g_autofree char *bundle = path (fx, "bundle.crt"), *ca = path (fx, "session-ca.pem");
        g_autofree char *contents = NULL, *node = NULL, *ph = NULL, *ca_contents = NULL;

        g_assert_cmpint (spawn_against (fx, &with), ==, -1);
        g_assert_true (g_file_get_contents (bundle, &contents, NULL, NULL));
        g_assert_cmpstr (contents, ==,
                         BASE_BUNDLE "# corral session CA (replaced at every session)\n" CA1);
        node = net_env (fx, "NODE_EXTRA_CA_CERTS");
        g_assert_cmpstr (node, ==, ca);
        g_assert_true (g_file_get_contents (ca, &ca_contents, NULL, NULL));
        g_assert_cmpstr (ca_contents, ==, CA1);
        ph = net_env (fx, "API_TOKEN");
        g_assert_cmpstr (ph, ==, PH);
        stop (&fx->netproxy);
        fake_host_stop (&with);
        /* again with the same CA: still one block */
        with.stop = 0;
        with.answered = 0;
        g_assert_cmpint (spawn_against (fx, &with), ==, -1);
        g_clear_pointer (&contents, g_free);
        g_assert_true (g_file_get_contents (bundle, &contents, NULL, NULL));
        g_assert_cmpstr (contents, ==,
                         BASE_BUNDLE "# corral session CA (replaced at every session)\n" CA1);
        stop (&fx->netproxy);
        fake_host_stop (&with);
        g_assert_cmpint (spawn_against (fx, &without), ==, -1);
        g_clear_pointer (&contents, g_free);
        g_assert_true (g_file_get_contents (bundle, &contents, NULL, NULL));
        g_assert_cmpstr (contents, ==, BASE_BUNDLE);
        g_clear_pointer (&node, g_free);
        node = net_env (fx, "NODE_EXTRA_CA_CERTS");
        g_assert_null (node);
        stop (&fx->netproxy);
        fake_host_stop (&without);
}

/* net.env carries the proxy token: only root (the guest agent) reads it; the session CA is
 * public. */
static void
test_net_env_private (Fixture *fx, gconstpointer data)
{
        FakeHost h = { .session = "{\"version\": 1, \"token\": \"" TOKEN "\", \"env\": "
                                  "{\"API_TOKEN\": \"" PH "\"}, \"ca\": \"" CA1 "\"}" };
        g_autofree char *env = path (fx, "net.env"), *ca = path (fx, "session-ca.pem");
        struct stat st;

        g_assert_cmpint (spawn_against (fx, &h), ==, -1);
        g_assert_cmpint (g_stat (env, &st), ==, 0);
        g_assert_cmpint (st.st_mode & 07777, ==, 0600);
        g_assert_cmpint (g_stat (ca, &st), ==, 0);
        g_assert_cmpint (st.st_mode & 07777, ==, 0644);
        stop (&fx->netproxy);
        fake_host_stop (&h);
}

/* egress.reset after the session: the guest proxy exits (its init starts it again). Before
 * it (a host announcing itself as the guest asks) it means nothing. */
static void
test_reset (Fixture *fx, gconstpointer data)
{
        FakeHost h = { .session = "{\"version\": 1, \"token\": \"" TOKEN "\", \"env\": {}}",
                       .send_reset = TRUE };

        g_assert_cmpint (spawn_against (fx, &h), ==, -1);
        g_atomic_int_set (&h.listening, 1);
        g_assert_true (g_subprocess_wait (fx->netproxy, NULL, NULL));
        g_assert_cmpint (g_subprocess_get_exit_status (fx->netproxy), ==, 0);
        g_clear_object (&fx->netproxy);
        fake_host_stop (&h);
}

/* Keychain secrets reach the guest as placeholders and a session CA; the value never does. */
static void
test_credentials (Fixture *fx, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        const char *hosts[] = { "api.example.com", NULL };
        g_autoptr (CorralSecretInfo) info =
                corral_secret_info_new ("API_TOKEN", hosts, "authorization", "Bearer {}", &error);
        g_autofree char *ph = NULL, *bundle = path (fx, "bundle.crt"), *contents = NULL;
        g_autofree char *cmd = g_strdup_printf ("grep -rl " CANARY " '%s'", fx->dir);
        g_autofree char *out = NULL;

        const char *api_hosts[] = { "api.anthropic.com", NULL };
        g_autoptr (CorralSecretInfo) provider =
                corral_secret_info_new ("anthropic", api_hosts, "x-api-key", "{}", &error);
        g_autofree char *provider_ph = NULL;

        g_assert_no_error (error);
        g_assert_true (corral_secret_store_set_sync (info, CANARY, NULL, &error));
        g_assert_no_error (error);
        /* the assistant loop's provider key is for the host only: never in a VM's session */
        g_assert_true (corral_secret_store_set_sync (provider, CANARY "-provider", NULL, &error));
        g_assert_no_error (error);
        start_session (fx, TRUE);
        provider_ph = net_env (fx, "anthropic");
        g_assert_null (provider_ph);
        ph = net_env (fx, "API_TOKEN");
        g_assert_nonnull (ph);
        g_assert_true (g_str_has_prefix (ph, "corral-ph-"));
        g_assert_cmpuint (strlen (ph), ==, 42);
        g_assert_true (g_file_get_contents (bundle, &contents, NULL, NULL));
        g_assert_true (g_str_has_prefix (contents, BASE_BUNDLE "# corral session CA"));
        g_assert_nonnull (strstr (contents + strlen (BASE_BUNDLE), "BEGIN CERTIFICATE"));
        g_assert_true (g_spawn_command_line_sync (cmd, &out, NULL, NULL, NULL));
        g_assert_cmpstr (out, ==, "");
        g_assert_true (corral_secret_store_remove_sync ("API_TOKEN", NULL, &error));
        g_assert_no_error (error);
        g_assert_true (corral_secret_store_remove_sync ("anthropic", NULL, &error));
        g_assert_no_error (error);
}

/* A guest that breaks its port's stream over and over is reconnected every time; the daemon's
 * log says so for the first errors only (SECURITY-TESTS.md item 39). */
static void
test_log_bounded (Fixture *fx, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
        g_autofree char *lock = path (fx, "egressd.lock");
        g_autofree char *policy = path (fx, "egress-policy.json");
        g_autofree char *audit = path (fx, "egress.jsonl");
        g_autofree char *log = path (fx, "egressd.log");
        g_autofree char *text = NULL;
        guint errors = 0;

        g_subprocess_launcher_set_stderr_file_path (l, log);
        /* As it runs for a VM: a warning is a line in its log, not the end of the daemon. */
        g_subprocess_launcher_unsetenv (l, "G_DEBUG");
        fx->egressd = g_subprocess_launcher_spawn (l, &error, corral_egress_vm_daemon_path (),
                                                   "--connect", fx->sock_path, "--lock", lock,
                                                   "--policy", policy, "--audit", audit, NULL);
        g_assert_no_error (error);
        for (guint i = 0; i < 30; i++) {
                int fd = accept_host (fx);
                char buf[4096];

                /* The accepted socket came non-blocking; wait for the daemon's side. */
                g_assert_cmpint (fcntl (fd, F_SETFL, 0), ==, 0);
                /* Not a frame: the daemon drops the stream and comes back. */
                g_assert_cmpint (write (fd, "garbage, not a frame header\n", 28), ==, 28);
                while (read (fd, buf, sizeof buf) > 0)
                        ;
                close (fd);
        }
        g_assert_true (g_file_get_contents (log, &text, NULL, NULL));
        for (const char *p = strstr (text, "egress stream:"); p;
             p = strstr (p + 1, "egress stream:"))
                errors++;
        g_test_message ("%s", text);
        g_assert_cmpuint (errors, ==, 20);
        g_assert_nonnull (strstr (text, "further stream errors are not logged"));
}

int
main (int argc, char **argv)
{
        if (!egress_test_keyring_dir ())
                return egress_test_keyring_reexec (argv);
        g_test_init (&argc, &argv, NULL);
#define ADD(p, fn) g_test_add (p, Fixture, NULL, fixture_setup, fn, fixture_teardown)
        ADD ("/egress-session/handshake", test_handshake);
        ADD ("/egress-session/new-session", test_new_session);
        ADD ("/egress-session/lock-and-exit", test_lock_and_exit);
        ADD ("/egress-session/bad-sessions", test_bad_sessions);
        ADD ("/egress-session/trust-bundle", test_trust_bundle);
        ADD ("/egress-session/net-env-private", test_net_env_private);
        ADD ("/egress-session/reset", test_reset);
        ADD ("/egress-session/credentials", test_credentials);
        ADD ("/egress-session/log-bounded", test_log_bounded);
#undef ADD
        return g_test_run ();
}
