/* egress-cred-private.h — what the proxy needs of the bindings (not installed).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "egress-cred.h"
#include "egress-mask.h"

typedef struct {
        CorralSecretInfo *info;
        char *secret;
        char placeholder[CORRAL_PLACEHOLDER_LEN + 1];
} EgressBinding;

/* (transfer full) (nullable) a copy of the binding whose placeholder this is. */
EgressBinding *
_egress_credentials_find (CorralEgressCredentials *creds, const char *placeholder, gsize len);
EgressBinding *_egress_binding_copy (const EgressBinding *b);
void _egress_binding_free (EgressBinding *b);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EgressBinding, _egress_binding_free)
gboolean _egress_binding_for_host (const EgressBinding *b, const char *host, guint16 port);
/* (transfer full) every binding's secret in all its forms (egress-mask.h), for finding them in
 * what the guest sends; a scan's id is the binding's index (see _egress_credentials_dup_name). */
EgressMask *_egress_credentials_dup_mask (CorralEgressCredentials *creds);
/* (transfer full) (nullable) the name of the binding at index (NULL after revoke). */
char *_egress_credentials_dup_name (CorralEgressCredentials *creds, guint index);
