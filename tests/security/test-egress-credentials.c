/* test-egress-credentials.c — credential injection (SECURITY-TESTS items 18 and 20) with real
 * TLS on loopback: curl through the in-process proxy to TLS origin servers whose certificates
 * come from a test CA (configured as the proxy's extra upstream CA). A canary secret must
 * appear only at the origin, only on requests to its bound host.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-proxy.h"
#include "egress-test.h"

#include <glib/gstdio.h>
#include <string.h>

#define CANARY "canary-5ecret-4d1f0b9a77"
#define OTHER_CANARY "canary-other-91c2e8"

typedef struct {
        CorralEgressProxy *proxy;
        EgressTestResolver *resolver;
        CorralEgressCredentials *creds;
        EgressTestServer *bound; /* api.bound.test */
        EgressTestServer *other; /* other.test */
        EgressTestServer *bound2; /* api.bound.test on another port: no binding names it */
        guint16 port;
        char *certs;
        char *test_ca;
        char *session_ca;
        char *audit;
        char *ph; /* API_TOKEN */
        char *basic_ph; /* REGISTRY (basic auth) */
        char *other_ph; /* OTHER_TOKEN, bound to elsewhere.test */
        char *bound_host; /* api.bound.test:PORT */
} Fx;

static GTlsCertificate *
load_cert (Fx *fx, const char *name)
{
        g_autofree char *pem = g_strdup_printf ("%s/%s.pem", fx->certs, name);
        g_autofree char *key = g_strdup_printf ("%s/%s.key", fx->certs, name);
        g_autoptr (GError) error = NULL;
        GTlsCertificate *c = g_tls_certificate_new_from_files (pem, key, &error);

        g_assert_no_error (error);
        return c;
}

static void
add_binding (Fx *fx,
             char **ret_ph,
             const char *name,
             const char *host,
             const char *header,
             const char *format,
             const char *value)
{
        const char *hosts[] = { host, NULL };
        g_autoptr (CorralSecretInfo) info =
                corral_secret_info_new (name, hosts, header, format, NULL);

        g_assert_nonnull (info);
        *ret_ph = corral_egress_credentials_add (fx->creds, info, value);
}

static void
fx_setup (Fx *fx, gconstpointer data)
{
        const char *names[] = { "api.bound.test", "other.test", NULL };
        g_autoptr (GError) error = NULL;
        g_autoptr (GTlsCertificate) bound = NULL, other = NULL;
        g_autoptr (CorralEgressPolicy) p =
                corral_egress_policy_new (CORRAL_EGRESS_PRESET_ALLOWLIST);
        g_autoptr (GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
        g_autoptr (GSocketAddress) addr = g_inet_socket_address_new (lo, 0);
        g_autoptr (GSocketAddress) bound_addr = NULL;
        g_autofree char *pem = NULL, *ra = NULL, *rb = NULL, *rc = NULL;

        fx->certs = egress_test_make_certs (names);
        fx->test_ca = g_build_filename (fx->certs, "ca.pem", NULL);
        fx->session_ca = g_build_filename (fx->certs, "session-ca.pem", NULL);
        fx->audit = g_build_filename (fx->certs, "audit.jsonl", NULL);
        bound = load_cert (fx, "api.bound.test");
        other = load_cert (fx, "other.test");
        fx->bound = egress_test_server_new (bound, FALSE);
        fx->other = egress_test_server_new (other, FALSE);
        fx->bound2 = egress_test_server_new (bound, FALSE);
        ra = g_strdup_printf ("127.0.0.1:%u", egress_test_server_get_port (fx->bound));
        rb = g_strdup_printf ("127.0.0.1:%u", egress_test_server_get_port (fx->other));
        rc = g_strdup_printf ("127.0.0.1:%u", egress_test_server_get_port (fx->bound2));
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, "api.bound.test", NULL));
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, "other.test", NULL));
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, ra, NULL));
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, rb, NULL));
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, rc, NULL));
        fx->proxy = corral_egress_proxy_new (p);
        fx->resolver = egress_test_resolver_new ();
        egress_test_resolver_add (fx->resolver, "api.bound.test", "127.0.0.1");
        egress_test_resolver_add (fx->resolver, "other.test", "127.0.0.1");
        corral_egress_proxy_set_resolver (fx->proxy, G_RESOLVER (fx->resolver));
        g_assert_true (corral_egress_proxy_set_audit_path (fx->proxy, fx->audit, NULL));
        g_assert_true (corral_egress_proxy_set_upstream_ca_file (fx->proxy, fx->test_ca, &error));
        g_assert_no_error (error);
        fx->creds = corral_egress_credentials_new ();
        /* A binding names one port of its host: the test origin's. */
        fx->bound_host =
                g_strdup_printf ("api.bound.test:%u", egress_test_server_get_port (fx->bound));
        add_binding (fx, &fx->ph, "API_TOKEN", fx->bound_host, "authorization", "Bearer {}",
                     CANARY);
        add_binding (fx, &fx->basic_ph, "REGISTRY", fx->bound_host, "basic", "{}", CANARY "-b");
        add_binding (fx, &fx->other_ph, "OTHER_TOKEN", "elsewhere.test", "authorization",
                     "Bearer {}", OTHER_CANARY);
        g_assert_true (corral_egress_proxy_set_credentials (fx->proxy, fx->creds, &error));
        pem = corral_egress_proxy_dup_ca_pem (fx->proxy, &error);
        g_assert_no_error (error);
        g_assert_true (g_file_set_contents (fx->session_ca, pem, -1, NULL));
        g_assert_true (corral_egress_proxy_listen (fx->proxy, addr, &bound_addr, &error));
        fx->port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound_addr));
}

/* The canary never reaches a log. */
static void
assert_audit_clean (Fx *fx)
{
        g_autofree char *text = NULL;

        for (int i = 0; i < 3000 && corral_egress_proxy_get_active (fx->proxy) > 0; i++)
                g_usleep (10 * 1000);
        g_assert_true (g_file_get_contents (fx->audit, &text, NULL, NULL));
        g_assert_null (strstr (text, "canary"));
}

static void
fx_teardown (Fx *fx, gconstpointer data)
{
        g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", fx->certs);

        assert_audit_clean (fx);
        corral_egress_proxy_shutdown (fx->proxy);
        g_clear_object (&fx->proxy);
        g_clear_object (&fx->resolver);
        corral_egress_credentials_revoke (fx->creds);
        corral_egress_credentials_unref (fx->creds);
        egress_test_server_free (fx->bound);
        egress_test_server_free (fx->other);
        egress_test_server_free (fx->bound2);
        g_assert_true (g_str_has_prefix (fx->certs, g_get_tmp_dir ()));
        g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL);
        g_free (fx->certs);
        g_free (fx->test_ca);
        g_free (fx->session_ca);
        g_free (fx->audit);
        g_free (fx->ph);
        g_free (fx->basic_ph);
        g_free (fx->other_ph);
        g_free (fx->bound_host);
}

/* curl through the proxy; returns stdout+stderr (transfer full). */
static char *
curl (Fx *fx, const char *ca, const char *url, const char *header, const char *user)
{
        g_autofree char *proxy = g_strdup_printf ("http://127.0.0.1:%u", fx->port);
        g_autoptr (GPtrArray) argv = g_ptr_array_new ();
        g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (
                G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_MERGE);
        g_autoptr (GSubprocess) p = NULL;
        g_autoptr (GError) error = NULL;
        const char *vars[] = { "http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy",
                               "ALL_PROXY",  "no_proxy",    "NO_PROXY" };
        char *out = NULL;

        for (gsize i = 0; i < G_N_ELEMENTS (vars); i++)
                g_subprocess_launcher_unsetenv (l, vars[i]);
        g_ptr_array_add (argv, (gpointer) "curl");
        g_ptr_array_add (argv, (gpointer) "-si");
        g_ptr_array_add (argv, (gpointer) "--suppress-connect-headers");
        g_ptr_array_add (argv, (gpointer) "--max-time");
        g_ptr_array_add (argv, (gpointer) "30");
        g_ptr_array_add (argv, (gpointer) "-x");
        g_ptr_array_add (argv, proxy);
        g_ptr_array_add (argv, (gpointer) "--cacert");
        g_ptr_array_add (argv, (gpointer) ca);
        if (header) {
                g_ptr_array_add (argv, (gpointer) "-H");
                g_ptr_array_add (argv, (gpointer) header);
        }
        if (user) {
                g_ptr_array_add (argv, (gpointer) "-u");
                g_ptr_array_add (argv, (gpointer) user);
        }
        g_ptr_array_add (argv, (gpointer) url);
        g_ptr_array_add (argv, NULL);
        p = g_subprocess_launcher_spawnv (l, (const char *const *) argv->pdata, &error);
        g_assert_no_error (error);
        g_subprocess_communicate_utf8 (p, NULL, NULL, &out, NULL, &error);
        g_assert_no_error (error);
        return out;
}

static char *
url (EgressTestServer *srv, const char *host, const char *scheme)
{
        return g_strdup_printf ("%s://%s:%u/echo", scheme, host, egress_test_server_get_port (srv));
}

/* Item 18: swapped for the bound host over TLS, and only there. ---------------------------------- */

static void
test_bearer_swapped (Fx *fx, gconstpointer data)
{
        g_autofree char *u = url (fx->bound, "api.bound.test", "https");
        g_autofree char *hdr = g_strdup_printf ("Authorization: Bearer %s", fx->ph);
        g_autofree char *out = curl (fx, fx->session_ca, u, hdr, NULL);
        g_autofree char *heads = egress_test_server_dup_heads (fx->bound);
        g_autofree char *audit = NULL;

        /* the origin got the secret */
        g_assert_nonnull (strstr (heads, "Authorization: Bearer " CANARY "\r\n"));
        g_assert_null (strstr (heads, fx->ph));
        /* the guest side sees the echo with the secret masked */
        g_assert_true (g_str_has_prefix (out, "HTTP/1.1 200"));
        g_assert_nonnull (strstr (out, "GET /echo HTTP/1.1"));
        g_assert_null (strstr (out, CANARY));
        g_assert_nonnull (strstr (out, "Authorization: Bearer ************************"));
        assert_audit_clean (fx);
        g_assert_true (g_file_get_contents (fx->audit, &audit, NULL, NULL));
        g_assert_nonnull (strstr (audit, "\"credential\":\"API_TOKEN\""));
}

static void
test_basic_swapped (Fx *fx, gconstpointer data)
{
        g_autofree char *u = url (fx->bound, "api.bound.test", "https");
        g_autofree char *user = g_strdup_printf ("deploy:%s", fx->basic_ph);
        g_autofree char *out = curl (fx, fx->session_ca, u, NULL, user);
        g_autofree char *heads = egress_test_server_dup_heads (fx->bound);
        g_autofree char *want = g_base64_encode ((const guchar *) "deploy:" CANARY "-b",
                                                 strlen ("deploy:" CANARY "-b"));

        g_assert_true (g_str_has_prefix (out, "HTTP/1.1 200"));
        g_assert_nonnull (strstr (heads, want));
        g_assert_null (strstr (out, want));
}

/* A host without a binding: a plain tunnel, the origin sees only the placeholder. */
static void
test_unbound_host_gets_placeholder (Fx *fx, gconstpointer data)
{
        g_autofree char *u = url (fx->other, "other.test", "https");
        g_autofree char *hdr = g_strdup_printf ("Authorization: Bearer %s", fx->ph);
        g_autofree char *out = curl (fx, fx->test_ca, u, hdr, NULL);
        g_autofree char *heads = egress_test_server_dup_heads (fx->other);

        g_assert_true (g_str_has_prefix (out, "HTTP/1.1 200"));
        g_assert_nonnull (strstr (heads, fx->ph));
        g_assert_null (strstr (heads, "canary"));
}

static void
assert_blocked (const char *out, const char *status, const char *rule)
{
        g_autofree char *want = g_strdup_printf ("X-Corral-Blocked: %s\r\n", rule);

        if (!g_str_has_prefix (out, status) || !strstr (out, want))
                g_error ("expected %s %s, got: %s", status, rule, out);
        g_assert_nonnull (strstr (out, "blocked by sandbox: "));
        g_assert_null (strstr (out, "canary"));
}

/* The placeholder only in its binding's header and form; never to another bound host. */
static void
test_misplaced (Fx *fx, gconstpointer data)
{
        g_autofree char *u = url (fx->bound, "api.bound.test", "https");
        g_autofree char *h1 = g_strdup_printf ("X-Echo: %s", fx->ph);
        g_autofree char *h2 = g_strdup_printf ("Authorization: token %s", fx->ph);
        g_autofree char *h3 = g_strdup_printf ("Authorization: Bearer %s", fx->other_ph);
        g_autofree char *h4 = g_strdup_printf ("Authorization: Bearer %s", fx->basic_ph);
        g_autofree char *o1 = curl (fx, fx->session_ca, u, h1, NULL);
        g_autofree char *o2 = curl (fx, fx->session_ca, u, h2, NULL);
        g_autofree char *o3 = curl (fx, fx->session_ca, u, h3, NULL);
        g_autofree char *o4 = curl (fx, fx->session_ca, u, h4, NULL);
        g_autofree char *heads = egress_test_server_dup_heads (fx->bound);

        assert_blocked (o1, "HTTP/1.1 403", "credential-misplaced");
        assert_blocked (o2, "HTTP/1.1 403", "credential-misplaced");
        assert_blocked (o3, "HTTP/1.1 403", "credential-not-for-host");
        assert_blocked (o4, "HTTP/1.1 403", "credential-misplaced");
        g_assert_cmpstr (heads, ==, "");
}

/* Plain HTTP never carries a credential: refused before any connection. */
static void
test_plain_http_refused (Fx *fx, gconstpointer data)
{
        g_autofree char *u = url (fx->bound, "api.bound.test", "http");
        g_autofree char *hdr = g_strdup_printf ("Authorization: Bearer %s", fx->ph);
        g_autofree char *user = g_strdup_printf ("deploy:%s", fx->basic_ph);
        g_autofree char *o1 = curl (fx, fx->session_ca, u, hdr, NULL);
        g_autofree char *o2 = curl (fx, fx->session_ca, u, NULL, user);

        assert_blocked (o1, "HTTP/1.1 403", "credential-needs-tls");
        assert_blocked (o2, "HTTP/1.1 403", "credential-needs-tls");
        g_assert_cmpuint (egress_test_server_get_connections (fx->bound), ==, 0);
}

/* The upstream certificate is verified: without the test CA the request never leaves. */
static void
test_upstream_verified (Fx *fx, gconstpointer data)
{
        g_autofree char *u = url (fx->bound, "api.bound.test", "https");
        g_autofree char *hdr = g_strdup_printf ("Authorization: Bearer %s", fx->ph);
        g_autofree char *out = NULL, *heads = NULL;

        /* the session CA does not vouch for the origin */
        g_assert_true (corral_egress_proxy_set_upstream_ca_file (fx->proxy, fx->session_ca, NULL));
        out = curl (fx, fx->session_ca, u, hdr, NULL);
        assert_blocked (out, "HTTP/1.1 502", "upstream-certificate");
        heads = egress_test_server_dup_heads (fx->bound);
        g_assert_cmpstr (heads, ==, "");
}

static void
test_environ (Fx *fx, gconstpointer data)
{
        g_auto (GStrv) env = corral_egress_credentials_dup_environ (fx->creds);
        g_autofree char *want = g_strdup_printf ("API_TOKEN=%s", fx->ph);

        g_assert_cmpuint (g_strv_length (env), ==, 3);
        g_assert_cmpstr (env[0], ==, want);
        for (char **e = env; *e; e++) {
                const char *v = strchr (*e, '=') + 1;

                g_assert_null (strstr (*e, "canary"));
                g_assert_cmpuint (strlen (v), ==, CORRAL_PLACEHOLDER_LEN);
                g_assert_true (g_str_has_prefix (v, CORRAL_PLACEHOLDER_PREFIX));
                for (const char *c = v + 10; *c; c++)
                        g_assert_true (g_ascii_isxdigit (*c) && !g_ascii_isupper (*c));
        }
        g_assert_cmpstr (fx->ph, !=, fx->basic_ph);
}

/* Item 20: placeholders die with their session; a replayed or made-up token is refused. */
static void
test_placeholder_dies_with_session (Fx *fx, gconstpointer data)
{
        g_autofree char *u = url (fx->bound, "api.bound.test", "https");
        g_autofree char *old = g_strdup_printf ("Authorization: Bearer %s", fx->ph);
        g_autofree char *fake = g_strdup ("Authorization: Bearer corral-ph-"
                                          "00000000000000000000000000000000");
        g_autofree char *fresh = NULL, *o1 = NULL, *o2 = NULL, *o3 = NULL, *ph2 = NULL;
        g_autofree char *heads = NULL;
        g_autoptr (CorralEgressCredentials) next = corral_egress_credentials_new ();
        const char *hosts[] = { fx->bound_host, NULL };
        g_autoptr (CorralSecretInfo) info =
                corral_secret_info_new ("API_TOKEN", hosts, "authorization", "Bearer {}", NULL);

        /* session end, then a new session binding the same secret */
        corral_egress_credentials_revoke (fx->creds);
        ph2 = corral_egress_credentials_add (next, info, CANARY);
        g_assert_cmpstr (ph2, !=, fx->ph);
        g_assert_true (corral_egress_proxy_set_credentials (fx->proxy, next, NULL));
        o1 = curl (fx, fx->session_ca, u, old, NULL);
        assert_blocked (o1, "HTTP/1.1 403", "unknown-placeholder");
        o2 = curl (fx, fx->session_ca, u, fake, NULL);
        assert_blocked (o2, "HTTP/1.1 403", "unknown-placeholder");
        heads = egress_test_server_dup_heads (fx->bound);
        g_assert_cmpstr (heads, ==, "");
        fresh = g_strdup_printf ("Authorization: Bearer %s", ph2);
        o3 = curl (fx, fx->session_ca, u, fresh, NULL);
        g_assert_true (g_str_has_prefix (o3, "HTTP/1.1 200"));
        corral_egress_credentials_revoke (next);
}

/* K4: a binding names one port ---------------------------------------------------------------- */

/* curl through the proxy with extra arguments (NULL-terminated); stdout+stderr. */
static char *
curl_args (Fx *fx, const char *ca, const char *url, ...)
{
        g_autofree char *proxy = g_strdup_printf ("http://127.0.0.1:%u", fx->port);
        const char *base[] = { "curl",       "-si",      "--suppress-connect-headers",
                               "--max-time", "30",       "-x",
                               proxy,        "--cacert", ca };
        g_autoptr (GPtrArray) argv = g_ptr_array_new ();
        g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (
                G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_MERGE);
        g_autoptr (GSubprocess) p = NULL;
        g_autoptr (GError) error = NULL;
        const char *arg;
        char *out = NULL;
        va_list ap;

        g_subprocess_launcher_unsetenv (l, "https_proxy");
        g_subprocess_launcher_unsetenv (l, "HTTPS_PROXY");
        g_subprocess_launcher_unsetenv (l, "NO_PROXY");
        g_subprocess_launcher_unsetenv (l, "no_proxy");
        for (gsize i = 0; i < G_N_ELEMENTS (base); i++)
                g_ptr_array_add (argv, (gpointer) base[i]);
        va_start (ap, url);
        while ((arg = va_arg (ap, const char *)))
                g_ptr_array_add (argv, (gpointer) arg);
        va_end (ap);
        g_ptr_array_add (argv, (gpointer) url);
        g_ptr_array_add (argv, NULL);
        p = g_subprocess_launcher_spawnv (l, (const char *const *) argv->pdata, &error);
        g_assert_no_error (error);
        g_subprocess_communicate_utf8 (p, NULL, NULL, &out, NULL, &error);
        g_assert_no_error (error);
        return out;
}

static void
test_binding_names_port (Fx *fx, gconstpointer data)
{
        guint16 port = egress_test_server_get_port (fx->bound);
        g_autoptr (CorralEgressCredentials) c = corral_egress_credentials_new ();
        const char *plain[] = { "api.example.com", NULL };
        const char *ported[] = { "api.example.com:8443", NULL };
        g_autoptr (CorralSecretInfo) a = corral_secret_info_new ("A", plain, "x-key", "{}", NULL);
        g_autoptr (CorralSecretInfo) b = corral_secret_info_new ("B", ported, "x-key", "{}", NULL);

        g_assert_cmpstr (a->hosts[0], ==, "api.example.com");
        g_assert_cmpstr (b->hosts[0], ==, "api.example.com:8443");
        g_free (corral_egress_credentials_add (c, a, "v"));
        g_assert_true (corral_egress_credentials_binds_host (c, "api.example.com", 443));
        g_assert_false (corral_egress_credentials_binds_host (c, "api.example.com", 8443));
        g_assert_false (corral_egress_credentials_binds_host (c, "api.example.com", 80));
        g_free (corral_egress_credentials_add (c, b, "w"));
        g_assert_true (corral_egress_credentials_binds_host (c, "api.example.com", 8443));
        g_assert_true (corral_egress_credentials_binds_host (fx->creds, "api.bound.test", port));
        g_assert_false (corral_egress_credentials_binds_host (fx->creds, "api.bound.test", 443));
        corral_egress_credentials_revoke (c);
}

/* CONNECT to another port of the bound name: a plain tunnel, the placeholder stays one. */
static void
test_other_port_not_injected (Fx *fx, gconstpointer data)
{
        g_autofree char *u = url (fx->bound2, "api.bound.test", "https");
        g_autofree char *hdr = g_strdup_printf ("Authorization: Bearer %s", fx->ph);
        g_autofree char *out = curl (fx, fx->test_ca, u, hdr, NULL);
        g_autofree char *heads = egress_test_server_dup_heads (fx->bound2);

        g_assert_true (g_str_has_prefix (out, "HTTP/1.1 200"));
        g_assert_nonnull (strstr (heads, fx->ph));
        g_assert_null (strstr (heads, "canary"));
}

/* The bound host redirects to another port of its name; a client that follows with its
 * headers (curl --location-trusted, urllib) takes only the placeholder there. */
static void
test_redirect_other_port_not_injected (Fx *fx, gconstpointer data)
{
        g_autofree char *both = g_build_filename (fx->certs, "both-cas.pem", NULL);
        g_autofree char *s = NULL, *t = NULL, *all = NULL, *out = NULL, *heads = NULL;
        g_autofree char *target = url (fx->bound2, "api.bound.test", "https");
        g_autofree char *u = g_strdup_printf ("https://api.bound.test:%u/redirect?to=%s",
                                              egress_test_server_get_port (fx->bound), target);
        g_autofree char *hdr = g_strdup_printf ("Authorization: Bearer %s", fx->ph);

        g_assert_true (g_file_get_contents (fx->session_ca, &s, NULL, NULL));
        g_assert_true (g_file_get_contents (fx->test_ca, &t, NULL, NULL));
        all = g_strconcat (s, t, NULL);
        g_assert_true (g_file_set_contents (both, all, -1, NULL));
        out = curl_args (fx, both, u, "--location-trusted", "-H", hdr, NULL);
        g_assert_nonnull (strstr (out, "HTTP/1.1 302"));
        g_assert_nonnull (strstr (out, "HTTP/1.1 200"));
        heads = egress_test_server_dup_heads (fx->bound2);
        g_assert_nonnull (strstr (heads, fx->ph));
        g_assert_null (strstr (heads, "canary"));
        g_free (heads);
        heads = egress_test_server_dup_heads (fx->bound);
        g_assert_nonnull (strstr (heads, CANARY)); /* the bound port itself did get it */
}

/* K4: a basic binding fills only the password of Authorization: Basic. */
static void
test_basic_only_in_authorization (Fx *fx, gconstpointer data)
{
        g_autofree char *u = url (fx->bound, "api.bound.test", "https");
        g_autofree char *h1 = g_strdup_printf ("Basic: Bearer %s", fx->basic_ph);
        g_autofree char *h2 = g_strdup_printf ("Basic: %s", fx->basic_ph);
        g_autofree char *h3 = g_strdup_printf ("Authorization: %s", fx->basic_ph);
        g_autofree char *o1 = curl (fx, fx->session_ca, u, h1, NULL);
        g_autofree char *o2 = curl (fx, fx->session_ca, u, h2, NULL);
        g_autofree char *o3 = curl (fx, fx->session_ca, u, h3, NULL);
        g_autofree char *heads = egress_test_server_dup_heads (fx->bound);

        assert_blocked (o1, "HTTP/1.1 403", "credential-misplaced");
        assert_blocked (o2, "HTTP/1.1 403", "credential-misplaced");
        assert_blocked (o3, "HTTP/1.1 403", "credential-misplaced");
        g_assert_cmpstr (heads, ==, "");
}

/* N9 inside a tunnel: the head timeout runs until the inner head is complete, however slowly
 * its bytes come, and nothing is connected upstream before it is. */
static void
test_inner_head_timeout (Fx *fx, gconstpointer data)
{
        guint16 port = egress_test_server_get_port (fx->bound);
        g_autoptr (GSocketClient) sc = g_socket_client_new ();
        g_autoptr (GSocketConnection) c = NULL;
        g_autoptr (GIOStream) tls = NULL;
        g_autoptr (GTlsDatabase) db = NULL;
        g_autoptr (GSocketConnectable) id = g_network_address_new ("api.bound.test", port);
        g_autoptr (GError) error = NULL;
        g_autofree char *connect = g_strdup_printf (
                "CONNECT api.bound.test:%u HTTP/1.1\r\nHost: api.bound.test:%u\r\n\r\n", port,
                port);
        g_autofree char *audit = NULL;
        GOutputStream *out;
        char reply[64] = { 0 };
        gsize got = 0;
        CorralEgressLimits limits;
        gint64 start, gone = 0;
        /* The timeout covers the TLS handshake too: under valgrind on a busy machine that alone
         * took over a second. */
        guint scale = g_getenv ("CORRAL_VALGRIND") ? 4 : 1;

        corral_egress_proxy_get_limits (fx->proxy, &limits);
        limits.header_timeout_ms = 1000 * scale;
        corral_egress_proxy_set_limits (fx->proxy, &limits);
        g_socket_client_set_enable_proxy (sc, FALSE);
        c = g_socket_client_connect_to_host (sc, "127.0.0.1", fx->port, NULL, &error);
        g_assert_no_error (error);
        start = g_get_monotonic_time ();
        out = g_io_stream_get_output_stream (G_IO_STREAM (c));
        g_output_stream_write_all (out, connect, strlen (connect), NULL, NULL, &error);
        g_assert_no_error (error);
        while (!strstr (reply, "\r\n\r\n") && got < sizeof reply - 1 &&
               g_input_stream_read (g_io_stream_get_input_stream (G_IO_STREAM (c)), reply + got, 1,
                                    NULL, NULL) == 1)
                got++;
        g_assert_true (g_str_has_prefix (reply, "HTTP/1.1 200"));
        db = g_tls_file_database_new (fx->session_ca, &error);
        g_assert_no_error (error);
        tls = g_tls_client_connection_new (G_IO_STREAM (c), id, &error);
        g_assert_no_error (error);
        g_tls_connection_set_database (G_TLS_CONNECTION (tls), db);
        g_tls_connection_handshake (G_TLS_CONNECTION (tls), NULL, &error);
        g_assert_no_error (error);
        out = g_io_stream_get_output_stream (tls);
        g_output_stream_write_all (out, "GET /echo HTTP/1.1\r\n", 20, NULL, NULL, NULL);
        /* one header line every 200 ms: each byte would reset an idle timeout */
        while (g_get_monotonic_time () - start < 5 * scale * G_USEC_PER_SEC && !gone) {
                g_output_stream_write_all (out, "X-Slow: 1\r\n", 11, NULL, NULL, NULL);
                g_usleep (200 * 1000);
                g_assert_cmpuint (egress_test_server_get_connections (fx->bound), ==, 0);
                if (corral_egress_proxy_get_active (fx->proxy) == 0)
                        gone = g_get_monotonic_time () - start;
        }
        g_assert_cmpint (gone, >, 0);
        g_assert_cmpint (gone, <, 3 * scale * G_USEC_PER_SEC);
        g_assert_cmpuint (egress_test_server_get_connections (fx->bound), ==, 0);
        g_assert_true (g_file_get_contents (fx->audit, &audit, NULL, NULL));
        g_assert_nonnull (strstr (audit, "\"reason\":\"header timeout\""));
}

/* The organisation's credential keys on a binding (SECURITY.md M8). */
static CorralPolicy *
policy_of (const char *json)
{
        const char *origin = "/etc/corral/managed.json";
        gsize len = strlen (json);
        g_autoptr (GError) error = NULL;
        CorralPolicy *p = corral_policy_parse_texts (1, &origin, &json, &len, &error);

        g_assert_no_error (error);
        return p;
}

static void
test_credentials_policy (void)
{
        const char *hosts[] = { "api.github.com", "evil.example", NULL };
        g_autoptr (CorralSecretInfo) info =
                corral_secret_info_new ("GITHUB_TOKEN", hosts, "authorization", "Bearer {}", NULL);
        g_autoptr (GError) error = NULL;

        g_assert_nonnull (info);
        /* No policy: the binding as the person made it. */
        {
                g_autoptr (CorralSecretInfo) same =
                        corral_egress_credentials_apply_policy (NULL, info, &error);

                g_assert_no_error (error);
                g_assert_cmpstrv (same->hosts, hosts);
        }
        /* A name it does not allow: not bound, and why. */
        {
                g_autoptr (CorralPolicy) p =
                        policy_of ("{\"credentials\": {\"allowedNames\": [\"NPM_TOKEN\"]}}");

                g_assert_null (corral_egress_credentials_apply_policy (p, info, &error));
                g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED);
                g_clear_error (&error);
        }
        /* Hosts it does not allow are dropped; none left: not bound. */
        {
                g_autoptr (CorralPolicy) p = policy_of ("{\"credentials\": {\"allowedHosts\": "
                                                        "[\"*.github.com\", \"api.github.com\"]}}");
                g_autoptr (CorralPolicy) none =
                        policy_of ("{\"credentials\": {\"allowedHosts\": [\"gitlab.example\"]}}");
                g_autoptr (CorralSecretInfo) narrowed =
                        corral_egress_credentials_apply_policy (p, info, &error);
                const char *want[] = { "api.github.com", NULL };

                g_assert_no_error (error);
                g_assert_cmpstrv (narrowed->hosts, want);
                g_assert_null (corral_egress_credentials_apply_policy (none, info, &error));
                g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED);
                g_clear_error (&error);
        }
        /* The organisation's binding of that name: its hosts and header, the person's value. */
        {
                g_autoptr (CorralPolicy) p =
                        policy_of ("{\"credentials\": {\"bindings\": [{\"name\": \"GITHUB_TOKEN\", "
                                   "\"hosts\": [\"api.github.com\", \"uploads.github.com\"], "
                                   "\"header\": \"X-Api-Key\"}]}}");
                g_autoptr (CorralSecretInfo) org =
                        corral_egress_credentials_apply_policy (p, info, &error);
                const char *want[] = { "api.github.com", "uploads.github.com", NULL };

                g_assert_no_error (error);
                g_assert_cmpstrv (org->hosts, want);
                g_assert_cmpstr (org->header, ==, "x-api-key");
                g_assert_cmpstr (org->format, ==, "Bearer {}");
        }
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
#define ADD(path, fn) g_test_add (path, Fx, NULL, fx_setup, fn, fx_teardown)
        ADD ("/egress-cred/bearer-swapped-for-bound-host", test_bearer_swapped);
        ADD ("/egress-cred/basic-swapped-for-bound-host", test_basic_swapped);
        ADD ("/egress-cred/unbound-host-gets-placeholder", test_unbound_host_gets_placeholder);
        ADD ("/egress-cred/misplaced-refused", test_misplaced);
        ADD ("/egress-cred/plain-http-refused", test_plain_http_refused);
        ADD ("/egress-cred/upstream-verified", test_upstream_verified);
        ADD ("/egress-cred/environ-has-placeholders-only", test_environ);
        ADD ("/egress-cred/placeholder-dies-with-session", test_placeholder_dies_with_session);
        ADD ("/egress-cred/binding-names-port", test_binding_names_port);
        ADD ("/egress-cred/other-port-not-injected", test_other_port_not_injected);
        ADD ("/egress-cred/redirect-other-port-not-injected",
             test_redirect_other_port_not_injected);
        ADD ("/egress-cred/basic-only-in-authorization", test_basic_only_in_authorization);
        ADD ("/egress-cred/inner-head-timeout", test_inner_head_timeout);
        g_test_add_func ("/egress-cred/policy", test_credentials_policy);
        return g_test_run ();
}
