/* test-egress-policy.c — host strings, address classification, policy rules and the proxy
 * request parser of keychain-bridge (SECURITY-TESTS items 12, 13, 15, 16).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-hello.h"
#include "egress-http.h"
#include "egress-policy.h"

#include <string.h>

/* Item 13: every non-public form is classified, public ones are not. ------------------------ */

static void
test_classify (void)
{
        static const char *const private_addrs[] = {
                "127.0.0.1",
                "127.255.255.254",
                "0.0.0.0",
                "0.1.2.3",
                "10.0.0.1",
                "172.16.0.1",
                "172.31.255.255",
                "192.168.1.1",
                "100.64.0.1",
                "100.127.255.255",
                "169.254.0.1",
                "169.254.169.254",
                "224.0.0.1",
                "239.255.255.250",
                "255.255.255.255",
                "240.0.0.1",
                "192.0.2.1",
                "198.18.0.1",
                "::",
                "::1",
                "::ffff:127.0.0.1",
                "::ffff:169.254.169.254",
                "::ffff:10.1.2.3",
                "::127.0.0.1",
                "::10.0.0.1",
                "64:ff9b::7f00:1",
                "64:ff9b::a9fe:a9fe",
                "64:ff9b:1::1",
                "2002:7f00:1::1",
                "2002:a9fe:a9fe::",
                "2002:c0a8:101::1",
                /* Teredo: server 127.0.0.1; then client 10.0.0.1 xor'ed */
                "2001:0:7f00:1::1",
                "2001:0:808:808::f5ff:fffe",
                "fc00::1",
                "fd00::1",
                "fd00:ec2::254",
                "fe80::1",
                "fec0::1",
                "ff02::1",
                "2001:db8::1",
                "100::1",
        };
        static const char *const public_addrs[] = {
                "8.8.8.8",         "1.1.1.1",        "100.63.255.255",   "100.128.0.0",
                "172.15.255.255",  "172.32.0.0",     "169.253.255.255",  "11.0.0.1",
                "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
                "2001:4860::8888",
        };

        for (gsize i = 0; i < G_N_ELEMENTS (private_addrs); i++) {
                g_autoptr (GInetAddress) a = g_inet_address_new_from_string (private_addrs[i]);

                g_assert_nonnull (a);
                if (!corral_egress_addr_classify (a))
                        g_error ("%s classified as public", private_addrs[i]);
        }
        for (gsize i = 0; i < G_N_ELEMENTS (public_addrs); i++) {
                g_autoptr (GInetAddress) a = g_inet_address_new_from_string (public_addrs[i]);

                g_assert_nonnull (a);
                if (corral_egress_addr_classify (a))
                        g_error ("%s classified as %s", public_addrs[i],
                                 corral_egress_addr_classify (a));
        }
}

/* Items 13 + 15: strict host strings. --------------------------------------------------------- */

static void
test_host_refused (void)
{
        static const char *const bad[] = {
                "2130706433",
                "0x7f000001",
                "0x7f.0.0.1",
                "0177.0.0.1",
                "127.1",
                "127.0.1",
                "017700000001",
                "127.0.0.01",
                "127.000.0.1",
                "1.2.3.4.5",
                "256.1.1.1",
                "127.0.0.1 ",
                " 127.0.0.1",
                "user@host.com",
                "host.com@evil.com",
                "a..b",
                ".a",
                "-a.com",
                "a-.com",
                "a_b.com",
                "exa mple.com",
                "ex\tample.com",
                "[::1%eth0]",
                "[fe80::1%251]",
                "::1",
                "[::1",
                "[]",
                "[1.2.3.4]",
                "[::g]",
                "h\xc3\xa9.com",
                "",
        };

        for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
                g_autoptr (GError) error = NULL;
                g_autofree char *host = NULL;
                CorralHostKind kind;

                if (corral_egress_parse_host (bad[i], -1, TRUE, &kind, &host, &error))
                        g_error ("host “%s” accepted as “%s”", bad[i], host);
                g_assert_error (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_INVALID);
        }
}

static void
test_host_special (void)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *host = NULL, *longname = NULL, *label = NULL, *a64 = g_strnfill (64, 'a');
        CorralHostKind kind;
        const char nul[] = "allowed.com\0.evil.com";
        const char crlf[] = "allowed.com\r\nX: y";

        g_assert_false (corral_egress_parse_host (nul, sizeof nul - 1, TRUE, &kind, &host, &error));
        g_clear_error (&error);
        g_assert_false (corral_egress_parse_host (crlf, -1, TRUE, &kind, &host, &error));
        g_clear_error (&error);
        /* 255 bytes of name: too long; a 64-byte label: too long */
        longname = g_strnfill (255, 'a');
        for (int i = 63; i < 255; i += 64)
                longname[i] = '.';
        g_assert_false (corral_egress_parse_host (longname, -1, TRUE, &kind, &host, &error));
        g_clear_error (&error);
        label = g_strconcat (a64, ".com", NULL);
        g_assert_false (corral_egress_parse_host (label, -1, TRUE, &kind, &host, &error));
        g_clear_error (&error);
        /* Trailing dot and case are normalised, consistently with the policy. */
        g_assert_true (corral_egress_parse_host ("API.Example.COM.", -1, TRUE, &kind, &host, NULL));
        g_assert_cmpstr (host, ==, "api.example.com");
        g_assert_cmpint (kind, ==, CORRAL_HOST_NAME);
        g_clear_pointer (&host, g_free);
        g_assert_true (corral_egress_parse_host ("127.0.0.1", -1, TRUE, &kind, &host, NULL));
        g_assert_cmpint (kind, ==, CORRAL_HOST_IPV4);
        g_clear_pointer (&host, g_free);
        g_assert_true (
                corral_egress_parse_host ("[0:0:0:0:0:ffff:7f00:1]", -1, TRUE, &kind, &host, NULL));
        g_assert_cmpint (kind, ==, CORRAL_HOST_IPV6);
        g_assert_cmpstr (host, ==, "::ffff:127.0.0.1");
}

static void
test_authority (void)
{
        static const char *const bad[] = { "a.com:0",     "a.com:70000", "a.com:",    "a.com:+80",
                                           "a.com:080",   "a.com:8 0",   "::1:80",    "[::1]80",
                                           "a.com:80:80", "a.com:-1",    "u@a.com:80" };
        g_autofree char *host = NULL;
        CorralHostKind kind;
        guint16 port;

        for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
                g_autoptr (GError) error = NULL;

                if (corral_egress_parse_authority (bad[i], -1, 80, &kind, &host, &port, &error))
                        g_error ("authority “%s” accepted", bad[i]);
        }
        g_assert_false (corral_egress_parse_authority ("a.com", -1, 0, &kind, &host, &port, NULL));
        g_assert_true (
                corral_egress_parse_authority ("[::1]:8443", -1, 0, &kind, &host, &port, NULL));
        g_assert_cmpstr (host, ==, "::1");
        g_assert_cmpuint (port, ==, 8443);
        g_clear_pointer (&host, g_free);
        g_assert_true (corral_egress_parse_authority ("a.com", -1, 80, &kind, &host, &port, NULL));
        g_assert_cmpuint (port, ==, 80);
}

/* Policy ----------------------------------------------------------------------------------------- */

static gboolean
allows (CorralEgressPolicy *p, const char *host, guint16 port, const char *want_rule)
{
        g_autofree char *canon = NULL, *rule = NULL;
        CorralHostKind kind;
        gboolean ok;

        g_assert_true (corral_egress_parse_host (host, -1, TRUE, &kind, &canon, NULL));
        ok = corral_egress_policy_check (p, canon, kind, port, &rule);
        if (want_rule)
                g_assert_cmpstr (rule, ==, want_rule);
        return ok;
}

static void
test_policy_rules (void)
{
        g_autoptr (CorralEgressPolicy) p =
                corral_egress_policy_new (CORRAL_EGRESS_PRESET_ALLOWLIST);

        g_assert_true (corral_egress_policy_add_rule (p, TRUE, "*.example.com", NULL));
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, "allowed.com", NULL));
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, "api.other.org:8443", NULL));
        g_assert_true (corral_egress_policy_add_rule (p, FALSE, "bad.example.com", NULL));

        g_assert_true (allows (p, "a.example.com", 443, "allow:*.example.com"));
        g_assert_true (allows (p, "a.b.example.com", 80, NULL));
        g_assert_false (allows (p, "example.com", 443, "default-deny"));
        g_assert_false (allows (p, "evilexample.com", 443, NULL));
        g_assert_false (allows (p, "example.com.evil.com", 443, NULL));
        g_assert_true (allows (p, "ALLOWED.com.", 443, "allow:allowed.com"));
        g_assert_false (allows (p, "allowed.com.evil.com", 443, "default-deny"));
        g_assert_false (allows (p, "evilallowed.com", 443, "default-deny"));
        g_assert_false (allows (p, "sub.allowed.com", 443, NULL));
        /* deny wins over a matching wildcard allow */
        g_assert_false (allows (p, "bad.example.com", 443, "deny:bad.example.com"));
        g_assert_true (allows (p, "api.other.org", 8443, NULL));
        g_assert_false (allows (p, "api.other.org", 443, NULL));
        /* the last command wins for one pattern */
        g_assert_true (corral_egress_policy_add_rule (p, FALSE, "allowed.com", NULL));
        g_assert_false (allows (p, "allowed.com", 443, "deny:allowed.com"));
        g_assert_cmpuint (corral_egress_policy_get_rules (p, TRUE)->len, ==, 2);
}

static void
test_policy_invalid_rules (void)
{
        static const char *const bad[] = { "*",          "*.*.com",     "a*.com", "*.127.0.0.1",
                                           "127.1",      "a.com:0",     "",       "a b.com",
                                           "a.com/path", "http://a.com" };
        g_autoptr (CorralEgressPolicy) p =
                corral_egress_policy_new (CORRAL_EGRESS_PRESET_ALLOWLIST);

        for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
                g_autoptr (GError) error = NULL;

                if (corral_egress_policy_add_rule (p, TRUE, bad[i], &error))
                        g_error ("rule “%s” accepted", bad[i]);
                g_assert_nonnull (error);
        }
}

static void
test_policy_presets (void)
{
        g_autoptr (CorralEgressPolicy) none = corral_egress_policy_new (CORRAL_EGRESS_PRESET_NONE);
        g_autoptr (CorralEgressPolicy) pkg =
                corral_egress_policy_new (CORRAL_EGRESS_PRESET_PACKAGE_MANAGERS);
        g_autoptr (CorralEgressPolicy) web =
                corral_egress_policy_new (CORRAL_EGRESS_PRESET_OPEN_WEB);

        g_assert_false (allows (none, "pypi.org", 443, "preset:none"));
        g_assert_true (allows (pkg, "pypi.org", 443, "preset:package-managers"));
        g_assert_false (allows (pkg, "pypi.org", 22, NULL));
        g_assert_false (allows (pkg, "example.com", 443, "default-deny"));
        g_assert_true (allows (web, "example.com", 443, "preset:open-web"));
        g_assert_true (corral_egress_policy_add_rule (web, FALSE, "*.evil.com", NULL));
        g_assert_false (allows (web, "x.evil.com", 443, "deny:*.evil.com"));
}

/* Private addresses pass only with a rule naming exactly that address and port. */
static void
test_policy_exact_address (void)
{
        g_autoptr (CorralEgressPolicy) p = corral_egress_policy_new (CORRAL_EGRESS_PRESET_OPEN_WEB);
        g_autoptr (GInetAddress) lo = g_inet_address_new_from_string ("127.0.0.1");
        g_autoptr (GInetAddress) mapped = g_inet_address_new_from_string ("::ffff:127.0.0.1");
        g_autoptr (GInetAddress) lo6 = g_inet_address_new_from_string ("::1");

        g_assert_false (corral_egress_policy_allows_address (p, lo, 8080));
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, "127.0.0.1", NULL));
        g_assert_false (corral_egress_policy_allows_address (p, lo, 8080));
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, "127.0.0.1:8080", NULL));
        g_assert_true (corral_egress_policy_allows_address (p, lo, 8080));
        g_assert_false (corral_egress_policy_allows_address (p, lo, 8081));
        g_assert_false (corral_egress_policy_allows_address (p, mapped, 8080));
        g_assert_true (corral_egress_policy_add_rule (p, TRUE, "[::1]:8080", NULL));
        g_assert_true (corral_egress_policy_allows_address (p, lo6, 8080));
        g_assert_true (corral_egress_policy_add_rule (p, FALSE, "127.0.0.1:8080", NULL));
        g_assert_false (corral_egress_policy_allows_address (p, lo, 8080));
}

static void
test_policy_json (void)
{
        static const char good[] = "{\"preset\":\"allowlist\",\"allow\":[\"*.Example.com\","
                                   "\"127.0.0.1:80\"],\"deny\":[\"x.example.com\"]}";
        static const char *const bad[] = {
                "",
                "[]",
                "{\"preset\":\"everything\"}",
                "{\"allow\":\"a.com\"}",
                "{\"allow\":[1]}",
                "{\"allow\":[\"127.1\"]}",
                "{\"other\":1}",
                "{\"preset\":1}",
                "{\"allow\":[\"a.com\"]",
                "{\"allow\":[\"a.com\\u0000b\"]}",
        };
        g_autoptr (CorralEgressPolicy) p = NULL, q = NULL;
        g_autofree char *json = NULL, *json2 = NULL;

        p = corral_egress_policy_new_from_json (good, sizeof good - 1, NULL);
        g_assert_nonnull (p);
        json = corral_egress_policy_to_json (p);
        q = corral_egress_policy_new_from_json (json, strlen (json), NULL);
        g_assert_nonnull (q);
        json2 = corral_egress_policy_to_json (q);
        g_assert_cmpstr (json, ==, json2);
        g_assert_nonnull (strstr (json, "\"*.example.com\""));
        for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
                g_autoptr (GError) error = NULL;
                g_autoptr (CorralEgressPolicy) r =
                        corral_egress_policy_new_from_json (bad[i], strlen (bad[i]), &error);

                if (r)
                        g_error ("policy “%s” accepted", bad[i]);
                g_assert_nonnull (error);
        }
}

/* Request parser (items 15, 16) ---------------------------------------------------------------- */

static CorralHttpRequest *
parse (const char *head, GError **error)
{
        gssize n = corral_http_head_length (head, strlen (head), CORRAL_HTTP_MAX_HEAD);

        if (n <= 0) {
                g_set_error_literal (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_INVALID,
                                     "no head");
                return NULL;
        }
        return corral_http_request_parse (head, (gsize) n, CORRAL_HTTP_MAX_HEADERS, error);
}

static void
test_http_good (void)
{
        g_autoptr (CorralHttpRequest) r = NULL, c = NULL;
        g_autoptr (GString) origin = NULL;

        r = parse ("GET http://Api.Example.com:8080/a/b?c=d HTTP/1.1\r\nHost: api.example.com:8080"
                   "\r\nProxy-Authorization: Basic eA==\r\nConnection: keep-alive, X-Secret\r\n"
                   "X-Secret: 1\r\nAccept: */*\r\n\r\n",
                   NULL);
        g_assert_nonnull (r);
        g_assert_cmpstr (r->host, ==, "api.example.com");
        g_assert_cmpuint (r->port, ==, 8080);
        g_assert_cmpstr (r->path, ==, "/a/b?c=d");
        origin = corral_http_request_to_origin (r);
        g_assert_true (g_str_has_prefix (origin->str, "GET /a/b?c=d HTTP/1.1\r\n"));
        g_assert_null (strstr (origin->str, "Proxy-Authorization"));
        g_assert_null (strstr (origin->str, "X-Secret"));
        g_assert_nonnull (strstr (origin->str, "Accept: */*\r\n"));
        g_assert_true (g_str_has_suffix (origin->str, "Connection: close\r\n\r\n"));
        c = parse ("CONNECT a.com:443 HTTP/1.1\r\nHost: a.com:443\r\n\r\n", NULL);
        g_assert_nonnull (c);
        g_assert_true (c->is_connect);
        g_assert_cmpuint (c->port, ==, 443);
}

static void
test_http_refused (void)
{
        static const char *const bad[] = {
                "GET / HTTP/1.1\r\nHost: a.com\r\n\r\n", /* origin-form: not a proxy request */
                "GET https://a.com/ HTTP/1.1\r\nHost: a.com\r\n\r\n",
                "GET http://a.com/ HTTP/1.1\r\nHost: b.com\r\n\r\n", /* Host mismatch */
                "GET http://a.com/ HTTP/1.1\r\nHost: a.com:81\r\n\r\n",
                "GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\nHost: a.com\r\n\r\n",
                "GET http://a.com/ HTTP/1.1\r\n\r\n", /* 1.1 without Host */
                "GET http://user@a.com/ HTTP/1.1\r\nHost: a.com\r\n\r\n",
                "GET http://a.com:0/ HTTP/1.1\r\nHost: a.com:0\r\n\r\n",
                "GET http://a.com:70000/ HTTP/1.1\r\n\r\n",
                "GET http://2130706433/ HTTP/1.0\r\n\r\n",
                "GET http://[::1%25lo]/ HTTP/1.0\r\n\r\n",
                "GET http://a.com/#frag HTTP/1.0\r\n\r\n",
                "GET http://a.com/ HTTP/1.1\nHost: a.com\r\n\r\n", /* bare LF */
                "GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\n X: folded\r\n\r\n",
                "GET http://a.com/ HTTP/1.1\r\nHost : a.com\r\n\r\n",
                "GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\nX: a\rb\r\n\r\n",
                "GET http://a.com/ HTTP/2.0\r\nHost: a.com\r\n\r\n",
                "get http://a.com/ HTTP/1.1\r\nHost: a.com\r\n\r\n",
                "GET  http://a.com/ HTTP/1.1\r\nHost: a.com\r\n\r\n",
                "POST http://a.com/ HTTP/1.1\r\nHost: a.com\r\nContent-Length: 1\r\n"
                "Transfer-Encoding: chunked\r\n\r\n",
                "POST http://a.com/ HTTP/1.1\r\nHost: a.com\r\nContent-Length: 1\r\n"
                "Content-Length: 2\r\n\r\n",
                "POST http://a.com/ HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding: gzip, chunked"
                "\r\n\r\n",
                "POST http://a.com/ HTTP/1.1\r\nHost: a.com\r\nContent-Length: -1\r\n\r\n",
                "CONNECT a.com HTTP/1.1\r\n\r\n",
                "CONNECT a.com:443 HTTP/1.1\r\nHost: b.com:443\r\n\r\n",
                "CONNECT a.com:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\n",
                "CONNECT user@a.com:443 HTTP/1.1\r\n\r\n",
        };

        for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
                g_autoptr (GError) error = NULL;
                g_autoptr (CorralHttpRequest) r = parse (bad[i], &error);

                if (r)
                        g_error ("request accepted: %s", bad[i]);
                g_assert_nonnull (error);
        }
}

static void
test_http_nul_and_limits (void)
{
        const char nul[] = "GET http://a.com/ HTTP/1.1\r\nHost: a.com\0evil\r\n\r\n";
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralHttpRequest) r =
                corral_http_request_parse (nul, sizeof nul - 1, CORRAL_HTTP_MAX_HEADERS, &error);
        g_autoptr (GString) many = g_string_new ("GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\n");
        g_autoptr (CorralHttpRequest) r2 = NULL;
        g_autofree char *big = g_strnfill (CORRAL_HTTP_MAX_HEAD + 10, 'a');

        g_assert_null (r);
        g_assert_nonnull (error);
        g_clear_error (&error);
        for (int i = 0; i < 200; i++)
                g_string_append_printf (many, "X-%d: v\r\n", i);
        g_string_append (many, "\r\n");
        r2 = corral_http_request_parse (many->str, many->len, CORRAL_HTTP_MAX_HEADERS, &error);
        g_assert_null (r2);
        g_assert_error (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_TOO_LARGE);
        g_assert_cmpint (corral_http_head_length (big, strlen (big), CORRAL_HTTP_MAX_HEAD), ==, -1);
        g_assert_cmpint (corral_http_head_length ("GET", 3, CORRAL_HTTP_MAX_HEAD), ==, 0);
}

/* ClientHello ---------------------------------------------------------------------------------- */

/* A minimal ClientHello record, optionally with a server_name, split in records of rec bytes. */
static GByteArray *
make_hello (const char *sni, gsize rec)
{
        g_autoptr (GByteArray) body = g_byte_array_new ();
        GByteArray *out = g_byte_array_new ();
        guint8 fixed[2 + 32 + 1 + 2 + 2 + 2] = { 3, 3 };
        gsize n = sni ? strlen (sni) : 0;
        guint8 hs[4];

        fixed[34] = 0; /* session id */
        fixed[35] = 0, fixed[36] = 2, fixed[37] = 0x13, fixed[38] = 0x01; /* one suite */
        fixed[39] = 1, fixed[40] = 0; /* null compression */
        g_byte_array_append (body, fixed, 41);
        if (sni) {
                guint8 ext[2 + 2 + 2 + 2 + 1 + 2] = {
                        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                };
                guint8 hdr[2];
                gsize ext_len = 2 + 1 + 2 + n;

                hdr[0] = (guint8) ((4 + ext_len) >> 8), hdr[1] = (guint8) (4 + ext_len);
                g_byte_array_append (body, hdr, 2);
                ext[2] = (guint8) (ext_len >> 8), ext[3] = (guint8) ext_len;
                ext[4] = (guint8) ((n + 3) >> 8), ext[5] = (guint8) (n + 3);
                ext[6] = 0, ext[7] = (guint8) (n >> 8), ext[8] = (guint8) n;
                g_byte_array_append (body, ext, 9);
                g_byte_array_append (body, (const guint8 *) sni, (guint) n);
        }
        hs[0] = 1, hs[1] = 0, hs[2] = (guint8) (body->len >> 8), hs[3] = (guint8) body->len;
        g_byte_array_prepend (body, hs, 4);
        for (gsize off = 0; off < body->len; off += rec) {
                gsize len = MIN (rec, body->len - off);
                guint8 rh[5] = { 22, 3, 1, (guint8) (len >> 8), (guint8) len };

                g_byte_array_append (out, rh, 5);
                g_byte_array_append (out, body->data + off, (guint) len);
        }
        return out;
}

static void
test_hello (void)
{
        g_autoptr (GByteArray) a = make_hello ("api.example.com", 16384);
        g_autoptr (GByteArray) b = make_hello ("api.example.com", 7);
        g_autoptr (GByteArray) c = make_hello (NULL, 16384);
        char *sni = NULL;
        const char *why = NULL;

        g_assert_cmpint (corral_tls_hello_parse (a->data, a->len, &sni, &why), ==, CORRAL_HELLO_OK);
        g_assert_cmpstr (sni, ==, "api.example.com");
        g_clear_pointer (&sni, g_free);
        /* split over records, and every truncation needs more */
        g_assert_cmpint (corral_tls_hello_parse (b->data, b->len, &sni, &why), ==, CORRAL_HELLO_OK);
        g_assert_cmpstr (sni, ==, "api.example.com");
        g_clear_pointer (&sni, g_free);
        for (guint i = 0; i < b->len; i++)
                g_assert_cmpint (corral_tls_hello_parse (b->data, i, &sni, &why), ==,
                                 CORRAL_HELLO_NEED_MORE);
        g_assert_cmpint (corral_tls_hello_parse (c->data, c->len, &sni, &why), ==, CORRAL_HELLO_OK);
        g_assert_null (sni);
        /* not TLS */
        g_assert_cmpint (
                corral_tls_hello_parse ((const guint8 *) "GET / HTTP/1.1\r\n", 16, &sni, &why), ==,
                CORRAL_HELLO_INVALID);
        /* a corrupted inner length */
        a->data[5 + 4 + 34] = 40;
        g_assert_cmpint (corral_tls_hello_parse (a->data, a->len, &sni, &why), ==,
                         CORRAL_HELLO_INVALID);
        g_assert_null (sni);
}
/* A person's policy with the organisation's over it (corral-policy.h, SECURITY.md M3). */
static CorralEgressPolicy *
with_managed (CorralEgressPreset preset, const char *managed_json)
{
        g_autoptr (GError) error = NULL;
        const char *origin = "/etc/corral/managed.json";
        gsize len = strlen (managed_json);
        g_autoptr (CorralPolicy) managed =
                corral_policy_parse_texts (1, &origin, &managed_json, &len, &error);
        CorralEgressPolicy *p = corral_egress_policy_new (preset);

        g_assert_no_error (error);
        corral_egress_policy_set_managed (p, managed);
        return p;
}

static void
test_policy_managed (void)
{
        g_autoptr (GInetAddress) lo = g_inet_address_new_from_string ("127.0.0.1");
        g_autoptr (CorralEgressPolicy) deny = with_managed (
                CORRAL_EGRESS_PRESET_OPEN_WEB,
                "{\"network\": {\"deniedHosts\": [\"*.paste.example\", \"evil.example\"]}}");
        g_autoptr (CorralEgressPolicy) grant = with_managed (
                CORRAL_EGRESS_PRESET_NONE, "{\"network\": {\"allowedHosts\": "
                                           "[\"git.corp.example\", \"*.corp.example:443\"]}}");
        g_autoptr (CorralEgressPolicy) suggest = with_managed (
                CORRAL_EGRESS_PRESET_NONE,
                "{\"network\": {\"allowedHosts\": {\"value\": [\"git.corp.example\"], "
                "\"locked\": false}}}");
        g_autoptr (CorralEgressPolicy) cap = with_managed (
                CORRAL_EGRESS_PRESET_OPEN_WEB, "{\"network\": {\"preset\": \"package-managers\"}}");
        g_autoptr (CorralEgressPolicy) no_approvals =
                with_managed (CORRAL_EGRESS_PRESET_ALLOWLIST,
                              "{\"network\": {\"personMayApproveHosts\": false, \"allowedHosts\": "
                              "[\"git.corp.example\"]}}");
        g_autoptr (CorralEgressPolicy) copy = NULL;

        /* The organisation's denial beats the person's open web and the person's own rule. */
        g_assert_true (corral_egress_policy_add_rule (deny, TRUE, "evil.example", NULL));
        g_assert_false (allows (deny, "evil.example", 443, "managed-deny"));
        g_assert_false (allows (deny, "a.paste.example", 80, "managed-deny"));
        g_assert_true (allows (deny, "paste.example", 443, "preset:open-web"));
        g_assert_true (corral_egress_policy_add_rule (deny, TRUE, "evil.example:8080", NULL));
        g_assert_false (allows (deny, "evil.example", 8080, "managed-deny"));
        /* Copies (a person's change to the rules) keep it. */
        copy = corral_egress_policy_copy (deny);
        g_assert_false (allows (copy, "evil.example", 443, "managed-deny"));

        /* Its locked allowed hosts are open even with the person's network off... */
        g_assert_true (allows (grant, "git.corp.example", 22, "managed-allow"));
        g_assert_true (allows (grant, "wiki.corp.example", 443, "managed-allow"));
        g_assert_false (allows (grant, "wiki.corp.example", 80, "preset:none"));
        g_assert_false (allows (grant, "example.com", 443, "preset:none"));
        /* ... but not over the person's own denial, nor to a non-public address. */
        g_assert_true (corral_egress_policy_add_rule (grant, FALSE, "git.corp.example", NULL));
        g_assert_false (allows (grant, "git.corp.example", 443, "deny:git.corp.example"));
        /* An unlocked list is a suggestion: it opens nothing. */
        g_assert_false (allows (suggest, "git.corp.example", 443, "preset:none"));

        /* A locked preset is the widest: the person's open web narrows to package managers. */
        g_assert_true (allows (cap, "pypi.org", 443, "preset:package-managers"));
        g_assert_false (allows (cap, "example.com", 443, "managed-preset"));

        /* No approvals: the person's rules open nothing, the organisation's hosts still do. */
        g_assert_true (corral_egress_policy_add_rule (no_approvals, TRUE, "example.com", NULL));
        g_assert_false (allows (no_approvals, "example.com", 443, "managed-no-approvals"));
        g_assert_true (allows (no_approvals, "git.corp.example", 443, "managed-allow"));
        g_assert_true (corral_egress_policy_add_rule (no_approvals, TRUE, "127.0.0.1:8080", NULL));
        g_assert_false (corral_egress_policy_allows_address (no_approvals, lo, 8080));
        g_assert_true (corral_egress_policy_add_rule (no_approvals, TRUE,
                                                      CORRAL_EGRESS_HOST_ALIAS ":3000", NULL));
        g_assert_false (corral_egress_policy_allows_host_alias (no_approvals, 3000));
        /* Denied by the organisation: the person's exact rules do not open these either. */
        {
                g_autoptr (CorralEgressPolicy) local =
                        with_managed (CORRAL_EGRESS_PRESET_ALLOWLIST,
                                      "{\"network\": {\"deniedHosts\": [\"127.0.0.1\", "
                                      "\"" CORRAL_EGRESS_HOST_ALIAS "\"]}}");

                g_assert_true (corral_egress_policy_add_rule (local, TRUE, "127.0.0.1:8080", NULL));
                g_assert_false (corral_egress_policy_allows_address (local, lo, 8080));
                g_assert_true (corral_egress_policy_add_rule (
                        local, TRUE, CORRAL_EGRESS_HOST_ALIAS ":3000", NULL));
                g_assert_false (corral_egress_policy_allows_host_alias (local, 3000));
                /* Without it, the same rules open them. */
                corral_egress_policy_set_managed (local, NULL);
                g_assert_true (corral_egress_policy_allows_address (local, lo, 8080));
                g_assert_true (corral_egress_policy_allows_host_alias (local, 3000));
        }
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/egress/addr/classify", test_classify);
        g_test_add_func ("/egress/host/refused", test_host_refused);
        g_test_add_func ("/egress/host/special", test_host_special);
        g_test_add_func ("/egress/host/authority", test_authority);
        g_test_add_func ("/egress/policy/rules", test_policy_rules);
        g_test_add_func ("/egress/policy/invalid-rules", test_policy_invalid_rules);
        g_test_add_func ("/egress/policy/presets", test_policy_presets);
        g_test_add_func ("/egress/policy/exact-address", test_policy_exact_address);
        g_test_add_func ("/egress/policy/json", test_policy_json);
        g_test_add_func ("/egress/policy/managed", test_policy_managed);
        g_test_add_func ("/egress/http/good", test_http_good);
        g_test_add_func ("/egress/http/refused", test_http_refused);
        g_test_add_func ("/egress/http/nul-and-limits", test_http_nul_and_limits);
        g_test_add_func ("/egress/hello/sni", test_hello);
        return g_test_run ();
}
