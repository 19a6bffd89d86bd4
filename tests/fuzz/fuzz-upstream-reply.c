/* fuzz-upstream-reply.c — libFuzzer target for what the egress proxy reads of an origin's reply
 * to a request that carried a secret (keychain-bridge/egress-reply.c): the response head
 * parser, the chunked framing and the secret's masks (egress-mask.h).
 *
 * The input is a reply as an origin would send it. Its head is parsed; what follows is
 * de-chunked and goes through a masking stream in pieces of a size the first byte picks (masks
 * keep lengths: as many bytes come out as went in), and the whole input is scanned both ways.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-http.h"
#include "egress-mask.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* the secret of tests/fuzz/make-egress-corpus.py */
#define SECRET "s3cr/t+K&y%20"

static EgressMask *
the_mask (void)
{
        static EgressMask *mask;

        if (!mask) {
                mask = egress_mask_new ();
                egress_mask_add_secret (mask, SECRET, 0);
                egress_mask_add_literal (mask, "dXNlcjpzM2Ny", 0);
        }
        return mask;
}

/* body through the chunked framing (when chunked) and a masking stream, piece by piece. */
static void
pass_body (guint8 *body, gsize len, gboolean chunked, gsize piece)
{
        g_autoptr (EgressMaskStream) s = egress_mask_stream_new (the_mask (), TRUE, piece);
        CorralHttpChunked ch = { 0 };
        gsize in = 0, out = 0, n;
        const guint8 *ready;

        for (gsize off = 0; off < len; off += piece) {
                gsize take = MIN (piece, len - off), data = take;

                if (chunked && corral_http_chunked_scan (&ch, body + off, take, &data) < 0)
                        break;
                in += data;
                egress_mask_stream_feed (s, body + off, data, FALSE, &ready, &n);
                out += n;
                if (chunked && corral_http_chunked_done (&ch))
                        break;
        }
        egress_mask_stream_feed (s, NULL, 0, TRUE, &ready, &n);
        out += n;
        g_assert_cmpuint (in, ==, out);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        g_autofree guint8 *copy = g_memdup2 (data, size);
        g_autofree guint8 *body = NULL;
        g_autoptr (CorralHttpResponse) resp = NULL;
        gssize head = corral_http_head_length ((const char *) data, size, 64 * 1024);
        gsize piece = size > 0 ? (gsize) data[0] % 64 + 1 : 1;

        if (head > 0)
                resp = corral_http_response_parse ((const char *) data, (gsize) head,
                                                   CORRAL_HTTP_MAX_HEADERS, NULL);
        if (resp)
                (void) corral_http_response_count_header (resp, "Content-Encoding", NULL);
        head = MAX (head, 0);
        /* One byte more than the input, ending the body: never read past the input. */
        body = g_malloc (size - (gsize) head + 1);
        if (size > (gsize) head)
                memcpy (body, data + head, size - (gsize) head);
        body[size - (gsize) head] = '\0';
        pass_body (body, size - (gsize) head, resp && resp->chunked, piece);
        (void) egress_mask_scan (the_mask (), copy, size, FALSE);
        (void) egress_mask_scan (the_mask (), copy, size, TRUE);
        return 0;
}
