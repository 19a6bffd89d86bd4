/* corral-secret-store.h — Corral's secrets in the desktop keychain (Secret Service, through
 * libsecret), with a Corral schema.
 *
 * Each secret has a name, the hosts (and ports: 443 unless named) it may be sent to, and how it
 * is injected (a header and a format such as "Bearer {}"; header "basic" means HTTP basic auth
 * with the secret as password).
 * Only the Secret Service ever holds a value: a locked or missing keychain is an error
 * (CORRAL_EGRESS_ERROR_KEYCHAIN) with a message that says what to do, never a fallback to a
 * file. Values are never listed; callers wipe them (corral_secret_value_free).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "egress-addr.h"

G_BEGIN_DECLS

#define CORRAL_SECRET_MAX_NAME 64
#define CORRAL_SECRET_MAX_VALUE 8192
/* The port of a binding's host that names none: a credential is bound to one port of a host,
 * never to every service the name reaches. */
#define CORRAL_SECRET_DEFAULT_PORT 443

typedef struct {
        char *name; /* [A-Za-z0-9_]{1,64}: it is also the guest's environment variable */
        char **hosts; /* at least one: "name" (port 443) or "name:port", canonical */
        char *header; /* lower-case header name, or "basic" */
        char *format; /* contains "{}" exactly once */
} CorralSecretInfo;

/* The model providers' API keys ("anthropic", "openai") are for the agent loop on the host:
 * they are never bound into a VM's session, so nothing in a VM can spend them. */
gboolean corral_secret_name_is_host_only (const char *name);

/* The names of the secrets a VM's session binds: every secret in the keychain but the
 * host-only ones, sorted. (transfer full) NULL with an error when there is no keychain. */
char **corral_secret_store_list_session_names_sync (GCancellable *cancellable, GError **error);

void corral_secret_info_free (CorralSecretInfo *info);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralSecretInfo, corral_secret_info_free)

/* Validates and normalises (hosts canonical, header lower-case). (transfer full) */
CorralSecretInfo *corral_secret_info_new (const char *name,
                                          const char *const *hosts,
                                          const char *header,
                                          const char *format,
                                          GError **error);

/* Wipes and frees a secret value. */
void corral_secret_value_free (char *value);

gboolean corral_secret_store_set_sync (const CorralSecretInfo *info,
                                       const char *value,
                                       GCancellable *cancellable,
                                       GError **error);
/* (transfer full) of CorralSecretInfo, sorted by name. Works on a locked keychain too (names
 * and hosts are not secret); fails when there is no keychain. */
GPtrArray *corral_secret_store_list_sync (GCancellable *cancellable, GError **error);
/* (transfer full) the value (free with corral_secret_value_free) and, if ret_info, its info. */
char *corral_secret_store_lookup_sync (const char *name,
                                       CorralSecretInfo **ret_info,
                                       GCancellable *cancellable,
                                       GError **error);
gboolean
corral_secret_store_remove_sync (const char *name, GCancellable *cancellable, GError **error);

/* Async forms run the sync ones on a worker thread (the keychain can be slow to answer). */
void corral_secret_store_set_async (const CorralSecretInfo *info,
                                    const char *value,
                                    GCancellable *cancellable,
                                    GAsyncReadyCallback callback,
                                    gpointer user_data);
gboolean corral_secret_store_set_finish (GAsyncResult *result, GError **error);
void corral_secret_store_lookup_async (const char *name,
                                       GCancellable *cancellable,
                                       GAsyncReadyCallback callback,
                                       gpointer user_data);
/* (transfer full) free with corral_secret_value_free */
char *corral_secret_store_lookup_finish (GAsyncResult *result,
                                         CorralSecretInfo **ret_info,
                                         GError **error);

G_END_DECLS
