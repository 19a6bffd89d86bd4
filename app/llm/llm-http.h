/* llm-http.h — HTTP statuses and headers of a provider's reply (private to app/llm).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "llm-provider.h"

#include <libsoup/soup.h>

G_BEGIN_DECLS

/* (transfer full) the error for a non-200 reply; body is its (bounded) start. The key never
 * appears in the message. */
GError *corral_llm_http_error (CorralLlmProviderKind kind,
                               guint status,
                               const char *body,
                               gsize body_len,
                               const char *api_key);
/* The delay the server asked for (retry-after-ms, or retry-after in seconds), or -1. */
gint64 corral_llm_http_retry_after_ms (SoupMessageHeaders *headers);
/* Request headers for the kind: authentication, API version, content negotiation. */
void corral_llm_http_add_headers (CorralLlmProviderKind kind,
                                  SoupMessageHeaders *headers,
                                  const char *api_key);
/* Whether the key can be sent in a header (printable ASCII, no space). */
gboolean corral_llm_http_key_is_valid (const char *api_key);

G_END_DECLS
