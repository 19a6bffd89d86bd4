/* test-egress-proxy.c — the host egress proxy against real loopback servers (SECURITY-TESTS
 * items 12-17 and 22). The proxy runs in-process on 127.0.0.1 with an injected resolver, so names
 * resolve only to loopback addresses the test chose; nothing here reaches another address.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-private.h"
#include "egress-proxy.h"
#include "egress-test.h"

#include <glib/gstdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

typedef struct {
        CorralEgressProxy *proxy;
        EgressTestResolver *resolver;
        guint16 port;
        char *dir;
        char *audit;
} Fx;

static void set_policy (Fx *fx, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

static void
set_policy (Fx *fx, const char *fmt, ...)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralEgressPolicy) p = NULL;
        g_autofree char *json = NULL;
        va_list ap;

        va_start (ap, fmt);
        json = g_strdup_vprintf (fmt, ap);
        va_end (ap);
        p = corral_egress_policy_new_from_json (json, strlen (json), &error);
        g_assert_no_error (error);
        corral_egress_proxy_set_policy (fx->proxy, p);
}

static void
fx_setup (Fx *fx, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralEgressPolicy) p =
                corral_egress_policy_new (CORRAL_EGRESS_PRESET_ALLOWLIST);
        g_autoptr (GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
        g_autoptr (GSocketAddress) addr = g_inet_socket_address_new (lo, 0);
        g_autoptr (GSocketAddress) bound = NULL;

        fx->dir = g_dir_make_tmp ("corral-egress-XXXXXX", &error);
        g_assert_no_error (error);
        fx->audit = g_build_filename (fx->dir, "audit.jsonl", NULL);
        fx->proxy = corral_egress_proxy_new (p);
        fx->resolver = egress_test_resolver_new ();
        corral_egress_proxy_set_resolver (fx->proxy, G_RESOLVER (fx->resolver));
        g_assert_true (corral_egress_proxy_set_audit_path (fx->proxy, fx->audit, &error));
        g_assert_true (corral_egress_proxy_listen (fx->proxy, addr, &bound, &error));
        fx->port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
}

static void
fx_teardown (Fx *fx, gconstpointer data)
{
        corral_egress_proxy_shutdown (fx->proxy);
        g_clear_object (&fx->proxy);
        g_clear_object (&fx->resolver);
        g_unlink (fx->audit);
        g_rmdir (fx->dir);
        g_free (fx->audit);
        g_free (fx->dir);
}

static void
wait_idle (Fx *fx)
{
        for (int i = 0; i < 3000 && corral_egress_proxy_get_active (fx->proxy) > 0; i++)
                g_usleep (10 * 1000);
        g_assert_cmpuint (corral_egress_proxy_get_active (fx->proxy), ==, 0);
}

static GString *req (Fx *fx, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

static GString *
req (Fx *fx, const char *fmt, ...)
{
        g_autofree char *text = NULL;
        va_list ap;

        va_start (ap, fmt);
        text = g_strdup_vprintf (fmt, ap);
        va_end (ap);
        return egress_test_request (fx->port, text, -1);
}

/* A refusal: the status, the rule in X-Corral-Blocked, and a body that explains. */
static void
assert_refused (GString *resp, guint status, const char *rule)
{
        g_autofree char *blocked = egress_test_header (resp->str, "X-Corral-Blocked");

        if (egress_test_status (resp->str) != status)
                g_error ("expected %u, got: %s", status, resp->str);
        g_assert_cmpstr (blocked, ==, rule);
        g_assert_nonnull (strstr (resp->str, "\r\n\r\nblocked by sandbox: "));
        {
                g_autofree char *len = egress_test_header (resp->str, "Content-Length");
                const char *body = strstr (resp->str, "\r\n\r\n") + 4;

                g_assert_nonnull (len);
                g_assert_cmpuint (strlen (body), ==, g_ascii_strtoull (len, NULL, 10));
        }
}

/* The last audit record (transfer full). */
static cJSON *
last_audit (Fx *fx)
{
        g_autofree char *text = NULL;
        g_auto (GStrv) lines = NULL;
        guint n;

        wait_idle (fx);
        g_assert_true (g_file_get_contents (fx->audit, &text, NULL, NULL));
        lines = g_strsplit (text, "\n", -1);
        n = g_strv_length (lines);
        g_assert_cmpuint (n, >=, 2);
        return cJSON_Parse (lines[n - 2]);
}

/* Some record (not necessarily the last) has this decision, rule and host: a client that keeps
 * its connection to the proxy can see a refusal logged before the end of an earlier request. */
static void
assert_audit_has (Fx *fx, const char *decision, const char *rule, const char *host)
{
        g_autofree char *text = NULL;
        g_auto (GStrv) lines = NULL;

        wait_idle (fx);
        g_assert_true (g_file_get_contents (fx->audit, &text, NULL, NULL));
        lines = g_strsplit (text, "\n", -1);
        for (guint i = 0; lines[i]; i++) {
                g_autoptr (cJSON) rec = cJSON_Parse (lines[i]);

                if (rec &&
                    g_strcmp0 (cJSON_GetStringValue (cJSON_GetObjectItem (rec, "decision")),
                               decision) == 0 &&
                    g_strcmp0 (cJSON_GetStringValue (cJSON_GetObjectItem (rec, "rule")), rule) ==
                            0 &&
                    g_strcmp0 (cJSON_GetStringValue (cJSON_GetObjectItem (rec, "host")), host) == 0)
                        return;
        }
        g_error ("no %s/%s record for %s in the audit log:\n%s", decision, rule, host, text);
}

static void
assert_audit (Fx *fx, const char *decision, const char *rule, const char *host)
{
        g_autoptr (cJSON) rec = last_audit (fx);

        g_assert_nonnull (rec);
        g_assert_cmpstr (cJSON_GetStringValue (cJSON_GetObjectItem (rec, "decision")), ==,
                         decision);
        if (rule)
                g_assert_cmpstr (cJSON_GetStringValue (cJSON_GetObjectItem (rec, "rule")), ==,
                                 rule);
        if (host)
                g_assert_cmpstr (cJSON_GetStringValue (cJSON_GetObjectItem (rec, "host")), ==,
                                 host);
}

/* Item 12: default deny. ------------------------------------------------------------------------ */

static void
test_default_deny (Fx *fx, gconstpointer data)
{
        g_autoptr (EgressTestServer) srv = egress_test_server_new (NULL, FALSE);
        guint16 p = egress_test_server_get_port (srv);
        g_autoptr (GString) a = NULL, b = NULL, c = NULL;

        a = req (fx, "GET http://127.0.0.1:%u/ HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n", p, p);
        assert_refused (a, 403, "default-deny");
        assert_audit (fx, "denied", "default-deny", "127.0.0.1");
        b = req (fx, "GET http://pypi.org/simple/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n");
        assert_refused (b, 403, "default-deny");
        g_assert_nonnull (strstr (b->str, "blocked by sandbox: pypi.org is not in the allowed "
                                          "hosts; ask the user to allow it in Settings → Network"));
        c = req (fx, "CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n");
        assert_refused (c, 403, "default-deny");
        assert_audit (fx, "denied", "default-deny", "pypi.org");
        /* refused before any lookup or connection */
        g_assert_cmpuint (egress_test_resolver_get_lookups (fx->resolver), ==, 0);
        g_assert_cmpuint (egress_test_server_get_connections (srv), ==, 0);
}

static void
test_preset_none_and_deny_wins (Fx *fx, gconstpointer data)
{
        g_autoptr (EgressTestServer) srv = egress_test_server_new (NULL, FALSE);
        guint16 p = egress_test_server_get_port (srv);
        g_autoptr (GString) a = NULL, b = NULL, c = NULL;

        egress_test_resolver_add (fx->resolver, "api.corral.test", "127.0.0.1");
        egress_test_resolver_add (fx->resolver, "bad.corral.test", "127.0.0.1");
        set_policy (fx, "{\"preset\":\"none\"}");
        a = req (fx, "GET http://api.corral.test:%u/ HTTP/1.0\r\n\r\n", p);
        assert_refused (a, 403, "preset:none");
        set_policy (fx,
                    "{\"preset\":\"open-web\",\"allow\":[\"*.corral.test\",\"127.0.0.1:%u\"],"
                    "\"deny\":[\"bad.corral.test\"]}",
                    p);
        b = req (fx, "GET http://bad.corral.test:%u/ HTTP/1.0\r\n\r\n", p);
        assert_refused (b, 403, "deny:bad.corral.test");
        assert_audit (fx, "denied", "deny:bad.corral.test", "bad.corral.test");
        g_assert_cmpuint (egress_test_server_get_connections (srv), ==, 0);
        c = req (fx, "GET http://api.corral.test:%u/ HTTP/1.0\r\n\r\n", p);
        g_assert_cmpuint (egress_test_status (c->str), ==, 204);
        assert_audit (fx, "allowed", "allow:*.corral.test", "api.corral.test");
        g_assert_cmpuint (egress_test_server_get_connections (srv), ==, 1);
}

/* Item 13: IP literal tricks all refused, no connection made. ---------------------------------- */

static void
test_ip_literals (Fx *fx, gconstpointer data)
{
        g_autoptr (EgressTestServer) srv = egress_test_server_new (NULL, FALSE);
        guint16 p = egress_test_server_get_port (srv);
        /* inet_aton's other spellings of 127.0.0.1: refused as malformed */
        static const char *const ambiguous[] = { "2130706433", "0x7f000001",  "0x7f.0.0.1",
                                                 "0177.0.0.1", "127.1",       "127.0.1",
                                                 "0x7f.1",     "017700000001" };
        /* valid literals of non-public addresses: refused by the address check */
        static const char *const literal[] = { "127.0.0.1",
                                               "127.0.0.2",
                                               "0.0.0.0",
                                               "[::1]",
                                               "[::]",
                                               "[::ffff:127.0.0.1]",
                                               "[::ffff:7f00:1]",
                                               "[::127.0.0.1]",
                                               "[64:ff9b::7f00:1]",
                                               "[2002:7f00:1::]",
                                               "[0:0:0:0:0:0:0:1]" };

        set_policy (fx, "{\"preset\":\"open-web\"}");
        for (gsize i = 0; i < G_N_ELEMENTS (ambiguous); i++) {
                g_autoptr (GString) r =
                        req (fx, "GET http://%s:%u/ HTTP/1.0\r\n\r\n", ambiguous[i], p);
                g_autoptr (GString) c = req (fx, "CONNECT %s:%u HTTP/1.1\r\n\r\n", ambiguous[i], p);

                assert_refused (r, 400, "bad-request");
                assert_refused (c, 400, "bad-request");
        }
        for (gsize i = 0; i < G_N_ELEMENTS (literal); i++) {
                g_autoptr (GString) r =
                        req (fx, "GET http://%s:%u/ HTTP/1.0\r\n\r\n", literal[i], p);
                g_autoptr (GString) c = req (fx, "CONNECT %s:%u HTTP/1.1\r\n\r\n", literal[i], p);

                assert_refused (r, 403, "private-address");
                assert_refused (c, 403, "private-address");
        }
        assert_audit (fx, "denied", "private-address", NULL);
        g_assert_cmpuint (egress_test_server_get_connections (srv), ==, 0);
}

static gboolean
have_ipv6_loopback (void)
{
        g_autoptr (GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV6);
        g_autoptr (GSocketAddress) a = g_inet_socket_address_new (lo, 0);
        g_autoptr (GSocket) s = g_socket_new (G_SOCKET_FAMILY_IPV6, G_SOCKET_TYPE_STREAM, 0, NULL);

        return s && g_socket_bind (s, a, TRUE, NULL);
}

/* Only a rule naming the exact address and port opens a private address; other spellings of it
 * stay closed. */
static void
test_exact_address_rule (Fx *fx, gconstpointer data)
{
        g_autoptr (EgressTestServer) srv = egress_test_server_new (NULL, FALSE);
        guint16 p = egress_test_server_get_port (srv);
        g_autoptr (GString) a = NULL, b = NULL, c = NULL;

        set_policy (fx, "{\"preset\":\"open-web\",\"allow\":[\"127.0.0.1:%u\"]}", p);
        a = req (fx, "GET http://127.0.0.1:%u/ HTTP/1.0\r\n\r\n", p);
        g_assert_cmpuint (egress_test_status (a->str), ==, 204);
        b = req (fx, "GET http://[::ffff:127.0.0.1]:%u/ HTTP/1.0\r\n\r\n", p);
        assert_refused (b, 403, "private-address");
        c = req (fx, "GET http://127.0.0.1:%u/ HTTP/1.0\r\n\r\n", p == 65535 ? p - 1 : p + 1);
        assert_refused (c, 403, "private-address");
        g_assert_cmpuint (egress_test_server_get_connections (srv), ==, 1);
        /* the same for an IPv6 literal, Host header with brackets */
        if (have_ipv6_loopback ()) {
                g_autoptr (EgressTestServer) v6 =
                        egress_test_server_new_full ("::1", 0, NULL, FALSE);
                guint16 p6 = egress_test_server_get_port (v6);
                g_autoptr (GString) d = NULL, e = NULL;

                set_policy (fx, "{\"preset\":\"open-web\",\"allow\":[\"[::1]:%u\"]}", p6);
                d = req (fx, "GET http://[::1]:%u/ HTTP/1.1\r\nHost: [::1]:%u\r\n\r\n", p6, p6);
                g_assert_cmpuint (egress_test_status (d->str), ==, 204);
                e = req (fx, "GET http://[0:0:0:0:0:ffff:7f00:1]:%u/ HTTP/1.0\r\n\r\n", p6);
                assert_refused (e, 403, "private-address");
                g_assert_cmpuint (egress_test_server_get_connections (v6), ==, 1);
        }
}

#define ALIAS_GET                                                                                  \
        "GET http://host.corral.internal:%u/ HTTP/1.1\r\nHost: host.corral.internal:%u\r\n\r\n"

/* host.corral.internal is the host's loopback, never looked up; only a rule naming it with the
 * exact port opens it: not a preset, not a wildcard, not a rule without a port. */
static void
test_host_alias (Fx *fx, gconstpointer data)
{
        g_autoptr (EgressTestServer) srv = egress_test_server_new (NULL, FALSE);
        guint16 p = egress_test_server_get_port (srv);
        g_autoptr (GString) a = NULL, b = NULL, c = NULL, d = NULL, e = NULL;

        /* a resolver answer would be a rebinding attempt: it must never be asked */
        egress_test_resolver_add (fx->resolver, "host.corral.internal", "93.184.216.34");
        set_policy (fx, "{\"preset\":\"open-web\"}");
        a = req (fx, ALIAS_GET, p, p);
        assert_refused (a, 403, "host-alias-needs-port");
        g_assert_nonnull (strstr (a->str, "host.corral.internal:"));
        set_policy (fx, "{\"allow\":[\"*.corral.internal\",\"host.corral.internal\"]}");
        b = req (fx, ALIAS_GET, p, p);
        assert_refused (b, 403, "host-alias-needs-port");
        set_policy (fx, "{\"allow\":[\"host.corral.internal:%u\"]}", p);
        c = req (fx, ALIAS_GET, p, p);
        g_assert_cmpuint (egress_test_status (c->str), ==, 204);
        d = req (fx, ALIAS_GET, p == 65535 ? p - 1 : p + 1, p == 65535 ? p - 1 : p + 1);
        g_assert_cmpuint (egress_test_status (d->str), ==, 403);
        set_policy (fx,
                    "{\"allow\":[\"host.corral.internal:%u\"],"
                    "\"deny\":[\"host.corral.internal\"]}",
                    p);
        e = req (fx, ALIAS_GET, p, p);
        g_assert_cmpuint (egress_test_status (e->str), ==, 403);
        g_assert_cmpuint (egress_test_server_get_connections (srv), ==, 1);
        g_assert_cmpuint (egress_test_resolver_get_lookups (fx->resolver), ==, 0);
}

/* Item 14: DNS. ------------------------------------------------------------------------------------ */

static void
test_dns_private (Fx *fx, gconstpointer data)
{
        g_autoptr (EgressTestServer) srv = egress_test_server_new (NULL, FALSE);
        guint16 p = egress_test_server_get_port (srv);
        g_autoptr (GString) a = NULL, b = NULL;

        egress_test_resolver_add (fx->resolver, "internal.corral.test", "127.0.0.1");
        /* a rebinding answer mixing an allowed address with another private one */
        egress_test_resolver_add (fx->resolver, "mixed.corral.test", "127.0.0.2,127.0.0.1");
        set_policy (fx,
                    "{\"allow\":[\"internal.corral.test\",\"mixed.corral.test\","
                    "\"127.0.0.2:%u\"]}",
                    p);
        a = req (fx, "GET http://internal.corral.test:%u/ HTTP/1.0\r\n\r\n", p);
        assert_refused (a, 403, "private-address");
        g_assert_nonnull (strstr (a->str, "127.0.0.1, loopback"));
        b = req (fx, "CONNECT mixed.corral.test:%u HTTP/1.1\r\n\r\n", p);
        assert_refused (b, 403, "private-address");
        assert_audit (fx, "denied", "private-address", "mixed.corral.test");
        g_assert_cmpuint (egress_test_server_get_connections (srv), ==, 0);
}

/* The name is resolved once and the connection goes to the address that was checked: the
 * resolver's next answer would point elsewhere. */
static void
test_dns_pinned (Fx *fx, gconstpointer data)
{
        g_autoptr (EgressTestServer) a = egress_test_server_new (NULL, FALSE);
        guint16 p = egress_test_server_get_port (a);
        g_autoptr (EgressTestServer) b = egress_test_server_new_full ("127.0.0.2", p, NULL, FALSE);
        g_autoptr (GString) r = NULL;
        g_autoptr (cJSON) rec = NULL;

        egress_test_resolver_add (fx->resolver, "pinned.corral.test", "127.0.0.1");
        egress_test_resolver_add (fx->resolver, "pinned.corral.test", "127.0.0.2");
        set_policy (fx, "{\"allow\":[\"pinned.corral.test\",\"127.0.0.1:%u\",\"127.0.0.2:%u\"]}", p,
                    p);
        r = req (fx, "GET http://pinned.corral.test:%u/ HTTP/1.0\r\n\r\n", p);
        g_assert_cmpuint (egress_test_status (r->str), ==, 204);
        g_assert_cmpuint (egress_test_resolver_get_lookups (fx->resolver), ==, 1);
        g_assert_cmpuint (egress_test_server_get_connections (a), ==, 1);
        g_assert_cmpuint (egress_test_server_get_connections (b), ==, 0);
        rec = last_audit (fx);
        g_assert_cmpstr (cJSON_GetStringValue (cJSON_GetObjectItem (rec, "address")), ==,
                         "127.0.0.1");
}

/* Item 15: host strings. -------------------------------------------------------------------------- */

static void
test_host_strings (Fx *fx, gconstpointer data)
{
        g_autoptr (EgressTestServer) srv = egress_test_server_new (NULL, FALSE);
        guint16 p = egress_test_server_get_port (srv);
        g_autofree char *a = g_strnfill (63, 'a'), *b = g_strnfill (63, 'b');
        g_autofree char *longname = g_strjoin (".", a, b, a, b, "allowed.corral.test", NULL);
        /* @P@ stands for the server's port */
        const char *bad400[] = {
                "GET http://allowed.corral.test:@P@/ HTTP/1.1\r\nHost: allowed.corral.test:@P@"
                "\r\nHost: allowed.corral.test:@P@\r\n\r\n",
                "GET http://allowed.corral.test:@P@/ HTTP/1.1\r\nHost: evil.test\r\n\r\n",
                "GET http://user@allowed.corral.test:@P@/ HTTP/1.0\r\n\r\n",
                "GET http://allowed.corral.test:0/ HTTP/1.0\r\n\r\n",
                "GET http://allowed.corral.test:70000/ HTTP/1.0\r\n\r\n",
                "GET http://[::1%25lo]:@P@/ HTTP/1.0\r\n\r\n",
                "CONNECT [fe80::1%eth0]:@P@ HTTP/1.1\r\n\r\n",
                "GET http://allowed.corral.test\r\nX: y:@P@/ HTTP/1.0\r\n\r\n",
                "GET http://allowed.corral.test:@P@/ HTTP/1.1\r\nHost: allowed.corral.test\r\n"
                "X-Injected: 1\rHost: evil\r\n\r\n",
        };
        const char *denied[] = { "allowed.corral.test.evil.test", "evilallowed.corral.test",
                                 "corral.test" };
        const char nul[] = "GET http://allowed.corral.test\0.evil.test/ HTTP/1.0\r\n\r\n";
        g_autoptr (GString) r = NULL;

        egress_test_resolver_add (fx->resolver, "allowed.corral.test", "127.0.0.1");
        set_policy (fx, "{\"allow\":[\"allowed.corral.test\",\"127.0.0.1:%u\"]}", p);
        for (gsize i = 0; i < G_N_ELEMENTS (bad400); i++) {
                g_autoptr (GString) text = g_string_new (bad400[i]);
                g_autofree char *port = g_strdup_printf ("%u", p);
                g_autoptr (GString) resp = NULL;

                g_string_replace (text, "@P@", port, 0);
                resp = egress_test_request (fx->port, text->str, -1);

                assert_refused (resp, 400, "bad-request");
        }
        r = egress_test_request (fx->port, nul, sizeof nul - 1);
        assert_refused (r, 400, "bad-request");
        g_string_free (g_steal_pointer (&r), TRUE);
        r = req (fx, "GET http://%s:%u/ HTTP/1.0\r\n\r\n", longname, p);
        assert_refused (r, 400, "bad-request");
        for (gsize i = 0; i < G_N_ELEMENTS (denied); i++) {
                g_autoptr (GString) resp =
                        req (fx, "GET http://%s:%u/ HTTP/1.0\r\n\r\n", denied[i], p);

                assert_refused (resp, 403, "default-deny");
        }
        g_assert_cmpuint (egress_test_server_get_connections (srv), ==, 0);
        g_assert_cmpuint (egress_test_resolver_get_lookups (fx->resolver), ==, 0);
        /* trailing dot and mixed case name the same allowed host */
        g_string_free (g_steal_pointer (&r), TRUE);
        r = req (fx,
                 "GET http://Allowed.CORRAL.test.:%u/ HTTP/1.1\r\nHost: allowed.corral.test:%u"
                 "\r\n\r\n",
                 p, p);
        g_assert_cmpuint (egress_test_status (r->str), ==, 204);
        assert_audit (fx, "allowed", "allow:allowed.corral.test", "allowed.corral.test");
        g_assert_cmpuint (egress_test_server_get_connections (srv), ==, 1);
}

/* Item 16: CONNECT and TLS SNI. ---------------------------------------------------------------- */

static char **
child_env (void)
{
        char **env = g_get_environ ();
        const char *vars[] = { "http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy",
                               "ALL_PROXY",  "no_proxy",    "NO_PROXY" };

        for (gsize i = 0; i < G_N_ELEMENTS (vars); i++)
                env = g_environ_unsetenv (env, vars[i]);
        return env;
}

static int
run (const char *const *argv, const char *input, char **ret_out)
{
        g_autoptr (GError) error = NULL;
        g_auto (GStrv) env = child_env ();
        g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (
                G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_MERGE |
                G_SUBPROCESS_FLAGS_STDIN_PIPE);
        g_autoptr (GSubprocess) proc = NULL;
        g_autofree char *out = NULL;

        g_subprocess_launcher_set_environ (l, env);
        proc = g_subprocess_launcher_spawnv (l, argv, &error);
        g_assert_no_error (error);
        g_subprocess_communicate_utf8 (proc, input ? input : "", NULL, &out, NULL, &error);
        g_assert_no_error (error);
        if (ret_out)
                *ret_out = g_steal_pointer (&out);
        return g_subprocess_get_exit_status (proc);
}

typedef struct {
        char *certs;
        char *ca;
        GTlsCertificate *cert;
} Certs;

static void
certs_load (Certs *c)
{
        const char *names[] = { "tls.corral.test", NULL };
        g_autofree char *pem = NULL, *key = NULL;
        g_autoptr (GError) error = NULL;

        c->certs = egress_test_make_certs (names);
        c->ca = g_build_filename (c->certs, "ca.pem", NULL);
        pem = g_build_filename (c->certs, "tls.corral.test.pem", NULL);
        key = g_build_filename (c->certs, "tls.corral.test.key", NULL);
        c->cert = g_tls_certificate_new_from_files (pem, key, &error);
        g_assert_no_error (error);
}

static void
certs_clear (Certs *c)
{
        g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", c->certs);

        g_assert_true (g_str_has_prefix (c->certs, g_get_tmp_dir ()));
        g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL);
        g_free (c->certs);
        g_free (c->ca);
        g_clear_object (&c->cert);
}

static void
test_connect_sni (Fx *fx, gconstpointer data)
{
        Certs c = { 0 };
        g_autoptr (EgressTestServer) tls = NULL;
        g_autoptr (EgressTestServer) raw = egress_test_server_new (NULL, TRUE);
        g_autofree char *proxy = g_strdup_printf ("http://127.0.0.1:%u", fx->port);
        g_autofree char *proxy_hp = g_strdup_printf ("127.0.0.1:%u", fx->port);
        g_autofree char *url = NULL, *target = NULL, *out = NULL;
        g_autoptr (GString) r = NULL;
        guint16 p;

        certs_load (&c);
        tls = egress_test_server_new (c.cert, FALSE);
        p = egress_test_server_get_port (tls);
        url = g_strdup_printf ("https://tls.corral.test:%u/echo", p);
        target = g_strdup_printf ("tls.corral.test:%u", p);
        egress_test_resolver_add (fx->resolver, "tls.corral.test", "127.0.0.1");
        set_policy (fx, "{\"allow\":[\"tls.corral.test\",\"127.0.0.1:%u\",\"127.0.0.1:%u\"]}", p,
                    egress_test_server_get_port (raw));

        /* matching SNI: a real TLS session end to end */
        {
                const char *argv[] = { "curl", "-sS",      "--max-time", "30", "-x",
                                       proxy,  "--cacert", c.ca,         url,  NULL };
                g_assert_cmpint (run (argv, NULL, &out), ==, 0);
                g_assert_true (g_str_has_prefix (out, "GET /echo HTTP/1.1\r\n"));
                assert_audit (fx, "allowed", "allow:tls.corral.test", "tls.corral.test");
                g_assert_cmpuint (egress_test_server_get_connections (tls), ==, 1);
                g_clear_pointer (&out, g_free);
        }
        /* a different SNI, and none: refused before any upstream connection */
        {
                const char *other[] = { "openssl",     "s_client",         "-connect",
                                        target,        "-proxy",           proxy_hp,
                                        "-servername", "evil.corral.test", NULL };
                const char *none[] = { "openssl", "s_client", "-connect",      target,
                                       "-proxy",  proxy_hp,   "-noservername", NULL };

                g_assert_cmpint (run (other, "", NULL), !=, 0);
                assert_audit (fx, "denied", "sni-mismatch", "tls.corral.test");
                g_assert_cmpint (run (none, "", NULL), !=, 0);
                assert_audit (fx, "denied", "sni-mismatch", "tls.corral.test");
                g_assert_cmpuint (egress_test_server_get_connections (tls), ==, 1);
        }
        /* plain text in a tunnel: refused */
        r = req (fx, "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",
                 egress_test_server_get_port (raw));
        g_assert_cmpuint (egress_test_status (r->str), ==, 200);
        assert_audit (fx, "denied", "not-tls", "127.0.0.1");
        g_assert_cmpuint (egress_test_server_get_connections (raw), ==, 0);
        certs_clear (&c);
}

/* Absolute-form target vs Host header: a mismatch is refused, whichever is allowed. */
static void
test_host_mismatch (Fx *fx, gconstpointer data)
{
        g_autoptr (EgressTestServer) srv = egress_test_server_new (NULL, FALSE);
        guint16 p = egress_test_server_get_port (srv);
        g_autoptr (GString) a = NULL, b = NULL;

        egress_test_resolver_add (fx->resolver, "allowed.corral.test", "127.0.0.1");
        set_policy (fx, "{\"allow\":[\"allowed.corral.test\",\"127.0.0.1:%u\"]}", p);
        a = req (fx, "GET http://allowed.corral.test:%u/ HTTP/1.1\r\nHost: denied.test\r\n\r\n", p);
        assert_refused (a, 400, "bad-request");
        b = req (fx, "GET http://denied.test:%u/ HTTP/1.1\r\nHost: allowed.corral.test:%u\r\n\r\n",
                 p, p);
        assert_refused (b, 400, "bad-request");
        g_assert_cmpuint (egress_test_server_get_connections (srv), ==, 0);
}

/* Item 17: redirects are relayed, never followed. ------------------------------------------------ */

static void
test_redirect (Fx *fx, gconstpointer data)
{
        g_autoptr (EgressTestServer) a = egress_test_server_new (NULL, FALSE);
        g_autoptr (EgressTestServer) b = egress_test_server_new (NULL, FALSE);
        guint16 pa = egress_test_server_get_port (a), pb = egress_test_server_get_port (b);
        g_autofree char *loc = NULL, *url = NULL, *out = NULL;
        g_autofree char *proxy = g_strdup_printf ("http://127.0.0.1:%u", fx->port);
        g_autoptr (GString) r = NULL;

        set_policy (fx, "{\"allow\":[\"127.0.0.1:%u\"]}", pa);
        r = req (fx,
                 "GET http://127.0.0.1:%u/redirect?to=http://127.0.0.1:%u/private HTTP/1.1\r\n"
                 "Host: 127.0.0.1:%u\r\n\r\n",
                 pa, pb, pa);
        g_assert_cmpuint (egress_test_status (r->str), ==, 302);
        loc = egress_test_header (r->str, "Location");
        g_assert_nonnull (loc);
        g_assert_true (g_str_has_suffix (loc, "/private"));
        /* a client that follows asks the proxy again, and is refused */
        url = g_strdup_printf ("http://127.0.0.1:%u/redirect?to=http://169.254.169.254/", pa);
        {
                const char *argv[] = { "curl", "-sS",       "-L", "--max-time",   "30", "-x", proxy,
                                       "-o",   "/dev/null", "-w", "%{http_code}", url,  NULL };
                run (argv, NULL, &out);
                g_assert_cmpstr (out, ==, "403");
        }
        assert_audit_has (fx, "denied", "default-deny", "169.254.169.254");
        g_assert_cmpuint (egress_test_server_get_connections (a), ==, 2);
        g_assert_cmpuint (egress_test_server_get_connections (b), ==, 0);
}

/* Item 22: large transfers, slow and half-closed clients, limits. -------------------------------- */

static char *
pattern_sha256 (guint64 n)
{
        g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
        g_autofree guint8 *buf = g_malloc (65536);

        for (guint64 off = 0; off < n; off += 65536) {
                gsize len = (gsize) MIN (65536, n - off);
                egress_test_pattern (buf, len, off);
                g_checksum_update (sum, buf, len);
        }
        return g_strdup (g_checksum_get_string (sum));
}

/* valgrind's memcheck makes 64 MiB through an in-process proxy take minutes: 4 MiB there. */
static gboolean
under_valgrind (void)
{
        const char *preload = g_getenv ("LD_PRELOAD");

        return preload && strstr (preload, "valgrind");
}

static void
test_large_transfers (Fx *fx, gconstpointer data)
{
        const guint64 size = (under_valgrind () ? 4 : 64) * 1024 * 1024;
        g_autoptr (EgressTestServer) srv = egress_test_server_new (NULL, FALSE);
        guint16 p = egress_test_server_get_port (srv);
        g_autofree char *proxy = g_strdup_printf ("http://127.0.0.1:%u", fx->port);
        g_autofree char *get =
                g_strdup_printf ("http://127.0.0.1:%u/blob?n=%" G_GUINT64_FORMAT, p, size);
        g_autofree char *post = g_strdup_printf ("http://127.0.0.1:%u/upload", p);
        g_autofree char *file = g_build_filename (fx->dir, "blob", NULL);
        g_autofree char *at = g_strconcat ("@", file, NULL);
        g_autofree char *want = pattern_sha256 (size);
        g_autofree char *out = NULL;
        g_autofree guint8 *buf = g_malloc (size);

        set_policy (fx, "{\"allow\":[\"127.0.0.1:%u\"]}", p);
        {
                const char *argv[] = { "sh",
                                       "-c",
                                       "curl -sS --max-time 120 -x \"$0\" \"$1\" | "
                                       "sha256sum",
                                       proxy,
                                       get,
                                       NULL };
                run (argv, NULL, &out);
                g_assert_true (g_str_has_prefix (out, want));
                g_clear_pointer (&out, g_free);
        }
        egress_test_pattern (buf, size, 0);
        g_assert_true (g_file_set_contents (file, (char *) buf, (gssize) size, NULL));
        {
                const char *argv[] = { "curl", "-sS",           "--max-time", "120", "-x",
                                       proxy,  "--data-binary", at,           post,  NULL };
                const char *chunked[] = { "curl",
                                          "-sS",
                                          "--max-time",
                                          "120",
                                          "-x",
                                          proxy,
                                          "-H",
                                          "Transfer-Encoding: chunked",
                                          "--data-binary",
                                          at,
                                          post,
                                          NULL };
                run (argv, NULL, &out);
                g_assert_cmpstr (out, ==, want);
                g_clear_pointer (&out, g_free);
                run (chunked, NULL, &out);
                g_assert_cmpstr (out, ==, want);
        }
        g_unlink (file);
        {
                g_autoptr (cJSON) rec = last_audit (fx);
                g_assert_cmpfloat (cJSON_GetNumberValue (cJSON_GetObjectItem (rec, "bytes_up")), >,
                                   (double) size);
        }
}

static void
set_short_limits (Fx *fx, guint max_connections)
{
        CorralEgressLimits l;

        corral_egress_proxy_get_limits (fx->proxy, &l);
        l.header_timeout_ms = 300;
        l.idle_timeout_ms = 300;
        l.max_connections = max_connections;
        corral_egress_proxy_set_limits (fx->proxy, &l);
}

/* Reads until EOF; TRUE when the proxy closed (EOF, or a reset when it closed with our bytes
 * unread), FALSE on our 30 s socket timeout. */
static gboolean
closed_by_peer (GSocket *s)
{
        char buf[4096];
        gssize n;
        g_autoptr (GError) error = NULL;

        while ((n = g_socket_receive (s, buf, sizeof buf, NULL, &error)) > 0)
                ;
        return n == 0 || !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT);
}

static void
test_slow_clients (Fx *fx, gconstpointer data)
{
        GSocket *socks[20];

        set_short_limits (fx, 256);
        /* slowloris: a head that never ends, one byte at a time */
        for (gsize i = 0; i < G_N_ELEMENTS (socks); i++) {
                socks[i] = egress_test_connect (fx->port);
                g_socket_send (socks[i], "GET http://", 11, NULL, NULL);
        }
        g_usleep (50 * 1000);
        for (gsize i = 0; i < G_N_ELEMENTS (socks); i++) {
                g_socket_send (socks[i], "a", 1, NULL, NULL);
                g_assert_true (closed_by_peer (socks[i]));
                g_object_unref (socks[i]);
        }
        wait_idle (fx);
        /* a half-closed client: the proxy ends the connection at EOF */
        for (gsize i = 0; i < G_N_ELEMENTS (socks); i++) {
                socks[i] = egress_test_connect (fx->port);
                g_socket_send (socks[i], "GET http://a.test/ HTTP/1.1\r\n", 29, NULL, NULL);
                g_socket_shutdown (socks[i], FALSE, TRUE, NULL);
        }
        for (gsize i = 0; i < G_N_ELEMENTS (socks); i++) {
                g_assert_true (closed_by_peer (socks[i]));
                g_object_unref (socks[i]);
        }
        wait_idle (fx);
}

/* A half-closed tunnel whose peer never answers is ended by the idle timeout. */
static void
test_idle_tunnel (Fx *fx, gconstpointer data)
{
        g_autoptr (EgressTestServer) raw = egress_test_server_new (NULL, TRUE);
        g_autoptr (GSocket) s = egress_test_connect (fx->port);
        g_autofree char *head = NULL;
        const char hello[] = "\x16\x03\x01\x00\x2d\x01\x00\x00\x29\x03\x03"
                             "0123456789abcdef0123456789abcdef\x00\x00\x02\x13\x01\x01\x00";

        set_short_limits (fx, 256);
        set_policy (fx, "{\"allow\":[\"127.0.0.1:%u\"]}", egress_test_server_get_port (raw));
        head = g_strdup_printf ("CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n",
                                egress_test_server_get_port (raw));
        g_socket_send (s, head, strlen (head), NULL, NULL);
        g_socket_send (s, hello, sizeof hello - 1, NULL, NULL);
        g_socket_shutdown (s, FALSE, TRUE, NULL);
        g_assert_true (closed_by_peer (s));
        wait_idle (fx);
        g_assert_cmpuint (egress_test_server_get_connections (raw), ==, 1);
        g_assert_cmpuint (egress_test_server_get_bytes (raw), ==, sizeof hello - 1);
}

static void
test_connection_limit (Fx *fx, gconstpointer data)
{
        GSocket *held[4];
        g_autoptr (GString) r = NULL;
        CorralEgressLimits l;

        corral_egress_proxy_get_limits (fx->proxy, &l);
        l.max_connections = G_N_ELEMENTS (held);
        corral_egress_proxy_set_limits (fx->proxy, &l);
        for (gsize i = 0; i < G_N_ELEMENTS (held); i++) {
                held[i] = egress_test_connect (fx->port);
                g_socket_send (held[i], "G", 1, NULL, NULL);
        }
        for (int i = 0; i < 3000 && corral_egress_proxy_get_active (fx->proxy) < 4; i++)
                g_usleep (10 * 1000);
        r = req (fx, "GET http://a.test/ HTTP/1.0\r\n\r\n");
        assert_refused (r, 503, "connection-limit");
        {
                /* the body is exactly Content-Length bytes */
                g_autofree char *len = egress_test_header (r->str, "Content-Length");
                const char *body = strstr (r->str, "\r\n\r\n") + 4;

                g_assert_cmpuint (strlen (body), ==, g_ascii_strtoull (len, NULL, 10));
        }
        for (gsize i = 0; i < G_N_ELEMENTS (held); i++)
                g_object_unref (held[i]);
        wait_idle (fx);
        g_string_free (r, TRUE);
        r = req (fx, "GET http://a.test/ HTTP/1.0\r\n\r\n");
        assert_refused (r, 403, "default-deny");
}

/* A server that takes longer to answer than the connect timeout is not cut off: only the idle
 * timeout ends a quiet connection. */
static void
test_slow_upstream (Fx *fx, gconstpointer data)
{
        g_autoptr (EgressTestServer) srv = egress_test_server_new (NULL, FALSE);
        guint16 p = egress_test_server_get_port (srv);
        g_autoptr (GString) r = NULL;
        CorralEgressLimits l;

        corral_egress_proxy_get_limits (fx->proxy, &l);
        l.connect_timeout_s = 1;
        corral_egress_proxy_set_limits (fx->proxy, &l);
        set_policy (fx, "{\"allow\":[\"127.0.0.1:%u\"]}", p);
        r = req (fx, "GET http://127.0.0.1:%u/slow?ms=2500 HTTP/1.0\r\n\r\n", p);
        g_assert_cmpuint (egress_test_status (r->str), ==, 204);
}

/* Policy changes apply at once, also to open tunnels. */
static void
test_policy_change (Fx *fx, gconstpointer data)
{
        g_autoptr (EgressTestServer) raw = egress_test_server_new (NULL, TRUE);
        guint16 p = egress_test_server_get_port (raw);
        g_autoptr (GSocket) s = egress_test_connect (fx->port);
        g_autofree char *head = g_strdup_printf ("CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", p);
        const char hello[] = "\x16\x03\x01\x00\x2d\x01\x00\x00\x29\x03\x03"
                             "0123456789abcdef0123456789abcdef\x00\x00\x02\x13\x01\x01\x00";
        g_autoptr (GString) r = NULL;
        g_autoptr (cJSON) rec = NULL;
        g_autofree char *rule = g_strdup_printf ("deny:127.0.0.1:%u", p);
        char buf[64];

        set_policy (fx, "{\"allow\":[\"127.0.0.1:%u\"]}", p);
        g_socket_send (s, head, strlen (head), NULL, NULL);
        g_assert_cmpint (g_socket_receive (s, buf, 39, NULL, NULL), ==, 39);
        g_socket_send (s, hello, sizeof hello - 1, NULL, NULL);
        for (int i = 0; i < 3000 && egress_test_server_get_bytes (raw) < sizeof hello - 1; i++)
                g_usleep (10 * 1000);
        set_policy (fx, "{\"allow\":[],\"deny\":[\"127.0.0.1:%u\"]}", p);
        g_assert_true (closed_by_peer (s));
        rec = last_audit (fx);
        g_assert_cmpstr (cJSON_GetStringValue (cJSON_GetObjectItem (rec, "reason")), ==,
                         "closed: the policy changed");
        r = req (fx, "GET http://127.0.0.1:%u/ HTTP/1.0\r\n\r\n", p);
        assert_refused (r, 403, rule);
}

/* Item 39: a guest decides how many records there are, so the log is bounded. --------------- */

/* Occurrences of denials of host in path (a line with "count": N stands for N). */
static guint64
denials_of (const char *path, const char *host, guint *ret_lines)
{
        g_autofree char *text = NULL;
        g_auto (GStrv) lines = NULL;
        guint64 total = 0;

        *ret_lines = 0;
        if (!g_file_get_contents (path, &text, NULL, NULL))
                return 0;
        lines = g_strsplit (text, "\n", -1);
        for (guint i = 0; lines[i]; i++) {
                g_autoptr (cJSON) rec = cJSON_Parse (lines[i]);
                const cJSON *count = cJSON_GetObjectItem (rec, "count");

                if (!rec ||
                    g_strcmp0 (cJSON_GetStringValue (cJSON_GetObjectItem (rec, "host")), host) != 0)
                        continue;
                g_assert_cmpstr (cJSON_GetStringValue (cJSON_GetObjectItem (rec, "decision")), ==,
                                 "denied");
                total += cJSON_IsNumber (count) ? (guint64) count->valuedouble : 1;
                (*ret_lines)++;
        }
        return total;
}

static void
test_audit_bounded (Fx *fx, gconstpointer data)
{
        g_autofree char *one = g_strconcat (fx->audit, ".1", NULL);
        g_autofree char *two = g_strconcat (fx->audit, ".2", NULL);
        g_autoptr (cJSON) last = NULL;
        guint lines = 0;
        gint64 deadline;
        struct stat st;

        /* The first denial is a line at once: the assistant loop reads it right after the call. */
        g_string_free (req (fx, "GET http://flood.corral.test/ HTTP/1.0\r\n\r\n"), TRUE);
        wait_idle (fx);
        g_assert_cmpuint (denials_of (fx->audit, "flood.corral.test", &lines), ==, 1);
        /* Its repeats take no room while they come... */
        for (guint i = 1; i < 300; i++) {
                g_autoptr (GString) r = req (fx, "GET http://flood.corral.test/ HTTP/1.0\r\n\r\n");
                assert_refused (r, 403, "default-deny");
        }
        wait_idle (fx);
        g_assert_cmpint (g_stat (fx->audit, &st), ==, 0);
        g_assert_cmpint (st.st_size, <, 2048);
        /* ... and the watchdog writes them as one line with their count, none lost. */
        deadline = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;
        while (denials_of (fx->audit, "flood.corral.test", &lines) < 300 &&
               g_get_monotonic_time () < deadline)
                g_usleep (20 * 1000);
        g_assert_cmpuint (denials_of (fx->audit, "flood.corral.test", &lines), ==, 300);
        g_assert_cmpuint (lines, ==, 2);

        /* Different denials rotate the log at its size and keep its generations. */
        corral_egress_proxy_set_audit_limits (fx->proxy, 4096, 1);
        for (guint i = 0; i < 100; i++) {
                g_autoptr (GString) r = req (fx, "GET http://h%u.corral.test/ HTTP/1.0\r\n\r\n", i);
                assert_refused (r, 403, "default-deny");
        }
        wait_idle (fx);
        corral_egress_proxy_flush_audit (fx->proxy);
        g_assert_cmpint (g_stat (fx->audit, &st), ==, 0);
        g_assert_cmpint (st.st_size, <=, 4096);
        g_assert_cmpint (g_stat (one, &st), ==, 0);
        g_assert_cmpint (st.st_size, <=, 4096);
        g_assert_false (g_file_test (two, G_FILE_TEST_EXISTS));
        last = last_audit (fx);
        g_assert_cmpstr (cJSON_GetStringValue (cJSON_GetObjectItem (last, "host")), ==,
                         "h99.corral.test");
        g_unlink (one);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
#define ADD(path, fn) g_test_add (path, Fx, NULL, fx_setup, fn, fx_teardown)
        ADD ("/egress-proxy/deny/default", test_default_deny);
        ADD ("/egress-proxy/deny/preset-none-and-deny-wins", test_preset_none_and_deny_wins);
        ADD ("/egress-proxy/address/ip-literals", test_ip_literals);
        ADD ("/egress-proxy/address/exact-rule", test_exact_address_rule);
        ADD ("/egress-proxy/address/host-alias", test_host_alias);
        ADD ("/egress-proxy/dns/private-answer", test_dns_private);
        ADD ("/egress-proxy/dns/resolved-once", test_dns_pinned);
        ADD ("/egress-proxy/host/strings", test_host_strings);
        ADD ("/egress-proxy/host/absolute-vs-host", test_host_mismatch);
        ADD ("/egress-proxy/connect/sni", test_connect_sni);
        ADD ("/egress-proxy/redirect/not-followed", test_redirect);
        ADD ("/egress-proxy/limits/large-transfers", test_large_transfers);
        ADD ("/egress-proxy/limits/slow-and-half-closed", test_slow_clients);
        ADD ("/egress-proxy/limits/idle-tunnel", test_idle_tunnel);
        ADD ("/egress-proxy/limits/connections", test_connection_limit);
        ADD ("/egress-proxy/limits/slow-upstream-not-cut", test_slow_upstream);
        ADD ("/egress-proxy/policy/applies-at-once", test_policy_change);
        ADD ("/egress-proxy/audit/bounded", test_audit_bounded);
        return g_test_run ();
}
