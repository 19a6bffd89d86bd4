/* egress-cred.h — a session's credential bindings and their placeholder tokens.
 *
 * At session start each bound secret gets a fresh random placeholder ("corral-ph-" and 32 hex
 * digits from getrandom). The guest sees only placeholders (as NAME=placeholder environment
 * variables); the host proxy swaps a placeholder for its secret only in the binding's header of
 * a TLS request to one of the binding's hosts (a host and a port: 443 unless it names another).
 * Revoking (session end) wipes the secrets and forgets the placeholders, so a replayed token
 * matches nothing.
 *
 * Thread-safe: the proxy's connection threads look bindings up while the session may revoke.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-policy.h"
#include "corral-secret-store.h"

G_BEGIN_DECLS

#define CORRAL_PLACEHOLDER_PREFIX "corral-ph-"
#define CORRAL_PLACEHOLDER_LEN (10 + 32)

typedef struct _CorralEgressCredentials CorralEgressCredentials;

CorralEgressCredentials *corral_egress_credentials_new (void);
CorralEgressCredentials *corral_egress_credentials_ref (CorralEgressCredentials *creds);
void corral_egress_credentials_unref (CorralEgressCredentials *creds);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralEgressCredentials, corral_egress_credentials_unref)

/* Binds value (copied) as info describes; returns the new placeholder (transfer full). */
char *corral_egress_credentials_add (CorralEgressCredentials *creds,
                                     const CorralSecretInfo *info,
                                     const char *value);

/* What the organisation's policy (corral-policy.h; locked keys) makes of the binding info
 * describes: (transfer full) the binding to make — info's, or the organisation's hosts and
 * header when credentials.bindings names it, without the hosts a locked
 * credentials.allowedHosts does not allow — or NULL with the reason (CORRAL_POLICY_ERROR)
 * when credentials.allowedNames does not allow the name or no host is left. */
CorralSecretInfo *corral_egress_credentials_apply_policy (CorralPolicy *managed,
                                                          const CorralSecretInfo *info,
                                                          GError **error);

/* Looks each name up in the keychain and binds it as the organisation's policy (nullable)
 * allows; a secret it does not allow is not bound, and why goes to ret_refused (nullable, one
 * sentence per secret). Fails closed (nothing bound) on any keychain error. */
gboolean corral_egress_credentials_add_from_keychain (CorralEgressCredentials *creds,
                                                      const char *const *names,
                                                      CorralPolicy *managed,
                                                      GStrv *ret_refused,
                                                      GCancellable *cancellable,
                                                      GError **error);

/* NAME=placeholder for the guest's environment (transfer full). */
char **corral_egress_credentials_dup_environ (CorralEgressCredentials *creds);

/* TRUE when some binding names host and port (the proxy intercepts TLS to it). A binding's
 * host without a port means port 443. */
gboolean corral_egress_credentials_binds_host (CorralEgressCredentials *creds,
                                               const char *host,
                                               guint16 port);

/* Session end: secrets wiped, placeholders forgotten. */
void corral_egress_credentials_revoke (CorralEgressCredentials *creds);

G_END_DECLS
