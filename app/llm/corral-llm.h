/* corral-llm.h — the LLM provider layer of the assistant loop (one header for its users).
 *
 *   llm-conversation.h  the provider-neutral conversation and response
 *   llm-events.h        streaming events and limits
 *   llm-provider.h      CorralLlmProvider: stream_async / _finish, retries, timeouts
 *   llm-keys.h          API keys from the environment or the keychain
 *   llm-error.h         CORRAL_LLM_ERROR
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "llm-conversation.h"
#include "llm-error.h"
#include "llm-events.h"
#include "llm-keys.h"
#include "llm-provider.h"
