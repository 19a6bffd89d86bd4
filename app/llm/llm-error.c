/* llm-error.c — the CORRAL_LLM_ERROR domain.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "llm-error.h"

/* clang-format off */
G_DEFINE_QUARK (corral-llm-error-quark, corral_llm_error)
/* clang-format on */

gboolean
corral_llm_error_is_transient (const GError *error)
{
        if (error == NULL || error->domain != CORRAL_LLM_ERROR)
                return FALSE;
        switch ((CorralLlmError) error->code) {
        case CORRAL_LLM_ERROR_RATE_LIMITED:
        case CORRAL_LLM_ERROR_OVERLOADED:
        case CORRAL_LLM_ERROR_SERVER:
        case CORRAL_LLM_ERROR_NETWORK:
                return TRUE;
        case CORRAL_LLM_ERROR_AUTH:
        case CORRAL_LLM_ERROR_NO_API_KEY:
        case CORRAL_LLM_ERROR_PROTOCOL:
        case CORRAL_LLM_ERROR_TIMEOUT:
        case CORRAL_LLM_ERROR_INVALID_REQUEST:
        default:
                return FALSE;
        }
}
