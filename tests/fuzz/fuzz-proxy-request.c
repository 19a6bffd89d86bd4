/* fuzz-proxy-request.c — libFuzzer target for the egress proxy's request head parser and its
 * host/authority parsers (all input from the guest).
 *
 * The whole input is offered as a request head (as read from a client, limited like the proxy
 * limits it); a parsed request is serialised for the origin as the proxy would. The input is
 * also parsed as an authority and as a host. An input that starts with the frame magic (C0 7A)
 * is instead the guest's channel stream (NET-PROTOCOL.md), fed to the host side of netmux.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-http.h"
#include "netmux.h"

#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static int
open_channel (void *user, uint32_t channel)
{
        int sv[2];

        if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -1;
        close (sv[1]);
        return sv[0];
}

static void
fuzz_stream (const uint8_t *data, size_t size)
{
        NetMux *m = NULL;
        int sv[2];

        if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return;
        if (netmux_new (sv[0], open_channel, NULL, &m) == 0) {
                (void) netmux_feed (m, data, size);
                g_assert (netmux_channels (m) <= NETMUX_MAX_CHANNELS);
                netmux_free (m);
        }
        close (sv[0]);
        close (sv[1]);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        const char *text = (const char *) data;
        gssize head = corral_http_head_length (text, size, CORRAL_HTTP_MAX_HEAD);
        g_autofree char *host = NULL, *host2 = NULL;
        CorralHostKind kind;
        guint16 port;

        if (size >= 2 && data[0] == 0xC0 && data[1] == 0x7A) {
                fuzz_stream (data, size);
                return 0;
        }
        if (head > 0) {
                g_autoptr (CorralHttpRequest) req = corral_http_request_parse (
                        text, (gsize) head, CORRAL_HTTP_MAX_HEADERS, NULL);

                if (req) {
                        g_autoptr (GString) origin = NULL;

                        g_assert (req->host != NULL && req->port > 0);
                        if (!req->is_connect) {
                                origin = corral_http_request_to_origin (req);
                                g_assert (g_str_has_suffix (origin->str, "\r\n\r\n"));
                        }
                        (void) corral_http_request_get_header (req, "Host");
                }
        }
        if (size <= 1024) {
                (void) corral_egress_parse_authority (text, (gssize) size, 80, &kind, &host, &port,
                                                      NULL);
                (void) corral_egress_parse_host (text, (gssize) size, TRUE, &kind, &host2, NULL);
        }
        return 0;
}
