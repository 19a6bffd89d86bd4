/* egress-hello.c — bounded TLS ClientHello parser (see egress-hello.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-hello.h"

#include <string.h>

#define REC_HANDSHAKE 22
#define HS_CLIENT_HELLO 1
#define EXT_SERVER_NAME 0
#define MAX_EXTS 128

typedef struct {
        const guint8 *p;
        gsize left;
} Cursor;

static gboolean
take (Cursor *c, gsize n, const guint8 **ret)
{
        if (c->left < n)
                return FALSE;
        *ret = c->p;
        c->p += n;
        c->left -= n;
        return TRUE;
}

static gboolean
take_u8 (Cursor *c, guint *ret)
{
        const guint8 *b;

        if (!take (c, 1, &b))
                return FALSE;
        *ret = b[0];
        return TRUE;
}

static gboolean
take_u16 (Cursor *c, guint *ret)
{
        const guint8 *b;

        if (!take (c, 2, &b))
                return FALSE;
        *ret = (guint) b[0] << 8 | b[1];
        return TRUE;
}

/* A sub-cursor over a vector with an n-byte length prefix. */
static gboolean
take_vec (Cursor *c, int prefix, Cursor *ret)
{
        guint n;

        if (!(prefix == 1 ? take_u8 (c, &n) : take_u16 (c, &n)))
                return FALSE;
        ret->left = n;
        return take (c, n, &ret->p);
}

static CorralHelloResult
invalid (const char **ret_why, const char *why)
{
        if (ret_why)
                *ret_why = why;
        return CORRAL_HELLO_INVALID;
}

/* server_name: a list holding exactly one host_name. */
static CorralHelloResult
parse_sni (Cursor ext, char **ret_sni, const char **ret_why)
{
        Cursor list, name;
        guint type;

        if (!take_vec (&ext, 2, &list) || ext.left != 0 || !take_u8 (&list, &type) || type != 0 ||
            !take_vec (&list, 2, &name) || list.left != 0)
                return invalid (ret_why, "malformed server_name extension");
        if (name.left == 0 || name.left > 255)
                return invalid (ret_why, "bad server name length");
        for (gsize i = 0; i < name.left; i++)
                if (name.p[i] <= 0x20 || name.p[i] >= 0x7f)
                        return invalid (ret_why, "bad character in server name");
        *ret_sni = g_strndup ((const char *) name.p, name.left);
        return CORRAL_HELLO_OK;
}

static CorralHelloResult
parse_extensions (Cursor exts, char **ret_sni, const char **ret_why)
{
        guint seen[MAX_EXTS];
        guint n = 0;

        while (exts.left > 0) {
                guint type;
                Cursor body;

                if (!take_u16 (&exts, &type) || !take_vec (&exts, 2, &body))
                        return invalid (ret_why, "truncated extension");
                if (n == MAX_EXTS)
                        return invalid (ret_why, "too many extensions");
                for (guint i = 0; i < n; i++)
                        if (seen[i] == type)
                                return invalid (ret_why, "duplicate extension");
                seen[n++] = type;
                if (type == EXT_SERVER_NAME && parse_sni (body, ret_sni, ret_why) < 0)
                        return CORRAL_HELLO_INVALID;
        }
        return CORRAL_HELLO_OK;
}

static CorralHelloResult
parse_client_hello (const guint8 *msg, gsize len, char **ret_sni, const char **ret_why)
{
        Cursor c = { msg, len }, v;
        const guint8 *skip;
        g_autofree char *sni = NULL;

        if (!take (&c, 2 + 32, &skip)) /* legacy_version, random */
                return invalid (ret_why, "truncated ClientHello");
        if (!take_vec (&c, 1, &v) || v.left > 32)
                return invalid (ret_why, "bad session id");
        if (!take_vec (&c, 2, &v) || v.left < 2 || v.left % 2)
                return invalid (ret_why, "bad cipher suites");
        if (!take_vec (&c, 1, &v) || v.left < 1)
                return invalid (ret_why, "bad compression methods");
        if (c.left > 0) {
                if (!take_vec (&c, 2, &v) || c.left != 0)
                        return invalid (ret_why, "bad extensions length");
                if (parse_extensions (v, &sni, ret_why) < 0)
                        return CORRAL_HELLO_INVALID;
        }
        *ret_sni = g_steal_pointer (&sni);
        return CORRAL_HELLO_OK;
}

CorralHelloResult
corral_tls_hello_parse (const guint8 *data, gsize len, char **ret_sni, const char **ret_why)
{
        guint8 msg[CORRAL_HELLO_MAX];
        gsize have = 0, need = 0;
        gsize pos = 0;

        /* Reassemble handshake bytes from consecutive records until the message is complete. */
        for (;;) {
                gsize rlen;

                if (len - pos < 5)
                        return len >= CORRAL_HELLO_MAX ? invalid (ret_why, "ClientHello too large")
                                                       : CORRAL_HELLO_NEED_MORE;
                if (data[pos] != REC_HANDSHAKE || data[pos + 1] != 3)
                        return invalid (ret_why, "not a TLS handshake");
                rlen = (gsize) data[pos + 3] << 8 | data[pos + 4];
                if (rlen == 0 || rlen > 16384)
                        return invalid (ret_why, "bad TLS record length");
                if (have + rlen > sizeof msg)
                        return invalid (ret_why, "ClientHello too large");
                if (len - pos - 5 < rlen)
                        return CORRAL_HELLO_NEED_MORE;
                memcpy (msg + have, data + pos + 5, rlen);
                have += rlen;
                pos += 5 + rlen;
                if (need == 0 && have >= 4) {
                        if (msg[0] != HS_CLIENT_HELLO)
                                return invalid (ret_why, "not a ClientHello");
                        need = 4 + ((gsize) msg[1] << 16 | (gsize) msg[2] << 8 | msg[3]);
                        if (need > sizeof msg)
                                return invalid (ret_why, "ClientHello too large");
                }
                if (need && have >= need) {
                        if (have != need)
                                return invalid (ret_why, "data after the ClientHello");
                        return parse_client_hello (msg + 4, need - 4, ret_sni, ret_why);
                }
        }
}
