/* test-egress-guest.c — the in-VM defensive proxy (SECURITY-TESTS item 21) as a local process:
 * corral-netproxy on loopback, its channel stream a socketpair to the host egress proxy running
 * in this process, curl as the guest's programs. The host keeps deciding: the guest proxy is
 * defence in depth.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-proxy.h"
#include "egress-test.h"

#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>

#define TOKEN "0123456789abcdef0123456789abcdef"
#define PH "corral-ph-fedcba9876543210fedcba9876543210"

typedef struct {
        CorralEgressProxy *proxy;
        GSubprocess *guest;
        EgressTestServer *srv;
        guint16 port; /* the guest proxy's */
        char *audit;
        char *dir;
} Fx;

static void
fx_setup (Fx *fx, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralEgressPolicy) p =
                corral_egress_policy_new (CORRAL_EGRESS_PRESET_ALLOWLIST);
        g_autoptr (GSubprocessLauncher) l =
                g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE);
        g_autoptr (GDataInputStream) in = NULL;
        g_autofree char *exe = g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "keychain-bridge",
                                                 "guest", "corral-netproxy", NULL);
        g_autofree char *rule = NULL, *line = NULL;
        int sv[2];

        fx->srv = egress_test_server_new (NULL, FALSE);
        rule = g_strdup_printf ("127.0.0.1:%u", egress_test_server_get_port (fx->srv));
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, rule, NULL));
        fx->dir = g_dir_make_tmp ("corral-guest-XXXXXX", NULL);
        fx->audit = g_build_filename (fx->dir, "audit.jsonl", NULL);
        fx->proxy = corral_egress_proxy_new (p);
        g_assert_true (corral_egress_proxy_set_audit_path (fx->proxy, fx->audit, NULL));
        g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        g_assert_true (corral_egress_proxy_serve_stream (fx->proxy, sv[0], &error));
        g_subprocess_launcher_take_fd (l, sv[1], 3);
        g_subprocess_launcher_setenv (l, "CORRAL_PROXY_TOKEN", TOKEN, TRUE);
        g_subprocess_launcher_setenv (l, "CORRAL_PLACEHOLDERS", PH, TRUE);
        fx->guest =
                g_subprocess_launcher_spawn (l, &error, exe, "--fd", "3", "--listen", "0", NULL);
        g_assert_no_error (error);
        in = g_data_input_stream_new (g_subprocess_get_stdout_pipe (fx->guest));
        line = g_data_input_stream_read_line (in, NULL, NULL, &error);
        g_assert_nonnull (line);
        g_assert_true (g_str_has_prefix (line, "listening on port "));
        fx->port = (guint16) g_ascii_strtoull (line + 18, NULL, 10);
}

static void
fx_teardown (Fx *fx, gconstpointer data)
{
        g_subprocess_send_signal (fx->guest, SIGKILL);
        g_subprocess_wait (fx->guest, NULL, NULL);
        g_clear_object (&fx->guest);
        corral_egress_proxy_shutdown (fx->proxy);
        g_clear_object (&fx->proxy);
        egress_test_server_free (fx->srv);
        g_unlink (fx->audit);
        g_rmdir (fx->dir);
        g_free (fx->audit);
        g_free (fx->dir);
}

static char *
curl2 (Fx *fx,
       const char *user,
       const char *url,
       const char *header,
       const char *extra,
       const char *extra2)
{
        g_autofree char *proxy = user ? g_strdup_printf ("http://%s@127.0.0.1:%u", user, fx->port)
                                      : g_strdup_printf ("http://127.0.0.1:%u", fx->port);
        g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (
                G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_MERGE);
        g_autoptr (GPtrArray) argv = g_ptr_array_new ();
        g_autoptr (GSubprocess) p = NULL;
        g_autoptr (GError) error = NULL;
        char *out = NULL;

        g_subprocess_launcher_unsetenv (l, "no_proxy");
        g_subprocess_launcher_unsetenv (l, "NO_PROXY");
        g_ptr_array_add (argv, (gpointer) "curl");
        g_ptr_array_add (argv, (gpointer) "-si");
        g_ptr_array_add (argv, (gpointer) "--max-time");
        g_ptr_array_add (argv, (gpointer) "60");
        g_ptr_array_add (argv, (gpointer) "-x");
        g_ptr_array_add (argv, proxy);
        if (header) {
                g_ptr_array_add (argv, (gpointer) "-H");
                g_ptr_array_add (argv, (gpointer) header);
        }
        if (extra)
                g_ptr_array_add (argv, (gpointer) extra);
        if (extra2)
                g_ptr_array_add (argv, (gpointer) extra2);
        g_ptr_array_add (argv, (gpointer) url);
        g_ptr_array_add (argv, NULL);
        p = g_subprocess_launcher_spawnv (l, (const char *const *) argv->pdata, &error);
        g_assert_no_error (error);
        g_subprocess_communicate_utf8 (p, NULL, NULL, &out, NULL, &error);
        g_assert_no_error (error);
        return out;
}

static char *
curl (Fx *fx, const char *user, const char *url, const char *header, const char *extra)
{
        return curl2 (fx, user, url, header, extra, NULL);
}

static char *
url (Fx *fx, const char *path)
{
        return g_strdup_printf ("http://127.0.0.1:%u%s", egress_test_server_get_port (fx->srv),
                                path);
}

static void
assert_blocked (const char *out, const char *status, const char *rule)
{
        g_autofree char *want = g_strdup_printf ("X-Corral-Blocked: %s\r\n", rule);

        if (!g_str_has_prefix (out, status) || !strstr (out, want))
                g_error ("expected %s %s, got: %s", status, rule, out);
}

/* Item 21: no token, a wrong token: refused in the guest, nothing reaches the host. */
static void
test_token_required (Fx *fx, gconstpointer data)
{
        g_autofree char *u = url (fx, "/echo");
        g_autofree char *o1 = curl (fx, NULL, u, NULL, NULL);
        g_autofree char *o2 = curl (fx, "corral:wrong-token-wrong-token-00", u, NULL, NULL);
        g_autofree char *o3 = curl (fx, "corral:" TOKEN "x", u, NULL, NULL);
        g_autofree char *o4 = curl (fx, NULL, u, "Proxy-Authorization: Bearer " TOKEN, NULL);
        g_autofree char *audit = NULL;

        assert_blocked (o1, "HTTP/1.1 407", "proxy-token");
        assert_blocked (o2, "HTTP/1.1 407", "proxy-token");
        assert_blocked (o3, "HTTP/1.1 407", "proxy-token");
        assert_blocked (o4, "HTTP/1.1 407", "proxy-token");
        g_assert_cmpuint (egress_test_server_get_connections (fx->srv), ==, 0);
        g_file_get_contents (fx->audit, &audit, NULL, NULL);
        g_assert_true (audit == NULL || *audit == '\0');
}

static void
test_forwarded (Fx *fx, gconstpointer data)
{
        g_autofree char *u = url (fx, "/echo");
        g_autofree char *out = curl (fx, "corral:" TOKEN, u, "Authorization: Bearer " PH, NULL);
        g_autofree char *heads = egress_test_server_dup_heads (fx->srv);

        g_assert_true (g_str_has_prefix (out, "HTTP/1.1 200"));
        /* the token stays in the guest; the placeholder goes on (the host decides about it) */
        g_assert_null (strstr (heads, "Proxy-Authorization"));
        g_assert_null (strstr (heads, TOKEN));
        g_assert_nonnull (strstr (heads, "Authorization: Bearer " PH));
}

/* Credentials that are not the session's placeholders never leave the guest proxy. */
static void
test_real_credentials_refused (Fx *fx, gconstpointer data)
{
        g_autofree char *u = url (fx, "/echo");
        g_autofree char *o1 =
                curl (fx, "corral:" TOKEN, u, "Authorization: Bearer ghp_realtoken", NULL);
        g_autofree char *o2 =
                curl (fx, "corral:" TOKEN, u,
                      "Authorization: Bearer corral-ph-00000000000000000000000000000000", NULL);
        g_autofree char *o3 = curl (fx, "corral:" TOKEN, u,
                                    "X-Api-Key: corral-ph-11111111111111111111111111111111", NULL);
        g_autofree char *o4 = curl (fx, "corral:" TOKEN, u, NULL, "-ume:hunter2");

        assert_blocked (o1, "HTTP/1.1 403", "not-a-placeholder");
        assert_blocked (o2, "HTTP/1.1 403", "not-a-placeholder");
        assert_blocked (o3, "HTTP/1.1 403", "not-a-placeholder");
        assert_blocked (o4, "HTTP/1.1 403", "not-a-placeholder");
        g_assert_cmpuint (egress_test_server_get_connections (fx->srv), ==, 0);
}

/* The host still decides: a host the policy does not allow is refused by the host proxy. */
static void
test_host_decides (Fx *fx, gconstpointer data)
{
        g_autofree char *out = curl (fx, "corral:" TOKEN, "http://pypi.org/simple/", NULL, NULL);

        assert_blocked (out, "HTTP/1.1 403", "default-deny");
        g_assert_nonnull (strstr (out, "pypi.org is not in the allowed hosts"));
}

/* The end of a response reaches the client as EOF (a half-close passed along the channel), so
 * a client that reads until EOF finishes. */
static void
test_eof_passed_on (Fx *fx, gconstpointer data)
{
        g_autofree char *b64 =
                g_base64_encode ((const guchar *) "corral:" TOKEN, strlen ("corral:" TOKEN));
        g_autofree char *req = g_strdup_printf ("GET http://127.0.0.1:%u/ HTTP/1.1\r\n"
                                                "Host: 127.0.0.1:%u\r\nProxy-Authorization: "
                                                "Basic %s\r\n\r\n",
                                                egress_test_server_get_port (fx->srv),
                                                egress_test_server_get_port (fx->srv), b64);
        g_autoptr (GSocket) s = egress_test_connect (fx->port);
        g_autoptr (GError) error = NULL;
        g_autoptr (GString) got = g_string_new (NULL);
        char buf[4096];
        gssize n;

        g_socket_send (s, req, strlen (req), NULL, &error);
        g_assert_no_error (error);
        while ((n = g_socket_receive (s, buf, sizeof buf, NULL, &error)) > 0)
                g_string_append_len (got, buf, n);
        g_assert_no_error (error); /* not the 30 s timeout */
        g_assert_cmpint (n, ==, 0);
        g_assert_true (g_str_has_prefix (got->str, "HTTP/1.1 204"));
}

/* Item 22 through the whole guest path: bytes arrive identical, both ways. */
static void
test_large_transfer (Fx *fx, gconstpointer data)
{
        const guint64 size = 32 * 1024 * 1024;
        g_autofree char *u = g_strdup_printf ("http://127.0.0.1:%u/blob?n=%" G_GUINT64_FORMAT,
                                              egress_test_server_get_port (fx->srv), size);
        g_autofree char *proxy = g_strdup_printf ("http://corral:%s@127.0.0.1:%u", TOKEN, fx->port);
        g_autofree char *out = NULL;
        g_autofree guint8 *buf = g_malloc (size);
        g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
        g_autoptr (GError) error = NULL;
        g_autoptr (GSubprocess) p = NULL;

        egress_test_pattern (buf, size, 0);
        g_checksum_update (sum, buf, size);
        p = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error, "sh", "-c",
                              "curl -s --max-time 120 -x \"$0\" \"$1\" | sha256sum", proxy, u,
                              NULL);
        g_assert_no_error (error);
        g_subprocess_communicate_utf8 (p, NULL, NULL, &out, NULL, &error);
        g_assert_true (g_str_has_prefix (out, g_checksum_get_string (sum)));
        g_clear_pointer (&out, g_free);
        g_clear_object (&p);
        /* and up: the origin hashes what it received */
        {
                g_autofree char *file = g_build_filename (fx->dir, "blob", NULL);
                g_autofree char *at = g_strconcat ("@", file, NULL);
                g_autofree char *post = g_strdup_printf ("http://127.0.0.1:%u/upload",
                                                         egress_test_server_get_port (fx->srv));

                g_assert_true (g_file_set_contents (file, (char *) buf, (gssize) size, NULL));
                p = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error, "curl", "-sS",
                                      "--max-time", "120", "-x", proxy, "--data-binary", at, post,
                                      NULL);
                g_assert_no_error (error);
                g_subprocess_communicate_utf8 (p, NULL, NULL, &out, NULL, &error);
                g_unlink (file);
                g_assert_cmpstr (out, ==, g_checksum_get_string (sum));
        }
}

/* TRUE when needle occurs in the readable private memory of process pid. */
static gboolean
memory_contains (GPid pid, const char *needle)
{
        g_autofree char *maps_path = g_strdup_printf ("/proc/%d/maps", pid);
        g_autofree char *mem_path = g_strdup_printf ("/proc/%d/mem", pid);
        g_autofree char *maps = NULL;
        g_auto (GStrv) lines = NULL;
        gboolean found = FALSE;
        int fd;

        g_assert_true (g_file_get_contents (maps_path, &maps, NULL, NULL));
        fd = g_open (mem_path, O_RDONLY | O_CLOEXEC, 0);
        g_assert_cmpint (fd, >=, 0);
        lines = g_strsplit (maps, "\n", -1);
        for (char **l = lines; *l && !found; l++) {
                guint64 start, end;
                char perms[5] = { 0 };

                if (sscanf (*l, "%" G_GINT64_MODIFIER "x-%" G_GINT64_MODIFIER "x %4s", &start, &end,
                            perms) != 3 ||
                    perms[0] != 'r' || end - start > 256 * 1024 * 1024)
                        continue;
                {
                        g_autofree char *buf = g_malloc (end - start);
                        gssize n = pread (fd, buf, end - start, (off_t) start);

                        found = n > 0 && memmem (buf, (gsize) n, needle, strlen (needle)) != NULL;
                }
        }
        close (fd);
        return found;
}

/* Item 18 end to end: with credentials bound on the host, a request from the guest side reaches
 * the origin with the secret, while the secret is in neither the guest proxy's memory nor what
 * the guest program received. */
static void
test_canary_never_in_guest (Fx *fx, gconstpointer data)
{
        const char *names[] = { "api.bound.test", NULL };
        const char *canary = "canary-guest-7d41c0e2aa9f";
        g_autofree char *certs = egress_test_make_certs (names);
        g_autofree char *test_ca = g_build_filename (certs, "ca.pem", NULL);
        g_autofree char *session_ca = g_build_filename (certs, "session.pem", NULL);
        g_autofree char *pem = NULL, *key = NULL, *ca_pem = NULL, *ph = NULL, *out = NULL;
        g_autofree char *heads = NULL, *hdr = NULL, *url = NULL, *rule = NULL, *cmd = NULL;
        g_autoptr (GTlsCertificate) cert = NULL;
        g_autoptr (EgressTestServer) tls = NULL;
        g_autoptr (EgressTestResolver) resolver = egress_test_resolver_new ();
        g_autoptr (CorralEgressCredentials) creds = corral_egress_credentials_new ();
        g_autoptr (CorralSecretInfo) info = NULL;
        g_autoptr (CorralEgressPolicy) p =
                corral_egress_policy_new (CORRAL_EGRESS_PRESET_ALLOWLIST);
        g_autofree char *bound = NULL;
        const char *hosts[] = { NULL, NULL };
        const char *ident;

        pem = g_build_filename (certs, "api.bound.test.pem", NULL);
        key = g_build_filename (certs, "api.bound.test.key", NULL);
        cert = g_tls_certificate_new_from_files (pem, key, NULL);
        g_assert_nonnull (cert);
        tls = egress_test_server_new (cert, FALSE);
        rule = g_strdup_printf ("127.0.0.1:%u", egress_test_server_get_port (tls));
        bound = g_strdup_printf ("api.bound.test:%u", egress_test_server_get_port (tls));
        hosts[0] = bound;
        info = corral_secret_info_new ("API_TOKEN", hosts, "authorization", "Bearer {}", NULL);
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, "api.bound.test", NULL));
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, rule, NULL));
        corral_egress_proxy_set_policy (fx->proxy, p);
        egress_test_resolver_add (resolver, "api.bound.test", "127.0.0.1");
        corral_egress_proxy_set_resolver (fx->proxy, G_RESOLVER (resolver));
        g_assert_true (corral_egress_proxy_set_upstream_ca_file (fx->proxy, test_ca, NULL));
        ph = corral_egress_credentials_add (creds, info, canary);
        g_assert_true (corral_egress_proxy_set_credentials (fx->proxy, creds, NULL));
        ca_pem = corral_egress_proxy_dup_ca_pem (fx->proxy, NULL);
        g_assert_true (g_file_set_contents (session_ca, ca_pem, -1, NULL));

        hdr = g_strdup_printf ("Authorization: Bearer %s", ph);
        url = g_strdup_printf ("https://api.bound.test:%u/echo", egress_test_server_get_port (tls));
        out = curl2 (fx, "corral:" TOKEN, url, hdr, "--cacert", session_ca);
        heads = egress_test_server_dup_heads (tls);
        g_assert_nonnull (strstr (heads, canary)); /* it did reach the origin */
        g_assert_nonnull (strstr (out, "200 OK"));
        g_assert_null (strstr (out, canary));
        ident = g_subprocess_get_identifier (fx->guest);
        g_assert_nonnull (ident);
        g_assert_false (memory_contains ((GPid) atoi (ident), canary));
        g_assert_true (memory_contains ((GPid) atoi (ident), TOKEN)); /* the scan works */
        corral_egress_credentials_revoke (creds);
        cmd = g_strdup_printf ("rm -rf '%s'", certs);
        g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
#define ADD(path, fn) g_test_add (path, Fx, NULL, fx_setup, fn, fx_teardown)
        ADD ("/egress-guest/token-required", test_token_required);
        ADD ("/egress-guest/forwarded-without-token", test_forwarded);
        ADD ("/egress-guest/real-credentials-refused", test_real_credentials_refused);
        ADD ("/egress-guest/host-decides", test_host_decides);
        ADD ("/egress-guest/eof-passed-on", test_eof_passed_on);
        ADD ("/egress-guest/large-transfer", test_large_transfer);
        ADD ("/egress-guest/canary-never-in-guest", test_canary_never_in_guest);
        return g_test_run ();
}
