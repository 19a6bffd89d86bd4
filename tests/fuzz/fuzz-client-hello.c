/* fuzz-client-hello.c — libFuzzer target for the bounded TLS ClientHello parser that reads the
 * SNI of CONNECT tunnels (bytes from the guest).
 *
 * Bytes after a complete hello (TLS 1.3 early data) are not the parser's: a result must not
 * depend on them, so parsing with one more byte appended must give the same answer.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-hello.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        g_autofree char *sni = NULL;
        const char *why = NULL;
        CorralHelloResult r = corral_tls_hello_parse (data, size, &sni, &why);

        if (r == CORRAL_HELLO_OK && sni)
                g_assert (strlen (sni) > 0 && strlen (sni) <= 255);
        if (r == CORRAL_HELLO_INVALID)
                g_assert (why != NULL && sni == NULL);
        if (r == CORRAL_HELLO_OK) {
                g_autofree guint8 *more = g_malloc (size + 1);
                g_autofree char *sni2 = NULL;

                memcpy (more, data, size);
                more[size] = 0x17;
                g_assert (corral_tls_hello_parse (more, size + 1, &sni2, &why) == CORRAL_HELLO_OK);
                g_assert (g_strcmp0 (sni, sni2) == 0);
        }
        return 0;
}
