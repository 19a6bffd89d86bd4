/* test-egress-echo.c — a bound host that reflects what it receives (SECURITY.md K5, K9) with
 * real TLS on loopback: curl through the in-process proxy to a TLS origin whose certificate
 * comes from a test CA. The origin echoes the request head (and so the injected secret) back
 * encoded in the ways hostile agents asked for: base64 at every alignment, hex, reversed, JSON
 * and HTML escapes, percent-encoded in a Location, split across chunks, gzip, a byte range.
 * Each reply is decoded here, independently of the proxy's own code, and must not hold the
 * secret. Sending a secret's real value from the guest ends the session.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-mask.h"
#include "egress-proxy.h"
#include "egress-test.h"

#include <stdio.h>
#include <string.h>

#define CANARY "canary-echo-5f0a9c2e71d4b3"
#define BASIC_CANARY "canary-echo-basic-88e1f04a"

typedef struct {
        CorralEgressProxy *proxy;
        EgressTestResolver *resolver;
        CorralEgressCredentials *creds;
        EgressTestServer *bound; /* api.bound.test, TLS */
        EgressTestServer *plain; /* other.test, plain HTTP */
        guint16 port;
        char *certs, *test_ca, *session_ca, *audit;
        char *ph, *basic_ph;
        char *ended_name; /* what "session-ended" said */
        guint ended_count;
} Fx;

static void
on_session_ended (CorralEgressProxy *proxy, const char *name, const char *host, gpointer data)
{
        Fx *fx = data;

        g_free (fx->ended_name);
        fx->ended_name = g_strdup (name);
        fx->ended_count++;
}

static char *
bind (Fx *fx, const char *name, const char *header, const char *format, const char *value)
{
        g_autofree char *host =
                g_strdup_printf ("api.bound.test:%u", egress_test_server_get_port (fx->bound));
        const char *hosts[] = { host, NULL };
        g_autoptr (CorralSecretInfo) info =
                corral_secret_info_new (name, hosts, header, format, NULL);

        g_assert_nonnull (info);
        return corral_egress_credentials_add (fx->creds, info, value);
}

static void
fx_setup (Fx *fx, gconstpointer data)
{
        const char *names[] = { "api.bound.test", NULL };
        g_autoptr (GError) error = NULL;
        g_autoptr (GTlsCertificate) cert = NULL;
        g_autoptr (CorralEgressPolicy) p =
                corral_egress_policy_new (CORRAL_EGRESS_PRESET_ALLOWLIST);
        g_autoptr (GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
        g_autoptr (GSocketAddress) addr = g_inet_socket_address_new (lo, 0);
        g_autoptr (GSocketAddress) bound_addr = NULL;
        g_autofree char *pem = NULL, *key = NULL, *ra = NULL, *rb = NULL, *ca = NULL;

        fx->certs = egress_test_make_certs (names);
        fx->test_ca = g_build_filename (fx->certs, "ca.pem", NULL);
        fx->session_ca = g_build_filename (fx->certs, "session-ca.pem", NULL);
        fx->audit = g_build_filename (fx->certs, "audit.jsonl", NULL);
        pem = g_build_filename (fx->certs, "api.bound.test.pem", NULL);
        key = g_build_filename (fx->certs, "api.bound.test.key", NULL);
        cert = g_tls_certificate_new_from_files (pem, key, &error);
        g_assert_no_error (error);
        fx->bound = egress_test_server_new (cert, FALSE);
        fx->plain = egress_test_server_new (NULL, FALSE);
        ra = g_strdup_printf ("127.0.0.1:%u", egress_test_server_get_port (fx->bound));
        rb = g_strdup_printf ("127.0.0.1:%u", egress_test_server_get_port (fx->plain));
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, "api.bound.test", NULL));
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, "other.test", NULL));
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, ra, NULL));
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, rb, NULL));
        fx->proxy = corral_egress_proxy_new (p);
        g_signal_connect (fx->proxy, "session-ended", G_CALLBACK (on_session_ended), fx);
        fx->resolver = egress_test_resolver_new ();
        egress_test_resolver_add (fx->resolver, "api.bound.test", "127.0.0.1");
        egress_test_resolver_add (fx->resolver, "other.test", "127.0.0.1");
        corral_egress_proxy_set_resolver (fx->proxy, G_RESOLVER (fx->resolver));
        g_assert_true (corral_egress_proxy_set_audit_path (fx->proxy, fx->audit, NULL));
        g_assert_true (corral_egress_proxy_set_upstream_ca_file (fx->proxy, fx->test_ca, &error));
        fx->creds = corral_egress_credentials_new ();
        fx->ph = bind (fx, "API_TOKEN", "authorization", "Bearer {}", CANARY);
        fx->basic_ph = bind (fx, "REGISTRY", "basic", "{}", BASIC_CANARY);
        g_assert_true (corral_egress_proxy_set_credentials (fx->proxy, fx->creds, &error));
        ca = corral_egress_proxy_dup_ca_pem (fx->proxy, &error);
        g_assert_no_error (error);
        g_assert_true (g_file_set_contents (fx->session_ca, ca, -1, NULL));
        g_assert_true (corral_egress_proxy_listen (fx->proxy, addr, &bound_addr, &error));
        fx->port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound_addr));
}

static void
fx_teardown (Fx *fx, gconstpointer data)
{
        g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", fx->certs);
        g_autofree char *text = NULL;

        corral_egress_proxy_shutdown (fx->proxy);
        g_assert_true (g_file_get_contents (fx->audit, &text, NULL, NULL));
        g_assert_null (strstr (text, "canary"));
        g_clear_object (&fx->proxy);
        g_clear_object (&fx->resolver);
        corral_egress_credentials_revoke (fx->creds);
        corral_egress_credentials_unref (fx->creds);
        egress_test_server_free (fx->bound);
        egress_test_server_free (fx->plain);
        g_assert_true (g_str_has_prefix (fx->certs, g_get_tmp_dir ()));
        g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL);
        g_free (fx->certs);
        g_free (fx->test_ca);
        g_free (fx->session_ca);
        g_free (fx->audit);
        g_free (fx->ph);
        g_free (fx->basic_ph);
        g_free (fx->ended_name);
}

/* curl -si through the proxy with the session CA and extra arguments (NULL-terminated);
 * stdout+stderr (transfer full). */
static char *
curl (Fx *fx, const char *url, ...)
{
        g_autofree char *proxy = g_strdup_printf ("http://127.0.0.1:%u", fx->port);
        g_autoptr (GPtrArray) argv = g_ptr_array_new ();
        g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (
                G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_MERGE);
        g_autoptr (GSubprocess) p = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (GBytes) out = NULL;
        const char *arg;
        va_list ap;

        g_subprocess_launcher_unsetenv (l, "https_proxy");
        g_subprocess_launcher_unsetenv (l, "HTTPS_PROXY");
        g_subprocess_launcher_unsetenv (l, "no_proxy");
        g_subprocess_launcher_unsetenv (l, "NO_PROXY");
        g_ptr_array_add (argv, (gpointer) "curl");
        g_ptr_array_add (argv, (gpointer) "-si");
        g_ptr_array_add (argv, (gpointer) "--suppress-connect-headers");
        g_ptr_array_add (argv, (gpointer) "--max-time");
        g_ptr_array_add (argv, (gpointer) "30");
        g_ptr_array_add (argv, (gpointer) "-x");
        g_ptr_array_add (argv, proxy);
        g_ptr_array_add (argv, (gpointer) "--cacert");
        g_ptr_array_add (argv, fx->session_ca);
        va_start (ap, url);
        while ((arg = va_arg (ap, const char *)))
                g_ptr_array_add (argv, (gpointer) arg);
        va_end (ap);
        g_ptr_array_add (argv, (gpointer) url);
        g_ptr_array_add (argv, NULL);
        p = g_subprocess_launcher_spawnv (l, (const char *const *) argv->pdata, &error);
        g_assert_no_error (error);
        g_subprocess_communicate (p, NULL, NULL, &out, NULL, &error);
        g_assert_no_error (error);
        /* NULs (there are none in what these origins send) would end the text */
        return g_strndup (g_bytes_get_size (out) ? g_bytes_get_data (out, NULL) : "",
                          g_bytes_get_size (out));
}

static char *
reflect_url (Fx *fx, const char *query)
{
        return g_strdup_printf ("https://api.bound.test:%u/reflect?%s",
                                egress_test_server_get_port (fx->bound), query);
}

/* curl with the bearer placeholder swapped in, to /reflect?query. */
static char *
reflect (Fx *fx, const char *query, const char *extra)
{
        g_autofree char *url = reflect_url (fx, query);
        g_autofree char *auth = g_strdup_printf ("Authorization: Bearer %s", fx->ph);

        return curl (fx, url, "-H", auth, extra ? "-H" : NULL, extra, NULL);
}

static const char *
body_of (const char *out)
{
        const char *end = strstr (out, "\r\n\r\n");

        g_assert_nonnull (end);
        return end + 4;
}

/* The secret reached the origin, and the reply came back 200 with something masked. */
static void
assert_masked (Fx *fx, const char *out)
{
        g_autofree char *heads = egress_test_server_dup_heads (fx->bound);

        g_assert_nonnull (strstr (heads, "Authorization: Bearer " CANARY "\r\n"));
        if (!g_str_has_prefix (out, "HTTP/1.1 200") && !g_str_has_prefix (out, "HTTP/1.1 302"))
                g_error ("expected a reply, got: %s", out);
        g_assert_nonnull (strstr (out, "****"));
        g_assert_null (strstr (out, CANARY));
}

static void
assert_absent (const guint8 *data, gsize len, const char *what)
{
        if (memmem (data, len, CANARY, strlen (CANARY)))
                g_error ("the secret came back in %s", what);
}

/* Decoders, written here apart from the proxy's own --------------------------------------------- */

static void
test_base64 (Fx *fx, gconstpointer data)
{
        const char *forms[] = { "form=base64&pad=0",    "form=base64&pad=1",
                                "form=base64&pad=2",    "form=base64url&pad=0",
                                "form=base64url&pad=1", "form=base64url&pad=2" };

        for (gsize i = 0; i < G_N_ELEMENTS (forms); i++) {
                g_autofree char *out = reflect (fx, forms[i], NULL);
                g_autofree char *text = g_strdup (body_of (out));
                g_autofree guchar *raw = NULL;
                gsize len = 0;

                /* a masked character reads as zero bits */
                for (char *c = text; *c; c++)
                        *c = *c == '*' ? 'A' : *c == '-' ? '+' : *c == '_' ? '/' : *c;
                raw = g_base64_decode (text, &len);
                assert_absent (raw, len, forms[i]);
                assert_masked (fx, out);
        }
}

static void
test_hex (Fx *fx, gconstpointer data)
{
        const char *forms[] = { "form=hex", "form=HEX" };

        for (gsize i = 0; i < G_N_ELEMENTS (forms); i++) {
                g_autofree char *out = reflect (fx, forms[i], NULL);
                const char *hex = body_of (out);
                gsize n = strlen (hex) / 2;
                g_autofree guint8 *raw = g_malloc (n + 1);

                for (gsize k = 0; k < n; k++) {
                        int hi = g_ascii_xdigit_value (hex[2 * k]);
                        int lo = g_ascii_xdigit_value (hex[2 * k + 1]);

                        raw[k] = (guint8) ((hi < 0 ? 0 : hi) << 4 | (lo < 0 ? 0 : lo));
                }
                assert_absent (raw, n, forms[i]);
                assert_masked (fx, out);
        }
}

static void
test_reversed (Fx *fx, gconstpointer data)
{
        g_autofree char *out = reflect (fx, "form=reversed", NULL);
        g_autofree char *text = g_strreverse (g_strdup (body_of (out)));

        assert_absent ((const guint8 *) text, strlen (text), "reversed");
        assert_masked (fx, out);
}

/* JSON and HTML escapes, and the percent-encoding of a Location. */
static GString *
unescape (const char *s)
{
        GString *out = g_string_new (NULL);

        while (*s) {
                guint v;
                int used = 0;

                if (s[0] == '\\' && s[1] == '/') {
                        g_string_append_c (out, '/');
                        s += 2;
                } else if (s[0] == '\\' && s[1] == 'u' && sscanf (s + 2, "%4x%n", &v, &used) == 1 &&
                           used == 4) {
                        g_string_append_c (out, (char) v);
                        s += 6;
                } else if (s[0] == '&' && sscanf (s, "&#x%x;%n", &v, &used) == 1 && used > 0) {
                        g_string_append_c (out, (char) v);
                        s += used;
                } else if (s[0] == '&' && sscanf (s, "&#%u;%n", &v, &used) == 1 && used > 0) {
                        g_string_append_c (out, (char) v);
                        s += used;
                } else if (s[0] == '%' && g_ascii_isxdigit (s[1]) && g_ascii_isxdigit (s[2])) {
                        g_string_append_c (out, (char) (g_ascii_xdigit_value (s[1]) * 16 +
                                                        g_ascii_xdigit_value (s[2])));
                        s += 3;
                } else {
                        g_string_append_c (out, *s++);
                }
        }
        return out;
}

static void
test_escapes (Fx *fx, gconstpointer data)
{
        const char *forms[] = { "form=json", "form=html", "form=location" };

        for (gsize i = 0; i < G_N_ELEMENTS (forms); i++) {
                g_autofree char *out = reflect (fx, forms[i], NULL);
                g_autoptr (GString) text = unescape (out);

                assert_absent ((const guint8 *) text->str, text->len, forms[i]);
                assert_masked (fx, out);
        }
}

/* A chunk boundary inside the secret (and the secret again in a trailer). */
static void
test_chunked (Fx *fx, gconstpointer data)
{
        g_autofree char *out = reflect (fx, "form=chunked", "TE: trailers");

        assert_absent ((const guint8 *) out, strlen (out), "a chunked reply");
        assert_masked (fx, out);
}

/* The request asks for identity; an origin that compresses anyway is refused. */
static void
test_gzip_refused (Fx *fx, gconstpointer data)
{
        g_autofree char *url = reflect_url (fx, "form=gzip");
        g_autofree char *auth = g_strdup_printf ("Authorization: Bearer %s", fx->ph);
        g_autofree char *out = curl (fx, url, "--compressed", "-H", auth, NULL);
        g_autofree char *heads = egress_test_server_dup_heads (fx->bound);

        g_assert_nonnull (strstr (heads, "Authorization: Bearer " CANARY "\r\n"));
        g_assert_nonnull (strstr (heads, "\r\nAccept-Encoding: identity\r\n"));
        g_assert_null (strstr (heads, "deflate"));
        if (!g_str_has_prefix (out, "HTTP/1.1 502") ||
            !strstr (out, "X-Corral-Blocked: response-unmaskable"))
                g_error ("a gzip reply was not refused: %s", out);
        g_assert_null (strstr (out, "canary"));
}

/* No Range reaches the origin with a secret (34 one-byte ranges gave it away); a 206 is
 * refused. */
static void
test_range (Fx *fx, gconstpointer data)
{
        g_autofree char *url = reflect_url (fx, "form=range");
        g_autofree char *auth = g_strdup_printf ("Authorization: Bearer %s", fx->ph);
        g_autofree char *out = curl (fx, url, "-r", "40-41", "-H", "If-Range: x", "-H", auth, NULL);
        g_autofree char *heads = egress_test_server_dup_heads (fx->bound);

        g_assert_null (strstr (heads, "Range:"));
        g_assert_true (g_str_has_prefix (out, "HTTP/1.1 200"));
        assert_masked (fx, out);
}

/* An origin that sends part of a reply unasked: refused, none of it reaches the guest. */
static void
test_partial_refused (Fx *fx, gconstpointer data)
{
        g_autofree char *out = reflect (fx, "form=partial", NULL);

        if (!g_str_has_prefix (out, "HTTP/1.1 502") ||
            !strstr (out, "X-Corral-Blocked: response-unmaskable"))
                g_error ("a partial reply was not refused: %s", out);
        g_assert_null (strstr (out, "canary"));
}

/* The session ended ------------------------------------------------------------------------- */

/* out: NULL when the client may not have read the refusal (it was still sending its body when
 * the connection closed). */
static void
assert_ended (Fx *fx, const char *out, const char *name)
{
        g_autofree char *after = NULL, *audit = NULL, *url = NULL, *ended = NULL;

        if (out && (!g_str_has_prefix (out, "HTTP/1.1 403") ||
                    !strstr (out, "X-Corral-Blocked: secret-from-guest")))
                g_error ("expected secret-from-guest, got: %s", out);
        g_assert_true (!out || !strstr (out, "canary-echo"));
        ended = corral_egress_proxy_dup_ended (fx->proxy);
        g_assert_cmpstr (ended, ==, name);
        g_assert_cmpstr (fx->ended_name, ==, name);
        g_assert_cmpuint (fx->ended_count, ==, 1);
        /* anything after it is refused, to any host */
        url = g_strdup_printf ("http://other.test:%u/", egress_test_server_get_port (fx->plain));
        after = curl (fx, url, NULL);
        if (!g_str_has_prefix (after, "HTTP/1.1 403") ||
            !strstr (after, "X-Corral-Blocked: session-ended"))
                g_error ("expected session-ended, got: %s", after);
        g_assert_cmpuint (fx->ended_count, ==, 1);
        /* The refused connection's record is written when its thread has closed it, which may
         * come after the reply reached the client (slow under ASan): looked for a while. */
        for (guint i = 0; i < 500; i++) {
                g_clear_pointer (&audit, g_free);
                corral_egress_proxy_flush_audit (fx->proxy);
                g_assert_true (g_file_get_contents (fx->audit, &audit, NULL, NULL));
                if (strstr (audit, "\"rule\":\"secret-from-guest\""))
                        break;
                g_usleep (20000);
        }
        g_assert_nonnull (strstr (audit, "\"rule\":\"secret-from-guest\""));
}

/* 5000 guesses for an echo to hold masked once one is right: the right guess itself ends the
 * session, before the origin sees it. */
static void
test_guess_ends_session (Fx *fx, gconstpointer data)
{
        g_autoptr (GString) guesses = g_string_new (NULL);
        /* an origin that reads the whole body (one that answers first cuts the upload short) */
        g_autofree char *url = g_strdup_printf ("https://api.bound.test:%u/upload",
                                                egress_test_server_get_port (fx->bound));
        g_autofree char *file = g_build_filename (fx->certs, "guesses", NULL);
        g_autofree char *at = g_strconcat ("@", file, NULL);
        g_autofree char *out = NULL, *heads = NULL;

        for (guint i = 0; i < 5000; i++)
                g_string_append_printf (guesses, "canary-echo-basic-%08x\n",
                                        i == 4321 ? 0x88e1f04a : i);
        g_assert_true (g_file_set_contents (file, guesses->str, (gssize) guesses->len, NULL));
        out = curl (fx, url, "--data-binary", at, NULL);
        g_assert_null (strstr (out, BASIC_CANARY));
        assert_ended (fx, *out ? out : NULL, "REGISTRY");
        heads = egress_test_server_dup_heads (fx->bound);
        g_assert_null (strstr (heads, BASIC_CANARY));
}

/* In a body, base64-encoded and split across the guest's own chunks. */
static void
test_body_ends_session (Fx *fx, gconstpointer data)
{
        g_autofree char *b64 = g_base64_encode ((const guchar *) "x" CANARY, strlen (CANARY) + 1);
        g_autoptr (GString) req = g_string_new (NULL);
        g_autoptr (GString) out = NULL;
        gsize half = strlen (b64) / 2;

        g_string_append_printf (req,
                                "POST http://other.test:%u/upload HTTP/1.1\r\n"
                                "Host: other.test:%u\r\nTransfer-Encoding: chunked\r\n\r\n"
                                "%zx\r\n%.*s\r\n%zx\r\n%s\r\n0\r\n\r\n",
                                egress_test_server_get_port (fx->plain),
                                egress_test_server_get_port (fx->plain), half, (int) half, b64,
                                strlen (b64) - half, b64 + half);
        out = egress_test_request (fx->port, req->str, (gssize) req->len);
        assert_ended (fx, out->str, "API_TOKEN");
}

/* Inside the intercepted tunnel, in a header, percent-encoded. */
static void
test_header_ends_session (Fx *fx, gconstpointer data)
{
        g_autofree char *url = reflect_url (fx, "form=plain");
        g_autofree char *out = curl (fx, url, "-H", "X-Note: canary%2Decho%2D5f0a9c2e71d4b3", NULL);

        assert_ended (fx, out, "API_TOKEN");
}

/* The mask on its own: forms mixed within one occurrence, and occurrences split between two
 * reads, found by both kinds of stream. */
static void
test_mask_streams (void)
{
        const char *secret = "s3cr/t+k&y";
        const char *mixed[] = { "s3cr%2Ft%2Bk%26y", "s3cr\\/t+k&amp;y", "%73\\u0033cr/t%2bk&#38;y",
                                "s3cr&#x2f;t&#43;k\\x26y" };
        g_autoptr (EgressMask) mask = egress_mask_new ();
        const char *text = "head:s3cr/t+k&y:tail";
        const guint8 *out;
        gsize n, total = 0;
        char got[64] = { 0 };

        egress_mask_add_secret (mask, secret, 7);
        for (gsize i = 0; i < G_N_ELEMENTS (mixed); i++) {
                g_autofree char *buf = g_strdup_printf ("<%s>", mixed[i]);

                g_assert_cmpint (egress_mask_scan (mask, (guint8 *) buf, strlen (buf), TRUE), ==,
                                 7);
                g_assert_cmpint (strspn (buf + 1, "*"), ==, strlen (mixed[i]));
        }
        /* a piece of it is not it */
        {
                char piece[] = "s3cr/t+k&";

                g_assert_cmpint (egress_mask_scan (mask, (guint8 *) piece, 9, FALSE), ==, -1);
        }
        /* split at every place: masked whole, reported */
        for (gsize cut = 1; cut < strlen (text); cut++) {
                g_autoptr (EgressMaskStream) m = egress_mask_stream_new (mask, TRUE, 64);
                g_autoptr (EgressMaskStream) r = egress_mask_stream_new (mask, FALSE, 64);
                gint64 found;

                total = 0;
                egress_mask_stream_feed (m, text, cut, FALSE, &out, &n);
                memcpy (got + total, out, n);
                total += n;
                egress_mask_stream_feed (m, text + cut, strlen (text) - cut, TRUE, &out, &n);
                memcpy (got + total, out, n);
                total += n;
                g_assert_cmpuint (total, ==, strlen (text));
                g_assert_cmpint (memcmp (got, "head:**********:tail", total), ==, 0);
                found = egress_mask_stream_feed (r, text, cut, FALSE, &out, &n);
                if (found < 0)
                        found = egress_mask_stream_feed (r, text + cut, strlen (text) - cut, TRUE,
                                                         &out, &n);
                g_assert_cmpint (found, ==, 7);
                g_assert_cmpuint (n, ==, 0);
        }
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
#define ADD(path, fn) g_test_add (path, Fx, NULL, fx_setup, fn, fx_teardown)
        g_test_add_func ("/egress-echo/mask-streams", test_mask_streams);
        ADD ("/egress-echo/base64", test_base64);
        ADD ("/egress-echo/hex", test_hex);
        ADD ("/egress-echo/reversed", test_reversed);
        ADD ("/egress-echo/escapes", test_escapes);
        ADD ("/egress-echo/chunked", test_chunked);
        ADD ("/egress-echo/gzip-refused", test_gzip_refused);
        ADD ("/egress-echo/range-dropped", test_range);
        ADD ("/egress-echo/partial-refused", test_partial_refused);
        ADD ("/egress-echo/guess-ends-session", test_guess_ends_session);
        ADD ("/egress-echo/body-ends-session", test_body_ends_session);
        ADD ("/egress-echo/header-ends-session", test_header_ends_session);
        return g_test_run ();
}
