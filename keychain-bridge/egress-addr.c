/* egress-addr.c — strict host strings and address classification (see egress-addr.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-addr.h"

#include <glib/gi18n.h>
#include <string.h>

/* clang-format off */
G_DEFINE_QUARK (corral-egress-error-quark, corral_egress_error)
/* clang-format on */

static gboolean
fail (GError **error, const char *message)
{
        g_set_error_literal (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_INVALID, message);
        return FALSE;
}

/* Four decimal parts 0..255, no leading zeros, nothing else. */
static gboolean
parse_dotted_quad (const char *s, gsize len, guint8 out[4])
{
        gsize i = 0;

        for (int part = 0; part < 4; part++) {
                guint v = 0;
                gsize start = i;

                if (part > 0) {
                        if (i >= len || s[i] != '.')
                                return FALSE;
                        start = ++i;
                }
                while (i < len && g_ascii_isdigit (s[i]) && i - start < 3)
                        v = v * 10 + (guint) (s[i++] - '0');
                if (i == start || v > 255 || (s[start] == '0' && i - start > 1))
                        return FALSE;
                out[part] = (guint8) v;
        }
        return i == len;
}

static gboolean
parse_ipv6 (const char *s, gsize len, char **ret_host, GError **error)
{
        g_autofree char *copy = g_strndup (s, len);
        g_autoptr (GInetAddress) addr = NULL;

        if (memchr (s, '%', len))
                return fail (error, _ ("IPv6 zone ids are not allowed"));
        for (gsize i = 0; i < len; i++)
                if (!g_ascii_isxdigit (s[i]) && s[i] != ':' && s[i] != '.')
                        return fail (error, _ ("invalid IPv6 address"));
        addr = g_inet_address_new_from_string (copy);
        if (!addr || g_inet_address_get_family (addr) != G_SOCKET_FAMILY_IPV6)
                return fail (error, _ ("invalid IPv6 address"));
        *ret_host = g_inet_address_to_string (addr);
        return TRUE;
}

/* LDH labels of 1..63 bytes, not starting or ending with '-'. */
static gboolean
valid_name (const char *s, gsize len)
{
        gsize label = 0;

        for (gsize i = 0; i < len; i++) {
                char c = s[i];

                if (c == '.') {
                        if (label == 0 || s[i - 1] == '-')
                                return FALSE;
                        label = 0;
                        continue;
                }
                if (!g_ascii_isalnum (c) && c != '-')
                        return FALSE;
                if (c == '-' && label == 0)
                        return FALSE;
                if (++label > 63)
                        return FALSE;
        }
        return label > 0 && s[len - 1] != '-';
}

gboolean
corral_egress_parse_host (const char *s,
                          gssize len,
                          gboolean allow_brackets,
                          CorralHostKind *ret_kind,
                          char **ret_host,
                          GError **error)
{
        gsize n = len < 0 ? strlen (s) : (gsize) len;
        const char *last;
        guint8 quad[4];

        g_return_val_if_fail (s != NULL, FALSE);
        if (n == 0)
                return fail (error, _ ("empty host"));
        if (n > CORRAL_HOST_MAX + 3)
                return fail (error, _ ("host name longer than 253 bytes"));
        if (memchr (s, '\0', n))
                return fail (error, _ ("NUL byte in host"));
        if (s[0] == '[') {
                if (!allow_brackets || n < 3 || s[n - 1] != ']')
                        return fail (error, _ ("invalid bracketed host"));
                if (!parse_ipv6 (s + 1, n - 2, ret_host, error))
                        return FALSE;
                *ret_kind = CORRAL_HOST_IPV6;
                return TRUE;
        }
        if (n > 1 && s[n - 1] == '.')
                n--;
        if (n > CORRAL_HOST_MAX)
                return fail (error, _ ("host name longer than 253 bytes"));
        if (!valid_name (s, n))
                return fail (error, _ ("invalid host name"));
        /* A name whose last label starts with a digit is an address to inet_aton (127.1,
         * 0x7f.0.0.1, 2130706433): only the canonical dotted quad is accepted as one. */
        last = g_strrstr_len (s, (gssize) n, ".");
        last = last ? last + 1 : s;
        if (g_ascii_isdigit (*last)) {
                if (!parse_dotted_quad (s, n, quad))
                        return fail (error, _ ("ambiguous numeric host (only a.b.c.d is allowed)"));
                *ret_kind = CORRAL_HOST_IPV4;
                *ret_host = g_strdup_printf ("%u.%u.%u.%u", quad[0], quad[1], quad[2], quad[3]);
                return TRUE;
        }
        *ret_kind = CORRAL_HOST_NAME;
        *ret_host = g_ascii_strdown (s, (gssize) n);
        return TRUE;
}

static gboolean
parse_port (const char *s, gsize len, guint16 *ret_port)
{
        guint v = 0;

        if (len == 0 || len > 5 || s[0] == '0')
                return FALSE;
        for (gsize i = 0; i < len; i++) {
                if (!g_ascii_isdigit (s[i]))
                        return FALSE;
                v = v * 10 + (guint) (s[i] - '0');
        }
        if (v == 0 || v > 65535)
                return FALSE;
        *ret_port = (guint16) v;
        return TRUE;
}

gboolean
corral_egress_parse_authority (const char *s,
                               gssize len,
                               guint16 default_port,
                               CorralHostKind *ret_kind,
                               char **ret_host,
                               guint16 *ret_port,
                               GError **error)
{
        gsize n = len < 0 ? strlen (s) : (gsize) len;
        const char *colon;
        gsize host_len = n;
        guint16 port = default_port;
        g_autofree char *host = NULL;
        CorralHostKind kind;

        g_return_val_if_fail (s != NULL, FALSE);
        if (n > 0 && s[0] == '[') {
                const char *close = memchr (s, ']', n);

                colon = close && (gsize) (close - s) + 1 < n ? close + 1 : NULL;
                if (close && !colon)
                        host_len = n;
                else if (colon && *colon != ':')
                        return fail (error, _ ("invalid authority"));
        } else {
                colon = memchr (s, ':', n);
                if (colon && memchr (colon + 1, ':', n - (gsize) (colon + 1 - s)))
                        return fail (error, _ ("IPv6 addresses must be in brackets"));
        }
        if (colon) {
                host_len = (gsize) (colon - s);
                if (!parse_port (colon + 1, n - host_len - 1, &port))
                        return fail (error, _ ("invalid port (1 to 65535)"));
        } else if (default_port == 0) {
                return fail (error, _ ("a port is required"));
        }
        if (!corral_egress_parse_host (s, (gssize) host_len, TRUE, &kind, &host, error))
                return FALSE;
        *ret_kind = kind;
        *ret_host = g_steal_pointer (&host);
        *ret_port = port;
        return TRUE;
}

char *
corral_egress_format_authority (const char *host, CorralHostKind kind, guint16 port)
{
        if (kind == CORRAL_HOST_IPV6)
                return g_strdup_printf ("[%s]:%u", host, port);
        return g_strdup_printf ("%s:%u", host, port);
}

/* Classification ----------------------------------------------------------------------------- */

static const char *
classify_v4 (const guint8 b[4])
{
        guint32 a = ((guint32) b[0] << 24) | ((guint32) b[1] << 16) | ((guint32) b[2] << 8) | b[3];
        static const struct {
                guint32 net;
                guint prefix;
                const char *why;
        } table[] = {
                { 0xA9FEA9FE, 32, N_ ("cloud metadata") }, /* 169.254.169.254 */
                { 0x00000000, 8, N_ ("\"this network\" (0.0.0.0/8)") },
                { 0x0A000000, 8, N_ ("private network") },
                { 0x64400000, 10, N_ ("carrier-grade NAT (100.64.0.0/10)") },
                { 0x7F000000, 8, N_ ("loopback") },
                { 0xA9FE0000, 16, N_ ("link-local") },
                { 0xAC100000, 12, N_ ("private network") },
                { 0xC0000000, 24, N_ ("IETF protocol assignments") },
                { 0xC0000200, 24, N_ ("documentation") },
                { 0xC0586300, 24, N_ ("6to4 relay anycast") },
                { 0xC0A80000, 16, N_ ("private network") },
                { 0xC6120000, 15, N_ ("benchmarking network") },
                { 0xC6336400, 24, N_ ("documentation") },
                { 0xCB007100, 24, N_ ("documentation") },
                { 0xE0000000, 4, N_ ("multicast") },
                { 0xFFFFFFFF, 32, N_ ("broadcast") },
                { 0xF0000000, 4, N_ ("reserved") },
        };

        for (gsize i = 0; i < G_N_ELEMENTS (table); i++) {
                guint32 mask = table[i].prefix == 0 ? 0 : 0xFFFFFFFFu << (32 - table[i].prefix);

                if ((a & mask) == table[i].net)
                        return table[i].why;
        }
        return NULL;
}

static gboolean
prefix_is (const guint8 *b, const guint8 *prefix, gsize n)
{
        return memcmp (b, prefix, n) == 0;
}

/* IPv6 forms that carry an IPv4 address: judged by that address. Returns TRUE when b is one. */
static gboolean
embedded_v4 (const guint8 b[16], const char **ret_why)
{
        static const guint8 mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        static const guint8 zero[12] = { 0 };
        static const guint8 nat64[12] = { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };
        static const guint8 teredo[4] = { 0x20, 0x01, 0, 0 };
        guint8 v4[4];
        const char *why = NULL;

        if (prefix_is (b, mapped, 12) || prefix_is (b, nat64, 12) || prefix_is (b, zero, 12)) {
                why = classify_v4 (b + 12);
        } else if (b[0] == 0x20 && b[1] == 0x02) { /* 6to4 2002:V4ADDR::/48 */
                why = classify_v4 (b + 2);
        } else if (prefix_is (b, teredo, 4)) { /* server at 4..7, client xor'ed at 12..15 */
                for (int i = 0; i < 4; i++)
                        v4[i] = b[12 + i] ^ 0xff;
                why = classify_v4 (b + 4);
                if (!why)
                        why = classify_v4 (v4);
        } else {
                return FALSE;
        }
        *ret_why = why ? N_ ("IPv6 form of a non-public IPv4 address") : NULL;
        return TRUE;
}

static const char *
classify_v6 (const guint8 b[16])
{
        static const guint8 loopback[16] = { [15] = 1 };
        static const guint8 any[16] = { 0 };
        static const guint8 metadata[16] = { 0xfd, 0x00, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02 };
        static const guint8 nat64_local[6] = { 0, 0x64, 0xff, 0x9b, 0, 1 };
        static const guint8 doc[4] = { 0x20, 0x01, 0x0d, 0xb8 };
        static const guint8 discard[8] = { 0x01, 0x00, 0, 0, 0, 0, 0, 0 };
        const char *why = NULL;

        if (memcmp (b, loopback, 16) == 0)
                return N_ ("loopback");
        if (memcmp (b, any, 16) == 0)
                return N_ ("unspecified address");
        if (memcmp (b, metadata, 16) == 0)
                return N_ ("cloud metadata");
        if (embedded_v4 (b, &why))
                return why;
        if ((b[0] & 0xfe) == 0xfc)
                return N_ ("unique local address");
        if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
                return N_ ("link-local");
        if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)
                return N_ ("site-local");
        if (b[0] == 0xff)
                return N_ ("multicast");
        if (prefix_is (b, nat64_local, 6))
                return N_ ("local-use NAT64");
        if (prefix_is (b, doc, 4))
                return N_ ("documentation");
        if (prefix_is (b, discard, 8))
                return N_ ("discard prefix");
        /* Only global unicast (2000::/3) is public. */
        if ((b[0] & 0xe0) != 0x20)
                return N_ ("reserved");
        return NULL;
}

const char *
corral_egress_addr_classify (GInetAddress *addr)
{
        const guint8 *b;

        g_return_val_if_fail (G_IS_INET_ADDRESS (addr), "invalid");
        b = g_inet_address_to_bytes (addr);
        if (g_inet_address_get_family (addr) == G_SOCKET_FAMILY_IPV4)
                return classify_v4 (b);
        return classify_v6 (b);
}
