/* corral-agent-source.h — the chat view's source for real work: a CorralAgentSession (the
 * agent loop, app/agent/) seen through the CorralChatSource interface. Every message the person
 * sends becomes a task of the session; its signals become the chat's.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-agent-loop.h"
#include "corral-chat-source.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_AGENT_SOURCE (corral_agent_source_get_type ())
G_DECLARE_FINAL_TYPE (CorralAgentSource, corral_agent_source, CORRAL, AGENT_SOURCE, GObject)

/* (transfer full) session: referenced. */
CorralAgentSource *corral_agent_source_new (CorralAgentSession *session);
CorralAgentSession *corral_agent_source_get_session (CorralAgentSource *self);

/* A session for a started workspace: the provider's key from the keychain (or the environment),
 * the VM's shares and credential names (never values) looked up on a worker thread, the
 * provider and session made here. model: NULL or "" for the provider's default; base_url:
 * NULL or "" for the provider's (OpenAI-compatible servers). client: connected to the VM. */
void corral_agent_source_new_async (CorralLlmProviderKind kind,
                                    const char *model,
                                    const char *base_url,
                                    CorralAgentClient *client,
                                    const char *vm_name,
                                    const char *vm_dir,
                                    GCancellable *cancellable,
                                    GAsyncReadyCallback callback,
                                    gpointer user_data);
/* (transfer full) */
CorralAgentSource *corral_agent_source_new_finish (GAsyncResult *result, GError **error);

G_END_DECLS
