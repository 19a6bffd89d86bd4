/* egress-addr.h — strict host strings and address classification for the egress proxy.
 *
 * Host strings come from the guest (request targets, Host headers, CONNECT authorities, TLS SNI)
 * and from policy files. They are parsed here, never by inet_aton/getaddrinfo, so that the
 * proxy and the policy always agree on what a string names (SECURITY-TESTS items 13 and 15).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define CORRAL_EGRESS_ERROR (corral_egress_error_quark ())
GQuark corral_egress_error_quark (void);

typedef enum {
        CORRAL_EGRESS_ERROR_INVALID, /* malformed input from the guest or a file */
        CORRAL_EGRESS_ERROR_TOO_LARGE, /* a limit was hit */
        CORRAL_EGRESS_ERROR_DENIED, /* the policy refused */
        CORRAL_EGRESS_ERROR_UPSTREAM, /* resolving or connecting failed */
        CORRAL_EGRESS_ERROR_KEYCHAIN, /* the keychain is locked, missing or failed */
} CorralEgressError;

typedef enum {
        CORRAL_HOST_NAME,
        CORRAL_HOST_IPV4,
        CORRAL_HOST_IPV6,
} CorralHostKind;

#define CORRAL_HOST_MAX 253

/* Parses a host: a DNS name (LDH labels, at most 253 bytes, lowered, one trailing dot dropped),
 * a strict dotted-quad IPv4 address (four decimal parts, no leading zeros) or a bracketed IPv6
 * address without a zone id. Anything inet_aton would read as an address in another form
 * (2130706433, 0x7f.1, 0177.0.0.1, 127.1) is refused, as are user@host, NUL, CR/LF, spaces.
 * len -1: NUL-terminated. ret_host: (transfer full) canonical form (IPv6 without brackets). */
gboolean corral_egress_parse_host (const char *s,
                                   gssize len,
                                   gboolean allow_brackets,
                                   CorralHostKind *ret_kind,
                                   char **ret_host,
                                   GError **error);

/* host[:port]. default_port 0: the port is required. Ports are 1..65535 in plain decimal. */
gboolean corral_egress_parse_authority (const char *s,
                                        gssize len,
                                        guint16 default_port,
                                        CorralHostKind *ret_kind,
                                        char **ret_host,
                                        guint16 *ret_port,
                                        GError **error);

/* "host:port" or "[v6]:port" (transfer full). */
char *corral_egress_format_authority (const char *host, CorralHostKind kind, guint16 port);

/* NULL when addr is a public unicast address; otherwise a short static reason ("loopback",
 * "private network", "link-local", "cloud metadata", "IPv6 form embedding a private IPv4
 * address"...). IPv4-mapped, IPv4-compatible, NAT64, 6to4 and Teredo addresses are judged by
 * the IPv4 address they embed. */
const char *corral_egress_addr_classify (GInetAddress *addr);

G_END_DECLS
