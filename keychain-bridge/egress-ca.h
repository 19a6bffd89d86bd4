/* egress-ca.h — TLS for credential injection: a per-session CA (GnuTLS) whose leaf certificates
 * are made on the fly for bound hosts, and the client credentials that verify upstream servers
 * against the system trust store plus an optional extra CA file.
 *
 * The CA's key lives only in this process's memory and dies with the session; the guest gets
 * the CA certificate (PEM) to trust.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>
#include <gnutls/gnutls.h>

G_BEGIN_DECLS

typedef struct _EgressCa EgressCa;

EgressCa *egress_ca_new (GError **error);
void egress_ca_free (EgressCa *ca);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EgressCa, egress_ca_free)

/* (transfer none) the CA certificate in PEM. */
const char *egress_ca_get_pem (EgressCa *ca);

/* (transfer none) server credentials holding a leaf certificate for host (cached; valid while
 * ca lives). */
gnutls_certificate_credentials_t egress_ca_leaf (EgressCa *ca, const char *host, GError **error);

/* Client credentials for upstream connections: system trust + extra_ca_file (nullable). */
gnutls_certificate_credentials_t egress_upstream_credentials_new (const char *extra_ca_file,
                                                                  GError **error);

G_END_DECLS
