/* llm-error.h — the errors of the LLM provider layer.
 *
 * Cancellation is G_IO_ERROR_CANCELLED, never a CORRAL_LLM_ERROR. No message ever contains the
 * API key: text that a server sends back is scrubbed of it before it reaches a GError.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define CORRAL_LLM_ERROR (corral_llm_error_quark ())

typedef enum {
        CORRAL_LLM_ERROR_AUTH, /* 401/403: the key was refused */
        CORRAL_LLM_ERROR_NO_API_KEY, /* no key in the environment or the keychain */
        CORRAL_LLM_ERROR_RATE_LIMITED, /* 429 after every retry */
        CORRAL_LLM_ERROR_OVERLOADED, /* 529 / overloaded_error after every retry */
        CORRAL_LLM_ERROR_SERVER, /* other 5xx, or an error event in the stream */
        CORRAL_LLM_ERROR_PROTOCOL, /* malformed, oversized or truncated reply */
        CORRAL_LLM_ERROR_TIMEOUT, /* no byte for the idle timeout */
        CORRAL_LLM_ERROR_NETWORK, /* could not connect, connection lost */
        CORRAL_LLM_ERROR_INVALID_REQUEST, /* 400/404/413/422: carries the API's message */
} CorralLlmError;

GQuark corral_llm_error_quark (void);

/* TRUE for the errors that a later attempt may not get (rate limits, overload, 5xx, network). */
gboolean corral_llm_error_is_transient (const GError *error);

G_END_DECLS
